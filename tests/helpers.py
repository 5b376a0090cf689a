"""Helpers for the tests.  The brute-force reference itself lives in grader.py
(written independently of gqa.py), so the tests and the grader share one."""

from __future__ import annotations

import random

from gqa_grader import compare, reference


def new_rng(seed):
    return random.Random(seed)


def random_case(rng, max_h=12):
    """A random (h, g, n, m, d, d_v) with g dividing h and m >= n."""
    h = rng.randint(1, max_h)
    g = rng.choice(reference.ref_valid_g(h))
    n = rng.randint(1, 5)
    m = rng.randint(n, 7)
    return h, g, n, m, rng.randint(1, 6), rng.randint(1, 6)


def random_layer_case(rng, seed, max_d_model=8):
    """random_case's sizes with a d_model, MHA weights from seed and an input x [n][d_model]."""
    import gqa
    h, g, n, _, d, _ = random_case(rng)
    d_model = rng.randint(1, max_d_model)
    return h, g, gqa.init_weights(h, d_model, d, seed=seed), reference.rand_tensor(rng, n, d_model)


def flat(t):
    if isinstance(t, (list, tuple)):
        return [y for x in t for y in flat(x)]
    return [t]


class CloseMixin:
    """assertClose, in the manner of CPython's test_statistics: the first
    differing index, with its absolute and relative error."""

    def assertClose(self, got, expected, rel=1e-12, abs_tol=1e-12, msg=""):
        diff = compare.first_difference(got, expected, rel=rel, abs_tol=abs_tol)
        if diff:
            self.fail(f"{msg}: {diff}" if msg else diff)


def tiny_recipe():
    """A training recipe that takes a fraction of a second: what a report built from a
    correct module trains in its child process, in tests that are not about training."""
    from gqa_tools import train as gqa_train
    return gqa_train.Recipe(heads=2, head_dim=2, d_model=4, d_ff=2, vocab=3, length=4, offsets=2,
                            keys=3, values=3, pairs=2, queries=1, batch=2, pretrain=4,
                            budgets=(2,), held_out=6, seeds=1)


# ---------------------------------------------------------------------------
# CI's share of the process-heavy tests.
# ---------------------------------------------------------------------------
# The classes below start grader workers, child processes or whole commands:
# they are most of the suite's time.  `python -m unittest` runs all of them.
# CI runs the suite under every Python 3.9+ on the machine and sets
# GQA_TEST_SHARD="k/n" for the k-th of n: then each class here runs under
# exactly one of those Pythons, the rest of the suite (every in-process test)
# under all of them.  The numbers are CPU seconds measured on 3.11, used only
# to spread the classes evenly; classes in one tuple share work (the graded
# mutants) and run together.
HEAVY = (
    (7.0, ("test_grader.CommandLine", "test_grader.Mutants")),
    (3.2, ("test_docs.PageSamples",)),
    (2.5, ("test_grader.Referee",)),
    (2.4, ("test_sealed.ToolsThroughTheWorker",)),
    (2.2, ("test_report.FromAnotherModule",)),
    (1.3, ("test_train.WithAStudentsModule",)),
    (1.0, ("test_grader.Starter",)),
    (0.9, ("test_sealed.NeverCrashNeverStall",)),
    (0.8, ("test_figures.Writing",)),
    (0.6, ("test_sealed.Stalls",)),
    (0.6, ("test_report.Writing",)),
    (0.5, ("test_sealed.SealedAsRoot",)),
    (0.4, ("test_sealed.Folder",)),
    (0.3, ("test_sealed.WhatTheWorkerSays",)),
    (0.3, ("test_sealed.TheGradersMemory",)),
    (0.3, ("test_sealed.RealWork",)),
    (0.3, ("test_sealed.NeverAsRoot",)),
    (0.2, ("test_sealed.Autograder",)),
    (3.0, ("test_handout.Handout",)),
    (1.5, ("test_holds.SealedRunHolds",)),
    (0.8, ("test_holds.EveryRunCleansUp",)),
    (0.4, ("test_holds.SelfCheckAsRoot",)),
    (0.4, ("test_house.StudentFolder",)),
)


def _shard_of(name, n):
    """The shard (0..n-1) that runs class `name`: the heaviest group first, each to the
    shard with the least work so far (ties to the lowest index)."""
    load = [0.0] * n
    for cost, names in HEAVY:
        k = load.index(min(load))
        load[k] += cost
        if name in names:
            return k
    raise KeyError(f"{name} is not in tests.helpers.HEAVY")


def heavy(cls):
    """Class decorator: under GQA_TEST_SHARD="k/n" the class runs only in its own shard."""
    import os
    import unittest
    shard = os.environ.get("GQA_TEST_SHARD")
    name = f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}"
    if not shard:
        _shard_of(name, 1)                           # every heavy class is in the plan
        return cls
    k, n = (int(part) for part in shard.split("/"))
    if _shard_of(name, n) == k:
        return cls
    return unittest.skip(f"CI runs {name} under another Python (GQA_TEST_SHARD={shard})")(cls)
