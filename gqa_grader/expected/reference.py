"""The reference: slow, obvious, and written differently from gqa.py.

One function per step, named after the lab's (ref_valid_g for valid_g, ...,
RefKVCache for KVCache) and in the lab's order, after the few helpers they
share.  It shares no code with gqa.py and is built differently on purpose: it
copies every key/value head into each query head it serves (the lab indexes the
shared head), loops over indices, counts multiplications and cache elements by
performing and building them, never by a formula, and computes
output_difference in exact rational arithmetic.
"""

import fractions
import math
import random

from .inputs import Counter, _no_count, count_leaves, leaves, nested, rand_tensor, random_weights


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


def ref_block_multiplies(n, h, g, d, d_model, d_ff, matrices, rng, causal=True):
    """A layer's counts (causal by default, as block_multiplies'), and an MLP's,
    multiplied out one product at a time."""
    counter = Counter()
    ref_layer(rand_tensor(rng, n, d_model), *random_weights(rng, h, d_model, d), g, causal, counter)
    for _ in range(n):
        for _ in range(matrices):
            for _ in range(d_model * d_ff):
                counter.times("mlp", 1.0, 1.0)
    return counter.counts


def ref_cache_table(h, layers, length, head_dim, batch=1):
    """[method, kv_heads, group_size, elements, ratio] for each g, from caches built."""
    mha = ref_kv_cache_elements(layers, h, length, head_dim, batch)
    return [[ref_method_name(h, g), g, h // g, ref_kv_cache_elements(layers, g, length, head_dim, batch),
             ref_kv_cache_elements(layers, g, length, head_dim, batch) / mha if mha else 1.0]
            for g in ref_valid_g(h)]


TERMS = ("q_proj", "k_proj", "v_proj", "scores", "weighted_sum", "o_proj")


def _term_list(counts):
    """A layer's counts as [each term in TERMS' order, then their total]."""
    terms = [counts.get(t, 0) for t in TERMS]
    return terms + [sum(terms)]


def ref_multiplies_table(n, h, d, d_model, causal, rng):
    """[method, kv_heads, group_size, counts, ratios] for each g, counted by running: counts
    and ratios each [q_proj, k_proj, v_proj, scores, weighted_sum, o_proj, total]."""
    counts = {g: _term_list(ref_attention_multiplies(n, h, g, d, d_model, causal, rng))
              for g in ref_valid_g(h)}
    return [[ref_method_name(h, g), g, h // g, counts[g],
             [c / r if r else 1.0 for c, r in zip(counts[g], counts[h])]] for g in ref_valid_g(h)]


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
