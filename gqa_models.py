"""gqa_models: size a real model's KV cache from its config.json.

    python -m gqa config examples/configs/llama-2-70b.json --context 4096 --memory 80GiB

The two numbers that decide MHA, GQA or MQA, the query heads h and the
key/value heads g, sit in every model's config file.  From them, the layers
and the head dim, this module answers: which method is it, what does a token
of context cost, how many requests fit in the memory left, what happens on N
tensor-parallel devices, and (as a roofline model, not a measurement) how
fast could it decode.  Standard library only: json and arithmetic.

>>> shape = ModelShape.from_config({"num_hidden_layers": 80, "num_attention_heads": 64,
...                                 "num_key_value_heads": 8, "hidden_size": 8192})
>>> shape.method, shape.head_dim
('GQA', 128)
>>> cache_bytes(shape, dtype="bf16")                 # one token: 2 x 80 x 8 x 128 x 2 bytes
327680
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Union

import gqa
from gqa import GQAError
from gqa_tools import human_bytes, text_table

# Bytes per stored value, by the names configs and serving engines use.
DTYPE_BYTES = {"fp32": 4, "float32": 4, "fp16": 2, "float16": 2, "bf16": 2, "bfloat16": 2,
               "fp8": 1, "int8": 1}

# The spellings real configs use, in the order they are tried.
QUERY_HEADS = ("num_attention_heads", "n_head", "num_heads")
LAYERS = ("num_hidden_layers", "n_layer", "num_layers")
HIDDEN = ("hidden_size", "n_embd", "d_model")
KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")

# Named hardware for the decode estimate, each with its source.  Peak figures:
# real kernels reach less, which is one more reason the estimate is a bound.
HARDWARE = {
    "a100-80gb-sxm": (2039e9, 312e12, "NVIDIA A100 80GB SXM datasheet: 2,039 GB/s HBM2e, "
                                      "312 TFLOPS BF16 dense"),
    "h100-sxm": (3.35e12, 989e12, "NVIDIA H100 SXM datasheet: 3.35 TB/s HBM3, "
                                  "989 TFLOPS BF16 dense (1,979 with sparsity)"),
}


# ---------------------------------------------------------------------------
# Reading a config.
# ---------------------------------------------------------------------------

class ModelShape(NamedTuple):
    """A model's attention shape, as its config.json gives it."""
    name: str
    layers: int
    heads: int          # h, query heads
    kv_heads: int       # g, key/value heads
    head_dim: int       # d
    hidden_size: int    # d_model

    @property
    def method(self) -> str:
        return gqa.method_name(self.heads, self.kv_heads)

    @classmethod
    def from_config(cls, source: Union[str, "os.PathLike[str]", Dict[str, Any]]) -> "ModelShape":
        """Read a config.json (a path, or the parsed dict) into a ModelShape.

        >>> ModelShape.from_config({"n_layer": 40, "n_head": 48, "n_embd": 6144,
        ...                         "multi_query": True}).kv_heads
        1
        """
        if isinstance(source, dict):
            where, config = "config", source
        else:
            where = os.fspath(source)
            config = _load_json(where)
        return _shape(where, config)


def _load_json(path: str) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise GQAError(f"config {path}: cannot read it: {err.strerror or err}") from None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise GQAError(f"config {path} is not JSON: line {err.lineno}, column {err.colno}: "
                       f"{err.msg}") from None
    if not isinstance(config, dict):
        raise GQAError(f"config {path} is not a JSON object but a {type(config).__name__}")
    return config


def _field(where: str, config: Dict[str, Any], names: Sequence[str], what: str,
           default: Optional[int] = None) -> int:
    """The first of names that the config sets (null counts as unset), as a positive int."""
    for name in names:
        value = config.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise GQAError(f"config {where}: {name} must be a whole number; got {value!r}")
        if value < 1:
            raise GQAError(f"config {where}: {name} must be positive; got {value}")
        return value
    if default is not None:
        return default
    raise GQAError(f"config {where}: no {what}: tried {', '.join(names)}")


def _shape(where: str, config: Dict[str, Any]) -> ModelShape:
    if isinstance(config.get("text_config"), dict):
        where, config = f"{where} (text_config)", config["text_config"]
    name = str(config.get("_name_or_path") or config.get("model_type") or
               os.path.splitext(os.path.basename(where.split(" (")[0]))[0])
    layers = _field(where, config, LAYERS, "layer count")
    heads = _field(where, config, QUERY_HEADS, "query head count")
    hidden = _field(where, config, HIDDEN, "hidden size")
    names = KV_HEADS
    if config.get("multi_query_attention") is False:       # ChatGLM: the group count is unused
        names = tuple(n for n in KV_HEADS if n != "multi_query_group_num")
    if config.get("multi_query") is True and not config.get("new_decoder_architecture"):
        kv_heads = 1        # Falcon and GPT-BigCode multi-query, whatever num_kv_heads says
    else:
        kv_heads = _field(where, config, names, "key/value head count", default=heads)
    if "head_dim" in config and config["head_dim"] is not None:
        head_dim = _field(where, config, ("head_dim",), "head dim")
    elif hidden % heads:
        raise GQAError(f"config {where}: hidden size {hidden} is not a multiple of {heads} "
                       f"query heads and there is no head_dim to say the head dim")
    else:
        head_dim = hidden // heads
    if kv_heads > heads or heads % kv_heads:
        valid = ", ".join(map(str, gqa.valid_g(heads)))
        raise GQAError(f"config {where}: the model could not be loaded: {kv_heads} key/value "
                       f"heads do not divide {heads} query heads; g would divide for "
                       f"g = {valid}")
    return ModelShape(name, layers, heads, kv_heads, head_dim, hidden)


# ---------------------------------------------------------------------------
# What it computes.
# ---------------------------------------------------------------------------

def dtype_bytes(dtype: str) -> int:
    """Bytes per value of a dtype name (fp32, fp16, bf16, fp8, int8, ...)."""
    try:
        return DTYPE_BYTES[dtype.lower()]
    except (KeyError, AttributeError):
        raise GQAError(f"dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}") from None


def cache_bytes(shape: ModelShape, *, context: int = 1, batch: int = 1, dtype: str = "bf16",
                kv_heads: Optional[int] = None) -> int:
    """Bytes of KV cache: 2 x layers x g x head_dim x bytes per value x context x batch.

    kv_heads overrides the model's g, to ask what MHA (g = h) or MQA (g = 1)
    would need.
    """
    g = shape.kv_heads if kv_heads is None else kv_heads
    return gqa.kv_cache_elements(shape.layers, g, context, shape.head_dim, batch=batch) * dtype_bytes(dtype)


def max_requests(memory: int, weights: int, request_bytes: int) -> int:
    """How many requests fit: (memory - weights) // one request's cache, never below 0."""
    if request_bytes <= 0:
        raise GQAError(f"max_requests: a request's cache must be positive; got {request_bytes}")
    return max(0, (memory - weights) // request_bytes)


class Split(NamedTuple):
    """The KV cache of one layer's key/value heads over tp tensor-parallel devices."""
    devices: int
    kv_heads_per_device: int
    replication: int        # how many devices hold each key/value head


def tensor_parallel(heads: int, kv_heads: int, devices: int) -> Split:
    """Split h query heads and g key/value heads over `devices` devices.

    Each device holds max(1, g // N) key/value heads; when N > g each
    key/value head is replicated N / g times.  When neither of g and N
    divides the other, or N does not divide h, it is an error, as serving
    engines refuse it.

    >>> tensor_parallel(64, 8, 16)
    Split(devices=16, kv_heads_per_device=1, replication=2)
    """
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise GQAError(f"tensor_parallel: devices must be a positive int; got {devices!r}")
    if heads % devices:
        raise GQAError(f"tensor_parallel: {devices} devices do not divide h={heads} query heads")
    if kv_heads % devices and devices % kv_heads:
        raise GQAError(f"tensor_parallel: neither of g={kv_heads} key/value heads and "
                       f"{devices} devices divides the other")
    if devices <= kv_heads:
        return Split(devices, kv_heads // devices, 1)
    return Split(devices, 1, devices // kv_heads)


class Roofline(NamedTuple):
    """A decode step's bound on one device: the larger of reading and computing."""
    seconds: float
    bound: str              # "memory" or "compute"
    bytes_read: int
    flops: int


def decode_roofline(shape: ModelShape, *, context: int, batch: int, dtype: str, weights: int,
                    weight_dtype: str, bandwidth: float, flops: float, kv_heads: int,
                    devices: int = 1) -> Roofline:
    """Estimate one decode step (a token for each of batch sequences): a roofline model.

    Per device: bytes = weights / N + batch x the cache it holds at this
    context (all read once); flops = 2 x batch x (parameters + the attention
    body's 2 x layers x h x head_dim x context) / N, parameters being
    weights / bytes per weight.  Time is the larger of bytes / bandwidth and
    flops / flops-rate.  Peak rates, perfect overlap, nothing else counted:
    a lower bound, not a measurement.
    """
    split = tensor_parallel(shape.heads, kv_heads, devices)
    per_device = cache_bytes(shape, context=context, batch=batch, dtype=dtype,
                             kv_heads=split.kv_heads_per_device)
    bytes_read = weights // devices + per_device
    params = weights // dtype_bytes(weight_dtype)
    body = 2 * shape.layers * shape.heads * shape.head_dim * context
    work = 2 * batch * (params + body) // devices
    memory_s, compute_s = bytes_read / bandwidth, work / flops
    return Roofline(max(memory_s, compute_s), "memory" if memory_s >= compute_s else "compute",
                    bytes_read, work)


# ---------------------------------------------------------------------------
# Sizes and rates on the command line.
# ---------------------------------------------------------------------------

_UNITS = {"b": 1, "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12,
          "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "tib": 2 ** 40}
_SI = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}


def parse_size(text: str, what: str = "size") -> int:
    """Bytes from '80GiB', '80GB', '1.5 TiB' or a plain number of bytes.

    >>> parse_size("80GiB"), parse_size("80GB"), parse_size("4096")
    (85899345920, 80000000000, 4096)
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(text))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _UNITS and unit != "":
        raise GQAError(f"{what} {text!r} is not a size: give bytes, or a number with one of "
                       f"B, KB, MB, GB, TB, KiB, MiB, GiB, TiB (for example 80GiB)")
    return int(round(float(match.group(1)) * _UNITS[unit or "b"]))


def parse_bandwidth(text: str) -> float:
    """Bytes per second from '2039GB/s', '3.35TB/s' or a plain number."""
    return float(parse_size(re.sub(r"/s\s*$", "", str(text)), "bandwidth"))


def parse_flops(text: str) -> float:
    """FLOP per second from '312T', '312TFLOPS', '3.12e14' or '989 TFLOP/s'."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([kKmMgGtTpP]?)"
                         r"\s*(?:FLOPS|FLOP/s|flops|flop/s)?\s*", str(text))
    if not match:
        raise GQAError(f"compute rate {text!r} is not a rate: give FLOP/s as a number, "
                       f"with an optional k, M, G, T or P (for example 312T or 312TFLOPS)")
    return float(match.group(1)) * _SI[match.group(2).lower()]


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
