"""gqa_tools.sizer: real models' shapes, read from their config.json, and their KV caches.

The two numbers that decide MHA, GQA or MQA, the query heads h and the
key/value heads g, sit in every model's config file.  From them, the layers
and the head dim, the sizer answers: which method is it, what does a token
of context cost, how many requests fit in the memory left, what happens on N
tensor-parallel devices, and (as a roofline model, not a measurement) how
fast could it decode.  `python -m gqa config` (command.py) prints its
answers; `python -m gqa tables --config` and the report read shapes with it.
Standard library only: json and arithmetic.

Its modules, each importing only those above it:

    units       bytes per value of a dtype (DTYPE_BYTES); 80GiB, 3.35TB/s, 312T parsed
    rules       what a layer caches (RULES), and LayerGroup: layers that cache alike
    families    one row of FAMILIES per model type; WRAPPERS, ALIASES; family_table()
    fields      the spellings of each size (SPELLINGS: LAYERS, QUERY_HEADS, KV_HEADS, HEAD_DIM, ...),
                where a decoder nests (NESTED), Keys (one config object read), the
                attention's sizes read by them, cannot() (a field no rule can size)
    kinds       what kind of model a config says it is, read before any head is counted
                (kind_of: a row, is_encoder_decoder, kv_lora_rank, mask_token_id, an
                encoder's evidence, ATTENTION_FREE), and so which reader sizes it
    accounting  never silent: every key read, known not to change the cache
                (HARMLESS), or refused (CHANGES; by its value, changes_by_value)
    files       a config.json and a checkpoint's index read from disk, within limits
    layouts     which layer caches by which rule: LAYOUTS, one mechanism per way a
                config says it, in their order of precedence
    readers     Read (what a reader finds); the readers of MLA, encoder-decoders,
                attention-free models and encoders
    decoder     the decoder's reader: sizes, layout, windows, sharing, groups
    shape       ModelShape and from_config: a config read, start to end (READERS)
    cache       the arithmetic: cache_bytes, per_position, max_requests,
                tensor_parallel, device_cache_bytes, decode_roofline
    summary     everything the command prints, as plain data with exact bytes
    command     `python -m gqa config`: its options, the table, the JSON

Each group of layers caches by one rule (RULES); which layer follows which,
and the class defaults a config may leave out, are known per model_type, one
row of FAMILIES per family.  Never a wrong number: every key of a config is
read, known not to change the cache, or refused; a model_type with no row is
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

from gqa_tools.sizer.cache import (Roofline, Split, cache_bytes, decode_roofline, device_cache_bytes,
                                   max_requests, per_position, tensor_parallel)
from gqa_tools.sizer.families import FAMILIES, Family, family_table
from gqa_tools.sizer.files import checkpoint_bytes, config_path
from gqa_tools.sizer.layouts import LAYOUTS
from gqa_tools.sizer.rules import RULES, LayerGroup
from gqa_tools.sizer.shape import ModelShape
from gqa_tools.sizer.units import DTYPE_BYTES, dtype_bytes, parse_bandwidth, parse_flops, parse_size

__all__ = ["DTYPE_BYTES", "FAMILIES", "LAYOUTS", "RULES", "Family", "LayerGroup", "ModelShape", "Roofline",
           "Split", "cache_bytes", "checkpoint_bytes", "config_path", "decode_roofline",
           "device_cache_bytes", "dtype_bytes", "family_table", "max_requests", "parse_bandwidth",
           "parse_flops", "parse_size", "per_position", "tensor_parallel"]
