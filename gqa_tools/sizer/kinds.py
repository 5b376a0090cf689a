"""gqa_tools.sizer.kinds: what kind of model a config says it is, and so which reader sizes it.

A decoder, a decoder with MLA, an encoder-decoder, an encoder (no KV cache)
or an attention-free model (a state of fixed size): the family's row says
it, else the config (is_encoder_decoder, kv_lora_rank, is_decoder) and the
model types known without a row (ENCODER_ONLY, ATTENTION_FREE).  The
readers themselves are in readers.py and decoder.py; shape.py's READERS
names them.
"""

from __future__ import annotations

from typing import Optional

from gqa_tools.sizer.families import Family
from gqa_tools.sizer.fields import Keys

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


def reader_for(keys: Keys, family: Optional[Family]) -> str:
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
