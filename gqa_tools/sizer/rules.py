"""gqa_tools.sizer.rules: what a layer caches (RULES), and LayerGroup, layers that cache alike.

Every group of a model's layers follows one rule: full attention, a sliding
window, chunks, an MLA latent, another layer's cache (shared), an encoder's
output (cross), an image's tokens, a state of fixed size (none), nothing at
all (encoder, bidirectional, draft).  A LayerGroup says which rule, over how many layers,
with which shapes, and how many positions one of its layers holds.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

from gqa_grader.language.i18n import _

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
    "bidirectional": "a model that attends both ways over the whole sequence at every step (a "
                     "masked-diffusion language model, a detector's object queries): nothing carries over "
                     "from one step to the next, so no KV cache",
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
        if self.rule in ("none", "shared", "encoder", "bidirectional", "draft"):
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
                "encoder": "nothing: it generates nothing",
                "bidirectional": "nothing: every step reads the whole sequence again",
                "draft": "nothing: not run by default"}[self.rule]

    def describe(self) -> str:
        """The group in a few words, in the language in use: '40 sliding window 1,024'."""
        if self.rule == "mla":
            return _("{layers} MLA (latent {latent} per token)").format(layers=self.layers, latent=self.latent)
        if self.rule == "none":
            return _("{layers} {what} (no KV cache)").format(
                layers=self.layers, what=self.note.split(" (")[0] or _("layers without a KV cache"))
        if self.rule == "shared":
            return f"{self.layers} {self.note.split(' (')[0]}"
        if self.rule in ("encoder", "bidirectional", "draft"):
            return _("{layers} {what} (no KV cache)").format(layers=self.layers, what=self.note or self.rule)
        window = f"{self.window or 0:,}"
        return {"sliding": _("{layers} sliding window {window}"), "chunked": _("{layers} chunked, chunk {window}"),
                "full": _("{layers} full attention"), "cross": _("{layers} cross-attention"),
                "image": _("{layers} cross-attention to the image")}[self.rule].format(layers=self.layers,
                                                                                     window=window)
