"""gqa_report: the lab's tables and report, written by the code.

    python -m gqa tables [--heads 8 --head-dim 128 --layers 32 --context 4096 --d-model 1024]

Every number printed here is computed by gqa: nothing is typed in.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

import gqa

# ---------------------------------------------------------------------------
# Formatting: aligned Markdown tables and Unicode bars.
# ---------------------------------------------------------------------------


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Return an aligned Markdown table; numbers are right-aligned."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    numeric = [all(_is_number(r[i]) for r in cells) and bool(cells) for i in range(len(headers))]

    def line(values):
        return "| " + " | ".join(v.rjust(w) if num else v.ljust(w)
                                 for v, w, num in zip(values, widths, numeric)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2))
                          for w, num in zip(widths, numeric)) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in cells])


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", "").rstrip("x%"))
    except ValueError:
        return False
    return True


_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: float, top: float, width: int = 40) -> str:
    """Return a bar of Unicode blocks, width characters for value = top."""
    if top <= 0 or value <= 0:
        return ""
    eighths = round(8 * width * min(value, top) / top)
    full, part = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[part] if part else "")


def bar_chart(labels: Sequence[str], values: Sequence[float], texts: Sequence[str],
              width: int = 40) -> str:
    """Return labelled bars, one per line, scaled to the largest value."""
    top = max(values, default=0.0)
    pad = max(map(len, labels), default=0)
    return "\n".join(f"{label.ljust(pad)}  {bar(v, top, width).ljust(width)}  {text}"
                     for label, v, text in zip(labels, values, texts))


def ratio(x: float) -> str:
    """Format a ratio to MHA."""
    return f"{x:.4g}"


# ---------------------------------------------------------------------------
# The two tables of the lab: what g changes, and what it does not.
# ---------------------------------------------------------------------------


def cache_markdown(h: int, layers: int, length: int, head_dim: int) -> str:
    """Return cache_table(...) as Markdown."""
    rows = gqa.cache_table(h, layers=layers, length=length, head_dim=head_dim)
    return markdown_table(
        ["method", "g (kv heads)", "h // g", "cache elements", "ratio to MHA"],
        [(r.method, r.kv_heads, r.group_size, f"{r.elements:,}", ratio(r.ratio)) for r in rows])


TERMS = ("q_proj", "k_proj", "v_proj", "scores", "weighted_sum", "o_proj", "total")


def multiplies_markdown(n: int, h: int, d: int, d_model: int, *, ratios: bool = False) -> str:
    """Return multiplies_table(...) as Markdown, one row per term, one column per g.

    With ratios=True each cell is the term's ratio to MHA instead of its count.
    """
    rows = gqa.multiplies_table(n, h, d, d_model)
    headers = ["term"] + [f"{r.method} g={r.kv_heads}" for r in rows]
    cells = [[term] + [ratio(getattr(r.ratio, term)) if ratios else f"{getattr(r.counts, term):,}"
                       for r in rows] for term in TERMS]
    return markdown_table(headers, cells)


def tables_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gqa tables",
        description="Print the KV-cache and multiplication tables for every valid g.")
    parser.add_argument("--heads", type=int, default=8, help="query heads h (default 8)")
    parser.add_argument("--head-dim", type=int, default=128, help="head dim d (default 128)")
    parser.add_argument("--layers", type=int, default=32, help="layers (default 32)")
    parser.add_argument("--context", type=int, default=4096,
                        help="positions: cache length and n (default 4096)")
    parser.add_argument("--d-model", type=int, default=None,
                        help="model width (default heads x head dim)")
    args = parser.parse_args(argv)
    d_model = args.d_model if args.d_model is not None else args.heads * args.head_dim
    try:
        cache = cache_markdown(args.heads, args.layers, args.context, args.head_dim)
        mult = multiplies_markdown(args.context, args.heads, args.head_dim, d_model)
    except (gqa.GQAError, TypeError) as err:
        parser.error(str(err))
    print(f"KV cache, {args.layers} layers x {args.context} positions, head dim {args.head_dim}:\n")
    print(cache)
    print(f"\nMultiplications of one layer over n={args.context} positions, d_model={d_model}:\n")
    print(mult)
    print("\nThe same, as a ratio to MHA:\n")
    print(multiplies_markdown(args.context, args.heads, args.head_dim, d_model, ratios=True))
    return 0


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa tables|report`."""
    if command == "tables":
        return tables_main(argv)
    raise SystemExit(f"gqa_report: unknown command {command!r}")


if __name__ == "__main__":
    sys.exit(gqa.main(["tables"] + sys.argv[1:]))
