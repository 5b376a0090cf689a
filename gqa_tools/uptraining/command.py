"""gqa_tools.uptraining.command: does quality come back?  The uptraining lab on the command line.

    python -m gqa uptrain [--seed 0] [--seeds 20] [--quick] [--json] [--jobs N] [--module PATH]

On two tasks (one that positions solve, one that needs content), for each of
--seeds seeds from --seed on: pre-trains a small MHA model, trains a copy on
(the control), converts it to every g < h by three methods, trains each on
with the control's batches (--quick, report.md's recipe: and the two
controls, the control and the mean conversion trained to the first budget
with pre-training's Adam carried over, and each g < h trained from scratch
for as many steps in all), and trains three models of
MQA's cache size and matched parameters from scratch (experiment.py runs
it, model.py is the model).  It prints what was found in plain sentences
first; every accuracy as mean ± sd [95 % interval of the mean] over the
seeds, every count of seeds with its 95 % Wilson interval, and every claim
in one table, decided with the others by Holm's step-down at 5 %, its
interval at the level its step used.  --jobs N measures the
seeds in N processes (the output is the same for every N).  Progress, which
names the seed, goes to stderr.

--module PATH trains with a student's gqa.py instead of the project's: once
the grader passes every step that training calls (NEEDS), the whole
run goes to the grader's worker (its limits, its own session, a deadline),
in one process, so the module never runs in this one.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from typing import Any, Sequence

from gqa_grader.language import i18n
from gqa_grader.language.i18n import _
from gqa_tools.language import chosen_lang, speaking
from gqa_tools.options import MAX_JOBS, given, progress_line
from gqa_tools.referee import PROJECT, failing_steps, module_missing, sealed
from gqa_tools.uptraining.experiment import run
from gqa_tools.uptraining.printing import render
from gqa_tools.uptraining.recipe import NEEDS, QUICK, Recipe
from gqa_tools.uptraining.sentences import progress_said

MAX_SEEDS = 100
MODULE_BUDGET = 3600.0      # seconds a run with a student's module may take in all


def run_module(path: str, recipe: Recipe, note: Any = lambda text: None) -> Any:
    """run(recipe) with the gqa.py at path, in the grader's worker; its result.

    Raises ValueError saying why when the module's steps do not pass yet, or
    when the worker fails, hangs or sends something that is not a result.
    """
    import gqa_grader as grader
    if not os.path.isfile(path):
        raise ValueError(module_missing(path))
    sealed("uptrain", path)
    failing = failing_steps(path, NEEDS)
    if failing:
        raise ValueError(_("--module {path}: training needs steps that the grader does not pass yet: {steps} "
                           "(grade them with: {command})").format(
            path=path, steps="; ".join(failing),
            command=f"python grader.py --module {shlex.quote(path)}{i18n.lang_option()}"))
    note("gqa uptrain: " + _("the steps pass; training with {path}'s steps in the grader's worker (no "
                             "progress is shown until it ends)").format(path=path))
    result = None
    try:
        for item in grader.run_in_child(path, "gqa_tools.uptraining.experiment:child_run", [list(recipe)],
                                        paths=[PROJECT],
                                        label=path, what="training",
                                        item_timeout=MODULE_BUDGET, budget=MODULE_BUDGET):
            result = item
    except (grader.Refused, grader.Failure) as err:
        raise ValueError(f"--module {path}: {err}") from None
    if not (isinstance(result, dict) and isinstance(result.get("tasks"), dict)):
        raise ValueError(_("--module {path}: the worker sent no result").format(path=path))
    return result


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gqa uptrain",
                                     description=_("Convert a trained MHA model to GQA/MQA, train on, and "
                                                   "measure held-out quality over several seeds."))
    parser.add_argument("--seed", type=int, default=0, help=_("the first seed (default 0)"))
    parser.add_argument("--seeds", type=int, default=Recipe().seeds,
                        help=_("how many seeds (default {seeds}; at most {most})").format(seeds=Recipe().seeds,
                                                                                         most=MAX_SEEDS))
    parser.add_argument("--quick", action="store_true",
                        help=_("a smaller recipe, the one report.md's section 8 runs"))
    parser.add_argument("--json", action="store_true",
                        help=_("the raw numbers: every accuracy of every seed "
                               "(gqa_tools.uptraining.experiment's docstring)"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help=_("processes that measure the seeds (default: the number of CPUs; at most "
                               "{most}); the output is the same for every N").format(most=MAX_JOBS))
    parser.add_argument("--module", default=None, metavar="PATH",
                        help=_("train with this gqa.py (a student's), once the grader passes the steps "
                               "training needs; it runs in the grader's worker"))
    parser.add_argument("--lang", choices=i18n.LANGUAGES, default=None,
                        help=_("the language of what the command prints: {languages}; default: the "
                               "environment's (LANGUAGE, LC_ALL, LC_MESSAGES, LANG), else en").format(
                                   languages=i18n.listed()))
    return parser


def uptrain_main(argv: Sequence[str]) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if not 0 <= args.seed <= 10 ** 9:
        parser.error(_("--seed must be between 0 and 1,000,000,000; got {seed}").format(seed=args.seed))
    if not 1 <= args.seeds <= MAX_SEEDS:
        parser.error(_("--seeds must be between 1 and {most}; got {seeds}").format(most=MAX_SEEDS, seeds=args.seeds))
    if not 1 <= args.jobs <= MAX_JOBS:
        parser.error(_("--jobs must be between 1 and {most}; got {jobs}").format(most=MAX_JOBS, jobs=args.jobs))
    if args.module and given(argv, "--jobs", parser) is not None:
        print("gqa uptrain: " + _("--jobs goes without --module: a student's module trains in one process, "
                                  "the grader's worker"), file=sys.stderr)
        return 2
    recipe = (QUICK if args.quick else Recipe())._replace(seed=args.seed, seeds=args.seeds)
    if args.module:
        try:
            result = run_module(args.module, recipe, note=lambda text: print(text, file=sys.stderr))
            text = json.dumps(result, indent=1) if args.json else render(result)
        except ValueError as err:
            print(f"gqa uptrain: {err}", file=sys.stderr)
            return 2
        except Exception as err:            # a result the module's run made unreadable
            print("gqa uptrain: " + _("--module {path}: the worker's result cannot be read ({error})").format(
                path=args.module, error=f"{type(err).__name__}: {err}"), file=sys.stderr)
            return 2
        print(_("Trained with the steps of {path}.").format(path=args.module) + f"\n\n{text}"
              if not args.json else text)
        return 0
    with progress_line("uptrain") as progress:
        result = run(recipe, progress=lambda text: progress(progress_said(text)), jobs=args.jobs)
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa uptrain`."""
    with speaking(chosen_lang(argv, make_parser())):
        return uptrain_main(argv)
