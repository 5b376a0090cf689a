"""gqa_tools.train: does quality come back?  Convert a trained MHA model to GQA or MQA, then train.

The uptraining lab, as a library: `python -m gqa uptrain` (uptrain.py)
runs it and prints it, and report.md's section 8 runs the quick recipe.

The model, small enough to read and to train in pure Python: token and
position embeddings, one causal attention layer with g key/value heads and
a residual, a ReLU MLP with a residual, and one linear output layer holding
every answer kind's logits; cross-entropy on the positions that have an
answer; Adam.  Every random draw comes from random.Random(f"{stream}:{seed}")
(gqa_tools.common.rng_for).

The attention is the lab's: grouped_attention and grouped_attention_backward
of gqa.py (or of a module given as `lab`), each called once per batch, the
batch's sequences side by side as heads.  Sequence e's query heads are
e*h .. e*h + h - 1 and its K/V heads e*g .. e*g + g - 1, so contiguous
grouping (query head i reads K/V head i // (h // g)) keeps every sequence on
its own keys: a batch of E sequences is GQA with E*h query heads and E*g K/V
heads.  Only the positions from the first that has an answer are queried
(the lab's causal queries are the last n of the m keys).  The projections
around the attention are the model's own, batched: a position's input is
its embedding plus its symbols', so its projection is the sum of theirs,
and each embedding is projected once per batch.

Every lab function the experiment uses (Weights, init_weights, fold_weights,
group_heads, valid_g, grouped_attention, grouped_attention_backward,
kv_cache_elements) is called through `lab`, gqa by default, so the
experiment can run on a student's module: only the lab's public steps, the
API a student's module promises (so the backward computes the attention's
softmax again).

Two tasks (both in every run):

- offsets: at every position, name the tokens 1, 2, ..., `offsets` positions
  back.  Each head can solve it by looking a fixed offset back: positions only.
- recall: associative recall.  `pairs` positions each hold a key and its value
  (distinct keys), then `queries` positions hold a key alone; the answer is the
  value that came with that key.  A head must find the key by its content,
  which is what merging key heads most plausibly breaks.

The experiment, for every task and seed (`seeds` seeds from `seed` on), every
accuracy measured on `held_out` sequences of that seed that training never sees:

1. Pre-train an MHA model (g = h) for `pretrain` steps.
2. The control: train a copy of it on, max(budgets) more steps, measured
   after each budget.
3. For every g < h and every conversion (the mean of each group, its first
   head, new random heads), convert the K/V projections (everything else is
   copied), measure, then train on.  `budgets` are checkpoints of one run of
   max(budgets) steps, and the control and every conversion of a seed train
   on the same batches (paired runs), each with an Adam of its own.
4. Same cache, three ways, the MQA paper's comparison (when the recipe's
   same_cache is true; else "same_cache" is empty and "same_cache_note" says
   so): at MQA's cache per token
   (2 x head_dim values per layer), train from scratch for `pretrain` steps, on
   the same batches, (a) h query heads sharing one K/V head, (b) one head,
   (c) n heads of dim head_dim / n, n the largest divisor of head_dim up to
   h that leaves a dim of at least 2 (no such n: the row is left out, and
   "same_cache_note" says why).  Every K/V
   head starts with the same variance; the models with fewer attention
   parameters get a wider MLP, so the parameter counts match to within one
   MLP unit (as the MQA paper widened its feed-forward layers).

Each (seed, task) is measured on its own (measure_seed), from its own seeded
draws: run(recipe, jobs=N) measures them in N processes and gives the same
result for every N.

run(recipe, lab=gqa) returns plain JSON-able data:

    {"recipe": {...Recipe fields...},
     "seeds": [0, 1, ..., 19],
     "seconds": float,                               # wall time, never printed in report.md
     "tasks": {"offsets": T, "recall": T}}

    T = {"task": str, "description": str,
         "held_out": sequences, "answers": held-out answers per seed,
         "pretrained": {"steps": int, "correct": [per seed], "accuracy": [per seed], "loss": [per seed]},
         "control": [{"steps": int, "correct": [per seed], ...}, ...],       # one per budget
         "uptrain": [{"g": int, "conversion": "mean" | "first" | "random", "steps": int,
                      "correct": [per seed], "accuracy": [per seed], "loss": [per seed]}, ...],
         "same_cache": [{"model": label, "heads": int, "kv_heads": int, "head_dim": int,
                         "d_ff": int, "cache_per_token": int, "parameters": int, "steps": int,
                         "correct": [per seed], "accuracy": [per seed], "loss": [per seed]}, ...],
         "same_cache_note": str}                    # why a row is missing, or ""

Every list "per seed" is in the order of "seeds"; "uptrain" holds every
g < h, conversion and steps in (0,) + budgets; accuracy is correct / answers.
Over the seeds, every accuracy is a mean ± sd with its 95 % t-interval (stats;
t_quantile inverts the t distribution with the math module alone), every
count of seeds k/K comes with its 95 % Wilson interval (wilson), and a claim
holds, does not hold or is not resolved by where its interval lies (RULE).
What it prints is what it measured, whether or not it is what the papers found.
"""

from __future__ import annotations

import functools
import math
import signal
import time
from fractions import Fraction
from itertools import chain, repeat
from operator import add, mul, truediv
from statistics import NormalDist
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import gqa
from gqa_grader.i18n import N_, _, clauses, ngettext
from gqa_tools.common import rng_for, seed_for, text_table

# The matrix kernel of the model around the lab's attention (the projections,
# the MLP and the output layer are not the lab's lesson): gqa.py's arithmetic,
# each entry one dot product of a row and a column (math.sumprod where Python
# has it, else sum(map(mul, ...)), the same order of arguments), written here,
# so a float is the same as the lab's.  On 3.9 to 3.11 it is mapped over the
# columns, faster there than a comprehension calling sum; on 3.12 and later a
# comprehension (inlined since 3.12) is faster than the map.
if hasattr(math, "sumprod"):
    def _mm(a: Sequence, b_cols: Sequence) -> list:
        """a [n][k] @ b [k][p], b given by its columns [p][k] -> [n][p]."""
        sumprod = math.sumprod
        return [[sumprod(col, row) for col in b_cols] for row in a]
else:                                                    # Python 3.9 to 3.11
    def _mm(a: Sequence, b_cols: Sequence) -> list:
        """a [n][k] @ b [k][p], b given by its columns [p][k] -> [n][p]."""
        return [list(map(sum, map(map, repeat(mul), b_cols, repeat(row)))) for row in a]


class Recipe(NamedTuple):
    """The model, the tasks and the training: one record, so a run can be repeated."""
    heads: int = 4
    head_dim: int = 4
    d_model: int = 16
    d_ff: int = 8                   # the MLP's width (the equal-cache rows widen it)
    vocab: int = 8                  # offsets: tokens
    length: int = 8                 # offsets: positions
    offsets: int = 4                # offsets: answers 1..offsets positions back
    keys: int = 8                   # recall: keys
    values: int = 8                 # recall: values
    pairs: int = 6                  # recall: key-value positions, then
    queries: int = 2                # recall: query positions
    batch: int = 8
    lr: float = 0.02
    pretrain: int = 200             # steps of pre-training (and of each equal-cache model)
    budgets: tuple = (10, 20, 40)   # uptraining checkpoints: 5 %, 10 %, 20 % of pretrain
    held_out: int = 256             # sequences per task and seed, never trained on
    seed: int = 0                   # the first seed
    seeds: int = 20                 # how many seeds
    same_cache: bool = True         # train the equal-cache models (the MQA paper's comparison)


# A smaller model (4 heads, so g = 1 and g = 2) on shorter tasks, measured at
# two budgets, without the equal-cache models (a third of its work would go to
# them): report.md runs it.
QUICK = Recipe(heads=4, head_dim=4, d_model=12, d_ff=6, vocab=6, length=4, offsets=2,
               keys=6, values=6, pairs=3, queries=2, batch=6, lr=0.03, pretrain=100,
               budgets=(5, 20), held_out=128, same_cache=False)

# What a result's same_cache_note says when its recipe trains no equal-cache models.
NOT_TRAINED = ("the equal-cache models are not trained in this recipe; python -m gqa uptrain "
               "(the default recipe) trains them")

TASKS = ("offsets", "recall")
CONVERSIONS = ("mean", "first", "random")
# The conversions and the control as a table or a bar names them, translated: _(how).
SHOWN = (N_("mean"), N_("first"), N_("random"), N_("control"))
# The lab's steps that training calls: a student's module is trained on only
# once the grader passes every one of them.
NEEDS = ("valid_g", "group_heads", "grouped_attention", "init_weights", "fold_weights",
         "kv_cache_elements", "grouped_attention_backward")


# ---------------------------------------------------------------------------
# The tasks: an example is (inputs, answers); inputs[i] is the tuple of
# symbols summed at position i, answers the (position, head, target) triples.
# ---------------------------------------------------------------------------

class Shape(NamedTuple):
    symbols: int        # rows of the embedding table
    length: int         # positions
    heads: int          # output heads
    classes: int        # each output head's classes


def shape(r: Recipe, task: str) -> Shape:
    if task == "offsets":
        return Shape(r.vocab, r.length, r.offsets, r.vocab)
    return Shape(r.keys + r.values + 1, r.pairs + r.queries, 1, r.values)


def describe(r: Recipe, task: str) -> str:
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


# ---------------------------------------------------------------------------
# The model: embeddings, one lab layer with a residual, an MLP with a
# residual, one output head per answer kind.
# ---------------------------------------------------------------------------

class Model(NamedTuple):
    emb: list           # [symbols][d_model]
    pos: list           # [length][d_model]
    weights: list       # [w_q [h][d_model][d], w_k [g][d_model][d], w_v [g][d_model][d], w_o [h][d][d_model]]
    mlp: list           # [w_in [d_model][d_ff], w_out [d_ff][d_model]]
    out: list           # [heads][d_model][classes]


def init_model(r: Recipe, task: str, heads: int, head_dim: int, kv_heads: int, d_ff: int,
               stream: str, seed: int, lab: Any = gqa) -> Model:
    """A new model; its K/V heads are drawn as kv_heads heads, so their variance is 1 / d_model."""
    rng, sh = rng_for(f"{task} {stream}", seed), shape(r, task)

    def uniform(rows: int, cols: int, fan_in: int) -> list:
        a = math.sqrt(3.0 / fan_in)                  # variance 1 / fan_in
        return [[(2.0 * rng.random() - 1.0) * a for _ in range(cols)] for _ in range(rows)]

    w = lab.init_weights(heads, r.d_model, head_dim, seed=seed_for(f"{task} {stream} layer", seed))
    kv = w if kv_heads == heads else lab.init_weights(
        kv_heads, r.d_model, head_dim, seed=seed_for(f"{task} {stream} kv", seed))
    return Model(uniform(sh.symbols, r.d_model, 3), uniform(sh.length, r.d_model, 3),
                 [w.w_q, kv.w_k, kv.w_v, w.w_o],
                 [uniform(r.d_model, d_ff, r.d_model), uniform(d_ff, r.d_model, d_ff)],
                 [uniform(r.d_model, sh.classes, r.d_model) for _ in range(sh.heads)])


def parameters(model: Model) -> int:
    """How many numbers the model learns."""
    return sum(len(row) for row in _leaves(model))


def _leaves(t) -> list:
    """The innermost lists (rows of floats) of a Model, or of any nested structure, in order."""
    if isinstance(t, Model):                        # its depths known: no search
        return (t.emb + t.pos + [row for part in t.weights for head in part for row in head]
                + [row for m in t.mlp for row in m] + [row for head in t.out for row in head])
    out: list = []

    def walk(x):
        if x and isinstance(x[0], (list, tuple)):
            for y in x:
                walk(y)
        else:
            out.append(x)
    for part in t:
        walk(part)
    return out


def _transpose(rows: Sequence) -> list:
    return list(zip(*rows))


def _heads_of(rows: Sequence, start: int, heads: int, d: int) -> list:
    """Columns start .. start + heads * d of rows, d at a time: [heads][len(rows)][d]."""
    return [[row[a:a + d] for row in rows] for a in range(start, start + heads * d, d)]


class _Pass(NamedTuple):
    """What one batch's forward keeps for its backward (R = examples x queried positions)."""
    first: int          # the first position with an answer: positions first .. length - 1 are queried
    w_all: list         # [d_model][(h + 2g) d]: w_q, w_k and w_v side by side, head by head
    q: list             # [E*h][length - first][d]: sequence e's query heads are e*h .. e*h + h - 1
    k: list             # [E*g][length][d]: its K/V heads e*g .. e*g + g - 1
    v: list             # [E*g][length][d]
    heads: list         # [R][h*d]: each queried position's heads' outputs, side by side
    res: list           # [R][d_model]: input plus attention, the MLP's input
    pre: list           # [R][d_ff]: the MLP before its ReLU
    hid: list           # [R][d_ff]: after it
    z: list             # [R][d_model]: the output layer's input
    logits: list        # [R][out heads * classes]: every output head's logits, side by side


def _qkv(examples: Sequence, table: Sequence, first: int, h: int, g: int, d: int) -> tuple:
    """The lab's inputs (q, k, v) for a batch, every sequence's heads one after another.

    A position's input is its embedding plus its symbols', so its projection is
    the sum of their rows of table ([length + symbols][(h + 2g) d], each
    embedding projected once).
    """
    length = len(examples[0][0])
    cuts = range(0, (h + 2 * g) * d, d)
    split: dict = {}                                      # (position, symbols) -> its row's h + 2g heads
    q: list = []
    k: list = []
    v: list = []
    for inputs, _ in examples:
        seq = []                                          # [length][h + 2g][d]
        for i, syms in enumerate(inputs):
            heads = split.get((i, syms))
            if heads is None:                             # a position and symbols not seen yet
                row = table[i]
                for s in syms:
                    row = list(map(add, row, table[length + s]))
                heads = split[(i, syms)] = [row[a:a + d] for a in cuts]
            seq.append(heads)
        by_head = list(zip(*seq))                         # [h + 2g][length][d]
        q += [list(rows[first:]) for rows in by_head[:h]]     # only the queried positions ask
        k += [list(rows) for rows in by_head[h:h + g]]
        v += [list(rows) for rows in by_head[h + g:]]
    return q, k, v


def _forward(model: Model, examples: Sequence, g: int, lab: Any) -> _Pass:
    """The model on a batch of examples of one length, its attention one call of the lab's.

    Queries are the positions from the first that has an answer on (causal
    attention allows it: the lab's queries are the last n of the m keys), so
    a position no answer reads is never attended from.
    """
    w_q, w_k, w_v, w_o = model.weights
    h, d, length = len(w_q), len(w_q[0][0]), len(model.pos)
    first = min(i for _, answers in examples for i, _, _ in answers)
    w_all = [list(chain.from_iterable(parts)) for parts in zip(*w_q, *w_k, *w_v)]
    table = _mm(model.pos + model.emb, _transpose(w_all))          # [length + symbols][(h + 2g) d]
    q, k, v = _qkv(examples, table, first, h, g, d)
    out = lab.grouped_attention(q, k, v, causal=True)             # [E*h][length - first][d]
    heads = [list(chain.from_iterable(at_t)) for e in range(0, len(out), h)
             for at_t in zip(*out[e:e + h])]                              # [R][h*d]
    y = _mm(heads, _transpose(list(chain.from_iterable(w_o))))   # [R][d_model]
    res, inputs_at = [], {}                                       # (position, symbols) -> its input
    for inputs, _ in examples:
        for i in range(first, length):
            xi = inputs_at.get((i, inputs[i]))
            if xi is None:
                xi = model.pos[i]
                for s in inputs[i]:
                    xi = list(map(add, xi, model.emb[s]))
                inputs_at[(i, inputs[i])] = xi
            res.append(list(map(add, xi, y[len(res)])))           # the residual
    w_in, w_out = model.mlp
    pre = _mm(res, _transpose(w_in))
    hid = [[x if x > 0.0 else 0.0 for x in row] for row in pre]
    z = [list(map(add, a, b)) for a, b in zip(res, _mm(hid, _transpose(w_out)))]   # the residual
    logits = _mm(z, [col for head in model.out for col in zip(*head)])
    return _Pass(first, w_all, q, k, v, heads, res, pre, hid, z, logits)


def _loss(p: _Pass, examples: Sequence, classes: int, train: bool) -> tuple:
    """Cross-entropy of every answer: (loss, correct, count, d_logits [R][heads*classes] or None)."""
    nq = len(examples[0][0]) - p.first
    loss, correct, count = 0.0, 0, 0
    d_logits = [[0.0] * len(p.logits[0]) for _ in p.logits] if train else None
    exp, log = math.exp, math.log
    for e, (_, answers) in enumerate(examples):
        for i, o, t in answers:
            j, a = e * nq + i - p.first, o * classes
            row = p.logits[j][a:a + classes]
            top = max(row)
            ex = [exp(x - top) for x in row]
            total = math.fsum(ex)                        # correctly rounded: the same on every Python
            loss -= log(ex[t] / total)
            correct += row.index(top) == t               # the first of equal maxima
            count += 1
            if train:
                dl = [x / total for x in ex]
                dl[t] -= 1.0
                d_logits[j][a:a + classes] = dl          # d loss / d logits
    return loss, correct, count, d_logits


def _mlp_backward(mlp: Sequence, rows: list, pre: list, hid: list, d_z: list) -> tuple:
    """The MLP's residual block backward: (g_w_in, g_w_out, d_rows [R][d_model])."""
    w_in, w_out = mlp
    g_w_out = _mm(_transpose(hid), _transpose(d_z))        # [d_ff][d_model]: hid^T d_z
    d_pre = [[dv if pv > 0.0 else 0.0 for dv, pv in zip(dr, pr)]
             for dr, pr in zip(_mm(d_z, w_out), pre)]     # [R][d_ff]
    g_w_in = _mm(_transpose(rows), _transpose(d_pre))      # [d_model][d_ff]: rows^T d_pre
    d_rows = [list(map(add, a, b)) for a, b in zip(d_z, _mm(d_pre, w_in))]      # [R][d_model]
    return g_w_in, g_w_out, d_rows


def _table_gradient(examples: Sequence, grads: tuple, h: int, g: int, first: int,
                    symbols: int) -> list:
    """The gradient at each row of the projection's table: [length + symbols][(h + 2g) d].

    A position sends its (dq, dk, dv) to its own row and to its symbols'.
    """
    dq, dk, dv = grads
    length = len(examples[0][0])
    zero_q = [0.0] * (h * len(dk[0][0]))                  # a position no query asked from
    d_tab = [[0.0] * (len(zero_q) + 2 * g * len(dk[0][0])) for _ in range(length + symbols)]
    for e, (inputs, _) in enumerate(examples):
        qs = [zero_q] * first + [list(chain.from_iterable(at_i)) for at_i in zip(*dq[e * h:(e + 1) * h])]
        for i, (syms, q_i, k_i, v_i) in enumerate(zip(inputs, qs, zip(*dk[e * g:(e + 1) * g]),
                                                      zip(*dv[e * g:(e + 1) * g]))):
            row = list(chain(q_i, chain.from_iterable(k_i), chain.from_iterable(v_i)))
            for r in (i, *(length + s for s in syms)):
                d_tab[r] = list(map(add, d_tab[r], row))
    return d_tab


def _layer_backward(model: Model, examples: Sequence, p: _Pass, d_res: list, g: int, lab: Any) -> tuple:
    """Back through the attention layer: (g_emb, g_pos, g_weights), the lab's backward once."""
    w_q, _, _, w_o = model.weights
    h, d, length = len(w_q), len(w_q[0][0]), len(model.pos)
    nq, hd = length - p.first, h * d
    o_rows = list(chain.from_iterable(w_o))                       # [h*d][d_model]
    g_o = _mm(_transpose(p.heads), _transpose(d_res))            # [h*d][d_model]: heads^T d_res
    d_heads = _mm(d_res, o_rows)                                  # [R][h*d]: d_res w_o^T
    d_out = [[d_heads[e * nq + t][a:a + d] for t in range(nq)]
             for e in range(len(examples)) for a in range(0, hd, d)]          # [E*h][nq][d]
    grads = lab.grouped_attention_backward(p.q, p.k, p.v, d_out, causal=True)
    d_tab = _table_gradient(examples, grads, h, g, p.first, len(model.emb))
    g_all = _mm(_transpose(model.pos + model.emb), _transpose(d_tab))   # [d_model][(h + 2g) d]
    d_x = _mm(d_tab, p.w_all)                                     # [length + symbols][d_model]
    for e, (inputs, _) in enumerate(examples):                    # the residual's share
        for i in range(p.first, length):
            back = d_res[e * nq + i - p.first]
            for r in (i, *(length + s for s in inputs[i])):
                d_x[r] = list(map(add, d_x[r], back))
    g_w = [_heads_of(g_all, 0, h, d), _heads_of(g_all, hd, g, d), _heads_of(g_all, hd + g * d, g, d),
           [g_o[a:a + d] for a in range(0, hd, d)]]
    return d_x[length:], d_x[:length], g_w


def step(model: Model, examples: Sequence, g: int, lab: Any = gqa, train: bool = True) -> tuple:
    """(loss summed over the answers, correct answers, answers, gradients of the summed loss or None).

    examples: a batch of one task (all of one length); g: the model's K/V heads.
    """
    p = _forward(model, examples, g, lab)
    classes = len(model.out[0][0])
    loss, correct, count, d_logits = _loss(p, examples, classes, train)
    if not train:
        return loss, correct, count, None
    out_rows = [list(chain.from_iterable(head[r] for head in model.out))
                for r in range(len(p.z[0]))]                    # [d_model][heads*classes]
    g_out = _mm(_transpose(p.z), _transpose(d_logits))            # [d_model][heads*classes]
    d_z = _mm(d_logits, out_rows)                                 # [R][d_model]
    g_w_in, g_w_out, d_res = _mlp_backward(model.mlp, p.res, p.pre, p.hid, d_z)
    g_emb, g_pos, g_w = _layer_backward(model, examples, p, d_res, g, lab)
    g_heads = [[row[a:a + classes] for row in g_out] for a in range(0, len(g_out[0]), classes)]
    return loss, correct, count, Model(g_emb, g_pos, g_w, [g_w_in, g_w_out], g_heads)


class Adam:
    """Adam (Kingma and Ba 2015) over a Model's rows of floats, updated in place."""

    def __init__(self, model: Model, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, eps, 0
        self.rows = _leaves(model)                       # the model's rows, changed in place
        size = sum(map(len, self.rows))
        self.m, self.v = [0.0] * size, [0.0] * size      # every row's moments, one after another

    def update(self, model: Model, grads: Model, scale: float) -> None:
        self.t += 1
        b1, b2, eps, sqrt = self.b1, self.b2, self.eps, math.sqrt
        lr1, c2 = self.lr / (1 - b1 ** self.t), 1 - b2 ** self.t
        a1, a2 = (1 - b1) * scale, (1 - b2) * scale * scale     # the gradient is scale * g
        g = list(chain.from_iterable(_leaves(grads)))
        m = self.m = [b1 * mi + a1 * gi for mi, gi in zip(self.m, g)]
        v = self.v = [b2 * vi + a2 * (gi * gi) for vi, gi in zip(self.v, g)]
        roots = map(sqrt, map(truediv, v, repeat(c2)))   # sqrt(v / c2), at C speed
        new = [pi - lr1 * mi / (ri + eps) for pi, mi, ri in zip(chain.from_iterable(self.rows), m, roots)]
        end = 0
        for row in self.rows:                            # back into the model's rows, in place
            start, end = end, end + len(row)
            row[:] = new[start:end]


def train(model: Model, g: int, batches_: Sequence, lab: Any = gqa, lr: float = 0.01,
          optimizer: Optional[Adam] = None, checkpoints: Sequence[int] = (),
          measure: Optional[Callable[[int], None]] = None) -> Adam:
    """Train model in place on batches, in order; call measure(steps) after each checkpoint."""
    optimizer = optimizer or Adam(model, lr)
    wanted = set(checkpoints)
    for k, batch in enumerate(batches_, 1):
        grads = step(model, batch, g, lab)[3]
        optimizer.update(model, grads, 1.0 / len(batch))
        if k in wanted and measure is not None:
            measure(k)
    return optimizer


EVALUATED_TOGETHER = 256         # held-out sequences in one call of the lab's attention


def evaluate(model: Model, g: int, examples: Sequence, lab: Any = gqa) -> Tuple[int, float]:
    """(correct answers, mean loss) on examples, EVALUATED_TOGETHER at a time."""
    correct, loss, count = 0, 0.0, 0
    for i in range(0, len(examples), EVALUATED_TOGETHER):
        l, c, n, _ = step(model, examples[i:i + EVALUATED_TOGETHER], g, lab, train=False)
        loss, correct, count = loss + l, correct + c, count + n
    return correct, loss / count


# ---------------------------------------------------------------------------
# The experiment.
# ---------------------------------------------------------------------------

def copy_model(model: Model) -> Model:
    def copy(t):
        return [copy(x) for x in t] if isinstance(t, (list, tuple)) else t
    return Model(*(copy(part) for part in model))


def convert(model: Model, heads: int, g: int, how: str, r: Recipe, task: str, seed: int,
            lab: Any = gqa) -> Model:
    """The model with g K/V heads: by the mean of each group, its first head, or new heads."""
    new = copy_model(model)
    w = lab.Weights(*new.weights)
    if how == "mean":
        w = lab.fold_weights(w, g)
    elif how == "first":
        groups = lab.group_heads(heads, g)
        w = w._replace(w_k=[w.w_k[grp[0]] for grp in groups], w_v=[w.w_v[grp[0]] for grp in groups])
    else:
        fresh = lab.init_weights(g, r.d_model, r.head_dim, seed=seed_for(f"{task} random heads g={g}", seed))
        w = w._replace(w_k=fresh.w_k, w_v=fresh.w_v)
    return new._replace(weights=[w.w_q, w.w_k, w.w_v, w.w_o])


class SameCache(NamedTuple):
    model: str
    heads: int
    kv_heads: int
    head_dim: int


def same_cache_models(r: Recipe) -> Tuple[List[SameCache], str]:
    """The equal-cache rows at MQA's cache, and why a row is left out ("" when none is)."""
    h, d = r.heads, r.head_dim
    rows = [SameCache(f"{h} heads sharing 1 K/V head (MQA)", h, 1, d),
            SameCache("1 head (MHA, h = 1)", 1, 1, d)]
    for n in range(min(h, d // 2), 1, -1):               # narrower heads, none below dim 2
        if d % n == 0:
            rows.append(SameCache(f"{n} heads of dim {d // n} (MHA)", n, n, d // n))
            return rows, ""
    return rows, (f"no narrower heads: head dim {d} cannot be split into 2 or more heads of "
                  f"a whole dim of at least 2")


def _matched(r: Recipe, task: str, rows: Sequence[SameCache], lab: Any) -> List[dict]:
    """Each row's cache per token, MLP width and parameter count, the widths matching parameters."""
    sizes = []
    for row in rows:
        probe = init_model(r, task, row.heads, row.head_dim, row.kv_heads, 1, "probe", 0, lab)
        sizes.append(parameters(probe) - 2 * r.d_model)          # without its 1-unit MLP
    top, unit = sizes[0] + 2 * r.d_model * r.d_ff, 2 * r.d_model    # MQA with the recipe's MLP
    out = []
    for row, size in zip(rows, sizes):
        d_ff = max(1, (top - size + unit // 2) // unit)           # the nearest whole width
        out.append(dict(model=row.model, heads=row.heads, kv_heads=row.kv_heads,
                        head_dim=row.head_dim, d_ff=d_ff,
                        cache_per_token=lab.kv_cache_elements(1, row.kv_heads, 1, row.head_dim),
                        parameters=size + unit * d_ff))
    caches = {x["cache_per_token"] for x in out}
    if len(caches) != 1:
        raise RuntimeError(f"same_cache: the rows' caches differ: {sorted(caches)}")
    return out


def _blank(r: Recipe, task: str, lab: Any) -> dict:
    rows, note = same_cache_models(r)
    h = r.heads

    def entry(**fields: Any) -> dict:
        return dict(fields, correct=[], accuracy=[], loss=[])
    ups = [entry(g=g, conversion=how, steps=s)
           for g in lab.valid_g(h) if g < h for how in CONVERSIONS for s in (0,) + tuple(r.budgets)]
    same = [entry(**x, steps=r.pretrain) for x in _matched(r, task, rows, lab)] if r.same_cache else []
    note = note if r.same_cache else NOT_TRAINED
    return dict(task=task, description=describe(r, task), held_out=r.held_out, answers=None,
                pretrained=entry(steps=r.pretrain), control=[entry(steps=s) for s in r.budgets],
                uptrain=ups, same_cache=same, same_cache_note=note)


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


def measure_seed(r: Recipe, task: str, seed: int, lab: Any = gqa,
                 note: Callable[[str], None] = lambda text: None) -> dict:
    """One task and seed of the experiment: every (correct, mean loss) it measures.

    {"answers": held-out answers, "pretrained": value, "control": {steps: value},
     "uptrain": {(g, conversion, steps): value}, "same_cache": [value per row]}
    """
    h, test = r.heads, held_out(r, task, seed)
    exclude = {ex[0] for ex in test}
    got: dict = {"answers": sum(len(ex[1]) for ex in test), "control": {}, "uptrain": {}}

    def measure(model: Model, g: int) -> Tuple[int, float]:
        return evaluate(model, g, test, lab)

    note(f"seed {seed}, {task}: pre-training")
    mha = init_model(r, task, h, r.head_dim, h, r.d_ff, "mha", seed, lab)
    train(mha, h, batches(r, task, seed, "pretrain", r.pretrain, exclude), lab, r.lr)
    got["pretrained"] = measure(mha, h)
    # One stream of uptraining batches: the control and every conversion train on it.
    shared = batches(r, task, seed, "uptrain", max(r.budgets), exclude)
    note(f"seed {seed}, {task}: the control, MHA trained on")
    control = copy_model(mha)
    train(control, h, shared, lab, r.lr, checkpoints=r.budgets,
          measure=lambda k: got["control"].__setitem__(k, measure(control, h)))
    for g in [g for g in lab.valid_g(h) if g < h]:
        note(f"seed {seed}, {task}: uptraining g = {g}")
        for how in CONVERSIONS:
            model = convert(mha, h, g, how, r, task, seed, lab)
            got["uptrain"][(g, how, 0)] = measure(model, g)
            train(model, g, shared, lab, r.lr, checkpoints=r.budgets,
                  measure=lambda k: got["uptrain"].__setitem__((g, how, k), measure(model, g)))
    note(f"seed {seed}, {task}: same cache, from scratch" if r.same_cache else f"seed {seed}, {task}: done")
    got["same_cache"] = _from_scratch(r, task, seed, lab, exclude, measure) if r.same_cache else []
    return got


def _from_scratch(r: Recipe, task: str, seed: int, lab: Any, exclude: set,
                  measure: Callable[[Model, int], Tuple[int, float]]) -> list:
    """The equal-cache models, trained from scratch on one stream: each one's measurement."""
    scratch = batches(r, task, seed, "from scratch", r.pretrain, exclude)
    out = []
    for row in _matched(r, task, same_cache_models(r)[0], lab):
        model = init_model(r, task, row["heads"], row["head_dim"], row["kv_heads"], row["d_ff"],
                           f"scratch {row['model']}", seed, lab)
        if parameters(model) != row["parameters"]:
            raise RuntimeError(f"same_cache: {row['model']} has {parameters(model)} "
                               f"parameters, not {row['parameters']}")
        train(model, row["kv_heads"], scratch, lab, r.lr)
        out.append(measure(model, row["kv_heads"]))
    return out


def _record(t: dict, got: dict) -> None:
    """Append one seed's measurements (measure_seed) to a task's entries."""
    n = t["answers"] = got["answers"]
    pairs = [(t["pretrained"], got["pretrained"])]
    pairs += [(x, got["control"][x["steps"]]) for x in t["control"]]
    pairs += [(x, got["uptrain"][(x["g"], x["conversion"], x["steps"])]) for x in t["uptrain"]]
    pairs += list(zip(t["same_cache"], got["same_cache"]))
    for entry, (correct, loss) in pairs:
        entry["correct"].append(correct)
        entry["accuracy"].append(correct / n)
        entry["loss"].append(loss)


def _in_a_process(job: tuple) -> tuple:
    """A worker's job: measure_seed(recipe, task, seed) with the project's gqa.py."""
    r, task, seed = job
    return (seed, task), measure_seed(r, task, seed)


def _quiet() -> None:
    """A worker ignores Ctrl-C: the command that started it ends it, and says so once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _measure_all(r: Recipe, units: Sequence[tuple], lab: Any, note: Callable[[str], None],
                 jobs: int) -> dict:
    """{(seed, task): measure_seed(...)}, run in jobs processes when lab is the project's gqa.py.

    Each (seed, task) is measured alone from its own seeded draws, so the
    result is the same whatever the number of processes and the order they
    finish in.  Another module (a student's, in the grader's worker) runs
    in this process only.
    """
    if jobs <= 1 or lab is not gqa or len(units) < 2:
        return {(seed, task): measure_seed(r, task, seed, lab, note) for seed, task in units}
    import multiprocessing
    jobs = min(jobs, len(units))
    note(f"{len(units)} runs (a seed and a task each) in {jobs} processes")
    done = {}
    # fork where the system has it: the workers start at once, with this process's modules,
    # and no script that called run() is imported again (spawn, elsewhere, does that).
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with multiprocessing.get_context(method).Pool(jobs, initializer=_quiet) as pool:
        for (seed, task), got in pool.imap_unordered(_in_a_process, [(r, task, seed) for seed, task in units]):
            done[(seed, task)] = got
            note(f"seed {seed}, {task}: measured ({len(done)} of {len(units)} runs)")
    return done


def run(r: Recipe, lab: Any = gqa, progress: Optional[Callable[[str], None]] = None,
        jobs: int = 1) -> Dict[str, Any]:
    """The whole experiment, every task and seed, as plain data (see the module docstring).

    jobs: how many processes measure the seeds (the project's gqa.py only;
    the result is the same for every jobs).
    """
    check(r)
    start = time.perf_counter()
    seeds = list(range(r.seed, r.seed + r.seeds))
    out = {task: _blank(r, task, lab) for task in TASKS}
    units = [(seed, task) for seed in seeds for task in TASKS]
    measured = _measure_all(r, units, lab, progress or (lambda text: None), jobs)
    for seed, task in units:                             # in the order of the seeds
        _record(out[task], measured[(seed, task)])
    recipe = r._asdict()
    recipe["budgets"] = list(r.budgets)
    return {"recipe": recipe, "seeds": seeds, "seconds": time.perf_counter() - start, "tasks": out}


# ---------------------------------------------------------------------------
# Statistics over the seeds.  Every accuracy is correct / answers, so a mean
# and a standard deviation are computed from the counts as fractions and
# rounded once (the printed digits cannot depend on how a Python sums
# floats); the intervals come from the math module's functions alone.
# ---------------------------------------------------------------------------

Z95 = NormalDist().inv_cdf(0.975)       # the normal quantile of a two-sided 95 % interval


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function, by the modified Lentz method."""
    tiny = 1e-300

    def nonzero(v: float) -> float:
        return v if abs(v) > tiny else tiny
    c, d = 1.0, 1.0 / nonzero(1.0 - (a + b) * x / (a + 1.0))
    total = d
    for m in range(1, 500):
        for aa in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),            # even step
                   -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):   # odd step
            d = 1.0 / nonzero(1.0 + aa * d)
            c = nonzero(1.0 + aa / c)
            total *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return total


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):                # the fraction converges fast here
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=None)
def t_quantile(p: float, df: int) -> float:
    """The t with P(T <= t) = p, for 0.5 <= p < 1: t_cdf inverted by bisection."""
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, 2.0 * high
    for _ in range(200):
        mid = (low + high) / 2.0
        if mid in (low, high):
            break
        low, high = (mid, high) if t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2.0


def wilson(k: int, n: int, z: float = Z95) -> Tuple[float, float]:
    """The Wilson score interval of a share k / n (Wilson 1927): 95 % for the default z."""
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


class Stats(NamedTuple):
    """A mean over the seeds, their sample standard deviation, and its 95 % t-interval."""
    mean: float
    sd: float           # 0 for one seed
    low: float          # the interval; the mean itself for one seed
    high: float
    seeds: int


def interval(values: Sequence[Fraction], clip: Tuple[float, float] = (-math.inf, math.inf)) -> Stats:
    """The mean of exact values, their sd and the 95 % t-interval of the mean, clipped to clip."""
    k = len(values)
    mean = sum(values, Fraction(0)) / k
    var = sum((x - mean) ** 2 for x in values) / (k - 1) if k > 1 else Fraction(0)
    sd = math.sqrt(var)
    half = t_quantile(0.975, k - 1) * sd / math.sqrt(k) if k > 1 else 0.0
    return Stats(float(mean), sd, max(clip[0], float(mean) - half), min(clip[1], float(mean) + half), k)


def stats(correct: Sequence[int], answers: int) -> Stats:
    """An accuracy over the seeds: its interval clipped to [0, 1], where an accuracy lies."""
    return interval([Fraction(c, answers) for c in correct], (0.0, 1.0))


def spread_text(s: Stats) -> str:
    """'0.812 ± 0.034 [0.796, 0.828]': mean ± sd [95 % interval of the mean]."""
    if s.seeds == 1:
        return _("{mean} (1 seed)").format(mean=f"{s.mean:.3f}")
    return f"{s.mean:.3f} ± {s.sd:.3f} [{s.low:.3f}, {s.high:.3f}]"


def signed_text(s: Stats) -> str:
    """A difference: '+0.012 ± 0.020 [+0.003, +0.021]'."""
    if s.seeds == 1:
        return _("{mean} (1 seed)").format(mean=f"{s.mean:+.3f}")
    return f"{s.mean:+.3f} ± {s.sd:.3f} [{s.low:+.3f}, {s.high:+.3f}]"


def share_text(k: int, n: int) -> str:
    """'13/20 [0.433, 0.819]': k of n seeds, with its 95 % Wilson interval."""
    low, high = wilson(k, n)
    return f"{k}/{n} [{low:.3f}, {high:.3f}]"


# How a claim is decided: by an interval, never by a count alone.  It holds
# when its interval lies wholly above the bar, does not hold when wholly
# below, and is not resolved at these seeds otherwise.
WITHIN = Fraction(1, 50)     # "recovers": no more than 0.02 below the control ...
RECOVERS = 0.8               # ... in a share of the seeds whose interval lies above 0.8
MOST = 0.5                   # "in most seeds": a share whose interval lies above 0.5


def verdict(low: float, high: float, bar: float) -> str:
    """'holds', 'does not hold' or 'not resolved', by where [low, high] lies against bar."""
    return "holds" if low > bar else "does not hold" if high < bar else "not resolved"


def share_verdict(k: int, n: int, bar: float) -> str:
    """A share of seeds against a bar, by its Wilson interval."""
    return verdict(*wilson(k, n), bar)


def verdict_text(word: str, seeds: int) -> str:
    """A verdict as the end of a sentence whose subject is the claim."""
    if word == "not resolved":
        return ngettext("is not resolved at {seeds} seed", "is not resolved at {seeds} seeds", seeds).format(
            seeds=seeds)
    return _("holds") if word == "holds" else _("does not hold") if word == "does not hold" else word


# ---------------------------------------------------------------------------
# What the seeds say: counts and paired differences, read from run()'s result.
# ---------------------------------------------------------------------------

def cell(t: dict, g: int, how: str, steps: int) -> List[int]:
    """Each seed's correct answers of a conversion at g after steps."""
    return next(x["correct"] for x in t["uptrain"]
                if x["g"] == g and x["conversion"] == how and x["steps"] == steps)


def baseline(t: dict, steps: int, control: bool = True) -> List[int]:
    """Each seed's correct answers of the control after steps (the pre-trained model at 0 steps,
    and always when control is False: the frozen baseline)."""
    if not control or steps == 0:
        return t["pretrained"]["correct"]
    return next(x["correct"] for x in t["control"] if x["steps"] == steps)


def recovered(t: dict, g: int, steps: int, how: str = "mean", control: bool = True) -> int:
    """In how many seeds the conversion came to no more than 0.02 below its baseline."""
    return sum(Fraction(b - c, t["answers"]) <= WITHIN
               for b, c in zip(baseline(t, steps, control), cell(t, g, how, steps)))


def ordering_held(t: dict, g: int, steps: int) -> int:
    """In how many seeds mean > first > random held (strictly) at g after steps."""
    acc = [cell(t, g, how, steps) for how in CONVERSIONS]
    return sum(m > f > rd for m, f, rd in zip(*acc))


def difference(a: Sequence[int], b: Sequence[int], answers: int) -> Stats:
    """The paired difference a - b of two accuracies over the seeds."""
    return interval([Fraction(x - y, answers) for x, y in zip(a, b)])


def same_cache_wins(t: dict, strict: bool = True, rows: Optional[Sequence[int]] = None) -> int:
    """In how many seeds the first equal-cache row (MQA) beat (or, not strict, tied) the others
    (rows: their indices, every other row by default)."""
    others = [x["correct"] for i, x in enumerate(t["same_cache"]) if i and (rows is None or i in rows)]
    first = t["same_cache"][0]["correct"]
    return sum(all(c0 > c if strict else c0 >= c for c in col) for c0, *col in zip(first, *others))


def paper_budget(r: dict) -> int:
    """The budget nearest the GQA paper's 5 % of the pre-training steps."""
    return min(r["budgets"], key=lambda b: (abs(20 * b - r["pretrain"]), b))


def _pct(steps: int, r: dict) -> str:
    return f"{100 * steps / r['pretrain']:.3g} %"


# ---------------------------------------------------------------------------
# The sentences: each claim with its interval and what the rule decides.
# ---------------------------------------------------------------------------

RULE = N_("A claim holds when its 95 % interval lies wholly above its bar, does not hold when it "
        "lies wholly below, and is not resolved at these seeds otherwise: *recovers* is the share "
        "of seeds in which a conversion ends no more than 0.02 below the control (the MHA model "
        "trained on the same batches for as many steps), against 0.8; *in most seeds* (the "
        "orderings, the equal-cache comparison) is a share against 0.5; *drops* is the paired "
        "difference, pre-trained minus converted, against 0. A share's interval is Wilson's; a "
        "mean's is the t-interval over the seeds.")


def recovery_sentence(result: Dict[str, Any], task: str, g: int) -> str:
    """At one g: the drop, then each budget's recovery against the control (and the frozen model)."""
    r, t = result["recipe"], result["tasks"][task]
    K, n = len(result["seeds"]), t["answers"]
    drop = difference(t["pretrained"]["correct"], cell(t, g, "mean", 0), n)
    parts = []
    for s in r["budgets"]:
        k = recovered(t, g, s)
        parts.append(_("after {steps} steps ({share} of the pre-training) in {seeds} seeds: "
                       "*recovers* {verdict}").format(steps=s, share=_pct(s, r), seeds=share_text(k, K),
                                                      verdict=verdict_text(share_verdict(k, K, RECOVERS), K)))
    counts = [f"{recovered(t, g, s, control=False)}/{K}" for s in r["budgets"]]
    frozen = counts[0] if len(counts) == 1 else _("{items} and {last}").format(
        items=_(", ").join(counts[:-1]), last=counts[-1])
    return _("At g = {g}, converting by the mean takes held-out accuracy from {before} to {after}, "
             "a drop of {drop} (pre-trained minus converted): *drops* {verdict}. It came to no more "
             "than 0.02 below the control {budgets}. Against the frozen pre-trained model instead, "
             "those counts would be {frozen}.").format(
                 g=g, before=f"{stats(t['pretrained']['correct'], n).mean:.3f}",
                 after=f"{stats(cell(t, g, 'mean', 0), n).mean:.3f}", drop=spread_text(drop),
                 verdict=verdict_text(verdict(drop.low, drop.high, 0.0), K), budgets=clauses(parts),
                 frozen=frozen)


def ordering_sentence(result: Dict[str, Any], task: str, g: int) -> str:
    """At one g: in how many seeds the GQA paper's ordering held, before and after each budget."""
    r, t, K = result["recipe"], result["tasks"][task], len(result["seeds"])
    parts = []
    for s in (0,) + tuple(r["budgets"]):
        k = ordering_held(t, g, s)
        parts.append((_("before any training in {seeds} seeds ({verdict})") if s == 0 else
                      _("after {steps} steps in {seeds} seeds ({verdict})")).format(
                          steps=s, seeds=share_text(k, K), verdict=verdict_text(share_verdict(k, K, MOST), K)))
    return _("At g = {g}, the ordering mean > first > random (strictly), which the GQA paper (Ainslie "
             "et al. 2023) reports, held {when}; the verdicts are for *in most seeds*.").format(
                 g=g, when=_("{items} and {last}").format(items=_(", ").join(parts[:-1]), last=parts[-1]))


def control_sentence(result: Dict[str, Any], task: str) -> str:
    """What the extra steps did to the MHA model itself: the control against the frozen model."""
    r, t, K = result["recipe"], result["tasks"][task], len(result["seeds"])
    s = max(r["budgets"])
    gain = difference(baseline(t, s), t["pretrained"]["correct"], t["answers"])
    word = verdict(gain.low, gain.high, 0.0)
    said = {"holds": _("it improved"), "does not hold": _("it got worse"),
            "not resolved": _("no change is resolved")}
    return ngettext("The control, trained on for {steps} steps, changed by {change} (control minus "
                    "frozen): by its interval, {said} at {seeds} seed.",
                    "The control, trained on for {steps} steps, changed by {change} (control minus "
                    "frozen): by its interval, {said} at {seeds} seeds.", K).format(
                        steps=s, change=signed_text(gain), said=said[word], seeds=K)


def findings(result: Dict[str, Any], task: str) -> List[str]:
    """The sentences one task's uptraining supports, each claim with its interval and verdict."""
    t = result["tasks"][task]
    gs = sorted({x["g"] for x in t["uptrain"]})
    return ([control_sentence(result, task)] + [recovery_sentence(result, task, g) for g in gs]
            + [ordering_sentence(result, task, g) for g in gs])


def same_cache_finding(result: Dict[str, Any], task: str) -> str:
    """The equal-cache comparison's sentence, with its intervals, verdict and the MQA paper's claim."""
    t, K = result["tasks"][task], len(result["seeds"])
    same = t["same_cache"]
    k = same_cache_wins(t)
    alone = "; ".join(f"{x['model']} alone in {share_text(same_cache_wins(t, rows=[i]), K)}"
                      for i, x in enumerate(same) if i)
    return (f"At one cache size ({same[0]['cache_per_token']} values per token and layer) and matched "
            f"parameters, {same[0]['model']} beat every other row in {share_text(k, K)} seeds (beat or "
            f"tied them in {same_cache_wins(t, strict=False)}/{K}): that it beats them in most seeds "
            f"{verdict_text(share_verdict(k, K, MOST), K)}. It beat {alone}. The MQA paper (Shazeer "
            f"2019) reports that sharing one K/V head loses little against MHA and beats fewer or "
            f"narrower heads at the same cache.")


def seeds_text(seeds: Sequence[int]) -> str:
    """'5 seeds (0 to 4)', or '1 seed (7)'."""
    if len(seeds) == 1:
        return _("1 seed ({seed})").format(seed=seeds[0])
    return _("{count} seeds ({first} to {last})").format(count=len(seeds), first=seeds[0], last=seeds[-1])


def pretrained_at(t: dict, bar: float = 0.95) -> int:
    """In how many seeds the pre-trained model reached bar."""
    return sum(Fraction(c, t["answers"]) >= Fraction(bar) for c in t["pretrained"]["correct"])


# ---------------------------------------------------------------------------
# What it prints.
# ---------------------------------------------------------------------------

def uptraining_rows(result: Dict[str, Any], task: str, g: int) -> List[List[str]]:
    """One g's table: the control, each conversion, then the shares, one column per steps."""
    r, t, K = result["recipe"], result["tasks"][task], len(result["seeds"])
    n, steps = t["answers"], (0,) + tuple(r["budgets"])
    rows = [[_("MHA trained on (the control)")] + [spread_text(stats(baseline(t, s), n)) for s in steps]]
    rows += [[_(how)] + [spread_text(stats(cell(t, g, how, s), n)) for s in steps] for how in CONVERSIONS]
    rows.append([_("mean ≥ control − 0.02")] + [share_text(recovered(t, g, s), K) for s in steps])
    rows.append([_("mean ≥ frozen − 0.02")]
                + [share_text(recovered(t, g, s, control=False), K) for s in steps])
    rows.append([_("mean > first > random")] + [share_text(ordering_held(t, g, s), K) for s in steps])
    return rows


def steps_header(r: dict) -> List[str]:
    return [_("{steps} steps ({share})").format(steps=s, share=_pct(s, r)) if s else _("0 steps")
            for s in (0,) + tuple(r["budgets"])]


def same_cache_lines(result: Dict[str, Any], task: str) -> List[str]:
    """The equal-cache table and its sentence, or the note that the recipe trained none."""
    r, t = result["recipe"], result["tasks"][task]
    if not t["same_cache"]:
        return [f"({t['same_cache_note']}.)", ""]
    lines = [f"Same KV cache, trained from scratch for {r['pretrain']} steps on the same batches, "
             f"parameters matched by the MLP's width:",
             text_table(["model", "K/V cache per token", "parameters", "MLP width", "held-out accuracy"],
                        [[x["model"], str(x["cache_per_token"]), f"{x['parameters']:,}",
                          str(x["d_ff"]), spread_text(stats(x["correct"], t["answers"]))]
                         for x in t["same_cache"]])]
    if t["same_cache_note"]:
        lines.append(f"({t['same_cache_note']}.)")
    return lines + ["", same_cache_finding(result, task), ""]


def render(result: Dict[str, Any]) -> str:
    r, seeds = result["recipe"], result["seeds"]
    K = len(seeds)
    lines = [f"Uptraining lab: h = {r['heads']}, head dim {r['head_dim']}, d_model {r['d_model']}, "
             f"MLP width {r['d_ff']}; Adam at {r['lr']}, batches of {r['batch']}; pre-training "
             f"{r['pretrain']} steps; {seeds_text(seeds)}; each accuracy on {r['held_out']} held-out "
             f"sequences per seed, as mean ± sd [95 % interval of the mean] over the seeds, each count "
             f"of seeds as k/K [95 % Wilson interval]. " + _(RULE), ""]
    for task in TASKS:
        t = result["tasks"][task]
        pre = stats(t["pretrained"]["correct"], t["answers"])
        lines += [f"== {t['description']}.", "",
                  f"Pre-trained MHA (the frozen baseline): {spread_text(pre)} ({t['answers']:,} answers "
                  f"per seed); at 0.95 or more in {pretrained_at(t)}/{K} seeds.", ""]
        for g in sorted({x["g"] for x in t["uptrain"]}):
            lines.append(f"g = {g}: held-out accuracy after converting, then training on:")
            lines += [text_table(["model"] + steps_header(r), uptraining_rows(result, task, g)), ""]
        lines += findings(result, task) + [""]
        lines += same_cache_lines(result, task)
    lines.append("What was measured is printed as it came, whether or not it is what the papers found.")
    return "\n".join(lines)


def child_run(module: Any, values: Sequence[Any]) -> Iterator[Dict[str, Any]]:
    """In a worker (gqa_grader.run_in_child): run(Recipe(*values)) with module's steps; its result."""
    fields = dict(zip(Recipe._fields, values))
    fields["budgets"] = tuple(fields["budgets"])
    yield run(Recipe(**fields), lab=module)
