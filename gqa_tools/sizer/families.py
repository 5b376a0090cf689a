"""gqa_tools.sizer.families: the model types the sizer knows, one row of FAMILIES each.

A row says how the family's config tells which layer caches what (its
layout, in words), its example in examples/configs/, which reader sizes it,
the model class's defaults a config may leave out, what a layer without a KV
cache holds, and the family's own keys known not to change the cache.
WRAPPERS and ALIASES map other model types onto a row; family_table() is the
table of docs/sizing.md.
"""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Tuple

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
    # LED (Longformer-Encoder-Decoder): LEDEncoderSelfAttention reads attention_window, one window per
    # encoder layer; the decoder's LEDDecoderAttention is BART's, full over the generated tokens and
    # cross-attending to every source token (transformers' modeling_led.py).
    "led": Family("LED", "encoder-decoder: the decoder's self-attention (full) and cross-attention; "
                  "attention_window is the encoder's", "led-base-16384-cochrane.json", reader="encoder_decoder",
                  harmless=("attention_window",)),
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


# The MLP's matrices of d_model x d_ff, by model_type, as the model classes of
# HF transformers build them: gate, up and down projections (SwiGLU or GeGLU)
# in LlamaMLP, MistralMLP, Qwen2MLP and GemmaMLP; in and out (c_fc, c_proj;
# dense_h_to_4h, dense_4h_to_h) in GPT-2, GPT-BigCode and Falcon.  A model
# type not named here has mlp_matrices None: nothing is guessed.
MLP_MATRICES = {"llama": 3, "mistral": 3, "qwen2": 3, "gemma": 3,
                "gpt2": 2, "gpt_bigcode": 2, "falcon": 2}


# One row serves several model types of one family.
ALIASES = {"deepseek_v2": "deepseek_v3", "kimi_k2": "deepseek_v3", "minimax": "minimax_m1",
           "minimax_text_01": "minimax_m1"}


def family_table() -> str:
    """FAMILIES as a markdown table: family, model_type, where the layout is said, example."""
    rows = ["| family | model_type | which layer caches what | example |", "| --- | --- | --- | --- |"]
    for model_type, family in FAMILIES.items():
        types = ", ".join(f"`{t}`" for t in [model_type] + [a for a, b in ALIASES.items() if b == model_type])
        rows.append(f"| {family.name} | {types} | {family.layout} | `{family.example}` |")
    return "\n".join(rows) + "\n"
