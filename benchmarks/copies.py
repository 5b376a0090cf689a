"""How long --class's copy report takes: gqa_grader.teacher.copies.compare on a class of
distinct submissions, the starter as the base, the solution as the shipped one.

    python benchmarks/copies.py [--count 200] [--repeats 3] [--seed 1]

The class is made from gqa.py, one submission a student (random.Random(seed)): each
leaves a third of the functions and methods as the starter's stub
(NotImplementedError), and in each one it keeps it adds a line of its own before a
statement drawn at random; so every submission is distinct Python that parses, and
most pairs share most of their code (the solution's): the worst case, every pair
reported.  The starter, in each language, is the base.  Prints the median and the
range of the repeats' seconds (and the median of their CPU time: on a machine other
work shares, the seconds are more), and what the report found (groups, pairs,
submissions that are the solution, and that share part of it).
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

from gqa_grader.teacher import copies  # noqa: E402


def make_class(solution: str, count: int, seed: int) -> dict:
    """{name: source} of count distinct submissions (the module's docstring), each one
    Python that parses: a function's body (a top-level function's or a method's) is
    replaced whole, and a line is inserted before one of its statements."""
    lines = solution.splitlines()
    tree = ast.parse(solution)
    functions = [node for top in tree.body
                 for node in ([top] + (top.body if isinstance(top, ast.ClassDef) else []))
                 if isinstance(node, ast.FunctionDef) and node.body[0].lineno < node.end_lineno]
    rng = random.Random(seed)
    made = {}
    for i in range(count):
        text = list(lines)
        for node in sorted(functions, key=lambda n: n.lineno, reverse=True):   # from the end: lines keep their numbers
            indent = " " * node.body[0].col_offset
            if rng.random() < 1 / 3:
                text[node.body[0].lineno - 1:node.end_lineno] = [indent + 'raise NotImplementedError("not yet")']
            else:
                text.insert(rng.choice(node.body).lineno - 1, indent + f"_mark = {i} + len(str({i}))")
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
    from gqa_grader.steps import checks
    from gqa_grader.teacher import handout
    bases = handout.starters(solution, handout.given_steps([st.name for st in checks.STEPS]))
    sources = make_class(solution, args.count, args.seed)
    seconds, cpu, found = [], [], None
    for _ in range(args.repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        found = copies.compare(sources, base=bases, solution=solution)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    groups, pairs, solutions = found
    whole = sum(1 for share, _, _ in solutions if share >= copies.SOLUTION)
    print(f"{args.count} submissions (seed {args.seed}), Python {sys.version.split()[0]}: copy report "
          f"median {statistics.median(seconds):.2f} s (min {min(seconds):.2f}, max {max(seconds):.2f}, "
          f"{args.repeats} runs; median CPU time {statistics.median(cpu):.2f} s); {len(groups)} groups, "
          f"{len(pairs)} pairs, {whole} the solution, {len(solutions) - whole} sharing part of it")

if __name__ == "__main__":
    main()
