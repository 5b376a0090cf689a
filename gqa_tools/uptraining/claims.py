"""gqa_tools.uptraining.claims: what the seeds say, read from run()'s result.

Each claim the lab decides is read here from the counts of correct answers:
an accuracy over the seeds (stats), a paired difference of two accuracies
(difference), or a count of the seeds in which something held (recovered,
ordering_held, same_cache_wins), with the bars it is decided against
(WITHIN, RECOVERS, MOST).  The intervals and verdicts are gqa_tools.statistics';
the sentences that say them are gqa_tools.uptraining.sentences'.

Every accuracy is correct / answers, so a mean and a standard deviation are
computed from the counts as fractions and rounded once.
"""

from __future__ import annotations

from fractions import Fraction
from typing import List, Optional, Sequence

from gqa_tools.statistics import Stats, interval
from gqa_tools.uptraining.recipe import CONVERSIONS


# The bars a claim is decided against (gqa_tools.statistics.verdict): it holds
# when its interval lies wholly above the bar, does not hold when wholly below,
# and is not resolved at these seeds otherwise.
WITHIN = Fraction(1, 50)     # "recovers": no more than 0.02 below the control ...
RECOVERS = 0.8               # ... in a share of the seeds whose interval lies above 0.8
MOST = 0.5                   # "in most seeds": a share whose interval lies above 0.5


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

