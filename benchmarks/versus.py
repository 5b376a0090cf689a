"""Time this gqa.py against another one, side by side in one process.

    git show b4f82dc:gqa.py > before.py       # any revision, any other gqa.py
    python benchmarks/versus.py before.py [--repeats 9] [--seed 0]

Loads both modules, builds one set of weights and one input from
random.Random, and times, interleaved (before, after, before, after, ...):

  layer        layer(x, weights, g) at h=8, d=32, d_model=256, n=64, every
               valid g in turn;
  decode       decoding the same 64 positions with decode_step, per token,
               each module the way its manual says: weights folded once
               (fold_weights) for a module without prepare_weights, prepared
               once (prepare_weights) and a cache with its capacity for one
               that has them;
  decode, raw  the same with plain MHA Weights handed to every decode_step.

Prints the median time of each and the ratio before / after of the medians
(and of the fastest runs, in brackets).  The outputs of both modules are
compared too: the ratio means nothing if they disagree.  Wall-clock times
on a shared machine: read the ratios.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from random import Random

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def workloads(mod, h: int, d: int, d_model: int, n: int, seed: int) -> dict:
    """The timed calls for one module, each returning its output."""
    w = mod.init_weights(h, d_model, d, seed=seed)
    rng = Random(f"input:{seed}")
    x = [[rng.uniform(-1.0, 1.0) for _ in range(d_model)] for _ in range(n)]   # [n][d_model]
    gs = mod.valid_g(h)
    prepare = getattr(mod, "prepare_weights", None)
    ready = {g: prepare(w, g) if prepare else mod.fold_weights(w, g) for g in gs}

    def cache(g):
        if prepare:
            return mod.KVCache(g, d, capacity=n)
        return mod.KVCache(g, d)

    def decode(weights_for):
        out = []
        for g in gs:
            c = cache(g)
            out.append([mod.decode_step(x_t, weights_for(g), g, c) for x_t in x])
        return out

    return {
        "layer": lambda: [mod.layer(x, w, g) for g in gs],
        "decode": lambda: decode(ready.get),
        "decode, raw": lambda: decode(lambda g: w),
    }, len(gs) * n


def close(a, b, tol=1e-9) -> bool:
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="the other gqa.py (for example the last release's)")
    parser.add_argument("--after", default=os.path.join(HERE, "gqa.py"),
                        help="the gqa.py to compare (default: this checkout's)")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--h", type=int, default=8)
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--n", type=int, default=64)
    args = parser.parse_args(argv)
    mods = {"before": load(args.before, "gqa_before"), "after": load(args.after, "gqa_after")}
    runs = {}
    for label, mod in mods.items():
        runs[label], tokens = workloads(mod, args.h, args.d, args.d_model, args.n, args.seed)
    for name in runs["after"]:
        if not close(runs["before"][name](), runs["after"][name]()):
            print(f"{name}: the two modules give different outputs", file=sys.stderr)
            return 1
    times = {(label, name): [] for label in runs for name in runs[label]}
    for _ in range(args.repeats):
        for name in runs["after"]:
            for label in ("before", "after"):
                start = time.perf_counter()
                runs[label][name]()
                times[(label, name)].append(time.perf_counter() - start)
    print(f"h={args.h} d={args.d} d_model={args.d_model} n={args.n}, every valid g; "
          f"median of {args.repeats} interleaved runs; Python {sys.version.split()[0]}")
    for name in runs["after"]:
        before, after = times[("before", name)], times[("after", name)]
        per = f" ({1e3 * statistics.median(after) / tokens:.3f} ms/token after)" if "decode" in name else ""
        print(f"  {name:<12} before {1e3 * statistics.median(before):8.1f} ms   after "
              f"{1e3 * statistics.median(after):8.1f} ms   speed-up "
              f"{statistics.median(before) / statistics.median(after):.2f}x "
              f"({min(before) / min(after):.2f}x fastest){per}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
