"""The checks of Parts 1 and 2 of the lab.

Part 1, group the query heads: valid_g, method_name, kv_head, group_heads.
Part 2, fold, repeat, attend: fold_kv_mean, repeat_kv, single_head_attention,
attention, grouped_attention.  How a check is called, and what it uses, is
checking.py's.
"""

import math

from ..expected.answers import (ref_attention, ref_fold_kv_mean, ref_group_heads, ref_grouped_attention,
                                ref_kv_head, ref_method_name, ref_repeat_kv, ref_single_head_attention,
                                ref_valid_g)
from ..expected.compare import expect, first_difference
from ..expected.inputs import as_rows, rand_tensor
from ..language.i18n import N_, _
from ..running.failures import Failure
from ..running.values import plain
from .checking import ALL_HG, GROUPABLE, GROUPED, WIDE, bad_g, draw_hg, ragged, scaled, shadows, step_into
from .refusals import BOOLS, CAUSAL, DATA, STRS, bad, bad_g_pair, refuse_g, sizes

STEPS = []                       # Parts 1 and 2's steps, in order: each @step below adds its own
step = step_into(STEPS, "heads")


def refuse_valid_g(module, rng):
    """The values of valid_g that break a rule: GQAError, naming them."""
    module.raises("valid_g", [0], [0])
    module.raises("valid_g", [-4], [-4])


@step("valid_g", 16, hidden="401 <= h <= 4000",
      types=lambda c: sizes("valid_g", [8], 0, 0),
      refusals=refuse_valid_g)
def check_valid_g(module, case, rng):
    h = case + 1 if case < 16 else rng.randint(401, 4000) if rng.hidden else rng.randint(17, 400)
    expect(module.call("valid_g", h), ref_valid_g(h), f"h={h}", f"valid_g({h})")
    if case == 0:
        module.raises("valid_g", [0], [0])
        module.raises("valid_g", [-4], [-4])
    elif rng.hidden:                             # the rule, in the cases that earn the points too
        bad = -rng.randint(0, 40)
        module.raises("valid_g", [bad], [bad])


@step("method_name", len(ALL_HG), hidden="17 <= h <= 32; g = h, g = 1, 1 < g < h",
      types=lambda c: sizes("method_name", [8, 2], 1, 0),
      refusals=refuse_g("method_name"))
def check_method_name(module, case, rng):
    h, g = draw_hg(case, rng, wide=True)
    if rng.hidden:                               # the lesson is the three names: each as often
        g = rng.choice([h, 1, g])
    expect(module.call("method_name", h, g), ref_method_name(h, g), f"h={h}, g={g}", f"method_name({h}, {g})")
    bad = bad_g(h, rng)
    module.raises("method_name", [h, bad], [h, bad])


def refuse_kv_head(module, rng):
    """The values of kv_head that break a rule: GQAError, naming them."""
    h, g = bad_g_pair(rng)
    module.raises("kv_head", [0, h, g], [h, g])
    h, g = draw_hg(rng.randrange(len(ALL_HG)), rng)
    i = h + rng.randint(1, 3)                    # a query head past the last one
    module.raises("kv_head", [i, h, g], [i, h])
    for i in (h, -1):                            # each side's edge: one past the last, one before the first
        module.raises("kv_head", [i, h, g], [i])
    module.raises("kv_head", [0, h, 0], [0])


@step("kv_head", len(ALL_HG), hidden=WIDE,
      types=lambda c: sizes("kv_head", [0, 8, 2], 0, 2),
      refusals=refuse_kv_head,
      mistakes=(("strided", "mis_kv_head_strided"),))
def check_kv_head(module, case, rng):
    h, g = draw_hg(case, rng, wide=True)
    expect(module.calls("kv_head", [(i, h, g) for i in range(h)]), [ref_kv_head(i, h, g) for i in range(h)],
           f"h={h}, g={g}", f"[kv_head(i, {h}, {g}) for i in range({h})]",
           mistakes=shadows("kv_head", lambda f: [f(i, h, g) for i in range(h)]))
    bad = bad_g(h, rng)
    module.raises("kv_head", [0, h, bad], [h, bad])


@step("group_heads", len(ALL_HG), hidden=WIDE,
      types=lambda c: sizes("group_heads", [8, 2], 0, 1),
      refusals=refuse_g("group_heads"),
      mistakes=(("strided", "mis_group_heads_strided"),))
def check_group_heads(module, case, rng):
    h, g = draw_hg(case, rng, wide=True)
    expect(module.call("group_heads", h, g), ref_group_heads(h, g), f"h={h}, g={g}", f"group_heads({h}, {g})",
           mistakes=shadows("group_heads", lambda f: f(h, g)))
    bad = bad_g(h, rng)
    module.raises("group_heads", [h, bad], [h, bad])


def types_fold_kv_mean(c):
    """The calls of fold_kv_mean that must raise TypeError."""
    return (sizes("fold_kv_mean", [c.k + c.k, 1], 1, 1) + bad("fold_kv_mean", [STRS, 1], DATA)
            + bad("fold_kv_mean", [[[[True, 1.0]]], 1], BOOLS))


def refuse_fold_kv_mean(module, rng):
    """The values of fold_kv_mean that break a rule: GQAError, naming them."""
    module.raises("fold_kv_mean", [[ragged(rng, 2, 2), rand_tensor(rng, 2, 2)], 1], [])
    h, g = bad_g_pair(rng)
    module.raises("fold_kv_mean", [rand_tensor(rng, h, 1, 2), g], [h, g])


def extremes_fold_kv_mean(module, rng):
    """Other kinds of rows, and values near the float range's ends, for fold_kv_mean."""
    f = rng.uniform(0.5, 1.0)                    # a draw: a hidden case is not a public one
    for kv, g in (([[[1e308 * f, -1e308 * f]], [[1e308 * f, -1e308 * f]]], 1),
                  ([[[1e308 * f]], [[1e308 * f]], [[1e308 * f]], [[-1e308 * f]]], 2)):
        expect(module.call("fold_kv_mean", kv, g, fresh=True), ref_fold_kv_mean(kv, g),
               _("values of {x}").format(x=f"{1e308 * f:.3g}"),
               _("{call} (a sum overflows; a mean does not)").format(call=f"fold_kv_mean(kv, {g})"))
    for how in ("tuple", "array"):
        h, g = draw_hg(rng.randrange(len(ALL_HG)), rng)
        kv = as_rows(rand_tensor(rng, h, 2, 2), how)
        expect(module.call("fold_kv_mean", kv, g, fresh=True), ref_fold_kv_mean(kv, g),
               _("{case}, {how} rows").format(case=f"h={h}, g={g}", how=how), f"fold_kv_mean(kv, {g})")


@step("fold_kv_mean", len(ALL_HG), hidden=GROUPED,
      types=types_fold_kv_mean,
      refusals=refuse_fold_kv_mean,
      extremes=extremes_fold_kv_mean,
      mistakes=(("sum", "mis_fold_sum"), ("first", "mis_fold_first"), ("strided", "mis_fold_strided")))
def check_fold(module, case, rng):
    h, g = draw_hg(case, rng)
    kv = rand_tensor(rng, h, rng.randint(1, 3), rng.randint(1, 3))
    where = f"h={h}, g={g}, kv [{h}][{len(kv[0])}][{len(kv[0][0])}]"
    expected = ref_fold_kv_mean(kv, g)           # from the grader's own copy, before the call
    expect(module.call("fold_kv_mean", kv, g, fresh=True), expected, where, f"fold_kv_mean(kv, {g})",
           mistakes=shadows("fold_kv_mean", lambda f: f(kv, g)))
    expect(module.call("fold_kv_mean", kv, h, fresh=True), plain(kv), where,
           _("{call} == kv, exactly (new lists)").format(call=f"fold_kv_mean(kv, {h})"), exact=True)
    bad = bad_g(h, rng)
    module.raises("fold_kv_mean", [kv, bad], [h, bad])


def types_repeat_kv(c):
    """The calls of repeat_kv that must raise TypeError."""
    return (sizes("repeat_kv", [c.k, 2], 1, 1) + bad("repeat_kv", [STRS, 1], DATA)
            + bad("repeat_kv", [[[[True, 1.0]]], 1], BOOLS))


def refuse_repeat_kv(module, rng):
    """The values of repeat_kv that break a rule: GQAError, naming them."""
    module.raises("repeat_kv", [[], 2], [])                                       # no heads
    g = rng.randint(2, 4)                        # g + 1 query heads: not a multiple of g
    module.raises("repeat_kv", [rand_tensor(rng, g, 1, 2), g + 1], [g, g + 1])


@step("repeat_kv", len(ALL_HG), hidden=GROUPED,
      types=types_repeat_kv,
      refusals=refuse_repeat_kv,
      mistakes=(("tiled", "mis_repeat_tiled"),))
def check_repeat(module, case, rng):
    h, g = draw_hg(case, rng)
    kv = rand_tensor(rng, g, rng.randint(1, 3), rng.randint(1, 3))
    expect(module.call("repeat_kv", kv, h), ref_repeat_kv(kv, h), f"h={h}, g={g}", f"repeat_kv(kv, {h})",
           exact=True, mistakes=shadows("repeat_kv", lambda f: f(kv, h)))
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


def types_single_head_attention(c):
    """The calls of single_head_attention that must raise TypeError."""
    return (bad("single_head_attention", [c.q[0], c.k[0], c.v[0]], CAUSAL, causal=1)
            + bad("single_head_attention", [[["1.0", "0.0"]], c.k[0], c.v[0]], DATA)
            + bad("single_head_attention", [[[True, 0.0]], [[1.0, 0.0]], [[1.0]]], BOOLS))


def refuse_single_head_attention(module, rng):
    """The values of single_head_attention that break a rule: GQAError, naming them."""
    module.raises("single_head_attention", [[[1.0]], [], []], [])                 # no keys
    module.raises("single_head_attention", [[[1.0, 2.0]], [[1.0]], [[1.0]]], [2, 1])   # d differs
    module.raises("single_head_attention", [[[1.0]], [[1.0], [2.0]], [[1.0], [2.0], [3.0]]], [2, 3])
    q, k, v = rand_tensor(rng, 3, 2), rand_tensor(rng, 2, 2), rand_tensor(rng, 2, 1)
    module.raises("single_head_attention", [q, k, v], [3, 2], kwargs={"causal": True})   # n > m
    q, k, v = rand_tensor(rng, 2, 2), rand_tensor(rng, 3, 2), ragged(rng, 3, 2)
    module.raises("single_head_attention", [q, k, v], [])


def extremes_single_head_attention(module, rng):
    """Other kinds of rows, and values near the float range's ends, for single_head_attention."""
    f = rng.uniform(0.8, 1.0)
    for where, q, k, v, causal in SINGLE_EXTREMES:
        if not isinstance(q[0], list):           # tuple or array rows: as they are
            f_q = q
        else:
            f_q = scaled(q, f)
        expect(module.call("single_head_attention", f_q, k, v, causal=causal, fresh=True),
               ref_single_head_attention(f_q, k, v, causal), f"{_(where)}, causal={causal}",
               f"single_head_attention(q, k, v, causal={causal})")


@step("single_head_attention", len(SINGLE_CASES),
      types=types_single_head_attention,
      refusals=refuse_single_head_attention,
      extremes=extremes_single_head_attention,
      mistakes=(("unscaled", "mis_single_unscaled"), ("scale_d", "mis_single_scale_d"),
                ("scale_dv", "mis_single_scale_dv"), ("no_offset", "mis_single_no_offset")))
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
           mistakes=shadows("single_head_attention", lambda f: f(q, k, v, causal)))


def draw_heads(rng, case, h, kv_heads):
    """q [h][n][d], k and v [kv_heads][m][d or d_v], causal every other case."""
    n, m, d, dv = rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 3)
    causal = case % 2 == 1 and n <= m
    q = rand_tensor(rng, h, n, d)
    k, v = rand_tensor(rng, kv_heads, m, d), rand_tensor(rng, kv_heads, m, dv)
    return q, k, v, causal, f"n={n}, m={m}, d={d}, d_v={dv}, causal={causal}"


def types_attention(c):
    """The calls of attention that must raise TypeError."""
    return (sizes("attention", [c.q, c.k + c.k, c.v + c.v, 2], 3, 3)
            + bad("attention", ["q", c.k + c.k, c.v + c.v, 2], DATA)
            + bad("attention", [c.q, c.k + c.k, c.v + c.v, 2], CAUSAL, causal=None))


def refuse_attention(module, rng):
    """The values of attention that break a rule: GQAError, naming them."""
    module.raises("attention", [[[[1.0]], [[1.0]]], [[[1.0]]], [[[1.0]]], 1], [2, 1])   # k, v not h heads
    h, g = bad_g_pair(rng)
    q = rand_tensor(rng, h, 1, 1)
    module.raises("attention", [q, q, q, g], [h, g])


@step("attention", 16, hidden="4 <= h <= 16, every g in valid_g(h)",
      types=types_attention,
      refusals=refuse_attention,
      mistakes=(("sum", "mis_attention_sum"), ("first", "mis_attention_first"),
                ("k_only", "mis_attention_k_only"), ("strided", "mis_attention_strided"),
                ("unscaled", "mis_attention_unscaled")))
def check_attention(module, case, rng):
    h = case + 1 if case < 16 else rng.choice(GROUPABLE) if rng.hidden else rng.randint(1, 16)
    q, k, v, causal, where = draw_heads(rng, case, h, h)
    for g in ref_valid_g(h):
        expected = ref_attention(q, k, v, g, causal)
        got = module.call("attention", q, k, v, g, causal=causal, fresh=True)
        expect(got, expected, f"h={h}, g={g}, {where}", f"attention(q, k, v, g={g}, causal={causal})",
               mistakes=shadows("attention", lambda f: f(q, k, v, g, causal)))
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


def types_grouped_attention(c):
    """The calls of grouped_attention that must raise TypeError."""
    return (bad("grouped_attention", [c.q, [[["1.0", "0.0"], ["0.5", "0.5"]]], c.v], DATA)
            + bad("grouped_attention", [c.q, c.k, c.v], CAUSAL, causal=1))


def refuse_grouped_attention(module, rng):
    """The values of grouped_attention that break a rule: GQAError, naming them."""
    module.raises("grouped_attention", [[[[1.0]], [[1.0]]], [[[1.0]], [[1.0]]], [[[1.0]]]], [2, 1])


def extremes_grouped_attention(module, rng):
    """Other kinds of rows, and values near the float range's ends, for grouped_attention."""
    for how in ("tuple", "array"):
        h, g = draw_hg(rng.randrange(len(ALL_HG)), rng)
        q, k, v, causal, where = draw_heads(rng, 1, h, g)
        q, k, v = as_rows(q, how), as_rows(k, how), as_rows(v, how)
        expect(module.call("grouped_attention", q, k, v, causal=causal, fresh=True),
               ref_grouped_attention(q, k, v, causal),
               _("{case}, {how} rows").format(case=f"h={h}, g={g}, {where}", how=how),
               f"grouped_attention(q, k, v, causal={causal})")


@step("grouped_attention", len(ALL_HG), hidden=GROUPED,
      types=types_grouped_attention,
      refusals=refuse_grouped_attention,
      extremes=extremes_grouped_attention,
      mistakes=(("strided", "mis_grouped_strided"), ("unscaled", "mis_grouped_unscaled")))
def check_grouped(module, case, rng):
    h, g = draw_hg(case, rng)
    q, k, v, causal, where = draw_heads(rng, case, h, g)
    expect(module.call("grouped_attention", q, k, v, causal=causal, fresh=True),
           ref_grouped_attention(q, k, v, causal), f"h={h}, g={g}, {where}",
           f"grouped_attention(q, k, v, causal={causal})",
           mistakes=shadows("grouped_attention", lambda f: f(q, k, v, causal)))
    if h % (g + 1):                              # g + 1 key/value heads do not divide h
        module.raises("grouped_attention", [q, k + k[:1], v + v[:1]], [h, g + 1])
