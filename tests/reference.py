"""Brute-force references for the tests, written independently of gqa.py.

Plain index loops, no shared helpers: slow, obvious, and built differently
from the module (which maps, zips and indexes shared heads).  Each reference
that multiplies also counts its own multiplications, one at a time.
"""

from __future__ import annotations

import math
import random


class Counter:
    """Multiplications counted one by one, by term."""

    def __init__(self):
        self.counts = {}

    def times(self, term, a, b):
        self.counts[term] = self.counts.get(term, 0) + 1
        return a * b


def rand_tensor(rng, *shape):
    if len(shape) == 1:
        return [rng.uniform(-1.0, 1.0) for _ in range(shape[0])]
    return [rand_tensor(rng, *shape[1:]) for _ in range(shape[0])]


def divisors(h):
    out = []
    for g in range(1, h + 1):
        if h % g == 0:
            out.append(g)
    return out


def expand_kv(kv, h):
    """Copy each of the g heads into the h // g query heads it serves."""
    g = len(kv)
    out = []
    for j in range(g):
        for _ in range(h // g):
            out.append([list(row) for row in kv[j]])   # a real copy
    return out


def mean_heads(kv, g):
    """Mean of each contiguous block of h // g heads, by explicit loops."""
    h = len(kv)
    size = h // g
    rows, cols = len(kv[0]), len(kv[0][0])
    out = []
    for j in range(g):
        head = []
        for r in range(rows):
            row = []
            for c in range(cols):
                total = 0.0
                for i in range(j * size, (j + 1) * size):
                    total += kv[i][r][c]
                row.append(total / size)
            head.append(row)
        out.append(head)
    return out


def attend(q, k, v, causal=False, counter=None):
    """One head, by index loops; softmax over the visible keys of each query."""
    n, m, d, dv = len(q), len(k), len(q[0]), len(v[0])
    times = counter.times if counter else (lambda term, a, b: a * b)
    out = []
    for i in range(n):
        last = i + (m - n) if causal else m - 1
        scores = []
        for j in range(last + 1):
            s = 0.0
            for c in range(d):
                s += times("scores", q[i][c], k[j][c])
            scores.append(s / math.sqrt(d))
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        z = sum(weights)
        row = []
        for c in range(dv):
            acc = 0.0
            for j in range(last + 1):
                acc += times("weighted_sum", weights[j] / z, v[j][c])
            row.append(acc)
        out.append(row)
    return out


def matmul(a, b, term=None, counter=None):
    """a [n][k] @ b [k][p] by index loops."""
    times = counter.times if counter else (lambda t, x, y: x * y)
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


def layer(x, w_q, w_k, w_v, w_o, g, causal=False, counter=None):
    """One layer: per-head projections, K/V folded by mean, heads copied out."""
    h = len(w_q)
    w_k = mean_heads(w_k, g) if len(w_k) != g else w_k
    w_v = mean_heads(w_v, g) if len(w_v) != g else w_v
    q = [matmul(x, w_q[i], "q_proj", counter) for i in range(h)]
    k = expand_kv([matmul(x, w_k[j], "k_proj", counter) for j in range(g)], h)
    v = expand_kv([matmul(x, w_v[j], "v_proj", counter) for j in range(g)], h)
    heads = [attend(q[i], k[i], v[i], causal, counter) for i in range(h)]
    n, d_model = len(x), len(w_o[0][0])
    y = [[0.0] * d_model for _ in range(n)]
    for i in range(h):
        part = matmul(heads[i], w_o[i], "o_proj", counter)
        for r in range(n):
            for c in range(d_model):
                y[r][c] += part[r][c]
    return y


def flat(t):
    if isinstance(t, (list, tuple)):
        out = []
        for x in t:
            out.extend(flat(x))
        return out
    return [t]


class CloseMixin:
    """assertClose in the manner of CPython's test_statistics."""

    def assertClose(self, got, expected, rel=1e-12, abs_tol=1e-12, msg=""):
        g, e = flat(got), flat(expected)
        self.assertEqual(len(g), len(e), f"{msg}: sizes differ")
        for i, (x, y) in enumerate(zip(g, e)):
            if not math.isclose(x, y, rel_tol=rel, abs_tol=abs_tol):
                err = abs(x - y)
                self.fail(f"{msg}: first difference at flat index {i}: got {x!r}, "
                          f"expected {y!r}, abs error {err:.3g}, "
                          f"rel error {err / abs(y) if y else math.inf:.3g}")


def random_case(rng, max_h=12):
    """A random (h, g, n, m, d, d_v) with g dividing h."""
    h = rng.randint(1, max_h)
    g = rng.choice(divisors(h))
    n = rng.randint(1, 5)
    m = rng.randint(n, 7)
    return h, g, n, m, rng.randint(1, 6), rng.randint(1, 6)


def new_rng(seed):
    return random.Random(seed)
