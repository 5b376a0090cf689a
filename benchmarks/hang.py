"""How long a student's report takes when one of the module's steps never returns: at most
one call's timeout plus 10 s is the bar.

    python benchmarks/hang.py [--step output_difference] [--timeout 5] [--repeats 3] [--no-baseline]

The module is gqa.py with an endless loop put first in the body of --step's function
(a loop that its own `except Exception` cannot leave), and step 24,
grouped_attention_backward, not started, so that section 8 does not train (its
minute is the same with a hang or without).  Its report is written as `python -m gqa
report --module PATH --out FILE` writes it (in this process; the module runs in the
grader's worker), each call into the module given --timeout seconds (the command's
own is gqa_tools.report.child.CALL_TIMEOUT, 5 s); the same module without the loop is
reported too, interleaved (not with --no-baseline: CI's run, which shows that the benchmark
runs and that a report at the command's own sizes is written sealed, needs the loop's
report alone).  Prints the median, min and max wall time of each, the bar, and the
sections that name the step.  Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import os
import re
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gqa_tools import cli  # noqa: E402
from gqa_tools.report import child  # noqa: E402

ENDLESS = ["while True:", "    try:", "        len(())" if sys.version_info[:2] == (3, 10) else "        pass",
           "    except Exception:", "        pass"]        # 3.10: see lab.Watch


def first_line(source: str, name: str) -> tuple:
    """(the line number of the first statement after the docstring of function name, its indent)."""
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
    has_doc = isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    first = node.body[1] if has_doc else node.body[0]
    return first.lineno, first.col_offset


def module(source: str, hang: str = "") -> str:
    """gqa.py without step 24 (a starter's stub), with an endless loop first in hang's body."""
    lines = source.split("\n")
    changes = [("grouped_attention_backward", ['raise NotImplementedError("step 24")'])]
    changes += [(hang, ENDLESS)] if hang else []
    for name, code in sorted(changes, key=lambda change: -first_line(source, change[0])[0]):  # from the end
        at, indent = first_line(source, name)
        lines[at - 1:at - 1] = [" " * indent + line for line in code]
    return "\n".join(lines)


def report(path: str, out: str, timeout: float) -> tuple:
    """(wall seconds, status, the report's text) of one report of the module at path."""
    saved = child.CALL_TIMEOUT
    child.CALL_TIMEOUT = timeout
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            status = cli.main(["report", "--module", path, "--out", out])
    finally:
        child.CALL_TIMEOUT = saved
    seconds = time.perf_counter() - start
    with open(out, encoding="utf-8") as f:
        return seconds, status, f.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", default="output_difference", help="the function that never returns")
    parser.add_argument("--timeout", type=float, default=child.CALL_TIMEOUT, help="seconds a call may take")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-baseline", action="store_true",
                        help="report the module with the loop alone, not also the one without it")
    args = parser.parse_args()
    with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
        source = f.read()
    times = {"hangs": [], "returns": []}
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for kind, hang in (("hangs", args.step),) + ((("returns", ""),) if not args.no_baseline else ()):
            paths[kind] = os.path.join(folder, kind, "gqa.py")
            os.makedirs(os.path.dirname(paths[kind]))
            with open(paths[kind], "w", encoding="utf-8") as f:
                f.write(module(source, hang))
        text = ""
        for _ in range(args.repeats):
            for kind, path in paths.items():
                seconds, status, written = report(path, os.path.join(folder, kind, "r.md"), args.timeout)
                if status != 0:
                    raise SystemExit(f"benchmarks/hang.py: the report of {kind} exited {status}")
                times[kind].append(seconds)
                text = written if kind == "hangs" else text
    named = [m.group(1) for m in re.finditer(r"\n## (\d+)\. ", text)
             if f"did not return within {args.timeout:g} s: step" in text.split(m.group(0))[1].split("\n## ")[0]]
    hangs, returns = times["hangs"], times["returns"]
    baseline = (f"; without the loop {statistics.median(returns):.1f} s (min {min(returns):.1f}, "
                f"max {max(returns):.1f})" if returns else "")
    print(f"report --module of gqa.py with {args.step} never returning (calls given {args.timeout:g} s; "
          f"{args.repeats} runs, Python {sys.version.split()[0]}): median {statistics.median(hangs):.1f} s "
          f"(min {min(hangs):.1f}, max {max(hangs):.1f}){baseline}; the bar {args.timeout + 10:g} s; sections "
          f"naming the step: {', '.join(named) or 'none'}")


if __name__ == "__main__":
    main()
