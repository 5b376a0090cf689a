"""report.md: its numbers agree with the counters, it is reproducible, and it is written safely."""

from __future__ import annotations

import contextlib
import copy
import io
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

import gqa
from gqa_grader.teacher import handout
from gqa_grader.language import i18n
from gqa_grader.steps.manifest import NUMBER
from gqa_tools import cli as gqa_cli
from gqa_tools import uptraining as gqa_train
from gqa_tools.report import command as report_command
from gqa_tools.report import costs as report_costs
from gqa_tools.report import lab as report_lab
from gqa_tools.report import measuring as report_measuring
from gqa_tools.report import sections as report_sections
from gqa_tools.report import settings as report_settings
from tests.helpers import ROOT, heavy, run_gqa, run_grader

# The report trains the uptraining lab's quick recipe (section 8), which takes
# seconds; these tests run it on a tiny recipe instead.  CI checks the real one.
# Even the tiny one is most of a report's time, and a dozen tests write a report
# to test how it is written: each recipe is trained once here, and what the
# report measures with the project's gqa.py is measured once for each
# configuration, each result shared (the training's a deep copy each time).  That a run repeats
# to the byte is tests/test_train.py's; test_two_runs_write_the_same_bytes
# compares a report from what was measured first with one measured afresh.
TINY = gqa_train.Recipe(heads=2, head_dim=2, d_model=4, vocab=3, length=4, offsets=2, batch=2,
                        pretrain=6, budgets=(2, 4), held_out=4, seed=5, seeds=2)
_QUICK, _RUN, _MEASURE = gqa_train.QUICK, gqa_train.run, report_measuring.measure
_TRAINED, _MEASURED = {}, {}


def _run_once(r, lab=gqa, progress=None, jobs=1):
    """gqa_tools.uptraining.run, trained once for each recipe and module (the same for every jobs)."""
    key = (r, lab)
    if key not in _TRAINED:
        _TRAINED[key] = _RUN(r, lab, progress, jobs)
    return copy.deepcopy(_TRAINED[key])


def _measure_once(cfg, lab=None, progress=None, untrained=None, recipe=None, jobs=1, record=None):
    """gqa_tools.report.measuring.measure, measured once for each configuration with the project's gqa.py
    (a training record, when the report passes one, is its training)."""
    if lab is not None and lab.module is not gqa or record is not None:
        return _MEASURE(cfg, lab, progress, untrained, recipe, jobs, record)
    key = (cfg, untrained, recipe, gqa_train.QUICK)
    if key not in _MEASURED:
        _MEASURED[key] = _MEASURE(cfg, lab, progress, untrained, recipe, jobs)
    measured = _MEASURED[key]           # records, read only; the training's dicts are copied
    return measured._replace(training=copy.deepcopy(measured.training))


def _measure_afresh():
    """The next report trains and measures anew."""
    _TRAINED.clear()
    _MEASURED.clear()


def setUpModule():
    gqa_train.QUICK, gqa_train.run, report_measuring.measure = TINY, _run_once, _measure_once


def tearDownModule():
    gqa_train.QUICK, gqa_train.run, report_measuring.measure = _QUICK, _RUN, _MEASURE


@contextlib.contextmanager
def no_work():
    """Around a command that must refuse before it measures or grades anything."""
    went = AssertionError("the command went to work before it refused")
    with mock.patch("gqa_tools.report.measuring.measure", side_effect=went), \
            mock.patch.multiple("gqa_tools.report.child", graded=mock.Mock(side_effect=went),
                                parts_from_child=mock.Mock(side_effect=went)):
        yield


SMALL = report_settings.Config(heads=6, head_dim=8, layers=3, context=64, batch=4, run_head_dim=2,
                               run_d_model=6, run_context=5, run_layers=2, seed=3, seeds=2)
ARGS = [a for name, value in SMALL._asdict().items() for a in (f"--{name.replace('_', '-')}", str(value))]


def run(*argv):
    """`gqa report ARGV`: (exit status, stdout, stderr)."""
    return run_gqa("report", *argv)


class Contents(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.measured = report_measuring.measure(SMALL)
        cls.text = report_sections.build_report(SMALL, cls.measured)

    def row(self, section, starts):
        """The table row of a section that starts with `starts`."""
        part = self.text.split(f"## {section}")[1].split("\n## ")[0]
        rows = [line for line in part.splitlines() if line.startswith(starts)]
        self.assertTrue(rows, f"no row {starts!r} in section {section}")
        return rows

    def test_states_the_command_that_wrote_it(self):
        self.assertIn("Written by `python -m gqa report " + " ".join(ARGS) + "`", self.text)

    def test_a_part_has_one_glyph_in_every_bar_chart(self):
        # Section 3's bars (one attention layer) and section 4's (the whole block) draw the
        # same parts: each with the same glyph, read from the legends the sections print.
        three = re.search(r"attention body \((.)\), the q and o projections \((.)\) and the k and v "
                          r"projections \((.)\)", self.text).groups()
        legend = re.search(r"\n(. q and o projections, . k and v projections, . attention body, . MLP)\n",
                           self.text).group(1)
        four = {name: glyph for glyph, name in re.findall(r"(.) ([a-zA-Z ]+?)(?:,|$)", legend)}
        self.assertEqual(three, (four["attention body"], four["q and o projections"], four["k and v projections"]))
        self.assertEqual(len(set(four.values())), 4)

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

    def test_multiplies_are_the_causal_counts_worked_by_hand(self):
        # h=6, d=8, d_model=48, n=64, causal: 64 x 65 / 2 pairs of (query, key).
        pairs = 64 * 65 // 2
        for g in (1, 2, 3, 6):
            proj = 64 * 48 * 8                        # one head's projection of n positions
            expected = {"scores": 6 * pairs * 8, "k_proj": g * proj,
                        "total": 2 * 6 * proj + 2 * g * proj + 2 * 6 * pairs * 8}
            for term, value in expected.items():
                self.assertIn(f"{value:,}", self.row("3.", f"| {term} ")[0], (g, term))
        self.assertIn("causal", self.text.split("## 3.")[1].split("\n\n")[1])

    def test_whole_block_for_llama_2_7b_worked_by_hand(self):
        # Per token at 4,096 positions (causal), from the config's shapes:
        # q, k, v, o 4 x 4096^2, MLP 3 x 4096 x 11008, body 2 x 32 x 128 x 4097 / 2.
        section, _ = report_costs.section_block(report_settings.Config(context=4096),
                                                report_lab.Lab(gqa, "gqa.py"), self.measured)
        proj, mlp, body = 4096 * 4096, 3 * 4096 * 11008, 32 * 128 * 4097
        mha = 4 * proj + mlp + body
        self.assertIn(f"| MHA    | 32 | {2 * proj:>19,} | {2 * proj:>19,} | {body:>14,} | {mlp:,} | {mha:,} |",
                      section)
        self.assertIn(f"{2 * proj / mha:.4g}", section)                   # 0.1531: k and v's share
        mqa = 2 * proj + 2 * 4096 * 128 + mlp + body
        self.assertIn(f"MQA would save {1 - mqa / mha:.4g}", section)
        self.assertIn("**Llama-2-70B**", section)

    def test_output_difference_agrees_with_a_direct_call(self):
        for g in (1, 3):
            diffs = []
            for seed in (3, 4):
                w = gqa.init_weights(6, 6, 2, seed=f"weights:{seed}")     # the seeds of gqa_tools.seeds
                rng = random.Random(f"input:{seed}")
                x = [[rng.uniform(-1.0, 1.0) for _ in range(6)] for _ in range(5)]
                diffs.append(gqa.output_difference(gqa.layer(x, w, g), gqa.layer(x, w, 6)))
            rel = [d.rel_l2 for d in diffs]
            expected = f"{sum(rel) / 2:.4g} ({min(rel):.4g} to {max(rel):.4g})"
            self.assertIn(expected, self.row("5.", f"| {gqa.method_name(6, g)}    | {g} |")[0])
        self.assertIn("| MHA    | 6 | 0 (0 to 0)", self.text)
        self.assertTrue(self.measured.exact_mha)

    def test_conversion_and_decode_sections(self):
        self.assertIn("GQA paper", self.text.split("## 6.")[1])
        reads = 2 * 2 * 64 * 8                    # token 64 reads K and V: 2 x g x 64 x d
        self.assertIn(f"{3 * reads:,}", self.row("7.", "| GQA    | 2 |")[0])

    def test_the_random_heads_paragraph_states_its_measured_figure(self):
        spread = self.measured.head_cosine
        self.assertTrue(0 < spread.low <= spread.mean <= spread.high <= 1)
        self.assertIn(f"a cosine of {spread.mean:.4g} on average", self.text.split("## 5.")[1])

    def test_the_training_section_reports_what_was_measured(self):
        section = self.text.split("## 8.")[1].split("\n## ")[0]
        result = self.measured.training
        self.assertEqual(result["seeds"], [SMALL.seed, SMALL.seed + 1])
        for task in gqa_train.TASKS:
            t = result["tasks"][task]
            for x in [t["pretrained"]] + t["control"] + t["uptrain"] + t["same_cache"] + t["carried"] + t["scratch"]:
                acc = [c / t["answers"] for c in x["correct"]]
                mean = sum(acc) / len(acc)
                self.assertIn(f"{mean:.3f} ± {statistics.stdev(acc):.3f} [", section)
            for g in sorted({x["g"] for x in t["uptrain"]}):
                self.assertIn(f"| {task:<7} | {g} | MHA trained on (the control)", section)
        self.assertIn("Same cache, three ways", section)
        self.assertIn("are decided as one family by Holm's step-down correction", section)   # the rule, stated
        self.assertIn("At 2 seeds no claim can be resolved, whatever its differences", section)  # what 2 resolve
        self.assertIn("What these verdicts are about: a one-layer model", section)   # and the scope
        self.assertIn("Section 8 measures it", self.text.split("## 9.")[1])

    def test_no_sentence_says_prefill_does_not_speed_up(self):
        self.assertNotIn("does not get faster", self.text)
        self.assertIn("prefill barely speeds up", self.text)

    def test_bars_are_in_code_blocks(self):
        blocks = self.text.split("```")[1::2]
        self.assertEqual(len(blocks), 6)
        self.assertTrue(all(set(block) & set("█▓▒░") for block in blocks))

    def test_no_machine_no_time(self):
        self.assertNotIn(os.path.dirname(os.path.abspath(gqa.__file__)), self.text)
        self.assertNotRegex(self.text, r"\b20\d\d-\d\d-\d\d\b")


@heavy
class Writing(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "report.md")

    def tearDown(self):
        self.dir.cleanup()

    def test_two_runs_write_the_same_bytes_and_check_passes(self):
        self.assertEqual(run("--out", self.path, *ARGS)[0], 0)     # from what was measured first
        with open(self.path, "rb") as f:
            first = f.read()
        _measure_afresh()                                   # the second trains and measures anew
        self.assertEqual(run("--retrain", "--out", self.path, *ARGS)[0], 0)
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(), first)
        status, out, _ = run("--check", "--out", self.path, *ARGS)
        self.assertEqual(status, 0)
        self.assertIn("is what the code writes now", out)

    def test_a_report_takes_section_8_from_the_record_of_its_pythons_family(self):
        # The first report trains and records its training beside it, for this Python's family
        # alone; the next one, written or checked, trains nothing and writes the same bytes.
        import json
        from gqa_tools.report import record
        self.assertEqual(run("--out", self.path, *ARGS)[0], 0)
        with open(os.path.join(self.dir.name, record.TRAINING_RECORD), encoding="utf-8") as f:
            self.assertEqual(list(json.load(f)), [record.family()])
        with open(self.path, "rb") as f:
            first = f.read()
        os.remove(self.path)
        _measure_afresh()                                   # nothing measured before is reused
        with mock.patch.object(gqa_train, "run", side_effect=AssertionError("trained")) as trained:
            self.assertEqual(run("--out", self.path, *ARGS)[0], 0)
            self.assertEqual(run("--check", "--out", self.path, *ARGS)[0], 0)
        self.assertEqual(trained.call_count, 0)
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(), first)

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
        # The command it gives writes this file (--out too), and then the check passes.
        command = shlex.split(err.split("regenerate it with: ")[1].splitlines()[0])
        self.assertEqual(command[:4], ["python", "-m", "gqa", "report"])
        self.assertEqual(command[command.index("--out") + 1:][:1], [self.path])
        self.assertEqual(run(*command[4:])[0], 0)
        self.assertEqual(run("--check", *command[4:])[0], 0)

    def test_check_of_a_missing_file_says_so_before_any_work(self):
        with no_work():
            status, _, err = run("--check", "--out", self.path, *ARGS)
        self.assertEqual(status, 1)
        self.assertIn(f"cannot read {self.path}", err)
        self.assertIn(f"regenerate it with: python -m gqa report --out {self.path} --heads ", err)

    def test_missing_directory_fails_clearly_before_any_work(self):
        path = os.path.join(self.dir.name, "no", "such", "report.md")
        with no_work():
            status, _, err = run("--out", path, *ARGS)
        self.assertEqual(status, 2)
        self.assertIn(f"cannot write {path}: there is no folder", err)
        self.assertEqual(len(err.splitlines()), 1)
        self.assertFalse(os.path.exists(os.path.dirname(path)))

    def test_a_failed_write_leaves_the_old_report_and_no_temporary_file(self):
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("the old report\n")
        with mock.patch("gqa_tools.report.files.os.replace", side_effect=PermissionError(13, "Permission denied")):
            status, _, err = run("--out", self.path, *ARGS)
        self.assertEqual(status, 2)
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
        self.assertEqual(status, 2)
        with open(self.path, encoding="utf-8") as f:
            self.assertEqual(f.read(), "the old report\n")

    def test_what_is_not_a_regular_file_is_never_replaced(self):
        fifo = os.path.join(self.dir.name, "pipe")
        os.mkfifo(fifo)
        for path, says in (("", "must name a file"), (self.dir.name, "not a regular file"),
                           (os.devnull, "not a regular file"), (fifo, "not a regular file")):
            with no_work():
                status, _, err = run("--out", path, *ARGS)
            self.assertEqual(status, 2, path)
            self.assertIn(says, err)
        self.assertTrue(os.path.exists(os.devnull) and not os.path.isfile(os.devnull))
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["pipe"])        # no temporary file left

    def test_a_symlink_is_written_through_and_the_mode_is_kept(self):
        target = os.path.join(self.dir.name, "real.md")
        with open(target, "w", encoding="utf-8") as f:
            f.write("old\n")
        os.chmod(target, 0o640)
        link = os.path.join(self.dir.name, "link.md")
        os.symlink(target, link)
        status, out, _ = run("--out", link, *ARGS)
        self.assertEqual(status, 0)
        self.assertIn("through the link", out)
        self.assertTrue(os.path.islink(link))
        self.assertEqual(os.stat(target).st_mode & 0o777, 0o640)
        with open(target, encoding="utf-8") as f:
            self.assertTrue(f.read().startswith("# gqa lab report"))
        status, _, _ = run("--out", self.path, *ARGS)                       # a new file: not 0600
        mask = os.umask(0)
        os.umask(mask)
        self.assertEqual(os.stat(self.path).st_mode & 0o777, 0o666 & ~mask)

    def test_a_figure_that_is_a_link_is_replaced_and_what_it_points_at_untouched(self):
        # A module run in a worker of another user could plant links beside a report it
        # knows the path of: the figures are the writer's own files, never written through.
        outside = os.path.join(self.dir.name, "outside.txt")
        with open(outside, "w", encoding="utf-8") as f:
            f.write("not a figure\n")
        status, _, _ = run("--out", self.path, *ARGS)
        folder = os.path.join(self.dir.name, "report-figures")
        name = sorted(os.listdir(folder))[0]
        os.unlink(os.path.join(folder, name))
        os.symlink(outside, os.path.join(folder, name))
        status, _, err = run("--out", self.path, *ARGS)
        self.assertEqual(status, 0, err)
        self.assertFalse(os.path.islink(os.path.join(folder, name)))
        with open(outside, encoding="utf-8") as f:
            self.assertEqual(f.read(), "not a figure\n")

    def test_a_link_made_at_the_reports_path_while_it_is_built_is_not_written_through(self):
        # As a module in another user's worker could, beside a report in a folder every
        # user may write into: the path is a link only once the work has begun.
        outside = os.path.join(self.dir.name, "outside.txt")
        with open(outside, "w", encoding="utf-8") as f:
            f.write("not a report\n")
        assemble = report_sections.assemble

        def planting(*args, **kw):
            os.symlink(outside, self.path)
            return assemble(*args, **kw)
        with mock.patch("gqa_tools.report.sections.assemble", side_effect=planting):
            status, _, err = run("--out", self.path, *ARGS)
        self.assertEqual(status, 2)
        self.assertIn("nothing is written through a link made meanwhile", err)
        with open(outside, encoding="utf-8") as f:
            self.assertEqual(f.read(), "not a report\n")

    def test_a_figures_folder_not_ones_own_is_refused_before_any_work(self):
        folder = os.path.join(self.dir.name, "report-figures")
        elsewhere = os.path.join(self.dir.name, "elsewhere")
        os.mkdir(elsewhere)
        os.symlink(elsewhere, folder)                                 # a link to a folder
        status, _, err = run("--out", self.path, *ARGS)
        self.assertEqual(status, 2)
        self.assertIn("is there and is not a folder", err)
        self.assertEqual(os.listdir(elsewhere), [])
        os.unlink(folder)
        os.mkdir(folder)
        os.chmod(folder, 0o777)                                       # every user may write into it
        status, _, err = run("--out", self.path, *ARGS)
        self.assertEqual(status, 2)
        self.assertIn("every user may write into it", err)
        self.assertEqual(os.listdir(folder), [])
        if hasattr(os, "geteuid") and os.geteuid() == 0:              # another user's
            os.chmod(folder, 0o755)
            os.chown(folder, 65534, 65534)
            status, _, err = run("--out", self.path, *ARGS)
            self.assertEqual(status, 2)
            self.assertIn("is another user's folder", err)

    def test_check_of_a_file_that_is_not_utf8(self):
        with open(self.path, "wb") as f:
            f.write(b"\xff\xfe not text")
        status, _, err = run("--check", "--out", self.path, *ARGS)
        self.assertEqual(status, 1)
        self.assertIn("is not UTF-8 text", err)

    def test_sizes_past_their_limits_are_refused_before_any_work(self):
        for argv in (["--heads", "100000"], ["--run-context", str(10 ** 6)], ["--seeds", str(10 ** 9)],
                     ["--run-layers", str(10 ** 8)], ["--head-dim", str(10 ** 400)], ["--run-d-model", str(10 ** 8)]):
            status, _, err = run(*argv)
            self.assertEqual(status, 2, argv)
            self.assertIn("must be at most", err)
            self.assertLess(len(err), 1000)

    def test_bad_options(self):
        for argv in (["--heads", "0"], ["--seeds", "-1"], ["--heads", "x"]):
            status, _, err = run(*argv)
            self.assertEqual(status, 2, argv)
            self.assertIn("error:", err)
        with no_work():                                  # refused before section 8 trains
            status, _, err = run("--jobs", "0")
        self.assertEqual(status, 2)
        self.assertIn("--jobs must be between 1 and 64; got 0", err)

    def test_an_option_the_report_would_not_use_is_refused_before_any_work(self):
        module = os.path.join(ROOT, "gqa.py")
        for argv, says in ((["--retrain", "--check", "--module", module], "--retrain is for the project's report.md"),
                           (["--module", module, "--jobs", "2"], "--jobs is for the project's report"),
                           (["--module", module, "--jobs=1", "--lang", "ja"],
                            "--jobs はプロジェクトのレポートのためのものです")):
            with no_work():
                status, out, err = run("--out", self.path, *argv, *ARGS)
            self.assertEqual((status, out, len(err.splitlines())), (2, "", 1), argv)
            self.assertIn(f"gqa report: {says}", err)
        self.assertFalse(os.path.exists(self.path))


class Dispatch(unittest.TestCase):

    def test_unknown_or_missing_command(self):
        for argv in ([], ["nope"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(gqa_cli.main(argv), 2)
            self.assertIn("usage: python -m gqa COMMAND", err.getvalue())
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(gqa_cli.main(["--help"]), 0)
        for command in ("tables", "report", "config", "bench"):
            self.assertIn(command, out.getvalue())

    def test_a_command_loads_what_it_runs(self):
        # The project's report (report --check, in CI) builds no child: a student's report
        # (child.py and its thread pool) is imported when --module asks, and the worker's
        # target, gqa_tools.report:child_parts, still finds it.  tables reads a config.json
        # with the sizer, which it imports only then.
        code = ("import contextlib, io, sys; import gqa_tools.report, gqa_tools.report.command, gqa_tools.cli\n"
                "with contextlib.redirect_stdout(io.StringIO()):\n"
                "    gqa_tools.cli.main(['tables', '--heads', '4'])\n"
                "print(sorted(m for m in ('gqa_tools.report.child', 'concurrent.futures', 'gqa_tools.sizer')\n"
                "             if m in sys.modules))\n"
                "print(gqa_tools.report.child_parts.__module__)")
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.stdout.splitlines(), ["[]", "gqa_tools.report.child"], done.stderr)

    def test_tables_command_prints_both_tables(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(gqa_cli.main(["tables", "--heads", "4", "--context", "16"]), 0)
        self.assertIn(f"| MQA    |            1 |      4 | {gqa.kv_cache_elements(32, 1, 16, 128):>14,} |",
                      out.getvalue())
        self.assertIn("| scores       |", out.getvalue())


class Languages(unittest.TestCase):
    """--lang: a student's report and the tables in English, Japanese or Korean; the project's
    report.md in English whatever the environment."""

    JAPANESE = {"LANGUAGE": "ja", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "ja_JP.UTF-8"}

    def test_lang_without_module_is_a_usage_error_in_one_line(self):
        # In the language asked for: the student who typed it reads it.
        for argv, says in ((["--lang", "ja"], "プロジェクトの report.md は英語です"),
                           (["--lang=ko", "--check"], "프로젝트의 report.md는 영어입니다"),
                           (["--lang", "en"], "the project's report.md is English; --lang goes with "
                                              "--module PATH (a student's report)")):
            with no_work():
                status, out, err = run(*argv)
            self.assertEqual((status, out), (2, ""), argv)
            self.assertTrue(err.startswith("gqa report: " + says) and err.count("\n") == 1, err)

    def test_the_projects_report_is_english_whatever_the_environment(self):
        with mock.patch.dict(os.environ, self.JAPANESE):
            self.assertEqual(i18n.from_environment(), "ja")
            self.assertEqual(report_command.report_lang(["--check"]), "en")
            self.assertEqual(report_command.report_lang(["--module", "x.py"]), "ja")
            self.assertEqual(report_command.report_lang(["--mod=x.py", "--lang", "ko"]), "ko")
            self.assertEqual(report_command.report_lang(["--module", "x.py", "--lang", "fr"]), "ja")
            with no_work():
                status, _, err = run("--jobs", "0")
            self.assertEqual(status, 2)
            self.assertIn("error: --jobs must be between 1 and 64; got 0", err)
        self.assertEqual(i18n.language(), "en")               # a command leaves no language behind

    def test_the_tables_speak_the_language_asked_for_and_line_up(self):
        argv = ["tables", "--heads", "4", "--context", "16", "--d-ff", "64"]
        printed = {}
        for lang in i18n.LANGUAGES:
            out = io.StringIO()
            with mock.patch.dict(os.environ, self.JAPANESE), contextlib.redirect_stdout(out):
                self.assertEqual(gqa_cli.main(argv + ["--lang", lang]), 0)
            printed[lang] = out.getvalue()
        out = io.StringIO()
        with mock.patch.dict(os.environ, {"LANGUAGE": "", "LC_ALL": "C"}), contextlib.redirect_stdout(out):
            gqa_cli.main(argv)
        self.assertEqual(printed["en"], out.getvalue())       # --lang en: as without it, in C
        for lang, text in printed.items():
            i18n.use(lang)
            try:
                first = i18n._("KV cache, {layers} layer(s) x {n} positions, head dim {head_dim}:").format(
                    layers=32, n=16, head_dim=128)
            finally:
                i18n.use("en")
            self.assertTrue(text.startswith(first + "\n"), (lang, text[:200]))
            tables = [block.splitlines() for block in text.split("\n\n") if block.startswith("|")]
            self.assertEqual(len(tables), 4)
            for lines in tables:
                bars = {tuple(i18n.width(line[:i]) for i, c in enumerate(line) if c == "|") for line in lines}
                self.assertEqual(len(bars), 1, (lang, lines))


@heavy
class FromAnotherModule(unittest.TestCase):
    """--module PATH: the report of a student's gqa.py, whatever state it is in."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "report.md")

    def tearDown(self):
        self.dir.cleanup()

    def module(self, source):
        path = os.path.join(self.dir.name, "student_gqa.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        return path

    def report(self, path, out=None):
        """The report of the module at path, written where out says, else beside the module."""
        status, _, err = run("--module", path, *(["--out", out] if out else []), *ARGS)
        self.assertEqual(status, 0, err)
        with open(out or self.out, encoding="utf-8") as f:
            return f.read()

    def test_the_projects_own_module_gives_the_same_report_but_for_its_first_lines(self):
        with open(gqa.__file__, encoding="utf-8") as f:
            path = self.module(f.read())
        text = self.report(path)                            # written beside the module
        self.assertIn("grouping.svg", os.listdir(os.path.join(self.dir.name, "report-figures")))
        ours = report_sections.build_report(SMALL, report_measuring.measure(SMALL))
        self.assertIn(f"--module {path}", text.splitlines()[2])
        # Every section, the training of section 8 included (on the module's own steps, in
        # the worker, with the recipe this process has: the tiny one of this file), but
        # what a student's report has of its own: section 5 begins with `attention` on
        # random q, k, v, and section 9 is the student's to write.
        from gqa_tools.report.files import SEAL
        for n in (1, 2, 3, 4, 6, 7, 8):                    # a student's seals the code's sections: no part of ours
            self.assertEqual(SEAL.sub("", text.split(f"\n## {n}. ")[1].split("\n## ")[0]),
                             ours.split(f"\n## {n}. ")[1].split("\n## ")[0], n)
        five = text.split("\n## 5. ")[1].split("\n## ")[0]
        self.assertIn("`attention(q, k, v, g)` against the MHA output", five)
        self.assertTrue(five.endswith(ours.split("\n## 5. The output: it changes\n\n")[1].split("\n## ")[0]))
        self.assertIn("\n## 9. Your write-up", text)
        self.assertNotIn("How to read this", text)

    def test_section_8_names_the_steps_that_do_not_pass_and_trains_nothing(self):
        with open(gqa.__file__, encoding="utf-8") as f:
            source = f.read()
        broken = source.replace("    return _grouped_attention_backward(q, k, v, d_out, probs)",
                                "    return _grouped_attention_backward(q, k, v, [[[2 * x for x in r] for r in m] "
                                "for m in d_out], probs)", 1)
        self.assertNotEqual(broken, source)              # grouped_attention_backward's gradients, doubled
        path = self.module(broken)
        text = self.report(path)
        section = text.split("## 8.")[1].split("## 9.")[0]
        backward = f"step {NUMBER['grouped_attention_backward']}, grouped_attention_backward"
        self.assertIn(f"not yet: {backward}: failed", section)
        self.assertNotIn("| task ", section)
        # The grading of the steps training needs is the header's word on them too (it fails
        # a public case), as the grading of every other step is.
        self.assertIn(f"*The grader does not pass {backward} of {path} yet", text)

    def test_a_starter_with_two_steps_done_shows_them_and_says_what_is_missing(self):
        import ast
        with open(gqa.__file__, encoding="utf-8") as f:
            source = f.read()
        real = {n.name: n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
        starter = ast.parse(handout.make_starter(source))
        starter.body = [real[n.name] if isinstance(n, ast.FunctionDef) and n.name in
                        ("valid_g", "method_name") else n for n in starter.body]
        starter.body += [real[name] for name in ("_check_int", "_group_size", "_valid_g_text", "_method_name")]
        os.mkdir(os.path.join(self.dir.name, "elsewhere"))
        text = self.report(self.module(ast.unparse(starter)), os.path.join(self.dir.name, "elsewhere", "r.md"))
        self.assertFalse(os.path.exists(self.out))          # --out said where, not beside the module
        one = text.split("## 1.")[1].split("\n## ")[0]
        for g, name in ((1, "MQA"), (2, "GQA"), (3, "GQA"), (6, "MHA")):      # steps 1 and 2
            self.assertIn(f"| {name}    | {g:>12} | {6 // g:>6} | —", one)
        self.assertIn("*Not shown: needs step 4, group_heads: not implemented yet.*", one)
        self.assertIn("*Not computed from", text.split("## 2.")[1])
        self.assertIn("needs step 18, cache_table: not implemented yet", text.split("## 2.")[1])
        self.assertEqual(text.count("*Not computed from"), 7)              # sections 2 to 8
        self.assertIn("*(your answer)*", text.split("## 9.")[1])          # 9: the student's to write

    def test_a_module_that_cannot_be_imported_is_a_usage_error(self):
        for source, why in (("def f(:\n", "syntax error, line 1"), ("raise ValueError('no')\n", "ValueError: no")):
            status, _, err = run("--module", self.module(source), "--out", self.out, *ARGS)
            self.assertEqual(status, 2)
            self.assertIn(why, err)
        status, _, err = run("--module", os.path.join(self.dir.name, "none.py"), *ARGS)
        self.assertEqual((status, "no such file" in err), (2, True))
        self.assertFalse(os.path.exists(self.out))

    def test_an_out_whose_name_is_not_utf8_is_refused_in_one_line(self):
        out = os.path.join(self.dir.name, b"r\xe9.md".decode("utf-8", "surrogateescape"))
        with no_work():
            status, _, err = run("--module", self.module("x = 1\n"), "--out", out, *ARGS)
        self.assertEqual((status, len(err.splitlines())), (2, 1), err)
        self.assertIn("r\\xe9.md: its name is not UTF-8 text", err)
        err.encode("utf-8")                                     # no lone surrogate printed
        self.assertEqual(os.listdir(self.dir.name).count("r\udce9.md"), 0)

    def test_the_projects_own_report_is_never_written_from_another_module(self):
        path = self.module("x = 1\n")
        own = os.path.join(ROOT, "report.md")
        link = os.path.join(self.dir.name, "link.md")
        os.symlink(own, link)
        with open(own, "rb") as f:
            before = f.read()
        for out, says in ((own, "it is the project's own report"), (link, "it is the project's own report"),
                          (os.path.join(ROOT, "report.txt"),            # its figures: report-figures/
                           f"its figures would go in the project's own {os.path.join(ROOT, 'report-figures')}")):
            with no_work():
                status, _, err = run("--module", path, "--out", out, *ARGS)
            self.assertEqual(status, 2, out)
            self.assertIn(f"will not write {out}: {says}, and {path} is not the project's gqa.py", err)
            self.assertEqual(len(err.splitlines()), 1, err)
        self.assertFalse(os.path.exists(os.path.join(ROOT, "report.txt")))
        with open(own, "rb") as f:
            self.assertEqual(f.read(), before)
        for argv, says in ((["--module", os.path.join(self.dir.name, "none.py")], "none.py: no such file"),
                           (["--module", path, "--out", os.path.join(self.dir.name, "no", "r.md")],
                            "there is no folder")):
            with no_work():
                status, _, err = run(*argv, *ARGS)
            self.assertEqual((status, len(err.splitlines())), (2, 1), err)
            self.assertIn(says, err)

    def test_in_a_students_folder_python_m_gqa_says_what_to_run_instead_and_that_works(self):
        folder = os.path.join(self.dir.name, "mylab")
        os.mkdir(folder)
        with open(gqa.__file__, encoding="utf-8") as f:
            source = f.read()
        with open(os.path.join(folder, "gqa.py"), "w", encoding="utf-8") as f:
            f.write(source)             # the lab, its __main__ block handing over to gqa_tools.cli
        sizes = ["--heads", "2", "--head-dim", "1", "--layers", "1", "--context", "1"]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        first = subprocess.run([sys.executable, "-m", "gqa", "tables", *sizes], cwd=folder,
                               env=dict(env, PYTHONPATH=ROOT),          # the tools importable there
                               capture_output=True, text=True, timeout=60)
        self.assertEqual((first.returncode, first.stdout, len(first.stderr.splitlines())), (2, "", 1),
                         first.stderr)
        command = f"python {shlex.quote(os.path.join(ROOT, 'gqa.py'))} tables --module gqa.py {' '.join(sizes)}"
        self.assertIn(f"run instead: {command}\n", first.stderr)
        then = subprocess.run([sys.executable] + shlex.split(command)[1:], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(then.returncode, 0, then.stderr)
        self.assertIn("Computed by gqa.py (given with --module), in the grader's worker.", then.stdout)
        self.assertEqual(os.listdir(folder), ["gqa.py"])

    def test_a_gqa_that_is_not_the_tools_own_is_never_run_by_them(self):
        other = types.ModuleType("gqa")
        other.__file__ = self.module("# another gqa.py\n")
        shown = os.path.relpath(other.__file__)
        shown = shown if not shown.startswith("..") else other.__file__
        lab = shlex.quote(os.path.join(ROOT, "gqa.py"))
        for argv, command in ((["bench", "--quick"], f"python {lab} bench --quick"),
                              (["report", "--seeds", "1"], f"python {lab} report --module "
                                                           f"{shlex.quote(shown)} --seeds 1"),
                              (["uptrain", "--module", "x.py"], f"python {lab} uptrain --module x.py")):
            err = io.StringIO()
            with mock.patch.dict(sys.modules, {"gqa": other}), contextlib.redirect_stderr(err):
                self.assertEqual(gqa_cli.main(argv), 2)
            self.assertEqual(err.getvalue(), f"gqa {argv[0]}: {other.__file__} is not the tools' own gqa.py, "
                                             f"and they do not import another; run instead: {command}\n")

    def test_tables_from_a_starter_is_a_clear_error(self):
        with open(gqa.__file__, encoding="utf-8") as f:
            path = self.module(handout.make_starter(f.read()))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = gqa_cli.main(["tables", "--module", path])
        self.assertEqual(status, 2)
        self.assertIn("cache_table", err.getvalue())
        self.assertNotIn("Traceback", err.getvalue())

    def test_help_gives_every_option_a_meaning(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), self.assertRaises(SystemExit):
            gqa_cli.main(["report", "--help"])
        for name in report_settings.Config._fields:
            option = f"--{name.replace('_', '-')}"
            line = next(line for line in out.getvalue().splitlines() if line.strip().startswith(option))
            self.assertIn(report_settings.OPTION_HELP[name], " ".join(out.getvalue().split()).replace("- ", "-"))
            self.assertTrue(line)



@heavy
class AFolderAsModule(unittest.TestCase):
    """--module given a folder: said so, with the gqa.py to name, by the grader and the tools
    alike (it was "no such file", and the grader listed the folder's parent)."""

    def test_the_grader_report_and_tables_name_the_gqa_py_in_it(self):
        with tempfile.TemporaryDirectory() as top:
            lab, empty = os.path.join(top, "lab"), os.path.join(top, "empty")
            os.mkdir(lab)
            os.mkdir(empty)
            with open(os.path.join(lab, "gqa.py"), "w", encoding="utf-8") as f:
                f.write("# a student's lab\n")
            with open(os.path.join(top, "notes.txt"), "w", encoding="utf-8") as f:
                f.write("beside the folders\n")
            inside = lab + os.sep + "gqa.py"
            for module, says in ((lab, f"{lab} is a folder; name the gqa.py in it: --module {inside}"),
                                 (empty, f"{empty} is a folder, and it holds no gqa.py")):
                for command in ("report", "tables"):
                    with no_work():
                        status, _, err = run_gqa(command, "--module", module, "--lang", "en",
                                                 *(ARGS if command == "report" else []))
                    with self.subTest(command=command, module=module):
                        self.assertEqual((status, len(err.splitlines())), (2, 1), err)
                        self.assertIn(says, err)
                graded = run_grader("--module", module, "--lang", "en")
                with self.subTest(command="grader", module=module):
                    self.assertEqual(graded.returncode, 2, graded.stderr)
                    self.assertIn(says, graded.stdout + graded.stderr)
                    self.assertNotIn("notes.txt", graded.stdout + graded.stderr)

if __name__ == "__main__":
    unittest.main()
