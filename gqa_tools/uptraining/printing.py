"""gqa_tools.uptraining.printing: what `python -m gqa uptrain` prints, from run()'s result.

render(result) is the whole text: the recipe and what was found, then for
each task the pre-trained model, one table for each g (the control and each
conversion at every budget, the controls of the uptraining, then the shares
of seeds) and the equal-cache models, then the verdicts' table with its rule
and scope.  report.md's section 8 uses its tables (steps_header,
uptraining_rows) too.
"""

from __future__ import annotations

from typing import Any, Dict, List

from gqa_grader.language.i18n import N_, _, sentences
from gqa_tools.formats import text_table
from gqa_tools.uptraining.claims import (baseline, carried_cell, cell, half_within, ordering_held, pretrained_at,
                                         recovered, scratch_cell, stats, verdicts)
from gqa_tools.uptraining.sentences import (DESCRIBED, margin, pct, rule, said, same_cache_finding, scope,
                                            seeds_text, share_text, spread_text, summary, verdict_rows,
                                            verdicts_header)
from gqa_tools.uptraining.recipe import CONVERSIONS, TASKS, Recipe
from gqa_tools.uptraining.tasks import describe

# The conversions and the control as a table or a bar names them, translated: _(how).
SHOWN = (N_("mean"), N_("first"), N_("random"), N_("control"))


def uptraining_rows(result: Dict[str, Any], task: str, g: int) -> List[List[str]]:
    """One g's table: the control, each conversion, then the shares, one column per steps."""
    r, t, K = result["recipe"], result["tasks"][task], len(result["seeds"])
    n, steps = t["answers"], (0,) + tuple(r["budgets"])
    rows = [[_("MHA trained on (the control)")] + [spread_text(stats(baseline(t, s), n)) for s in steps]]
    if t.get("carried"):
        rows.append([_("the control, Adam carried over")] + [carried_text(t, "control", r["heads"], s, r)
                                                             for s in steps])
    rows += [[_(how)] + [spread_text(stats(cell(t, g, how, s), n)) for s in steps] for how in CONVERSIONS]
    if t.get("carried"):
        rows.append([_("mean, Adam carried over")] + [carried_text(t, "mean", g, s, r) for s in steps])
    if t.get("scratch"):
        rows.append([_("g = {g} from scratch ({pretrain} + steps)").format(g=g, pretrain=r["pretrain"])]
                    + [spread_text(stats(scratch_cell(t, g, s), n)) for s in steps])
    rows.append([_("mean ≥ control − 0.02")] + [share_text(recovered(t, g, s), K) for s in steps])
    rows.append([_("mean ≥ frozen − 0.02")]
                + [share_text(recovered(t, g, s, control=False), K) for s in steps])
    rows.append([_("mean > first > random")] + [share_text(ordering_held(t, g, s), K) for s in steps])
    return rows


def carried_text(t: dict, how: str, g: int, steps: int, r: dict) -> str:
    """A cell of a row with Adam carried over: trained to the first budget only ('—' after it)."""
    if steps > r["budgets"][0]:
        return "—"
    if steps == 0:                          # not yet trained: the same model as the fresh restart's
        return spread_text(stats(baseline(t, 0) if how == "control" else cell(t, g, "mean", 0), t["answers"]))
    return spread_text(stats(carried_cell(t, how, g, steps), t["answers"]))


def half_rows(result: Dict[str, Any]) -> List[List[str]]:
    """For each task and g: the first budget with half the seeds or more within 0.02 of the control."""
    r, out = result["recipe"], []
    for task in TASKS:
        t = result["tasks"][task]
        for g in sorted({x["g"] for x in t["uptrain"]}):
            s = half_within(t, g, r["budgets"])
            out.append([task, str(g), _("not within {steps} steps").format(steps=r["budgets"][-1])
                        if s is None else _("{steps} steps ({share})").format(steps=s, share=pct(s, r))])
    return out


def steps_header(r: dict) -> List[str]:
    """The tables' step columns: '0 steps', then each budget with its share of the pre-training."""
    return [_("{steps} steps ({share})").format(steps=s, share=pct(s, r)) if s else _("0 steps")
            for s in (0,) + tuple(r["budgets"])]


def same_cache_lines(result: Dict[str, Any], task: str) -> List[str]:
    """The equal-cache table and its sentence, or the note that the recipe trained none."""
    r, t = result["recipe"], result["tasks"][task]
    if not t["same_cache"]:
        return [f"({said(t['same_cache_note'])}.)", ""]
    lines = [_("Same KV cache, trained from scratch for {steps} steps on the same batches, parameters matched "
               "by the MLP's width:").format(steps=r["pretrain"]),
             text_table([_("model"), _("K/V cache per token"), _("parameters"), _("MLP width"),
                         _("held-out accuracy")],
                        [[said(x["model"]), str(x["cache_per_token"]), f"{x['parameters']:,}",
                          str(x["d_ff"]), spread_text(stats(x["correct"], t["answers"]))]
                         for x in t["same_cache"]])]
    if t["same_cache_note"]:
        lines.append(f"({said(t['same_cache_note'])}.)")
    return lines + ["", same_cache_finding(result, task), ""]


def render(result: Dict[str, Any]) -> str:
    r, seeds = result["recipe"], result["seeds"]
    K = len(seeds)
    decided = verdicts(result, TASKS)
    recipe = Recipe(**{**r, "budgets": tuple(r["budgets"])})
    first = _("Uptraining lab: h = {heads}, head dim {head_dim}, d_model {d_model}, MLP width {d_ff}; Adam at "
              "{lr}, batches of {batch}; pre-training {pretrain} steps; {seeds}; each accuracy on {held_out} "
              "held-out sequences per seed, as mean ± sd [95 % interval of the mean] over the seeds, each "
              "count of seeds as k/K [95 % Wilson interval].").format(
        heads=r["heads"], head_dim=r["head_dim"], d_model=r["d_model"], d_ff=r["d_ff"], lr=r["lr"],
        batch=r["batch"], pretrain=r["pretrain"], seeds=seeds_text(seeds), held_out=r["held_out"])
    lines = [sentences([first, _(DESCRIBED)]), "", _("What was found:")]
    lines += [f"- {sentence}" for sentence in summary(result, decided)] + [""]
    for task in TASKS:
        t = result["tasks"][task]
        pre = stats(t["pretrained"]["correct"], t["answers"])
        lines += [f"== {describe(recipe, task)}.", "",
                  _("Pre-trained MHA (the frozen baseline): {accuracy} ({answers} answers per seed); at 0.95 "
                    "or more in {at}/{seeds} seeds.").format(accuracy=spread_text(pre),
                                                            answers=f"{t['answers']:,}", at=pretrained_at(t),
                                                            seeds=K), ""]
        for g in sorted({x["g"] for x in t["uptrain"]}):
            lines.append(_("g = {g}: held-out accuracy after converting, then training on:").format(g=g))
            lines += [text_table([_("model")] + steps_header(r), uptraining_rows(result, task, g)), ""]
        lines += same_cache_lines(result, task)
    lines += [text_table([_("task"), "g", _("half the seeds within 0.02 of the control")], half_rows(result),
                         left=3),
              "", _("The verdicts:"), text_table(verdicts_header(), verdict_rows(result, decided), left=2), "",
              sentences([rule(result, decided), margin(result, decided), scope(result)]), ""]
    lines.append(_("What was measured is printed as it came, whether or not it is what the papers found."))
    return "\n".join(lines)
