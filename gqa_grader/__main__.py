"""python -m gqa_grader: the same as `python grader.py` (for an installed grader)."""
import os
import sys

if not sys.flags.isolated and not getattr(sys.flags, "safe_path", False) and sys.path[:1] in ([""], [os.getcwd()]):
    del sys.path[0]                      # the current folder: a student's files are not the grader's

from gqa_grader.cli import run  # noqa: E402

sys.exit(run())
