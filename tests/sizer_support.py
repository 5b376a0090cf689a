"""Shared by the sizer's tests (test_config_families, test_accounting): the example
configs' folder (EXAMPLES), a shape read from a config given as keywords (shape), and
`python -m gqa config` run in this process (run)."""

from __future__ import annotations

import os

from gqa_tools.sizer import ModelShape
from tests.helpers import ROOT, run_gqa

EXAMPLES = os.path.join(ROOT, "examples", "configs")


def shape(**config):
    return ModelShape.from_config(config)


def run(*argv):
    """`gqa config ARGV`: (exit status, stdout, stderr)."""
    return run_gqa("config", *argv)
