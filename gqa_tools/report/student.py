"""gqa_tools.report.student: what a student's report (--module) has that the project's has not.

Its header, in the language in use (a handout's: section 8 left out, and why); section 5, which first runs the
module's `attention` on random q, k, v (the handout's lab has no `layer`
yet); and section 9, the handout's questions for the student to answer.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

from gqa_grader.language.i18n import _
from gqa_tools import uptraining as training
from gqa_tools.formats import bar_chart, fmt, markdown_table
from gqa_tools.referee import Handout, step_name
from gqa_tools.seeds import rng_for, seed_for
from gqa_tools.report.lab import Hung, Lab, Unavailable, reason
from gqa_tools.report.measuring import Measured
from gqa_tools.report.outputs import difference_headers, section_output
from gqa_tools.report.settings import Config
from gqa_tools.report.text import code_block, labels, yes_no


def student_header(cfg: Config, lab: Lab, module: str, out: Optional[str] = None) -> str:
    """The header of a student's report (--module), in the language in use; its command
    names out, the --out given."""
    return "# " + _("gqa lab report") + "\n\n" + _(
        "Written by `{command}`. Every number below was computed, counted or measured by "
        "`{module}` (given with `--module`, not the `gqa.py` of this project), in the grader's "
        "worker, when that command ran; the same command with `--check` tells whether this file "
        "is still what the code writes. A section, or a part of one, that needs a step this module "
        "does not have yet names that step in its place, and one that failed says how. Section 9 "
        "is yours to write. The real-size configuration (counted by the closed forms) has h = "
        "{heads} query heads, head dim {head_dim}, {layers} layers, {context} positions and "
        "d_model = {d_model}. The small configuration that the code actually runs has the same "
        "{heads} query heads, head dim {run_head_dim}, d_model {run_d_model}, {run_context} "
        "positions and {run_layers} layers, with random, untrained weights from seeds {first} to "
        "{last}.").format(
            command=cfg.command(module, out=out), module=lab.label, heads=cfg.heads, head_dim=cfg.head_dim,
            layers=cfg.layers, context=f"{cfg.context:,}", d_model=f"{cfg.d_model:,}",
            run_head_dim=cfg.run_head_dim, run_d_model=cfg.run_d_model, run_context=cfg.run_context,
            run_layers=cfg.run_layers, first=cfg.seed, last=cfg.seed + cfg.seeds - 1) + "\n"


def handout_header(cfg: Config, lab: Lab, module: Optional[str], handout: Handout,
                   out: Optional[str] = None) -> str:
    """The header of a handout's report: its module the handout's gqa.py (or --module's),
    section 8 left out, and why; its command names out, the --out given."""
    outside = [step_name(name) for name in training.NEEDS if name not in handout.steps]
    left_out = (_("Section 8 of the lab's report, whether quality comes back with training, is left "
                  "out: this handout's lab does not train, and training needs {steps}, outside the "
                  "track this handout grades.").format(steps="; ".join(outside)) if outside else
                _("Section 8 of the lab's report, whether quality comes back with training, is left "
                  "out: this handout's lab does not train."))
    return "# " + _("gqa lab report") + "\n\n" + _(
        "Written by `{command}`, in this handout's folder. Every number below was computed, counted "
        "or measured by `{module}`, your module, in the grader's worker, when that command ran; the "
        "same command with `--check` tells whether this file is still what the code writes. A "
        "section, or a part of one, that needs a step this module does not have yet names that step "
        "in its place, one that needs a step outside the track this handout grades says so, and one "
        "that failed says how. {left_out} Section 9 is yours to write. The real-size configuration "
        "(counted by the closed forms) has h = {heads} query heads, head dim {head_dim}, {layers} "
        "layers, {context} positions and d_model = {d_model}. The small configuration that the code "
        "actually runs has the same {heads} query heads, head dim {run_head_dim}, d_model "
        "{run_d_model}, {run_context} positions and {run_layers} layers, with random, untrained "
        "weights from seeds {first} to {last}.").format(
            command=cfg.command(module, handout=True, out=out), module=lab.label, left_out=left_out,
            heads=cfg.heads, head_dim=cfg.head_dim, layers=cfg.layers, context=f"{cfg.context:,}",
            d_model=f"{cfg.d_model:,}", run_head_dim=cfg.run_head_dim, run_d_model=cfg.run_d_model,
            run_context=cfg.run_context, run_layers=cfg.run_layers, first=cfg.seed,
            last=cfg.seed + cfg.seeds - 1) + "\n"


def attention_inputs(cfg: Config) -> Tuple[list, list, list]:
    """A student's section 5: q, k and v, each [h][n][d] of the small configuration, uniform in
    [-1, 1), drawn q, then k, then v, from the stream "attention inputs" of the first seed."""
    rng = rng_for("attention inputs", cfg.seed)
    n, d = cfg.run_context, cfg.run_head_dim
    q, k, v = ([[[rng.uniform(-1.0, 1.0) for _ in range(d)] for _ in range(n)] for _ in range(cfg.heads)]
               for _ in range(3))
    return q, k, v


def attention_difference(cfg: Config, lab: Lab) -> str:
    """A student's section 5, first: attention(q, k, v, g) against g = h on one random q, k, v
    (steps 8 and 14), and whether g = h is per-head attention to the last bit (step 7)."""
    h, ids = cfg.heads, labels(lab, cfg.heads)
    q, k, v = attention_inputs(cfg)
    mha = lab.attention(q, k, v, h)
    diff = {g: lab.output_difference(lab.attention(q, k, v, g), mha) for g in ids.gs}
    rel = {g: diff[g].rel_l2 if math.isfinite(diff[g].rel_l2) else 0.0 for g in ids.gs}
    try:
        per_head = [lab.single_head_attention(q[i], k[i], v[i]) for i in range(h)]
        exact = _("checked with `==`, not a tolerance: {yes}").format(yes=yes_no(mha == per_head))
    except Unavailable as why:
        exact = _("not checked: {why}").format(why=why)
    return "\n".join([
        _("`attention(q, k, v, g)` against the MHA output `attention(q, k, v, {h})`, on the same "
          "random q, k and v: {h} heads of {positions} positions x head dim {head_dim}, drawn uniform "
          "in [-1, 1) (q, then k, then v) from `random.Random(\"{stream}\")`, seed {seed}; full "
          "attention, not causal. At g < h, `attention` folds k and v to g heads by their group mean "
          "and repeats them back out to h.").format(
              h=h, positions=cfg.run_context, head_dim=cfg.run_head_dim,
              stream=seed_for("attention inputs", cfg.seed), seed=cfg.seed) + "\n",
        markdown_table(difference_headers(),
                       [(ids.name[g], g, fmt(diff[g].max_abs), fmt(diff[g].rel_l2), fmt(diff[g].cosine))
                        for g in ids.gs]),
        "",
        code_block(bar_chart([ids.label[g] for g in ids.gs], [rel[g] for g in ids.gs],
                        [_("relative L2 {value}").format(value=fmt(diff[g].rel_l2)) for g in ids.gs])),
        "",
        _("At g = h nothing is folded: `attention(q, k, v, g={h}) == [single_head_attention(q[i], "
          "k[i], v[i]) for each head]`, {exact}.").format(h=h, exact=exact) + "\n"])


def section_output_of_module(cfg: Config, lab: Lab, m: Measured) -> str:
    """Section 5 of a student's report: attention on random q, k, v, then the project's
    section 5 (a whole layer on random weights), or a note naming the step it needs."""
    first = attention_difference(cfg, lab)
    try:
        then = section_output(cfg, lab, m)
    except (Exception, Hung) as err:                # a student's module can fail in any way
        then = _("*Not computed for a whole layer (`layer(x, weights, g)` on random weights, over "
                 "{seeds} seeds): {why}.*").format(seeds=cfg.seeds, why=reason(err)) + "\n"
    return first + "\n" + then


def section_write_up(cfg: Config, lab: Lab, m: Measured) -> str:
    """Section 9 of a student's report: the handout's questions, for the student to answer."""
    return "\n".join([
        _("This section is yours: the code wrote the ones above from your module, and here you say, "
          "in your own words and from your own numbers, what they show. Write each answer under its "
          "question and cite the rows you use. Running the command again writes the sections above "
          "anew and keeps this one as you wrote it.") + "\n",
        _("**1. What g changes, and what it does not.** From g = {h} (MHA) down to g = 1 (MQA), the "
          "KV cache of section 2 shrinks by a factor of h/g, while the multiplications of the scores "
          "and of the weighted sum in section 3 stay the same at every g. Why? Which terms does g "
          "change, and why does a smaller cache make decoding faster but prefill barely (section "
          "4)?").format(h=cfg.heads) + "\n",
        _("*(your answer)*") + "\n",
        _("**2. A changed output is not yet a measured loss of quality.** Section 5 shows the output "
          "moving away from MHA's as g falls. Why is that not yet a loss of quality? What are the "
          "weights and inputs here, what would measure quality, and what does the GQA paper do after "
          "it folds each group's key/value heads by their mean?") + "\n",
        _("*(your answer)*") + "\n"])
