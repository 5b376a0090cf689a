"""gqa_models: real models' shapes, read from their config.json, and their KV caches.

The two numbers that decide MHA, GQA or MQA, the query heads h and the
key/value heads g, sit in every model's config file.  From them, the layers
and the head dim, this module answers: which method is it, what does a token
of context cost, how many requests fit in the memory left, what happens on N
tensor-parallel devices, and (as a roofline model, not a measurement) how
fast could it decode.  A library for the tools: `python -m gqa config`
(gqa_config.py) prints its answers, `python -m gqa tables --config` and the
report read shapes with it.  Standard library only: json and arithmetic.

>>> shape = ModelShape.from_config({"num_hidden_layers": 80, "num_attention_heads": 64,
...                                 "num_key_value_heads": 8, "hidden_size": 8192})
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
    "full": "full attention: 2 x g x head_dim values per token",
    "sliding": "a sliding window: the same per token, for the last `window` positions only",
    "chunked": "chunked attention: the same per token, within the current chunk only",
    "mla": "multi-head latent attention: one latent of kv_lora_rank + qk_rope_head_dim per token",
    "cross": "cross-attention: 2 x g x head_dim values per source token",
    "none": "no KV cache: a state of fixed size (state-space or linear attention)",
}


class LayerGroup(NamedTuple):
    """Layers that cache by one rule (see RULES)."""
    rule: str
    layers: int
    kv_heads: int = 0           # g, for attention rules
    head_dim: int = 0
    window: Optional[int] = None    # positions held at most: the window, or the chunk
    latent: int = 0             # values per token and layer, for "mla"
    note: str = ""              # what a "none" layer is (mamba, linear attention)

    @property
    def attention(self) -> bool:
        """True when the cache has key/value heads, so g applies."""
        return self.rule in ("full", "sliding", "chunked", "cross")

    def values_per_token(self, kv_heads: Optional[int] = None) -> int:
        """Values one layer of the group caches per position (kv_heads overrides g)."""
        if self.attention:
            return 2 * (self.kv_heads if kv_heads is None else kv_heads) * self.head_dim
        return self.latent

    def positions(self, context: int, source: int) -> int:
        """Positions one layer holds at this context (source: the encoder's length)."""
        if self.rule == "none":
            return 0
        if self.rule == "cross":
            return source
        return min(context, self.window) if self.window else context

    def describe(self) -> str:
        if self.rule == "mla":
            return f"{self.layers} MLA (latent {self.latent} per token)"
        if self.rule == "none":
            return f"{self.layers} {self.note or 'without a KV cache'} (no KV cache)"
        if self.rule in ("sliding", "chunked"):
            what = f"sliding window {self.window:,}" if self.rule == "sliding" else f"chunked, chunk {self.window:,}"
        else:
            what = "full attention" if self.rule == "full" else "cross-attention"
        return f"{self.layers} {what}"


# ---------------------------------------------------------------------------
# Reading a config.
# ---------------------------------------------------------------------------

# The defaults of the model classes that real configs rely on when they leave
# a field out, by model_type; each is the default of that class's config in HF
# transformers (configuration_<type>.py).
MODEL_DEFAULTS: Dict[str, Dict[str, Any]] = {
    # LlamaConfig: a LLaVA-1.5 text_config gives only its model_type and a few fields.
    "llama": {"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096,
              "intermediate_size": 11008, "max_position_embeddings": 2048},
    # Gemma3TextConfig: head_dim 256 (not hidden_size / heads), 5 local : 1 global.
    "gemma3_text": {"head_dim": 256, "sliding_window": 4096, "sliding_window_pattern": 6},
    # Gemma2Config: head_dim 256, a window of 4096 on every other layer.
    "gemma2": {"head_dim": 256, "sliding_window": 4096},
    # MistralConfig: a window of 4096 on every layer (v0.1; later configs set it null).
    "mistral": {"sliding_window": 4096},
    # T5Config: d_kv 64, 8 heads, 6 layers; the decoder has num_layers unless told.
    "t5": {"d_kv": 64, "num_heads": 8, "num_layers": 6, "d_model": 512},
}

# The spellings real configs use, in the order they are tried.
QUERY_HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
HIDDEN = ("hidden_size", "n_embd", "d_model")
KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")
MLP_WIDTH = ("intermediate_size", "n_inner", "ffn_hidden_size")
MAX_CONTEXT = ("max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length",
               "seq_length")

# The MLP's matrices of d_model x d_ff, by model_type, as the model classes of
# HF transformers build them: gate, up and down projections (SwiGLU or GeGLU)
# in LlamaMLP, MistralMLP, Qwen2MLP and GemmaMLP; in and out (c_fc, c_proj;
# dense_h_to_4h, dense_4h_to_h) in GPT-2, GPT-BigCode and Falcon.  A model
# type not named here has mlp_matrices None: nothing is guessed.
MLP_MATRICES = {"llama": 3, "mistral": 3, "qwen2": 3, "gemma": 3,
                "gpt2": 2, "gpt_bigcode": 2, "falcon": 2}

# layer_types values, and what each layer caches.
LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding",
               "chunked_attention": "chunked", "linear_attention": "none:linear attention",
               "mamba": "none:mamba"}


class ModelShape(NamedTuple):
    """A model's attention shape, as its config.json gives it, and its layer groups."""
    name: str
    layers: int
    heads: int          # h, query heads
    kv_heads: int       # g, key/value heads (of the attention layers)
    head_dim: int       # d
    hidden_size: int    # d_model
    intermediate_size: Optional[int] = None     # d_ff, when the config gives it
    mlp_matrices: Optional[int] = None          # d_model x d_ff matrices of the MLP, when known
    groups: Tuple[LayerGroup, ...] = ()         # what each group of layers caches
    max_context: Optional[int] = None           # the model's own longest context
    max_context_field: str = ""                 # the field that said so
    notes: Tuple[str, ...] = ()                 # warnings: fields ignored, overrides given

    @property
    def method(self) -> str:
        if any(group.rule == "mla" for group in self.groups):
            return "MLA"
        return gqa.method_name(self.heads, self.kv_heads)

    @property
    def gqa_family(self) -> bool:
        """True when g is the knob of every cached layer, so MHA and MQA columns mean something."""
        return all(group.attention or group.rule == "none" for group in self.groups)

    def layer_summary(self) -> str:
        """'40 sliding window 1,024; 8 full attention' (of 48 layers)."""
        return "; ".join(group.describe() for group in self.groups)

    @classmethod
    def from_config(cls, source: Union[str, "os.PathLike[str]", Dict[str, Any]], *,
                    ignore: Sequence[str] = (), overrides: Optional[Dict[str, int]] = None
                    ) -> "ModelShape":
        """Read a config.json (a path, or the parsed dict) into a ModelShape.

        ignore names fields whose values the reader does not understand but
        that may be passed over (each becomes a note); overrides sets layers,
        heads, kv_heads, head_dim or window by hand (each quoted in the notes).

        >>> ModelShape.from_config({"n_layer": 40, "n_head": 48, "n_embd": 6144,
        ...                         "multi_query": True}).kv_heads
        1
        """
        if isinstance(source, dict):
            where, config = "config", source
        else:
            where = os.fspath(source)
            config = _load_json(where)
        return _shape(where, config, tuple(ignore), dict(overrides or {}))


MAX_CONFIG_BYTES = 4 << 20          # a config.json is a few KB; anything far larger is not one


def _load_json(path: str) -> Dict[str, Any]:
    try:
        if not os.path.isfile(path):
            raise GQAError(f"config {path}: cannot read it: "
                           f"{'not a regular file' if os.path.exists(path) else 'no such file'}")
        with open(path, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as err:
        raise GQAError(f"config {path}: cannot read it: {err.strerror or err}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise GQAError(f"config {path} is larger than {MAX_CONFIG_BYTES // 2 ** 20} MiB: not a config.json")
    try:
        config = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise GQAError(f"config {path} is not UTF-8 text (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise GQAError(f"config {path} is not JSON: line {err.lineno}, column {err.colno}: "
                       f"{err.msg}") from None
    except (RecursionError, ValueError) as err:
        raise GQAError(f"config {path} cannot be read as JSON: {str(err)[:80]}") from None
    if not isinstance(config, dict):
        raise GQAError(f"config {path} is not a JSON object but a {type(config).__name__}")
    return config


def _field(where: str, config: Dict[str, Any], names: Sequence[str], what: str,
           default: Optional[int] = None) -> int:
    """The first of names that the config sets (null counts as unset), as a positive int."""
    for name in names:
        value = config.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise GQAError(f"config {where}: {name} must be a whole number; got {str(value)[:40]!r}")
        if not 1 <= value <= 10 ** 12:
            raise GQAError(f"config {where}: {name} must be between 1 and 10**12; got {str(value)[:40]}")
        return value
    if default is not None:
        return default
    raise GQAError(f"config {where}: no {what}: tried {', '.join(names)}")


def _name(where: str, config: Dict[str, Any]) -> str:
    return str(config.get("_name_or_path") or config.get("model_type") or
               os.path.splitext(os.path.basename(where.split(" (")[0]))[0])


def _shape(where: str, top: Dict[str, Any], ignore: Tuple[str, ...],
           overrides: Dict[str, int]) -> ModelShape:
    config, notes = top, [f"--{k.replace('_', '-')} {v} given by hand" for k, v in overrides.items()]
    if isinstance(top.get("text_config"), dict):
        where, config = f"{where} (text_config)", top["text_config"]
    model_type = str(config.get("model_type") or top.get("model_type") or "")
    if model_type == "llava":                          # an old text_config without its own type
        model_type = "llama"
    config = {**MODEL_DEFAULTS.get(model_type, {}), **config}     # an explicit null stays null
    defaulted = [k for k in MODEL_DEFAULTS.get(model_type, {}) if k not in (top.get("text_config") or top)]
    for key in defaulted:
        notes.append(f"{key} {config[key]} is the {model_type} default (the config does not set it)")
    name = _name(where, top if top.get("_name_or_path") else config)
    if config.get("is_encoder_decoder") or model_type == "t5":
        return _encoder_decoder(where, name, config, notes, overrides)
    if config.get("kv_lora_rank") is not None:
        return _mla(where, name, config, notes, overrides)
    return _decoder(where, name, config, model_type, notes, ignore, overrides)


def _context(where: str, config: Dict[str, Any]) -> Tuple[Optional[int], str]:
    for name in MAX_CONTEXT:
        if config.get(name) is not None:
            return _field(where, config, (name,), "context"), name
    return None, ""


def _kv_heads(where: str, config: Dict[str, Any], heads: int) -> int:
    """g, from every spelling: Falcon's multi_query, ChatGLM's groups, MPT and DBRX's attn_config."""
    attn = config.get("attn_config")
    if isinstance(attn, dict):                  # MPT, DBRX
        if attn.get("kv_n_heads") is not None:
            return _field(f"{where} attn_config", attn, ("kv_n_heads",), "key/value head count")
        kind = attn.get("attn_type", "multihead_attention")
        if kind == "multiquery_attention":
            return 1
        if kind != "multihead_attention":
            raise GQAError(f"config {where}: attn_config.attn_type {kind!r} without kv_n_heads: "
                           f"the key/value heads are unknown")
        return heads
    names = KV_HEADS
    if config.get("multi_query_attention") is False:       # ChatGLM: the group count is unused
        names = tuple(n for n in KV_HEADS if n != "multi_query_group_num")
    if config.get("multi_query") is True and not config.get("new_decoder_architecture"):
        return 1        # Falcon and GPT-BigCode multi-query, whatever num_kv_heads says
    return _field(where, config, names, "key/value head count", default=heads)


def _attention_sizes(where: str, config: Dict[str, Any], overrides: Dict[str, int]) -> tuple:
    """(layers, heads, kv_heads, head_dim, hidden) of a decoder, overrides applied."""
    layers = overrides.get("layers") or _field(where, config, LAYERS, "layer count")
    heads = overrides.get("heads") or _field(where, config, QUERY_HEADS, "query head count")
    hidden = _field(where, config, HIDDEN, "hidden size", default=0)
    kv_heads = overrides.get("kv_heads") or _kv_heads(where, config, heads)
    if overrides.get("head_dim"):
        head_dim = overrides["head_dim"]
    elif config.get("head_dim") is not None:
        head_dim = _field(where, config, ("head_dim",), "head dim")
    elif not hidden:
        raise GQAError(f"config {where}: no hidden size and no head_dim: tried "
                       f"{', '.join(HIDDEN)}, head_dim (or give --head-dim)")
    elif hidden % heads:
        raise GQAError(f"config {where}: hidden size {hidden} is not a multiple of {heads} "
                       f"query heads and there is no head_dim to say the head dim")
    else:
        head_dim = hidden // heads
    try:
        gqa.method_name(heads, kv_heads)
    except GQAError:
        valid = ", ".join(map(str, gqa.valid_g(heads))) if heads <= 10 ** 6 else "its divisors"
        raise GQAError(f"config {where}: the model could not be loaded: {kv_heads} key/value "
                       f"heads do not divide {heads} query heads; g would divide for "
                       f"g = {valid}") from None
    return layers, heads, kv_heads, head_dim, hidden


def _layer_rules(where: str, config: Dict[str, Any], model_type: str, layers: int,
                 ignore: Tuple[str, ...], notes: List[str]) -> List[str]:
    """What each decoder layer caches: "full", "sliding", "chunked" or "none:<what>".

    One branch per spelling, in one function on purpose: their order is the
    precedence (an explicit layer_types first, a bare sliding_window last).
    """
    def unknown(field: str, value: object) -> None:
        if field in ignore:
            notes.append(f"WARNING: {field} {str(value)[:60]!r} is not understood and was ignored "
                         f"(--ignore {field}): the sizes assume full attention there")
            return
        raise GQAError(f"config {where}: {field} {str(value)[:60]!r} is not understood, and it "
                       f"changes the cache; give --ignore {field} to size the model as if it were "
                       f"full attention, or size it by hand (--layers, --kv-heads, --window)")

    types = config.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            raise GQAError(f"config {where}: layer_types must list the {layers} layers; "
                           f"got {str(types)[:60]}")
        rules = []
        for t in types:
            if t in LAYER_TYPES:
                rules.append(LAYER_TYPES[t])
            else:
                unknown("layer_types", t)
                rules.append("full")
        return rules
    if config.get("hybrid_override_pattern") is not None:          # Nemotron-H: M mamba, * attention
        pattern = str(config["hybrid_override_pattern"])
        if len(pattern) != layers or set(pattern) - set("M*-E"):
            unknown("hybrid_override_pattern", pattern)
            return ["full"] * layers
        return ["full" if c == "*" else "none:mamba" if c == "M" else "mlp" for c in pattern]
    if config.get("attn_layer_period") is not None:               # Jamba: attention every period
        period = _field(where, config, ("attn_layer_period",), "attention period")
        offset = config.get("attn_layer_offset") or 0
        return ["full" if i % period == offset else "none:mamba" for i in range(layers)]
    if config.get("attn_type_list") is not None:                  # MiniMax: 1 softmax, 0 linear
        kinds = config["attn_type_list"]
        if not isinstance(kinds, list) or len(kinds) != layers or set(kinds) - {0, 1}:
            unknown("attn_type_list", kinds)
            return ["full"] * layers
        return ["full" if k == 1 else "none:linear attention" for k in kinds]
    if config.get("full_attention_interval") is not None:         # Qwen3-Next: every n-th is full
        n = _field(where, config, ("full_attention_interval",), "full attention interval")
        return ["full" if (i + 1) % n == 0 else "none:linear attention" for i in range(layers)]
    if config.get("attention_chunk_size") is not None:            # Llama-4: chunked, but NoPE layers
        if not isinstance(config.get("no_rope_layers"), list) or len(config["no_rope_layers"]) != layers:
            unknown("attention_chunk_size", config["attention_chunk_size"])
            return ["full"] * layers
        return ["chunked" if r else "full" for r in config["no_rope_layers"]]
    window = config.get("sliding_window")
    if window is None or config.get("use_sliding_window") is False:
        return ["full"] * layers
    if config.get("use_sliding_window") and config.get("max_window_layers") not in (None, layers):
        unknown("max_window_layers", config["max_window_layers"])
        return ["full"] * layers
    if config.get("sliding_window_pattern") is not None:          # Gemma-3: every P-th is global
        p = _field(where, config, ("sliding_window_pattern",), "sliding window pattern")
        return ["full" if (i + 1) % p == 0 else "sliding" for i in range(layers)]
    if model_type == "gemma2":                                    # every other layer, from 0
        return ["sliding" if i % 2 == 0 else "full" for i in range(layers)]
    return ["sliding"] * layers


def _groups(rules: List[str], kv_heads: int, head_dim: int, window: Optional[int],
            chunk: Optional[int]) -> Tuple[LayerGroup, ...]:
    """Count the layers of each rule, in the order they first appear."""
    counts: Dict[str, int] = {}
    for rule in rules:
        if rule != "mlp":                                         # a layer with no attention at all
            counts[rule] = counts.get(rule, 0) + 1
    groups = []
    for rule, n in counts.items():
        if rule.startswith("none"):
            groups.append(LayerGroup("none", n, note=rule.partition(":")[2] + " layers"))
        else:
            groups.append(LayerGroup(rule, n, kv_heads, head_dim,
                                     window if rule == "sliding" else chunk if rule == "chunked" else None))
    return tuple(groups)


def _decoder(where: str, name: str, config: Dict[str, Any], model_type: str, notes: List[str],
             ignore: Tuple[str, ...], overrides: Dict[str, int]) -> ModelShape:
    layers, heads, kv_heads, head_dim, hidden = _attention_sizes(where, config, overrides)
    rules = _layer_rules(where, config, model_type, layers, ignore, notes)
    window = overrides.get("window") or (
        _field(where, config, ("sliding_window",), "sliding window") if "sliding" in rules else None)
    if overrides.get("window") and "sliding" not in rules:
        rules = ["sliding" if r == "full" else r for r in rules]
    chunk = _field(where, config, ("attention_chunk_size",), "chunk") if "chunked" in rules else None
    max_context, field = _context(where, config)
    return ModelShape(name, layers, heads, kv_heads, head_dim, hidden,
                      _field(where, config, MLP_WIDTH, "MLP width", default=0) or None,
                      MLP_MATRICES.get(model_type), _groups(rules, kv_heads, head_dim, window, chunk),
                      max_context, field, tuple(notes))


def _mla(where: str, name: str, config: Dict[str, Any], notes: List[str],
         overrides: Dict[str, int]) -> ModelShape:
    """DeepSeek-V2/V3 (and Kimi-K2): every layer caches one latent per token."""
    if config.get("qk_rope_head_dim") is None:
        raise GQAError(f"config {where}: kv_lora_rank without qk_rope_head_dim: the latent "
                       f"that MLA caches is kv_lora_rank + qk_rope_head_dim, and the second is unknown")
    rank = _field(where, config, ("kv_lora_rank",), "latent rank")
    rope = _field(where, config, ("qk_rope_head_dim",), "rope head dim")
    layers = overrides.get("layers") or _field(where, config, LAYERS, "layer count")
    heads = overrides.get("heads") or _field(where, config, QUERY_HEADS, "query head count")
    v_dim = _field(where, config, ("v_head_dim", "qk_nope_head_dim"), "value head dim")
    max_context, field = _context(where, config)
    return ModelShape(name, layers, heads, heads, v_dim, _field(where, config, HIDDEN, "hidden size", 0),
                      None, None, (LayerGroup("mla", layers, latent=rank + rope),),
                      max_context, field, tuple(notes))


def _encoder_decoder(where: str, name: str, config: Dict[str, Any], notes: List[str],
                     overrides: Dict[str, int]) -> ModelShape:
    """T5: the decoder caches its own tokens, and the encoder's output for cross-attention."""
    heads = overrides.get("heads") or _field(where, config, QUERY_HEADS, "query head count")
    layers = overrides.get("layers") or _field(where, config, ("num_decoder_layers",) + LAYERS, "layer count")
    head_dim = overrides.get("head_dim") or _field(where, config, ("d_kv", "head_dim"), "head dim")
    kv_heads = overrides.get("kv_heads") or _kv_heads(where, config, heads)
    max_context, field = _context(where, config)
    return ModelShape(name, layers, heads, kv_heads, head_dim, _field(where, config, HIDDEN, "hidden size", 0),
                      None, None, (LayerGroup("full", layers, kv_heads, head_dim),
                                   LayerGroup("cross", layers, kv_heads, head_dim)),
                      max_context, field, tuple(notes))


# ---------------------------------------------------------------------------
# What it computes.
# ---------------------------------------------------------------------------

def dtype_bytes(dtype: str) -> int:
    """Bytes per value of a dtype name (fp32, fp16, bf16, fp8, int8, ...)."""
    try:
        return DTYPE_BYTES[dtype.lower()]
    except (KeyError, AttributeError):
        raise GQAError(f"dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}") from None


def cache_bytes(shape: ModelShape, *, context: int = 1, batch: int = 1, dtype: str = "bf16",
                kv_heads: Optional[int] = None, source: Optional[int] = None) -> int:
    """Bytes of KV cache for batch sequences of context tokens, layer group by layer group.

    An attention layer holds 2 x g x head_dim values per position, for
    every position (full), the last `window` (sliding) or the current chunk
    (chunked); an MLA layer holds its latent per position; cross-attention
    holds source positions (default: context); a state-space layer holds no
    cache.  kv_heads overrides g, to ask what MHA (g = h) or MQA (g = 1)
    would need.  With context=1 it is the bytes one token adds.

    >>> s = ModelShape.from_config({"num_hidden_layers": 2, "num_attention_heads": 4,
    ...                             "hidden_size": 32, "sliding_window": 3})
    >>> cache_bytes(s, context=10, dtype="fp8")      # 2 layers x 2 x 4 heads x 8 x 3 positions
    384
    """
    groups = shape.groups or (LayerGroup("full", shape.layers, shape.kv_heads, shape.head_dim),)
    return _bytes(groups, context, batch, dtype, kv_heads, source)


def _bytes(groups: Sequence[LayerGroup], context: int, batch: int, dtype: str,
           kv_heads: Optional[int], source: Optional[int]) -> int:
    src = context if source is None else source
    return batch * dtype_bytes(dtype) * sum(
        g.layers * g.values_per_token(kv_heads) * g.positions(context, src) for g in groups)


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
                       kv_heads: int, devices: int, source: Optional[int] = None) -> int:
    """The cache one of `devices` tensor-parallel devices holds.

    Attention layers split their key/value heads (tensor_parallel); an MLA
    latent is not split by heads, so every device holds all of it.
    """
    split = tensor_parallel(shape.heads, kv_heads, devices)
    groups = shape.groups or (LayerGroup("full", shape.layers, shape.kv_heads, shape.head_dim),)
    return (_bytes([g for g in groups if g.attention], context, batch, dtype,
                   split.kv_heads_per_device, source)
            + _bytes([g for g in groups if g.rule == "mla"], context, batch, dtype, None, source))


def decode_roofline(shape: ModelShape, *, context: int, batch: int, dtype: str, weights: int,
                    weight_dtype: str, bandwidth: float, flops: float, kv_heads: int,
                    devices: int = 1, source: Optional[int] = None) -> Roofline:
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
    src = context if source is None else source
    bytes_read = weights // devices + device_cache_bytes(
        shape, context=context, batch=batch, dtype=dtype, kv_heads=kv_heads, devices=devices,
        source=source)
    params = weights // dtype_bytes(weight_dtype)
    groups = shape.groups or (LayerGroup("full", shape.layers, shape.kv_heads, shape.head_dim),)
    body = sum(2 * g.layers * shape.heads * g.head_dim * g.positions(context, src)
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
