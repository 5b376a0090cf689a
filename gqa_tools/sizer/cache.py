"""gqa_tools.sizer.cache: the arithmetic: bytes per token and per request, requests that fit, devices.

Each layer group holds values per position by its rule (rules.py); the
bytes are the sum over the groups, at a dtype, a context, a batch, and the
source and image tokens of cross-attention.  Over N tensor-parallel devices
each attention group splits its key/value heads (or replicates them); an
MLA latent is held whole by every device.  decode_roofline is a bound from
peak rates, not a measurement.
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Sequence

from gqa import GQAError
from gqa_grader.language.i18n import _
from gqa_tools.sizer.rules import LayerGroup
from gqa_tools.sizer.shape import ModelShape
from gqa_tools.sizer.units import dtype_bytes

# ---------------------------------------------------------------------------
# What it computes.
# ---------------------------------------------------------------------------

def cache_bytes(shape: ModelShape, *, context: int = 1, batch: int = 1, dtype: Optional[str] = None,
                kv_heads: Optional[int] = None, source: Optional[int] = None,
                image_tokens: Optional[int] = None) -> int:
    """Bytes of KV cache for batch sequences of context tokens, layer group by layer group.

    An attention layer holds 2 x g x head_dim values per position, for
    every position (full), the last `window` (sliding) or the current chunk
    (chunked); an MLA layer holds its latent per position; cross-attention
    holds source positions (default: the model's own, else context) or
    image tokens (default: the model's own); a layer that shares another's
    cache, or holds a state of fixed size, holds no KV cache.  kv_heads
    overrides g, to ask what MHA (g = h) or MQA (g = 1) would need.  dtype
    defaults to the cache dtype the config names, else bf16.

    >>> s = ModelShape.from_config({"num_hidden_layers": 2, "num_attention_heads": 4,
    ...                             "hidden_size": 32, "sliding_window": 3})
    >>> cache_bytes(s, context=10, dtype="fp8")      # 2 layers x 2 x 4 heads x 8 x 3 positions
    384
    """
    groups = shape.groups or (LayerGroup("full", shape.layers, shape.kv_heads, shape.head_dim),)
    return _bytes(groups, context, batch, dtype or shape.kv_dtype or "bf16", kv_heads,
                  _source(shape, context, source), _image(shape, image_tokens))


def _source(shape: ModelShape, context: int, source: Optional[int]) -> int:
    return source if source is not None else shape.source_tokens or context


def _image(shape: ModelShape, image_tokens: Optional[int]) -> int:
    return image_tokens if image_tokens is not None else shape.image_tokens or 0


def per_position(shape: ModelShape, *, dtype: Optional[str] = None,
                 kv_heads: Optional[int] = None) -> Dict[str, int]:
    """Bytes one position adds, apart: a generated token (its own layers), a source token
    (cross-attention to an encoder) and an image token (cross-attention to an image).

    >>> t5 = ModelShape.from_config({"model_type": "t5", "num_layers": 2, "num_heads": 4,
    ...                              "d_kv": 8, "d_model": 32})
    >>> per_position(t5, dtype="fp8")                # 2 layers x 2 x 4 heads x 8, each
    {'token': 128, 'source': 128, 'image': 0}
    """
    groups = shape.groups or (LayerGroup("full", shape.layers, shape.kv_heads, shape.head_dim),)
    dtype = dtype or shape.kv_dtype or "bf16"
    return {"token": _bytes(groups, 1, 1, dtype, kv_heads, 0, 0),
            "source": _bytes([g for g in groups if g.rule == "cross"], 0, 1, dtype, kv_heads, 1, 0),
            "image": _bytes([g for g in groups if g.rule == "image"], 0, 1, dtype, kv_heads, 0, 1)}


def _bytes(groups: Sequence[LayerGroup], context: int, batch: int, dtype: str,
           kv_heads: Optional[int], source: int, image: int) -> int:
    return batch * dtype_bytes(dtype) * sum(
        g.layers * g.values_per_token(kv_heads) * g.positions(context, source, image) for g in groups)


def max_requests(memory: int, weights: int, request_bytes: int) -> int:
    """How many requests fit: (memory - weights) // one request's cache, never below 0."""
    if request_bytes <= 0:
        raise GQAError(_("max_requests: a request's cache must be positive; got {bytes}").format(bytes=request_bytes))
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
        raise GQAError(_("tensor_parallel: devices must be a positive int; got {devices}").format(devices=repr(devices)))
    if heads % devices:
        raise GQAError(_("tensor_parallel: {devices} devices do not divide h={heads} query heads").format(
            devices=devices, heads=heads))
    if kv_heads % devices and devices % kv_heads:
        raise GQAError(_("tensor_parallel: neither of g={g} key/value heads and {devices} devices divides the "
                         "other").format(g=kv_heads, devices=devices))
    if devices <= kv_heads:
        return Split(devices, kv_heads // devices, 1)
    return Split(devices, 1, devices // kv_heads)


class Roofline(NamedTuple):
    """A decode step's bound on one device: the larger of reading and computing."""
    seconds: float
    bound: str              # "memory" or "compute"
    bytes_read: int
    flops: int


def device_cache_bytes(shape: ModelShape, *, context: int, batch: int, dtype: str,
                       kv_heads: Optional[int], devices: int, source: Optional[int] = None,
                       image_tokens: Optional[int] = None) -> int:
    """The cache one of `devices` tensor-parallel devices holds.

    Each attention group splits its key/value heads (tensor_parallel; kv_heads
    None keeps each group's own g); an MLA latent is not split by heads, so
    every device holds all of it.
    """
    src, img = _source(shape, context, source), _image(shape, image_tokens)
    groups = shape.groups or (LayerGroup("full", shape.layers, shape.kv_heads, shape.head_dim),)
    total = 0
    for group in groups:
        if group.attention:
            split = tensor_parallel(group.q_heads or shape.heads,
                                    group.kv_heads if kv_heads is None else kv_heads, devices)
            total += _bytes([group], context, batch, dtype, split.kv_heads_per_device, src, img)
        elif group.rule == "mla":
            total += _bytes([group], context, batch, dtype, None, src, img)
    return total


def decode_roofline(shape: ModelShape, *, context: int, batch: int, dtype: str, weights: int,
                    weight_dtype: str, bandwidth: float, flops: float, kv_heads: Optional[int],
                    devices: int = 1, source: Optional[int] = None,
                    image_tokens: Optional[int] = None) -> Roofline:
    """Estimate one decode step (a token for each of batch sequences): a roofline model.

    Per device: bytes = weights / N + batch x the cache it holds at this
    context (all read once); flops = 2 x batch x (parameters + the attention
    body, 2 x h x head_dim x the positions each attention layer attends to)
    / N, parameters being weights / bytes per weight.  Time is the larger of
    bytes / bandwidth and flops / flops-rate.  Peak rates, perfect overlap,
    nothing else counted: a lower bound, not a measurement.  MLA layers are
    refused: their attention arithmetic is not this one.
    """
    if any(g.rule == "mla" for g in shape.groups):
        raise GQAError(_("decode_roofline: not estimated for MLA layers, whose attention arithmetic (the latent "
                         "absorbed into the projections) this model does not count"))
    src, img = _source(shape, context, source), _image(shape, image_tokens)
    bytes_read = weights // devices + device_cache_bytes(
        shape, context=context, batch=batch, dtype=dtype, kv_heads=kv_heads, devices=devices,
        source=source, image_tokens=image_tokens)
    params = weights // dtype_bytes(weight_dtype)
    groups = shape.groups or (LayerGroup("full", shape.layers, shape.kv_heads, shape.head_dim),)
    body = sum(2 * g.layers * (g.q_heads or shape.heads) * g.head_dim * g.positions(context, src, img)
               for g in groups if g.attention)
    work = 2 * batch * (params + body) // devices
    memory_s, compute_s = bytes_read / bandwidth, work / flops
    return Roofline(max(memory_s, compute_s), "memory" if memory_s >= compute_s else "compute",
                    bytes_read, work)


# ---------------------------------------------------------------------------
