"""The checks of Part 3 of the lab, one attention layer on MHA
weights run with g key/value heads: init_weights, fold_weights, prepare_weights,
layer, output_difference.
"""

import math

from ..expected.answers import (ref_fold_weights, ref_init_weights, ref_layer, ref_output_difference,
                                ref_prepare_weights)
from ..expected.compare import expect, first_difference
from ..expected.inputs import as_rows, nested, rand_tensor, random_weights
from ..language.i18n import N_, _
from ..running.exchange import ref, send_weights
from ..running.failures import Failure
from ..running.values import kind, plain
from .checking import (ALL_HG, GROUPED, draw_hg, eval_at, fields_of, not_tuples, ragged, scaled, shadows,
                       step_into)
from .refusals import BOOLS, CAUSAL, DATA, bad, sizes

STEPS = []                       # Part 3's steps, in order: each @step below adds its own
step = step_into(STEPS, "layer")


WEIGHT_FIELDS = ("w_q", "w_k", "w_v", "w_o")


def weights_unchanged(module, fields, name, what, where):
    """The kept Weights `name` still hold the grader's lists: the call just made left them
    alone (shown as that call, then the weights' fields)."""
    module.statements[-1].setup = True
    held = module.get(name, *WEIGHT_FIELDS)
    for field, value in zip(WEIGHT_FIELDS, fields):
        if first_difference(plain(held[field]), plain(value), exact=True):
            raise Failure(_("case {case}: {call} changed the caller's weights.{field} in place; "
                            "it must leave the Weights it is given alone").format(case=where, call=what,
                                                                                   field=field))


def draw_sizes(rng, case, wide=False):
    """(h, g) as draw_hg gives them (wide too), and small n, d, d_model."""
    h, g = draw_hg(case, rng, wide)
    n, d, d_model = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 4)
    return h, g, n, d, d_model, f"h={h}, g={g}, n={n}, d={d}, d_model={d_model}"


def refuse_init_weights(module, rng):
    """The values of init_weights that break a rule: GQAError, naming them."""
    module.raises("init_weights", [0, 3, 2], [0], kwargs={"seed": 1})


@step("init_weights", 8, hidden="1000 <= seed < 10**6",
      types=lambda c: sizes("init_weights", [2, 3, 2], 0, 1, seed=0),
      refusals=refuse_init_weights)
def check_init_weights(module, case, rng):
    h, _g, _n, d, d_model, _where = draw_sizes(rng, case * 7)
    drawn = rng.randrange(1000, 10 ** 6) if rng.hidden else rng.randrange(1000)   # hidden: no public seed
    seed = drawn if case % 2 else f"seed {drawn}"
    what = f"init_weights({h}, {d_model}, {d}, seed={seed!r})"
    w = module.call("init_weights", h, d_model, d, seed=seed)
    got = fields_of(w, what, "Weights", WEIGHT_FIELDS)
    expected = ref_init_weights(h, d_model, d, seed)
    for name, t, want in zip(WEIGHT_FIELDS, got, expected):
        expect(t, nested([len(want), len(want[0]), len(want[0][0])]), f"h={h}, d_model={d_model}, d={d}",
               _("{value}: its shape").format(value=f"{what}.{name}"),
               rel=math.inf)                     # any values: the shape and the types
    expect(got, expected, f"h={h}, d_model={d_model}, d={d}, seed={seed!r}",
           _("{call}: w_q, w_k, w_v, w_o, drawn in that order from Random(seed).random(), each head "
             "by head and row by row, as sqrt(3 / fan_in) * (2 * u - 1)").format(call=what),
           names=WEIGHT_FIELDS)
    module.raises("init_weights", [0, d_model, d], [0], kwargs={"seed": 1})


def refuse_fold_weights(module, rng):
    """The values of fold_weights that break a rule: GQAError, naming them."""
    w_q, w_k, w_v, w_o = random_weights(rng, 4, 3, 2)
    module.raises("fold_weights", [send_weights(module, [w_q, w_k[:3], w_v, w_o]), 2], [3, 4, 2])
    module.raises("fold_weights", [send_weights(module, [w_q, w_k, w_v, [h[:1] for h in w_o]]), 2], [])


def extremes_fold_weights(module, rng):
    """Other kinds of rows, and values near the float range's ends, for fold_weights."""
    for how in ("tuple", "array"):
        h, g, _n, d, d_model, _where = draw_sizes(rng, rng.randrange(len(ALL_HG)))
        fields = [as_rows(t, how) for t in random_weights(rng, h, d_model, d)]
        folded = module.call("fold_weights", send_weights(module, fields), g)
        expect(fields_of(folded, f"fold_weights(w, {g})", "Weights", WEIGHT_FIELDS),
               plain(ref_fold_weights(*fields, g)),
               _("{case}, {how} rows").format(case=f"h={h}, g={g}, d={d}, d_model={d_model}", how=how),
               _("{call}: new lists throughout").format(call=f"fold_weights(weights, {g})"),
               names=WEIGHT_FIELDS)


@step("fold_weights", len(ALL_HG), hidden=GROUPED,
      types=lambda c: sizes("fold_weights", [c.w, 1], 1, 1) + bad("fold_weights", [c.strs, 1], DATA),
      refusals=refuse_fold_weights,
      extremes=extremes_fold_weights,
      mistakes=(("sum", "mis_fold_weights_sum"), ("first", "mis_fold_weights_first"),
                ("strided", "mis_fold_weights_strided")))
def check_fold_weights(module, case, rng):
    h, g, _n, d, d_model, _where = draw_sizes(rng, case)
    where = f"h={h}, g={g}, d={d}, d_model={d_model}"
    fields = random_weights(rng, h, d_model, d)
    folded = module.call("fold_weights", send_weights(module, fields), g)
    expect(fields_of(folded, f"fold_weights(w, {g})", "Weights", WEIGHT_FIELDS),
           plain(ref_fold_weights(*fields, g)), where,
           _("{call}: new lists throughout").format(call=f"fold_weights(weights, {g})"), names=WEIGHT_FIELDS,
           mistakes=shadows("fold_weights", lambda f: plain(f(*fields, g))))
    weights_unchanged(module, fields, "w", f"fold_weights(w, {g})", where)
    ready = plain(ref_fold_weights(*fields, g))
    again = module.call("fold_weights", send_weights(module, ready, "folded"), g)
    expect(fields_of(again, f"fold_weights(folded, {g})", "Weights", WEIGHT_FIELDS)[1], ready[1], where,
           _("fold_weights of weights that already have g heads"))


PREPARED_FIELDS = ("h", "g", "d_model", "d", "q_cols", "k_cols", "v_cols", "o_cols")


@step("prepare_weights", len(ALL_HG), hidden=GROUPED,
      types=lambda c: sizes("prepare_weights", [c.w, 2], 1, 1) + bad("prepare_weights", [c.strs, 1], DATA))
def check_prepare(module, case, rng):
    h, g, _n, d, d_model, _where = draw_sizes(rng, case)
    where = f"h={h}, g={g}, d={d}, d_model={d_model}"
    fields = random_weights(rng, h, d_model, d)
    p = module.call("prepare_weights", send_weights(module, fields), g)
    got = fields_of(p, f"prepare_weights(w, {g})", "PreparedWeights", PREPARED_FIELDS)
    expected = ref_prepare_weights(*fields, g)
    expect(got[:4], [expected[f] for f in PREPARED_FIELDS[:4]], where,
           "prepare_weights(...).h, g, d_model, d", names=PREPARED_FIELDS[:4])
    expect(got[4:], [expected[f] for f in PREPARED_FIELDS[4:]], where,
           "prepare_weights(weights, g): q_cols, k_cols, v_cols, o_cols", loose=True,
           names=PREPARED_FIELDS[4:])
    for name, t in zip(PREPARED_FIELDS[4:], got[4:]):
        lists = not_tuples(t)
        if lists is not None:
            raise Failure(_("case {case}: {value} is {kind}; a PreparedWeights' tensors are tuples "
                            "throughout (it cannot change after it was checked)").format(
                case=where, value=f"prepare_weights(w, {g}).{name}{lists}", kind=kind(eval_at(t, lists))))
    weights_unchanged(module, fields, "w", f"prepare_weights(w, {g})", where)


def types_layer(c):
    """The calls of layer that must raise TypeError."""
    return (sizes("layer", [c.x, c.w, 1], 2, 2) + bad("layer", [[["a", "b", "c"]], c.w, 1], DATA)
            + bad("layer", [c.x, c.w, 1], CAUSAL, causal=None))


def refuse_layer(module, rng):
    """The values of layer that break a rule: GQAError, naming them."""
    module.call("prepare_weights", send_weights(module, random_weights(rng, 2, 3, 2)), 1, keep="p", value=False)
    module.raises("layer", [rand_tensor(rng, 1, 3), ref("p"), 2], [1, 2])      # prepared for another g
    module.raises("layer", [ragged(rng, 3, 2), send_weights(module, random_weights(rng, 2, 2, 1)), 1], [])


def extremes_layer(module, rng):
    """Other kinds of rows, and values near the float range's ends, for layer."""
    for how in ("tuple", "array"):
        h, g, n, d, d_model, where = draw_sizes(rng, rng.randrange(len(ALL_HG)))
        fields, x = random_weights(rng, h, d_model, d), as_rows(rand_tensor(rng, n, d_model), how)
        expect(module.call("layer", x, send_weights(module, fields), g, fresh=True),
               ref_layer(x, *fields, g, False), _("{case}, x of {how} rows").format(case=where, how=how),
               f"layer(x, weights, g={g})")


@step("layer", len(ALL_HG), hidden=GROUPED,
      types=types_layer,
      refusals=refuse_layer,
      extremes=extremes_layer)
def check_layer(module, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    w = send_weights(module, fields)
    for causal in (False, True):
        expect(module.call("layer", x, w, g, causal=causal, fresh=True), ref_layer(x, *fields, g, causal),
               f"{where}, causal={causal}", f"layer(x, weights, g={g}, causal={causal})")
    if case % 5 == 0:                            # one case in five: the caller's weights
        weights_unchanged(module, fields, "w", f"layer(x, w, {g})", where)


DIFFERENCE_CASES = [  # (what, a, b): after the three drawn ones; what: a message id
    (N_("b all zeros"), [[1.0, -2.0]], [[0.0, 0.0]]),
    (N_("three levels: [h][n][d]"), [[[1.0, 2.0]], [[3.0, 4.0]]], [[[1.0, 2.5]], [[3.0, 3.0]]]),
]
DIFFERENCE_EXTREMES = [  # (what, a, b): what robustness asks of step 14 (scaled by a draw)
    (N_("values of 1e200 (their squares overflow)"), [[1e200, 2e200], [-3e200, 1e200]],
     [[1e200, 1e200], [-3e200, 2e200]]),
    (N_("values of 1e-200 (their squares underflow)"), [[1e-200, 2e-200], [-3e-200, 1e-200]],
     [[1e-200, 1e-200], [-3e-200, 2e-200]]),
    (N_("values near the largest float"), [[1.5e308, -1.7e308]], [[1.7e308, -1.5e308]]),
    (N_("a NaN after a zero difference (NaN makes every field NaN)"), [[1.0, math.nan]], [[1.0, 1.0]]),
]
DIFFERENCE_FIELDS = ("max_abs", "rel_l2", "cosine")


def types_output_difference(c):
    """The calls of output_difference that must raise TypeError."""
    return (bad("output_difference", [[["1.0"]], [[1.0]]], DATA)
            + bad("output_difference", [[[1.0]], [[None]]], DATA)
            + bad("output_difference", [[[True]], [[1.0]]], BOOLS))


def refuse_output_difference(module, rng):
    """The values of output_difference that break a rule: GQAError, naming them."""
    module.raises("output_difference", [[[[[1.0]]]], [[[[1.0]]]]], [])           # deeper than 3 levels
    module.raises("output_difference", [rand_tensor(rng, 2, 3), rand_tensor(rng, 2, 2)], [])


def extremes_output_difference(module, rng):
    """Other kinds of rows, and values near the float range's ends, for output_difference."""
    f = rng.uniform(0.5, 1.0)
    rows, cols = rng.randint(1, 3), rng.randint(1, 4)
    cases = [(_(where), scaled(a, f), scaled(b, f)) for where, a, b in DIFFERENCE_EXTREMES]
    cases.append((_("{shape}, a of tuple rows, b of array rows").format(shape=f"[{rows}][{cols}]"),
                  as_rows(rand_tensor(rng, rows, cols), "tuple"), as_rows(rand_tensor(rng, rows, cols), "array")))
    for where, a, b in cases:
        got = module.call("output_difference", a, b)
        expect(fields_of(got, "output_difference(a, b)", "Difference", DIFFERENCE_FIELDS),
               ref_output_difference(plain(a), plain(b)), where,
               "output_difference(a, b): max_abs, rel_l2, cosine", names=DIFFERENCE_FIELDS)


@step("output_difference", 3 + len(DIFFERENCE_CASES), hidden="a, b: [h][n][d] and [n][d]",
      types=types_output_difference,
      refusals=refuse_output_difference,
      extremes=extremes_output_difference)
def check_difference(module, case, rng):
    if 3 <= case < 3 + len(DIFFERENCE_CASES):
        where, a, b = DIFFERENCE_CASES[case - 3]
        where = _(where)
    else:
        rows, cols = rng.randint(1, 3), rng.randint(1, 4)
        shape = [rng.randint(1, 3), rows, cols] if rng.hidden and case % 2 else [rows, cols]   # [h][n][d] too
        a = rand_tensor(rng, *shape)
        b = a if case == 0 else nested(shape) if case == 1 else rand_tensor(rng, *shape)
        where = _("a and b of shape {shape}").format(shape="".join(f"[{n}]" for n in shape))   # not "case [3][2]"
    got = module.call("output_difference", a, b)
    expect(fields_of(got, "output_difference(a, b)", "Difference", DIFFERENCE_FIELDS),
           ref_output_difference(plain(a), plain(b)), where, "output_difference(a, b): max_abs, rel_l2, cosine",
           names=DIFFERENCE_FIELDS)
