"""gqa_tools.seeds: the one seeding scheme of every tool.

Every random draw of every tool comes from one scheme: the user's seed S
and the name of what is drawn, as random.Random(f"{stream}:{S}").  The
streams are "weights" (init_weights, also given f"weights:{S}"), "weights of
layer L", "input", "random heads", and "attention inputs" (the q, k, v of a
student's report, section 5).  The grader follows the same scheme,
f"{check}:{S}", with code of its own.  String seeds are hashed with SHA-512
by random.Random, so the draws are the same on every Python version.

Section 8's training draws from it, so report-training.json is keyed by these
functions (gqa_tools/report/reads.py finds them), not by the tools' other helpers.
"""

from __future__ import annotations

import random


def seed_for(stream: str, seed: int) -> str:
    """Return the seed of one stream of draws: f"{stream}:{seed}".

    >>> seed_for("weights", 3)
    'weights:3'
    """
    return f"{stream}:{seed}"


def rng_for(stream: str, seed: int) -> random.Random:
    """Return random.Random(seed_for(stream, seed)).

    >>> rng_for("input", 1).random() == random.Random("input:1").random()
    True
    """
    return random.Random(seed_for(stream, seed))
