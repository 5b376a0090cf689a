"""gqa: grouped-query attention, counted by hand.

The lab, in order: one function per step (python grader.py checks them so)
    1  valid_g(h)                 the valid g for h: its divisors
    2  method_name(h, g)          "MHA", "GQA" or "MQA"
    3  kv_head(i, h, g)           which key/value head query head i reads
    4  group_heads(h, g)          the query heads of each group
    5  fold_kv_mean(kv, g)        h heads -> g heads, each its group's mean
    6  repeat_kv(kv, h)           g heads -> h heads (repeat-interleave)
    7  single_head_attention      softmax(q k^T / sqrt(d)) v for one head
    8  attention(q, k, v, g)      MHA, GQA and MQA from one function
    9  grouped_attention          what real models run: k, v have g heads
   10  init_weights               random MHA weights for one layer
   11  fold_weights               the same weights with g K/V heads, by mean
   12  prepare_weights            weights checked, folded and transposed, once
   13  layer(x, weights, g)       one attention layer on MHA weights
   14  output_difference          max abs, relative L2 and cosine
   15  kv_cache_elements          numbers held by a KV cache (closed form)
   16  attention_multiplies       multiplications per term, one attention layer
   17  block_multiplies           the same for a whole block, MLP included
   18  cache_table                the cache for every valid g, ratios to MHA
   19  multiplies_table           the multiplications for every valid g
   20  count_multiplies           tally what the code multiplies and reads
   21  KVCache                    one layer's cache, stored in array('d')
   22  decode_step                one token of incremental decoding
   23  decode_traffic             cache and weight reads per decoded sequence
   24  grouped_attention_backward the gradients of q, k and v
   25  layer_backward             the gradients of a layer's x and weights
Step 20 goes back to steps 7, 9, 13 and 22: their arithmetic keeps the tally.

h query heads share g key/value heads, g dividing h: each contiguous block of
h // g query heads reads one.  g = h is MHA, g = 1 MQA, in between GQA.  g
shrinks the KV cache (2 x layers x g x length x d numbers) and what decoding
reads; the attention body (h x n x m x d multiplications for the scores, the
same for the weighted sum) has no g in it.

Shapes: nested lists of floats, a matrix a list of rows, head axis first.
    h        query heads              q        [h][n][d]
    g        key/value heads (groups) k, v     [g][m][d], [g][m][d_v]
    h // g   query heads per group    x, y     [n][d_model]
    n        queries (positions)      w_q      [h][d_model][d]
    m        keys (cache length)      w_k, w_v [h or g][d_model][d]
    d        head dim                 w_o      [h][d][d_model]

The results with named fields are NamedTuples (from gqa import Weights).

Rules every step keeps: lesson steps grade values, MHA to the last bit, new
lists and GQAError for a g not dividing h; steps 26 to 28 grade the rest.
- GQAError's message names the function, the rule and the numbers given.  A
  size that is not an int (or is a bool), data that is not nested lists (or
  tuples, or array('d') rows) of ints and floats, or a causal flag that is
  not a bool raises TypeError, naming the function: valid_g(8.0) does.
- Arguments are never changed; results are new lists (repeat_kv may share).
- Finite input never overflows (the mean fold of two 1e308 is 1e308), and
  NaN is not an error: it propagates.
"""

from __future__ import annotations

import math
import sys
from array import array
from contextlib import contextmanager
from itertools import chain
from operator import add, eq, mul
from random import Random
from typing import Iterable, Iterator, List, NamedTuple, Optional, Sequence, Union

__all__ = ["GQAError", "valid_g", "method_name", "kv_head", "group_heads", "fold_kv_mean",
    "repeat_kv", "single_head_attention", "attention", "grouped_attention", "init_weights",
    "fold_weights", "prepare_weights", "layer", "output_difference", "kv_cache_elements",
    "attention_multiplies", "block_multiplies", "cache_table", "multiplies_table", "Tally",
    "count_multiplies", "KVCache", "decode_step", "decode_traffic", "grouped_attention_backward",
    "layer_backward"]


# One naming rule: a step checks its input at the door (the file's end) and runs its kernel, _STEP
# (kv_head: _kv_head; layer_backward: _layer_forward, _layer_backward); helpers say what they do.
class GQAError(ValueError):
    """A size or shape that breaks the rules of grouped-query attention."""


# ---------------------------------------------------------------------------
# Part 1. Group the query heads: h // g contiguous query heads per group.
# Steps 1-4: valid_g, method_name, kv_head, group_heads.
# ---------------------------------------------------------------------------


# Step 1. valid_g -------------------------------------------------------------
def valid_g(h: int) -> list[int]:
    """Return every valid number of key/value heads for h query heads.

    These are the divisors of h, in increasing order.  Refuses (GQAError, naming
    the numbers at fault) h < 1: valid_g(0) raises.  h must be an int
    (TypeError otherwise).

    >>> valid_g(8)
    [1, 2, 4, 8]
    """
    _check_int("valid_g", "h", h, low=1)
    small = [g for g in range(1, math.isqrt(h) + 1) if h % g == 0]    # the divisors <= sqrt(h)
    return small + [h // g for g in reversed(small) if g * g != h]      # and their partners


# Step 2. method_name ---------------------------------------------------------
def method_name(h: int, g: int) -> str:
    """Return "MHA" when g = h, "MQA" when g = 1 < h, otherwise "GQA".

    Refuses (GQAError, naming the numbers at fault) a g not in
    valid_g(h), or h < 1: method_name(8, 3) names g=3 and h=8.

    >>> [method_name(8, g) for g in valid_g(8)]
    ['MQA', 'GQA', 'GQA', 'MHA']
    """
    _group_size("method_name", h, g)
    return _method_name(h, g)


def _method_name(h: int, g: int) -> str:
    """method_name for checked h and g."""
    return "MHA" if g == h else "MQA" if g == 1 else "GQA"


# Step 3. kv_head: the one line that makes GQA --------------------------------
# The whole of grouped-query attention is this one integer division.  It is
# llama2.c's `h / kv_mul`, HF transformers' `repeat_kv` and PyTorch's
# `scaled_dot_product_attention(enable_gqa=True)`: contiguous blocks of
# h // g query heads, not strided (i % g).  Every kernel of the solution runs
# this one line too, as a private _kv_head that skips the checks (its input is
# checked already), to find the key/value head of a query head.
def kv_head(query_head: int, h: int, g: int) -> int:
    """Return the key/value head that query head `query_head` reads.

    Query head i belongs to group i // (h // g).  Refuses (GQAError, naming the
    numbers at fault) a g not in valid_g(h), and a query_head outside 0..h-1.

    >>> [kv_head(i, h=8, g=2) for i in range(8)]
    [0, 0, 0, 0, 1, 1, 1, 1]
    """
    _group_size("kv_head", h, g)
    _check_int("kv_head", "query_head", query_head)
    if query_head >= h:
        raise GQAError(f"kv_head: query_head must be in 0..h-1 for h={h}; "
                       f"got query_head={query_head}")
    return _kv_head(query_head, h, g)


def _kv_head(query_head: int, h: int, g: int) -> int:
    """kv_head for checked input: the line every kernel runs."""
    group = h // g                              # query heads per group: llama2.c's kv_mul
    return query_head // group


# Step 4. group_heads ---------------------------------------------------------
def group_heads(h: int, g: int) -> list[list[int]]:
    """Return the query heads of each of the g groups: those with one kv_head.

    Refuses (GQAError, naming the numbers at fault) a g not in
    valid_g(h), and more than MAX_ALLOCATION query heads.

    >>> group_heads(8, 2)
    [[0, 1, 2, 3], [4, 5, 6, 7]]
    """
    group = _group_size("group_heads", h, g)
    _check_heads_made("group_heads", h)
    return [list(range(j * group, (j + 1) * group)) for j in range(g)]    # [g][h // g]


# ---------------------------------------------------------------------------
# Part 2. Fold, repeat, attend: MHA, GQA and MQA from one function.
# Steps 5-9: fold_kv_mean, repeat_kv, single_head_attention, attention,
# grouped_attention.
# ---------------------------------------------------------------------------

Matrix = List[List[float]]      # [rows][cols]
Heads = List[Matrix]            # [heads][rows][cols]


# Step 5. fold_kv_mean: each group's key/value heads folded into one, by mean
# The GQA paper (Ainslie et al. 2023, section 2.1) converts a trained MHA
# checkpoint by mean-pooling each group's K and V projection heads, then
# continues training for a small fraction of the original steps.  Mean-pooling
# beat keeping the first head of each group, which beat random initialisation.
def fold_kv_mean(kv: Sequence[Matrix], g: int) -> Heads:
    """Return g heads, each the element-wise mean of its group of heads.

    kv [h][rows][cols] (projected keys or values, or per-head weights) ->
    [g][rows][cols].  With g = h it holds values equal to the input's.  Refuses
    (GQAError, naming the numbers at fault) kv with no heads, ragged rows or
    heads of different shapes, and a g that does not divide h.

    >>> fold_kv_mean([[[1.0]], [[3.0]], [[5.0]], [[9.0]]], g=2)
    [[[2.0]], [[7.0]]]
    """
    h, _, _ = _check_heads("fold_kv_mean", "kv", kv)
    _group_size("fold_kv_mean", h, g)
    return _fold_kv_mean(kv, g)


def _fold_kv_mean(kv: Sequence[Matrix], g: int) -> Heads:
    """fold_kv_mean for checked input."""
    h = len(kv)
    group = h // g                                                # heads per group
    folded = []
    for j in range(g):
        members = kv[j * group:(j + 1) * group]       # [h//g][rows][cols]: group_heads(h, g)[j]
        folded.append([[_mean(vals, group) for vals in zip(*rows)]
                       for rows in zip(*members)])               # [rows][cols]
    return folded                                                 # [g][rows][cols]


def _mean(vals: tuple, n: int) -> float:
    """The mean of n numbers; finite for finite numbers, even when their sum is not."""
    mean = sum(vals) / n
    if (mean == _INF or mean == -_INF) and all(abs(x) <= _FLOAT_MAX for x in vals):
        return sum(x / n for x in vals)                   # each scaled first: no overflow
    return mean


# Step 6. repeat_kv: repeat the g key/value heads back out to h ---------------
def repeat_kv(kv: Sequence[Matrix], h: int) -> Heads:
    """Return h heads: head j is head kv_head(j, h, g) of the g input heads.

    The equivalent of torch.repeat_interleave(kv, h // g, dim=0) and of HF
    transformers' repeat_kv.  Sharing is allowed, not promised: this one copies
    nothing (a group's heads are one list object, as torch's expand() shares
    memory), so treat the result as read-only.  Refuses (GQAError, naming the
    numbers at fault) kv with no heads or heads of different shapes, a g that
    does not divide h, and more than MAX_ALLOCATION heads.

    >>> repeat_kv([[[1.0]], [[2.0]]], h=4)
    [[[1.0]], [[1.0]], [[2.0]], [[2.0]]]
    """
    g, _, _ = _check_heads("repeat_kv", "kv", kv)
    _group_size("repeat_kv", h, g)
    _check_heads_made("repeat_kv", h)
    return _repeat_kv(kv, h)


def _repeat_kv(kv: Sequence[Matrix], h: int) -> Heads:
    """repeat_kv for checked input."""
    g = len(kv)
    return [kv[_kv_head(i, h, g)] for i in range(h)]             # [h][rows][cols]


# Step 7. single_head_attention, and the kernel of every multiplication ---------
# The one kernel.  Every multiplication of the lab is a dot product of two
# rows of equal length, and every one is done here: _dots, rows [m][d] and
# x [d] -> [row . x for each row], [m]; and _mm, the same for every row of a
# matrix, a [n][k] @ b [k][p] with b given by its columns [p][k] -> [n][p].
# Python 3.12's math.sumprod is one C loop and correctly rounded, 2 to 3
# times faster than sum(map(mul, ...)), which is the fastest dot product of
# Python 3.9 to 3.11.  Both orders of arguments match, so _mm(a, b_cols)[i]
# is _dots(b_cols, a[i]) to the last bit.
if hasattr(math, "sumprod"):
    def _dots(rows: Sequence, x: Sequence) -> List[float]:
        """[row . x for row in rows]: rows [m][d], x [d] -> [m]."""
        sumprod = math.sumprod
        return [sumprod(row, x) for row in rows]

    def _mm(a: Sequence, b_cols: Sequence) -> Matrix:
        """a [n][k] @ b [k][p], b given by its columns [p][k] -> [n][p]."""
        sumprod = math.sumprod
        return [[sumprod(col, row) for col in b_cols] for row in a]
else:                                                    # Python 3.9 to 3.11
    def _dots(rows: Sequence, x: Sequence) -> List[float]:
        """[row . x for row in rows]: rows [m][d], x [d] -> [m]."""
        return [sum(map(mul, row, x)) for row in rows]

    def _mm(a: Sequence, b_cols: Sequence) -> Matrix:
        """a [n][k] @ b [k][p], b given by its columns [p][k] -> [n][p]."""
        return [[sum(map(mul, col, row)) for col in b_cols] for row in a]


# The multiplications performed are tallied here, by the code that performs
# them, when count_multiplies() is active (step 20, count_multiplies).
_tally = None                   # a Tally while count_multiplies() is active


def _softmax(q: Sequence, keys: Sequence, causal: bool) -> list:
    """The lab's one softmax: each query's weights over the keys it sees, for checked input.

    q [n][d], keys [m][d] -> [n] of (e [seen], z): query i's weights are
    p = e / z, softmax(q_i keys^T / sqrt(d)) over the seen keys (all m, or
    with causal=True the first i + 1 + m - n).  Kept as (e, z) so that the
    backward pass can reuse them.
    """
    n, m = len(q), len(keys)
    scale, exp = 1.0 / math.sqrt(len(q[0])), math.exp
    rows = []
    for i, qi in enumerate(q):
        seen = i + 1 + m - n if causal else m              # query i sees keys 0..seen-1
        s = _dots(keys[:seen] if seen < m else keys, qi)   # [seen], scores before the scale
        top = max(s)                                       # subtracted: exp cannot overflow
        if top == _INF and all(map(eq, s, s)):             # a score beyond the float range (and
            s, top = [0.0 if x == _INF else -_INF for x in s], 0.0     # no NaN): it takes all the weight
        e = [exp((x - top) * scale) for x in s]            # [seen], softmax numerators
        rows.append((e, sum(e)))
        if _tally is not None:
            _tally.scores += seen * len(qi)
    return rows                                            # [n] of (e, z)


def _single_head_attention(q: Sequence, keys: Sequence, v_cols: Sequence, causal: bool,
            saved: Optional[list] = None) -> Matrix:
    """softmax(q keys^T / sqrt(d)) V for checked input; V given by columns.

    q [n][d], keys [m][d], v_cols [d_v][m] -> [n][d_v].  Rows and columns
    may be lists, tuples or memoryviews: they are only read.  When saved is
    a list, each query's softmax (e, z) is appended to it, p = e / z, for
    the backward pass to reuse.
    """
    m = len(keys)
    out = []
    for e, z in _softmax(q, keys, causal):
        seen = len(e)                                      # the keys the query saw
        cols = v_cols if seen == m else [c[:seen] for c in v_cols]    # [d_v][seen]
        out.append([x / z for x in _dots(cols, e)])       # [d_v]
        if saved is not None:
            saved.append((e, z))                           # the softmax, p = e / z
        if _tally is not None:
            _tally.weighted_sum += seen * len(v_cols)
    return out                                             # [n][d_v]


def single_head_attention(q: Sequence, k: Sequence, v: Sequence, *,
                          causal: bool = False) -> Matrix:
    """Return softmax(q k^T / sqrt(d)) v for one head.

    q [n][d], k [m][d], v [m][d_v] -> [n][d_v].  The softmax subtracts each
    row's maximum, so large finite scores do not overflow, and a score that
    is infinite (or beyond the float range) takes all the weight.  A NaN
    score (inf x 0 is one) makes its query's row NaN.  With causal=True
    the queries are the last n of the m positions: query i sees key j when
    j <= i + (m - n).  A single query (a decode step) sees every key.  Refuses
    (GQAError, naming the numbers at fault) no keys, q and k of different head
    dims, k and v of different lengths, ragged rows, and causal=True with more
    queries than keys (n > m).

    >>> single_head_attention([[1.0, 0.0]], [[1.0, 0.0], [1.0, 0.0]], [[2.0], [4.0]])
    [[3.0]]
    >>> single_head_attention([[0.0], [0.0]], [[0.0], [0.0]], [[2.0], [4.0]], causal=True)
    [[2.0], [3.0]]
    """
    _check_qkv("single_head_attention", q, k, v, causal)
    if not q:
        return []
    return _single_head_attention(q, k, list(zip(*v)), causal)      # v^T: [d_v][m]


# Step 8. attention: fold, repeat, attend -------------------------------------
def attention(q: Sequence[Matrix], k: Sequence[Matrix], v: Sequence[Matrix], g: int, *,
              causal: bool = False) -> Heads:
    """Return attention with g key/value heads, from h-head (MHA) k and v.

    q [h][n][d], k [h][m][d], v [h][m][d_v] -> [h][n][d_v].  Folds k and v to g
    heads by their group mean (fold_kv_mean), repeats them back out to h heads
    (repeat_kv) and runs single_head_attention per head.  With g = h this is
    MHA to the last bit; with g < h the output changes.  Refuses (GQAError,
    naming the numbers at fault) k and v without h heads, heads of different
    shapes, and a g that does not divide h.

    >>> q = [[[1.0]], [[2.0]]]
    >>> k = [[[0.0], [1.0]], [[1.0], [0.0]]]
    >>> v = [[[1.0], [3.0]], [[5.0], [7.0]]]
    >>> attention(q, k, v, g=1)                  # both heads read K = [[.5], [.5]]
    [[[4.0]], [[4.0]]]
    """
    _check_multihead("attention", q, k, v, causal)
    h = len(q)
    if len(k) != h:
        raise GQAError(f"attention: k and v must have h={h} heads (the MHA "
                       f"projections, folded here to g); got {len(k)}")
    _group_size("attention", h, g)
    k_rep = _repeat_kv(_fold_kv_mean(k, g), h)              # [h][m][d]
    v_rep = _repeat_kv(_fold_kv_mean(v, g), h)              # [h][m][d_v]
    return [_single_head_attention(q[i], k_rep[i], list(zip(*v_rep[i])), causal)
            for i in range(h)]                              # [h][n][d_v]


# Step 9. grouped_attention: what real models run, k and v with g heads -------
def grouped_attention(q: Sequence[Matrix], k: Sequence[Matrix], v: Sequence[Matrix], *,
                      causal: bool = False) -> Heads:
    """Return attention where h query heads share g key/value heads.

    q [h][n][d], k [g][m][d], v [g][m][d_v] -> [h][n][d_v], g dividing h. Query
    head i reads key/value head kv_head(i, h, g) by index: K and V are never
    repeated.  Equal bit for bit to repeat_kv followed by
    single_head_attention.  Refuses (GQAError, naming the numbers at fault) k
    and v of different head counts or shapes, and a g that does not divide h.

    >>> q = [[[1.0]], [[2.0]]]
    >>> grouped_attention(q, k=[[[0.0], [0.0]]], v=[[[1.0], [3.0]]])
    [[[2.0]], [[2.0]]]
    """
    _check_multihead("grouped_attention", q, k, v, causal)
    h, g = len(q), len(k)
    _check_divides("grouped_attention", h, g)
    if not q[0]:
        return [[] for _ in range(h)]
    # V is transposed once per key/value head, [d_v][m]: each output value is one dot product.
    return _grouped_attention(q, k, [list(zip(*vj)) for vj in v], causal)


def _grouped_attention(q: Sequence, k: Sequence, v_cols: Sequence, causal: bool,
             saved: Optional[list] = None) -> Heads:
    """grouped_attention for checked input, v given by columns [g][d_v][m].

    When saved is a list, each query head's softmax rows are appended to it
    as one list (see _single_head_attention): [h][n] of (e, z).
    """
    h, g = len(q), len(k)
    out = []
    for i in range(h):
        j = _kv_head(i, h, g)                               # the key/value head query head i reads
        rows = None if saved is None else []
        out.append(_single_head_attention(q[i], k[j], v_cols[j], causal, rows))
        if saved is not None:
            saved.append(rows)
    return out                                              # [h][n][d_v]


# ---------------------------------------------------------------------------
# Part 3. One attention layer on MHA weights, run with g key/value heads.
# Steps 10-14: init_weights, fold_weights, prepare_weights, layer,
# output_difference.
# ---------------------------------------------------------------------------


# Step 10. init_weights -------------------------------------------------------
class Weights(NamedTuple):
    """One attention layer's per-head weights (the MQA paper's einsum layout)."""

    w_q: Heads
    w_k: Heads
    w_v: Heads
    w_o: Heads


def init_weights(h: int, d_model: int, d: int, *, seed: Union[int, str]) -> Weights:
    """Return random MHA weights for one layer, from random.Random(seed).

    w_q   [h][d_model][d]
    w_k   [h or g][d_model][d]
    w_v   [h or g][d_model][d]
    w_o   [h][d][d_model]

    One random.Random(seed) (an int or a str) draws every value of w_q, then
    w_k, w_v and w_o, each in the order of its nested lists (head, row,
    column): (2 * random() - 1) * a, uniform on [-a, a), a = sqrt(3 / fan_in),
    of variance 1 / fan_in, fan_in = d_model for w_q, w_k and w_v and h * d
    for w_o.  Only random() is drawn: the same weights on every Python.  Refuses
    (GQAError, naming the numbers at fault) h, d_model or d below 1, and more
    than MAX_ALLOCATION weights in all.

    >>> w = init_weights(h=2, d_model=3, d=4, seed=0)
    >>> [len(w.w_q), len(w.w_q[0]), len(w.w_q[0][0])], [len(w.w_o), len(w.w_o[0]), len(w.w_o[0][0])]
    ([2, 3, 4], [2, 4, 3])
    """
    for name, value in (("h", h), ("d_model", d_model), ("d", d)):
        _check_int("init_weights", name, value, low=1)
    if 4 * h * d_model * d > MAX_ALLOCATION:
        raise GQAError(f"init_weights: 4 x h x d_model x d weights must be at most the "
                       f"{MAX_ALLOCATION:,} floats one call may allocate; got h={h}, "
                       f"d_model={d_model}, d={d}")
    if isinstance(seed, bool) or not isinstance(seed, (int, str)):
        raise TypeError(f"init_weights: seed must be an int or a str, "
                        f"not {type(seed).__name__} ({seed!r})")
    rng = Random(seed)

    def draw(heads: int, rows: int, cols: int, fan_in: int) -> Heads:
        a = math.sqrt(3.0 / fan_in)       # uniform(-a, a) has variance 1 / fan_in
        return [[[(2.0 * rng.random() - 1.0) * a for _ in range(cols)]
                 for _ in range(rows)] for _ in range(heads)]

    return Weights(w_q=draw(h, d_model, d, d_model),       # [h][d_model][d]
                   w_k=draw(h, d_model, d, d_model),       # [h][d_model][d]
                   w_v=draw(h, d_model, d, d_model),       # [h][d_model][d]
                   w_o=draw(h, d, d_model, h * d))         # [h][d][d_model]


# Step 11. fold_weights -------------------------------------------------------
def fold_weights(weights: Weights, g: int) -> Weights:
    """Return weights whose w_k and w_v have g heads, folded by mean.

    A w_k or w_v that already has g heads (a converted checkpoint, folded once)
    is kept as it is.  Refuses (GQAError, naming the numbers at fault) a g not
    in valid_g(h), w_k or w_v with neither h nor g heads, and any tensor whose
    shape does not match w_q's.

    >>> w = fold_weights(init_weights(h=4, d_model=3, d=2, seed=0), g=2)
    >>> len(w.w_q), len(w.w_k), len(w.w_v), len(w.w_o)
    (4, 2, 2, 4)
    """
    _check_weights("fold_weights", weights, g)
    folded = _fold_weights(weights, g)
    return Weights(*(t if t is not given else _lists(t)            # tuple or array rows: lists
                     for t, given in zip(folded, weights)))


def _fold_weights(weights: Weights, g: int) -> Weights:
    """fold_weights for checked weights."""
    def fold(heads: Heads) -> Heads:
        return heads if len(heads) == g else _fold_kv_mean(heads, g)

    return weights._replace(w_k=fold(weights.w_k), w_v=fold(weights.w_v))


# Step 12. prepare_weights: check, fold and transpose once --------------------
class PreparedWeights(NamedTuple):
    """Weights checked, folded to g key/value heads and transposed for the kernel.

    Made by prepare_weights(); its tensors are tuples, so it cannot change
    after it was checked.  layer() and decode_step() take it in place of
    Weights.
    """

    h: int
    g: int
    d_model: int
    d: int
    q_cols: tuple
    k_cols: tuple
    v_cols: tuple
    o_cols: tuple


def prepare_weights(weights: Weights, g: int) -> PreparedWeights:
    """Return weights checked, folded to g K/V heads and transposed, once.

    h         query heads
    g         key/value heads
    d_model   model width
    d         head dim
    q_cols    [h][d][d_model]: each head's w_q by columns
    k_cols    [g][d][d_model]: each folded head's w_k by columns
    v_cols    [g][d][d_model]: each folded head's w_v by columns
    o_cols    [d_model][h*d]: w_o, its heads stacked, by columns

    layer() and decode_step() prepare the Weights they are given at every call;
    give them a PreparedWeights instead to check, fold and transpose once per
    sequence.  The results are equal to the last bit.  Refuses (GQAError, naming
    the numbers at fault) what fold_weights refuses.

    >>> w = init_weights(h=4, d_model=3, d=2, seed=0)
    >>> p = prepare_weights(w, g=2)
    >>> x = [[1.0, 0.0, -1.0]]
    >>> layer(x, p, g=2) == layer(x, w, g=2)
    True
    """
    _check_weights("prepare_weights", weights, g)
    return _prepare_weights(weights, g)


def _prepare_weights(weights: Weights, g: int, *, once: bool = False) -> PreparedWeights:
    """prepare_weights for checked weights.

    once=True prepares for one call: each head is then transposed as the
    call reads it, while the transpose is still in the CPU's cache (up to
    15 % faster than transposing every head first, at d_model = 256).
    """
    w = _fold_weights(weights, g)

    def by_columns(heads: Heads) -> Iterable:
        cols = (tuple(zip(*head)) for head in heads)              # [heads][cols][rows]
        return cols if once else tuple(cols)

    return PreparedWeights(
        h=len(w.w_q), g=g, d_model=len(w.w_q[0]), d=len(w.w_q[0][0]),
        q_cols=by_columns(w.w_q), k_cols=by_columns(w.w_k), v_cols=by_columns(w.w_v),
        o_cols=tuple(zip(*chain.from_iterable(w.w_o))))           # [d_model][h*d]


# Step 13. layer --------------------------------------------------------------
def layer(x: Sequence, weights: Union[Weights, PreparedWeights], g: int, *,
          causal: bool = False) -> Matrix:
    """Return one attention layer's output, run with g key/value heads.

    x [n][d_model] -> [n][d_model].  The MHA weights' w_k and w_v are folded to
    g heads by mean (fold_weights), x is projected to q [h][n][d] and k, v
    [g][n][d], grouped_attention runs, and the output is the sum over heads of
    head_out[i] @ w_o[i].  So MHA, GQA and MQA run on one set of weights.
    weights may also be prepare_weights(weights, g).  Refuses (GQAError, naming
    the numbers at fault) x whose rows are not d_model wide, what fold_weights
    refuses, and PreparedWeights made for another g.

    >>> w = init_weights(h=2, d_model=2, d=1, seed=0)
    >>> [len(row) for row in layer([[1.0, 0.0], [0.0, 1.0]], w, g=1)]
    [2, 2]
    """
    _check_causal("layer", causal)
    w = _weights_for("layer", weights, g)
    _check_matrix("layer", "x", x, cols=w.d_model)
    if not x:
        return []
    return _layer(x, w, causal)[0]


def _layer(x: Sequence, w: PreparedWeights, causal: bool, saved: Optional[list] = None) -> tuple:
    """layer for checked input: (y, q, k, v, heads).  saved: see _grouped_attention."""
    q = [_project(x, cols, "q_proj") for cols in w.q_cols]      # [h][n][d]
    k = [_project(x, cols, "k_proj") for cols in w.k_cols]      # [g][n][d]
    v = [_project(x, cols, "v_proj") for cols in w.v_cols]      # [g][n][d]
    heads = _grouped_attention(q, k, [list(zip(*vj)) for vj in v], causal, saved)   # [h][n][d]
    return _output(heads, w.o_cols), q, k, v, heads             # y: [n][d_model]


def _project(x: Sequence, w_cols: Sequence, term: str) -> Matrix:
    """x [n][k] @ w [k][p], w given by its columns [p][k] -> [n][p]."""
    out = _mm(x, w_cols)
    if _tally is not None:
        setattr(_tally, term, getattr(_tally, term) + len(x) * len(w_cols) * len(w_cols[0]))
        _tally.weight_reads += len(w_cols) * len(w_cols[0])
    return out


def _output(heads: Heads, o_cols: Sequence) -> Matrix:
    """Sum over heads of heads[i] @ w_o[i]: [h][n][d] -> [n][d_model]."""
    rows = [list(chain.from_iterable(r)) for r in zip(*heads)]     # [n][h*d]
    return _project(rows, o_cols, "o_proj")                        # [n][d_model]


# Step 14. output_difference: how much did the output change? -----------------
class Difference(NamedTuple):
    """How far an output is from a reference output."""

    max_abs: float
    rel_l2: float
    cosine: float


def output_difference(a: Sequence, b: Sequence) -> Difference:
    """Return how far output a is from reference b, as a Difference.

    max_abs   largest |a - b| over all values
    rel_l2    ||a - b|| / ||b||
    cosine    a . b / (||a|| ||b||)

    a and b are nested lists of one shape (a matrix, or a multi-head tensor).
    rel_l2 is inf when b is all zeros and a is not; cosine is nan when either
    is all zeros.  A NaN anywhere makes every field NaN, and no field overflows
    for finite inputs that it can represent.  Refuses (GQAError, naming the
    numbers at fault) a and b of different shapes (naming the index), nesting
    deeper than 3 levels, and an int beyond the float range.

    >>> output_difference([[0.0, 4.0]], [[3.0, 4.0]])
    Difference(max_abs=3.0, rel_l2=0.6, cosine=0.8)
    """
    fa, fb = _flatten(a, b)
    if any(map(math.isnan, fa)) or any(map(math.isnan, fb)):
        return Difference(max_abs=math.nan, rel_l2=math.nan, cosine=math.nan)
    diff = [x - y for x, y in zip(fa, fb)]
    max_abs = max(map(abs, diff), default=0.0)
    # Norms of values divided by their largest magnitude cannot under- or
    # overflow.  For b = a, sqrt(aa * bb) is exactly aa, so the cosine of
    # identical outputs is exactly 1.0.
    sa, sb = max(map(abs, fa), default=0.0), max(map(abs, fb), default=0.0)
    ua = [x / sa for x in fa] if sa else []
    ub = [y / sb for y in fb] if sb else []
    ud = [x / sb - y / sb for x, y in zip(fa, fb)] if sb else []     # scaled, then subtracted
    aa, bb, dd = (math.fsum(map(mul, u, u)) for u in (ua, ub, ud))
    rel_l2 = math.sqrt(dd / bb) if bb else (0.0 if max_abs == 0 else math.inf)
    cosine = math.fsum(map(mul, ua, ub)) / math.sqrt(aa * bb) if aa and bb else math.nan
    if abs(cosine) > 1.0:                        # rounding; NaN passes through
        cosine = math.copysign(1.0, cosine)
    return Difference(max_abs=max_abs, rel_l2=rel_l2, cosine=cosine)


# ---------------------------------------------------------------------------
# Part 4. Counting: what g changes (the cache) and what it does not.
# Steps 15-20: kv_cache_elements, attention_multiplies, block_multiplies,
# cache_table, multiplies_table, count_multiplies.
# ---------------------------------------------------------------------------


# Step 15. kv_cache_elements --------------------------------------------------
def kv_cache_elements(layers: int, kv_heads: int, length: int, head_dim: int, *,
                      batch: int = 1) -> int:
    """Return how many numbers a KV cache holds.

    2 (K and V) x layers x kv_heads x length x head_dim x batch.  Query heads
    are not a parameter: queries are never cached.  layers, length and batch may
    be 0 (the cache is empty).  Refuses (GQAError, naming the numbers at fault)
    kv_heads or head_dim below 1 and a negative count.

    >>> kv_cache_elements(layers=1, kv_heads=2, length=3, head_dim=4)
    48
    >>> kv_cache_elements(32, 32, 4096, 128) // kv_cache_elements(32, 1, 4096, 128)
    32
    """
    func = "kv_cache_elements"
    _check_int(func, "layers", layers)
    _check_int(func, "kv_heads", kv_heads, low=1)
    _check_int(func, "length", length)
    _check_int(func, "head_dim", head_dim, low=1)
    _check_int(func, "batch", batch)
    return _kv_cache_elements(layers, kv_heads, length, head_dim, batch)


def _kv_cache_elements(layers: int, kv_heads: int, length: int, head_dim: int, batch: int) -> int:
    """kv_cache_elements for checked sizes."""
    return 2 * layers * kv_heads * length * head_dim * batch


# Step 16. attention_multiplies -----------------------------------------------
class Multiplies(NamedTuple):
    """Multiplications of one attention layer, term by term."""

    q_proj: int
    k_proj: int
    v_proj: int
    scores: int
    weighted_sum: int
    o_proj: int
    total: int


def attention_multiplies(n: int, h: int, g: int, d: int, d_model: int, *,
                         causal: bool = False) -> Multiplies:
    """Return the multiplications of one attention layer over n positions, by term.

    q_proj         n x d_model x h x d
    k_proj         n x d_model x g x d
    v_proj         n x d_model x g x d
    scores         h x n x m x d (no g)
    weighted_sum   h x n x m x d_v (no g)
    o_proj         n x h x d x d_model
    total          the sum of the six terms

    Only the K and V projections have g in them.  The attention body, scores and
    weighted sum, is h x d per pair of positions whatever g is: n x n pairs, or
    n (n + 1) / 2 when causal (a decoder's prefill: query i sees keys 0..i), as
    layer(causal=True) multiplies them.  n may be 0.  Refuses (GQAError, naming
    the numbers at fault) a g that does not divide h, and d or d_model below 1.

    >>> m = attention_multiplies(n=4, h=8, g=2, d=16, d_model=128)
    >>> m.k_proj, m.scores, m.weighted_sum
    (16384, 2048, 2048)
    >>> attention_multiplies(4, 8, 2, 16, 128, causal=True).scores     # 10 of 16 pairs
    1280
    """
    func = "attention_multiplies"
    _check_int(func, "n", n)
    _group_size(func, h, g)
    _check_int(func, "d", d, low=1)
    _check_int(func, "d_model", d_model, low=1)
    return _attention_multiplies(n, h, g, d, d_model, _check_causal(func, causal))


def _attention_multiplies(n: int, h: int, g: int, d: int, d_model: int,
                          causal: bool = False) -> Multiplies:
    """attention_multiplies for checked sizes."""
    pairs = n * (n + 1) // 2 if causal else n * n        # (query, key) pairs attended
    return _multiplies(q_proj=n * d_model * h * d, k_proj=n * d_model * g * d,
                       v_proj=n * d_model * g * d, scores=h * pairs * d,
                       weighted_sum=h * pairs * d, o_proj=n * h * d * d_model)


def _multiplies(q_proj: int, k_proj: int, v_proj: int, scores: int,
                weighted_sum: int, o_proj: int) -> Multiplies:
    return Multiplies(q_proj, k_proj, v_proj, scores, weighted_sum, o_proj,
                      q_proj + k_proj + v_proj + scores + weighted_sum + o_proj)


# Step 17. block_multiplies ---------------------------------------------------
class BlockMultiplies(NamedTuple):
    """Multiplications of one transformer block (attention and MLP), by part."""

    q_o_proj: int
    k_v_proj: int
    body: int
    mlp: int
    total: int


# Only k_v_proj has g in it, and beside the MLP it is a small share: that is
# why prefill barely speeds up with g, while the KV cache shrinks in
# proportion to g.  (Within one attention layer alone, attention_multiplies,
# the K and V projections can still be a large share.)
def block_multiplies(n: int, h: int, g: int, d: int, d_model: int, d_ff: int, *,
                     mlp_matrices: int = 3, causal: bool = True) -> BlockMultiplies:
    """Return the multiplications of one transformer block over n positions.

    q_o_proj   the Q and O projections: 2 x n x d_model x h x d
    k_v_proj   the K and V projections: 2 x n x d_model x g x d (the only g)
    body       scores and weighted sum: 2 x h x d x the pairs attended
    mlp        mlp_matrices x n x d_model x d_ff
    total      the sum of the four parts

    attention_multiplies' layer plus an MLP of mlp_matrices d_model x d_ff
    matrices (3 for Llama's and Mistral's gated SwiGLU, 2 for GPT-2's).
    Norms, activations and the softmax are not counted.  n may be 0.  Refuses
    (GQAError, naming the numbers at fault) a g that does not divide h, and d,
    d_model, d_ff or mlp_matrices below 1.

    >>> b = block_multiplies(n=1, h=32, g=32, d=128, d_model=4096, d_ff=11008)
    >>> b.k_v_proj == 2 * 4096 * 4096, b.mlp == 3 * 4096 * 11008
    (True, True)
    """
    func = "block_multiplies"
    _check_int(func, "n", n)
    _group_size(func, h, g)
    for name, value in (("d", d), ("d_model", d_model), ("d_ff", d_ff),
                        ("mlp_matrices", mlp_matrices)):
        _check_int(func, name, value, low=1)
    a = _attention_multiplies(n, h, g, d, d_model, _check_causal(func, causal))
    mlp = mlp_matrices * n * d_model * d_ff
    return BlockMultiplies(a.q_proj + a.o_proj, a.k_proj + a.v_proj, a.scores + a.weighted_sum,
                           mlp, a.total + mlp)


# Step 18. cache_table --------------------------------------------------------
class CacheRow(NamedTuple):
    """One row of cache_table: the KV cache for one g."""

    method: str
    kv_heads: int
    group_size: int
    elements: int
    ratio: float


def cache_table(h: int, *, layers: int, length: int, head_dim: int,
                batch: int = 1) -> list[CacheRow]:
    """Return the KV cache size for every valid g of h, with its ratio to MHA.

    method       MHA, GQA or MQA
    kv_heads     g
    group_size   h // g query heads per key/value head
    elements     kv_cache_elements(...)
    ratio        elements / elements at g = h

    layers, length and batch may be 0 (every ratio is then 1.0).
    Refuses (GQAError, naming the numbers at fault) h or head_dim below 1.

    >>> for row in cache_table(4, layers=1, length=10, head_dim=8):
    ...     print(row.method, row.kv_heads, row.group_size, row.elements, row.ratio)
    MQA 1 4 160 0.25
    GQA 2 2 320 0.5
    MHA 4 1 640 1.0
    """
    for name, value in (("h", h), ("layers", layers), ("length", length),
                        ("head_dim", head_dim), ("batch", batch)):
        _check_int("cache_table", name, value, low=1 if name in ("h", "head_dim") else 0)
    mha = _kv_cache_elements(layers, h, length, head_dim, batch)
    rows = []
    for g in valid_g(h):
        elements = _kv_cache_elements(layers, g, length, head_dim, batch)
        rows.append(CacheRow(_method_name(h, g), g, h // g, elements,
                             elements / mha if mha else 1.0))
    return rows


# Step 19. multiplies_table ---------------------------------------------------
class MultipliesRow(NamedTuple):
    """One row of multiplies_table: the multiplications for one g."""

    method: str
    kv_heads: int
    group_size: int
    counts: Multiplies
    ratio: Multiplies


def multiplies_table(n: int, h: int, d: int, d_model: int, *,
                     causal: bool = False) -> list[MultipliesRow]:
    """Return the multiplications for every valid g of h, with ratios to MHA.

    method       MHA, GQA or MQA
    kv_heads     g
    group_size   h // g
    counts       attention_multiplies(n, h, g, d, d_model), a Multiplies
    ratio        each term / the same term at g = h (floats), a Multiplies

    The counts are attention_multiplies(n, h, g, d, d_model, causal=causal).
    n may be 0 (every ratio is then 1.0).  Refuses (GQAError, naming the
    numbers at fault) h, d or d_model below 1.

    >>> for row in multiplies_table(n=4, h=4, d=2, d_model=8):
    ...     print(row.method, row.ratio.k_proj, row.ratio.scores)
    MQA 0.25 1.0
    GQA 0.5 1.0
    MHA 1.0 1.0
    """
    for name, value in (("n", n), ("h", h), ("d", d), ("d_model", d_model)):
        _check_int("multiplies_table", name, value, low=0 if name == "n" else 1)
    _check_causal("multiplies_table", causal)
    mha = _attention_multiplies(n, h, h, d, d_model, causal)
    rows = []
    for g in valid_g(h):
        counts = _attention_multiplies(n, h, g, d, d_model, causal)
        ratio = Multiplies(*(c / r if r else 1.0 for c, r in zip(counts, mha)))
        rows.append(MultipliesRow(_method_name(h, g), g, h // g, counts, ratio))
    return rows


# Step 20. count_multiplies: counted, not computed; a tally kept by the arithmetic itself ---
class Tally:
    """Multiplications performed and elements read, as the code ran.

    The kernel that did the work adds the lengths of the rows it multiplied
    to q_proj, k_proj, v_proj, o_proj, scores or weighted_sum; cache_reads
    counts the K and V elements decode_step read from its cache (once per
    key/value head); weight_reads the weight elements each projection read
    (once per call).  Softmax, scaling and the mean fold are not counted.
    """

    FIELDS = ("q_proj", "k_proj", "v_proj", "scores", "weighted_sum", "o_proj",
              "cache_reads", "weight_reads")

    def __init__(self) -> None:
        for name in self.FIELDS:
            setattr(self, name, 0)

    def multiplies(self) -> Multiplies:
        """Return the tallied multiplications as a Multiplies record."""
        return _multiplies(self.q_proj, self.k_proj, self.v_proj, self.scores,
                           self.weighted_sum, self.o_proj)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)}" for name in self.FIELDS)
        return f"Tally({fields})"


@contextmanager
def count_multiplies() -> Iterator[Tally]:
    """Tally the multiplications (and reads) of the code run inside the block.

    Nested blocks each keep their own tally, added to the enclosing one when
    the inner block ends.  Not thread-safe: count one thread at a time.

    >>> w = init_weights(h=4, d_model=8, d=2, seed=0)
    >>> x = [[1.0] * 8] * 3
    >>> with count_multiplies() as tally:
    ...     y = layer(x, w, g=2)
    >>> tally.multiplies() == attention_multiplies(n=3, h=4, g=2, d=2, d_model=8)
    True
    """
    global _tally
    outer, _tally = _tally, Tally()
    tally = _tally
    try:
        yield tally
    finally:
        _tally = outer
        if outer is not None:
            for name in Tally.FIELDS:
                setattr(outer, name, getattr(outer, name) + getattr(tally, name))


# ---------------------------------------------------------------------------
# Part 5. Decoding, one token at a time (the MQA paper's setting).
# Steps 21-23: KVCache, decode_step, decode_traffic.
# ---------------------------------------------------------------------------


# Step 21. KVCache: the KV cache, in real memory ------------------------------
class KVCache:
    """One layer's KV cache for g key/value heads of width d.

    cache.k[j] and cache.v[j] hold head j's keys and values, each one flat
    array('d') of m x d floats, row after row: the memory is real, 8 bytes per
    element.  capacity=N allocates N positions at once; appending past it still
    works.  len(cache) is the positions appended.  Refuses (GQAError, naming the
    numbers at fault) g or d below 1, g above MAX_KV_HEADS, and more than
    MAX_ALLOCATION floats; an append of rows with the wrong number of heads
    (naming g) or values (naming d), which stores nothing.

    >>> cache = KVCache(g=2, d=3)
    >>> cache.append([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[0.0] * 3, [1.0] * 3])
    >>> len(cache), cache.elements, cache.nbytes
    (1, 12, 96)
    """

    __slots__ = ("_g", "_d", "k", "v", "_length")

    def __init__(self, g: int, d: int, *, capacity: int = 0) -> None:
        self._g = _check_int("KVCache", "g", g, low=1, high=MAX_KV_HEADS)
        self._d = _check_int("KVCache", "d", d, low=1, high=MAX_ALLOCATION)
        room = _check_int("KVCache", "capacity", capacity) * d
        if 2 * g * room > MAX_ALLOCATION or 2 * g > MAX_ALLOCATION:
            raise GQAError(f"KVCache: 2 x g x capacity x d floats (K and V) must be at most the "
                           f"{MAX_ALLOCATION:,} one call may allocate; got g={g}, "
                           f"capacity={capacity}, d={d}")
        # array * N allocates exactly N items; appending over-allocates.
        self.k = [array("d", [0.0]) * room for _ in range(g)]     # [g][capacity*d], row-major
        self.v = [array("d", [0.0]) * room for _ in range(g)]     # [g][capacity*d], row-major
        self._length = 0                                         # positions held

    @property
    def g(self) -> int:
        """Return the number of key/value heads (set when the cache is made)."""
        return self._g

    @property
    def d(self) -> int:
        """Return the head dim (set when the cache is made)."""
        return self._d

    def __len__(self) -> int:
        """Return the number of positions held."""
        return self._length

    @property
    def capacity(self) -> int:
        """Return the positions the arrays have room for before they grow."""
        return len(self.k[0]) // self.d

    @property
    def elements(self) -> int:
        """Return the number of floats held, K and V (2 x g x len x d)."""
        used = self._length * self.d
        return sum(len(memoryview(a)[:used]) for a in chain(self.k, self.v))

    @property
    def nbytes(self) -> int:
        """Return the bytes the floats take (8 per element)."""
        return self.elements * self.k[0].itemsize

    def append(self, k_rows: Sequence, v_rows: Sequence) -> None:
        """Append one position, k_rows and v_rows [g][d]: both valid, or nothing stored."""
        new = []
        for name, rows in (("k_rows", k_rows), ("v_rows", v_rows)):
            _check_list("KVCache.append", name, rows, "a list of g rows")
            if len(rows) != self.g:
                raise GQAError(f"KVCache.append: {name} has {len(rows)} heads; "
                               f"this cache holds g={self.g}")
            for j, row in enumerate(rows):
                _check_list("KVCache.append", f"{name} head {j}", row, "a list of floats")
                if len(row) != self.d:
                    raise GQAError(f"KVCache.append: {name} head {j} has {len(row)} "
                                   f"values; this cache holds d={self.d}")
                _check_values("KVCache.append", f"{name} head {j}", row)
            new.append([array("d", row) for row in rows])
        self._append(*new)

    def _append(self, k_rows: Sequence, v_rows: Sequence) -> None:
        """Append one position of checked rows, [g][d] each."""
        start, stop = self._length * self.d, (self._length + 1) * self.d
        for store, rows in ((self.k, k_rows), (self.v, v_rows)):
            for arr, row in zip(store, rows):
                if stop <= len(arr):
                    arr[start:stop] = array("d", row)       # into the room reserved
                else:
                    arr.extend(row)
        self._length += 1

    def __repr__(self) -> str:
        return f"KVCache(g={self.g}, d={self.d}, len={len(self)})"


# Step 22. decode_step --------------------------------------------------------
def decode_step(x_t: Sequence[float], weights: Union[Weights, PreparedWeights], g: int,
                cache: KVCache) -> list:
    """Decode one position: append its K and V to cache, return y_t.

    x_t [d_model] -> y_t [d_model].  Appends x_t's K and V (g heads) to the
    cache, then query head i attends over cache head kv_head(i, h, g), not a
    copy.  Decoding x row by row equals layer(x, weights, g, causal=True).
    prepare_weights(weights, g) once is faster than preparing every step.
    Refuses (GQAError, naming the numbers at fault) a cache made for another g
    or d, an x_t not d_model long, and what layer refuses of weights, all
    before the cache changes; a step interrupted (Ctrl-C) may leave a position
    appended, or half appended.

    >>> w = prepare_weights(init_weights(h=2, d_model=4, d=2, seed=0), g=1)
    >>> cache = KVCache(g=1, d=2, capacity=2)
    >>> y = [decode_step(x_t, w, 1, cache) for x_t in ([1.0] * 4, [0.5] * 4)]
    >>> len(cache), cache.elements
    (2, 8)
    """
    w = _weights_for("decode_step", weights, g)
    if not isinstance(cache, KVCache):
        raise TypeError(f"decode_step: cache must be a KVCache, not {type(cache).__name__}")
    if cache.g != g:
        raise GQAError(f"decode_step: the cache must hold the step's g key/value heads; "
                       f"got a cache of g={cache.g} for g={g}")
    if cache.d != w.d:
        raise GQAError(f"decode_step: the cache's heads must be as wide as the weights' head "
                       f"dim; got a cache of d={cache.d} for weights of d={w.d}")
    _check_list("decode_step", "x_t", x_t, "a list of floats")
    if len(x_t) != w.d_model:
        raise GQAError(f"decode_step: x_t has {len(x_t)} values; the weights need "
                       f"d_model={w.d_model}")
    _check_values("decode_step", "x_t", x_t)
    x = [x_t]                                                      # [1][d_model]
    q = [_project(x, cols, "q_proj")[0] for cols in w.q_cols]      # [h][d]
    k = [_project(x, cols, "k_proj")[0] for cols in w.k_cols]      # [g][d]
    v = [_project(x, cols, "v_proj")[0] for cols in w.v_cols]      # [g][d]
    cache._append(k, v)
    views = [_cache_views(cache, j) for j in range(g)]            # [g] x ([m][d], [d][m])
    heads = [_single_head_attention([q[i]], *views[_kv_head(i, w.h, g)], causal=False)
             for i in range(w.h)]                                  # [h][1][d]
    del views                     # release the views, so the cache can grow again
    return _output(heads, w.o_cols)[0]                             # [d_model]


def _cache_views(cache: KVCache, j: int) -> tuple:
    """Return cache head j as key rows [m][d] and value columns [d][m], no copy."""
    d, m = cache.d, len(cache)
    kv, vv = memoryview(cache.k[j])[:m * d], memoryview(cache.v[j])[:m * d]
    if _tally is not None:
        _tally.cache_reads += len(kv) + len(vv)
    return [kv[t * d:(t + 1) * d] for t in range(m)], [vv[c::d] for c in range(d)]


# Step 23. decode_traffic -----------------------------------------------------
class DecodeTraffic(NamedTuple):
    """What n decode steps read and multiply (the MQA paper's analysis)."""

    cache_reads: int
    weight_reads: int
    multiplies: int
    ratio: float


# With g = h the cache reads grow like the multiplications of the attention
# body, so the ratio of reads to multiplications stays high however large the
# batch; with g = 1 they are h times smaller (Shazeer 2019, section 3).
def decode_traffic(n: int, h: int, g: int, d: int, d_model: int, *,
                   batch: int = 1) -> DecodeTraffic:
    """Return the memory traffic and multiplications of n decode steps.

    cache_reads    K and V elements read from the cache
    weight_reads   weight elements read (once per step, shared by the batch)
    multiplies     multiplications
    ratio          (cache_reads + weight_reads) / multiplies

    From an empty cache, step t (1..n) appends one position and reads all t:
    2 x g x t x d elements per sequence, each key/value head once for its
    whole group.  n may be 0: every count is then 0, and ratio 0.0.  Refuses
    (GQAError, naming the numbers at fault) a g that does not divide h, and d,
    d_model or batch below 1.

    >>> t = decode_traffic(n=2, h=4, g=1, d=2, d_model=8)
    >>> t.cache_reads, t.weight_reads, t.multiplies
    (12, 320, 368)
    >>> decode_traffic(n=2, h=4, g=4, d=2, d_model=8).cache_reads
    48
    """
    func = "decode_traffic"
    _check_int(func, "n", n)
    _group_size(func, h, g)
    _check_int(func, "d", d, low=1)
    _check_int(func, "d_model", d_model, low=1)
    _check_int(func, "batch", batch, low=1)
    positions = n * (n + 1) // 2                     # sum of cache lengths, t = 1..n
    cache_reads = 2 * g * d * positions * batch
    weight_reads = n * d_model * d * (2 * h + 2 * g)
    multiplies = batch * (n * d_model * d * (2 * h + 2 * g) + 2 * h * d * positions)
    ratio = (cache_reads + weight_reads) / multiplies if multiplies else 0.0
    return DecodeTraffic(cache_reads, weight_reads, multiplies, ratio)


# ---------------------------------------------------------------------------
# Part 6. Learning: the backward pass.
# Steps 24-25: grouped_attention_backward, layer_backward.
# ---------------------------------------------------------------------------


# Step 24. grouped_attention_backward -----------------------------------------
def grouped_attention_backward(q: Sequence[Matrix], k: Sequence[Matrix], v: Sequence[Matrix],
                               d_out: Sequence[Matrix], *, causal: bool = False) -> tuple:
    """Return (dq, dk, dv): the gradients of sum(out * d_out) for out = grouped_attention(q, k, v).

    q [h][n][d], k [g][m][d], v [g][m][d_v], d_out [h][n][d_v] -> dq [h][n][d],
    dk [g][m][d], dv [g][m][d_v]: the shapes of q, k and v.  The lesson is
    one line: the gradient of a shared key/value head is the sum of the
    gradients that its h // g query heads send it.  At g = h each head's
    gradients are its own, as in MHA.  Refuses (GQAError, naming the numbers at
    fault) what grouped_attention refuses, and a d_out not shaped [h][n][d_v].

    >>> q = [[[1.0]], [[2.0]]]                        # h=2 query heads, one key/value head
    >>> k, v = [[[0.0], [1.0]]], [[[1.0], [3.0]]]
    >>> dq, dk, dv = grouped_attention_backward(q, k, v, d_out=[[[1.0]], [[1.0]]])
    >>> [len(dq), len(dk), len(dv)], round(dv[0][0][0] + dv[0][1][0], 12)   # 2 heads' weights
    ([2, 1, 1], 2.0)
    """
    func = "grouped_attention_backward"
    _check_multihead(func, q, k, v, causal)
    h, g = len(q), len(k)
    _check_divides(func, h, g)
    _, rows, cols = _check_heads(func, "d_out", d_out, rows=len(q[0]), cols=len(v[0][0]))
    if len(d_out) != h:
        raise GQAError(f"{func}: d_out must have h={h} heads, one per query head; got {len(d_out)}")
    if not q[0]:
        return [[] for _ in range(h)], [[[0.0] * len(k[0][0]) for _ in k[0]] for _ in k], \
            [[[0.0] * len(v[0][0]) for _ in v[0]] for _ in v]
    probs = [_softmax(q[i], k[_kv_head(i, h, g)], causal) for i in range(h)]   # [h][n] of (e, z)
    return _grouped_attention_backward(q, k, v, d_out, probs)


def _grouped_attention_backward(q: Sequence, k: Sequence, v: Sequence, d_out: Sequence,
                      probs: Sequence) -> tuple:
    """grouped_attention_backward for checked input and the softmax _grouped_attention saved."""
    h, g = len(q), len(k)
    dq, dk, dv = [], [None] * g, [None] * g
    for i in range(h):
        j = _kv_head(i, h, g)                         # the key/value head query head i read from
        dq_i, dk_i, dv_i = _single_head_attention_backward(q[i], k[j], v[j], d_out[i], probs[i])
        dq.append(dq_i)                                         # [n][d]
        # The shared head's gradient: the sum of what its h // g query heads send it.
        dk[j] = dk_i if dk[j] is None else [list(map(add, a, b)) for a, b in zip(dk[j], dk_i)]
        dv[j] = dv_i if dv[j] is None else [list(map(add, a, b)) for a, b in zip(dv[j], dv_i)]
    return dq, dk, dv                                           # [h][n][d], [g][m][d], [g][m][d_v]


def _single_head_attention_backward(q: Sequence, keys: Sequence, v_rows: Sequence, d_out: Sequence,
                     probs: Sequence) -> tuple:
    """One query head's gradients for checked input: (dq [n][d], dk [m][d], dv [m][d_v]).

    probs is what _softmax gave (and _single_head_attention saved): each query's softmax,
    (e [seen], z).
    softmax(q keys^T / sqrt(d)) v, differentiated: dv = p^T d_out,
    dp = d_out v^T, ds = p (dp - rowsum(p dp)), dq = ds k / sqrt(d) and
    dk = ds^T q / sqrt(d).  Masked pairs have p = ds = 0 exactly.
    """
    m = len(keys)
    scale = 1.0 / math.sqrt(len(q[0]))
    p_rows, ds_rows = [], []                                   # [n][m] each, zeros where masked
    for i, (e, z) in enumerate(probs):
        seen = len(e)                                          # keys query i saw
        p = [x / z for x in e]                                 # [seen]
        dp = _dots(v_rows[:seen] if seen < m else v_rows, d_out[i])      # [seen]: d_out_i . v_j
        c = _dots([p], dp)[0]                                  # sum_j p_j dp_j
        pad = [0.0] * (m - seen)
        p_rows.append(p + pad)
        ds_rows.append([pj * (dpj - c) for pj, dpj in zip(p, dp)] + pad)
    dq = [[x * scale for x in row] for row in _mm(ds_rows, _transpose(keys))]          # [n][d]
    dk = [[x * scale for x in row] for row in _mm(_transpose(ds_rows), _transpose(q))]  # [m][d]
    dv = _mm(_transpose(p_rows), _transpose(d_out))                                     # [m][d_v]
    return dq, dk, dv


# Step 25. layer_backward: the backward reuses what the forward saved ---------
def layer_backward(x: Sequence, weights: Weights, g: int, d_y: Sequence, *,
                   causal: bool = False) -> tuple:
    """Return (dx, grads): the gradients of sum(y * d_y) for y = layer(x, weights, g, causal=causal).

    x [n][d_model], d_y [n][d_model] -> dx [n][d_model] and grads, a Weights
    record with the shapes of weights.  When weights holds h K/V heads and
    g < h, the gradient flows back through the mean fold: each of a group's
    h // g heads gets its folded head's gradient divided by h // g.  Refuses
    (GQAError, naming the numbers at fault) what layer refuses, and a d_y not
    shaped like x.

    >>> w = init_weights(h=2, d_model=3, d=2, seed=0)
    >>> dx, grads = layer_backward([[1.0, 0.0, -1.0]], w, 1, [[1.0, 1.0, 1.0]])
    >>> len(dx[0]), [len(grads.w_q), len(grads.w_k), len(grads.w_o)]
    (3, [2, 2, 2])
    """
    func = "layer_backward"
    _check_causal(func, causal)
    _, d_model, _ = _check_weights(func, weights, g)
    _check_matrix(func, "x", x, cols=d_model)
    _check_matrix(func, "d_y", d_y, cols=d_model, rows=len(x))
    _, saved = _layer_forward(x, weights, g, causal=causal)
    return _layer_backward(saved, d_y)


def _layer_forward(x: Sequence, weights: Union[Weights, PreparedWeights], g: int, *,
                   causal: bool) -> tuple:
    """layer for checked input, keeping what the backward needs: (y, saved).

    weights is a Weights record (with h or g K/V heads, folded here by mean)
    or a PreparedWeights.  y is layer(x, weights, g, causal=causal) to the
    last bit; saved is for _layer_backward.
    """
    s = _Saved()
    s.x, s.causal = x, causal
    if isinstance(weights, PreparedWeights):
        s.rows, s.prepared = None, weights                      # rows rebuilt if needed
        s.kv_heads = (weights.g, weights.g)
        w = weights
    else:
        s.rows = _fold_weights(weights, g)                      # w_k, w_v: [g][d_model][d]
        s.prepared = None
        s.kv_heads = (len(weights.w_k), len(weights.w_v))
        w = _prepare_weights(s.rows, g, once=True)
    s.probs = []                                                # [h][n] of (e, z)
    if not x:
        s.q = s.k = s.v = s.heads = None
        if s.rows is None:
            s.rows = _unprepared(w)
        return [], s
    y, s.q, s.k, s.v, s.heads = _layer(x, w, causal, s.probs)
    return y, s


def _layer_backward(saved: _Saved, d_y: Sequence) -> tuple:
    """layer_backward from what _layer_forward saved: (dx, grads), d_y checked."""
    s = saved
    weights = s.rows if s.rows is not None else _unprepared(s.prepared)
    kv_k, kv_v = s.kv_heads
    if not s.x:
        def zero(t: Heads, heads: int) -> Heads:
            return [[[0.0] * len(r) for r in t[0]] for _ in range(heads)]
        return [], Weights(zero(weights.w_q, len(weights.w_q)), zero(weights.w_k, kv_k),
                           zero(weights.w_v, kv_v), zero(weights.w_o, len(weights.w_o)))
    x, n, d_model = s.x, len(s.x), len(s.x[0])
    d_y_cols = _transpose(d_y)                                   # [d_model][n]
    d_w_o = [_mm(_transpose(hd), d_y_cols) for hd in s.heads]    # [h][d][d_model]: head^T d_y
    d_heads = [_mm(d_y, wo) for wo in weights.w_o]               # [h][n][d]: d_y w_o[i]^T
    dq, dk, dv = _grouped_attention_backward(s.q, s.k, s.v, d_heads, s.probs)
    x_cols = _transpose(x)                                       # [d_model][n]
    d_w_q = [_mm(x_cols, _transpose(t)) for t in dq]             # [h][d_model][d]: x^T dq
    d_w_k = [_mm(x_cols, _transpose(t)) for t in dk]             # [g][d_model][d]
    d_w_v = [_mm(x_cols, _transpose(t)) for t in dv]             # [g][d_model][d]
    dx = [[0.0] * d_model for _ in range(n)]                     # [n][d_model]
    for grads_t, w_t in ((dq, weights.w_q), (dk, weights.w_k), (dv, weights.w_v)):
        for gt, wt in zip(grads_t, w_t):                          # dx += dt w^T, head by head
            dx = [list(map(add, row, part)) for row, part in zip(dx, _mm(gt, wt))]
    return dx, Weights(w_q=d_w_q, w_k=_unfold(d_w_k, kv_k), w_v=_unfold(d_w_v, kv_v), w_o=d_w_o)


def _unfold(grads: Heads, h: int) -> Heads:
    """The gradient of g folded heads, sent back through the mean fold to h heads."""
    g = len(grads)
    group = h // g                                              # heads per group
    if group == 1:
        return grads
    return [[[x / group for x in row] for row in grads[_kv_head(i, h, g)]]
            for i in range(h)]                                  # [h][rows][cols]


# ---------------------------------------------------------------------------
# The door: every public function checks what it was given first, once,
# so that bad input ends in a GQAError or TypeError naming the function,
# the rule and the numbers given (the rules: the module docstring), and
# the private steps above can trust it.  The limits below bound every size.
# ---------------------------------------------------------------------------

# Limits: a size or count is at most MAX_SIZE (10**12); one call allocates at
# most MAX_ALLOCATION (10**8) floats; a KVCache has at most MAX_KV_HEADS
# (65,536) heads.  Past them a GQAError says so before any work, naming the
# limit: a larger value could only hang or exhaust memory in pure Python.
# They guard a session at the REPL; the grader does not try them.
MAX_SIZE = 10 ** 12         # h, g, or any count a function takes
MAX_ALLOCATION = 10 ** 8    # floats one call may allocate (800 MB)
MAX_KV_HEADS = 2 ** 16      # heads of one KVCache (each holds two arrays)

_FLOAT_MAX = sys.float_info.max
_INF = math.inf
_NUMBERS = frozenset((int, float))


def _check_int(func: str, name: str, value: object, *, low: Optional[int] = 0,
               high: Optional[int] = MAX_SIZE) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{func}: {name} must be an int, "
                        f"not {type(value).__name__} ({_brief(value)})")
    if low is not None and value < low:
        rule = "positive" if low == 1 else f"at least {low}"
        raise GQAError(f"{func}: {name} must be {rule}; got {name}={_brief(value)}")
    if high is not None and value > high:
        raise GQAError(f"{func}: {name} must be at most {high:,}; got {name}={_brief(value)}")
    return value


def _brief(value: object) -> str:
    """A value in a message, never thousands of characters long."""
    if isinstance(value, int) and abs(value) >= 10 ** 30:         # repr of a huge int is slow
        return f"an int of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_causal(func: str, causal: object) -> bool:
    if not isinstance(causal, bool):
        raise TypeError(f"{func}: causal must be True or False, not {type(causal).__name__} "
                        f"({_brief(causal)})")
    return causal


def _valid_g_text(h: int) -> str:
    """The end of every message about a bad g: 'valid g: 1, 2, 4, 8' (for h=8)."""
    gs = valid_g(h)                             # O(sqrt(h)), and h is at most MAX_SIZE
    if len(gs) > 12:                            # a few, and how many there are
        return (f"valid g: {', '.join(map(str, gs[:6]))}, ..., "
                f"{', '.join(map(str, gs[-3:]))} ({len(gs)} in all)")
    return f"valid g: {', '.join(map(str, gs))}"


def _group_size(func: str, h: object, g: object) -> int:
    """Check h query heads and g key/value heads; return h // g."""
    _check_int(func, "h", h, low=1)
    _check_int(func, "g", g, low=None, high=None)              # 1 <= g <= h is checked next
    if not 1 <= g <= h:
        raise GQAError(f"{func}: g must be between 1 and h; got g={_brief(g)}, h={h}; "
                       f"{_valid_g_text(h)}")
    if h % g:
        raise GQAError(f"{func}: g={g} does not divide h={h}; {_valid_g_text(h)}")
    return h // g


def _check_divides(func: str, h: int, g: int) -> None:
    """Check that k and v's g heads divide q's h heads (each at least 1)."""
    if h % g:
        raise GQAError(f"{func}: g={g} (the heads of k and v) does not divide h={h} (the heads "
                       f"of q); {_valid_g_text(h)}")


def _check_heads_made(func: str, h: int) -> None:
    """Check that a list of h heads (or h head numbers) fits in one call's allocation."""
    if h > MAX_ALLOCATION:
        raise GQAError(f"{func}: h must be at most the {MAX_ALLOCATION:,} items one call may "
                       f"allocate; got h={h}")


def _check_list(func: str, what: str, value: object, expected: str) -> None:
    if not isinstance(value, (list, tuple, array)):
        raise TypeError(f"{func}: {what} must be {expected}, not {type(value).__name__}")


def _check_values(func: str, what: str, row: Sequence) -> None:
    """Every value of a row is an int or a float that a float can hold (one C-speed pass)."""
    if isinstance(row, array):
        if row.typecode not in "fd":
            raise TypeError(f"{func}: {what} is an array('{row.typecode}'); use array('d')")
        return
    kinds = set(map(type, row))
    if kinds <= {float}:
        return
    if not kinds <= _NUMBERS:
        bad = next(x for x in row if type(x) not in _NUMBERS)
        raise TypeError(f"{func}: {what} holds {type(bad).__name__} {_brief(bad)}; "
                        f"values must be int or float")
    if any(abs(x) > _FLOAT_MAX for x in row if type(x) is int):
        raise GQAError(f"{func}: {what} holds an int beyond the largest float")


_ROWS = frozenset((list, tuple, array))


def _check_matrix(func: str, what: str, mat: Sequence, *, cols: Optional[int] = None,
                  rows: Optional[int] = None) -> int:
    """Check that mat is a list of equal rows of numbers; return the row width.

    Three passes at C speed (row types, row lengths, value types); only when
    one finds something wrong does a row-by-row pass name the row.
    """
    _check_list(func, what, mat, "a list of rows")
    if rows is not None and len(mat) != rows:
        raise GQAError(f"{func}: {what} must have {rows} rows; got {len(mat)}")
    widths = set(map(len, mat)) if set(map(type, mat)) <= _ROWS else None
    width = cols if not widths else next(iter(widths))
    if widths is None or len(widths) > 1 or (cols is not None and widths - {cols}):
        width = cols
        for r, row in enumerate(mat):                               # name the first bad row
            _check_list(func, f"{what} row {r}", row, "a list of floats")
            if width is None:
                width = len(row)
            elif len(row) != width:
                raise GQAError(f"{func}: {what} row {r} has {len(row)} values, "
                               f"expected {width} (ragged rows)")
    if not set(map(type, chain.from_iterable(mat))) <= {float}:     # one pass, at C speed
        for r, row in enumerate(mat):                               # the slow path names the row
            _check_values(func, f"{what} row {r}", row)
    return 0 if width is None else width


def _check_heads(func: str, name: str, t: Sequence, *, cols: Optional[int] = None,
                 rows: Optional[int] = None) -> tuple:
    """Check a [heads][rows][cols] tensor; return (heads, rows, cols).

    Every head's rows are checked as one matrix, in one call of
    _check_matrix (its passes at C speed); only when that finds something
    wrong does a head-by-head pass name the head.
    """
    _check_list(func, name, t, "a list of heads, each a list of rows")
    if len(t) == 0:
        raise GQAError(f"{func}: {name} has no heads")
    lengths = set(map(len, t)) if set(map(type, t)) <= _ROWS else None
    if lengths and len(lengths) == 1 and rows in (None, *lengths):
        try:
            width = _check_matrix(func, name, list(chain.from_iterable(t)), cols=cols)
            return len(t), len(t[0]), width
        except (GQAError, TypeError):
            pass                                     # the pass below names the head at fault
    for i, mat in enumerate(t):
        cols = _check_matrix(func, f"{name} head {i}", mat, cols=cols, rows=rows)
        rows = len(mat)                      # the first head sets the rows of the others
    return len(t), rows, cols


def _check_qkv(func: str, q: Sequence, k: Sequence, v: Sequence, causal: bool) -> None:
    """Check one head's q [n][d], k [m][d], v [m][d_v]."""
    _check_causal(func, causal)
    d = _check_matrix(func, "q", q)
    dk = _check_matrix(func, "k", k)
    m = len(k)
    if m == 0:
        raise GQAError(f"{func}: there are no keys (k has 0 rows)")
    if q and d == 0:
        raise GQAError(f"{func}: head dim d must be positive; q rows have 0 values")
    if q and dk != d:
        raise GQAError(f"{func}: q and k head dims differ: q has d={d}, k has d={dk}")
    dv = _check_matrix(func, "v", v)
    if len(v) != m:
        raise GQAError(f"{func}: k and v row counts differ: k has m={m}, v has {len(v)}")
    if dv == 0:
        raise GQAError(f"{func}: v rows have 0 values")
    if causal and len(q) > m:
        raise GQAError(f"{func}: causal attention needs at least as many keys as "
                       f"queries (queries are the last n of m positions); "
                       f"got n={len(q)}, m={m}")


def _check_multihead(func: str, q: Sequence, k: Sequence, v: Sequence,
                     causal: bool) -> None:
    """Check q [h][n][d], k [.][m][d], v [.][m][d_v]: equal heads, matching sizes."""
    _check_heads(func, "q", q)
    _check_heads(func, "k", k)
    _check_heads(func, "v", v)
    if len(k) != len(v):
        raise GQAError(f"{func}: k and v head counts differ: k has {len(k)}, v has {len(v)}")
    _check_qkv(func, q[0], k[0], v[0], causal)


def _check_weights(func: str, weights: Weights, g: int) -> tuple:
    """Check weights for g key/value heads; return (h, d_model, d)."""
    if not isinstance(weights, Weights):
        raise TypeError(f"{func}: weights must be a Weights record, "
                        f"not {type(weights).__name__}")
    h, d_model, d = _check_heads(func, "w_q", weights.w_q)
    _group_size(func, h, g)
    for name in ("w_k", "w_v", "w_o"):                 # before their lengths are read
        _check_list(func, name, getattr(weights, name), "a list of heads, each a list of rows")
    for name in ("w_k", "w_v"):
        heads = len(getattr(weights, name))
        if heads not in (h, g):
            raise GQAError(f"{func}: {name} has {heads} heads; expected h={h} "
                           f"(MHA weights, folded to g) or g={g}")
        _check_heads(func, name, getattr(weights, name), rows=d_model, cols=d)
    if len(weights.w_o) != h:
        raise GQAError(f"{func}: w_o has {len(weights.w_o)} heads; expected h={h}")
    _check_heads(func, "w_o", weights.w_o, rows=d, cols=d_model)
    return h, d_model, d


def _weights_for(func: str, weights: Union[Weights, PreparedWeights], g: int) -> PreparedWeights:
    """Check and prepare Weights, or check that PreparedWeights were prepared for g."""
    if isinstance(weights, PreparedWeights):
        _group_size(func, weights.h, g)
        if weights.g != g:
            raise GQAError(f"{func}: these weights were prepared for g={weights.g}; "
                           f"got g={g}")
        _check_prepared(func, weights)
        return weights
    _check_weights(func, weights, g)
    return _prepare_weights(weights, g, once=True)


def _check_prepared(func: str, w: PreparedWeights) -> None:
    """Check the shape of PreparedWeights (its values were checked by prepare_weights).

    A record built by hand, or changed with _replace, is refused when its
    shape shows it: h, g, d_model and d ints, and tuples of h, g, g and
    d_model columns, each head's d columns of d_model values and each of
    o_cols's h x d values.  (Its values are not read again.)
    """
    _check_int(func, "weights.d_model", w.d_model, low=1)
    _check_int(func, "weights.d", w.d, low=1)
    for name, heads in (("q_cols", w.h), ("k_cols", w.g), ("v_cols", w.g)):
        t = getattr(w, name)
        if type(t) is not tuple or len(t) != heads or any(   # maps, in C: decoding checks each step
                type(cols) is not tuple or len(cols) != w.d or set(map(type, cols)) != {tuple}
                or set(map(len, cols)) != {w.d_model} for cols in t):
            raise GQAError(f"{func}: weights.{name} must be {heads} tuples of d={w.d} columns of "
                           f"d_model={w.d_model} values, as prepare_weights makes them; make "
                           f"PreparedWeights with it")
    if type(w.o_cols) is not tuple or len(w.o_cols) != w.d_model or \
            set(map(type, w.o_cols)) != {tuple} or set(map(len, w.o_cols)) != {w.h * w.d}:
        raise GQAError(f"{func}: weights.o_cols must be d_model={w.d_model} tuples of h x d = "
                       f"{w.h * w.d} values, as prepare_weights makes them; make PreparedWeights "
                       f"with it")


def _flatten(a: object, b: object) -> tuple:
    """The numbers of two nested lists of one shape (at most 3 levels), as two flat lists."""
    sequences = (list, tuple, array)
    fa, fb, stack = [], [], [(a, b, ())]
    while stack:
        x, y, where = stack.pop()
        nested = isinstance(x, sequences), isinstance(y, sequences)
        if not any(nested):
            for name, value in (("a", x), ("b", y)):
                if type(value) not in _NUMBERS:
                    raise TypeError(f"output_difference: {name} holds {type(value).__name__} "
                                    f"{_brief(value)} at {list(where)}; values must be int or float")
                if type(value) is int and abs(value) > _FLOAT_MAX:
                    raise GQAError(f"output_difference: {name} holds an int beyond the largest "
                                   f"float, {_brief(value)}, at {list(where)}")
            fa.append(x)
            fb.append(y)
            continue
        if not all(nested) or len(x) != len(y):
            size = lambda t: len(t) if isinstance(t, sequences) else "a number"
            raise GQAError(f"output_difference: a and b differ in shape at index "
                           f"{list(where)}: {size(x)} vs {size(y)}")
        if len(where) == 3:
            raise GQAError("output_difference: a and b nest deeper than 3 levels; they must be a "
                           "matrix [n][d] or a multi-head tensor [h][n][d]")
        if set(map(type, x)) | set(map(type, y)) <= {float}:
            fa.extend(x)
            fb.extend(y)
            continue
        stack.extend((xi, yi, where + (i,)) for i, (xi, yi) in reversed(list(enumerate(zip(x, y)))))
    return fa, fb


# ---------------------------------------------------------------------------
# Plumbing.
# ---------------------------------------------------------------------------


def _transpose(rows: Sequence) -> list:
    return list(zip(*rows))


class _Saved:
    """What _layer_forward keeps for _layer_backward (micrograd's saved tensors)."""
    __slots__ = ("x", "causal", "rows", "prepared", "kv_heads", "q", "k", "v", "heads", "probs")


def _lists(t: Sequence) -> Heads:
    """A [heads][rows][cols] tensor copied as new lists of lists of floats."""
    return [[list(row) for row in head] for head in t]


def _unprepared(w: PreparedWeights) -> Weights:
    """The folded Weights that w was prepared from (the same values, as tuples)."""
    def rows(heads: Sequence) -> list:
        return [tuple(zip(*cols)) for cols in heads]             # [heads][d_model][d]
    o_rows = tuple(zip(*w.o_cols))                               # [h*d][d_model]
    return Weights(w_q=rows(w.q_cols), w_k=rows(w.k_cols), w_v=rows(w.v_cols),
                   w_o=[o_rows[i * w.d:(i + 1) * w.d] for i in range(w.h)])   # [h][d][d_model]


if __name__ == "__main__":           # python -m gqa COMMAND: the tools' command line, handed
    import importlib                 # this module as gqa, so that it is not loaded again
    sys.modules["gqa"] = sys.modules[__name__]
    sys.exit(importlib.import_module("gqa_tools.cli").main())
