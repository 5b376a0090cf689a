"""The referee's fifth round: what a run trusts, and on what channel it hears it.  A
module that forges the sandbox's failure, a grader whose files another user could write,
a solution installed where the sandbox shows it, a classmate's file beside a module, a
tool run as root on a student's file, what a run leaves in the kernel's key store, and a
user namespace made inside a run.  Each test runs the attack against a disposable copy
of the grader (or of the project, for the tools) where it can."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from gqa_grader.running import failures
from tests.helpers import copy_grader, heavy, run_grader

ROOT_LINUX = sys.platform.startswith("linux") and os.geteuid() == 0
AS_ROOT = "these attacks are on a run as root (Linux)"

# What the sandbox says when it cannot build a run's root, written by a module on the
# protocol's stream (the worker's own copy of stdout, reached through its __main__).
FORGED = ("the run's namespaces could not be made (bwrap: forged by the module); "
          "nothing was graded")
FORGER = f'''
import json, os, sys
_w = sys.modules["__main__"]
_w.W.out.write(json.dumps({{"import_error": {FORGED!r}}}) + "\\n")
_w.W.out.flush()
os._exit(0)
'''


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


class Grader:
    """A copy of the grader in a folder only root may enter, and a work folder beside it."""

    def __init__(self, test):
        self.top = tempfile.mkdtemp()
        test.addCleanup(shutil.rmtree, self.top, True)
        self.dir = os.path.join(self.top, "grader")
        os.makedirs(self.dir, mode=0o700)
        self.grader = copy_grader(self.dir)
        self.work = os.path.join(self.top, "work")
        os.makedirs(self.work)

    def run(self, *argv, **kw):
        return run_grader(*argv, grader=self.grader, cwd=self.work, **kw)


@heavy
class ForgedFailure(unittest.TestCase):
    """The sandbox's word comes on a pipe the module never holds: its own text, whatever
    it says, is the module's."""

    def test_a_module_that_writes_the_sandboxs_sentence_is_blamed_on_itself(self):
        here = Grader(self)
        module = write(os.path.join(here.work, "forger", "gqa.py"), FORGER)
        run = here.run("--module", module, "--sealed", "--json", "--only", "1", "--cases", "0")
        why = json.loads(run.stdout)["error"]
        self.assertIn("forged by the module", why)
        after = why.split(": ", 1)[1]                    # past "cannot grade PATH: "
        self.assertFalse(after.startswith("the run's namespaces could not be made"), why)
        self.assertTrue(after.startswith(os.path.join("forger", "gqa.py") + " "), why)   # named as the source
        self.assertNotEqual(failures.import_error(FORGED, "gqa.py"), FORGED)

    @unittest.skipUnless(os.name == "posix", "a class is graded sealed, on POSIX")
    def test_in_a_class_the_forgers_row_blames_the_module(self):
        here = Grader(self)
        subs = os.path.join(here.work, "subs")
        write(os.path.join(subs, "mallory.py"), FORGER)
        book = os.path.join(here.work, "g.csv")
        run = here.run("--class", subs, "--gradebook", book, "--only", "1", "--cases", "0", "--seed", "7")
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(book, newline="", encoding="utf-8-sig") as f:
            (row,) = list(csv.DictReader(f))
        self.assertEqual(row["status"], "not graded")
        self.assertIn("forged by the module", row["notes"])
        self.assertFalse(row["notes"].startswith("the run's namespaces"), row["notes"])
        self.assertNotIn(f"mallory: {FORGED}", run.stdout)


@unittest.skipUnless(ROOT_LINUX, AS_ROOT)
@heavy
class GradersFiles(unittest.TestCase):
    """A run as root executes the grader's files: it refuses when another user could have
    written one (a module of a partly sealed run as that user, say), naming it."""

    def refusal(self, here):
        module = write(os.path.join(here.work, "gqa.py"), "x = 1\n")        # graded: no step's function
        run = here.run("--module", module, "--sealed", "--json", "--only", "1", "--cases", "0")
        return json.loads(run.stdout).get("error") or ""

    def test_a_worker_another_user_owns_is_named_and_never_run(self):
        here = Grader(self)
        worker = os.path.join(here.dir, "gqa_grader", "running", "worker.py")
        with open(worker, "a", encoding="utf-8") as f:      # what a module as that user would add
            f.write(f"\nopen({os.path.join(here.work, 'ran-as-root')!r}, 'w').close()\n")
        os.chown(worker, 65534, 65534)
        self.assertIn(f"{worker} could be written by a user other than root", self.refusal(here))
        self.assertFalse(os.path.exists(os.path.join(here.work, "ran-as-root")))

    def test_a_package_folder_everyone_may_write_is_named(self):
        here = Grader(self)
        for folder, mode in ((os.path.join(here.dir, "gqa_sandbox"), 0o777),
                             (os.path.join(here.dir, "gqa_grader", "locale"), 0o775)):
            os.chmod(folder, mode)
            if mode & 0o020:
                os.chown(folder, 0, 65534)
            self.assertIn(f"{folder} could be written by a user other than root", self.refusal(here))
            os.chmod(folder, 0o755)
            os.chown(folder, 0, 0)
        self.assertEqual(self.refusal(here), "")             # root's alone again: graded

    def test_a_folder_above_the_grader_another_user_owns_is_named(self):
        here = Grader(self)
        os.chown(here.top, 65534, 65534)                     # could rename grader/ and plant its own
        self.assertIn(f"{here.top} could be written by a user other than root", self.refusal(here))


def tools_here():
    """The tools of gqa_sandbox that make namespaces here, as root."""
    from gqa_grader.running.seal import sandbox_package
    package = sandbox_package()
    if package is None or not ROOT_LINUX:
        return []
    return [tool for tool in package.TOOLS if package.available((tool,))[0]]


def with_tool(here, tool):
    """here's copy of gqa_sandbox uses tool alone (none: outside namespaces)."""
    path = os.path.join(here.dir, "gqa_sandbox", "__init__.py")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace('TOOLS = ("bwrap", "unshare")', f"TOOLS = {tuple(t for t in [tool] if t)!r}"))


# Lists each folder of installed packages that the sandbox may show (its path told).
LISTS_SITE = """
import os, json
def valid_g(h):
    seen = {}
    for folder in __FOLDERS__:
        try:
            seen[folder] = sorted(os.listdir(folder))[:3]
        except OSError as err:
            seen[folder] = type(err).__name__
    raise RuntimeError("SEEN" + json.dumps(seen))
"""


@heavy
class StandardLibraryAlone(unittest.TestCase):
    """The sandbox shows the interpreter and its standard library, never a folder of
    installed packages; a sealed run refuses when the module's name can be imported from
    anything in sight but the module."""

    @unittest.skipUnless(tools_here(), "the kernel's namespaces cannot be made here")
    def test_in_namespaces_no_folder_of_installed_packages_shows_what_it_holds(self):
        import glob
        import site
        found = site.getsitepackages() + glob.glob("/usr/lib/python3*/*-packages")
        folders = [f for f in dict.fromkeys(os.path.realpath(f) for f in found) if os.path.isdir(f) and os.listdir(f)]
        self.assertTrue(folders, "no folder of installed packages holds anything here")
        for tool in tools_here():
            with self.subTest(tool=tool):
                here = Grader(self)
                with_tool(here, tool)
                module = write(os.path.join(here.work, "gqa.py"), LISTS_SITE.replace("__FOLDERS__", repr(folders)))
                run = here.run("--module", module, "--sealed", "--json", "--only", "1", "--cases", "0")
                doc = json.loads(run.stdout)
                self.assertEqual(doc["namespaces"], tool, run.stdout)
                message = doc["steps"][0]["message"]
                seen = json.loads(message.split("SEEN", 1)[1].splitlines()[0])
                for folder in folders:
                    self.assertIn(seen[folder], ([], "PermissionError", "FileNotFoundError"), (folder, seen))

    @unittest.skipUnless(os.name == "posix", "a sealed run needs POSIX")
    def test_a_sealed_run_refuses_when_the_solution_is_installed_in_sight(self):
        from unittest import mock
        from gqa_grader.running.seal import Seal, sandbox_package
        package = sandbox_package()
        installed = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, installed, True)
        write(os.path.join(installed, "gqa.py"), "# the project, pip-installed\n")
        outside = mock.patch.object(package, "TOOLS", ())
        cases = [("installed", mock.patch.object(package, "site_folders", lambda: [installed]), outside),
                 ("in the library", mock.patch.object(package, "library_folders", lambda: [installed]),
                  mock.patch.object(package, "TOOLS", package.TOOLS))]
        for what, where, tools in cases:
            with self.subTest(what), where, tools, mock.patch.dict(package._ANSWERS, clear=True):
                with self.assertRaisesRegex(failures.Refused, f"^gqa can be imported from "
                                                              f"{os.path.join(installed, 'gqa.py')}, in the worker"):
                    Seal(sealed=True).close()


# Looks for its classmate's file: on its path, through every folder it holds open, and
# at the path of its own folder (told, as a flat class folder's is easy to guess).
PEEKS = """
import os, sys
_found = []
for _entry in sys.path + [f"/proc/self/fd/{fd}" for fd in os.listdir("/proc/self/fd")] + [__FOLDER__]:
    try:
        with open(os.path.join(_entry, "bob.py")) as _f:
            _found.append(_f.read())
    except OSError:
        pass
def valid_g(h):
    raise RuntimeError("PEEK" + repr(_found))
"""


@unittest.skipUnless(tools_here(), "the kernel's namespaces cannot be made here")
@heavy
class OneFileInReach(unittest.TestCase):
    """A student's module run as root (the self-check, the "repeat with:" command of its
    feedback, typed by a teacher in a flat class folder) has its own file alone in reach."""

    def test_the_repeat_command_in_a_flat_class_folder_reads_no_classmate(self):
        here = Grader(self)
        flat = os.path.join(here.work, "class")
        write(os.path.join(flat, "bob.py"), "BOBS_SECRET = 1\n")
        alice = write(os.path.join(flat, "alice.py"), PEEKS.replace("__FOLDER__", repr(flat)))
        for path in (here.work, flat):
            os.chmod(path, 0o755)                                # a class folder every user may read
        run = here.run("--module", alice, "--json", "--only", "1", "--cases", "0", "--seed", "3")
        message = json.loads(run.stdout)["steps"][0]["message"]
        self.assertIn("PEEK[]", message)
        self.assertNotIn("BOBS_SECRET", run.stdout)


# Tries to reach the project beside the tool that runs it, and the network: the
# solution and the reference by their paths (told, as a teacher's checkout is easy to
# guess), and through every folder of its path and every one it holds open (the sha256
# of each file it read), a listener on the
# machine's loopback (its port told); and asks the lab the tool's code imported
# (sys.modules["gqa"]) for a step's answer.  What it found is the message of the error
# that its first step, whichever the tool asks for, raises.
REACHES = """
import hashlib, os, socket, sys
_found = []
_places = [os.path.join(__PROJECT__, "gqa.py"), os.path.join(__PROJECT__, "gqa_grader", "expected", "reference.py")]
_places += [os.path.join(p, n) for p in sys.path + ["/proc/self/fd/" + f for f in os.listdir("/proc/self/fd")]
            for n in ("gqa.py", os.path.join("gqa_grader", "expected", "reference.py"))]
for _place in _places:
    try:
        with open(_place, "rb") as _f:
            _found.append(hashlib.sha256(_f.read()).hexdigest())
    except OSError:
        pass
try:
    with socket.create_connection(("127.0.0.1", __PORT__), timeout=2) as _s:
        _s.sendall(b"SOLUTION")
    _found.append("network")
except OSError:
    pass
try:
    _found.append("solved: %r" % (sys.modules["gqa"].valid_g(4),))
except BaseException:
    pass
def __getattr__(name):                 # whatever the tool asks for first
    raise RuntimeError("REACHED" + repr(_found))
"""

# The shipped lab with its backward pass not written (so that a report does not train),
# and, at import, the report's header replaced in the tool's own code beside it, to claim
# a grade.
FORGED_HEADER = """
import sys as _sys
_sections = _sys.modules.get("gqa_tools.report.sections")
if _sections is not None:
    _sections.section_header = lambda *args, **kwargs: "# gqa lab report\\n\\nGRADED: 25 of 25 steps passed\\n"
"""


class Project:
    """A copy of the project (the lab, the grader, the sandbox, the tools) in a folder of
    mode 0700, as docs/sandbox.md advises, and a folder beside it for a student's file."""

    def __init__(self, test, tools=None):
        from tests.helpers import ROOT
        self.top = tempfile.mkdtemp()
        test.addCleanup(shutil.rmtree, self.top, True)
        self.dir = os.path.join(self.top, "project")
        os.makedirs(self.dir, mode=0o700)
        copy_grader(self.dir)
        shutil.copytree(os.path.join(ROOT, "gqa_tools"), os.path.join(self.dir, "gqa_tools"))   # as copy_grader
        if tools is not None:
            with_tool(self, tools)
        self.work = os.path.join(self.top, "work")
        os.makedirs(self.work)

    def tool(self, *argv, timeout=300):
        return subprocess.run([sys.executable, "-m", "gqa", *argv], capture_output=True, text=True,
                              cwd=self.dir, timeout=timeout)


def listener():
    """A socket listening on the machine's loopback, and what connected to it (in a list
    filled by a thread)."""
    import socket
    import threading
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(60)
    heard = []

    def accept():
        try:
            while True:
                conn, _ = server.accept()
                heard.append(conn.recv(100))
                conn.close()
        except OSError:
            pass
    threading.Thread(target=accept, daemon=True).start()
    return server, heard


@unittest.skipUnless(tools_here(), "the kernel's namespaces cannot be made here (root on Linux, bubblewrap "
                                   "or util-linux's unshare)")
@heavy
class ToolsSealed(unittest.TestCase):
    """report, tables and uptrain --module, run as root on a student's file, run it sealed as a
    grade does: a root of its own with a copy of the tools alone in it (no project file, no
    solution), no network, a user of its own; each says so in one line."""

    def test_tables_reach_no_project_file_no_network_and_no_solution(self):
        here = Project(self)
        os.chmod(here.dir, 0o755)                    # a checkout every user may read
        server, heard = listener()
        self.addCleanup(server.close)
        module = write(os.path.join(here.work, "gqa.py"), REACHES.replace("__PROJECT__", repr(here.dir)).replace(
            "__PORT__", str(server.getsockname()[1])))
        run = here.tool("tables", "--module", module, "--heads", "4")
        self.assertEqual(run.returncode, 2, run.stderr)
        reached = run.stderr.split("REACHED", 1)[1].splitlines()[0]
        secrets = []
        for name in ("gqa.py", os.path.join("gqa_grader", "expected", "reference.py")):
            with open(os.path.join(here.dir, name), "rb") as f:
                secrets.append(hashlib.sha256(f.read()).hexdigest())
        for secret in secrets:
            self.assertNotIn(secret, reached)
        self.assertNotIn("network", reached)
        self.assertNotIn("solved", reached)
        self.assertEqual(heard, [])
        said = [line for line in run.stderr.splitlines() if line.startswith("gqa tables: ")]
        self.assertEqual(len(said), 2, run.stderr)             # the seal's line, then the module's failure
        self.assertIn("the module runs sealed", said[0])

    def test_a_report_with_the_project_private_is_written_and_its_header_is_the_tools(self):
        here = Project(self)                                         # mode 0700
        from tests.helpers import ROOT
        with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
            lab = f.read()
        start = lab.index("def grouped_attention_backward(")
        docstring_end = lab.index('"""', lab.index('"""', start) + 3) + 3
        student = lab[:docstring_end] + "\n    raise NotImplementedError\n" + lab[docstring_end:] + FORGED_HEADER
        module = write(os.path.join(here.work, "gqa.py"), student)
        out = os.path.join(here.work, "report.md")
        # The tests' small sizes: what is sealed is the same at every size, and a report of the
        # command's configuration runs sealed in CI's smoke run of benchmarks/hang.py.
        run = here.tool("report", "--module", module, "--out", out, "--heads", "6", "--head-dim", "8", "--layers",
                        "3", "--context", "64", "--batch", "4", "--run-head-dim", "2", "--run-d-model", "6",
                        "--run-context", "5", "--run-layers", "2", "--seeds", "1")
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(out, encoding="utf-8") as f:
            report = f.read()
        self.assertNotIn("No module named", report)
        self.assertNotIn("Not computed from", report.split("## 8.")[0])      # sections 1 to 7 computed
        self.assertNotIn("GRADED", report)
        self.assertIn("the module runs sealed", run.stderr)

    def test_where_namespaces_cannot_be_made_a_tool_as_root_refuses(self):
        here = Project(self, tools=None)
        with_tool(here, None)
        module = write(os.path.join(here.work, "gqa.py"), "RAN = open('/tmp/never', 'w')\n")
        run = here.tool("tables", "--module", module, "--heads", "4")
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("only in namespaces of its own", run.stderr)
        self.assertFalse(os.path.exists("/tmp/never"))


# Stores a key in the kernel's key store at import, as a hostile module would (add_key(2)
# by ctypes), in its user keyring, its session keyring and its user session keyring, each
# readable and searchable by everyone (KEYCTL_SETPERM); says the serials it stored.  Its
# name (__NAME__) is the test's own.
KEYS = {"x86_64": (248, 250), "aarch64": (217, 219), "riscv64": (217, 219)}
STORES_KEY = """
import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)
_add, _keyctl = __NUMBERS__
_stored = []
for _ring in (-4, -3, -5):
    _serial = _libc.syscall(_add, b"user", __NAME__, b"THE-SOLUTION", 12, _ring)
    if _serial > 0:
        _libc.syscall(_keyctl, 5, _serial, 0x3f3f3f3f)
        _stored.append(_serial)
def valid_g(h):
    raise RuntimeError("STORED" + repr(_stored))
"""
# Looks for that key: in /proc/keys, then by a search of its own keyrings; reads it.
READS_KEY = """
import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)
_add, _keyctl = __NUMBERS__
_found = []
def _read(serial):
    buf = ctypes.create_string_buffer(64)
    n = _libc.syscall(_keyctl, 11, serial, buf, 64)
    if n > 0:
        _found.append(buf.raw[:n].decode("ascii", "replace"))
with open("/proc/keys") as _f:
    for _line in _f:
        if __NAME__.decode() in _line:
            _read(int(_line.split()[0], 16))
for _ring in (-4, -3, -5):
    _serial = _libc.syscall(_keyctl, 10, _ring, b"user", __NAME__, 0)
    if _serial > 0:
        _read(_serial)
def valid_g(h):
    raise RuntimeError("FOUND" + repr(_found))
"""

# What a module holds of the machine's powers: its capabilities and no_new_privs
# (/proc/self/status), and whether it can make a user namespace of its own.
POWERS = """
import ctypes, json
with open("/proc/self/status") as _f:
    _status = {l.split(":")[0]: l.split()[1] for l in _f if l.startswith(("Cap", "NoNewPrivs"))}
_libc = ctypes.CDLL(None, use_errno=True)
_made = _libc.unshare(0x10000000) == 0
def valid_g(h):
    raise RuntimeError("POWERS" + json.dumps({"status": _status, "userns": _made, "errno": ctypes.get_errno()}))
"""


def keys_numbers():
    return KEYS.get(os.uname().machine) if hasattr(os, "uname") else None


@unittest.skipUnless(ROOT_LINUX, AS_ROOT)
@unittest.skipUnless(keys_numbers(), "add_key's and keyctl's system call numbers are known here for "
                                     "x86_64, aarch64 and riscv64 only")
@unittest.skipUnless(os.path.exists("/proc/keys"), "this kernel has no key store (/proc/keys)")
@heavy
class KeyStore(unittest.TestCase):
    """A key one run stores is read back by no later run: a class graded one at a time, its
    first module storing a key every user may read, its second looking for it.  In namespaces
    the key lives in the run's user namespace and goes with it; outside them the cleanup
    invalidates the run's user's keys."""

    def test_a_classmate_graded_after_reads_no_key(self):
        numbers = repr(keys_numbers())
        name = repr(f"gqa-leak-{os.getpid()}-{id(self)}".encode())   # no other run's key answers it
        for tool in tools_here() + [None]:
            with self.subTest(tool=tool or "outside namespaces"):
                here = Grader(self)
                with_tool(here, tool)
                subs = os.path.join(here.work, "subs")
                for file, source in (("a_stores.py", STORES_KEY), ("b_reads.py", READS_KEY)):
                    write(os.path.join(subs, file), source.replace("__NUMBERS__", numbers).replace("__NAME__", name))
                book = os.path.join(here.work, "g.csv")
                run = here.run("--class", subs, "--gradebook", book, "--only", "1", "--cases", "0",
                               "--seed", "7", "--jobs", "1")
                self.assertEqual(run.returncode, 0, run.stderr)
                with open(book, newline="", encoding="utf-8-sig") as f:
                    rows = {row["student"]: row["notes"] for row in csv.DictReader(f)}
                stored = rows["a_stores"].split("STORED", 1)[1]
                self.assertRegex(stored, r"^\[[1-9]")                  # the attack's key was stored
                self.assertIn("FOUND[]", rows["b_reads"])
                self.assertNotIn("THE-SOLUTION", rows["b_reads"])


@unittest.skipUnless(tools_here(), "the kernel's namespaces cannot be made here (root on Linux, bubblewrap "
                                   "or util-linux's unshare)")
@heavy
class NoPowerLeft(unittest.TestCase):
    """In a sealed run as root, under each tool, the module holds no capability (the bounding
    set neither), cannot gain one (no_new_privs), and cannot make a user namespace of its own."""

    def test_no_capability_and_no_nested_user_namespace(self):
        for tool in tools_here():
            with self.subTest(tool=tool):
                here = Grader(self)
                with_tool(here, tool)
                module = write(os.path.join(here.work, "gqa.py"), POWERS)
                run = here.run("--module", module, "--sealed", "--json", "--only", "1", "--cases", "0")
                doc = json.loads(run.stdout)
                self.assertEqual(doc["namespaces"], tool, run.stdout)
                said = json.loads(doc["steps"][0]["message"].split("POWERS", 1)[1].splitlines()[0])
                for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
                    self.assertEqual(int(said["status"][name], 16), 0, (name, said))
                self.assertEqual(said["status"]["NoNewPrivs"], "1")
                self.assertFalse(said["userns"], said)


if __name__ == "__main__":
    unittest.main()
