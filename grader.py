"""grader: a referee for gqa.py, checked step by step against an independent reference.

    python grader.py                          grade gqa.py beside this file, fresh seed
    python grader.py --module mylab/gqa.py    grade your own (see --starter)
    python grader.py --starter mylab          write a starter mylab/gqa.py to fill in
    python grader.py --only fold_kv_mean --case 7 --show
                                              one case, its inputs as Python literals
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
private folder, an environment of PATH only and, as root, the user nobody,
which cannot signal, trace, read or write the grader, its folder or its
results.

The reference shares no code with gqa.py and is built differently on purpose:
it copies every key/value head into each query head it serves (the module
indexes the shared head), loops over indices, and counts multiplications and
cache elements by performing and building them, never by a formula.

Every check runs a fixed systematic set of cases (every (h, g) with h <= 16,
causal on and off, the refusals), the same on every run, and then --cases
random ones from the seed: case k of a check is drawn from
random.Random(f"{check}:{seed}:{k}"), so `--only NAME --case k` repeats it.

Output: one line per step in the lab's order ("not started" for a step whose
function still raises NotImplementedError), the first failing case of a
failed step with the command that reproduces it, the progress, and a last
line "N passed, M failed".  Exit status 0 when every check passes, 1 when one
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
import json
import math
import os
import queue
import random
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
DEFAULT_TIMEOUT = 5.0   # seconds one call may take before its worker is killed
DEFAULT_BUDGET = 300.0  # seconds a whole run may take; a correct module takes about one
BUDGET_NOTE = "not graded: the run's time budget ran out"



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


def ref_attend_backward(q, k, v, d_out, causal=False):
    """One head's gradients by index loops: (dq, dk, dv) of sum(attend(q, k, v) * d_out)."""
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


def ref_grouped_backward(q, k, v, d_out, causal=False):
    """Copy each K/V head into every query head it serves, take per-head gradients, then
    add the copies' gradients back, group by group."""
    h, g = len(q), len(k)
    kc, vc = expand_kv(k, h), expand_kv(v, h)
    per_head = [ref_attend_backward(q[i], kc[i], vc[i], d_out[i], causal) for i in range(h)]
    dk, dv = [], []
    for group in ref_group_heads(h, g):
        for grads, t in ((dk, 1), (dv, 2)):
            total = [list(row) for row in per_head[group[0]][t]]
            for i in group[1:]:
                total = [[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(total, per_head[i][t])]
            grads.append(total)
    return [ph[0] for ph in per_head], dk, dv


def transpose_ref(m):
    return [[m[r][c] for r in range(len(m))] for c in range(len(m[0]))]


def ref_layer_backward(x, w_q, w_k, w_v, w_o, g, d_y, causal=False):
    """(dx, [d w_q, d w_k, d w_v, d w_o]) of sum(ref_layer(...) * d_y), by the chain rule."""
    h = len(w_q)
    fk = mean_heads(w_k, g) if len(w_k) != g else w_k
    fv = mean_heads(w_v, g) if len(w_v) != g else w_v
    q = [matmul(x, w_q[i]) for i in range(h)]
    k = [matmul(x, fk[j]) for j in range(g)]
    v = [matmul(x, fv[j]) for j in range(g)]
    kc, vc = expand_kv(k, h), expand_kv(v, h)
    heads = [attend(q[i], kc[i], vc[i], causal) for i in range(h)]
    d_w_o = [matmul(transpose_ref(heads[i]), d_y) for i in range(h)]
    d_heads = [matmul(d_y, transpose_ref(w_o[i])) for i in range(h)]
    dq, dk, dv = ref_grouped_backward(q, k, v, d_heads, causal)
    xt = transpose_ref(x)
    d_w_q = [matmul(xt, t) for t in dq]
    d_fk, d_fv = [matmul(xt, t) for t in dk], [matmul(xt, t) for t in dv]
    dx = nested([len(x), len(x[0])])
    for grads, weights in ((dq, w_q), (dk, fk), (dv, fv)):
        for t, w in zip(grads, weights):
            part = matmul(t, transpose_ref(w))
            dx = [[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(dx, part)]

    def unfold(grads, heads):
        if heads == g:
            return grads
        return [[[value / (h // g) for value in row] for row in grads[i // (h // g)]] for i in range(heads)]
    return dx, [d_w_q, unfold(d_fk, len(w_k)), unfold(d_fv, len(w_v)), d_w_o]


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
    def at():
        return "at " + ("".join(f"[{i}]" for i in where) or "the top")

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
        try:
            with mod.count_multiplies() as tally:
                for r in req["calls"]:
                    answer = w_call(mod, r)
                    if "error" in answer:
                        return answer
            fields = {f: w_enc(getattr(tally, f, None)) for f in req["fields"]}
            fields["multiplies()"] = w_enc(tally.multiplies())
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
    if config.get("drop"):
        for name in W_PRELOAD:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        uid, gid = config["drop"]
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        except OSError as err:
            w_send({"import_error": f"the worker could not become uid {uid}: {err}"})
            return
    if resource is not None:
        w_limit(resource, config.get("limits", {}))
    sys.path[:0] = config.get("paths", [])
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
ANSWER_CAP = 32 << 20                # bytes: a longer answer line fails its case
IMPORT_TIMEOUT = 10.0                # seconds the module's import may take (at least)
# What a worker may use, on POSIX: seconds of CPU (its whole life), bytes of
# address space, processes beyond itself (none: no fork, no thread), bytes
# per file written, open files.
LIMITS = {"cpu": DEFAULT_BUDGET, "memory": 2 << 30, "processes": 0, "file_size": 1 << 20,
          "open_files": 64}


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


class Seal:
    """How a worker is shut in.  Every worker on POSIX gets LIMITS and its own session;
    a sealed run adds a private folder holding only a copy of the module, an
    environment of PATH alone, and, when the grader is root, another user.

    partly is None for a fully sealed run, else the reason it is only partly sealed.
    Raises Refused when a sealed run cannot be made safe here.
    """

    def __init__(self, sealed=False, user=None, out=None, budget=DEFAULT_BUDGET):
        self.sealed, self.drop, self.partly, self.dir = sealed, None, None, None
        self.limits = dict(LIMITS, cpu=int(budget) + 5) if os.name == "posix" else {}
        if not sealed:
            return
        if os.name != "posix":
            raise Refused("a sealed run needs a POSIX system (Linux, macOS): its limits, "
                          "sessions and users do not exist here")
        if os.geteuid() != 0:
            self.partly = ("the grader is not running as root, so the worker runs as the same "
                           "user and could reach the grader's files and process")
        else:
            import pwd
            name = user or "nobody"
            try:
                entry = pwd.getpwnam(name)
            except KeyError:
                raise Refused(f"--user {name}: no such user") from None
            if entry.pw_uid == 0:
                raise Refused(f"--user {name}: the worker's user must not be root")
            self.drop = (entry.pw_uid, entry.pw_gid)
            self.user, gids = name, {entry.pw_gid}
            if reachable(HERE, entry.pw_uid, gids, 1):
                raise Refused(f"the worker's user {name} could open files in the grader's folder "
                              f"{HERE} (grader.py, a solution); make it private first "
                              f"(chmod 700 {HERE})")
            if out:
                folder = os.path.dirname(os.path.abspath(out))
                if not os.path.isdir(folder):
                    raise Refused(f"--out {out}: no such folder {folder}")
                if reachable(folder, entry.pw_uid, gids, 2):
                    raise Refused(f"the worker's user {name} could write into {folder}, where "
                                  f"--out {out} goes; choose a folder only the grader can write")
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="gqa-sealed-")
        os.chmod(self.dir, 0o755)             # the worker reads it, it writes nothing here

    def place(self, path):
        """The module's copy in the private folder (written afresh), or path when not sealed."""
        if self.dir is None:
            return path
        import shutil
        copy = os.path.join(self.dir, os.path.basename(path))
        if os.path.exists(copy):
            os.remove(copy)
        shutil.copyfile(path, copy)
        os.chmod(copy, 0o644)
        return copy

    def env(self):
        return {"PATH": os.defpath} if self.sealed else None

    def close(self):
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
                  "paths": self.paths if self.paths is not None else [os.path.dirname(placed)]}
        if self.run is not None:
            config.update(run=self.run, name="gqa_under_tool", register=False)
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", WORKER, json.dumps(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=self.seal.dir, env=self.seal.env(), start_new_session=os.name == "posix")
        self.started += 1
        self.buffer, self.scanned = bytearray(), 0
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
            raise Refused(why if isinstance(why, str) else f"the worker's first answer for "
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
        try:
            return json.loads(line)
        except (ValueError, RecursionError):
            self.stop()
            raise Failure(f"the worker's answer to {what} was not readable") from None

    def exchange(self, items, whats):
        """Send items in one request; return their answers, up to the first error.

        Each answer has the call's own deadline, so a timeout names the call that hung.
        """
        if self.proc is None:
            self.start()
        self.sent += 1
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
                yield line["item"]
            elif line.get("done") is True:
                return
            elif "import_error" in line and isinstance(line["import_error"], str):
                self.stop()
                raise Refused(line["import_error"])
            else:
                error = line.get("error")
                self.stop()
                if isinstance(error, dict):
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
        return code


def run_in_child(path, target, args=(), *, paths=(), label=None, what="running the module",
                 item_timeout=60.0, budget=DEFAULT_BUDGET):
    """Yield what the project's function target ("module:function") yields when called as
    target(the module at path, *args) in a worker, each item as plain JSON data.

    The worker has the grader's limits, its own session (killed at the end),
    a deadline per item and one for the whole run; what names the work in
    messages ("building the report did not return within 60 s").  Raises Refused when the
    module cannot be imported, Failure (after the items that came) when the
    child hangs, dies, runs out of the budget or sends something else.  The
    caller's process never imports the module.
    """
    worker = Worker(path, item_timeout, Seal(budget=budget), time.monotonic() + budget,
                    label=label, run={"target": target, "args": list(args)}, paths=list(paths))
    worker.what = what
    try:
        yield from worker.items()
    finally:
        worker.stop()


def ref(name):
    """An argument that is an object kept in the worker."""
    return {"$ref": name}


def _brief(value):
    """A short description of an argument: numbers as they are, tensors by shape."""
    if isinstance(value, dict) and "$ref" in value:
        return value["$ref"]
    if isinstance(value, list):
        shape = []
        while isinstance(value, list):
            shape.append(len(value))
            value = value[0] if value else None
        return "<" + "x".join(map(str, shape)) + " list>"
    text = repr(value)
    return text if len(text) <= 40 else type(value).__name__


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
        e = answer["error"]
        if e["type"] == "NotImplementedError":
            raise NotStarted(f"not implemented yet: {e['message'] or what}")
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
        message = {"op": "call", "fn": fn, "args": list(args), "kwargs": kwargs,
                   "keep": keep, "value": value, "fresh": fresh}
        if not value:
            self.pending.append((message, what))
            return None
        return self._check(self._send(message, what), what, fresh)

    def calls(self, fn, arg_lists):
        """[fn(*args) for args in arg_lists], in one round trip."""
        queued, self.pending = self.pending, []
        pairs = queued + [({"op": "call", "fn": fn, "args": list(a)}, f"{fn}({_args(a, {})})")
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

    def tally(self, calls, fields):
        """Run calls [(fn, args, kwargs)] inside count_multiplies(); the tally's fields."""
        message = {"op": "tally", "fields": list(fields),
                   "calls": [{"op": "call", "fn": fn, "args": list(a), "kwargs": k, "value": False}
                             for fn, a, k in calls]}
        return self._check(self._send(message, "count_multiplies()"),
                           "the calls inside count_multiplies()", False)

    def raises(self, fn, args, numbers, kwargs=None):
        """fn(*args) must raise the module's GQAError, naming the numbers given."""
        what = f"{fn}({_args(args, kwargs or {})})"
        answer = self._send({"op": "call", "fn": fn, "args": list(args), "kwargs": kwargs or {}}, what)
        if "error" not in answer:
            raise Failure(f"{what} returned {_short(self._check(answer, what, False))} instead "
                          f"of raising GQAError")
        e = answer["error"]
        if e["type"] in ("NotImplementedError", "missing", "signature"):
            self._raise(answer, what)
        if not e["gqa_error"]:
            raise Failure(f"{what} raised {e['type']}: {e['message']}, not GQAError (a "
                          f"ValueError subclass)")
        missing = [str(x) for x in numbers if str(x) not in e["message"]]
        if missing:
            raise Failure(f"{what} raised GQAError({e['message']!r}), which does not mention "
                          f"{', '.join(missing)}")


# ---------------------------------------------------------------------------
# The steps, in the lab's order: one check per public function of gqa.py.
# Each check is called once per case; it raises Failure on a wrong answer.
# ---------------------------------------------------------------------------

class Step:
    def __init__(self, number, name, summary, systematic, fn):
        self.number, self.name, self.summary = number, name, summary
        self.systematic, self.fn = systematic, fn


STEPS = []


def step(number, name, summary, systematic):
    def register(fn):
        STEPS.append(Step(number, name, summary, systematic, fn))
        return fn
    return register


ALL_HG = [(h, g) for h in range(1, 17) for g in divisors(h)]     # every (h, g) with h <= 16


def draw_hg(case, rng):
    """The systematic (h, g) pairs first, in order, then random ones."""
    if case < len(ALL_HG):
        return ALL_HG[case]
    h = rng.randint(1, 16)
    return h, rng.choice(divisors(h))


def bad_g(h, rng):
    """A g that breaks the rule for h: a non-divisor when h has one, else out of range."""
    return rng.choice([g for g in range(2, h) if h % g] or [0, h + 1, -1])


def expect(got, expected, where, what, exact=False, rel=REL_TOL, loose=False):
    """Raise a Failure naming the case, and showing both values when they are short."""
    diff = first_difference(got, expected, rel=rel, exact=exact, loose_lists=loose)
    if diff:
        shown = ""
        if max(len(repr(got)), len(repr(expected))) <= 100:
            shown = f"expected: {expected!r}\ngot:      {got!r}\n"
        raise Failure(f"case {where}: {what}\n{shown}first difference {diff}")


def transpose(m):
    return [[m[r][c] for r in range(len(m))] for c in range(len(m[0]))]


@step(1, "valid_g", "the valid g for h: its divisors, in increasing order", 16)
def check_valid_g(s, case, rng, show):
    h = case + 1 if case < 16 else rng.randint(17, 400)
    show(h=h)
    expect(s.call("valid_g", h), divisors(h), f"h={h}", f"valid_g({h})")
    if case == 0:
        s.raises("valid_g", [0], [0])


@step(2, "method_name", "MHA at g = h, MQA at g = 1 < h, GQA between", len(ALL_HG))
def check_method_name(s, case, rng, show):
    h, g = draw_hg(case, rng)
    show(h=h, g=g)
    expect(s.call("method_name", h, g), "MHA" if g == h else "MQA" if g == 1 else "GQA",
           f"h={h}, g={g}", f"method_name({h}, {g})")
    bad = bad_g(h, rng)
    s.raises("method_name", [h, bad], [h, bad])


@step(3, "kv_head", "query head i reads key/value head i // (h // g)", len(ALL_HG))
def check_kv_head(s, case, rng, show):
    h, g = draw_hg(case, rng)
    show(h=h, g=g)
    expect(s.calls("kv_head", [(i, h, g) for i in range(h)]), [ref_kv_head(i, h, g) for i in range(h)],
           f"h={h}, g={g}", f"[kv_head(i, {h}, {g}) for i in range({h})]")
    bad = bad_g(h, rng)
    s.raises("kv_head", [0, h, bad], [h, bad])
    s.raises("kv_head", [h, h, g], [h])


@step(4, "group_heads", "the query heads of each group, contiguous blocks", len(ALL_HG))
def check_group_heads(s, case, rng, show):
    h, g = draw_hg(case, rng)
    show(h=h, g=g)
    expect(s.call("group_heads", h, g), ref_group_heads(h, g), f"h={h}, g={g}", f"group_heads({h}, {g})")
    bad = bad_g(h, rng)
    s.raises("group_heads", [h, bad], [h, bad])


@step(5, "fold_kv_mean", "h heads fold to g, each the mean of its group, new lists", len(ALL_HG))
def check_fold(s, case, rng, show):
    h, g = draw_hg(case, rng)
    rows, cols = rng.randint(1, 3), rng.randint(1, 3)
    kv = rand_tensor(rng, h, rows, cols)
    show(kv=kv, g=g)
    where = f"h={h}, g={g}, kv [{h}][{rows}][{cols}]"
    expected = mean_heads(kv, g)                 # from the grader's own copy, before the call
    expect(s.call("fold_kv_mean", kv, g, fresh=True), expected, where, f"fold_kv_mean(kv, {g})")
    expect(s.call("fold_kv_mean", kv, h, fresh=True), kv, where, f"fold_kv_mean(kv, {h}) == kv, exactly",
           exact=True)
    bad = bad_g(h, rng)
    s.raises("fold_kv_mean", [kv, bad], [h, bad])


@step(6, "repeat_kv", "g heads repeat out to h, interleaved, not tiled", len(ALL_HG))
def check_repeat(s, case, rng, show):
    h, g = draw_hg(case, rng)
    kv = rand_tensor(rng, g, rng.randint(1, 3), rng.randint(1, 3))
    show(kv=kv, h=h)
    expect(s.call("repeat_kv", kv, h), expand_kv(kv, h), f"h={h}, g={g}", f"repeat_kv(kv, {h})",
           exact=True)


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
]


@step(7, "single_head_attention", "softmax(q k^T / sqrt(d)) v; causal; large scores; refusals",
      len(SINGLE_CASES) + 1)
def check_single(s, case, rng, show):
    if case == len(SINGLE_CASES):                # n > m keys cannot be causal
        q, k, v = rand_tensor(rng, 3, 2), rand_tensor(rng, 2, 2), rand_tensor(rng, 2, 1)
        show(q=q, k=k, v=v, causal=True)
        s.raises("single_head_attention", [q, k, v], [3, 2], kwargs={"causal": True})
        return
    if case < len(SINGLE_CASES):
        where, q, k, v, causal = SINGLE_CASES[case]
    else:
        causal = case % 2 == 1
        q, k, v, where = draw_qkv(rng, causal)
    show(q=q, k=k, v=v, causal=causal)
    expect(s.call("single_head_attention", q, k, v, causal=causal, fresh=True), attend(q, k, v, causal),
           f"{where}, causal={causal}", f"single_head_attention(q, k, v, causal={causal})")


def draw_heads(rng, case, h, kv_heads):
    """q [h][n][d], k and v [kv_heads][m][d or d_v], causal every other case."""
    n, m, d, dv = rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 3)
    causal = case % 2 == 1 and n <= m
    q = rand_tensor(rng, h, n, d)
    k, v = rand_tensor(rng, kv_heads, m, d), rand_tensor(rng, kv_heads, m, dv)
    return q, k, v, causal, f"n={n}, m={m}, d={d}, d_v={dv}, causal={causal}"


@step(8, "attention", "fold, repeat, attend: MHA at g = h to the last bit", 16)
def check_attention(s, case, rng, show):
    h = case + 1 if case < 16 else rng.randint(1, 16)
    q, k, v, causal, where = draw_heads(rng, case, h, h)
    show(q=q, k=k, v=v, causal=causal)
    for g in divisors(h):
        kc, vc = expand_kv(mean_heads(k, g), h), expand_kv(mean_heads(v, g), h)
        expected = [attend(q[i], kc[i], vc[i], causal) for i in range(h)]
        got = s.call("attention", q, k, v, g, causal=causal, fresh=True)
        expect(got, expected, f"h={h}, g={g}, {where}", f"attention(q, k, v, g={g}, causal={causal})")
    bad = bad_g(h, rng)
    s.raises("attention", [q, k, v, bad], [h, bad])
    try:                                         # the lab's claim, where single_head_attention works
        mha = [s.call("single_head_attention", q[i], k[i], v[i], causal=causal) for i in range(h)]
    except Failure:
        return
    if first_difference(mha, expected) is None:
        expect(got, mha, f"h={h}, {where}", "attention(q, k, v, g=h) must equal per-head "
               "single_head_attention bit for bit (==)", exact=True)


@step(9, "grouped_attention", "h query heads read g key/value heads by index", len(ALL_HG))
def check_grouped(s, case, rng, show):
    h, g = draw_hg(case, rng)
    q, k, v, causal, where = draw_heads(rng, case, h, g)
    show(q=q, k=k, v=v, causal=causal)
    kc, vc = expand_kv(k, h), expand_kv(v, h)
    expect(s.call("grouped_attention", q, k, v, causal=causal, fresh=True),
           [attend(q[i], kc[i], vc[i], causal) for i in range(h)], f"h={h}, g={g}, {where}",
           f"grouped_attention(q, k, v, causal={causal})")


def random_weights(rng, h, d_model, d, kv_heads=None):
    """w_q [h][d_model][d], w_k and w_v [kv_heads or h][d_model][d], w_o [h][d][d_model]."""
    kv = kv_heads or h
    return [rand_tensor(rng, h, d_model, d), rand_tensor(rng, kv, d_model, d),
            rand_tensor(rng, kv, d_model, d), rand_tensor(rng, h, d, d_model)]


def send_weights(s, fields, name="w"):
    """Make the module's Weights record from the grader's lists, kept in the worker as name."""
    w_q, w_k, w_v, w_o = fields
    s.call("Weights", w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, keep=name, value=False)
    return ref(name)


def draw_sizes(rng, case):
    """(h, g) as draw_hg gives them, and small n, d, d_model."""
    h, g = draw_hg(case, rng)
    n, d, d_model = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 4)
    return h, g, n, d, d_model, f"h={h}, g={g}, n={n}, d={d}, d_model={d_model}"


@step(10, "init_weights", "random MHA weights: shapes, scale, the same for the same seed", 8)
def check_init_weights(s, case, rng, show):
    h, _, _, d, d_model, _ = draw_sizes(rng, case * 7)
    seed = rng.randrange(1000)
    show(h=h, d_model=d_model, d=d, seed=seed)
    what = f"init_weights({h}, {d_model}, {d}, seed={seed})"
    w = s.call("init_weights", h, d_model, d, seed=seed)
    if not isinstance(w, Record):
        raise Failure(f"{what} must return a Weights record; got {kind(w)}")
    for name, shape, fan_in in (("w_q", (h, d_model, d), d_model), ("w_k", (h, d_model, d), d_model),
                                ("w_v", (h, d_model, d), d_model), ("w_o", (h, d, d_model), h * d)):
        t = getattr(w, name)
        bound = math.sqrt(3.0 / fan_in) * (1 + 1e-12)
        expect(t, nested(list(shape), 0.0), f"h={h}, d_model={d_model}, d={d}", f"{what}.{name}",
               rel=math.inf)                     # any values: the shape and the types
        if any(abs(x) > bound for x in _leaves(t)):
            raise Failure(f"{what}.{name} has a value beyond sqrt(3 / fan_in) = {bound:.4g}: "
                          f"uniform weights of variance 1 / fan_in stay within it")
    expect(s.call("init_weights", h, d_model, d, seed=seed), w, f"seed={seed}",
           f"{what} twice gives the same weights", exact=True)
    if h * d_model * d > 1 and s.call("init_weights", h, d_model, d, seed=seed + 1) == w:
        raise Failure(f"{what} and seed={seed + 1} gave the same weights")


def _leaves(t):
    if isinstance(t, (list, tuple)):
        for x in t:
            yield from _leaves(x)
    else:
        yield t


@step(11, "fold_weights", "the same weights with g K/V heads, by mean", len(ALL_HG))
def check_fold_weights(s, case, rng, show):
    h, g, _, d, d_model, where = draw_sizes(rng, case)
    fields = random_weights(rng, h, d_model, d)
    show(weights=fields, g=g)
    folded = s.call("fold_weights", send_weights(s, fields), g)
    w_q, w_k, w_v, w_o = fields
    expect([folded.w_q, folded.w_k, folded.w_v, folded.w_o],
           [w_q, mean_heads(w_k, g), mean_heads(w_v, g), w_o], where, f"fold_weights(weights, {g})")
    again = s.call("fold_weights", send_weights(s, [w_q, mean_heads(w_k, g), mean_heads(w_v, g), w_o],
                                                "folded"), g)
    expect(again.w_k, mean_heads(w_k, g), where, "fold_weights of weights that already have g heads")


@step(12, "prepare_weights", "weights checked, folded and transposed once", len(ALL_HG))
def check_prepare(s, case, rng, show):
    h, g, _, d, d_model, where = draw_sizes(rng, case)
    fields = random_weights(rng, h, d_model, d)
    show(weights=fields, g=g)
    p = s.call("prepare_weights", send_weights(s, fields), g)
    w_q, w_k, w_v, w_o = fields
    stacked = [row for head in w_o for row in head]                        # [h*d][d_model]
    expect([p.h, p.g, p.d_model, p.d], [h, g, d_model, d], where, "prepare_weights(...).h, g, d_model, d")
    expect([p.q_cols, p.k_cols, p.v_cols, p.o_cols],
           [[transpose(x) for x in w_q], [transpose(x) for x in mean_heads(w_k, g)],
            [transpose(x) for x in mean_heads(w_v, g)], transpose(stacked)], where,
           "prepare_weights(weights, g): q_cols, k_cols, v_cols, o_cols", loose=True)


@step(13, "layer", "one layer on MHA weights with g key/value heads, causal or not", len(ALL_HG))
def check_layer(s, case, rng, show):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    show(x=x, weights=fields, g=g)
    w = send_weights(s, fields)
    for causal in (False, True):
        expect(s.call("layer", x, w, g, causal=causal, fresh=True), ref_layer(x, *fields, g, causal),
               f"{where}, causal={causal}", f"layer(x, weights, g={g}, causal={causal})")


def ref_difference(a, b):
    """max |a - b|, ||a - b|| / ||b|| and a.b / (||a|| ||b||), with math.fsum."""
    fa, fb = list(_leaves(a)), list(_leaves(b))
    diff = [x - y for x, y in zip(fa, fb)]
    bb = math.fsum(y * y for y in fb)
    aa = math.fsum(x * x for x in fa)
    rel = math.sqrt(math.fsum(z * z for z in diff) / bb) if bb else (0.0 if not any(diff) else math.inf)
    cos = math.fsum(x * y for x, y in zip(fa, fb)) / math.sqrt(aa * bb) if aa and bb else math.nan
    return [max(map(abs, diff), default=0.0), rel, cos]


@step(14, "output_difference", "max abs, relative L2 and cosine of two outputs", 3)
def check_difference(s, case, rng, show):
    rows, cols = rng.randint(1, 3), rng.randint(1, 4)
    a = rand_tensor(rng, rows, cols)
    b = a if case == 0 else [[0.0] * cols for _ in range(rows)] if case == 1 else rand_tensor(rng, rows, cols)
    show(a=a, b=b)
    got = s.call("output_difference", a, b)
    expect([got.max_abs, got.rel_l2, got.cosine], ref_difference(a, b), f"[{rows}][{cols}]",
           "output_difference(a, b): max_abs, rel_l2, cosine")


@step(15, "kv_cache_elements", "2 x layers x g x length x head_dim x batch numbers", 0)
def check_cache_elements(s, case, rng, show):
    layers, g, length, d, batch = (rng.randint(1, 3), rng.randint(1, 4), rng.randint(0, 5),
                                   rng.randint(1, 4), rng.randint(1, 2))
    show(layers=layers, kv_heads=g, length=length, head_dim=d, batch=batch)
    built = nested([batch, layers, 2, g, length, d])     # a real cache, K and V
    expect(s.call("kv_cache_elements", layers, g, length, d, batch=batch), count_leaves(built),
           f"layers={layers}, kv_heads={g}, length={length}, head_dim={d}, batch={batch}",
           "kv_cache_elements(...) against the elements of a cache built as nested lists")


TERMS = ("q_proj", "k_proj", "v_proj", "scores", "weighted_sum", "o_proj")


@step(16, "attention_multiplies", "multiplications per term, full and causal, as counted", len(ALL_HG))
def check_multiplies(s, case, rng, show):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    causal = case % 2 == 1
    show(n=n, h=h, g=g, d=d, d_model=d_model, causal=causal)
    counter = Counter()
    ref_layer(rand_tensor(rng, n, d_model), *random_weights(rng, h, d_model, d), g, causal, counter)
    got = s.call("attention_multiplies", n, h, g, d, d_model, causal=causal)
    expect([getattr(got, t) for t in TERMS + ("total",)],
           [counter.counts.get(t, 0) for t in TERMS] + [sum(counter.counts.values())],
           f"{where}, causal={causal}", "attention_multiplies(...) " + ", ".join(TERMS + ("total",)))


@step(17, "block_multiplies", "a whole block's multiplications, its MLP included", 8)
def check_block(s, case, rng, show):
    h, g, n, d, d_model, where = draw_sizes(rng, case * 6)
    d_ff, matrices = rng.randint(1, 5), rng.choice([2, 3])
    show(n=n, h=h, g=g, d=d, d_model=d_model, d_ff=d_ff, mlp_matrices=matrices)
    counter = Counter()
    ref_layer(rand_tensor(rng, n, d_model), *random_weights(rng, h, d_model, d), g, True, counter)
    for _ in range(n):                          # the MLP, multiplied out one product at a time
        for _ in range(matrices):
            for _ in range(d_model * d_ff):
                counter.times("mlp", 1.0, 1.0)
    c = counter.counts
    got = s.call("block_multiplies", n, h, g, d, d_model, d_ff, mlp_matrices=matrices)
    expect([got.q_o_proj, got.k_v_proj, got.body, got.mlp, got.total],
           [c["q_proj"] + c["o_proj"], c["k_proj"] + c["v_proj"], c["scores"] + c["weighted_sum"],
            c["mlp"], sum(c.values())], f"{where}, d_ff={d_ff}, mlp_matrices={matrices}",
           "block_multiplies(...) q_o_proj, k_v_proj, body, mlp, total")


@step(18, "cache_table", "the cache for every divisor g, with ratios to MHA", 16)
def check_cache_table(s, case, rng, show):
    h = case + 1 if case < 16 else rng.randint(1, 16)
    layers, length, d = rng.randint(1, 2), rng.randint(1, 4), rng.randint(1, 3)
    show(h=h, layers=layers, length=length, head_dim=d)
    rows = s.call("cache_table", h, layers=layers, length=length, head_dim=d)
    sizes = {g: count_leaves(nested([layers, 2, g, length, d])) for g in divisors(h)}
    expect([[r.method, r.kv_heads, r.group_size, r.elements, r.ratio] for r in rows],
           [["MHA" if g == h else "MQA" if g == 1 else "GQA", g, h // g, sizes[g], sizes[g] / sizes[h]]
            for g in divisors(h)], f"h={h}, layers={layers}, length={length}, head_dim={d}",
           "cache_table rows (method, kv_heads, group_size, elements, ratio)")


@step(19, "multiplies_table", "the multiplications for every divisor g, with ratios to MHA", 16)
def check_multiplies_table(s, case, rng, show):
    h = case + 1 if case < 16 else rng.randint(1, 16)
    n, d, d_model, causal = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 4), case % 2 == 1
    show(n=n, h=h, d=d, d_model=d_model, causal=causal)
    rows = s.call("multiplies_table", n, h, d, d_model, causal=causal)
    counts = {}
    for g in divisors(h):
        counter = Counter()
        ref_layer(rand_tensor(rng, n, d_model), *random_weights(rng, h, d_model, d), g, causal, counter)
        counts[g] = sum(counter.counts.values())
    expect([[r.kv_heads, r.group_size, r.counts.total, r.ratio.total] for r in rows],
           [[g, h // g, counts[g], counts[g] / counts[h]] for g in divisors(h)],
           f"n={n}, h={h}, d={d}, d_model={d_model}, causal={causal}",
           "multiplies_table rows (kv_heads, group_size, counts.total, ratio.total)")


@step(20, "count_multiplies", "the tally kept while the code runs: every field", len(ALL_HG))
def check_tally(s, case, rng, show):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    show(x=x, weights=fields, g=g)
    w = send_weights(s, fields)
    counter = Counter()
    causal = case % 2 == 1
    ref_layer(x, *fields, g, causal, counter)
    used = [fields[0], mean_heads(fields[1], g), mean_heads(fields[2], g), fields[3]]
    tally = s.tally([("layer", [x, w, g], {"causal": causal})], TERMS + ("weight_reads",))
    expected = [counter.counts.get(t, 0) for t in TERMS]
    expect([tally[t] for t in TERMS] + [tally["weight_reads"]], expected + [count_leaves(used)],
           f"{where}, causal={causal}", "tally fields " + ", ".join(TERMS) + ", weight_reads after layer()")
    expect([getattr(tally["multiplies()"], t) for t in TERMS + ("total",)], expected + [sum(expected)],
           where, "tally.multiplies() after layer()")
    s.call("KVCache", g, d, keep="cache", value=False)
    decoding = Counter()
    ref_decode(x, *fields, g, decoding)
    tally = s.tally([("decode_step", [x_t, w, g, ref("cache")], {}) for x_t in x],
                    ("cache_reads", "weight_reads"))
    expect([tally["cache_reads"], tally["weight_reads"]],
           [decoding.counts["cache_reads"], decoding.counts["weight_reads"]], where,
           "tally fields cache_reads, weight_reads after decoding x row by row")


@step(21, "KVCache", "a cache of g heads: append, len, elements, nbytes, in order", 16)
def check_kv_cache(s, case, rng, show):
    g, d, n = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 5)
    capacity = [0, n, max(1, n // 2)][case % 3]
    rows = [(rand_tensor(rng, g, d), rand_tensor(rng, g, d)) for _ in range(n)]
    show(g=g, d=d, capacity=capacity, rows=rows)
    where = f"g={g}, d={d}, capacity={capacity}, {n} positions"
    s.call("KVCache", g, d, capacity=capacity, keep="cache", value=False)
    for k, v in rows:
        s.call("$cache.append", k, v, value=False)
    state = s.get("cache", "len", "elements", "nbytes", "k", "v")
    elements = count_leaves(nested([2, g, n, d]))
    expect([state["len"], state["elements"], state["nbytes"]], [n, elements, 8 * elements], where,
           "len(cache), cache.elements, cache.nbytes")
    for name, pick in (("k", 0), ("v", 1)):
        for j in range(g):
            held = state[name][j]
            if not isinstance(held, Other) or not held.type_name.startswith("array"):
                raise Failure(f"case {where}: cache.{name}[{j}] must be an array('d'); got {kind(held)}")
            expect(held.values[:n * d], [x for r in rows for x in r[pick][j]], where,
                   f"cache.{name}[{j}]: the rows appended, in order", exact=True)
    s.raises("$cache.append", [rows[0][0] + [[0.0] * d], rows[0][1]], [g])       # g + 1 heads
    expect(s.get("cache", "len")["len"], n, where, "len(cache) after a refused append")


@step(22, "decode_step", "decoding position by position equals a causal layer", len(ALL_HG))
def check_decode(s, case, rng, show):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    show(x=x, weights=fields, g=g)
    w = send_weights(s, fields)
    s.call("KVCache", g, d, keep="cache", value=False)
    got = [s.call("decode_step", x_t, w, g, ref("cache"), fresh=True) for x_t in x]
    expect(got, ref_layer(x, *fields, g, causal=True), where,
           "decode_step row by row against the reference causal layer")
    elements = count_leaves(nested([2, g, n, d]))
    state = s.get("cache", "len", "elements")
    expect([state["len"], state["elements"]], [n, elements], where, "len(cache), cache.elements")


@step(23, "decode_traffic", "cache and weight reads of n decode steps, batched", len(ALL_HG))
def check_traffic(s, case, rng, show):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    batch = [1, 2, 3][case % 3]
    show(n=n, h=h, g=g, d=d, d_model=d_model, batch=batch)
    fields = random_weights(rng, h, d_model, d)
    counters = []
    for _ in range(batch):                      # every sequence of the batch, decoded for real
        counter = Counter()
        ref_decode(rand_tensor(rng, n, d_model), *fields, g, counter)
        counters.append(counter.counts)
    got = s.call("decode_traffic", n, h, g, d, d_model, batch=batch)
    expect([got.cache_reads, got.weight_reads, got.multiplies],
           [sum(c["cache_reads"] for c in counters), counters[0]["weight_reads"],
            sum(sum(c.get(t, 0) for t in TERMS) for c in counters)],
           f"{where}, batch={batch}", "decode_traffic(...) cache_reads, weight_reads "
           "(read once per step for the whole batch), multiplies")


@step(24, "grouped_attention_backward", "gradients of q, k, v: a shared head sums its group's",
      len(ALL_HG))
def check_backward(s, case, rng, show):
    h, g = draw_hg(case, rng)
    q, k, v, causal, where = draw_heads(rng, case, h, g)
    d_out = rand_tensor(rng, h, len(q[0]), len(v[0][0]))
    show(q=q, k=k, v=v, d_out=d_out, causal=causal)
    got = s.call("grouped_attention_backward", q, k, v, d_out, causal=causal, fresh=True)
    if not isinstance(got, (list, tuple)) or len(got) != 3:
        raise Failure(f"case h={h}, g={g}: grouped_attention_backward must return (dq, dk, dv); "
                      f"got {_short(got)}")
    expect(list(got), list(ref_grouped_backward(q, k, v, d_out, causal)), f"h={h}, g={g}, {where}",
           "grouped_attention_backward(q, k, v, d_out): dq, dk, dv", rel=1e-8)


@step(25, "layer_backward", "gradients of one layer's x and weights, through the mean fold",
      len(ALL_HG))
def check_layer_backward(s, case, rng, show):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    folded = case % 3 == 2                       # weights that already have g K/V heads
    fields = random_weights(rng, h, d_model, d, g if folded else None)
    x, d_y, causal = rand_tensor(rng, n, d_model), rand_tensor(rng, n, d_model), case % 2 == 1
    show(x=x, weights=fields, g=g, d_y=d_y, causal=causal)
    got = s.call("layer_backward", x, send_weights(s, fields), g, d_y, causal=causal, fresh=True)
    if not isinstance(got, (list, tuple)) or len(got) != 2 or not isinstance(got[1], Record):
        raise Failure(f"case {where}: layer_backward must return (dx, a Weights record of "
                      f"gradients); got {_short(got)}")
    dx, grads = ref_layer_backward(x, *fields, g, d_y, causal)
    expect([got[0], got[1].w_q, got[1].w_k, got[1].w_v, got[1].w_o], [dx] + grads,
           f"{where}, causal={causal}, K/V heads given {len(fields[1])}",
           "layer_backward(x, weights, g, d_y): dx, grads.w_q, w_k, w_v, w_o", rel=1e-8)


# ---------------------------------------------------------------------------
# Grading: run the steps, report like a teacher.
# ---------------------------------------------------------------------------

def check_names():
    return [st.name for st in STEPS]


def run_step(st, student, seed, cases, only_case=None, fail_fast=False):
    """Run one step's cases; return its result dict.  Nothing the worker sends raises
    from here: an answer the grader cannot check fails its case, saying why."""
    ids = [only_case] if only_case is not None else range(st.systematic + cases)
    result = {"step": st.number, "name": st.name, "summary": st.summary, "status": "passed",
              "cases": 0, "cases_passed": 0, "message": "", "case": None, "inputs": None}
    for k in ids:
        shown = {}
        student.pending = []
        result["cases"] += 1
        try:
            st.fn(student, k, random.Random(f"{st.name}:{seed}:{k}"), shown.update)
            result["cases_passed"] += 1
            if only_case is not None:
                result["inputs"] = shown
        except OutOfTime:
            result.update(status="failed", message=BUDGET_NOTE + student.worker.budget_text,
                          case=None, inputs=None)
            return result
        except NotStarted as err:
            if result["cases_passed"] == 0:
                result.update(status="not started", message=str(err), case=k, inputs=shown)
                return result
            result.update(status="failed", message=f"case {k}: {err}", case=k, inputs=shown)
            return result
        except (Failure, Refused, Exception) as err:
            if not isinstance(err, (Failure, Refused)):
                err = f"the grader could not check this case's answer ({type(err).__name__}: {err})"
            if result["status"] == "passed":
                result.update(status="failed", message=str(err), case=k, inputs=shown)
            if student.worker.proc is None or fail_fast:   # it hung or died: one such case per step
                return result
        if student.worker.out_of_time():
            if result["status"] == "passed" and k != ids[-1]:
                result.update(status="failed", message=BUDGET_NOTE + student.worker.budget_text)
            return result
    return result


def not_graded(st, why):
    return {"step": st.number, "name": st.name, "summary": st.summary, "status": "failed",
            "cases": 0, "cases_passed": 0, "message": why, "case": None, "inputs": None}


def grade(path, seed, cases=DEFAULT_CASES, only=None, timeout=DEFAULT_TIMEOUT, case=None,
          fail_fast=False, budget=DEFAULT_BUDGET, seal=None, label=None):
    """Grade the module at path; return the list of step results.

    With fail_fast, each step stops at its first failing case.  The run ends
    after budget seconds: the steps not reached say so.  seal: how the
    worker is shut in (default: limits and a session of its own, on POSIX).

    Raises Refused when the module cannot be imported (or imports the grader).
    """
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
        return results
    finally:
        worker.stop()


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


def progress(results):
    """'5 of 23 steps done; next: step 6, repeat_kv'."""
    done = [r for r in results if r["status"] == "passed"]
    todo = [r for r in results if r["status"] != "passed"]
    text = f"{len(done)} of {len(results)} steps done"
    if todo:
        text += f"; next: step {todo[0]['step']}, {todo[0]['name']}"
    return text


def literal(value):
    text = repr(value)
    return text if len(text) <= 2000 else text[:1997] + "..."


def print_report(results, args, out=None):
    out = out or sys.stdout
    width = max((len(r["name"]) for r in results), default=0)
    for r in results:
        status = {"passed": "PASS", "failed": "FAIL", "not started": "----"}[r["status"]]
        if args.quiet and status != "FAIL":
            continue
        count = "not started" if status == "----" else f"{r['cases_passed']}/{r['cases']} cases"
        print(f"  step {r['step']:>2}  {status}  {r['name'].ljust(width)}  {count:<13} {r['summary']}",
              file=out)
        if status == "FAIL":
            for line in r["message"].splitlines():
                print(f"        {line}", file=out)
            if not r["message"].startswith(BUDGET_NOTE):
                print(f"        reproduce: {reproduce(args, r['name'], r['case'])}", file=out)
        if args.show and r["inputs"] and (status == "FAIL" or args.case is not None):
            print(f"        inputs of case {r['case'] if r['case'] is not None else args.case}:", file=out)
            for name, value in r["inputs"].items():
                print(f"          {name} = {literal(value)}", file=out)


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
# made private first, so the student's module (run as the user nobody) can
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
                        help=f"random cases per step, after the systematic ones (default {DEFAULT_CASES})")
    parser.add_argument("--only", default=None, metavar="NAMES",
                        help="grade only these steps, comma-separated (see --list)")
    parser.add_argument("--case", type=int, default=None, metavar="K",
                        help="run only case K of the one step given with --only")
    parser.add_argument("--show", action="store_true",
                        help="print the inputs of a failing case (or of --case) as Python literals")
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
                        help="with --sealed, as root: the worker's user (default nobody)")
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
    if args.cases < 0:
        parser.error(f"--cases must be at least 0; got {args.cases}")
    if not (0 < args.timeout <= 3600):
        parser.error(f"--timeout must be more than 0 and at most 3600 seconds; got {args.timeout:g}")
    if args.only is not None:
        names = [n.strip() for n in args.only.split(",")]
        unknown = [n or "''" for n in names if n not in check_names()]
        if unknown or not names:
            parser.error(f"no step named {', '.join(unknown)}; the steps are: {', '.join(check_names())}")
        args.only = names
    if args.case is not None and (not args.only or len(args.only) != 1 or args.case < 0):
        parser.error("--case K needs --only with one step name, and K at least 0")
    args.weight_map = {}
    if args.weights:
        try:
            with open(args.weights, encoding="utf-8") as f:
                args.weight_map = json.load(f)
            if not isinstance(args.weight_map, dict) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                    for v in args.weight_map.values()):
                raise ValueError("not an object of step name -> points")
        except (OSError, ValueError) as err:
            parser.error(f"--weights {args.weights}: {err}")
        unknown = sorted(set(args.weight_map) - set(check_names()))
        if unknown:
            parser.error(f"--weights {args.weights}: no step named {', '.join(unknown)}")
    return args


def emit(doc):
    json.dump(doc, sys.stdout, indent=2)
    print()


def write_out(path, doc):
    """Write doc to path whole or not at all (a temporary file beside it, then renamed)."""
    import tempfile
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".grader-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
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


def main(argv=None):
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
    if args.list:
        for st in STEPS:
            print(f"step {st.number:>2}  {st.name:<22} {st.summary}")
        return 0
    if args.starter:
        try:
            path = write_starter(args.starter)
        except OSError as err:
            print(f"grader: cannot write the starter: {err}", file=sys.stderr)
            return 2
        print(f"wrote {path}; grade it with: python grader.py --module {path}")
        return 0
    if args.autograder:
        try:
            path = write_autograder(args.autograder, args)
        except OSError as err:
            print(f"grader: cannot write the autograder: {err}", file=sys.stderr)
            return 2
        print(f"wrote {path}; upload it as the assignment's autograder on Gradescope")
        return 0
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(10 ** 6)
    label = "gqa.py" if args.module == DEFAULT_MODULE else args.module
    start = time.perf_counter()
    seal, results, why, partly = None, None, None, None
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
    except Exception as err:              # the grader's own fault: still one document
        why = f"cannot grade {label}: the grader failed ({type(err).__name__}: {err})"
    finally:
        if seal is not None:
            seal.close()
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
        print(f"grader: {why}", file=sys.stderr)
    else:
        print_report(results, args)
        print(progress(results))
        if args.verbose:
            print(f"graded in {time.perf_counter() - start:.2f} s of wall time")
        print(f"{passed} passed, {failed} failed")
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
