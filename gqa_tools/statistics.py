"""gqa_tools.statistics: intervals and tests over a few seeds, with the standard library alone.

The uptraining lab (gqa_tools.uptraining) and the report decide every claim
with these: a mean over the seeds with its t-interval, a share of seeds with
its Wilson interval, and a verdict by where an interval lies against a bar.

    function        what it returns
    ---------       ---------------
    interval        mean, sample sd and the 95 % t-interval of exact values (a Stats)
    wilson          the Wilson score interval of a share k / n
    verdict         'holds', 'does not hold' or 'not resolved': an interval against a bar
    share_verdict   the same for a share of seeds, by its Wilson interval
    p_value         Student's two-sided p-value of a mean against a bar (the paired t-test)
    sign_flip_p     the exact two-sided p-value of a mean against a bar, by its 2^K sign patterns
    sign_flip_interval  the bars that test does not reject at a level: an exact interval
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

import array
import functools
import itertools
import math
import sys
from fractions import Fraction
from statistics import NormalDist
from typing import NamedTuple, Optional, Sequence, Tuple

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
    if all(type(v) is Fraction or type(v) is int for v in values):
        # the same exact mean and variance, in integers over the values' common denominator
        # (one Fraction each, not one for every step of the sums): with x = i / den,
        # sum((x - mean)^2) = (k sum(i^2) - sum(i)^2) / (k den^2)
        ints, den = _integers(values)
        total = sum(ints)
        mean = Fraction(total, k * den)
        var = Fraction(k * sum(i * i for i in ints) - total * total, k * (k - 1) * den * den) if k > 1 \
            else Fraction(0)
    else:
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
# Many verdicts at once.  A claim's p-value is that of a two-sided paired
# test of its mean against its bar: Student's t-test (p_value), or the exact
# sign-flip test (sign_flip_p) that the uptraining lab's verdicts use.  Holm's
# step-down (Holm 1979) then decides m claims together so that the chance of
# any wrong verdict is at most alpha, whatever the claims share: the i-th
# smallest p-value (from i = 1) is tested at alpha / (m - i + 1) until one
# fails, and every claim from there on is not resolved.  A claim's interval
# printed at the level its step used, 1 - alpha / (m - i + 1) (the stopping
# step's for those not reached), excludes the bar exactly when the step
# rejected it, so its verdict can be read from the interval alone.
# ---------------------------------------------------------------------------

def p_value(s: Stats, bar: float) -> float:
    """Student's two-sided p-value of s's mean against bar (the paired t-test when s holds
    differences): P(|T| >= |t|), df = seeds - 1.

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


# ---------------------------------------------------------------------------
# The exact paired test: sign flips.  Under the null hypothesis that each of
# K differences is as likely to lie above its bar as below it by the same
# amount (the two models of a seed exchangeable, for a bar of 0), every one
# of the 2^K patterns of signs of (difference - bar) is equally likely.  The
# two-sided p-value is the share of the patterns whose sum lies at least as
# far from 0 as the one measured (Fisher's randomization test of a mean): it
# assumes no normal model of the differences, and it is exact.  The patterns
# are counted, not enumerated: a subset M of the seeds flipped from + to -
# moves the sum by -2 x its sum over M, so counting patterns is counting
# subsets by their sum, a product of K polynomials (1 + z^|y_i|), held as one
# Python integer whose digits, in base 2^(K + 1), are the counts (none can
# carry: at most 2^K); a prefix of digits is summed by its remainder modulo
# 2^(K + 1) - 1, as a decimal number's digits by casting out nines.
#
# Inverting the test gives its interval (Hartigan 1969): the bars it does
# not reject at a level are those between two means of subsets of the
# differences, found by bisection on counts of subsets by size and sum (a
# polynomial per size, in base 2^32, 2^64 or 2^128, its digits read out once).  At
# 20 seeds a claim takes milliseconds; at 100, seconds.
# ---------------------------------------------------------------------------

def _integers(values: Sequence[Fraction]) -> Tuple[list, int]:
    """Exact values over their common denominator: (the numerators, the denominator)."""
    den = 1
    for v in values:
        den = den * v.denominator // math.gcd(den, v.denominator)
    return [v.numerator * (den // v.denominator) for v in values], den


def _digits_up_to(poly: int, digit: int, bits: int) -> int:
    """The sum of poly's base-2^bits digits 0 to digit (each count below 2^bits - 1, their sum too)."""
    if digit < 0:
        return 0
    low = poly & ((1 << (bits * (digit + 1))) - 1) if poly.bit_length() > bits * (digit + 1) else poly
    return low % ((1 << bits) - 1)


def sign_flip_p(values: Sequence[Fraction], bar: Fraction) -> Fraction:
    """The exact two-sided sign-flip p-value of the mean of exact values against bar: the
    share of the 2^K sign patterns of (value - bar) whose sum is at least as far from 0 as
    the measured sum, which is twice the smaller one-sided share (the patterns' sums lie
    symmetrically about 0), at most 1.

    With 3 values every pattern is one of 8; 1, 2 and 3 above 0 are beaten or matched only
    by all three positive (+6) or all three negative (-6), so p = 2/8:

    >>> sign_flip_p([Fraction(1), Fraction(2), Fraction(3)], Fraction(0))
    Fraction(1, 4)
    """
    k = len(values)
    ys, _ = _integers([Fraction(v) - Fraction(bar) for v in values])
    signs = {y > 0 for y in ys if y}
    if len(signs) < 2:      # every difference on one side (or at the bar): only the measured pattern and
        flat = ys.count(0)  # its mirror reach as far, each once for every sign of those at the bar
        return Fraction(1) if not signs else min(Fraction(1), Fraction(2 << flat, 1 << k))
    bits = k + 1
    poly = 1                            # the subsets M of the seeds, by NEG + their sum of y over M
    for y in ys:
        poly += poly << (bits * abs(y))
    neg = -sum(y for y in ys if y < 0)
    at_most = _digits_up_to(poly, neg, bits)                # sum over M <= 0: as far above as measured
    at_least = (1 << k) - _digits_up_to(poly, neg - 1, bits)    # sum over M >= 0: as far below
    return min(Fraction(1), Fraction(2 * min(at_most, at_least), 1 << k))


# An array's type code of 4 bytes ("I" on every platform Python runs on), for digits of 32 bits.
_WORD32 = next((code for code in "IL" if array.array(code).itemsize == 4), None)


def _digits(poly: int, count: int, bits: int) -> list:
    """The first count digits of poly in base 2^bits (32, 64 or 128), lowest first."""
    found = array.array(_WORD32 if bits == 32 else "Q")
    found.frombytes(poly.to_bytes(bits // 8 * count, "little"))
    if sys.byteorder == "big":
        found.byteswap()
    return found.tolist() if bits <= 64 else [low | high << 64 for low, high in zip(found[0::2], found[1::2])]


class _Subsets:
    """The nonempty subsets of K integers, counted by size and by sum: for each size m, the
    running count of the subsets of m whose sum is at most m x lowest + e, for each e (built
    as a polynomial per size, an integer in base 2^32, 2^64 or 2^128, its digits read out once).
    Only the sizes up to K / 2 are built: a subset of m > K / 2 is the complement of one of
    K - m, whose sum is the whole sum less its own (the largest polynomials, most of the
    work, never built)."""

    def __init__(self, ints: Sequence[int]) -> None:
        self.k, self.lowest, self.highest = len(ints), min(ints), max(ints)
        self.half = self.k // 2
        self.excess = sum(a - self.lowest for a in ints)     # every integer's sum, less K x lowest
        # bits a digit: every count is at most 2^K (below 32 seeds, 32 bits, half the work of 64)
        bits = 32 if self.k < 32 and _WORD32 else 64 if self.k < 64 else 128
        polys = [1] + [0] * self.half
        for i, a in enumerate(ints):
            shift = bits * (a - self.lowest)
            for m in range(min(i + 1, self.half), 0, -1):
                polys[m] += polys[m - 1] << shift
        self.running = [[1]] + [list(itertools.accumulate(_digits(polys[m], m * (self.highest - self.lowest) + 1,
                                                                   bits)))
                                for m in range(1, self.half + 1)]

    def _up_to(self, m: int, e: int) -> int:
        """How many subsets of m have a sum of at most m x lowest + e (past K / 2, their
        complements, of K - m, with a sum of at least the rest)."""
        if m > self.half:
            return self._all(m) - self._up_to(self.k - m, self.excess - e - 1)
        row = self.running[m]
        return 0 if e < 0 else row[min(e, len(row) - 1)]

    def _all(self, m: int) -> int:
        """How many subsets of m there are (K choose m)."""
        return self.running[min(m, self.k - m)][-1]

    def count(self, x: int, shift: int, lower: bool) -> int:
        """How many nonempty subsets have a mean of at most (lower) or at least x / 2^shift."""
        above = x - (self.lowest << shift)          # (x / 2^shift - lowest), times 2^shift
        k, half, running, found = self.k, self.half, self.running, 0
        for m in range(1, k + 1):                   # _up_to and _all written out: the bisection's loop
            e = (m * above) >> shift if lower else -((-m * above) >> shift) - 1
            row, e = (running[m], e) if m <= half else (running[k - m], self.excess - e - 1)
            below = 0 if e < 0 else row[e] if e < len(row) else row[-1]
            at_most = below if m <= half else row[-1] - below       # row[-1]: the subsets of m
            found += at_most if lower else row[-1] - at_most
        return found

    def end(self, need: int, lower: bool) -> Fraction:
        """The smallest x with at least need subset means at most x (lower), or the largest with
        need at least x: a subset's mean, found by bisection on multiples of 2^-shift until one
        fraction of denominator at most K is left between its ends (two such differ by 1/K^2
        or more), then that fraction."""
        shift = (self.k * self.k).bit_length()          # 2^-shift < 1/K^2
        # inside: need subsets or more; outside: fewer
        inside, outside = (self.highest << shift, (self.lowest - 1) << shift) if lower else \
            (self.lowest << shift, (self.highest + 1) << shift)
        while abs(inside - outside) > 1:
            middle = (inside + outside) // 2
            if self.count(middle, shift, lower) >= need:
                inside = middle
            else:
                outside = middle
        out = Fraction(outside, 1 << shift)
        for m in range(1, self.k + 1):      # the one fraction of denominator <= K between them
            x = Fraction(math.floor(m * out) + 1, m) if lower else Fraction(math.ceil(m * out) - 1, m)
            if (x <= Fraction(inside, 1 << shift)) if lower else (x >= Fraction(inside, 1 << shift)):
                return x
        raise AssertionError("cannot happen: no subset mean between the ends of the bisection")


def sign_flip_interval(values: Sequence[Fraction], level: float) -> Tuple[Optional[Fraction], Optional[Fraction]]:
    """The bars that the exact two-sided sign-flip test (sign_flip_p) does not reject at
    1 - level: (low, high), exact; None for an unbounded end, where no bar on that side is
    rejected (with K seeds no p-value is below 2 / 2^K, so at a level of 1 - 2 / 2^K or more
    none is).  A bar is rejected (p < 1 - level) exactly when it lies outside [low, high].

    >>> sign_flip_interval([Fraction(1), Fraction(2), Fraction(3)], 0.7)    # p < 0.3: at most 1 of 8 as far
    (Fraction(1, 1), Fraction(3, 1))
    """
    k = len(values)
    ints, den = _integers([Fraction(v) for v in values])
    need = math.ceil(Fraction(1.0 - level) * (1 << (k - 1))) - 1      # subsets besides the empty one
    if need <= 0:
        return None, None
    subsets = _Subsets(ints)
    return (Fraction(subsets.end(need, True), den), Fraction(subsets.end(need, False), den))
