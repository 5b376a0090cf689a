"""gqa_tools.sizer.fields: a config's fields: the spellings of each size, and one config object read.

Configs spell one size several ways (num_attention_heads, n_head,
num_heads, ...; a decoder nested under text_config, llm_config, ...): the
spellings are listed here, in the order they are tried, with the functions
that read the attention's sizes by them (layers, h, g, head dim, hidden
size), where two spellings must agree.  Keys is one config object: it hands
out values and the model class's defaults, and remembers which keys were
read, for accounting.py.  cannot() refuses a field no rule can size.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gqa
from gqa import GQAError
from gqa_grader.language.i18n import _

# The spellings real configs use, in the order they are tried.
QUERY_HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "decoder_attention_heads",
               "attention_heads")
# layers, embed_dim: Kosmos-2's text decoder (Kosmos2TextConfig's attribute_map).
LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "layers")
HIDDEN = ("hidden_size", "n_embd", "d_model", "model_dim", "dim", "embed_dim")    # dim: Meta's params.json
KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num", "n_kv_heads",
            "num_query_groups")
# Query heads per key/value head, where the model's code takes g from it (PLaMo's n_shared_head:
# g = h / n_shared_head), read before KV_HEADS: PLaMo-13B's config also gives num_key_value_heads
# equal to h, which its code does not read (llama.cpp's converter writes g = 5, not 40).
GROUP_SIZE = ("n_shared_head",)
# The head dim's spellings: head_dim, Hunyuan's and Nemotron-H's attention_head_dim, ChatGLM's
# and Megatron's kv_channels, TensorRT-LLM's head_size, PLaMo-2's hidden_size_per_head (vLLM's
# get_head_size reads it).  Where a config gives several, they must agree; where it gives none,
# the head dim is hidden_size / h.
HEAD_DIM = ("head_dim", "attention_head_dim", "kv_channels", "head_size", "hidden_size_per_head")
MLP_WIDTH = ("intermediate_size", "n_inner", "ffn_hidden_size")
# The decoder's longest context; SpeechT5's max_text_positions, LED's
# max_decoder_position_embeddings are an encoder-decoder's decoder's.
MAX_CONTEXT = ("max_position_embeddings", "n_positions", "max_seq_len", "max_sequence_length",
               "seq_length", "max_target_positions", "max_context_length", "max_text_positions",
               "max_decoder_position_embeddings")
# An encoder-decoder's decoder, tried first: its own layers and heads (Whisper, BART; Moonshine's
# decoder_num_*), T5's d_kv; and the source an encoder holds, where the config fixes it.
DECODER_LAYERS = ("num_decoder_layers", "decoder_layers", "decoder_num_hidden_layers") + LAYERS
DECODER_HEADS = ("decoder_attention_heads", "decoder_num_attention_heads") + QUERY_HEADS
DECODER_KV_HEADS = ("decoder_num_key_value_heads",)
DECODER_HEAD_DIM = ("d_kv", "head_dim")
SOURCE = ("max_source_positions", "max_speech_positions", "max_encoder_position_embeddings")

# The table of spellings, by quantity, each in the order it is tried (docs/sizing.md shows it,
# and tests/test_generalising.py reads each from a published config that uses it).
SPELLINGS = {
    "layers": LAYERS, "query heads": QUERY_HEADS, "key/value heads": KV_HEADS, "head dim": HEAD_DIM,
    "hidden size": HIDDEN, "longest context": MAX_CONTEXT, "decoder layers": DECODER_LAYERS[:3],
    "decoder query heads": DECODER_HEADS[:2], "decoder key/value heads": DECODER_KV_HEADS,
    "decoder head dim": DECODER_HEAD_DIM[:1], "source tokens": SOURCE,
    "window": ("sliding_window", "sliding_window_size", "attention_window_size", "window_size"),
}


# The config fields that each hand-given size (--layers, ...) overrules.
OVERRULED = {"layers": DECODER_LAYERS, "heads": QUERY_HEADS,
             "kv_heads": KV_HEADS, "head_dim": DECODER_HEAD_DIM, "window": ("sliding_window",)}


# Where a wrapper keeps its decoder, in the order they are tried: multimodal models' text_config
# (LLaVA, Gemma-3), InternVL's llm_config, DeepSeek-VL2's language_config, and the decoder of
# an encoder-decoder wrapper (VisionEncoderDecoderModel: it cross-attends to the encoder).
NESTED = ("text_config", "llm_config", "language_config", "decoder")
ENCODER_DECODER_WRAPPERS = ("vision-encoder-decoder", "speech-encoder-decoder", "encoder-decoder")


def nested_config(where: str, top: Dict[str, Any]) -> Tuple[Dict[str, Any], str, str]:
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


class Keys:
    """One config object: hands out its values and the model class's defaults, and
    remembers which keys were read."""

    def __init__(self, where: str, data: Dict[str, Any], defaults: Dict[str, Any], model_type: str,
                 notes: List[str]):
        self.where, self.data, self.defaults, self.model_type = where, data, defaults, model_type
        self.notes, self.read = notes, set()          # type: List[str], set
        self.nested = []        # type: List[Tuple[str, Keys]]  # objects inside it that were read
        self.cross = False      # a decoder nested in an encoder-decoder: it cross-attends
        self.kind = ("", "")    # (reader, the field that says so): what kind of model (kinds.kind_of)
        self.sizes = {}         # type: Dict[str, Any]  # what the reader read, for accounting.py

    def get(self, key: str) -> Any:
        """The key's value (an explicit null stays null), else the class default, quoted."""
        self.read.add(key)
        if key in self.data:
            return self.data[key]
        if key in self.defaults:
            value = self.defaults[key]
            note = _("{key} {value} is the {model_type} default (the config does not set it)").format(
                key=key, value=show(value), model_type=self.model_type)
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


def cannot(keys: "Keys", field: str, value: Any, why: str = "") -> None:
    """Refuse a field that changes the cache in a way no rule reads.  Never --ignore: sizing
    the model without it would give a wrong number."""
    keys.read.add(field.split(".")[0].split("[")[0])
    raise GQAError(f"config {keys.where}: cannot size: {field} {show(value)} changes the cache in a "
                   f"way no rule reads" + (f" ({why})" if why else "") +
                   "; size the model by hand (--layers, --heads, --kv-heads, --head-dim, --window) "
                   "from its code")


def show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def kv_heads_of(keys: Keys, heads: int) -> Tuple[int, str]:
    """g, from every spelling: Falcon's multi_query, ChatGLM's groups, MPT and DBRX's attn_config."""
    attn = keys.get("attn_config")
    if isinstance(attn, dict):                  # MPT, DBRX
        inner = Keys(f"{keys.where} attn_config", attn, {}, keys.model_type, keys.notes)
        keys.nested.append(("attn_config.", inner))
        window = inner.get("sliding_window_size")
        if window not in (None, -1):
            raise GQAError(f"config {keys.where}: attn_config.sliding_window_size {show(window)}: "
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
    for group_name in GROUP_SIZE:
        if keys.get(group_name) is not None:
            return _kv_heads_by_group(keys, group_name, names, heads)
    value, name = keys.num(names, "key/value head count", default=heads)
    return value, name or "(no key/value head count: g = h)"


def _kv_heads_by_group(keys: Keys, group_name: str, names: Sequence[str], heads: int) -> Tuple[int, str]:
    """g = h / the query heads per key/value head, as the model's code reads it; a key/value head
    count beside it that disagrees is set aside, with a note."""
    group = keys.int((group_name,), "query heads per key/value head")
    if heads % group:
        raise GQAError(f"config {keys.where}: {group_name} {group} does not divide {heads} query heads: "
                       f"the key/value heads (h / {group_name}) are not a whole number")
    kv_heads = heads // group
    for name in names:
        decoy = keys.seen(name)
        if decoy is not None and decoy != kv_heads:
            keys.notes.append(f"{name} {show(decoy)} set aside: the model's code takes its key/value heads "
                              f"from {group_name} ({heads} / {group} = {kv_heads})")
    return kv_heads, f"{heads} / {group_name} {group}"


def attention_sizes(keys: Keys, overrides: Dict[str, int]) -> Tuple[int, int, int, int, int, List[str]]:
    """(layers, heads, kv_heads, head_dim, hidden, the fields they came from), overrides applied.
    A decoder nested in an encoder-decoder wrapper may spell its layers as an encoder-decoder's
    decoder does (TrOCR's decoder_layers: TrOCRConfig maps num_hidden_layers to it)."""
    layer_names = DECODER_LAYERS if keys.cross else LAYERS
    layers, f_layers = (overrides["layers"], "--layers") if overrides.get("layers") else \
        keys.num(layer_names, "layer count")
    heads, f_heads = (overrides["heads"], "--heads") if overrides.get("heads") else \
        keys.num(QUERY_HEADS, "query head count")
    hidden, f_hidden = keys.num(HIDDEN, "hidden size", default=0)
    kv_heads, f_kv = (overrides["kv_heads"], "--kv-heads") if overrides.get("kv_heads") else \
        kv_heads_of(keys, heads)
    head_dim, f_dim = head_dim_of(keys, overrides, heads, f_heads, hidden, f_hidden)
    for names, used, value in ((layer_names, f_layers, layers), (QUERY_HEADS, f_heads, heads), (HIDDEN, f_hidden, hidden)):
        agree(keys, names, used, value)
    check_divides(keys.where, heads, kv_heads)
    return layers, heads, kv_heads, head_dim, hidden, [f_layers, f_heads, f_kv, f_dim]


def head_dim_of(keys: Keys, overrides: Dict[str, int], heads: int, f_heads: str, hidden: int,
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
                raise GQAError(f"config {keys.where}: cannot size: {name} {value} and {other} {show(seen)} "
                               f"disagree on the head dim, and which the model's code reads is not known")
        return value, name
    if not hidden:
        raise GQAError(f"config {keys.where}: no hidden size and no head_dim: tried "
                       f"{', '.join(HIDDEN)}, {', '.join(HEAD_DIM)} (or give --head-dim)")
    if hidden % heads:
        raise GQAError(f"config {keys.where}: hidden size {hidden} is not a multiple of {heads} "
                       f"query heads and there is no head_dim to say the head dim")
    return hidden // heads, f"{f_hidden} / {f_heads}"


def agree(keys: Keys, names: Sequence[str], used: str, value: int) -> None:
    """Where a config gives one size under two spellings, they must agree."""
    for name in names:
        other = keys.seen(name)
        if name != used and other is not None and other != value and used in keys.data:
            raise GQAError(f"config {keys.where}: {name} {show(other)} and {used} {value} disagree")


def check_divides(where: str, heads: int, kv_heads: int) -> None:
    try:
        gqa.method_name(heads, kv_heads)
    except GQAError:
        valid = ", ".join(map(str, gqa.valid_g(heads))) if heads <= 10 ** 6 else "its divisors"
        raise GQAError(f"config {where}: the model could not be loaded: {kv_heads} key/value "
                       f"heads do not divide {heads} query heads; g would divide for "
                       f"g = {valid}") from None


def index_list(keys: Keys, name: str, value: Any, layers: int, base: int) -> List[int]:
    """A list of layer indices (base 0 or 1, as the family's code reads them), 0-based."""
    if not isinstance(value, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in value):
        raise GQAError(f"config {keys.where}: {name} must be a list of layer indices; got {show(value)}")
    bad = [i for i in value if not base <= i < layers + base]
    if bad or len(set(value)) != len(value):
        raise GQAError(f"config {keys.where}: {name} must list distinct layers from {base} to "
                       f"{layers - 1 + base} ({base}-based, of {layers} layers); got {show(value)}")
    return [i - base for i in value]
