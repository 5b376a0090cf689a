"""What recognising the lab's classic mistakes costs a grade: a full grade of a module with one
failing step per part, with the recognition (gqa_grader.expected.mistakes.recognised) and without it.

    python benchmarks/mistakes.py [--repeats 5] [--cases 5] [--seed 1] [--modules named,unnamed]

Two modules are made from gqa.py, each failing one step in each part of the lab
(heads, layer, counting, decoding, backward):

  named     a classic mistake planted where it is made: group_heads strided, fold_weights
            keeping each group's first head, cache_table's ratio inverted (each recognised
            at its first failing case), decode_traffic
            without the factor 2 and
            grouped_attention_backward's gradients doubled (no mistake is known for either:
            nothing to try);
  unnamed   the worst case: answers that are no known mistake (attention's, fold_weights',
            kv_cache_elements' off by a factor; the same last two), so that each failing
            case asks every mistake of its check, up to the grader's limit of cases per step.

Each is graded whole, as `python grader.py --module PATH --seed SEED` grades it (the 25
steps, --cases hidden cases each), in this process's grader (the module in its worker),
with the recognition on and with it off (recognised() answering "none"), the runs
interleaved.  Prints, for each module, the median wall time of each, their ratio, and
the share of the "on" runs' time spent in recognised() itself (timed around each call).
Standard library only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gqa_grader.verdict import grading  # noqa: E402

# One failing step per part: (text in gqa.py, its replacement), each standing once there.
NAMED = [
    ("return [list(range(j * group, (j + 1) * group)) for j in range(g)]",
     "return [list(range(j, h, g)) for j in range(g)]"),
    ("    folded = _fold_weights(weights, g)\n",
     "    group = len(weights.w_k) // g\n"
     "    folded = weights._replace(w_k=[weights.w_k[j * group] for j in range(g)],\n"
     "                              w_v=[weights.w_v[j * group] for j in range(g)])\n"),
    ("elements / mha if mha else 1.0))", "mha / elements if mha else 1.0))"),
    ("cache_reads = 2 * g * d * positions * batch", "cache_reads = g * d * positions * batch"),
    ("    return _grouped_attention_backward(q, k, v, d_out, probs)",
     "    return _grouped_attention_backward(q, k, v, [[[2 * x for x in r] for r in m] for m in d_out], probs)"),
]
SCALED = """

_attention_as_written, _fold_weights_as_written = attention, fold_weights
_kv_cache_elements_as_written = kv_cache_elements


def attention(q, k, v, g, causal=False):
    return [[[1.5 * x for x in row] for row in head] for head in _attention_as_written(q, k, v, g, causal)]


def fold_weights(weights, g):
    folded = _fold_weights_as_written(weights, g)
    return folded._replace(w_k=[[[1.5 * x for x in row] for row in head] for head in folded.w_k])


def kv_cache_elements(*args, **kwargs):
    return 3 * _kv_cache_elements_as_written(*args, **kwargs) // 2
"""


def planted(source: str, changes) -> str:
    for old, new in changes:
        if source.count(old) != 1:
            raise SystemExit(f"benchmarks/mistakes.py: the text must stand once in gqa.py: {old!r}")
        source = source.replace(old, new)
    return source


def modules(folder: str) -> dict:
    """{name: path} of the two modules (the module's docstring)."""
    with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
        source = f.read()
    made = {"named": planted(source, NAMED), "unnamed": planted(source, NAMED[3:]) + SCALED}
    paths = {}
    for name, text in made.items():
        paths[name] = os.path.join(folder, name, "gqa.py")
        os.makedirs(os.path.dirname(paths[name]))
        with open(paths[name], "w", encoding="utf-8") as f:
            f.write(text)
    return paths


def timed_grade(path: str, seed: int, cases: int, on: bool) -> tuple:
    """(wall seconds, seconds in recognised(), the failing steps) of one full grade."""
    real, spent = grading.recognised, [0.0]

    def recognised(err):
        start = time.perf_counter()
        try:
            return real(err) if on else []
        finally:
            spent[0] += time.perf_counter() - start
    grading.recognised = recognised
    try:
        start = time.perf_counter()
        results = grading.grade(path, seed, cases=cases)
        return time.perf_counter() - start, spent[0], [r.name for r in results if r.status != "passed"]
    finally:
        grading.recognised = real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", type=int, default=grading.DEFAULT_CASES)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--modules", default="named,unnamed", help="which of the two modules (comma-separated)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for name, path in modules(folder).items():
            if name not in args.modules.split(","):
                continue
            runs = {True: [], False: []}
            for _ in range(args.repeats):
                for on in (True, False):                     # interleaved: the machine's load shared
                    runs[on].append(timed_grade(path, args.seed, args.cases, on))
            failing = runs[True][0][2]
            on, off = (statistics.median(s for s, _, _ in runs[k]) for k in (True, False))
            share = statistics.median(inside / s for s, inside, _ in runs[True])
            print(f"{name}: failing {', '.join(failing)}; a full grade ({args.cases} hidden cases a step, "
                  f"seed {args.seed}, {args.repeats} runs each, Python {sys.version.split()[0]}): "
                  f"median {on:.2f} s with the recognition, {off:.2f} s without, ratio {on / off:.3f}; "
                  f"recognised() itself {100 * share:.2f} % of the time with it")


if __name__ == "__main__":
    main()
