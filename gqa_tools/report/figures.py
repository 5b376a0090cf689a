"""gqa_tools.report.figures: the report's figures, each from plain data (numbers in, SVG text out).

    grouping_figure          which key/value head each query head reads (section 1)
    g_changes_figure         the KV cache per g beside the multiplications per g (section 4)
    decoding_figure          the cache read for every new token, per g (section 7)
    uptraining_figure        accuracy against uptraining steps: means and intervals (section 8)
    equal_cache_figure       accuracy at one cache size: means and intervals (section 8)

Drawn with gqa_tools.svg's pieces, and like them the same to the byte on
every run; they know nothing of attention but the numbers they are given.
The sections call them with the numbers of the table they put beside each.
Their words are the catalog's templates (gqa_grader.language.i18n), in the language
of the report: a student's in theirs, the project's in English.
"""

from __future__ import annotations

from typing import List, Mapping, Optional, Sequence, Tuple

from gqa_grader.language.i18n import _, ngettext, sentences
from gqa_tools.svg import (BACKGROUND, MUTED, PALETTE, Axes, Figure, Style, Ticks, categories, nice_ticks, style,
                           text_width)

def runs(heads: Sequence[int]) -> str:
    """Increasing heads as runs of neighbours: [0, 1, 2, 3] "0–3", [0, 4] "0, 4",
    [0, 1, 4, 5] "0–1, 4–5" (a strided kv_head's groups are drawn as they are)."""
    found: List[List[int]] = []
    for i in heads:
        if found and i == found[-1][-1] + 1:
            found[-1].append(i)
        else:
            found.append([i])
    return ", ".join(f"{run[0]}–{run[-1]}" if len(run) > 1 else str(run[0]) for run in found)


def neighbours(heads: Sequence[int]) -> bool:
    """Whether each key/value head's query heads (heads[i]: query head i's) are neighbours."""
    return all("," not in runs([i for i, j in enumerate(heads) if j == kv]) for kv in set(heads))


# Light fills of the first two colours, for the query heads of the grouping figure.
_TINT = {PALETTE[0]: "#d9eaf5", PALETTE[1]: "#f9e2d2"}


def grouping_figure(h: int, panels: Sequence[Tuple[str, int, Sequence[int]]]) -> str:
    """Which key/value head each query head reads: one panel per g.

    panels: (method name, g, [kv_head(i, h, g) for i in range(h)]) each,
    drawn two by two.  Each query head (top row) is joined to the key/value
    head it reads (bottom row); neighbouring groups alternate in colour.
    """
    pitch, box, kv_box, cols = 34.0, 26.0, 32.0, 2
    panel_w, panel_h = h * pitch, 132.0
    rows = (len(panels) + cols - 1) // cols
    width, height = cols * panel_w + 3 * 24.0, 44 + rows * panel_h + 26
    desc = _("For h = {h} query heads, one panel per g: each query head (top row) is joined to the "
             "key/value head it reads (bottom row). {panels}.").format(h=h, panels="; ".join(
                 f"{name} g = {g}: " + ", ".join(
                     _("query heads {heads} read key/value head {kv}").format(
                         heads=runs([i for i in range(h) if heads[i] == j]), kv=j)
                     for j in sorted(set(heads))) for name, g, heads in panels))
    fig = Figure(width, height, _("Which key/value head each of h = {h} query heads reads").format(h=h), desc)
    for p, (name, g, heads) in enumerate(panels):
        left = 24 + (p % cols) * (panel_w + 24)
        top = 44 + (p // cols) * panel_h
        fig.add('<g class="panel">')
        fig.text(left + 4, top + 14, f"{name}, g = {g}", size=13, weight="bold", class_="caption")
        if len({heads.count(j) for j in range(g)}) == 1:              # as many for each, as drawn
            each = heads.count(0)
            fig.text(left + 4 + text_width(f"{name}, g = {g}", 13) + 6, top + 14,
                     ngettext("{n} query head each", "{n} query heads each", each).format(n=each), colour=MUTED)
        q_y, kv_y = top + 24, top + 90
        centre = [left + pitch * (i + 0.5) for i in range(h)]
        kv_x = {j: sum(centre[i] for i in range(h) if heads[i] == j) / heads.count(j)
                for j in sorted(set(heads))}
        for i in range(h):
            c = PALETTE[heads[i] % 2]
            fig.line(centre[i], q_y + box, kv_x[heads[i]], kv_y, c, 1.6, class_="edge",
                     title=_("query head {i} reads key/value head {kv}").format(i=i, kv=heads[i]))
        for i in range(h):
            c = PALETTE[heads[i] % 2]
            fig.rect(centre[i] - box / 2, q_y, box, box, _TINT[c], stroke=c, class_="query",
                     title=_("query head {i}").format(i=i), rx=3)
            fig.text(centre[i], q_y + 17, f"q{i}", size=11, anchor="middle")
        for j, x in kv_x.items():
            c = PALETTE[j % 2]
            fig.rect(x - kv_box / 2, kv_y, kv_box, 24, c, class_="kv", title=_("key/value head {j}").format(j=j), rx=3)
            fig.text(x, kv_y + 16, f"kv{j}", size=11, anchor="middle", colour=BACKGROUND, weight="bold")
        fig.add("</g>")
    lesson = all(heads[i] == i // (h // g) for _name, g, heads in panels for i in range(h))   # as drawn
    fig.text(24, height - 12, _("Top: query heads; bottom: the key/value head each reads, i // (h // g).") if lesson
             else _("Top: query heads; bottom: the key/value head each reads, by the module's kv_head."),
             size=11, colour=MUTED)
    return fig.svg()


def g_changes_figure(h: int, gs: Sequence[int], names: Mapping[int, str], cache: Mapping[int, float],
                     layer: Mapping[int, float], block: Mapping[int, float], *,
                     cache_note: str, work_note: str) -> str:
    """The KV cache per g beside the multiplications per g, each as a fraction of MHA's.

    cache, layer and block: g -> fraction of the g = h value (the KV cache,
    one attention layer's multiplications, the whole block's).  The notes
    say what they were counted for (positions, layers, model).
    """
    axis, y = categories([str(g) for g in gs]), nice_ticks(0, 1)
    fig = Figure(720, 392, _("What g changes: the KV cache falls with g, the multiplications barely move"),
                 _("Two panels over g = {gs} key/value heads (h = {h}), each value a fraction of MHA's. "
                   "Left, the KV cache: {cache}. Right, the multiplications of one attention layer "
                   "({layer}) and of the whole block with its MLP ({block}).").format(
                     gs=", ".join(map(str, gs)), h=h,
                     cache=", ".join(_("{value} at g = {g}").format(value=f"{cache[g]:.4g}", g=g) for g in gs),
                     layer=", ".join(f"{layer[g]:.4g}" for g in gs),
                     block=", ".join(f"{block[g]:.4g}" for g in gs)))
    xs = list(range(len(gs)))
    left = fig.axes(64, 96, 250, 220, x=axis, y=y, title=_("KV cache"), ylabel=_("fraction of MHA's"),
                    xlabel=_("g, key/value heads"))
    left.plot(xs, [cache[g] for g in gs], style(0),
              titles=[_("KV cache, {name} g={g}: {value} of MHA").format(name=names[g], g=g, value=f"{cache[g]:.4g}")
                      for g in gs])
    right = fig.axes(430, 96, 250, 220, x=axis, y=y, title=_("Multiplications"), ylabel=_("fraction of MHA's"),
                     xlabel=_("g, key/value heads"))
    for k, (what, values) in enumerate(((_("one attention layer"), layer), (_("the whole block"), block))):
        right.plot(xs, [values[g] for g in gs], style(k + 1),
                   titles=[_("{what}, {name} g={g}: {value} of MHA").format(
                       what=what, name=names[g], g=g, value=f"{values[g]:.4g}") for g in gs])
    fig.legend(442, 288, [(_("one attention layer"), style(1))])
    fig.legend(442, 306, [(_("the whole block (with its MLP)"), style(2))])
    fig.text(58, 376, cache_note, size=11, colour=MUTED)
    fig.text(424, 376, work_note, size=11, colour=MUTED)
    return fig.svg()


def _byte_unit(top: float) -> Tuple[str, float]:
    for unit, size in (("EiB", 2 ** 60), ("PiB", 2 ** 50), ("TiB", 2 ** 40), ("GiB", 2 ** 30),
                       ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if top >= size:
            return unit, float(size)
    return "B", 1.0


def _bytes_text(n: float) -> str:
    unit, size = _byte_unit(n)
    return f"{n / size:.4g} {unit}"


def decoding_figure(positions: Sequence[int], series: Sequence[Tuple[str, Sequence[int]]], *,
                    layers: int, bytes_per_element: int = 2) -> str:
    """Cache bytes read to generate the token at each position, one line per g.

    series: (label, [cache elements read at each position]) each, smallest
    g first; drawn as bytes, bytes_per_element each.
    """
    top = max(v for _, values in series for v in values) * bytes_per_element
    unit, size = _byte_unit(top)
    right_margin = max(text_width(label, 12) for label, _ in series) + 44
    width, height = 660.0, 400.0
    fig = Figure(width, height, _("Decoding: the cache read per new token grows with its position"),
                 _("Cache bytes read (K and V, {layers} layers, {bytes} bytes an element) to generate the "
                   "token at position t, one line per g: {series}.").format(
                     layers=layers, bytes=bytes_per_element, series="; ".join(
                         f"{label}: " + ", ".join(
                             _("{bytes} at t = {t}").format(bytes=_bytes_text(v * bytes_per_element), t=f"{t:,}")
                             for t, v in zip(positions, values))
                         for label, values in series)))
    y = nice_ticks(0, top, scale=size)
    left = max(70.0, max(text_width(label, 12) for _, label in y.ticks) + 14)
    ax = fig.axes(left, 74, width - left - right_margin, height - 74 - 62,
                  x=nice_ticks(0, max(positions), cover=False), y=y,
                  ylabel=_("{unit} read per new token (16-bit K and V)").format(unit=unit),
                  xlabel=_("position t of the new token"))
    ends = []
    for k, (label, values) in enumerate(series):
        st = style(0 if k == len(series) - 1 else k + 1)     # the last (MHA) solid blue, the first next
        ax.plot(positions, [v * bytes_per_element for v in values], st,
                titles=[_("{label}, t = {t}: {n} elements").format(label=label, t=f"{t:,}", n=f"{v:,}")
                        for t, v in zip(positions, values)])
        ends.append((values[-1] * bytes_per_element, label, st))
    ax.end_labels(ends)
    return fig.svg()


# ---------------------------------------------------------------------------
# The uptraining lab's figures (the report's section 8), from plain data.
# ---------------------------------------------------------------------------

def _title_width(title: str) -> float:
    """The width a figure needs for its title (15 px, bold: a tenth wider than text_width)."""
    return 1.1 * text_width(title, 15) + 32


# A band: a value measured over seeds, as the figures take it: (mean, low, high),
# the ends of an interval around the mean (the report gives 95 % ones).
Band = Tuple[float, float, float]


def _check_spreads(func: str, what: str, spreads: Sequence[Band], count: int) -> None:
    if len(spreads) != count or any(len(s) != 3 or not s[1] <= s[0] <= s[2] for s in spreads):
        raise ValueError(f"{func}: {what} must hold {count} (mean, low, high) triples with "
                         f"low <= mean <= high; got {list(spreads)!r}")


CONTROL_STYLE = Style(PALETTE[6], "1 3", "plus")         # black, dotted: the control, in every panel


def uptraining_figure(task: str, budgets: Sequence[int], curves: Mapping[Tuple[int, str], Sequence[Band]],
                      frozen: Band, control: Sequence[Band], *, seeds: int,
                      conversions: Sequence[str] = ("mean", "first", "random"),
                      mark: Optional[Tuple[int, str]] = None) -> str:
    """Held-out accuracy against uptraining steps: one panel per g, one line per conversion.

    task: the task's name, for the title ("offsets").
    budgets: the steps after which accuracy was measured, from 0 (right
        after the conversion), e.g. (0, 5, 20).
    curves: {(g, conversion): [(mean, low, high) after budgets[0], ...]}
        for every g and every conversion named in `conversions`.
    frozen: the pre-trained MHA model's (mean, low, high): a dashed line.
    control: the MHA model trained on the same batches, (mean, low, high)
        after each budget: a dotted line in every panel.
    seeds: how many seeds the means are over, for the caption.
    mark: (steps, label) draws a dotted vertical line there, e.g.
        (5, "the GQA paper's 5 %").

    Each line is a mean over the seeds, its band [low, high].
    """
    func = "uptraining_figure"
    gs = sorted({g for g, _ in curves})
    for key, rows in curves.items():
        _check_spreads(func, f"curves[{key!r}]", rows, len(budgets))
    _check_spreads(func, "control", control, len(budgets))
    _check_spreads(func, "frozen", [frozen], 1)
    panel_w, gap, left0, top = 230.0, 56.0, 62.0, 80.0
    title = _("Uptraining after the conversion: {task}").format(task=task)
    caption = (_("line: the mean of {seeds} seeds; band: its 95 % interval").format(seeds=seeds) if seeds > 1
               else _("one seed"))
    entries = ([(_(c), style(k)) for k, c in enumerate(conversions)]
               + [(_("MHA trained on (control)"), CONTROL_STYLE)])
    legend_w = sum(26 + 5 + text_width(c, 12) + 18 for c, _ in entries)
    panels_w = left0 + len(gs) * panel_w + (len(gs) - 1) * gap + 24
    base = left0 - 50                               # where the legend and the caption start
    width = max(panels_w, _title_width(title), base + max(legend_w, text_width(caption, 12)) + 12)
    left0 += (width - panels_w) / 2                 # the panels centred under a wider title
    height = 420.0
    fig = Figure(width, height, title, _uptraining_text(task, budgets, curves, conversions, frozen, control, seeds))
    x, y = nice_ticks(0, max(budgets), cover=False, most=4), nice_ticks(0, 1)
    for p, g in enumerate(gs):
        ax = fig.axes(left0 + p * (panel_w + gap), top, panel_w, 240, x=x, y=y, title=f"g = {g}",
                      ylabel=_("held-out accuracy") if p == 0 else "", xlabel=_("uptraining steps"))
        if mark is not None:
            ax.vline(mark[0], mark[1])
        ax.hline(frozen[0], _("pre-trained MHA {accuracy}").format(accuracy=f"{frozen[0]:.3f}"), dash="6 3")
        _conversion_lines(ax, g, budgets, [curves[(g, c)] for c in conversions], conversions)
        ax.plot(budgets, [s[0] for s in control], CONTROL_STYLE, width=1.5,
                titles=[_("control, {steps} steps: mean {mean} ({low} to {high})").format(
                            steps=b, mean=f"{s[0]:.3f}", low=f"{s[1]:.3f}", high=f"{s[2]:.3f}")
                        for b, s in zip(budgets, control)])
    fig.legend(base, height - 38, entries)
    fig.text(base, height - 16, caption, colour=MUTED)
    return fig.svg()


def _uptraining_text(task: str, budgets: Sequence[int], curves: Mapping[Tuple[int, str], Sequence[Band]],
                     conversions: Sequence[str], frozen: Band, control: Sequence[Band],
                     seeds: int) -> str:
    """uptraining_figure's description: every mean it draws, in words."""
    gs = sorted({g for g, _ in curves})
    return sentences(
        [_("Held-out accuracy on the task {task} against uptraining steps after converting a pre-trained "
           "MHA model (accuracy {accuracy}, the mean of {seeds} seeds) to g key/value heads, beside the "
           "MHA model trained on the same batches ({control}).").format(
            task=repr(task), accuracy=f"{frozen[0]:.3f}", seeds=seeds,
            control=", ".join(f"{s[0]:.3f}" for s in control))]
        + [_("At g = {g}: {curves}.").format(g=g, curves="; ".join(
            f"{_(c)} " + ", ".join(f"{s[0]:.3f}" for s in curves[(g, c)]) for c in conversions))
           for g in gs]
        + [_("Steps: {steps}; each value the mean over the seeds, the band its 95 % interval.").format(
            steps=", ".join(map(str, budgets)))])


def _conversion_lines(ax: Axes, g: int, budgets: Sequence[int],
                      curves: Sequence[Sequence[Band]], conversions: Sequence[str]) -> None:
    """One panel's lines: for each conversion, its mean after each budget, on a band from
    low to high (the bands first, under every line)."""
    for k, rows in enumerate(curves):
        ax.band(budgets, [s[1] for s in rows], [s[2] for s in rows], style(k))
    for k, (c, rows) in enumerate(zip(conversions, curves)):
        ax.plot(budgets, [s[0] for s in rows], style(k),
                titles=[_("g = {g}, {conversion}, {steps} steps: mean {mean} ({low} to {high})").format(
                            g=g, conversion=_(c), steps=b, mean=f"{s[0]:.3f}", low=f"{s[1]:.3f}",
                            high=f"{s[2]:.3f}") for b, s in zip(budgets, rows)])


def equal_cache_figure(accuracy: Mapping[str, Mapping[str, Band]], *, note: str, seeds: int) -> str:
    """At one cache size, held-out accuracy of each model: a bar per model, one panel per task.

    accuracy: {task: {model: (mean, low, high)}}, the models in the order to
        draw them (top down), the same models for every task.
    note: what is equal, e.g. "8 cached values per token; trained from
        scratch for 100 steps".
    seeds: how many seeds the means are over.

    Each bar is a mean over the seeds, its whisker [low, high]; the mean is
    written beside the whisker.
    """
    tasks = list(accuracy)
    models = list(accuracy[tasks[0]]) if tasks else []
    if not models or any(list(accuracy[t]) != models for t in tasks):
        raise ValueError("equal_cache_figure: every task needs the same models, in one order")
    for t in tasks:
        _check_spreads("equal_cache_figure", f"accuracy[{t!r}]", list(accuracy[t].values()), len(models))
    left = max(text_width(m, 12) for m in models) + 22
    panel_w, bar_h = 300.0, 30.0
    panel_h = bar_h * len(models)
    step = panel_h + 86
    title = _("Same cache, three ways: which model uses it best")
    width, height = max(left + panel_w + 64, _title_width(title)), 52 + len(tasks) * step + 34
    desc = _("Held-out accuracy at one cache size ({note}), the mean over {seeds} seeds with its 95 % "
             "interval: {tasks}").format(note=note, seeds=seeds, tasks=sentences(
                 f"{t}: " + "; ".join(_("{model} {mean} ({low} to {high})").format(
                     model=m, mean=f"{s[0]:.3f}", low=f"{s[1]:.3f}", high=f"{s[2]:.3f}")
                                      for m, s in accuracy[t].items()) + "." for t in tasks))
    fig = Figure(width, height, title, desc)
    y = Ticks(-0.5, len(models) - 0.5, tuple((float(len(models) - 1 - i), m) for i, m in enumerate(models)))
    positions = [float(len(models) - 1 - i) for i in range(len(models))]
    for p, t in enumerate(tasks):
        ax = fig.axes(left, 82 + p * step, panel_w, panel_h, x=nice_ticks(0, 1, most=5), y=y,
                      title=_("task: {task}").format(task=t),
                      xlabel=_("held-out accuracy") if p == len(tasks) - 1 else "",
                      grid=False)
        values = [accuracy[t][m] for m in models]
        ax.hbars(positions, [s[0] for s in values], PALETTE[5],
                 titles=[_("{task}, {model}: mean {mean} ({low} to {high}, {seeds} seeds)").format(
                             task=t, model=m, mean=f"{s[0]:.3f}", low=f"{s[1]:.3f}", high=f"{s[2]:.3f}",
                             seeds=seeds) for m, s in zip(models, values)],
                 lows=[s[1] for s in values], highs=[s[2] for s in values])
        for pos, s in zip(positions, values):
            ax.text(ax.x(s[2]) + 6, ax.y(pos) + 4, f"{s[0]:.3f}", size=11)
    fig.lines_of_text(12, height - 30, _("{note}; bar: the mean over {seeds} seeds, whisker: its 95 % "
                                         "interval.").format(note=note, seeds=seeds), width - 24)
    return fig.svg()
