"""How close does gqa's attention run to its own dot-product kernel?

    python benchmarks/kernels.py [--h 8] [--n 64] [--d 64] [--repeats 15] [--seed 0]

Every multiplication in gqa goes through one kernel, the dot product of x with
each row of a matrix: math.sumprod on Python 3.12+ and sum(map(mul, row, x))
before.  This benchmark times gqa's public functions only; the kernel, and a
plain attention built on it, it writes out itself (below), the same arithmetic
as gqa's.  For one shape it prints multiply-accumulates per second (MAC/s) of:

  roof        the kernel over every query row of every head against its keys,
              nothing else: the scores alone, as fast as the kernel goes;
  attention   gqa.grouped_attention with g = h (scores, softmax, weighted sum);
  tallying    the same inside gqa.count_multiplies();
  plain       attention written here on the kernel (scores, softmax, weighted
              sum, no checks), equal to gqa's to the last bit;
  3.11-style  the same plain attention on the kernel of Python 3.9-3.11 (on
              those Pythons it is the same kernel, and the ratio is 1 up to noise).

Each is timed `repeats` times, interleaved; the ratios use the medians (and,
in brackets, the fastest runs, which a busy machine disturbs least).  The
times are wall-clock on a shared machine: read the ratios, not the rates.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from operator import mul
from random import Random

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gqa  # noqa: E402


def dots_311(rows, x):
    """The kernel of Python 3.9-3.11: [row . x for row in rows]."""
    return [sum(map(mul, row, x)) for row in rows]


def dots_sumprod(rows, x):
    """The kernel of Python 3.12+: [row . x for row in rows], one C loop each."""
    sumprod = math.sumprod
    return [sumprod(row, x) for row in rows]


KERNEL = dots_sumprod if hasattr(math, "sumprod") else dots_311      # gqa's, on this Python


def plain_attention(dots, q, k, v):
    """softmax(q k^T / sqrt(d)) v per head on the kernel dots, g = h, not causal:
    q, k, v [h][n][d] -> [h][n][d], gqa's order of operations without its checks."""
    out = []
    for qh, kh, vh in zip(q, k, v):
        scale, v_cols = 1.0 / math.sqrt(len(qh[0])), list(zip(*vh))      # v^T: [d][m]
        rows = []
        for qi in qh:
            s = dots(kh, qi)                                   # [m], the scores before the scale
            top = max(s)
            e = [math.exp((x - top) * scale) for x in s]
            z = sum(e)
            rows.append([x / z for x in dots(v_cols, e)])     # [d]
        out.append(rows)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--h", type=int, default=8)
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    h, n, d = args.h, args.n, args.d
    rng = Random(f"kernels:{args.seed}")
    tensor = lambda: [[[rng.uniform(-1, 1) for _ in range(d)] for _ in range(n)] for _ in range(h)]
    q, k, v = tensor(), tensor(), tensor()                 # [h][n][d] each
    if plain_attention(KERNEL, q, k, v) != gqa.grouped_attention(q, k, v):
        print("the plain attention here is not gqa's to the last bit: the ratios would "
              "compare two computations", file=sys.stderr)
        return 1

    def roof():
        for qh, kh in zip(q, k):
            for qi in qh:
                KERNEL(kh, qi)

    def tallying():
        with gqa.count_multiplies():
            gqa.grouped_attention(q, k, v)

    runs = {
        "roof": (roof, h * n * n * d),
        "attention": (lambda: gqa.grouped_attention(q, k, v), 2 * h * n * n * d),
        "tallying": (tallying, 2 * h * n * n * d),
        "plain": (lambda: plain_attention(KERNEL, q, k, v), 2 * h * n * n * d),
        "3.11-style": (lambda: plain_attention(dots_311, q, k, v), 2 * h * n * n * d),
    }
    times = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, (fn, _) in runs.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    rate = {name: macs / statistics.median(times[name]) for name, (_, macs) in runs.items()}
    best = {name: macs / min(times[name]) for name, (_, macs) in runs.items()}
    kernel = "math.sumprod" if KERNEL is dots_sumprod else "sum(map(mul, a, b))"
    print(f"shape: h={h} n=m={n} d={d}; median of {args.repeats} interleaved runs; "
          f"Python {sys.version.split()[0]}, kernel {kernel}")
    for name in runs:
        print(f"  {name:<10} {rate[name] / 1e6:8.2f} M MAC/s   "
              f"(min {min(times[name]) * 1e3:7.1f} ms, max {max(times[name]) * 1e3:7.1f} ms)")
    print("ratios of medians (of fastest runs in brackets):")
    for label, a, b in (("attention / roof", "attention", "roof"),
                        ("tallying / attention", "tallying", "attention"),
                        ("attention / plain (the checks' cost)", "attention", "plain"),
                        ("speed-up over the 3.11-style kernel", "plain", "3.11-style")):
        print(f"  {label:<36} {rate[a] / rate[b]:.3f}  ({best[a] / best[b]:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
