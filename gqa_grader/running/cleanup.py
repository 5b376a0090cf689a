"""What a run leaves behind, removed: every file and IPC object of the run's own user id.

A run as root gives its worker a user id of its own (users.fresh_ids), which owns
nothing on the machine before the run; whatever that id owns after the run is the
run's, and goes (its processes are killed first, by users.kill_user):

- its entries in every folder it could write into: every world-writable folder it can
  reach, found by a walk of the file system (not /proc, not /sys) that follows no link
  and skips the folders the id cannot enter;
- its System V shared memory segments, message queues and semaphore sets
  (/proc/sysvipc); POSIX message queues are refused by the worker's limits
  (RLIMIT_MSGQUEUE 0), and removed from /dev/mqueue where it is mounted;
- its keys in the kernel's key store (remove_keys): every key and keyring of the id's,
  invalidated (in namespaces they live in the run's user namespace and go with it;
  outside, its keyrings would outlive the run).

Nothing here raises, recurses or follows a symbolic link, and each walk has a deadline:
what could not be done comes back as a note, with what was removed.
"""

import os
import stat
import threading
import time

from .atomic import write_atomically

DEADLINE = 10.0          # seconds the whole cleanup may take
SKIPPED = ("/proc", "/sys")


DEPTH = 24               # folders below the root that the search goes down to

# File systems whose folders count their subfolders in their link count (2 + one per
# subfolder, from each one's ".."), so that a folder with a link count of 2 has none
# and the search need not list it.  Elsewhere (btrfs says 1, others may not count) every
# folder is listed.  ext4 says 1 once a folder has more than 65,000 subfolders.
COUNTS_SUBFOLDERS = frozenset(("ext2", "ext3", "ext4", "xfs", "tmpfs", "devtmpfs"))


def counting_devices(mountinfo="/proc/self/mountinfo"):
    """The device numbers (st_dev) of the mounted file systems of COUNTS_SUBFOLDERS, from
    mountinfo; an empty set when it cannot be read (then every folder is listed)."""
    found = set()
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        try:
            major, minor = fields[2].split(":")
            kind = fields[fields.index("-", 6) + 1]
        except (IndexError, ValueError):
            continue
        if kind in COUNTS_SUBFOLDERS and major.isdigit() and minor.isdigit():
            found.add(os.makedev(int(major), int(minor)))
    return found


def writable_folders(uid, deadline, top="/"):
    """Every folder that uid may create entries in without owning it: world-writable
    and reachable (every folder above it searchable by others), by a walk that follows
    no link, goes DEPTH folders down at most, and skips uid's own folders (each is
    removed whole, as an entry of the folder it is in).  A folder with no subfolder (by
    its link count, on a file system of COUNTS_SUBFOLDERS) is not listed: nothing below
    it is a folder.  Returns (folders, note): note says why the walk stopped early, or None."""
    found, stack, counting = [], [(top, 0)], counting_devices()
    while stack:
        if time.monotonic() > deadline:
            return found, "the search for world-writable folders stopped at its deadline"
        folder, depth = stack.pop()
        if depth >= DEPTH:
            continue
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    if not entry.is_dir(follow_symlinks=False) or entry.path in SKIPPED:
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_uid == uid or not st.st_mode & stat.S_IXOTH:
                    continue                 # its own: removed whole; or others cannot enter
                if st.st_mode & stat.S_IWOTH:
                    found.append(entry.path)
                if st.st_nlink != 2 or st.st_dev not in counting:
                    stack.append((entry.path, depth + 1))
    return found, None


class FolderSearch:
    """writable_folders, searched in a thread from before the run starts (the run's user
    owns nothing yet, and a folder it makes later is an entry of one found here), so that
    the walk costs the grader no time of its own.  The search is the same for every user
    id that owns nothing, so a search still under way is shared by the runs that start
    meanwhile (two at a time in one process), and a finished one less than REUSE
    seconds old by the runs that follow (a class graded on one machine), in this
    process and, through the grader's user's own folder (SAVED), in the next ones."""

    REUSE = 60.0
    _last = (None, -1e9)                 # (folders, when) of the last finished search
    _running = None                      # the search under way, if one is
    _lock = threading.Lock()

    def __init__(self, uid):
        self.uid, self.found, self.note, self.thread = uid, None, None, None
        with FolderSearch._lock:
            folders, when = FolderSearch._last
            if folders is None or time.monotonic() - when >= self.REUSE:
                folders, age = saved_search(self.REUSE)
                if folders is not None:
                    FolderSearch._last = (folders, time.monotonic() - age)
            if folders is not None and time.monotonic() - FolderSearch._last[1] < self.REUSE:
                self.found = list(folders)
                return
            running = FolderSearch._running
            if running is not None and running.thread.is_alive():
                self.thread, self.shared = running.thread, running
                return
            self.thread, self.shared = threading.Thread(target=self._search, daemon=True), self
            FolderSearch._running = self
            self.thread.start()

    def _search(self):
        found, self.note = writable_folders(self.uid, time.monotonic() + DEADLINE)
        if self.note is None:
            save_search(found)
        with FolderSearch._lock:
            if self.note is None:
                FolderSearch._last = (found, time.monotonic())
            self.found = found
            if FolderSearch._running is self:
                FolderSearch._running = None

    def folders(self, deadline):
        """The folders found, waiting for the search until deadline; (folders, note)."""
        if self.thread is not None:
            self.thread.join(max(0.0, deadline - time.monotonic()))
            self.found, self.note = self.shared.found, self.shared.note
        if self.found is None:
            return [], "the search for world-writable folders did not finish by its deadline"
        return list(self.found), self.note


# The last finished search, for the grader processes that follow: a file in a folder of
# the grader's user's alone (made 0700 in the temporary folder, which is sticky: no one
# else can replace it), read only when that folder is still the user's alone and the file
# a regular one of the user's; anything else, and the search is made afresh.
SAVED = "gqa-grader-{uid}"


def _saved_folder():
    import tempfile
    folder = os.path.join(tempfile.gettempdir(), SAVED.format(uid=os.geteuid()))
    try:
        os.mkdir(folder, 0o700)
    except OSError:
        pass
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    private = st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0
    return folder if stat.S_ISDIR(st.st_mode) and private else None


def saved_search(reuse):
    """(folders, age in seconds) of the search saved less than reuse seconds ago (by the
    clock and since boot), else (None, None)."""
    import json
    folder = _saved_folder()
    if folder is None:
        return None, None
    try:
        fd = os.open(os.path.join(folder, "search.json"), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None, None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_size > 1 << 20:
            return None, None
        saved = json.loads(os.read(fd, 1 << 20).decode("utf-8"))
        ages = (time.time() - saved["time"], time.monotonic() - saved["since boot"])
        folders = saved["folders"]
        if (all(0 <= age < reuse for age in ages) and isinstance(folders, list)
                and all(isinstance(f, str) for f in folders)):
            return folders, max(ages)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    finally:
        os.close(fd)
    return None, None


def save_search(folders):
    """Save a finished search for the processes that follow (saved_search); never raises."""
    import json
    folder = _saved_folder()
    if folder is None:
        return
    data = {"time": time.time(), "since boot": time.monotonic(), "folders": folders}
    try:
        write_atomically(os.path.join(folder, "search.json"), json.dumps(data).encode("utf-8"), 0o600)
    except OSError:
        pass


def remove_tree(path, deadline, uid=None, dir_fd=None):
    """Remove the folder path and everything in it: no recursion, no link followed, one
    open folder at a time (a tree deeper than PATH_MAX goes too).  With uid, only what
    uid owns: meeting anything else raises OSError, and what is left stays where it is.
    Each step up is checked to be the folder it came down from, so a folder moved while
    it is removed (by another process, into another folder) raises OSError: the cleanup
    never follows it.  With dir_fd, path is a name in that open folder.  Returns the
    number of entries removed; raises OSError, or TimeoutError at the deadline."""
    removed, names = 0, []                  # the folders gone down into: (name, its parent's id)
    here = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    top = _identity(here)
    try:
        _owned(here, uid, path)
        while True:
            files, folder = _entries(here, uid, path)
            for name in files:
                os.unlink(name, dir_fd=here)
            removed += len(files)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path}: not removed whole by the deadline")
            if folder is not None:                      # a folder: down into it
                parent = _identity(here)
                inner = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=here)
                os.close(here)
                here = inner
                _owned(here, uid, path)
                names.append((folder, parent))
            elif not files:                             # empty: up one, and remove it
                if not names:
                    break
                name, parent = names.pop()
                up = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
                os.close(here)
                here = up
                if _identity(here) != parent:
                    raise OSError(f"{path}: a folder in it was moved while it was removed")
                os.rmdir(name, dir_fd=here)
                removed += 1
    finally:
        os.close(here)
    st = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    if (st.st_dev, st.st_ino) != top:
        raise OSError(f"{path}: moved while it was removed")
    os.rmdir(path, dir_fd=dir_fd)
    return removed + 1


BATCH = 4096             # names of files read from a folder at a time


def _identity(fd):
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _owned(fd, uid, path):
    if uid is not None and os.fstat(fd).st_uid != uid:
        raise OSError(f"{path}: holds a folder of another user's")


def _entries(fd, uid, path):
    """([names of files], the name of a folder or None): up to BATCH of the entries of
    the open folder fd that are not folders, and one that is, if any; with uid, OSError
    when an entry is another user's."""
    files, folder = [], None
    with os.scandir(fd) as entries:
        for entry in entries:
            if uid is not None and entry.stat(follow_symlinks=False).st_uid != uid:
                raise OSError(f"{path}: holds {entry.name!r}, another user's")
            if entry.is_dir(follow_symlinks=False):
                folder = folder or entry.name
            else:
                files.append(entry.name)
            if len(files) >= BATCH:
                break
    return files, folder


def close_off(name, folder, uid):
    """Make uid's entry name of the open folder, which could not be removed, root's with
    no permission for anyone else: a folder's contents can no longer be reached, nor a
    file's (through any of its names).  Works on the entry opened (no link followed),
    only once it is seen to be uid's; never by name.  Returns whether it worked."""
    try:                                     # a link or a socket cannot be opened: left
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return False
    try:
        if os.fstat(fd).st_uid != uid:
            return False
        os.fchown(fd, 0, 0)
        os.fchmod(fd, 0)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def open_folder(path):
    """The folder at the absolute path, open, reached one name at a time from / without
    following a link on the way (a folder renamed and replaced by a link since it was
    found raises OSError)."""
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in [part for part in path.split("/") if part]:
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove_entries(uid, folders, deadline):
    """Remove what uid owns at the top of each folder (a folder of its own whole), each
    folder opened without following a link and worked on through that open folder.
    Returns (count removed, notes)."""
    count, notes, closed = 0, [], 0
    for folder in folders:
        try:
            fd = open_folder(folder)
        except OSError:
            continue
        try:
            removed, left, more = _remove_in(fd, folder, uid, deadline)
        finally:
            os.close(fd)
        count, closed, notes = count + removed, closed + left, notes + more
    if closed:
        notes.append(f"{closed} files and folders of the run's user not removed (past the "
                     f"deadline, holding another user's, or moved meanwhile): made root's, "
                     f"with no permission for anyone else")
    return count, notes


def _remove_in(fd, folder, uid, deadline):
    """remove_entries in one open folder: (removed, closed off, notes)."""
    removed, closed, notes = 0, 0, []
    for name in os.listdir(fd):
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:                      # gone already: another user's, removed meanwhile
            continue
        if st.st_uid != uid:
            continue
        try:                                 # a file, a link: one unlink, even past the deadline
            if stat.S_ISDIR(st.st_mode):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{name}: not removed by the deadline")
                removed += remove_tree(name, deadline, uid, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
                removed += 1
        except (OSError, TimeoutError) as err:
            if close_off(name, fd, uid):
                closed += 1
            else:
                notes.append(f"could not remove {os.path.join(folder, name)}: {err}")
    return removed, closed, notes


# The /proc/sysvipc tables: (file, what, the id's column, the owners' columns, ctl's name).
SYSV = (("shm", "shared memory segment", 1, (7, 9), "shmctl"),
        ("msg", "message queue", 1, (7, 9), "msgctl"),
        ("sem", "semaphore set", 1, (4, 6), "semctl"))
IPC_RMID = 0


def sysv_objects(uid):
    """[(kind, id, what, ctl)] of the System V IPC objects uid owns or made."""
    found = []
    for kind, what, id_col, owners, ctl in SYSV:
        try:
            with open(f"/proc/sysvipc/{kind}", encoding="ascii") as f:
                rows = [line.split() for line in f.read().splitlines()[1:]]
        except (OSError, ValueError):
            continue
        for row in rows:
            try:
                if any(int(row[c]) == uid for c in owners):
                    found.append((kind, int(row[id_col]), what, ctl))
            except (IndexError, ValueError):
                continue
    return found


def remove_sysv(uid):
    """Remove uid's System V IPC objects.  Returns (count removed, notes)."""
    objects = sysv_objects(uid)
    if not objects:
        return 0, []
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError) as err:
        return 0, [f"{len(objects)} System V IPC objects left: no libc ({err})"]
    count, notes = 0, []
    for kind, ident, what, ctl in objects:
        fn = getattr(libc, ctl)
        status = fn(ident, 0, IPC_RMID, None) if kind == "sem" else fn(ident, IPC_RMID, None)
        if status == 0:
            count += 1
        else:
            notes.append(f"could not remove {what} {ident}: {os.strerror(ctypes.get_errno())}")
    return count, notes


# keyctl(2)'s system call (the C library has no wrapper), by machine; its operations.
KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "loongarch64": 219, "i686": 288, "i386": 288,
          "armv7l": 311, "armv8l": 311, "ppc64le": 271, "ppc64": 271, "s390x": 280}
KEYCTL_SETPERM, KEYCTL_INVALIDATE = 5, 21
KEY_ALL_OWNERS = 0x3f3f0000          # the possessor's and the owner's every permission


def keys_of(uid, text):
    """The serials of the keys uid owns, in text (/proc/keys: the keys the reader may view)."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        try:
            if len(fields) > 6 and int(fields[5]) == uid:
                found.append(int(fields[0], 16))
        except ValueError:
            continue
    return found


def _read_keys():
    try:
        with open("/proc/keys", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def remove_keys(uid):
    """Invalidate every key and keyring uid owns in the kernel's key store (Linux, as root):
    read and changed with this thread's file-system ids set to uid's (setfsuid: the key
    store judges a key's owner by them, and they are this thread's alone), so each key of
    the id's is reached with its owner's permissions; one its owner may not change (a
    module can take its own permissions away) is given them back first, where it can be.
    Returns (count invalidated, notes of those that were left)."""
    number = KEYCTL.get(os.uname().machine)
    if number is None or not os.path.exists("/proc/keys") or os.geteuid() != 0:
        return 0, []
    seen_by_root = keys_of(uid, _read_keys())
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    count, left = 0, []
    libc.setfsgid(uid)
    libc.setfsuid(uid)
    try:
        if libc.setfsuid(-1) != uid:                 # it did not take: nothing is done as uid
            return 0, [f"the keys of uid {uid} could not be reached (setfsuid)"]
        serials = list(dict.fromkeys(keys_of(uid, _read_keys()) + seen_by_root))
        for serial in serials:
            if libc.syscall(number, KEYCTL_INVALIDATE, serial) == 0:
                count += 1
                continue
            libc.syscall(number, KEYCTL_SETPERM, serial, KEY_ALL_OWNERS)
            if libc.syscall(number, KEYCTL_INVALIDATE, serial) == 0:
                count += 1
            else:
                left.append(serial)
    finally:
        libc.setfsuid(0)
        libc.setfsgid(0)
    gone = set(keys_of(uid, _read_keys()))
    return count, [f"a key of the run's user could not be removed: {serial:08x}" for serial in left if serial in gone]


def clean(uid, search=None):
    """Remove every file and IPC object of uid (its processes already gone), in the
    folders search found (a FolderSearch; searched now if None).  Never raises.
    Returns notes: what was removed, and what could not be."""
    deadline = time.monotonic() + DEADLINE
    notes = []
    try:
        folders, why = (search or FolderSearch(uid)).folders(deadline)
        if why:
            notes.append(why)
        if os.path.isdir("/dev/mqueue"):
            folders.append("/dev/mqueue")
        files, more = remove_entries(uid, folders, deadline)
        ipc, still = remove_sysv(uid)
        notes += more + still
        if files or ipc:
            notes.insert(0, f"removed what the run's user left: {files} files and folders, "
                            f"{ipc} System V IPC objects")
    except BaseException as err:        # nothing stops the results from being written
        notes.append(f"the cleanup stopped: {type(err).__name__}: {err}")
    return notes
