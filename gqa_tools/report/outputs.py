"""gqa_tools.report.outputs: sections 5 and 6, how the output changes with g.

5. A layer's output at every g against MHA's, on random weights, over the seeds.
6. Converting an MHA checkpoint: the mean, the first head or random heads.
"""

from __future__ import annotations

from typing import List, Sequence

from gqa_grader.language.i18n import _
from gqa_tools import uptraining as training
from gqa_tools.formats import bar_chart, fmt, markdown_table
from gqa_tools.report.lab import Lab, Missing, need
from gqa_tools.report.measuring import Measured
from gqa_tools.report.settings import Config
from gqa_tools.report.text import code_block, labels, mean_range, yes_no


def section_output(cfg: Config, lab: Lab, m: Measured) -> str:
    ids, difference = labels(lab, cfg.heads), need(m.difference)
    rel = {g: difference[g].rel_l2.mean for g in ids.gs}
    paragraphs = [
        _("`layer(x, weights, g)` against the MHA output `layer(x, weights, {h})`, on the same "
          "weights and input, over {seeds} seeds: mean (lowest to highest).").format(
              h=cfg.heads, seeds=cfg.seeds) + "\n",
        markdown_table(difference_headers(),
                       [(ids.name[g], g) + tuple(mean_range(s) for s in difference[g]) for g in ids.gs]),
        "",
        code_block(bar_chart([ids.label[g] for g in ids.gs], [rel[g] for g in ids.gs],
                        [_("relative L2 {value}").format(value=fmt(rel[g])) for g in ids.gs])),
        "",
        _("At g = h the difference is exactly zero: `attention(q, k, v, g={h}) == "
          "[single_head_attention(q[i], k[i], v[i]) for each head]` was checked with `==`, not a "
          "tolerance, on the projected q, k, v of every seed: {yes}.").format(
              h=cfg.heads, yes=yes_no(need(m.exact_mha))) + "\n"]
    if not isinstance(m.head_cosine, Missing):
        cos = m.head_cosine
        paragraphs.append(_(
            "Why so much, even at g = {g}: these heads are random and untrained, so they have "
            "nothing in common. The keys that two different heads project from the same input have "
            "a cosine of {mean} on average in absolute value ({low} to {high} over every pair of "
            "heads and every seed): they point in unrelated directions, and their mean is a shorter "
            "vector that is like none of them. In a trained model, heads that learned similar things "
            "would fold with less change, and the GQA paper found the mean the best starting point "
            "for further training; how alike trained heads are, this report cannot tell: it has no "
            "trained model.").format(g=ids.gs[-2], mean=fmt(cos.mean), low=fmt(cos.low),
                                     high=fmt(cos.high)) + "\n")
    return "\n".join(paragraphs)


def difference_headers() -> List[str]:
    return [_("method"), "g", _("max abs difference"), _("relative L2"), _("cosine")]


def section_conversion(cfg: Config, lab: Lab, m: Measured) -> str:
    ids, conversion = labels(lab, cfg.heads), need(m.conversion)
    gs = ids.gs[:-1]
    return "\n".join([
        _("Three ways to make g key/value heads from h: the mean of each group (the GQA "
          "paper's choice), the first head of each group, or new random heads. Relative L2 "
          "difference from the MHA output, mean (lowest to highest) over the seeds:") + "\n",
        markdown_table([_("method"), "g"] + [_(c) for c in training.CONVERSIONS],
                       [(ids.name[g], g) + tuple(mean_range(conversion[(g, c)]) for c in training.CONVERSIONS)
                        for g in gs]),
        "",
        conversion_sentence(gs, conversion),
        ""])


def conversion_sentence(gs: Sequence[int], conv: dict) -> str:
    """One sentence comparing the measured ordering with the paper's (mean, first, random)."""
    order = {g: sorted(training.CONVERSIONS, key=lambda c: conv[(g, c)].mean) for g in gs}
    paper = list(training.CONVERSIONS)
    agree = [g for g in gs if order[g] == paper]
    if len(agree) == len(gs):
        return _("On these untrained weights the output moves least with the mean, then the "
                 "first head, then random heads, at every g: the GQA paper's ordering of the "
                 "three (which it measured on quality after training).")
    differ = _(", ").join(f"g = {g}: {' < '.join(_(c) for c in order[g])}" for g in gs if g not in agree)
    return _("On these untrained weights the ordering (by mean relative L2, smallest first) "
             "matches the GQA paper's (mean, then first, then random, measured on quality after "
             "training) at {agree} of {total} values of g, and differs at {differ}.").format(
                 agree=len(agree), total=len(gs), differ=differ)
