"""gqa_tools.report.reads and the key of section 8's record: what the training reads.

What the training reads is found in the code (the definitions reached from the experiment's
run()); it is checked here against what a small training calls as it runs (a profile of its
calls), and the record's key against edits: a docstring, a comment, a type hint or a function
the training never calls leaves the key as it is, and an edit of code the training runs, of
the recipe or of the Python family changes it."""

from __future__ import annotations

import os
import sys
import unittest

import gqa
from gqa_tools import uptraining as gqa_train
from gqa_tools.report import reads, record
from tests.helpers import heavy

# A small recipe that runs every part of the experiment (the equal-cache models, each g from
# scratch, Adam carried over), in this process.
SMALL = gqa_train.Recipe(heads=4, head_dim=2, d_model=4, d_ff=2, vocab=3, length=4, offsets=2, keys=3,
                         values=3, pairs=2, queries=1, batch=2, pretrain=3, budgets=(1, 2), held_out=6,
                         seed=0, seeds=1, same_cache=True, scratch=True, carried=True)
RECIPE = gqa_train.QUICK


def source(dotted):
    with open(reads._path(dotted), encoding="utf-8") as f:
        return f.read()


def key_with(dotted, old, new):
    """The record's key (3.12+'s) with one module's text edited: old, found once, becomes new."""
    text = source(dotted)
    assert text.count(old) == 1, (dotted, old)
    return record.training_key(RECIPE, "sumprod", {dotted: text.replace(old, new)})


class WhatTrainingReads(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.called = set()

        def profile(frame, event, arg):
            if event == "call":
                cls.called.add((os.path.abspath(frame.f_code.co_filename), frame.f_code.co_firstlineno,
                                frame.f_code.co_name))
        before = sys.getprofile()
        sys.setprofile(profile)
        try:
            gqa_train.run(SMALL)
        finally:
            sys.setprofile(before)
        cls.spans = reads.spans()

    def test_every_function_a_training_calls_is_read(self):
        # gqa.py's steps (through lab), their kernels and checks, the model, the tasks and the
        # seeds: each function called, a comprehension or a lambda inside one, lies in a
        # definition read.
        root = os.path.dirname(os.path.abspath(gqa.__file__))
        ours = sorted(c for c in self.called if c[0].startswith(root + os.sep) and os.path.isfile(c[0]))
        files = {os.path.relpath(c[0], root) for c in ours}
        self.assertLessEqual({"gqa.py", os.path.join("gqa_tools", "seeds.py"),
                              os.path.join("gqa_tools", "uptraining", "model.py")}, files)
        missed = [(os.path.relpath(path, root), line, name) for path, line, name in ours
                  if not any(first <= line <= last for first, last in self.spans.get(path, []))]
        self.assertEqual(missed, [])

    def test_what_training_never_calls_is_not_read(self):
        read = {(dotted, name) for dotted, stmt in reads.Reader().reached() for name in reads._bound(stmt)}
        for name in ("grouped_attention", "_softmax", "init_weights", "fold_weights", "Weights", "_dots"):
            self.assertIn(("gqa", name), read)
        for name in ("layer", "decode_step", "KVCache", "output_difference", "count_multiplies", "cache_table"):
            self.assertNotIn(("gqa", name), read)
        self.assertFalse({dotted for dotted, _ in read} & {"gqa_tools.report.record", "gqa_tools.uptraining.claims",
                                                          "gqa_tools.uptraining.sentences"})


@heavy
class Key(unittest.TestCase):

    def setUp(self):
        self.key = record.training_key(RECIPE, "sumprod")

    def test_a_docstring_a_comment_or_a_type_hint_keeps_the_key(self):
        for dotted, old, new in (
                ("gqa", '"""The lab\'s one softmax:', '"""The one softmax of the lab:'),
                ("gqa", "\ndef _softmax(", "\n# the softmax\ndef _softmax("),
                ("gqa", "def _softmax(q: Sequence, keys: Sequence, causal: bool) -> list:",
                 "def _softmax(q: Sequence, keys: Sequence, causal: bool) -> List[list]:"),
                ("gqa", "    positions = n * (n + 1) // 2 ", "    positions = (n * n + n) // 2 "),    # decode_traffic
                ("gqa", '"""gqa: grouped-query attention, counted by hand.', '"""gqa: grouped-query attention.'),
                ("gqa_tools.uptraining.model", '"""A new model; its K/V heads', '"""A new model: its K/V heads')):
            with self.subTest(edit=new):
                self.assertEqual(key_with(dotted, old, new), self.key)

    def test_an_edit_of_what_training_runs_changes_the_key(self):
        for dotted, old, new in (
                ("gqa", "        return [sum(map(mul, row, x)) for row in rows]",
                 "        return [sum(map(mul, x, row)) for row in rows]"),            # 3.9-3.11's kernel
                ("gqa", "MAX_ALLOCATION = 10 ** 8 ", "MAX_ALLOCATION = 10 ** 9 "),
                ("gqa", "        a = math.sqrt(3.0 / fan_in) ", "        a = math.sqrt(2.0 / fan_in) "),
                ("gqa_tools.seeds", 'return f"{stream}:{seed}"', 'return f"{stream}/{seed}"'),
                ("gqa_tools.uptraining.model", "total = math.fsum(ex)", "total = sum(ex)"),
                ("gqa_tools.uptraining.experiment", "from gqa_tools.uptraining.tasks import batches,",
                 "from gqa_tools.uptraining.tasks import draw as batches,")):
            with self.subTest(edit=new):
                self.assertNotEqual(key_with(dotted, old, new), self.key)

    def test_the_recipe_and_the_family_change_the_key(self):
        self.assertNotEqual(record.training_key(RECIPE, "sum"), self.key)
        self.assertNotEqual(record.training_key(RECIPE._replace(seeds=19), "sumprod"), self.key)
        self.assertEqual(record.training_key(RECIPE), record.training_key(RECIPE, record.family()))


if __name__ == "__main__":
    unittest.main()
