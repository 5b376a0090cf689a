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

from gqa_grader.language import i18n
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

    def test_every_difference_in_every_sentence_carries_its_verdict(self):
        # each signed difference of the plain summary is a claim's mean, followed by that claim's verdict
        said = {(f"{float(sum(d.claim.values) / len(d.claim.values)):+.3f}", d.verdict) for d in self.decided}
        for text in self.sentences:
            numbers = re.findall(r"([+-]\d\.\d{3})( \((holds|does not hold|not resolved)\))?", text)
            self.assertEqual([n for n, with_verdict, _ in numbers if not with_verdict], [], text)
            for n, _, word in numbers:
                self.assertIn((n, word), said, text)
        self.assertGreaterEqual(sum(len(re.findall(r"[+-]\d\.\d{3} \(", t)) for t in self.sentences), 20)


class Resolution(unittest.TestCase):
    """The rule names its test, the margin sentence gives what the seeds can resolve, and what
    docs/uptraining.md says of the record is the record's.  Shifts are checked with the exact
    p-value (sign_flip_p), a computation apart from the interval's."""

    @classmethod
    def setUpClass(cls):
        from gqa_tools.uptraining.sentences import margin, rule
        i18n.use("en")
        cls.result, cls.decided = result_and_verdicts()
        cls.rule, cls.margin = rule(cls.result, cls.decided), margin(cls.result, cls.decided)

    def test_the_rule_names_the_two_sided_exact_test_and_its_family(self):
        self.assertIn("decided by the exact two-sided paired test of its mean, the sign-flip test", self.rule)
        self.assertIn(f"each of the 2^{len(self.result['seeds'])} patterns of signs", self.rule)
        self.assertNotIn("one-sided", self.rule)
        self.assertIn(f"All {len(self.decided)} verdicts, the diagnostics (the control's own change, Adam carried "
                      f"over) with the main claims, are decided as one family", self.rule)
        # the family is every claim: Holm's first step at 0.05 / m over all of them
        self.assertAlmostEqual(max(d.level for d in self.decided), 1 - 0.05 / len(self.decided), places=12)

    def test_the_margin_sentence_gives_where_recovers_could_hold(self):
        from fractions import Fraction
        from gqa_tools.statistics import sign_flip_p
        self.assertIn("The margin of *recovers*, 0.02 (two answers in a hundred), is the lab's declared tolerance, "
                      "fixed in the code before any run", self.margin)
        last = self.result["recipe"]["budgets"][-1]
        found = re.findall(r"(-?\+?\d\.\d{3,6}) on offsets and (-?\+?\d\.\d{3,6}) on recall at g = (\d)", self.margin)
        recovers = {(d.claim.task, d.claim.g): d for d in self.decided
                    if d.claim.kind == "recovers" and d.claim.steps == last}
        self.assertEqual(sorted(int(g) for _, _, g in found), sorted({g for _, g in recovers}))
        for offsets, recall, g in found:
            for task, said in (("offsets", offsets), ("recall", recall)):
                d = recovers[(task, int(g))]
                # the differences moved as one, their mean just under or over the threshold said
                for step, holds in ((Fraction(-2, 1000), True), (Fraction(2, 1000), False)):
                    move = Fraction(said) + step - d.mean
                    moved = [v + move for v in d.claim.values]
                    below = sum(moved) / len(moved) < d.claim.bar
                    p = sign_flip_p(moved, d.claim.bar)
                    self.assertEqual(p < 1 - d.level and below, holds, (task, g, said, step))

    def test_every_resolvable_gap_is_where_a_moved_run_resolves(self):
        from fractions import Fraction
        from gqa_tools.statistics import sign_flip_p
        for d in self.decided[::3]:                 # a third of them: each is an exact count of 2^20 patterns
            if d.resolves is None:
                continue
            side = 1 if d.mean >= d.claim.bar else -1
            for step, resolved in ((Fraction(1, 1000), True), (-Fraction(1, 1000), False)):
                move = d.claim.bar + side * (d.resolves + step) - d.mean
                p = sign_flip_p([v + move for v in d.claim.values], d.claim.bar)
                self.assertEqual(p < 1 - d.level, resolved, (d.claim, step))

    def test_what_the_docs_say_of_the_record_is_the_records(self):
        from gqa_tools.statistics import holm, interval, p_value
        with open(os.path.join(ROOT, "docs", "uptraining.md"), encoding="utf-8") as f:
            page = " ".join(f.read().split())
        # the skewness of every claim's differences, written out
        skews = []
        for d in self.decided:
            v = [float(x) for x in d.claim.values]
            m = sum(v) / len(v)
            m2, m3 = (sum((x - m) ** k for x in v) / len(v) for k in (2, 3))
            skews.append(m3 / m2 ** 1.5 if m2 else 0.0)
        self.assertIn(f"their skewness (the third central moment over the second's 1.5th power) runs from "
                      f"−{-min(skews):.2f} to +{max(skews):.2f}, {sum(abs(x) > 1 for x in skews)} of the "
                      f"{len(skews)} beyond ±1", page)
        # Student's paired t-test with the same Holm family: the verdicts it leaves unresolved that the exact test
        # resolves, and those it resolves that the exact test does not
        ts = [p_value(interval(d.claim.values), float(d.claim.bar)) for d in self.decided]
        t_resolved = [rejected for rejected, _ in holm(ts)]
        more = sum(d.verdict != "not resolved" and not t for d, t in zip(self.decided, t_resolved))
        fewer = sum(d.verdict == "not resolved" and t for d, t in zip(self.decided, t_resolved))
        self.assertIn(f"There the t-test, with the same Holm family, leaves {more} claims unresolved that the exact "
                      f"test resolves, and resolves {'none' if not fewer else fewer} that it does not", page)
        last = self.result["recipe"]["budgets"][-1]
        gaps = {d.claim.task: f"{float(d.resolves):.3f}" for d in self.decided
                if d.claim.kind == "recovers" and d.claim.g == 2 and d.claim.steps == last}
        self.assertIn(f"quick recipe it is {gaps['offsets']} on offsets and {gaps['recall']} on recall", page)


if __name__ == "__main__":
    unittest.main()
