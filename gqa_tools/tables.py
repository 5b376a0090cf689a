"""gqa_tools.tables: the lab's tables for every valid g, on the command line.

    python -m gqa tables [--heads 8 --head-dim 128 --layers 32 --context 4096 --d-model 1024]
    python -m gqa tables --config examples/configs/llama-2-7b.json
    python -m gqa tables --heads 32 --head-dim 128 --d-model 4096 --d-ff 11008

What g changes (the KV cache, from cache_table) and what it does not (the
multiplications of one attention layer, from multiplies_table), as counts
and as ratios to MHA, in Markdown.  Given an MLP width (--d-ff, or a config
that has one), also the whole block per token (block_multiplies): the share
of the work that g changes.  --module PATH computes everything with another
gqa.py, a student's, in a child process with the grader's limits; in a
handout's folder, that is what it does by default, with the handout's gqa.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Iterator, Optional, Sequence

import gqa
from gqa_grader.language import i18n
from gqa_grader.language.i18n import _
from gqa_tools.counts import block_bars, block_markdown, block_rows, cache_markdown, multiplies_markdown
from gqa_tools.language import chosen_lang, default_said, speaking
from gqa_tools.referee import LAB, PROJECT, handout, module_missing, sealed

if TYPE_CHECKING:                       # the sizer, imported when a config.json is read (sizes)
    from gqa_tools.sizer import ModelShape

DEFAULTS = {"heads": 8, "head_dim": 128, "layers": 32, "context": 4096, "mlp_matrices": 3}


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = make_parser()
    args = parser.parse_args(argv)
    args.parser = parser
    return args


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gqa tables",
        description=_("Print the KV-cache and multiplication tables for every valid g, and the "
                      "whole block's multiplications when the MLP width is known."))
    add = parser.add_argument
    add("--config", metavar="PATH", default=None,
        help=_("take the sizes from a model's config.json (the options below override)"))
    add("--heads", type=int, help=_("query heads h (default 8)"))
    add("--head-dim", type=int, help=_("head dim d (default 128)"))
    add("--layers", type=int, help=_("layers, for the cache (default 32)"))
    add("--context", type=int, help=_("positions: cache length and n (default 4096)"))
    add("--d-model", type=int, help=_("model width (default heads x head dim)"))
    add("--d-ff", type=int, help=_("the MLP's width: adds the whole-block view"))
    add("--mlp-matrices", type=int, help=_("d_model x d_ff matrices in the MLP (default 3, as Llama's SwiGLU)"))
    add("--causal", action="store_true",
        help=_("count causal attention (a decoder's prefill) in the one-layer table"))
    add("--module", metavar="PATH", default=None,
        help=_("compute with this gqa.py instead of the one in this folder") if handout() else
        _("compute with this gqa.py (a student's) instead of the project's (in a handout: "
          "instead of the one in its folder)"))
    add("--lang", choices=i18n.LANGUAGES, default=None,
        help=_("the language of what the command prints: {languages}; {default}").format(
            languages=i18n.listed(), default=default_said()))
    return parser


def sizes(args: argparse.Namespace) -> tuple:
    """(shape of the config or None, the sizes to use); options override the config."""
    shape: Optional[ModelShape] = None
    if args.config:
        from gqa_tools.sizer import ModelShape
        shape = ModelShape.from_config(args.config)
    given = {"heads": shape.heads, "head_dim": shape.head_dim, "layers": shape.layers,
             "d_model": shape.hidden_size, "d_ff": shape.intermediate_size,
             "mlp_matrices": shape.mlp_matrices} if shape else {}
    for name in ("heads", "head_dim", "layers", "context", "d_model", "d_ff", "mlp_matrices"):
        if getattr(args, name) is not None:
            given[name] = getattr(args, name)
        given.setdefault(name, DEFAULTS.get(name))
        if given[name] is not None and given[name] < 1:
            raise gqa.GQAError(_("{option} must be positive; got {value}").format(
                option=f"--{name.replace('_', '-')}", value=given[name]))
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


def child_texts(module, s: dict, model_g: Optional[int], causal: bool,
                lang: Optional[str] = None) -> Iterator[dict]:
    """In the child process of --module (gqa_grader.run_in_child): the texts, in the parent's
    language lang, or why not."""
    if lang:
        i18n.use(lang)
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
        raise gqa.GQAError(module_missing(path))
    sealed("tables", path)
    try:
        for item in grader.run_in_child(path, "gqa_tools.tables:child_texts",
                                        [s, model_g, causal, i18n.language()],
                                        paths=[PROJECT],
                                        label=path, what=_("computing the tables"),
                                        item_timeout=CHILD_TIMEOUT, budget=2 * CHILD_TIMEOUT):
            if _texts_shaped(item):
                return item
            raise gqa.GQAError(_("--module {path}: the child process sent no tables").format(path=path))
    except (grader.Refused, grader.Failure) as err:
        raise gqa.GQAError(f"--module {path}: {err}") from None
    raise gqa.GQAError(_("--module {path}: the child process sent no tables").format(path=path))


CHILD_TIMEOUT = 60.0        # seconds the tables of another module may take
TEXTS = ("cache", "counts", "ratios", "block", "bars")       # what texts() returns


def _texts_shaped(item: object) -> bool:
    """Whether a child's item is texts()' dict, or its one-key not_implemented or usage_error:
    it comes from another process, whose module may have sent anything."""
    if not isinstance(item, dict):
        return False
    if len(item) == 1 and set(item) <= {"not_implemented", "usage_error"}:
        return all(isinstance(v, str) for v in item.values())
    return (set(item) == set(TEXTS) and all(isinstance(item[k], str) for k in TEXTS[:3])
            and all(item[k] is None or isinstance(item[k], str) for k in TEXTS[3:]))


def tables_main(argv: Sequence[str]) -> int:
    args = parse(argv)
    try:
        shape, s = sizes(args)
    except (gqa.GQAError, TypeError) as err:
        args.parser.error(str(err))
    model_g = shape.kv_heads if shape else None
    args.own = not args.module and handout() is not None          # a handout's: its own gqa.py, in the worker
    args.module = LAB if args.own else args.module
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
        print("gqa tables: " + _("{module}: a step it needs is not implemented yet: {what}").format(
            module="gqa.py" if args.own else args.module, what=out["not_implemented"]), file=sys.stderr)
        return 2
    print_tables(args, shape, s, out)
    return 0


def print_tables(args: argparse.Namespace, shape: Optional[ModelShape], s: dict, out: dict) -> None:
    """Print the tables computed (out), with the sizes s, in the language in use."""
    d, n = s["head_dim"], s["context"]
    if args.own:
        print(_("Computed by gqa.py, your module in this folder, in the grader's worker.") + "\n")
    elif args.module:
        print(_("Computed by {module} (given with --module), in the grader's worker.").format(
            module=args.module) + "\n")
    if shape:
        print(_("{name}: h={h}, g={g}, head dim {head_dim}, d_model {d_model}").format(
            name=shape.name, h=s["heads"], g=shape.kv_heads, head_dim=d, d_model=s["d_model"]) + "\n")
    print(_("KV cache, {layers} layer(s) x {n} positions, head dim {head_dim}:").format(
        layers=s["layers"], n=n, head_dim=d) + "\n")
    print(out["cache"])
    print("\n" + (_("Multiplications of one attention layer over n={n} positions, causal attention, "
                    "d_model={d_model}:") if args.causal else
                  _("Multiplications of one attention layer over n={n} positions, full (non-causal) "
                    "attention, d_model={d_model}:")).format(n=n, d_model=s["d_model"]) + "\n")
    print(out["counts"])
    print("\n" + _("The same, as a ratio to MHA:") + "\n")
    print(out["ratios"])
    if out["block"]:
        print("\n" + _("The whole block per token over {n} positions (causal), MLP of {matrices} x "
                       "{d_model} x {d_ff}:").format(n=n, matrices=s["mlp_matrices"], d_model=s["d_model"],
                                                     d_ff=s["d_ff"]) + "\n")
        print(out["block"])
        print()
        print(out["bars"])
    else:
        why = (_("the config gives no MLP width") if shape and not s["d_ff"] else
               _("the MLP of model type {name} is not known").format(name=repr(shape.name)) if shape
               else _("no --d-ff"))
        print("\n" + _("(No whole-block view: {why}; give --d-ff and --mlp-matrices.)").format(why=why))


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa tables`."""
    with speaking(chosen_lang(argv, make_parser())):
        return tables_main(argv)
