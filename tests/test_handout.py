"""The students' handout (python grader.py --handout DIR): the starter and a self-check
that holds no reference, no reference source and no solution body, and still tells a
right module from a wrong one on the public cases."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from gqa_grader import grading, selfcheck
from tests.helpers import heavy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def public(fn, owner):
    """A function the lab grades: public, or a public class's method."""
    return not (owner or fn).name.startswith("_") and (owner is None or not fn.name.startswith("_")
                                                       or fn.name in ("__init__", "__len__"))


@heavy
class Handout(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.handout = os.path.join(cls.dir, "handout")
        selfcheck.write_handout(cls.handout, only=STEPS)
        cls.texts = {}
        for folder, _, names in os.walk(cls.handout):
            for name in names:
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    cls.texts[os.path.relpath(os.path.join(folder, name), cls.handout)] = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def grade(self, module, *args):
        run = subprocess.run([sys.executable, os.path.join(self.handout, "grader.py"), "--json",
                              "--only", ",".join(STEPS), *args]
                             + (["--module", module] if module else []),
                             capture_output=True, text=True, timeout=120, cwd=self.handout)
        return run.returncode, json.loads(run.stdout)

    def test_it_holds_what_students_get_and_nothing_else(self):
        self.assertEqual(sorted(n for n in self.texts if not n.startswith("gqa_grader")),
                         ["README.md", "gqa.py", "grader.py"])
        self.assertNotIn(os.path.join("gqa_grader", "reference.py"), self.texts)
        self.assertIn(os.path.join("gqa_grader", "answers.json"), self.texts)

    def test_it_holds_no_reference_function_and_no_reference_source(self):
        reference = source_lines(os.path.join(ROOT, "gqa_grader", "reference.py"))
        reference -= source_lines(os.path.join(ROOT, "gqa_grader", "checks.py"))   # inputs drawn alike
        self.assertGreater(len(reference), 100)
        for name, text in self.texts.items():
            if name.endswith(".py"):
                with self.subTest(file=name):
                    defined = {n.name for n in ast.walk(ast.parse(text))
                               if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
                    self.assertEqual([d for d in defined if d.startswith("ref_") or d == "RefKVCache"], [])
                    self.assertEqual(sorted(line for line in reference if line in text), [])

    def test_it_holds_no_solution_body(self):
        solution = source_lines(os.path.join(ROOT, "gqa.py"), public)
        self.assertGreater(len(solution), 100)
        for name, text in self.texts.items():
            with self.subTest(file=name):
                self.assertEqual(sorted(line for line in solution if line in text), [])

    def test_it_fails_the_bare_starter_and_passes_the_shipped_lab(self):
        status, bare = self.grade(None)
        self.assertEqual((status, bare["passed"]), (1, 0))
        self.assertTrue(all(s["status"] == "not started" for s in bare["steps"]))
        status, shipped = self.grade(os.path.join(ROOT, "gqa.py"))
        self.assertEqual((status, shipped["passed"], shipped["failed"]), (0, len(STEPS), 0))
        for step in shipped["steps"]:               # every public case, none hidden
            self.assertEqual(step["hidden"], [0, 0])
            self.assertEqual(step["public"][0], step["public"][1])

    def test_a_wrong_module_fails_its_step_as_it_does_in_the_teachers_run(self):
        with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
            source = f.read()
        wrong = os.path.join(self.dir, "wrong.py")
        for name, old, new in (("kv_head", "return query_head // group", "return query_head % g"),
                               ("fold_kv_mean", "def _mean(vals: tuple, n: int) -> float:\n",
                                "def _mean(vals: tuple, n: int) -> float:\n    n = n + 1\n")):
            self.assertIn(old, source)
            with open(wrong, "w", encoding="utf-8") as f:
                f.write(source.replace(old, new, 1))
            with self.subTest(step=name):
                _, doc = self.grade(wrong)
                failed = {s["name"]: s for s in doc["steps"] if s["status"] != "passed"}
                self.assertIn(name, failed)
                self.assertNotIn("not a public case", failed[name]["message"])

    def test_a_handout_refuses_what_needs_the_reference(self):
        for args in (["--cases", "3"], ["--autograder", self.dir], ["--handout", self.dir]):
            with self.subTest(args=args):
                run = subprocess.run([sys.executable, os.path.join(self.handout, "grader.py"), *args],
                                     capture_output=True, text=True, timeout=60, cwd=self.handout)
                self.assertEqual(run.returncode, 2)
                self.assertIn("error:", run.stderr)


class PublicCases(unittest.TestCase):
    """Every run grades the public cases first, from the fixed seed, then hidden ones."""

    def test_public_cases_come_from_the_public_seed_and_hidden_ones_from_the_run(self):
        step = next(st for st in grading.STEPS if st.name == "kv_head")
        end = grading.public_end(step)
        self.assertEqual(end, step.systematic + grading.PUBLIC_CASES)
        self.assertEqual([grading.case_seed(step, k, 77) for k in (0, end - 1, end, end + 5)],
                         [grading.PUBLIC_SEED] * 2 + [77] * 2)


if __name__ == "__main__":
    unittest.main()
