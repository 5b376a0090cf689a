"""The worker's users, on POSIX as root: a user id drawn for each run, which owns nothing
(fresh_ids); its processes killed when the run ends (kill_user); and whether a user
could reach a path (reachable), which a sealed run asks of its own files before it
starts.  The cleanup (cleanup.py) removes what such a user left."""

import os
import random
import signal
import time

from .failures import Refused

def _allowed(st, uid, gids, bit):
    """Whether uid (in gids) has permission bit (4 read, 2 write, 1 search) on st, by its mode."""
    if st.st_uid == uid:
        return bool(st.st_mode >> 6 & bit)
    if st.st_gid in gids:
        return bool(st.st_mode >> 3 & bit)
    return bool(st.st_mode & bit)


def others_could_write(st, above=False):
    """Whether a user other than root could write the file or folder of st (an lstat): it
    is not root's, or its group (not root's) or everyone may write it; above: a folder
    above the grader's, where a sticky folder of root's (/tmp) is safe, as no one else can
    rename what root put in it."""
    import stat
    if st.st_uid != 0:
        return True
    if stat.S_ISLNK(st.st_mode):                 # its mode means nothing: its target is judged
        return False
    if st.st_mode & 0o020 and st.st_gid != 0:
        return True
    return bool(st.st_mode & 0o002) and not (above and st.st_mode & stat.S_ISVTX)


def writable_by_others(here, names=("grader.py", "gqa_grader", "gqa_sandbox")):
    """The first of the grader's files (names, in the folder here, every file and folder
    below them) or of the folders above here (as written and as resolved, and above where
    a name that is a symbolic link leads) that a user other than root could write, else
    None: a run as root executes them."""
    starts = [os.path.abspath(here), os.path.realpath(here)]
    starts += [os.path.dirname(os.path.realpath(os.path.join(here, name))) for name in names
               if os.path.islink(os.path.join(here, name))]
    for start in dict.fromkeys(starts):
        folder = start
        while True:
            if others_could_write(os.stat(folder), above=folder != start):
                return folder
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    for name in names:
        top = os.path.join(here, name)
        if not os.path.lexists(top):
            continue
        if others_could_write(os.lstat(top)):
            return top
        for folder, dirs, files in os.walk(top):
            for entry in sorted(dirs) + sorted(files):
                path = os.path.join(folder, entry)
                if others_could_write(os.lstat(path)):
                    return path
    return None


def reachable(path, uid, gids, bit):
    """Whether uid could reach path (search on every folder above it) with permission bit.

    By the mode bits only (access control lists are not read); uid 0 reaches everything.
    """
    if uid == 0:
        return True
    path = os.path.realpath(path)
    folder = os.path.dirname(path)
    while True:
        if not _allowed(os.stat(folder), uid, gids, 1):
            return False
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return _allowed(os.stat(path), uid, gids, bit)


def _uids_in_use():
    """The real uid of each process (where /proc exists): {uid: [pid, ...]}."""
    found = {}
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        status = _status(pid)
        if status is None:
            continue
        state, uids = status
        if state in (b"Z", b"X"):
            continue
        for uid in set(uids):
            found.setdefault(int(uid), []).append(int(pid))
    return found


def _status(pid):
    """(state, [real, effective, saved, filesystem uid]) of a process, from /proc/PID/status
    read in one call (the scans above read every process's); None when it cannot be read."""
    try:
        fd = os.open(f"/proc/{pid}/status", os.O_RDONLY)
    except OSError:
        return None
    try:
        text = os.read(fd, 1 << 16)
    except OSError:
        return None
    finally:
        os.close(fd)
    state, uids = _field(text, b"State:"), _field(text, b"Uid:")
    if not state or not uids or not all(u.isdigit() for u in uids):
        return None
    return state[0], uids


def _field(text, name):
    """The words of the line of text that starts with name (after it); [] when there is none."""
    at = text.find(b"\n" + name)
    if at < 0:
        return []
    end = text.find(b"\n", at + 1)
    return text[at + 1 + len(name):end if end >= 0 else None].split()


def fresh_ids():
    """A uid and gid for one run: a number no user, no group and no process has, within
    the ids this system can map; each run draws its own, so one run's processes can never
    signal another's."""
    import grp
    import pwd
    low, high = 1_000_000, 2_000_000_000
    try:
        with open("/proc/self/uid_map", encoding="utf-8") as f:
            ranges = [tuple(map(int, line.split())) for line in f if line.strip()]
        inside, _, count = max(ranges, key=lambda r: r[0] + r[2])
        if inside + count - 2 < high:              # a user namespace: its upper half
            low, high = max(inside + count // 2, 1), inside + count - 2
    except (OSError, ValueError):
        pass
    in_use, draw = _uids_in_use(), random.SystemRandom()
    for _ in range(1000):
        uid = draw.randint(low, high)
        if uid in in_use:
            continue
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            pass
        try:
            grp.getgrgid(uid)
            continue
        except KeyError:
            return uid, uid
    raise Refused("no free user id for the worker")


def kill_user(uid):
    """SIGKILL every process whose uid is uid (where /proc exists), until none is left."""
    for _ in range(200):
        pids = [pid for pid in _uids_in_use().get(uid, ()) if pid != os.getpid()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)
