"""The statistics of the uptraining report (gqa_tools/statistics.py, and the claims
section 8 makes from them): t quantiles, Wilson intervals and the sign-flip test against
values derived another way (by hand, by Simpson's rule, by listing every sign pattern);
the examples of gqa_tools.statistics' docstring run too."""

from __future__ import annotations

import doctest
import itertools
import math
import random
import statistics
import unittest
from fractions import Fraction

from gqa_tools import statistics as gqa_statistics
from gqa_tools import uptraining as gqa_train
from gqa_tools.uptraining import claims
from gqa_tools.uptraining import sentences as gqa_sentences


Z = statistics.NormalDist().inv_cdf(0.975)


def t_by_hand(p, df):
    """Student's t quantiles in closed form: df = 1 (Cauchy), 2 and 4."""
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    a = 4 * p * (1 - p)                                  # df = 4
    q = math.cos(math.acos(math.sqrt(a)) / 3) / math.sqrt(a)
    return math.copysign(2 * math.sqrt(q - 1), p - 0.5)


def simpson(t, df, steps=2000):
    """The t density's integral from 0 to t, by Simpson's rule: P(0 < T < t)."""
    h = t / steps
    return h / 3 * sum((1 if i in (0, steps) else 4 if i % 2 else 2) * t_density(i * h, df)
                       for i in range(steps + 1))


def t_density(t, df):
    return math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi) \
        * (1 + t * t / df) ** (-(df + 1) / 2)


class by_patterns:
    """Exact values' sign patterns, all 2^K of them, listed one by one: the sign-flip test and its
    interval as their definitions say, for a few seeds."""

    def __init__(self, values):
        self.values = list(values)
        self.patterns = [(sum(s * v for s, v in zip(signs, self.values)), sum(signs))
                         for signs in itertools.product((1, -1), repeat=len(self.values))]

    def p(self, bar):
        """The share of patterns whose sum of signed (value - bar) is at least as far from 0 as the measured."""
        measured = abs(sum(self.values) - len(self.values) * bar)
        return Fraction(sum(abs(a - b * bar) >= measured for a, b in self.patterns), len(self.patterns))

    def interval(self, alpha):
        """The bars with p >= alpha, as (lowest, highest); None where bars beyond every mean pass.
        p changes only where a subset's mean crosses the bar, so the subset means and the points
        between and beyond them are every case."""
        means = sorted({Fraction(sum(c), len(c)) for r in range(1, len(self.values) + 1)
                        for c in itertools.combinations(self.values, r)})
        points = [means[0] - 1] + means + [(x + y) / 2 for x, y in zip(means, means[1:])] + [means[-1] + 1]
        kept = sorted(x for x in points if self.p(x) >= Fraction(alpha))
        return (None if kept[0] < means[0] else kept[0], None if kept[-1] > means[-1] else kept[-1])


class Statistics(unittest.TestCase):

    def test_t_quantiles_against_closed_forms(self):
        for df in (1, 2, 4):
            for p in (0.6, 0.9, 0.975, 0.995):
                want = t_by_hand(p, df)
                self.assertAlmostEqual(gqa_statistics.t_quantile(p, df), want, delta=1e-9 * want, msg=(p, df))

    def test_t_cdf_against_the_integral_of_its_density(self):
        for df in (3, 7, 30):
            for t in (0.5, 2.0):
                steps = 2000                                  # Simpson's rule from 0 to t
                h = t / steps
                area = h / 3 * sum((1 if i in (0, steps) else 4 if i % 2 else 2) * t_density(i * h, df)
                                   for i in range(steps + 1))
                self.assertAlmostEqual(gqa_statistics.t_cdf(t, df), 0.5 + area, places=10, msg=(df, t))

    def test_t_quantiles_fall_towards_the_normal_one(self):
        qs = [gqa_statistics.t_quantile(0.975, df) for df in range(1, 101)]
        self.assertTrue(all(a > b for a, b in zip(qs, qs[1:])))
        self.assertGreater(qs[-1], Z)
        self.assertLess(qs[-1] - Z, 0.03)

    def test_wilson_ends_solve_its_equation(self):
        # The Wilson interval is the p with |k/n - p| = z sqrt(p (1 - p) / n).
        for k, n in ((0, 20), (3, 20), (13, 20), (20, 20), (7, 9)):
            for end in gqa_statistics.wilson(k, n):
                residual = (k / n - end) ** 2 - Z * Z * end * (1 - end) / n
                self.assertAlmostEqual(residual, 0.0, places=12, msg=(k, n, end))
        self.assertAlmostEqual(gqa_statistics.wilson(0, 20)[0], 0.0, places=12)
        self.assertEqual(gqa_statistics.wilson(20, 20)[1], 1.0)

    def test_mean_sd_and_the_t_interval_from_the_counts(self):
        s = gqa_train.stats([3, 5, 8], 10)
        self.assertEqual(s.mean, 16 / 30)
        self.assertAlmostEqual(s.sd, statistics.stdev([0.3, 0.5, 0.8]), places=15)
        half = t_by_hand(0.975, 2) * statistics.stdev([0.3, 0.5, 0.8]) / math.sqrt(3)    # 3 seeds: df 2
        self.assertAlmostEqual(s.low, max(0.0, 16 / 30 - half), places=9)     # an accuracy: clipped
        wide = gqa_statistics.interval([Fraction(3, 10), Fraction(5, 10), Fraction(8, 10)])
        self.assertAlmostEqual(wide.low, 16 / 30 - half, places=9)
        self.assertAlmostEqual(s.high, min(1.0, 16 / 30 + half), places=9)
        self.assertEqual(gqa_train.spread_text(s), f"0.533 ± 0.252 [{s.low:.3f}, {s.high:.3f}]")
        self.assertEqual(gqa_train.stats([7], 10), (0.7, 0.0, 0.7, 0.7, 1))
        self.assertEqual(gqa_train.stats([10, 10, 9], 10).high, 1.0)            # an accuracy: clipped

    def fake(self, pre, mean, first, random_, control=None, same=((9, 9), (5, 5), (4, 9))):
        """A result of one task and g = 1, one budget (5 % of 100 steps), given each seed's counts of 100."""
        ups = []
        for how, counts in (("mean", mean), ("first", first), ("random", random_)):
            ups += [dict(g=1, conversion=how, steps=0, correct=[10] * len(pre)),
                    dict(g=1, conversion=how, steps=5, correct=list(counts))]
        rows = [dict(model=name, cache_per_token=8, correct=list(c))
                for name, c in zip(("MQA", "one head", "narrow"), same)]
        t = dict(answers=100, pretrained=dict(correct=list(pre)), uptrain=ups, same_cache=rows,
                 control=[dict(steps=5, correct=list(control or pre))])
        return dict(recipe=dict(pretrain=100, budgets=[5], heads=2), seeds=list(range(len(pre))),
                    tasks={"recall": t})

    def verdict_by_hand(self, k, n, bar):
        # Wilson's interval, written out: centre and half-width.
        p = k / n
        centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
        half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
        return "holds" if centre - half > bar else "does not hold" if centre + half < bar else "not resolved"

    def test_the_mean_and_sd_are_the_exact_values_own(self):
        # interval() sums integers over the values' common denominator: its mean and sd are those
        # of the exact values summed as Fractions, one by one (and ints, and one value alone).
        rng = random.Random("exact sums")
        for _ in range(300):
            k, n = rng.randrange(1, 25), rng.choice((3, 7, 100, 128, 640))
            values = [Fraction(rng.randrange(-n, n + 1), n) if rng.random() < 0.9 else rng.randrange(-2, 3)
                      for _ in range(k)]
            mean = sum(values, Fraction(0)) / k
            var = sum((v - mean) ** 2 for v in values) / (k - 1) if k > 1 else Fraction(0)
            got = gqa_statistics.interval(values)
            self.assertEqual((got.mean, got.sd, got.seeds), (float(mean), math.sqrt(var), k), values)

    def test_p_values_against_the_t_table_and_the_integral_of_the_density(self):
        def p_of(t, df):                         # a t over df + 1 seeds: mean t, se 1
            return gqa_statistics.p_value(gqa_statistics.Stats(t, math.sqrt(df + 1), 0, 0, df + 1), 0.0)
        # two-sided 5 % and 1 % points of printed t-tables
        for df, t, p in ((19, 2.093024, 0.05), (9, 3.249836, 0.01), (4, 2.776445, 0.05), (1, 12.706205, 0.05)):
            self.assertAlmostEqual(p_of(t, df), p, delta=2e-7, msg=(df, t))
            self.assertAlmostEqual(p_of(-t, df), p, delta=2e-7, msg=(df, -t))
        for df in (3, 7):
            for t in (0.5, 2.0):
                self.assertAlmostEqual(p_of(t, df), 1 - 2 * simpson(t, df), places=9, msg=(df, t))
        self.assertAlmostEqual(p_of(1.0, 1), 0.5, places=14)          # Cauchy: P(|T| > 1) = 1/2

    def test_holm_by_hand(self):
        # 0.005 < 0.05/4, 0.01 < 0.05/3, then 0.03 > 0.05/2: stop; 0.04 is never reached.
        self.assertEqual(gqa_statistics.holm([0.01, 0.04, 0.03, 0.005]),
                         [(True, 0.05 / 3), (False, 0.05 / 2), (False, 0.05 / 2), (True, 0.05 / 4)])
        self.assertEqual(gqa_statistics.holm([0.04, 0.001, 0.02]),
                         [(True, 0.05), (True, 0.05 / 3), (True, 0.05 / 2)])
        self.assertEqual(gqa_statistics.holm([0.03, 0.03]), [(False, 0.025), (False, 0.025)])
        rng = random.Random("holm")
        for _ in range(200):                     # never less than Bonferroni, never more than uncorrected
            ps = [rng.random() ** 3 for _ in range(rng.randrange(1, 12))]
            for p, (rejected, level) in zip(ps, gqa_statistics.holm(ps)):
                self.assertTrue(rejected or p >= 0.05 / len(ps))
                self.assertFalse(rejected and p >= 0.05)
                self.assertEqual(rejected, p < level)

    def test_every_verdict_is_holms_on_the_exact_test_and_follows_from_its_interval(self):
        # 8 seeds: 256 sign patterns, each counted here (by_patterns), against the claims as written out
        pre, mean = [100] * 8, [100, 99, 100, 99, 100, 99, 100, 99]
        first, random_ = [60, 70, 65, 62, 68, 61, 66, 64], [20, 25, 22, 21, 30, 24, 23, 26]
        result = self.fake(pre, mean, first, random_, same=())
        claims_ = [("drops", [p - 10 for p in pre], 0, True),
                   ("recovers", [p - m for p, m in zip(pre, mean)], Fraction(1, 50), False),
                   ("mean beats first", [m - f for m, f in zip(mean, first)], 0, True),
                   ("first beats random", [f - r for f, r in zip(first, random_)], 0, True),
                   ("control", [0] * 8, 0, True)]
        exact = [by_patterns([Fraction(d, 100) for d in diffs]) for _, diffs, _, _ in claims_]
        ps = [e.p(bar) for e, (_, _, bar, _) in zip(exact, claims_)]
        self.assertEqual(ps, [Fraction(2, 256)] * 4 + [1])
        order = sorted(range(5), key=lambda i: ps[i])
        levels, stopped = {}, None               # Holm, written out
        for rank, i in enumerate(order):
            alpha = stopped or 0.05 / (5 - rank)
            if stopped is None and ps[i] >= alpha:
                stopped = alpha
            levels[i] = alpha
        decided = gqa_train.verdicts(result, ["recall"])
        self.assertEqual([d.claim.kind for d in decided], [c[0] for c in claims_])
        for i, (d, e, (kind, diffs, bar, above)) in enumerate(zip(decided, exact, claims_)):
            self.assertEqual(d.p, ps[i], kind)
            self.assertAlmostEqual(d.level, 1 - levels[i], places=12, msg=kind)
            low, high = e.interval(levels[i])
            self.assertEqual((d.low, d.high), (low, high), kind)
            low, high = -1 if low is None else low, 1 if high is None else high
            side = "holds" if (low > bar if above else high < bar) else \
                "does not hold" if (high < bar if above else low > bar) else "not resolved"
            self.assertEqual(d.verdict, side, kind)
        self.assertEqual([d.verdict for d in decided], ["holds"] * 4 + ["not resolved"])

    def test_a_result_is_decided_once_and_anew_when_a_number_changes(self):
        from unittest import mock
        from gqa_tools.uptraining import claims
        pre, mean = [100, 98, 100, 97, 100, 99], [99, 99, 97, 99, 100, 96]
        result = self.fake(pre, mean, [60, 70, 65, 62, 68, 61], [20, 25, 22, 21, 30, 24], same=())
        intervals = []

        def counted(values, level):
            intervals.append(list(values))
            return gqa_statistics.sign_flip_interval(values, level)
        with mock.patch.object(claims, "sign_flip_interval", counted):
            first = gqa_train.verdicts(result, ["recall"])
            once = len(intervals)
            again = gqa_train.verdicts(dict(result), ["recall"])         # the report's section 9 asks again
            self.assertEqual(len(intervals), once)
            self.assertEqual(again, first)
            result["tasks"]["recall"]["pretrained"]["correct"][0] = 90        # one seed's count changed
            changed = gqa_train.verdicts(result, ["recall"])
        self.assertEqual(len(intervals), 2 * once)
        self.assertEqual(intervals[once:][0], [Fraction(90 - 10, 100)] + [Fraction(p - 10, 100) for p in pre[1:]])
        self.assertNotEqual(changed[0].stats.mean, first[0].stats.mean)

    def test_the_exact_p_value_counts_every_sign_pattern(self):
        rng = random.Random("sign flips")
        for _ in range(50):
            k, n = rng.randrange(1, 10), rng.choice((7, 10, 64, 640))
            values = [Fraction(rng.randrange(-n, n + 1) if rng.random() < 0.8 else rng.choice((0, 1, -1)), n)
                      for _ in range(k)]
            bar = rng.choice((Fraction(0), Fraction(1, 50), Fraction(rng.randrange(-n, n), n)))
            self.assertEqual(gqa_statistics.sign_flip_p(values, bar), by_patterns(values).p(bar), (values, bar))
        # 20 seeds all above the bar: only the measured pattern and its mirror are as far out
        self.assertEqual(gqa_statistics.sign_flip_p([Fraction(i + 1, 100) for i in range(20)], Fraction(0)),
                         Fraction(2, 2 ** 20))

    def test_the_exact_interval_is_the_bars_the_test_does_not_reject(self):
        rng = random.Random("sign flip intervals")
        for _ in range(20):
            k, n = rng.randrange(1, 8), rng.choice((7, 10, 64))
            values = [Fraction(rng.randrange(-n, n + 1), n) for _ in range(k)]
            level = rng.choice((0.5, 0.7, 0.9, 0.95, 0.99))
            self.assertEqual(gqa_statistics.sign_flip_interval(values, level),
                             by_patterns(values).interval(1 - level), (values, level))

    def test_the_subsets_are_counted_by_size_and_sum_as_listed(self):
        # Every subset listed (up to 12 integers, odd and even counts): how many of each size have a
        # sum at most m x lowest + e, for every e, against _Subsets (which builds the sizes up to K / 2
        # and reads the rest as complements).
        import bisect
        import itertools
        rng = random.Random("subsets by size")
        for _ in range(30):
            ints = [rng.randrange(-9, 10) for _ in range(rng.randrange(1, 13))]
            subsets, low, k = gqa_statistics._Subsets(ints), min(ints), len(ints)
            for m in range(1, k + 1):
                sums = [sum(c) - m * low for c in itertools.combinations(ints, m)]
                for e in range(-2, m * (max(ints) - low) + 3):
                    self.assertEqual(subsets._up_to(m, e), sum(s <= e for s in sums), (ints, m, e))
            means = sorted(Fraction(sum(c), m) for m in range(1, k + 1) for c in itertools.combinations(ints, m))
            for x in [rng.randrange((low - 2) * 64, (max(ints) + 2) * 64) for _ in range(20)]:
                at_most, below = bisect.bisect_right(means, Fraction(x, 64)), bisect.bisect_left(means, Fraction(x, 64))
                self.assertEqual(subsets.count(x, 6, True), at_most, (ints, x))
                self.assertEqual(subsets.count(x, 6, False), len(means) - below, (ints, x))

    def test_the_exact_interval_counted_by_binomials_past_64_seeds(self):
        # Three values with multiplicities: every subset mean and how many subsets have it, counted by
        # binomial coefficients; each end is where the count of means beyond it reaches the level's.
        # 64 and 70 seeds take two 64-bit words a count, 40 one (38 zeros: C(38, 19) subsets of 20
        # share a sum, past 2^32), 20 and 31 a 32-bit one.
        for k, (a, b, c), (na, nb) in ((64, (-3, 1, 4), (20, 30)), (70, (-5, 0, 2), (9, 41)),
                                       (20, (-1, 2, 7), (5, 6)), (31, (-2, 1, 3), (8, 11)),
                                       (40, (-4, 0, 5), (1, 38))):
            counts = {Fraction(a, 10): na, Fraction(b, 10): nb, Fraction(c, 10): k - na - nb}
            values = [v for v, m in counts.items() for _ in range(m)]
            random.Random(k).shuffle(values)
            means = {}
            for picks in itertools.product(*[range(m + 1) for m in counts.values()]):
                if sum(picks):
                    mean = sum(v * p for v, p in zip(counts, picks)) / sum(picks)
                    means[mean] = means.get(mean, 0) + math.prod(math.comb(m, p)
                                                                 for m, p in zip(counts.values(), picks))
            need = math.ceil(Fraction(1 - 0.999) * 2 ** (k - 1)) - 1       # means beyond an end, at most
            ends = []
            for order in (sorted(means), sorted(means, reverse=True)):
                seen = 0
                for x in order:
                    seen += means[x]
                    if seen >= need:
                        ends.append(x)
                        break
            self.assertEqual(gqa_statistics.sign_flip_interval(values, 0.999), tuple(ends), k)
            if k >= 64:
                continue
            by_sum = {}                                   # (size, sum in tenths) -> subsets, by binomials
            for picks in itertools.product(*[range(m + 1) for m in counts.values()]):
                key = (sum(picks), sum(int(v * 10) * p for v, p in zip(counts, picks)))
                by_sum[key] = by_sum.get(key, 0) + math.prod(math.comb(m, p) for m, p in zip(counts.values(), picks))
            subsets, seen = gqa_statistics._Subsets([int(v * 10) for v in values]), {}
            for (size, total), n in sorted(by_sum.items()):      # by size, then by sum: a running count
                seen[size] = seen.get(size, 0) + n
                if size:
                    self.assertEqual(subsets._up_to(size, total - size * a), seen[size], (k, size, total))

    def test_below_six_seeds_no_verdict_can_resolve(self):
        # 5 seeds, every difference far above its bar: p is at least 2 / 2^5 = 0.0625, above 5 %.
        result = self.fake([100] * 5, [50] * 5, [30] * 5, [10] * 5, same=())
        decided = gqa_train.verdicts(result, ["recall"])
        self.assertEqual({d.verdict for d in decided}, {"not resolved"})
        self.assertEqual({d.p for d in decided[:4]}, {Fraction(2, 32)})
        self.assertEqual({(d.low, d.high, d.resolves) for d in decided}, {(None, None, None)})
        self.assertEqual({row[-1] for row in gqa_sentences.verdict_rows(result, decided)}, {"—"})

    def test_the_smallest_resolvable_gap_is_where_a_shifted_run_resolves(self):
        # Each claim's differences moved as one so that their mean lies just beyond, or just short
        # of, the smallest resolvable gap from the bar: every pattern counted, at the claim's level.
        pre, mean = [100] * 8, [97, 99, 100, 95, 100, 98, 100, 99]
        first, random_ = [60, 70, 65, 62, 68, 61, 66, 64], [20, 25, 62, 21, 70, 24, 23, 26]
        decided = gqa_train.verdicts(self.fake(pre, mean, first, random_, same=()), ["recall"])
        checked = 0
        for d in decided:
            if d.resolves is None:
                continue
            side = 1 if d.mean >= d.claim.bar else -1
            for step, rejected in ((Fraction(1, 1000), True), (-Fraction(1, 1000), False)):
                if d.resolves + step <= 0:          # no distance short of 0: every seed alike resolves at once
                    continue
                move = d.claim.bar + side * (d.resolves + step) - d.mean
                p = by_patterns([v + move for v in d.claim.values]).p(d.claim.bar)
                self.assertEqual(p < 1 - d.level, rejected, (d.claim.kind, step))
            checked += 1
        self.assertGreaterEqual(checked, 4)

    def test_recovers_is_non_inferiority_of_the_paired_gap(self):
        # The gap control - mean per seed: well inside the margin recovers though no seed is
        # exactly at the control; a gap above the margin in every seed does not hold.
        for mean, want in (([100, 99, 100, 99, 100, 100, 99, 100], "holds"),
                           ([90, 92, 91, 93, 90, 91, 92, 90], "does not hold"),
                           ([100, 90, 100, 96, 99, 100, 93, 100], "not resolved")):
            result = self.fake([100] * 8, mean, [50] * 8, [20] * 8, same=())
            got = [d for d in gqa_train.verdicts(result, ["recall"]) if d.claim.kind == "recovers"]
            self.assertEqual([d.verdict for d in got], [want], mean)

    def test_an_interval_end_is_never_printed_as_its_bar(self):
        # a verdict is read from the printed interval: an end that would round to the bar gets
        # the digits it needs, up to 6
        for x, bar, want in ((-0.0003, 0.0, "-0.0003"), (0.0174, 0.02, "+0.017"), (0.01996, 0.02, "+0.01996"),
                             (0.0, 0.0, "+0.000"), (0.123456, 0.0, "+0.123")):
            self.assertEqual(gqa_sentences.end_text(x, bar), want, (x, bar))

    def test_the_share_within_the_margin_is_counted_against_the_control(self):
        # Against a control that improved to 100 from a frozen 97, 98 is within 0.02 of both;
        # against one that fell to 95, 94 is within 0.02 of the control but not of the frozen model.
        result = self.fake([97] * 20, [94] * 20, [50] * 20, [20] * 20, control=[95] * 20)
        t = result["tasks"]["recall"]
        self.assertEqual((gqa_train.recovered(t, 1, 5), gqa_train.recovered(t, 1, 5, control=False)), (20, 0))
        self.assertEqual(gqa_train.half_within(t, 1, [5]), 5)
        self.assertIsNone(gqa_train.half_within(self.fake([100] * 4, [90] * 3 + [99], [5] * 4, [1] * 4)
                                                ["tasks"]["recall"], 1, [5]))        # 1 of 4 seeds

    def test_the_equal_cache_comparison_quotes_the_mqa_paper(self):
        result = self.fake([100] * 5, [90, 80, 70, 60, 50], [80, 80, 60, 70, 40], [10, 10, 10, 10, 40])
        same = gqa_train.same_cache_finding(result, "recall")
        self.assertIn("Shazeer 2019", same)
        # decided as averages too: MQA minus each other row, per seed (of 100 answers)
        rows = [d for d in gqa_train.verdicts(result, ["recall"]) if d.claim.kind == "same cache"]
        self.assertEqual([d.claim.g for d in rows], [1, 2])
        self.assertEqual([[float(v) for v in d.claim.values] for d in rows], [[0.04, 0.04], [0.05, 0.0]])
        two = self.fake([100] * 2, [9, 9], [5, 5], [1, 1], same=((9, 5), (5, 5), (4, 3)))
        self.assertIn(f"in {gqa_sentences.share_text(1, 2)} seeds (beat or tied them in 2/2;",
                      gqa_train.same_cache_finding(two, "recall"))

    def test_a_difference_is_decided_by_its_t_interval(self):
        drop = claims.difference([100, 100, 100], [60, 70, 80], 100)     # 0.3 ± 0.1, df 2
        half = t_by_hand(0.975, 2) * 0.1 / math.sqrt(3)
        self.assertAlmostEqual(drop.low, 0.3 - half, places=9)
        self.assertEqual(gqa_statistics.verdict(drop.low, drop.high, 0.0), "holds")
        level = claims.difference([100, 90, 95], [95, 95, 95], 100)
        self.assertEqual(gqa_statistics.verdict(level.low, level.high, 0.0), "not resolved")


def load_tests(loader, tests, pattern):
    """The examples of gqa_tools.statistics' docstring run too."""
    tests.addTests(doctest.DocTestSuite(gqa_statistics))
    return tests


if __name__ == "__main__":
    unittest.main()
