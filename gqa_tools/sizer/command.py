"""gqa_tools.sizer.command: size a real model's KV cache from its config.json, on the command line.

    python -m gqa config examples/configs/llama-2-70b.json --context 4096 --memory 80GiB

Which method the model uses, what a token of context costs, how many requests
fit in the memory left, what happens on N tensor-parallel devices, and (as a
roofline model, not a measurement) how fast it could decode: the sizer's
answers (summary.py) as one table, or as JSON with exact bytes.  The cache's
dtype is the config's (kv_cache_dtype, a quantization config's KV scheme)
unless --dtype says otherwise, and the output says which; the weights come
from --weights (a size, a model folder or its model.safetensors.index.json)
or the index beside the config.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gqa
from gqa import GQAError
from gqa_tools.common import human_bytes, text_table
from gqa_tools.sizer.files import INDEX, checkpoint_bytes, config_path
from gqa_tools.sizer.shape import ModelShape
from gqa_tools.sizer.summary import HARDWARE, summarize
from gqa_tools.sizer.units import DTYPE_BYTES, dtype_bytes, parse_bandwidth, parse_flops, parse_size

# ---------------------------------------------------------------------------
# The table: a headline, the sizes by method, and the notes.
# ---------------------------------------------------------------------------

def render(s: Dict[str, Any]) -> str:
    """The summary as a compact, aligned table with its notes; warnings on the first lines."""
    m, st, cols = s["model"], s["settings"], s["columns"]

    def each(cell, estimate: bool = False) -> List[str]:
        """One cell per column, or 'refused' where tensor parallelism (or the estimate) refused it."""
        return [cell(c) if "error" not in c["tp"] and not (estimate and "error" in c["decode"])
                else "refused" for c in cols]

    rules = {g["rule"] for g in m["groups"]}
    rows = [("bytes per token", [human_bytes(c["bytes_per_token"]) for c in cols])]
    if "cross" in rules:
        rows.append(("bytes per source token", [human_bytes(c["bytes_per_source_token"]) for c in cols]))
    if "image" in rules:
        rows.append(("bytes per image token", [human_bytes(c["bytes_per_image_token"]) for c in cols]))
    rows.append(("bytes per request", [human_bytes(c["bytes_per_request"]) for c in cols]))
    if m["heads"]:
        rows.append(("ratio to MHA", [f"{c['ratio_to_mha']:.4g}" if c["ratio_to_mha"] is not None else "-"
                                      for c in cols]))
    if st["tp"] > 1 and m["heads"]:
        rows += [(f"kv heads per device (tp={st['tp']})",
                  each(lambda c: "latent" if c["method"] == "MLA" else "by layer" if m["per_layer"]
                       else str(c["tp"]["kv_heads_per_device"]))),
                 ("each kv head held by", each(lambda c: "by layer" if m["per_layer"] and c["method"] != "MLA"
                                               else f"{c['tp']['replication']} device(s)")),
                 ("cache per device", each(lambda c: human_bytes(c["tp"]["bytes_per_device"]))),
                 ("cache, all devices", each(lambda c: human_bytes(c["tp"]["bytes_all_devices"])))]
    if st["memory"] is not None:
        rows.append(("requests that fit", each(lambda c: f"{c['max_requests']:,}" if c["max_requests"] is not None
                                                else "no KV cache to limit them")))
    if "hardware" in s:
        rows += [("decode step (roofline)", each(lambda c: f"{c['decode']['seconds'] * 1e3:.3g} ms", True)),
                 ("bound by", each(lambda c: c["decode"]["bound"], True))]
    plain = ("MLA", "no KV cache")
    head = [""] + [f"this model, {c['method']}" + (f" g={c['kv_heads']}" if c["method"] not in plain and
                                                   not m["per_layer"] else "")
                   if c["label"] == "model" else
                   ("as MHA" if c["label"] == "as MHA" else f"{c['method']} g={c['kv_heads']}")
                   for c in cols]
    warnings = [n for n in m["notes"] if n.startswith(("WARNING", "NOTE"))]
    sizes = f"context {st['context']:,} ({st['context_from']})"
    if "cross" in rules:
        sizes += f", source {st['source']:,} ({st['source_from']})"
    if "image" in rules:
        sizes += f", image tokens {st['image_tokens']:,} ({st['image_from']})"
    each_value = f"{st['bytes_per_value']} byte{'s' if st['bytes_per_value'] > 1 else ''} per value"
    return "\n".join(warnings + [headline(s),
                                 f"KV cache in {st['dtype']} ({each_value}, {st['dtype_from']}), "
                                 f"{sizes}, batch {st['batch']}; exact bytes with --json", "",
                                 text_table(head, [[label] + values for label, values in rows]), ""]
                     + [f"- {n}" for n in notes(s)])


def headline(s: Dict[str, Any]) -> str:
    m = s["model"]
    groups = [g for g in m["groups"] if g["rule"] != "draft"]
    if groups and all(g["rule"] == "encoder" for g in groups):
        return (f"{m['name']}: no KV cache: an encoder-only model ({groups[0]['note'].split(' ')[0]}), "
                f"{m['layers']} layers; it reads its input whole and generates nothing; 0 bytes per token")
    if groups and all(g["rule"] == "bidirectional" for g in groups):
        return (f"{m['name']}: no KV cache: {groups[0]['note'].split(' ')[0]}, {m['layers']} layers, attends "
                f"both ways over the whole sequence at every step, so nothing carries over; 0 bytes per token")
    if not m["heads"]:
        return (f"{m['name']}: no KV cache: {m['layers']} layers, each holding a state of fixed size "
                f"per sequence; 0 bytes per token")
    if s["method"] == "MLA" and len(groups) == 1:
        latent = groups[0]["latent"]
        return (f"{m['name']}: MLA, {m['layers']} layers, h={m['heads']} query heads; each layer "
                f"caches one latent of {latent} values per token (kv_lora_rank + qk_rope_head_dim), "
                f"shared by all heads")
    if s["method"] == "MLA":
        return (f"{m['name']}: MLA, {m['layers']} layers ({s['layer_groups']}), h={m['heads']} query heads; "
                f"each MLA layer caches one latent per token (kv_lora_rank + qk_rope_head_dim)")
    kinds = "" if len(groups) == 1 and groups[0]["rule"] == "full" else f" ({s['layer_groups']})"
    if m["per_layer"]:
        return (f"{m['name']}: {s['method']}, {m['layers']} layers{kinds}, query and key/value heads "
                f"by layer, head dim {m['head_dim']}, hidden size {m['hidden_size']}")
    each_head = "s" if m["heads"] > m["kv_heads"] else ""
    return (f"{m['name']}: {s['method']}, {m['layers']} layers{kinds}, h={m['heads']} query heads, "
            f"g={m['kv_heads']} key/value heads ({m['heads'] // m['kv_heads']} query head{each_head} "
            f"each), head dim {m['head_dim']}, hidden size {m['hidden_size']}")


def notes(s: Dict[str, Any]) -> List[str]:
    m, st, cols = s["model"], s["settings"], s["columns"]
    out = [n for n in m["notes"] if not n.startswith(("WARNING", "NOTE"))]
    for g in m["groups"]:
        if g["rule"] in ("sliding", "chunked"):
            out.append(f"{g['layers']} {g['rule']} layers hold at most {g['window']:,} positions; "
                       f"'bytes per token' is what a token adds while the context is shorter")
        if g["rule"] == "none":
            out.append(f"{g['layers']} {g['note']} hold a state of fixed size instead of a KV cache; "
                       f"it is not counted here")
        if g["rule"] == "shared":
            out.append(f"{g['layers']} layers {g['note']} ({g['fields'][0]}): they add no cache of their own")
        if g["rule"] == "draft":
            out.append(f"{g['layers']} multi-token-prediction layers ({', '.join(g['fields'])}) run only "
                       f"to draft tokens for speculative decoding: not counted")
        if g["rule"] == "cross":
            out.append(f"cross-attention: {g['layers']} decoder layers hold K and V of every source "
                       f"token ({st['source']:,}, {st['source_from']}); 'bytes per token' is "
                       f"a generated token's self-attention alone")
        if g["rule"] == "image":
            out.append(f"cross-attention to the image: {g['layers']} layers hold K and V of "
                       f"{st['image_tokens']:,} image tokens ({st['image_from']}; --image-tokens), "
                       f"not of the text's tokens")
    if s["method"] == "MLA":
        out.append("as MHA: the same layers with 2 x h x head_dim values per token, the comparison "
                   "DeepSeek-V2 makes; under tensor parallelism every device holds the whole latent")
    if st["memory"] is not None:
        out.append(f"requests that fit: ({human_bytes(st['memory'])} per device - "
                   f"{human_bytes(st['weights'])} of weights / {st['tp']} device(s)) // one "
                   f"request's cache per device"
                   + ("; give --weights (a size, a model folder or its " + INDEX + ") for the weights' share"
                      if not st["weights"] else "" if st["weights_from"] == "given with --weights"
                      else f"; the weights from {st['weights_from']}"))
    out += [f"{c['method']}{'' if m['per_layer'] else ' g=' + str(c['kv_heads'])}: {c['tp']['error']}"
            for c in cols if "error" in c["tp"]]
    out += [c["decode"]["error"] for c in cols if "error" in c.get("decode", {})][:1]
    if "hardware" in s:
        hw = s["hardware"]
        out.append(f"decode step: a roofline model, not a measurement: the larger of bytes read "
                   f"/ {hw['bandwidth'] / 1e9:,.0f} GB/s and FLOPs / {hw['flops'] / 1e12:,.0f} "
                   f"TFLOP/s ({hw['source']}), for one new token in each of the request's "
                   f"{st['batch']} sequence(s)"
                   + ("" if st["weights"] else "; without --weights it counts the cache alone"))
    else:
        out.append("give --bandwidth and --flops (or --hardware NAME) for a decode-time estimate")
    return out


# ---------------------------------------------------------------------------
# The command line.
# ---------------------------------------------------------------------------

OVERRIDES = ("layers", "heads", "kv_heads", "head_dim", "window")


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gqa config",
        description="Size a model's KV cache from its config.json: method, the rule of each group "
                    "of layers, bytes per token and per request, requests that fit, tensor "
                    "parallelism, and a roofline decode estimate.")
    parser.add_argument("path", help="a config.json (for example examples/configs/mistral-7b-v0.1.json), "
                                     "or a model folder holding one")
    parser.add_argument("--context", type=int, default=None,
                        help="tokens per request (default: the model's own maximum, else 4096)")
    parser.add_argument("--batch", type=int, default=1, help="sequences per request (default 1)")
    parser.add_argument("--source", "--source-length", type=int, default=None, dest="source",
                        help="encoder-decoder models: the encoder's length, source tokens per sequence "
                             "(default: the model's own, as Whisper's max_source_positions or SpeechT5's "
                             "max_speech_positions, else --context)")
    parser.add_argument("--image-tokens", type=int, default=None,
                        help="vision cross-attention: image tokens per sequence (default: one image "
                             "as the config sizes it)")
    parser.add_argument("--dtype", default=None,
                        help=f"cache dtype: {', '.join(DTYPE_BYTES)} (default: the one the config names, "
                             f"kv_cache_dtype or quantization_config's KV scheme, else bf16)")
    parser.add_argument("--memory", default=None, help="free memory per device, e.g. 80GiB")
    parser.add_argument("--weights", default=None,
                        help=f"the weights, all devices: a size (e.g. 140GB), a model folder or its {INDEX} "
                             f"(its metadata.total_size); default: the {INDEX} beside the config, else 0")
    parser.add_argument("--weight-dtype", default="bf16", help="dtype of the weights, to count parameters (default bf16)")
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel devices (default 1)")
    parser.add_argument("--bandwidth", default=None, help="memory bandwidth per device, e.g. 2039GB/s")
    parser.add_argument("--flops", default=None, help="compute rate per device, e.g. 312TFLOPS")
    parser.add_argument("--hardware", choices=sorted(HARDWARE), default=None,
                        help="named bandwidth and compute rate, with their source")
    for name in OVERRIDES:
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=None,
                            help=f"set {name.replace('_', ' ')} by hand, for a config that cannot be read")
    parser.add_argument("--ignore", action="append", default=[], metavar="FIELD",
                        help="pass over FIELD, a key of the config that no rule reads and that the model's "
                             "code leaves out of the cache: a warning on the first line (never a field "
                             "a rule reads and cannot size)")
    parser.add_argument("--json", action="store_true", help="print the same as JSON, exact bytes")
    return parser


def _check_counts(args: argparse.Namespace) -> None:
    for name in ("batch", "tp", "context", "source", "image_tokens") + OVERRIDES:
        value = getattr(args, name)
        if value is not None and not 1 <= value <= 10 ** 12:
            raise GQAError(f"--{name.replace('_', '-')} must be between 1 and 10**12; "
                           f"got {str(value)[:20]}{'...' if len(str(value)) > 20 else ''}")


def config_main(argv: Sequence[str]) -> int:
    args = make_parser().parse_args(argv)
    try:
        _check_counts(args)
        overrides = {k: getattr(args, k) for k in OVERRIDES if getattr(args, k) is not None}
        shape = ModelShape.from_config(args.path, ignore=args.ignore, overrides=overrides)
        if args.context is not None:
            context, context_from = args.context, "given with --context"
        elif shape.max_context:
            context, context_from = shape.max_context, f"the model's {shape.max_context_field}"
        else:
            context, context_from = 4096, "the config gives no maximum; the default 4096"
        if args.source is not None:
            source_from = "given with --source"
        elif shape.source_tokens:
            source_from = f"the model's {shape.source_field}"
        else:
            source_from = "as --context"
        image_from = "given with --image-tokens" if args.image_tokens is not None else shape.image_field
        bad_tp = [h for h in shape.query_heads() if h % args.tp]
        if bad_tp:
            valid = ", ".join(str(n) for n in gqa.valid_g(bad_tp[0]))
            raise GQAError(f"--tp {args.tp} does not divide the model's {bad_tp[0]} query heads; "
                           f"valid --tp: {valid}")
        dtype, dtype_from = cache_dtype(shape, args.dtype)
        dtype_bytes(args.weight_dtype)
        weights, weights_from = weights_bytes(args.weights, args.path)
        memory = parse_size(args.memory, "--memory") if args.memory is not None else None
        bandwidth = parse_bandwidth(args.bandwidth) if args.bandwidth is not None else None
        flops = parse_flops(args.flops) if args.flops is not None else None
        if args.hardware:
            bandwidth, flops = HARDWARE[args.hardware][:2]
        if (bandwidth is None) != (flops is None):
            raise GQAError("give both --bandwidth and --flops (or --hardware) for the decode estimate")
        summary = summarize(shape, context=context, batch=args.batch, dtype=dtype,
                            memory=memory, weights=weights,
                            weight_dtype=args.weight_dtype, devices=args.tp, bandwidth=bandwidth,
                            flops=flops, hardware=args.hardware, source=args.source,
                            context_from=context_from, source_from=source_from,
                            image_tokens=args.image_tokens, image_from=image_from,
                            dtype_from=dtype_from, weights_from=weights_from)
    except GQAError as err:
        print(f"gqa config: {err}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2) if args.json else render(summary))
    return 0


def cache_dtype(shape: ModelShape, given: Optional[str]) -> Tuple[str, str]:
    """The cache's dtype and where it came from: --dtype, else the config's, else bf16."""
    if given is not None:
        dtype_bytes(given)
        config_says = f"; the config's {shape.kv_dtype_field} says {shape.kv_dtype}" \
            if shape.kv_dtype and dtype_bytes(shape.kv_dtype) != dtype_bytes(given) else ""
        return given, "given with --dtype" + config_says
    if shape.kv_dtype:
        return shape.kv_dtype, f"the config's {shape.kv_dtype_field}"
    return "bf16", "the default: the config names no cache dtype"


def weights_bytes(given: Optional[str], path: str) -> Tuple[int, str]:
    """The weights' bytes and where they came from: --weights as a size, a model folder or its
    index; else the index beside the config; else 0."""
    if given is not None:
        if os.path.exists(given):
            return checkpoint_bytes(given)
        return parse_size(given, "--weights"), "given with --weights"
    beside = os.path.join(os.path.dirname(config_path(path)) or ".", INDEX)
    if os.path.isfile(beside):
        return checkpoint_bytes(beside)
    return 0, ""


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa config`."""
    return config_main(argv)
