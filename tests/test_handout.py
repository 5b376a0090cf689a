"""The students' handout (python grader.py --handout DIR): the starter and a self-check
that holds no reference, no reference source and no solution body, and still tells a
right module from a wrong one on the public cases; and the grader's runs on a starter,
whole, half done and stubbed (Starter)."""

from __future__ import annotations

import ast
import io
import json
import os
import shutil
import tempfile
import unittest

from gqa_grader.steps import checks, tracks
from gqa_grader import cli
from gqa_grader.verdict import grading, printing
from gqa_grader.teacher import handout, selfcheck
from gqa_grader.expected import answers, reference
from gqa_grader.verdict.results import StepResult
from tests.helpers import ROOT, early, heavy, run_grader, start_early
from tests.grader_support import SOURCE, Module, Run, grade_trusted, mutate, run_main

STEPS = ["valid_g", "kv_head", "fold_kv_mean", "single_head_attention", "count_multiplies",
         "KVCache", "decode_step"]


def source_lines(path, keep=lambda fn, owner: True):
    """The stripped lines of the bodies of path's functions (and methods) that
    keep(function, its class or None) picks, less their docstrings and the lines too
    short to say anything (a `return out`)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines, found = text.splitlines(), set()

    def body_of(fn):
        body = fn.body[1:] if ast.get_docstring(fn) else fn.body
        for part in body:
            if isinstance(part, (ast.FunctionDef, ast.ClassDef)):
                continue                                 # a nested one: walked on its own
            for line in lines[part.lineno - 1:part.end_lineno]:
                line = line.strip()
                if len(line) >= 30 and not line.startswith(("#", '"', "'")):
                    found.add(line)

    tree = ast.parse(text)
    for node in tree.body:
        owner, fns = (node, node.body) if isinstance(node, ast.ClassDef) else (None, [node])
        for fn in fns:
            if isinstance(fn, ast.FunctionDef) and keep(fn, owner):
                for inner in ast.walk(fn):
                    if isinstance(inner, ast.FunctionDef):
                        body_of(inner)
    return found


def load_tests(loader, tests, pattern):
    """The handout's runs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


def public(fn, owner):
    """A function the lab grades: public, or a public class's method."""
    return not (owner or fn).name.startswith("_") and (owner is None or not fn.name.startswith("_")
                                                       or fn.name in ("__init__", "__len__"))


# single_head_attention (step 7, in the track) calling grouped_attention (step 9, a stub of no track).
CALLS_A_STUB = """

def grouped_attention(q, k, v, *, causal=False):
    raise NotImplementedError("step 9: grouped_attention")


_single = single_head_attention


def single_head_attention(q, k, v, *, causal=False):
    grouped_attention([q], [k], [v], causal=causal)
    return _single(q, k, v, causal=causal)
"""


def grade_in(handout, module, *args, steps=",".join(STEPS)):
    """The handout's own grader on module (its starter when None): [exit status, document, stderr]."""
    run = run_grader("--json", "--only", steps, *args, *(["--module", module] if module else []),
                     grader=os.path.join(handout, "grader.py"), cwd=handout)
    return [run.returncode, json.loads(run.stdout), run.stderr]


def refused_in(handout, *args):
    """The handout's grader given what needs the reference: [exit status, stderr]."""
    run = run_grader(*args, grader=os.path.join(handout, "grader.py"), cwd=handout, timeout=60)
    return [run.returncode, run.stderr]


# The wrong modules: (the step that must fail, the function of gqa.py, its text, what it
# becomes, the misconception the handout must name or None).
WRONG = (("kv_head", "_kv_head", "return query_head // group", "return query_head % g", "strided"),
         ("fold_kv_mean", "_mean", "def _mean(vals: tuple, n: int) -> float:\n",
          "def _mean(vals: tuple, n: int) -> float:\n    n = n + 1\n", None))
# What it refuses (never drops in silence): (the arguments, what the refusal says); a case
# past a step's public ones has no answer here (--case 999 was a failed case).
REFUSED = ((["--cases", "3"], "--cases must be 0"), (["--autograder", "{dir}"], "needs the reference"),
           (["--handout", "{dir}"], "needs the reference"),
           (["--only", "kv_head", "--case", "999"], "--case 999: step 3, kv_head, has"))


@heavy
class Handout(unittest.TestCase):
    EARLY = ("made",)

    @staticmethod
    def made():
        """A handout written (its files' texts) and its grader's runs: on its starter, the
        shipped lab, each wrong module, and what it must refuse, two at a time."""
        from concurrent.futures import ThreadPoolExecutor
        folder = tempfile.mkdtemp()
        handout = os.path.join(folder, "handout")
        try:
            selfcheck.write_handout(handout, only=STEPS)
            texts = {}
            for top, _, names in os.walk(handout):
                for name in names:
                    if name.endswith(".mo"):                 # the compiled catalogs: their texts
                        with open(os.path.join(top, name), "rb") as f:
                            texts[os.path.relpath(os.path.join(top, name), handout)] = f.read().decode(
                                "utf-8", "replace")
                        continue
                    with open(os.path.join(top, name), encoding="utf-8") as f:
                        texts[os.path.relpath(os.path.join(top, name), handout)] = f.read()
            with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
                source = f.read()
            wrong = []
            for k, (_, where, old, new, _mistake) in enumerate(WRONG):
                wrong.append(os.path.join(folder, f"wrong{k}.py"))
                with open(wrong[-1], "w", encoding="utf-8") as f:
                    f.write(mutate(where, old, new, source))
            with ThreadPoolExecutor(2) as pool:
                graded = list(pool.map(lambda m: grade_in(handout, m), [None, os.path.join(ROOT, "gqa.py")] + wrong))
                refused = list(pool.map(lambda a: refused_in(handout, *[w.format(dir=folder) for w in a[0]]),
                                        REFUSED))
            robust = grade_in(handout, os.path.join(ROOT, "gqa.py"), steps="robustness")
            helped = run_grader("--help", grader=os.path.join(handout, "grader.py"), cwd=handout).stdout
            # Its cases' seed is the public one in every run: a --seed (GitHub Classroom's workflow
            # gives one) is said unused, where it was dropped in silence and --json showed a fresh one.
            seeded = grade_in(handout, os.path.join(ROOT, "gqa.py"), "--seed", "5", steps="valid_g")
            calls = os.path.join(folder, "calls_a_stub.py")             # a step of the track calls one of none
            with open(calls, "w", encoding="utf-8") as f:
                f.write(source + CALLS_A_STUB)
            stubbed = run_grader("--only", "single_head_attention", "--module", calls,
                                 grader=os.path.join(handout, "grader.py"), cwd=handout).stdout
            return {"texts": texts, "source": source, "bare": graded[0], "shipped": graded[1],
                    "wrong": graded[2:], "refused": refused, "robust": robust, "help": helped, "seeded": seeded,
                    "stubbed": stubbed}
        finally:
            shutil.rmtree(folder)

    @classmethod
    def setUpClass(cls):
        cls.runs = early(cls.made)
        cls.texts = cls.runs["texts"]

    def test_a_step_that_calls_a_stub_outside_the_track_is_told_to_do_without_it(self):
        # It said "needs step 9, grouped_attention: not started" and "next: step 7 (it needs step
        # 9 first)", a step the handout leaves a stub, which the self-check then refused to grade.
        said = self.runs["stubbed"]
        self.assertIn("calls step 9, grouped_attention, which your track leaves a stub: write it without that "
                      "call", said)
        self.assertIn("next: step 7, single_head_attention\n", said)
        self.assertIn("step  7  FAIL  single_head_attention", said)          # written: not "not started"
        self.assertNotIn("needs step 9", said)

    def test_its_robustness_check_passes_the_shipped_lab(self):
        # The extremes compare answers: the handout holds the public ones of its track's functions.
        status, doc, _err = self.runs["robust"]
        self.assertEqual(status, 0, doc)
        self.assertEqual([(r["name"], r["status"]) for r in doc["steps"]],
                         [("types", "passed"), ("refusals", "passed"), ("extremes", "passed")])
        self.assertTrue(all(r["cases"] > 0 for r in doc["steps"]))

    def test_it_holds_what_students_get_and_nothing_else(self):
        self.assertEqual(sorted(n for n in self.texts if not n.startswith(("gqa_grader", "gqa_sandbox",
                                                                          "gqa_tools"))),
                         ["README.md", "gqa.py", "grader.py"])
        self.assertEqual(sorted(n for n in self.texts if n.startswith("gqa_sandbox")),   # a sealed run's
                         [os.path.join("gqa_sandbox", n) for n in ("__init__.py", "enter.py")])  # namespaces
        self.assertNotIn(os.path.join("gqa_grader", "expected", "reference.py"), self.texts)
        self.assertIn(os.path.join("gqa_grader", "answers.json"), self.texts)
        # The tools of `python -m gqa tables` and `report`: the project's modules, less the
        # commands a handout does not offer (bench, config, uptrain), and nothing else.
        tools = sorted(os.path.relpath(os.path.join(top, name), ROOT)
                       for top, _, names in os.walk(os.path.join(ROOT, "gqa_tools"))
                       for name in names if name.endswith(".py"))
        left_out = [os.path.join("gqa_tools", *p.split("/"))
                    for p in ("bench.py", "sizer/command.py", "uptraining/command.py")]
        self.assertEqual(sorted(n for n in self.texts if n.startswith("gqa_tools")),
                         [t for t in tools if t not in left_out])

    def test_it_holds_no_reference_function_and_no_reference_source(self):
        reference = source_lines(os.path.join(ROOT, "gqa_grader", "expected", "reference.py"))
        for name in ("checking", "heads", "layer", "counting", "decoding",
                     "backward"):                                       # inputs drawn alike
            reference -= source_lines(os.path.join(ROOT, "gqa_grader", "steps", f"{name}.py"))
        reference -= source_lines(os.path.join(ROOT, "gqa.py"),                     # the steps given
                                  lambda fn, owner: (owner or fn).name not in STEPS)
        self.assertGreater(len(reference), 100)
        for name, text in self.texts.items():
            if name.endswith(".py"):
                with self.subTest(file=name):
                    defined = {n.name for n in ast.walk(ast.parse(text))
                               if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
                    self.assertEqual([d for d in defined if d.startswith("ref_") or d == "RefKVCache"], [])
                    self.assertEqual(sorted(line for line in reference if line in text), [])

    def test_it_holds_no_solution_body(self):
        # The track's steps are stubs; the steps outside it may be given (handout.given_steps).
        solution = source_lines(os.path.join(ROOT, "gqa.py"),
                                lambda fn, owner: public(fn, owner) and (owner or fn).name in STEPS)
        self.assertGreater(len(solution), 40)
        for name, text in self.texts.items():
            with self.subTest(file=name):
                self.assertEqual(sorted(line for line in solution if line in text), [])

    def test_it_fails_the_bare_starter_and_passes_the_shipped_lab(self):
        status, bare, _err = self.runs["bare"]
        self.assertEqual((status, bare["passed"]), (1, 0))
        self.assertTrue(all(s["status"] == "not started" for s in bare["steps"]))
        status, shipped, _err = self.runs["shipped"]
        self.assertEqual((status, shipped["passed"], shipped["failed"]), (0, len(STEPS), 0))
        self.assertEqual(shipped["seed"], 0)        # the public cases' seed, not a fresh one no case drew from
        for step in shipped["steps"]:               # every public case, none hidden
            self.assertEqual(step["hidden"], [0, 0])
            self.assertEqual(step["public"][0], step["public"][1])

    def test_a_wrong_module_fails_its_step_as_it_does_in_the_teachers_run(self):
        # ... and names the misconception as the teacher's run does: each wrong function's
        # answer recorded beside the reference's.
        for (name, _where, _old, _new, mistake), (_, doc, _err) in zip(WRONG, self.runs["wrong"]):
            with self.subTest(step=name):
                failed = {s["name"]: s for s in doc["steps"] if s["status"] != "passed"}
                self.assertIn(name, failed)
                self.assertNotIn("not a public case", failed[name]["message"])
                self.assertEqual(failed[name].get("mistake"), mistake, failed[name]["message"])

    def test_its_help_says_what_a_handout_takes_of_the_seed_and_the_cases(self):
        # It offered "a fresh seed" and "0 to 1,000" cases, and took neither.
        helped = " ".join(self.runs["help"].split())
        self.assertIn("--seed SEED not in a handout: its cases are the public ones, from seed 0 in every run", helped)
        self.assertIn("--cases K 0 in a handout: its hidden cases are your teacher's run's", helped)
        self.assertNotIn("a fresh one", helped)

    def test_a_seed_given_is_said_unused_and_its_cases_are_the_public_seeds(self):
        status, doc, err = self.runs["seeded"]
        self.assertEqual((status, doc["seed"], doc["passed"]), (0, 0, 1))
        self.assertIn("grader: note: this is a handout's self-check: its cases are the public ones, from seed 0", err)

    def test_a_handout_refuses_what_needs_the_reference(self):
        self.assertEqual(len(self.runs["refused"]), len(REFUSED))
        for (args, says), (status, stderr) in zip(REFUSED, self.runs["refused"]):
            with self.subTest(args=args):
                self.assertEqual(status, 2)
                self.assertIn("error:", stderr)
                self.assertIn(says, stderr)


class PublicCases(unittest.TestCase):
    """Every run grades the public cases first, from the fixed seed, then hidden ones."""

    def test_public_cases_come_from_the_public_seed_and_hidden_ones_from_the_run(self):
        step = next(st for st in grading.STEPS if st.name == "kv_head")
        end = grading.public_end(step)
        self.assertEqual(end, step.systematic + grading.PUBLIC_CASES)
        self.assertEqual([grading.case_seed(step, k, 77) for k in (0, end - 1, end, end + 5)],
                         [grading.PUBLIC_SEED] * 2 + [77] * 2)


class Keys(unittest.TestCase):
    """A call's key and recorded answer (gqa_grader.expected.answers): a row crosses at once,
    as its values one at a time would."""

    @staticmethod
    def one_at_a_time(x):
        """answers.encode as it was before rows crossed at once: every value on its own."""
        import math
        from array import array
        if x is None or isinstance(x, (bool, int, str)):
            return x
        if isinstance(x, float):
            return x if math.isfinite(x) else {"$float": repr(x)}
        if isinstance(x, list):
            return [Keys.one_at_a_time(v) for v in x]
        if isinstance(x, tuple):
            return {"$tuple": [Keys.one_at_a_time(v) for v in x]}
        if isinstance(x, array):
            return {"$array": x.typecode, "values": list(x)}
        return answers.encode(x)

    def test_a_row_is_keyed_and_recorded_as_its_values_one_at_a_time_would_be(self):
        import random
        rng = random.Random(5)
        leaves = [0.25, -0.0, float("nan"), float("inf"), -float("inf"), 3, 10 ** 400, True, None, "t"]

        def value(depth):
            if depth > 3 or rng.random() < 0.3:
                return rng.choice(leaves)
            row = [value(depth + 1) for _ in range(rng.randint(0, 4))]
            return tuple(row) if rng.random() < 0.2 else row
        for x in [value(0) for _ in range(400)] + [[1.5, 2.5], [1.5, float("nan")], [1, 2.5], [1, "a", None]]:
            ours = answers.encode(x)
            self.assertEqual(json.dumps(ours), json.dumps(self.one_at_a_time(x)))
            self.assertEqual(json.dumps(answers.decode(json.loads(json.dumps(ours)))),
                             json.dumps(answers.decode(json.loads(json.dumps(self.one_at_a_time(x))))))


@heavy
class Starter(unittest.TestCase):
    EARLY = ("runs",)

    STUBS = ('raise NotImplementedError("step 21: KVCache.__init__: not yet")', "raise NotImplementedError")

    @staticmethod
    def runs():
        """The command's runs on starters, whole and half done, and on stubs."""
        runs = {}
        with tempfile.TemporaryDirectory() as tmp:
            runs["written"] = run_main("--starter", tmp)
            runs["graded"] = run_main("--module", os.path.join(tmp, "gqa.py"), "--seed", "1")
            runs["again"] = run_main("--starter", tmp)
        # A bare NotImplementedError from a helper is no starter stub.
        helper = mutate("kv_head", "    return _kv_head(query_head, h, g)\n",
                        "    return _helper(query_head, h, g)\n\n\ndef _helper(i, h, g):\n"
                        "    raise NotImplementedError\n")
        with Module(helper) as path:
            runs["helper"] = run_main("--module", path, "--seed", "1", "--only", "3")
        # The first six steps filled in with gqa.py's own code (and its private helpers).
        real = ast.parse(SOURCE)
        starter = ast.parse(handout.make_starter(SOURCE))
        real_defs = {n.name: n for n in real.body if isinstance(n, ast.FunctionDef)}
        starter.body = [real_defs[n.name] if isinstance(n, ast.FunctionDef) and n.name in Starter.DONE else n
                        for n in starter.body]
        starter.body += [n for n in real.body if isinstance(n, ast.FunctionDef) and n.name.startswith("_")
                         or isinstance(n, ast.Assign) and all(isinstance(x, ast.Name) and x.id.startswith("_")
                                                              for x in n.targets)]
        with Module(ast.unparse(starter)) as path:
            runs["half"] = run_main("--module", path, "--seed", "1", "--cases", "1")
        # count_multiplies written, KVCache not: step 20 is not started because of step 21.
        runs["stubs"] = grade_trusted([
            (mutate("KVCache.__init__", 'self._g = _check_int("KVCache", "g", g, low=1, high=MAX_KV_HEADS)', stub),
             {"only": ["count_multiplies", "KVCache"], "cases": 0, "seed": 1}) for stub in Starter.STUBS])
        return runs

    def test_a_fresh_starter_is_not_started_one_line_per_step(self):
        runs = early(self.runs)
        written, graded, again = (Run(*runs[k]) for k in ("written", "graded", "again"))
        self.assertEqual(written.returncode, 0, written.stderr)
        self.assertEqual(graded.returncode, 1)
        lines = graded.stdout.splitlines()
        self.assertEqual(len(lines), 1 + len(checks.STEPS) + 2 + 3)    # two notes, no failure blocks
        self.assertRegex(graded.stdout, r"step 22  ----  decode_step +not started .*\n +needs step 21, "
                         r"KVCache: not started\n")
        self.assertRegex(graded.stdout, r"step  4  ----  group_heads +not started")
        self.assertRegex(graded.stdout, r"step 20  ----  count_multiplies +not started .*\n +step 20, "
                         r"count_multiplies, means changing steps 7, 9, 13 and 22 to count")
        self.assertEqual(lines[-3], f"0 of {len(checks.STEPS)} steps done; next: step 1, valid_g")
        self.assertEqual(lines[-1], f"0 passed, 0 failed, {len(checks.STEPS)} not started")
        self.assertEqual(again.returncode, 2)                       # never overwrites
        self.assertIn("exists already", again.stderr)

    def test_starter_keeps_signatures_and_docstrings_and_numbers_the_steps(self):
        starter = ast.parse(handout.make_starter(SOURCE))
        real = ast.parse(SOURCE)

        def public(tree):
            return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)
                    and not n.name.startswith("_") and n.name != "main"}
        self.assertEqual(set(public(starter)), set(public(real)))
        for name, fn in public(starter).items():
            self.assertEqual(ast.dump(fn.args), ast.dump(public(real)[name].args), name)
            self.assertEqual(ast.get_docstring(fn), ast.get_docstring(public(real)[name]), name)
            self.assertIn(f"step {checks.STEP_OF[name]}: {name}", ast.unparse(fn.body[-1]))

    def test_the_reference_reads_beside_the_lab(self):
        # One reference function per step, named after the lab's and in the lab's order.
        import inspect
        refs = sorted((inspect.getsourcelines(obj)[1], name) for name, obj in vars(reference).items()
                      if name.startswith("ref_") or name == "RefKVCache")
        self.assertEqual([name for _, name in refs],
                         ["RefKVCache" if st.name == "KVCache" else f"ref_{st.name}" for st in checks.STEPS])

    def test_one_step_numbering_in_gqa_py_and_the_grader(self):
        # The module docstring's tables and the section banners number the steps as the grader does.
        import re
        table = re.findall(r"^ +(\d+)  (\w+)", SOURCE.split('"""')[1], re.M)
        self.assertEqual([(int(num), name) for num, name in table],
                         [(st.number, st.name) for st in checks.STEPS])
        order = [n.name for n in ast.parse(SOURCE).body
                 if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in checks.STEP_OF]
        self.assertEqual([checks.STEP_OF[name] for name in order],
                         sorted(checks.STEP_OF[name] for name in order))
        for st in checks.STEPS:
            self.assertRegex(SOURCE, rf"# .*\b{st.name} \({st.number}\)|# Step {st.number}\. .*{st.name}"
                             rf"|# Step {st.number}, .*{st.name}")

    def test_a_step_that_needs_a_later_one_says_so(self):
        # count_multiplies written, KVCache not: step 20 is not started because of step 21.
        graded = early(self.runs)["stubs"]
        for stub, results in zip(self.STUBS, graded):
            out = io.StringIO()
            steps = [StepResult.from_json(r) for r in results.values()]
            printing.print_report(steps, cli.parse_args(["--cases", "0"]), out)
            text = out.getvalue() + printing.progress(steps)
            with self.subTest(stub=stub):
                self.assertRegex(text, r"step 20  ----  count_multiplies +not started .*\n"
                                 r" +needs step 21, KVCache: not started\n +step 20, count_multiplies, "
                                 r"means changing steps 7, 9, 13 and 22")
                self.assertIn("next: step 20, count_multiplies (it needs step 21, KVCache, first)", text)
                step = results["count_multiplies"]
                self.assertEqual((step["needs"], step["touches"]), ([{"step": 21, "name": "KVCache"}], [7, 9, 13, 22]))
                self.assertIn("needs step 21, KVCache: not started", step["notes"])

    def test_not_implemented_midway_says_what_and_where(self):
        # A bare NotImplementedError from a helper is no starter stub: the step shows it
        # with the student's file and line.
        run = Run(*early(self.runs)["helper"])
        self.assertRegex(run.stdout, r"step  3  ----  kv_head .*\n\s+not implemented yet: kv_head\(0, 1, 1\) "
                                     r"raised NotImplementedError\n\s+at gqa.py, line \d+, in kv_head: .*\n"
                                     r"\s+at gqa.py, line \d+, in _helper: raise NotImplementedError\n")

    DONE = ("valid_g", "method_name", "kv_head", "group_heads", "fold_kv_mean", "repeat_kv")

    def test_half_finished_starter_reports_progress(self):
        # The first six steps filled in with gqa.py's own code (and its private helpers).
        run = Run(*early(self.runs)["half"])
        self.assertEqual([line.split()[3] for line in run.stdout.splitlines() if " PASS " in line],
                         sorted(self.DONE, key=tracks.LESSON.index))
        self.assertIn(f"6 of {len(checks.STEPS)} steps done; next: step 7, single_head_attention", run.stdout)
        self.assertRegex(run.stdout, r"step  7  ----  single_head_attention +not started")


if __name__ == "__main__":
    unittest.main()
