"""The worker's users (gqa_grader/running/users.py, cleanup.py): as root, every worker runs as a
uid drawn for its run, and every process of that uid is killed at the end (NeverAsRoot)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from gqa_grader.running import failures, process
from gqa_grader.running.seal import Seal
from tests.helpers import ROOT, early, heavy, start_early
from tests.sealed_support import STARTER, ROOT_POSIX, NOT_ROOT, Copy, grade_source, outside_namespaces


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


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
            with mock.patch("gqa_grader.running.seal.HERE", private), outside_namespaces():
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
            with mock.patch("gqa_grader.running.seal.HERE", grader), outside_namespaces():
                with self.assertRaisesRegex(failures.Refused, f"^{top} could be written by a user other "
                                                              f"than root"):   # any user, the worker's too
                    Seal(sealed=True)
            os.chmod(top, 0o1777)                          # sticky and root's, as /tmp is
            with mock.patch("gqa_grader.running.seal.HERE", grader), outside_namespaces():
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


def load_tests(loader, tests, pattern):
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


if __name__ == "__main__":
    unittest.main()
