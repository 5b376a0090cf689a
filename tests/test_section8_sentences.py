"""Section 8's sentences say only what their verdicts say: each count of verdicts is of the budget
the sentence names, a count of holds says how many do not hold and how many are not resolved, and
each difference that has a verdict carries it.  The expected counts are taken from the verdicts
themselves (gqa_tools.uptraining.printing.verdicts) on report-training.json's result, not from the
sentences' code."""

from __future__ import annotations

import json
import os
import re
import unittest

from gqa_grader import i18n
from tests.helpers import ROOT

WORDS = ("holds", "does not hold", "not resolved")


def result_and_verdicts():
    from gqa_tools.uptraining.experiment import TASKS
    from gqa_tools.uptraining.printing import verdicts
    with open(os.path.join(ROOT, "report-training.json"), encoding="utf-8") as f:
        result = json.load(f)["sumprod"]["result"]
    return result, verdicts(result, TASKS)


def tally(decided, kind, steps=None):
    found = [d for d in decided if d.claim.kind == kind and (steps is None or d.claim.steps == steps)]
    return [len(found)] + [sum(d.verdict == w for d in found) for w in WORDS]


class Sentences(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        from gqa_tools.uptraining.sentences import summary
        i18n.use("en")
        cls.result, cls.decided = result_and_verdicts()
        cls.sentences = summary(cls.result, cls.decided)

    def sentence(self, start):
        found = [s for s in self.sentences if s.startswith(start)]
        self.assertEqual(len(found), 1, start)
        return found[0]

    def test_the_recovery_sentence_counts_the_verdicts_of_the_budget_it_names(self):
        budgets = self.result["recipe"]["budgets"]
        text = self.sentence(f"After {budgets[-1]} steps")
        m = re.search(r"of the (\d+) recovery verdicts after (\d+) steps, .*holds in (\d+), does not hold in (\d+) "
                      r"and is not resolved at these seeds in (\d+); of the (\d+) after (\d+) steps, it holds in "
                      r"(\d+), does not hold in (\d+) and is not resolved in (\d+)\.", text)
        self.assertIsNotNone(m, text)
        n = [int(x) for x in m.groups()]
        self.assertEqual(n[1], budgets[-1])
        self.assertEqual([n[0]] + n[2:5], tally(self.decided, "recovers", budgets[-1]))
        self.assertEqual(n[6], budgets[0])
        self.assertEqual([n[5]] + n[7:10], tally(self.decided, "recovers", budgets[0]))

    def test_a_count_of_holds_says_how_many_are_not_resolved(self):
        text = self.sentence("As averages")
        m = re.search(r"mean beats first holds in (\d+) of (\d+) verdicts, does not hold in (\d+) and is not resolved "
                      r"at these seeds in (\d+); first beats random holds in (\d+) of (\d+), does not hold in (\d+) "
                      r"and is not resolved in (\d+);", text)
        self.assertIsNotNone(m, text)
        n = [int(x) for x in m.groups()]
        self.assertEqual([n[1], n[0], n[2], n[3]], tally(self.decided, "mean beats first"))
        self.assertEqual([n[5], n[4], n[6], n[7]], tally(self.decided, "first beats random"))

    def test_each_difference_of_the_carried_adam_sentence_carries_its_verdict(self):
        text = self.sentence("The control itself changes")
        numbers = re.findall(r"([+-]\d\.\d{3})( \((holds|does not hold|not resolved)\))?", text)
        self.assertTrue(numbers, text)
        self.assertEqual([n for n, with_verdict, _ in numbers if not with_verdict], [], text)
        first, h = self.result["recipe"]["budgets"][0], self.result["recipe"]["heads"]
        expected = [d for d in self.decided if d.claim.steps == first and
                    (d.claim.kind == "restart" or (d.claim.kind == "control" and d.claim.g == h))]
        said = {(n, word) for n, _, word in numbers}
        for d in expected:
            mean = sum(d.claim.values) / len(d.claim.values)
            self.assertIn((f"{float(mean):+.3f}", d.verdict), said, d.claim)


if __name__ == "__main__":
    unittest.main()
