"""gqa_tools.sizer.layouts: which layer of a decoder caches by which rule, one mechanism per way a config says it.

A decoder's config says which layer follows which rule in one of a dozen
ways: layer_types, a pattern, a period, index lists, block configs, a
window, chunks, ...  LAYOUTS holds one function for each, named after the
first field it reads (`_layout_<field>`), in their order of precedence;
each applies only where the family's code reads its field (Layout.honours).
read_layout() runs them in turn: every layer full when none speaks.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

from gqa import GQAError
from gqa_tools.sizer.accounting import HARMLESS
from gqa_tools.sizer.families import Family
from gqa_tools.sizer.fields import Keys, cannot, index_list, show

# layer_types values, and what each layer caches.  "attention" is Granite-4.0-H's
# spelling beside "mamba"; "conv" is LFM2's short convolution.
LAYER_TYPES = {"full_attention": "full", "attention": "full", "sliding_attention": "sliding",
               "chunked_attention": "chunked", "linear_attention": "none:linear attention",
               "mamba": "none:Mamba", "conv": "none:short-convolution"}


# The spellings of a state's sizes, read and quoted for a family without a row.
STATE_FIELD = re.compile(r"^(mamba_|ssm_|linear_(num|key|value|conv)|conv_|short_conv|lru_|n_groups$|"
                         r"state_size$|expand$|conv_kernel$)")


def state_note(keys: Keys, family: Optional[Family], fallback: str) -> str:
    """'Mamba layers (state: mamba_d_state 16, mamba_d_conv 4, mamba_expand 2)'."""
    what, fields = family.state if family and family.state[0] else (fallback, ())
    if not fields:          # no row: the keys that name a state are its fields, quoted
        fields = tuple(k for k in keys.data if STATE_FIELD.match(k) and not HARMLESS.search(k))
    shown = []
    for field in fields:
        if field.startswith("linear_attn_config."):
            inner = keys.get("linear_attn_config") or {}
            value = inner.get(field.split(".", 1)[1]) if isinstance(inner, dict) else None
        else:
            value = keys.get(field)
        if value is not None:
            shown.append(f"{field} {show(value)}")
    return f"{what} layers" + (f" (state: {', '.join(shown)})" if shown else "")


class Layout:
    """A decoder's layout as the mechanisms of LAYOUTS read it, one after another.

    rules: each layer's rule, "full", "sliding", "chunked", "mla", "image",
    "mlp" (no attention) or "none:<what>", once a mechanism has said it (None
    before); fields: the config fields that said so.
    """

    def __init__(self, keys: Keys, model_type: str, family: Optional[Family], layers: int,
                 ignore: Tuple[str, ...], heads: int = 0):
        self.keys, self.model_type, self.family = keys, model_type, family
        self.layers, self.ignore, self.heads = layers, ignore, heads
        self.rules = None           # type: Optional[List[str]]
        self.fields = []            # type: List[str]
        self.kv = None              # type: Optional[List[int]]   # g of each layer, where it varies
        self.q = None               # type: Optional[List[int]]   # h of each layer, where it varies

    def cannot(self, field: str, value: object) -> None:
        """A value that changes the cache in a way no rule reads: refused, never ignored."""
        cannot(self.keys, field, value)

    def honours(self, *model_types: str) -> bool:
        """True when the family's code reads the mechanism's field: one of model_types, or a
        model type with no row (sized with its warning)."""
        return self.family is None or self.model_type in model_types

    def state(self, what: str) -> str:
        """The rule of a layer that holds a state of fixed size instead of a cache."""
        return "none:" + state_note(self.keys, self.family, what)

    def agree(self, said: List[str], source: str, which: str) -> None:
        """Where layer_types said the layout already, source must put full attention on the same layers."""
        if self.rules is not None and [r == "full" for r in self.rules] != [r == "full" for r in said]:
            raise GQAError(f"config {self.keys.where}: {source} and layer_types disagree "
                           f"on which layers are {which}")


def _layout_attn_layer_indices(lay: Layout) -> None:
    """Falcon-H1: attn_layer_indices, which the sizer does not read (it puts attention in
    every layer)."""
    indices = lay.keys.data.get("attn_layer_indices")
    if indices is None:
        return
    if lay.model_type == "falcon_h1":
        lay.cannot("attn_layer_indices", indices)
    if lay.rules is None and lay.honours("bamba"):
        lay.keys.get("attn_layer_indices")
        at = set(index_list(lay.keys, "attn_layer_indices", indices, lay.layers, 0))
        lay.rules = ["full" if i in at else lay.state("Mamba-2") for i in range(lay.layers)]
        lay.fields.append("attn_layer_indices")


# The fields of a Nemotron-NAS block's attention (DeciLM's AttentionConfig) that the sizer
# reads; the others (window_length, num_sink_tokens, sparsify, ...) must be unset.
NAS_ATTENTION = ("n_heads_in_group", "no_op", "replace_with_linear")


def _layout_block_configs(lay: Layout) -> None:
    """Nemotron-NAS (DeciLM; Llama-3.1-Nemotron-51B, Nano, Super, Ultra): block_configs, one per
    layer.  A block's attention has h // n_heads_in_group key/value heads, or none at all
    (no_op, or replace_with_linear: a linear layer in its place), and then no cache."""
    if lay.keys.data.get("block_configs") is None or not lay.honours("nemotron-nas", "deci"):
        return
    blocks = lay.keys.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) != lay.layers or \
            not all(isinstance(b, dict) and isinstance(b.get("attention"), dict) for b in blocks):
        lay.cannot("block_configs", blocks)
    rules, kv = [], []
    for i, block in enumerate(blocks):
        attention = block["attention"]
        others = {k: v for k, v in attention.items() if k not in NAS_ATTENTION and v not in (None, False)}
        group = attention.get("n_heads_in_group")
        if others:
            lay.cannot(f"block_configs[{i}].attention", others)
        if attention.get("no_op") or attention.get("replace_with_linear"):
            rules.append("mlp")
            kv.append(0)
        elif isinstance(group, bool) or not isinstance(group, int) or group < 1 or lay.heads % group:
            lay.cannot(f"block_configs[{i}].attention.n_heads_in_group", group)
        else:
            rules.append("full")
            kv.append(lay.heads // group)
    lay.rules, lay.kv = rules, kv
    lay.fields.append("block_configs")


def _layout_layers_block_type(lay: Layout) -> None:
    """Zamba and Zamba2: layers_block_type, one per layer: "hybrid" layers run the shared
    attention block (each with a cache of its own), "mamba" layers a Mamba mixer alone."""
    if lay.keys.data.get("layers_block_type") is None or lay.rules is not None or \
            not lay.honours("zamba", "zamba2"):
        return
    types = lay.keys.get("layers_block_type")
    if not isinstance(types, list) or len(types) != lay.layers or set(types) - {"mamba", "hybrid"}:
        lay.cannot("layers_block_type", types)
    lay.rules = ["full" if t == "hybrid" else lay.state("Mamba") for t in types]
    lay.fields.append("layers_block_type")
    ids = lay.keys.get("hybrid_layer_ids")
    if ids is not None and sorted(index_list(lay.keys, "hybrid_layer_ids", ids, lay.layers, 0)) != \
            [i for i, t in enumerate(types) if t == "hybrid"]:
        raise GQAError(f"config {lay.keys.where}: hybrid_layer_ids {show(ids)} and layers_block_type "
                       f"disagree on which layers are hybrid")


def _layout_attention_types(lay: Layout) -> None:
    """GPT-Neo: attention_types, [[kinds, n], ...]: the kinds repeated n times make the layers;
    "local" layers attend to the last window_size positions, "global" ones to all."""
    if lay.keys.data.get("attention_types") is None or lay.rules is not None or not lay.honours("gpt_neo"):
        return
    spec = lay.keys.get("attention_types")
    kinds = []          # type: List[Any]
    try:
        for pattern, times in spec:
            kinds += list(pattern) * times
    except (TypeError, ValueError):
        lay.cannot("attention_types", spec)
    if len(kinds) != lay.layers or set(kinds) - {"global", "local"}:
        lay.cannot("attention_types", spec)
    # GPTNeoConfig saves the expansion as attention_layers, which the model's code reads per layer
    # (and which a config's own list overrides when the class is built): the two must agree.
    listed = lay.keys.get("attention_layers")
    if listed is not None and listed != kinds:
        raise GQAError(f"config {lay.keys.where}: attention_layers {show(listed)} and attention_types "
                       f"{show(spec)} disagree on which layers are local")
    lay.rules = ["sliding" if k == "local" else "full" for k in kinds]
    lay.fields += ["attention_types", "window_size"] + (["attention_layers"] if listed is not None else [])


def _layout_blocksparse(lay: Layout) -> None:
    """Phi-3-small: block-sparse attention in all layers but every dense_attention_every_n_layers-th.
    A block-sparse layer attends to local blocks and to a vertical stride of blocks reaching
    back to the first token, so it caches every position, as a dense layer does."""
    keys = lay.keys
    names = [k for k in keys.data if k.startswith("blocksparse_")] + ["dense_attention_every_n_layers"]
    if not any(keys.data.get(n) is not None for n in names) or not lay.honours("phi3small"):
        return
    for name in names:
        keys.get(name)
    lay.fields += ["dense_attention_every_n_layers", "blocksparse_block_size"]


def _layout_layer_types(lay: Layout) -> None:
    """layer_types, one per layer (see LAYER_TYPES); when Gemma-3n's or Gemma-4's config
    leaves it out, the class's default: every 5th (6th) layer full, the rest sliding."""
    keys, model_type, layers = lay.keys, lay.model_type, lay.layers
    types = keys.get("layer_types")
    if types is None and model_type in ("gemma3n_text", "gemma4_text"):
        period = 5 if model_type == "gemma3n_text" else 6          # the class's own default
        types = ["full_attention" if (i + 1) % period == 0 or (model_type == "gemma4_text" and i == layers - 1)
                 else "sliding_attention" for i in range(layers)]
        keys.notes.append(f"layer_types: the {model_type} default (the config does not set it): every "
                          f"{period}th layer full, the rest sliding")
    if types is None:
        return
    if not isinstance(types, list) or len(types) != layers:
        raise GQAError(f"config {keys.where}: layer_types must list the {layers} layers; "
                       f"got {show(types)}")
    rules = []
    for t in types:
        if isinstance(t, str) and t in LAYER_TYPES:
            kind = LAYER_TYPES[t]
            rules.append(lay.state(kind[5:]) if kind.startswith("none:") else kind)
        else:
            lay.cannot("layer_types", t)
    lay.rules = rules
    lay.fields.append("layer_types")
    if model_type == "gemma4_text" and rules[-1] != "full":      # Gemma4TextConfig forces it
        rules[-1] = "full"
        keys.notes.append("layer_types: the last layer is full attention, as the gemma4_text "
                          "class forces it")


def _layout_full_attn_idxs(lay: Layout) -> None:
    """LFM2: full_attn_idxs, 0-based, are attention; the rest short convolutions."""
    idxs = lay.keys.get("full_attn_idxs")
    if idxs is None:
        return
    at = set(index_list(lay.keys, "full_attn_idxs", idxs, lay.layers, 0))
    said = ["full" if i in at else lay.state("short-convolution") for i in range(lay.layers)]
    lay.agree(said, f"full_attn_idxs {show(idxs)}", "attention")
    lay.rules = lay.rules or said
    lay.fields.append("full_attn_idxs")


def _layout_block_types(lay: Layout) -> None:
    """RecurrentGemma: block_types (or _block_types), repeated over the layers: attention in a
    window of attention_window_size, the rest RG-LRU recurrences."""
    keys = lay.keys
    named = [n for n in ("_block_types", "block_types") if keys.data.get(n) is not None]
    if lay.rules is not None or not (named or lay.model_type == "recurrent_gemma"):
        return
    name = named[0] if named else "block_types"
    blocks = keys.get(name)
    if len(named) == 2 and keys.get(named[1]) != blocks:
        raise GQAError(f"config {keys.where}: _block_types and block_types disagree")
    if not isinstance(blocks, list) or not blocks or set(blocks) - {"recurrent", "attention"}:
        raise GQAError(f"config {keys.where}: {name} must be a list of 'recurrent' and 'attention'; "
                       f"got {show(blocks)}")
    lay.rules = ["sliding" if blocks[i % len(blocks)] == "attention" else lay.state("recurrent")
                 for i in range(lay.layers)]
    lay.fields += [name, "attention_window_size"]


def _layout_linear_attn_config(lay: Layout) -> None:
    """Kimi Linear: linear_attn_config's full_attn_layers, 1-based, are MLA; its kda_layers,
    the rest, linear attention."""
    keys, layers = lay.keys, lay.layers
    linear = keys.get("linear_attn_config")
    if lay.rules is not None or not isinstance(linear, dict):
        return
    inner = Keys(f"{keys.where} linear_attn_config", linear, {}, lay.model_type, keys.notes)
    keys.nested.append(("linear_attn_config.", inner))
    full = set(index_list(inner, "full_attn_layers", inner.get("full_attn_layers"), layers, 1))
    kda = inner.get("kda_layers")
    if kda is not None and set(index_list(inner, "kda_layers", kda, layers, 1)) != set(range(layers)) - full:
        raise GQAError(f"config {keys.where}: linear_attn_config: full_attn_layers and kda_layers must "
                       f"share the {layers} layers between them (1-based)")
    for name in ("num_heads", "head_dim", "short_conv_kernel_size"):
        inner.get(name)
    lay.rules = ["mla" if i in full else lay.state("linear attention") for i in range(layers)]
    lay.fields.append("linear_attn_config.full_attn_layers")


def _layout_hybrid_override_pattern(lay: Layout) -> None:
    """Nemotron-H: hybrid_override_pattern, a character per layer: * attention, M Mamba-2,
    - and E an MLP alone."""
    pattern = lay.keys.get("hybrid_override_pattern")
    if lay.rules is not None or pattern is None:
        return
    pattern = str(pattern)
    if len(pattern) != lay.layers or set(pattern) - set("M*-E"):
        lay.cannot("hybrid_override_pattern", pattern)
    lay.rules = ["full" if c == "*" else lay.state("Mamba") if c == "M" else "mlp" for c in pattern]
    lay.fields.append("hybrid_override_pattern")


def _layout_attn_layer_period(lay: Layout) -> None:
    """Jamba: attention every attn_layer_period layers from attn_layer_offset, Mamba between."""
    keys = lay.keys
    if lay.rules is not None or keys.get("attn_layer_period") is None:
        return
    period = keys.int(("attn_layer_period",), "attention period")
    offset = keys.get("attn_layer_offset") or 0
    lay.rules = ["full" if i % period == offset else lay.state("Mamba") for i in range(lay.layers)]
    lay.fields += ["attn_layer_period", "attn_layer_offset"]


def _layout_attn_type_list(lay: Layout) -> None:
    """MiniMax: attn_type_list, one per layer: 1 softmax attention, 0 lightning (linear) attention."""
    kinds = lay.keys.get("attn_type_list")
    if lay.rules is not None or kinds is None:
        return
    if not isinstance(kinds, list) or len(kinds) != lay.layers or set(kinds) - {0, 1}:
        lay.cannot("attn_type_list", kinds)
    lay.rules = ["full" if k == 1 else lay.state("lightning-attention") for k in kinds]
    lay.fields.append("attn_type_list")


def _layout_full_attention_interval(lay: Layout) -> None:
    """Qwen3-Next: every full_attention_interval-th layer is full, the rest linear attention."""
    if lay.keys.get("full_attention_interval") is None:
        return
    n = lay.keys.int(("full_attention_interval",), "full attention interval")
    said = ["full" if (i + 1) % n == 0 else lay.state("linear attention") for i in range(lay.layers)]
    lay.agree(said, f"full_attention_interval {n}", "full attention")
    lay.rules = lay.rules or said
    lay.fields.append("full_attention_interval")


def _layout_attention_chunk_size(lay: Layout) -> None:
    """Llama-4: attention in chunks of attention_chunk_size where no_rope_layers says 1, full
    where it says 0; without the list, every no_rope_layer_interval-th layer full (the class
    default).  Beside layer_types, only the size of its chunked layers."""
    keys, layers = lay.keys, lay.layers
    chunk = keys.get("attention_chunk_size")
    if chunk is None or not (lay.rules is None or "chunked" in lay.rules):
        return
    no_rope = keys.get("no_rope_layers")
    if not no_rope and lay.model_type == "llama4_text" and lay.rules is None:
        # Llama4TextConfig: an empty or missing list means every interval-th layer is full (NoPE).
        n = keys.int(("no_rope_layer_interval",), "no-rope layer interval")
        no_rope = [int((i + 1) % n != 0) for i in range(layers)]
        keys.notes.append(f"no_rope_layers: the llama4_text default (the config gives no list): every "
                          f"{n}th layer (no_rope_layer_interval) is full attention, the rest chunked")
        lay.fields.append("no_rope_layer_interval")
    if lay.rules is None:
        if not isinstance(no_rope, list) or len(no_rope) != layers:
            lay.cannot("attention_chunk_size", chunk)
        lay.rules = ["chunked" if r else "full" for r in no_rope]
        lay.fields.append("no_rope_layers")
    lay.fields.append("attention_chunk_size")


def _layout_cross_attention_layers(lay: Layout) -> None:
    """Mllama: cross_attention_layers, 0-based, attend to the image; the rest as said, else full."""
    cross = lay.keys.get("cross_attention_layers")
    if cross is None:
        return
    at = set(index_list(lay.keys, "cross_attention_layers", cross, lay.layers, 0))
    lay.rules = ["image" if i in at else r for i, r in enumerate(lay.rules or ["full"] * lay.layers)]
    lay.fields.append("cross_attention_layers")


def _layout_sliding_window(lay: Layout) -> None:
    """sliding_window on every layer (Mistral), unless use_sliding_window is false (Qwen2);
    which layers stay full: Gemma-3's sliding_window_pattern, Gemma-2's rule (the odd ones)."""
    keys, layers = lay.keys, lay.layers
    window = keys.get("sliding_window")
    use = keys.get("use_sliding_window")
    if lay.rules is not None or window is None or use is False:
        return
    if lay.family and not lay.family.sliding:
        keys.notes.append(f"sliding_window {show(window)} is set aside: {lay.family.name}'s code has no "
                          f"sliding window, every layer attends to every position")
        return
    if use and keys.get("max_window_layers") not in (None, layers):
        lay.cannot("max_window_layers", keys.get("max_window_layers"))
    if keys.get("sliding_window_pattern") is not None:          # Gemma-3: every P-th is global
        p = keys.int(("sliding_window_pattern",), "sliding window pattern")
        lay.rules = ["full" if (i + 1) % p == 0 else "sliding" for i in range(layers)]
        lay.fields.append("sliding_window_pattern")
    elif lay.model_type == "gemma2":                              # every other layer, from 0
        lay.rules = ["sliding" if i % 2 == 0 else "full" for i in range(layers)]
        lay.fields.append("model_type gemma2")
        keys.notes.append("layer_types: the gemma2 default (the config does not set it): "
                          "sliding on even layers, full on odd")
    else:
        lay.rules = ["sliding"] * layers
    lay.fields.append("sliding_window")


def _layout_sliding_window_size(lay: Layout) -> None:
    """sliding_window_size, an older spelling beside sliding_window: the two must agree.  The
    window's pattern and max_window_layers, said again beside layer_types or moot without a
    window, are set aside."""
    keys = lay.keys
    for name in ("sliding_window_pattern", "_sliding_window_pattern", "max_window_layers"):
        keys.seen(name)
    size, window = keys.seen("sliding_window_size"), keys.get("sliding_window")
    if size is not None and size != window:
        said = show(window) if window is not None or "sliding_window" in keys.data else "(not set)"
        raise GQAError(f"config {keys.where}: sliding_window_size {show(size)} and sliding_window {said} "
                       f"disagree: which the model's code reads, and how (a window, or a ring of the last "
                       f"tokens after a prefill kept whole), no rule knows; size it by hand from its code")


# The mechanisms, in their order of precedence.  Each reads the fields it is named
# after and, when they are there, says every layer's rule (when no mechanism before
# it has), checks what one before it said (they must agree), or refines it (the
# chunks of chunked layers, the cross-attention layers).
LAYOUTS = (_layout_block_configs, _layout_layer_types, _layout_attn_layer_indices,
           _layout_full_attn_idxs, _layout_layers_block_type, _layout_block_types,
           _layout_linear_attn_config, _layout_hybrid_override_pattern, _layout_attn_layer_period,
           _layout_attn_type_list, _layout_full_attention_interval, _layout_attention_types,
           _layout_attention_chunk_size, _layout_cross_attention_layers, _layout_blocksparse,
           _layout_sliding_window, _layout_sliding_window_size)


def read_layout(keys: Keys, model_type: str, family: Optional[Family], layers: int,
                ignore: Tuple[str, ...], heads: int) -> Layout:
    """What each decoder layer caches, and the fields that said so: LAYOUTS, in order;
    every layer full when none of them speaks."""
    lay = Layout(keys, model_type, family, layers, ignore, heads)
    for mechanism in LAYOUTS:
        mechanism(lay)
    lay.rules = lay.rules or ["full"] * layers
    lay.fields = lay.fields or ["every layer"]
    return lay
