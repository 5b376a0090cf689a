"""gqa_grader/running/exchange.py: how a failing call's arguments are named."""

from __future__ import annotations

import unittest


class ArgumentsInAMessage(unittest.TestCase):
    """A failing call names its tensors by shape, and a ragged one as ragged, not by
    the shape of its first rows."""

    def test_shapes_and_ragged_rows(self):
        from gqa_grader.running.exchange import _brief
        self.assertEqual(_brief([[[0.0] * 4] * 3] * 2), "<2x3x4 list>")
        self.assertEqual(_brief(([1.0, 2.0], (3.0, 4.0))), "<2x2 list>")
        self.assertEqual(_brief([[[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0]]]), "<ragged list of 2>")
        self.assertEqual(_brief([[1.0], [1.0, 2.0], [1.0]]), "<ragged list of 3>")
        self.assertEqual(_brief(8), "8")


if __name__ == "__main__":
    unittest.main()
