"""gqa_tools.uptraining.model: the model trained, its forward and backward, Adam.

The model, small enough to read and to train in pure Python: token and
position embeddings, one causal attention layer with g key/value heads and
a residual, a ReLU MLP with a residual, and one linear output layer holding
every answer kind's logits; cross-entropy on the positions that have an
answer; Adam.

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

Only the lab's public steps are called, through `lab` (init_weights,
grouped_attention, grouped_attention_backward): the API a student's module
promises, so the backward computes the attention's softmax again.
"""

from __future__ import annotations

import math
from itertools import chain, repeat
from operator import add, mul, truediv
from typing import Any, Callable, NamedTuple, Optional, Sequence, Tuple

import gqa
from gqa_tools.seeds import rng_for, seed_for
from gqa_tools.uptraining.recipe import Recipe
from gqa_tools.uptraining.tasks import shape


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


# ---------------------------------------------------------------------------
# The model: embeddings, one lab layer with a residual, an MLP with a
# residual, one output head per answer kind.
# ---------------------------------------------------------------------------

class Model(NamedTuple):
    """The model trained: every parameter in a list of rows of floats, trained in place."""
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


def _columns(rows: Sequence) -> list:
    """The columns of a matrix [k][p], as tuples: [p][k] (what _mm takes as its b)."""
    return list(zip(*rows))


def _heads_of(rows: Sequence, start: int, heads: int, d: int) -> list:
    """Columns start .. start + heads * d of rows, d at a time: [heads][len(rows)][d]."""
    return [[row[a:a + d] for row in rows] for a in range(start, start + heads * d, d)]


# ---------------------------------------------------------------------------
# The forward: one call of the lab's grouped_attention per batch, then the loss.
# ---------------------------------------------------------------------------

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
    table = _mm(model.pos + model.emb, _columns(w_all))          # [length + symbols][(h + 2g) d]
    q, k, v = _qkv(examples, table, first, h, g, d)
    out = lab.grouped_attention(q, k, v, causal=True)             # [E*h][length - first][d]
    heads = [list(chain.from_iterable(at_t)) for e in range(0, len(out), h)
             for at_t in zip(*out[e:e + h])]                              # [R][h*d]
    y = _mm(heads, _columns(list(chain.from_iterable(w_o))))   # [R][d_model]
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
    pre = _mm(res, _columns(w_in))
    hid = [[x if x > 0.0 else 0.0 for x in row] for row in pre]
    z = [list(map(add, a, b)) for a, b in zip(res, _mm(hid, _columns(w_out)))]   # the residual
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


# ---------------------------------------------------------------------------
# The backward, beside it: one call of the lab's grouped_attention_backward.
# ---------------------------------------------------------------------------

def _mlp_backward(mlp: Sequence, rows: list, pre: list, hid: list, d_z: list) -> tuple:
    """The MLP's residual block backward: (g_w_in, g_w_out, d_rows [R][d_model])."""
    w_in, w_out = mlp
    g_w_out = _mm(_columns(hid), _columns(d_z))        # [d_ff][d_model]: hid^T d_z
    d_pre = [[dv if pv > 0.0 else 0.0 for dv, pv in zip(dr, pr)]
             for dr, pr in zip(_mm(d_z, w_out), pre)]     # [R][d_ff]
    g_w_in = _mm(_columns(rows), _columns(d_pre))      # [d_model][d_ff]: rows^T d_pre
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
    g_o = _mm(_columns(p.heads), _columns(d_res))            # [h*d][d_model]: heads^T d_res
    d_heads = _mm(d_res, o_rows)                                  # [R][h*d]: d_res w_o^T
    d_out = [[d_heads[e * nq + t][a:a + d] for t in range(nq)]
             for e in range(len(examples)) for a in range(0, hd, d)]          # [E*h][nq][d]
    grads = lab.grouped_attention_backward(p.q, p.k, p.v, d_out, causal=True)
    d_tab = _table_gradient(examples, grads, h, g, p.first, len(model.emb))
    g_all = _mm(_columns(model.pos + model.emb), _columns(d_tab))   # [d_model][(h + 2g) d]
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
    g_out = _mm(_columns(p.z), _columns(d_logits))            # [d_model][heads*classes]
    d_z = _mm(d_logits, out_rows)                                 # [R][d_model]
    g_w_in, g_w_out, d_res = _mlp_backward(model.mlp, p.res, p.pre, p.hid, d_z)
    g_emb, g_pos, g_w = _layer_backward(model, examples, p, d_res, g, lab)
    g_heads = [[row[a:a + classes] for row in g_out] for a in range(0, len(g_out[0]), classes)]
    return loss, correct, count, Model(g_emb, g_pos, g_w, [g_w_in, g_w_out], g_heads)


# ---------------------------------------------------------------------------
# Training: Adam, the loop over batches, and evaluation on held-out sequences.
# ---------------------------------------------------------------------------

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

    def state(self, model: Model) -> Tuple[Model, Model]:
        """The moments m and v, each shaped as model (the one this Adam updates): to carry over."""
        def shaped(flat: list) -> Model:
            out, end = copy_model(model), 0
            for row in _leaves(out):
                start, end = end, end + len(row)
                row[:] = flat[start:end]
            return out
        return shaped(self.m), shaped(self.v)


def carried(model: Model, lr: float, m: Model, v: Model, t: int) -> Adam:
    """An Adam for model that goes on from moments m and v (shaped as model) after t steps:
    the pre-training's optimizer carried over, rather than a fresh one."""
    adam = Adam(model, lr)
    adam.m, adam.v = list(chain.from_iterable(_leaves(m))), list(chain.from_iterable(_leaves(v)))
    if (len(adam.m), len(adam.v)) != (parameters(model),) * 2:
        raise ValueError("carried: the moments are not shaped as the model")
    adam.t = t
    return adam


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


def copy_model(model: Model) -> Model:
    """A copy of model that shares no list with it."""
    def copy(t):
        return [copy(x) for x in t] if isinstance(t, (list, tuple)) else t
    return Model(*(copy(part) for part in model))
