"""How long --class's copy report takes: gqa_grader.copies.compare on a class of
distinct submissions, the starter as the base, the solution as the shipped one.

    python benchmarks/copies.py [--count 200] [--repeats 3] [--seed 1]

The class is made from gqa.py, one submission a student (random.Random(seed)): each
leaves a third of the functions as the starter's stub (NotImplementedError), and in
each function it keeps it adds a line of its own at a random place; so every
submission is distinct, and most pairs share most of their code, as a class that
worked from one lab does.  Prints the median and the range of the repeats' seconds,
and what the report found (groups, pairs, solutions).
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gqa_grader import copies  # noqa: E402


def make_class(solution: str, count: int, seed: int) -> dict:
    """{name: source} of count distinct submissions (the module's docstring)."""
    lines = solution.splitlines()
    bodies = [(node.body[0].lineno, node.end_lineno, node.col_offset + 4)
              for node in ast.walk(ast.parse(solution))
              if isinstance(node, ast.FunctionDef) and node.body[0].lineno < node.end_lineno]
    rng = random.Random(seed)
    made = {}
    for i in range(count):
        text = list(lines)
        for first, last, indent in sorted(bodies, reverse=True):     # from the end: lines keep their numbers
            if rng.random() < 1 / 3:
                text[first - 1:last] = [" " * indent + 'raise NotImplementedError("not yet")']
            else:
                text.insert(rng.randrange(first, last + 1) - 1, " " * indent + f"_mark = {i} + len(str({i}))")
        made[f"student{i + 1:03d}"] = "\n".join(text) + "\n"
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
        solution = f.read()
    from gqa_grader import checks, handout
    base = handout.make_starter(solution, handout.given_steps([st.name for st in checks.STEPS]))
    sources = make_class(solution, args.count, args.seed)
    seconds, found = [], None
    for _ in range(args.repeats):
        start = time.perf_counter()
        found = copies.compare(sources, base=base, solution=solution)
        seconds.append(time.perf_counter() - start)
    groups, pairs, solutions = found
    print(f"{args.count} submissions (seed {args.seed}), Python {sys.version.split()[0]}: copy report "
          f"median {statistics.median(seconds):.2f} s (min {min(seconds):.2f}, max {max(seconds):.2f}, "
          f"{args.repeats} runs); {len(groups)} groups, {len(pairs)} pairs, {len(solutions)} the solution")


if __name__ == "__main__":
    main()
