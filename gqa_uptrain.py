"""gqa_uptrain: does quality come back?  The uptraining lab on the command line.

    python -m gqa uptrain [--seed 0] [--seeds 5] [--quick] [--json]

On two tasks (one that positions solve, one that needs content), for each of
--seeds seeds from --seed on: pre-trains a small MHA model, converts it to
every g < h by three methods, trains on with the same batches for each, and
trains three models of MQA's cache size and matched parameters from scratch
(gqa_train.py has the model and the experiment).  Every accuracy is printed
as mean ± sd [min, max] over the seeds, every ordering with the seeds it held
in.  Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
from typing import Sequence

from gqa_tools import progress_line
from gqa_train import QUICK, Recipe, render, run

MAX_SEEDS = 100


def uptrain_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m gqa uptrain",
                                     description="Convert a trained MHA model to GQA/MQA, train on, "
                                                 "and measure held-out quality over several seeds.")
    parser.add_argument("--seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--seeds", type=int, default=5, help="how many seeds (default 5)")
    parser.add_argument("--quick", action="store_true",
                        help="a smaller recipe, the one report.md's section 8 runs")
    parser.add_argument("--json", action="store_true",
                        help="the raw numbers: every accuracy of every seed (gqa_train's docstring)")
    args = parser.parse_args(argv)
    if not 0 <= args.seed <= 10 ** 9:
        parser.error(f"--seed must be between 0 and 1,000,000,000; got {args.seed}")
    if not 1 <= args.seeds <= MAX_SEEDS:
        parser.error(f"--seeds must be between 1 and {MAX_SEEDS}; got {args.seeds}")
    recipe = (QUICK if args.quick else Recipe())._replace(seed=args.seed, seeds=args.seeds)
    with progress_line("uptrain") as progress:
        result = run(recipe, progress=progress)
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa uptrain`."""
    return uptrain_main(argv)
