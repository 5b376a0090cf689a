"""The referee's fifth round: what a run trusts, and on what channel it hears it.  A
module that forges the sandbox's failure, a grader whose files another user could write,
a solution installed where the sandbox shows it, a classmate's file beside a module, a
tool run as root on a student's file, and what a run leaves in the kernel's key store.
Each test runs the attack against a disposable copy of the grader where it can."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from gqa_grader import failures
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
        with open(book, newline="", encoding="utf-8") as f:
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
        module = write(os.path.join(here.work, "gqa.py"), "")
        run = here.run("--module", module, "--sealed", "--json", "--only", "1", "--cases", "0")
        return json.loads(run.stdout).get("error") or ""

    def test_a_worker_another_user_owns_is_named_and_never_run(self):
        here = Grader(self)
        worker = os.path.join(here.dir, "gqa_grader", "worker.py")
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
    from gqa_grader.seal import sandbox_package
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
        from gqa_grader.seal import Seal, sandbox_package
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


if __name__ == "__main__":
    unittest.main()
