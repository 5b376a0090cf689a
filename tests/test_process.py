"""The grader's side of a worker (gqa_grader/running/process.py): whatever the worker sends, or
does not send, the grader decides and says why (NeverCrashNeverStall); whatever stalls
costs its deadline and no more (Stalls); the tools' --module runs in the same worker
(ToolsThroughTheWorker)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock
from concurrent.futures import ThreadPoolExecutor

from gqa_grader.steps import checks
from gqa_grader import cli
from gqa_grader.verdict import grading
from gqa_grader.running import process
from tests.helpers import early, heavy, start_early
from tests.sealed_support import (SOURCE, STARTER, ROOT_POSIX, Copy, main_in, one_document, in_each,
                                  completed, as_run, raised, grade_source)


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
        with mock.patch("gqa_grader.running.seal.DROP_ROOT", False):     # a worker that may fork
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
                "not a function": grade_source(SOURCE + "\nkv_head = None\ngroup_heads = 3\ndel fold_kv_mean\n",
                                               only=["kv_head", "group_heads", "fold_kv_mean", "repeat_kv"],
                                               cases=0),
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
        self.assertIn("group_heads is not a function but 3, of type int", results["group_heads"]["message"])
        self.assertIn("the module has no fold_kv_mean (needed for fold_kv_mean(", results["fold_kv_mean"]["message"])
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
        # The call's deadline (0.5 s) or the run's (1 s, counted from the worker's start, which a
        # loaded machine may spend on starting): either ends it, and the error says which.
        err = self.done["tables"]
        self.assertIsNotNone(err)
        self.assertRegex(err["message"], r"computing the tables did not (return within 0\.5 s|finish "
                                         r"within its time budget)")


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


def load_tests(loader, tests, pattern):
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


if __name__ == "__main__":
    unittest.main()
