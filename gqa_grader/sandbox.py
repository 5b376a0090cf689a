"""The seal: how the worker that imports the module is shut in, started and stopped.

Every worker, on POSIX, runs under LIMITS (CPU, memory, no second process,
file size, open files) in a session of its own, and its whole process group is
killed when it stops.  A sealed run (Seal(sealed=True): the teacher's run) adds
a private folder holding only a copy of the module (read once, by read_module:
no symbolic link, a regular file of at most 1 MiB), an environment of PATH
alone, and, as root, a user id drawn for the run, which owns nothing and can
signal, trace, read or write neither the grader nor another run.  As root the
self-check and a tool's child run under such a user id too.  A module whose
bytes are not UTF-8 and declare no encoding (a comment saved in cp1252 by an
editor) runs, in every run, from a UTF-8 copy in a private folder (runnable).

Worker runs worker.py (in this folder) as a script, `python -I -S worker.py
CONFIG`, and exchanges JSON lines with it, each read and write with a
deadline.  run_in_child is the tools' door: a tool's function run with the
module in a worker, its items streamed back.
"""

import json
import os
import queue
import re
import select
import signal
import subprocess
import sys
import threading
import time

from .cleanup import FolderSearch, clean, remove_tree
from .compare import bounded, clean_data, clean_text
from .failures import Failure, OutOfTime, Refused, import_error
from .users import fresh_ids, kill_user, reachable
from .i18n import N_, _

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # grader.py's folder
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
WORKER_INSIDE = "/grader/worker.py"  # where a run in namespaces sees it: no path of the machine
DEFAULT_TIMEOUT = 5.0   # seconds one call may take before its worker is killed
DEFAULT_BUDGET = 300.0  # seconds a whole run may take; a correct module takes about one
BUDGET_NOTE = N_("not graded: the run's time budget ran out")   # shown as _(BUDGET_NOTE)


# What one answer may be.  The largest of a full run of the lab (--cases 200) is
# about 19 KB with about 400 lists, a report part about 20 KB: the caps leave a
# wide margin and keep the grader's own memory small whatever the worker sends.
ANSWER_CAP = 4 << 20                 # bytes: a longer answer line fails its case
ROUND_TRIP_CAP = 8 << 20             # bytes: all the answers to one request, or one child's items
STRUCTURE_CAP = 200_000              # values and lists in one line, counted before it is parsed
IMPORT_TIMEOUT = 10.0                # seconds the module's import may take (at least)
# What a worker may use, on POSIX: seconds of CPU (its whole life), bytes of
# address space, processes beyond itself (none: no fork, no thread), bytes
# per file written, open files.
LIMITS = {"cpu": DEFAULT_BUDGET, "memory": 2 << 30, "processes": 0, "file_size": 1 << 20,
          "open_files": 64, "message_queues": 0}


def _bounded_int(text):
    """An integer of the worker's answer: at most 100 digits (converting more is slow)."""
    if len(text) > 100:
        raise ValueError("an integer of more than 100 digits")
    return int(text)


MODULE_CAP = 1 << 20                 # bytes: a larger module is refused by a sealed run
# As root, every worker (a sealed run's, the self-check's, a tool's) runs as a
# user of its own, made up for the run.  The tests turn this off in a disposable
# copy of the grader, to show that what it stops is real.
DROP_ROOT = True


def read_module(path, follow=False):
    """The module's bytes, for a private copy: one open that follows no symbolic link
    (of the file itself; unless follow), of a regular file, at most MODULE_CAP bytes,
    read from that open.  Raises Refused otherwise."""
    import errno
    import stat
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP or os.path.islink(path):
            raise Refused(_("{path} is a symbolic link; a graded module must be a file of its "
                            "own").format(path=path)) from None
        raise Refused(_("cannot open {path}: {error}").format(path=path, error=err.strerror)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(_("{path} is not a regular file").format(path=path))
        chunks, size = [], 0
        while size <= MODULE_CAP:
            chunk = os.read(fd, MODULE_CAP + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MODULE_CAP or st.st_size > MODULE_CAP:
            raise Refused(_("{path} is larger than {size} MiB").format(path=path, size=MODULE_CAP >> 20))
        return b"".join(chunks)
    except OSError as err:
        raise Refused(_("cannot read {path}: {error}").format(path=path, error=err.strerror)) from None
    finally:
        os.close(fd)


# A coding declaration (PEP 263) on one of the source's first two lines: its name.
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)
_BOM = b"\xef\xbb\xbf"


def runnable(source):
    """The bytes a worker imports for the module's bytes source: the same bytes, unless
    they are not UTF-8 while declaring nothing else (no coding declaration, or one that
    says UTF-8; a byte-order mark says UTF-8 too): a comment typed in an editor that saves
    Windows' cp1252 or Latin-1, which Python refuses as a script and reads no line of in
    a traceback.  Then the same text read as cp1252 (as Latin-1 for the five bytes cp1252
    leaves out) and written as UTF-8, the mark kept.  What was graded is still recorded as
    the student's bytes (records.sha256_of)."""
    import codecs
    bom = _BOM if source.startswith(_BOM) else b""
    body = source[len(bom):]
    cookie = _COOKIE.search(b"\n".join(body.split(b"\n", 2)[:2]))
    if cookie:
        try:
            declared = codecs.lookup(cookie.group(1).decode("ascii")).name
        except LookupError:
            return source                     # Python says what is wrong with it
        if declared != "utf-8":
            return source                     # Python reads it as it declares
    try:
        body.decode("utf-8")
        return source
    except UnicodeDecodeError:
        pass
    cp1252 = {}
    for byte in range(0x80, 0xa0):
        try:
            cp1252[byte] = bytes([byte]).decode("cp1252")
        except UnicodeDecodeError:
            pass
    return bom + body.decode("latin-1").translate(cp1252).encode("utf-8")


def sandbox_package():
    """gqa_sandbox, from beside this package by its path (as grader.py loads gqa_grader:
    the grader's folder is not on sys.path); None where it is not there."""
    import importlib.util
    if "gqa_sandbox" not in sys.modules:
        folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gqa_sandbox")
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            return None
        spec = importlib.util.spec_from_file_location(
            "gqa_sandbox", os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])
        sys.modules["gqa_sandbox"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["gqa_sandbox"])
    return sys.modules["gqa_sandbox"]


class Seal:
    """How a worker is shut in.  Every worker on POSIX gets LIMITS and its own session;
    a sealed run adds a private folder holding only a copy of the module, an
    environment of PATH alone, and, when the grader is root, another user.

    partly is None for a fully sealed run, else the reason it is only partly sealed.
    Raises Refused when a sealed run cannot be made safe here.
    """

    def __init__(self, sealed=False, user=None, out=None, budget=DEFAULT_BUDGET, private=False,
                 out_name=None):
        self.sealed, self.drop, self.partly, self.dir = sealed, None, None, None
        self.jail = None                   # the folder unshare builds a sealed run's root on
        self.tool = None                   # what made them: "unshare"
        self.notes = []                    # what the cleanup removed, or could not
        self.search = None                 # the world-writable folders, with a uid of its own
        self.source, self.fresh, self.follow = None, False, not (sealed or private)
        self.copy_only = False             # a private folder made only for a UTF-8 copy
        self.limits = dict(LIMITS, cpu=int(budget) + 5) if os.name == "posix" else {}
        root = os.name == "posix" and os.geteuid() == 0 and DROP_ROOT
        if not sealed:
            if root:                              # the module never runs as root
                self.drop, self.fresh = fresh_ids(), True
                self.search = FolderSearch(self.drop[0])
            if private or root:
                self._make_dir()
            return
        if os.name != "posix":
            raise Refused("a sealed run needs a POSIX system (Linux, macOS): its limits, "
                          "sessions and users do not exist here")
        self._enter_namespaces()
        if not root:
            if self.tool is None:
                self.partly = _("the grader is not running as root and namespaces cannot be made "
                                "here ({why}), so the worker runs as the same user and could reach "
                                "the grader's files and process").format(why=self.why)
        else:
            if user is None:
                self.drop, self.fresh = fresh_ids(), True
                self.search = FolderSearch(self.drop[0]) if self.tool is None else None
                name = f"uid {self.drop[0]}"
            else:
                import pwd
                name = user
                try:
                    entry = pwd.getpwnam(name)
                except KeyError:
                    raise Refused(f"--user {name}: no such user") from None
                if entry.pw_uid == 0:
                    raise Refused(f"--user {name}: the worker's user must not be root")
                self.drop = (entry.pw_uid, entry.pw_gid)
            self.user, gids = name, {self.drop[1]}
            out_name = out_name or f"--out {out}"
            if out and not os.path.isdir(os.path.dirname(os.path.abspath(out))):
                raise Refused(f"{out_name}: no such folder {os.path.dirname(os.path.abspath(out))}")
            if self.tool is None:                  # in namespaces none of it is in sight
                self._check_reach(name, gids, out, out_name)
        self._make_dir()

    def _check_reach(self, name, gids, out, out_name):
        """Outside namespaces: refused when the worker's user could open the grader's files,
        write the Python that starts each worker as root or the folder of --out, or rename
        a folder above one of them."""
        if reachable(HERE, self.drop[0], gids, 1):
            raise Refused(f"the worker's user {name} could open files in the grader's folder "
                          f"{HERE} (grader.py, a solution); make it private first "
                          f"(chmod 700 {HERE})")
        self._check_above(HERE, f"the grader's folder {HERE}", name, gids)
        self._check_python(name, gids)
        if out:
            folder = os.path.dirname(os.path.abspath(out))
            if reachable(folder, self.drop[0], gids, 2):
                raise Refused(f"the worker's user {name} could write into {folder}, where "
                              f"{out_name} goes; choose a folder only the grader can write")
            self._check_above(folder, out_name, name, gids)

    def _check_above(self, path, what, name, gids):
        """Every folder above the folder path, as written and as resolved: one the worker's
        user could write into could have path renamed and replaced (the grader's own files,
        then run as root; --out's folder; the submissions), unless it is sticky and root's
        (as /tmp is)."""
        import stat
        for start in (os.path.abspath(path), os.path.realpath(path)):
            folder = os.path.dirname(start)
            while True:
                st = os.stat(folder)
                if (reachable(folder, self.drop[0], gids, 2)
                        and not (st.st_mode & stat.S_ISVTX and st.st_uid == 0)):
                    raise Refused(f"the worker's user {name} could write into {folder}, above "
                                  f"{what}, and rename the folders in it; choose a path "
                                  f"whose every folder only the grader can write")
                parent = os.path.dirname(folder)
                if parent == folder:
                    break
                folder = parent

    def _check_python(self, name, gids):
        """The Python that starts every worker as root, and its standard library: neither
        folder, nor one above them, one the worker's user could write into or rename."""
        for folder in dict.fromkeys((os.path.dirname(os.path.realpath(sys.executable)),
                                     os.path.dirname(os.path.realpath(os.__file__)))):
            if reachable(folder, self.drop[0], gids, 2):
                raise Refused(f"the worker's user {name} could write into {folder}, the Python "
                              f"that starts each worker as root; use a Python only root can write")
            self._check_above(folder, f"the Python that starts each worker ({folder})", name, gids)

    def keep_private(self, folder, what):
        """Refused when the worker's user could open files in folder (what it holds, for the
        message), or rename a folder above it; nothing to check when the worker keeps the
        grader's user."""
        real = os.path.realpath(folder)               # as the system resolves it
        if not self.drop:
            return
        name = getattr(self, "user", self.drop[0])
        if self.tool is not None:                     # in namespaces it is out of sight
            return
        if reachable(real, self.drop[0], {self.drop[1]}, 1):
            raise Refused(f"the worker's user {name} could open files in {real}, {what}; "
                          f"make it private first (chmod 700 {real})")
        self._check_above(real, what, name, {self.drop[1]})

    def _enter_namespaces(self):
        """A root of the run's own, in the kernel's namespaces, where they can be made
        (gqa_sandbox): the worker then sees its module, Python and nothing else of the
        machine.  Where they cannot, the run is partly sealed and says why."""
        package = sandbox_package()
        ok, why = package.available() if package else (False, "gqa_sandbox is not beside the grader")
        if ok:
            self.tool = why                            # its folder is made with the run's, below
        else:
            self.why = why
            self.partly = _("namespaces cannot be made here ({why}): the worker sees the machine's "
                            "files as its user may, and what it leaves is searched for and "
                            "removed").format(why=why)

    def command(self, argv):
        """argv (a Python worker's), run in the run's own root when it has one: (the command,
        the bytes to write first on its stdin)."""
        if self.tool is None:
            return argv, b""
        package = sandbox_package()
        spec = package.spec(self.jail, rw=[self.dir], cwd=self.cwd(), files={WORKER_INSIDE: argv[-1]})
        return package.command(spec, [os.path.realpath(argv[0])] + argv[1:-1] + [WORKER_INSIDE], self.tool)

    def _make_dir(self):
        """The run's private folder.  With a user of the run's own: root's, which others
        may pass through but not list (0711); the module's copy is that user's alone
        (0400), so no other run, whatever its user, can read it.  Else: the grader's
        user's alone (0700)."""
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="gqa-sealed-")
        os.chmod(self.dir, 0o711 if self.drop else 0o700)
        if self.tool == "unshare" and self.jail is None:   # made last: a refused run leaves none
            self.jail = tempfile.mkdtemp(prefix="gqa-root-")

    def place(self, path):
        """The module's copy in the private folder (written afresh, from the bytes read
        once by read_module), or path when there is no private folder."""
        if self.dir is None and not self._transcoded(path):
            return path
        if self.source is None:
            self.source = read_module(path, self.follow)
        copy = os.path.join(self.dir, os.path.basename(path))
        if os.path.lexists(copy):
            os.remove(copy)
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(runnable(self.source))
        if self.drop:
            os.chown(copy, *self.drop)
            os.chmod(copy, 0o400)
        return copy

    def _transcoded(self, path):
        """Without a private folder: whether the module at path must run from a UTF-8 copy
        (runnable); then its bytes are kept and a private folder made for the copy, the
        worker still started where the grader was (cwd).  Unreadable: left to the worker."""
        try:
            source = read_module(path, self.follow)
        except Refused:
            return False
        if runnable(source) is source:
            return False
        self.source, self.copy_only = source, True
        self._make_dir()
        return True

    def cwd(self):
        """Where the worker starts: the private folder, unless it holds only a UTF-8 copy."""
        return None if self.copy_only else self.dir

    def env(self):
        return {"PATH": os.defpath} if self.sealed else None

    def kill_all(self):
        """With a uid of the run's own: kill every process of it (a daemon the module left)."""
        if self.fresh:
            kill_user(self.drop[0])

    def remove_files(self):
        """With a uid of the run's own: remove every file and IPC object it left
        (cleanup.clean; its processes are gone by then).  Never raises.  In namespaces
        there is nothing to search: what it wrote outside its folder went with them."""
        if self.fresh and self.tool is None:
            self.notes += clean(self.drop[0], self.search)

    def close(self):
        """Kill what is left of the run and remove its files and folder.  Never raises:
        what it could not do is a note (self.notes), and the run's results are written
        whatever it meets."""
        for step in (self.kill_all, self.remove_files, self._remove_dir):
            try:
                step()
            except BaseException as err:
                self.notes.append(f"the cleanup's {step.__name__} failed: {type(err).__name__}: {err}")

    def _remove_dir(self):
        if self.dir is not None:
            folder, self.dir = self.dir, None
            remove_tree(folder, time.monotonic() + 10)
        if self.jail is not None:                  # empty: what was built on it went with the run
            folder, self.jail = self.jail, None
            os.rmdir(folder)


def _child_of(parent):
    """The one child process of parent (its pid), from /proc: the children file where the
    kernel has it, else each process's stat; None when there is none."""
    try:
        with open(f"/proc/{parent}/task/{parent}/children", "rb") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rindex(b")") + 2:].split()[1]) == parent:    # its fields after the name
                return int(name)
    return None


class Worker:
    """One child process running worker.py on the module; replaced when it dies or hangs.

    On POSIX the worker starts in a session of its own, and the whole process
    group is killed when it stops.  Answers are read with select() on POSIX and
    by a reader thread elsewhere (Windows), requests written without blocking
    (or by a thread); every read and write has a deadline: the call's timeout,
    or the end of the run's budget when that comes first.
    """

    def __init__(self, path, timeout, seal=None, budget_end=None, label=None, run=None,
                 paths=None, reload=False):
        self.path, self.timeout, self.label = path, timeout, label or path
        self.seal = seal or Seal()
        self.budget_end = budget_end if budget_end is not None else time.monotonic() + DEFAULT_BUDGET
        self.run, self.paths, self.reload = run, paths, reload
        self.proc = None
        self.started = 0
        self.sent = 0
        self.budget_text = ""

    def out_of_time(self):
        return time.monotonic() >= self.budget_end

    def _popen(self):
        placed = self.seal.place(self.path)
        config = {"path": placed, "shown": self.label, "limits": self.seal.limits,
                  "drop": self.seal.drop, "refuse_grader": self.run is None,
                  "paths": self.paths if self.paths is not None else list(dict.fromkeys(
                      [os.path.dirname(placed)] + ([] if self.seal.sealed else
                                                   [os.path.dirname(os.path.abspath(self.path))])))}
        if self.run is not None:
            config.update(run=self.run, name="gqa_under_tool", register=False)
        if self.reload:
            config["reload"] = True
        if self.seal.sealed:
            config["environment"] = ["PATH"]
        report = os.pipe() if self.seal.tool is not None else None      # the root's builder's word
        argv, first = self.seal.command([sys.executable, "-I", "-S", WORKER])
        try:                             # its stderr, until the worker points it at /dev/null
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=report[1] if report else subprocess.DEVNULL,
                cwd=self.seal.cwd(), env=self.seal.env(), start_new_session=os.name == "posix")
        finally:
            if report:
                os.close(report[1])
        self.report = report and report[0]
        self.started += 1
        self.buffer, self.scanned, self.round_trip = bytearray(), 0, 0
        try:                             # its configuration on its stdin: no path on a command line
            self.proc.stdin.write(first + (json.dumps(config) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except OSError:
            pass                         # it ended at once: its first answer says so
        if os.name == "posix":
            os.set_blocking(self.proc.stdin.fileno(), False)
        else:
            self.lines = queue.Queue()
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines),
                             daemon=True).start()

    def start(self):
        """Start a worker and import the module; raise Refused when it cannot be imported."""
        self._popen()
        wait = max(IMPORT_TIMEOUT, 2 * self.timeout + 5)
        try:
            first = self._answer(_("importing {module}").format(module=self.label), wait)
        except OutOfTime:
            raise
        except Failure as err:
            self._root_failed()
            raise Refused(str(err)) from None
        if not isinstance(first, dict) or first.get("ready") is not True:
            self._root_failed()
        self._root_failed(ready=True)
        if not isinstance(first, dict) or "import_error" in first or first.get("ready") is not True:
            self.stop()
            why = first.get("import_error") if isinstance(first, dict) else None
            raise Refused(clean_text(bounded(import_error(why, self.label)), False) if isinstance(why, str)
                          else _("the worker's first answer for {module} was not readable").format(
                              module=self.label))
        if self.seal.drop:
            self._check_user()

    def _root_failed(self, ready=False):
        """Raise Refused when the run's root could not be built: what its builder wrote on
        its own pipe before it ended, which the module never holds (closed at the worker's
        exec).  ready: the worker answered, so the root was built: the pipe is closed."""
        fd, self.report = getattr(self, "report", None), None
        if fd is None:
            return
        if ready:
            os.close(fd)
            return
        try:
            ready = select.select([fd], [], [], 1)[0] if os.name == "posix" else [fd]
            text = os.read(fd, 4096).decode("utf-8", "replace") if ready else ""
        except OSError:
            text = ""
        finally:
            os.close(fd)
        try:                                        # enter.py's line, or bubblewrap's own
            why = json.loads(text)["sandbox_error"] if text else None
        except (ValueError, KeyError, TypeError):
            why = text.strip() if text.startswith("bwrap: ") else None
        if why:
            self.stop()                             # the run's root, not the module, failed
            raise Refused(_("the run's namespaces could not be made ({why}); nothing was graded").format(
                why=clean_text(bounded(str(why), 300), False)))

    def load(self, path, label=None):
        """For a worker made with reload (modules one trusts): the module at path in place
        of the last one, in the same process, imported afresh (a fresh worker if there is
        none).  Raises Refused when it cannot be imported, as start() does."""
        if not self.reload:
            raise ValueError("load() needs a worker made with reload=True")
        self.path, self.label = path, label or path
        self.seal.source = None                      # the next module's bytes, read afresh
        if self.proc is None:
            return self.start()
        self.sent += 1
        self.round_trip = 0
        load = {"op": "load", "path": self.seal.place(path), "shown": self.label}
        what = _("importing {module}").format(module=self.label)
        self._write((json.dumps({"n": self.sent, "items": [load]}) + "\n").encode("utf-8"), what)
        try:
            answer = self._answer(what, max(IMPORT_TIMEOUT, 2 * self.timeout + 5))
        except OutOfTime:
            raise
        except Failure as err:
            raise Refused(str(err)) from None
        if (not isinstance(answer, dict) or answer.get("ready") is not True
                or (answer.get("n"), answer.get("i")) != (self.sent, 0)):
            self.stop()
            why = answer.get("import_error") if isinstance(answer, dict) else None
            raise Refused(clean_text(import_error(why, self.label), False) if isinstance(why, str)
                          else _("the worker's answer to {what} was not readable").format(what=what))
        return None

    def _check_user(self):
        """Where /proc exists: the worker's real, effective, saved uid and gid are the drop's."""
        pid = self.proc.pid
        if self.seal.tool is not None:             # the tool's one child: the worker, PID 1 inside
            pid = _child_of(pid)
            if pid is None:
                self.stop()
                raise Refused(_("the worker's process could not be found to check its user; "
                                "nothing was graded")) from None
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                text = f.read().decode("utf-8", "replace")      # its name may be any bytes
            status = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        except (OSError, ValueError):
            return
        uid, gid = self.seal.drop
        if (set(status.get("Uid", "").split()) != {str(uid)}
                or set(status.get("Gid", "").split()) != {str(gid)}
                or status.get("Groups", "").split() not in ([], [str(gid)])):
            self.stop()
            raise Refused(f"the worker did not run as uid {uid}, gid {gid}; nothing was graded")

    @staticmethod
    def _read(stream, lines):
        while True:
            line = stream.readline(ANSWER_CAP + 1)
            if not line or len(line) > ANSWER_CAP:
                lines.put(None if not line else b"")
                return
            lines.put(line.rstrip(b"\n"))

    def _deadline(self, timeout):
        """(deadline, whether it is the budget's)."""
        mine = time.monotonic() + timeout
        return (self.budget_end, True) if self.budget_end < mine else (mine, False)

    def _line(self, deadline):
        """The worker's next line (bytes), None at its end; raise queue.Empty at the deadline
        and OverflowError for a line longer than ANSWER_CAP."""
        if os.name != "posix":
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line == b"":
                raise OverflowError
            return line
        fd = self.proc.stdout.fileno()
        while True:
            at = self.buffer.find(b"\n", self.scanned)
            if at > ANSWER_CAP:
                raise OverflowError
            if at >= 0:
                line = bytes(self.buffer[:at])
                del self.buffer[:at + 1]
                self.scanned = 0
                return line
            self.scanned = len(self.buffer)
            if self.scanned > ANSWER_CAP:
                raise OverflowError
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise queue.Empty
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk

    def _write(self, data, what):
        """Send data to the worker, by the call's deadline; a dead worker is left to _answer."""
        deadline, budget = self._deadline(self.timeout)
        if os.name != "posix":
            def write():
                try:
                    self.proc.stdin.write(data)
                    self.proc.stdin.flush()
                except OSError:
                    pass
            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            writer.join(max(0.0, deadline - time.monotonic()))
            if writer.is_alive():
                self._stalled(what, budget)
            return
        fd, view = self.proc.stdin.fileno(), memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                self._stalled(what, budget)
            try:
                view = view[os.write(fd, view[:1 << 16]):]
            except BlockingIOError:
                continue
            except OSError:
                return

    def _stalled(self, what, budget):
        self.stop()
        if budget:
            raise OutOfTime(_(BUDGET_NOTE))
        raise Failure(_("{what} did not read its request within {seconds} s (is there an endless "
                        "loop?); the worker was stopped").format(what=what, seconds=f"{self.timeout:g}"))

    def _answer(self, what, timeout):
        deadline, budget = self._deadline(timeout)
        try:
            line = self._line(deadline)
        except queue.Empty:
            self.stop()
            if budget:
                raise OutOfTime(_(BUDGET_NOTE)) from None
            raise Failure(_("{what} did not return within {seconds} s (is there an endless "
                            "loop?); the worker was stopped").format(
                                what=what, seconds=f"{timeout:g}")) from None
        except OverflowError:
            self.stop()
            raise Failure(_("the answer to {what} was longer than {size} MiB; the worker was "
                            "stopped").format(what=what, size=ANSWER_CAP >> 20)) from None
        if line is None:
            code = self.stop()
            if code is None or code >= 0:
                raise Failure(_("the module ended its process (status {status}) during {what}").format(
                    status=code, what=what))
            raise Failure(_("the module ended its process (signal {signal}) during {what}").format(
                signal=-code, what=what))
        self.round_trip += len(line)
        if self.round_trip > ROUND_TRIP_CAP:
            self.stop()
            raise Failure(_("the worker's answers to one request (up to {what}) came to more "
                            "than {size} MiB; the worker was stopped").format(
                                what=what, size=ROUND_TRIP_CAP >> 20))
        if line.count(b"[") + line.count(b"{") + line.count(b",") > STRUCTURE_CAP:
            self.stop()
            raise Failure(_("the answer to {what} held more than {count} values and lists; the "
                            "worker was stopped").format(what=what, count=f"{STRUCTURE_CAP:,}"))
        try:
            return json.loads(line, parse_int=_bounded_int)
        except (ValueError, RecursionError, MemoryError):
            self.stop()
            raise Failure(_("the worker's answer to {what} was not readable").format(what=what)) from None

    def exchange(self, items, whats):
        """Send items in one request; return their answers, up to the first error.

        Each answer has the call's own deadline, so a timeout names the call that hung.
        """
        if self.proc is None:
            self.start()
        self.sent += 1
        self.round_trip = 0
        self._write((json.dumps({"n": self.sent, "items": items}) + "\n").encode("utf-8"),
                    whats[0])
        answers = []
        for i, what in enumerate(whats):
            answer = self._answer(what, self.timeout)
            if not isinstance(answer, dict) or answer.get("n") != self.sent or answer.get("i") != i:
                self.stop()
                raise Failure(_("the worker's answer to {what} was out of turn or not an answer; "
                                "the worker was stopped").format(what=what))
            answers.append(answer)
            if "error" in answer:
                break
        return answers

    def items(self):
        """With run: each item the child sends, until it is done; Failure when it ends otherwise."""
        self.start_run()
        while True:
            try:
                line = self._answer(self.what, self.timeout)
            except OutOfTime:
                raise Failure(_("{what} did not finish within its time budget").format(
                    what=self.what)) from None
            if not isinstance(line, dict):
                self.stop()
                raise Failure(_("the child process sent something that is not an item"))
            if "item" in line:
                yield clean_data(line["item"])
            elif line.get("done") is True:
                return
            elif "import_error" in line and isinstance(line["import_error"], str):
                self.stop()
                raise Refused(clean_text(bounded(import_error(line["import_error"], self.label)), False))
            else:
                error = line.get("error")
                self.stop()
                if isinstance(error, dict):
                    error = clean_data({k: bounded(v) if isinstance(v, str) else None
                                        for k, v in error.items() if k in ("type", "message")},
                                       newlines=False)
                    raise Failure(_("it raised {type}: {message}").format(type=error.get("type"),
                                                                          message=error.get("message")))
                raise Failure(_("the child process sent something that is not an item"))

    def start_run(self):
        self._popen()

    def stop(self):
        """Kill the worker and its process group; return its exit status (None if not known)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if os.name == "posix":
            try:                             # before wait(): the group's id cannot be reused yet
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            proc.kill()
        except OSError:
            pass
        try:
            code = proc.wait(10)
        except subprocess.TimeoutExpired:
            code = None
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.seal.kill_all()
        return code


def run_in_child(path, target, args=(), *, paths=(), label=None, what="running the module",
                 item_timeout=60.0, budget=DEFAULT_BUDGET):
    """Yield what the tool's function target yields when called as target(the module at
    path, *args) in a worker, each item as plain JSON data.  target is a name the worker
    knows ("report", "tables", "uptrain": worker.w_target, its one call into the tools).

    The worker has the grader's limits, its own session (killed at the end), a
    private folder holding a copy of the module (read by read_module: no symbolic
    link, at most 1 MiB), as root a user id of the run's own (Seal), a deadline per
    item and one for the whole run; the items' strings come back cleaned (clean_data); what names the work in
    messages ("building the report did not return within 60 s").  Raises Refused when the
    module cannot be imported, Failure (after the items that came) when the
    child hangs, dies, runs out of the budget or sends something else.  The
    caller's process never imports the module.
    """
    seal = Seal(budget=budget, private=True)
    worker = Worker(path, item_timeout, seal, time.monotonic() + budget,
                    label=label, run={"target": target, "args": list(args)}, paths=list(paths))
    worker.what = what
    try:
        yield from worker.items()
    finally:
        worker.stop()
        seal.close()

