"""gqa_tools.sizer.accounting: every key of a config read, known not to change the cache, or refused.

After a reader has sized the model, each key it did not read is judged
here, by its value, never by its name alone: known not to change the cache
(HARMLESS, HARMLESS_KEYS, the attributes every HF config carries, the
family's own), passed; a mechanism's field (CHANGES) that no rule read,
refused; a value that could change the cache under a rule the sizer has and
disagrees with what it read (changes_by_value: a window, a chunk, layers
sharing another's K and V, a list of layer indices, a list of one entry per
layer or of layer kinds, a key/value head count, a head dim, a layer count,
a state's size, cross-attention, an encoder's field in a decoder, a K/V
latent's rank, a layer type named in a string), refused unless --ignore
names it (then a warning); any other, a note on the first line.  A negative
size (-1) is unset, as null is.  A model type with no row of FAMILIES is
sized with a warning naming it.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from gqa import GQAError
from gqa_grader.language.i18n import _
from gqa_tools.sizer.families import FAMILIES, WRAPPERS, Family
from gqa_tools.sizer.fields import OVERRULED, Keys, cannot, show
from gqa_tools.sizer.kinds import KNOWN_WITHOUT_ROW

# ---------------------------------------------------------------------------
# Never silent: every key is read, known not to change the cache, or refused.
# ---------------------------------------------------------------------------

# The fields of the mechanisms (LAYOUTS, sharing, heads by layer): where no rule read one (its
# family's code does not), it cannot be sized, and --ignore of it is refused.
CHANGES = frozenset((
    "layer_types", "block_configs", "num_kv_shared_layers", "cla_share_factor", "use_cla",
    "attn_layer_indices", "layers_block_type", "hybrid_layer_ids", "attention_types",
    "num_key_value_heads_per_layer", "num_query_heads", "full_attn_idxs", "hybrid_override_pattern",
    "attn_type_list", "attn_layer_period", "full_attention_interval", "attention_chunk_size",
    "cross_attention_layers", "kv_lora_rank", "num_attention_groups", "linear_attn_config",
))

# Keys known not to change the cache: vocabulary and token ids, position
# encodings (rope), mixture-of-experts routing, dropout, initialisation,
# normalisation, biases, scalings, and the bookkeeping of HF transformers.
HARMLESS = re.compile(r"dropout|layerdrop|pdrop|_eps$|epsilon|bias|softcap|token_id|token_index|"
                      r"intermediate_size|ffn_dim|ffn_hidden_size|^n_inner$|mlp_ratio|ffn_mult|"
                      r"^vocab|_vocab|init|multiplier|scaling|rope|rotary|expert|moe|router|routed|"
                      r"topk|top_k|dtype|quant|_act$|activation|tie_word|output_|return_|label|"
                      r"logits|gradient|temperature|norm|^architectures$|^transformers_version$|"
                      r"^auto_map$|tokenizer|task_specific|finetuning|problem_type|softmax|"
                      # which kernel runs attention, never what it caches
                      r"flash_attn|flash_attention|attn_implementation|^fused_|"
                      # sequence-classification heads, generation lengths, scalings, images
                      r"^summary_|^n_special$|predict_special|^max_length$|model_max_length|"
                      r"original_max_position|^scale_|_scale$|scale_depth|dim_model_base|logit|"
                      r"residual|^n_group$|scoring_func|^mlp_type$|spatial_merge|^embd_layer$|"
                      r"^img_processor$|^use_mrope$|^is_llama_config$|^_from_model_config$|"
                      # transformers.js's settings for its ONNX export (its kv_cache_dtype too)
                      r"^transformers\.js_config$")
HARMLESS_KEYS = frozenset((
    "_name_or_path", "_commit_hash", "_attn_implementation_autoset", "_attn_implementation",
    "use_cache", "attention_bias", "attention_dropout", "attn_logit_softcapping", "is_decoder",
    "decoder_start_token_id", "tie_encoder_decoder", "cache_implementation",
    "moe_layer_freq", "moe_layers", "mlp_only_layers", "decoder_sparse_step", "first_k_dense_replace",
    "interleave_moe_layer_step", "shared_expert_intermediate_size", "shared_intermediate_size",
    "n_shared_experts", "num_shared_experts", "attention_multiplier", "pretraining_tp",
    "use_qk_norm", "qk_layernorm", "query_pre_attn_scalar", "attn_output_gate", "head_dim_scale",
    "vision_config", "audio_config", "vision_feature_layer", "vision_feature_select_strategy",
    "multimodal_projector_bias", "projector_hidden_act", "mm_tokens_per_image", "image_seq_length",
    # InternVL's vision settings beside its llm_config, and a vision-encoder-decoder's encoder
    "select_layer", "downsample_ratio", "template", "ps_version", "force_image_size",
    "dynamic_image_size", "use_thumbnail", "max_dynamic_patch", "min_dynamic_patch",
    "use_backbone_lora", "use_llm_lora", "pad2square", "encoder",
    "parallel_attn", "pre_allocate_kv_cache", "scale_attn_weights", "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx", "clip_qkv", "qk_ln", "qk_gn", "attn_impl", "attn_uses_sequence_id", "softmax_scale", "alibi",
    "alibi_bias_max", "prefix_lm", "fused_qkv",
    # Meta's params.json: the MLP's width rounded up to a multiple of it.
    "multiple_of",
    # Qwen (the first release): log-n scaling of the queries and dynamic NTK rope, not the cache.
    "use_logn_attn", "use_dynamic_ntk",
    # The attributes every HF config carries (PretrainedConfig): generation settings, a task's
    # head, serialisation; and the feed-forward chunking of apply_chunking_to_forward, which
    # runs the MLP in slices of positions and caches nothing.
    "chunk_size_feed_forward", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "num_beams",
    "num_beam_groups", "diversity_penalty", "length_penalty", "repetition_penalty", "early_stopping",
    "do_sample", "top_p", "min_length", "bad_words_ids", "prefix", "pruned_heads", "torchscript",
    "use_bfloat16", "return_dict", "output_attentions", "output_hidden_states", "output_scores",
    "remove_invalid_values", "exponential_decay_length_penalty", "begin_suppress_tokens",
    "suppress_tokens", "forced_bos_token_id", "forced_eos_token_id", "num_return_sequences",
    "id2label", "label2id", "sep_token_id", "tf_legacy_loss", "is_encoder_decoder", "typical_p",
    "return_dict_in_generate",
))


def account_keys(keys: Keys, ignore: Sequence[str], notes: List[str], family: Optional[Family],
                 sizes: Dict[str, Any], prefix: str = "") -> None:
    """Every key no rule read: known not to change the cache, passed; a mechanism's field
    (CHANGES), refused; a value that could change the cache under a rule and disagrees with
    what was read (changes_by_value), refused, or with --ignore KEY a warning; any other, a
    note on the first line of the output."""
    unknown = []
    for key, value in keys.data.items():
        name = prefix + key
        if key in keys.read or key in HARMLESS_KEYS or (family and key in family.harmless) or \
                HARMLESS.search(key) or value is None:      # null: the field is unset
            continue
        if key in CHANGES:
            cannot(keys, name, value, f"no rule reads it for model_type {keys.model_type or '(none)'!r}")
        why = changes_by_value(key, value, sizes)
        if why and (name in ignore or key in ignore):
            notes.append(f"WARNING: {name} {show(value)} is not read (--ignore {name}): "
                         f"the sizes do not take it into account")
        elif why:
            raise GQAError(f"config {keys.where}: {name} {show(value)} is read by no rule, and its value "
                           f"could change the cache: {why}; if the model's code shows it does not, "
                           f"--ignore {name} sizes the model without it")
        else:
            unknown.append(f"{name} {show(value)}")
    if unknown:
        notes.append(f"NOTE: {', '.join(unknown)}: read by no rule and not known to leave the "
                     f"cache alone; the sizes assume {'it does' if len(unknown) == 1 else 'they do'}")


def account_config(keys: Keys, top_keys: Keys, top_type: str, family: Optional[Family], model_type: str,
                   ignore: Tuple[str, ...], overrides: Dict[str, int], notes: List[str]) -> None:
    """Every key read, known not to change the cache, or refused (account_keys); --ignore of a
    key the config does not have is an error; a model type with no row, a warning first."""
    for name in overrides:          # a field given by hand overrules the config's: read, and set aside
        keys.read.update(OVERRULED.get(name, ()))
    every = set(keys.data) | set(top_keys.data) | {p + k for p, inner in keys.nested for k in inner.data}
    missing = [name for name in ignore if name not in every]
    if missing:
        raise GQAError(f"--ignore {missing[0]}: the config has no key {missing[0]!r} "
                       f"(its keys: {', '.join(sorted(every)[:12])}{', ...' if len(every) > 12 else ''})")
    sizes = keys.sizes
    if keys is not top_keys:
        account_keys(top_keys, ignore, notes, FAMILIES.get(WRAPPERS.get(top_type, ""), family), sizes)
    account_keys(keys, ignore, notes, family, sizes)
    for prefix, inner in keys.nested:
        account_keys(inner, ignore, notes, family, sizes, prefix)
    reader, evidence = keys.kind
    if family is None and model_type not in KNOWN_WITHOUT_ROW and reader in ("decoder", "encoder_decoder", "mla"):
        used = sorted(k for k in keys.read if k in keys.data and k not in ("model_type", "_name_or_path"))
        notes.insert(0, f"WARNING: model_type {model_type or '(none)'!r} has no row in the sizer's table "
                        f"of families: sized by the generic rules from "
                        f"{', '.join(used) or 'no fields'}; check the layers against the model's code")
        notes.append({"decoder": _("read as a decoder: {evidence}"),
                      "encoder_decoder": _("read as an encoder-decoder: {evidence}"),
                      "mla": _("read as MLA: {evidence}")}[reader].format(evidence=evidence))


# ---------------------------------------------------------------------------
# A value that could change the cache under a rule the sizer has.
# ---------------------------------------------------------------------------

# Each: (what the key's name must say, what kind of value, the rule it could change).
# A name alone never refuses: the value must be of the kind that rule reads, and must
# disagree with what the sizer read.
KV_HEADS_NAME = re.compile(r"(kv|key_value).*(head|group)|query_groups")
HEAD_DIM_NAME = re.compile(r"(head_dim|head_size|per_head|kv_channels|d_kv)$")
LAYERS_NAME = re.compile(r"^(num_|n_)?(hidden_|decoder_|text_|transformer_)?(layers?|blocks?)$|"
                         r"_(layer|block)_count$")
STATE_NAME = re.compile(r"ssm|mamba|state_size|lru|recurren|linear_(attn|attention|num|key|value|conv)")
# A latent's rank: the K/V's (kv_lora_rank, a latent, a cache); a weight's low-rank factor (a
# LoRA adapter's lora_rank, MLA's q_lora_rank) caches nothing.
RANK_NAME = re.compile(r"(kv|latent|cache).*rank")
# Layers that take another layer's K and V instead of caching their own.
SHARING_NAME = re.compile(r"(kv|key_value|cache).*(reuse|shar)|(reuse|shar).*(kv|key_value|cache)")
# A period of layers of another kind: a hybrid's Mamba block every N layers (Phi-4-mini-flash's
# mb_per_layer), which no rule reads as a layout.
PERIOD_NAME = re.compile(r"^(mb|mamba|ssm|attn|attention)_(per|every)_layers?$")
# A list of layer indices: which layers attend how (Hymba's global_attn_idx).
INDICES_NAME = re.compile(r"attn|attention|layer|global|local|full|swa|window|idx")
# A string that names a kind of layer the sizer sizes by a rule of its own.
LAYER_KIND = re.compile(r"^(mla|multi[_ -]?head[_ -]?latent|sliding|local|global|chunked|linear|lightning|"
                        r"mamba|ssm|recurrent|sparse|hybrid|full_attention|attention$)", re.IGNORECASE)


MLA_KIND = re.compile(r"^(mla|multi[_ -]?head[_ -]?latent)", re.IGNORECASE)


def changes_by_value(key: str, value: Any, sizes: Dict[str, Any]) -> str:
    """Why the value could change the cache under a rule the sizer has, where it disagrees
    with what was read; "" when it could not (the key is then a note)."""
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    if number is not None and number < 0:
        return ""           # -1: a size left unset (Hymba's kq_head_dim), as null is
    rules = sizes.get("rules", ())
    layers = sizes.get("layers") or 0
    if SHARING_NAME.search(key) and value not in (False, 0, "", [], {}):
        return "layers that reuse another layer's K and V hold none of their own"
    if isinstance(value, list) and value and INDICES_NAME.search(key) and \
            all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < layers for v in value):
        return f"a list of layer indices ({len(value)} of {layers}) may say which layers attend how"
    if PERIOD_NAME.search(key) and number and 0 < number <= max(layers, 1):
        return (f"a layer of another kind (a state's, not a cache's) every {number} layers, as a hybrid's "
                f"layout says; no rule read which layers hold K and V")
    if ("window" in key or "sliding" in key) and number and number > 0:
        return f"a window of {number} positions would make layers hold only the last {number}"
    if "chunk" in key and number and number > 0:
        return f"chunks of {number} positions would make layers hold only the current chunk"
    if isinstance(value, list) and (len(value) == sizes.get("layers") != 1 and not sizes.get("layout_list") or
                                    any(isinstance(v, str) and LAYER_KIND.match(v) for v in value)):
        return "a list of one entry per layer, or of layer kinds, may say which layer caches what"
    if HEAD_DIM_NAME.search(key) and number is not None and number != sizes.get("head_dim"):
        return f"a head dim of {number}, not the {sizes.get('head_dim')} read"
    if KV_HEADS_NAME.search(key) and number is not None and number != sizes.get("kv_heads"):
        return f"{number} key/value heads, not the {sizes.get('kv_heads')} read"
    if LAYERS_NAME.search(key) and number is not None and number != sizes.get("layers"):
        return f"{number} layers, not the {sizes.get('layers')} read"
    if STATE_NAME.search(key) and value not in (False, 0, "") and "none" not in rules:
        return "a state's size, where no layer was read to hold a state"
    if re.search(r"cross_(attn|attention)", key) and value not in (False, 0, "") and "cross" not in rules:
        return "cross-attention, where no layer was read to cross-attend"
    if key.startswith("encoder_") and value not in (False, 0, "") and sizes.get("reader") == "decoder":
        return "an encoder's field in a config read as a decoder"
    if sizes.get("reader") == "state" and re.search(r"attn|attention", key) and value not in (False, 0, "", [], {}):
        return "attention's field in a model read as attention-free (a hybrid's attention layers?)"
    if RANK_NAME.search(key) and number and "mla" not in rules:
        return f"a latent of rank {number}, where no layer was read as MLA"
    if isinstance(value, str) and LAYER_KIND.match(value) and re.search(r"attn|attention|layer|mixer|type", key):
        if MLA_KIND.match(value) and "mla" in rules:
            # Agrees with the layers read as MLA, but LongCat-Flash, the family that names its
            # attention so (attention_method "MLA"), holds two MLA attentions in every layer.
            return (f"{value!r} agrees with the layers read as MLA, but the family that names it so "
                    f"(LongCat-Flash) holds two MLA attentions in each layer, and no field here says how many")
        return f"{value!r} names a kind of layer no rule read here"
    return ""
