"""The drawing module (gqa_tools/svg.py): its pieces (ticks, coordinates, styles, end
labels) worked by hand and on random ranges; the examples of its docstrings run too."""

from __future__ import annotations

import doctest
import random
import unittest
from decimal import Decimal

from gqa_tools import svg as gqa_svg


class Pieces(unittest.TestCase):

    def test_ticks_worked_by_hand(self):
        cases = [((0, 4096, False), [0, 1000, 2000, 3000, 4000], (0, 4096)),
                 ((0, 0.85, True), [0, 0.2, 0.4, 0.6, 0.8, 1], (0, 1)),
                 ((3, 97, True), [0, 20, 40, 60, 80, 100], (0, 100)),
                 ((0, 7, True), [0, 2, 4, 6, 8], (0, 8)),
                 ((0.0012, 0.0049, True), [0.001, 0.002, 0.003, 0.004, 0.005], (0.001, 0.005))]
        for (lo, hi, cover), values, limits in cases:
            t = gqa_svg.nice_ticks(lo, hi, cover=cover)
            self.assertEqual(t.values, values, (lo, hi))
            self.assertEqual((t.lo, t.hi), limits, (lo, hi))
        gib = gqa_svg.nice_ticks(0, 2 * 2 ** 30, scale=2 ** 30)
        self.assertEqual([label for _, label in gib.ticks], ["0.0", "0.5", "1.0", "1.5", "2.0"])
        self.assertEqual(gib.values[3], 1.5 * 2 ** 30)

    def test_ticks_are_one_two_or_five_times_a_power_of_ten(self):
        rng = random.Random("ticks:0")
        for _ in range(300):
            lo = rng.choice([0.0, rng.uniform(-1e3, 1e3)]) * 10 ** rng.randint(-4, 6)
            hi = lo + rng.uniform(1e-3, 1e3) * 10 ** rng.randint(-3, 6)
            most = rng.randint(3, 8)
            cover = rng.random() < 0.5
            t = gqa_svg.nice_ticks(lo, hi, most=most, cover=cover)
            labels = [Decimal(label.replace(",", "")) for _, label in t.ticks]
            steps = {b - a for a, b in zip(labels, labels[1:])}
            self.assertEqual(len(steps), 1, (lo, hi, labels))
            mantissa = steps.pop().normalize().as_tuple()
            self.assertEqual(len(mantissa.digits), 1, (lo, hi, labels))
            self.assertIn(mantissa.digits[0], (1, 2, 5), (lo, hi, labels))
            self.assertLessEqual(len(labels) - 1, most, (lo, hi))
            self.assertGreaterEqual(len(labels), 2, (lo, hi))
            for value, label in t.ticks:
                self.assertAlmostEqual(value, float(label.replace(",", "")), delta=abs(value) * 1e-12)
            self.assertTrue(t.lo <= lo and hi <= t.hi, (lo, hi, t))     # the data lies on the axis
            slack = 1e-6 * (t.hi - t.lo)
            self.assertTrue(t.lo - slack <= t.values[0] and t.values[-1] <= t.hi + slack, (lo, hi, t))
            if cover:                           # and the axis ends at ticks, or within a hair of them
                self.assertTrue(abs(t.hi - t.values[-1]) <= slack and abs(t.lo - t.values[0]) <= slack,
                                (lo, hi, t))
            else:
                self.assertEqual((t.lo, t.hi), (lo, hi))

    def test_coordinates_have_two_decimals_at_most(self):
        for x, text in ((12.0, "12"), (3.14159, "3.14"), (-0.001, "0"), (2.5, "2.5"), (-7.126, "-7.13")):
            self.assertEqual(gqa_svg.num(x), text)
        for bad in (float("nan"), float("inf")):
            with self.assertRaises(ValueError):
                gqa_svg.num(bad)

    def test_styles_differ_in_colour_dash_and_marker(self):
        styles = [gqa_svg.style(i) for i in range(7)]
        for field in range(3):
            self.assertEqual(len({s[field] for s in styles}), 7)
        self.assertNotIn("#F0E442", [s.colour for s in styles])         # Okabe-Ito's yellow: not on white
        styles = [gqa_svg.style(i) for i in range(21)]
        self.assertEqual(len(set(styles)), 21)                           # past seven, still no two alike

    def test_end_labels_keep_apart_and_stay_in_the_figure(self):
        placed = gqa_svg._spread_out([100, 101, 102, 300, 301], 15, 50, 310)
        self.assertEqual(placed, [100, 115, 130, 295, 310])
        self.assertEqual(gqa_svg._spread_out([40, 200], 15, 50, 310), [50, 200])


def load_tests(loader, tests, ignore):
    """These tests, and the examples of gqa_tools.svg's docstrings."""
    tests.addTests(doctest.DocTestSuite(gqa_svg))
    return tests


if __name__ == "__main__":
    unittest.main()
