"""grader: check a gqa.py against an independent reference, case by case.

    python grader.py                      grade gqa.py beside this file, fresh seed
    python grader.py --seed 7             repeat a run exactly
    python grader.py --module my/gqa.py   grade another implementation
    python grader.py --only kv_head,layer run some checks (--list names them)
    python grader.py --starter DIR        write a starter gqa.py for students

Every case is drawn from random.Random(seed): h from 1 to 16 (primes
included), g from the divisors of h, and the other sizes small.  Each check
compares the module with the reference below, which shares no code with
gqa.py and is built differently on purpose: it copies every key/value head
into each query head it serves (the module indexes the shared head), loops
over indices, and counts multiplications and cache elements by performing
and building them, never by a formula.

Output: one line per check in the lab's order, the first failing case of a
failed check with the command that reproduces it, and a last line
"N passed, M failed".  Exit status 0 when every check passes, 1 when one
fails, 2 for a usage error or a module that cannot be imported.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import json
import math
import os
import random
import signal
import sys
from contextlib import contextmanager

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODULE = os.path.join(HERE, "gqa.py")
REL_TOL = 1e-9          # values are compared to this relative tolerance...
ABS_TOL = 1e-12         # ...or this absolute one, whichever is looser
DEFAULT_CASES = 25
CHECK_SECONDS = 20      # a check that runs longer is stopped (where signals allow)


# ---------------------------------------------------------------------------
# The reference: slow, obvious, and written differently from gqa.py.
# ---------------------------------------------------------------------------

class Counter:
    """Multiplications and reads counted one at a time, by term."""

    def __init__(self):
        self.counts = {}

    def add(self, term, k=1):
        self.counts[term] = self.counts.get(term, 0) + k

    def times(self, term, a, b):
        self.add(term)
        return a * b


def _no_count(term, a, b):
    return a * b


def divisors(h):
    return [g for g in range(1, h + 1) if h % g == 0]


def ref_group_heads(h, g):
    """Contiguous blocks, by walking the heads and starting a new block every h // g."""
    groups, size = [], h // g
    for i in range(h):
        if i % size == 0:
            groups.append([])
        groups[-1].append(i)
    return groups


def ref_kv_head(i, h, g):
    for j, group in enumerate(ref_group_heads(h, g)):
        if i in group:
            return j
    raise ValueError(i)


def expand_kv(kv, h):
    """Copy each of the g heads into every one of the h // g query heads it serves."""
    out = []
    for j in range(len(kv)):
        for _ in range(h // len(kv)):
            out.append([list(row) for row in kv[j]])
    return out


def mean_heads(kv, g):
    """The mean of each group of heads, accumulated one index at a time."""
    h, rows, cols = len(kv), len(kv[0]), len(kv[0][0])
    out = []
    for group in ref_group_heads(h, g):
        head = []
        for r in range(rows):
            row = []
            for c in range(cols):
                total = 0.0
                for i in group:
                    total += kv[i][r][c]
                row.append(total / len(group))
            head.append(row)
        out.append(head)
    return out


def attend(q, k, v, causal=False, counter=None):
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


def matmul(a, b, term=None, counter=None):
    """a [n][k] @ b [k][p] by index loops."""
    times = counter.times if counter else _no_count
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


def ref_layer(x, w_q, w_k, w_v, w_o, g, causal=False, counter=None):
    """One layer: per-head projections, K/V weights folded by mean, heads copied out."""
    h = len(w_q)
    w_k = mean_heads(w_k, g) if len(w_k) != g else w_k
    w_v = mean_heads(w_v, g) if len(w_v) != g else w_v
    q = [matmul(x, w_q[i], "q_proj", counter) for i in range(h)]
    k = expand_kv([matmul(x, w_k[j], "k_proj", counter) for j in range(g)], h)
    v = expand_kv([matmul(x, w_v[j], "v_proj", counter) for j in range(g)], h)
    heads = [attend(q[i], k[i], v[i], causal, counter) for i in range(h)]
    y = [[0.0] * len(w_o[0][0]) for _ in x]
    for i in range(h):
        part = matmul(heads[i], w_o[i], "o_proj", counter)
        for r in range(len(x)):
            for c in range(len(y[r])):
                y[r][c] += part[r][c]
    return y


def ref_decode(xs, w_q, w_k, w_v, w_o, g, counter):
    """Decode xs position by position with a cache of nested lists; count its reads."""
    h = len(w_q)
    w_k, w_v = mean_heads(w_k, g), mean_heads(w_v, g)
    cache_k = [[] for _ in range(g)]        # [g][t][d]
    cache_v = [[] for _ in range(g)]
    ys = []
    for x in xs:
        counter.add("weight_reads", sum(len(row) for w in (w_q, w_k, w_v, w_o)
                                        for head in w for row in head))
        q = [matmul([x], w_q[i], "q_proj", counter)[0] for i in range(h)]
        for j in range(g):
            cache_k[j].append(matmul([x], w_k[j], "k_proj", counter)[0])
            cache_v[j].append(matmul([x], w_v[j], "v_proj", counter)[0])
        for j in range(g):                  # each cached element read once per step
            for store in (cache_k[j], cache_v[j]):
                for row in store:
                    counter.add("cache_reads", len(row))
        k_rep, v_rep = expand_kv(cache_k, h), expand_kv(cache_v, h)
        y = [0.0] * len(x)
        for i in range(h):
            head = attend([q[i]], k_rep[i], v_rep[i], False, counter)
            part = matmul(head, w_o[i], "o_proj", counter)[0]
            y = [a + b for a, b in zip(y, part)]
        ys.append(y)
    return ys


def nested(shape, fill=0.0):
    """A real nested list of the given shape."""
    if not shape:
        return fill
    return [nested(shape[1:], fill) for _ in range(shape[0])]


def count_leaves(t):
    if isinstance(t, list):
        return sum(count_leaves(x) for x in t)
    return 1


def rand_tensor(rng, *shape):
    if len(shape) == 1:
        return [rng.uniform(-1.0, 1.0) for _ in range(shape[0])]
    return [rand_tensor(rng, *shape[1:]) for _ in range(shape[0])]


def first_difference(got, expected, rel=REL_TOL, abs_tol=ABS_TOL, exact=False, where=()):
    """Return None when got matches expected, else a sentence on the first difference.

    Nested lists are walked in order; floats are compared with math.isclose
    (or ==, with exact=True); the first differing index is named with its
    absolute and relative error.
    """
    index = "".join(f"[{i}]" for i in where)
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"at {index or 'the top'}: expected a list of {len(expected)}, got {_short(got)}"
        if len(got) != len(expected):
            return (f"at {index or 'the top'}: expected {len(expected)} items, "
                    f"got {len(got)}")
        for i, (a, b) in enumerate(zip(got, expected)):
            diff = first_difference(a, b, rel, abs_tol, exact, where + (i,))
            if diff:
                return diff
        return None
    if isinstance(expected, float) or isinstance(got, float):
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return f"at {index or 'the top'}: expected {expected!r}, got {_short(got)}"
        if got == expected or (math.isnan(got) and math.isnan(expected)):
            return None
        if not exact and math.isclose(got, expected, rel_tol=rel, abs_tol=abs_tol):
            return None
        err = abs(got - expected)
        rel_err = err / abs(expected) if expected else math.inf
        return (f"at {index or 'the top'}: expected {expected!r}, got {got!r} "
                f"(abs error {err:.3g}, rel error {rel_err:.3g})")
    if got != expected or type(got) is bool and type(expected) is not bool:
        return f"at {index or 'the top'}: expected {expected!r}, got {_short(got)}"
    return None


def _short(x):
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------
# Running the module under test: every call is guarded.
# ---------------------------------------------------------------------------

class Failure(Exception):
    """A case that failed; the message is the whole story."""


class Skipped(Exception):
    pass


class Module:
    """The module under test, with calls that turn its surprises into Failures."""

    def __init__(self, mod, label):
        self.mod, self.label = mod, label
        self.steps = {}                          # function name -> "step N: ..." of a starter

    def get(self, name):
        obj = getattr(self.mod, name, None)
        if obj is None:
            raise Failure(f"{self.label} has no {name}")
        return obj

    def call(self, name, *args, **kwargs):
        """Call mod.name(*args, **kwargs); raise Failure on a wrong signature or an exception."""
        fn = self.get(name) if isinstance(name, str) else name
        label = name if isinstance(name, str) else getattr(name, "__qualname__", repr(name))
        try:
            inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as err:
            raise Failure(f"{label} has the wrong signature: the lab calls "
                          f"{label}({_args(args, kwargs)}), yours is "
                          f"{label}{inspect.signature(fn)} ({err})") from None
        except ValueError:
            pass                                 # builtins without a signature
        try:
            return fn(*args, **kwargs)
        except NotImplementedError as err:
            raise Failure(f"not implemented yet: {err or label}") from None
        except Exception as err:                 # the module's bug, reported, not raised
            raise Failure(f"{label}({_args(args, kwargs)}) raised "
                          f"{type(err).__name__}: {err}") from None


def _args(args, kwargs):
    parts = [_brief(a) for a in args] + [f"{k}={_brief(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _brief(value):
    """A short description of an argument: numbers as they are, tensors by shape."""
    if isinstance(value, list):
        shape = []
        while isinstance(value, list):
            shape.append(len(value))
            value = value[0] if value else None
        return "<" + "x".join(map(str, shape)) + " list>"
    text = repr(value)
    return text if len(text) <= 40 else type(value).__name__


def load_module(path):
    """Import the file at path as the module `gqa`; return (module, None) or (None, why)."""
    if not os.path.isfile(path):
        return None, f"no such file: {path}"
    spec = importlib.util.spec_from_file_location("gqa", path)
    mod = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("gqa")
    sys.modules["gqa"] = mod
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as err:
        return None, f"{path} has a syntax error, line {err.lineno}: {err.msg}"
    except (Exception, SystemExit) as err:      # anything at import time, even exit()
        return None, f"importing {path} raised {type(err).__name__}: {err}"
    finally:
        if saved is not None:
            sys.modules["gqa"] = saved
        else:
            sys.modules.pop("gqa", None)
    return mod, None


# ---------------------------------------------------------------------------
# The checks, in the lab's order.  Each takes the module, a seeded random
# generator and a number of cases, and returns (cases passed, cases run,
# first failure or None).
# ---------------------------------------------------------------------------

CHECKS = []


def check(name, summary, needs=()):
    def register(fn):
        CHECKS.append((name, summary, needs, fn))
        return fn
    return register


HAND_HG = [(8, 2), (6, 3), (4, 1), (5, 5), (12, 4), (1, 1), (9, 3), (16, 8)]


def draw_hg(rng, case):
    """The hand-picked (h, g) first, then random ones: h in 1..16, g a divisor of h."""
    if case < len(HAND_HG):
        return HAND_HG[case]
    h = rng.randint(1, 16)
    return h, rng.choice(divisors(h))


def run_cases(rng, cases, one_case):
    """Run one_case(case) for each case; collect the first failure."""
    passed, first = 0, None
    for case in range(cases):
        try:
            one_case(case)
            passed += 1
        except Failure as fail:
            if first is None:
                first = str(fail)
            if str(fail).startswith("not implemented yet"):
                return passed, case + 1, first
    return passed, cases, first


def expect(got, expected, case, what, exact=False, rel=REL_TOL):
    """Raise a Failure naming the case, and showing both values when they are short."""
    diff = first_difference(got, expected, rel=rel, exact=exact)
    if diff:
        shown = ""
        if max(len(repr(got)), len(repr(expected))) <= 100:
            shown = f"expected: {expected!r}\ngot:      {got!r}\n"
        raise Failure(f"case {case}: {what}\n{shown}first difference {diff}")


@check("group_heads", "the query heads of each group are contiguous blocks")
def check_group_heads(m, rng, cases):
    def one(case):
        h, g = draw_hg(rng, case)
        expect(m.call("group_heads", h, g), ref_group_heads(h, g), f"h={h}, g={g}", f"group_heads({h}, {g})")
    return run_cases(rng, cases, one)


@check("kv_head", "query head i reads key/value head i // (h // g)")
def check_kv_head(m, rng, cases):
    def one(case):
        h, g = draw_hg(rng, case)
        got = [m.call("kv_head", i, h, g) for i in range(h)]
        expect(got, [ref_kv_head(i, h, g) for i in range(h)], f"h={h}, g={g}",
               f"[kv_head(i, {h}, {g}) for i in range({h})]")
    return run_cases(rng, cases, one)


@check("fold_kv_mean", "h heads fold to g, each the mean of its group")
def check_fold(m, rng, cases):
    def one(case):
        h, g = draw_hg(rng, case)
        rows, cols = rng.randint(1, 4), rng.randint(1, 4)
        kv = rand_tensor(rng, h, rows, cols)
        where = f"h={h}, g={g}, kv [{h}][{rows}][{cols}]"
        expect(m.call("fold_kv_mean", kv, g), mean_heads(kv, g), where, "fold_kv_mean(kv, g)")
        expect(m.call("fold_kv_mean", kv, h), kv, f"h={h}, g=h", "fold_kv_mean(kv, h) == kv, exactly",
               exact=True)
    return run_cases(rng, cases, one)


@check("repeat_kv", "g heads repeat out to h, interleaved, not tiled")
def check_repeat(m, rng, cases):
    def one(case):
        h, g = draw_hg(rng, case)
        kv = rand_tensor(rng, g, rng.randint(1, 3), rng.randint(1, 3))
        expect(m.call("repeat_kv", kv, h), expand_kv(kv, h), f"h={h}, g={g}", "repeat_kv(kv, h)",
               exact=True)
    return run_cases(rng, cases, one)


def draw_qkv(rng, causal):
    n = rng.randint(1, 5)
    mm = rng.randint(n if causal else 1, 7)
    d, dv = rng.randint(1, 6), rng.randint(1, 6)
    q, k, v = rand_tensor(rng, n, d), rand_tensor(rng, mm, d), rand_tensor(rng, mm, dv)
    scale = rng.choice([1.0, 3.0])              # larger scores make a wrong scale show
    q = [[x * scale for x in row] for row in q]
    return q, k, v, f"n={n}, m={mm}, d={d}, d_v={dv}"


@check("single_head_attention", "softmax(q k^T / sqrt(d)) v for one head")
def check_single(m, rng, cases):
    def one(case):
        q, k, v, where = draw_qkv(rng, False)
        expect(m.call("single_head_attention", q, k, v), attend(q, k, v), where,
               "single_head_attention(q, k, v)")
    return run_cases(rng, cases, one)


@check("causal_attention", "query i sees key j when j <= i + (m - n)")
def check_causal(m, rng, cases):
    def one(case):
        q, k, v, where = draw_qkv(rng, True)
        expect(m.call("single_head_attention", q, k, v, causal=True), attend(q, k, v, True), where,
               "single_head_attention(q, k, v, causal=True)")
        one_q = q[-1:]
        expect(m.call("single_head_attention", one_q, k, v, causal=True), attend(one_q, k, v), where,
               "a single causal query sees every key")
    return run_cases(rng, cases, one)


def draw_heads(rng, case, h, kv_heads):
    """q [h][n][d], k and v [kv_heads][m][d or d_v], causal every other case."""
    n, mm, d, dv = rng.randint(1, 4), rng.randint(2, 5), rng.randint(1, 4), rng.randint(1, 4)
    causal = case % 2 == 1 and n <= mm
    q = rand_tensor(rng, h, n, d)
    k, v = rand_tensor(rng, kv_heads, mm, d), rand_tensor(rng, kv_heads, mm, dv)
    return q, k, v, causal, f"n={n}, m={mm}, d={d}, d_v={dv}, causal={causal}"


@check("attention", "fold, repeat, attend: exactly MHA at g = h, changed at g < h")
def check_attention(m, rng, cases):
    def one(case):
        h, _ = draw_hg(rng, case)
        q, k, v, causal, where = draw_heads(rng, case, h, h)
        where = f"h={h}, {where}"
        mha = [m.call("single_head_attention", q[i], k[i], v[i], causal=causal) for i in range(h)]
        for g in divisors(h):
            got = m.call("attention", q, k, v, g, causal=causal)
            kc, vc = expand_kv(mean_heads(k, g), h), expand_kv(mean_heads(v, g), h)
            expect(got, [attend(q[i], kc[i], vc[i], causal) for i in range(h)], f"{where}, g={g}",
                   f"attention(q, k, v, g={g})")
            if g == h:
                expect(got, mha, where, "attention(q, k, v, g=h) must equal per-head "
                       "single_head_attention bit for bit (==)", exact=True)
            elif first_difference(got, mha, rel=1e-12, abs_tol=1e-12) is None:
                raise Failure(f"case {where}, g={g}\nattention with g={g} < h={h} "
                              f"gave the MHA output; folding K and V must change it")
    return run_cases(rng, cases, one)


@check("grouped_attention", "h query heads read g key/value heads by index")
def check_grouped(m, rng, cases):
    def one(case):
        h, g = draw_hg(rng, case)
        q, k, v, causal, where = draw_heads(rng, case, h, g)
        where = f"h={h}, g={g}, {where}"
        got = m.call("grouped_attention", q, k, v, causal=causal)
        kc, vc = expand_kv(k, h), expand_kv(v, h)
        expect(got, [attend(q[i], kc[i], vc[i], causal) for i in range(h)], where,
               "grouped_attention(q, k, v)")
        kr, vr = m.call("repeat_kv", k, h), m.call("repeat_kv", v, h)
        expect(got, [m.call("single_head_attention", q[i], kr[i], vr[i], causal=causal)
                     for i in range(h)], where,
               "grouped_attention must equal repeat_kv + single_head_attention bit for bit",
               exact=True)
    return run_cases(rng, cases, one)


def draw_layer(m, rng, case):
    h, g = draw_hg(rng, case)
    d_model, d, n = rng.randint(1, 6), rng.randint(1, 4), rng.randint(1, 4)
    seed = rng.randrange(1000)
    w = m.call("init_weights", h, d_model, d, seed=seed)
    fields = []
    for name in ("w_q", "w_k", "w_v", "w_o"):
        if not hasattr(w, name):
            raise Failure(f"init_weights must return a record with fields w_q, w_k, w_v, w_o; "
                          f"got {_short(w)}")
        fields.append(getattr(w, name))
    shapes = [(h, d_model, d)] * 3 + [(h, d, d_model)]
    for name, t, shape in zip(("w_q", "w_k", "w_v", "w_o"), fields, shapes):
        got = (len(t), len(t[0]), len(t[0][0]))
        if got != shape:
            raise Failure(f"init_weights({h}, {d_model}, {d}, seed={seed}).{name} has shape "
                          f"{list(got)}, expected {list(shape)}")
    if m.call("init_weights", h, d_model, d, seed=seed) != w:
        raise Failure(f"init_weights({h}, {d_model}, {d}, seed={seed}) gave different "
                      f"weights on a second call")
    x = rand_tensor(rng, n, d_model)
    return h, g, n, d, d_model, w, fields, x, f"h={h}, g={g}, n={n}, d={d}, d_model={d_model}"


@check("layer", "one layer on MHA weights with g key/value heads")
def check_layer(m, rng, cases):
    def one(case):
        h, g, n, d, d_model, w, fields, x, where = draw_layer(m, rng, case)
        for causal in (False, True):
            expect(m.call("layer", x, w, g, causal=causal), ref_layer(x, *fields, g, causal),
                   f"{where}, causal={causal}", f"layer(x, weights, g={g}, causal={causal})")
    return run_cases(rng, cases, one)


def raises_rule(m, name, args, numbers):
    """Call name(*args); it must raise the module's GQAError naming the numbers given."""
    error = m.get("GQAError")
    if not (isinstance(error, type) and issubclass(error, ValueError)):
        raise Failure("GQAError must be an exception class that subclasses ValueError")
    fn = m.get(name)
    try:
        result = fn(*args)
    except error as err:
        missing = [str(x) for x in numbers if str(x) not in str(err)]
        if missing:
            raise Failure(f"{name}{tuple(_brief(a) for a in args)} raised GQAError({str(err)!r}), "
                          f"which does not mention {', '.join(missing)}") from None
        return
    except NotImplementedError as err:
        raise Failure(f"not implemented yet: {err or name}") from None
    except Exception as err:
        raise Failure(f"{name}{tuple(_brief(a) for a in args)} raised {type(err).__name__}: {err}, "
                      f"not GQAError") from None
    raise Failure(f"{name}{tuple(_brief(a) for a in args)} returned {_short(result)} "
                  f"instead of raising GQAError")


@check("errors", "a g that does not divide h, or is out of range, raises GQAError")
def check_errors(m, rng, cases):
    def one(case):
        h = rng.choice([4, 6, 8, 9, 12, 15, 16])
        bad = rng.choice([g for g in range(2, h) if h % g]) if case % 3 == 0 else \
            rng.choice([0, h + 1, -1, 2 * h])
        q = rand_tensor(rng, h, 2, 2)
        raises_rule(m, "group_heads", (h, bad), (h, bad))
        raises_rule(m, "kv_head", (0, h, bad), (h, bad))
        raises_rule(m, "fold_kv_mean", (q, bad), (h, bad))
        raises_rule(m, "attention", (q, q, q, bad), (h, bad))
    return run_cases(rng, cases, one)


@check("kv_cache_elements", "2 x layers x g x length x head_dim x batch numbers")
def check_cache_elements(m, rng, cases):
    def one(case):
        layers, g, length, d, batch = (rng.randint(1, 3), rng.randint(1, 4), rng.randint(0, 5),
                                       rng.randint(1, 4), rng.randint(1, 2))
        built = nested([batch, layers, 2, g, length, d])     # a real cache, K and V
        expect(m.call("kv_cache_elements", layers, g, length, d, batch=batch), count_leaves(built),
               f"layers={layers}, kv_heads={g}, length={length}, head_dim={d}, batch={batch}",
               "kv_cache_elements(...) against the elements of a cache built as nested lists")
    return run_cases(rng, cases, one)


TERMS = ("q_proj", "k_proj", "v_proj", "scores", "weighted_sum", "o_proj")


def draw_sizes(rng, case):
    """(h, g) as draw_hg gives them, and small n, d, d_model, for the counting checks."""
    h, g = draw_hg(rng, case)
    n, d, d_model = rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 4)
    return h, g, n, d, d_model, f"n={n}, h={h}, g={g}, d={d}, d_model={d_model}"


def random_weights(rng, h, d_model, d):
    """w_q, w_k, w_v [h][d_model][d] and w_o [h][d][d_model], uniform in [-1, 1]."""
    return [rand_tensor(rng, h, d_model, d) for _ in range(3)] + [rand_tensor(rng, h, d, d_model)]


@check("attention_multiplies", "the multiplications per term, full and causal, as an instrumented layer counts them")
def check_multiplies(m, rng, cases):
    def one(case):
        h, g, n, d, d_model, where = draw_sizes(rng, case)
        causal = case % 2 == 1                      # a decoder's prefill every other case
        counter = Counter()
        ref_layer(rand_tensor(rng, n, d_model), *random_weights(rng, h, d_model, d), g,
                  causal=causal, counter=counter)
        got = m.call("attention_multiplies", n, h, g, d, d_model, causal=causal)
        expect([getattr(got, t, None) for t in TERMS + ("total",)],
               [counter.counts.get(t, 0) for t in TERMS] + [sum(counter.counts.values())],
               f"{where}, causal={causal}",
               "attention_multiplies(...) fields " + ", ".join(TERMS + ("total",)))
    return run_cases(rng, cases, one)


@check("tables", "cache_table and multiplies_table: one row per divisor g, ratios to MHA")
def check_tables(m, rng, cases):
    def one(case):
        h = draw_hg(rng, case)[0]
        layers, length, d, n, d_model = (rng.randint(1, 2), rng.randint(1, 4), rng.randint(1, 3),
                                         rng.randint(1, 3), rng.randint(1, 4))
        where = f"h={h}, layers={layers}, length={length}, head_dim={d}"
        rows = m.call("cache_table", h, layers=layers, length=length, head_dim=d)
        sizes = {g: count_leaves(nested([layers, 2, g, length, d])) for g in divisors(h)}
        got = [[getattr(r, f, None) for f in ("kv_heads", "group_size", "elements", "ratio")]
               for r in rows]
        expect(got, [[g, h // g, sizes[g], sizes[g] / sizes[h]] for g in divisors(h)], where,
               "cache_table rows (kv_heads, group_size, elements, ratio)")
        names = [r.method for r in rows]
        expected = ["MHA" if g == h else "MQA" if g == 1 else "GQA" for g in divisors(h)]
        expect(names, expected, where, "cache_table methods")
        mult = m.call("multiplies_table", n, h, d, d_model)
        expect([[r.kv_heads, r.ratio.scores, r.ratio.k_proj] for r in mult],
               [[g, 1.0, g / h] for g in divisors(h)], f"n={n}, h={h}, d={d}, d_model={d_model}",
               "multiplies_table rows (kv_heads, ratio.scores, ratio.k_proj)")
    return run_cases(rng, cases, one)


@check("count_multiplies", "the tally kept while layer runs equals the reference's own count",
       needs=("layer",))
def check_tally(m, rng, cases):
    def one(case):
        h, g, n, d, d_model, w, fields, x, where = draw_layer(m, rng, case)
        counter = Counter()
        ref_layer(x, *fields, g, counter=counter)
        with m.call("count_multiplies") as tally:
            m.call("layer", x, w, g)
        expect([getattr(tally, t, None) for t in TERMS], [counter.counts.get(t, 0) for t in TERMS],
               where, "tally fields " + ", ".join(TERMS) + " after layer(x, weights, g)")
    return run_cases(rng, cases, one)


@check("decode", "KVCache and decode_step equal full causal attention, position by position")
def check_decode(m, rng, cases):
    def one(case):
        h, g, n, d, d_model, w, fields, x, where = draw_layer(m, rng, case)
        cache = m.call("KVCache", g, d)
        got = [m.call("decode_step", x_t, w, g, cache) for x_t in x]
        expect(got, ref_layer(x, *fields, g, causal=True), where,
               "decode_step row by row against the reference causal layer")
        built = nested([2, g, n, d])
        expect([m.call(len, cache), cache.elements, cache.nbytes],
               [n, count_leaves(built), 8 * count_leaves(built)], where,
               "len(cache), cache.elements, cache.nbytes after decoding n positions")
    return run_cases(rng, cases, one)


@check("decode_traffic", "cache and weight reads of n decode steps, counted by a reference decoder")
def check_traffic(m, rng, cases):
    def one(case):
        h, g, n, d, d_model, where = draw_sizes(rng, case)
        counter = Counter()
        ref_decode(rand_tensor(rng, n, d_model), *random_weights(rng, h, d_model, d), g, counter)
        got = m.call("decode_traffic", n, h, g, d, d_model)
        expect([got.cache_reads, got.weight_reads, got.multiplies],
               [counter.counts["cache_reads"], counter.counts["weight_reads"],
                sum(counter.counts.get(t, 0) for t in TERMS)],
               where, "decode_traffic(...) cache_reads, weight_reads, multiplies")
    return run_cases(rng, cases, one)


# ---------------------------------------------------------------------------
# Grading: run the checks, report like a teacher.
# ---------------------------------------------------------------------------

def check_names():
    return [name for name, _, _, _ in CHECKS]


@contextmanager
def time_limit(seconds, name):
    """Stop a check that runs too long (on systems with SIGALRM)."""
    if not hasattr(signal, "SIGALRM") or seconds <= 0:
        yield
        return

    def stop(signum, frame):
        raise Failure(f"{name} took longer than {seconds} s: is there an endless loop?")
    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def grade(mod, label, seed, cases=DEFAULT_CASES, only=None):
    """Run the checks on an imported module; return a list of result dicts."""
    module = Module(mod, label)
    results, failed = [], set()
    for name, summary, needs, fn in CHECKS:
        if only and name not in only:
            continue
        result = {"name": name, "summary": summary, "seed": seed, "passed": False,
                  "skipped": False, "cases": 0, "cases_passed": 0, "message": ""}
        blocked = [n for n in needs if n in failed]
        if blocked:
            result.update(skipped=True, message=f"skipped: needs {', '.join(blocked)}, which failed")
            failed.add(name)
            results.append(result)
            continue
        rng = random.Random(f"{name}:{seed}")     # the same cases with or without --only
        try:
            with time_limit(CHECK_SECONDS, name):
                passed, ran, first = fn(module, rng, cases)
        except Failure as fail:
            passed, ran, first = 0, 1, str(fail)
        except NotImplementedError as err:
            passed, ran, first = 0, 1, f"not implemented yet: {err}"
        except Exception as err:                 # e.g. a missing field of a returned record
            passed, ran, first = 0, 1, f"{type(err).__name__}: {err}"
        result.update(cases=ran, cases_passed=passed, passed=first is None, message=first or "")
        if first is not None:
            failed.add(name)
        results.append(result)
    return results


def reproduce(args, name=None):
    """The command that repeats this run (or one check of it) exactly."""
    parts = ["python grader.py", f"--seed {args.seed}"]
    if args.module != DEFAULT_MODULE:
        parts.insert(1, f"--module {args.module}")
    if name:
        parts.append(f"--only {name}")
    if args.cases != DEFAULT_CASES:
        parts.append(f"--cases {args.cases}")
    return " ".join(parts)


def print_report(results, args, out=sys.stdout):
    width = max(len(r["name"]) for r in results) if results else 0
    for r in results:
        if r["skipped"]:
            status, count = "SKIP", ""
        else:
            status = "PASS" if r["passed"] else "FAIL"
            count = f"{r['cases_passed']}/{r['cases']} cases"
        if args.quiet and status == "PASS":
            continue
        print(f"  {status}  {r['name'].ljust(width)}  {count:<12}  {r['summary']}", file=out)
        if status == "FAIL":
            for line in r["message"].splitlines():
                print(f"        {line}", file=out)
            print(f"        reproduce: {reproduce(args, r['name'])}", file=out)
        elif status == "SKIP":
            print(f"        {r['message']}", file=out)


# ---------------------------------------------------------------------------
# A starter for students: gqa.py's signatures and docstrings, bodies stubbed.
# ---------------------------------------------------------------------------

def make_starter(source):
    """Return the source of a starter gqa.py: public functions and methods stubbed.

    Keeps the module docstring, imports, public classes and constants; drops
    private helpers and the command line; replaces each public function's
    body by its docstring and raise NotImplementedError("step N: NAME: ...").
    """
    tree = ast.parse(source)
    step = 0

    def stub(fn, qualname):
        nonlocal step
        step += 1
        doc = ast.get_docstring(fn)
        summary = doc.splitlines()[0] if doc else ""
        body = [ast.Expr(ast.Constant(doc))] if doc else []
        message = f"step {step}: {qualname}" + (f": {summary}" if summary else "")
        body.append(ast.Raise(ast.Call(ast.Name("NotImplementedError", ast.Load()),
                                       [ast.Constant(message)], []), None))
        fn.body = body

    kept = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("_") or node.name == "main":
                continue
            stub(node, node.name)
        elif isinstance(node, ast.ClassDef):
            if node.name.startswith("_"):            # a private base class: kept whole
                kept.append(node)
                continue
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and (not item.name.startswith("_")
                                                           or item.name in ("__init__", "__len__")):
                    stub(item, f"{node.name}.{item.name}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id.startswith("_") and t.id != "__all__"
                   for t in targets):
                continue
        elif isinstance(node, ast.If) and ("__name__" in ast.dump(node.test) or all(
                isinstance(n, ast.FunctionDef) and n.name.startswith("_")
                for n in node.body + node.orelse)):
            continue                                 # the command line, private kernels
        kept.append(node)
    tree.body = kept
    header = ('# A starter for the gqa lab, written by `python grader.py --starter`.\n'
              '# Replace each `raise NotImplementedError` with your code, in order, and run\n'
              '# `python grader.py --module THIS_FILE` to see your progress.\n')
    return header + ast.unparse(tree) + "\n"


def write_starter(directory, source_path=DEFAULT_MODULE):
    if sys.version_info < (3, 9):
        raise SystemExit("grader: --starter needs Python 3.9 or newer")
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
# Command line.
# ---------------------------------------------------------------------------

def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python grader.py",
        description="Check a gqa.py against an independent reference, with random (h, g).")
    parser.add_argument("--module", default=DEFAULT_MODULE, metavar="PATH",
                        help="the gqa.py to grade (default: the one beside grader.py)")
    parser.add_argument("--seed", type=int, default=None,
                        help="the seed of every case (default: a fresh one, printed)")
    parser.add_argument("--cases", type=int, default=DEFAULT_CASES, metavar="K",
                        help=f"random cases per check (default {DEFAULT_CASES})")
    parser.add_argument("--only", default=None, metavar="NAMES",
                        help="run only these checks, comma-separated (see --list)")
    parser.add_argument("--list", action="store_true", help="name the checks, in order, and exit")
    parser.add_argument("--json", action="store_true",
                        help="print the result as JSON (one object per check) instead of text")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print only failures and the summary")
    parser.add_argument("--starter", metavar="DIR",
                        help="write a starter gqa.py for students into DIR and exit")
    args = parser.parse_args(argv)
    if args.cases < 1:
        parser.error(f"--cases must be at least 1; got {args.cases}")
    if args.only:
        args.only = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in args.only if n not in check_names()]
        if unknown:
            parser.error(f"no check named {', '.join(unknown)}; the checks are: "
                         f"{', '.join(check_names())}")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        for name, summary, _, _ in CHECKS:
            print(f"{name:<22} {summary}")
        return 0
    if args.starter:
        try:
            path = write_starter(args.starter)
        except OSError as err:
            print(f"grader: cannot write the starter: {err}", file=sys.stderr)
            return 2
        print(f"wrote {path}; grade it with: python grader.py --module {path}")
        return 0
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(10 ** 6)
    label = "gqa.py" if args.module == DEFAULT_MODULE else args.module
    mod, why = load_module(args.module)
    if mod is None:
        print(f"grader: cannot import the module to grade: {why}", file=sys.stderr)
        return 2
    if not args.json and not args.quiet:
        print(f"grading {label} with seed {args.seed} ({args.cases} cases per check; floats to "
              f"rel {REL_TOL:g}, abs {ABS_TOL:g}; repeat with: {reproduce(args)})")
    results = grade(mod, os.path.basename(label), args.seed, args.cases, args.only)
    passed = sum(r["passed"] for r in results)
    skipped = sum(r["skipped"] for r in results)
    failed = len(results) - passed - skipped
    if args.json:
        json.dump({"module": label, "seed": args.seed, "cases": args.cases, "passed": passed,
                   "failed": failed, "skipped": skipped,
                   "checks": [{k: r[k] for k in ("name", "passed", "skipped", "cases",
                                                 "cases_passed", "message", "seed")}
                              for r in results]}, sys.stdout, indent=2)
        print()
    else:
        print_report(results, args)
        print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
