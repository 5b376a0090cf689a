"""The referee holds against a module that tries to outlive its run, to read a
classmate's, to drown the grader in text or to crash its output.  One hostile module
tries all of it at once in a sealed run as root, graded by a disposable copy of the
grader; each test then checks one thing the run must have held.  Where the tests do not
run as root they are skipped, saying why (the seal drops to a user of its own only as root)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import stat
import tempfile
import time
import unittest
from unittest import mock

from gqa_grader.running import cleanup, process
from gqa_grader.running import values
from gqa_grader.teacher import handout
from gqa_grader.running.seal import Seal

from tests.helpers import ROOT, copy_grader, heavy, run_grader

AS_ROOT = os.name == "posix" and hasattr(os, "geteuid") and os.geteuid() == 0
NOT_ROOT = "the sealed run draws a user of its own only as root; this test runs as another user"
with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as _f:
    STARTER = handout.make_starter(_f.read())

# At import: what it leaves behind (DEPTH nested folders, more than Python's recursion
# limit, which the recursive shutil.rmtree does not survive on 3.9 to 3.12; files in
# every world-writable folder; System V shared memory, a message queue, a semaphore
# set), what it reads of
# a classmate's run, and a process name that is not UTF-8; then every answer it sends
# is an error with a character no ASCII terminal can show, of 3 million characters the
# first time a request names its functions, of its first 20,000 after (still five
# times what a message may show: every message is cut all the same).
HOSTILE = STARTER + r'''
import os as _os, ctypes as _ct, __main__ as _w
_uid = _os.getuid()
_lib = _ct.CDLL(None, use_errno=True)
_made = {}
_top = _os.path.join("/tmp", f"deep-{_uid}")
_os.mkdir(_top)
_here = _os.open(_top, _os.O_RDONLY)
for _i in range(DEPTH):
    _os.mkdir("d", dir_fd=_here)
    _next = _os.open("d", _os.O_RDONLY, dir_fd=_here)
    _os.close(_here)
    _here = _next
_os.close(_here)
for _folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
    try:
        with open(_os.path.join(_folder, f"left-{_uid}"), "w") as _f:
            _f.write("x")
        _made[_folder] = "ok"
    except OSError as _err:
        _made[_folder] = type(_err).__name__
_made["folder"] = _os.getcwd()                      # the run's private folder
_made["shm"] = [_lib.shmget(0, 40 << 20, 0o1600) for _ in range(3)]
_made["msg"] = _lib.msgget(0, 0o1600)
_made["sem"] = _lib.semget(0, 1, 0o1600)
_read = []
for _try in (lambda: _os.listdir(CLASSMATE), lambda: open(_os.path.join(CLASSMATE, "classmate.py")).read()):
    try:
        _read.append(str(_try())[:20])
    except OSError as _err:
        _read.append(type(_err).__name__)
_made["classmates"] = _read
_lib.prctl(15, b"\xff\xfe\xfd", 0, 0, 0)             # PR_SET_NAME
_text = "HELD" + _w.json.dumps(dict(_made, uid=_uid)) + "HELD \u0400" + "x" * 3_000_000


def _forge(mod, requests):
    _seen = set()
    for _line in requests:
        _request = _w.json.loads(_line)
        _fn = str([_item.get("fn") for _item in _request["items"]])
        _message = _text if _fn not in _seen else _text[:20_000]
        _seen.add(_fn)
        _w.W.out.write(_w.json.dumps({"n": _request["n"], "i": 0, "error": {
            "type": "ValueError", "message": _message, "gqa_error": False, "where": []}}) + "\n")
        _w.W.out.flush()


_w.w_serve = _forge
'''


def report_of(doc):
    """What the hostile module said it did, from a step's message."""
    message = doc["steps"][0]["message"]
    return json.loads(message.split("HELD", 2)[1])


def _owner(path):
    try:
        return os.lstat(path).st_uid
    except FileNotFoundError:              # another process's, gone since it was listed
        return None


def left_by(uid):
    """What uid still has: entries at the top of the world-writable folders, IPC objects."""
    left = [p for folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock") if os.path.isdir(folder)
            for p in glob.glob(os.path.join(folder, "*")) + glob.glob(os.path.join(folder, ".*"))
            if _owner(p) == uid]
    for kind, cols in (("shm", (7, 9)), ("msg", (7, 9)), ("sem", (4, 6))):
        with open(f"/proc/sysvipc/{kind}", encoding="ascii") as f:
            rows = [line.split() for line in f.read().splitlines()[1:]]
        left += [f"{kind} {row[1]}" for row in rows if any(int(row[c]) == uid for c in cols)]
    return left


@unittest.skipUnless(AS_ROOT, NOT_ROOT)
@heavy
class SealedRunHolds(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()                       # the grader's copy: private
        copy_grader(cls.dir, lab=False)
        cls.sub = tempfile.mkdtemp()
        cls.module = os.path.join(cls.sub, "gqa.py")
        classmate = os.path.join(cls.sub, "classmate.py")
        with open(classmate, "w", encoding="utf-8") as f:
            f.write("SECRET = 'a classmate'\n")
        from unittest import mock
        with mock.patch("gqa_grader.running.seal.HERE", cls.dir):   # a concurrent run's private folder
            cls.other = Seal(sealed=True)
        cls.other.place(classmate)
        with open(cls.module, "w", encoding="utf-8") as f:
            f.write(HOSTILE.replace("CLASSMATE", repr(cls.other.dir)).replace("DEPTH", "1100"))
        cls.results = os.path.join(cls.dir, "results.json")
        cls.graded = run_grader("--module", cls.module, "--sealed", "--out", cls.results, "--cases", "0",
                                "--only", "1,2,3,4,5,6", grader=os.path.join(cls.dir, "grader.py"), cwd=cls.dir,
                                text=False, env=dict(os.environ, PYTHONIOENCODING="ascii"))
        with open(cls.results, "rb") as f:
            cls.size = len(f.read())
        with open(cls.results, encoding="utf-8") as f:
            cls.doc = json.load(f)
        cls.said = report_of(cls.doc)

    @classmethod
    def tearDownClass(cls):
        cls.other.close()
        shutil.rmtree(cls.dir)
        shutil.rmtree(cls.sub)

    def test_the_module_did_what_it_tried(self):
        # Else the tests below would hold for nothing.
        self.assertNotEqual(self.said["uid"], 0)
        self.assertEqual(self.said["/tmp"], "ok")
        self.assertTrue(all(ident >= 0 for ident in self.said["shm"]), self.said["shm"])
        self.assertGreaterEqual(min(self.said["msg"], self.said["sem"]), 0)

    def test_the_run_ends_whole_on_an_ascii_terminal(self):
        out = self.graded.stdout.decode("ascii")
        self.assertEqual(self.graded.returncode, 1, self.graded.stderr.decode("ascii", "replace"))
        self.assertEqual(out.splitlines()[-1], "0 passed, 6 failed")
        self.assertIn("\\u0400", out)                     # escaped, not a crash
        self.assertEqual((self.doc["score"], self.doc["passed"]), (0.0, 0))

    def test_nothing_of_the_runs_user_survives_it(self):
        self.assertEqual(left_by(self.said["uid"]), [])
        self.assertTrue(self.said["folder"].startswith(tempfile.gettempdir()), self.said["folder"])
        self.assertFalse(os.path.exists(self.said["folder"]))
        if self.doc.get("namespaces"):           # what it left went with its namespaces
            self.assertNotIn("cleanup", self.doc)
        else:
            self.assertIn("removed what the run's user left", " ".join(self.doc["cleanup"]))

    def test_a_classmates_module_is_out_of_reach(self):
        # No list, no read: out of the run's root in namespaces, else the user's rights.
        seen = "FileNotFoundError" if self.doc.get("namespaces") else "PermissionError"
        self.assertEqual(self.said["classmates"], [seen] * 2)

    def test_the_document_is_bounded(self):
        self.assertLessEqual(self.size, 1 << 20)
        for step in self.doc["steps"]:
            self.assertLessEqual(len(step["message"]), values.MESSAGE_CAP + 200)
            self.assertIn("more characters cut]", step["message"])


# What the self-check and a tool's child must clean up too: the same things left behind,
# and then the import fails, saying the run's uid.
LEAVER = HOSTILE.split("_read = []")[0].replace(STARTER, "") + \
    'raise RuntimeError("HELD" + _w.json.dumps(dict(_made, uid=_uid)) + "HELD")\n'


@unittest.skipUnless(AS_ROOT, NOT_ROOT)
@heavy
class EveryRunCleansUp(unittest.TestCase):
    """The self-check and a tool's child (run_in_child) as root: the same cleanup."""

    def setUp(self):
        self.folder = tempfile.mkdtemp()
        self.module = os.path.join(self.folder, "gqa.py")
        with open(self.module, "w", encoding="utf-8") as f:
            f.write(LEAVER.replace("DEPTH", "20").replace("import os as _os, ctypes as _ct, __main__ as _w",
                                   "import os as _os, ctypes as _ct, json as _json\n"
                                   "class _w: json = _json"))

    def tearDown(self):
        shutil.rmtree(self.folder)

    def said(self, message):
        return json.loads(message.split("HELD", 2)[1])

    def test_the_self_check(self):
        run = run_grader("--module", self.module, "--json", cwd=os.getcwd(), timeout=60)
        doc = json.loads(run.stdout)
        said = self.said(doc["error"])
        self.assertEqual((run.returncode, said["/tmp"]), (2, "ok"))
        self.assertNotEqual(said["uid"], 0)
        self.assertEqual(left_by(said["uid"]), [])
        self.assertFalse(os.path.exists(said["folder"]))

    def test_a_tools_child(self):
        from gqa_grader.running import failures
        with self.assertRaises(failures.Refused) as raised:
            list(process.run_in_child(self.module, "gqa_tools.tables:child_texts", [{}, None, False], paths=[ROOT]))
        said = self.said(str(raised.exception))
        self.assertNotEqual(said["uid"], 0)
        self.assertEqual(left_by(said["uid"]), [])
        self.assertFalse(os.path.exists(said["folder"]))


@heavy
class NoWorkerOutlivesItsCaller(unittest.TestCase):
    """A grader killed outright (SIGKILL; a terminal closed) leaves no worker running: the
    worker has a session of its own, so no hangup reaches it, and it ran on to its CPU
    limit (minutes, under a tool) until it asked the kernel to kill it with its caller."""

    def test_the_worker_of_a_killed_grader_ends_with_it(self):
        import signal
        import subprocess
        import sys
        if not sys.platform.startswith("linux"):
            self.skipTest("the parent-death signal is Linux's")

        def alive(pid):
            try:
                with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                    return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
            except OSError:
                return False
        with tempfile.TemporaryDirectory() as folder:
            os.chmod(folder, 0o777)                      # the worker may run as a user of its own
            pid_file, module = os.path.join(folder, "pid"), os.path.join(folder, "gqa.py")
            with open(module, "w", encoding="utf-8") as f:
                f.write(f"import os\nwith open({pid_file!r}, 'w') as f:\n    f.write(str(os.getpid()))\n"
                        "while True:\n    pass\n")
            os.chmod(module, 0o644)
            grader = subprocess.Popen([sys.executable, "-c", "import sys; from gqa_grader.verdict import grading; "
                                       "grading.grade(sys.argv[1], 1, cases=0, only=['valid_g'], timeout=120)",
                                       module], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            pid = None
            try:
                deadline = time.monotonic() + 60
                while pid is None and time.monotonic() < deadline and grader.poll() is None:
                    time.sleep(0.05)
                    try:
                        with open(pid_file, encoding="ascii") as f:
                            pid = int(f.read() or 0) or None
                    except (OSError, ValueError):
                        pass
                self.assertIsNotNone(pid, "the module's import never started")
                grader.send_signal(signal.SIGKILL)
                grader.wait(30)
                deadline = time.monotonic() + 10
                while alive(pid) and time.monotonic() < deadline:
                    time.sleep(0.05)
                self.assertFalse(alive(pid), "the worker outlived the grader that started it")
            finally:
                if grader.poll() is None:
                    grader.kill()
                if pid and alive(pid):
                    os.kill(pid, signal.SIGKILL)


@unittest.skipUnless(AS_ROOT, NOT_ROOT)
@heavy
class SelfCheckAsRoot(unittest.TestCase):
    """The self-check as root imports nothing from the module's folder before it drops."""

    def test_a_planted_standard_module_never_runs_as_root(self):
        # A file named like a standard module beside the student's module may shadow it for
        # the student's own code without root; as root the module's file alone is in its reach.
        folder = tempfile.mkdtemp()
        marker = os.path.join(tempfile.gettempdir(), f"gqa-planted-{os.getpid()}")
        try:
            os.chmod(folder, 0o755)                       # the worker's user may import from it
            for name in ("random", "statistics", "typing", "inspect", "json", "traceback"):
                with open(os.path.join(folder, f"{name}.py"), "w", encoding="utf-8") as f:
                    f.write(f"import os\nif os.getuid() == 0:\n    open({marker!r}, 'a').close()\n"
                            f"raise RuntimeError(f'PLANTED {name} as uid {{os.getuid()}}')\n")
            with open(os.path.join(folder, "gqa.py"), "w", encoding="utf-8") as f:
                f.write(STARTER)
            run = run_grader("--module", os.path.join(folder, "gqa.py"), "--only", "1", "--cases", "0",
                             "--json", cwd=folder, timeout=60)
            self.assertFalse(os.path.exists(marker), "a planted module ran as root")
            doc = json.loads(run.stdout)
            said = doc.get("error", "") + " ".join(s["message"] for s in doc["steps"])
            self.assertNotIn("as uid 0)", said)
            self.assertNotIn("PLANTED", said)       # as root the module's file alone is in reach
        finally:
            shutil.rmtree(folder)
            if os.path.exists(marker):
                os.remove(marker)


class TheSearch(unittest.TestCase):
    """cleanup.writable_folders finds every world-writable folder others can reach, with or
    without the link counts that let it leave folders with no subfolder unlisted."""

    def setUp(self):
        self.top = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.top)
        tree = {"a": 0o755, "a/b": 0o777, "a/b/c": 0o755, "a/b/c/d": 0o1777, "files": 0o755,
                "shut": 0o700, "shut/open": 0o777, "open": 0o777, "open/leaf": 0o777,
                "many": 0o755, "many/one": 0o711, "many/one/two": 0o755, "many/one/two/ww": 0o777}
        tree.update({f"many/x{i}": 0o755 for i in range(5)})
        for path, mode in sorted(tree.items()):
            os.mkdir(os.path.join(self.top, path))
        for path, mode in tree.items():
            os.chmod(os.path.join(self.top, path), mode)
        for i in range(30):
            with open(os.path.join(self.top, "files", f"f{i}"), "w", encoding="utf-8") as f:
                f.write("x")
        os.symlink(os.path.join(self.top, "open"), os.path.join(self.top, "a", "link"))

    def expected(self):
        """By os.walk: world-writable folders below top with every folder between searchable by others."""
        found = []
        for folder, subfolders, _ in os.walk(self.top):
            modes = {s: os.lstat(os.path.join(folder, s)).st_mode for s in subfolders}
            subfolders[:] = [s for s, mode in modes.items() if not os.path.islink(os.path.join(folder, s))
                             and mode & 0o001]
            found += [os.path.join(folder, s) for s in subfolders if modes[s] & 0o002]
        return sorted(found)

    def test_the_same_folders_with_and_without_link_counts(self):
        from unittest import mock
        from gqa_grader.running import cleanup
        relative = lambda paths: sorted(os.path.relpath(p, self.top) for p in paths)
        self.assertEqual(relative(self.expected()), ["a/b", "a/b/c/d", "many/one/two/ww", "open", "open/leaf"])
        found, note = cleanup.writable_folders(-1, 1e18, top=self.top)
        self.assertEqual((sorted(found), note), (self.expected(), None))
        with mock.patch.object(cleanup, "counting_devices", set):
            found, note = cleanup.writable_folders(-1, 1e18, top=self.top)
        self.assertEqual((sorted(found), note), (self.expected(), None))

    def test_a_search_under_way_is_shared_and_a_finished_one_reused(self):
        import threading
        import time
        from unittest import mock
        from gqa_grader.running import cleanup
        calls, go, name = [], threading.Event(), f"gqa-test-search-{os.getpid()}-{{uid}}"
        saved = os.path.join(tempfile.gettempdir(), name.format(uid=os.geteuid()))
        self.addCleanup(shutil.rmtree, saved, True)

        def search(uid, deadline):
            calls.append(uid)
            go.wait(10)
            return [self.top], None

        def found(uid):
            return cleanup.FolderSearch(uid).folders(time.monotonic() + 10)
        with mock.patch.object(cleanup, "writable_folders", search), mock.patch.object(cleanup, "SAVED", name), \
                mock.patch.object(cleanup.FolderSearch, "_last", (None, -1e9)), \
                mock.patch.object(cleanup.FolderSearch, "_running", None):
            first, second = cleanup.FolderSearch(1), cleanup.FolderSearch(2)
            go.set()
            self.assertEqual([s.folders(time.monotonic() + 10) for s in (first, second)], [([self.top], None)] * 2)
            self.assertEqual((found(3), calls), (([self.top], None), [1]))       # this process's
            self.assertEqual(os.stat(saved).st_mode & 0o777, 0o700)
            link = os.path.join(self.top, "saved.json")
            for uid, spoil in ((4, None), (5, lambda: os.chmod(saved, 0o755)),
                               (6, lambda: os.replace(os.path.join(saved, "search.json"), link)
                                or os.symlink(link, os.path.join(saved, "search.json"))),
                               (7, lambda: self.save(saved, time.time() - 61)), (8, None)):
                with mock.patch.object(cleanup.FolderSearch, "_last", (None, -1e9)):    # the next process
                    self.save(saved, time.time())
                    if spoil:
                        spoil()
                    self.assertEqual(found(uid), ([self.top], None))
                    os.chmod(saved, 0o700)
        self.assertEqual(calls, [1, 5, 6, 7])

    def save(self, saved, when):
        import time
        path = os.path.join(saved, "search.json")
        if os.path.lexists(path):
            os.remove(path)
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"time": when, "since boot": time.monotonic(), "folders": [self.top]}, f)

    def test_link_counts_are_trusted_only_where_the_file_system_keeps_them(self):
        from gqa_grader.running import cleanup
        info = os.path.join(self.top, "mountinfo")
        with open(info, "w", encoding="utf-8") as f:
            f.write("22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
                    "23 22 0:25 / /dev/shm rw - tmpfs tmpfs rw\n"
                    "24 22 0:31 / /home rw shared:5 master:2 - btrfs /dev/vdb rw\n"
                    "25 22 0:40 / /mnt rw - fuse.sshfs host: rw\n"
                    "not a line of mountinfo\n")
        self.assertEqual(cleanup.counting_devices(info), {os.makedev(254, 0), os.makedev(0, 25)})
        self.assertEqual(cleanup.counting_devices(os.path.join(self.top, "none")), set())


class Removal(unittest.TestCase):
    """cleanup.remove_entries: what a run's user owns in a world-writable folder goes,
    however many files a folder holds; what the deadline leaves is closed off."""

    UID = 2 ** 31 - 7                      # owns nothing here but what the test gives it
    NOTE = ("{} files and folders of the run's user not removed (past the deadline, holding "
            "another user's, or moved meanwhile): made root's, with no permission for anyone else")

    def setUp(self):
        if not AS_ROOT:
            self.skipTest("giving files to another user needs root")
        self.top = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.top, True)
        os.chmod(self.top, 0o1777)
        self.mine = os.path.join(self.top, "theirs.txt")      # another user's: stays
        with open(self.mine, "w", encoding="utf-8") as f:
            f.write("x")

    def tree(self, name, files):
        """A folder of the run's user: files files at its top, and a subfolder, a
        sub-subfolder and a link among them, each holding files too."""
        top = os.path.join(self.top, name)
        for folder in (top, os.path.join(top, "sub"), os.path.join(top, "sub", "deeper")):
            os.mkdir(folder)
            for i in range(files if folder == top else 3):
                with open(os.path.join(folder, f"f{i}"), "w", encoding="utf-8") as f:
                    f.write("x")
        os.symlink(self.mine, os.path.join(top, "sub", "link"))
        for folder, subfolders, names in os.walk(top):
            for n in [folder] + [os.path.join(folder, x) for x in subfolders + names]:
                os.chown(n, self.UID, self.UID, follow_symlinks=False)
        return top

    def test_a_folder_of_more_files_than_a_batch_goes_whole(self):
        count = 2 * 8 + 5                                   # batches of 8: three of them
        self.tree("many", count)
        with mock.patch.object(cleanup, "BATCH", 8):
            removed, notes = cleanup.remove_entries(self.UID, [self.top], time.monotonic() + 60)
        self.assertEqual(notes, [])
        self.assertEqual(removed, count + 3 + 1 + 3 + 3)   # files, sub's and its link, deeper's, folders
        self.assertEqual(os.listdir(self.top), ["theirs.txt"])

    def test_what_the_deadline_leaves_is_closed_off(self):
        top = self.tree("kept", 10)
        loose = os.path.join(self.top, "loose.txt")
        os.link(os.path.join(top, "f0"), loose)             # a second name of one of its files
        os.chown(loose, self.UID, self.UID)
        note = os.path.join(self.top, "note")                # a link's text is data too
        os.symlink("the run's answer", note)
        os.lchown(note, self.UID, self.UID)
        removed, notes = cleanup.remove_entries(self.UID, [self.top], time.monotonic() - 1)
        self.assertEqual(removed, 2)                         # a name of a file, a link: unlinked
        self.assertFalse(os.path.lexists(loose) or os.path.lexists(note))
        self.assertEqual(notes, [self.NOTE.format(1)])       # the tree: closed off
        st = os.lstat(top)
        self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)), (0, 0, 0))
        self.assertEqual(os.lstat(os.path.join(top, "f1")).st_uid, self.UID)   # inside: unreachable

    def test_a_folder_moved_away_during_removal_is_not_followed(self):
        """Another process renames a folder of the tree, mid-removal, into a folder of
        root's: the step up lands there, and nothing of root's may go."""
        top = self.tree("moved", 2)
        deeper = os.path.join(top, "sub", "deeper")
        victim = os.path.join(self.top, "victim")
        os.mkdir(victim)
        os.chmod(victim, 0o1777)
        precious = os.path.join(victim, "precious.txt")
        with open(precious, "w", encoding="utf-8") as f:
            f.write("root's")
        target = os.stat(deeper).st_ino
        entries = cleanup._entries

        def moving(fd, uid, path):                      # once inside deeper: sub goes to victim
            if os.fstat(fd).st_ino == target and os.path.isdir(os.path.join(top, "sub")):
                os.rename(os.path.join(top, "sub"), os.path.join(victim, "sub"))
            return entries(fd, uid, path)
        with mock.patch.object(cleanup, "_entries", moving):
            removed, notes = cleanup.remove_entries(self.UID, [self.top], time.monotonic() + 60)
        self.assertTrue(os.path.isfile(precious))
        self.assertEqual(sorted(os.listdir(victim)), ["precious.txt", "sub"])
        self.assertEqual(notes, [self.NOTE.format(1)])
        st = os.lstat(top)
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0))

    def test_a_folder_on_the_way_replaced_by_a_link_is_not_followed(self):
        """Another run's user owns a folder above the listed one: mid-removal it renames
        it away and leaves a link to a folder of root's in its place.  The cleanup works
        through the folder it opened, so root's entry of the same name is left alone."""
        theirs = os.path.join(self.top, "b")                 # the other run's folder
        listed = os.path.join(theirs, "w")                   # world-writable, found by the search
        os.makedirs(listed)
        os.chmod(listed, 0o777)
        victim = os.path.join(self.top, "victim")
        os.makedirs(os.path.join(victim, "x"))               # root's, named as the run's tree is
        top = os.path.join(listed, "x")
        os.mkdir(top)
        for i in range(3):
            with open(os.path.join(top, f"f{i}"), "w", encoding="utf-8") as f:
                f.write("x")
        for path in [top] + [os.path.join(top, f"f{i}") for i in range(3)]:
            os.chown(path, self.UID, self.UID)
        entries = cleanup._entries

        def swapping(fd, uid, path):
            if not os.path.islink(listed):
                os.rename(listed, os.path.join(theirs, "old"))
                os.symlink(victim, listed)
            return entries(fd, uid, path)
        with mock.patch.object(cleanup, "_entries", swapping):
            removed, notes = cleanup.remove_entries(self.UID, [listed], time.monotonic() + 60)
        self.assertEqual((removed, notes), (4, []))
        self.assertEqual(os.listdir(os.path.join(theirs, "old")), [])   # the run's tree: gone
        st = os.lstat(os.path.join(victim, "x"))
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o755))   # root's: as it was
        with self.assertRaises(OSError):                     # a link on the way: not opened
            cleanup.open_folder(listed)

    def test_another_users_entry_in_the_tree_is_not_removed(self):
        top = self.tree("shared", 2)
        theirs = os.path.join(top, "sub", "theirs.txt")   # root's, put in the user's folder
        with open(theirs, "w", encoding="utf-8") as f:
            f.write("x")
        removed, notes = cleanup.remove_entries(self.UID, [self.top], time.monotonic() + 60)
        self.assertTrue(os.path.isfile(theirs))
        self.assertEqual(stat.S_IMODE(os.lstat(top).st_mode), 0)   # closed off instead


class CleanText(unittest.TestCase):

    def test_every_invisible_or_unassigned_code_point_is_escaped(self):
        import unicodedata
        for ch in ("\u00ad", "\u061c", "\u180e", "\ufff9", "\ufffb", "\U000e0001", "\U000e007f",
                   "\u115f", "\u3164", "\u2800", "\ue000", "\U0010fffd", "\ufe0f", "\u200b", "\u2028"):
            with self.subTest(code_point=f"U+{ord(ch):04X}"):
                cleaned = values.clean_text(f"a{ch}b")
                self.assertEqual(cleaned, "a" + (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else
                                                 f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else
                                                 f"\\U{ord(ch):08x}") + "b")
        unassigned = next(chr(c) for c in range(0x378, 0x10000) if unicodedata.category(chr(c)) == "Cn")
        self.assertEqual(values.clean_text(unassigned), f"\\u{ord(unassigned):04x}")
        self.assertEqual(values.clean_text("é Ѐ 中 \n"), "é Ѐ 中 \n")      # text stays text

    def test_a_long_message_is_cut_saying_how_much(self):
        cut = values.bounded("x" * (values.MESSAGE_CAP + 123))
        self.assertEqual(cut, "x" * values.MESSAGE_CAP + " [... 123 more characters cut]")


if __name__ == "__main__":
    unittest.main()
