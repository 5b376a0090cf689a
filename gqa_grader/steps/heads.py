"""The checks of steps 1 to 9: Parts 1 and 2 of the lab.

Part 1, group the query heads: valid_g, method_name, kv_head, group_heads.
Part 2, fold, repeat, attend: fold_kv_mean, repeat_kv, single_head_attention,
attention, grouped_attention.  How a check is called, and what it uses, is
checking.py's.
"""

import math

from ..expected.compare import expect, first_difference
from ..expected.inputs import as_rows, rand_tensor
from ..expected.mistakes import shadows
from ..language.i18n import N_, _
from ..running.failures import Failure
from ..running.values import plain
from .checking import ALL_HG, GROUPABLE, bad_g, draw_hg, step_into
from ..expected.answers import (ref_attention, ref_fold_kv_mean, ref_group_heads, ref_grouped_attention,
                                ref_kv_head, ref_method_name, ref_repeat_kv, ref_single_head_attention,
                                ref_valid_g)

STEPS = []                       # steps 1 to 9, in order: each @step below adds its own
step = step_into(STEPS)


@step(1, "valid_g", "the valid g for h: its divisors, in increasing order", 16)
def check_valid_g(module, case, rng):
    h = case + 1 if case < 16 else rng.randint(401, 4000) if rng.hidden else rng.randint(17, 400)
    expect(module.call("valid_g", h), ref_valid_g(h), f"h={h}", f"valid_g({h})")
    if case == 0:
        module.raises("valid_g", [0], [0])
        module.raises("valid_g", [-4], [-4])
    elif rng.hidden:                             # the rule, in the cases that earn the points too
        bad = -rng.randint(0, 40)
        module.raises("valid_g", [bad], [bad])


@step(2, "method_name", "MHA at g = h, MQA at g = 1 < h, GQA between", len(ALL_HG))
def check_method_name(module, case, rng):
    h, g = draw_hg(case, rng, wide=True)
    if rng.hidden:                               # the lesson is the three names: each as often
        g = rng.choice([h, 1, g])
    expect(module.call("method_name", h, g), ref_method_name(h, g), f"h={h}, g={g}", f"method_name({h}, {g})")
    bad = bad_g(h, rng)
    module.raises("method_name", [h, bad], [h, bad])


@step(3, "kv_head", "query head i reads key/value head i // (h // g)", len(ALL_HG))
def check_kv_head(module, case, rng):
    h, g = draw_hg(case, rng, wide=True)
    expect(module.calls("kv_head", [(i, h, g) for i in range(h)]), [ref_kv_head(i, h, g) for i in range(h)],
           f"h={h}, g={g}", f"[kv_head(i, {h}, {g}) for i in range({h})]",
           mistakes=shadows("ref_kv_head", lambda f: [f(i, h, g) for i in range(h)]))
    bad = bad_g(h, rng)
    module.raises("kv_head", [0, h, bad], [h, bad])


@step(4, "group_heads", "the query heads of each group, contiguous blocks", len(ALL_HG))
def check_group_heads(module, case, rng):
    h, g = draw_hg(case, rng, wide=True)
    expect(module.call("group_heads", h, g), ref_group_heads(h, g), f"h={h}, g={g}", f"group_heads({h}, {g})",
           mistakes=shadows("ref_group_heads", lambda f: f(h, g)))
    bad = bad_g(h, rng)
    module.raises("group_heads", [h, bad], [h, bad])


@step(5, "fold_kv_mean", "h heads fold to g, each the mean of its group, new lists", len(ALL_HG))
def check_fold(module, case, rng):
    h, g = draw_hg(case, rng)
    kv = rand_tensor(rng, h, rng.randint(1, 3), rng.randint(1, 3))
    where = f"h={h}, g={g}, kv [{h}][{len(kv[0])}][{len(kv[0][0])}]"
    expected = ref_fold_kv_mean(kv, g)           # from the grader's own copy, before the call
    expect(module.call("fold_kv_mean", kv, g, fresh=True), expected, where, f"fold_kv_mean(kv, {g})",
           mistakes=shadows("ref_fold_kv_mean", lambda f: f(kv, g)))
    expect(module.call("fold_kv_mean", kv, h, fresh=True), plain(kv), where,
           _("{call} == kv, exactly (new lists)").format(call=f"fold_kv_mean(kv, {h})"), exact=True)
    bad = bad_g(h, rng)
    module.raises("fold_kv_mean", [kv, bad], [h, bad])


@step(6, "repeat_kv", "g heads repeat out to h, interleaved, not tiled", len(ALL_HG))
def check_repeat(module, case, rng):
    h, g = draw_hg(case, rng)
    kv = rand_tensor(rng, g, rng.randint(1, 3), rng.randint(1, 3))
    expect(module.call("repeat_kv", kv, h), ref_repeat_kv(kv, h), f"h={h}, g={g}", f"repeat_kv(kv, {h})",
           exact=True, mistakes=shadows("ref_repeat_kv", lambda f: f(kv, h)))
    if g > 1:                                    # h = g + 1 is not a multiple of g
        module.raises("repeat_kv", [kv, g + 1], [g, g + 1])


def draw_qkv(rng, causal):
    n = rng.randint(1, 5)
    m = rng.randint(n if causal else 1, 7)
    d, dv = rng.randint(1, 6), rng.randint(1, 6)
    q, k, v = rand_tensor(rng, n, d), rand_tensor(rng, m, d), rand_tensor(rng, m, dv)
    scale = rng.choice([1.0, 3.0])              # larger scores make a wrong scale show
    return [[x * scale for x in row] for row in q], k, v, f"n={n}, m={m}, d={d}, d_v={dv}"


SINGLE_CASES = [  # (what, q, k, v, causal): the systematic cases of step 7; what: a message id
    (N_("one query, one key"), [[0.5]], [[2.0]], [[3.0]], False),
    (N_("causal, n = m = 3"), [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [0.0, 2.0], [1.0, -1.0]],
     [[1.0, 0.0, 2.0], [2.0, 1.0, 0.0], [4.0, -1.0, 1.0]], True),      # d_v = 3: no scale of d_v is d's
    (N_("causal, n = 2 of m = 4"), [[1.0], [-1.0]], [[0.5], [1.0], [-2.0], [0.0]], [[1.0], [2.0], [3.0], [4.0]],
     True),
    (N_("a single causal query sees every key"), [[1.0, 2.0]], [[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]],
     [[1.0], [0.0], [-1.0]], True),
]
SINGLE_EXTREMES = [  # (what, q, k, v, causal): what robustness asks of step 7 (q scaled by a draw)
    (N_("scores of +-1000 (a softmax without its max overflows)"), [[1000.0]], [[1.0], [-1.0], [0.999]],
     [[5.0], [7.0], [9.0]], False),
    (N_("scores of +-1e300"), [[1e300]], [[1.0], [-1.0]], [[5.0], [7.0]], False),
    (N_("scores of -1e300"), [[-1e300]], [[1.0], [-1.0]], [[5.0], [7.0]], False),
    (N_("an infinite score (it takes all the weight)"), [[math.inf]], [[1.0], [-1.0]], [[1.0], [2.0]], False),
    (N_("two infinite scores (they share the weight)"), [[math.inf]], [[1.0], [0.5], [-1.0]],
     [[1.0], [2.0], [4.0]], False),
    (N_("a NaN score (NaN propagates)"), [[1.0]], [[math.nan], [1.0]], [[1.0], [2.0]], False),
    (N_("an infinite score after a NaN one (inf x 0): NaN propagates"), [[math.inf]], [[1.0], [0.0]],
     [[1.0], [2.0]], False),
    (N_("tuple rows"), as_rows([[1.0, 0.5], [0.0, -1.0]], "tuple"), as_rows([[1.0, 0.0], [0.5, 2.0]], "tuple"),
     as_rows([[1.0], [3.0]], "tuple"), True),
    (N_("array('d') rows"), as_rows([[1.0, 0.5]], "array"), as_rows([[1.0, 0.0], [0.5, 2.0]], "array"),
     as_rows([[1.0, -1.0], [3.0, 0.0]], "array"), False),
]


@step(7, "single_head_attention", "softmax(q k^T / sqrt(d)) v, causal or not", len(SINGLE_CASES))
def check_single(module, case, rng):
    if case < len(SINGLE_CASES):
        where, q, k, v, causal = SINGLE_CASES[case]
        where = _(where)
    else:
        causal = case % 2 == 1
        q, k, v, where = draw_qkv(rng, causal)
    expect(module.call("single_head_attention", q, k, v, causal=causal, fresh=True),
           ref_single_head_attention(q, k, v, causal),
           f"{where}{_(', ')}causal={causal}", f"single_head_attention(q, k, v, causal={causal})",
           mistakes=shadows("ref_single_head_attention", lambda f: f(q, k, v, causal)))


def draw_heads(rng, case, h, kv_heads):
    """q [h][n][d], k and v [kv_heads][m][d or d_v], causal every other case."""
    n, m, d, dv = rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 3)
    causal = case % 2 == 1 and n <= m
    q = rand_tensor(rng, h, n, d)
    k, v = rand_tensor(rng, kv_heads, m, d), rand_tensor(rng, kv_heads, m, dv)
    return q, k, v, causal, f"n={n}, m={m}, d={d}, d_v={dv}, causal={causal}"


@step(8, "attention", "fold, repeat, attend: MHA at g = h to the last bit", 16)
def check_attention(module, case, rng):
    h = case + 1 if case < 16 else rng.choice(GROUPABLE) if rng.hidden else rng.randint(1, 16)
    q, k, v, causal, where = draw_heads(rng, case, h, h)
    for g in ref_valid_g(h):
        expected = ref_attention(q, k, v, g, causal)
        got = module.call("attention", q, k, v, g, causal=causal, fresh=True)
        expect(got, expected, f"h={h}, g={g}, {where}", f"attention(q, k, v, g={g}, causal={causal})",
               mistakes=shadows("ref_attention", lambda f: f(q, k, v, g, causal)))
    bad = bad_g(h, rng)
    module.raises("attention", [q, k, v, bad], [h, bad])
    try:                                         # the lab's claim, where single_head_attention works
        mha = [module.call("single_head_attention", q[i], k[i], v[i], causal=causal) for i in range(h)]
    except Failure:
        return
    if first_difference(mha, expected) is None:
        module.note(f"attention(q, k, v, {h}, causal={causal}) == [single_head_attention(q[i], k[i], v[i], "
               f"causal={causal}) for i in range({h})]", [("q", q), ("k", k), ("v", v)])
        expect(got, mha, f"h={h}, {where}", _("attention(q, k, v, g=h) must equal per-head "
                                              "single_head_attention bit for bit (==)"), exact=True)


@step(9, "grouped_attention", "h query heads read g key/value heads by index", len(ALL_HG))
def check_grouped(module, case, rng):
    h, g = draw_hg(case, rng)
    q, k, v, causal, where = draw_heads(rng, case, h, g)
    expect(module.call("grouped_attention", q, k, v, causal=causal, fresh=True),
           ref_grouped_attention(q, k, v, causal), f"h={h}, g={g}, {where}",
           f"grouped_attention(q, k, v, causal={causal})",
           mistakes=shadows("ref_grouped_attention", lambda f: f(q, k, v, causal)))
    if h % (g + 1):                              # g + 1 key/value heads do not divide h
        module.raises("grouped_attention", [q, k + k[:1], v + v[:1]], [h, g + 1])
