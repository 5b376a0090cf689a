"""How close does gqa's attention run to the fastest pure-Python dot product?

    python benchmarks/kernels.py [--h 8] [--n 64] [--d 64] [--repeats 15] [--seed 0]

Prints, for one shape, multiply-accumulates per second (MAC/s) of:

  bare dot    [sum(map(mul, q_i, k_j)) for k_j in k] for every query row of
              every head, nothing else: the fastest dot product CPython has;
  attention   gqa.grouped_attention with g = h (scores, softmax, weighted sum);
  no hook     gqa's attention kernel with its tally lines removed, to show
              what the count_multiplies() hook costs when no tally is active;
  tallying    gqa.grouped_attention inside count_multiplies().

Each is timed `repeats` times, interleaved; the ratios use the medians
(and, in brackets, the fastest runs, which a busy machine disturbs least).  The
times are wall-clock on a shared machine: read the ratios, not the rates.
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import sys
import time
from operator import mul
from random import Random

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gqa  # noqa: E402


def unhooked_attend():
    """Return gqa._attend compiled without its `if _tally is not None:` block."""
    lines = inspect.getsource(gqa._attend).splitlines()
    start = next(i for i, line in enumerate(lines) if "if _tally is not None" in line)
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and len(lines[end]) - len(lines[end].lstrip()) > indent:
        end += 1
    namespace = dict(vars(gqa))
    exec("\n".join(lines[:start] + lines[end:]), namespace)
    return namespace["_attend"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--h", type=int, default=8)
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    h, n, d = args.h, args.n, args.d
    rng = Random(args.seed)
    tensor = lambda: [[[rng.uniform(-1, 1) for _ in range(d)] for _ in range(n)] for _ in range(h)]
    q, k, v = tensor(), tensor(), tensor()                 # [h][n][d] each
    v_cols = [list(zip(*vi)) for vi in v]                  # [h][d][n]
    attend = unhooked_attend()

    def bare():
        for qh, kh in zip(q, k):
            for qi in qh:
                [sum(map(mul, qi, kj)) for kj in kh]

    def tallying():
        with gqa.count_multiplies():
            gqa.grouped_attention(q, k, v)

    runs = {
        "bare dot": (bare, h * n * n * d),
        "attention": (lambda: gqa.grouped_attention(q, k, v), 2 * h * n * n * d),
        "no hook": (lambda: [attend(q[i], k[i], v_cols[i], False) for i in range(h)],
                    2 * h * n * n * d),
        "tallying": (tallying, 2 * h * n * n * d),
    }
    times = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, (fn, _) in runs.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    rate = {name: macs / statistics.median(times[name]) for name, (_, macs) in runs.items()}
    best = {name: macs / min(times[name]) for name, (_, macs) in runs.items()}
    print(f"shape: h={h} n=m={n} d={d}; median of {args.repeats} interleaved runs; "
          f"Python {sys.version.split()[0]}")
    for name in runs:
        print(f"  {name:<10} {rate[name] / 1e6:8.2f} M MAC/s   "
              f"(min {min(times[name]) * 1e3:7.1f} ms, max {max(times[name]) * 1e3:7.1f} ms)")
    print("ratios of medians (of fastest runs in brackets):")
    for label, a, b in (("attention / bare dot", "attention", "bare dot"),
                        ("hook inactive: attention / no hook", "attention", "no hook"),
                        ("hook tallying: tallying / no hook", "tallying", "no hook")):
        print(f"  {label:<36} {rate[a] / rate[b]:.3f}  ({best[a] / best[b]:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
