"""What a grade is made of, held still: one tolerance that every check reads and the
first line prints, and GRADER_VERSION raised whenever what a case checks or how points
count changes (the rule in CONTRIBUTING.md, "When GRADER_VERSION changes"); and what no
module can change: a module that misbehaves costs at most a timeout (Referee).

The checks' fingerprint is the sha256 of their code's syntax trees, written out by a
walk of our own (ast.dump's text differs between Pythons), without docstrings, with
the texts of messages (`_("...")`) left out (rewording feedback changes no grade) and
without the two lines that name the version (GRADER_VERSION, GRADER_CHECKS).
grading.GRADER_CHECKS holds the fingerprint of the code that GRADER_VERSION names: a
change in that code fails the test until GRADER_CHECKS is set again, so that whoever
changes a check decides, by the rule, whether the version changes too; the two lines
sit together, and a new version is one change to one file."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import unittest

from gqa_grader.running import process
from tests.helpers import ROOT, captured, early, heavy, run_grader, start_early
from tests.grader_support import Module, Run, grade_all, grade_source, in_kv_head, mutate, run_main

# Where what a case checks, and how points count, is written: the inputs drawn, the
# expected answers, the comparison, every check and refusal part, the tracks' steps, the
# points, the grading loop.  Not: how a result is printed or named (printing, mistakes).
CHECKED = ("expected/inputs", "expected/reference", "expected/mistaken", "expected/answers", "expected/compare", "steps/manifest",
           "steps/checking", "steps/refusals", "steps/heads", "steps/layer", "steps/counting", "steps/decoding",
           "steps/backward", "steps/checks", "steps/robustness", "steps/tracks", "verdict/results", "verdict/grading")
MESSAGES = {"_", "N_", "ngettext"}
NAMES_OF_THE_VERSION = {"GRADER_VERSION", "GRADER_CHECKS"}


def _canonical(node, out):
    """Append node's tree to out as text that no Python version changes: each node's type
    and its fields that are set, a message's text as "S"."""
    if isinstance(node, list):
        out.append("[")
        for item in node:
            _canonical(item, out)
        out.append("]")
        return
    if not isinstance(node, ast.AST):            # a string escaped whole: repr() follows the Unicode tables
        out.append(json.dumps(node) if isinstance(node, str) else repr(node))
        return
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MESSAGES:
        out.append(f"message({node.func.id},{len(node.args)})")
        return
    out.append(type(node).__name__ + "(")
    for field in node._fields:
        value = getattr(node, field, None)
        if value is None or value == [] or field in ("kind", "type_comment"):
            continue
        out.append(field + "=")
        _canonical(value, out)
    out.append(")")


def _without_docstrings(tree):
    """tree without its docstrings and without the lines that name the version."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    if isinstance(tree, ast.Module):
        tree.body = [node for node in tree.body if not (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in NAMES_OF_THE_VERSION)]
    return tree


def fingerprint():
    """The sha256 of the checks' code (CHECKED), docstrings and messages' texts aside."""
    digest = hashlib.sha256()
    for name in CHECKED:
        with open(os.path.join(ROOT, "gqa_grader", *name.split("/")) + ".py", encoding="utf-8") as f:
            tree = _without_docstrings(ast.parse(f.read()))
        out = []
        _canonical(tree, out)
        digest.update(name.encode() + b"\0" + "".join(out).encode("utf-8") + b"\0")
    return digest.hexdigest()


@heavy
class GraderVersion(unittest.TestCase):
    """A class's grades are resumed, and compared between runs, by GRADER_VERSION: it must
    change whenever a check does."""

    def test_a_change_in_a_check_is_a_decision_about_the_version(self):
        from gqa_grader.verdict.grading import GRADER_CHECKS, GRADER_VERSION
        now = fingerprint()
        self.assertEqual(now, GRADER_CHECKS,
                         f"the checks' code (gqa_grader: {', '.join(CHECKED)}) changed since grader "
                         f"{GRADER_VERSION}'s: if what a case checks or how points count changed, raise "
                         "GRADER_VERSION (CONTRIBUTING.md, \"When GRADER_VERSION changes\"); either way, "
                         f'set GRADER_CHECKS = "{now}" (gqa_grader/verdict/grading.py)')

    def test_the_fingerprint_sees_a_check_and_not_a_docstring_or_a_message(self):
        source = ('GRADER_VERSION = "4.3"\nGRADER_CHECKS = "ab"\nCASES = 5\n'
                  'def f(x):\n    """Doc."""\n    return expect(x, _("case {c}"), rel=REL_TOL)\n')
        def canon(text):
            out = []
            _canonical(_without_docstrings(ast.parse(text)), out)
            return "".join(out)
        same = [source.replace("Doc.", "Another doc."), source.replace("case {c}", "the case {c}"),
                source.replace('"4.3"', '"4.4"').replace('"ab"', '"cd"')]       # the version's own lines
        changed = [source.replace("rel=REL_TOL", "rel=1e-8"), source.replace("return expect(x", "return expect(-x"),
                   source.replace("CASES = 5", "CASES = 6"), source.replace("GRADER_CHECKS =", "CHECKS =")]
        self.assertEqual({canon(s) for s in same}, {canon(source)})
        self.assertNotIn(canon(source), {canon(s) for s in changed})
        self.assertEqual(len({canon(s) for s in changed}), len(changed))


@heavy
class OneTolerance(unittest.TestCase):
    """Every check compares floats to compare.REL_TOL (or asks for no value at all: the
    shape alone), and the first line of a run prints that tolerance."""

    def test_no_check_names_a_tolerance_of_its_own(self):
        found = []
        folder = os.path.join(ROOT, "gqa_grader")
        paths = sorted(os.path.join(top, name) for top, _, names in os.walk(folder) for name in names)
        for path in paths:
            name = os.path.relpath(path, folder)
            if not name.endswith(".py") or name == os.path.join("expected", "compare.py"):
                continue
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                for keyword in getattr(node, "keywords", ()):
                    numbers = [n for n in ast.walk(keyword.value) if isinstance(n, ast.Constant)
                               and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)]
                    if keyword.arg in ("rel", "rel_tol", "abs_tol") and numbers:
                        found.append(f"{name}:{node.lineno}: {keyword.arg}={ast.unparse(keyword.value)}")
        self.assertEqual(found, [])

    def test_the_first_line_prints_the_tolerance_every_check_uses(self):
        from gqa_grader import cli
        from gqa_grader.expected import compare
        status, out, err = captured(cli.main, ["--steps", "1", "--cases", "0", "--lang", "en"])
        self.assertEqual(status, 0, err)
        self.assertIn(f"floats to rel {compare.REL_TOL:g}, abs {compare.ABS_TOL:g};", out.splitlines()[0])


# Modules that misbehave in kv_head: (name, the body's new line, the call's timeout, what
# the failure says).  Each hangs at kv_head's first call; only the first has a step after
# it (group_heads, whose calls need the timeout's room), so the others' loops burn 0.1 s.
MISBEHAVING = [
    ("an endless loop", "    while True:\n        pass\n", 0.3, "did not return within 0.3 s"),
    ("a loop that swallows every exception",
     "    while True:\n        try:\n            pass\n        except BaseException:\n            pass\n",
     0.1, "did not return within 0.1 s"),
    ("a long call in C", "    sum(range(10 ** 13))\n", 0.1, "did not return within 0.1 s"),
    ("sys.exit(0) in a function", "    import sys\n    sys.exit(0)\n", 0.3, "raised SystemExit: called sys.exit(0)"),
    ("os._exit(0) in a function", "    import os\n    os._exit(0)\n", 0.3,
     "the module ended its process (status 0)"),
]


@heavy
class Referee(unittest.TestCase):
    """Nothing a module does changes the verdict; a bad module costs at most a timeout."""

    EARLY = ("misbehaving", "reader_thread", "runs")

    @staticmethod
    def misbehaving():
        """Each misbehaving module graded, all at once (most of it is waiting out a timeout)."""
        return grade_all([(in_kv_head(body), {"only": ["kv_head", "group_heads"] if i == 0 else ["kv_head"],
                                              "timeout": timeout, "cases": 0})
                          for i, (_, body, timeout, _) in enumerate(MISBEHAVING)], at_once=len(MISBEHAVING))

    def test_misbehaving_modules_fail_with_their_reason_and_the_next_step_still_runs(self):
        # The next step runs in a fresh worker: shown once, after the endless loop.
        graded = early(self.misbehaving)
        for (name, body, _, says), results in zip(MISBEHAVING, graded):
            with self.subTest(module=name):
                self.assertEqual(results["kv_head"]["status"], "failed")
                self.assertIn(says, results["kv_head"]["message"])
        self.assertEqual(graded[0]["group_heads"]["status"], "passed")

    @staticmethod
    def reader_thread():
        """A hanging module graded the Windows way: with a reader thread, no select()."""
        from unittest import mock
        with mock.patch.object(process.os, "name", "nt"):
            return grade_source(in_kv_head("    import time\n    time.sleep(600)\n"),
                                only=["kv_head", "group_heads"], timeout=0.3)

    def test_the_reader_thread_used_where_select_cannot_read_pipes(self):
        # Windows has no select() on pipes: the grader reads the worker with a thread
        # there.  The same path, run here, still times out and still grades.
        graded = early(self.reader_thread)
        self.assertIn("did not return within 0.3 s", graded["kv_head"]["message"])
        self.assertEqual(graded["group_heads"]["status"], "passed")

    # Modules that patch what they can, print, or cannot be imported.
    CHEAT = mutate("_kv_head", "return query_head // group", "return query_head % g") + (
        "\nimport math, random, sys\nmath.isclose = lambda *a, **k: True\n"
        "random.Random.uniform = lambda *a: 0.0\n"
        "for m in list(sys.modules.values()):\n"
        "    if hasattr(m, 'grade'):\n        m.grade = lambda *a, **k: []\n")
    NOISY = in_kv_head("    import sys\n    print('{' * 1000)\n    sys.stdout.write('not json')\n"
                       "    sys.stdin.read()\n    import os\n    os.write(2, b'noise')\n")
    UNGRADABLE = (("def f(:\n", "syntax error, line 1"),
                  ("raise RuntimeError('boom')\n", "raised RuntimeError: boom"),
                  ("import grader\n", "imports the grader (grader.py or gqa_grader)"))

    @staticmethod
    def runs():
        """The command's runs of those modules (one, noisy, as a process of its own: what
        reaches the grader's own stdout and stderr)."""
        runs = {}
        with Module(Referee.CHEAT) as path:
            runs["cheat"] = run_main("--module", path, "--seed", "1", "--only", "kv_head,group_heads", "--json")
        with Module(Referee.NOISY) as path:
            noisy = run_grader("--module", path, "--seed", "1", "--only", "kv_head", "--json")
        runs["noisy"] = [noisy.returncode, noisy.stdout, noisy.stderr]
        for k, (source, _) in enumerate(Referee.UNGRADABLE):
            with Module(source, beside_grader=True) as path:
                runs[f"ungradable {k}"] = [run_main("--module", path), run_main("--module", path, "--json")]
        for path in ("missing.py", os.path.join(ROOT, "README.md")):
            runs[path] = run_main("--module", path)
        broken = mutate("repeat_kv", "    return _repeat_kv(kv, h)\n", "    return kv[99]\n")
        runs["broken"] = grade_source(broken, only=["repeat_kv"])
        wrong_type = mutate("valid_g", '    _check_int("valid_g", "h", h, low=1)\n',
                            '    _check_int("valid_g", "h", h, low=None)\n    if h < 1:\n'
                            '        raise IndexError(f"valid_g: h must be at least 1; got h={h}")\n')
        runs["wrong type"] = grade_source(wrong_type, only=["valid_g"])
        return runs

    def test_patching_the_graders_modules_changes_nothing(self):
        # A wrong module that patches math.isclose, random and the grader's own
        # functions (in its own process, where they are not the grader's).
        run = Run(*early(self.runs)["cheat"])
        self.assertEqual(run.returncode, 1)
        data = json.loads(run.stdout)
        self.assertEqual([s["status"] for s in data["steps"]], ["failed", "passed"])

    def test_printing_and_reading_stdin_do_not_reach_the_grader(self):
        run = Run(*early(self.runs)["noisy"])
        self.assertEqual(run.returncode, 0, run.stdout)
        self.assertEqual(json.loads(run.stdout)["passed"], 1)
        self.assertEqual(run.stderr, "")

    def test_modules_that_cannot_be_graded(self):
        runs = early(self.runs)
        for k, (source, says) in enumerate(self.UNGRADABLE):
            text, as_json = (Run(*run) for run in runs[f"ungradable {k}"])
            self.assertEqual((text.returncode, as_json.returncode), (2, 2))
            self.assertIn(says, text.stderr)
            self.assertNotIn("Traceback", text.stderr)
            self.assertIn(says, json.loads(as_json.stdout)["error"])
        for path in ("missing.py", os.path.join(ROOT, "README.md")):
            run = Run(*runs[path])
            self.assertEqual(run.returncode, 2)
            self.assertNotIn("Traceback", run.stderr)

    def test_an_exception_names_the_students_file_and_line(self):
        message = early(self.runs)["broken"]["repeat_kv"]["message"]
        self.assertIn("raised IndexError", message)
        self.assertRegex(message, r"at gqa.py, line \d+, in repeat_kv: return kv\[99\]")
        # A refusal of the wrong type, too: where the student's code raised it.
        message = early(self.runs)["wrong type"]["valid_g"]["message"]
        self.assertIn("raised IndexError: valid_g: h must be at least 1; got h=0, not GQAError", message)
        self.assertRegex(message, r"at gqa.py, line \d+, in valid_g: raise IndexError\(")


def load_tests(loader, tests, pattern):
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


if __name__ == "__main__":
    unittest.main()
