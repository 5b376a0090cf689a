"""Helpers for the tests.  The brute-force reference itself lives in grader.py
(written independently of gqa.py), so the tests and the grader share one."""

from __future__ import annotations

import random

import grader


def new_rng(seed):
    return random.Random(seed)


def random_case(rng, max_h=12):
    """A random (h, g, n, m, d, d_v) with g dividing h and m >= n."""
    h = rng.randint(1, max_h)
    g = rng.choice(grader.ref_valid_g(h))
    n = rng.randint(1, 5)
    m = rng.randint(n, 7)
    return h, g, n, m, rng.randint(1, 6), rng.randint(1, 6)


def random_layer_case(rng, seed, max_d_model=8):
    """random_case's sizes with a d_model, MHA weights from seed and an input x [n][d_model]."""
    import gqa
    h, g, n, _, d, _ = random_case(rng)
    d_model = rng.randint(1, max_d_model)
    return h, g, gqa.init_weights(h, d_model, d, seed=seed), grader.rand_tensor(rng, n, d_model)


def flat(t):
    if isinstance(t, (list, tuple)):
        return [y for x in t for y in flat(x)]
    return [t]


class CloseMixin:
    """assertClose, in the manner of CPython's test_statistics: the first
    differing index, with its absolute and relative error."""

    def assertClose(self, got, expected, rel=1e-12, abs_tol=1e-12, msg=""):
        diff = grader.first_difference(got, expected, rel=rel, abs_tol=abs_tol)
        if diff:
            self.fail(f"{msg}: {diff}" if msg else diff)


def tiny_recipe():
    """A training recipe that takes a fraction of a second: what a report built from a
    correct module trains in its child process, in tests that are not about training."""
    import gqa_train
    return gqa_train.Recipe(heads=2, head_dim=2, d_model=4, d_ff=2, vocab=3, length=4, offsets=2,
                            keys=3, values=3, pairs=2, queries=1, batch=2, pretrain=4,
                            budgets=(2,), held_out=6, seeds=1)
