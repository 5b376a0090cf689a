"""The sealed run (gqa_grader/running/seal.py, gqa_sandbox) against hostile modules: the module
in a root of its own, made by each tool found here (Namespaces); every way out tried at
once, open in the self-check and shut in the sealed run (SealedAsRoot); the one file
that is graded, read once (WhatIsGraded)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

from gqa_grader.running import failures, process
from gqa_grader.running.seal import DEFAULT_BUDGET, LIMITS, Seal, read_module, sandbox_package
from tests.helpers import ROOT, early, heavy, start_early
from tests.sealed_support import (STARTER, ROOT_POSIX, NOT_ROOT, Copy, fixed_hash, main_in, one_document,
                                  in_each, completed, as_run, raised, grade_source,
                                  outside_namespaces)


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
    importlib.import_module("not_the_grader.expected.reference").ref_valid_g(8)


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
_try("hash", lambda: hash("gqa"))
_try("grader_path", lambda: [p for p in __import__("sys").path if "grader" in p])
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
                self.assertEqual(seen["cmdlines"], [["python", "-s", "-S", "worker.py"]])  # no seed, no path
                self.assertEqual(seen["grader_path"], [])             # the worker's own folder taken off
                self.assertEqual(seen["hash"], fixed_hash())          # the same str hashes in every run
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
        self.assertEqual(seen["hash"], fixed_hash())
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
        kept = Copy(ESCAPES, (os.path.join("running", "seal.py"), "DROP_ROOT = True", "DROP_ROOT = False"))
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
        worker = os.path.join(copy.dir, "gqa_grader", "running", "worker.py")
        with open(worker, "w", encoding="utf-8") as f:
            f.write(kept_root)
        with mock.patch("gqa_grader.running.seal.HERE", copy.dir), \
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


def load_tests(loader, tests, pattern):
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


if __name__ == "__main__":
    unittest.main()


class LoadingTheSandbox(unittest.TestCase):
    """seal.sandbox_package() loads gqa_sandbox by its path: asked from many threads at once
    (a tool's report grades in two), every one gets the whole module, never one still
    being run."""

    def test_threads_asking_at_once_each_get_the_whole_module(self):
        import sys
        import threading
        before = sys.modules.pop("gqa_sandbox", None)
        start, got = threading.Barrier(8), []

        def ask():
            start.wait()
            got.append(hasattr(sandbox_package(), "available"))
        try:
            for _ in range(5):                      # five races, each from nothing loaded
                sys.modules.pop("gqa_sandbox", None)
                threads = [threading.Thread(target=ask) for _ in range(8)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
        finally:
            if before is not None:
                sys.modules["gqa_sandbox"] = before
        self.assertEqual(got, [True] * 40)


class AskingTheSandbox(unittest.TestCase):
    """What a run's start pays in gqa_sandbox: each tool probed once however it is asked
    for, and the spec's line of bubblewrap's user namespace read without json, as json
    reads it."""

    def test_each_tool_is_probed_once_however_it_is_asked_for(self):
        package = sandbox_package()
        probed = []

        def probe(tool):
            probed.append(tool)
            return (tool == "unshare", None if tool == "unshare" else f"{tool}: refused")
        with mock.patch.dict(package._ANSWERS, clear=True), mock.patch.dict(getattr(package, "_PROBED", {}), clear=True), \
                mock.patch.object(package, "_probe", probe):
            said = [package.available(), package.available(("bwrap",)), package.available(("unshare",)),
                    package.available(("bwrap", "unshare")), package.available()]
        self.assertEqual(sorted(probed), ["bwrap", "unshare"])
        self.assertEqual(said, [(True, "unshare"), (False, "bwrap: refused"), (True, "unshare"),
                                (True, "unshare"), (True, "unshare")])

    def test_the_spec_line_reads_as_json_reads_it(self):
        import random
        from gqa_sandbox import enter
        rng = random.Random(48)
        lines = [json.dumps({"user": None}), json.dumps({"user": [0, 0]}), json.dumps({"user": [2 ** 31, 7]})]
        lines += [json.dumps({"user": [rng.randrange(2 ** 32), rng.randrange(2 ** 32)]}) for _ in range(20)]
        lines += [json.dumps({"root": "/tmp/r", "ro": ["/usr"], "user": [5, 6]}),     # unshare's whole spec
                  '{"user": [1, 2, 3]}', '{"user":[1,2]}', '{"user": [01, 2]}', '{"user": [-1, 2]}',
                  '{"user": [1.0, 2]}', '{"user": ["1", 2]}', '{"user": [١, 2]}', '{"user": [1, 2]} x',
                  '{"user": [1, 2]', ' {"user": null}', '{"user": nul}', '{"user": [1, 2]}\r', ""]
        for line in lines:
            for ending in ("\n", ""):
                with self.subTest(line=line + ending):
                    try:
                        expected = json.loads(line + ending)
                    except ValueError as err:
                        expected = type(err)
                    try:
                        got = enter.spec_of(line + ending)
                    except ValueError as err:
                        got = type(err)
                    self.assertEqual((got, type(got)), (expected, type(expected)))
