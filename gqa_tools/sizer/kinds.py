"""gqa_tools.sizer.kinds: what kind of model a config says it is, read before any head is counted.

A decoder, a decoder with MLA, an encoder-decoder, an encoder (no KV cache),
a model that attends both ways at every step (a masked-diffusion language
model, a detector's object queries: no KV cache either) or an attention-free
model (a state of fixed size).  The family's row says it; else the config,
in this order (kind_of):

    is_encoder_decoder          an encoder-decoder; with num_queries, a detector's
                                decoder, which takes its queries in one pass
    kv_lora_rank                MLA
    mask_token_id               a masked-diffusion language model
    an encoder's evidence       its model_type (ENCODER_ONLY, a dual encoder's
                                *_text_model or *_vision_model beside a contrastive
                                projection, the wrapper's), architectures naming only
                                encoder heads (ENCODER_HEADS), an auto_map naming a
                                masked-LM class and no generative one, segment embeddings
                                (type_vocab_size), pixels or spectrograms and no
                                vocabulary, a raw-audio feature encoder (conv_dim)
    ATTENTION_FREE              a state of fixed size
    nothing of these            a decoder, and the notes say which fields were looked at

is_decoder true makes any encoder a decoder (BertLMHeadModel).  The readers
are in readers.py and decoder.py; shape.py's READERS names them.
"""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional

from gqa_tools.sizer.families import Family
from gqa_tools.sizer.fields import Keys, show

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

# The heads of model classes that read their input whole and generate nothing (HF's
# naming: BertForMaskedLM, DetrForObjectDetection, Wav2Vec2ForCTC, ...).  A config whose
# architectures are all of these is an encoder's; any other (ForCausalLM, LMHeadModel,
# ForConditionalGeneration, a bare Model) says nothing.
ENCODER_HEADS = ("ForMaskedLM", "ForSequenceClassification", "ForTokenClassification",
                 "ForQuestionAnswering", "ForMultipleChoice", "ForNextSentencePrediction", "ForPreTraining",
                 "ForImageClassification", "ForObjectDetection", "ForSemanticSegmentation",
                 "ForInstanceSegmentation", "ForUniversalSegmentation", "ForDepthEstimation",
                 "ForMaskedImageModeling", "ForZeroShotImageClassification", "ForZeroShotObjectDetection",
                 "ForCTC", "ForAudioClassification", "ForAudioFrameClassification", "ForXVector")

# An image's or a spectrogram's input fields: with no vocabulary, the model has nothing to
# generate (a vision or audio encoder).
PIXELS = ("image_size", "patch_size", "num_channels", "num_mel_bins")

# The objectives a remote-code model's auto_map names (HF's Auto classes): a masked-LM model with
# no generative class is an encoder, whatever its head's class is named (NeoBERTLMHead).
ENCODER_AUTO = ("AutoModelForMaskedLM",)
GENERATIVE_AUTO = ("AutoModelForCausalLM", "AutoModelForSeq2SeqLM", "AutoModelForVision2Seq",
                   "AutoModelForImageTextToText", "AutoModelForSpeechSeq2Seq")
# A dual encoder's projection into the shared space (CLIP's, SigLIP's): a *_text_model or
# *_vision_model beside it is a contrastive tower; without it, a wrapper's language model (Kosmos-2's).
CONTRASTIVE = ("projection_dim", "logit_scale_init_value")

# Where no field says the kind, the fields looked at, quoted in the notes.
LOOKED_AT = ("is_encoder_decoder", "kv_lora_rank", "mask_token_id", "is_decoder", "architectures",
             "type_vocab_size", "vocab_size with " + "/".join(PIXELS), "conv_dim", "auto_map")


class Kind(NamedTuple):
    """Which reader sizes the model, and the field that says so."""
    reader: str         # decoder, mla, encoder_decoder, state, encoder, bidirectional
    evidence: str       # 'model_type bert', 'type_vocab_size 2 (segment embeddings, an encoder's)', ...


def kind_of(keys: Keys, top: Keys, family: Optional[Family]) -> Kind:
    """What kind of model the config says it is: its row's, else its fields' (see the docstring)."""
    data, top_type = keys.data, top.model_type
    if family:
        kind = Kind(family.reader, f"model_type {keys.model_type}")
    elif keys.get("is_encoder_decoder"):
        queries = data.get("num_queries")
        kind = Kind("bidirectional", f"num_queries {show(queries)}: a detector's decoder takes its object "
                                     f"queries in one pass") if _count(queries) else \
            Kind("encoder_decoder", "is_encoder_decoder")
    elif data.get("kv_lora_rank") is not None and data.get("linear_attn_config") is None:
        kind = Kind("mla", "kv_lora_rank")
    elif _count(data.get("mask_token_id")) is not None and not _generative(data):
        kind = Kind("bidirectional", f"mask_token_id {data['mask_token_id']}: a masked-diffusion language "
                                     f"model, denoising the whole sequence")
    else:
        kind = _encoder(keys, top, top_type) or (
            Kind("state", f"model_type {keys.model_type}") if keys.model_type in ATTENTION_FREE else
            Kind("decoder", "no field says otherwise; looked at " + ", ".join(LOOKED_AT)))
    if kind.reader == "encoder" and keys.get("is_decoder"):       # BertLMHeadModel and its kind
        kind = Kind("decoder", "is_decoder true")
    return kind


def _encoder(keys: Keys, top: Keys, top_type: str) -> Optional[Kind]:
    """An encoder's evidence, if the config gives any."""
    data, model_type = keys.data, keys.model_type
    heads = data.get("architectures") or (top.data.get("architectures") if top is not keys else None)
    if model_type in ENCODER_ONLY:
        return Kind("encoder", f"model_type {model_type}")
    if top_type in ENCODER_ONLY and top is not keys:
        return Kind("encoder", f"model_type {top_type}, a dual encoder: its {model_type or 'tower'} too")
    projection = [k for k in CONTRASTIVE if data.get(k) is not None or top.data.get(k) is not None]
    if model_type.endswith(("_text_model", "_vision_model")) and projection:
        return Kind("encoder", f"model_type {model_type}: a dual encoder's tower ({projection[0]}: a "
                               f"contrastive projection)")
    if isinstance(heads, list) and heads and all(str(h).endswith(ENCODER_HEADS) for h in heads):
        return Kind("encoder", f"architectures {show(heads)}: encoder heads only")
    auto = data.get("auto_map") or (top.data.get("auto_map") if top is not keys else None)
    if isinstance(auto, dict) and any(k in auto for k in ENCODER_AUTO) and \
            not any(k in auto for k in GENERATIVE_AUTO):
        return Kind("encoder", f"auto_map names {[k for k in ENCODER_AUTO if k in auto][0]} and no "
                               f"generative class: a masked-LM objective, an encoder's")
    if _count(data.get("type_vocab_size")):
        return Kind("encoder", f"type_vocab_size {data['type_vocab_size']}: segment embeddings, a BERT-style "
                               f"encoder's")
    pixels = [name for name in PIXELS if data.get(name) is not None]
    if pixels and data.get("vocab_size") is None:
        return Kind("encoder", f"{pixels[0]} {show(data[pixels[0]])} and no vocab_size: it reads an image or "
                               f"a spectrogram, with no vocabulary to generate from")
    if isinstance(data.get("conv_dim"), list):
        return Kind("encoder", "conv_dim: a raw-audio feature encoder (wav2vec2-style, CTC), not an "
                               "encoder-decoder")
    return None


def _count(value: Any) -> Optional[int]:
    """value if it is a whole number (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _generative(data: Dict[str, Any]) -> bool:
    """True when architectures name a causal-LM head."""
    heads = data.get("architectures")
    return isinstance(heads, list) and any(str(h).endswith(("ForCausalLM", "LMHeadModel")) for h in heads)
