"""gqa_tools.counts: what the lab counts, shown, and a projection kept out of its count.

The lab's two tables as Markdown, what g changes and what it does not (cache_markdown,
multiplies_markdown, TERMS); the whole block's multiplications by part, one row per g
(Block, block_rows, BLOCK_PARTS), as Markdown (block_markdown) and as bars (block_bars);
and project(), one head's projection outside gqa's kernels, so that what a tool prepares
is not tallied as the lab's work.  `tables` and the report's sections share them.
"""

from __future__ import annotations

from operator import mul
from typing import List, NamedTuple, Optional, Sequence

import gqa
from gqa_grader.language import i18n
from gqa_grader.language.i18n import N_, _
from gqa_tools.formats import fmt, markdown_table, padded


TERMS = gqa.Multiplies._fields         # q_proj, k_proj, ..., o_proj, total


def cache_markdown(h: int, layers: int, length: int, head_dim: int, *, lab=gqa) -> str:
    """Return lab.cache_table(...) as Markdown (lab: gqa, or another module like it)."""
    rows = lab.cache_table(h, layers=layers, length=length, head_dim=head_dim)
    return markdown_table(
        [_("method"), _("g (kv heads)"), "h // g", _("cache elements"), _("ratio to MHA")],
        [(r.method, r.kv_heads, r.group_size, f"{r.elements:,}", fmt(r.ratio)) for r in rows])


def multiplies_markdown(n: int, h: int, d: int, d_model: int, *, causal: bool = False,
                        ratios: bool = False, lab=gqa) -> str:
    """Return lab.multiplies_table(...) as Markdown, one row per term, one column per g.

    With ratios=True each cell is the term's ratio to MHA instead of its count.
    """
    rows = lab.multiplies_table(n, h, d, d_model, causal=causal)
    headers = [_("term")] + [f"{r.method} g={r.kv_heads}" for r in rows]
    cells = [[term] + [fmt(getattr(r.ratio, term)) if ratios else f"{getattr(r.counts, term):,}"
                       for r in rows] for term in TERMS]
    return markdown_table(headers, cells)


class Block(NamedTuple):
    """One row of the whole-block view: a method and its block's multiplications."""
    method: str                 # MHA, GQA or MQA
    g: int
    counts: "gqa.BlockMultiplies"


def block_rows(n: int, h: int, model_g: Optional[int], d: int, d_model: int, d_ff: int,
               mlp_matrices: int, *, lab=gqa) -> List[Block]:
    """Causal blocks over n positions: MHA (g = h), the model's own g and MQA (g = 1),
    or every valid g from h down when model_g is None."""
    gs = sorted({h, model_g, 1} if model_g else set(lab.valid_g(h)), reverse=True)
    return [Block(lab.method_name(h, g), g,
                  lab.block_multiplies(n, h, g, d, d_model, d_ff, mlp_matrices=mlp_matrices))
            for g in gs]


# The block's parts: the field of gqa.BlockMultiplies, its name (translated where shown), its bar.
BLOCK_PARTS = (("q_o_proj", N_("q and o projections"), "▓"), ("k_v_proj", N_("k and v projections"), "░"),
               ("body", N_("attention body"), "▒"), ("mlp", "MLP", "█"))


def block_markdown(rows: Sequence[Block], n: int) -> str:
    """The multiplications per token of each row's block, by part, with g's share."""
    mha = rows[0].counts
    return markdown_table(
        [_("method"), "g"] + [_(name) for _part, name, _char in BLOCK_PARTS]
        + [_("total"), _("k and v share"), _("saved vs MHA")],
        [(r.method, r.g) + tuple(f"{getattr(r.counts, part) // n:,}" for part, _name, _char in BLOCK_PARTS)
         + (f"{r.counts.total // n:,}", fmt(r.counts.k_v_proj / r.counts.total),
            fmt(1 - r.counts.total / mha.total)) for r in rows])


def block_bars(labels: Sequence[str], rows: Sequence[Block], width: int = 40) -> str:
    """One bar per row, its parts drawn with their own blocks, scaled to the first row."""
    top, pad = rows[0].counts.total, max(map(i18n.width, labels))
    lines = []
    for label, r in zip(labels, rows):
        bar_text, done = "", 0.0
        for part, _name, char in BLOCK_PARTS:
            done += getattr(r.counts, part)
            bar_text += char * (round(width * done / top) - len(bar_text))
        lines.append(f"{padded(label, pad)}  {bar_text.ljust(width)}  "
                     + _("{ratio} of MHA").format(ratio=fmt(r.counts.total / top)))
    legend = _(", ").join(f"{char} {_(name)}" for _part, name, char in BLOCK_PARTS)
    return "\n".join(lines + [legend])


def project(x: List[List[float]], w: List[List[float]]) -> List[List[float]]:
    """One head's projection, not tallied: x [n][d_model] @ w [d_model][d] -> [n][d].

    Outside gqa's kernels, so what a tool prepares is not counted as the lab's work.
    """
    cols = list(zip(*w))                                     # [d][d_model]
    return [[sum(map(mul, row, col)) for col in cols] for row in x]
