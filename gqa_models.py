"""gqa_models: real models' shapes, read from their config.json, and their KV caches.

The two numbers that decide MHA, GQA or MQA, the query heads h and the
key/value heads g, sit in every model's config file.  From them, the layers
and the head dim, this module answers: which method is it, what does a token
of context cost, how many requests fit in the memory left, what happens on N
tensor-parallel devices, and (as a roofline model, not a measurement) how
fast could it decode.  A library for the tools: `python -m gqa config`
(gqa_config.py) prints its answers, `python -m gqa tables --config` and the
report read shapes with it.  Standard library only: json and arithmetic.

>>> shape = ModelShape.from_config({"num_hidden_layers": 80, "num_attention_heads": 64,
...                                 "num_key_value_heads": 8, "hidden_size": 8192})
>>> shape.method, shape.head_dim
('GQA', 128)
>>> cache_bytes(shape, dtype="bf16")                 # one token: 2 x 80 x 8 x 128 x 2 bytes
327680
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, NamedTuple, Optional, Sequence, Union

import gqa
from gqa import GQAError

# Bytes per stored value, by the names configs and serving engines use.
DTYPE_BYTES = {"fp32": 4, "float32": 4, "fp16": 2, "float16": 2, "bf16": 2, "bfloat16": 2,
               "fp8": 1, "int8": 1}

# The spellings real configs use, in the order they are tried.
QUERY_HEADS = ("num_attention_heads", "n_head", "num_heads")
LAYERS = ("num_hidden_layers", "n_layer", "num_layers")
HIDDEN = ("hidden_size", "n_embd", "d_model")
KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")
MLP_WIDTH = ("intermediate_size", "n_inner", "ffn_hidden_size")

# The MLP's matrices of d_model x d_ff, by model_type, as the model classes of
# HF transformers build them: gate, up and down projections (SwiGLU or GeGLU)
# in LlamaMLP, MistralMLP, Qwen2MLP and GemmaMLP; in and out (c_fc, c_proj;
# dense_h_to_4h, dense_4h_to_h) in GPT-2, GPT-BigCode and Falcon.  A model
# type not named here has mlp_matrices None: nothing is guessed.
MLP_MATRICES = {"llama": 3, "mistral": 3, "qwen2": 3, "gemma": 3,
                "gpt2": 2, "gpt_bigcode": 2, "falcon": 2}

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
    intermediate_size: Optional[int] = None     # d_ff, when the config gives it
    mlp_matrices: Optional[int] = None          # d_model x d_ff matrices of the MLP, when known

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
    d_ff = _field(where, config, MLP_WIDTH, "MLP width", default=0) or None
    return ModelShape(name, layers, heads, kv_heads, head_dim, hidden, d_ff,
                      MLP_MATRICES.get(config.get("model_type")))


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
