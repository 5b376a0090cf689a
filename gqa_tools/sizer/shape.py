"""gqa_tools.sizer.shape: ModelShape, a model's attention shape, and a config.json read into one.

ModelShape.from_config(path or dict) finds the decoder where a wrapper keeps
it (fields.nested_config), its family's row (families.py), what kind of
model it is and so its reader (kinds.py, READERS), then its longest context,
MLP width and cache dtype, and accounts for every key (accounting.py): the
notes say what was assumed, the warnings come first.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import gqa
from gqa_grader.language import i18n
from gqa_grader.language.i18n import _
from gqa_tools.sizer.accounting import account_config
from gqa_tools.sizer.decoder import read_decoder
from gqa_tools.sizer.families import ALIASES, FAMILIES, MLP_MATRICES, WRAPPERS
from gqa_tools.sizer.fields import MAX_CONTEXT, MLP_WIDTH, Keys, cannot, nested_config, show
from gqa_tools.sizer.files import config_path, load_json
from gqa_tools.sizer.kinds import kind_of
from gqa_tools.sizer.readers import read_encoder_decoder, read_encoder_only, read_mla, read_state_model
from gqa_tools.sizer.rules import LayerGroup


class ModelShape(NamedTuple):
    """A model's attention shape, as its config.json gives it, and its layer groups."""
    name: str
    layers: int
    heads: int          # h, query heads (0: no attention at all)
    kv_heads: int       # g, key/value heads (of the attention layers; 0: none)
    head_dim: int       # d
    hidden_size: int    # d_model
    intermediate_size: Optional[int] = None     # d_ff, when the config gives it
    mlp_matrices: Optional[int] = None          # d_model x d_ff matrices of the MLP, when known
    groups: Tuple[LayerGroup, ...] = ()         # what each group of layers caches
    max_context: Optional[int] = None           # the model's own longest context
    max_context_field: str = ""                 # the field that said so
    notes: Tuple[str, ...] = ()                 # warnings: fields ignored, defaults, overrides
    model_type: str = ""                        # the row of FAMILIES it was read by ("" if none)
    source_tokens: Optional[int] = None         # encoder positions a request holds, when fixed
    source_field: str = ""
    image_tokens: Optional[int] = None          # image tokens a request's cross-attention holds
    image_field: str = ""
    kv_dtype: str = ""                          # the cache's dtype, where the config names one
    kv_dtype_field: str = ""                    # the field that named it
    per_layer: bool = False                     # h or g varies by layer (no single g to compare)

    @property
    def method(self) -> str:
        if any(group.rule == "mla" for group in self.groups):
            return "MLA"
        if not self.heads:
            return "no KV cache"
        if self.per_layer:              # h and g by layer: one name if every layer has it
            names = {gqa.method_name(g.q_heads or self.heads, g.kv_heads) for g in self.groups if g.attention}
            return names.pop() if len(names) == 1 else "GQA"
        return gqa.method_name(self.heads, self.kv_heads)

    @property
    def gqa_family(self) -> bool:
        """True when g is the knob of every cached layer, so MHA and MQA columns mean something."""
        return bool(self.heads) and all(group.rule != "mla" for group in self.groups) and not self.per_layer

    def query_heads(self) -> List[int]:
        """The distinct h of the attention layers (one, unless h varies by layer)."""
        return sorted({g.q_heads or self.heads for g in self.groups if g.attention}) or [self.heads]

    def layer_summary(self) -> str:
        """'40 sliding window 1,024; 8 full attention' (of 48 layers)."""
        parts = []
        for group in self.groups:
            text = group.describe()
            if group.q_heads:
                text += f" (h={group.q_heads}, g={group.kv_heads})"
            elif group.attention and (group.kv_heads, group.head_dim) != (self.kv_heads, self.head_dim):
                text = _("{group} (g={g}, head dim {head_dim})").format(group=text, g=group.kv_heads,
                                                                        head_dim=group.head_dim)
            parts.append(text)
        return i18n.clauses(parts)

    @classmethod
    def from_config(cls, source: Union[str, "os.PathLike[str]", Dict[str, Any]], *,
                    ignore: Sequence[str] = (), overrides: Optional[Dict[str, int]] = None
                    ) -> "ModelShape":
        """Read a config.json (a path, or the parsed dict) into a ModelShape.

        Every key is read, known not to change the cache, or refused: ignore
        names keys to pass over instead (each becomes a warning).  overrides
        sets layers, heads, kv_heads, head_dim or window by hand (each quoted
        in the notes).  A model_type with no row in FAMILIES is sized with a
        warning, first in the notes, naming it and the fields used.

        >>> ModelShape.from_config({"model_type": "gpt_bigcode", "n_layer": 40, "n_head": 48,
        ...                         "n_embd": 6144, "multi_query": True}).kv_heads
        1
        """
        if isinstance(source, dict):
            where, config = "config", source
        else:
            where = config_path(os.fspath(source))
            config = load_json(where)
        return _shape(where, config, tuple(ignore), dict(overrides or {}))


def _name(where: str, top: Dict[str, Any], text: Dict[str, Any]) -> str:
    return str(top.get("_name_or_path") or text.get("_name_or_path") or top.get("model_type") or
               text.get("model_type") or os.path.splitext(os.path.basename(where.split(" (")[0]))[0])


# The fields that list every layer's kind: where one was read, other lists of one entry
# per layer cannot say the layout again (accounting.changes_by_value).
LAYOUT_LISTS = ("layer_types", "hybrid_override_pattern", "layers_block_type", "attn_type_list", "block_configs",
                "attention_types", "block_types", "_block_types")

# The readers, by the name kinds.kind_of gives.
READERS = {"decoder": read_decoder, "mla": read_mla, "encoder_decoder": read_encoder_decoder,
           "state": read_state_model, "encoder": read_encoder_only, "bidirectional": read_encoder_only}


def _shape(where: str, top: Dict[str, Any], ignore: Tuple[str, ...],
           overrides: Dict[str, int]) -> ModelShape:
    notes: List[str] = [_("{option} {value} given by hand").format(option=f"--{k.replace('_', '-')}", value=v)
                        for k, v in overrides.items()]
    top_type = str(top.get("model_type") or "")
    text, where, nested = nested_config(where, top)
    model_type = str(text.get("model_type") or WRAPPERS.get(top_type) or top_type)
    model_type = ALIASES.get(model_type, model_type)
    family = FAMILIES.get(model_type)
    keys = Keys(where, text, family.defaults if family else {}, model_type, notes)
    top_keys = keys if text is top else Keys(where.split(" (")[0], top, {}, top_type, notes)
    keys.cross = nested == "decoder"
    keys.get("model_type"), top_keys.get("model_type"), top_keys.get(nested) if nested else None
    keys.kind = kind_of(keys, top_keys, family)
    reader = keys.kind.reader
    found = READERS[reader](keys, top_keys, model_type, family, ignore, overrides)
    keys.sizes = {"reader": reader, "layers": found.layers, "kv_heads": found.kv_heads,
                  "head_dim": found.head_dim, "rules": {g.rule for g in found.groups},
                  "layout_list": any(n in keys.read and isinstance(keys.data.get(n), (list, str))
                                     for n in LAYOUT_LISTS)}
    max_context, field = _context(keys)
    width = keys.int(MLP_WIDTH, "MLP width", default=0) if reader == "decoder" else 0
    dtype, dtype_field = _cache_dtype(top_keys, keys)
    keys.get("is_encoder_decoder")
    account_config(keys, top_keys, top_type, family, model_type, ignore, overrides, notes)
    warnings = [n for n in notes if n.startswith(("WARNING", "NOTE"))]
    notes = warnings + [n for n in notes if not n.startswith(("WARNING", "NOTE"))]
    return ModelShape(_name(where, top, text), found.layers, found.heads, found.kv_heads, found.head_dim,
                      found.hidden, width or None, MLP_MATRICES.get(model_type) if width else None,
                      found.groups, max_context, field, tuple(notes), model_type if family else "",
                      found.source, found.source_field, found.image, found.image_field,
                      dtype, dtype_field, found.per_layer)


def _context(keys: Keys) -> Tuple[Optional[int], str]:
    """The model's longest context: the first of its spellings set (the others set aside)."""
    given = [name for name in MAX_CONTEXT if keys.get(name) is not None]
    return keys.num(given[:1], "context") if given else (None, "")


# The cache's own dtype, where a config names it: vLLM's kv_cache_dtype, and the KV scheme of
# a quantization_config (compressed-tensors' kv_cache_scheme, ModelOpt's kv_cache_quant_algo).
KV_DTYPES = {"fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "fp8_inc": "fp8", "int8": "int8",
             "bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16",
             "float32": "fp32", "fp32": "fp32"}


def _cache_dtype(top: Keys, keys: Keys) -> Tuple[str, str]:
    """(the cache dtype the config names, the field that names it), or ("", "")."""
    for where in (keys, top):
        named = where.get("kv_cache_dtype")
        if named is not None and str(named).lower() != "auto":
            if str(named).lower() not in KV_DTYPES:
                cannot(where, "kv_cache_dtype", named, f"not one of {', '.join(KV_DTYPES)}")
            return KV_DTYPES[str(named).lower()], f"kv_cache_dtype {show(named)}"
    quant = top.get("quantization_config") if keys is top else (top.get("quantization_config") or
                                                                keys.get("quantization_config"))
    if not isinstance(quant, dict):
        return "", ""
    scheme, algo = quant.get("kv_cache_scheme"), quant.get("kv_cache_quant_algo")
    if isinstance(scheme, dict):
        bits, kind = scheme.get("num_bits"), scheme.get("type")
        if bits == 8 and kind in ("float", "int"):
            return ("fp8" if kind == "float" else "int8"), \
                f"quantization_config.kv_cache_scheme ({bits}-bit {kind})"
        cannot(top, "quantization_config.kv_cache_scheme", scheme, "only 8-bit schemes are read")
    if algo is not None:
        if str(algo).upper() != "FP8":
            cannot(top, "quantization_config.kv_cache_quant_algo", algo, "only FP8 is read")
        return "fp8", f"quantization_config.kv_cache_quant_algo {show(algo)}"
    return "", ""
