"""gqa_tools.uptraining: does quality come back?  Convert a trained MHA model to GQA or MQA, then train.

The uptraining lab: `python -m gqa uptrain` (command.py) runs it and prints
it, and report.md's section 8 runs the quick recipe (QUICK).  A small model
around the lab's grouped attention and its backward is pre-trained as MHA on
two tasks, converted to every g < h by three methods, and trained on beside
a control, over several seeds; every accuracy is measured on held-out
sequences and every claim decided by an exact interval.  Its modules, each built
on the ones above it:

    module        its job
    ------        -------
    recipe        Recipe (sizes, training, seeds) and QUICK; the names of the tasks and conversions
    tasks         the two tasks: drawing examples, held-out sets, batches; a recipe refused
    model         the model: its forward (one call of the lab's attention per batch),
                  its backward (one call of the lab's backward), Adam, train, evaluate
    experiment    run(): every task and seed, paired runs, seeds in processes; the result's shape
    claims        what the seeds say, read from a result: accuracies, paired differences, counts,
                  and the verdicts, decided together (Holm)
    sentences     the words: the claims' table, the plain summary, the rule and the scope
    printing      render(): the tables and the whole text the command prints
    command       `python -m gqa uptrain`, and --module's run in the grader's worker

The intervals and tests (Student's t, Wilson, the exact sign-flip test) are
gqa_tools.statistics', which the report shares.  Every random draw comes from
random.Random(f"{stream}:{seed}") (gqa_tools.seeds.rng_for), and `lab` (gqa
by default) is the module whose steps train, so a student's can stand in.

The names imported below are the lab's as a user of it (the report's
section 8, `run` and `render`) calls them; each is defined in the module the
table names, and a test of a part imports that part's module.
"""

from __future__ import annotations

from gqa_tools.uptraining.claims import (FAMILY, WITHIN, baseline, cell, half_within, paper_budget,
                                         pretrained_at, recovered, stats, verdicts)
from gqa_tools.uptraining.experiment import run
from gqa_tools.uptraining.printing import half_rows, render, steps_header, uptraining_rows
from gqa_tools.uptraining.recipe import CONVERSIONS, NEEDS, QUICK, TASKS, Recipe
from gqa_tools.uptraining.sentences import (DESCRIBED, MARGIN, RESOLVES, RULE, UNRESOLVABLE, margin, rule, said,
                                            same_cache_finding, scope, seeds_text, spread_text, summary, verdict_rows,
                                            verdict_word, verdicts_header)
from gqa_tools.uptraining.tasks import describe

__all__ = ["CONVERSIONS", "DESCRIBED", "FAMILY", "MARGIN", "NEEDS", "QUICK", "RESOLVES", "RULE", "Recipe",
           "TASKS", "UNRESOLVABLE", "WITHIN", "baseline", "cell", "describe", "half_rows", "half_within", "margin",
           "paper_budget", "pretrained_at", "recovered", "render", "rule", "run", "said", "same_cache_finding", "scope",
           "seeds_text", "spread_text", "stats", "steps_header", "summary", "uptraining_rows", "verdict_rows",
           "verdict_word", "verdicts", "verdicts_header"]
