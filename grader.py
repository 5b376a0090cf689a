"""grader: a referee for gqa.py, checked step by step against an independent reference.

    python grader.py                          grade gqa.py beside this file, fresh seed
    python grader.py --module mylab/gqa.py    grade your own (see --starter)
    python grader.py --starter mylab          write a starter mylab/gqa.py to fill in
    python grader.py --only 5 --case 7 --show
                                              one case of step 5; its failing call as
                                              Python to paste beside the module
    python grader.py --json | --format gradescope      for course tooling
    python grader.py --autograder dist        dist/autograder.zip for Gradescope

The module under test runs only in a child process: a worker that imports
it and answers calls.  This process draws the cases, computes the expected
values from its own copy of the inputs with the reference below, sends the
inputs, receives the outputs as plain data and decides.  Nothing the module
does (patching modules, printing, reading stdin, sys.exit, os._exit, an
endless loop, crashing the interpreter, sending garbage) reaches the verdict:
every read and write has a deadline (--timeout per call, --budget in all), a
worker that does not answer in time is killed with its process group, and
one that dies is replaced for the next case.  The worker is started as
`python -I -S` (no site-packages, no PYTHON* variables) with limits on CPU,
memory, processes, file size and open files.  That is the self-check, a
learning tool: the worker runs as the student, beside grader.py.  --sealed
(implied by --format gradescope) is the teacher's run: the module alone in a
private folder, an environment of PATH only and, as root, a user id drawn
for the run, which cannot signal, trace, read or write the grader, its folder or its
results.

The reference reads beside the lab: one function per step, in the lab's order
and named after it (ref_valid_g for valid_g, ..., RefKVCache for KVCache).  It
shares no code with gqa.py and is built differently on purpose: it copies
every key/value head into each query head it serves (the module indexes the
shared head), loops over indices, counts multiplications and cache elements
by performing and building them, never by a formula, and computes
output_difference in exact rational arithmetic.

Every check runs a fixed systematic set of cases (every (h, g) with h <= 16,
causal on and off, the refusals), the same on every run, and then --cases
random ones from the seed: case k of a check is drawn from
random.Random(f"{check}:{seed}:{k}"), so `--only NAME --case k` repeats it.

Output: one line per step in the lab's order ("not started" for a step whose
function still raises NotImplementedError, with the other step it waits for
and the earlier steps it sends the student back to), the first failing case
of a failed step with the command that reproduces it, the progress, and a
last line "N passed, M failed".  Exit status 0 when every check passes, 1 when one
fails, 2 for a usage error or a module that cannot be imported.
"""

# No `from __future__ import annotations` here: it imports a module named
# __future__, and a file of that name planted beside grader.py would run
# first.  The grader's folder leaves sys.path before anything is imported, so
# every module the grader imports is the standard library's.
import sys

if __name__ == "__main__" and not sys.flags.isolated and not getattr(sys.flags, "safe_path", False):
    del sys.path[0]                      # the script's folder, put there by `python grader.py`

import argparse
import ast
import fractions
import json
import math
import os
import queue
import random
import re
import select
import signal
import subprocess
import threading
import time

GRADER_VERSION = "2.0"
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODULE = os.path.join(HERE, "gqa.py")
REL_TOL = 1e-9          # values are compared to this relative tolerance...
ABS_TOL = 1e-12         # ...or this absolute one, whichever is looser
DEFAULT_CASES = 10      # random cases per check, after the systematic ones
MAX_CASES = 1000        # at most this many: 1,000 random cases per step take minutes
DEFAULT_TIMEOUT = 5.0   # seconds one call may take before its worker is killed
DEFAULT_BUDGET = 300.0  # seconds a whole run may take; a correct module takes about one
BUDGET_NOTE = "not graded: the run's time budget ran out"



# ---------------------------------------------------------------------------
# The reference: slow, obvious, and written differently from gqa.py.  One
# function per step, named after the lab's (ref_valid_g for valid_g, ...)
# and in the lab's order, after the few helpers they share.
# ---------------------------------------------------------------------------

class Counter:
    """Multiplications counted one at a time, by term; and elements read, by kind."""

    def __init__(self):
        self.counts = {}                    # term -> multiplications performed
        self.reads = {}                     # "weight_reads" or "cache_reads" -> elements read

    def add(self, term, k=1):
        self.counts[term] = self.counts.get(term, 0) + k

    def read(self, kind, k):
        self.reads[kind] = self.reads.get(kind, 0) + k

    def times(self, term, a, b):
        self.add(term)
        return a * b


def _no_count(term, a, b):
    return a * b


def nested(shape, fill=0.0):
    """A real nested list of the given shape."""
    if not shape:
        return fill
    return [nested(shape[1:], fill) for _ in range(shape[0])]


def leaves(t):
    """The numbers of a nested list (or tuple), in order."""
    if isinstance(t, (list, tuple)):
        for x in t:
            yield from leaves(x)
    else:
        yield t


def count_leaves(t):
    return sum(1 for _ in leaves(t))


def rand_tensor(rng, *shape):
    if len(shape) == 1:
        return [rng.uniform(-1.0, 1.0) for _ in range(shape[0])]
    return [rand_tensor(rng, *shape[1:]) for _ in range(shape[0])]


def as_rows(t, how):
    """t with its innermost rows made tuples ("tuple") or array('d') ("array"), or as it is."""
    if how is None:
        return t
    if t and isinstance(t[0], (list, tuple, array)):
        return [as_rows(x, how) for x in t]
    return tuple(t) if how == "tuple" else array("d", t)


def plain(t):
    """t as nested lists (the rows a module returns); an array the worker sent, its values."""
    if isinstance(t, Other) and hasattr(t, "values"):
        return list(t.values)
    return [plain(x) for x in t] if isinstance(t, (list, tuple, array)) else t


def random_weights(rng, h, d_model, d, kv_heads=None):
    """w_q [h][d_model][d], w_k and w_v [kv_heads or h][d_model][d], w_o [h][d][d_model]."""
    kv = kv_heads or h
    return [rand_tensor(rng, h, d_model, d), rand_tensor(rng, kv, d_model, d),
            rand_tensor(rng, kv, d_model, d), rand_tensor(rng, h, d, d_model)]


def transpose(m):
    return [[m[r][c] for r in range(len(m))] for c in range(len(m[0]))]


def matmul(a, b, term=None, counter=None):
    """a [n][k] @ b [k][p] by index loops; a projection (term *_proj) reads b once."""
    times = counter.times if counter else _no_count
    if counter and term and term.endswith("_proj"):
        counter.read("weight_reads", len(b) * len(b[0]))
    out = []
    for i in range(len(a)):
        row = []
        for c in range(len(b[0])):
            acc = 0.0
            for r in range(len(b)):
                acc += times(term, a[i][r], b[r][c])
            row.append(acc)
        out.append(row)
    return out


def add_into(total, part):
    """total += part, element by element, for matrices [n][p]."""
    for r in range(len(total)):
        for c in range(len(total[r])):
            total[r][c] += part[r][c]


def ref_valid_g(h):
    """Every g from 1 to h tried in turn."""
    return [g for g in range(1, h + 1) if h % g == 0]


def ref_method_name(h, g):
    return "MHA" if g == h else "MQA" if g == 1 else "GQA"


def ref_kv_head(i, h, g):
    """Walk the groups' boundaries until query head i falls inside one."""
    size, j, start = h // g, 0, 0
    while i >= start + size:
        start, j = start + size, j + 1
    return j


def ref_group_heads(h, g):
    """Each group's members, found by asking every head which group it is in."""
    return [[i for i in range(h) if ref_kv_head(i, h, g) == j] for j in range(g)]


def _exact_mean(values):
    """The mean, rounded once: in floats when the sum stays finite, else exactly."""
    try:
        return math.fsum(values) / len(values)
    except OverflowError:                   # finite values whose sum is not: go exact
        return float(sum(map(fractions.Fraction, values)) / len(values))


def ref_fold_kv_mean(kv, g):
    """The mean of each group of heads, one index at a time."""
    rows, cols = len(kv[0]), len(kv[0][0])
    return [[[_exact_mean([kv[i][r][c] for i in group]) for c in range(cols)] for r in range(rows)]
            for group in ref_group_heads(len(kv), g)]


def ref_repeat_kv(kv, h):
    """Copy each of the g heads into every one of the h // g query heads it serves."""
    out = []
    for j in range(len(kv)):
        for _ in range(h // len(kv)):
            out.append([list(row) for row in kv[j]])
    return out


def ref_single_head_attention(q, k, v, causal=False, counter=None):
    """One head by index loops: query i sees keys 0 .. i + (m - n) when causal."""
    times = counter.times if counter else _no_count
    n, m = len(q), len(k)
    out = []
    for i in range(n):
        last = i + (m - n) if causal else m - 1
        scores = []
        for j in range(last + 1):
            s = 0.0
            for c in range(len(q[i])):
                s += times("scores", q[i][c], k[j][c])
            scores.append(s / math.sqrt(len(q[i])))
        top = max(scores)
        if any(map(math.isnan, scores)):
            weights = [math.nan] * len(scores)          # NaN propagates
        elif top == math.inf:                           # an infinite score takes all the weight
            weights = [1.0 if s == math.inf else 0.0 for s in scores]
        else:
            weights = [math.exp(s - top) for s in scores]
        z = sum(weights)
        row = []
        for c in range(len(v[0])):
            acc = 0.0
            for j in range(last + 1):
                acc += times("weighted_sum", weights[j] / z, v[j][c])
            row.append(acc)
        out.append(row)
    return out


def ref_attention(q, k, v, g, causal=False):
    """Fold the h K/V heads to g, copy them back out to h, attend head by head."""
    h = len(q)
    kc, vc = ref_repeat_kv(ref_fold_kv_mean(k, g), h), ref_repeat_kv(ref_fold_kv_mean(v, g), h)
    return [ref_single_head_attention(q[i], kc[i], vc[i], causal) for i in range(h)]


def ref_grouped_attention(q, k, v, causal=False, counter=None):
    """Copy the g K/V heads out to h, then attend head by head."""
    h = len(q)
    kc, vc = ref_repeat_kv(k, h), ref_repeat_kv(v, h)
    return [ref_single_head_attention(q[i], kc[i], vc[i], causal, counter) for i in range(h)]


def ref_init_weights(h, d_model, d, seed):
    """[w_q, w_k, w_v, w_o] as gqa.init_weights documents them: one stream of
    Random(seed).random() draws, w_q first, then w_k, w_v, w_o, each filled head
    by head, row by row; u becomes sqrt(3 / fan_in) * (2u - 1)."""
    rng = random.Random(seed)
    shapes = [(h, d_model, d, d_model)] * 3 + [(h, d, d_model, h * d)]
    stream = [rng.random() for _ in range(sum(a * b * c for a, b, c, _ in shapes))]
    out, at = [], 0
    for heads, rows, cols, fan_in in shapes:
        bound = math.sqrt(3.0 / fan_in)
        t = nested([heads, rows, cols])
        for i in range(heads):
            for r in range(rows):
                for c in range(cols):
                    t[i][r][c] = bound * (2.0 * stream[at] - 1.0)
                    at += 1
        out.append(t)
    return out


def ref_fold_weights(w_q, w_k, w_v, w_o, g):
    """[w_q, w_k, w_v, w_o] with g K/V heads: folded by mean, or as given when they have g."""
    return [w_q, w_k if len(w_k) == g else ref_fold_kv_mean(w_k, g),
            w_v if len(w_v) == g else ref_fold_kv_mean(w_v, g), w_o]


def ref_prepare_weights(w_q, w_k, w_v, w_o, g):
    """The fields of prepare_weights: sizes, then each head by columns, w_o stacked."""
    w_q, w_k, w_v, w_o = ref_fold_weights(w_q, w_k, w_v, w_o, g)
    stacked = [row for head in w_o for row in head]                        # [h*d][d_model]
    return {"h": len(w_q), "g": g, "d_model": len(w_q[0]), "d": len(w_q[0][0]),
            "q_cols": [transpose(t) for t in w_q], "k_cols": [transpose(t) for t in w_k],
            "v_cols": [transpose(t) for t in w_v], "o_cols": transpose(stacked)}


def ref_layer(x, w_q, w_k, w_v, w_o, g, causal=False, counter=None):
    """One layer: per-head projections, K/V weights folded by mean, heads copied out."""
    h = len(w_q)
    w_q, w_k, w_v, w_o = ref_fold_weights(w_q, w_k, w_v, w_o, g)
    q = [matmul(x, w_q[i], "q_proj", counter) for i in range(h)]
    k = [matmul(x, w_k[j], "k_proj", counter) for j in range(g)]
    v = [matmul(x, w_v[j], "v_proj", counter) for j in range(g)]
    heads = ref_grouped_attention(q, k, v, causal, counter)
    y = nested([len(x), len(w_o[0][0])])
    for i in range(h):
        add_into(y, matmul(heads[i], w_o[i], "o_proj", counter))
    return y


def ref_output_difference(a, b):
    """[max_abs, rel_l2, cosine] in exact rational arithmetic, rounded once at the end."""
    fa, fb = list(leaves(a)), list(leaves(b))
    if any(map(math.isnan, fa + fb)):
        return [math.nan] * 3
    ea, eb = [fractions.Fraction(x) for x in fa], [fractions.Fraction(y) for y in fb]

    def rounded(value):
        try:
            return float(value)
        except OverflowError:
            return math.inf

    diff = [x - y for x, y in zip(ea, eb)]
    aa, bb = sum(x * x for x in ea), sum(y * y for y in eb)
    dd, ab = sum(z * z for z in diff), sum(x * y for x, y in zip(ea, eb))
    max_abs = rounded(max(map(abs, diff), default=0))
    rel = math.sqrt(rounded(dd / bb)) if bb else (0.0 if not dd else math.inf)
    cos = (1 if ab >= 0 else -1) * math.sqrt(rounded(ab * ab / (aa * bb))) if aa and bb else math.nan
    return [max_abs, rel, cos]


def ref_kv_cache_elements(layers, kv_heads, length, head_dim, batch=1):
    """The numbers in a cache built as nested lists, K and V, counted one by one."""
    return count_leaves(nested([batch, layers, 2, kv_heads, length, head_dim]))


def ref_attention_multiplies(n, h, g, d, d_model, causal, rng):
    """Each term's multiplications, counted while a reference layer runs on random data."""
    counter = Counter()
    ref_layer(rand_tensor(rng, n, d_model), *random_weights(rng, h, d_model, d), g, causal, counter)
    return counter.counts


def ref_block_multiplies(n, h, g, d, d_model, d_ff, matrices, rng):
    """A causal layer's counts, and an MLP's, multiplied out one product at a time."""
    counter = Counter()
    ref_layer(rand_tensor(rng, n, d_model), *random_weights(rng, h, d_model, d), g, True, counter)
    for _ in range(n):
        for _ in range(matrices):
            for _ in range(d_model * d_ff):
                counter.times("mlp", 1.0, 1.0)
    return counter.counts


def ref_cache_table(h, layers, length, head_dim):
    """[method, kv_heads, group_size, elements, ratio] for each g, from caches built."""
    mha = ref_kv_cache_elements(layers, h, length, head_dim)
    return [[ref_method_name(h, g), g, h // g, ref_kv_cache_elements(layers, g, length, head_dim),
             ref_kv_cache_elements(layers, g, length, head_dim) / mha if mha else 1.0]
            for g in ref_valid_g(h)]


def ref_multiplies_table(n, h, d, d_model, causal, rng):
    """[kv_heads, group_size, total, ratio of totals] for each g, counted by running."""
    totals = {g: sum(ref_attention_multiplies(n, h, g, d, d_model, causal, rng).values())
              for g in ref_valid_g(h)}
    return [[g, h // g, totals[g], totals[g] / totals[h] if totals[h] else 1.0] for g in ref_valid_g(h)]


def ref_count_multiplies(x, fields, g, causal):
    """The tally of one layer: each term's multiplications and the weights read."""
    counter = Counter()
    ref_layer(x, *fields, g, causal, counter)
    return counter


class RefKVCache:
    """A cache of nested lists: k and v [g][t][d], one row appended per position."""

    def __init__(self, g, d):
        self.g, self.d = g, d
        self.k, self.v = [[] for _ in range(g)], [[] for _ in range(g)]

    def append(self, k_rows, v_rows):
        for j in range(self.g):
            self.k[j].append(list(k_rows[j]))
            self.v[j].append(list(v_rows[j]))

    def __len__(self):
        return len(self.k[0])

    @property
    def elements(self):
        return count_leaves([self.k, self.v])


def ref_decode_step(x_t, fields, g, cache, counter):
    """One position: project, append to the cache, read all of it, attend per head."""
    w_q, w_k, w_v, w_o = ref_fold_weights(*fields, g)
    h = len(w_q)
    q = [matmul([x_t], w_q[i], "q_proj", counter)[0] for i in range(h)]
    cache.append([matmul([x_t], w_k[j], "k_proj", counter)[0] for j in range(g)],
                 [matmul([x_t], w_v[j], "v_proj", counter)[0] for j in range(g)])
    counter.read("cache_reads", cache.elements)             # each cached element read once
    heads = ref_grouped_attention([[row] for row in q], cache.k, cache.v, False, counter)
    y = nested([1, len(x_t)])
    for i in range(h):
        add_into(y, matmul(heads[i], w_o[i], "o_proj", counter))
    return y[0]


def ref_decode_traffic(n, h, g, d, d_model, batch, rng):
    """[cache_reads, weight_reads, multiplies]: every sequence of the batch decoded for real;
    the weights are read once per step for the whole batch."""
    fields = random_weights(rng, h, d_model, d)
    counters = []
    for _ in range(batch):
        counter, cache = Counter(), RefKVCache(g, d)
        for x_t in rand_tensor(rng, n, d_model):
            ref_decode_step(x_t, fields, g, cache, counter)
        counters.append(counter)
    reads = [sum(c.reads.get("cache_reads", 0) for c in counters), counters[0].reads.get("weight_reads", 0)]
    multiplies = sum(sum(c.counts.values()) for c in counters)
    return reads + [multiplies, sum(reads) / multiplies if multiplies else 0.0]


def _attend_backward(q, k, v, d_out, causal=False):
    """One head's gradients by index loops: (dq, dk, dv) of sum(attention * d_out)."""
    n, m, d, dv = len(q), len(k), len(q[0]), len(v[0])
    dq, dk, dvv = nested([n, d]), nested([m, d]), nested([m, dv])
    root = math.sqrt(d)
    for i in range(n):
        last = i + (m - n) if causal else m - 1
        scores = [sum(q[i][c] * k[j][c] for c in range(d)) / root for j in range(last + 1)]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        z = sum(weights)
        p = [w / z for w in weights]
        dp = [sum(d_out[i][c] * v[j][c] for c in range(dv)) for j in range(last + 1)]
        mean_dp = sum(p[j] * dp[j] for j in range(last + 1))
        for j in range(last + 1):
            ds = p[j] * (dp[j] - mean_dp)
            for c in range(d):
                dq[i][c] += ds * k[j][c] / root
                dk[j][c] += ds * q[i][c] / root
            for c in range(dv):
                dvv[j][c] += p[j] * d_out[i][c]
    return dq, dk, dvv


def ref_grouped_attention_backward(q, k, v, d_out, causal=False):
    """Copy each K/V head into every query head it serves, take per-head gradients, then
    add the copies' gradients back, group by group."""
    h, g = len(q), len(k)
    kc, vc = ref_repeat_kv(k, h), ref_repeat_kv(v, h)
    per_head = [_attend_backward(q[i], kc[i], vc[i], d_out[i], causal) for i in range(h)]
    dk, dv = [], []
    for group in ref_group_heads(h, g):
        for grads, t in ((dk, 1), (dv, 2)):
            total = [list(row) for row in per_head[group[0]][t]]
            for i in group[1:]:
                add_into(total, per_head[i][t])
            grads.append(total)
    return [ph[0] for ph in per_head], dk, dv


def ref_layer_backward(x, w_q, w_k, w_v, w_o, g, d_y, causal=False):
    """(dx, [d w_q, d w_k, d w_v, d w_o]) of sum(ref_layer(...) * d_y), by the chain rule."""
    h = len(w_q)
    _, fk, fv, _ = ref_fold_weights(w_q, w_k, w_v, w_o, g)
    q = [matmul(x, w_q[i]) for i in range(h)]
    k = [matmul(x, fk[j]) for j in range(g)]
    v = [matmul(x, fv[j]) for j in range(g)]
    heads = ref_grouped_attention(q, k, v, causal)
    d_w_o = [matmul(transpose(heads[i]), d_y) for i in range(h)]
    d_heads = [matmul(d_y, transpose(w_o[i])) for i in range(h)]
    dq, dk, dv = ref_grouped_attention_backward(q, k, v, d_heads, causal)
    xt = transpose(x)
    d_w_q = [matmul(xt, t) for t in dq]
    d_fk, d_fv = [matmul(xt, t) for t in dk], [matmul(xt, t) for t in dv]
    dx = nested([len(x), len(x[0])])
    for grads, weights in ((dq, w_q), (dk, fk), (dv, fv)):
        for t, w in zip(grads, weights):
            add_into(dx, matmul(t, transpose(w)))

    def unfold(grads, heads):
        if heads == g:
            return grads
        return [[[value / (h // g) for value in row] for row in grads[i // (h // g)]] for i in range(heads)]
    return dx, [d_w_q, unfold(d_fk, len(w_k)), unfold(d_fv, len(w_v)), d_w_o]


# ---------------------------------------------------------------------------
# Comparing: values, and the types the lab's conventions promise.
# ---------------------------------------------------------------------------

class Other:
    """A value the worker could not send as plain data (a generator, an array, ...)."""

    def __init__(self, type_name, text):
        self.type_name, self.text = type_name, text

    def __repr__(self):
        return f"<{self.type_name} {self.text}>"


class Record(dict):
    """A record the module returned (a NamedTuple or a record class), by field."""

    def __init__(self, type_name, fields):
        super().__init__(fields)
        self.type_name = type_name

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise Failure(f"the {self.type_name} returned has no field {name}; it has "
                          f"{', '.join(self) or 'none'}") from None

    def __repr__(self):
        return f"{self.type_name}({', '.join(f'{k}={v!r}' for k, v in self.items())})"


def decode(x):
    """The worker's plain data back into values: lists, tuples, records, Other."""
    if isinstance(x, list):
        return [decode(v) for v in x]
    if isinstance(x, dict):
        if "$tuple" in x:
            return tuple(decode(v) for v in x["$tuple"])
        if "$record" in x:
            return Record(x["$record"], {k: decode(v) for k, v in x["fields"].items()})
        if "$array" in x:
            held = Other(f"array('{x['$array']}')", f"of {len(x['values'])} values")
            held.values = decode(x["values"])
            return held
        if "$other" in x:
            return Other(x["$other"], x.get("repr", ""))
        return {k: decode(v) for k, v in x.items()}      # the answer of a get or a tally
    return x


def kind(x):
    if isinstance(x, Other):
        return f"a {x.type_name}"
    if isinstance(x, bool):
        return f"the bool {x}"
    return f"a {type(x).__name__}" if not isinstance(x, Record) else f"a {x.type_name} record"


def first_difference(got, expected, rel=REL_TOL, abs_tol=ABS_TOL, exact=False, where=(),
                     loose_lists=False):
    """Return None when got matches expected, else a sentence on the first difference.

    Nested lists are walked in order; floats are compared with math.isclose
    (or ==, with exact=True); the first differing index is named with its
    absolute and relative error.  The types are the lab's: a list where a
    list is expected (not a tuple, unless loose_lists), an int for a count.
    """
    def at():                                # a record's field by its name: w_o[0][1]
        return "at " + ("".join(i if isinstance(i, str) else f"[{i}]" for i in where) or "the top")

    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)) or (isinstance(got, tuple) and not loose_lists):
            return f"{at()}: expected a list of {len(expected)}, got {kind(got)}: {_short(got)}"
        if len(got) != len(expected):
            return f"{at()}: expected {len(expected)} items, got {len(got)}"
        for i, (a, b) in enumerate(zip(got, expected)):
            if a is b or type(a) is type(b) is float and a == b:
                continue
            diff = first_difference(a, b, rel, abs_tol, exact, where + (i,), loose_lists)
            if diff:
                return diff
        return None
    if isinstance(expected, float):
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return f"{at()}: expected {expected!r}, got {kind(got)}: {_short(got)}"
        if got == expected or (math.isnan(got) and math.isnan(expected)):
            return None
        if not exact and math.isclose(got, expected, rel_tol=rel, abs_tol=abs_tol):
            return None
        err = abs(got - expected)
        rel_err = err / abs(expected) if expected else math.inf
        return (f"{at()}: expected {expected!r}, got {got!r} "
                f"(abs error {err:.3g}, rel error {rel_err:.3g})")
    if isinstance(expected, int) and not isinstance(expected, bool):
        if type(got) is not int:
            return (f"{at()}: expected the int {expected}, got {kind(got)}: {_short(got)} "
                    f"(counts are ints)")
    if got != expected or type(got) is bool and type(expected) is not bool:
        return f"{at()}: expected {expected!r}, got {_short(got)}"
    return None


# What the worker sends is printed and written only through these: control
# characters, lone surrogates and the invisible format characters become
# escapes (\x1b, \ud800), so a message can neither fake a line of the report
# nor crash its writing; a float that JSON cannot hold becomes a string.
_UNSAFE = "\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff"
_UNSAFE_KEEP_LINES = re.compile(f"[{_UNSAFE}]")
_UNSAFE_ALL = re.compile(f"[\n{_UNSAFE}]")


def _escape(m):
    o = ord(m.group())
    if o in (9, 10, 13):
        return {9: "\\t", 10: "\\n", 13: "\\r"}[o]
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def clean_text(text, newlines=True):
    """text with every unsafe character escaped (newlines too, with newlines=False)."""
    return (_UNSAFE_KEEP_LINES if newlines else _UNSAFE_ALL).sub(_escape, str(text))


def clean_data(x, newlines=True):
    """x (JSON data) with every string cleaned and nan, inf, -inf as strings."""
    if isinstance(x, str):
        return clean_text(x, newlines)
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    if isinstance(x, dict):
        return {clean_text(k, newlines): clean_data(v, newlines) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_data(v, newlines) for v in x]
    return x


def _short(x):
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------
# The worker: the only process that imports the module under test.
# ---------------------------------------------------------------------------

# Everything between the two worker banners below is the worker's whole
# program.  The grader reads this text from its own file and runs it as
# `python -I -S -c TEXT CONFIG`, so the worker holds none of the reference;
# in the grader the same functions are only defined (the tests call them).
# Their names start with w_.  The worker keeps the protocol on private copies
# of stdin and stdout and points fds 0, 1 and 2 at the null device, so the
# module's prints and reads touch neither.  A request is one JSON line,
# {"n": N, "items": [...]}; the worker answers each item with a line of its
# own, {"n": N, "i": I, ...}, and stops at the first error.  The module's
# values are encoded as plain data with their types (tuples, records,
# arrays and other objects tagged), never pickled.

# >>> the worker >>>
import json
import os
import sys
from array import array

W = {}                           # the worker's state: its protocol stream, kept objects, the path
W_LIMITS = {"cpu": "RLIMIT_CPU", "memory": "RLIMIT_AS", "processes": "RLIMIT_NPROC",
            "file_size": "RLIMIT_FSIZE", "open_files": "RLIMIT_NOFILE"}
# Imported before the worker gives up root: the standard library may not be
# readable by the worker's user (an interpreter under root's home, say).
W_PRELOAD = ("__future__", "inspect", "traceback", "importlib.util", "math", "random", "itertools", "functools",
             "operator", "contextlib", "typing", "collections", "dataclasses", "statistics",
             "copy", "abc", "enum", "re", "fractions", "numbers", "string", "bisect", "heapq",
             "time", "cmath", "decimal", "struct", "weakref", "types", "warnings")


def w_send(message):
    W["out"].write(json.dumps(message) + "\n")
    W["out"].flush()


def w_enc(x, depth=0):
    if depth > 50:
        return {"$other": "nesting", "repr": "deeper than 50 levels"}
    t = type(x)
    if x is None or t in (bool, str, int, float):
        return x
    if t is list:
        return [w_enc(v, depth + 1) for v in x]
    if t is tuple and not hasattr(x, "_fields"):
        return {"$tuple": [w_enc(v, depth + 1) for v in x]}
    if t is array:
        return {"$array": x.typecode, "values": [w_enc(v, depth + 1) for v in x]}
    fields = getattr(x, "_fields", None) or (list(t.__slots__) if isinstance(
        getattr(t, "__slots__", None), dict) else None)
    if fields:
        return {"$record": t.__name__,
                "fields": {f: w_enc(getattr(x, f, None), depth + 1) for f in fields}}
    return {"$other": t.__name__, "repr": repr(x)[:60]}


def w_dec(x):
    if isinstance(x, dict) and "$ref" in x:
        return W["kept"][x["$ref"]]
    if isinstance(x, dict) and "$tuple" in x:
        return tuple(w_dec(v) for v in x["$tuple"])
    if isinstance(x, dict) and "$array" in x:
        return array("d", [float(v) for v in x["values"]])
    if isinstance(x, list):
        return [w_dec(v) for v in x]
    return x


def w_where(tb):
    import traceback
    frames = [f for f in traceback.extract_tb(tb) if os.path.abspath(f.filename) == W["path"]]
    return [f"{os.path.basename(W['path'])}, line {f.lineno}, in {f.name}: {(f.line or '').strip()}"
            for f in frames[-3:]]


def w_error(type_name, message):
    return {"error": {"type": type_name, "message": message, "gqa_error": False, "where": []}}


def w_failure(err):
    if isinstance(err, SystemExit):
        message = f"called sys.exit({err.code!r})"
    else:
        message = str(err)
    return {"error": {"type": type(err).__name__, "message": message[:500],
                      "gqa_error": type(err).__name__ == "GQAError"
                      and isinstance(err, ValueError),
                      "where": w_where(err.__traceback__)}}


def w_lists_in(x, found, depth=0):
    if isinstance(x, list) and depth < 50:
        found.add(id(x))
        for v in x:
            w_lists_in(v, found, depth + 1)
    elif isinstance(x, tuple) and depth < 50:
        for v in x:
            w_lists_in(v, found, depth + 1)
    return found


def w_resolve(mod, name):
    if name.startswith("$"):
        kept, _, attr = name[1:].partition(".")
        return getattr(W["kept"][kept], attr)
    if not hasattr(mod, name):
        raise LookupError(f"the module has no {name}")
    fn = getattr(mod, name)
    if not callable(fn):
        raise LookupError(f"{name} is {_w_kind(fn)}, not a function")
    return fn


def _w_kind(x):
    return "None" if x is None else f"a {type(x).__name__}: {repr(x)[:40]}"


def w_call(mod, req):
    import inspect
    try:
        fn = w_resolve(mod, req["fn"])
    except LookupError as err:
        return w_error("missing", str(err))
    raw = req.get("args", [])
    args = [w_dec(a) for a in raw]
    kwargs = {k: w_dec(v) for k, v in req.get("kwargs", {}).items()}
    names = [str(i) for i in range(len(args))]
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            names = list(signature.bind(*args, **kwargs).arguments)[:len(args)]
        except TypeError as err:
            return w_error("signature", f"{err}; its signature is {req['fn']}{signature}")
    mine = [i for i, a in enumerate(raw) if not (isinstance(a, dict) and "$ref" in a)]
    before = [json.dumps(w_enc(args[i])) for i in mine]
    try:
        value = fn(*args, **kwargs)
    except BaseException as err:
        return w_failure(err)
    answer = {}
    if req.get("keep"):
        W["kept"][req["keep"]] = value
    if req.get("value", True):
        answer["value"] = w_enc(value)
    answer["changed"] = [names[i] for i, old in zip(mine, before)
                         if json.dumps(w_enc(args[i])) != old]
    if req.get("fresh"):
        inputs = set()
        for i in mine:
            w_lists_in(args[i], inputs)
        answer["aliased"] = bool(w_lists_in(value, set()) & inputs)
    return answer


def w_calls_in(mod, calls, values=None):
    """Run calls in order; the first one's error, or None (each value to values, if given)."""
    for r in calls:
        answer = w_call(mod, dict(r, value=values is not None))
        if "error" in answer:
            return answer
        if values is not None:
            values.append(answer["value"])
    return None


def w_handle(mod, req):
    op = req["op"]
    if op == "call":
        return w_call(mod, req)
    if op == "get":
        obj, values = W["kept"][req["ref"]], {}
        for attr in req["attrs"]:
            try:
                values[attr] = w_enc(len(obj) if attr == "len" else getattr(obj, attr))
            except BaseException as err:
                return w_failure(err)
        return {"value": values}
    if op == "tally":
        values = [] if req.get("values") else None
        try:
            with mod.count_multiplies() as tally:
                if req.get("nested"):           # an inner block adds to this one as it ends
                    with mod.count_multiplies():
                        answer = w_calls_in(mod, req["calls"], values)
                else:
                    answer = w_calls_in(mod, req["calls"], values)
            if answer is not None:
                return answer
            fields = {f: w_enc(getattr(tally, f, None)) for f in req["fields"]}
            fields["multiplies()"] = w_enc(tally.multiplies())
            if values is not None:
                fields["values"] = values
        except BaseException as err:
            return w_failure(err)
        return {"value": fields}
    return w_error("protocol", f"unknown op {op}")


def w_serve(mod, requests):
    """Answer each request's items, one line each, until the grader closes the pipe."""
    for line in requests:
        try:
            request = json.loads(line)
            n, items = request["n"], request["items"]
        except BaseException as err:
            w_send(dict(w_failure(err), n=None, i=0))
            continue
        for i, item in enumerate(items):
            try:
                answer = w_handle(mod, item)
                if W["refuse_grader"] and "grader" in sys.modules:
                    answer = w_error("refused", "the module imported grader.py during the call; "
                                     "the grader refuses to grade it")
                text = json.dumps(dict(answer, n=n, i=i))
            except BaseException as err:
                answer = w_failure(err)
                text = json.dumps(dict(answer, n=n, i=i))
            W["out"].write(text + "\n")
            W["out"].flush()
            if "error" in answer:
                break


def w_run(mod, run):
    """Send each item that the project's function target(module, *args) yields, then done."""
    import importlib
    module_name, _, function = run["target"].partition(":")
    try:
        target = getattr(importlib.import_module(module_name), function)
        for item in target(mod, *run.get("args", [])):
            w_send({"item": item})
    except BaseException as err:
        w_send(w_failure(err))
        return
    w_send({"done": True})


def w_limit(resource, limits):
    """Lower this process's limits (never above the hard limits it was given)."""
    for name, value in limits.items():
        which = getattr(resource, W_LIMITS[name], None)
        if which is None:
            continue
        soft, hard = value, value + 1 if name == "cpu" else value
        old_hard = resource.getrlimit(which)[1]
        if old_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, old_hard), min(hard, old_hard)
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            pass


def w_open_path():
    """Before the drop: a descriptor of each folder of sys.path (the module's folders and
    the standard library, which may sit under a folder the worker's user cannot enter, such
    as root's home), and prctl."""
    if not os.path.isdir("/proc/self/fd"):
        return None
    try:
        import ctypes
        prctl = ctypes.CDLL(None).prctl
    except (ImportError, OSError, AttributeError):
        return None
    folders = []
    for entry in sys.path:
        try:
            folders.append(os.open(entry, os.O_RDONLY | os.O_DIRECTORY))
        except OSError:
            pass
    return prctl, folders


def w_use_path(opened):
    """After the drop: import from those folders through /proc/self/fd (which the worker
    may read once it is dumpable again: only its own user can trace it)."""
    if not opened:
        return
    prctl, folders = opened
    if prctl(4, 1, 0, 0, 0) != 0:                   # PR_SET_DUMPABLE
        return
    sys.path[:0] = [f"/proc/self/fd/{fd}" for fd in folders]
    sys.path_importer_cache.clear()


def w_main(argv):
    config = json.loads(argv[1])
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    W.update(out=os.fdopen(os.dup(1), "w", encoding="utf-8"), kept={},
             path=os.path.abspath(config["path"]), refuse_grader=config.get("refuse_grader", True))
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")
    sys.stdout = sys.stderr = open(os.devnull, "w", encoding="utf-8")
    sys.dont_write_bytecode = True
    import importlib
    import importlib.util
    try:
        import resource
    except ImportError:                  # Windows: no limits
        resource = None
    sys.path[:0] = config.get("paths", [])
    if config.get("drop"):
        for name in W_PRELOAD:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        opened = w_open_path()
        uid, gid = config["drop"]
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        except OSError as err:
            w_send({"import_error": f"the worker could not become uid {uid}: {err}"})
            return
        w_use_path(opened)
    if resource is not None:
        w_limit(resource, config.get("limits", {}))
    name, shown = config.get("name", "gqa"), config.get("shown", config["path"])
    spec = importlib.util.spec_from_file_location(name, W["path"])
    if spec is None or spec.loader is None:
        w_send({"import_error": f"{shown} is not a Python file (it must end in .py)"})
        return
    mod = importlib.util.module_from_spec(spec)
    if config.get("register", True):
        sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as err:
        w_send({"import_error": f"{shown} has a syntax error, line {err.lineno}: {err.msg}"})
        return
    except BaseException as err:
        if W["refuse_grader"] and isinstance(err, ImportError) and err.name == "grader":
            w_send({"import_error": f"{shown} imports grader.py: the grader grades a module "
                                    f"that does its own work, so it refuses this one"})
            return
        at = "; ".join(w_where(err.__traceback__))
        w_send({"import_error": f"importing {shown} raised {type(err).__name__}: {err}"
                                + (f" ({at})" if at else "")})
        return
    if W["refuse_grader"] and "grader" in sys.modules:
        w_send({"import_error": f"{shown} imports grader.py: the grader grades a module "
                                f"that does its own work, so it refuses this one"})
        return
    if config.get("run"):
        w_run(mod, config["run"])
        return
    w_send({"ready": True})
    w_serve(mod, requests)
# <<< the worker <<<


def _worker_source():
    """The worker's program: this file's text between the worker banners, then its call."""
    with open(os.path.abspath(__file__), encoding="utf-8") as f:
        text = f.read()
    start = text.index("# >>> the worker >>>\n")
    end = text.index("# <<< the worker <<<\n", start)
    return text[start:end] + "\nw_main(sys.argv)\n"


WORKER = _worker_source()            # read once: an edit of this file later changes no run
# What one answer may be.  The largest of a full run of the lab (--cases 200) is
# about 19 KB with about 400 lists, a report part about 20 KB: the caps leave a
# wide margin and keep the grader's own memory small whatever the worker sends.
ANSWER_CAP = 4 << 20                 # bytes: a longer answer line fails its case
ROUND_TRIP_CAP = 8 << 20             # bytes: all the answers to one request, or one child's items
STRUCTURE_CAP = 200_000              # values and lists in one line, counted before it is parsed
IMPORT_TIMEOUT = 10.0                # seconds the module's import may take (at least)
# What a worker may use, on POSIX: seconds of CPU (its whole life), bytes of
# address space, processes beyond itself (none: no fork, no thread), bytes
# per file written, open files.
LIMITS = {"cpu": DEFAULT_BUDGET, "memory": 2 << 30, "processes": 0, "file_size": 1 << 20,
          "open_files": 64}


def _bounded_int(text):
    """An integer of the worker's answer: at most 100 digits (converting more is slow)."""
    if len(text) > 100:
        raise ValueError("an integer of more than 100 digits")
    return int(text)


class Failure(Exception):
    """A case that failed; the message is the whole story."""


class NotStarted(Failure):
    """The step's function still raises NotImplementedError."""


class OutOfTime(Failure):
    """The run's time budget ran out."""


class Refused(Exception):
    """The module cannot be graded at all (it cannot be imported, or imports the grader)."""


def _allowed(st, uid, gids, bit):
    """Whether uid (in gids) has permission bit (4 read, 2 write, 1 search) on st, by its mode."""
    if st.st_uid == uid:
        return bool(st.st_mode >> 6 & bit)
    if st.st_gid in gids:
        return bool(st.st_mode >> 3 & bit)
    return bool(st.st_mode & bit)


def reachable(path, uid, gids, bit):
    """Whether uid could reach path (search on every folder above it) with permission bit.

    By the mode bits only (access control lists are not read); uid 0 reaches everything.
    """
    if uid == 0:
        return True
    path = os.path.realpath(path)
    folder = os.path.dirname(path)
    while True:
        if not _allowed(os.stat(folder), uid, gids, 1):
            return False
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return _allowed(os.stat(path), uid, gids, bit)


MODULE_CAP = 1 << 20                 # bytes: a larger module is refused by a sealed run
# As root, every worker (a sealed run's, the self-check's, a tool's) runs as a
# user of its own, made up for the run.  The tests turn this off in a disposable
# copy of the grader, to show that what it stops is real.
DROP_ROOT = True


def _uids_in_use():
    """The real uid of each process (where /proc exists): {uid: [pid, ...]}."""
    found = {}
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", encoding="utf-8") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except (OSError, ValueError):
            continue
        if fields.get("State", "").split()[:1] in (["Z"], ["X"]):
            continue
        uids = fields.get("Uid", "").split()
        for uid in set(uids):
            found.setdefault(int(uid), []).append(int(pid))
    return found


def fresh_ids():
    """A uid and gid for one run: a number no user, no group and no process has, within
    the ids this system can map; each run draws its own, so one run's processes can never
    signal another's."""
    import grp
    import pwd
    low, high = 1_000_000, 2_000_000_000
    try:
        with open("/proc/self/uid_map", encoding="utf-8") as f:
            ranges = [tuple(map(int, line.split())) for line in f if line.strip()]
        inside, _, count = max(ranges, key=lambda r: r[0] + r[2])
        if inside + count - 2 < high:              # a user namespace: its upper half
            low, high = max(inside + count // 2, 1), inside + count - 2
    except (OSError, ValueError):
        pass
    in_use, draw = _uids_in_use(), random.SystemRandom()
    for _ in range(1000):
        uid = draw.randint(low, high)
        if uid in in_use:
            continue
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            pass
        try:
            grp.getgrgid(uid)
            continue
        except KeyError:
            return uid, uid
    raise Refused("no free user id for the worker")


def kill_user(uid):
    """SIGKILL every process whose uid is uid (where /proc exists), until none is left."""
    for _ in range(200):
        pids = [pid for pid in _uids_in_use().get(uid, ()) if pid != os.getpid()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)


def read_module(path, follow=False):
    """The module's bytes, for a private copy: one open that follows no symbolic link
    (of the file itself; unless follow), of a regular file, at most MODULE_CAP bytes,
    read from that open.  Raises Refused otherwise."""
    import errno
    import stat
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP or os.path.islink(path):
            raise Refused(f"{path} is a symbolic link; a graded module must be a file of its "
                          f"own") from None
        raise Refused(f"cannot open {path}: {err.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{path} is not a regular file")
        chunks, size = [], 0
        while size <= MODULE_CAP:
            chunk = os.read(fd, MODULE_CAP + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MODULE_CAP or st.st_size > MODULE_CAP:
            raise Refused(f"{path} is larger than {MODULE_CAP >> 20} MiB")
        return b"".join(chunks)
    except OSError as err:
        raise Refused(f"cannot read {path}: {err.strerror}") from None
    finally:
        os.close(fd)


class Seal:
    """How a worker is shut in.  Every worker on POSIX gets LIMITS and its own session;
    a sealed run adds a private folder holding only a copy of the module, an
    environment of PATH alone, and, when the grader is root, another user.

    partly is None for a fully sealed run, else the reason it is only partly sealed.
    Raises Refused when a sealed run cannot be made safe here.
    """

    def __init__(self, sealed=False, user=None, out=None, budget=DEFAULT_BUDGET, private=False):
        self.sealed, self.drop, self.partly, self.dir = sealed, None, None, None
        self.source, self.fresh, self.follow = None, False, not (sealed or private)
        self.limits = dict(LIMITS, cpu=int(budget) + 5) if os.name == "posix" else {}
        root = os.name == "posix" and os.geteuid() == 0 and DROP_ROOT
        if not sealed:
            if root:                              # the module never runs as root
                self.drop, self.fresh = fresh_ids(), True
            if private or root:
                self._make_dir()
            return
        if os.name != "posix":
            raise Refused("a sealed run needs a POSIX system (Linux, macOS): its limits, "
                          "sessions and users do not exist here")
        if not root:
            self.partly = ("the grader is not running as root, so the worker runs as the same "
                           "user and could reach the grader's files and process")
        else:
            if user is None:
                self.drop, self.fresh = fresh_ids(), True
                name = f"uid {self.drop[0]}"
            else:
                import pwd
                name = user
                try:
                    entry = pwd.getpwnam(name)
                except KeyError:
                    raise Refused(f"--user {name}: no such user") from None
                if entry.pw_uid == 0:
                    raise Refused(f"--user {name}: the worker's user must not be root")
                self.drop = (entry.pw_uid, entry.pw_gid)
            self.user, gids = name, {self.drop[1]}
            if reachable(HERE, self.drop[0], gids, 1):
                raise Refused(f"the worker's user {name} could open files in the grader's folder "
                              f"{HERE} (grader.py, a solution); make it private first "
                              f"(chmod 700 {HERE})")
            if out:
                folder = os.path.dirname(os.path.abspath(out))
                if not os.path.isdir(folder):
                    raise Refused(f"--out {out}: no such folder {folder}")
                if reachable(folder, self.drop[0], gids, 2):
                    raise Refused(f"the worker's user {name} could write into {folder}, where "
                                  f"--out {out} goes; choose a folder only the grader can write")
                self._check_above(out, name, gids)
        self._make_dir()

    def _check_above(self, out, name, gids):
        """Every folder above --out's, as written and as resolved: one the worker's user could
        write into could have --out's folder renamed and replaced, unless it is sticky and
        root's (as /tmp is)."""
        import stat
        for start in (os.path.abspath(out), os.path.realpath(out)):
            folder = os.path.dirname(os.path.dirname(start))
            while True:
                st = os.stat(folder)
                if (reachable(folder, self.drop[0], gids, 2)
                        and not (st.st_mode & stat.S_ISVTX and st.st_uid == 0)):
                    raise Refused(f"the worker's user {name} could write into {folder}, above "
                                  f"--out {out}, and rename the folders in it; choose a path "
                                  f"whose every folder only the grader can write")
                parent = os.path.dirname(folder)
                if parent == folder:
                    break
                folder = parent

    def _make_dir(self):
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="gqa-sealed-")
        os.chmod(self.dir, 0o755)             # the worker reads it, it writes nothing here

    def place(self, path):
        """The module's copy in the private folder (written afresh, from the bytes read
        once by read_module), or path when there is no private folder."""
        if self.dir is None:
            return path
        if self.source is None:
            self.source = read_module(path, self.follow)
        copy = os.path.join(self.dir, os.path.basename(path))
        if os.path.lexists(copy):
            os.remove(copy)
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(self.source)
        os.chmod(copy, 0o644)
        return copy

    def env(self):
        return {"PATH": os.defpath} if self.sealed else None

    def kill_all(self):
        """With a uid of the run's own: kill every process of it (a daemon the module left)."""
        if self.fresh:
            kill_user(self.drop[0])

    def remove_files(self):
        """With a uid of the run's own: remove what it left in /tmp, /var/tmp and /dev/shm
        (its processes are gone by then)."""
        if not self.fresh:
            return
        import shutil
        import stat
        for shared in ("/tmp", "/var/tmp", "/dev/shm"):
            try:
                names = os.listdir(shared)
            except OSError:
                continue
            for entry in names:
                path = os.path.join(shared, entry)
                try:
                    st = os.lstat(path)
                    if st.st_uid != self.drop[0]:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        os.unlink(path)
                except OSError:
                    pass

    def close(self):
        self.kill_all()
        self.remove_files()
        if self.dir is not None:
            import shutil
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


class Worker:
    """One child process running WORKER on the module; replaced when it dies or hangs.

    On POSIX the worker starts in a session of its own, and the whole process
    group is killed when it stops.  Answers are read with select() on POSIX and
    by a reader thread elsewhere (Windows), requests written without blocking
    (or by a thread); every read and write has a deadline: the call's timeout,
    or the end of the run's budget when that comes first.
    """

    def __init__(self, path, timeout, seal=None, budget_end=None, label=None, run=None,
                 paths=None):
        self.path, self.timeout, self.label = path, timeout, label or path
        self.seal = seal or Seal()
        self.budget_end = budget_end if budget_end is not None else time.monotonic() + DEFAULT_BUDGET
        self.run, self.paths = run, paths
        self.proc = None
        self.started = 0
        self.sent = 0
        self.budget_text = ""

    def out_of_time(self):
        return time.monotonic() >= self.budget_end

    def _popen(self):
        placed = self.seal.place(self.path)
        config = {"path": placed, "shown": self.label, "limits": self.seal.limits,
                  "drop": self.seal.drop, "refuse_grader": self.run is None,
                  "paths": self.paths if self.paths is not None else list(dict.fromkeys(
                      [os.path.dirname(placed)] + ([] if self.seal.sealed else
                                                   [os.path.dirname(os.path.abspath(self.path))])))}
        if self.run is not None:
            config.update(run=self.run, name="gqa_under_tool", register=False)
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", WORKER, json.dumps(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=self.seal.dir, env=self.seal.env(), start_new_session=os.name == "posix")
        self.started += 1
        self.buffer, self.scanned, self.round_trip = bytearray(), 0, 0
        if os.name == "posix":
            os.set_blocking(self.proc.stdin.fileno(), False)
        else:
            self.lines = queue.Queue()
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines),
                             daemon=True).start()

    def start(self):
        """Start a worker and import the module; raise Refused when it cannot be imported."""
        self._popen()
        wait = max(IMPORT_TIMEOUT, 2 * self.timeout + 5)
        try:
            first = self._answer(f"importing {self.label}", wait)
        except OutOfTime:
            raise
        except Failure as err:
            raise Refused(str(err)) from None
        if not isinstance(first, dict) or "import_error" in first or first.get("ready") is not True:
            self.stop()
            why = first.get("import_error") if isinstance(first, dict) else None
            raise Refused(clean_text(why, False) if isinstance(why, str) else f"the worker's first answer for "
                          f"{self.label} was not readable")
        if self.seal.drop:
            self._check_user()

    def _check_user(self):
        """Where /proc exists: the worker's real, effective, saved uid and gid are the drop's."""
        try:
            with open(f"/proc/{self.proc.pid}/status", encoding="utf-8") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            return
        uid, gid = self.seal.drop
        if (set(status.get("Uid", "").split()) != {str(uid)}
                or set(status.get("Gid", "").split()) != {str(gid)}
                or status.get("Groups", "").split() not in ([], [str(gid)])):
            self.stop()
            raise Refused(f"the worker did not run as uid {uid}, gid {gid}; nothing was graded")

    @staticmethod
    def _read(stream, lines):
        while True:
            line = stream.readline(ANSWER_CAP + 1)
            if not line or len(line) > ANSWER_CAP:
                lines.put(None if not line else b"")
                return
            lines.put(line.rstrip(b"\n"))

    def _deadline(self, timeout):
        """(deadline, whether it is the budget's)."""
        mine = time.monotonic() + timeout
        return (self.budget_end, True) if self.budget_end < mine else (mine, False)

    def _line(self, deadline):
        """The worker's next line (bytes), None at its end; raise queue.Empty at the deadline
        and OverflowError for a line longer than ANSWER_CAP."""
        if os.name != "posix":
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line == b"":
                raise OverflowError
            return line
        fd = self.proc.stdout.fileno()
        while True:
            at = self.buffer.find(b"\n", self.scanned)
            if at > ANSWER_CAP:
                raise OverflowError
            if at >= 0:
                line = bytes(self.buffer[:at])
                del self.buffer[:at + 1]
                self.scanned = 0
                return line
            self.scanned = len(self.buffer)
            if self.scanned > ANSWER_CAP:
                raise OverflowError
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise queue.Empty
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk

    def _write(self, data, what):
        """Send data to the worker, by the call's deadline; a dead worker is left to _answer."""
        deadline, budget = self._deadline(self.timeout)
        if os.name != "posix":
            def write():
                try:
                    self.proc.stdin.write(data)
                    self.proc.stdin.flush()
                except OSError:
                    pass
            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            writer.join(max(0.0, deadline - time.monotonic()))
            if writer.is_alive():
                self._stalled(what, budget, "did not read its request within")
            return
        fd, view = self.proc.stdin.fileno(), memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                self._stalled(what, budget, "did not read its request within")
            try:
                view = view[os.write(fd, view[:1 << 16]):]
            except BlockingIOError:
                continue
            except OSError:
                return

    def _stalled(self, what, budget, how):
        self.stop()
        if budget:
            raise OutOfTime(BUDGET_NOTE)
        raise Failure(f"{what} {how} {self.timeout:g} s (is there an endless loop?); the worker "
                      f"was stopped")

    def _answer(self, what, timeout):
        deadline, budget = self._deadline(timeout)
        try:
            line = self._line(deadline)
        except queue.Empty:
            self.stop()
            if budget:
                raise OutOfTime(BUDGET_NOTE) from None
            raise Failure(f"{what} did not return within {timeout:g} s (is there an endless "
                          f"loop?); the worker was stopped") from None
        except OverflowError:
            self.stop()
            raise Failure(f"the answer to {what} was longer than {ANSWER_CAP >> 20} MiB; the "
                          f"worker was stopped") from None
        if line is None:
            code = self.stop()
            how = f"status {code}" if code is None or code >= 0 else f"signal {-code}"
            raise Failure(f"the module ended its process ({how}) during {what}")
        self.round_trip += len(line)
        if self.round_trip > ROUND_TRIP_CAP:
            self.stop()
            raise Failure(f"the worker's answers to one request (up to {what}) came to more "
                          f"than {ROUND_TRIP_CAP >> 20} MiB; the worker was stopped")
        if line.count(b"[") + line.count(b"{") + line.count(b",") > STRUCTURE_CAP:
            self.stop()
            raise Failure(f"the answer to {what} held more than {STRUCTURE_CAP:,} values and "
                          f"lists; the worker was stopped")
        try:
            return json.loads(line, parse_int=_bounded_int)
        except (ValueError, RecursionError, MemoryError):
            self.stop()
            raise Failure(f"the worker's answer to {what} was not readable") from None

    def exchange(self, items, whats):
        """Send items in one request; return their answers, up to the first error.

        Each answer has the call's own deadline, so a timeout names the call that hung.
        """
        if self.proc is None:
            self.start()
        self.sent += 1
        self.round_trip = 0
        self._write((json.dumps({"n": self.sent, "items": items}) + "\n").encode("utf-8"),
                    whats[0])
        answers = []
        for i, what in enumerate(whats):
            answer = self._answer(what, self.timeout)
            if not isinstance(answer, dict) or answer.get("n") != self.sent or answer.get("i") != i:
                self.stop()
                raise Failure(f"the worker's answer to {what} was out of turn or not an answer; "
                              f"the worker was stopped")
            answers.append(answer)
            if "error" in answer:
                break
        return answers

    def items(self):
        """With run: each item the child sends, until it is done; Failure when it ends otherwise."""
        self.start_run()
        while True:
            try:
                line = self._answer(self.what, self.timeout)
            except OutOfTime:
                raise Failure(f"{self.what} did not finish within its time budget") from None
            if not isinstance(line, dict):
                self.stop()
                raise Failure("the child process sent something that is not an item")
            if "item" in line:
                yield clean_data(line["item"])
            elif line.get("done") is True:
                return
            elif "import_error" in line and isinstance(line["import_error"], str):
                self.stop()
                raise Refused(clean_text(line["import_error"], False))
            else:
                error = line.get("error")
                self.stop()
                if isinstance(error, dict):
                    error = clean_data(error, newlines=False)
                    raise Failure(f"it raised {error.get('type')}: {error.get('message')}")
                raise Failure("the child process sent something that is not an item")

    def start_run(self):
        self._popen()

    def stop(self):
        """Kill the worker and its process group; return its exit status (None if not known)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if os.name == "posix":
            try:                             # before wait(): the group's id cannot be reused yet
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            proc.kill()
        except OSError:
            pass
        try:
            code = proc.wait(10)
        except subprocess.TimeoutExpired:
            code = None
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.seal.kill_all()
        return code


def run_in_child(path, target, args=(), *, paths=(), label=None, what="running the module",
                 item_timeout=60.0, budget=DEFAULT_BUDGET):
    """Yield what the project's function target ("module:function") yields when called as
    target(the module at path, *args) in a worker, each item as plain JSON data.

    The worker has the grader's limits, its own session (killed at the end), a
    private folder holding a copy of the module (read by read_module: no symbolic
    link, at most 1 MiB), as root a user id of the run's own (Seal), a deadline per
    item and one for the whole run; the items' strings come back cleaned (clean_data); what names the work in
    messages ("building the report did not return within 60 s").  Raises Refused when the
    module cannot be imported, Failure (after the items that came) when the
    child hangs, dies, runs out of the budget or sends something else.  The
    caller's process never imports the module.
    """
    seal = Seal(budget=budget, private=True)
    worker = Worker(path, item_timeout, seal, time.monotonic() + budget,
                    label=label, run={"target": target, "args": list(args)}, paths=list(paths))
    worker.what = what
    try:
        yield from worker.items()
    finally:
        worker.stop()
        seal.close()


def ref(name):
    """An argument that is an object kept in the worker."""
    return {"$ref": name}


def _brief(value):
    """A short description of an argument: numbers as they are, tensors by shape."""
    if isinstance(value, dict) and "$ref" in value:
        return value["$ref"]
    if isinstance(value, (list, tuple, array)):
        shape = []
        while isinstance(value, (list, tuple, array)):
            shape.append(len(value))
            value = value[0] if value else None
        return "<" + "x".join(map(str, shape)) + " list>"
    text = repr(value)
    return text if len(text) <= 40 else type(value).__name__


def wire(x):
    """An argument as the worker reads it: tuples and array('d') tagged (JSON has neither)."""
    if isinstance(x, list):
        return [wire(v) for v in x]
    if isinstance(x, tuple):
        return {"$tuple": [wire(v) for v in x]}
    if isinstance(x, array):
        return {"$array": "d", "values": list(x)}
    return x


def _args(args, kwargs):
    return ", ".join([_brief(a) for a in args] + [f"{k}={_brief(v)}" for k, v in kwargs.items()])


def _well_formed(answer):
    """Whether an answer has the shape the protocol gives it (its values are checked later)."""
    e = answer.get("error")
    if e is not None:
        if not (isinstance(e, dict) and isinstance(e.get("type"), str)
                and isinstance(e.get("message"), str) and isinstance(e.get("where", []), list)
                and all(isinstance(x, str) for x in e.get("where", []))):
            return False
        e.setdefault("where", [])
        e["gqa_error"] = e.get("gqa_error") is True
    changed = answer.get("changed", [])
    return isinstance(changed, list) and all(isinstance(c, str) for c in changed)


class Student:
    """The module under test, seen from here: calls go to the worker, answers come back as data.

    Calls made only to set something up in the worker (value=False) wait, and
    go with the next request that needs an answer, in one round trip.  The
    worker's flags about its own calls (an argument changed, an input
    returned) can only fail a case, never pass one.
    """

    def __init__(self, worker):
        self.worker = worker
        self.pending = []                   # [(request, what)] not sent yet

    def _exchange(self, pairs):
        answers = self.worker.exchange([m for m, _ in pairs], [w for _, w in pairs])
        for answer, (_, what) in zip(answers, pairs):
            if not _well_formed(answer):
                self.worker.stop()
                raise Failure(f"the worker's answer to {what} was malformed; the worker was "
                              f"stopped")
        return answers

    def _send(self, message, what):
        """Send the pending requests and this one; return this one's answer."""
        queued, self.pending = self.pending, []
        answers = self._exchange(queued + [(message, what)])
        for answer, (_, earlier) in zip(answers, queued):
            self._check(answer, earlier, False)
        if len(answers) != len(queued) + 1:
            raise Failure(f"the worker did not answer {what}")
        return answers[-1]

    def _raise(self, answer, what):
        e = clean_data(answer["error"], newlines=False)
        if e["type"] == "NotImplementedError":
            err = NotStarted(f"not implemented yet: {e['message'] or what + ' raised NotImplementedError'}")
            err.where = "".join(f"\n  at {frame}" for frame in e["where"])
            raise err
        if e["type"] == "missing":
            raise Failure(f"{e['message']} (needed for {what})")
        if e["type"] == "signature":
            raise Failure(f"{what} has the wrong signature: {e['message']}")
        at = "".join(f"\n  at {frame}" for frame in e["where"])
        raise Failure(f"{what} raised {e['type']}: {e['message']}{at}")

    def _check(self, answer, what, fresh):
        if "error" in answer:
            self._raise(answer, what)
        if answer.get("changed"):
            raise Failure(f"{what} changed its argument {', '.join(answer['changed'])} in place; "
                          f"it must leave its inputs alone and return new lists")
        if fresh and answer.get("aliased"):
            raise Failure(f"{what} returned lists that belong to its input; it must return "
                          f"new lists")
        try:
            return decode(answer.get("value"))
        except Exception:                   # a tagged value without its parts, nested too deep
            self.worker.stop()
            raise Failure(f"the worker's answer to {what} was malformed; the worker was "
                          f"stopped") from None

    def call(self, fn, *args, keep=None, value=True, fresh=False, **kwargs):
        """fn(*args, **kwargs) in the worker: its value (None with value=False, sent later)."""
        what = f"{fn.lstrip('$')}({_args(args, kwargs)})"
        message = {"op": "call", "fn": fn, "args": wire(list(args)),
                   "kwargs": {k: wire(v) for k, v in kwargs.items()},
                   "keep": keep, "value": value, "fresh": fresh}
        if not value:
            self.pending.append((message, what))
            return None
        return self._check(self._send(message, what), what, fresh)

    def calls(self, fn, arg_lists):
        """[fn(*args) for args in arg_lists], in one round trip."""
        queued, self.pending = self.pending, []
        pairs = queued + [({"op": "call", "fn": fn, "args": wire(list(a))}, f"{fn}({_args(a, {})})")
                          for a in arg_lists]
        answers = self._exchange(pairs)
        values = [self._check(a, what, False) for a, (_, what) in zip(answers, pairs)]
        if len(values) != len(pairs):
            raise Failure(f"the worker did not answer {pairs[len(values)][1]}")
        return values[len(queued):]

    def get(self, name, *attrs):
        """Attributes of a kept object ("len" for len(obj))."""
        what = f"{name}.{'/'.join(attrs)}"
        return self._check(self._send({"op": "get", "ref": name, "attrs": list(attrs)}, what),
                           what, False)

    def tally(self, calls, fields, nested=False):
        """Run calls [(fn, args, kwargs)] inside count_multiplies() (nested: inside a second
        count_multiplies() block within it); the outer tally's fields, and under "values"
        the calls' values in order."""
        message = {"op": "tally", "fields": list(fields), "nested": nested, "values": True,
                   "calls": [{"op": "call", "fn": fn, "args": wire(list(a)),
                              "kwargs": {n: wire(v) for n, v in k.items()}, "value": False}
                             for fn, a, k in calls]}
        return self._check(self._send(message, "count_multiplies()"),
                           "the calls inside count_multiplies()", False)

    def raises(self, fn, args, numbers, kwargs=None):
        """fn(*args) must raise the module's GQAError, naming the numbers given."""
        what = f"{fn}({_args(args, kwargs or {})})"
        answer = self._send({"op": "call", "fn": fn, "args": wire(list(args)),
                             "kwargs": {k: wire(v) for k, v in (kwargs or {}).items()}}, what)
        if "error" not in answer:
            raise Failure(f"{what} returned {_short(self._check(answer, what, False))} instead "
                          f"of raising GQAError")
        e = clean_data(answer["error"], newlines=False)
        if e["type"] in ("NotImplementedError", "missing", "signature"):
            self._raise(answer, what)
        if not e["gqa_error"]:
            raise Failure(f"{what} raised {e['type']}: {e['message']}, not GQAError (a "
                          f"ValueError subclass)")
        name = "KVCache." + fn.split(".", 1)[1] if fn.startswith("$cache.") else fn
        if not re.search(rf"\b{re.escape(name)}\b", e["message"]):
            raise Failure(f"{what} raised GQAError({e['message']!r}), which does not name the "
                          f"function, {name} (a refusal's message names the function, the rule "
                          f"and the numbers at fault)")
        missing = [str(x) for x in numbers if not re.search(rf"(?<!\d)(?<!\d\.){re.escape(str(x))}(?!\d|\.\d)",
                                                            e["message"])]
        if missing:
            raise Failure(f"{what} raised GQAError({e['message']!r}), which does not mention "
                          f"{', '.join(missing)} (a refusal's message names the numbers at fault)")


# ---------------------------------------------------------------------------
# What a failing case shows: the calls it made, as Python a student can paste.
# ---------------------------------------------------------------------------

# The lab's parameter names, for the lists a shown call names on a line of their own.
PARAMS = {
    "fold_kv_mean": ("kv", "g"), "repeat_kv": ("kv", "h"),
    "single_head_attention": ("q", "k", "v"), "attention": ("q", "k", "v", "g"),
    "grouped_attention": ("q", "k", "v"), "fold_weights": ("weights", "g"),
    "prepare_weights": ("weights", "g"), "layer": ("x", "weights", "g"),
    "output_difference": ("a", "b"), "decode_step": ("x_t", "weights", "g", "cache"),
    "$cache.append": ("k_rows", "v_rows"),
    "grouped_attention_backward": ("q", "k", "v", "d_out"),
    "layer_backward": ("x", "weights", "g", "d_y"),
}


def literal(value):
    """value as Python source that evaluates to it: whole, never cut."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value}')"
    if isinstance(value, dict) and "$ref" in value:
        return value["$ref"]
    if isinstance(value, list):
        return "[" + ", ".join(map(literal, value)) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(map(literal, value)) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, array):
        return f"array('{value.typecode}', {literal(list(value))})"
    return repr(value)


class Statement:
    """One line (or block) of the transcript: lines that name its lists, then its code.
    Written only when shown: make() returns (code, hoisted [(name, value)], inputs)."""

    def __init__(self, make, setup=False, refused=False):
        self.make, self.made, self.setup, self.refused = make, None, setup, refused

    def _parts(self):
        if self.made is None:
            code, hoisted, inputs = self.make()
            self.made = [code, list(hoisted), dict(inputs or {})]
        return self.made

    @property
    def code(self):
        return self._parts()[0]

    @code.setter
    def code(self, text):
        self._parts()[0] = text

    @property
    def hoisted(self):
        return self._parts()[1]

    @property
    def inputs(self):
        return self._parts()[2]

    def text(self, wrapped=False):
        """The lines; wrapped: a refused call inside try/except, so a paste runs on past it."""
        code = self.code
        if wrapped:
            code = ("try:\n" + "".join(f"    {line}\n" for line in code.splitlines())
                    + "except GQAError as e:\n    print(e)\n")
        return "".join(f"{name} = {literal(value)}\n" for name, value in self.hoisted) + code


def call_text(fn, args, kwargs, hoist=True):
    """(code, hoisted, inputs) for fn(*args, **kwargs): long lists on lines of their own."""
    names = PARAMS.get(fn, ())
    parts, hoisted, inputs = [], [], {}
    for i, a in enumerate(args):
        name = names[i] if i < len(names) else f"arg{i}"
        inputs[name] = literal(a) if isinstance(a, dict) else plain(a)
        if hoist and isinstance(a, list) and name:
            hoisted.append((name, a))
            parts.append(name)
        else:
            parts.append(literal(a))
    for k, v in kwargs.items():
        inputs[k] = literal(v) if isinstance(v, dict) else plain(v)
        parts.append(f"{k}={literal(v)}")
    target = fn[1:] if fn.startswith("$") else fn
    return f"{target}({', '.join(parts)})", hoisted, inputs


class Case:
    """The module as one case of a check sees it: every call goes to the Student, and
    is written down as Python, so a failure shows the very call that failed."""

    def __init__(self, student):
        self.student = student
        self.statements = []                 # [Statement], in the order they ran
        self.blamed = None                   # the statement a failure is about, if not the last

    def _note(self, statement):
        self.statements.append(statement)
        self.blamed = None
        return statement

    def note(self, code, hoisted=(), setup=False):
        """Write down code the check compares itself (an expression built from calls made)."""
        return self._note(Statement(lambda: (code, hoisted, {}), setup))

    def blame(self, statement):
        """The next failure is about this statement, not the last one."""
        self.blamed = statement

    def call(self, fn, *args, keep=None, value=True, fresh=False, setup=False, **kwargs):
        def make():
            if keep:
                return f"{keep} = {call_text(fn, args, kwargs, hoist=False)[0]}", [], {}
            return call_text(fn, args, kwargs)
        st = self._note(Statement(make, setup or bool(keep) or fn.startswith("$")))
        try:
            return self.student.call(fn, *args, keep=keep, value=value, fresh=fresh, **kwargs)
        except Failure as err:                  # what the paste must print to show it
            code, names = st.code, [name for name, _ in st.hoisted]
            if names and "in place" in str(err):
                st.code = ("import copy\n" + "".join(f"{n}_before = copy.deepcopy({n})\n" for n in names)
                           + f"out = {code}\n" + " and ".join(f"{n} == {n}_before" for n in names))
            elif names and "belong to its input" in str(err):
                st.code = ("def ids(t): return {id(t)}.union(*map(ids, t)) if isinstance(t, (list, tuple)) "
                           "else set()\n\n" + f"out = {code}\n"
                           + f"bool(ids(out) & ({' | '.join(f'ids({n})' for n in names)}))")
            raise

    def calls(self, fn, arg_lists):
        self._note(Statement(lambda: ("[" + ", ".join(call_text(fn, a, {})[0] for a in arg_lists) + "]",
                                      [], {"calls": [list(a) for a in arg_lists]})))
        return self.student.calls(fn, arg_lists)

    def get(self, name, *attrs):
        self.note(", ".join(f"len({name})" if a == "len" else f"{name}.{a}" for a in attrs))
        return self.student.get(name, *attrs)

    def tally(self, calls, fields, nested=False):
        def make():
            body = [f"y = {call_text(fn, a, k, hoist=False)[0]}" for fn, a, k in calls]
            indent = "        " if nested else "    "
            code = "with count_multiplies() as tally:\n" + (
                "    with count_multiplies() as inner:\n" if nested else "")
            inputs = {"calls": [dict(call_text(fn, a, k)[2], fn=fn) for fn, a, k in calls]}
            return code + "".join(f"{indent}{line}\n" for line in body) + "\ntally", [], inputs
        self._note(Statement(make))
        return self.student.tally(calls, fields, nested=nested)

    def raises(self, fn, args, numbers, kwargs=None):
        # A refused call on an object kept in the worker (a method, or a kept argument)
        # may still change it: the paste makes it too, before what follows.
        keeps = fn.startswith("$") or any(isinstance(a, dict) and "$ref" in a
                                          for a in list(args) + list((kwargs or {}).values()))
        self._note(Statement(lambda: call_text(fn, args, kwargs or {}), keeps, refused=True))
        return self.student.raises(fn, args, numbers, kwargs)

    def failing(self):
        """The statement the failure is about."""
        return self.blamed or (self.statements[-1] if self.statements else None)

    def show(self, whole=False):
        """The Python that repeats the failing call: the setup it needs, then the call
        (whole: every call of the case, in order)."""
        last = self.failing()
        if last is None:
            return ""
        lines = ["from gqa import *"]
        for st in self.statements:
            if st is last:
                break
            if st.setup or whole:
                lines.append(st.text(wrapped=st.refused))
        lines.append(last.text())
        if any("array('" in line for line in lines):
            lines.insert(1, "from array import array")
        return "\n".join(lines) + "\n"

    def inputs(self):
        last = self.failing()
        return dict(last.inputs) if last is not None else {}


# ---------------------------------------------------------------------------
# The steps, in the lab's order: one check per public function of gqa.py.
# Each check is called once per case; it raises Failure on a wrong answer.
# ---------------------------------------------------------------------------

class Step:
    def __init__(self, number, name, summary, systematic, fn, needs=(), touches=(), why=""):
        self.number, self.name, self.summary = number, name, summary
        self.systematic, self.fn = systematic, fn
        self.needs, self.touches, self.why = tuple(needs), tuple(touches), why


STEPS = []


def step(number, name, summary, systematic, needs=(), touches=(), why="", refusals=None):
    """Register a check.  needs: the later steps whose functions it calls too;
    touches: the earlier steps a student goes back to for it, and why; refusals(s, rng):
    the refusals its docstring states, one more systematic case after the others."""
    def register(fn):
        check = fn
        if refusals:
            def check(s, case, rng):
                if case == systematic:
                    return refusals(s, rng)
                return fn(s, case - (case > systematic), rng)
        STEPS.append(Step(number, name, summary, systematic + bool(refusals), check, needs, touches, why))
        return fn
    return register


# The refusals each step's docstring states, beyond those its check draws: calls that
# must raise GQAError naming the numbers given.
def refuse_repeat_kv(s, rng):
    s.raises("repeat_kv", [[], 2], [])                                       # no heads


def refuse_single(s, rng):
    s.raises("single_head_attention", [[[1.0]], [], []], [])                 # no keys
    s.raises("single_head_attention", [[[1.0, 2.0]], [[1.0]], [[1.0]]], [2, 1])   # d differs
    s.raises("single_head_attention", [[[1.0]], [[1.0], [2.0]], [[1.0], [2.0], [3.0]]], [2, 3])


def refuse_attention(s, rng):
    s.raises("attention", [[[[1.0]], [[1.0]]], [[[1.0]]], [[[1.0]]], 1], [2, 1])   # k, v not h heads


def refuse_grouped(s, rng):
    s.raises("grouped_attention", [[[[1.0]], [[1.0]]], [[[1.0]], [[1.0]]], [[[1.0]]]], [2, 1])


def refuse_fold_weights(s, rng):
    w_q, w_k, w_v, w_o = random_weights(rng, 4, 3, 2)
    s.raises("fold_weights", [send_weights(s, [w_q, w_k[:3], w_v, w_o]), 2], [3, 4, 2])
    s.raises("fold_weights", [send_weights(s, [w_q, w_k, w_v, [h[:1] for h in w_o]]), 2], [])


def refuse_layer(s, rng):
    s.call("prepare_weights", send_weights(s, random_weights(rng, 2, 3, 2)), 1, keep="p", value=False)
    s.raises("layer", [rand_tensor(rng, 1, 3), ref("p"), 2], [1, 2])      # prepared for another g


def refuse_difference(s, rng):
    s.raises("output_difference", [[[[[1.0]]]], [[[[1.0]]]]], [])           # deeper than 3 levels


def refuse_cache_elements(s, rng):
    s.raises("kv_cache_elements", [1, 1, 1, 0], [0])                         # head_dim 0
    s.raises("kv_cache_elements", [-1, 1, 1, 1], [-1])                       # a negative count


def refuse_kv_cache(s, rng):
    s.raises("KVCache", [0, 2], [0])
    s.raises("KVCache", [2, 0], [0])


def refuse_decode(s, rng):
    w = send_weights(s, random_weights(rng, 2, 3, 2))
    s.call("KVCache", 2, 2, keep="cache", value=False)
    s.raises("decode_step", [[1.0, 2.0, 3.0], w, 1, ref("cache")], [2, 1])  # a cache for another g
    s.call("KVCache", 1, 2, keep="cache", value=False)
    s.raises("decode_step", [[1.0, 2.0], w, 1, ref("cache")], [2, 3])       # x_t not d_model long
    expect(s.get("cache", "len")["len"], 0, "a refused decode_step", "len(cache) after refused steps")


ALL_HG = [(h, g) for h in range(1, 17) for g in ref_valid_g(h)]     # every (h, g) with h <= 16


def draw_hg(case, rng):
    """The systematic (h, g) pairs first, in order, then random ones."""
    if case < len(ALL_HG):
        return ALL_HG[case]
    h = rng.randint(1, 16)
    return h, rng.choice(ref_valid_g(h))


def bad_g(h, rng):
    """A g that breaks the rule for h: a non-divisor when h has one, else out of range."""
    return rng.choice([g for g in range(2, h) if h % g] or [0, h + 1, -1])


def expect(got, expected, where, what, exact=False, rel=REL_TOL, loose=False, names=None):
    """Raise a Failure naming the case, and showing both values when they are short.
    names: got and expected are a record's fields, in this order (named in the message)."""
    diff = None
    if names is not None and isinstance(got, list) and len(got) == len(names) == len(expected):
        for name, a, b in zip(names, got, expected):
            diff = first_difference(a, b, rel=rel, exact=exact, where=(name,), loose_lists=loose)
            if diff:
                break
    else:
        diff = first_difference(got, expected, rel=rel, exact=exact, loose_lists=loose)
    if diff:
        shown = f"expected: {_cut(expected)}\ngot:      {_cut(got)}\n"
        raise Failure(f"case {where}: {what}\n{shown}first difference {diff}")


def _cut(x, limit=200):
    """repr(x), its middle cut when long (--show prints the whole call)."""
    text = repr(x)
    if len(text) <= limit:
        return text
    return f"{text[:limit * 3 // 4]} ... {text[-limit // 4:]} ({len(text)} characters; --show prints the call)"


def fields_of(got, what, record, names):
    """The fields of a record the module returned, in order; a Failure if it is not one.
    what: the call ("fold_weights(w, 2)": it must return one) or a part ("each row's ratio")."""
    if not isinstance(got, Record):
        verb = "return" if what.endswith(")") else "be"
        raise Failure(f"{what} must {verb} a {record} record (with the field{'s' * (len(names) > 1)} "
                      f"{', '.join(names)}); got {kind(got)}: {_short(got)}")
    return [getattr(got, name) for name in names]


def not_tuples(t, where=""):
    """Where in t a sequence is not a tuple ("[0][1]", "" for t itself), or None."""
    if not isinstance(t, tuple):
        return where
    for i, x in enumerate(t):
        if not isinstance(x, (int, float)):
            found = not_tuples(x, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def eval_at(t, where):
    """t[i][j]... for where = "[i][j]..."."""
    for i in re.findall(r"\[(\d+)\]", where):
        t = t[int(i)]
    return t


def ragged(rng, rows, cols):
    """A matrix whose last row is one value short (or long): ragged rows, to be refused."""
    m = rand_tensor(rng, rows, cols)
    m[-1] = m[-1][:-1] if cols > 1 else m[-1] + [0.5]
    return m


@step(1, "valid_g", "the valid g for h: its divisors, in increasing order", 16)
def check_valid_g(s, case, rng):
    h = case + 1 if case < 16 else rng.randint(17, 400)
    expect(s.call("valid_g", h), ref_valid_g(h), f"h={h}", f"valid_g({h})")
    if case == 0:
        s.raises("valid_g", [0], [0])


@step(2, "method_name", "MHA at g = h, MQA at g = 1 < h, GQA between", len(ALL_HG))
def check_method_name(s, case, rng):
    h, g = draw_hg(case, rng)
    expect(s.call("method_name", h, g), ref_method_name(h, g), f"h={h}, g={g}", f"method_name({h}, {g})")
    bad = bad_g(h, rng)
    s.raises("method_name", [h, bad], [h, bad])


@step(3, "kv_head", "query head i reads key/value head i // (h // g)", len(ALL_HG))
def check_kv_head(s, case, rng):
    h, g = draw_hg(case, rng)
    expect(s.calls("kv_head", [(i, h, g) for i in range(h)]), [ref_kv_head(i, h, g) for i in range(h)],
           f"h={h}, g={g}", f"[kv_head(i, {h}, {g}) for i in range({h})]")
    bad = bad_g(h, rng)
    s.raises("kv_head", [0, h, bad], [h, bad])
    i = h + rng.randint(1, 3)                    # a query head past the last one
    s.raises("kv_head", [i, h, g], [i, h])


@step(4, "group_heads", "the query heads of each group, contiguous blocks", len(ALL_HG))
def check_group_heads(s, case, rng):
    h, g = draw_hg(case, rng)
    expect(s.call("group_heads", h, g), ref_group_heads(h, g), f"h={h}, g={g}", f"group_heads({h}, {g})")
    bad = bad_g(h, rng)
    s.raises("group_heads", [h, bad], [h, bad])


ROW_KINDS = (None, "tuple", None, "array")     # the rows a case's input has: lists, tuples, array('d')

FOLD_CASES = [  # (what, kv, g): the edge cases of step 5, after every (h, g)
    ("two values of 1e308 (their sum overflows; their mean does not)",
     [[[1e308, -1e308]], [[1e308, -1e308]]], 1),
    ("values of 1e308 in a group of four", [[[1e308]], [[1e308]], [[1e308]], [[-1e308]]], 2),
]


@step(5, "fold_kv_mean", "h heads fold to g, each the mean of its group, new lists",
      len(ALL_HG) + len(FOLD_CASES) + 1)
def check_fold(s, case, rng):
    if case == len(ALL_HG) + len(FOLD_CASES):     # ragged rows are refused
        kv = [ragged(rng, 2, 2), rand_tensor(rng, 2, 2)]
        s.raises("fold_kv_mean", [kv, 1], [])
        return
    if len(ALL_HG) <= case < len(ALL_HG) + len(FOLD_CASES):
        where, kv, g = FOLD_CASES[case - len(ALL_HG)]
        h = len(kv)
    else:
        h, g = draw_hg(case, rng)
        how = ROW_KINDS[case % 4]                # rows as lists, tuples or array('d')
        kv = as_rows(rand_tensor(rng, h, rng.randint(1, 3), rng.randint(1, 3)), how)
        where = f"h={h}, g={g}, kv [{h}][{len(kv[0])}][{len(kv[0][0])}]" + (f" of {how} rows" if how else "")
    expected = ref_fold_kv_mean(kv, g)           # from the grader's own copy, before the call
    expect(s.call("fold_kv_mean", kv, g, fresh=True), expected, where, f"fold_kv_mean(kv, {g})")
    expect(s.call("fold_kv_mean", kv, h, fresh=True), plain(kv), where,
           f"fold_kv_mean(kv, {h}) == kv, exactly (new lists)", exact=True)
    bad = bad_g(h, rng)
    s.raises("fold_kv_mean", [kv, bad], [h, bad])


@step(6, "repeat_kv", "g heads repeat out to h, interleaved, not tiled", len(ALL_HG),
      refusals=refuse_repeat_kv)
def check_repeat(s, case, rng):
    h, g = draw_hg(case, rng)
    kv = rand_tensor(rng, g, rng.randint(1, 3), rng.randint(1, 3))
    expect(s.call("repeat_kv", kv, h), ref_repeat_kv(kv, h), f"h={h}, g={g}", f"repeat_kv(kv, {h})",
           exact=True)
    if g > 1:                                    # h = g + 1 is not a multiple of g
        s.raises("repeat_kv", [kv, g + 1], [g, g + 1])


def draw_qkv(rng, causal):
    n = rng.randint(1, 5)
    m = rng.randint(n if causal else 1, 7)
    d, dv = rng.randint(1, 6), rng.randint(1, 6)
    q, k, v = rand_tensor(rng, n, d), rand_tensor(rng, m, d), rand_tensor(rng, m, dv)
    scale = rng.choice([1.0, 3.0])              # larger scores make a wrong scale show
    return [[x * scale for x in row] for row in q], k, v, f"n={n}, m={m}, d={d}, d_v={dv}"


SINGLE_CASES = [  # (what, q, k, v, causal): the systematic cases of step 7
    ("one query, one key", [[0.5]], [[2.0]], [[3.0]], False),
    ("causal, n = m = 3", [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [0.0, 2.0], [1.0, -1.0]],
     [[1.0], [2.0], [4.0]], True),
    ("causal, n = 2 of m = 4", [[1.0], [-1.0]], [[0.5], [1.0], [-2.0], [0.0]], [[1.0], [2.0], [3.0], [4.0]], True),
    ("a single causal query sees every key", [[1.0, 2.0]], [[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]],
     [[1.0], [0.0], [-1.0]], True),
    ("scores of +-1000 (a softmax without its max overflows)", [[1000.0]], [[1.0], [-1.0], [0.999]],
     [[5.0], [7.0], [9.0]], False),
    ("scores of +-1e300", [[1e300]], [[1.0], [-1.0]], [[5.0], [7.0]], False),
    ("scores of -1e300", [[-1e300]], [[1.0], [-1.0]], [[5.0], [7.0]], False),
    ("an infinite score (it takes all the weight)", [[math.inf]], [[1.0], [-1.0]], [[1.0], [2.0]], False),
    ("two infinite scores (they share the weight)", [[math.inf]], [[1.0], [0.5], [-1.0]],
     [[1.0], [2.0], [4.0]], False),
    ("a NaN score (NaN propagates)", [[1.0]], [[math.nan], [1.0]], [[1.0], [2.0]], False),
    ("an infinite score after a NaN one (inf x 0): NaN propagates", [[math.inf]], [[1.0], [0.0]],
     [[1.0], [2.0]], False),
    ("tuple rows", as_rows([[1.0, 0.5], [0.0, -1.0]], "tuple"), as_rows([[1.0, 0.0], [0.5, 2.0]], "tuple"),
     as_rows([[1.0], [3.0]], "tuple"), True),
    ("array('d') rows", as_rows([[1.0, 0.5]], "array"), as_rows([[1.0, 0.0], [0.5, 2.0]], "array"),
     as_rows([[1.0, -1.0], [3.0, 0.0]], "array"), False),
]


@step(7, "single_head_attention", "softmax(q k^T / sqrt(d)) v; causal; large scores; refusals",
      len(SINGLE_CASES) + 2, refusals=refuse_single)
def check_single(s, case, rng):
    if case == len(SINGLE_CASES):                # n > m keys cannot be causal
        q, k, v = rand_tensor(rng, 3, 2), rand_tensor(rng, 2, 2), rand_tensor(rng, 2, 1)
        s.raises("single_head_attention", [q, k, v], [3, 2], kwargs={"causal": True})
        return
    if case == len(SINGLE_CASES) + 1:            # ragged rows
        q, k, v = rand_tensor(rng, 2, 2), rand_tensor(rng, 3, 2), ragged(rng, 3, 2)
        s.raises("single_head_attention", [q, k, v], [])
        return
    if case < len(SINGLE_CASES):
        where, q, k, v, causal = SINGLE_CASES[case]
    else:
        causal = case % 2 == 1
        q, k, v, where = draw_qkv(rng, causal)
    expect(s.call("single_head_attention", q, k, v, causal=causal, fresh=True),
           ref_single_head_attention(q, k, v, causal),
           f"{where}, causal={causal}", f"single_head_attention(q, k, v, causal={causal})")


def draw_heads(rng, case, h, kv_heads):
    """q [h][n][d], k and v [kv_heads][m][d or d_v], causal every other case."""
    n, m, d, dv = rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 3)
    causal = case % 2 == 1 and n <= m
    q = rand_tensor(rng, h, n, d)
    k, v = rand_tensor(rng, kv_heads, m, d), rand_tensor(rng, kv_heads, m, dv)
    return q, k, v, causal, f"n={n}, m={m}, d={d}, d_v={dv}, causal={causal}"


@step(8, "attention", "fold, repeat, attend: MHA at g = h to the last bit", 16, refusals=refuse_attention)
def check_attention(s, case, rng):
    h = case + 1 if case < 16 else rng.randint(1, 16)
    q, k, v, causal, where = draw_heads(rng, case, h, h)
    for g in ref_valid_g(h):
        expected = ref_attention(q, k, v, g, causal)
        got = s.call("attention", q, k, v, g, causal=causal, fresh=True)
        expect(got, expected, f"h={h}, g={g}, {where}", f"attention(q, k, v, g={g}, causal={causal})")
    bad = bad_g(h, rng)
    s.raises("attention", [q, k, v, bad], [h, bad])
    try:                                         # the lab's claim, where single_head_attention works
        mha = [s.call("single_head_attention", q[i], k[i], v[i], causal=causal) for i in range(h)]
    except Failure:
        return
    if first_difference(mha, expected) is None:
        s.note(f"attention(q, k, v, {h}, causal={causal}) == [single_head_attention(q[i], k[i], v[i], "
               f"causal={causal}) for i in range({h})]", [("q", q), ("k", k), ("v", v)])
        expect(got, mha, f"h={h}, {where}", "attention(q, k, v, g=h) must equal per-head "
               "single_head_attention bit for bit (==)", exact=True)


@step(9, "grouped_attention", "h query heads read g key/value heads by index", len(ALL_HG),
      refusals=refuse_grouped)
def check_grouped(s, case, rng):
    h, g = draw_hg(case, rng)
    q, k, v, causal, where = draw_heads(rng, case, h, g)
    how = ROW_KINDS[case % 4]                    # rows as lists, tuples or array('d')
    if how:
        q, k, v, where = as_rows(q, how), as_rows(k, how), as_rows(v, how), f"{where}, {how} rows"
    expect(s.call("grouped_attention", q, k, v, causal=causal, fresh=True),
           ref_grouped_attention(q, k, v, causal), f"h={h}, g={g}, {where}",
           f"grouped_attention(q, k, v, causal={causal})")
    if h % (g + 1):                              # g + 1 key/value heads do not divide h
        s.raises("grouped_attention", [q, k + k[:1], v + v[:1]], [h, g + 1])


def send_weights(s, fields, name="w"):
    """Make the module's Weights record from the grader's lists, kept in the worker as name."""
    w_q, w_k, w_v, w_o = fields
    s.call("Weights", w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, keep=name, value=False)
    return ref(name)


WEIGHT_FIELDS = ("w_q", "w_k", "w_v", "w_o")


def weights_unchanged(s, fields, name, what, where):
    """The kept Weights `name` still hold the grader's lists: the call just made left them
    alone (shown as that call, then the weights' fields)."""
    s.statements[-1].setup = True
    held = s.get(name, *WEIGHT_FIELDS)
    for field, value in zip(WEIGHT_FIELDS, fields):
        if first_difference(plain(held[field]), plain(value), exact=True):
            raise Failure(f"case {where}: {what} changed the caller's weights.{field} in place; "
                          f"it must leave the Weights it is given alone")


def draw_sizes(rng, case):
    """(h, g) as draw_hg gives them, and small n, d, d_model."""
    h, g = draw_hg(case, rng)
    n, d, d_model = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 4)
    return h, g, n, d, d_model, f"h={h}, g={g}, n={n}, d={d}, d_model={d_model}"


@step(10, "init_weights", "random MHA weights, drawn as documented, the same for a seed", 8)
def check_init_weights(s, case, rng):
    h, _, _, d, d_model, _ = draw_sizes(rng, case * 7)
    seed = rng.randrange(1000) if case % 2 else f"seed {rng.randrange(1000)}"
    what = f"init_weights({h}, {d_model}, {d}, seed={seed!r})"
    w = s.call("init_weights", h, d_model, d, seed=seed)
    got = fields_of(w, what, "Weights", WEIGHT_FIELDS)
    expected = ref_init_weights(h, d_model, d, seed)
    for name, t, want in zip(WEIGHT_FIELDS, got, expected):
        expect(t, nested([len(want), len(want[0]), len(want[0][0])]), f"h={h}, d_model={d_model}, d={d}",
               f"{what}.{name}: its shape", rel=math.inf)      # any values: the shape and the types
    expect(got, expected, f"h={h}, d_model={d_model}, d={d}, seed={seed!r}",
           f"{what}: w_q, w_k, w_v, w_o, drawn in that order from Random(seed).random(), each head "
           f"by head and row by row, as sqrt(3 / fan_in) * (2 * u - 1)", names=WEIGHT_FIELDS)
    s.raises("init_weights", [0, d_model, d], [0], kwargs={"seed": 1})


@step(11, "fold_weights", "the same weights with g K/V heads, by mean", len(ALL_HG),
      refusals=refuse_fold_weights)
def check_fold_weights(s, case, rng):
    h, g, _, d, d_model, _ = draw_sizes(rng, case)
    where = f"h={h}, g={g}, d={d}, d_model={d_model}"
    fields = random_weights(rng, h, d_model, d)
    how = ROW_KINDS[case % 4]                    # the weights' rows as lists, tuples or array('d')
    if how:
        fields, where = [as_rows(t, how) for t in fields], f"{where}, {how} rows"
    folded = s.call("fold_weights", send_weights(s, fields), g)
    expect(fields_of(folded, f"fold_weights(w, {g})", "Weights", WEIGHT_FIELDS),
           plain(ref_fold_weights(*fields, g)), where, f"fold_weights(weights, {g}): new lists throughout",
           names=WEIGHT_FIELDS)
    weights_unchanged(s, fields, "w", f"fold_weights(w, {g})", where)
    ready = plain(ref_fold_weights(*fields, g))
    again = s.call("fold_weights", send_weights(s, ready, "folded"), g)
    expect(fields_of(again, f"fold_weights(folded, {g})", "Weights", WEIGHT_FIELDS)[1], ready[1], where,
           "fold_weights of weights that already have g heads")


PREPARED_FIELDS = ("h", "g", "d_model", "d", "q_cols", "k_cols", "v_cols", "o_cols")


@step(12, "prepare_weights", "weights checked, folded and transposed once", len(ALL_HG))
def check_prepare(s, case, rng):
    h, g, _, d, d_model, _ = draw_sizes(rng, case)
    where = f"h={h}, g={g}, d={d}, d_model={d_model}"
    fields = random_weights(rng, h, d_model, d)
    p = s.call("prepare_weights", send_weights(s, fields), g)
    got = fields_of(p, f"prepare_weights(w, {g})", "PreparedWeights", PREPARED_FIELDS)
    expected = ref_prepare_weights(*fields, g)
    expect(got[:4], [expected[f] for f in PREPARED_FIELDS[:4]], where,
           "prepare_weights(...).h, g, d_model, d", names=PREPARED_FIELDS[:4])
    expect(got[4:], [expected[f] for f in PREPARED_FIELDS[4:]], where,
           "prepare_weights(weights, g): q_cols, k_cols, v_cols, o_cols", loose=True,
           names=PREPARED_FIELDS[4:])
    for name, t in zip(PREPARED_FIELDS[4:], got[4:]):
        lists = not_tuples(t)
        if lists is not None:
            raise Failure(f"case {where}: prepare_weights(w, {g}).{name}{lists} is {kind(eval_at(t, lists))}; "
                          f"a PreparedWeights' tensors are tuples throughout (it cannot change after "
                          f"it was checked)")
    weights_unchanged(s, fields, "w", f"prepare_weights(w, {g})", where)


@step(13, "layer", "one layer on MHA weights with g key/value heads, causal or not", len(ALL_HG) + 1,
      refusals=refuse_layer)
def check_layer(s, case, rng):
    if case == len(ALL_HG):                      # ragged rows of x are refused
        fields = random_weights(rng, 2, 2, 1)
        s.raises("layer", [ragged(rng, 3, 2), send_weights(s, fields), 1], [])
        return
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    how = ROW_KINDS[case % 4]                    # x's rows as lists, tuples or array('d')
    if how:
        x, where = as_rows(x, how), f"{where}, x of {how} rows"
    w = send_weights(s, fields)
    for causal in (False, True):
        expect(s.call("layer", x, w, g, causal=causal, fresh=True), ref_layer(x, *fields, g, causal),
               f"{where}, causal={causal}", f"layer(x, weights, g={g}, causal={causal})")
    if case % 5 == 0:                            # one case in five: the caller's weights
        weights_unchanged(s, fields, "w", f"layer(x, w, {g})", where)


DIFFERENCE_CASES = [  # (what, a, b): after the three drawn ones
    ("values of 1e200 (their squares overflow)", [[1e200, 2e200], [-3e200, 1e200]],
     [[1e200, 1e200], [-3e200, 2e200]]),
    ("values of 1e-200 (their squares underflow)", [[1e-200, 2e-200], [-3e-200, 1e-200]],
     [[1e-200, 1e-200], [-3e-200, 2e-200]]),
    ("values near the largest float", [[1.5e308, -1.7e308]], [[1.7e308, -1.5e308]]),
    ("b all zeros", [[1.0, -2.0]], [[0.0, 0.0]]),
    ("a NaN after a zero difference (NaN makes every field NaN)", [[1.0, math.nan]], [[1.0, 1.0]]),
    ("three levels: [h][n][d]", [[[1.0, 2.0]], [[3.0, 4.0]]], [[[1.0, 2.5]], [[3.0, 3.0]]]),
]
DIFFERENCE_FIELDS = ("max_abs", "rel_l2", "cosine")


@step(14, "output_difference", "max abs, relative L2 and cosine, without overflow",
      3 + len(DIFFERENCE_CASES) + 1, refusals=refuse_difference)
def check_difference(s, case, rng):
    if case == 3 + len(DIFFERENCE_CASES):        # two shapes: refused
        s.raises("output_difference", [rand_tensor(rng, 2, 3), rand_tensor(rng, 2, 2)], [])
        return
    if 3 <= case < 3 + len(DIFFERENCE_CASES):
        where, a, b = DIFFERENCE_CASES[case - 3]
    else:
        rows, cols = rng.randint(1, 3), rng.randint(1, 4)
        a = rand_tensor(rng, rows, cols)
        b = a if case == 0 else nested([rows, cols]) if case == 1 else rand_tensor(rng, rows, cols)
        where = f"[{rows}][{cols}]"
        if case == 2:                            # rows as tuples and array('d')
            a, b, where = as_rows(a, "tuple"), as_rows(b, "array"), f"{where}, a of tuple rows, b of array rows"
    got = s.call("output_difference", a, b)
    expect(fields_of(got, "output_difference(a, b)", "Difference", DIFFERENCE_FIELDS),
           ref_output_difference(plain(a), plain(b)), where, "output_difference(a, b): max_abs, rel_l2, cosine",
           names=DIFFERENCE_FIELDS)


CACHE_CASES = [(1, 1, 0, 1, 1), (2, 3, 0, 4, 2), (1, 1, 1, 1, 1), (3, 2, 5, 4, 1), (2, 4, 3, 2, 3),
               (1, 4, 0, 3, 3)]                      # length = 0 is valid: an empty cache


@step(15, "kv_cache_elements", "2 x layers x g x length x head_dim x batch numbers", len(CACHE_CASES) + 1,
      refusals=refuse_cache_elements)
def check_cache_elements(s, case, rng):
    if case == len(CACHE_CASES):                 # no key/value heads: refused
        s.raises("kv_cache_elements", [2, 0, 3, 4], [0])
        return
    if case < len(CACHE_CASES):
        layers, g, length, d, batch = CACHE_CASES[case]
    else:
        layers, g, length, d, batch = (rng.randint(1, 3), rng.randint(1, 4), rng.randint(0, 5),
                                       rng.randint(1, 4), rng.randint(1, 2))
    expect(s.call("kv_cache_elements", layers, g, length, d, batch=batch),
           ref_kv_cache_elements(layers, g, length, d, batch),
           f"layers={layers}, kv_heads={g}, length={length}, head_dim={d}, batch={batch}",
           "kv_cache_elements(...) against the elements of a cache built as nested lists")


TERMS = ("q_proj", "k_proj", "v_proj", "scores", "weighted_sum", "o_proj")


@step(16, "attention_multiplies", "multiplications per term, full and causal, as counted", len(ALL_HG))
def check_multiplies(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    causal = case % 2 == 1
    counts = ref_attention_multiplies(n, h, g, d, d_model, causal, rng)
    got = s.call("attention_multiplies", n, h, g, d, d_model, causal=causal)
    expect(fields_of(got, "attention_multiplies(...)", "Multiplies", TERMS + ("total",)),
           [counts.get(t, 0) for t in TERMS] + [sum(counts.values())],
           f"{where}, causal={causal}", "attention_multiplies(...) " + ", ".join(TERMS + ("total",)),
           names=TERMS + ("total",))


BLOCK_FIELDS = ("q_o_proj", "k_v_proj", "body", "mlp", "total")


@step(17, "block_multiplies", "a whole block's multiplications, its MLP included", 8)
def check_block(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case * 6)
    d_ff, matrices = rng.randint(1, 5), rng.choice([2, 3])
    c = ref_block_multiplies(n, h, g, d, d_model, d_ff, matrices, rng)
    got = s.call("block_multiplies", n, h, g, d, d_model, d_ff, mlp_matrices=matrices)
    expect(fields_of(got, "block_multiplies(...)", "BlockMultiplies", BLOCK_FIELDS),
           [c["q_proj"] + c["o_proj"], c["k_proj"] + c["v_proj"], c["scores"] + c["weighted_sum"],
            c["mlp"], sum(c.values())], f"{where}, d_ff={d_ff}, mlp_matrices={matrices}",
           "block_multiplies(...) q_o_proj, k_v_proj, body, mlp, total", names=BLOCK_FIELDS)


def rows_of(rows, what, record, names):
    if not isinstance(rows, list):
        raise Failure(f"{what} must return a list of {record} records; got {kind(rows)}: {_short(rows)}")
    return [fields_of(r, f"each row of {what}", record, names) for r in rows]


@step(18, "cache_table", "the cache for every divisor g, with ratios to MHA", 16)
def check_cache_table(s, case, rng):
    h = case + 1 if case < 16 else rng.randint(1, 16)
    layers, length, d = rng.randint(1, 2), rng.randint(1, 4), rng.randint(1, 3)
    if case % 4 == 3:                            # no layers, or nothing cached: every ratio is 1.0
        layers, length = (0, length) if case % 8 == 3 else (layers, 0)
    rows = s.call("cache_table", h, layers=layers, length=length, head_dim=d)
    expect(rows_of(rows, "cache_table(...)", "CacheRow",
                   ("method", "kv_heads", "group_size", "elements", "ratio")),
           ref_cache_table(h, layers, length, d), f"h={h}, layers={layers}, length={length}, head_dim={d}",
           "cache_table rows (method, kv_heads, group_size, elements, ratio)")


@step(19, "multiplies_table", "the multiplications for every divisor g, with ratios to MHA", 16)
def check_multiplies_table(s, case, rng):
    h = case + 1 if case < 16 else rng.randint(1, 16)
    n, d, d_model, causal = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 4), case % 2 == 1
    if case % 4 == 3:                            # n = 0: every ratio is 1.0
        n = 0
    rows = s.call("multiplies_table", n, h, d, d_model, causal=causal)
    got = [[g, size, fields_of(counts, "each row's counts", "Multiplies", ("total",))[0],
            fields_of(ratio, "each row's ratio", "Multiplies", ("total",))[0]]
           for g, size, counts, ratio in rows_of(rows, "multiplies_table(...)", "MultipliesRow",
                                                 ("kv_heads", "group_size", "counts", "ratio"))]
    expect(got, ref_multiplies_table(n, h, d, d_model, causal, rng),
           f"n={n}, h={h}, d={d}, d_model={d_model}, causal={causal}",
           "multiplies_table rows (kv_heads, group_size, counts.total, ratio.total)")


@step(20, "count_multiplies", "the tally kept while the code runs, nested blocks too",
      len(ALL_HG), needs=(21, 22), touches=(7, 9, 13, 22), why="to count what their kernels multiply and read")
def check_tally(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    w = send_weights(s, fields)
    causal = case % 2 == 1
    counter = ref_count_multiplies(x, fields, g, causal)
    expected = [counter.counts.get(t, 0) for t in TERMS] + [counter.reads["weight_reads"]]
    nested_block = case % 3 == 2                 # a block inside a block adds to the outer one
    tally = s.tally([("layer", [x, w, g], {"causal": causal})], TERMS + ("weight_reads",),
                    nested=nested_block)
    what = "the outer tally" if nested_block else "tally"
    # A count is worth something only when the work it counts is real: the values
    # computed inside the block must be the layer's (a closed-form tally is not a tally).
    expect(tally.get("values", [None])[0], ref_layer(x, *fields, g, causal=causal),
           f"{where}, causal={causal}", "the value layer() returned inside count_multiplies() "
           "(a tally counts real work)")
    expect([tally[t] for t in TERMS] + [tally["weight_reads"]], expected,
           f"{where}, causal={causal}", f"{what} fields " + ", ".join(TERMS) + ", weight_reads after "
           "layer()" + (" in a count_multiplies() block inside it" if nested_block else ""))
    expect(fields_of(tally["multiplies()"], f"{what}.multiplies()", "Multiplies", TERMS + ("total",)),
           expected[:6] + [sum(expected[:6])], where, f"{what}.multiplies() after layer()")
    # The attention kernels alone, with d_v != d: scores count d, the weighted sum d_v.
    n2, m2, d2 = rng.randint(1, 3), rng.randint(3, 4), rng.randint(1, 3)
    dv2 = d2 + rng.randint(1, 2)
    q, k, v = rand_tensor(rng, h, n2, d2), rand_tensor(rng, g, m2, d2), rand_tensor(rng, g, m2, dv2)
    kernels = Counter()
    ref_grouped_attention(q, k, v, causal, kernels)
    ref_single_head_attention(q[0], k[0], v[0], causal, kernels)
    tally = s.tally([("grouped_attention", [q, k, v], {"causal": causal}),
                     ("single_head_attention", [q[0], k[0], v[0]], {"causal": causal})], TERMS)
    expect([tally["scores"], tally["weighted_sum"]], [kernels.counts.get("scores", 0),
                                                      kernels.counts.get("weighted_sum", 0)],
           f"h={h}, g={g}, n={n2}, m={m2}, d={d2}, d_v={dv2}, causal={causal}",
           "tally fields scores, weighted_sum after grouped_attention() and single_head_attention() "
           "(scores count d per key, the weighted sum d_v)")
    s.call("KVCache", g, d, keep="cache", value=False)
    cache, decoding = RefKVCache(g, d), Counter()
    for x_t in x:
        ref_decode_step(x_t, fields, g, cache, decoding)
    tally = s.tally([("decode_step", [x_t, w, g, ref("cache")], {}) for x_t in x],
                    ("cache_reads", "weight_reads"))
    rows = ref_layer(x, *fields, g, causal=True)
    expect(tally.get("values"), rows, where, "the values decode_step returned inside "
           "count_multiplies(), row by row, against the reference causal layer (a tally counts "
           "real work)")
    expect([tally["cache_reads"], tally["weight_reads"]],
           [decoding.reads["cache_reads"], decoding.reads["weight_reads"]], where,
           "tally fields cache_reads, weight_reads after decoding x row by row")


def cache_arrays(state, name, g, where):
    """cache.k or cache.v as the lab promises it: a list of g array('d'); a Failure if not."""
    held = state[name]
    if not isinstance(held, list) or len(held) != g:
        raise Failure(f"case {where}: cache.{name} must be a list of g={g} array('d'); got {kind(held)}: "
                      f"{_short(held)}")
    for j, a in enumerate(held):
        if not isinstance(a, Other) or not a.type_name.startswith("array"):
            raise Failure(f"case {where}: cache.{name}[{j}] must be an array('d'); got {kind(a)}")
    return held


@step(21, "KVCache", "a cache of g heads: append, len, elements, nbytes, any capacity", 16,
      refusals=refuse_kv_cache)
def check_kv_cache(s, case, rng):
    g, d, n = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 5)
    capacity = [0, n, max(1, n // 2), n + 3][case % 4]
    rows = [(rand_tensor(rng, g, d), rand_tensor(rng, g, d)) for _ in range(n)]
    where = f"g={g}, d={d}, capacity={capacity}, {n} positions"
    s.call("KVCache", g, d, capacity=capacity, keep="cache", value=False)
    built = RefKVCache(g, d)
    for k, v in rows:
        s.call("$cache.append", k, v, value=False)
        built.append(k, v)
    state = s.get("cache", "len", "elements", "nbytes")
    expect([state["len"], state["elements"], state["nbytes"]], [len(built), built.elements,
                                                                8 * built.elements], where,
           "len(cache), cache.elements, cache.nbytes")
    state = s.get("cache", "k", "v")
    for name, store in (("k", built.k), ("v", built.v)):
        for j, held in enumerate(cache_arrays(state, name, g, where)):
            expect(held.values[:n * d], [x for row in store[j] for x in row], where,
                   f"cache.{name}[{j}]: the rows appended, in order", exact=True)
    s.raises("$cache.append", [rows[0][0] + [[0.0] * d], rows[0][1]], [g])       # g + 1 heads
    s.raises("$cache.append", [rows[0][0], rows[0][1][:-1] + [[0.0] * (d + 1)]], [d])  # a bad v
    state = s.get("cache", "len", "k")
    expect([state["len"]] + [held.values[:n * d] for held in cache_arrays(state, "k", g, where)],
           [n] + [[x for row in built.k[j] for x in row] for j in range(g)], where,
           "len(cache) and cache.k after refused appends (nothing is stored unless both are valid)")


@step(22, "decode_step", "decoding position by position equals a causal layer", len(ALL_HG),
      refusals=refuse_decode)
def check_decode(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    w = send_weights(s, fields)
    s.call("KVCache", g, d, keep="cache", value=False)
    expected = ref_layer(x, *fields, g, causal=True)
    for t, x_t in enumerate(x):
        expect(s.call("decode_step", x_t, w, g, ref("cache"), fresh=True, setup=True), expected[t],
               f"{where}, position {t}", f"decode_step of x[{t}] against row {t} of the reference "
               f"causal layer")
    built = RefKVCache(g, d)
    for _ in x:
        built.append(nested([g, d]), nested([g, d]))
    state = s.get("cache", "len", "elements")
    expect([state["len"], state["elements"]], [len(built), built.elements], where,
           "len(cache), cache.elements")
    if case % 5 == 0:
        weights_unchanged(s, fields, "w", f"decode_step(x_t, w, {g}, cache)", where)


TRAFFIC_FIELDS = ("cache_reads", "weight_reads", "multiplies", "ratio")


@step(23, "decode_traffic", "cache and weight reads of n decode steps, batched", len(ALL_HG))
def check_traffic(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    if case % 6 == 5:                            # no steps: every count 0, the ratio 0.0
        n, where = 0, where.replace(f"n={n}", "n=0")
    batch = [1, 2, 3][case % 3]
    expected = ref_decode_traffic(n, h, g, d, d_model, batch, rng)
    got = s.call("decode_traffic", n, h, g, d, d_model, batch=batch)
    expect(fields_of(got, "decode_traffic(...)", "DecodeTraffic", TRAFFIC_FIELDS), expected,
           f"{where}, batch={batch}", "decode_traffic(...) cache_reads, weight_reads "
           "(read once per step for the whole batch), multiplies, ratio", names=TRAFFIC_FIELDS)


@step(24, "grouped_attention_backward", "gradients of q, k, v: a shared head sums its group's",
      len(ALL_HG))
def check_backward(s, case, rng):
    h, g = draw_hg(case, rng)
    q, k, v, causal, where = draw_heads(rng, case, h, g)
    d_out = rand_tensor(rng, h, len(q[0]), len(v[0][0]))
    got = s.call("grouped_attention_backward", q, k, v, d_out, causal=causal, fresh=True)
    if not isinstance(got, (list, tuple)) or len(got) != 3:
        raise Failure(f"case h={h}, g={g}: grouped_attention_backward must return (dq, dk, dv); "
                      f"got {_short(got)}")
    expect(list(got), list(ref_grouped_attention_backward(q, k, v, d_out, causal)), f"h={h}, g={g}, {where}",
           "grouped_attention_backward(q, k, v, d_out): dq, dk, dv", rel=1e-8, names=("dq", "dk", "dv"))


@step(25, "layer_backward", "gradients of one layer's x and weights, through the mean fold",
      len(ALL_HG))
def check_layer_backward(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    folded = case % 3 == 2                       # weights that already have g K/V heads
    fields = random_weights(rng, h, d_model, d, g if folded else None)
    x, d_y, causal = rand_tensor(rng, n, d_model), rand_tensor(rng, n, d_model), case % 2 == 1
    got = s.call("layer_backward", x, send_weights(s, fields), g, d_y, causal=causal, fresh=True)
    if not isinstance(got, (list, tuple)) or len(got) != 2 or not isinstance(got[1], Record):
        raise Failure(f"case {where}: layer_backward must return (dx, a Weights record of "
                      f"gradients); got {_short(got)}")
    dx, grads = ref_layer_backward(x, *fields, g, d_y, causal)
    expect([got[0]] + fields_of(got[1], "layer_backward(...)[1]", "Weights", WEIGHT_FIELDS), [dx] + grads,
           f"{where}, causal={causal}, K/V heads given {len(fields[1])}",
           "layer_backward(x, weights, g, d_y): dx, grads.w_q, w_k, w_v, w_o", rel=1e-8,
           names=("dx",) + tuple(f"grads.{f}" for f in WEIGHT_FIELDS))


# ---------------------------------------------------------------------------
# Grading: run the steps, report like a teacher.
# ---------------------------------------------------------------------------

def check_names():
    return [st.name for st in STEPS]


def blocked_by(st, message):
    """The other step whose function made this step's check stop as not started: by the
    starter's "step N:" in the message, else by the call the message names."""
    numbered = re.search(r"\bstep (\d{1,3}):", message)
    if numbered:
        number = int(numbered.group(1))
        return number if number != st.number and 1 <= number <= len(STEPS) else None
    for other in STEPS:
        if other is not st and re.search(rf"\b{other.name}\(", message):
            return other.number
    return None


def run_step(st, student, seed, cases, only_case=None, fail_fast=False):
    """Run one step's cases; return its result dict.  Nothing the worker sends raises
    from here: an answer the grader cannot check fails its case, saying why."""
    ids = [only_case] if only_case is not None else range(st.systematic + cases)
    result = {"step": st.number, "name": st.name, "summary": st.summary, "status": "passed",
              "cases": 0, "cases_passed": 0, "message": "", "case": None, "inputs": None,
              "show": None, "needs": [], "touches": list(st.touches), "notes": []}
    for k in ids:
        shown = Case(student)
        student.pending = []
        result["cases"] += 1
        try:
            st.fn(shown, k, random.Random(f"{st.name}:{seed}:{k}"))
            result["cases_passed"] += 1
            if only_case is not None:
                result.update(inputs=shown.inputs(), show=shown.show(whole=True))
        except OutOfTime:
            result.update(status="failed", message=BUDGET_NOTE + student.worker.budget_text,
                          case=None, inputs=None, show=None)
            return result
        except NotStarted as err:
            try:
                blocked = blocked_by(st, str(err))
            except Exception:                # nothing from the worker may raise here
                blocked = None
            if blocked:
                result["needs"] = [{"step": blocked, "name": STEPS[blocked - 1].name}]
            where = getattr(err, "where", "")      # the student's file and line
            if result["cases_passed"] == 0:
                result.update(status="not started", message=f"{err}{where}", case=k,
                              inputs=shown.inputs(), show=shown.show())
                return result
            result.update(status="failed", message=f"case {k}: {err}{where}", case=k,
                          inputs=shown.inputs(), show=shown.show())
            return result
        except (Failure, Refused, Exception) as err:
            if not isinstance(err, (Failure, Refused)):
                err = f"the grader could not check this case's answer ({type(err).__name__}: {err})"
            if result["status"] == "passed":
                result.update(status="failed", message=str(err), case=k, inputs=shown.inputs(),
                              show=shown.show())
            if student.worker.proc is None or fail_fast:   # it hung or died: one such case per step
                return result
        if student.worker.out_of_time():
            if result["status"] == "passed" and k != ids[-1]:
                result.update(status="failed", message=BUDGET_NOTE + student.worker.budget_text)
            return result
    return result


def not_graded(st, why):
    return {"step": st.number, "name": st.name, "summary": st.summary, "status": "failed",
            "cases": 0, "cases_passed": 0, "message": why, "case": None, "inputs": None,
            "show": None, "needs": [], "touches": list(st.touches), "notes": []}


def grade(path, seed, cases=DEFAULT_CASES, only=None, timeout=DEFAULT_TIMEOUT, case=None,
          fail_fast=False, budget=DEFAULT_BUDGET, seal=None, label=None):
    """Grade the module at path; return the list of step results.

    With fail_fast, each step stops at its first failing case.  The run ends
    after budget seconds: the steps not reached say so.  seal: how the
    worker is shut in (default: limits and a session of its own, on POSIX).

    Raises Refused when the module cannot be imported (or imports the grader).
    """
    own = seal is None
    seal = seal or Seal(budget=budget)
    worker = Worker(path, timeout, seal, time.monotonic() + budget, label=label)
    worker.budget_text = f" (--budget {budget:g} s)"
    try:
        try:
            worker.start()
        except OutOfTime:
            raise Refused(f"importing {label or path} did not finish within the run's time "
                          f"budget ({budget:g} s)") from None
        student = Student(worker)
        results = []
        for st in STEPS:
            if only and st.name not in only:
                continue
            if worker.out_of_time():
                results.append(not_graded(st, BUDGET_NOTE + worker.budget_text))
            else:
                results.append(run_step(st, student, seed, cases, case, fail_fast))
        for r in results:
            r["notes"] = step_notes(r)
        return results
    finally:
        worker.stop()
        if own:
            seal.close()


def reproduce(args, name=None, case=None):
    """The command that repeats this run, or one step of it, or one case."""
    parts = ["python grader.py"]
    if args.module != DEFAULT_MODULE:
        parts.append(f"--module {args.module}")
    parts.append(f"--seed {args.seed}")
    if name:
        parts.append(f"--only {name}")
    if case is not None:
        parts.append(f"--case {case} --show")
    elif args.cases != DEFAULT_CASES:
        parts.append(f"--cases {args.cases}")
    if args.timeout != DEFAULT_TIMEOUT:
        parts.append(f"--timeout {args.timeout:g}")
    return " ".join(parts)


def and_list(numbers):
    """'7, 9 and 13'."""
    words = [str(n) for n in numbers]
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def step_notes(r):
    """What a step that is not done needs and touches: 'needs step 21, KVCache: not started'."""
    st = STEPS[r["step"] - 1]
    notes = [f"needs step {n['step']}, {n['name']}: not started" for n in r.get("needs", [])]
    if st.touches and r["status"] != "passed":
        notes.append(f"step {st.number}, {st.name}, means changing step"
                     f"{'s' if len(st.touches) > 1 else ''} {and_list(st.touches)} {st.why}".rstrip())
    return notes


def progress(results):
    """'5 of 23 steps done; next: step 6, repeat_kv'."""
    done = [r for r in results if r["status"] == "passed"]
    todo = [r for r in results if r["status"] != "passed"]
    text = f"{len(done)} of {len(results)} steps done"
    if todo:
        text += f"; next: step {todo[0]['step']}, {todo[0]['name']}"
        if todo[0].get("needs"):
            text += " (it needs " + " and ".join(f"step {n['step']}, {n['name']}"
                                                 for n in todo[0]["needs"]) + ", first)"
    return text


def print_report(results, args, out=None):
    out = out or sys.stdout
    results = clean_data(results)
    width = max((len(r["name"]) for r in results), default=0)
    for r in results:
        status = {"passed": "PASS", "failed": "FAIL", "not started": "----"}[r["status"]]
        if args.quiet and status != "FAIL":
            continue
        count = "not started" if status == "----" else f"{r['cases_passed']}/{r['cases']} cases"
        print(f"  step {r['step']:>2}  {status}  {r['name'].ljust(width)}  {count:<13} {r['summary']}",
              file=out)
        for note in r.get("notes", []):
            print(f"        {note}", file=out)
        if status == "----" and not re.match(r"not implemented yet: step \d+: ", r["message"]):
            for line in r["message"].splitlines():    # raised midway or by a helper: what and where
                print(f"        {line}", file=out)
        if status == "FAIL":
            for line in r["message"].splitlines():
                print(f"        {line}", file=out)
            if not r["message"].startswith(BUDGET_NOTE):
                print(f"        reproduce: {reproduce(args, r['name'], r['case'])}", file=out)
        if args.show and r.get("show") and (status == "FAIL" or args.case is not None):
            case = r["case"] if r["case"] is not None else args.case
            folder = os.path.relpath(os.path.dirname(os.path.abspath(args.module)))
            what = "the call" if status == "FAIL" else "the calls"
            print(f"        {what} of case {case}, to paste into python started in "
                  f"{'this folder' if folder == '.' else folder}:\n", file=out)
            print(r["show"], file=out)


def gradescope(results, weights, error=None):
    """Gradescope's results.json: a score and one test per step."""
    tests = []
    for r in results:
        w = float(weights.get(r["name"], 1.0))
        tests.append({"name": f"step {r['step']}: {r['name']}", "score": w if r["status"] == "passed" else 0.0,
                      "max_score": w, "status": "passed" if r["status"] == "passed" else "failed",
                      "output": r["message"] or r["summary"]})
    doc = {"score": sum(t["score"] for t in tests), "tests": tests}
    if error:
        doc["output"] = error
    return doc


# ---------------------------------------------------------------------------
# A starter for students: gqa.py's signatures and docstrings, bodies stubbed.
# ---------------------------------------------------------------------------

# The step of each public name, as the checks above number them; a class's
# methods belong to the step of its class (Tally is count_multiplies').
STEP_OF = {st.name: st.number for st in STEPS}
STEP_OF["Tally"] = STEP_OF["count_multiplies"]


def make_starter(source):
    """Return the source of a starter gqa.py: public functions and methods stubbed.

    Keeps the module docstring, imports, records, private base classes and
    constants (a student's helpers may use them); drops private helpers, the
    kernels and the command line; replaces each
    public function's body by its docstring and
    raise NotImplementedError("step N: NAME: ..."), N being the grader's step.
    """
    tree = ast.parse(source)

    def stub(fn, qualname, owner):
        doc = ast.get_docstring(fn)
        summary = doc.splitlines()[0] if doc else ""
        body = [ast.Expr(ast.Constant(doc))] if doc else []
        number = STEP_OF.get(owner)
        label = f"step {number}: {qualname}" if number else f"{qualname} (not graded)"
        body.append(ast.Raise(ast.Call(ast.Name("NotImplementedError", ast.Load()),
                                       [ast.Constant(label + (f": {summary}" if summary else ""))],
                                       []), None))
        fn.body = body

    kept = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("_") or node.name == "main":
                continue
            stub(node, node.name, node.name)
        elif isinstance(node, ast.ClassDef):
            if not node.name.startswith("_"):        # a private base class is kept whole
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and (not item.name.startswith("_")
                                                               or item.name in ("__init__", "__len__")):
                        stub(item, f"{node.name}.{item.name}", node.name)
        elif isinstance(node, ast.If) and ("__name__" in ast.dump(node.test) or all(
                isinstance(n, ast.FunctionDef) and n.name.startswith("_")
                for n in node.body + node.orelse)):
            continue                                 # the command line, private kernels
        kept.append(node)
    tree.body = kept
    header = ('# A starter for the gqa lab, written by `python grader.py --starter`.\n'
              '# Replace each `raise NotImplementedError` with your code, step by step, and run\n'
              '# `python grader.py --module THIS_FILE` to see your progress.\n')
    return header + ast.unparse(tree) + "\n"


def write_starter(directory, source_path=DEFAULT_MODULE):
    with open(source_path, encoding="utf-8") as f:
        text = make_starter(f.read())
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "gqa.py")
    if os.path.exists(path):
        raise FileExistsError(f"{path} exists already; the starter will not overwrite it")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


# ---------------------------------------------------------------------------
# Gradescope: an autograder.zip in one command.
# ---------------------------------------------------------------------------

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the image.  The grader needs the
# standard library of Python 3.9 or later and nothing else: nothing is installed.
python3 -c 'import sys; assert sys.version_info >= (3, 9), sys.version'
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this as root for every submission.  The grader's folder is
# made private first, so the student's module (run as a user id drawn for
# the run) can
# read neither grader.py nor anything beside it, and only the grader writes
# the results.
set -u
chmod 700 /autograder/source
mkdir -p /autograder/results
chmod 755 /autograder/results
cd /autograder/source
python3 grader.py --sealed --format gradescope --module /autograder/submission/gqa.py \\
    --out /autograder/results/results.json{options} > /dev/null
exit 0
"""


def write_autograder(directory, args):
    """Write directory/autograder.zip: setup.sh, run_autograder, this grader (and the weights)."""
    import zipfile
    options = ""
    if args.weights:
        options += " --weights weights.json"
    if args.cases != DEFAULT_CASES:
        options += f" --cases {args.cases}"
    if args.timeout != DEFAULT_TIMEOUT:
        options += f" --timeout {args.timeout:g}"
    if args.budget != DEFAULT_BUDGET:
        options += f" --budget {args.budget:g}"
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "autograder.zip")
    with open(os.path.abspath(__file__), "rb") as f:
        source = f.read()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text, mode in (("setup.sh", SETUP_SH, 0o755),
                                 ("run_autograder", RUN_AUTOGRADER.format(options=options), 0o755),
                                 ("grader.py", source, 0o644)):
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, text)
        if args.weights:
            with open(args.weights, "rb") as f:
                weights = f.read()
            info = zipfile.ZipInfo("weights.json", date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = 0o100644 << 16
            z.writestr(info, weights)
    return path


# ---------------------------------------------------------------------------
# Command line.
# ---------------------------------------------------------------------------

def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python grader.py",
        description="Grade a gqa.py step by step against an independent reference; the "
                    "module runs in a child process and cannot change the verdict.")
    parser.add_argument("--module", default=DEFAULT_MODULE, metavar="PATH",
                        help="the gqa.py to grade (default: the one beside grader.py)")
    parser.add_argument("--seed", type=int, default=None,
                        help="the seed of the random cases (default: a fresh one, printed)")
    parser.add_argument("--cases", type=int, default=DEFAULT_CASES, metavar="K",
                        help=f"random cases per step, after the systematic ones: 0 to {MAX_CASES:,} "
                             f"(default {DEFAULT_CASES}; every step has systematic cases too)")
    parser.add_argument("--only", default=None, metavar="STEPS",
                        help="grade only these steps, by name or number, comma-separated: "
                             "--only 3 or --only kv_head,5 (see --list)")
    parser.add_argument("--case", type=int, default=None, metavar="K",
                        help="run only case K of the one step given with --only")
    parser.add_argument("--show", action="store_true",
                        help="print a failing case's failing call (or every call of --case) as "
                             "Python to paste into python started beside the module")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"seconds a call may take before it fails (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--list", action="store_true", help="name the steps, in order, and exit")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document: the score and each step's result")
    parser.add_argument("--format", choices=("text", "json", "gradescope"), default=None,
                        help="text (default), json (as --json), or gradescope (its results.json)")
    parser.add_argument("--weights", metavar="FILE", default=None,
                        help="with --format gradescope: a JSON object of step name -> points "
                             "(default 1 each)")
    parser.add_argument("-x", "--fail-fast", action="store_true",
                        help="stop each step at its first failing case (faster; the counts are partial)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only failures and the summary")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print the wall time")
    parser.add_argument("--starter", metavar="DIR",
                        help="write a starter gqa.py for students into DIR and exit")
    parser.add_argument("--sealed", action="store_true",
                        help="the teacher's grading run: the module alone in a private "
                             "folder, PATH its only variable, limits, and (as root) another "
                             "user; implied by --format gradescope")
    parser.add_argument("--user", metavar="NAME", default=None,
                        help="with --sealed, as root: the worker's user (default: a user id "
                             "drawn for the run, which no other process has)")
    parser.add_argument("--out", metavar="PATH", default=None,
                        help="also write the run's JSON document (Gradescope's with --format "
                             "gradescope) to PATH, once the worker is gone")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET, metavar="S",
                        help=f"seconds the whole run may take (default {DEFAULT_BUDGET:g}); the "
                             f"steps not reached by then are not graded")
    parser.add_argument("--autograder", metavar="DIR",
                        help="write DIR/autograder.zip for Gradescope (this grader, sealed) and exit")
    args = parser.parse_args(argv)
    args.format = args.format or ("json" if args.json else "text")
    args.sealed = args.sealed or args.format == "gradescope"
    if not (0 < args.budget <= 86400):
        parser.error(f"--budget must be more than 0 and at most 86400 seconds; got {args.budget:g}")
    if args.user is not None and not args.sealed:
        parser.error("--user goes with --sealed (or --format gradescope)")
    if args.out == "":
        parser.error("--out must name a file; got an empty path")
    if not 0 <= args.cases <= MAX_CASES:
        parser.error(f"--cases must be from 0 to {MAX_CASES:,}; got {args.cases}")
    if not (0 < args.timeout <= 3600):
        parser.error(f"--timeout must be more than 0 and at most 3600 seconds; got {args.timeout:g}")
    if args.only is not None:
        by_number = {str(st.number): st.name for st in STEPS}
        names = [by_number.get(n.strip(), n.strip()) for n in args.only.split(",")]
        unknown = [n or "''" for n in names if n not in check_names()]
        if unknown or not names:
            parser.error(f"no step named {', '.join(unknown)}; the steps are: {', '.join(check_names())}")
        args.only = names
    if args.case is not None and (not args.only or len(args.only) != 1 or args.case < 0):
        parser.error("--case K needs --only with one step (a name or a number), and K at least 0")
    args.weight_map = {}
    if args.weights:
        try:
            with open(args.weights, encoding="utf-8") as f:
                args.weight_map = json.load(f)
            if not isinstance(args.weight_map, dict) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                    and math.isfinite(v) for v in args.weight_map.values()):
                raise ValueError("not an object of step name -> points")
        except (OSError, ValueError) as err:
            parser.error(f"--weights {args.weights}: {err}")
        unknown = sorted(set(args.weight_map) - set(check_names()))
        if unknown:
            parser.error(f"--weights {args.weights}: no step named {', '.join(unknown)}")
    return args


def emit(doc):
    json.dump(clean_data(doc), sys.stdout, indent=2, allow_nan=False)
    print()


def write_out(path, doc):
    """Write doc to path whole or not at all (a temporary file beside it, then renamed)."""
    import tempfile
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".grader-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(clean_data(doc), f, indent=2, allow_nan=False)
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def asked_format(argv):
    """The document format argv asks for ("json", "gradescope" or None), read as argparse
    would (abbreviations too), for the one place argparse cannot print it: a usage error."""
    fmt = None
    for i, arg in enumerate(argv):
        name, _, value = arg.partition("=")
        if len(name) >= 3 and "--json".startswith(name):
            fmt = fmt or "json"
        elif len(name) >= 4 and "--format".startswith(name):
            value = value or (argv[i + 1] if i + 1 < len(argv) else "")
            fmt = value if value in ("json", "gradescope") else fmt
    return fmt


class Stopped(BaseException):
    """The grader was sent SIGTERM, SIGHUP or SIGINT: the run ends, its worker dies first."""


def _stop_run(signum, frame):
    for which in STOP_SIGNALS:                  # a second signal waits for the cleaning up
        signal.signal(which, signal.SIG_IGN)
    raise Stopped(signum)


STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n))


def main(argv=None):
    """The command; on SIGTERM, SIGHUP or SIGINT the worker's group (and, with a uid of
    the run's own, every process of that uid) is killed and its folder removed first."""
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    before = {which: signal.signal(which, _stop_run) for which in STOP_SIGNALS}
    try:
        return _main(argv)
    finally:
        for which, handler in before.items():
            signal.signal(which, handler)


def _main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    fmt = asked_format(argv)
    if fmt is None:
        args = parse_args(argv)
    else:                                 # a usage error is a document too
        import contextlib
        import io
        said = io.StringIO()
        try:
            with contextlib.redirect_stderr(said):
                args = parse_args(argv)
        except SystemExit as exit_:
            sys.stderr.write(said.getvalue())
            if not exit_.code:
                raise
            why = said.getvalue().strip().splitlines()[-1] if said.getvalue().strip() else "usage error"
            emit(gradescope([], {}, error=why) if fmt == "gradescope" else
                 {"grader": GRADER_VERSION, "error": why, "score": 0.0, "passed": 0, "failed": 0,
                  "steps": []})
            return 2
        sys.stderr.write(said.getvalue())
    documents = args.format != "text"          # --json, --format: one JSON document, always
    if args.list:
        if documents:
            emit({"grader": GRADER_VERSION, "steps": [
                {"step": st.number, "name": st.name, "summary": st.summary} for st in STEPS]})
            return 0
        for st in STEPS:
            print(f"step {st.number:>2}  {st.name:<22} {st.summary}")
        return 0
    for what, option, write, then in (
            ("starter", args.starter, write_starter, "grade it with: python grader.py --module {}"),
            ("autograder", args.autograder, lambda d: write_autograder(d, args),
             "upload it as the assignment's autograder on Gradescope")):
        if not option:
            continue
        try:
            path = write(option)
        except OSError as err:
            print(f"grader: cannot write the {what}: {err}", file=sys.stderr)
            if documents:
                emit({"grader": GRADER_VERSION, "error": f"cannot write the {what}: {err}"})
            return 2
        if documents:
            emit({"grader": GRADER_VERSION, what: path})
        else:
            print(f"wrote {path}; {then.format(path)}")
        return 0
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(10 ** 6)
    label = "gqa.py" if args.module == DEFAULT_MODULE else args.module
    start = time.perf_counter()
    seal, results, why, partly, stopped = None, None, None, None, None
    try:
        seal = Seal(args.sealed, args.user, args.out, args.budget)
        if seal.partly:
            partly = f"partly sealed: {seal.partly}"
            print(f"grader: {partly}", file=sys.stdout if args.format == "text" else sys.stderr)
        if args.format == "text" and not args.quiet:
            print(f"grading {label} with seed {args.seed} (grader {GRADER_VERSION}; the systematic "
                  f"cases and {args.cases} random ones per step; floats to rel {REL_TOL:g}, abs "
                  f"{ABS_TOL:g}; repeat with: {reproduce(args)})")
            sys.stdout.flush()
        if not os.path.isfile(args.module):
            raise Refused(f"no such file: {args.module}")
        results = grade(args.module, args.seed, args.cases, args.only, args.timeout, args.case,
                        args.fail_fast, args.budget, seal, label)
    except Refused as err:
        why = f"cannot grade {label}: {err}"
    except Stopped as err:
        stopped = err.args[0]
        why = (f"cannot grade {label}: the grader was stopped by "
               f"{signal.Signals(stopped).name}; the worker was killed")
    except Exception as err:              # the grader's own fault: still one document
        why = f"cannot grade {label}: the grader failed ({type(err).__name__}: {err})"
    finally:
        if seal is not None:
            seal.close()
        if threading.current_thread() is threading.main_thread():
            for which in STOP_SIGNALS:          # nothing left to clean up: signals end it
                signal.signal(which, signal.default_int_handler if which == signal.SIGINT
                              else signal.SIG_DFL)
    # From here on the worker and its process group are gone: only the grader's state counts.
    if why is not None:
        if args.format == "gradescope":
            doc = gradescope([], {}, error=why)
        else:
            doc = {"grader": GRADER_VERSION, "module": label, "seed": args.seed, "error": why,
                   "score": 0.0, "passed": 0, "failed": 0, "steps": []}
    else:
        passed = sum(r["status"] == "passed" for r in results)
        failed = len(results) - passed
        doc = (gradescope(results, args.weight_map) if args.format == "gradescope" else
               {"grader": GRADER_VERSION, "module": label, "seed": args.seed, "cases": args.cases,
                "score": passed / len(results) if results else 0.0, "passed": passed,
                "failed": failed, "progress": progress(results), "steps": results})
    if args.sealed and args.format != "gradescope":
        doc["sealed"] = partly or "sealed"
    elif partly:
        doc["output"] = (partly + "\n" + doc.get("output", "")).rstrip("\n")
    if args.out:
        try:
            write_out(args.out, doc)
        except OSError as err:
            print(f"grader: cannot write {args.out}: {err}", file=sys.stderr)
            if why is None:
                why = f"cannot write {args.out}"
    if args.format != "text":
        emit(doc)
    elif why is not None:
        print(f"grader: {clean_text(why)}", file=sys.stderr)
    else:
        print_report(results, args)
        print(progress(results))
        if args.verbose:
            print(f"graded in {time.perf_counter() - start:.2f} s of wall time")
        print(f"{passed} passed, {failed} failed")
    if stopped is not None:
        return 128 + stopped
    if why is not None:
        return 2
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:                      # `python grader.py | head`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
