"""gqa_tools.train: does quality come back?  Convert a trained MHA model to GQA or MQA, then train.

The uptraining lab, as a library: `python -m gqa uptrain` (uptrain.py)
runs it and prints it, and report.md's section 8 runs the quick recipe.

The model, small enough to read and to train in pure Python: token and
position embeddings, one causal attention layer of the lab (gqa.py, or a
module given as `lab`) with g key/value heads and a residual, a ReLU MLP
with a residual, and one linear output head per answer kind; cross-entropy
on the positions that have an answer; Adam.  Every random draw comes from
random.Random(f"{stream}:{seed}") (gqa_tools.rng_for).

Every lab function the experiment uses (Weights, init_weights, fold_weights,
group_heads, valid_g, prepare_weights, layer, layer_backward,
kv_cache_elements) is called through `lab`, gqa by default, so the
experiment can run on a student's module: only the lab's public steps, the
API a student's module promises (so layer_backward runs each forward again).

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
2. For every g < h and every conversion (the mean of each group, its first
   head, new random heads), convert the K/V projections (everything else is
   copied), measure, then train on.  `budgets` are checkpoints of one run of
   max(budgets) steps, and the three conversions of a (g, seed) train on the
   same batches (paired runs).
3. Same cache, three ways, the MQA paper's comparison: at MQA's cache per token
   (2 x head_dim values per layer), train from scratch for `pretrain` steps, on
   the same batches, (a) h query heads sharing one K/V head, (b) one head,
   (c) n heads of dim head_dim / n, n the largest divisor of head_dim up to
   h that leaves a dim of at least 2 (no such n: the row is left out, and
   "same_cache_note" says why).  Every K/V
   head starts with the same variance; the models with fewer attention
   parameters get a wider MLP, so the parameter counts match to within one
   MLP unit (as the MQA paper widened its feed-forward layers).

run(recipe, lab=gqa) returns plain JSON-able data:

    {"recipe": {...Recipe fields...},
     "seeds": [0, 1, 2, 3, 4],
     "seconds": float,                               # wall time, never printed in report.md
     "tasks": {"offsets": T, "recall": T}}

    T = {"task": str, "description": str,
         "held_out": sequences, "answers": held-out answers per seed,
         "pretrained": {"steps": int, "correct": [per seed], "accuracy": [per seed], "loss": [per seed]},
         "uptrain": [{"g": int, "conversion": "mean" | "first" | "random", "steps": int,
                      "correct": [per seed], "accuracy": [per seed], "loss": [per seed]}, ...],
         "same_cache": [{"model": label, "heads": int, "kv_heads": int, "head_dim": int,
                         "d_ff": int, "cache_per_token": int, "parameters": int, "steps": int,
                         "correct": [per seed], "accuracy": [per seed], "loss": [per seed]}, ...],
         "same_cache_note": str}                    # why a row is missing, or ""

Every list "per seed" is in the order of "seeds"; "uptrain" holds every
g < h, conversion and steps in (0,) + budgets; accuracy is correct / answers.
What it prints is what it measured, whether or not it is what the papers found.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from operator import add, mul
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import gqa
from gqa_tools.common import rng_for, seed_for, text_table

# The matrix kernel of the model around the lab's layer (the embeddings, the
# MLP and the output heads are not the lab's lesson), whichever module supplies
# the layer: gqa.py's arithmetic (math.sumprod where Python has it, else
# sum(map(mul, ...))), written here, so a float is the same as the lab's.
if hasattr(math, "sumprod"):
    def _mm(a: Sequence, b_cols: Sequence) -> list:
        """a [n][k] @ b [k][p], b given by its columns [p][k] -> [n][p]."""
        sumprod = math.sumprod
        return [[sumprod(col, row) for col in b_cols] for row in a]
else:                                                    # Python 3.9 to 3.11
    def _mm(a: Sequence, b_cols: Sequence) -> list:
        """a [n][k] @ b [k][p], b given by its columns [p][k] -> [n][p]."""
        return [[sum(map(mul, col, row)) for col in b_cols] for row in a]


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
    held_out: int = 512             # sequences per task and seed, never trained on
    seed: int = 0                   # the first seed
    seeds: int = 5                  # how many seeds


# A smaller model (2 heads) on shorter tasks, measured at two budgets: report.md
# runs it.  Its pre-trained model reaches at least 0.95 on both tasks in each of
# seeds 0 to 4 (report.md shows the lowest).
QUICK = Recipe(heads=2, head_dim=4, d_model=12, d_ff=6, vocab=6, length=5, offsets=2,
               keys=6, values=6, pairs=3, queries=3, batch=6, lr=0.03, pretrain=100,
               budgets=(5, 20), held_out=512)

TASKS = ("offsets", "recall")
CONVERSIONS = ("mean", "first", "random")
# The lab's steps that training calls: a student's module is trained on only
# once the grader passes every one of them.
NEEDS = ("valid_g", "group_heads", "init_weights", "fold_weights", "prepare_weights", "layer",
         "kv_cache_elements", "grouped_attention_backward", "layer_backward")


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
        return (f"offsets: at every position, name each of the {r.offsets} tokens before it "
                f"({r.length} positions, {r.vocab} tokens); a head can look a fixed offset back, "
                f"so positions alone solve it")
    return (f"recall: {r.pairs} positions hold a key and its value ({r.keys} keys, all different, "
            f"{r.values} values), then {r.queries} hold a key alone, whose value is the answer; "
            f"a head must find the key by its content")


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
    """The innermost lists (rows of floats) of a nested structure, in order."""
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


def _embed(model: Model, inputs: Sequence) -> list:
    """One example's layer input: each position's embedding plus its symbols': [length][d_model]."""
    x = []
    for i, syms in enumerate(inputs):
        xi = model.pos[i]
        for s in syms:
            xi = list(map(add, xi, model.emb[s]))
        x.append(xi)
    return x


def _asked(examples: Sequence, length: int, heads: int) -> tuple:
    """(where, asked): where maps a position of the batch (e * length + i) to its row among
    the answered positions, in order of first use; asked[head] its (row, target) pairs."""
    where: Dict[int, int] = {}
    asked: List[list] = [[] for _ in range(heads)]
    for e, (_, answers) in enumerate(examples):
        for i, o, t in answers:
            asked[o].append((where.setdefault(e * length + i, len(where)), t))
    return where, asked


def _output_heads(out: Sequence, z: list, asked: Sequence, train: bool) -> tuple:
    """Cross-entropy of every output head: (loss, correct, count, g_out, d_z), the last two None
    unless train; d_z [A][d_model] is the loss's gradient at z."""
    loss, correct, count = 0.0, 0, 0
    d_z = [[0.0] * len(z[0]) for _ in z] if train else None
    g_out = []
    for u, pairs in zip(out, asked):
        zs = [z[j] for j, _ in pairs]                     # [answers][d_model]
        logits = _mm(zs, _transpose(u))                   # [answers][classes]
        dl = []
        for row, (_, t) in zip(logits, pairs):
            top = max(row)
            ex = [math.exp(v - top) for v in row]
            total = 0.0
            for v in ex:
                total += v
            loss -= math.log(ex[t] / total)
            correct += row.index(top) == t               # the first of equal maxima
            count += 1
            if train:
                p = [v / total for v in ex]
                p[t] -= 1.0
                dl.append(p)                              # d loss / d logits
        if train:
            g_out.append(_mm(_transpose(zs), _transpose(dl)))     # [d_model][classes]: z^T dl
            for (j, _), back in zip(pairs, _mm(dl, u)):           # dl u^T: [answers][d_model]
                d_z[j] = list(map(add, d_z[j], back))
    return loss, correct, count, (g_out if train else None), d_z


def _mlp_backward(mlp: Sequence, rows: list, pre: list, hid: list, d_z: list) -> tuple:
    """The MLP's residual block backward: (g_w_in, g_w_out, d_rows [A][d_model])."""
    w_in, w_out = mlp
    g_w_out = _mm(_transpose(hid), _transpose(d_z))        # [d_ff][d_model]: hid^T d_z
    d_pre = [[d if p > 0.0 else 0.0 for d, p in zip(dr, pr)]
             for dr, pr in zip(_mm(d_z, w_out), pre)]     # [A][d_ff]
    g_w_in = _mm(_transpose(rows), _transpose(d_pre))      # [d_model][d_ff]: rows^T d_pre
    d_rows = [list(map(add, a, b)) for a, b in zip(d_z, _mm(d_pre, w_in))]      # [A][d_model]
    return g_w_in, g_w_out, d_rows


def _back_through_layer(model: Model, examples: Sequence, xs: Sequence, w: Any, g: int, lab: Any,
                       where: dict, d_rows: list) -> tuple:
    """Back through the lab's layer and the embeddings, example by example: (g_emb, g_pos, g_w).

    lab.layer_backward runs the layer's forward again: a module's public steps are all
    that the experiment may rely on.
    """
    length, d_model = len(xs[0]), len(model.pos[0])
    zero = [0.0] * d_model
    g_emb = [[0.0] * d_model for _ in model.emb]
    g_pos = [[0.0] * d_model for _ in model.pos]
    g_w = None
    for e, (inputs, _) in enumerate(examples):
        d_res = [d_rows[where[e * length + i]] if e * length + i in where else zero
                 for i in range(length)]                  # [length][d_model]
        dx, grads = lab.layer_backward(xs[e], w, g, d_res, causal=True)
        for i, syms in enumerate(inputs):
            d = list(map(add, dx[i], d_res[i]))           # through the layer and the residual
            g_pos[i] = list(map(add, g_pos[i], d))
            for s in syms:
                g_emb[s] = list(map(add, g_emb[s], d))
        if g_w is None:
            g_w = [[list(map(list, head)) for head in t] for t in grads]
            total_rows = _leaves(g_w)
        else:
            for t, p in zip(total_rows, _leaves(grads)):
                t[:] = map(add, t, p)
    return g_emb, g_pos, g_w


def step(model: Model, examples: Sequence, g: int, lab: Any = gqa, train: bool = True) -> tuple:
    """(loss summed over the answers, correct answers, answers, gradients of the summed loss or None)."""
    w = lab.Weights(*model.weights)
    prepared = lab.prepare_weights(w, g)                 # checked and folded once per batch
    xs, res = [], []                                     # xs [E][length][d_model], res [E*length][d_model]
    for inputs, _ in examples:
        x = _embed(model, inputs)
        y = lab.layer(x, prepared, g, causal=True)
        xs.append(x)
        res += [list(map(add, a, b)) for a, b in zip(x, y)]
    # Only the positions with an answer go on through the MLP and the output heads.
    where, asked = _asked(examples, len(xs[0]), len(model.out))
    rows = [res[i] for i in where]                        # [A][d_model], in order of first use
    w_in, w_out = model.mlp
    pre = _mm(rows, _transpose(w_in))                     # [A][d_ff]
    hid = [[v if v > 0.0 else 0.0 for v in row] for row in pre]
    z = [list(map(add, a, b)) for a, b in zip(rows, _mm(hid, _transpose(w_out)))]   # [A][d_model]
    loss, correct, count, g_out, d_z = _output_heads(model.out, z, asked, train)
    if not train:
        return loss, correct, count, None
    g_w_in, g_w_out, d_rows = _mlp_backward(model.mlp, rows, pre, hid, d_z)
    g_emb, g_pos, g_w = _back_through_layer(model, examples, xs, w, g, lab, where, d_rows)
    return loss, correct, count, Model(g_emb, g_pos, g_w, [g_w_in, g_w_out], g_out)


class Adam:
    """Adam (Kingma and Ba 2015) over a Model's rows of floats, updated in place."""

    def __init__(self, model: Model, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, eps, 0
        self.rows = _leaves(model)                       # the model's rows, changed in place
        self.m = [[0.0] * len(row) for row in self.rows]
        self.v = [[0.0] * len(row) for row in self.rows]

    def update(self, model: Model, grads: Model, scale: float) -> None:
        self.t += 1
        b1, b2, eps, sqrt = self.b1, self.b2, self.eps, math.sqrt
        lr1, c2 = self.lr / (1 - b1 ** self.t), 1 - b2 ** self.t
        a1, a2 = 1 - b1, 1 - b2
        for p, g, m, v in zip(self.rows, _leaves(grads), self.m, self.v):   # each a row, in place
            g = [gi * scale for gi in g]
            m[:] = [b1 * mi + a1 * gi for mi, gi in zip(m, g)]
            v[:] = [b2 * vi + a2 * gi * gi for vi, gi in zip(v, g)]
            p[:] = [pi - lr1 * mi / (sqrt(vi / c2) + eps) for pi, mi, vi in zip(p, m, v)]


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


def evaluate(model: Model, g: int, examples: Sequence, lab: Any = gqa) -> Tuple[int, float]:
    """(correct answers, mean loss) on examples, 64 at a time."""
    correct, loss, count = 0, 0.0, 0
    for i in range(0, len(examples), 64):
        l, c, n, _ = step(model, examples[i:i + 64], g, lab, train=False)
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
    ups = [dict(g=g, conversion=how, steps=s, correct=[], accuracy=[], loss=[])
           for g in lab.valid_g(h) if g < h for how in CONVERSIONS for s in (0,) + tuple(r.budgets)]
    same = [dict(x, steps=r.pretrain, correct=[], accuracy=[], loss=[]) for x in _matched(r, task, rows, lab)]
    return dict(task=task, description=describe(r, task), held_out=r.held_out, answers=None,
                pretrained=dict(steps=r.pretrain, correct=[], accuracy=[], loss=[]),
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


def run(r: Recipe, lab: Any = gqa, progress: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
    """The whole experiment, every task and seed, as plain data (see the module docstring)."""
    check(r)
    start, h = time.perf_counter(), r.heads
    seeds = list(range(r.seed, r.seed + r.seeds))
    out = {task: _blank(r, task, lab) for task in TASKS}

    def note(text: str) -> None:
        if progress:
            progress(text)

    for seed in seeds:
        for task in TASKS:
            t = out[task]
            test = held_out(r, task, seed)
            exclude = {ex[0] for ex in test}
            t["answers"] = sum(len(ex[1]) for ex in test)

            def record(entry: dict, model: Model, g: int) -> None:
                correct, loss = evaluate(model, g, test, lab)
                entry["correct"].append(correct)
                entry["accuracy"].append(correct / t["answers"])
                entry["loss"].append(loss)

            note(f"seed {seed}, {task}: pre-training")
            mha = init_model(r, task, h, r.head_dim, h, r.d_ff, "mha", seed, lab)
            train(mha, h, batches(r, task, seed, "pretrain", r.pretrain, exclude), lab, r.lr)
            record(t["pretrained"], mha, h)
            for g in [g for g in lab.valid_g(h) if g < h]:
                note(f"seed {seed}, {task}: uptraining g = {g}")
                shared = batches(r, task, seed, f"uptrain g={g}", max(r.budgets), exclude)
                for how in CONVERSIONS:
                    entries = {x["steps"]: x for x in t["uptrain"] if x["g"] == g and x["conversion"] == how}
                    model = convert(mha, h, g, how, r, task, seed, lab)
                    record(entries[0], model, g)
                    train(model, g, shared, lab, r.lr, checkpoints=r.budgets,
                          measure=lambda k: record(entries[k], model, g))
            note(f"seed {seed}, {task}: same cache, from scratch")
            scratch = batches(r, task, seed, "from scratch", r.pretrain, exclude)
            for entry in t["same_cache"]:
                model = init_model(r, task, entry["heads"], entry["head_dim"], entry["kv_heads"],
                                   entry["d_ff"], f"scratch {entry['model']}", seed, lab)
                if parameters(model) != entry["parameters"]:
                    raise RuntimeError(f"same_cache: {entry['model']} has {parameters(model)} "
                                       f"parameters, not {entry['parameters']}")
                train(model, entry["kv_heads"], scratch, lab, r.lr)
                record(entry, model, entry["kv_heads"])
    recipe = r._asdict()
    recipe["budgets"] = list(r.budgets)
    return {"recipe": recipe, "seeds": seeds, "seconds": time.perf_counter() - start, "tasks": out}


# ---------------------------------------------------------------------------
# Statistics over the seeds, exact: every accuracy is correct / answers, so
# means and spreads are computed from the counts as fractions and rounded
# once; the printed digits cannot depend on how a Python sums floats.
# ---------------------------------------------------------------------------

class Stats(NamedTuple):
    mean: float
    sd: float           # the sample standard deviation (0 for one seed)
    low: float
    high: float


def stats(correct: Sequence[int], answers: int) -> Stats:
    k = len(correct)
    mean = Fraction(sum(correct), k * answers)
    var = (sum(Fraction(c, answers) ** 2 for c in correct) - k * mean * mean) / (k - 1) if k > 1 else 0
    return Stats(float(mean), math.sqrt(float(var)), min(correct) / answers, max(correct) / answers)


def spread_text(s: Stats) -> str:
    """'0.812 ± 0.034 [0.771, 0.859]'."""
    return f"{s.mean:.3f} ± {s.sd:.3f} [{s.low:.3f}, {s.high:.3f}]"


def ordering_held(t: dict, g: int, steps: int) -> int:
    """In how many seeds mean > first > random held (strictly) at g after steps."""
    acc = {x["conversion"]: x["correct"] for x in t["uptrain"] if x["g"] == g and x["steps"] == steps}
    return sum(m > f > rd for m, f, rd in zip(acc["mean"], acc["first"], acc["random"]))


def recovered(t: dict, g: int, steps: int, how: str = "mean", within: Fraction = Fraction(1, 50)) -> int:
    """In how many seeds the conversion came within 0.02 of its pre-trained model's accuracy."""
    pre = t["pretrained"]["correct"]
    got = next(x["correct"] for x in t["uptrain"] if x["g"] == g and x["conversion"] == how
               and x["steps"] == steps)
    return sum(Fraction(p - c, t["answers"]) <= within for p, c in zip(pre, got))


def recovers(k: int, seeds: int) -> bool:
    """'recovers' needs at least 4 seeds of 5 (80 %) within 0.02 of the pre-trained accuracy."""
    return 5 * k >= 4 * seeds


def same_cache_wins(t: dict, strict: bool = True) -> int:
    """In how many seeds the first equal-cache row (MQA) beat (or, not strict, tied) every other row."""
    rows = [x["correct"] for x in t["same_cache"]]
    return sum(all(col[0] > c if strict else col[0] >= c for c in col[1:]) for col in zip(*rows))


def paper_budget(r: dict) -> int:
    """The budget nearest the GQA paper's 5 % of the pre-training steps."""
    return min(r["budgets"], key=lambda b: (abs(20 * b - r["pretrain"]), b))


def _pct(steps: int, r: dict) -> str:
    return f"{100 * steps / r['pretrain']:.3g} %"


def findings(result: Dict[str, Any], task: str) -> List[str]:
    """The sentences one task's numbers support, each with its seeds held and its paper."""
    r, t = result["recipe"], result["tasks"][task]
    K, n = len(result["seeds"]), t["answers"]
    gs = sorted({x["g"] for x in t["uptrain"]})
    five, last = paper_budget(r), max(r["budgets"])
    pre = stats(t["pretrained"]["correct"], n)
    out = []
    for g in gs:
        def acc(how: str, s: int) -> Stats:
            return stats(next(x["correct"] for x in t["uptrain"]
                              if x["g"] == g and x["conversion"] == how and x["steps"] == s), n)
        parts = []
        for s in sorted({five, last}):
            k = recovered(t, g, s)
            parts.append(f"after {s} steps ({_pct(s, r)} of the pre-training) it "
                         f"{'recovers' if recovers(k, K) else 'partly recovers'}, to "
                         f"{spread_text(acc('mean', s))}, within 0.02 of its pre-trained model "
                         f"in {k}/{K} seeds")
        out.append(f"At g = {g}, converting by the mean drops held-out accuracy from "
                   f"{pre.mean:.3f} to {acc('mean', 0).mean:.3f} (means over the seeds); "
                   + "; ".join(parts) + ".")
    out.append("The ordering mean > first > random (strictly) held "
               + "; ".join(f"at g = {g} in {ordering_held(t, g, last)}/{K} seeds after {last} steps, "
                           + (f"{ordering_held(t, g, five)}/{K} after {five} and " if five != last else "")
                           + f"{ordering_held(t, g, 0)}/{K} before any training" for g in gs)
               + ". The GQA paper (Ainslie et al. 2023) uptrains with 5 % of the pre-training "
                 "compute and reports mean > first > random.")
    return out


def same_cache_finding(result: Dict[str, Any], task: str) -> str:
    """The equal-cache comparison's sentence, with its seeds held and the MQA paper's claim."""
    t, K = result["tasks"][task], len(result["seeds"])
    same = t["same_cache"]
    others = " and ".join(x["model"] for x in same[1:])
    return (f"At one cache size ({same[0]['cache_per_token']} values per token and layer) and "
            f"matched parameters, {same[0]['model']} beat {others} in {same_cache_wins(t)}/{K} seeds "
            f"(beat or tied them in {same_cache_wins(t, strict=False)}/{K}). The MQA paper "
            f"(Shazeer 2019) reports that sharing one K/V head loses little against MHA and beats "
            f"fewer or narrower heads at the same cache.")


# ---------------------------------------------------------------------------
# What it prints.
# ---------------------------------------------------------------------------

def seeds_text(seeds: Sequence[int]) -> str:
    """'5 seeds (0 to 4)', or '1 seed (7)'."""
    if len(seeds) == 1:
        return f"1 seed ({seeds[0]})"
    return f"{len(seeds)} seeds ({seeds[0]} to {seeds[-1]})"


def render(result: Dict[str, Any]) -> str:
    r, seeds = result["recipe"], result["seeds"]
    K = len(seeds)
    lines = [f"Uptraining lab: h = {r['heads']}, head dim {r['head_dim']}, d_model {r['d_model']}, "
             f"MLP width {r['d_ff']}; Adam at {r['lr']}, batches of {r['batch']}; pre-training "
             f"{r['pretrain']} steps; {seeds_text(seeds)}; each accuracy on "
             f"{r['held_out']} held-out sequences per seed, as mean ± sd [min, max] over the seeds. "
             f"'Recovers': within 0.02 of the pre-trained model's accuracy in at least 80 % of the seeds.", ""]
    for task in TASKS:
        t = result["tasks"][task]
        pre = stats(t["pretrained"]["correct"], t["answers"])
        lines += [f"== {t['description']}.", "",
                  f"Pre-trained MHA: {spread_text(pre)} ({t['answers']:,} answers per seed).", ""]
        gs = sorted({x["g"] for x in t["uptrain"]})
        steps = sorted({x["steps"] for x in t["uptrain"]})
        for g in gs:
            lines.append(f"g = {g}: held-out accuracy after converting, then training on:")
            rows = []
            for how in CONVERSIONS:
                rows.append([how] + [spread_text(stats(x["correct"], t["answers"]))
                                     for s in steps for x in t["uptrain"]
                                     if x["g"] == g and x["conversion"] == how and x["steps"] == s])
            rows.append(["mean > first > random"] + [f"{ordering_held(t, g, s)}/{K} seeds" for s in steps])
            rows.append(["mean within 0.02 of pre-trained"] + [f"{recovered(t, g, s)}/{K} seeds" for s in steps])
            lines += [text_table(["conversion"] + [f"{s} steps ({_pct(s, r)})" if s else "0 steps"
                                                   for s in steps], rows), ""]
        lines += findings(result, task) + [""]
        same = t["same_cache"]
        lines.append(f"Same KV cache, trained from scratch for {r['pretrain']} steps on the same batches, "
                     f"parameters matched by the MLP's width:")
        lines.append(text_table(["model", "K/V cache per token", "parameters", "MLP width", "held-out accuracy"],
                                [[x["model"], str(x["cache_per_token"]), f"{x['parameters']:,}",
                                  str(x["d_ff"]), spread_text(stats(x["correct"], t["answers"]))]
                                 for x in same]))
        if t["same_cache_note"]:
            lines.append(f"({t['same_cache_note']}.)")
        lines += ["", same_cache_finding(result, task), ""]
    lines.append("What was measured is printed as it came, whether or not it is what the papers found.")
    return "\n".join(lines)


def child_run(module: Any, values: Sequence[Any]) -> Iterator[Dict[str, Any]]:
    """In a worker (gqa_grader.run_in_child): run(Recipe(*values)) with module's steps; its result."""
    fields = dict(zip(Recipe._fields, values))
    fields["budgets"] = tuple(fields["budgets"])
    yield run(Recipe(**fields), lab=module)
