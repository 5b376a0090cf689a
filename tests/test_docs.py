"""The README: its REPL session runs, and its sample outputs are what the
commands print now (the measured bench aside)."""

from __future__ import annotations

import atexit
import contextlib
import doctest
import io
import os
import re
import subprocess
import sys
import unittest

import gqa
from gqa_tools import cli as gqa_cli
from tests.helpers import heavy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as _f:
    README = _f.read()


def load_tests(loader, tests, ignore):
    """Run the README's REPL session as a doctest; the doctests of the tool modules too.
    The grader's sample, when its test is to run, starts now (see grader_sample)."""
    from gqa_tools import models as gqa_models
    if any("test_grader_sample" in test.id() and not getattr(type(test), "__unittest_skip__", False)
           for suite in tests for test in suite):                    # not another shard's (helpers.heavy)
        grader_sample()
    tests.addTests(doctest.DocFileSuite(os.path.join(ROOT, "README.md"), module_relative=False))
    tests.addTests(doctest.DocTestSuite(gqa_models))
    return tests


_GRADER = []


def grader_sample():
    """`python grader.py --seed 1`, as its own process.  It takes seconds and waits on
    its workers: started when the tests are loaded, it runs beside the other modules'
    tests, and test_grader_sample collects it."""
    if not _GRADER:
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "grader.py"), "--seed", "1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        _GRADER.append(proc)
        atexit.register(proc.kill)                  # never outlives the suite if not collected
    return _GRADER[0]


def sample(command):
    """The output the README shows after `$ command`, in a fenced block."""
    match = re.search(r"```\n\$ " + re.escape(command) + r"\n(.*?)```", README, re.S)
    if not match:
        raise AssertionError(f"README shows no output of: {command}")
    return match.group(1)


def gqa_output(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        gqa_cli.main(argv)
    return out.getvalue()


@heavy
class ReadmeSamples(unittest.TestCase):

    def test_grader_sample(self):
        run = grader_sample()
        try:
            stdout, stderr = run.communicate(timeout=120)
        finally:
            run.kill()
        self.assertEqual(sample("python grader.py --seed 1"), stdout, stderr)
        self.assertEqual(run.returncode, 0)          # the real module passes every step

    def test_config_samples(self):
        for command in ("python -m gqa config examples/configs/llama-2-70b.json --context 4096 --batch 16 "
                        "--memory 80GiB --weights 140GB --tp 8 --hardware h100-sxm",
                        "python -m gqa config examples/configs/gemma-3-12b.json --context 32768",
                        "python -m gqa config examples/configs/deepseek-v3.json --context 32768 --tp 8",
                        "python -m gqa config examples/configs/gemma-3n-e4b.json --context 32768",
                        "python -m gqa config examples/configs/whisper-large-v3.json"):
            argv = command.split()[3:]
            argv[1] = os.path.join(ROOT, argv[1])
            self.assertEqual(sample(command), gqa_output(argv), command)

    def test_tables_in_the_readme_are_the_command_output(self):
        command = "python -m gqa tables --heads 8 --head-dim 128 --layers 32 --context 4096 --d-model 1024"
        self.assertIn(f"`{command}`", README)
        out = gqa_output(command.split()[3:])
        tables = re.findall(r"(?:^\|.*\|\n)+", out, re.M)
        cache, ratios = tables[0], tables[2]
        self.assertIn(cache, README)
        self.assertIn(ratios, README)

    def test_whole_block_in_the_readme_is_the_command_output(self):
        command = "python -m gqa tables --heads 32 --head-dim 128 --d-model 4096 --d-ff 11008"
        self.assertIn(f"`{command}`", README)
        out = gqa_output(command.split()[3:])
        block = out.split("The whole block")[1]
        table = "".join(line + "\n" for line in block.splitlines() if line.startswith("|"))
        self.assertIn(table, README)
        bars = [line for line in block.splitlines() if "of MHA" in line]
        self.assertTrue(bars and all(line in README for line in bars))


if __name__ == "__main__":
    unittest.main()
