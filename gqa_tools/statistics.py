"""gqa_tools.statistics: intervals over a few seeds, with the math module alone.

The uptraining lab (gqa_tools.uptraining) and the report decide every claim
with these: a mean over the seeds with its t-interval, a share of seeds with
its Wilson interval, and a verdict by where an interval lies against a bar.

    function        what it returns
    ---------       ---------------
    interval        mean, sample sd and the 95 % t-interval of exact values (a Stats)
    wilson          the Wilson score interval of a share k / n
    verdict         'holds', 'does not hold' or 'not resolved': an interval against a bar
    share_verdict   the same for a share of seeds, by its Wilson interval
    p_value         the p-value of a mean against a bar: two one-sided t-tests, the smaller doubled
    holm            Holm's step-down: which of m p-values are rejected, and the level each step used
    t_quantile      Student's t quantile (t_cdf inverted by bisection)
    t_cdf           Student's t distribution function
    incomplete_beta the regularized incomplete beta function I_x(a, b)

>>> from fractions import Fraction
>>> s = interval([Fraction(3, 10), Fraction(1, 2), Fraction(4, 5)])
>>> round(s.mean, 3), round(s.sd, 3), round(s.low, 3), round(s.high, 3), s.seeds
(0.533, 0.252, -0.092, 1.158, 3)
>>> [round(end, 3) for end in wilson(13, 20)]
[0.433, 0.819]
>>> verdict(0.433, 0.819, 0.5), share_verdict(20, 20, 0.8), share_verdict(5, 20, 0.8)
('not resolved', 'holds', 'does not hold')
>>> [(rejected, round(level, 6)) for rejected, level in holm([0.01, 0.04, 0.03, 0.005])]
[(True, 0.016667), (False, 0.025), (False, 0.025), (True, 0.0125)]

Every mean and standard deviation is computed from exact values (Fractions)
and rounded once, so the printed digits cannot depend on how a Python sums
floats; the quantiles come from the math module's functions alone, the same
on every Python 3.9+.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from statistics import NormalDist
from typing import NamedTuple, Sequence, Tuple

Z95 = NormalDist().inv_cdf(0.975)       # the normal quantile of a two-sided 95 % interval


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function, by the modified Lentz method."""
    tiny = 1e-300

    def nonzero(v: float) -> float:
        return v if abs(v) > tiny else tiny
    c, d = 1.0, 1.0 / nonzero(1.0 - (a + b) * x / (a + 1.0))
    total = d
    for m in range(1, 500):
        for aa in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),            # even step
                   -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):   # odd step
            d = 1.0 / nonzero(1.0 + aa * d)
            c = nonzero(1.0 + aa / c)
            total *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return total


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):                # the fraction converges fast here
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=None)
def t_quantile(p: float, df: int) -> float:
    """The t with P(T <= t) = p, for 0.5 <= p < 1: t_cdf inverted by bisection."""
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, 2.0 * high
    for _ in range(200):
        mid = (low + high) / 2.0
        if mid in (low, high):
            break
        low, high = (mid, high) if t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2.0


def wilson(k: int, n: int, z: float = Z95) -> Tuple[float, float]:
    """The Wilson score interval of a share k / n (Wilson 1927): 95 % for the default z."""
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


class Stats(NamedTuple):
    """A mean over the seeds, their sample standard deviation, and its 95 % t-interval."""
    mean: float
    sd: float           # 0 for one seed
    low: float          # the interval; the mean itself for one seed
    high: float
    seeds: int


def interval(values: Sequence[Fraction], clip: Tuple[float, float] = (-math.inf, math.inf),
             level: float = 0.95) -> Stats:
    """The mean of exact values, their sd and the t-interval of the mean at level (95 % by
    default), clipped to clip."""
    k = len(values)
    mean = sum(values, Fraction(0)) / k
    var = sum((x - mean) ** 2 for x in values) / (k - 1) if k > 1 else Fraction(0)
    sd = math.sqrt(var)
    half = t_quantile(1.0 - (1.0 - level) / 2.0, k - 1) * sd / math.sqrt(k) if k > 1 else 0.0
    return Stats(float(mean), sd, max(clip[0], float(mean) - half), min(clip[1], float(mean) + half), k)


# ---------------------------------------------------------------------------
# Verdicts: a claim is decided by an interval, never by a count alone.  It
# holds when its interval lies wholly above the bar, does not hold when wholly
# below, and is not resolved at these seeds otherwise.
# ---------------------------------------------------------------------------

def verdict(low: float, high: float, bar: float) -> str:
    """'holds', 'does not hold' or 'not resolved', by where [low, high] lies against bar."""
    return "holds" if low > bar else "does not hold" if high < bar else "not resolved"


def share_verdict(k: int, n: int, bar: float) -> str:
    """A share of seeds against a bar, by its Wilson interval."""
    return verdict(*wilson(k, n), bar)



# ---------------------------------------------------------------------------
# Many verdicts at once.  A claim's p-value comes from two one-sided t-tests
# of its mean against its bar (is it above? is it below?): the smaller p,
# doubled, which is Student's two-sided p-value.  Holm's step-down (Holm 1979)
# then decides m claims together so that the chance of any wrong verdict is
# at most alpha: the i-th smallest p-value (from i = 1) is tested at
# alpha / (m - i + 1) until one fails, and every claim from there on is not
# resolved.  A claim's interval printed at the level its step used,
# 1 - alpha / (m - i + 1) (the stopping step's for those not reached),
# excludes the bar exactly when the step rejected it, so its verdict can be
# read from the interval alone.
# ---------------------------------------------------------------------------

def p_value(s: Stats, bar: float) -> float:
    """Student's two-sided p-value of s's mean against bar: twice P(T >= |t|), df = seeds - 1.

    The t-table's 97.5 % quantile at 19 degrees of freedom is 2.093024, so a
    t of 2.093024 over 20 seeds has p = 0.05, and 2.860935 (99.5 %) has 0.01:

    >>> [round(p_value(Stats(t, math.sqrt(20), 0.0, 0.0, 20), 0.0), 6) for t in (2.093024, -2.860935)]
    [0.05, 0.01]
    """
    if s.seeds < 2 or s.sd == 0.0:
        return 1.0 if s.mean == bar or s.seeds < 2 else 0.0
    df = s.seeds - 1
    t = (s.mean - bar) / (s.sd / math.sqrt(s.seeds))
    return incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def holm(p_values: Sequence[float], alpha: float = 0.05) -> list:
    """Holm's step-down at alpha: for each p-value, (rejected, the level its step used).

    The level is alpha / (m - i + 1) at the i-th smallest p-value, and the
    level of the step that failed for every p-value after it; rounded to 6
    places in the example only.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (p_values[i], i))
    out: list = [None] * m
    stopped = None
    for rank, i in enumerate(order):
        level = alpha / (m - rank) if stopped is None else stopped
        rejected = stopped is None and p_values[i] < level
        if not rejected and stopped is None:
            stopped = level
        out[i] = (rejected, level)
    return out
