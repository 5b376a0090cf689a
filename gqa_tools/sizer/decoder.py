"""gqa_tools.sizer.decoder: a decoder's reader: its attention's sizes, each layer's rule, and its layers grouped.

read_decoder() reads h, g, the head dim and the layers (or the heads of each
layer, where they vary), each layer's rule (layouts.py), the positions a
sliding or chunked layer holds, layers that share another's cache, an MLA
latent, cross-attention to an encoder or an image, and the draft layers;
then groups the layers that cache alike into LayerGroups.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from gqa import GQAError
from gqa_grader.language.i18n import _
from gqa_tools.sizer.families import FAMILIES, Family
from gqa_tools.sizer.fields import (HIDDEN, LAYERS, QUERY_HEADS, Keys, attention_sizes, cannot,
                                    check_divides, head_dim_of, show)
from gqa_tools.sizer.layouts import Layout, read_layout, state_note
from gqa_tools.sizer.readers import Read, draft_layers, latent_of
from gqa_tools.sizer.rules import LayerGroup

# ---------------------------------------------------------------------------
# A decoder's layers, grouped: the shapes and the positions each group holds.
# ---------------------------------------------------------------------------

def read_decoder(keys: Keys, top: Keys, model_type: str, family: Optional[Family],
                 ignore: Tuple[str, ...], overrides: Dict[str, int]) -> Read:
    """A decoder: its attention's sizes, each layer's rule (read_layout), and the groups of
    layers that cache alike."""
    per_layer = _per_layer_heads(keys, overrides)
    layers, heads, kv_heads, head_dim, hidden, shape_fields = per_layer[0] if per_layer else \
        attention_sizes(keys, overrides)
    lay = read_layout(keys, model_type, family, layers, ignore, heads)
    if per_layer:
        lay.q, lay.kv = per_layer[1], per_layer[2]
    rules, held = _held(keys, lay.rules, lay.fields, overrides)
    mla = (0, [])           # type: Tuple[int, List[str]]
    if "mla" in rules:
        mla = latent_of(keys)
        head_dim = keys.int(("v_head_dim",), "value head dim", default=head_dim)   # as MHA would
    own = (kv_heads, head_dim, shape_fields[2:])
    shapes = {"": own, "full": _global_shape(keys, model_type, heads, own)}
    shared_from = _shared_from(keys, model_type, rules, ignore)
    groups = _group(_layer_specs(rules, lay, shared_from, mla, shapes, held))
    groups += _beside(keys, family, model_type, layers, rules, groups)
    image, image_field = (None, "")
    if any(g.rule == "image" for g in groups):
        image, image_field = _image_tokens(keys, top)
    per_layer = len(set(lay.kv or ())) > 1 or len(set(lay.q or ())) > 1
    kv_heads = max(lay.kv) if lay.kv else kv_heads
    return Read(layers, heads, kv_heads, head_dim, hidden, groups, image=image, image_field=image_field,
                per_layer=per_layer)


def _beside(keys: Keys, family: Optional[Family], model_type: str, layers: int, rules: List[str],
            groups: Tuple[LayerGroup, ...]) -> Tuple[LayerGroup, ...]:
    """Groups beside the decoder's own: Falcon-H1's Mamba-2 mixers, cross-attention to an
    encoder (add_cross_attention), and the draft layers of multi-token prediction."""
    extra = ()          # type: Tuple[LayerGroup, ...]
    if "mlp" in rules:
        keys.notes.append(_("{layers} layers have no attention: no cache, no state").format(layers=rules.count("mlp")))
    if model_type == "falcon_h1":           # a Mamba-2 mixer beside the attention of every layer
        note = state_note(keys, family, "Mamba-2").replace(" layers", " mixers beside the attention", 1)
        extra += (LayerGroup("none", layers, note=note,
                             fields=("model_type falcon_h1",), layer_ids=tuple(range(layers))),)
    if keys.get("add_cross_attention") or keys.cross:   # a decoder of an encoder-decoder (GPT-2 after a ViT)
        said = "add_cross_attention" if keys.data.get("add_cross_attention") else "decoder of an encoder-decoder"
        extra += tuple(g._replace(rule="cross", window=None, fields=g.fields + (said,))
                       for g in groups if g.rule == "full")
    elif model_type == "blip_text_model" and keys.get("is_decoder"):
        # BLIP's text decoder: BlipTextLayer builds a crossattention when is_decoder (whatever
        # add_cross_attention says), and caches the K and V of the image's tokens in every layer.
        extra += tuple(g._replace(rule="image", window=None, fields=g.fields + ("model_type blip_text_model, "
                                                                                "is_decoder",))
                       for g in groups if g.rule == "full")
    return extra + draft_layers(keys)


def _per_layer_heads(keys: Keys, overrides: Dict[str, int]
                     ) -> Optional[Tuple[Tuple[int, int, int, int, int, List[str]], List[int], List[int]]]:
    """Heads that vary by layer: OpenELM's num_query_heads and num_kv_heads (lists, over
    num_transformer_layers), DeciLM's num_key_value_heads_per_layer.  ((layers, the largest h,
    the largest g, head dim, hidden size, fields), h by layer, g by layer), or None."""
    if isinstance(keys.data.get("num_query_heads"), list):
        layers, f_layers = keys.num(("num_transformer_layers",) + LAYERS, "layer count")
        q = _count_list(keys, "num_query_heads", layers)
        kv = _count_list(keys, "num_kv_heads", layers)
        fields = [f_layers, "num_query_heads", "num_kv_heads"]
    elif keys.data.get("num_key_value_heads_per_layer") is not None:
        layers, f_layers = keys.num(LAYERS, "layer count")
        q = [keys.int(QUERY_HEADS, "query head count")] * layers
        kv = _count_list(keys, "num_key_value_heads_per_layer", layers)
        fields = [f_layers, "num_attention_heads", "num_key_value_heads_per_layer"]
    else:
        return None
    if overrides.get("kv_heads"):
        kv = [overrides["kv_heads"]] * layers
    hidden, f_hidden = keys.num(HIDDEN, "hidden size", default=0)
    head_dim, f_dim = head_dim_of(keys, overrides, max(q), "num_query_heads", hidden, f_hidden)
    for h, g in zip(q, kv):
        check_divides(keys.where, h, g)
    return (layers, max(q), max(kv), head_dim, hidden, fields + [f_dim]), q, kv


def _count_list(keys: Keys, name: str, layers: int) -> List[int]:
    """A list of one positive count per layer."""
    value = keys.get(name)
    if not isinstance(value, list) or len(value) != layers or \
            any(isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10 ** 6 for v in value):
        raise GQAError(f"config {keys.where}: {name} must list a positive count for each of the "
                       f"{layers} layers; got {show(value)}")
    return value


def _held(keys: Keys, rules: List[str], layout_fields: List[str],
          overrides: Dict[str, int]) -> Tuple[List[str], Dict[str, Tuple[Optional[int], str]]]:
    """The positions a sliding and a chunked layer hold, and the fields that say so:
    (rules, {"sliding": (window, field), "chunked": (chunk, field)}).  --window makes
    every full layer sliding."""
    if overrides.get("window"):
        window, window_field = overrides["window"], "--window"
        rules = ["sliding" if r == "full" else r for r in rules]
    elif "sliding" in rules:
        if "attention_window_size" in layout_fields:
            window, window_field = keys.num(("attention_window_size",), "attention window")
        elif "window_size" in layout_fields:        # GPT-Neo's local layers
            window, window_field = keys.num(("window_size",), "attention window")
        else:
            window, window_field = keys.num(("sliding_window",), "sliding window")
            if keys.get("use_bidirectional_attention") == "all":    # Gemma-4: the class halves it
                window = window // 2 + 1
                window_field = "sliding_window // 2 + 1 (use_bidirectional_attention 'all')"
    else:
        window, window_field = None, ""
    chunk = keys.int(("attention_chunk_size",), "chunk") if "chunked" in rules else None
    return rules, {"sliding": (window, window_field), "chunked": (chunk, "attention_chunk_size")}


def _global_shape(keys: Keys, model_type: str, heads: int,
                  own: Tuple[int, int, List[str]]) -> Tuple[int, int, List[str]]:
    """(g, head dim, their fields) of the full-attention layers: own, the other layers'.
    Gemma-4's global layers have their own head dim, and their own g when attention_k_eq_v
    (Gemma4TextConfig.__post_init__'s per_layer_config)."""
    if model_type != "gemma4_text":
        return own
    g_dim, f_dim = keys.num(("global_head_dim",), "global head dim")
    g_kv, f_kv = own[0], own[2][0]
    global_kv = keys.get("num_global_key_value_heads")      # read; used only with attention_k_eq_v
    if keys.get("attention_k_eq_v") and global_kv is not None:
        g_kv, f_kv = keys.num(("num_global_key_value_heads",), "global key/value heads")
        check_divides(keys.where, heads, g_kv)
    if keys.get("attention_k_eq_v"):
        keys.notes.append("attention_k_eq_v true: the global layers' values are their keys; counted as "
                          "a key and a value per position, as a cache that stores both holds them")
    return g_kv, g_dim, [f_kv, f_dim, "attention_k_eq_v"]


def _shared_from(keys: Keys, model_type: str, rules: List[str],
                 ignore: Tuple[str, ...]) -> Dict[int, Tuple[int, str]]:
    """Layers that keep no cache of their own: {layer: (the earlier layer whose K and V it
    reads, the field that says so)}.  Gemma-3n and Gemma-4: the last num_kv_shared_layers
    layers read the last earlier layer of their own type (Gemma3nTextConfig.kv_sharing_roles).
    Hunyuan with use_cla: every cla_share_factor-th layer computes K and V, the layers between
    reuse them (cross-layer attention: _get_cla_factor and HunYuanCrossAttention in vLLM's
    hunyuan code).  Elsewhere num_kv_shared_layers cannot be sized."""
    if model_type in CLA_FAMILIES or not any(model_type in t for t in (FAMILIES, CLA_FAMILIES)):
        cla = _cross_layer(keys, len(rules))
        if cla:
            return cla
    if model_type not in ("gemma3n_text", "gemma4_text"):
        if keys.data.get("num_kv_shared_layers"):
            cannot(keys, "num_kv_shared_layers", keys.get("num_kv_shared_layers"),
                   "which layers share which cache is known only for Gemma-3n and Gemma-4")
        return {}
    layers = len(rules)
    n_shared = keys.get("num_kv_shared_layers") or 0
    if isinstance(n_shared, bool) or not isinstance(n_shared, int) or not 0 <= n_shared < layers:
        raise GQAError(f"config {keys.where}: num_kv_shared_layers must be a whole number from 0 to "
                       f"{layers - 1}; got {show(n_shared)}")
    first, shared_from = layers - n_shared, {}
    for i in range(first, layers):
        earlier = [j for j in range(first) if rules[j] == rules[i]]
        if not earlier:
            raise GQAError(f"config {keys.where}: layer {i} shares the cache of an earlier "
                           f"{rules[i]} layer, and there is none before layer {first}")
        shared_from[i] = (earlier[-1], "num_kv_shared_layers")
    return shared_from


# The model types whose code reads use_cla and cla_share_factor (cross-layer attention).
CLA_FAMILIES = ("hunyuan", "hunyuan_v1_dense", "hunyuan_v1_moe")


def _cross_layer(keys: Keys, layers: int) -> Dict[int, Tuple[int, str]]:
    """Cross-layer attention: with use_cla, layer i reads the K and V of layer i - i % factor."""
    factor = keys.get("cla_share_factor")
    if not keys.get("use_cla") or factor in (None, 1):
        return {}
    if isinstance(factor, bool) or not isinstance(factor, int) or not 1 <= factor <= layers:
        raise GQAError(f"config {keys.where}: cla_share_factor must be a whole number from 1 to "
                       f"{layers}; got {show(factor)}")
    return {i: (i - i % factor, "cla_share_factor") for i in range(layers) if i % factor}


def _layer_specs(rules: List[str], lay: Layout, shared_from: Dict[int, Tuple[int, str]],
                 mla: Tuple[int, List[str]], shapes: Dict[str, Tuple[int, int, List[str]]],
                 held: Dict[str, Tuple[Optional[int], str]]) -> List[Tuple[Any, ...]]:
    """Each layer's spec for _group, (rule, g, head dim, positions held, latent, note, h,
    fields), in order; a layer that is an MLP alone has none.

    lay: the layout (its fields, and g and h by layer where they vary); shared_from: {layer:
    (the layer whose cache it reads, the field that says so)}; mla: (latent, its fields);
    shapes: {"full": (g, head dim, their fields), "": the same of every other attention
    layer}; held: _held's.
    """
    fields, specs = lay.fields, []          # type: List[str], List[Tuple[Any, ...]]
    for i, rule in enumerate(rules):
        if i in shared_from:
            j, field = shared_from[i]
            note = f"reading the cache of layer {j} ({rules[j]})" if field != "cla_share_factor" else \
                "reusing the K and V of the layer before them that computes its own (cross-layer attention)"
            specs.append(("shared", 0, 0, None, 0, note, 0, (field,) + tuple(fields)))
        elif rule == "mla":
            specs.append(("mla", 0, 0, None, mla[0], "", 0, tuple(mla[1] + fields)))
        elif rule.startswith("none:"):
            specs.append(("none", 0, 0, None, 0, rule[5:], 0, tuple(fields)))
        elif rule != "mlp":
            g, d, where_from = shapes.get(rule, shapes[""])
            g = lay.kv[i] if lay.kv else g
            q = lay.q[i] if lay.q and len(set(lay.q)) > 1 else 0
            size, field = held.get(rule, (None, ""))
            where_from = where_from + fields + ([field] if size else [])
            specs.append((rule, g, d, size, 0, "", q, tuple(dict.fromkeys(where_from))))
    return specs


def _group(specs: List[Tuple[Any, ...]]) -> Tuple[LayerGroup, ...]:
    """Layers with the same rule and shapes, in the order they first appear."""
    ids: Dict[Tuple[Any, ...], List[int]] = {}
    for i, spec in enumerate(specs):
        ids.setdefault(spec[:7], []).append(i)
    fields = {spec[:7]: spec[7] for spec in specs}
    return tuple(LayerGroup(rule, len(ids[key]), g, d, held, latent, note, fields[key], tuple(ids[key]), q)
                 for key in ids for rule, g, d, held, latent, note, q in [key])


def _image_tokens(keys: Keys, top: Keys) -> Tuple[int, str]:
    """An image's tokens, as its vision encoder outputs them: a ViT's patches and its class
    token, (image_size // patch_size)^2 + 1 (BlipVisionEmbeddings); Mllama's, max_num_tiles
    times that, as vLLM's get_max_mllama_image_tokens counts them."""
    vision = top.get("vision_config")
    if not isinstance(vision, dict):
        raise GQAError(f"config {keys.where}: cross-attention layers to an image, and no vision_config "
                       f"to say how many tokens an image has; give --image-tokens")
    mllama = keys.model_type == "mllama_text_model"
    inner = Keys(f"{top.where} vision_config", vision, {}, "mllama_vision_model" if mllama else "", keys.notes)
    tiles = inner.int(("max_num_tiles",), "tiles per image") if mllama else 1
    size = inner.int(("image_size",), "image size")
    patch = inner.int(("patch_size",), "patch size")
    said = f"((image_size {size} // patch_size {patch})^2 + 1)"
    return tiles * ((size // patch) ** 2 + 1), f"vision_config: " + (
        f"max_num_tiles {tiles} x {said}" if mllama else said[1:-1])
