"""gqa_tools.tables: the lab's tables for every valid g, on the command line.

    python -m gqa tables [--heads 8 --head-dim 128 --layers 32 --context 4096 --d-model 1024]
    python -m gqa tables --config examples/configs/llama-2-7b.json
    python -m gqa tables --heads 32 --head-dim 128 --d-model 4096 --d-ff 11008

What g changes (the KV cache, from cache_table) and what it does not (the
multiplications of one attention layer, from multiplies_table), as counts
and as ratios to MHA, in Markdown.  Given an MLP width (--d-ff, or a config
that has one), also the whole block per token (block_multiplies): the share
of the work that g changes.  --module PATH computes everything with another
gqa.py, a student's, in a child process with the grader's limits.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Iterator, Optional, Sequence

import gqa
from gqa_tools.models import ModelShape
from gqa_tools.common import block_bars, block_markdown, block_rows, cache_markdown, multiplies_markdown

DEFAULTS = {"heads": 8, "head_dim": 128, "layers": 32, "context": 4096, "mlp_matrices": 3}


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gqa tables",
        description="Print the KV-cache and multiplication tables for every valid g, and the "
                    "whole block's multiplications when the MLP width is known.")
    parser.add_argument("--config", metavar="PATH", default=None,
                        help="take the sizes from a model's config.json (the options below override)")
    parser.add_argument("--heads", type=int, help="query heads h (default 8)")
    parser.add_argument("--head-dim", type=int, help="head dim d (default 128)")
    parser.add_argument("--layers", type=int, help="layers, for the cache (default 32)")
    parser.add_argument("--context", type=int, help="positions: cache length and n (default 4096)")
    parser.add_argument("--d-model", type=int, help="model width (default heads x head dim)")
    parser.add_argument("--d-ff", type=int, help="the MLP's width: adds the whole-block view")
    parser.add_argument("--mlp-matrices", type=int,
                        help="d_model x d_ff matrices in the MLP (default 3, as Llama's SwiGLU)")
    parser.add_argument("--causal", action="store_true",
                        help="count causal attention (a decoder's prefill) in the one-layer table")
    parser.add_argument("--module", metavar="PATH", default=None,
                        help="compute with this gqa.py (a student's) instead of the project's")
    args = parser.parse_args(argv)
    args.parser = parser
    return args


def sizes(args: argparse.Namespace) -> tuple:
    """(shape of the config or None, the sizes to use); options override the config."""
    shape: Optional[ModelShape] = ModelShape.from_config(args.config) if args.config else None
    given = {"heads": shape.heads, "head_dim": shape.head_dim, "layers": shape.layers,
             "d_model": shape.hidden_size, "d_ff": shape.intermediate_size,
             "mlp_matrices": shape.mlp_matrices} if shape else {}
    for name in ("heads", "head_dim", "layers", "context", "d_model", "d_ff", "mlp_matrices"):
        if getattr(args, name) is not None:
            given[name] = getattr(args, name)
        given.setdefault(name, DEFAULTS.get(name))
        if given[name] is not None and given[name] < 1:
            raise gqa.GQAError(f"--{name.replace('_', '-')} must be positive; got {given[name]}")
    if given["d_model"] is None:
        given["d_model"] = given["heads"] * given["head_dim"]
    return shape, given


def texts(lab, s: dict, model_g: Optional[int], causal: bool) -> dict:
    """The tables' Markdown (and the block's bars) computed with lab: gqa or another module."""
    h, d, n = s["heads"], s["head_dim"], s["context"]
    out = {"cache": cache_markdown(h, s["layers"], n, d, lab=lab),
           "counts": multiplies_markdown(n, h, d, s["d_model"], causal=causal, lab=lab),
           "ratios": multiplies_markdown(n, h, d, s["d_model"], causal=causal, ratios=True, lab=lab),
           "block": None, "bars": None}
    if s["d_ff"] and s["mlp_matrices"]:
        block = block_rows(n, h, model_g, d, s["d_model"], s["d_ff"], s["mlp_matrices"], lab=lab)
        out["block"] = block_markdown(block, n)
        out["bars"] = block_bars([f"{r.method} g={r.g}" for r in block], block)
    return out


def child_texts(module, s: dict, model_g: Optional[int], causal: bool) -> Iterator[dict]:
    """In the child process of --module (gqa_grader.run_in_child): the texts, or why not."""
    try:
        yield texts(module, s, model_g, causal)
    except NotImplementedError as err:
        yield {"not_implemented": str(err)}
    except (ValueError, TypeError) as err:      # the module's GQAError is a ValueError
        yield {"usage_error": str(err)}


def texts_from_child(path: str, s: dict, model_g: Optional[int], causal: bool) -> dict:
    """texts() computed with the gqa.py at path in a sandboxed child process (the grader's
    worker, its limits and deadlines); raise GQAError saying why when it cannot be."""
    import gqa_grader as grader
    if not os.path.isfile(path):
        raise gqa.GQAError(f"--module {path}: no such file")
    try:
        for item in grader.run_in_child(path, "tables", [s, model_g, causal],
                                        paths=[os.path.dirname(os.path.dirname(os.path.abspath(__file__)))],
                                        label=path, what="computing the tables",
                                        item_timeout=CHILD_TIMEOUT, budget=2 * CHILD_TIMEOUT):
            if isinstance(item, dict):
                return item
    except grader.Refused as err:
        raise gqa.GQAError(f"--module {path}: {err}") from None
    except grader.Failure as err:
        raise gqa.GQAError(f"--module {path}: {err}") from None
    raise gqa.GQAError(f"--module {path}: the child process sent no tables")


CHILD_TIMEOUT = 60.0        # seconds the tables of another module may take


def tables_main(argv: Sequence[str]) -> int:
    args = parse(argv)
    try:
        shape, s = sizes(args)
    except (gqa.GQAError, TypeError) as err:
        args.parser.error(str(err))
    h, d, n = s["heads"], s["head_dim"], s["context"]
    model_g = shape.kv_heads if shape else None
    try:
        out = (texts_from_child(args.module, s, model_g, args.causal) if args.module
               else texts(gqa, s, model_g, args.causal))
    except gqa.GQAError as err:
        print(f"gqa tables: {err}", file=sys.stderr)
        return 2
    except TypeError as err:
        args.parser.error(str(err))
    if "usage_error" in out:
        args.parser.error(str(out["usage_error"]))
    if "not_implemented" in out:
        print(f"gqa tables: {args.module}: a step it needs is not implemented yet: "
              f"{out['not_implemented']}", file=sys.stderr)
        return 2
    cache, counts, ratios = out["cache"], out["counts"], out["ratios"]
    block = out["block"]
    kind = "causal attention" if args.causal else "full (non-causal) attention"
    if args.module:
        print(f"Computed by {args.module} (given with --module), in the grader's worker.\n")
    if shape:
        print(f"{shape.name}: h={h}, g={shape.kv_heads}, head dim {d}, d_model {s['d_model']}\n")
    print(f"KV cache, {s['layers']} layer(s) x {n} positions, head dim {d}:\n")
    print(cache)
    print(f"\nMultiplications of one attention layer over n={n} positions, {kind}, "
          f"d_model={s['d_model']}:\n")
    print(counts)
    print("\nThe same, as a ratio to MHA:\n")
    print(ratios)
    if block:
        print(f"\nThe whole block per token over {n} positions (causal), MLP of "
              f"{s['mlp_matrices']} x {s['d_model']} x {s['d_ff']}:\n")
        print(block)
        print()
        print(out["bars"])
    else:
        why = ("the config gives no MLP width" if shape and not s["d_ff"] else
               f"the MLP of model type {shape.name!r} is not known" if shape else "no --d-ff")
        print(f"\n(No whole-block view: {why}; give --d-ff and --mlp-matrices.)")
    return 0


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa tables`."""
    return tables_main(argv)
