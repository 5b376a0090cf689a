"""gqa_tools.uptraining.sentences: the findings, each claim with its interval and verdict.

Each sentence is one template with named fields (gqa_grader.language.i18n), filled
with what gqa_tools.uptraining.claims read from a result and what
gqa_tools.statistics decides of it: a number as mean ± sd [95 % interval of
the mean], a count of seeds as k/K [95 % Wilson interval], a claim as
holding, not holding or not resolved (RULE says how, and MARGIN why
*recovers* has its margin and what the seeds can resolve of it, in
sentences the lab's text and section 8 both print).  What it says is what was measured,
whether or not it is what the papers found.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Sequence, Tuple

from gqa_grader.language.i18n import N_, _, ngettext, sentences
from gqa_tools.statistics import Stats, wilson
from gqa_tools.uptraining.claims import pretrained_at, same_cache_wins, stats


# ---------------------------------------------------------------------------
# How a number is written: a mean over the seeds, a difference, a share of seeds.
# ---------------------------------------------------------------------------

def spread_text(s: Stats) -> str:
    """'0.812 ± 0.034 [0.796, 0.828]': mean ± sd [95 % interval of the mean]."""
    if s.seeds == 1:
        return _("{mean} (1 seed)").format(mean=f"{s.mean:.3f}")
    return f"{s.mean:.3f} ± {s.sd:.3f} [{s.low:.3f}, {s.high:.3f}]"


def share_text(k: int, n: int) -> str:
    """'13/20 [0.433, 0.819]': k of n seeds, with its 95 % Wilson interval."""
    low, high = wilson(k, n)
    return f"{k}/{n} [{low:.3f}, {high:.3f}]"


def seeds_text(seeds: Sequence[int]) -> str:
    """'5 seeds (0 to 4)', or '1 seed (7)'."""
    if len(seeds) == 1:
        return _("1 seed ({seed})").format(seed=seeds[0])
    return _("{count} seeds ({first} to {last})").format(count=len(seeds), first=seeds[0], last=seeds[-1])


def pct(steps: int, r: dict) -> str:
    """Steps as a share of the pre-training: '5 %'."""
    return f"{100 * steps / r['pretrain']:.3g} %"


# ---------------------------------------------------------------------------
# The sentences: each claim with its interval and what the rule decides.
# ---------------------------------------------------------------------------

RULE = N_("Each verdict is a paired difference over the seeds against its bar, decided by the exact two-sided "
          "paired test of its mean, the sign-flip test: if the claim's null hypothesis holds, each seed's "
          "difference is as likely to lie above the bar by any amount as below it by the same, so each of the "
          "{patterns} patterns of signs is as likely as the one measured, and p is the share of them whose mean "
          "lies at least as far from the bar as the measured mean; it assumes no normal model of the "
          "differences. All {claims} verdicts, the diagnostics (the control's own change, Adam carried over) "
          "with the main claims, are decided as one family by Holm's step-down correction, so that the chance "
          "of any wrong verdict among them is at most 5 %, whatever they share (seeds, models); the diagnostics "
          "are in it because the findings are read from them too. Each interval holds the bars that the test "
          "does not reject at the level its Holm step used: a claim holds when its interval lies wholly on the "
          "claimed side of the bar, does not hold when it lies wholly on the other side, and is not resolved at "
          "these seeds otherwise. The last column is the smallest distance between a claim's mean difference "
          "and its bar that its interval could clear, with the spread measured: nearer than that, a claim is "
          "not resolved at these seeds, whatever is true.")

MARGIN = N_("The margin of *recovers*, 0.02 (two answers in a hundred), is the lab's declared tolerance, fixed "
            "in the code before any run so that no run chooses it after seeing its gaps: non-inferiority needs "
            "one (without it, *recovers* could only mean no worse by any amount, which no number of seeds "
            "shows), and the GQA paper, which finds quality close to MHA's, names none.")

# What the seeds can resolve of *recovers*: where its interval has an end above the mean, and where
# none has (with K seeds no p-value is below 2 / 2^K).
RESOLVES = N_("With the spread measured, *recovers* after {steps} steps could hold only where control − mean lay "
              "below {items} (0.02 less the reach of its interval above its mean): where that is 0 or less, only "
              "a conversion that matches the control or beats it could be shown to recover at {seeds} seeds.")
UNRESOLVABLE = N_("At {seeds} seeds no claim can be resolved, whatever its differences: the exact test's smallest "
                  "p-value, 2 of the {patterns} patterns, is not below the level of any Holm step.")

# Said of the tables and bars: they describe; the verdicts decide.
DESCRIBED = N_("The tables and bars describe what was measured; a claim is decided only in the verdicts' table.")

SCOPE = N_("What these verdicts are about: a one-layer model (h = {heads}, head dim {head_dim}, d_model "
           "{d_model}) pre-trained for {pretrain} steps on two small synthetic tasks; the budgets, {shares} "
           "of the pre-training, are {budgets} steps of uptraining. The pre-trained recall model reaches "
           "{recall} held-out accuracy, {at} of {seeds} seeds at 0.95 or more (a description: no verdict "
           "decides it).")

# Each kind of claim: what is measured (a - b per seed), its bar and its side, in one template.
CLAIMS = {
    "drops": N_("g = {g}: converting by the mean costs accuracy (pre-trained − converted > 0)"),
    "recovers": N_("g = {g}, {steps} steps: the mean *recovers* (control − mean < 0.02)"),
    "mean beats first": N_("g = {g}, {steps} steps: mean beats first (mean − first > 0)"),
    "first beats random": N_("g = {g}, {steps} steps: first beats random (first − random > 0)"),
    "control": N_("{steps} steps: the control gains (control − frozen > 0)"),
    "restart": N_("g = {g}, {steps} steps: the mean gains from Adam carried over (carried − fresh > 0)"),
    "restart control": N_("{steps} steps: the control gains from Adam carried over (carried − fresh > 0)"),
    "same cache": N_("same cache, trained from scratch: {mqa} beats {other} (MQA − other > 0)"),
    "scratch": N_("g = {g}, {steps} steps: converting and uptraining beats training from scratch for "
                  "{total} steps (mean − scratch > 0)"),
}


# The equal-cache models' names and the note a result holds when one is left out, as
# gqa_tools.uptraining.experiment.same_cache_models writes them (in English, into the
# result): read back by their pattern and shown in the language in use.
_SAID_AGAIN = (
    (re.compile(r"(?P<h>\d+) heads sharing 1 K/V head \(MQA\)"), N_("{h} heads sharing 1 K/V head (MQA)")),
    (re.compile(r"1 head \(MHA, h = 1\)"), N_("1 head (MHA, h = 1)")),
    (re.compile(r"(?P<n>\d+) heads of dim (?P<d>\d+) \(MHA\)"), N_("{n} heads of dim {d} (MHA)")),
    (re.compile(r"no narrower heads: head dim (?P<d>\d+) cannot be split into 2 or more heads of a whole "
                r"dim of at least 2"),
     N_("no narrower heads: head dim {d} cannot be split into 2 or more heads of a whole dim of at least 2")))


def said(text: str) -> str:
    """An equal-cache model's name, or a result's note, in the language in use."""
    for pattern, template in _SAID_AGAIN:
        match = pattern.fullmatch(text)
        if match:
            return _(template).format(**match.groupdict())
    return _(text) if text else text


# The progress lines gqa_tools.uptraining.experiment writes (in English, as f-strings: its bytes
# key report-training.json), read back by their pattern and shown in the language in use.
PROGRESS = (N_("seed {seed}, {task}: pre-training"), N_("seed {seed}, {task}: the control, MHA trained on"),
            N_("seed {seed}, {task}: uptraining g = {g}"), N_("seed {seed}, {task}: same cache, from scratch"),
            N_("seed {seed}, {task}: done"), N_("seed {seed}, {task}: measured ({done} of {runs} runs)"),
            N_("{runs} runs (a seed and a task each) in {jobs} processes"))
_PROGRESS_AGAIN = tuple((re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>\\w+)", re.escape(template))), template)
                        for template in PROGRESS)


def progress_said(text: str) -> str:
    """A progress line of the experiment in the language in use (as it is, if no pattern matches)."""
    for pattern, template in _PROGRESS_AGAIN:
        match = pattern.fullmatch(text)
        if match:
            return _(template).format(**match.groupdict())
    return text


def claim_text(d: Any, result: Dict[str, Any]) -> str:
    """A decided claim's words: what is compared, with its bar and side."""
    c, r = d.claim, result["recipe"]
    kind = "restart control" if c.kind == "restart" and c.g == r["heads"] else c.kind
    rows = result["tasks"][c.task].get("same_cache") or [{"model": ""}]
    return _(CLAIMS[kind]).format(g=c.g, steps=c.steps, total=r["pretrain"] + c.steps, mqa=said(rows[0]["model"]),
                                  other=said(rows[c.g]["model"]) if kind == "same cache" else "")


def verdict_word(word: str) -> str:
    return {"holds": _("holds"), "does not hold": _("does not hold")}.get(word, _("not resolved"))


def end_text(x: float, bar: float) -> str:
    """An interval's end with 3 decimals, or as many more (up to 6) as it takes not to print as the bar,
    so the verdict can be read from the printed interval: -0.0003 against 0 is '-0.0003', not '-0.000'."""
    if x == bar:
        return f"{x:+.3f}"
    for places in range(3, 7):
        text = f"{x:+.{places}f}"
        if float(text) != bar:
            return text
    return text


def resolves_text(d: Any) -> str:
    """The smallest distance from the bar the claim could be resolved at ('0.087'), or '—': none at these seeds."""
    return "—" if d.resolves is None else f"{float(d.resolves):.3f}"


def verdict_rows(result: Dict[str, Any], decided: Sequence[Any]) -> List[List[str]]:
    """The verdicts' table: task, claim, mean difference, its interval at its level, the exact
    p-value, the verdict, and the smallest distance from the bar that the claim could be
    resolved at."""
    return [[d.claim.task, claim_text(d, result), f"{d.stats.mean:+.3f}",
             _("[{low}, {high}] at {level}").format(low=end_text(d.stats.low, float(d.claim.bar)),
                                                    high=end_text(d.stats.high, float(d.claim.bar)),
                                                    level=f"{100 * d.level:.3f} %"),
             f"{float(d.p):.2g}", verdict_word(d.verdict), resolves_text(d)] for d in decided]


def verdicts_header() -> List[str]:
    return [_("task"), _("claim"), _("difference"), _("interval (its level)"), "p", _("verdict"),
            _("smallest resolvable gap")]


def rule(result: Dict[str, Any], decided: Sequence[Any]) -> str:
    """RULE with its numbers: the sign patterns of these seeds and the count of verdicts."""
    return _(RULE).format(patterns=f"2^{len(result['seeds'])}", claims=len(decided))


def margin(result: Dict[str, Any], decided: Sequence[Any]) -> str:
    """MARGIN, then what these seeds can resolve of *recovers* after the last budget: for each task
    and g, the largest control − mean at which it could hold with the spread measured (0.02 less
    the interval's reach above the mean); or, where no interval of *recovers* has an end above
    its mean (too few seeds), that no claim can be resolved."""
    last, seeds = result["recipe"]["budgets"][-1], len(result["seeds"])
    gs = sorted({d.claim.g for d in decided if d.claim.kind == "recovers"})
    at_last = [d for d in decided if d.claim.kind == "recovers" and d.claim.steps == last]
    if all(d.high is None for d in at_last):
        return sentences([_(MARGIN), _(UNRESOLVABLE).format(seeds=seeds, patterns=f"2^{seeds}")])
    below = {(d.claim.task, d.claim.g): "—" if d.high is None else
             end_text(float(d.claim.bar - (d.high - d.mean)), 0.0) for d in at_last}
    items = _("; ").join(_("{offsets} on offsets and {recall} on recall at g = {g}").format(
        g=g, offsets=below[("offsets", g)], recall=below[("recall", g)]) for g in gs)
    return sentences([_(MARGIN), _(RESOLVES).format(steps=last, items=items, seeds=seeds)])


def scope(result: Dict[str, Any]) -> str:
    """Where the claims hold: the model, the tasks, what the budgets are in steps."""
    r, t, K = result["recipe"], result["tasks"]["recall"], len(result["seeds"])
    return _(SCOPE).format(heads=r["heads"], head_dim=r["head_dim"], d_model=r["d_model"],
                           pretrain=r["pretrain"], shares=_(", ").join(pct(b, r) for b in r["budgets"]),
                           budgets=_(", ").join(str(b) for b in r["budgets"]),
                           recall=f"{stats(t['pretrained']['correct'], t['answers']).mean:.2f}",
                           at=pretrained_at(t), seeds=K)


# ---------------------------------------------------------------------------
# The plain summary: what was found, a sentence each, each with its numbers.
# ---------------------------------------------------------------------------

def _mean(values: Sequence[Any]) -> str:
    return f"{float(sum(values) / len(values)):+.3f}"


def _by_task(decided: Sequence[Any], kind: str, g: int, steps: int, verdicts: bool = False) -> Dict[str, str]:
    """{task: the mean difference} of one kind of claim at g after steps; with verdicts, each
    followed by its verdict ('+0.011 (not resolved)')."""
    return {d.claim.task: _mean(d.claim.values) + (_(" ({verdict})").format(verdict=verdict_word(d.verdict))
                                                   if verdicts else "")
            for d in decided if d.claim.kind == kind and d.claim.g == g and d.claim.steps == steps}


def _count(decided: Sequence[Any], kinds: Sequence[str], word: str = "holds",
           steps: Any = None) -> Tuple[int, int]:
    """(how many claims of these kinds (after steps, where given) have the verdict word, how many
    there are)."""
    found = [d for d in decided if d.claim.kind in kinds and steps in (None, d.claim.steps)]
    return sum(d.verdict == word for d in found), len(found)


def _tally(decided: Sequence[Any], kinds: Sequence[str], steps: Any = None) -> Dict[str, int]:
    """{held, failed, open, claims}: the verdicts of these kinds of claim (after steps, where given)."""
    held, claims = _count(decided, kinds, "holds", steps)
    return dict(held=held, claims=claims, failed=_count(decided, kinds, "does not hold", steps)[0],
                open=_count(decided, kinds, "not resolved", steps)[0])


def _per_g(decided: Sequence[Any], kind: str, gs: Sequence[int], steps: int, verdicts: bool = False) -> str:
    """'+0.570 on offsets and +0.514 on recall at g = 1; ...' for one kind of claim."""
    return _("; ").join(_("{offsets} on offsets and {recall} on recall at g = {g}").format(
        g=g, **_by_task(decided, kind, g, steps, verdicts)) for g in gs)


def summary(result: Dict[str, Any], decided: Sequence[Any]) -> List[str]:
    """What the section found, in five or six plain sentences, each with its numbers."""
    r, K = result["recipe"], len(result["seeds"])
    first, last, h = r["budgets"][0], r["budgets"][-1], r["heads"]
    gs = sorted({d.claim.g for d in decided if d.claim.kind == "drops"})
    out = [_("Before any training, pre-trained minus converted by the mean is {items}.").format(
        items=_per_g(decided, "drops", gs, 0, verdicts=True))]
    at_last, at_first = _tally(decided, ["recovers"], last), _tally(decided, ["recovers"], first)
    out.append(_("After {steps} steps ({share} of the pre-training), control minus mean is {items}; of the "
                 "{claims} recovery verdicts after {steps} steps, *recovers* (within 0.02 of the control) holds "
                 "in {held}, does not hold in {failed} and is not resolved at these seeds in {open}; of the "
                 "{claims_first} after {first} steps, it holds in {held_first}, does not hold in {failed_first} "
                 "and is not resolved in {open_first}.").format(
                     steps=last, share=pct(last, r), first=first,
                     items=_per_g(decided, "recovers", gs, last, verdicts=True),
                     **at_last, **{k + "_first": v for k, v in at_first.items()}))
    mf, fr = _tally(decided, ["mean beats first"]), _tally(decided, ["first beats random"])
    out.append(_("As averages, as the GQA paper compares them, mean beats first holds in {mf} of {n_mf} verdicts, "
                 "does not hold in {mf_failed} and is not resolved at these seeds in {mf_open}; first beats "
                 "random holds in {fr} of {n_fr}, does not hold in {fr_failed} and is not resolved in {fr_open}; "
                 "after {steps} steps mean minus first is {items}.").format(
                     mf=mf["held"], n_mf=mf["claims"], mf_failed=mf["failed"], mf_open=mf["open"],
                     fr=fr["held"], n_fr=fr["claims"], fr_failed=fr["failed"], fr_open=fr["open"], steps=last,
                     items=_per_g(decided, "mean beats first", gs, last, verdicts=True)))
    if any(d.claim.kind == "scratch" for d in decided):
        k, n = _count(decided, ["scratch"])
        out.append(_("Against the smaller-cache model trained from scratch on the same batches for as many "
                     "steps in all ({total}), mean minus scratch is {items}; of {claims} verdicts, converting "
                     "and uptraining beats training from scratch in {held}, does not in {failed} and is not "
                     "resolved at these seeds in {open}.").format(
                         total=r["pretrain"] + last, items=_per_g(decided, "scratch", gs, last, verdicts=True),
                         held=k, claims=n, failed=_count(decided, ["scratch"], "does not hold")[0],
                         open=_count(decided, ["scratch"], "not resolved")[0]))
    if any(d.claim.kind == "restart" for d in decided):
        control = _by_task(decided, "control", h, first, verdicts=True)
        carried = _by_task(decided, "restart", h, first, verdicts=True)
        out.append(_("The control itself changes by {offsets} on offsets and {recall} on recall after {steps} "
                     "steps (control minus frozen); carrying pre-training's Adam over instead of a fresh one "
                     "changes it by {c_offsets} and {c_recall} more, and the mean conversion by "
                     "{items}.").format(steps=first, c_offsets=carried["offsets"], c_recall=carried["recall"],
                                         items=_per_g(decided, "restart", gs, first, verdicts=True), **control))
    out.append(ngettext("Of the section's {claims} verdicts, {held} hold, {failed} do not hold and {open} are "
                        "not resolved at {seeds} seed, at a family-wise error rate of 5 % (Holm).",
                        "Of the section's {claims} verdicts, {held} hold, {failed} do not hold and {open} are "
                        "not resolved at {seeds} seeds, at a family-wise error rate of 5 % (Holm).", K).format(
        claims=len(decided), held=sum(d.verdict == "holds" for d in decided),
        failed=sum(d.verdict == "does not hold" for d in decided),
        open=sum(d.verdict == "not resolved" for d in decided), seeds=K))
    return out


def same_cache_finding(result: Dict[str, Any], task: str) -> str:
    """The equal-cache comparison's sentence, a description in counts of seeds, and the MQA paper's claim."""
    t, K = result["tasks"][task], len(result["seeds"])
    same = t["same_cache"]
    k = same_cache_wins(t)
    alone = _("; ").join(_("{model} alone in {share}").format(model=said(x["model"]),
                                                             share=share_text(same_cache_wins(t, rows=[i]), K))
                         for i, x in enumerate(same) if i)
    return _("At one cache size ({cache} values per token and layer) and matched parameters, {model} beat every "
             "other row in {share} seeds (beat or tied them in {tied}/{seeds}; the verdicts' table decides it, "
             "row by row, as averages). It beat {alone}. The MQA paper (Shazeer 2019) reports that sharing one "
             "K/V head loses little against MHA and beats fewer or narrower heads at the same cache.").format(
        cache=same[0]["cache_per_token"], model=said(same[0]["model"]), share=share_text(k, K),
        tied=same_cache_wins(t, strict=False), seeds=K, alone=alone)

