"""report.md: its numbers agree with the counters, it is reproducible, and it is written safely."""

from __future__ import annotations

import contextlib
import io
import os
import random
import tempfile
import unittest
from unittest import mock

import gqa
import gqa_report

SMALL = gqa_report.Config(heads=6, head_dim=8, layers=3, context=64, batch=4, run_head_dim=2,
                          run_d_model=6, run_context=5, run_layers=2, seed=3, seeds=2)
ARGS = [a for name, value in SMALL._asdict().items() for a in (f"--{name.replace('_', '-')}", str(value))]


def run(*argv):
    """Run `gqa report ...`; return (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = gqa.main(["report", *argv])
        except SystemExit as exit_:
            status = exit_.code
    return status, out.getvalue(), err.getvalue()


class Contents(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.measured = gqa_report.measure(SMALL)
        cls.text = gqa_report.build_report(SMALL, cls.measured)

    def row(self, section, starts):
        """The table row of a section that starts with `starts`."""
        part = self.text.split(f"## {section}")[1].split("\n## ")[0]
        rows = [line for line in part.splitlines() if line.startswith(starts)]
        self.assertTrue(rows, f"no row {starts!r} in section {section}")
        return rows

    def test_states_the_command_that_wrote_it(self):
        self.assertIn("Written by `python -m gqa report " + " ".join(ARGS) + "`", self.text)

    def test_every_divisor_of_h_has_a_row(self):
        for g, name in ((1, "MQA"), (2, "GQA"), (3, "GQA"), (6, "MHA")):
            self.assertTrue(self.row("1.", f"| {name}    | {g:>12} |"))

    def test_cache_numbers_agree_with_the_counter(self):
        for g in (1, 2, 3, 6):
            elements = gqa.kv_cache_elements(3, g, 64, 8)        # layers, g, context, head dim
            self.assertIn(f"{elements:,}", self.row("2.", f"| {gqa.method_name(6, g)}    | {g} |")[0])
            counted = gqa.kv_cache_elements(2, g, 5, 2)           # the small run
            self.assertEqual(self.measured.cache_counted[g], counted)
        self.assertEqual(self.text.count("| yes "), 2 * 4)     # two tables x the 4 divisors of 6

    def test_multiplies_agree_with_the_counter(self):
        for term in ("scores", "k_proj", "total"):
            row = self.row("3.", f"| {term} ")[0]
            for g in (1, 2, 3, 6):
                self.assertIn(f"{getattr(gqa.attention_multiplies(64, 6, g, 8, 48), term):,}", row)

    def test_output_difference_agrees_with_a_direct_call(self):
        for g in (1, 3):
            diffs = []
            for seed in (3, 4):
                w = gqa.init_weights(6, 6, 2, seed=f"weights:{seed}")     # gqa_tools' seeds
                rng = random.Random(f"input:{seed}")
                x = [[rng.uniform(-1.0, 1.0) for _ in range(6)] for _ in range(5)]
                diffs.append(gqa.output_difference(gqa.layer(x, w, g), gqa.layer(x, w, 6)))
            rel = [d.rel_l2 for d in diffs]
            expected = f"{sum(rel) / 2:.4g} ({min(rel):.4g} to {max(rel):.4g})"
            self.assertIn(expected, self.row("4.", f"| {gqa.method_name(6, g)}    | {g} |")[0])
        self.assertIn("| MHA    | 6 | 0 (0 to 0)", self.text)
        self.assertTrue(self.measured.exact_mha)

    def test_conversion_and_decode_sections(self):
        self.assertIn("GQA paper", self.text.split("## 5.")[1])
        reads = gqa.decode_traffic(64, 6, 2, 8, 48).cache_reads - gqa.decode_traffic(63, 6, 2, 8, 48).cache_reads
        self.assertIn(f"{3 * reads:,}", self.row("6.", "| GQA    | 2 |")[0])

    def test_bars_are_in_code_blocks(self):
        blocks = self.text.split("```")[1::2]
        self.assertEqual(len(blocks), 3)
        self.assertTrue(all("█" in block for block in blocks))

    def test_no_machine_no_time(self):
        self.assertNotIn(os.path.dirname(os.path.abspath(gqa.__file__)), self.text)
        self.assertNotRegex(self.text, r"\b20\d\d-\d\d-\d\d\b")


class Writing(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "report.md")

    def tearDown(self):
        self.dir.cleanup()

    def test_two_runs_write_the_same_bytes_and_check_passes(self):
        self.assertEqual(run("--out", self.path, *ARGS)[0], 0)
        with open(self.path, "rb") as f:
            first = f.read()
        self.assertEqual(run("--out", self.path, *ARGS)[0], 0)
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(), first)
        status, out, _ = run("--check", "--out", self.path, *ARGS)
        self.assertEqual(status, 0)
        self.assertIn("is what the code writes now", out)

    def test_check_detects_a_one_character_change(self):
        run("--out", self.path, *ARGS)
        with open(self.path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        lines[10] = lines[10][:-1] + ("x" if not lines[10].endswith("x") else "y")
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        status, _, err = run("--check", "--out", self.path, *ARGS)
        self.assertEqual(status, 1)
        self.assertIn("differs from what the code writes now, first at line 11", err)
        self.assertIn("regenerate it with: python -m gqa report", err)

    def test_check_of_a_missing_file(self):
        status, _, err = run("--check", "--out", self.path, *ARGS)
        self.assertEqual(status, 1)
        self.assertIn("cannot read", err)

    def test_missing_directory_fails_clearly(self):
        path = os.path.join(self.dir.name, "no", "such", "report.md")
        status, _, err = run("--out", path, *ARGS)
        self.assertEqual(status, 1)
        self.assertIn(f"cannot write {path}", err)
        self.assertFalse(os.path.exists(os.path.dirname(path)))

    def test_a_failed_write_leaves_the_old_report_and_no_temporary_file(self):
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("the old report\n")
        with mock.patch("gqa_report.os.replace", side_effect=PermissionError(13, "Permission denied")):
            status, _, err = run("--out", self.path, *ARGS)
        self.assertEqual(status, 1)
        self.assertIn("Permission denied; nothing was changed", err)
        with open(self.path, encoding="utf-8") as f:
            self.assertEqual(f.read(), "the old report\n")
        self.assertEqual(os.listdir(self.dir.name), ["report.md"])

    @unittest.skipIf(hasattr(os, "geteuid") and os.geteuid() == 0,
                     "root may write into a read-only directory; the mock test above covers it")
    def test_read_only_directory(self):
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("the old report\n")
        os.chmod(self.dir.name, 0o555)
        try:
            status, _, err = run("--out", self.path, *ARGS)
        finally:
            os.chmod(self.dir.name, 0o755)
        self.assertEqual(status, 1)
        with open(self.path, encoding="utf-8") as f:
            self.assertEqual(f.read(), "the old report\n")

    def test_bad_options(self):
        for argv in (["--heads", "0"], ["--seeds", "-1"], ["--heads", "x"]):
            status, _, err = run(*argv)
            self.assertEqual(status, 2, argv)
            self.assertIn("error:", err)


if __name__ == "__main__":
    unittest.main()


class Dispatch(unittest.TestCase):

    def test_unknown_or_missing_command(self):
        for argv in ([], ["nope"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(gqa.main(argv), 2)
            self.assertIn("usage: python -m gqa COMMAND", err.getvalue())
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(gqa.main(["--help"]), 0)
        for command in ("tables", "report", "config", "bench"):
            self.assertIn(command, out.getvalue())

    def test_tables_command_prints_both_tables(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(gqa.main(["tables", "--heads", "4", "--context", "16"]), 0)
        self.assertIn(f"| MQA    |            1 |      4 | {gqa.kv_cache_elements(32, 1, 16, 128):>14,} |",
                      out.getvalue())
        self.assertIn("| scores       |", out.getvalue())
