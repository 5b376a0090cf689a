"""gqa_tables: the lab's two tables for every valid g, on the command line.

    python -m gqa tables [--heads 8 --head-dim 128 --layers 32 --context 4096 --d-model 1024]

What g changes (the KV cache, from gqa.cache_table) and what it does not
(the multiplications of one layer, from gqa.multiplies_table), as counts
and as ratios to MHA, in Markdown.
"""

from __future__ import annotations

import argparse
from typing import Sequence

import gqa
from gqa_tools import cache_markdown, multiplies_markdown


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
        counts = multiplies_markdown(args.context, args.heads, args.head_dim, d_model)
        ratios = multiplies_markdown(args.context, args.heads, args.head_dim, d_model, ratios=True)
    except (gqa.GQAError, TypeError) as err:
        parser.error(str(err))
    print(f"KV cache, {args.layers} layer(s) x {args.context} positions, head dim {args.head_dim}:\n")
    print(cache)
    print(f"\nMultiplications of one layer over n={args.context} positions, d_model={d_model}:\n")
    print(counts)
    print("\nThe same, as a ratio to MHA:\n")
    print(ratios)
    return 0


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa tables`."""
    return tables_main(argv)
