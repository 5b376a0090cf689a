"""gqa bench: the structure of its result and the memory it measures (never the times)."""

from __future__ import annotations

import contextlib
import io
import json
import unittest

import gqa
from gqa_tools import bench as gqa_bench
from gqa_tools import options
from tests.helpers import run_gqa


class Bench(unittest.TestCase):

    def test_quick_mode_structure_and_memory(self):
        status, out, err = run_gqa("bench", "--quick", "--repeats", "1", "--json")
        self.assertEqual(status, 0)
        self.assertIn("bench: run 1 of 1", err)                       # progress goes to stderr
        result = json.loads(out)
        h = result["settings"]["heads"]
        rows = result["rows"]
        self.assertEqual([r["g"] for r in rows], [1, 2, 4])
        self.assertEqual([r["method"] for r in rows], ["MQA", "GQA", "MHA"])
        for r in rows:
            self.assertEqual(set(r["prefill_s"]), {"median", "min", "max"})
            self.assertGreater(r["decode_s_per_token"]["median"], 0)
            # The memory really held is at least the data, and shrinks as g / h.
            self.assertGreaterEqual(r["cache_bytes_measured"], r["cache_bytes_formula"])
            self.assertEqual(r["cache_bytes_formula"],
                             8 * gqa.kv_cache_elements(1, r["g"], result["settings"]["context"],
                                                       result["settings"]["head_dim"]))
            self.assertAlmostEqual(r["cache_ratio_to_mha"], r["g"] / h, delta=0.05)
            self.assertEqual(r["prefill_multiplies_tallied"], r["prefill_multiplies_formula"])
            self.assertEqual(r["decode_multiplies_tallied"], r["decode_multiplies_formula"])

    def test_memory_within_one_percent_at_the_default_size(self):
        s = gqa_bench.Settings()
        w = gqa.init_weights(s.heads, s.d_model, s.head_dim, seed=0)
        x = [[0.25] * s.d_model for _ in range(s.context)]
        for g in gqa.valid_g(s.heads):
            f = gqa.fold_weights(w, g)
            held = gqa_bench.cache_memory(gqa_bench.projected_rows(x, f.w_k), gqa_bench.projected_rows(x, f.w_v),
                                          g, s.head_dim)
            formula = 8 * gqa.kv_cache_elements(1, g, s.context, s.head_dim)
            self.assertGreaterEqual(held, formula, g)
            self.assertLess(held, 1.01 * formula, g)       # a cache made with its capacity

    def test_text_reading(self):
        result = gqa_bench.run(gqa_bench.QUICK._replace(repeats=1))
        text = gqa_bench.render(result)
        self.assertIn("memory: g/h of MHA, measured", text)
        self.assertIn("read the ratios across g, not the absolute times", text)
        self.assertEqual(len([line for line in text.splitlines() if line.startswith(("MQA", "GQA", "MHA"))]), 3)

    def test_progress_line_on_a_terminal_overwrites_and_clears(self):
        class Terminal(io.StringIO):
            def isatty(self):
                return True

        err = Terminal()
        with contextlib.redirect_stderr(err):
            with options.progress_line("bench") as show:
                show("run 1 of 2")
                show("run 2 of 2")
        text = err.getvalue()
        self.assertNotIn("\n", text)                   # one line, rewritten in place
        self.assertEqual(text.split("\r")[1:3], ["bench: run 1 of 2 ...", "bench: run 2 of 2 ..."])
        self.assertEqual(text.split("\r")[-1], "")      # and cleared at the end
        self.assertEqual(set(text.split("\r")[-2]), {" "})


if __name__ == "__main__":
    unittest.main()
