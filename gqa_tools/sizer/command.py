"""gqa_tools.sizer.command: size a real model's KV cache from its config.json, on the command line.

    python -m gqa config examples/configs/llama-2-70b.json --context 4096 --memory 80GiB

Which method the model uses, what a token of context costs, how many requests
fit in the memory left, what happens on N tensor-parallel devices, and (as a
roofline model, not a measurement) how fast it could decode: the sizer's
answers (summary.py) as one table, or as JSON with exact bytes.  The cache's
dtype is the config's (kv_cache_dtype, a quantization config's KV scheme)
unless --dtype says otherwise, and the output says which; the weights come
from --weights (a size, a model folder or its model.safetensors.index.json)
or the index beside the config.  --lang (else the environment's language) chooses
the language of the table, its notes and refusals; --json is data, English in every
language.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gqa
from gqa import GQAError
from gqa_grader.language import i18n
from gqa_grader.language.i18n import N_, _, ngettext
from gqa_tools.formats import human_bytes, text_table
from gqa_tools.language import chosen_lang, speaking
from gqa_tools.sizer.files import INDEX, checkpoint_bytes, config_path
from gqa_tools.sizer.shape import ModelShape
from gqa_tools.sizer.summary import HARDWARE, summarize
from gqa_tools.sizer.units import DTYPE_BYTES, dtype_bytes, parse_bandwidth, parse_flops, parse_size

# ---------------------------------------------------------------------------
# The table: a headline, the sizes by method, and the notes, in the language in use.
# ---------------------------------------------------------------------------

BOUND = {"memory": N_("memory"), "compute": N_("compute")}     # a roofline's bound, as a cell says it


def rows_of(s: Dict[str, Any]) -> List[Tuple[str, List[str]]]:
    """The table's rows: a label and one cell per column."""
    m, st, cols = s["model"], s["settings"], s["columns"]

    def each(cell, estimate: bool = False) -> List[str]:
        """One cell per column, or 'refused' where tensor parallelism (or the estimate) refused it."""
        return [cell(c) if "error" not in c["tp"] and not (estimate and "error" in c["decode"])
                else _("refused") for c in cols]

    rules = {g["rule"] for g in m["groups"]}
    rows = [(_("bytes per token"), [human_bytes(c["bytes_per_token"]) for c in cols])]
    if "cross" in rules:
        rows.append((_("bytes per source token"), [human_bytes(c["bytes_per_source_token"]) for c in cols]))
    if "image" in rules:
        rows.append((_("bytes per image token"), [human_bytes(c["bytes_per_image_token"]) for c in cols]))
    rows.append((_("bytes per request"), [human_bytes(c["bytes_per_request"]) for c in cols]))
    if m["heads"]:
        rows.append((_("ratio to MHA"), [f"{c['ratio_to_mha']:.4g}" if c["ratio_to_mha"] is not None else "-"
                                         for c in cols]))
    if st["tp"] > 1 and m["heads"]:
        by_layer = _("by layer")
        rows += [(_("kv heads per device (tp={tp})").format(tp=st["tp"]),
                  each(lambda c: _("latent") if c["method"] == "MLA" else by_layer if m["per_layer"]
                       else str(c["tp"]["kv_heads_per_device"]))),
                 (_("each kv head held by"), each(lambda c: by_layer if m["per_layer"] and c["method"] != "MLA"
                                                  else _("{devices} device(s)").format(
                                                      devices=c["tp"]["replication"]))),
                 (_("cache per device"), each(lambda c: human_bytes(c["tp"]["bytes_per_device"]))),
                 (_("cache, all devices"), each(lambda c: human_bytes(c["tp"]["bytes_all_devices"])))]
    if st["memory"] is not None:
        rows.append((_("requests that fit"), each(lambda c: f"{c['max_requests']:,}" if c["max_requests"] is not None
                                                   else _("no KV cache to limit them"))))
    if "hardware" in s:
        rows += [(_("decode step (roofline)"), each(lambda c: f"{c['decode']['seconds'] * 1e3:.3g} ms", True)),
                 (_("bound by"), each(lambda c: _(BOUND[c["decode"]["bound"]]), True))]
    return rows


def column_head(c: Dict[str, Any], per_layer: bool) -> str:
    """A column's heading: the model's own (its method, and its g where it has one), as MHA,
    or a method with its g."""
    if c["label"] == "model":
        if c["method"] in ("MLA", "no KV cache") or per_layer:
            return _("this model, {method}").format(method=c["method"])
        return _("this model, {method} g={g}").format(method=c["method"], g=c["kv_heads"])
    return _("as MHA") if c["label"] == "as MHA" else f"{c['method']} g={c['kv_heads']}"


def render(s: Dict[str, Any]) -> str:
    """The summary as a compact, aligned table with its notes; warnings on the first lines."""
    m, st = s["model"], s["settings"]
    rules = {g["rule"] for g in m["groups"]}
    head = [""] + [column_head(c, m["per_layer"]) for c in s["columns"]]
    warnings = [n for n in m["notes"] if n.startswith(("WARNING", "NOTE"))]
    sizes = [_("context {context} ({why})").format(context=f"{st['context']:,}", why=st["context_from"])]
    if "cross" in rules:
        sizes.append(_("source {source} ({why})").format(source=f"{st['source']:,}", why=st["source_from"]))
    if "image" in rules:
        sizes.append(_("image tokens {tokens} ({why})").format(tokens=f"{st['image_tokens']:,}",
                                                               why=st["image_from"]))
    each_value = (_("{bytes} bytes per value") if st["bytes_per_value"] > 1 else
                  _("{bytes} byte per value")).format(bytes=st["bytes_per_value"])
    second = _("KV cache in {dtype} ({each}, {why}), {sizes}, batch {batch}; exact bytes with --json").format(
        dtype=st["dtype"], each=each_value, why=st["dtype_from"], sizes=_(", ").join(sizes), batch=st["batch"])
    return "\n".join(warnings + [headline(s), second, "",
                                 text_table(head, [[label] + values for label, values in rows_of(s)]), ""]
                     + [f"- {n}" for n in notes(s)])


def headline(s: Dict[str, Any]) -> str:
    m = s["model"]
    groups = [g for g in m["groups"] if g["rule"] != "draft"]
    if groups and all(g["rule"] == "encoder" for g in groups):
        return _("{name}: no KV cache: an encoder-only model ({what}), {layers} layers; it reads its input whole "
                 "and generates nothing; 0 bytes per token").format(
            name=m["name"], what=groups[0]["note"].split(" ")[0], layers=m["layers"])
    if groups and all(g["rule"] == "bidirectional" for g in groups):
        return _("{name}: no KV cache: {what}, {layers} layers, attends both ways over the whole sequence at every "
                 "step, so nothing carries over; 0 bytes per token").format(
            name=m["name"], what=groups[0]["note"].split(" ")[0], layers=m["layers"])
    if not m["heads"]:
        return _("{name}: no KV cache: {layers} layers, each holding a state of fixed size per sequence; 0 bytes "
                 "per token").format(name=m["name"], layers=m["layers"])
    if s["method"] == "MLA" and len(groups) == 1:
        return _("{name}: MLA, {layers} layers, h={heads} query heads; each layer caches one latent of {latent} "
                 "values per token (kv_lora_rank + qk_rope_head_dim), shared by all heads").format(
            name=m["name"], layers=m["layers"], heads=m["heads"], latent=groups[0]["latent"])
    if s["method"] == "MLA":
        return _("{name}: MLA, {layers} layers ({groups}), h={heads} query heads; each MLA layer caches one "
                 "latent per token (kv_lora_rank + qk_rope_head_dim)").format(
            name=m["name"], layers=m["layers"], groups=s["layer_groups"], heads=m["heads"])
    kinds = "" if len(groups) == 1 and groups[0]["rule"] == "full" else f" ({s['layer_groups']})"
    if m["per_layer"]:
        return _("{name}: {method}, {layers} layers{groups}, query and key/value heads by layer, head dim "
                 "{head_dim}, hidden size {hidden_size}").format(
            name=m["name"], method=s["method"], layers=m["layers"], groups=kinds, head_dim=m["head_dim"],
            hidden_size=m["hidden_size"])
    each = m["heads"] // m["kv_heads"]
    return ngettext("{name}: {method}, {layers} layers{groups}, h={heads} query heads, g={g} key/value heads "
                    "({each} query head each), head dim {head_dim}, hidden size {hidden_size}",
                    "{name}: {method}, {layers} layers{groups}, h={heads} query heads, g={g} key/value heads "
                    "({each} query heads each), head dim {head_dim}, hidden size {hidden_size}", each).format(
        name=m["name"], method=s["method"], layers=m["layers"], groups=kinds, heads=m["heads"], g=m["kv_heads"],
        each=each, head_dim=m["head_dim"], hidden_size=m["hidden_size"])


def group_notes(s: Dict[str, Any]) -> List[str]:
    """The notes of the layer groups that hold less, or other, than full attention does."""
    st, out = s["settings"], []
    for g in s["model"]["groups"]:
        if g["rule"] in ("sliding", "chunked"):
            out.append((_("{layers} sliding layers hold at most {window} positions; 'bytes per token' is what a "
                          "token adds while the context is shorter") if g["rule"] == "sliding" else
                        _("{layers} chunked layers hold at most {window} positions; 'bytes per token' is what a "
                          "token adds while the context is shorter")).format(layers=g["layers"],
                                                                             window=f"{g['window']:,}"))
        if g["rule"] == "none":
            out.append(_("{layers} {what} hold a state of fixed size instead of a KV cache; it is not counted "
                         "here").format(layers=g["layers"], what=g["note"]))
        if g["rule"] == "shared":
            out.append(_("{layers} layers {what} ({field}): they add no cache of their own").format(
                layers=g["layers"], what=g["note"], field=g["fields"][0]))
        if g["rule"] == "draft":
            out.append(_("{layers} multi-token-prediction layers ({fields}) run only to draft tokens for "
                         "speculative decoding: not counted").format(layers=g["layers"], fields=", ".join(g["fields"])))
        if g["rule"] == "cross":
            out.append(_("cross-attention: {layers} decoder layers hold K and V of every source token ({source}, "
                         "{why}); 'bytes per token' is a generated token's self-attention alone").format(
                layers=g["layers"], source=f"{st['source']:,}", why=st["source_from"]))
        if g["rule"] == "image":
            out.append(_("cross-attention to the image: {layers} layers hold K and V of {tokens} image tokens "
                         "({why}; --image-tokens), not of the text's tokens").format(
                layers=g["layers"], tokens=f"{st['image_tokens']:,}", why=st["image_from"]))
    return out


def notes(s: Dict[str, Any]) -> List[str]:
    m, st, cols = s["model"], s["settings"], s["columns"]
    out = [n for n in m["notes"] if not n.startswith(("WARNING", "NOTE"))] + group_notes(s)
    if s["method"] == "MLA":
        out.append(_("as MHA: the same layers with 2 x h x head_dim values per token, the comparison "
                     "DeepSeek-V2 makes; under tensor parallelism every device holds the whole latent"))
    if st["memory"] is not None:
        fields = {"memory": human_bytes(st["memory"]), "weights": human_bytes(st["weights"]), "tp": st["tp"],
                  "index": INDEX, "why": st["weights_from"]}
        out.append((_("requests that fit: ({memory} per device - {weights} of weights / {tp} device(s)) // one "
                      "request's cache per device; give --weights (a size, a model folder or its {index}) for "
                      "the weights' share") if not st["weights"] else
                    _("requests that fit: ({memory} per device - {weights} of weights / {tp} device(s)) // one "
                      "request's cache per device") if st["weights_from"] == _("given with --weights") else
                    _("requests that fit: ({memory} per device - {weights} of weights / {tp} device(s)) // one "
                      "request's cache per device; the weights from {why}")).format(**fields))
    out += [f"{c['method']}{'' if m['per_layer'] else ' g=' + str(c['kv_heads'])}: {c['tp']['error']}"
            for c in cols if "error" in c["tp"]]
    out += [c["decode"]["error"] for c in cols if "error" in c.get("decode", {})][:1]
    if "hardware" in s:
        hw = s["hardware"]
        out.append((_("decode step: a roofline model, not a measurement: the larger of bytes read / {bandwidth} "
                      "GB/s and FLOPs / {flops} TFLOP/s ({source}), for one new token in each of the request's "
                      "{batch} sequence(s)") if st["weights"] else
                    _("decode step: a roofline model, not a measurement: the larger of bytes read / {bandwidth} "
                      "GB/s and FLOPs / {flops} TFLOP/s ({source}), for one new token in each of the request's "
                      "{batch} sequence(s); without --weights it counts the cache alone")).format(
            bandwidth=f"{hw['bandwidth'] / 1e9:,.0f}", flops=f"{hw['flops'] / 1e12:,.0f}", source=hw["source"],
            batch=st["batch"]))
    else:
        out.append(_("give --bandwidth and --flops (or --hardware NAME) for a decode-time estimate"))
    return out


# ---------------------------------------------------------------------------
# The command line.
# ---------------------------------------------------------------------------

OVERRIDES = ("layers", "heads", "kv_heads", "head_dim", "window")
OVERRIDE_NAMES = {"layers": N_("layers"), "heads": N_("heads"), "kv_heads": N_("kv heads"),
                  "head_dim": N_("head dim"), "window": N_("window")}


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gqa config",
        description=_("Size a model's KV cache from its config.json: method, the rule of each group of layers, "
                      "bytes per token and per request, requests that fit, tensor parallelism, and a roofline "
                      "decode estimate."))
    parser.add_argument("path", help=_("a config.json (for example examples/configs/mistral-7b-v0.1.json), or a "
                                       "model folder holding one"))
    parser.add_argument("--context", type=int, default=None,
                        help=_("tokens per request (default: the model's own maximum, else 4096)"))
    parser.add_argument("--batch", type=int, default=1, help=_("sequences per request (default 1)"))
    parser.add_argument("--source", "--source-length", type=int, default=None, dest="source",
                        help=_("encoder-decoder models: the encoder's length, source tokens per sequence "
                               "(default: the model's own, as Whisper's max_source_positions or SpeechT5's "
                               "max_speech_positions, else --context)"))
    parser.add_argument("--image-tokens", type=int, default=None,
                        help=_("vision cross-attention: image tokens per sequence (default: one image as the "
                               "config sizes it)"))
    parser.add_argument("--dtype", default=None,
                        help=_("cache dtype: {dtypes} (default: the one the config names, kv_cache_dtype or "
                               "quantization_config's KV scheme, else bf16)").format(dtypes=", ".join(DTYPE_BYTES)))
    parser.add_argument("--memory", default=None, help=_("free memory per device, e.g. 80GiB"))
    parser.add_argument("--weights", default=None,
                        help=_("the weights, all devices: a size (e.g. 140GB), a model folder or its {index} (its "
                               "metadata.total_size); default: the {index} beside the config, else 0").format(
                            index=INDEX))
    parser.add_argument("--weight-dtype", default="bf16",
                        help=_("dtype of the weights, to count parameters (default bf16)"))
    parser.add_argument("--tp", type=int, default=1, help=_("tensor-parallel devices (default 1)"))
    parser.add_argument("--bandwidth", default=None, help=_("memory bandwidth per device, e.g. 2039GB/s"))
    parser.add_argument("--flops", default=None, help=_("compute rate per device, e.g. 312TFLOPS"))
    parser.add_argument("--hardware", choices=sorted(HARDWARE), default=None,
                        help=_("named bandwidth and compute rate, with their source"))
    for name in OVERRIDES:
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=None,
                            help=_("set {what} by hand, for a config that cannot be read").format(
                                what=_(OVERRIDE_NAMES[name])))
    parser.add_argument("--ignore", action="append", default=[], metavar="FIELD",
                        help=_("pass over FIELD, a key of the config that no rule reads and that the model's code "
                               "leaves out of the cache: a warning on the first line (never a field a rule reads "
                               "and cannot size)"))
    parser.add_argument("--json", action="store_true",
                        help=_("print the same as JSON, exact bytes (its keys and values in English)"))
    parser.add_argument("--lang", choices=i18n.LANGUAGES, default=None,
                        help=_("the language of what the command prints: {languages}; default: the "
                               "environment's (LANGUAGE, LC_ALL, LC_MESSAGES, LANG), else en").format(
                                   languages=i18n.listed()))
    return parser


def _check_counts(args: argparse.Namespace) -> None:
    for name in ("batch", "tp", "context", "source", "image_tokens") + OVERRIDES:
        value = getattr(args, name)
        if value is not None and not 1 <= value <= 10 ** 12:
            raise GQAError(_("{option} must be between 1 and 10**12; got {value}").format(
                option=f"--{name.replace('_', '-')}", value=f"{str(value)[:20]}{'...' if len(str(value)) > 20 else ''}"))


def sized(args: argparse.Namespace) -> Dict[str, Any]:
    """The summary of the command line's model and settings, in the language in use; raises
    GQAError saying why it cannot be sized."""
    _check_counts(args)
    overrides = {k: getattr(args, k) for k in OVERRIDES if getattr(args, k) is not None}
    shape = ModelShape.from_config(args.path, ignore=args.ignore, overrides=overrides)
    if args.context is not None:
        context, context_from = args.context, _("given with --context")
    elif shape.max_context:
        context, context_from = shape.max_context, _("the model's {field}").format(field=shape.max_context_field)
    else:
        context, context_from = 4096, _("the config gives no maximum; the default 4096")
    if args.source is not None:
        source_from = _("given with --source")
    elif shape.source_tokens:
        source_from = _("the model's {field}").format(field=shape.source_field)
    else:
        source_from = _("as --context")
    image_from = _("given with --image-tokens") if args.image_tokens is not None else shape.image_field
    bad_tp = [h for h in shape.query_heads() if h % args.tp]
    if bad_tp:
        raise GQAError(_("--tp {tp} does not divide the model's {heads} query heads; valid --tp: {valid}").format(
            tp=args.tp, heads=bad_tp[0], valid=", ".join(str(n) for n in gqa.valid_g(bad_tp[0]))))
    dtype, dtype_from = cache_dtype(shape, args.dtype)
    dtype_bytes(args.weight_dtype)
    weights, weights_from = weights_bytes(args.weights, args.path)
    memory = parse_size(args.memory, "--memory") if args.memory is not None else None
    bandwidth = parse_bandwidth(args.bandwidth) if args.bandwidth is not None else None
    flops = parse_flops(args.flops) if args.flops is not None else None
    if args.hardware and (bandwidth is not None or flops is not None):
        raise GQAError(_("--hardware {name} names the bandwidth and the compute rate; give it, or --bandwidth "
                         "and --flops, not both").format(name=args.hardware))
    if args.hardware:
        bandwidth, flops = HARDWARE[args.hardware][:2]
    if (bandwidth is None) != (flops is None):
        raise GQAError(_("give both --bandwidth and --flops (or --hardware) for the decode estimate"))
    summary = summarize(shape, context=context, batch=args.batch, dtype=dtype, memory=memory, weights=weights,
                        weight_dtype=args.weight_dtype, devices=args.tp, bandwidth=bandwidth, flops=flops,
                        hardware=args.hardware, source=args.source, context_from=context_from,
                        source_from=source_from, image_tokens=args.image_tokens, image_from=image_from,
                        dtype_from=dtype_from, weights_from=weights_from)
    rules = {group["rule"] for group in summary["model"]["groups"]}
    if args.source is not None and "cross" not in rules:
        raise GQAError(_("--source is the encoder's length of an encoder-decoder model; {model} caches no "
                         "source tokens, so it is not used").format(model=shape.name))
    if args.image_tokens is not None and "image" not in rules:
        raise GQAError(_("--image-tokens is the images' length of a model with vision cross-attention; {model} "
                         "caches no image tokens, so it is not used").format(model=shape.name))
    return summary


def config_main(argv: Sequence[str]) -> int:
    args = make_parser().parse_args(argv)
    try:
        summary = sized(args)
        if args.json:                   # data: the same in every language
            with speaking("en"):
                summary = sized(args)
    except GQAError as err:
        print(f"gqa config: {err}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2) if args.json else render(summary))
    return 0


def cache_dtype(shape: ModelShape, given: Optional[str]) -> Tuple[str, str]:
    """The cache's dtype and where it came from: --dtype, else the config's, else bf16."""
    if given is not None:
        dtype_bytes(given)
        if shape.kv_dtype and dtype_bytes(shape.kv_dtype) != dtype_bytes(given):
            return given, _("given with --dtype; the config's {field} says {dtype}").format(
                field=shape.kv_dtype_field, dtype=shape.kv_dtype)
        return given, _("given with --dtype")
    if shape.kv_dtype:
        return shape.kv_dtype, _("the config's {field}").format(field=shape.kv_dtype_field)
    return "bf16", _("the default: the config names no cache dtype")


def weights_bytes(given: Optional[str], path: str) -> Tuple[int, str]:
    """The weights' bytes and where they came from: --weights as a size, a model folder or its
    index; else the index beside the config; else 0."""
    if given is not None:
        if os.path.exists(given):
            return checkpoint_bytes(given)
        return parse_size(given, "--weights"), _("given with --weights")
    beside = os.path.join(os.path.dirname(config_path(path)) or ".", INDEX)
    if os.path.isfile(beside):
        return checkpoint_bytes(beside)
    return 0, ""


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa config`."""
    with speaking(chosen_lang(argv, make_parser())):
        return config_main(argv)
