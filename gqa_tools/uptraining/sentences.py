"""gqa_tools.uptraining.sentences: the findings, each claim with its interval and verdict.

Each sentence is one template with named fields (gqa_grader.i18n), filled
with what gqa_tools.uptraining.claims read from a result and what
gqa_tools.statistics decides of it: a number as mean ± sd [95 % interval of
the mean], a count of seeds as k/K [95 % Wilson interval], a claim as
holding, not holding or not resolved (RULE says how, in a sentence the
lab's text and section 8 both print).  What it says is what was measured,
whether or not it is what the papers found.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from gqa_grader.i18n import N_, _, clauses, ngettext
from gqa_tools.statistics import Stats, share_verdict, verdict, wilson
from gqa_tools.uptraining.claims import (MOST, RECOVERS, baseline, cell, difference, ordering_held,
                                         recovered, same_cache_wins, stats)


# ---------------------------------------------------------------------------
# How a number is written: a mean over the seeds, a difference, a share of seeds.
# ---------------------------------------------------------------------------

def spread_text(s: Stats) -> str:
    """'0.812 ± 0.034 [0.796, 0.828]': mean ± sd [95 % interval of the mean]."""
    if s.seeds == 1:
        return _("{mean} (1 seed)").format(mean=f"{s.mean:.3f}")
    return f"{s.mean:.3f} ± {s.sd:.3f} [{s.low:.3f}, {s.high:.3f}]"


def signed_text(s: Stats) -> str:
    """A difference: '+0.012 ± 0.020 [+0.003, +0.021]'."""
    if s.seeds == 1:
        return _("{mean} (1 seed)").format(mean=f"{s.mean:+.3f}")
    return f"{s.mean:+.3f} ± {s.sd:.3f} [{s.low:+.3f}, {s.high:+.3f}]"


def share_text(k: int, n: int) -> str:
    """'13/20 [0.433, 0.819]': k of n seeds, with its 95 % Wilson interval."""
    low, high = wilson(k, n)
    return f"{k}/{n} [{low:.3f}, {high:.3f}]"


def verdict_text(word: str, seeds: int) -> str:
    """A verdict as the end of a sentence whose subject is the claim."""
    if word == "not resolved":
        return ngettext("is not resolved at {seeds} seed", "is not resolved at {seeds} seeds", seeds).format(
            seeds=seeds)
    return _("holds") if word == "holds" else _("does not hold") if word == "does not hold" else word


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

RULE = N_("A claim holds when its 95 % interval lies wholly above its bar, does not hold when it "
        "lies wholly below, and is not resolved at these seeds otherwise: *recovers* is the share "
        "of seeds in which a conversion ends no more than 0.02 below the control (the MHA model "
        "trained on the same batches for as many steps), against 0.8; *in most seeds* (the "
        "orderings, the equal-cache comparison) is a share against 0.5; *drops* is the paired "
        "difference, pre-trained minus converted, against 0. A share's interval is Wilson's; a "
        "mean's is the t-interval over the seeds.")


def recovery_sentence(result: Dict[str, Any], task: str, g: int) -> str:
    """At one g: the drop, then each budget's recovery against the control (and the frozen model)."""
    r, t = result["recipe"], result["tasks"][task]
    K, n = len(result["seeds"]), t["answers"]
    drop = difference(t["pretrained"]["correct"], cell(t, g, "mean", 0), n)
    parts = []
    for s in r["budgets"]:
        k = recovered(t, g, s)
        parts.append(_("after {steps} steps ({share} of the pre-training) in {seeds} seeds: "
                       "*recovers* {verdict}").format(steps=s, share=pct(s, r), seeds=share_text(k, K),
                                                      verdict=verdict_text(share_verdict(k, K, RECOVERS), K)))
    counts = [f"{recovered(t, g, s, control=False)}/{K}" for s in r["budgets"]]
    frozen = counts[0] if len(counts) == 1 else _("{items} and {last}").format(
        items=_(", ").join(counts[:-1]), last=counts[-1])
    return _("At g = {g}, converting by the mean takes held-out accuracy from {before} to {after}, "
             "a drop of {drop} (pre-trained minus converted): *drops* {verdict}. It came to no more "
             "than 0.02 below the control {budgets}. Against the frozen pre-trained model instead, "
             "those counts would be {frozen}.").format(
                 g=g, before=f"{stats(t['pretrained']['correct'], n).mean:.3f}",
                 after=f"{stats(cell(t, g, 'mean', 0), n).mean:.3f}", drop=spread_text(drop),
                 verdict=verdict_text(verdict(drop.low, drop.high, 0.0), K), budgets=clauses(parts),
                 frozen=frozen)


def ordering_sentence(result: Dict[str, Any], task: str, g: int) -> str:
    """At one g: in how many seeds the GQA paper's ordering held, before and after each budget."""
    r, t, K = result["recipe"], result["tasks"][task], len(result["seeds"])
    parts = []
    for s in (0,) + tuple(r["budgets"]):
        k = ordering_held(t, g, s)
        parts.append((_("before any training in {seeds} seeds ({verdict})") if s == 0 else
                      _("after {steps} steps in {seeds} seeds ({verdict})")).format(
                          steps=s, seeds=share_text(k, K), verdict=verdict_text(share_verdict(k, K, MOST), K)))
    return _("At g = {g}, the ordering mean > first > random (strictly), which the GQA paper (Ainslie "
             "et al. 2023) reports, held {when}; the verdicts are for *in most seeds*.").format(
                 g=g, when=_("{items} and {last}").format(items=_(", ").join(parts[:-1]), last=parts[-1]))


def control_sentence(result: Dict[str, Any], task: str) -> str:
    """What the extra steps did to the MHA model itself: the control against the frozen model."""
    r, t, K = result["recipe"], result["tasks"][task], len(result["seeds"])
    s = max(r["budgets"])
    gain = difference(baseline(t, s), t["pretrained"]["correct"], t["answers"])
    word = verdict(gain.low, gain.high, 0.0)
    said = {"holds": _("it improved"), "does not hold": _("it got worse"),
            "not resolved": _("no change is resolved")}
    return ngettext("The control, trained on for {steps} steps, changed by {change} (control minus "
                    "frozen): by its interval, {said} at {seeds} seed.",
                    "The control, trained on for {steps} steps, changed by {change} (control minus "
                    "frozen): by its interval, {said} at {seeds} seeds.", K).format(
                        steps=s, change=signed_text(gain), said=said[word], seeds=K)


def findings(result: Dict[str, Any], task: str) -> List[str]:
    """The sentences one task's uptraining supports, each claim with its interval and verdict."""
    t = result["tasks"][task]
    gs = sorted({x["g"] for x in t["uptrain"]})
    return ([control_sentence(result, task)] + [recovery_sentence(result, task, g) for g in gs]
            + [ordering_sentence(result, task, g) for g in gs])


def same_cache_finding(result: Dict[str, Any], task: str) -> str:
    """The equal-cache comparison's sentence, with its intervals, verdict and the MQA paper's claim."""
    t, K = result["tasks"][task], len(result["seeds"])
    same = t["same_cache"]
    k = same_cache_wins(t)
    alone = "; ".join(f"{x['model']} alone in {share_text(same_cache_wins(t, rows=[i]), K)}"
                      for i, x in enumerate(same) if i)
    return (f"At one cache size ({same[0]['cache_per_token']} values per token and layer) and matched "
            f"parameters, {same[0]['model']} beat every other row in {share_text(k, K)} seeds (beat or "
            f"tied them in {same_cache_wins(t, strict=False)}/{K}): that it beats them in most seeds "
            f"{verdict_text(share_verdict(k, K, MOST), K)}. It beat {alone}. The MQA paper (Shazeer "
            f"2019) reports that sharing one K/V head loses little against MHA and beats fewer or "
            f"narrower heads at the same cache.")

