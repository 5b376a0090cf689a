"""gqa_tools.uptraining.tasks: the two tasks, their held-out sets and their batches.

Two tasks (both in every run):

- offsets: at every position, name the tokens 1, 2, ..., `offsets` positions
  back.  Each head can solve it by looking a fixed offset back: positions only.
- recall: associative recall.  `pairs` positions each hold a key and its value
  (distinct keys), then `queries` positions hold a key alone; the answer is the
  value that came with that key.  A head must find the key by its content,
  which is what merging key heads most plausibly breaks.

An example is (inputs, answers): inputs[i] is the tuple of symbols summed at
position i, answers the (position, output head, target) triples.  Every draw
comes from random.Random(f"{stream}:{seed}") (gqa_tools.seeds.rng_for); a
task's held-out sequences are never in a batch of training.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import gqa
from gqa_grader.language.i18n import _
from gqa_tools.seeds import rng_for
from gqa_tools.uptraining.recipe import TASKS, Recipe


class Shape(NamedTuple):
    """A task's sizes as the model sees them."""
    symbols: int        # rows of the embedding table
    length: int         # positions
    heads: int          # output heads
    classes: int        # each output head's classes


def shape(r: Recipe, task: str) -> Shape:
    """The sizes of a task's model: embedding rows, positions, output heads, classes."""
    if task == "offsets":
        return Shape(r.vocab, r.length, r.offsets, r.vocab)
    return Shape(r.keys + r.values + 1, r.pairs + r.queries, 1, r.values)


def describe(r: Recipe, task: str) -> str:
    """The task in one sentence, translated: what a result's "description" holds."""
    if task == "offsets":
        return _("offsets: at every position, name each of the {offsets} tokens before it "
                 "({length} positions, {vocab} tokens); a head can look a fixed offset back, "
                 "so positions alone solve it").format(offsets=r.offsets, length=r.length, vocab=r.vocab)
    return _("recall: {pairs} positions hold a key and its value ({keys} keys, all different, "
             "{values} values), then {queries} hold a key alone, whose value is the answer; "
             "a head must find the key by its content").format(pairs=r.pairs, keys=r.keys, values=r.values,
                                                              queries=r.queries)


def draw(r: Recipe, task: str, rng) -> tuple:
    """One example: (inputs, answers), both tuples, so examples can be compared and hashed."""
    if task == "offsets":
        s = [rng.randrange(r.vocab) for _ in range(r.length)]
        return (tuple((t,) for t in s),
                tuple((i, o, s[i - o - 1]) for o in range(r.offsets) for i in range(o + 1, r.length)))
    keys = rng.sample(range(r.keys), r.pairs)
    vals = [rng.randrange(r.values) for _ in keys]
    asked = rng.sample(range(r.pairs), r.queries)                 # which pairs are asked, in order
    blank = r.keys + r.values
    inputs = tuple((k, r.keys + v) for k, v in zip(keys, vals)) + tuple((keys[j], blank) for j in asked)
    return inputs, tuple((r.pairs + q, 0, vals[j]) for q, j in enumerate(asked))


def held_out(r: Recipe, task: str, seed: int) -> list:
    """The held-out sequences of one task and seed (distinct)."""
    rng, seen, out = rng_for(f"{task} held out", seed), set(), []
    while len(out) < r.held_out:
        ex = draw(r, task, rng)
        if ex[0] not in seen:
            seen.add(ex[0])
            out.append(ex)
    return out


def batches(r: Recipe, task: str, seed: int, stream: str, steps: int, exclude: set) -> list:
    """steps batches from one stream, none of whose sequences is in exclude (the held-out set)."""
    rng, out = rng_for(f"{task} {stream}", seed), []
    for _ in range(steps):
        batch = []
        while len(batch) < r.batch:
            ex = draw(r, task, rng)
            if ex[0] not in exclude:
                batch.append(ex)
        out.append(batch)
    return out


def sequences_possible(r: Recipe, task: str) -> int:
    """How many different inputs the task has."""
    if task == "offsets":
        return r.vocab ** r.length
    return math.perm(r.keys, r.pairs) * r.values ** r.pairs * math.perm(r.pairs, r.queries)


def check(r: Recipe) -> None:
    """Refuse a recipe that cannot run: a task too small for its held-out set, or impossible."""
    if not 1 <= r.queries <= r.pairs <= r.keys:
        raise gqa.GQAError(f"Recipe: recall needs 1 <= queries <= pairs <= keys; got queries={r.queries}, "
                           f"pairs={r.pairs}, keys={r.keys}")
    if min(r.vocab, r.values, r.length, r.offsets + 1, r.batch, r.seeds, r.d_ff) < 1 or r.offsets >= r.length:
        raise gqa.GQAError(f"Recipe: sizes must be at least 1 and offsets < length; got {r}")
    if sorted(set(r.budgets)) != list(r.budgets) or r.budgets[0] < 1:
        raise gqa.GQAError(f"Recipe: budgets must be increasing and at least 1; got {r.budgets}")
    for task in TASKS:
        if sequences_possible(r, task) < 2 * r.held_out:
            raise gqa.GQAError(f"Recipe: the {task} task has {sequences_possible(r, task):,} different "
                               f"sequences, fewer than twice held_out={r.held_out}, so training "
                               f"would have too few left")

