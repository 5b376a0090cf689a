"""gqa_tools.sizer.readers: Read, what a reader finds, and the readers of models that are not plain decoders.

A reader takes one config object (and the wrapper around it) and returns a
Read: the sizes, and the layer groups each with its rule.  Here: MLA
(DeepSeek-V2, V3), encoder-decoders (T5, Whisper), attention-free models
(Mamba, RWKV) and encoders (no cache); with the MLA latent and the draft
layers of multi-token prediction, which the decoder reads too.  The decoder's
reader is decoder.py; shape.py's READERS names them all.
"""

from __future__ import annotations

import re
from typing import Dict, List, NamedTuple, Optional, Tuple

from gqa import GQAError
from gqa_grader.language.i18n import _
from gqa_tools.sizer.families import Family
from gqa_tools.sizer.fields import (DECODER_HEAD_DIM, DECODER_HEADS, DECODER_KV_HEADS, DECODER_LAYERS, HIDDEN,
                                    LAYERS, QUERY_HEADS, SOURCE, Keys, agree, check_divides, kv_heads_of)
from gqa_tools.sizer.kinds import ATTENTION_FREE
from gqa_tools.sizer.layouts import state_note
from gqa_tools.sizer.rules import LayerGroup


class Read(NamedTuple):
    """What a reader found, before it becomes a ModelShape."""
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    groups: Tuple[LayerGroup, ...]
    source: Optional[int] = None
    source_field: str = ""
    image: Optional[int] = None
    image_field: str = ""
    per_layer: bool = False     # h or g varies by layer


# Multi-token-prediction layers, by the fields that count them: DeepSeek-V3's and GLM-4.5's
# num_nextn_predict_layers, Qwen3-Next's mtp_num_hidden_layers, MiniMax-M2's
# num_mtp_modules of mtp_transformer_layers each.
DRAFT = (("num_nextn_predict_layers",), ("mtp_num_hidden_layers",),
         ("num_mtp_modules", "mtp_transformer_layers"))


def draft_layers(keys: Keys) -> Tuple[LayerGroup, ...]:
    """The draft layers of multi-token prediction: a group of their own, not counted (a
    serving engine runs them only when told to speculate)."""
    keys.get("use_mtp")
    for names in DRAFT:
        counts = [keys.get(n) for n in names]
        counts = [c for c in counts if isinstance(c, int) and not isinstance(c, bool) and c > 0]
        if counts:
            layers = counts[0] * (counts[1] if len(counts) > 1 else 1)
            return (LayerGroup("draft", layers, note="multi-token-prediction layers",
                               fields=tuple(n for n in names if keys.data.get(n) is not None)),)
    return ()


def latent_of(keys: Keys) -> Tuple[int, List[str]]:
    """(the values MLA caches per token and layer, kv_lora_rank + qk_rope_head_dim; their fields)."""
    if keys.get("qk_rope_head_dim") is None:
        raise GQAError(f"config {keys.where}: kv_lora_rank without qk_rope_head_dim: the latent "
                       f"that MLA caches is kv_lora_rank + qk_rope_head_dim, and the second is unknown")
    rank = keys.int(("kv_lora_rank",), "latent rank")
    rope = keys.int(("qk_rope_head_dim",), "rope head dim")
    for name in ("qk_nope_head_dim", "q_lora_rank", "v_head_dim"):
        keys.seen(name)         # the query's and the value's sizes: not what MLA caches
    return rank + rope, ["kv_lora_rank", "qk_rope_head_dim"]


def read_mla(keys: Keys, top: Keys, model_type: str, family: Optional[Family], ignore: Tuple[str, ...],
             overrides: Dict[str, int]) -> Read:
    """DeepSeek-V2/V3 (and Kimi-K2): every layer caches one latent per token."""
    latent, fields = latent_of(keys)
    layers = overrides.get("layers") or keys.int(LAYERS, "layer count")
    heads = overrides.get("heads") or keys.int(QUERY_HEADS, "query head count")
    v_dim = keys.int(("v_head_dim", "qk_nope_head_dim"), "value head dim")
    keys.seen("num_key_value_heads")        # a g that MLA does not use
    return Read(layers, heads, heads, v_dim, keys.int(HIDDEN, "hidden size", 0),
                (LayerGroup("mla", layers, latent=latent, fields=tuple(fields + ["num_hidden_layers"]),
                            layer_ids=tuple(range(layers))),) + draft_layers(keys))


def read_encoder_decoder(keys: Keys, top: Keys, model_type: str, family: Optional[Family],
                         ignore: Tuple[str, ...], overrides: Dict[str, int]) -> Read:
    """T5, Whisper, BART, Pegasus: the decoder caches its own tokens, and the encoder's output
    for cross-attention; the encoder itself caches nothing while the decoder generates."""
    heads, f_heads = (overrides["heads"], "--heads") if overrides.get("heads") else \
        keys.num(DECODER_HEADS, "query head count")
    layers, f_layers = (overrides["layers"], "--layers") if overrides.get("layers") else \
        keys.num(DECODER_LAYERS, "layer count")
    hidden = keys.int(HIDDEN, "hidden size", 0)
    if overrides.get("head_dim"):
        head_dim, f_dim = overrides["head_dim"], "--head-dim"
    elif any(keys.get(name) is not None for name in DECODER_HEAD_DIM):
        head_dim, f_dim = keys.num(DECODER_HEAD_DIM, "head dim")
    elif hidden and hidden % heads == 0:
        head_dim, f_dim = hidden // heads, "d_model / " + f_heads
    else:
        raise GQAError(f"config {keys.where}: no head dim: tried d_kv, head_dim, d_model / heads")
    if overrides.get("kv_heads"):
        kv_heads, f_kv = overrides["kv_heads"], "--kv-heads"
    elif any(keys.get(name) is not None for name in DECODER_KV_HEADS):
        kv_heads, f_kv = keys.num(DECODER_KV_HEADS, "key/value head count")
    else:
        kv_heads, f_kv = kv_heads_of(keys, heads)
    check_divides(keys.where, heads, kv_heads)
    for name in ("num_layers", "num_hidden_layers") + tuple(k for k in keys.data if k.startswith("encoder_")):
        keys.seen(name)         # the encoder's: it caches nothing while the decoder generates
    fields = (f_layers, f_heads, f_kv, f_dim)
    source, source_field = None, ""
    given = [name for name in SOURCE if keys.get(name) is not None]
    if given:                   # Whisper: 30 s of audio, 1,500 frames; SpeechT5's speech positions
        source, source_field = keys.num(given[:1], "source positions")
    ids = tuple(range(layers))
    return Read(layers, heads, kv_heads, head_dim, hidden,
                (LayerGroup("full", layers, kv_heads, head_dim, fields=fields, layer_ids=ids),
                 LayerGroup("cross", layers, kv_heads, head_dim, fields=fields, layer_ids=ids)),
                source, source_field)


def read_state_model(keys: Keys, top: Keys, model_type: str, family: Optional[Family],
                     ignore: Tuple[str, ...], overrides: Dict[str, int]) -> Read:
    """Mamba, Mamba-2, Falcon-Mamba, RWKV, xLSTM: no attention anywhere; every layer holds a
    state of fixed size.  A model type known to be attention-free (ATTENTION_FREE) without a row
    has every key read but those that would name attention layers in a hybrid."""
    names = LAYERS + ("num_blocks",)
    layers, used = (overrides["layers"], "--layers") if overrides.get("layers") else keys.num(names, "layer count")
    agree(keys, names, used, layers)
    what = ATTENTION_FREE.get(model_type, "state-space")
    note = state_note(keys, family, what)
    if family is None:
        keys.read.update(k for k in keys.data if not HYBRID_ATTENTION.search(k))
    fields = tuple(f for f in (family.state[1] if family else ()) if f in keys.data) or (used,)
    return Read(layers, 0, 0, 0, keys.int(HIDDEN + ("embedding_dim",), "hidden size", 0),
                (LayerGroup("none", layers, note=note, fields=fields, layer_ids=tuple(range(layers))),))


# Keys by which an attention-free family's hybrids (flash-linear-attention's "attn") name
# their attention layers: never read as attention-free.
HYBRID_ATTENTION = re.compile(r"^attn$|^attn_layers$|attention_layers$|^attn_type_list$|^layer_types$")


def read_encoder_only(keys: Keys, top: Keys, model_type: str, family: Optional[Family],
                      ignore: Tuple[str, ...], overrides: Dict[str, int]) -> Read:
    """Models that keep no KV cache by their kind (kinds.kind_of): an encoder reads its input
    whole and generates nothing (its class is no decoder: is_decoder is not set); a
    masked-diffusion language model and a detector's decoder attend both ways over the whole
    sequence at every step, so nothing carries over.  No head is counted; the layers, where
    the config gives them, are quoted."""
    reader, evidence = keys.kind
    layers, used = keys.num(LAYERS + ("encoder_layers", "num_layers"), "layer count", default=0)
    depths = keys.data.get("depths")          # Swin's stages
    if not layers and isinstance(depths, list) and all(isinstance(d, int) and d > 0 for d in depths):
        layers, used = sum(depths), "depths"
    keys.read.update(k for k in keys.data if k != "add_cross_attention" or not keys.data[k])
    what = f"{model_type or 'model'} {'encoder layers' if reader == 'encoder' else 'layers'}"
    if evidence != f"model_type {model_type}":        # the headline names the model type already
        keys.notes.append(_("no KV cache: {evidence}").format(evidence=evidence))
    return Read(layers, 0, 0, 0, keys.int(HIDDEN, "hidden size", 0),
                (LayerGroup(reader if reader == "encoder" else "bidirectional", layers, note=what,
                            fields=(evidence,) + ((used,) if used else ()), layer_ids=tuple(range(layers))),))
