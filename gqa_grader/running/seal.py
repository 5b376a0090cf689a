"""The seal: how the worker that imports the module is shut in, and cleaned up after.

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
Where the kernel's namespaces can be made (gqa_sandbox), a sealed run's worker
sees a root of its own.  The worker's process itself, and the protocol it
speaks, are process.py's.
"""

import os
import re
import sys
import threading
import time

from ..language import i18n
from ..language.i18n import _
from .cleanup import FolderSearch, clean, remove_keys, remove_tree
from .failures import Refused
from .users import fresh_ids, kill_user, reachable, writable_by_others

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))      # gqa_grader/
HERE = os.path.dirname(PACKAGE)                  # grader.py's folder
WORKER_INSIDE = "/grader/worker.py"  # where a run in namespaces sees it: no path of the machine
DEFAULT_BUDGET = 300.0  # seconds a whole run may take; a correct module takes about one
# What a worker may use, on POSIX: seconds of CPU (its whole life), bytes of
# address space, processes beyond itself (none: no fork, no thread), bytes
# per file written, open files.
LIMITS = {"cpu": DEFAULT_BUDGET, "memory": 2 << 30, "processes": 0, "file_size": 1 << 20,
          "open_files": 64, "message_queues": 0}


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
    a traceback.  Text saved as UTF-16 with its byte-order mark (Windows Notepad's
    "Unicode") is the same text written as UTF-8.  Otherwise the same text read in the
    first of the languages' Windows encodings, in the registry's order, that reads it
    (Japanese's Shift_JIS, cp932; Korean's cp949), else as cp1252 (as Latin-1 for the five
    bytes cp1252 leaves out), and written as UTF-8, the mark kept: whatever the run's
    language, so that a file scores the same in every teacher's run.  (Read as cp1252, a
    kanji's second byte 0x5C, a backslash there, swallowed the quote after it: a syntax
    error Python never saw.)  What was graded is still recorded as the student's bytes
    (records.sha256_of)."""
    return read_as(source)[0]


def read_as(source):
    """(runnable's bytes for source, the encoding they were read in: None for the bytes as
    they are, which Python itself reads too)."""
    import codecs
    if source.startswith((b"\xff\xfe", b"\xfe\xff")):     # UTF-16 with its mark (Notepad's "Unicode")
        try:
            return source.decode("utf-16").encode("utf-8"), "UTF-16"
        except UnicodeDecodeError:
            return source, None               # Python says what is wrong with it
    bom = _BOM if source.startswith(_BOM) else b""
    body = source[len(bom):]
    cookie = _COOKIE.search(b"\n".join(body.split(b"\n", 2)[:2]))
    if cookie:
        try:
            declared = codecs.lookup(cookie.group(1).decode("ascii")).name
        except LookupError:
            return source, None               # Python says what is wrong with it
        if declared != "utf-8":
            return source, None               # Python reads it as it declares
    try:
        body.decode("utf-8")
        return source, None
    except UnicodeDecodeError:
        pass
    for legacy in dict.fromkeys(language.legacy for language in i18n.REGISTRY):
        if legacy == "cp1252":
            continue                                  # English's, which reads any bytes: last
        try:
            return bom + body.decode(legacy).encode("utf-8"), legacy
        except UnicodeDecodeError:
            pass
    cp1252 = {}
    for byte in range(0x80, 0xa0):
        try:
            cp1252[byte] = bytes([byte]).decode("cp1252")
        except UnicodeDecodeError:
            pass
    return bom + body.decode("latin-1").translate(cp1252).encode("utf-8"), "cp1252"


def sandbox_package():
    """gqa_sandbox, from beside this package by its path (as grader.py loads gqa_grader:
    the grader's folder is not on sys.path); None where it is not there.  Loaded under a
    lock and put in sys.modules only whole: a tool asks from two threads at once, and the
    second saw a module still being run ("has no attribute 'available'")."""
    import importlib.util
    with _LOADING:
        if "gqa_sandbox" not in sys.modules:
            folder = os.path.join(os.path.dirname(PACKAGE), "gqa_sandbox")
            if not os.path.isfile(os.path.join(folder, "__init__.py")):
                return None
            spec = importlib.util.spec_from_file_location(
                "gqa_sandbox", os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules["gqa_sandbox"] = module
    return sys.modules["gqa_sandbox"]


_LOADING = threading.Lock()


_TRUSTED = []                        # HERE once its files were found to be root's alone


def check_grader_files():
    """As root: refused when a user other than root could write one of the grader's files
    (grader.py, gqa_grader/, gqa_sandbox/) or a folder above them, naming it: a run as root
    executes them, and a non-root run's module could have changed them.  Once a process."""
    if HERE in _TRUSTED:
        return
    found = writable_by_others(HERE)
    if found is not None:
        raise Refused(_("{path} could be written by a user other than root, and a run as root "
                        "executes the grader's files; make them root's, writable by root alone "
                        "(chown -R root: and chmod -R go-w), with every folder above them").format(path=found))
    _TRUSTED.append(HERE)


def tool_refusal(why):
    return _("a tool run as root runs a student's module only in namespaces of its own, as a grade "
             "runs it, and they cannot be made here ({why}); nothing was run; run the tool as another "
             "user, or grade the module with: python grader.py --sealed").format(why=why)


def tool_seal():
    """What a tool run as root says before it runs a student's module: that the run is
    sealed as a grade is (Refused with the reason where namespaces cannot be made here);
    None when the tool is not root (the module runs as the tool's own user)."""
    if os.name != "posix" or os.geteuid() != 0:
        return None
    package = sandbox_package()
    ok, why = package.available() if package else (False, _("gqa_sandbox is not beside the grader"))
    if not ok:
        raise Refused(tool_refusal(why))
    return _("the module runs sealed, as a grade runs it: in namespaces of its own ({tool}), as a user of "
             "its own with no capability, with no network, and with none of the project's files in "
             "reach").format(tool=why)


class Seal:
    """How a worker is shut in.  Every worker on POSIX gets LIMITS and its own session;
    a sealed run adds a private folder holding only a copy of the module, an
    environment of PATH alone, and, when the grader is root, another user.

    partly is None for a fully sealed run, else the reason it is only partly sealed.
    alone: a student's module run as root (the self-check, a command repeated from its
    feedback): in namespaces where they can be made, as a sealed run's, so that its copy is
    all of its folder in its reach (never a classmate's file beside it).
    for_tool: a tool's run of a student's module (report, tables, uptrain: run_in_child and
    the steps they grade), sealed as a grade is where namespaces can be made: a root of
    its own, no network, as root a user of its own, the environment's PATH alone, and of
    the project only a copy of the tools (child_paths); as root, refused where they
    cannot be made (tool_seal).

    Raises Refused when a sealed run cannot be made safe here.
    """

    def __init__(self, sealed=False, user=None, out=None, budget=DEFAULT_BUDGET, private=False,
                 out_name=None, alone=False, for_tool=False):
        self.sealed, self.drop, self.partly, self.dir = sealed, None, None, None
        self.for_tool = for_tool
        self.shown = []                    # folders a tool's child imports from, shown read-only
        self.jail = None                   # the folder unshare builds a sealed run's root on
        self.tool = None                   # what made them: "unshare"
        self.notes = []                    # what the cleanup removed, or could not
        self.said = None                   # that the module is not UTF-8, when it is not (a note for its author)
        self.search = None                 # the world-writable folders, with a uid of its own
        self.source, self.fresh, self.follow = None, False, not (sealed or private)
        self.copy_only = False             # a private folder made only for a UTF-8 copy
        self.limits = dict(LIMITS, cpu=int(budget) + 5) if os.name == "posix" else {}
        if os.name == "posix" and os.geteuid() == 0:
            check_grader_files()
        root = os.name == "posix" and os.geteuid() == 0 and DROP_ROOT
        if not sealed:
            return self._not_sealed(root, alone, private)
        if os.name != "posix":
            raise Refused(_("a sealed run needs a POSIX system (Linux, macOS): its limits, "
                            "sessions and users do not exist here"))
        self._enter_namespaces()
        self._check_library()
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
                    raise Refused(_("--user {name}: no such user").format(name=name)) from None
                if entry.pw_uid == 0:
                    raise Refused(_("--user {name}: the worker's user must not be root").format(name=name))
                self.drop = (entry.pw_uid, entry.pw_gid)
            self.user, gids = name, {self.drop[1]}
            out_name = out_name or f"--out {out}"
            if out and not os.path.isdir(os.path.dirname(os.path.abspath(out))):
                raise Refused(_("{option}: no such folder {folder}").format(
                    option=out_name, folder=os.path.dirname(os.path.abspath(out))))
            if self.tool is None:                  # in namespaces none of it is in sight
                self._check_reach(name, gids, out, out_name)
        self._make_dir()

    def _not_sealed(self, root, alone, private):
        """A run that is not the teacher's sealed run: a tool's (for_tool), sealed as a grade
        is, or refused as root where namespaces cannot be made; a student's module as root
        (alone), its file alone in reach; as root, never as root."""
        if self.for_tool:
            self._enter_namespaces()
            if self.tool is None and os.name == "posix" and os.geteuid() == 0:
                raise Refused(tool_refusal(self.why))
            self.partly = None
        elif root and alone:
            self._enter_namespaces()
            self.partly = None                # the self-check says nothing of it
        if root:
            self.drop, self.fresh = fresh_ids(), True
            self.search = FolderSearch(self.drop[0]) if self.tool is None else None
        if private or root:
            self._make_dir()

    def _check_library(self, name="gqa"):
        """Refused when the module's name can be imported from something in the worker's
        sight other than the module: the standard library's folders and, outside
        namespaces (where they are not hidden), every folder of installed packages (the
        project pip-installed ships gqa.py, the solution)."""
        import importlib.machinery
        package = sandbox_package()
        if package is None:
            return
        folders = package.library_folders() + ([] if self.tool else package.site_folders())
        found = importlib.machinery.PathFinder.find_spec(name, folders)
        if found is not None:
            where = found.origin if found.origin not in (None, "namespace") else list(found.submodule_search_locations)[0]
            raise Refused(_("{name} can be imported from {path}, in the worker's sight, as well as from the "
                            "module: a module could import it instead of doing its own work; grade with a "
                            "Python where it is not installed (a virtual environment without it)").format(
                                name=name, path=where))

    def _check_reach(self, name, gids, out, out_name):
        """Outside namespaces: refused when the worker's user could open the grader's files,
        write the Python that starts each worker as root or the folder of --out, or rename
        a folder above one of them."""
        if reachable(HERE, self.drop[0], gids, 1):
            raise Refused(_("the worker's user {name} could open files in the grader's folder "
                            "{folder} (grader.py, a solution); make it private first "
                            "(chmod 700 {folder})").format(name=name, folder=HERE))
        self._check_above(HERE, f"the grader's folder {HERE}", name, gids)
        self._check_python(name, gids)
        if out:
            folder = os.path.dirname(os.path.abspath(out))
            if reachable(folder, self.drop[0], gids, 2):
                raise Refused(_("the worker's user {name} could write into {folder}, where "
                                "{option} goes; choose a folder only the grader can write").format(
                                    name=name, folder=folder, option=out_name))
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
                    raise Refused(_("the worker's user {name} could write into {folder}, above "
                                    "{what}, and rename the folders in it; choose a path "
                                    "whose every folder only the grader can write").format(
                                        name=name, folder=folder, what=what))
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
                raise Refused(_("the worker's user {name} could write into {folder}, the Python "
                                "that starts each worker as root; use a Python only root can write").format(
                                    name=name, folder=folder))
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
            raise Refused(_("the worker's user {name} could open files in {folder}, {what}; "
                            "make it private first (chmod 700 {folder})").format(
                                name=name, folder=real, what=what))
        self._check_above(real, what, name, {self.drop[1]})

    def _enter_namespaces(self):
        """A root of the run's own, in the kernel's namespaces, where they can be made
        (gqa_sandbox): the worker then sees its module, Python and nothing else of the
        machine.  Where they cannot, the run is partly sealed and says why."""
        package = sandbox_package()
        ok, why = package.available() if package else (False, _("gqa_sandbox is not beside the grader"))
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
        spec = package.spec(self.jail, ro=self.shown, rw=[self.dir], cwd=self.cwd(),
                            files={WORKER_INSIDE: argv[-1]}, user=self.drop)
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
        text, encoding = read_as(self.source)
        with os.fdopen(fd, "wb") as f:
            f.write(text)
        if encoding:
            self.said = _("{module} is not saved as UTF-8 (graded as read in {encoding}): Python itself "
                          "cannot run it, so python -m gqa report and tables, and a call pasted from "
                          "--show, stop at a SyntaxError; save it as UTF-8").format(
                              module=os.path.basename(path), encoding=encoding)
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
        return {"PATH": os.defpath} if self.sealed or self.for_tool else None

    def child_paths(self, paths):
        """The folders a tool's child imports the tool's function from: in namespaces, the
        project's folder (the grader's, HERE) replaced by a copy of the tools alone in the
        run's private folder (toolcopy.tools_for_child: the tools, the grader's language,
        the lab's starter), root's and readable by the run's user, never the project's
        folder with its solution and reference; another folder of paths (a caller's own)
        shown read-only where it is.  Outside namespaces, paths."""
        if not self.for_tool or self.tool is None:
            return list(paths)
        chosen = []
        for path in paths:
            if os.path.realpath(path) == os.path.realpath(HERE):
                from .toolcopy import tools_for_child
                folder = os.path.join(self.dir, "tools")
                if not os.path.isdir(folder):
                    tools_for_child(folder)
                chosen.append(folder)
            else:
                self.shown.append(os.path.realpath(path))
                chosen.append(os.path.realpath(path))
        return chosen

    def kill_all(self):
        """With a uid of the run's own: kill every process of it (a daemon the module left)."""
        if self.fresh:
            kill_user(self.drop[0])

    def remove_files(self):
        """With a uid of the run's own: remove every file and IPC object it left
        (cleanup.clean; its processes are gone by then), and its keys in the kernel's key
        store (cleanup.remove_keys).  Never raises.  In namespaces there are no files to
        search for: what it wrote outside its folder went with them."""
        if self.fresh and self.tool is None:
            self.notes += clean(self.drop[0], self.search)
        if self.fresh:
            try:
                removed, left = remove_keys(self.drop[0])
            except (OSError, ValueError, AttributeError) as err:
                removed, left = 0, [f"the keys' cleanup stopped: {type(err).__name__}: {err}"]
            self.notes += left

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
