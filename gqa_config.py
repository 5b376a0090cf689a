"""gqa_config: size a real model's KV cache from its config.json, on the command line.

    python -m gqa config examples/configs/llama-2-70b.json --context 4096 --memory 80GiB

Which method the model uses, what a token of context costs, how many requests
fit in the memory left, what happens on N tensor-parallel devices, and (as a
roofline model, not a measurement) how fast it could decode: gqa_models'
answers as one table, or as JSON with exact bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, Sequence

import gqa
from gqa import GQAError
from gqa_models import (DTYPE_BYTES, ModelShape, cache_bytes, decode_roofline, dtype_bytes,
                        max_requests, parse_bandwidth, parse_flops, parse_size, tensor_parallel)
from gqa_tools import human_bytes, text_table

# Named hardware for the decode estimate, each with its source.  Peak figures:
# real kernels reach less, which is one more reason the estimate is a bound.
HARDWARE = {
    "a100-80gb-sxm": (2039e9, 312e12, "NVIDIA A100 80GB SXM datasheet: 2,039 GB/s HBM2e, "
                                      "312 TFLOPS BF16 dense"),
    "h100-sxm": (3.35e12, 989e12, "NVIDIA H100 SXM datasheet: 3.35 TB/s HBM3, "
                                  "989 TFLOPS BF16 dense (1,979 with sparsity)"),
}



# ---------------------------------------------------------------------------
# The command: one table, or the same as JSON.
# ---------------------------------------------------------------------------

def summarize(shape: ModelShape, *, context: int, batch: int, dtype: str, memory: Optional[int],
              weights: int, weight_dtype: str, devices: int, bandwidth: Optional[float],
              flops: Optional[float], hardware: Optional[str] = None) -> Dict[str, Any]:
    """Everything the command prints, as plain data with exact byte counts."""
    columns = [("MHA", shape.heads), ("model", shape.kv_heads), ("MQA", 1)]
    out: Dict[str, Any] = {
        "model": shape._asdict(), "method": shape.method,
        "settings": {"context": context, "batch": batch, "dtype": dtype,
                     "bytes_per_value": dtype_bytes(dtype), "tp": devices, "memory": memory,
                     "weights": weights},
        "columns": [],
    }
    for label, g in columns:
        per_token = cache_bytes(shape, dtype=dtype, kv_heads=g)
        per_request = cache_bytes(shape, context=context, batch=batch, dtype=dtype, kv_heads=g)
        col: Dict[str, Any] = {"label": label, "method": gqa.method_name(shape.heads, g),
                               "kv_heads": g, "bytes_per_token": per_token,
                               "bytes_per_request": per_request,
                               "ratio_to_mha": per_token / cache_bytes(shape, dtype=dtype,
                                                                      kv_heads=shape.heads)}
        try:
            split = tensor_parallel(shape.heads, g, devices)
            device_bytes = cache_bytes(shape, context=context, batch=batch, dtype=dtype,
                                       kv_heads=split.kv_heads_per_device)
            col["tp"] = {"kv_heads_per_device": split.kv_heads_per_device,
                         "replication": split.replication,
                         "bytes_per_device": device_bytes,
                         "bytes_all_devices": device_bytes * devices}
        except GQAError as err:
            col["tp"] = {"error": str(err)}
        if memory is not None and "error" not in col["tp"]:
            col["max_requests"] = max_requests(memory, weights // devices,
                                               col["tp"]["bytes_per_device"])
        if bandwidth and flops and "error" not in col["tp"]:
            r = decode_roofline(shape, context=context, batch=batch, dtype=dtype, weights=weights,
                                weight_dtype=weight_dtype, bandwidth=bandwidth, flops=flops,
                                kv_heads=g, devices=devices)
            col["decode"] = r._asdict()
        out["columns"].append(col)
    if bandwidth and flops:
        out["hardware"] = {"bandwidth": bandwidth, "flops": flops,
                           "source": HARDWARE[hardware][2] if hardware else "given on the command line"}
    return out


def render(s: Dict[str, Any]) -> str:
    """The summary as a compact, aligned table with its notes."""
    m, st, cols = s["model"], s["settings"], s["columns"]

    def each(cell) -> List[str]:
        """One cell per column, or 'refused' where tensor parallelism refused that g."""
        return [cell(c) if "error" not in c["tp"] else "refused" for c in cols]

    rows = [("bytes per token", [human_bytes(c["bytes_per_token"]) for c in cols]),
            ("bytes per request", [human_bytes(c["bytes_per_request"]) for c in cols]),
            ("ratio to MHA", [f"{c['ratio_to_mha']:.4g}" for c in cols])]
    if st["tp"] > 1:
        rows += [(f"kv heads per device (tp={st['tp']})", each(lambda c: str(c["tp"]["kv_heads_per_device"]))),
                 ("each kv head held by", each(lambda c: f"{c['tp']['replication']} device(s)")),
                 ("cache per device", each(lambda c: human_bytes(c["tp"]["bytes_per_device"]))),
                 ("cache, all devices", each(lambda c: human_bytes(c["tp"]["bytes_all_devices"])))]
    if st["memory"] is not None:
        rows.append(("requests that fit", each(lambda c: f"{c['max_requests']:,}")))
    if "hardware" in s:
        rows += [("decode step (roofline)", each(lambda c: f"{c['decode']['seconds'] * 1e3:.3g} ms")),
                 ("bound by", each(lambda c: c["decode"]["bound"]))]
    head = [""] + [f"this model, {c['method']} g={c['kv_heads']}" if c["label"] == "model"
                   else f"{c['method']} g={c['kv_heads']}" for c in cols]

    notes = []
    if st["memory"] is not None:
        notes.append(f"requests that fit: ({human_bytes(st['memory'])} per device - "
                     f"{human_bytes(st['weights'])} of weights / {st['tp']} device(s)) // one "
                     f"request's cache per device"
                     + ("" if st["weights"] else "; give --weights for the weights' share"))
    notes += [f"{c['method']} g={c['kv_heads']}: {c['tp']['error']}" for c in cols if "error" in c["tp"]]
    if "hardware" in s:
        hw = s["hardware"]
        notes.append(f"decode step: a roofline model, not a measurement: the larger of bytes read "
                     f"/ {hw['bandwidth'] / 1e9:,.0f} GB/s and FLOPs / {hw['flops'] / 1e12:,.0f} "
                     f"TFLOP/s ({hw['source']}), for one new token in each of the request's "
                     f"{st['batch']} sequence(s)"
                     + ("" if st["weights"] else "; without --weights it counts the cache alone"))
    else:
        notes.append("give --bandwidth and --flops (or --hardware NAME) for a decode-time estimate")

    each_head = "s" if m["heads"] > m["kv_heads"] else ""
    return "\n".join([
        f"{m['name']}: {s['method']}, {m['layers']} layers, h={m['heads']} query heads, "
        f"g={m['kv_heads']} key/value heads ({m['heads'] // m['kv_heads']} query head{each_head} "
        f"each), head dim {m['head_dim']}, hidden size {m['hidden_size']}",
        f"KV cache in {st['dtype']} ({st['bytes_per_value']} bytes per value), context "
        f"{st['context']:,}, batch {st['batch']}; exact bytes with --json", "",
        text_table(head, [[label] + values for label, values in rows]), ""]
        + [f"- {n}" for n in notes])


def config_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gqa config",
        description="Size a model's KV cache from its config.json: method, bytes per token, "
                    "requests that fit, tensor parallelism, and a roofline decode estimate.")
    parser.add_argument("path", help="a config.json (for example examples/configs/mistral-7b.json)")
    parser.add_argument("--context", type=int, default=4096, help="tokens per request (default 4096)")
    parser.add_argument("--batch", type=int, default=1, help="sequences per request (default 1)")
    parser.add_argument("--dtype", default="bf16", help=f"cache dtype: {', '.join(DTYPE_BYTES)} (default bf16)")
    parser.add_argument("--memory", default=None, help="free memory per device, e.g. 80GiB")
    parser.add_argument("--weights", default="0", help="the weights' size, all devices, e.g. 140GB (default 0)")
    parser.add_argument("--weight-dtype", default="bf16", help="dtype of the weights, to count parameters (default bf16)")
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel devices (default 1)")
    parser.add_argument("--bandwidth", default=None, help="memory bandwidth per device, e.g. 2039GB/s")
    parser.add_argument("--flops", default=None, help="compute rate per device, e.g. 312TFLOPS")
    parser.add_argument("--hardware", choices=sorted(HARDWARE), default=None,
                        help="named bandwidth and compute rate, with their source")
    parser.add_argument("--json", action="store_true", help="print the same as JSON, exact bytes")
    args = parser.parse_args(argv)
    try:
        for name in ("context", "batch", "tp"):
            if getattr(args, name) < 1:
                raise GQAError(f"--{name} must be positive; got {getattr(args, name)}")
        shape = ModelShape.from_config(args.path)
        if shape.heads % args.tp:
            valid = ", ".join(str(n) for n in gqa.valid_g(shape.heads))
            raise GQAError(f"--tp {args.tp} does not divide the model's {shape.heads} query heads; "
                           f"valid --tp: {valid}")
        dtype_bytes(args.dtype), dtype_bytes(args.weight_dtype)
        memory = parse_size(args.memory, "--memory") if args.memory is not None else None
        weights = parse_size(args.weights, "--weights")
        bandwidth = parse_bandwidth(args.bandwidth) if args.bandwidth else None
        flops = parse_flops(args.flops) if args.flops else None
        if args.hardware:
            bandwidth, flops = HARDWARE[args.hardware][:2]
        if bool(bandwidth) != bool(flops):
            raise GQAError("give both --bandwidth and --flops (or --hardware) for the decode estimate")
        summary = summarize(shape, context=args.context, batch=args.batch, dtype=args.dtype,
                            memory=memory, weights=weights, weight_dtype=args.weight_dtype,
                            devices=args.tp, bandwidth=bandwidth, flops=flops, hardware=args.hardware)
    except GQAError as err:
        print(f"gqa config: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(render(summary))
    return 0


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa config`."""
    return config_main(argv)
