"""The lab's steps in one place (gqa_grader/steps/manifest.py): every check registered
against it at its place, the parts of robustness after the lesson, what each part asks
stated beside the check it belongs to, and no second list of the steps anywhere."""

from __future__ import annotations

import ast
import inspect
import os
import unittest

import gqa
from gqa_grader.steps import checking, checks, manifest, robustness, tracks
from tests.helpers import ROOT, heavy


class OnePlace(unittest.TestCase):

    def test_every_step_is_checked_at_its_place_by_its_parts_module(self):
        self.assertEqual([st.name for st in tracks.ALL_STEPS], [entry.name for entry in manifest.STEPS])
        self.assertEqual([st.number for st in tracks.ALL_STEPS], list(range(1, len(manifest.STEPS) + 1)))
        self.assertEqual([m.__name__.rsplit(".", 1)[1] for m in checks.MODULES[1:]], list(manifest.PARTS))
        for module in checks.MODULES[1:]:
            part = module.__name__.rsplit(".", 1)[1]
            with self.subTest(part=part):
                self.assertEqual([st.name for st in module.STEPS],
                                 [entry.name for entry in manifest.LESSON if entry.part == part])
        self.assertEqual({entry.part for entry in manifest.STEPS[len(manifest.LESSON):]}, {"robustness"})

    def test_a_check_for_a_step_the_manifest_does_not_have_is_refused(self):
        for name, part in (("softmax", "heads"), ("layer", "heads"), ("types", "robustness")):
            with self.subTest(name=name, part=part), self.assertRaisesRegex(LookupError, f"no step '{name}'"):
                checking.step_into([], part)(name, 1)

    def test_the_core_track_is_the_rows_that_say_why(self):
        self.assertEqual(tracks.TRACKS["core"], [e.name for e in manifest.LESSON if e.core])
        self.assertTrue(all(e.core == "" for e in manifest.LESSON if e.name not in tracks.TRACKS["core"]))


class WhatRobustnessAsks(unittest.TestCase):
    """Each part's cases are the lesson steps whose module states what it asks, in the
    lab's order."""

    def test_types_are_asked_of_every_function_that_takes_an_argument(self):
        # From gqa.py's own signatures: a function (a class: its constructor) with a parameter.
        def takes(name):
            fn = getattr(gqa, name)
            return bool(inspect.signature(fn.__init__ if inspect.isclass(fn) else fn).parameters.keys()
                        - {"self"})
        types = next(p for p in robustness.PARTS if p.name == "types")
        self.assertEqual(list(types.subjects), [e.name for e in manifest.LESSON if takes(e.name)])

    def test_each_part_asks_in_the_labs_order(self):
        order = [e.name for e in manifest.LESSON]
        for part in robustness.PARTS:
            with self.subTest(part=part.name):
                self.assertEqual(list(part.subjects), sorted(part.subjects, key=order.index))
                self.assertGreater(len(part.subjects), 5)


def _line(path, text):
    """The line of path (from the project's root) that starts with text."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return next(i for i, line in enumerate(f, 1) if line.startswith(text))


KNOWN = {("exchange.py", _line("gqa_grader/running/exchange.py", "PARAMS = {")),
         ("recipe.py", _line("gqa_tools/uptraining/recipe.py", "NEEDS = ("))}


@heavy
class NoSecondList(unittest.TestCase):

    def test_no_module_writes_out_the_steps_again(self):
        # A list, tuple, set or dict literal naming five steps or more is a copy of the
        # manifest (the manifest's own rows are calls, one a step), but the lab's
        # parameter names by function (exchange.PARAMS: how a shown call names its lists)
        # and the steps training calls (uptraining.recipe.NEEDS).
        names = {e.name for e in manifest.STEPS}
        found = []
        for package in ("gqa_grader", "gqa_tools"):
            for top, _dirs, files in os.walk(os.path.join(ROOT, package)):
                for file in files:
                    if not file.endswith(".py"):
                        continue
                    path = os.path.join(top, file)
                    with open(path, encoding="utf-8") as f:
                        tree = ast.parse(f.read())
                    for node in ast.walk(tree):
                        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
                        if not isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)) or not items:
                            continue
                        named = [n.value for n in items if isinstance(n, ast.Constant) and n.value in names]
                        if len(named) >= 5 and (file, node.lineno) not in KNOWN:
                            found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}")
        self.assertEqual(found, [])


if __name__ == "__main__":
    unittest.main()
