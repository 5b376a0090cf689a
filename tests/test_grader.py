"""The grader, proven by mutants: each classic mistake must fail the check
that ought to catch it, and the real module must pass."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
import unittest

import grader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GQA = os.path.join(ROOT, "gqa.py")
with open(GQA, encoding="utf-8") as _f:
    SOURCE = _f.read()

WRONG_AXIS_ATTEND = '''def _attend(q, keys, v_cols, causal):
    scale = 1.0 / math.sqrt(len(q[0]))
    s = [[sum(map(mul, qi, kj)) * scale for kj in keys] for qi in q]
    p_cols = []
    for col in zip(*s):                       # softmax over the queries: the wrong axis
        top = max(col)
        e = [math.exp(x - top) for x in col]
        p_cols.append([x / sum(e) for x in e])
    return [[sum(map(mul, pi, col)) for col in v_cols] for pi in zip(*p_cols)]
'''


def replace_function(source, name, new):
    """Return source with the top-level function `name` replaced by new."""
    node = next(n for n in ast.parse(source).body
                if isinstance(n, ast.FunctionDef) and n.name == name)
    lines = source.splitlines(keepends=True)
    return "".join(lines[:node.lineno - 1]) + new + "".join(lines[node.end_lineno:])


# (name, the check that must fail, text in gqa.py, its replacement)
MUTANTS = [
    ("strided grouping (i % g)", "kv_head",
     "return query_head // group", "return query_head % g"),
    ("tile instead of repeat-interleave", "repeat_kv",
     "return [kv[j // group] for j in range(h)]", "return [kv[j % len(kv)] for j in range(h)]"),
    ("sum instead of mean in the fold", "fold_kv_mean",
     "[[sum(vals) / group for vals", "[[sum(vals) for vals"),
    ("keeping the first head instead of the mean", "fold_kv_mean",
     "members = kv[j * group:(j + 1) * group]", "members = [kv[j * group]] * group"),
    ("a missing 1/sqrt(d) scale", "single_head_attention",
     "scale, exp = 1.0 / math.sqrt(len(q[0])), math.exp", "scale, exp = 1.0, math.exp"),
    ("softmax over the wrong axis", "single_head_attention", "_attend", WRONG_AXIS_ATTEND),
    ("a causal mask off by one", "causal_attention",
     "seen = i + 1 + m - n if causal", "seen = min(m, i + 2 + m - n) if causal"),
    ("a cache counter using h instead of g", "tables",
     "elements = _cache_elements(layers, g, length, head_dim, batch)",
     "elements = _cache_elements(layers, h, length, head_dim, batch)"),
    ("a cache counter missing the factor 2 for K and V", "kv_cache_elements",
     "return 2 * layers * kv_heads * length * head_dim * batch",
     "return layers * kv_heads * length * head_dim * batch"),
    ("a multiply counter with g in the scores term", "attention_multiplies",
     "scores=h * pairs * d,", "scores=g * pairs * d,"),
    ("an MHA path that differs from g = h by rounding", "attention",
     "[[sum(vals) / group for vals", "[[sum(vals) * g / len(kv) for vals"),
    ("a decode step that forgets to append to the cache", "decode",
     "    cache._write(k, v)\n", "    cache._length += 1\n"),
    ("grouped attention reading head i % g", "grouped_attention",
     "k[i // group], v_cols[i // group]", "k[i % len(k)], v_cols[i % len(k)]"),
    ("decode traffic counting h cache heads", "decode_traffic",
     "cache_reads = 2 * g * d * positions * batch", "cache_reads = 2 * h * d * positions * batch"),
    ("the output projection tallied as q_proj", "count_multiplies",
     '_project(rows, o_cols, "o_proj")', '_project(rows, o_cols, "q_proj")'),
    ("a cache that counts only its keys", "decode",
     "for a in chain(self.k, self.v))", "for a in self.k)"),
]


def mutate(old, new):
    if old == "_attend":
        return replace_function(SOURCE, "_attend", new)
    if SOURCE.count(old) != 1:
        raise AssertionError(f"the mutant's text must stand once in gqa.py: {old!r}")
    return SOURCE.replace(old, new)


def grade_source(source, seed=12345, cases=10, only=None):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gqa.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        mod, why = grader.load_module(path)
        if mod is None:
            raise AssertionError(why)
        return {r["name"]: r for r in grader.grade(mod, "gqa.py", seed, cases, only)}


def run_grader(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "grader.py"), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


class Mutants(unittest.TestCase):

    def test_there_are_at_least_twelve(self):
        self.assertGreaterEqual(len(MUTANTS), 12)

    def test_every_mutant_fails_the_check_that_ought_to_catch_it(self):
        # Each mutant is graded by the one check that should catch it (the
        # whole grader on every mutant is five times slower and proves no more).
        for name, check, old, new in MUTANTS:
            with self.subTest(mutant=name):
                self.assertIn(check, grader.check_names())
                results = grade_source(mutate(old, new), only=[check])
                self.assertEqual(list(results), [check])
                self.assertFalse(results[check]["passed"], f"{name}: check {check} passed")
                self.assertTrue(results[check]["message"])

    def test_the_failing_check_is_named_in_the_output(self):
        # One mutant through the command line: the name, the case and the reproduce line.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(mutate(*MUTANTS[0][2:]))
            run = run_grader("--module", path, "--seed", "3")
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertRegex(run.stdout, r"FAIL  kv_head .*\n\s+case h=8, g=2")
        self.assertIn("expected: [0, 0, 0, 0, 1, 1, 1, 1]\n        got:      [0, 1, 0, 1, 0, 1, 0, 1]\n"
                      "        first difference at [1]: expected 0, got 1", run.stdout)
        self.assertIn(f"reproduce: python grader.py --module {path} --seed 3 --only kv_head", run.stdout)
        self.assertNotIn("Traceback", run.stdout + run.stderr)
        self.assertRegex(run.stdout.splitlines()[-1], r"^\d+ passed, [1-9]\d* failed(, \d+ skipped)?$")

    def test_the_real_module_passes_every_check(self):
        for seed in (0, 1, 2, 99, 2026):
            results = grade_source(SOURCE, seed=seed)
            self.assertEqual([n for n, r in results.items() if not r["passed"]], [], seed)
            self.assertEqual(list(results), grader.check_names())


class CommandLine(unittest.TestCase):

    def test_default_run_passes_and_prints_its_seed(self):
        run = run_grader()
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertRegex(run.stdout.splitlines()[0], r"^grading gqa.py with seed \d+ ")
        self.assertEqual(run.stdout.splitlines()[-1], f"{len(grader.CHECKS)} passed, 0 failed")

    def test_same_seed_same_cases(self):
        a, b = (run_grader("--seed", "5", "--json", "--cases", "4") for _ in range(2))
        self.assertEqual(json.loads(a.stdout), json.loads(b.stdout))

    def test_json(self):
        run = run_grader("--seed", "5", "--json", "--only", "kv_head,layer", "--cases", "3")
        self.assertEqual(run.returncode, 0)
        data = json.loads(run.stdout)
        self.assertEqual([c["name"] for c in data["checks"]], ["kv_head", "layer"])
        for c in data["checks"]:
            self.assertEqual({"name", "passed", "cases", "message", "seed"} - set(c), set())
            self.assertEqual((c["passed"], c["cases"], c["seed"]), (True, 3, 5))

    def test_list_quiet_and_usage_errors(self):
        listed = run_grader("--list")
        self.assertEqual([line.split()[0] for line in listed.stdout.splitlines()], grader.check_names())
        quiet = run_grader("-q", "--seed", "1", "--cases", "2")
        self.assertEqual(quiet.stdout.strip(), f"{len(grader.CHECKS)} passed, 0 failed")
        for bad in (["--only", "nope"], ["--cases", "0"], ["--seed", "x"]):
            run = run_grader(*bad)
            self.assertEqual(run.returncode, 2, bad)
            self.assertNotIn("Traceback", run.stderr)

    def test_a_module_that_cannot_be_imported(self):
        with tempfile.TemporaryDirectory() as tmp:
            for text, why in (("def f(:\n", "syntax error, line 1"),
                              ("raise RuntimeError('boom')\n", "raised RuntimeError: boom")):
                path = os.path.join(tmp, "gqa.py")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                run = run_grader("--module", path)
                self.assertEqual(run.returncode, 2)
                self.assertIn(why, run.stderr)
                self.assertNotIn("Traceback", run.stderr)
            run = run_grader("--module", os.path.join(tmp, "missing.py"))
            self.assertEqual(run.returncode, 2)
            self.assertIn("no such file", run.stderr)

    def test_missing_function_wrong_signature_and_exceptions_are_failed_checks(self):
        source = SOURCE.replace("def kv_head(query_head: int, h: int, g: int)",
                                "def kv_head(query_head: int, h: int)")
        source = replace_function(source, "repeat_kv", "def repeat_kv(kv, h):\n    return kv[99]\n")
        source = source.replace("def attention_multiplies(", "def attention_multiplies_(")
        results = grade_source(source)
        self.assertIn("kv_head has the wrong signature", results["kv_head"]["message"])
        self.assertIn("raised IndexError", results["repeat_kv"]["message"])
        self.assertIn("has no attention_multiplies", results["attention_multiplies"]["message"])
        self.assertTrue(results["single_head_attention"]["passed"])   # later checks still run


class Starter(unittest.TestCase):

    def test_starter_reports_every_step_as_not_implemented(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = run_grader("--starter", tmp)
            self.assertEqual(run.returncode, 0, run.stderr)
            path = os.path.join(tmp, "gqa.py")
            graded = run_grader("--module", path, "--seed", "1")
            again = run_grader("--starter", tmp)
        self.assertEqual(graded.returncode, 1)
        self.assertNotIn("Traceback", graded.stdout + graded.stderr)
        self.assertNotIn("PASS", graded.stdout)
        self.assertIn("not implemented yet: step 4: group_heads", graded.stdout)
        self.assertEqual(again.returncode, 2)                       # never overwrites
        self.assertIn("exists already", again.stderr)

    def test_starter_keeps_signatures_and_docstrings(self):
        starter = ast.parse(grader.make_starter(SOURCE))
        real = ast.parse(SOURCE)

        def public(tree):
            return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)
                    and not n.name.startswith("_") and n.name != "main"}
        self.assertEqual(set(public(starter)), set(public(real)))
        for name, fn in public(starter).items():
            self.assertEqual(ast.dump(fn.args), ast.dump(public(real)[name].args), name)
            self.assertEqual(ast.get_docstring(fn), ast.get_docstring(public(real)[name]), name)
            self.assertIsInstance(fn.body[-1], ast.Raise, name)

    def test_half_finished_starter_reports_progress(self):
        # Fill in the first steps with gqa.py's own code (and its private helpers).
        done = {"valid_g", "method_name", "group_heads", "kv_head", "fold_kv_mean", "repeat_kv"}
        real = ast.parse(SOURCE)
        starter = ast.parse(grader.make_starter(SOURCE))
        real_defs = {n.name: n for n in real.body if isinstance(n, ast.FunctionDef)}
        body = []
        for node in starter.body:
            if isinstance(node, ast.FunctionDef) and node.name in done:
                node = real_defs[node.name]
            body.append(node)
        helpers = [n for n in real.body if isinstance(n, ast.FunctionDef) and n.name.startswith("_")]
        starter.body = body + helpers
        results = grade_source(ast.unparse(starter))
        passed = [n for n, r in results.items() if r["passed"]]
        self.assertEqual(passed, ["group_heads", "kv_head", "fold_kv_mean", "repeat_kv"])
        self.assertIn("not implemented yet: step 7: single_head_attention",
                      results["single_head_attention"]["message"])


if __name__ == "__main__":
    unittest.main()
