"""gqa_tools.models: real models' shapes, read from their config.json, and their KV caches.

The two numbers that decide MHA, GQA or MQA, the query heads h and the
key/value heads g, sit in every model's config file.  From them, the layers
and the head dim, this module answers: which method is it, what does a token
of context cost, how many requests fit in the memory left, what happens on N
tensor-parallel devices, and (as a roofline model, not a measurement) how
fast could it decode.  A library for the tools: `python -m gqa config`
(config.py) prints its answers, `python -m gqa tables --config` and the
report read shapes with it.  Standard library only: json and arithmetic.

Each group of layers caches by one rule (RULES); which layer follows which,
and the class defaults a config may leave out, are known per model_type, one
row of FAMILIES per family.  A decoder's config says which layer follows
which in one of a dozen ways (layer_types, a pattern, a period, index
lists, block configs, heads by layer, ...): LAYOUTS holds one function for
each, named after the fields it reads, in their order of precedence, and each
applies only where the family's code reads its field.  The readers (READERS)
size decoders, MLA, encoder-decoders, encoders (no cache) and attention-free
models; a decoder nested in a wrapper (NESTED) is found where it sits.

Never a wrong number: every key of a config is read, or known not to change
the cache (HARMLESS), or refused.  A field a rule reads but cannot size, or a
mechanism's field (CHANGES) that no rule read, is "cannot size: FIELD changes
the cache in a way no rule reads", never ignored; a key whose name says it
may change the cache (STRUCTURAL) is refused unless ignored on purpose; any
other unknown key is a note on the first line; a model_type with no row is
sized with a warning naming it.

>>> shape = ModelShape.from_config({"model_type": "llama", "num_hidden_layers": 80,
...                                 "num_attention_heads": 64, "num_key_value_heads": 8,
...                                 "hidden_size": 8192})
>>> shape.method, shape.head_dim
('GQA', 128)
>>> cache_bytes(shape, dtype="bf16")                 # one token: 2 x 80 x 8 x 128 x 2 bytes
327680
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import gqa
from gqa import GQAError

# Bytes per stored value, by the names configs and serving engines use.
DTYPE_BYTES = {"fp32": 4, "float32": 4, "fp16": 2, "float16": 2, "bf16": 2, "bfloat16": 2,
               "fp8": 1, "int8": 1}

# ---------------------------------------------------------------------------
# What a layer caches: each group of layers follows one rule.
# ---------------------------------------------------------------------------

RULES = {
    "full": "full attention: 2 x g x head_dim values per token, for every position",
    "sliding": "a sliding window: the same per token, for the last `window` positions only",
    "chunked": "chunked attention: the same per token, within the current chunk only",
    "mla": "multi-head latent attention: one latent of kv_lora_rank + qk_rope_head_dim per token",
    "shared": "no cache of its own: the layer reads the K and V an earlier layer cached (KV sharing, "
              "cross-layer attention)",
    "cross": "cross-attention: 2 x g x head_dim values per source token (an encoder's output)",
    "image": "vision cross-attention: 2 x g x head_dim values per image token",
    "none": "no KV cache: a state of fixed size per sequence (state-space, linear attention, "
            "recurrence, convolution), named and not counted",
    "encoder": "an encoder-only model: it reads its input whole and generates nothing, so it "
               "keeps no KV cache",
    "draft": "multi-token-prediction (draft) layers, run only to propose tokens for speculative "
             "decoding: not counted",
}


class LayerGroup(NamedTuple):
    """Layers that cache by one rule (see RULES), with the same shapes."""
    rule: str
    layers: int
    kv_heads: int = 0           # g, for attention rules
    head_dim: int = 0
    window: Optional[int] = None    # positions held at most: the window, or the chunk
    latent: int = 0             # values per token and layer, for "mla"
    note: str = ""              # what a "none" or "shared" layer is, and its state
    fields: Tuple[str, ...] = ()        # the config fields this group was read from
    layer_ids: Tuple[int, ...] = ()     # which layers (0-based)
    q_heads: int = 0            # h of these layers, where it varies by layer (0: the model's)

    @property
    def attention(self) -> bool:
        """True when the cache has key/value heads, so g applies."""
        return self.rule in ("full", "sliding", "chunked", "cross", "image")

    def values_per_token(self, kv_heads: Optional[int] = None) -> int:
        """Values one layer of the group caches per position (kv_heads overrides g)."""
        if self.attention:
            return 2 * (self.kv_heads if kv_heads is None else kv_heads) * self.head_dim
        return self.latent

    def positions(self, context: int, source: int, image: int = 0) -> int:
        """Positions one layer holds at this context (source: the encoder's length; image:
        the image tokens)."""
        if self.rule in ("none", "shared", "encoder", "draft"):
            return 0
        if self.rule == "cross":
            return source
        if self.rule == "image":
            return image
        return min(context, self.window) if self.window else context

    def holds(self) -> str:
        """The positions one layer of the group holds, in words."""
        return {"full": "every position", "mla": "every position",
                "sliding": f"the last {self.window or 0:,} positions",
                "chunked": f"the current chunk of {self.window or 0:,} positions",
                "cross": "every source token", "image": "every image token",
                "shared": "nothing of its own", "none": "no positions: a state of fixed size",
                "encoder": "nothing: it generates nothing", "draft": "nothing: not run by default"}[self.rule]

    def describe(self) -> str:
        if self.rule == "mla":
            return f"{self.layers} MLA (latent {self.latent} per token)"
        if self.rule == "none":
            return f"{self.layers} {self.note.split(' (')[0] or 'layers without a KV cache'} (no KV cache)"
        if self.rule == "shared":
            return f"{self.layers} {self.note.split(' (')[0]}"
        if self.rule in ("encoder", "draft"):
            return f"{self.layers} {self.note or self.rule} (no KV cache)"
        if self.rule in ("sliding", "chunked"):
            what = f"sliding window {self.window:,}" if self.rule == "sliding" else f"chunked, chunk {self.window:,}"
        else:
            what = {"full": "full attention", "cross": "cross-attention",
                    "image": "cross-attention to the image"}[self.rule]
        return f"{self.layers} {what}"


# ---------------------------------------------------------------------------
# The families: one row per model type, each with its example config.
# ---------------------------------------------------------------------------

class Family(NamedTuple):
    """A model type the sizer knows: how its config says which layer caches what."""
    name: str                   # the family, as people call it
    layout: str                 # where the config says which layer is which
    example: str                # its example in examples/configs/
    reader: str = "decoder"     # decoder, mla, encoder_decoder or state
    defaults: Dict[str, Any] = {}       # the model class's defaults a config may leave out
    state: Tuple[str, Tuple[str, ...]] = ("", ())   # a "none" layer: what it is, its fields
    harmless: Tuple[str, ...] = ()      # the family's own keys known not to change the cache
    sliding: bool = True        # whether the family's code honours sliding_window


# Each row's defaults are those of the model class's config in HF transformers
# (src/transformers/models/<type>/configuration_<type>.py), used only where a
# config leaves the field out, and quoted in the output when they are.
FAMILIES: Dict[str, Family] = {
    "llama": Family("Llama", "every layer full (its code has no sliding window)", "llama-2-70b.json",
                    defaults={"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096,
                              "intermediate_size": 11008, "max_position_embeddings": 2048}, sliding=False),
    "gpt2": Family("GPT-2", "every layer full; n_head, n_layer, n_embd", "gpt2.json", sliding=False,
                   harmless=("n_ctx",)),
    "chatglm": Family("ChatGLM2, ChatGLM3, GLM-4", "every layer full; multi_query_group_num when "
                      "multi_query_attention; kv_channels the head dim", "chatglm3-6b.json", sliding=False,
                      harmless=("fp32_residual_connection", "bias_dropout_fusion", "padded_vocab_size",
                                "classifier_dropout", "prefix_projection")),
    "hf_olmo": Family("OLMo (the first release)", "every layer full; n_kv_heads, or multi_query_attention; "
                      "block_type sequential, llama or parallel: the same cache", "olmo-7b.json", sliding=False,
                      harmless=("block_type", "block_group_size", "mlp_hidden_size", "embedding_size",
                                "weight_tying", "attention_layer_norm", "precision", "subln")),
    "hunyuan": Family("Hunyuan-Large", "every layer full; with use_cla, the layers between every "
                      "cla_share_factor-th reuse its K and V", "hunyuan-large.json", sliding=False,
                      harmless=("moe_topk", "num_shared_expert", "use_mixed_mlp_moe", "moe_intermediate_size",
                                "use_qk_norm", "class_num", "dense_list", "pool_type", "norm_type")),
    "mistral": Family("Mistral", "sliding_window on every layer (null: none)", "mistral-7b-v0.1.json",
                      defaults={"sliding_window": 4096}),
    "qwen2": Family("Qwen2", "sliding_window only with use_sliding_window", "qwen2-7b.json"),
    "qwen3": Family("Qwen3", "sliding_window only with use_sliding_window", "qwen3-8b.json"),
    "qwen3_moe": Family("Qwen3-MoE", "sliding_window only with use_sliding_window", "qwen3-30b-a3b.json"),
    "mixtral": Family("Mixtral", "sliding_window on every layer (null: none)", "mixtral-8x7b.json"),
    "phi3": Family("Phi-3", "sliding_window on every layer", "phi-3-mini-4k.json",
                   harmless=("full_attn_mod", "interpolate_factor")),     # Phi-4-mini's, not read by Phi3
    "starcoder2": Family("StarCoder2", "sliding_window on every layer", "starcoder2-15b.json"),
    "gemma": Family("Gemma", "every layer full", "gemma-2b.json"),
    "gemma2": Family("Gemma-2", "sliding on even layers, full on odd (the class's rule)", "gemma-2-9b.json",
                     defaults={"head_dim": 256, "sliding_window": 4096}),
    "gemma3_text": Family("Gemma-3", "sliding_window_pattern: every P-th layer full", "gemma-3-12b.json",
                          defaults={"head_dim": 256, "sliding_window": 4096, "sliding_window_pattern": 6}),
    "gemma3n_text": Family("Gemma-3n", "layer_types; the last num_kv_shared_layers share the cache",
                           "gemma-3n-e4b.json",
                           defaults={"num_kv_shared_layers": 15, "sliding_window": 512, "head_dim": 256},
                           harmless=("hidden_size_per_layer_input", "vocab_size_per_layer_input",
                                     "altup_active_idx", "altup_coef_clip", "altup_correct_scale",
                                     "altup_num_inputs", "laurel_rank")),
    "gemma4_text": Family("Gemma-4", "layer_types; global layers with their own g and head dim; "
                          "num_kv_shared_layers", "gemma-4-31b.json",
                          defaults={"num_kv_shared_layers": 0, "sliding_window": 512, "head_dim": 256,
                                    "global_head_dim": 512, "attention_k_eq_v": False},
                          harmless=("hidden_size_per_layer_input", "vocab_size_per_layer_input",
                                    "enable_moe_block", "use_double_wide_mlp")),
    "falcon": Family("Falcon", "every layer full; num_kv_heads, or multi_query (7B)", "falcon-40b.json"),
    "gpt_bigcode": Family("GPT-BigCode (StarCoder)", "every layer full; multi_query", "starcoder.json"),
    "mpt": Family("MPT", "every layer full; attn_config", "mpt-7b.json"),
    "dbrx": Family("DBRX", "every layer full; attn_config", "dbrx-base.json"),
    "gpt_oss": Family("gpt-oss", "layer_types", "gpt-oss-20b.json"),
    "llama4_text": Family("Llama-4", "attention_chunk_size; no_rope_layers, else every "
                          "no_rope_layer_interval-th layer full (the class default)", "llama-4-scout.json",
                          defaults={"no_rope_layer_interval": 4},
                          harmless=("attn_temperature_tuning", "floor_scale", "attn_scale",
                                    "intermediate_size_mlp", "for_llm_compressor")),
    "deepseek_v3": Family("DeepSeek-V2, V3, R1; Kimi-K2 (MLA)", "every layer MLA", "deepseek-v3.json", reader="mla"),
    "kimi_linear": Family("Kimi Linear", "linear_attn_config.full_attn_layers, 1-based: MLA; "
                          "kda_layers: linear attention", "kimi-linear-48b-a3b.json",
                          state=("Kimi Delta Attention", ("linear_attn_config.num_heads",
                                                          "linear_attn_config.head_dim",
                                                          "linear_attn_config.short_conv_kernel_size")),
                          harmless=("mla_use_nope", "mla_use_output_gate", "use_grouped_topk",
                                    "num_expert_group", "model_max_length")),
    "jamba": Family("Jamba", "attn_layer_period and attn_layer_offset", "jamba-v0.1.json",
                    state=("Mamba", ("mamba_d_state", "mamba_d_conv", "mamba_expand")),
                    harmless=("expert_layer_period", "expert_layer_offset", "mamba_dt_rank",
                              "mamba_conv_bias", "mamba_proj_bias", "use_mamba_kernels")),
    "nemotron_h": Family("Nemotron-H", "hybrid_override_pattern: * attention, M Mamba-2, - and E an "
                         "MLP alone", "nemotron-nano-9b-v2.json",
                         state=("Mamba-2", ("mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups",
                                            "conv_kernel")),
                         harmless=("mamba_hidden_act", "mamba_proj_bias", "use_conv_bias", "chunk_size",
                                   "expand", "time_step_min", "time_step_max", "time_step_floor",
                                   "time_step_limit", "residual_in_fp32", "rescale_prenorm_residual",
                                   "num_logits_to_keep", "mlp_hidden_act")),
    "falcon_h1": Family("Falcon-H1", "attention and a Mamba-2 mixer side by side in every layer",
                        "falcon-h1-7b.json",
                        state=("Mamba-2", ("mamba_n_heads", "mamba_d_head",
                                                                   "mamba_d_state", "mamba_n_groups",
                                                                   "mamba_d_conv", "mamba_d_ssm", "mamba_expand")),
                        harmless=("mamba_chunk_size", "mamba_conv_bias", "mamba_proj_bias",
                                  "mamba_norm_before_gate", "mamba_use_mlp", "num_logits_to_keep")),
    "minimax_m1": Family("MiniMax-M1, MiniMax-Text-01", "attn_type_list: 1 softmax attention, 0 lightning "
                         "(linear) attention", "minimax-m1-80k.json", state=("lightning-attention", ())),
    "qwen3_next": Family("Qwen3-Next", "full_attention_interval: every n-th layer full, the rest "
                         "linear attention", "qwen3-next-80b-a3b.json",
                         state=("Gated DeltaNet", ("linear_num_value_heads", "linear_num_key_heads",
                                                   "linear_key_head_dim", "linear_value_head_dim",
                                                   "linear_conv_kernel_dim"))),
    "lfm2": Family("LFM2", "full_attn_idxs, 0-based: attention; the rest short convolutions",
                   "lfm2-1.2b.json", state=("short-convolution", ("conv_L_cache",)),
                   harmless=("conv_bias", "conv_dim", "conv_dim_out", "conv_use_xavier_init",
                             "block_dim", "block_ff_dim", "block_multiple_of", "block_ffn_dim_multiplier",
                             "block_auto_adjust_ff_dim", "block_mlp_init_scale", "block_out_init_scale",
                             "block_norm_eps", "block_use_swiglu", "block_use_xavier_init")),
    "recurrent_gemma": Family("RecurrentGemma (Griffin)", "block_types, repeated over the layers: "
                              "attention in a window of attention_window_size, the rest RG-LRU",
                              "recurrentgemma-2b.json",
                              defaults={"block_types": ["recurrent", "recurrent", "attention"],
                                        "attention_window_size": 2048},
                              state=("RG-LRU", ("lru_width", "conv1d_width")),
                              harmless=("embeddings_scale_by_sqrt_dim", "logits_soft_cap",
                                        "final_w_init_variance_scale", "w_init_variance_scale")),
    "mamba": Family("Mamba", "no attention: every layer a state-space layer", "mamba-130m.json",
                    reader="state", state=("Mamba", ("state_size", "conv_kernel", "expand")),
                    harmless=("time_step_rank", "time_step_scale", "time_step_min", "time_step_max",
                              "time_step_init_scheme", "time_step_floor", "use_conv_bias",
                              "use_mambapy", "residual_in_fp32")),
    "mamba2": Family("Mamba-2", "no attention: every layer a state-space layer", "mamba-codestral-7b.json",
                     reader="state", state=("Mamba-2", ("num_heads", "head_dim", "state_size", "n_groups",
                                                        "conv_kernel", "expand")),
                     harmless=("chunk_size", "time_step_rank", "time_step_min", "time_step_max",
                               "time_step_floor", "time_step_limit", "use_conv_bias",
                               "residual_in_fp32", "norm_before_gate")),
    "openelm": Family("OpenELM", "num_query_heads and num_kv_heads, one per layer (heads that vary by layer)",
                      "openelm-1.1b-instruct.json", sliding=False,
                      harmless=("qkv_multipliers", "num_gqa_groups", "share_input_output_layers",
                                "ffn_with_glu", "rope_max_length")),
    "rwkv5": Family("RWKV-5 (Eagle)", "no attention: every layer a linear-attention recurrence",
                    "rwkv5-world-3b.json", reader="state",
                    state=("RWKV-5", ("attention_hidden_size", "head_size")),
                    harmless=("context_length", "rescale_every", "model_version", "head_size_divisor")),
    "bert": Family("BERT (an encoder)", "no KV cache: an encoder reads its input whole and generates "
                   "nothing (unless is_decoder)", "snowflake-arctic-embed-m.json", reader="encoder"),
    "mllama_text_model": Family("Llama-3.2-Vision (Mllama)", "cross_attention_layers, 0-based: "
                                "cross-attention to the image; the rest full", "llama-3.2-11b-vision.json"),
    "t5": Family("T5", "encoder-decoder: the decoder's self-attention and cross-attention", "t5-11b.json",
                 reader="encoder_decoder",
                 defaults={"d_kv": 64, "num_heads": 8, "num_layers": 6, "d_model": 512},
                 harmless=("relative_attention_num_buckets", "relative_attention_max_distance",
                           "feed_forward_proj", "d_ff", "output_past", "dense_act_fn", "is_gated_act")),
    "whisper": Family("Whisper", "encoder-decoder: decoder_layers self-attention and cross-attention "
                      "to max_source_positions audio frames", "whisper-large-v3.json",
                      reader="encoder_decoder",
                      harmless=("num_mel_bins", "encoder_ffn_dim", "decoder_ffn_dim", "median_filter_width",
                                "use_weighted_layer_sum", "classifier_proj_size", "apply_spec_augment",
                                "mask_time_prob", "mask_time_length", "mask_time_min_masks",
                                "mask_feature_prob", "mask_feature_length", "mask_feature_min_masks",
                                "suppress_tokens", "begin_suppress_tokens", "forced_decoder_ids",
                                "scale_embedding", "max_length")),
}

# Multimodal wrappers: the model type of the whole, and that of its text model
# when the text_config does not say.
WRAPPERS = {"llava": "llama", "gemma3": "gemma3_text", "gemma3n": "gemma3n_text",
            "gemma4": "gemma4_text", "llama4": "llama4_text", "mllama": "mllama_text_model"}

# The spellings real configs use, in the order they are tried.
QUERY_HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "decoder_attention_heads",
               "attention_heads")
LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
HIDDEN = ("hidden_size", "n_embd", "d_model", "model_dim")
KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num", "n_kv_heads",
            "num_query_groups")
# The head dim's spellings: head_dim, Hunyuan's and Nemotron-H's attention_head_dim, ChatGLM's
# and Megatron's kv_channels, TensorRT-LLM's head_size.  Where a config gives several, they
# must agree; where it gives none, the head dim is hidden_size / h.
HEAD_DIM = ("head_dim", "attention_head_dim", "kv_channels", "head_size")
MLP_WIDTH = ("intermediate_size", "n_inner", "ffn_hidden_size")
MAX_CONTEXT = ("max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length",
               "seq_length", "max_target_positions", "max_context_length")

# The MLP's matrices of d_model x d_ff, by model_type, as the model classes of
# HF transformers build them: gate, up and down projections (SwiGLU or GeGLU)
# in LlamaMLP, MistralMLP, Qwen2MLP and GemmaMLP; in and out (c_fc, c_proj;
# dense_h_to_4h, dense_4h_to_h) in GPT-2, GPT-BigCode and Falcon.  A model
# type not named here has mlp_matrices None: nothing is guessed.
MLP_MATRICES = {"llama": 3, "mistral": 3, "qwen2": 3, "gemma": 3,
                "gpt2": 2, "gpt_bigcode": 2, "falcon": 2}

# layer_types values, and what each layer caches.  "attention" is Granite-4.0-H's
# spelling beside "mamba"; "conv" is LFM2's short convolution.
LAYER_TYPES = {"full_attention": "full", "attention": "full", "sliding_attention": "sliding",
               "chunked_attention": "chunked", "linear_attention": "none:linear attention",
               "mamba": "none:Mamba", "conv": "none:short-convolution"}

# ---------------------------------------------------------------------------
# Never silent: every key is read, known not to change the cache, or refused.
# ---------------------------------------------------------------------------

# A key that names structure.  One the sizer does not read is an error naming
# it, unless --ignore KEY (then a warning on the first line of the output).
STRUCTURAL = re.compile(r"layer|block|attn|attention|window|chunk|kv|key_value|shar(e|ing)|global|"
                        r"local|ssm|mamba|state|linear|recurr|lru|conv|cross|encoder|decoder|hybrid|"
                        r"pattern|interval|period|head|cache|sparse|span")

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
    # Qwen (the first release): log-n scaling of the queries and dynamic NTK rope, not the cache.
    "use_logn_attn", "use_dynamic_ntk",
))


class _Keys:
    """One config object: hands out its values and the model class's defaults, and
    remembers which keys were read."""

    def __init__(self, where: str, data: Dict[str, Any], defaults: Dict[str, Any], model_type: str,
                 notes: List[str]):
        self.where, self.data, self.defaults, self.model_type = where, data, defaults, model_type
        self.notes, self.read = notes, set()          # type: List[str], set
        self.nested = []        # type: List[Tuple[str, _Keys]]  # objects inside it that were read
        self.cross = False      # a decoder nested in an encoder-decoder: it cross-attends

    def get(self, key: str) -> Any:
        """The key's value (an explicit null stays null), else the class default, quoted."""
        self.read.add(key)
        if key in self.data:
            return self.data[key]
        if key in self.defaults:
            value = self.defaults[key]
            note = f"{key} {_show(value)} is the {self.model_type} default (the config does not set it)"
            if note not in self.notes:
                self.notes.append(note)
            return value
        return None

    def seen(self, key: str) -> Any:
        """The key's value, without the class default: a key looked at and set aside."""
        self.read.add(key)
        return self.data.get(key)

    def num(self, names: Sequence[str], what: str, default: Optional[int] = None) -> Tuple[int, str]:
        """(value, name) of the first of names set (null counts as unset), as a positive int."""
        for name in names:
            value = self.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise GQAError(f"config {self.where}: {name} must be a whole number; got {str(value)[:40]!r}")
            if not 1 <= value <= 10 ** 12:
                raise GQAError(f"config {self.where}: {name} must be between 1 and 10**12; got {str(value)[:40]}")
            return value, name
        if default is not None:
            return default, ""
        raise GQAError(f"config {self.where}: no {what}: tried {', '.join(names)}")

    def int(self, names: Sequence[str], what: str, default: Optional[int] = None) -> int:
        return self.num(names, what, default)[0]

    def account(self, ignore: Sequence[str], notes: List[str], family: Optional[Family],
                prefix: str = "") -> None:
        """Every key no rule read: known not to change the cache, passed; a mechanism's field
        (CHANGES), refused; a name that says it may change the cache (STRUCTURAL), refused, or
        with --ignore KEY a warning; any other, a note on the first line of the output."""
        unknown = []
        for key, value in self.data.items():
            name = prefix + key
            if key in self.read or key in HARMLESS_KEYS or (family and key in family.harmless) or \
                    HARMLESS.search(key) or value is None:      # null: the field is unset
                continue
            if key in CHANGES:
                _cannot(self, name, value, f"no rule reads it for model_type {self.model_type or '(none)'!r}")
            if name in ignore or key in ignore:
                notes.append(f"WARNING: {name} {_show(value)} is not read (--ignore {name}): "
                             f"the sizes do not take it into account")
            elif STRUCTURAL.search(key):
                raise GQAError(f"config {self.where}: {name} {_show(value)} is read by no rule, and its "
                               f"name says it may change the cache (layers, attention, windows, sharing, "
                               f"state); if the model's code shows it does not, --ignore {name} sizes "
                               f"the model without it")
            else:
                unknown.append(f"{name} {_show(value)}")
        if unknown:
            notes.append(f"NOTE: {', '.join(unknown)}: read by no rule and not known to leave the "
                         f"cache alone; the sizes assume {'it does' if len(unknown) == 1 else 'they do'}")


def _cannot(keys: "_Keys", field: str, value: Any, why: str = "") -> None:
    """Refuse a field that changes the cache in a way no rule reads.  Never --ignore: sizing
    the model without it would give a wrong number."""
    keys.read.add(field.split(".")[0].split("[")[0])
    raise GQAError(f"config {keys.where}: cannot size: {field} {_show(value)} changes the cache in a "
                   f"way no rule reads" + (f" ({why})" if why else "") +
                   "; size the model by hand (--layers, --heads, --kv-heads, --head-dim, --window) "
                   "from its code")


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def family_table() -> str:
    """FAMILIES as a markdown table: family, model_type, where the layout is said, example."""
    rows = ["| family | model_type | which layer caches what | example |", "| --- | --- | --- | --- |"]
    for model_type, family in FAMILIES.items():
        types = ", ".join(f"`{t}`" for t in [model_type] + [a for a, b in ALIASES.items() if b == model_type])
        rows.append(f"| {family.name} | {types} | {family.layout} | `{family.example}` |")
    return "\n".join(rows) + "\n"


# The config fields that each hand-given size (--layers, ...) overrules.
OVERRULED = {"layers": LAYERS + ("num_decoder_layers", "decoder_layers"), "heads": QUERY_HEADS,
             "kv_heads": KV_HEADS, "head_dim": ("head_dim", "d_kv"), "window": ("sliding_window",)}

# One row serves several model types of one family.
ALIASES = {"deepseek_v2": "deepseek_v3", "kimi_k2": "deepseek_v3", "minimax": "minimax_m1",
           "minimax_text_01": "minimax_m1"}


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
                text += f" (g={group.kv_heads}, head dim {group.head_dim})"
            parts.append(text)
        return "; ".join(parts)

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
            config = _load_json(where)
        return _shape(where, config, tuple(ignore), dict(overrides or {}))


MAX_CONFIG_BYTES = 4 << 20          # a config.json is a few KB; anything far larger is not one
MAX_INDEX_BYTES = 64 << 20          # a checkpoint's index lists every tensor: a few MB at most
INDEX = "model.safetensors.index.json"


def _load_json(path: str, limit: int = MAX_CONFIG_BYTES, what: str = "config") -> Dict[str, Any]:
    try:
        if not os.path.isfile(path):
            raise GQAError(f"{what} {path}: cannot read it: "
                           f"{'not a regular file' if os.path.exists(path) else 'no such file'}")
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as err:
        raise GQAError(f"{what} {path}: cannot read it: {err.strerror or err}") from None
    if len(raw) > limit:
        raise GQAError(f"{what} {path} is larger than {limit // 2 ** 20} MiB: not a {what} file")
    try:
        config = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise GQAError(f"{what} {path} is not UTF-8 text (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise GQAError(f"{what} {path} is not JSON: line {err.lineno}, column {err.colno}: "
                       f"{err.msg}") from None
    except (RecursionError, ValueError) as err:
        raise GQAError(f"{what} {path} cannot be read as JSON: {str(err)[:80]}") from None
    if not isinstance(config, dict):
        raise GQAError(f"{what} {path} is not a JSON object but a {type(config).__name__}")
    return config


def config_path(path: str) -> str:
    """The config.json a path names: the file itself, or the one in a model folder."""
    return os.path.join(path, "config.json") if os.path.isdir(path) else path


def checkpoint_bytes(path: str) -> Tuple[int, str]:
    """The weights' bytes, all devices, from a checkpoint: (bytes, where they were read).

    path is a model.safetensors.index.json, whose metadata.total_size is the bytes of every
    tensor, or a model folder holding one.
    """
    index = os.path.join(path, INDEX) if os.path.isdir(path) else path
    if os.path.isdir(path) and not os.path.isfile(index):
        raise GQAError(f"--weights {path}: the folder holds no {INDEX}; give the weights' size "
                       f"(for example 140GB)")
    total = (_load_json(index, MAX_INDEX_BYTES, "weights index").get("metadata") or {}).get("total_size")
    if isinstance(total, bool) or not isinstance(total, int) or not 0 < total <= MAX_BYTES:
        raise GQAError(f"weights index {index}: metadata.total_size must be a whole number of bytes "
                       f"from 1 to {MAX_BYTES:.0e}; got {_show(total)}")
    return total, f"{index}'s metadata.total_size"


def _name(where: str, top: Dict[str, Any], text: Dict[str, Any]) -> str:
    return str(top.get("_name_or_path") or text.get("_name_or_path") or top.get("model_type") or
               text.get("model_type") or os.path.splitext(os.path.basename(where.split(" (")[0]))[0])


class _Read(NamedTuple):
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


# Where a wrapper keeps its decoder, in the order they are tried: multimodal models' text_config
# (LLaVA, Gemma-3), InternVL's llm_config, DeepSeek-VL2's language_config, and the decoder of
# an encoder-decoder wrapper (VisionEncoderDecoderModel: it cross-attends to the encoder).
NESTED = ("text_config", "llm_config", "language_config", "decoder")
ENCODER_DECODER_WRAPPERS = ("vision-encoder-decoder", "speech-encoder-decoder", "encoder-decoder")


def _nested(where: str, top: Dict[str, Any]) -> Tuple[Dict[str, Any], str, str]:
    """(the decoder's config, where it sits, the key it sits under: "" for the config itself)."""
    top_type = str(top.get("model_type") or "")
    for key in NESTED:
        if key not in top or (key == "decoder" and top_type not in ENCODER_DECODER_WRAPPERS):
            continue
        text = top[key]
        if not isinstance(text, dict) or not text:
            raise GQAError(f"config {where}: {key} is {'empty' if text in ({}, None) else 'not an object'}: "
                           f"the text model's sizes are not given (the model class would fill every "
                           f"one with its defaults); give them, or size the model by hand")
        return text, f"{where} ({key})", key
    return top, where, ""


def _shape(where: str, top: Dict[str, Any], ignore: Tuple[str, ...],
           overrides: Dict[str, int]) -> ModelShape:
    notes: List[str] = [f"--{k.replace('_', '-')} {v} given by hand" for k, v in overrides.items()]
    top_type = str(top.get("model_type") or "")
    text, where, nested = _nested(where, top)
    model_type = str(text.get("model_type") or WRAPPERS.get(top_type) or top_type)
    model_type = ALIASES.get(model_type, model_type)
    family = FAMILIES.get(model_type)
    keys = _Keys(where, text, family.defaults if family else {}, model_type, notes)
    top_keys = keys if text is top else _Keys(where.split(" (")[0], top, {}, top_type, notes)
    keys.cross = nested == "decoder"
    keys.get("model_type"), top_keys.get("model_type"), top_keys.get(nested) if nested else None
    reader = _reader(keys, family)
    found = READERS[reader](keys, top_keys, model_type, family, ignore, overrides)
    max_context, field = _context(keys)
    width = keys.int(MLP_WIDTH, "MLP width", default=0) if reader == "decoder" else 0
    dtype, dtype_field = _cache_dtype(top_keys, keys)
    keys.get("is_encoder_decoder")
    _account(keys, top_keys, top_type, family, model_type, ignore, overrides, notes)
    warnings = [n for n in notes if n.startswith(("WARNING", "NOTE"))]
    notes = warnings + [n for n in notes if not n.startswith(("WARNING", "NOTE"))]
    return ModelShape(_name(where, top, text), found.layers, found.heads, found.kv_heads, found.head_dim,
                      found.hidden, width or None, MLP_MATRICES.get(model_type) if width else None,
                      found.groups, max_context, field, tuple(notes), model_type if family else "",
                      found.source, found.source_field, found.image, found.image_field,
                      dtype, dtype_field, found.per_layer)


def _account(keys: _Keys, top_keys: _Keys, top_type: str, family: Optional[Family], model_type: str,
             ignore: Tuple[str, ...], overrides: Dict[str, int], notes: List[str]) -> None:
    """Every key read, known not to change the cache, or refused (_Keys.account); --ignore of a
    key the config does not have is an error; a model type with no row, a warning first."""
    for name in overrides:          # a field given by hand overrules the config's: read, and set aside
        keys.read.update(OVERRULED.get(name, ()))
    every = set(keys.data) | set(top_keys.data) | {p + k for p, inner in keys.nested for k in inner.data}
    missing = [name for name in ignore if name not in every]
    if missing:
        raise GQAError(f"--ignore {missing[0]}: the config has no key {missing[0]!r} "
                       f"(its keys: {', '.join(sorted(every)[:12])}{', ...' if len(every) > 12 else ''})")
    if keys is not top_keys:
        top_keys.account(ignore, notes, FAMILIES.get(WRAPPERS.get(top_type, ""), family))
    keys.account(ignore, notes, family)
    for prefix, inner in keys.nested:
        inner.account(ignore, notes, family, prefix)
    if family is None and model_type not in KNOWN_WITHOUT_ROW:
        used = sorted(k for k in keys.read if k in keys.data and k not in ("model_type", "_name_or_path"))
        notes.insert(0, f"WARNING: model_type {model_type or '(none)'!r} has no row in the sizer's table "
                        f"of families: sized by the generic rules from "
                        f"{', '.join(used) or 'no fields'}; check the layers against the model's code")


# Model types whose models keep no KV cache, known without a row of their own: encoders
# (their classes are encoders only, or decoders only with is_decoder), and attention-free
# language models (each with what its layers hold instead).
ENCODER_ONLY = frozenset((
    "bert", "roberta", "xlm-roberta", "xlm-roberta-xl", "distilbert", "albert", "electra", "deberta",
    "deberta-v2", "camembert", "mpnet", "modernbert", "ernie", "nomic_bert", "megatron-bert",
    "longformer", "funnel", "squeezebert", "mobilebert", "convbert", "esm", "vit", "deit", "clip",
    "siglip", "wav2vec2", "hubert", "wavlm"))
ATTENTION_FREE = {"falcon_mamba": "Mamba", "rwkv": "RWKV", "rwkv5": "RWKV-5", "rwkv6": "RWKV-6",
                  "rwkv7": "RWKV-7", "xlstm": "mLSTM"}
KNOWN_WITHOUT_ROW = ENCODER_ONLY | frozenset(ATTENTION_FREE)
def _reader(keys: _Keys, family: Optional[Family]) -> str:
    """Which reader sizes the model: its row's, else what its config says it is."""
    if family:
        reader = family.reader
    elif keys.get("is_encoder_decoder"):
        reader = "encoder_decoder"
    elif keys.data.get("kv_lora_rank") is not None and keys.data.get("linear_attn_config") is None:
        reader = "mla"
    elif keys.model_type in ENCODER_ONLY:
        reader = "encoder"
    elif keys.model_type in ATTENTION_FREE:
        reader = "state"
    else:
        reader = "decoder"
    if reader == "encoder" and keys.get("is_decoder"):       # BertLMHeadModel and its kind
        reader = "decoder"
    return reader


def _context(keys: _Keys) -> Tuple[Optional[int], str]:
    """The model's longest context: the first of its spellings set (the others set aside)."""
    given = [name for name in MAX_CONTEXT if keys.get(name) is not None]
    return keys.num(given[:1], "context") if given else (None, "")


def _kv_heads(keys: _Keys, heads: int) -> Tuple[int, str]:
    """g, from every spelling: Falcon's multi_query, ChatGLM's groups, MPT and DBRX's attn_config."""
    attn = keys.get("attn_config")
    if isinstance(attn, dict):                  # MPT, DBRX
        inner = _Keys(f"{keys.where} attn_config", attn, {}, keys.model_type, keys.notes)
        keys.nested.append(("attn_config.", inner))
        window = inner.get("sliding_window_size")
        if window not in (None, -1):
            raise GQAError(f"config {keys.where}: attn_config.sliding_window_size {_show(window)}: "
                           f"a window here is not read; size it with --window")
        if inner.get("kv_n_heads") is not None:
            return inner.int(("kv_n_heads",), "key/value head count"), "attn_config.kv_n_heads"
        kind = inner.get("attn_type")
        kind = "multihead_attention" if kind is None else kind
        if kind == "multiquery_attention":
            return 1, "attn_config.attn_type"
        if kind != "multihead_attention":
            raise GQAError(f"config {keys.where}: attn_config.attn_type {kind!r} without kv_n_heads: "
                           f"the key/value heads are unknown")
        return heads, "attn_config.attn_type"
    names = KV_HEADS
    keys.get("new_decoder_architecture")
    if keys.model_type == "hf_olmo" and keys.get("multi_query_attention") and keys.get("n_kv_heads") is None:
        return 1, "multi_query_attention"     # OLMo's effective_n_kv_heads: one K/V head
    if keys.get("multi_query_attention") is False:       # ChatGLM: the group count is unused
        names = tuple(n for n in KV_HEADS if n != "multi_query_group_num")
        keys.seen("multi_query_group_num")
    if keys.get("multi_query") is True and not keys.get("new_decoder_architecture"):
        for name in names:
            keys.seen(name)         # read, and overruled
        return 1, "multi_query"      # Falcon and GPT-BigCode multi-query, whatever num_kv_heads says
    value, name = keys.num(names, "key/value head count", default=heads)
    return value, name or "(no key/value head count: g = h)"


def _attention_sizes(keys: _Keys, overrides: Dict[str, int]) -> Tuple[int, int, int, int, int, List[str]]:
    """(layers, heads, kv_heads, head_dim, hidden, the fields they came from), overrides applied."""
    layers, f_layers = (overrides["layers"], "--layers") if overrides.get("layers") else \
        keys.num(LAYERS, "layer count")
    heads, f_heads = (overrides["heads"], "--heads") if overrides.get("heads") else \
        keys.num(QUERY_HEADS, "query head count")
    hidden, f_hidden = keys.num(HIDDEN, "hidden size", default=0)
    kv_heads, f_kv = (overrides["kv_heads"], "--kv-heads") if overrides.get("kv_heads") else \
        _kv_heads(keys, heads)
    head_dim, f_dim = _head_dim(keys, overrides, heads, f_heads, hidden, f_hidden)
    for names, used, value in ((LAYERS, f_layers, layers), (QUERY_HEADS, f_heads, heads), (HIDDEN, f_hidden, hidden)):
        _agree(keys, names, used, value)
    _check_divides(keys.where, heads, kv_heads)
    return layers, heads, kv_heads, head_dim, hidden, [f_layers, f_heads, f_kv, f_dim]


def _head_dim(keys: _Keys, overrides: Dict[str, int], heads: int, f_heads: str, hidden: int,
              f_hidden: str) -> Tuple[int, str]:
    """The head dim: --head-dim, else the config's spellings of it (HEAD_DIM: they must agree),
    else hidden_size / h."""
    if overrides.get("head_dim"):
        return overrides["head_dim"], "--head-dim"
    if keys.model_type in ("zamba", "zamba2"):       # ZambaConfig, Zamba2Config: twice the width
        keys.seen("kv_channels")                     # the Megatron spelling of hidden_size / h
        if keys.get("attention_head_dim") is None and hidden:
            return 2 * hidden // heads, f"2 x {f_hidden} / {f_heads}"
    given = [(name, keys.get(name)) for name in HEAD_DIM if keys.get(name) is not None]
    if given:
        value, name = keys.num((given[0][0],), "head dim")
        for other, seen in given[1:]:
            if seen != value:
                raise GQAError(f"config {keys.where}: cannot size: {name} {value} and {other} {_show(seen)} "
                               f"disagree on the head dim, and which the model's code reads is not known")
        return value, name
    if not hidden:
        raise GQAError(f"config {keys.where}: no hidden size and no head_dim: tried "
                       f"{', '.join(HIDDEN)}, {', '.join(HEAD_DIM)} (or give --head-dim)")
    if hidden % heads:
        raise GQAError(f"config {keys.where}: hidden size {hidden} is not a multiple of {heads} "
                       f"query heads and there is no head_dim to say the head dim")
    return hidden // heads, f"{f_hidden} / {f_heads}"


def _agree(keys: _Keys, names: Sequence[str], used: str, value: int) -> None:
    """Where a config gives one size under two spellings, they must agree."""
    for name in names:
        other = keys.seen(name)
        if name != used and other is not None and other != value and used in keys.data:
            raise GQAError(f"config {keys.where}: {name} {_show(other)} and {used} {value} disagree")


def _check_divides(where: str, heads: int, kv_heads: int) -> None:
    try:
        gqa.method_name(heads, kv_heads)
    except GQAError:
        valid = ", ".join(map(str, gqa.valid_g(heads))) if heads <= 10 ** 6 else "its divisors"
        raise GQAError(f"config {where}: the model could not be loaded: {kv_heads} key/value "
                       f"heads do not divide {heads} query heads; g would divide for "
                       f"g = {valid}") from None


def _index_list(keys: _Keys, name: str, value: Any, layers: int, base: int) -> List[int]:
    """A list of layer indices (base 0 or 1, as the family's code reads them), 0-based."""
    if not isinstance(value, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in value):
        raise GQAError(f"config {keys.where}: {name} must be a list of layer indices; got {_show(value)}")
    bad = [i for i in value if not base <= i < layers + base]
    if bad or len(set(value)) != len(value):
        raise GQAError(f"config {keys.where}: {name} must list distinct layers from {base} to "
                       f"{layers - 1 + base} ({base}-based, of {layers} layers); got {_show(value)}")
    return [i - base for i in value]


# The spellings of a state's sizes, read and quoted for a family without a row.
STATE_FIELD = re.compile(r"^(mamba_|ssm_|linear_(num|key|value|conv)|conv_|short_conv|lru_|n_groups$|"
                         r"state_size$|expand$|conv_kernel$)")


def _state_note(keys: _Keys, family: Optional[Family], fallback: str) -> str:
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
            shown.append(f"{field} {_show(value)}")
    return f"{what} layers" + (f" (state: {', '.join(shown)})" if shown else "")


# ---------------------------------------------------------------------------
# Which layer caches by which rule: one mechanism per way a config says it.
# ---------------------------------------------------------------------------


class _Layout:
    """A decoder's layout as the mechanisms of LAYOUTS read it, one after another.

    rules: each layer's rule, "full", "sliding", "chunked", "mla", "image",
    "mlp" (no attention) or "none:<what>", once a mechanism has said it (None
    before); fields: the config fields that said so.
    """

    def __init__(self, keys: _Keys, model_type: str, family: Optional[Family], layers: int,
                 ignore: Tuple[str, ...], heads: int = 0):
        self.keys, self.model_type, self.family = keys, model_type, family
        self.layers, self.ignore, self.heads = layers, ignore, heads
        self.rules = None           # type: Optional[List[str]]
        self.fields = []            # type: List[str]
        self.kv = None              # type: Optional[List[int]]   # g of each layer, where it varies
        self.q = None               # type: Optional[List[int]]   # h of each layer, where it varies

    def cannot(self, field: str, value: object) -> None:
        """A value that changes the cache in a way no rule reads: refused, never ignored."""
        _cannot(self.keys, field, value)

    def honours(self, *model_types: str) -> bool:
        """True when the family's code reads the mechanism's field: one of model_types, or a
        model type with no row (sized with its warning)."""
        return self.family is None or self.model_type in model_types

    def state(self, what: str) -> str:
        """The rule of a layer that holds a state of fixed size instead of a cache."""
        return "none:" + _state_note(self.keys, self.family, what)

    def agree(self, said: List[str], source: str, which: str) -> None:
        """Where layer_types said the layout already, source must put full attention on the same layers."""
        if self.rules is not None and [r == "full" for r in self.rules] != [r == "full" for r in said]:
            raise GQAError(f"config {self.keys.where}: {source} and layer_types disagree "
                           f"on which layers are {which}")


def _layout_attn_layer_indices(lay: _Layout) -> None:
    """Falcon-H1: attn_layer_indices, which the sizer does not read (it puts attention in
    every layer)."""
    indices = lay.keys.data.get("attn_layer_indices")
    if indices is None:
        return
    if lay.model_type == "falcon_h1":
        lay.cannot("attn_layer_indices", indices)
    if lay.rules is None and lay.honours("bamba"):
        lay.keys.get("attn_layer_indices")
        at = set(_index_list(lay.keys, "attn_layer_indices", indices, lay.layers, 0))
        lay.rules = ["full" if i in at else lay.state("Mamba-2") for i in range(lay.layers)]
        lay.fields.append("attn_layer_indices")


# The fields of a Nemotron-NAS block's attention (DeciLM's AttentionConfig) that the sizer
# reads; the others (window_length, num_sink_tokens, sparsify, ...) must be unset.
NAS_ATTENTION = ("n_heads_in_group", "no_op", "replace_with_linear")


def _layout_block_configs(lay: _Layout) -> None:
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


def _layout_layers_block_type(lay: _Layout) -> None:
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
    if ids is not None and sorted(_index_list(lay.keys, "hybrid_layer_ids", ids, lay.layers, 0)) != \
            [i for i, t in enumerate(types) if t == "hybrid"]:
        raise GQAError(f"config {lay.keys.where}: hybrid_layer_ids {_show(ids)} and layers_block_type "
                       f"disagree on which layers are hybrid")


def _layout_attention_types(lay: _Layout) -> None:
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
    lay.rules = ["sliding" if k == "local" else "full" for k in kinds]
    lay.fields += ["attention_types", "window_size"]


def _layout_blocksparse(lay: _Layout) -> None:
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


def _layout_layer_types(lay: _Layout) -> None:
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
                       f"got {_show(types)}")
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


def _layout_full_attn_idxs(lay: _Layout) -> None:
    """LFM2: full_attn_idxs, 0-based, are attention; the rest short convolutions."""
    idxs = lay.keys.get("full_attn_idxs")
    if idxs is None:
        return
    at = set(_index_list(lay.keys, "full_attn_idxs", idxs, lay.layers, 0))
    said = ["full" if i in at else lay.state("short-convolution") for i in range(lay.layers)]
    lay.agree(said, f"full_attn_idxs {_show(idxs)}", "attention")
    lay.rules = lay.rules or said
    lay.fields.append("full_attn_idxs")


def _layout_block_types(lay: _Layout) -> None:
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
                       f"got {_show(blocks)}")
    lay.rules = ["sliding" if blocks[i % len(blocks)] == "attention" else lay.state("recurrent")
                 for i in range(lay.layers)]
    lay.fields += [name, "attention_window_size"]


def _layout_linear_attn_config(lay: _Layout) -> None:
    """Kimi Linear: linear_attn_config's full_attn_layers, 1-based, are MLA; its kda_layers,
    the rest, linear attention."""
    keys, layers = lay.keys, lay.layers
    linear = keys.get("linear_attn_config")
    if lay.rules is not None or not isinstance(linear, dict):
        return
    inner = _Keys(f"{keys.where} linear_attn_config", linear, {}, lay.model_type, keys.notes)
    keys.nested.append(("linear_attn_config.", inner))
    full = set(_index_list(inner, "full_attn_layers", inner.get("full_attn_layers"), layers, 1))
    kda = inner.get("kda_layers")
    if kda is not None and set(_index_list(inner, "kda_layers", kda, layers, 1)) != set(range(layers)) - full:
        raise GQAError(f"config {keys.where}: linear_attn_config: full_attn_layers and kda_layers must "
                       f"share the {layers} layers between them (1-based)")
    for name in ("num_heads", "head_dim", "short_conv_kernel_size"):
        inner.get(name)
    lay.rules = ["mla" if i in full else lay.state("linear attention") for i in range(layers)]
    lay.fields.append("linear_attn_config.full_attn_layers")


def _layout_hybrid_override_pattern(lay: _Layout) -> None:
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


def _layout_attn_layer_period(lay: _Layout) -> None:
    """Jamba: attention every attn_layer_period layers from attn_layer_offset, Mamba between."""
    keys = lay.keys
    if lay.rules is not None or keys.get("attn_layer_period") is None:
        return
    period = keys.int(("attn_layer_period",), "attention period")
    offset = keys.get("attn_layer_offset") or 0
    lay.rules = ["full" if i % period == offset else lay.state("Mamba") for i in range(lay.layers)]
    lay.fields += ["attn_layer_period", "attn_layer_offset"]


def _layout_attn_type_list(lay: _Layout) -> None:
    """MiniMax: attn_type_list, one per layer: 1 softmax attention, 0 lightning (linear) attention."""
    kinds = lay.keys.get("attn_type_list")
    if lay.rules is not None or kinds is None:
        return
    if not isinstance(kinds, list) or len(kinds) != lay.layers or set(kinds) - {0, 1}:
        lay.cannot("attn_type_list", kinds)
    lay.rules = ["full" if k == 1 else lay.state("lightning-attention") for k in kinds]
    lay.fields.append("attn_type_list")


def _layout_full_attention_interval(lay: _Layout) -> None:
    """Qwen3-Next: every full_attention_interval-th layer is full, the rest linear attention."""
    if lay.keys.get("full_attention_interval") is None:
        return
    n = lay.keys.int(("full_attention_interval",), "full attention interval")
    said = ["full" if (i + 1) % n == 0 else lay.state("linear attention") for i in range(lay.layers)]
    lay.agree(said, f"full_attention_interval {n}", "full attention")
    lay.rules = lay.rules or said
    lay.fields.append("full_attention_interval")


def _layout_attention_chunk_size(lay: _Layout) -> None:
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


def _layout_cross_attention_layers(lay: _Layout) -> None:
    """Mllama: cross_attention_layers, 0-based, attend to the image; the rest as said, else full."""
    cross = lay.keys.get("cross_attention_layers")
    if cross is None:
        return
    at = set(_index_list(lay.keys, "cross_attention_layers", cross, lay.layers, 0))
    lay.rules = ["image" if i in at else r for i, r in enumerate(lay.rules or ["full"] * lay.layers)]
    lay.fields.append("cross_attention_layers")


def _layout_sliding_window(lay: _Layout) -> None:
    """sliding_window on every layer (Mistral), unless use_sliding_window is false (Qwen2);
    which layers stay full: Gemma-3's sliding_window_pattern, Gemma-2's rule (the odd ones)."""
    keys, layers = lay.keys, lay.layers
    window = keys.get("sliding_window")
    use = keys.get("use_sliding_window")
    if lay.rules is not None or window is None or use is False:
        return
    if lay.family and not lay.family.sliding:
        keys.notes.append(f"sliding_window {_show(window)} is set aside: {lay.family.name}'s code has no "
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


def _layout_sliding_window_size(lay: _Layout) -> None:
    """sliding_window_size, an older spelling beside sliding_window: the two must agree.  The
    window's pattern and max_window_layers, said again beside layer_types or moot without a
    window, are set aside."""
    keys = lay.keys
    for name in ("sliding_window_pattern", "_sliding_window_pattern", "max_window_layers"):
        keys.seen(name)
    size, window = keys.seen("sliding_window_size"), keys.get("sliding_window")
    if size is not None and size != window:
        raise GQAError(f"config {keys.where}: sliding_window_size {_show(size)} and sliding_window "
                       f"{_show(window)} disagree")


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


def _layouts(keys: _Keys, model_type: str, family: Optional[Family], layers: int,
             ignore: Tuple[str, ...], heads: int) -> _Layout:
    """What each decoder layer caches, and the fields that said so: LAYOUTS, in order;
    every layer full when none of them speaks."""
    lay = _Layout(keys, model_type, family, layers, ignore, heads)
    for mechanism in LAYOUTS:
        mechanism(lay)
    lay.rules = lay.rules or ["full"] * layers
    lay.fields = lay.fields or ["every layer"]
    return lay


# ---------------------------------------------------------------------------
# A decoder's layers, grouped: the shapes and the positions each group holds.
# ---------------------------------------------------------------------------


def _decoder(keys: _Keys, top: _Keys, model_type: str, family: Optional[Family],
             ignore: Tuple[str, ...], overrides: Dict[str, int]) -> _Read:
    """A decoder: its attention's sizes, each layer's rule (_layouts), and the groups of
    layers that cache alike."""
    per_layer = _per_layer_heads(keys, overrides)
    layers, heads, kv_heads, head_dim, hidden, shape_fields = per_layer[0] if per_layer else \
        _attention_sizes(keys, overrides)
    lay = _layouts(keys, model_type, family, layers, ignore, heads)
    if per_layer:
        lay.q, lay.kv = per_layer[1], per_layer[2]
    rules, held = _held(keys, lay.rules, lay.fields, overrides)
    mla = (0, [])           # type: Tuple[int, List[str]]
    if "mla" in rules:
        mla = _latent(keys)
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
    return _Read(layers, heads, kv_heads, head_dim, hidden, groups, image=image, image_field=image_field,
                 per_layer=per_layer)


def _beside(keys: _Keys, family: Optional[Family], model_type: str, layers: int, rules: List[str],
            groups: Tuple[LayerGroup, ...]) -> Tuple[LayerGroup, ...]:
    """Groups beside the decoder's own: Falcon-H1's Mamba-2 mixers, cross-attention to an
    encoder (add_cross_attention), and the draft layers of multi-token prediction."""
    extra = ()          # type: Tuple[LayerGroup, ...]
    if "mlp" in rules:
        keys.notes.append(f"{rules.count('mlp')} layers have no attention: no cache, no state")
    if model_type == "falcon_h1":           # a Mamba-2 mixer beside the attention of every layer
        note = _state_note(keys, family, "Mamba-2").replace(" layers", " mixers beside the attention", 1)
        extra += (LayerGroup("none", layers, note=note,
                             fields=("model_type falcon_h1",), layer_ids=tuple(range(layers))),)
    if keys.get("add_cross_attention") or keys.cross:   # a decoder of an encoder-decoder (GPT-2 after a ViT)
        said = "add_cross_attention" if keys.data.get("add_cross_attention") else "decoder of an encoder-decoder"
        extra += tuple(g._replace(rule="cross", window=None, fields=g.fields + (said,))
                       for g in groups if g.rule == "full")
    return extra + _draft(keys)


# Multi-token-prediction layers, by the fields that count them: DeepSeek-V3's and GLM-4.5's
# num_nextn_predict_layers, Qwen3-Next's mtp_num_hidden_layers, MiniMax-M2's
# num_mtp_modules of mtp_transformer_layers each.
DRAFT = (("num_nextn_predict_layers",), ("mtp_num_hidden_layers",),
         ("num_mtp_modules", "mtp_transformer_layers"))


def _draft(keys: _Keys) -> Tuple[LayerGroup, ...]:
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


def _per_layer_heads(keys: _Keys, overrides: Dict[str, int]
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
    head_dim, f_dim = _head_dim(keys, overrides, max(q), "num_query_heads", hidden, f_hidden)
    for h, g in zip(q, kv):
        _check_divides(keys.where, h, g)
    return (layers, max(q), max(kv), head_dim, hidden, fields + [f_dim]), q, kv


def _count_list(keys: _Keys, name: str, layers: int) -> List[int]:
    """A list of one positive count per layer."""
    value = keys.get(name)
    if not isinstance(value, list) or len(value) != layers or \
            any(isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10 ** 6 for v in value):
        raise GQAError(f"config {keys.where}: {name} must list a positive count for each of the "
                       f"{layers} layers; got {_show(value)}")
    return value


def _held(keys: _Keys, rules: List[str], layout_fields: List[str],
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


def _global_shape(keys: _Keys, model_type: str, heads: int,
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
        _check_divides(keys.where, heads, g_kv)
    if keys.get("attention_k_eq_v"):
        keys.notes.append("attention_k_eq_v true: the global layers' values are their keys; counted as "
                          "a key and a value per position, as a cache that stores both holds them")
    return g_kv, g_dim, [f_kv, f_dim, "attention_k_eq_v"]


def _shared_from(keys: _Keys, model_type: str, rules: List[str],
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
            _cannot(keys, "num_kv_shared_layers", keys.get("num_kv_shared_layers"),
                    "which layers share which cache is known only for Gemma-3n and Gemma-4")
        return {}
    layers = len(rules)
    n_shared = keys.get("num_kv_shared_layers") or 0
    if isinstance(n_shared, bool) or not isinstance(n_shared, int) or not 0 <= n_shared < layers:
        raise GQAError(f"config {keys.where}: num_kv_shared_layers must be a whole number from 0 to "
                       f"{layers - 1}; got {_show(n_shared)}")
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


def _cross_layer(keys: _Keys, layers: int) -> Dict[int, Tuple[int, str]]:
    """Cross-layer attention: with use_cla, layer i reads the K and V of layer i - i % factor."""
    factor = keys.get("cla_share_factor")
    if not keys.get("use_cla") or factor in (None, 1):
        return {}
    if isinstance(factor, bool) or not isinstance(factor, int) or not 1 <= factor <= layers:
        raise GQAError(f"config {keys.where}: cla_share_factor must be a whole number from 1 to "
                       f"{layers}; got {_show(factor)}")
    return {i: (i - i % factor, "cla_share_factor") for i in range(layers) if i % factor}


def _layer_specs(rules: List[str], lay: _Layout, shared_from: Dict[int, Tuple[int, str]],
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


def _latent(keys: _Keys) -> Tuple[int, List[str]]:
    if keys.get("qk_rope_head_dim") is None:
        raise GQAError(f"config {keys.where}: kv_lora_rank without qk_rope_head_dim: the latent "
                       f"that MLA caches is kv_lora_rank + qk_rope_head_dim, and the second is unknown")
    rank = keys.int(("kv_lora_rank",), "latent rank")
    rope = keys.int(("qk_rope_head_dim",), "rope head dim")
    for name in ("qk_nope_head_dim", "q_lora_rank", "v_head_dim"):
        keys.seen(name)         # the query's and the value's sizes: not what MLA caches
    return rank + rope, ["kv_lora_rank", "qk_rope_head_dim"]


def _image_tokens(keys: _Keys, top: _Keys) -> Tuple[int, str]:
    """Mllama: an image's tokens, max_num_tiles x ((image_size // patch_size)^2 + 1), as vLLM's
    get_max_mllama_image_tokens counts them."""
    vision = top.get("vision_config")
    if not isinstance(vision, dict):
        raise GQAError(f"config {keys.where}: cross-attention layers to an image, and no vision_config "
                       f"to say how many tokens an image has; give --image-tokens")
    inner = _Keys(f"{top.where} vision_config", vision, {}, "mllama_vision_model", keys.notes)
    tiles = inner.int(("max_num_tiles",), "tiles per image")
    size = inner.int(("image_size",), "image size")
    patch = inner.int(("patch_size",), "patch size")
    return tiles * ((size // patch) ** 2 + 1), (
        f"vision_config: max_num_tiles {tiles} x ((image_size {size} // patch_size {patch})^2 + 1)")


def _mla(keys: _Keys, top: _Keys, model_type: str, family: Optional[Family], ignore: Tuple[str, ...],
         overrides: Dict[str, int]) -> _Read:
    """DeepSeek-V2/V3 (and Kimi-K2): every layer caches one latent per token."""
    latent, fields = _latent(keys)
    layers = overrides.get("layers") or keys.int(LAYERS, "layer count")
    heads = overrides.get("heads") or keys.int(QUERY_HEADS, "query head count")
    v_dim = keys.int(("v_head_dim", "qk_nope_head_dim"), "value head dim")
    keys.seen("num_key_value_heads")        # a g that MLA does not use
    return _Read(layers, heads, heads, v_dim, keys.int(HIDDEN, "hidden size", 0),
                 (LayerGroup("mla", layers, latent=latent, fields=tuple(fields + ["num_hidden_layers"]),
                             layer_ids=tuple(range(layers))),) + _draft(keys))


def _encoder_decoder(keys: _Keys, top: _Keys, model_type: str, family: Optional[Family],
                     ignore: Tuple[str, ...], overrides: Dict[str, int]) -> _Read:
    """T5, Whisper, BART, Pegasus: the decoder caches its own tokens, and the encoder's output
    for cross-attention; the encoder itself caches nothing while the decoder generates."""
    heads, f_heads = (overrides["heads"], "--heads") if overrides.get("heads") else \
        keys.num(("decoder_attention_heads",) + QUERY_HEADS, "query head count")
    layers, f_layers = (overrides["layers"], "--layers") if overrides.get("layers") else \
        keys.num(("num_decoder_layers", "decoder_layers") + LAYERS, "layer count")
    hidden = keys.int(HIDDEN, "hidden size", 0)
    if overrides.get("head_dim"):
        head_dim, f_dim = overrides["head_dim"], "--head-dim"
    elif keys.get("d_kv") is not None or keys.get("head_dim") is not None:
        head_dim, f_dim = keys.num(("d_kv", "head_dim"), "head dim")
    elif hidden and hidden % heads == 0:
        head_dim, f_dim = hidden // heads, "d_model / " + f_heads
    else:
        raise GQAError(f"config {keys.where}: no head dim: tried d_kv, head_dim, d_model / heads")
    kv_heads, f_kv = (overrides["kv_heads"], "--kv-heads") if overrides.get("kv_heads") else \
        _kv_heads(keys, heads)
    _check_divides(keys.where, heads, kv_heads)
    for name in ("encoder_layers", "encoder_attention_heads", "num_layers", "num_hidden_layers"):
        keys.seen(name)         # the encoder's: it caches nothing while the decoder generates
    fields = (f_layers, f_heads, f_kv, f_dim)
    source, source_field = None, ""
    if keys.get("max_source_positions") is not None:          # Whisper: 30 s of audio, 1,500 frames
        source, source_field = keys.num(("max_source_positions",), "source positions")
    ids = tuple(range(layers))
    return _Read(layers, heads, kv_heads, head_dim, hidden,
                 (LayerGroup("full", layers, kv_heads, head_dim, fields=fields, layer_ids=ids),
                  LayerGroup("cross", layers, kv_heads, head_dim, fields=fields, layer_ids=ids)),
                 source, source_field)


def _state_model(keys: _Keys, top: _Keys, model_type: str, family: Optional[Family],
                 ignore: Tuple[str, ...], overrides: Dict[str, int]) -> _Read:
    """Mamba, Mamba-2, Falcon-Mamba, RWKV, xLSTM: no attention anywhere; every layer holds a
    state of fixed size.  A model type known to be attention-free (ATTENTION_FREE) without a row
    has every key read but those that would name attention layers in a hybrid."""
    names = LAYERS + ("num_blocks",)
    layers, used = (overrides["layers"], "--layers") if overrides.get("layers") else keys.num(names, "layer count")
    _agree(keys, names, used, layers)
    what = ATTENTION_FREE.get(model_type, "state-space")
    note = _state_note(keys, family, what)
    if family is None:
        keys.read.update(k for k in keys.data if not HYBRID_ATTENTION.search(k))
    fields = tuple(f for f in (family.state[1] if family else ()) if f in keys.data) or (used,)
    return _Read(layers, 0, 0, 0, keys.int(HIDDEN + ("embedding_dim",), "hidden size", 0),
                 (LayerGroup("none", layers, note=note, fields=fields, layer_ids=tuple(range(layers))),))


# Keys by which an attention-free family's hybrids (flash-linear-attention's "attn") name
# their attention layers: never read as attention-free.
HYBRID_ATTENTION = re.compile(r"^attn$|^attn_layers$|attention_layers$|^attn_type_list$|^layer_types$")


def _encoder_only(keys: _Keys, top: _Keys, model_type: str, family: Optional[Family],
                  ignore: Tuple[str, ...], overrides: Dict[str, int]) -> _Read:
    """BERT and the other encoders: the model reads its whole input in one pass and generates
    nothing, so it keeps no KV cache at all (its class is no decoder: is_decoder is not set)."""
    layers, used = keys.num(LAYERS, "layer count")
    keys.read.update(k for k in keys.data if k not in ("add_cross_attention",))
    note = f"{model_type} encoder layers"
    return _Read(layers, 0, 0, 0, keys.int(HIDDEN, "hidden size", 0),
                 (LayerGroup("encoder", layers, note=note, fields=(f"model_type {model_type}", "is_decoder"),
                             layer_ids=tuple(range(layers))),))


def _decoder_reader(keys: _Keys, top: _Keys, model_type: str, family: Optional[Family],
                    ignore: Tuple[str, ...], overrides: Dict[str, int]) -> _Read:
    return _decoder(keys, top, model_type, family, ignore, overrides)


READERS = {"decoder": _decoder_reader, "mla": _mla, "encoder_decoder": _encoder_decoder,
           "state": _state_model, "encoder": _encoder_only}


# The cache's own dtype, where a config names it: vLLM's kv_cache_dtype, and the KV scheme of
# a quantization_config (compressed-tensors' kv_cache_scheme, ModelOpt's kv_cache_quant_algo).
KV_DTYPES = {"fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "fp8_inc": "fp8", "int8": "int8",
             "bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16",
             "float32": "fp32", "fp32": "fp32"}


def _cache_dtype(top: _Keys, keys: _Keys) -> Tuple[str, str]:
    """(the cache dtype the config names, the field that names it), or ("", "")."""
    for where in (keys, top):
        named = where.get("kv_cache_dtype")
        if named is not None and str(named).lower() != "auto":
            if str(named).lower() not in KV_DTYPES:
                _cannot(where, "kv_cache_dtype", named, f"not one of {', '.join(KV_DTYPES)}")
            return KV_DTYPES[str(named).lower()], f"kv_cache_dtype {_show(named)}"
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
        _cannot(top, "quantization_config.kv_cache_scheme", scheme, "only 8-bit schemes are read")
    if algo is not None:
        if str(algo).upper() != "FP8":
            _cannot(top, "quantization_config.kv_cache_quant_algo", algo, "only FP8 is read")
        return "fp8", f"quantization_config.kv_cache_quant_algo {_show(algo)}"
    return "", ""


# ---------------------------------------------------------------------------
# What it computes.
# ---------------------------------------------------------------------------

def dtype_bytes(dtype: str) -> int:
    """Bytes per value of a dtype name (fp32, fp16, bf16, fp8, int8, ...)."""
    try:
        return DTYPE_BYTES[dtype.lower()]
    except (KeyError, AttributeError):
        raise GQAError(f"dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}") from None


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
        raise GQAError("decode_roofline: not estimated for MLA layers, whose attention "
                       "arithmetic (the latent absorbed into the projections) this model does not count")
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
# Sizes and rates on the command line.
# ---------------------------------------------------------------------------

_UNITS = {"b": 1, "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12,
          "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "tib": 2 ** 40}
_SI = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}


MAX_BYTES = 10 ** 18         # an exabyte: no device has more memory, or reads faster per second
MAX_FLOPS = 10 ** 21         # a zettaFLOP per second


def _bounded(value: float, text: str, what: str, top: float) -> float:
    if not 0 < value <= top:
        raise GQAError(f"{what} {str(text)[:40]!r} must be more than 0 and at most {top:.0e}")
    return value


def parse_size(text: str, what: str = "size") -> int:
    """Bytes from '80GiB', '80GB', '1.5 TiB' or a plain number of bytes (0 allowed, at most 1e18).

    >>> parse_size("80GiB"), parse_size("80GB"), parse_size("4096")
    (85899345920, 80000000000, 4096)
    """
    match = re.fullmatch(r"\s*(\d{1,30}(?:\.\d{1,30})?)\s*([A-Za-z]*)\s*", str(text)[:100])
    unit = match.group(2).lower() if match else None
    if not match or unit not in _UNITS and unit != "":
        raise GQAError(f"{what} {str(text)[:40]!r} is not a size: give bytes, or a number with one of "
                       f"B, KB, MB, GB, TB, KiB, MiB, GiB, TiB (for example 80GiB)")
    value = float(match.group(1)) * _UNITS[unit or "b"]
    if value > MAX_BYTES:
        raise GQAError(f"{what} {str(text)[:40]!r} must be at most {MAX_BYTES:.0e} bytes")
    return int(round(value))


def parse_bandwidth(text: str) -> float:
    """Bytes per second from '2039GB/s', '3.35TB/s' or a plain number (more than 0)."""
    return _bounded(float(parse_size(re.sub(r"/s\s*$", "", str(text)[:100]), "bandwidth")),
                    text, "bandwidth", MAX_BYTES)


def parse_flops(text: str) -> float:
    """FLOP per second from '312T', '312TFLOPS', '3.12e14' or '989 TFLOP/s' (more than 0)."""
    match = re.fullmatch(r"\s*(\d{1,30}(?:\.\d{1,30})?(?:[eE][+-]?\d{1,3})?)\s*([kKmMgGtTpP]?)"
                         r"\s*(?:FLOPS|FLOP/s|flops|flop/s)?\s*", str(text)[:100])
    if not match:
        raise GQAError(f"compute rate {str(text)[:40]!r} is not a rate: give FLOP/s as a number, "
                       f"with an optional k, M, G, T or P (for example 312T or 312TFLOPS)")
    return _bounded(float(match.group(1)) * _SI[match.group(2).lower()], text, "compute rate",
                    MAX_FLOPS)
