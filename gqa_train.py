"""gqa_train: does quality come back?  Convert a trained MHA model to GQA or MQA, then train.

The uptraining lab, as a library: `python -m gqa uptrain` (gqa_uptrain.py)
runs it and prints it, and report.md runs the quick recipe.

A model small enough to read and to train in pure Python learns a task that
needs attention: at every position, name the tokens 1, 2, ..., OFFSETS
positions back (one output head per offset, cross-entropy, positions
without an answer left out).  Token and position embeddings, one causal
attention layer of gqa.py with g key/value heads and a residual, and the
output heads; Adam; every random draw from random.Random(f"{stream}:{seed}").

The experiment, every number measured on held-out sequences of their own seed:

1. Pre-train an MHA model (g = h) until it solves the task.
2. For every g < h and every conversion (the mean of each group, its first
   head, new random heads), convert the K/V projections (everything else
   copied), measure, then train on with the same recipe for a few budgets,
   measuring after each.
3. Same cache, three ways: at MQA's cache size, train from scratch for the
   pre-training budget (a) h query heads sharing one K/V head, (b) one head
   (MHA with h = 1), (c) h heads with a key/value dimension d / h.  (The MQA
   paper also matched parameter counts; this does not.)

What it prints is what it measured, whether or not it is what the papers found.
"""

from __future__ import annotations

import json
import math
import time
from random import Random
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

import gqa
from gqa_tools import rng_for, seed_for, text_table


class Recipe(NamedTuple):
    """The model, the task and the training: one record, so a run can be repeated."""
    heads: int = 4
    head_dim: int = 4
    d_model: int = 16
    vocab: int = 8
    length: int = 8
    offsets: int = 4
    batch: int = 8
    lr: float = 0.01
    pretrain: int = 300             # steps of pre-training
    budgets: tuple = (15, 30, 60)   # uptraining steps after which to measure: 5 %, 10 %, 20 %
    held_out: int = 64              # sequences
    seed: int = 0


# A smaller model on a shorter task (tokens 1 and 2 back), smaller batches at a
# larger rate: still solved, in about a twentieth of the time.  report.md runs it.
QUICK = Recipe(d_model=12, head_dim=3, vocab=6, length=5, offsets=2, batch=4, lr=0.04,
               pretrain=60, budgets=(3, 6, 12), held_out=24)


# ---------------------------------------------------------------------------
# The model: embeddings, one gqa layer with a residual, one output head per offset.
# ---------------------------------------------------------------------------

class Model(NamedTuple):
    emb: list           # [vocab][d_model]
    pos: list           # [length][d_model]
    weights: list       # [w_q, w_k, w_v, w_o]: gqa.Weights' fields
    out: list           # [offsets][d_model][vocab]


def init_model(r: Recipe, heads: int, head_dim: int, kv_heads: int, stream: str) -> Model:
    rng = rng_for(stream, r.seed)

    def uniform(rows: int, cols: int, a: float) -> list:
        return [[(2.0 * rng.random() - 1.0) * a for _ in range(cols)] for _ in range(rows)]

    w = gqa.init_weights(heads, r.d_model, head_dim, seed=seed_for(f"{stream} layer", r.seed))
    kv = gqa.fold_weights(w, kv_heads) if kv_heads != heads else w
    return Model(uniform(r.vocab, r.d_model, 1.0), uniform(r.length, r.d_model, 1.0),
                 [kv.w_q, kv.w_k, kv.w_v, kv.w_o],
                 [uniform(r.d_model, r.vocab, math.sqrt(3.0 / r.d_model)) for _ in range(r.offsets)])


def sequences(r: Recipe, rng: Random, n: int) -> List[List[int]]:
    return [[rng.randrange(r.vocab) for _ in range(r.length)] for _ in range(n)]


def step(r: Recipe, model: Model, seqs: Sequence, g: int, train: bool = True) -> tuple:
    """Mean loss and accuracy over the answers of seqs, and (when train) the gradients."""
    w = gqa.Weights(*model.weights)
    prepared = gqa.prepare_weights(w, g)             # checked once per batch, not per sequence
    loss, correct, count = 0.0, 0, 0
    g_emb = [[0.0] * r.d_model for _ in range(r.vocab)]
    g_pos = [[0.0] * r.d_model for _ in range(r.length)]
    g_out = [[[0.0] * r.vocab for _ in range(r.d_model)] for _ in range(r.offsets)]
    g_w = None
    for s in seqs:
        x = [[a + b for a, b in zip(model.emb[tok], model.pos[i])] for i, tok in enumerate(s)]
        y = gqa.layer(x, prepared, g, causal=True)
        res = [[a + b for a, b in zip(xi, yi)] for xi, yi in zip(x, y)]      # [length][d_model]
        d_res = [[0.0] * r.d_model for _ in range(r.length)]
        for o, u in enumerate(model.out):                                   # offset o + 1
            u_cols = list(zip(*u))                                          # [vocab][d_model]
            for i in range(o + 1, r.length):
                logits = [math.fsum(map(float.__mul__, res[i], col)) for col in u_cols]
                top = max(logits)
                e = [math.exp(z - top) for z in logits]
                z = sum(e)
                target = s[i - o - 1]
                loss -= math.log(e[target] / z)
                correct += max(range(r.vocab), key=logits.__getitem__) == target
                count += 1
                if train:
                    dl = [v / z for v in e]
                    dl[target] -= 1.0
                    g_u = g_out[o]
                    for c, row in enumerate(u):
                        rc = res[i][c]
                        g_u[c] = [a + rc * b for a, b in zip(g_u[c], dl)]          # d u = res^T dl
                        d_res[i][c] += math.fsum(map(float.__mul__, row, dl))   # d res = dl u^T
        if not train:
            continue
        dx, grads = gqa.layer_backward(x, w, g, d_res, causal=True)
        for i, tok in enumerate(s):
            for c in range(r.d_model):
                d = dx[i][c] + d_res[i][c]                                  # the residual
                g_emb[tok][c] += d
                g_pos[i][c] += d
        if g_w is None:
            g_w = list(grads)
        else:
            _accumulate(g_w, list(grads))
    n = max(count, 1)
    return loss / n, correct / n, Model(g_emb, g_pos, g_w, g_out) if train else None


def _accumulate(total: list, part: list) -> None:
    """total += part, for nested lists of one shape, in place."""
    if isinstance(total[0], list):
        for t, p in zip(total, part):
            _accumulate(t, p)
    else:
        total[:] = map(float.__add__, total, part)


class Adam:
    """Adam (Kingma and Ba 2015) over a Model's nested lists, updated in place."""

    def __init__(self, model: Model, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, eps, 0
        self.m, self.v = _zeros(list(model)), _zeros(list(model))

    def update(self, model: Model, grads: Model, scale: float) -> None:
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        self._update(list(model), list(grads), self.m, self.v, scale, c1, c2)

    def _update(self, p, g, m, v, scale, c1, c2):
        if isinstance(p[0], list):
            for args in zip(p, g, m, v):
                self._update(*args, scale, c1, c2)
            return
        b1, b2 = self.b1, self.b2
        for i, gi in enumerate(g):
            gi *= scale
            m[i] = b1 * m[i] + (1 - b1) * gi
            v[i] = b2 * v[i] + (1 - b2) * gi * gi
            p[i] -= self.lr * (m[i] / c1) / (math.sqrt(v[i] / c2) + self.eps)


def _zeros(t):
    return [_zeros(x) for x in t] if isinstance(t, list) else 0.0


def train(r: Recipe, model: Model, g: int, steps: int, stream: str, optimizer: Optional[Adam] = None,
          progress=None) -> Adam:
    """Train model in place for steps batches drawn from their own stream; return the optimizer."""
    rng = rng_for(stream, r.seed)
    optimizer = optimizer or Adam(model, r.lr)
    for k in range(steps):
        _, _, grads = step(r, model, sequences(r, rng, r.batch), g)
        optimizer.update(model, grads, 1.0 / r.batch)
        if progress and (k + 1) % 25 == 0:
            progress(f"{stream}: step {k + 1} of {steps}")
    return optimizer


def evaluate(r: Recipe, model: Model, g: int) -> Dict[str, float]:
    loss, acc, _ = step(r, model, sequences(r, rng_for("held out", r.seed), r.held_out), g, train=False)
    return {"loss": loss, "accuracy": acc}


# ---------------------------------------------------------------------------
# The experiment.
# ---------------------------------------------------------------------------

def copy_model(model: Model) -> Model:
    return Model(*(json.loads(json.dumps(part)) for part in model))


def convert(model: Model, heads: int, g: int, how: str, r: Recipe) -> Model:
    """The model with g K/V heads: by the mean of each group, its first head, or new heads."""
    new = copy_model(model)
    w = gqa.Weights(*new.weights)
    if how == "mean":
        w = gqa.fold_weights(w, g)
    elif how == "first":
        groups = gqa.group_heads(heads, g)
        w = w._replace(w_k=[w.w_k[grp[0]] for grp in groups], w_v=[w.w_v[grp[0]] for grp in groups])
    else:
        fresh = gqa.init_weights(g, r.d_model, r.head_dim, seed=seed_for(f"random heads g={g}", r.seed))
        w = w._replace(w_k=fresh.w_k, w_v=fresh.w_v)
    return new._replace(weights=[w.w_q, w.w_k, w.w_v, w.w_o])


CONVERSIONS = ("mean", "first", "random")


def run(r: Recipe, progress=None) -> Dict[str, Any]:
    """The whole experiment as plain data: one object per measurement."""
    h, start = r.heads, time.perf_counter()
    mha = init_model(r, h, r.head_dim, h, "mha")
    train(r, mha, h, r.pretrain, "pretrain", progress=progress)
    runs = [dict(kind="pretrained", g=h, conversion="", steps=r.pretrain, **evaluate(r, mha, h))]
    for g in [g for g in gqa.valid_g(h) if g < h]:
        for how in CONVERSIONS:
            model, done, optimizer = convert(mha, h, g, how, r), 0, None
            runs.append(dict(kind="uptrain", g=g, conversion=how, steps=0, **evaluate(r, model, g)))
            for budget in r.budgets:
                optimizer = train(r, model, g, budget - done, f"uptrain g={g} {how}", optimizer, progress)
                done = budget
                runs.append(dict(kind="uptrain", g=g, conversion=how, steps=budget, **evaluate(r, model, g)))
    for label, heads, head_dim, g in (("h heads, 1 K/V head (MQA)", h, r.head_dim, 1),
                                      ("1 head (MHA, h = 1)", 1, r.head_dim, 1),
                                      ("h heads of dim d / h (MHA)", h, max(1, r.head_dim // h), h)):
        model = init_model(r, heads, head_dim, g, f"scratch {label}")
        train(r, model, g, r.pretrain, f"scratch {label}", progress=progress)
        runs.append(dict(kind="same cache", g=g, conversion=label, steps=r.pretrain,
                         cache_per_token=2 * g * head_dim, **evaluate(r, model, g)))
    return {"recipe": r._asdict(), "seconds": time.perf_counter() - start, "runs": runs}


# ---------------------------------------------------------------------------
# What it prints.
# ---------------------------------------------------------------------------

_EIGHTHS = " ▏▎▍▌▋▊▉"


def _bar(value: float, width: int = 20) -> str:
    eighths = round(8 * width * max(0.0, min(1.0, value)))
    full, part = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[part] if part else "")


def render(result: Dict[str, Any]) -> str:
    r, runs = result["recipe"], result["runs"]
    pre = runs[0]
    lines = [f"Pre-trained MHA (h = {r['heads']}, head dim {r['head_dim']}, d_model {r['d_model']}) for "
             f"{r['pretrain']} steps of {r['batch']} sequences: held-out loss {pre['loss']:.3f}, "
             f"accuracy {pre['accuracy']:.3f}.", ""]
    for g in sorted({x["g"] for x in runs if x["kind"] == "uptrain"}):
        mine = [x for x in runs if x["kind"] == "uptrain" and x["g"] == g]
        steps = sorted({x["steps"] for x in mine})
        lines.append(f"g = {g}: held-out accuracy (loss) after converting, then training on:")
        rows = [[how] + [next(f"{x['accuracy']:.3f} ({x['loss']:.3f})" for x in mine
                              if x["conversion"] == how and x["steps"] == s) for s in steps]
                for how in CONVERSIONS]
        lines += [text_table(["conversion"] + [f"{s} steps" for s in steps], rows), ""]
        for how in CONVERSIONS:
            accs = [x["accuracy"] for x in mine if x["conversion"] == how]
            lines.append(f"  {how:<7} " + " ".join(f"{_bar(a, 6):<6}" for a in accs)
                         + f"   {' -> '.join(f'{a:.2f}' for a in accs)}")
        lines.append("")
    same = [x for x in runs if x["kind"] == "same cache"]
    lines.append(f"Same KV cache per token and layer ({same[0]['cache_per_token']} values), trained "
                 f"from scratch for {r['pretrain']} steps:")
    lines.append(text_table(["model", "held-out accuracy", "loss"],
                            [[x["conversion"], f"{x['accuracy']:.3f}", f"{x['loss']:.3f}"] for x in same],
                            left=1))
    lines += ["", "What was measured is printed as it came; compare it with the papers (the GQA paper: "
              "the mean beats the first head, which beats random; the MQA paper: sharing K/V heads "
              "beats fewer or narrower heads at one cache size) rather than reading them into it."]
    return "\n".join(lines)
