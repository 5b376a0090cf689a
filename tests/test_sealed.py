"""The referee against hostile modules: each test writes a small module into a
temporary folder and grades it with a disposable copy of grader.py (attacks
that would edit files edit the copies).  What no module may do in either run
(crash or stall the grader, print a second document) is tested in both; what
only the sealed run closes (reading the grader, reaching its process, its
files and its results) is tested in a sealed run as root, and shown to work
in the self-check, so that each test could fail."""

from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock
from concurrent.futures import ThreadPoolExecutor

from gqa_grader import checking, checks, cli, compare, failures, grading, handout, i18n, process
from gqa_grader import worker as worker_program
from gqa_grader.seal import DEFAULT_BUDGET, LIMITS, Seal, read_module, sandbox_package
from tests.helpers import ROOT, copy_grader, early, heavy, run_grader, start_early

with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as _f:
    SOURCE = _f.read()
STARTER = handout.make_starter(SOURCE)
ROOT_POSIX = os.name == "posix" and hasattr(os, "geteuid") and os.geteuid() == 0
NOT_ROOT = "a sealed run drops privileges only as root; this test runs as another user"


class Copy:
    """A private folder holding copies of grader.py and the solution gqa.py beside it,
    and another holding the module under test."""

    def __init__(self, module_source, grader_edit=None):
        self.dir = tempfile.mkdtemp()
        os.chmod(self.dir, 0o700)
        self.grader = copy_grader(self.dir)
        if grader_edit:                      # (file in gqa_grader/, old text, new text)
            edited = os.path.join(self.dir, "gqa_grader", grader_edit[0])
            with open(edited, encoding="utf-8") as f:
                text = f.read()
            self.assertEdited = text.count(grader_edit[1]) == 1
            with open(edited, "w", encoding="utf-8") as f:
                f.write(text.replace(*grader_edit[1:]))
        self.sub = tempfile.mkdtemp()
        self.module = os.path.join(self.sub, "gqa.py")
        with open(self.module, "w", encoding="utf-8") as f:
            f.write(module_source.replace("__GRADER__", self.grader))
        self.results = os.path.join(self.dir, "results.json")

    def run(self, *args, timeout=60):
        return run_grader("--module", self.module, *args, grader=self.grader, cwd=self.dir, timeout=timeout)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.sub, ignore_errors=True)


def main_in(here, *argv):
    """cli.main(argv) in this process, as if grader.py stood in the folder here; the
    module still runs in a worker.  Returns what a subprocess run would (code, stdout, stderr)."""
    import contextlib
    import io
    from unittest import mock
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            mock.patch("gqa_grader.seal.HERE", here):
        code = cli.main(list(argv))
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def one_document(test, run):
    """The run's stdout parsed as exactly one JSON document."""
    text = run.stdout
    doc, end = json.JSONDecoder().raw_decode(text)
    test.assertEqual(text[end:].strip(), "", "more than one document")
    return doc


def in_each(jobs, at_once=2):
    """fn() for each fn, at_once at a time (each grades in its own worker process)."""
    with ThreadPoolExecutor(at_once) as pool:
        return list(pool.map(lambda fn: fn(), jobs))


def completed(run):
    """A run (subprocess.CompletedProcess) as plain data, for a job: [status, stdout, stderr]."""
    return [run.returncode, run.stdout, run.stderr]


def as_run(data):
    """A run from completed()'s data."""
    return subprocess.CompletedProcess(None, *data)


def raised(fn):
    """What fn() raised, as plain data: {"failure": whether a Failure (or kind of one),
    "refused": whether Refused, "type", "message"}; None when it raised nothing."""
    try:
        fn()
    except Exception as err:
        return {"failure": isinstance(err, failures.Failure), "refused": isinstance(err, failures.Refused),
                "type": type(err).__name__, "message": str(err)}
    return None


def load_tests(loader, tests, pattern):
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


def grade_source(source, **options):
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "gqa.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    try:
        return {r.name: r.as_json() for r in grading.grade(path, 1, **options)}
    finally:
        shutil.rmtree(folder)


# A module that tries, at import, every way out that the sealed run closes;
# each harmless when it works (it opens, it does not write).  valid_g raises
# what happened, so it comes back in the grader's message.
ESCAPES = STARTER + r'''
import os as _os, json as _json
_R = {}


def _try(name, fn):
    try:
        fn()
        _R[name] = "ok"
    except BaseException as err:
        _R[name] = type(err).__name__[:6]


_ppid = _os.getppid()
try:                                 # the grader's command line, where its process is seen
    with open(f"/proc/{_ppid}/cmdline", "rb") as _f:
        _argv = [a.decode() for a in _f.read().split(b"\0")]
    _R["cmdline"] = "ok"
except OSError as _err:              # in namespaces the parent is out of sight (ppid 0)
    _argv, _R["cmdline"] = [], type(_err).__name__[:6]
_grader = next((a for a in _argv if a.endswith("grader.py")), "__GRADER__")   # else: told, as if guessed
_folder = _os.path.dirname(_grader)


def _load_grader():                  # the referee, under another name: no name to refuse
    import importlib.util
    import sys
    package = _os.path.join(_folder, "gqa_grader")
    spec = importlib.util.spec_from_file_location(
        "not_the_grader", _os.path.join(package, "__init__.py"), submodule_search_locations=[package])
    sys.modules["not_the_grader"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules["not_the_grader"])
    importlib.import_module("not_the_grader.reference").ref_valid_g(8)


def _plant():
    path = _os.path.join(_folder, "queue.py")
    _os.close(_os.open(path, _os.O_WRONLY | _os.O_CREAT))
    _os.remove(path)


def _fork():
    if _os.fork() == 0:
        _os._exit(0)


_try("read_grader", lambda: open(_grader).close())
_try("load_grader", _load_grader)
_try("read_solution", lambda: open(_os.path.join(_folder, "gqa.py")).close())
_try("plant", _plant)
_try("edit_grader", lambda: open(_grader, "a").close())
_try("results", lambda: open(_os.path.join(_folder, "results.json"), "a").close())
_try("stdout", lambda: open(f"/proc/{_ppid}/fd/1", "w").close())
_try("memory", lambda: open(f"/proc/{_ppid}/mem", "r+b").close())
_try("environ", lambda: open(f"/proc/{_ppid}/environ", "rb").close())
_try("signal", lambda: _os.kill(_ppid or -1, 0))   # out of sight: any process it could signal
_try("fork", _fork)
_R["uid"] = _os.getuid()
_R["env"] = sorted(_os.environ) if len(_os.environ) < 5 else len(_os.environ)
try:
    _R["cwd"] = sorted(_os.listdir("."))
except OSError as _err:
    _R["cwd"] = type(_err).__name__
try:
    import resource as _r
    _R["limits"] = [_r.getrlimit(getattr(_r, n))[0] for n in
                    ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_NOFILE")]
except ImportError:
    pass


def valid_g(h):
    raise RuntimeError("REPORT" + _json.dumps(_R, separators=(",", ":")))
'''
ESCAPES_TRIED = ("read_grader", "load_grader", "read_solution", "plant", "edit_grader", "results",
                 "stdout", "memory", "environ", "signal", "fork")


def escapes_report(doc):
    message = doc["steps"][0]["message"]
    return json.loads(message.split("REPORT", 1)[1].splitlines()[0])


class WorkerCode(unittest.TestCase):
    """The worker is a file of its own, run as a script: the process that imports the
    module holds the standard library and worker.py, no reference and no check."""

    def test_the_worker_imports_only_the_standard_library(self):
        import ast
        with open(process.WORKER, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        stdlib = {"array", "ctypes", "importlib", "inspect", "json", "linecache", "os", "resource",
                  "sys", "traceback"}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                self.assertLessEqual({n.split(".")[0] for n in names}, stdlib, node.lineno)
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.assertIn("w_main", defined)
        self.assertTrue(all(name.startswith(("w_", "_w_")) for name in defined), defined)

    def test_a_run_calls_the_target_its_caller_names(self):
        # "package.module:function", imported by the worker from the run's paths; a name of
        # another form is refused on both sides.
        self.assertIs(worker_program.w_target("json:dumps"), json.dumps)
        for name in ("tables", "json.dumps", "json:", ":dumps", "json:no_such", "os:sep", "json:a.b", None):
            with self.subTest(name=name), self.assertRaises(LookupError):
                worker_program.w_target(name)
        with self.assertRaisesRegex(ValueError, "package.module:function"):
            list(process.run_in_child(os.path.join(ROOT, "gqa.py"), "tables"))

    def test_a_module_cannot_choose_the_target(self):
        # The target is the caller's, imported from the worker's config before the module is:
        # a module that rewrites the config, plants a module of the target's name in
        # sys.modules, or has a function of the target's name, is still called by the caller's.  (A module runs its own code in its
        # worker anyway, and can replace the worker's functions, as DAEMON does: naming a
        # target gives it nothing more; what it sends is data the caller checks.)
        folder = tempfile.mkdtemp()
        try:
            with open(os.path.join(folder, "callers.py"), "w", encoding="utf-8") as f:
                f.write("def child(module, *args):\n    yield ['the caller', module.__name__, list(args)]\n"
                        "def other(module, *args):\n    yield 'chosen by the module'\n")
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write("import __main__, sys, types\n__main__.W.config['run']['target'] = 'callers:other'\n"
                        "sys.modules['callers'] = types.SimpleNamespace(child=lambda *a: iter(['planted']))\n"
                        "def child(*args):\n    yield 'the module'\n")
            os.chmod(folder, 0o755)               # as root, the worker's user reads callers.py
            os.chmod(os.path.join(folder, "callers.py"), 0o644)
            items = list(process.run_in_child(path, "callers:child", [1], paths=[folder]))
        finally:
            shutil.rmtree(folder)
        self.assertEqual(items, [["the caller", "gqa_under_tool", [1]]])

    def test_a_childs_item_too_deep_or_of_another_shape_is_refused_not_a_crash(self):
        # A module in a tool's child can replace the worker's w_run and send what it likes:
        # a list nested 700 deep (JSON reads it, cleaning it would recurse past the limit),
        # or tables without their keys; each is the child's failure, never a traceback.
        folder = tempfile.mkdtemp()
        try:
            path = os.path.join(folder, "gqa.py")
            for sent, tables in (("'[' * 700 + ']' * 700", False), ("'{\"cache\": \"x\"}'", True)):
                with open(path, "w", encoding="utf-8") as f:
                    f.write("import __main__, json\n"
                            "def _run(mod, run):\n"
                            f"    __main__.W.out.write('{{\"item\": ' + {sent} + '}}\\n')\n"
                            "    __main__.W.out.flush()\n"
                            "    __main__.w_send({'done': True})\n"
                            "__main__.w_run = _run\n")
                os.chmod(folder, 0o755)
                os.chmod(path, 0o644)
                if tables:
                    from gqa_tools import tables as gqa_tables
                    with self.assertRaisesRegex(ValueError, "the child process sent no tables"):
                        gqa_tables.texts_from_child(path, {}, None, False)
                else:
                    with self.assertRaisesRegex(failures.Failure, "sent something that is not an item"):
                        list(process.run_in_child(path, "gqa_tools.tables:child_texts", [{}, None, False],
                                                  paths=[ROOT]))
        finally:
            shutil.rmtree(folder)

    def test_a_tools_child_gets_no_variable_of_the_callers_but_path(self):
        folder = tempfile.mkdtemp()
        try:
            with open(os.path.join(folder, "callers.py"), "w", encoding="utf-8") as f:
                f.write("import os\ndef child(module):\n    yield sorted(os.environ)\n")
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write("X = 1\n")
            os.chmod(folder, 0o755)
            os.chmod(os.path.join(folder, "callers.py"), 0o644)
            with mock.patch.dict(os.environ, {"A_TEACHERS_TOKEN": "secret"}):
                items = list(process.run_in_child(path, "callers:child", paths=[folder]))
        finally:
            shutil.rmtree(folder)
        self.assertEqual(items, [["PATH"]])

    def test_the_worker_is_run_as_a_script(self):
        with open(process.WORKER, encoding="utf-8") as f:
            self.assertTrue(f.read().rstrip().endswith('if __name__ == "__main__":\n    w_main(sys.argv)'))

    def test_values_go_as_plain_data_with_their_types(self):
        from array import array
        self.assertEqual(worker_program.w_enc((1, [2.5, None])), {"$tuple": [1, [2.5, None]]})
        self.assertEqual(worker_program.w_enc(array("d", [1.0])), {"$array": "d", "values": [1.0]})
        self.assertEqual(worker_program.w_enc(object())["$other"], "object")
        deep = []
        for _ in range(60):
            deep = [deep]
        encoded = json.dumps(worker_program.w_enc(deep))
        self.assertIn('"$other": "nesting"', encoded)
        self.assertEqual(compare.decode(worker_program.w_enc((1, [2.0]))), (1, [2.0]))


# What a module sees in the sealed run's namespaces (gqa_sandbox): the solution beside the
# grader (its path told, as a clone's could be guessed), what another run left in /tmp,
# the processes, the network, and how much /dev/shm and /tmp hold.
LOOKS = STARTER + r'''
import os as _os, json as _json, socket as _socket
_R = {}


def _try(name, fn):
    try:
        _R[name] = fn()
    except BaseException as err:
        _R[name] = type(err).__name__


def _write(path, size):
    with open(path, "wb") as f:
        f.write(b"x" * size)
    return "ok"


_try("solution", lambda: len(open("__SOLUTION__").read()))
_try("left", lambda: open("/tmp/left-by-a-classmate").read())
_try("leave", lambda: _write("/tmp/left-by-a-classmate", 10))
_try("processes", lambda: sorted(int(p) for p in _os.listdir("/proc") if p.isdigit())[:3])
_try("ppid", _os.getppid)
_try("network", lambda: _socket.create_connection(("127.0.0.1", __PORT__), timeout=2).close())
_try("shm_small", lambda: _write("/dev/shm/small", 1 << 20))
_try("shm_big", lambda: _write("/dev/shm/big", 64 << 20))
_try("tmp_big", lambda: _write("/tmp/big", 40 << 20))


def _files(count):
    _os.makedirs("/var/tmp/many", exist_ok=True)
    for i in range(count):
        open(f"/var/tmp/many/{i}", "w").close()
    return "ok"


_try("files", lambda: _files(5000))
_try("python_write", lambda: _write(_os.path.join(_os.path.dirname(_os.__file__), "planted.py"), 1))
_try("environ", lambda: sorted(k for k in _os.environ if k != "LC_CTYPE"))


def _cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        words = f.read().decode("utf-8", "replace").split("\0")[:-1]
    return [("python" if i == 0 else _os.path.basename(w)) for i, w in enumerate(words)]


def _cmdlines():
    found = []
    for p in _os.listdir("/proc"):
        try:
            found.append(_cmdline(p) if p.isdigit() else None)
        except OSError:
            pass
    return [c for c in found if c]


_try("seed_seen", lambda: any("987654" in " ".join(c) for c in _cmdlines()))
_try("cmdlines", lambda: _cmdlines() if len(_cmdlines()) <= 2 else "many")
_try("parent", lambda: _cmdline(_os.getppid()))
_try("root", lambda: sorted(_os.listdir("/")))


def valid_g(h):
    raise RuntimeError("LOOKS" + _json.dumps(_R, separators=(",", ":")))
'''


def looks_of(run):
    message = json.loads(run.stdout)["steps"][0]["message"]
    text = message.split("LOOKS", 1)[1].splitlines()[0]
    try:
        return json.loads(text)
    except ValueError:                    # cut (the worker's 500 characters) in the listing, last
        return json.loads(text.split(',"root":', 1)[0] + "}")


def tools_here():
    """The tools of gqa_sandbox that make namespaces here, as root (bubblewrap, unshare)."""
    package = sandbox_package()
    if package is None or not ROOT_POSIX:
        return []
    return [tool for tool in package.TOOLS if package.available((tool,))[0]]


# A Python that any user may run (the system's), for a grader started as a user other
# than root: bubblewrap then makes the namespaces in a user namespace of their own.
SYSTEM_PYTHON = "/usr/bin/python3"


def with_tool(tool):
    """A Copy's edit: its gqa_sandbox uses tool alone."""
    return ("../gqa_sandbox/__init__.py", 'TOOLS = ("bwrap", "unshare")', f'TOOLS = ("{tool}",)')


@unittest.skipUnless(tools_here(), "the kernel's namespaces cannot be made here (root on Linux, "
                                   "with bubblewrap or util-linux's unshare)")
@heavy
class Namespaces(unittest.TestCase):
    """A sealed run on Linux: the module in a root of its own (gqa_sandbox), made by each
    tool found here, as root and, with bubblewrap, as another user."""

    EARLY = ("runs",)

    @staticmethod
    def runs():
        """The same module sealed twice by each tool, one run after the other, the grader's
        folder and the solution in it readable by every user: what each run saw.  With
        bubblewrap, also as a user other than root."""
        import socket
        runs = {}
        listening = socket.socket()                       # the machine's loopback, listening
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)
        looks = LOOKS.replace("__SOLUTION__", "{solution}").replace("__PORT__", str(listening.getsockname()[1]))
        runs["reached from here"] = raised(lambda: socket.create_connection(listening.getsockname(), 2).close())
        for tool in tools_here():
            copy = Copy(looks, with_tool(tool))
            try:
                assert copy.assertEdited, "the copy's gqa_sandbox names its tools otherwise"
                with open(copy.module, encoding="utf-8") as f:
                    text = f.read()
                with open(copy.module, "w", encoding="utf-8") as f:
                    f.write(text.replace("{solution}", os.path.join(copy.dir, "gqa.py")))
                os.chmod(copy.dir, 0o755)                  # a clone, as a clone is: world-readable
                runs[tool] = [completed(copy.run("--sealed", "--json", "--only", "valid_g", "--cases", "0",
                                                 "--seed", "987654")) for _ in range(2)]
                if tool == "bwrap" and os.path.exists(SYSTEM_PYTHON) and Namespaces.user_namespaces():
                    runs["bwrap as another user"] = [Namespaces.as_another_user(copy)]
            finally:
                copy.close()
        listening.close()
        copy = Copy(looks, ("../gqa_sandbox/__init__.py", 'TOOLS = ("bwrap", "unshare")', "TOOLS = ()"))
        try:                                              # outside namespaces: partly sealed
            runs["outside"] = [completed(copy.run("--sealed", "--json", "--only", "valid_g", "--cases", "0",
                                                  "--seed", "987654"))]
            if os.path.exists(SYSTEM_PYTHON):
                runs["outside as another user"] = [Namespaces.as_another_user(copy)]
        finally:
            copy.close()
        return runs

    @staticmethod
    def user_namespaces():
        """Whether the kernel lets a user other than root make namespaces with bubblewrap."""
        try:
            return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bwrap",
                                   "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "true"],
                                  capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    @staticmethod
    def as_another_user(copy):
        """The copy's sealed run as uid 65534, with the system's Python."""
        for folder in (copy.dir, copy.sub):
            os.chmod(folder, 0o755)
        os.chmod(copy.module, 0o644)
        return completed(subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", SYSTEM_PYTHON, copy.grader,
             "--module", copy.module, "--sealed", "--json", "--only", "valid_g", "--cases", "0",
             "--seed", "987654"], capture_output=True, text=True, timeout=60, cwd="/"))

    def test_a_root_that_cannot_be_built_is_said_and_never_blamed_on_the_module(self):
        from unittest import mock
        package = sandbox_package()
        made = package.spec
        for tool in tools_here():
            with self.subTest(tool=tool), mock.patch.object(package, "TOOLS", (tool,)), \
                    mock.patch.object(package, "spec", lambda *a, **k: dict(made(*a, **k), devices=["/dev/none-such"])):
                seal = Seal(sealed=True)
                try:
                    self.assertEqual(seal.tool, tool)
                    worker = process.Worker(os.path.join(ROOT, "gqa.py"), 5.0, seal)
                    with self.assertRaises(failures.Refused) as caught:
                        worker.start()
                    self.assertRegex(str(caught.exception), r"^the run's namespaces could not be made \(.*"
                                                            r"none-such.*\); nothing was graded$")
                finally:
                    seal.close()

    def test_the_module_sees_its_own_root_and_nothing_else(self):
        runs = dict(early(self.runs))
        self.assertIsNone(runs.pop("reached from here"))            # the port listens, outside
        runs.pop("outside")
        runs.pop("outside as another user", None)
        self.assertEqual(set(tools_here()) - set(runs), set())
        for tool, done in runs.items():
            with self.subTest(tool=tool):
                for run in (as_run(r) for r in done):
                    doc = json.loads(run.stdout)
                    self.assertEqual((doc["sealed"], doc["namespaces"]), ("sealed", tool.split()[0]), run.stderr)
                    self.assertEqual(run.stderr, "")          # no "partly sealed" line
                seen = looks_of(as_run(done[0]))
                self.assertEqual(seen["solution"], "FileNotFoundError")    # readable by all: out of sight
                self.assertEqual(seen["leave"], "ok")
                if len(done) > 1:
                    self.assertEqual(looks_of(as_run(done[1]))["left"], "FileNotFoundError")  # no run sees another's
                self.assertEqual((seen["processes"], seen["ppid"]), ([1], 0))   # itself alone: no grader
                self.assertEqual(seen["cmdlines"], [["python", "-I", "-S", "worker.py"]])  # no seed, no path
                self.assertIs(seen["seed_seen"], False)
                self.assertEqual(seen["environ"], ["PATH"])
                self.assertIn(seen["network"], ("OSError", "ConnectionRefusedError"))   # a loopback of its own
                self.assertEqual((seen["shm_small"], seen["shm_big"]), ("ok", "OSError"))   # capped
                self.assertEqual(seen["tmp_big"], "OSError")                # /tmp is capped too
                self.assertEqual(seen["files"], {"unshare": "OSError"}.get(tool, "ok"))   # and in files, by mount
                self.assertIn(seen["python_write"], ("OSError", "PermissionError"))   # read-only
                self.assertNotIn("work", seen["root"])
                self.assertLessEqual(set(seen["root"]), {"bin", "dev", "lib", "lib32", "lib64", "libx32", "proc",
                                                         "root", "run", "sbin", "tmp", "usr", "var", "grader"})


    def test_outside_namespaces_the_run_says_it_is_partly_sealed_and_shows_no_seed(self):
        runs = early(self.runs)
        (run,) = [as_run(r) for r in runs["outside"]]
        doc = json.loads(run.stdout)
        self.assertTrue(doc["sealed"].startswith("partly sealed: namespaces cannot be made"), doc["sealed"])
        self.assertRegex(run.stderr, r"^grader: partly sealed: namespaces cannot be made here \(no tool was named\)")
        seen = looks_of(run)
        self.assertNotEqual(seen["processes"], [1])                # the machine's processes are in sight,
        self.assertIs(seen["seed_seen"], False)                    # yet no command line holds the seed
        self.assertEqual(seen["parent"][:-1], ["python", "grader.py", "--arguments-from"])   # its grader's
        if "outside as another user" in runs:
            (other,) = [as_run(r) for r in runs["outside as another user"]]
            self.assertTrue(json.loads(other.stdout)["sealed"].startswith("partly sealed: the grader is not"))
            self.assertRegex(other.stderr, r"^grader: partly sealed: the grader is not running as root and "
                                           r"namespaces cannot be made here \(no tool was named\)")


@unittest.skipUnless(ROOT_POSIX and os.path.exists("/proc/self/status"), NOT_ROOT)
@heavy
class SealedAsRoot(unittest.TestCase):
    """Every way out tried at once: open in the self-check, shut in the sealed run."""

    EARLY = ("runs",)

    @staticmethod
    def runs():
        """The escapes tried in a sealed run, the self-check, and a grader whose worker keeps
        root (what the drop stops is real); and a grader whose worker lies about its drop."""
        copy = Copy(ESCAPES)
        kept = Copy(ESCAPES, ("seal.py", "DROP_ROOT = True", "DROP_ROOT = False"))
        try:
            sealed, selfcheck, kept_root = in_each([
                lambda: copy.run("--sealed", "--json", "--only", "valid_g", "--cases", "0",
                                 "--out", copy.results),
                lambda: copy.run("--json", "--only", "valid_g", "--cases", "0"),
                lambda: kept.run("--json", "--only", "valid_g", "--cases", "0")], at_once=3)
            with open(copy.results, encoding="utf-8") as f:
                results = json.load(f)
            runs = {"sealed": completed(sealed), "selfcheck": completed(selfcheck),
                    "kept_root": completed(kept_root), "edited": kept.assertEdited,
                    "results": results, "listing": sorted(os.listdir(copy.dir))}
            runs["lying"] = SealedAsRoot.lying_worker(copy)
            return runs
        finally:
            copy.close()
            kept.close()

    @staticmethod
    def lying_worker(copy):
        """A sealed run whose worker keeps root yet says it dropped it: what grading raised."""
        from unittest import mock
        with open(process.WORKER, encoding="utf-8") as f:
            source = f.read()
        kept_root = source.replace("os.setuid(uid)", "os.setuid(0)").replace(   # nor checks its own drop
            "        w_no_capabilities()\n", "")
        assert kept_root.count("os.setuid(0)") == 1 and "    w_no_capabilities()\n" not in kept_root
        worker = os.path.join(copy.dir, "gqa_grader", "worker.py")
        with open(worker, "w", encoding="utf-8") as f:
            f.write(kept_root)
        with mock.patch("gqa_grader.seal.HERE", copy.dir), \
                mock.patch.object(process, "WORKER", worker):
            seal = Seal(sealed=True)
            try:
                return {"edited": kept_root != source, "raised": raised(
                    lambda: grade_source(STARTER, cases=0, only=["valid_g"], seal=seal))}
            finally:
                seal.close()

    def test_a_worker_that_keeps_root_reaches_everything(self):
        # Here the attacks work, which proves they are real.
        runs = early(self.runs)
        self.assertTrue(runs["edited"])
        report = escapes_report(one_document(self, as_run(runs["kept_root"])))
        self.assertEqual({k: report[k] for k in ESCAPES_TRIED}, dict.fromkeys(ESCAPES_TRIED, "ok"))
        self.assertEqual(report["uid"], 0)

    def test_the_self_check_as_root_runs_the_module_as_a_user_of_its_own(self):
        # Never as root: the module cannot fork, signal the grader or write its folder.
        report = escapes_report(one_document(self, as_run(early(self.runs)["selfcheck"])))
        self.assertNotEqual(report["uid"], 0)
        for name in ("plant", "edit_grader", "results", "stdout", "memory", "signal", "fork"):
            with self.subTest(escape=name):
                self.assertNotEqual(report[name], "ok")

    def test_the_sealed_run_closes_every_way_out(self):
        doc = one_document(self, as_run(early(self.runs)["sealed"]))
        self.assertEqual(doc["sealed"], "sealed")
        report = escapes_report(doc)
        for name in ESCAPES_TRIED:
            with self.subTest(escape=name):
                self.assertNotEqual(report[name], "ok")
        import pwd                              # a uid of the run's own, no one's account
        with self.assertRaises(KeyError):
            pwd.getpwuid(report["uid"])
        self.assertEqual([k for k in report["env"] if k != "LC_CTYPE"], ["PATH"])
        self.assertEqual(report["cwd"], "PermissionError")     # a private folder, not listed
        self.assertEqual(escapes_report(one_document(self, as_run(early(self.runs)["selfcheck"])))["cwd"],
                         "PermissionError")

    def test_the_results_are_the_graders_own_and_only_it_can_write_them(self):
        runs = early(self.runs)
        sealed = as_run(runs["sealed"])
        doc = one_document(self, sealed)
        self.assertEqual(runs["results"], doc)
        self.assertEqual((doc["score"], doc["passed"], sealed.returncode), (0.0, 0, 1))
        self.assertEqual(runs["listing"], ["gqa.py", "gqa_grader", "gqa_sandbox", "grader.py", "results.json"])

    def test_a_sealed_run_refuses_a_grader_the_worker_could_read(self):
        copy = Copy(ESCAPES)
        self.addCleanup(copy.close)
        os.chmod(copy.dir, 0o755)
        with outside_namespaces():
            run = main_in(copy.dir, "--module", copy.module, "--format", "gradescope", "--only", "valid_g")
        self.assertEqual(run.returncode, 2)
        self.assertIn("could open files in the grader's folder", one_document(self, run)["output"])

    def test_a_worker_that_kept_root_is_refused(self):
        # The grader does not take the worker's word for the drop: it reads /proc.
        lying = early(self.runs)["lying"]
        self.assertTrue(lying["edited"])
        self.assertIsNotNone(lying["raised"], "the grader took the worker's word")
        self.assertTrue(lying["raised"]["refused"], lying["raised"])
        self.assertRegex(lying["raised"]["message"], "did not run as uid [1-9]")

    def test_the_worker_runs_with_its_limits(self):
        limits = escapes_report(one_document(self, as_run(early(self.runs)["sealed"])))["limits"]
        self.assertEqual(limits, [int(DEFAULT_BUDGET) + 5, LIMITS["memory"], 0,
                                  LIMITS["file_size"], LIMITS["open_files"]])


# Lines the module's own loop sends for the first request, in place of the worker's
# answer, and what each must fail with.  A module has at most 1 MiB: the long line
# is made in the worker.
FORGED = [
    ('{"n": 1, "i": 0, "error": {}}', "was malformed"),
    ('{"n": 1, "i": 0, "value": {"$record": "Weights"}}', "was malformed"),
    ('{"n": 1, "i": 0, "error": {"type": "X", "message": 5}}', "was malformed"),
    ('[' * 100000 + ']' * 100000, "not readable"),
    ('{"n": 1, "i": 0, "value": ' + '[' * 100000 + ']' * 100000 + '}', "not readable"),
    ('{"n": 7, "i": 0, "value": [1]}', "out of turn"),
    ('not json', "not readable"),
    ('"x"' + ' ' * (1 << 20), "longer than 1 MiB"),
]

# Modules that end or break at import, each with what its one document says.
AT_IMPORT = [("import os\nos._exit(0)\n", "ended its process (status 0)"),
             ("kv_head = None\n", None),
             ("raise SystemExit(3)\n", "raised SystemExit"),
             ("x = [0] * (1 << 40)\n", "MemoryError")]


@heavy
class NeverCrashNeverStall(unittest.TestCase):
    """Whatever the worker sends, or does not send, the grader decides and says why."""

    EARLY = ("runs",)

    @staticmethod
    def forged():
        """Each forged line's module graded (valid_g; the first one, the lab, kv_head too)."""
        long_line = FORGED[-1][0]

        def text(line):
            return "'\"x\"' + ' ' * (1 << 20)" if line == long_line else repr(line)

        def module(line, first):
            # The first module is the lab, to show that the next step gets a fresh worker.
            return (SOURCE if first else "def valid_g(h):\n    return [1]\n") + (
                "\nimport __main__, itertools as _it\n"
                "_serve = __main__.w_serve\n"
                "def _forge(mod, requests):\n"
                "    line = requests.readline()\n"
                "    if '\"valid_g\"' not in line:\n"
                "        return _serve(mod, _it.chain([line], requests))\n"
                f"    __main__.W.out.write({text(line)} + '\\n')\n"
                "    __main__.W.out.flush()\n"
                "    requests.readline()\n"
                "__main__.w_serve = _forge\n")
        from unittest import mock
        with mock.patch.object(process, "ANSWER_CAP", 1 << 20):
            return in_each([lambda i=i, line=line: grade_source(
                module(line, i == 0), only=["valid_g", "kv_head"] if i == 0 else ["valid_g"],
                cases=0, timeout=2.0) for i, (line, _) in enumerate(FORGED)])

    @staticmethod
    def grandchild():
        """The pid of a child the module forks at import (a worker that may fork: it keeps
        root), and its state once the grading has ended: gone, Z or X."""
        from unittest import mock
        source = SOURCE + ("\nimport os as _os, time as _time\n"
                           "_child = _os.fork()\n"
                           "if _child == 0:\n    _time.sleep(60)\n    _os._exit(0)\n"
                           "def valid_g(h):\n    raise RuntimeError(f'CHILD{_child}')\n")
        with mock.patch("gqa_grader.seal.DROP_ROOT", False):     # a worker that may fork
            message = grade_source(source, only=["valid_g"], cases=0)["valid_g"]["message"]
        pid = int(message.split("CHILD", 1)[1].split()[0])
        import time
        deadline = time.monotonic() + 10          # SIGKILL is sent; its end takes a moment
        while True:
            try:
                with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = "gone"
            if state in ("gone", "Z", "X") or time.monotonic() > deadline:
                return state
            time.sleep(0.01)

    @staticmethod
    def runs():
        def at_import(body):
            copy = Copy(STARTER + body)
            try:
                return completed(main_in(copy.dir, "--module", copy.module, "--json", "--only",
                                         "valid_g,kv_head", "--cases", "0"))
            finally:
                copy.close()
        return {"forged": NeverCrashNeverStall.forged(),
                "not a function": grade_source(SOURCE + "\nkv_head = None\ngroup_heads = 3\n",
                                               only=["kv_head", "group_heads", "repeat_kv"], cases=0),
                "grandchild": NeverCrashNeverStall.grandchild() if ROOT_POSIX else None,
                "at import": [at_import(body) for body, _ in AT_IMPORT]}

    def test_forged_answers_fail_their_case(self):
        # The module replaces the worker's loop: it answers the first request with a forged line.
        graded = early(self.runs)["forged"]
        self.assertEqual(len(graded), len(FORGED))
        for (line, says), results in zip(FORGED, graded):
            with self.subTest(forged=line[:40]):
                self.assertEqual(results["valid_g"]["status"], "failed")
                self.assertIn(says, results["valid_g"]["message"])
        self.assertEqual(graded[0]["kv_head"]["status"], "passed")        # in a fresh worker

    def test_a_step_that_is_not_a_function_is_a_failed_step(self):
        results = early(self.runs)["not a function"]
        self.assertIn("kv_head is None, not a function", results["kv_head"]["message"])
        self.assertIn("group_heads is a int: 3, not a function", results["group_heads"]["message"])
        self.assertEqual(results["repeat_kv"]["status"], "passed")

    def test_a_grandchild_dies_with_the_worker(self):
        # In the self-check as well: the worker's whole process group is killed.
        if os.name != "posix" or not ROOT_POSIX:
            self.skipTest("a non-root worker may not fork at all (its process limit is 0)")
        self.assertIn(early(self.runs)["grandchild"], ("gone", "Z", "X"))

    def test_a_usage_error_is_one_document_too(self):
        import contextlib
        import io
        for argv, key in ((["--json", "--cases", "-1"], "error"),
                          (["--format=gradescope", "--budget", "0"], "output"),
                          (["--budget", "x", "--form", "json"], "error")):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = cli.main(argv)
            with self.subTest(argv=argv):
                self.assertEqual(status, 2)
                doc = one_document(self, subprocess.CompletedProcess(argv, status, out.getvalue()))
                self.assertIn("error: ", doc[key])
                self.assertIn("usage:", err.getvalue())

    def test_one_document_whatever_the_module_does(self):
        runs = early(self.runs)["at import"]
        self.assertEqual(len(runs), len(AT_IMPORT))
        for (body, says), result in zip(AT_IMPORT, map(as_run, runs)):
            with self.subTest(module=body):
                doc = one_document(self, result)
                self.assertNotIn("Traceback", result.stderr)
                if says:
                    self.assertEqual(result.returncode, 2)
                    self.assertIn(says, doc["error"])
                else:
                    self.assertEqual(result.returncode, 1)
                    self.assertIn("kv_head is None", doc["steps"][1]["message"])


@heavy
class Stalls(unittest.TestCase):
    """Whatever stalls costs its deadline and no more: each waits, so they wait together."""

    SLEEP = "    import time\n    time.sleep(600)\n"
    EARLY = ("stalled",)

    @staticmethod
    def stalled():
        """Every stall at once, each waiting out its deadline."""
        from unittest import mock

        from gqa_tools import tables as gqa_tables
        from gqa_tools.report import child as report_child
        from gqa_tools.report import settings as report_settings
        folder = tempfile.mkdtemp()

        def write(source, name="gqa.py"):
            path = os.path.join(folder, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            return path
        config = report_settings.Config(heads=4, head_dim=4, layers=2, context=16, batch=2, run_head_dim=2,
                                        run_d_model=4, run_context=3, run_layers=1, seed=1, seeds=1)
        jobs = {"hung call": Stalls.hung_call, "budget": Stalls.budget,
                "not reading": lambda: Stalls.not_reading(write), "import": Stalls.loop_at_import,
                "report": lambda: [[part.title, part.body] for part in report_child.parts_from_child(
                    config, write("def valid_g(h):\n" + Stalls.SLEEP))],
                "tables": lambda: raised(lambda: gqa_tables.texts_from_child(
                    write("def cache_table(*a, **k):\n" + Stalls.SLEEP, "t.py"),
                    {"heads": 4, "head_dim": 4, "layers": 2, "context": 16, "d_model": 16,
                     "d_ff": None, "mlp_matrices": 3}, None, False))}
        try:
            with mock.patch.object(report_child, "CHILD_TIMEOUT", 0.5), \
                    mock.patch.object(report_child, "PROGRESS_AFTER", 1e9), \
                    mock.patch.object(gqa_tables, "CHILD_TIMEOUT", 0.5), \
                    ThreadPoolExecutor(len(jobs)) as pool:
                futures = {name: pool.submit(job) for name, job in jobs.items()}
                return {name: f.result() for name, f in futures.items()}
        finally:
            shutil.rmtree(folder)

    @property
    def done(self):
        return early(self.stalled)

    @staticmethod
    def hung_call():
        source = SOURCE.replace("    return query_head // group\n",
                                "    if (query_head, h, g) == (5, 6, 1):\n"
                                "        import time\n        time.sleep(600)\n"
                                "    return query_head // group\n", 1)
        assert source != SOURCE
        return grade_source(source, only=["kv_head"], cases=0, timeout=0.3)

    @staticmethod
    def budget():
        slow = SOURCE + ("\nimport time as _time, functools as _ft\n"
                         "def _slow(f):\n    @_ft.wraps(f)\n"
                         "    def g(*a, **k):\n        _time.sleep(0.1)\n        return f(*a, **k)\n"
                         "    return g\n"
                         "valid_g, method_name, kv_head = _slow(valid_g), _slow(method_name), _slow(kv_head)\n")
        return grade_source(slow, only=["valid_g", "method_name", "kv_head"], timeout=2.0,
                            budget=1.0, cases=0)

    @staticmethod
    def not_reading(write):
        path = write(SOURCE + "\nimport __main__, time as _time\n"
                              "__main__.w_serve = lambda mod, requests: _time.sleep(60)\n", "r.py")
        worker = process.Worker(path, 0.3)
        try:
            err = raised(lambda: worker.exchange(
                [{"op": "call", "fn": "valid_g", "args": ["x" * (1 << 20)]}], ["big()"]))
            return {"raised": err, "stopped": worker.proc is None}
        finally:
            worker.stop()
            worker.seal.close()

    @staticmethod
    def loop_at_import():
        copy = Copy(STARTER + "import time\ntime.sleep(600)\n")       # a loop that costs no CPU
        try:
            return completed(copy.run("--format", "gradescope", "--budget", "0.5"))
        finally:
            copy.close()

    def test_a_timeout_names_the_call_that_hung(self):
        self.assertIn("kv_head(5, 6, 1) did not return within 0.3 s",
                      self.done["hung call"]["kv_head"]["message"])

    def test_answers_just_under_the_timeout_end_at_the_budget(self):
        results = self.done["budget"]
        # valid_g's 17 calls take 1.7 s: the budget of 1 s ends within them.
        self.assertEqual(results["valid_g"]["message"], process.BUDGET_NOTE + " (--budget 1 s)")
        self.assertEqual(results["kv_head"]["message"], process.BUDGET_NOTE + " (--budget 1 s)")
        self.assertEqual(results["kv_head"]["cases_passed"], 0)         # its cases count, none passed
        self.assertEqual(results["kv_head"]["cases"], grading.public_end(checks.STEPS[2]))

    def test_a_worker_that_stops_reading_cannot_block_the_grader(self):
        err = self.done["not reading"]["raised"]
        self.assertTrue(err and err["failure"], err)
        self.assertIn("big() did not read its request within 0.3 s", err["message"])
        self.assertTrue(self.done["not reading"]["stopped"])

    def test_an_endless_loop_at_import_is_one_document_saying_so(self):
        run = as_run(self.done["import"])
        self.assertEqual(run.returncode, 2)
        self.assertIn("did not finish within the run's time budget (0.5 s)",
                      one_document(self, run)["output"])

    def test_report_notes_a_module_that_hangs_in_every_section(self):
        # A sleep the child's own watch would stop after call_timeout's seconds: the child's
        # deadline (0.5 s here) comes first, and every section it builds says so.  Section 8
        # is the parent's: the grader does not pass the steps training needs.
        parts = self.done["report"]
        self.assertEqual(len(parts), 10)
        for title, body in parts[1:]:
            self.assertIn("section 8 trains with the module's own steps once the grader passes them; "
                          "not yet: step 1, valid_g: failed" if title.startswith("8.") else
                          "building the report did not return within 0.5 s", body)

    def test_tables_of_a_module_that_hangs_is_a_clear_error(self):
        err = self.done["tables"]
        self.assertIsNotNone(err)
        self.assertIn("computing the tables did not return within 0.5 s", err["message"])


@heavy
class Folder(unittest.TestCase):

    EARLY = ("runs",)
    PLANTED = ("__future__", "json", "queue", "argparse", "select", "random", "ast")

    @staticmethod
    def runs():
        """A starter graded by a grader with standard modules' names planted beside it (a
        process of its own: what python finds first), and a gradescope run with weights."""
        copy = Copy(STARTER)
        try:
            for name in Folder.PLANTED:
                with open(os.path.join(copy.dir, name + ".py"), "w", encoding="utf-8") as f:
                    f.write("raise SystemExit('planted module ran')\n")
            planted = completed(copy.run("--json", "--cases", "1"))
        finally:
            copy.close()
        with tempfile.TemporaryDirectory() as tmp:
            weights = os.path.join(tmp, "weights.json")
            with open(weights, "w", encoding="utf-8") as f:
                json.dump({"kv_head": 3, "layer": 2}, f)
            copy = Copy(SOURCE.replace("return _kv_head(query_head, h, g)", "return query_head % g"))
            try:
                gradescope = completed(main_in(copy.dir, "--module", copy.module, "--seed", "1", "--format",
                                               "gradescope", "--weights", weights, "--only", "kv_head,layer",
                                               "--cases", "1"))
            finally:
                copy.close()
        return {"planted": planted, "gradescope": gradescope}

    def test_planted_standard_modules_beside_the_grader_never_run(self):
        # Standard modules' names planted beside grader.py (the module's own folder is its own).
        run = as_run(early(self.runs)["planted"])
        doc = one_document(self, run)
        self.assertEqual((run.returncode, doc["passed"]), (1, 0))
        self.assertEqual({s["status"] for s in doc["steps"]}, {"not started"})
        self.assertNotIn("planted", run.stdout + run.stderr)

    def test_gradescope_format_and_weights(self):
        data = one_document(self, as_run(early(self.runs)["gradescope"]))
        # The points come from the hidden case alone (--cases 1): strided grouping (i % g) is
        # right there only when its (h, g), drawn as the check draws it, has g = 1 or g = h.
        first = grading.public_end(checks.STEPS[2])
        h, g = checking.draw_hg(first, checking.Draw(f"kv_head:1:{first}", True), wide=True)
        kv = 3.0 if g in (1, h) else 0.0
        self.assertEqual(data["score"], kv + 2.0)
        feedback = " (public cases: feedback, no points)"
        self.assertEqual([(t["name"], t["score"], t["max_score"], t["status"]) for t in data["tests"]],
                         [("step 3: kv_head" + feedback, 0.0, 0.0, "failed"),   # feedback, worth nothing
                          ("step 3: kv_head", kv, 3.0, "passed" if kv else "failed"),   # the points
                          ("step 13: layer" + feedback, 0.0, 0.0, "passed"),
                          ("step 13: layer", 2.0, 2.0, "passed")])
        if not ROOT_POSIX:
            self.assertTrue(data["output"].startswith("partly sealed:"))


@heavy
class Autograder(unittest.TestCase):

    EARLY = ("made",)

    @staticmethod
    def made():
        """autograder.zip made with weights, read, and run as Gradescope would (as root)."""
        import zipfile
        folder = tempfile.mkdtemp()
        copy = Copy(STARTER)
        try:
            weights = os.path.join(folder, "w.json")
            with open(weights, "w", encoding="utf-8") as f:
                json.dump({"kv_head": 2}, f)
            made = {"made": completed(main_in(copy.dir, "--autograder", folder, "--cases", "1",
                                               "--weights", weights))}
            package = [f"{p}/{n}" for p in ("gqa_grader", "gqa_sandbox")
                       for n in sorted(os.listdir(os.path.join(ROOT, p))) if n.endswith(".py")]
            with zipfile.ZipFile(os.path.join(folder, "autograder.zip")) as z:
                made["names"], made["package"] = sorted(z.namelist()), package
                made["mode"] = z.getinfo("run_autograder").external_attr >> 16 & 0o777
                made["same"] = {}
                for name in ["grader.py"] + package:
                    with open(os.path.join(ROOT, name), "rb") as f:
                        made["same"][name] = z.read(name) == f.read()
                run = made["run"] = z.read("run_autograder").decode()
                made["setup"] = z.read("setup.sh").decode()
                z.extractall(os.path.join(folder, "source"))
            if not ROOT_POSIX:
                return made
            # Gradescope's folders under a temporary root, the submission a starter.
            os.makedirs(os.path.join(folder, "submission"))
            shutil.copy(copy.module, os.path.join(folder, "submission", "gqa.py"))
            script = os.path.join(folder, "run_autograder")
            with open(script, "w", encoding="utf-8") as f:
                f.write(run.replace("/autograder", folder).replace("python3 ", f"{sys.executable} "))
            made["done"] = completed(subprocess.run(["bash", script], capture_output=True, text=True,
                                                    timeout=60))
            with open(os.path.join(folder, "results", "results.json"), encoding="utf-8") as f:
                made["results"] = json.load(f)
            return made
        finally:
            copy.close()
            shutil.rmtree(folder)

    def test_the_zip_has_gradescopes_layout_and_its_run_writes_the_results(self):
        made = early(self.made)
        self.assertEqual(made["made"][0], 0, made["made"][2])
        self.assertEqual(made["names"], sorted(["grader.py", "run_autograder", "secret", "setup.sh",
                                                "weights.json"] + made["package"]
                                               + [f"gqa_grader/locale/{lang}/LC_MESSAGES/gqa.mo"
                                                  for lang in i18n.LANGUAGES[1:]]))   # --lang's catalogs
        self.assertIn("gqa_grader/seal.py", made["package"])
        self.assertEqual(made["mode"], 0o755)
        self.assertEqual(made["same"], dict.fromkeys(["grader.py"] + made["package"], True))
        run, setup = made["run"], made["setup"]
        installs = re.findall(r"(?:apt-get|pip|npm) install[^;}\n]*", setup)
        self.assertEqual(installs, ["apt-get install -y bubblewrap"])       # the sandbox's tool only
        self.assertIn("if ! command -v bwrap", setup)                       # and only where it is missing
        self.assertIn("--sealed --format gradescope --module /autograder/submission/gqa.py", run)
        self.assertIn("--out /autograder/results/results.json --weights weights.json --cases 1", run)
        if not ROOT_POSIX:
            self.skipTest(NOT_ROOT)
        done = as_run(made["done"])
        self.assertEqual((done.returncode, done.stdout), (0, ""), done.stderr)
        results = made["results"]
        self.assertEqual(results["score"], 0.0)
        self.assertEqual(len(results["tests"]), 2 * len(checks.STEPS))      # public, hidden
        points = {x["name"]: x["max_score"] for x in results["tests"]}
        self.assertEqual((points["step 3: kv_head (public cases: feedback, no points)"],
                          points["step 3: kv_head"]), (0.0, 2.0))
        self.assertNotIn("output", results)                                   # fully sealed


def gqa_main(*argv):
    """python -m gqa ARGV in this process (a --module still runs in a worker), a correct
    module's training tiny: [status, stdout, stderr]."""
    import contextlib
    import io
    from unittest import mock

    from gqa_tools import cli as gqa_cli
    from gqa_tools import uptraining as gqa_train
    from gqa_tools.report import child as report_child
    from tests.helpers import tiny_recipe
    tiny = tiny_recipe()                                  # a correct module trains: briefly
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            mock.patch.object(report_child, "CHILD_TIMEOUT", 10.0), \
            mock.patch.object(gqa_train, "QUICK", tiny):
        try:
            status = gqa_cli.main(list(argv))
        except SystemExit as exit_:
            status = exit_.code
    return [status, out.getvalue(), err.getvalue()]


@heavy
class ToolsThroughTheWorker(unittest.TestCase):
    """report --module and tables --module run the module in the grader's worker: its
    endless loop, os._exit or memory bomb is a section's note, never a hang or a silent 0."""

    SMALL = ["--heads", "4", "--head-dim", "4", "--layers", "2", "--context", "16", "--batch", "2",
             "--run-head-dim", "2", "--run-d-model", "4", "--run-context", "3", "--run-layers", "1",
             "--seed", "1", "--seeds", "1"]
    # valid_g is the first function the report calls: in these starters the first ends
    # the child there, the second fails it there (the stubs after it are notes of their
    # own; the lab's report below computes every section).
    ENDS = [("\ndef valid_g(h):\n    import os\n    os._exit(0)\n",
             "the module ended its process (status 0) during building the report"),
            ("\ndef valid_g(h):\n    return [0] * (1 << 40)\n", "MemoryError")]
    EARLY = ("reports",)

    @staticmethod
    def reports():
        """report --module of each module that ends the child, and of the lab, then --check of
        the lab's report with the module at its path now exiting at import: [status, the
        report written (stdout for --check), stderr]."""
        folder = tempfile.mkdtemp()

        def module(body, name, lab=SOURCE):
            path = os.path.join(folder, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(lab + body)
            return path

        def report(path, out, *more):
            status, stdout, stderr = gqa_main("report", *more, "--module", path, "--out", out,
                                              *ToolsThroughTheWorker.SMALL)
            if more or status != 0:
                return [status, stdout, stderr]
            with open(out, encoding="utf-8") as f:
                return [status, f.read(), stderr]
        try:
            out = os.path.join(folder, "report.md")
            return {"ends": [report(module(body, f"m{i}.py", STARTER), os.path.join(folder, f"report{i}.md"))
                             for i, (body, _) in enumerate(ToolsThroughTheWorker.ENDS)],
                    "lab": report(module("", "student.py"), out),
                    "check": report(module("\nimport os\nos._exit(0)\n", "student.py"), out, "--check")}
        finally:
            shutil.rmtree(folder)

    def test_report_notes_what_never_came_back(self):
        reports = early(self.reports)["ends"]
        self.assertEqual(len(reports), len(self.ENDS))
        for (body, says), (status, text, err) in zip(self.ENDS, reports):
            with self.subTest(module=body):
                self.assertEqual(status, 0, err)
                self.assertIn(says, text.split("## 2.")[1].split("## 3.")[0])
                self.assertEqual(text.count("\n## "), 9)

    def test_report_check_of_a_module_that_exits_is_not_a_silent_success(self):
        reports = early(self.reports)
        status, _, err = reports["lab"]
        self.assertEqual(status, 0, err)
        status, _, err = reports["check"]
        self.assertEqual(status, 1)
        self.assertIn("ended its process (status 0)", err)


@heavy
class RealWork(unittest.TestCase):
    """A tally is worth something only with the work it counts."""

    EARLY = ("graded",)

    @staticmethod
    def graded():
        """count_multiplies graded for a module whose layer and decode_step count the real work
        (the lab's own runs) and return zeros, and for the lab."""
        source = SOURCE + (
            "\n_real_layer, _real_decode_step = layer, decode_step\n"
            "def layer(x, *a, **k):\n"
            "    y = _real_layer(x, *a, **k)\n"
            "    return [[0.0] * len(r) for r in y]\n"
            "def decode_step(x_t, *a, **k):\n"
            "    return [0.0] * len(_real_decode_step(x_t, *a, **k))\n")
        return in_each([lambda src=src: grade_source(src, only=["count_multiplies"], cases=0, fail_fast=True)
                        for src in (source, SOURCE)])

    def test_a_tally_with_fake_values_fails_its_step(self):
        # The counts are the real ones (the lab's own layer runs), the values zeros.
        fake, lab = early(self.graded)
        self.assertEqual(fake["count_multiplies"]["status"], "failed")
        self.assertIn("the value layer() returned inside count_multiplies()",
                      fake["count_multiplies"]["message"])
        # The check does not fail the lab itself: its step passes.
        self.assertEqual(lab["count_multiplies"]["status"], "passed")


class WhatIsGraded(unittest.TestCase):
    """A sealed run (and a tool's child) grades a file of the student's own: read once, by
    one open that follows no symbolic link, a regular file of at most 1 MiB."""

    def test_a_symbolic_link_to_the_solution_is_refused(self):
        copy = Copy(STARTER)
        try:
            os.remove(copy.module)
            os.symlink(os.path.join(copy.dir, "gqa.py"), copy.module)    # the solution
            run = main_in(copy.dir, "--module", copy.module, "--sealed", "--json",
                          "--only", "valid_g", "--cases", "0")
            doc = one_document(self, run)
            self.assertEqual((run.returncode, doc["passed"]), (2, 0))
            self.assertIn("is a symbolic link", doc["error"])
            with self.assertRaisesRegex(failures.Refused, "is a symbolic link"):
                list(process.run_in_child(copy.module, "gqa_tools.tables:child_texts", [{}, None, False],
                                          paths=[ROOT]))
        finally:
            copy.close()

    def test_only_a_regular_file_of_at_most_1_mib(self):
        folder = tempfile.mkdtemp()
        try:
            fifo, big, fine = (os.path.join(folder, n) for n in ("fifo.py", "big.py", "fine.py"))
            os.mkfifo(fifo)                       # opening it must not wait for a writer
            with open(big, "w", encoding="utf-8") as f:
                f.write("#" * (1 << 20) + "\n")
            with open(fine, "w", encoding="utf-8") as f:
                f.write("#" * ((1 << 20) - 1) + "\n")
            with self.assertRaisesRegex(failures.Refused, "not a regular file"):
                read_module(fifo)
            with self.assertRaisesRegex(failures.Refused, "larger than 1 MiB"):
                read_module(big)
            self.assertEqual(len(read_module(fine)), 1 << 20)
        finally:
            shutil.rmtree(folder)


def forging(lines_expr):
    """A starter whose worker answers the request for valid_g with the lines lines_expr
    evaluates to (in the worker), each a line of its own."""
    return STARTER + (
        "\nimport __main__, itertools as _it\n"
        "_serve = __main__.w_serve\n"
        "def _forge(mod, requests):\n"
        "    line = requests.readline()\n"
        "    if '\"valid_g\"' not in line:\n"
        "        return _serve(mod, _it.chain([line], requests))\n"
        f"    for _line in {lines_expr}:\n"
        "        __main__.W.out.write(_line + '\\n')\n"
        "    __main__.W.out.flush()\n"
        "    requests.readline()\n"
        "__main__.w_serve = _forge\n")


@heavy
class TheGradersMemory(unittest.TestCase):
    """What the worker sends is bounded before the grader builds anything from it."""

    # Answers the module's loop forges, made in the worker, and what each must fail with.
    LARGE = [("[" + "'{\"n\": 1, \"i\": 0, \"value\": [' + '[],' * (1 << 20) + '[]]}'" + "]",
              "more than 200,000 values and lists"),
             ("[" + "'{\"n\": 1, \"i\": 0, \"value\": ' + '7' * 200000 + '}'" + "]", "not readable"),
             ("['x' * (5 << 20)]", "longer than 4 MiB")]
    EARLY = ("runs",)

    @staticmethod
    def runs():
        """Each large answer's grading, and a tool's child sending 3 MiB items."""
        graded = in_each([lambda expr=expr: grade_source(forging(expr), only=["valid_g"], cases=0)
                          for expr, _ in TheGradersMemory.LARGE])
        folder = tempfile.mkdtemp()
        try:
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write("import __main__\n"
                        "def _run(mod, run):\n"
                        "    for _ in range(4):\n"
                        "        __main__.w_send({'item': 'x' * (3 << 20)})\n"
                        "__main__.w_run = _run\n")
            got = []

            def items():
                for item in process.run_in_child(path, "gqa_tools.tables:child_texts", [{}, None, False],
                                                 paths=[ROOT]):
                    got.append(len(item))
            return {"graded": graded, "items": {"raised": raised(items), "got": got}}
        finally:
            shutil.rmtree(folder)

    def test_large_answers_fail_their_case_before_they_are_built(self):
        graded = early(self.runs)["graded"]
        self.assertEqual(len(graded), len(self.LARGE))
        for (expr, says), results in zip(self.LARGE, graded):
            with self.subTest(forged=expr[:30]):
                self.assertEqual(results["valid_g"]["status"], "failed")
                self.assertIn(says, results["valid_g"]["message"])

    def test_a_childs_items_have_a_cap_in_all(self):
        items = early(self.runs)["items"]
        self.assertTrue(items["raised"] and items["raised"]["failure"], items["raised"])
        self.assertRegex(items["raised"]["message"], "came to more than 8 MiB")
        self.assertEqual(items["got"], [3 << 20, 3 << 20])


SHOUTING = STARTER + (
    "\nimport __main__ as _main\n"
    "def valid_g(h):\n"
    "    raise ValueError('\\ud800\\r\\x1b[2K25 passed, 0 failed\\n')\n"
    "def _run(mod, run):\n"
    "    _main.w_send({'item': ['\\ud800\\x1b[2K', 'a\\nb\\x07', [['x\\ud800', 'y']]]})\n"
    "    _main.w_send({'error': {'type': 'X\\x1b', 'message': '\\ud801'}})\n"
    "_main.w_run = _run\n")


@heavy
class WhatTheWorkerSays(unittest.TestCase):
    """Every string from the worker is printed and written with its control characters and
    surrogates escaped; a document holds standard JSON only."""

    EARLY = ("runs",)

    @staticmethod
    def runs():
        """SHOUTING graded by the command (as a process of its own, its text as bytes, base64:
        what the terminal gets; and its document), and a tool's child of it."""
        import base64
        copy = Copy(SHOUTING)
        try:
            env = dict(os.environ, PYTHONIOENCODING="utf-8")
            text = run_grader("--module", copy.module, "--only", "valid_g", "--cases", "0", grader=copy.grader,
                              cwd=copy.dir, timeout=60, text=False, env=env)
            doc = main_in(copy.dir, "--module", copy.module, "--json", "--only", "valid_g", "--cases", "0")
        finally:
            copy.close()
        runs = {"text": [text.returncode] + [base64.b64encode(b).decode("ascii") for b in (text.stdout, text.stderr)],
                "doc": completed(doc)}
        folder = tempfile.mkdtemp()
        try:
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(SHOUTING)
            got = []

            def items():
                for item in process.run_in_child(path, "gqa_tools.tables:child_texts", [{}, None, False],
                                                 paths=[ROOT]):
                    got.append(item)
            runs["items"] = {"raised": raised(items), "got": got}
        finally:
            shutil.rmtree(folder)
        return runs

    def test_messages_are_escaped_in_text_and_documents(self):
        import base64
        runs = early(self.runs)
        code, stdout, stderr = runs["text"]
        out = base64.b64decode(stdout).decode("utf-8")            # strict: a surrogate would not decode
        self.assertEqual((code, base64.b64decode(stderr)), (1, b""))
        self.assertIn("\\ud800\\r\\x1b[2K25 passed, 0 failed\\n", out)
        self.assertNotIn("\x1b", out)
        self.assertEqual([line for line in out.splitlines() if "passed," in line][-1],
                         "0 passed, 1 failed")
        message = one_document(self, as_run(runs["doc"]))["steps"][0]["message"]
        self.assertIn("ValueError: \\ud800\\r\\x1b[2K25 passed", message)

    def test_a_tools_items_and_errors_are_escaped(self):
        items = early(self.runs)["items"]
        self.assertEqual(items["got"], [["\\ud800\\x1b[2K", "a\nb\\x07", [["x\\ud800", "y"]]]])
        self.assertTrue(items["raised"] and items["raised"]["failure"], items["raised"])
        self.assertEqual(items["raised"]["message"], "it raised X\\x1b: \\ud801")

    def test_a_document_holds_no_bare_nan(self):
        doc = {"score": float("nan"), "steps": [{"x": float("inf")}]}
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "r.json")
            cli.write_out(path, doc)
            with open(path, encoding="utf-8") as f:
                text = f.read()
        self.assertEqual(json.loads(text), {"score": "nan", "steps": [{"x": "inf"}]})
        self.assertNotIn("NaN", text)


class CommandLine(unittest.TestCase):

    def test_a_teachers_run_is_known_by_its_options_and_their_abbreviations(self):
        import grader
        for argv, hidden in ((["--sealed"], True), (["--seal", "--seed", "5"], True), (["--clas", "s"], True),
                             (["--format=gradescope"], True), (["--class-serve"], False),
                             (["--seed", "5", "--module", "m.py"], False), (["--cases", "3", "--json"], False)):
            with self.subTest(argv=argv):
                self.assertIs(grader._teachers_run(argv), hidden)


class Blocked(unittest.TestCase):

    EARLY = ("graded",)
    # The worker cuts a message at 500 characters: this one forges the answer.
    LINE = ("'{\"n\": 1, \"i\": 0, \"error\": {\"type\": \"NotImplementedError\", "
            "\"message\": \"step ' + '9' * 5000 + ': no\"}}'")

    @staticmethod
    def graded():
        return grade_source(forging(f"[{Blocked.LINE}]"), only=["valid_g"], cases=0)

    def test_a_huge_step_number_in_a_message_is_no_crash(self):
        result = early(self.graded)["valid_g"]
        self.assertEqual((result["status"], result["needs"]), ("not started", []))
        self.assertIn("step 999", result["message"])


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def outside_namespaces():
    """The defences of a run outside namespaces, tried where namespaces could be made."""
    from unittest import mock
    return mock.patch.object(sandbox_package(), "TOOLS", ())


def read_or_none(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def gone_soon(pids, seconds=10):
    """Whether every pid has ended within seconds (a SIGKILL takes a moment)."""
    import time
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# At import: fork a daemon (its own session) if it may; the tool's item says who ran
# and what the fork did; the standard library imports in full.
DAEMON = r'''
import os, time, __main__
import logging, glob, pprint, threading, fnmatch
try:
    _pid = os.fork()
    if _pid == 0:
        os.setsid()
        time.sleep(60)
        os._exit(0)
except OSError as err:
    _pid = type(err).__name__


def _run(mod, run):
    __main__.w_send({"item": [os.getuid(), _pid]})
    __main__.w_send({"done": True})


__main__.w_run = _run


def valid_g(h):
    raise RuntimeError(f"UID{os.getuid()} {_pid}")
'''


@unittest.skipUnless(ROOT_POSIX and os.path.exists("/proc/self/status"), NOT_ROOT)
@heavy
class NeverAsRoot(unittest.TestCase):
    """As root, every worker runs as a uid drawn for its run, and every process of that uid
    is killed at the end; the grader stopped by a signal kills its worker first."""

    EARLY = ("runs",)

    @staticmethod
    def runs():
        """DAEMON run as a tool's child and graded; a sealed grader stopped by SIGTERM."""
        folder = tempfile.mkdtemp()
        try:
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(DAEMON)
            child = list(process.run_in_child(path, "gqa_tools.tables:child_texts", [{}, None, False],
                                              paths=[ROOT]))
        finally:
            shutil.rmtree(folder)
        return {"child": child, "graded": grade_source(DAEMON, only=["valid_g"], cases=0),
                "sigterm": NeverAsRoot.sigterm()}

    @staticmethod
    def sigterm():
        """A sealed grader, its module looping and ignoring SIGTERM and SIGHUP, sent SIGTERM once
        its worker runs: what it printed and how it ended, and whether its worker and the
        worker's folder are gone after it."""
        import signal
        import time
        copy = Copy(STARTER + (
            "\nimport signal as _s, os as _os\n"
            "_s.signal(_s.SIGTERM, _s.SIG_IGN)\n_s.signal(_s.SIGHUP, _s.SIG_IGN)\n"
            "def valid_g(h):\n    while True:\n        pass\n"))
        import glob
        folders = os.path.join(tempfile.gettempdir(), "gqa-sealed-*")
        before = set(glob.glob(folders))                 # the run's private folder: the new one
        try:
            run = subprocess.Popen([sys.executable, copy.grader, "--module", copy.module,
                                    "--sealed", "--json", "--timeout", "60", "--only", "valid_g"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=copy.dir)
            deadline, worker = time.monotonic() + 20, None
            while worker is None and time.monotonic() < deadline:
                for pid in filter(str.isdigit, os.listdir("/proc")):
                    try:
                        with open(f"/proc/{pid}/cmdline", "rb") as f:
                            argv = f.read()
                        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as f:
                            ppid = [ln for ln in f if ln.startswith("PPid:")][0].split()[1]
                    except (OSError, IndexError):
                        continue
                    if ppid == str(run.pid) and b"worker.py" in argv:
                        worker = int(pid)
                time.sleep(0.01)
            if worker is None:
                run.kill()
                run.communicate()
                return {"worker": None}
            with open(copy.module, "rb") as f:
                source = f.read()
            made = [f for f in set(glob.glob(folders)) - before if read_or_none(os.path.join(f, "gqa.py")) == source]
            folder = made[0] if len(made) == 1 else None
            run.send_signal(signal.SIGTERM)
            out, _ = run.communicate(timeout=30)
            return {"worker": worker, "status": run.returncode, "doc": json.loads(out),
                    "gone": gone_soon([worker]), "folder": folder is not None,
                    "folder left": folder is not None and os.path.exists(folder)}
        finally:
            copy.close()

    def test_a_tools_child_is_no_root_daemon(self):
        runs = early(self.runs)
        (uid, pid), = runs["child"]
        self.assertNotEqual(uid, 0)
        self.assertEqual(pid, "BlockingIOError")           # no process of its own beyond itself
        self.assertRegex(runs["graded"]["valid_g"]["message"], r"UID[1-9]\d* BlockingIOError")

    def test_each_run_has_its_own_uid_and_its_processes_end_with_it(self):
        import pwd
        seals = [Seal(), Seal()]
        try:
            (a, _), (b, _) = (seal.drop for seal in seals)
            self.assertNotEqual(a, b)
            for uid in (a, b):
                with self.assertRaises(KeyError):
                    pwd.getpwuid(uid)
            # A process of the first run's uid, in a session of its own, as a daemon is.
            orphan = subprocess.Popen(["sleep", "60"], user=a, group=a, start_new_session=True)
            seals[1].close()
            self.assertTrue(alive(orphan.pid))              # another run's end leaves it
            seals[0].close()
            self.assertEqual(orphan.wait(10), -9)
        finally:
            for seal in seals:
                seal.close()

    def test_sigterm_kills_the_worker_and_its_folder_first(self):
        import signal
        stopped = early(self.runs)["sigterm"]
        self.assertIsNotNone(stopped["worker"])
        self.assertEqual(stopped["status"], 128 + signal.SIGTERM)
        self.assertIn("stopped by SIGTERM", stopped["doc"]["error"])
        self.assertTrue(stopped["gone"])
        self.assertTrue(stopped["folder"])
        self.assertFalse(stopped["folder left"])

    def test_what_the_runs_uid_leaves_in_tmp_is_removed(self):
        seal = Seal()
        try:
            uid = seal.drop[0]
            path = tempfile.mkdtemp(prefix="left-by-worker-", dir="/tmp")   # one the worker made
            with open(os.path.join(path, "x"), "w", encoding="utf-8") as f:
                f.write("x")
            for made in (path, os.path.join(path, "x")):   # the worker's, as it would make them
                os.chown(made, uid, uid)
            kept = tempfile.mkdtemp(prefix="not-the-workers-", dir="/tmp")
        finally:
            seal.close()
        self.assertFalse(os.path.exists(path))
        self.assertTrue(os.path.exists(kept))
        os.rmdir(kept)

    def test_out_below_a_folder_the_worker_could_write_is_refused(self):
        from unittest import mock
        private = tempfile.mkdtemp()
        top = tempfile.mkdtemp()
        try:
            os.chmod(top, 0o777)                           # world-writable, not sticky
            inner = os.path.join(top, "a", "b")
            os.makedirs(inner, mode=0o755)
            with mock.patch("gqa_grader.seal.HERE", private), outside_namespaces():
                with self.assertRaisesRegex(failures.Refused, f"could write into {top}, above"):
                    Seal(sealed=True, out=os.path.join(inner, "results.json"))
                os.chmod(top, 0o1777)                      # sticky and root's, as /tmp is
                Seal(sealed=True, out=os.path.join(inner, "results.json")).close()
        finally:
            shutil.rmtree(private)
            shutil.rmtree(top)

    def test_a_grader_or_submissions_below_a_folder_the_worker_could_write_are_refused(self):
        """A folder above the grader's own that the worker's user could write into lets a
        module rename the grader away and plant a worker.py, which the next worker would
        run as root; one above the submissions lets it swap a classmate's file."""
        from unittest import mock
        top = tempfile.mkdtemp()
        try:
            os.chmod(top, 0o777)                           # world-writable, not sticky
            grader = os.path.join(top, "share", "grader")
            os.makedirs(grader, mode=0o700)
            os.chmod(os.path.dirname(grader), 0o755)
            with mock.patch("gqa_grader.seal.HERE", grader), outside_namespaces():
                with self.assertRaisesRegex(failures.Refused, f"^{top} could be written by a user other "
                                                              f"than root"):   # any user, the worker's too
                    Seal(sealed=True)
            os.chmod(top, 0o1777)                          # sticky and root's, as /tmp is
            with mock.patch("gqa_grader.seal.HERE", grader), outside_namespaces():
                seal = Seal(sealed=True)
            try:
                os.chmod(top, 0o777)
                with self.assertRaisesRegex(failures.Refused, f"could write into {top}, above "
                                                              f"the submissions"):
                    seal.keep_private(grader, "the submissions")
            finally:
                seal.close()
        finally:
            shutil.rmtree(top)


class OneDocument(unittest.TestCase):

    def test_list_starter_and_autograder_print_one_document_when_asked(self):
        folder = tempfile.mkdtemp()
        try:
            runs = [main_in(ROOT, "--json", "--list"),
                    main_in(ROOT, "--json", "--starter", folder),
                    main_in(ROOT, "--format", "gradescope", "--autograder", folder),
                    main_in(ROOT, "--json", "--starter", os.path.join(folder, "gqa.py", "x"))]
            docs = [one_document(self, run) for run in runs]
        finally:
            shutil.rmtree(folder)
        self.assertEqual([run.returncode for run in runs], [0, 0, 0, 2])
        self.assertEqual([s["name"] for s in docs[0]["steps"]], checks.check_names() + ["types", "refusals", "extremes"])
        self.assertEqual(docs[1]["starter"], os.path.join(folder, "gqa.py"))
        self.assertEqual(docs[2]["autograder"], os.path.join(folder, "autograder.zip"))
        self.assertIn("cannot write the starter", docs[3]["error"])


if __name__ == "__main__":
    unittest.main()
