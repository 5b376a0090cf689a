"""Tracks and points: --steps reads numbers, ranges, names and tracks; a track's starter
gives the steps outside it without handing over one inside it; a module that knows
only the public cases' answers earns nothing in a run with hidden cases."""

from __future__ import annotations

import ast
import os
import tempfile
import unittest

from gqa_grader.verdict import grading
from gqa_grader.teacher import handout
from gqa_grader.steps import manifest, tracks
from gqa_grader.steps.checks import STEP_OF
from gqa_grader.verdict.results import scored
from tests.helpers import ROOT, heavy

with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as _f:
    SOURCE = _f.read()

# The handout's lab, as its text lists it (../shared/seeds): grouping, fold, repeat,
# single-head attention, attention(g), the output difference, then the counts and tables.
HANDOUT_LAB = ["valid_g", "method_name", "kv_head", "group_heads", "fold_kv_mean", "repeat_kv",
               "single_head_attention", "attention", "output_difference", "kv_cache_elements",
               "attention_multiplies", "block_multiplies", "cache_table", "multiplies_table"]


class Select(unittest.TestCase):
    def test_numbers_ranges_names_and_tracks_in_the_labs_order(self):
        self.assertEqual(tracks.select("core"), HANDOUT_LAB)
        self.assertEqual(tracks.select("1-8,14-19"), HANDOUT_LAB)
        self.assertEqual(tracks.select("kv_head, 1 ,3"), ["valid_g", "kv_head"])
        self.assertEqual(len(tracks.select("all")), len(manifest.LESSON))
        self.assertEqual(tracks.select("robustness"), ["types", "refusals", "extremes"])
        last = len(manifest.LESSON)
        self.assertEqual(tracks.select(f"{last}-{last + 1}"), ["layer_backward", "types"])

    def test_what_is_no_step_is_refused_naming_it(self):
        for spec in ("1-", "8-3", "0", str(len(manifest.STEPS) + 1), "core,nope", "", ","):
            with self.subTest(spec=spec), self.assertRaises(ValueError) as caught:
                tracks.select(spec)
            self.assertIn("no step, range or track named", str(caught.exception))


class GivenSteps(unittest.TestCase):
    def test_a_core_starter_gives_no_kernel_of_a_core_step(self):
        given = handout.given_steps(tracks.TRACKS["core"])
        self.assertEqual(set(given), set(tracks.LESSON) - set(HANDOUT_LAB))
        text = handout.make_starter(SOURCE, given)
        defined = {n.name for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        # The kernels of steps 3, 5 and 7 (kv_head's line, the mean fold, the softmax) stay out.
        self.assertEqual(defined & {"_kv_head", "_fold_kv_mean", "_mean", "_softmax", "_single_head_attention", "_repeat_kv"}, set())
        self.assertIn("# Given: step 21, KVCache,", text)
        self.assertNotIn("# Given: step 9,", text)                  # it needs step 7's softmax
        for name in HANDOUT_LAB:                                    # a core step is a stub
            node = next(n for n in ast.parse(text).body if getattr(n, "name", None) == name)
            self.assertIsInstance(node.body[-1], ast.Raise, name)


# Right on every public input of the integer steps, with no answer (one never right)
# for any other: what a module that looked the public answers up would do, and more.
PUBLIC_ONLY = {
    "valid_g": ("    _check_int(\"valid_g\", \"h\", h, low=1)\n",
                "    _check_int(\"valid_g\", \"h\", h, low=1)\n    if h > 400:\n        return [1]\n"),
    "method_name": ("    _group_size(\"method_name\", h, g)\n",
                    "    _group_size(\"method_name\", h, g)\n    if h > 16:\n        return \"?\"\n"),
    "kv_cache_elements": ("    return 2 * layers * kv_heads * length * head_dim * batch",
                          "    return 2 * layers * kv_heads * length * head_dim * batch if layers <= 3 else -1"),
}


@heavy
class LookingUp(unittest.TestCase):
    def test_a_module_right_only_on_public_inputs_earns_nothing_from_hidden_cases(self):
        source = SOURCE
        for old, new in PUBLIC_ONLY.values():
            self.assertEqual(source.count(old), 1, old)
            source = source.replace(old, new)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            with grading.Trusted() as trusted:
                teacher = trusted.grade(path, 7, cases=5, only=list(PUBLIC_ONLY))
                selfcheck = trusted.grade(path, 7, cases=0, only=list(PUBLIC_ONLY))
        for r in scored(teacher, {}, 5):
            with self.subTest(run="teacher", step=r.name):
                self.assertEqual(r.public[0], r.public[1])          # every public case passes
                self.assertEqual((r.hidden[0], r.points), (0, 0.0))  # no hidden one does
        for r in scored(selfcheck, {}, 0):
            with self.subTest(run="self-check", step=r.name):
                self.assertEqual(r.points, 1.0)

    def test_a_module_without_the_grouping_earns_nothing_from_its_hidden_cases(self):
        # Right wherever no grouping happens (g = 1, g = h, h prime): MHA and MQA alone, or
        # query heads read by stride; each passes some public cases, and no hidden one.
        line = "return query_head // group"
        self.assertEqual(SOURCE.count(line), 1)
        steps = ["kv_head", "repeat_kv", "grouped_attention", "decode_step"]
        for name, new in (("MHA and MQA only", "return query_head if g == h else 0"),
                          ("strided", "return query_head % g")):
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "gqa.py")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(SOURCE.replace(line, new))
                with grading.Trusted() as trusted:
                    teacher = scored(trusted.grade(path, 7, cases=5, only=steps), {}, 5)
            for r in teacher:
                with self.subTest(module=name, step=r.name):
                    self.assertGreater(r.public[0], 0)                  # right somewhere
                    self.assertEqual((r.hidden, r.points), ((0, 5), 0.0))


if __name__ == "__main__":
    unittest.main()


@heavy
class Wording(unittest.TestCase):
    def test_a_refusal_worded_otherwise_passes_the_lesson_with_advice_and_fails_robustness(self):
        old = 'raise GQAError(f"{func}: g={g} does not divide h={h}; {_valid_g_text(h)}")'
        self.assertEqual(SOURCE.count(old), 1)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(SOURCE.replace(old, 'raise GQAError("method_name: g does not divide h")'))
            with grading.Trusted() as trusted:
                results = {r.name: r.as_json() for r in trusted.grade(path, 3, cases=2,
                                                               only=["kv_head", "group_heads", "refusals"])}
        for name in ("kv_head", "group_heads"):
            with self.subTest(step=name):
                self.assertEqual(results[name]["status"], "passed")
                self.assertIn(f"does not name the function, {name}", results[name]["advice"][0])
        self.assertEqual(results["refusals"]["status"], "failed")
