"""gqa_tools.uptraining.claims: what the seeds say, read from run()'s result.

Each claim the lab decides is read here from the counts of correct answers:
an accuracy over the seeds (stats), a paired difference of two accuracies
(difference), or a count of the seeds in which something held (recovered,
ordering_held, same_cache_wins), with the bars it is decided against
(WITHIN).  The intervals and verdicts are gqa_tools.statistics';
the sentences that say them are gqa_tools.uptraining.sentences'.

Every accuracy is correct / answers, so a mean and a standard deviation are
computed from the counts as fractions and rounded once.

The section's verdicts (verdicts) are paired differences over the seeds,
each a Claim against its bar, tested by the exact two-sided sign-flip test
of its mean (gqa_tools.statistics.sign_flip_p) and decided together by
Holm's step-down at a family-wise error rate of 5 % (gqa_tools.statistics.holm):
each Decided holds the test's exact interval at the level its step used, so
its verdict is where that interval lies against the bar, and the smallest
distance from the bar at which, with the spread measured, the claim could
be resolved at that level.

Every claim of a run is in the one family, the diagnostics (the control's
own change, Adam carried over) with the main claims: the findings and
docs/uptraining.md are read from them too, and a wrong diagnostic misleads
as much as a wrong main claim.  Holm's bound holds whatever the claims
share (they share seeds and models).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

from gqa_tools.statistics import Stats, holm, interval, sign_flip_interval, sign_flip_p, verdict
from gqa_tools.uptraining.recipe import CONVERSIONS


# The margin of *recovers* (the paired gap control - mean lies wholly below
# it), and the family-wise error rate every run's verdicts are decided at.
# Non-inferiority needs a margin: without one, "recovers" could only mean
# "no worse by any amount", which no number of seeds can show.  0.02 of
# accuracy (two answers in a hundred) is the lab's declared tolerance, fixed
# here before any run so that no run chooses it after seeing its gaps; the
# GQA paper claims quality "close to" MHA and names no margin to borrow.
WITHIN = Fraction(1, 50)     # "recovers": no more than 0.02 below the control
FAMILY = 0.05                # the chance of any wrong verdict among a run's, at most (Holm)


def stats(correct: Sequence[int], answers: int) -> Stats:
    """An accuracy over the seeds: its interval clipped to [0, 1], where an accuracy lies."""
    return interval([Fraction(c, answers) for c in correct], (0.0, 1.0))


def difference(a: Sequence[int], b: Sequence[int], answers: int) -> Stats:
    """The paired difference a - b of two accuracies over the seeds."""
    return interval([Fraction(x - y, answers) for x, y in zip(a, b)])


def cell(t: dict, g: int, how: str, steps: int) -> List[int]:
    """Each seed's correct answers of a conversion at g after steps."""
    return next(x["correct"] for x in t["uptrain"]
                if x["g"] == g and x["conversion"] == how and x["steps"] == steps)


def baseline(t: dict, steps: int, control: bool = True) -> List[int]:
    """Each seed's correct answers of the control after steps (the pre-trained model at 0 steps,
    and always when control is False: the frozen baseline)."""
    if not control or steps == 0:
        return t["pretrained"]["correct"]
    return next(x["correct"] for x in t["control"] if x["steps"] == steps)


def recovered(t: dict, g: int, steps: int, how: str = "mean", control: bool = True) -> int:
    """In how many seeds the conversion came to no more than 0.02 below its baseline."""
    return sum(Fraction(b - c, t["answers"]) <= WITHIN
               for b, c in zip(baseline(t, steps, control), cell(t, g, how, steps)))


def ordering_held(t: dict, g: int, steps: int) -> int:
    """In how many seeds mean > first > random held (strictly) at g after steps."""
    acc = [cell(t, g, how, steps) for how in CONVERSIONS]
    return sum(m > f > rd for m, f, rd in zip(*acc))


def same_cache_wins(t: dict, strict: bool = True, rows: Optional[Sequence[int]] = None) -> int:
    """In how many seeds the first equal-cache row (MQA) beat (or, not strict, tied) the others
    (rows: their indices, every other row by default)."""
    others = [x["correct"] for i, x in enumerate(t["same_cache"]) if i and (rows is None or i in rows)]
    first = t["same_cache"][0]["correct"]
    return sum(all(c0 > c if strict else c0 >= c for c in col) for c0, *col in zip(first, *others))


def paper_budget(r: dict) -> int:
    """The budget nearest the GQA paper's 5 % of the pre-training steps."""
    return min(r["budgets"], key=lambda b: (abs(20 * b - r["pretrain"]), b))


def pretrained_at(t: dict, bar: float = 0.95) -> int:
    """In how many seeds the pre-trained model reached bar."""
    return sum(Fraction(c, t["answers"]) >= Fraction(bar) for c in t["pretrained"]["correct"])



def half_within(t: dict, g: int, budgets: Sequence[int]) -> Optional[int]:
    """The first budget at which half the seeds or more came within 0.02 of the control (None: none)."""
    seeds = len(t["pretrained"]["correct"])
    return next((s for s in budgets if 2 * recovered(t, g, s) >= seeds), None)


def scratch_cell(t: dict, g: int, budget: int) -> List[int]:
    """Each seed's correct answers of g trained from scratch for pretrain + budget steps."""
    return next(x["correct"] for x in t["scratch"] if x["g"] == g and x["budget"] == budget)


def carried_cell(t: dict, model: str, g: int, steps: int) -> List[int]:
    """Each seed's correct answers of the control or the mean at g, with pre-training's Adam carried over."""
    return next(x["correct"] for x in t["carried"]
                if x["model"] == model and x["g"] == g and x["steps"] == steps)


# ---------------------------------------------------------------------------
# The section's verdicts: paired differences against bars, Holm-corrected.
# ---------------------------------------------------------------------------

class Claim(NamedTuple):
    """A claim of one task: the paired difference a - b per seed, its bar and its side."""
    task: str
    kind: str           # a key of gqa_tools.uptraining.sentences.CLAIMS
    g: int
    steps: int
    values: list        # a - b per seed, as Fractions of the answers
    bar: Fraction
    above: bool         # the claim is that the mean lies above the bar (else below it)


class Decided(NamedTuple):
    """A claim decided: the mean and sd of its differences with the exact sign-flip interval at
    the level of its Holm step, its exact p-value and its verdict."""
    claim: Claim
    stats: Stats        # mean, sd, and the test's interval (clipped to [-1, 1], where a difference lies)
    level: float        # the interval's confidence, 1 - the step's alpha
    p: Fraction         # the exact two-sided p-value against the bar
    verdict: str        # 'holds', 'does not hold' or 'not resolved'
    low: Optional[Fraction]     # the interval's ends, exact (None: no bar on that side is rejected
    high: Optional[Fraction]    # at these seeds)

    @property
    def mean(self) -> Fraction:
        """The mean difference, exact."""
        return sum(self.claim.values, Fraction(0)) / len(self.claim.values)

    @property
    def resolves(self) -> Optional[Fraction]:
        """The smallest distance between the mean and the bar that the interval could clear, with
        these differences' spread: from the mean to the interval's end on the bar's side (None:
        that end is unbounded, so no distance would do at these seeds)."""
        near = self.low if self.mean >= self.claim.bar else self.high
        return None if near is None else abs(self.mean - near)


def task_claims(result: Dict[str, Any], task: str) -> List[Claim]:
    """One task's claims, in the order the section's table lists them."""
    r, t = result["recipe"], result["tasks"][task]
    n, budgets, h = t["answers"], tuple(r["budgets"]), r["heads"]
    gs = sorted({x["g"] for x in t["uptrain"]})

    def claim(kind: str, g: int, steps: int, a: Sequence[int], b: Sequence[int], bar: Fraction = Fraction(0),
              above: bool = True) -> Claim:
        return Claim(task, kind, g, steps, [Fraction(x - y, n) for x, y in zip(a, b)], bar, above)
    out = [claim("drops", g, 0, t["pretrained"]["correct"], cell(t, g, "mean", 0)) for g in gs]
    out += [claim("recovers", g, s, baseline(t, s), cell(t, g, "mean", s), WITHIN, False)
            for g in gs for s in budgets]
    out += [claim(kind, g, s, cell(t, g, a, s), cell(t, g, b, s))
            for g in gs for s in budgets for kind, a, b in (("mean beats first", "mean", "first"),
                                                            ("first beats random", "first", "random"))]
    out += [claim("control", h, s, baseline(t, s), t["pretrained"]["correct"]) for s in budgets]
    if t.get("carried"):
        out += [claim("restart", g, budgets[0], carried_cell(t, how, g, budgets[0]),
                      baseline(t, budgets[0]) if how == "control" else cell(t, g, "mean", budgets[0]))
                for how, g in [("control", h)] + [("mean", g) for g in gs]]
    if t.get("scratch"):
        out += [claim("scratch", g, s, cell(t, g, "mean", s), scratch_cell(t, g, s)) for g in gs for s in budgets]
    same = t.get("same_cache") or []                    # g: the row MQA is compared with
    out += [claim("same cache", i, r["pretrain"], same[0]["correct"], x["correct"])
            for i, x in enumerate(same) if i]
    return out


_DECIDED: Dict[tuple, List[Decided]] = {}      # the last verdicts, by what they were decided from


def verdicts(result: Dict[str, Any], tasks: Sequence[str]) -> List[Decided]:
    """Every claim of the tasks, each tested by the exact sign-flip test, decided together by
    Holm's step-down at FAMILY.  Decided once for a result's content and the tasks (the
    report's sections 8 and 9 both ask, and the exact intervals are most of a report's
    writing): a result with any number changed is decided anew."""
    key = (repr(result), tuple(tasks), FAMILY, WITHIN)
    if key not in _DECIDED:
        decided = _decided(result, tasks)
        _DECIDED.clear()
        _DECIDED[key] = decided
    return list(_DECIDED[key])


def _decided(result: Dict[str, Any], tasks: Sequence[str]) -> List[Decided]:
    found = [c for task in tasks for c in task_claims(result, task)]
    ps = [sign_flip_p(c.values, c.bar) for c in found]
    out = []
    for c, p, (_, alpha) in zip(found, ps, holm(ps, FAMILY)):
        low, high = sign_flip_interval(c.values, 1.0 - alpha)
        ends = (Fraction(-1) if low is None else low, Fraction(1) if high is None else high)
        word = verdict(ends[0], ends[1], c.bar)
        if not c.above and word != "not resolved":      # a claim that the mean lies below its bar
            word = "holds" if word == "does not hold" else "does not hold"
        plain = interval(c.values)
        out.append(Decided(c, Stats(plain.mean, plain.sd, float(ends[0]), float(ends[1]), plain.seeds),
                           1.0 - alpha, p, word, low, high))
    return out
