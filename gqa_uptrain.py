"""gqa_uptrain: does quality come back?  The uptraining lab on the command line.

    python -m gqa uptrain [--seed 0] [--quick] [--json]

Pre-trains a small MHA model on a task that needs attention, converts it to
every g < h by three methods, trains on, and trains three models of MQA's
cache size from scratch (gqa_train.py has the model and the experiment).
Long runs show their progress on stderr.
"""

from __future__ import annotations

import argparse
import json
from typing import Sequence

from gqa_tools import progress_line
from gqa_train import QUICK, Recipe, render, run


def uptrain_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m gqa uptrain",
                                     description="Convert a trained MHA model to GQA/MQA, train on, "
                                                 "and measure held-out quality.")
    parser.add_argument("--seed", type=int, default=0, help="the seed of every draw (default 0)")
    parser.add_argument("--quick", action="store_true", help="a smaller run, in seconds")
    parser.add_argument("--json", action="store_true", help="the raw numbers, one object per run")
    args = parser.parse_args(argv)
    if not 0 <= args.seed <= 10 ** 9:
        parser.error(f"--seed must be between 0 and 1,000,000,000; got {args.seed}")
    recipe = (QUICK if args.quick else Recipe())._replace(seed=args.seed)
    with progress_line("uptrain") as progress:
        result = run(recipe, progress)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa uptrain`."""
    return uptrain_main(argv)
