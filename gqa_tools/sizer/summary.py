"""gqa_tools.sizer.summary: everything `python -m gqa config` prints, as plain data with exact bytes.

The model beside MHA and MQA (a GQA-family model), or beside MHA (MLA), or
alone (no attention, heads by layer): for each, the bytes per token and per
request, the split over tensor-parallel devices, the requests that fit, and
a roofline decode estimate on named or given hardware.  command.py prints it
as a table, or as JSON.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import gqa
from gqa import GQAError
from gqa_grader.language.i18n import N_, _
from gqa_tools.sizer.cache import (cache_bytes, decode_roofline, device_cache_bytes, max_requests,
                                   per_position, tensor_parallel)
from gqa_tools.sizer.rules import RULES
from gqa_tools.sizer.shape import ModelShape
from gqa_tools.sizer.units import dtype_bytes

# Named hardware for the decode estimate, each with its source.  Peak figures:
# real kernels reach less, which is one more reason the estimate is a bound.
HARDWARE = {
    "a100-80gb-sxm": (2039e9, 312e12, N_("NVIDIA A100 80GB SXM datasheet: 2,039 GB/s HBM2e, "
                                         "312 TFLOPS BF16 dense")),
    "h100-sxm": (3.35e12, 989e12, N_("NVIDIA H100 SXM datasheet: 3.35 TB/s HBM3, "
                                     "989 TFLOPS BF16 dense (1,979 with sparsity)")),
}


# ---------------------------------------------------------------------------
# The answers as plain data: one column per method, exact bytes.
# ---------------------------------------------------------------------------

def columns(shape: ModelShape) -> List[Dict[str, Any]]:
    """What to size: the model beside MHA and MQA (GQA family), or beside MHA (MLA).

    Each column is a label, a ModelShape, the g it shows, and the g it sizes
    the attention layers with (None: each group's own, as the config says).
    """
    if not shape.heads or shape.per_layer:      # no attention, or h and g by layer: the model alone
        return [{"label": "model", "method": shape.method, "kv_heads": shape.kv_heads, "override": None,
                 "shape": shape}]
    if shape.gqa_family:
        gs = sorted({shape.heads, shape.kv_heads, 1}, reverse=True)
        return [{"label": "model" if g == shape.kv_heads else gqa.method_name(shape.heads, g),
                 "method": gqa.method_name(shape.heads, g), "kv_heads": g,
                 "override": None if g == shape.kv_heads else g, "shape": shape} for g in gs]
    as_mha = shape._replace(groups=tuple(
        g._replace(rule="full", kv_heads=shape.heads, head_dim=shape.head_dim, latent=0) if g.rule == "mla" else g
        for g in shape.groups))
    return [{"label": "model", "method": shape.method, "kv_heads": shape.kv_heads, "override": None,
             "shape": shape},
            {"label": "as MHA", "method": "MHA", "kv_heads": shape.heads, "override": shape.heads,
             "shape": as_mha}]


def group_data(shape: ModelShape, *, context: int, source: int, image_tokens: int) -> List[Dict[str, Any]]:
    """Each layer group as plain data: its rule and what it means, the fields it was read
    from, its layers, and the positions one of its layers holds at this context."""
    return [{"rule": g.rule, "rule_means": RULES[g.rule], "layers": g.layers,
             "layer_ids": list(g.layer_ids), "fields": list(g.fields), "kv_heads": g.kv_heads,
             "head_dim": g.head_dim, "window": g.window, "latent": g.latent, "note": g.note,
             "holds": g.holds(), "positions_held": g.positions(context, source, image_tokens),
             "describe": g.describe()} for g in shape.groups]


def summarize(shape: ModelShape, *, context: int, batch: int, dtype: str, memory: Optional[int],
              weights: int, weight_dtype: str, devices: int, bandwidth: Optional[float],
              flops: Optional[float], hardware: Optional[str] = None, source: Optional[int] = None,
              context_from: str = "given with --context", source_from: str = "",
              image_tokens: Optional[int] = None, image_from: str = "",
              dtype_from: str = "given with --dtype", weights_from: str = "") -> Dict[str, Any]:
    """Everything the command prints, as plain data with exact byte counts."""
    source = source if source is not None else shape.source_tokens or context
    image = image_tokens if image_tokens is not None else shape.image_tokens or 0
    model = shape._asdict()
    model["groups"] = group_data(shape, context=context, source=source, image_tokens=image)
    model["notes"] = list(shape.notes)
    out: Dict[str, Any] = {
        "model": model, "method": shape.method, "layer_groups": shape.layer_summary(),
        "settings": {"context": context, "context_from": context_from, "batch": batch,
                     "source": source, "source_from": source_from or _("as --context"),
                     "image_tokens": image, "image_from": image_from,
                     "dtype": dtype, "dtype_from": dtype_from, "bytes_per_value": dtype_bytes(dtype),
                     "tp": devices, "memory": memory, "weights": weights,
                     "weights_from": weights_from or (_("given with --weights") if weights else "")},
        "columns": [],
    }
    sizes = {"context": context, "batch": batch, "dtype": dtype, "source": source, "image_tokens": image}
    cols = columns(shape)
    mha = next((c for c in cols if c["method"] == "MHA"), None)
    mha_token = per_position(mha["shape"], dtype=dtype, kv_heads=mha["override"])["token"] if mha else 0
    for c in cols:
        col = _cache_column(c, mha_token, sizes)
        col["tp"] = _devices_column(shape, c, devices, sizes)
        if memory is not None and "error" not in col["tp"]:
            col["max_requests"] = (max_requests(memory, weights // devices, col["tp"]["bytes_per_device"])
                                   if col["tp"]["bytes_per_device"] else None)
        if bandwidth and flops and "error" not in col["tp"]:
            try:
                col["decode"] = decode_roofline(
                    c["shape"], weights=weights, weight_dtype=weight_dtype, bandwidth=bandwidth,
                    flops=flops, kv_heads=c["override"], devices=devices, **sizes)._asdict()
            except GQAError as err:
                col["decode"] = {"error": str(err)}
        out["columns"].append(col)
    if bandwidth and flops:
        out["hardware"] = {"bandwidth": bandwidth, "flops": flops,
                           "source": _(HARDWARE[hardware][2]) if hardware else _("given on the command line")}
    return out


def _cache_column(c: Dict[str, Any], mha_token: int, sizes: Dict[str, Any]) -> Dict[str, Any]:
    """One column's cache: bytes per token (of context, of the source, of an image), per
    request at sizes (context, batch, dtype, source, image_tokens), and its ratio to MHA."""
    each = per_position(c["shape"], dtype=sizes["dtype"], kv_heads=c["override"])
    col: Dict[str, Any] = {"label": c["label"], "method": c["method"], "kv_heads": c["kv_heads"],
                           "bytes_per_token": each["token"],
                           "bytes_per_source_token": each["source"],
                           "bytes_per_image_token": each["image"],
                           "bytes_per_request": cache_bytes(c["shape"], kv_heads=c["override"], **sizes)}
    col["ratio_to_mha"] = col["bytes_per_token"] / mha_token if mha_token else None
    return col


def _devices_column(shape: ModelShape, c: Dict[str, Any], devices: int,
                    sizes: Dict[str, Any]) -> Dict[str, Any]:
    """One column on `devices` tensor-parallel devices: K/V heads and bytes per device, how
    often each head is stored; {"error": why} when the heads cannot be split so."""
    s, g = c["shape"], c["kv_heads"]
    try:
        device_bytes = device_cache_bytes(s, kv_heads=c["override"], devices=devices, **sizes)
        split = tensor_parallel(shape.heads, g, devices) if shape.heads and not shape.per_layer else None
        return {"kv_heads_per_device": split.kv_heads_per_device if split else 0,
                "replication": devices if s.method == "MLA" else split.replication if split else 1,
                "bytes_per_device": device_bytes,
                "bytes_all_devices": device_bytes * devices}
    except GQAError as err:
        return {"error": str(err)}
