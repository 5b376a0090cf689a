"""gqa_tools.report.trained: section 8, converting is not training.

The uptraining lab's quick recipe (gqa_tools.uptraining), trained with the lab's
steps: the pre-trained MHA model, the control and the three conversions at
each g after each budget beside the controls of the uptraining (the
smaller-cache model trained from scratch, Adam carried over), the MQA
paper's comparison at one cache size, what was found in plain sentences, the
verdicts' table (the exact sign-flip test, Holm-corrected) with its rule, its
margin and its scope, and the figures.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

from gqa_grader.language import i18n
from gqa_grader.language.i18n import _, sentences
from gqa_tools import uptraining as training
from gqa_tools.formats import bar, markdown_table
from gqa_tools.report import figures as draw
from gqa_tools.report.lab import Lab, need
from gqa_tools.report.measuring import Measured
from gqa_tools.report.settings import Config
from gqa_tools.report.text import code_block, figure_link


def section_training(cfg: Config, lab: Lab, m: Measured) -> Tuple[str, tuple]:
    """The uptraining lab's quick recipe (gqa_tools.uptraining), trained with lab's steps; its figures."""
    result = need(m.training)
    r = result["recipe"]
    recipe = training.Recipe(**{**r, "budgets": tuple(r["budgets"])})
    figures, curves = _training_figures(result)
    notes = sorted({result["tasks"][task]["same_cache_note"] for task in training.TASKS} - {""})
    decided = training.verdicts(result, training.TASKS)
    body = "\n".join([
        _("What was found:") + "\n",
        "\n".join(f"- {sentence}" for sentence in training.summary(result, decided)) + "\n",
        _training_intro(result),
        _("- {task}.").format(task=training.describe(recipe, "offsets")),
        _("- {task}.").format(task=training.describe(recipe, "recall")) + "\n",
        markdown_table([_("task"), _("held out per seed"), _("pre-trained MHA (the frozen baseline)"),
                        _("seeds at 0.95 or more")], _pretrained_rows(result)),
        "",
        markdown_table([_("task"), "g", _("model")] + training.steps_header(r), _uptraining_rows(result)),
        "",
        markdown_table([_("task"), "g", _("half the seeds within 0.02 of the control")],
                       training.half_rows(result)),
        "",
        code_block("\n".join(_uptraining_bars(result))),
        "",
        "\n\n".join(curves),
        "",
        _("The verdicts:") + "\n",
        markdown_table(training.verdicts_header(), training.verdict_rows(result, decided)),
        "",
        sentences([training.rule(result, decided), training.margin(result, decided), training.scope(result)])
        + "\n",
        _same_cache_part(result, notes),
        ""])
    return body, tuple(figures)


def _same_cache_part(result: dict, notes: Sequence[str]) -> str:
    """The MQA paper's comparison at one cache: its table, sentences and figure; or where it is run."""
    r, K = result["recipe"], len(result["seeds"])
    if not any(result["tasks"][task]["same_cache"] for task in training.TASKS):
        return _("The MQA paper's comparison at one cache size (MQA, one head and narrower heads, "
                 "trained from scratch) is not trained in this recipe: `python -m gqa uptrain` "
                 "trains it over {seeds} seeds, and `docs/uptraining.md` states what it "
                 "measured.").format(seeds=training.Recipe().seeds)
    return "\n".join([
        _("Same cache, three ways (the MQA paper's comparison): at MQA's cache per token, trained from "
          "scratch for {steps} steps on the same batches; every K/V head starts with the same variance, "
          "and the models with fewer attention parameters get a wider MLP, so the parameter counts match "
          "to within one MLP unit").format(steps=r["pretrain"])
        + ("" if not notes else f" ({_('; ').join(training.said(n) for n in notes)})") + ".\n",
        markdown_table([_("task"), _("model"), _("K/V cache per token"), _("parameters"), _("MLP width"),
                        _("held-out accuracy")], _same_cache_rows(result)),
        "",
        "\n\n".join(f"**{task}.** " + training.same_cache_finding(result, task)
                     for task in training.TASKS) + "\n",
        figure_link("equal-cache.svg", _("At one K/V cache size, the held-out accuracy of MQA, of one head and "
                                         "of narrower heads, for each task: the mean of {seeds} seeds as a "
                                         "bar, its 95 % interval as a whisker").format(seeds=K))])


def _training_intro(result: dict) -> str:
    """Section 8's first paragraph: what is trained, what is compared, how it is written and decided."""
    r, seeds = result["recipe"], result["seeds"]
    n = r["held_out"]
    intro = _(
        "Sections 1 to 7 run on random, untrained weights. Here a model is trained and its "
        "quality measured (`gqa_tools/uptraining/`): an MHA model (h = {heads}, head dim {head_dim}, "
        "d_model {d_model}, an MLP of width {d_ff}) is pre-trained for {pretrain} steps of {batch} "
        "sequences on each of two tasks; a copy of it is trained on for {more} more steps (*the "
        "control*), and it is converted to each g < h by the mean of each group, its first head or "
        "new random heads, each conversion trained on with the control's batches; the budgets are "
        "checkpoints of one run. {seeds}; every accuracy is on {n} held-out sequences per seed that "
        "training never sees (for an accuracy p of one seed, a 95 % interval at most "
        "1.96 √(p(1 − p)/{n}) wide on each side: {half} at p = 0.5, {high} at p = 0.95), written "
        "mean ± sd [95 % interval of the mean] over the seeds, a t-interval; a count of seeds is "
        "written k/K [its 95 % Wilson interval].").format(
            heads=r["heads"], head_dim=r["head_dim"], d_model=r["d_model"], d_ff=r["d_ff"],
            pretrain=r["pretrain"], batch=r["batch"], more=max(r["budgets"]),
            seeds=training.seeds_text(seeds), n=n, half=f"{1.96 * (0.25 / n) ** 0.5:.3f}",
            high=f"{1.96 * (0.95 * 0.05 / n) ** 0.5:.3f}")
    return sentences([intro, _(training.DESCRIBED)]) + "\n"


def _pretrained_rows(result: dict) -> List[tuple]:
    K = len(result["seeds"])
    rows = []
    for task in training.TASKS:
        t = result["tasks"][task]
        rows.append((task, _("{sequences} sequences, {answers} answers").format(
                         sequences=f"{t['held_out']:,}", answers=f"{t['answers']:,}"),
                     training.spread_text(training.stats(t["pretrained"]["correct"], t["answers"])),
                     f"{training.pretrained_at(t)}/{K}"))
    return rows


def _uptraining_rows(result: dict) -> List[tuple]:
    """Section 8's main table: for each task and g, the control, the conversions and the shares."""
    rows = []
    for task in training.TASKS:
        t = result["tasks"][task]
        for g in sorted({x["g"] for x in t["uptrain"]}):
            rows += [(task, g, *row) for row in training.uptraining_rows(result, task, g)]
    return rows


def _uptraining_bars(result: dict) -> List[str]:
    """The table's means as bars, one line per task, g and model."""
    r = result["recipe"]
    lines, pad = [], max(i18n.width(_(how)) for how in ("control",) + training.CONVERSIONS)
    for task in training.TASKS:
        t = result["tasks"][task]
        n, steps = t["answers"], (0,) + tuple(r["budgets"])
        for g in sorted({x["g"] for x in t["uptrain"]}):
            for how in ("control",) + training.CONVERSIONS:
                means = [training.stats(training.baseline(t, s) if how == "control" else
                                        training.cell(t, g, how, s), n).mean for s in steps]
                lines.append(f"{task:<7} g={g} {i18n.ljust(_(how), max(pad, 7))}  "
                             + "  ".join(f"{bar(a, 1.0, 8):<8}" for a in means)
                             + "  " + " -> ".join(f"{a:.2f}" for a in means))
    return lines


def _same_cache_rows(result: dict) -> List[tuple]:
    return [(task, training.said(x["model"]), x["cache_per_token"], f"{x['parameters']:,}", x["d_ff"],
             training.spread_text(training.stats(x["correct"], result["tasks"][task]["answers"])))
            for task in training.TASKS for x in result["tasks"][task]["same_cache"]]


def _spread_of(correct: Sequence[int], answers: int) -> Tuple[float, float, float]:
    s = training.stats(correct, answers)
    return s.mean, s.low, s.high


def _training_figures(result: dict) -> Tuple[List[Tuple[str, str]], List[str]]:
    """Section 8's figures, (file name, SVG) pairs: each task's uptraining curves, then the
    equal-cache bars; and the links to the curves."""
    r, K = result["recipe"], len(result["seeds"])
    steps = (0,) + tuple(r["budgets"])
    figures, curves, bars_of = [], [], {}
    mark = (training.paper_budget(r), _("the GQA paper's 5 %"))
    for task in training.TASKS:
        t = result["tasks"][task]
        n = t["answers"]
        spreads = {(x["g"], x["conversion"]): [_spread_of(training.cell(t, x["g"], x["conversion"], s), n)
                                               for s in steps] for x in t["uptrain"]}
        name = f"uptraining-{task}.svg"
        figures.append((name, draw.uptraining_figure(
            task, steps, spreads, _spread_of(t["pretrained"]["correct"], n),
            [_spread_of(training.baseline(t, s), n) for s in steps], seeds=K, mark=mark)))
        curves.append(figure_link(name, _("Held-out accuracy of the {task} task against uptraining "
                                          "steps after converting by the mean, the first head or "
                                          "random heads, at each g: the mean of {seeds} seeds as a "
                                          "line, its 95 % interval as a band, the MHA model trained on "
                                          "the same batches as a dotted line, the frozen pre-trained "
                                          "model as a dashed line").format(task=task, seeds=K)))
        bars_of[task] = {training.said(x["model"]): _spread_of(x["correct"], n) for x in t["same_cache"]}
    cache = sorted({x["cache_per_token"] for task in training.TASKS
                    for x in result["tasks"][task]["same_cache"]})
    if not cache:                                   # the recipe trained no equal-cache models
        return figures, curves
    figures.append(("equal-cache.svg", draw.equal_cache_figure(
        bars_of, note=_("{cache} cached values per token, {steps} steps from scratch").format(
            cache=", ".join(map(str, cache)), steps=r["pretrain"]), seeds=K)))
    return figures, curves
