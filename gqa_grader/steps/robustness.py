"""Robustness: gqa.py's rules beyond the lesson, graded apart, and only when asked.

A lesson step grades what the handout teaches: the values, the shapes, MHA to the
last bit at g = h, arguments left unchanged, and GQAError for a g that does not
divide h (or h < 1); a refusal's wording is advice there.  The shipped gqa.py keeps
more rules than that (the REPL and the tools rely on them), and these three parts
grade them, a kind at a time, a case per function of the lesson:

    types       TypeError, naming the function, for an argument of the wrong type
    refusals    GQAError for every other rule a docstring states, and every refusal's
                message naming the function and the numbers at fault
    extremes    rows as tuples and array('d'); values near the float range's ends;
                inf and NaN

Each case runs once with the public seed, once with the run's (the extremes scale
their values by a draw, so a hidden case's answer is not a public one).  A part's
failures never fail a lesson step; `--steps robustness` (or `all,robustness`) asks for
them, covering the functions of the lesson steps graded with them.
"""

from .checking import ALL_HG, Step, bad_g, draw_hg, fields_of, ragged
from .checks import STEPS
from .heads import SINGLE_EXTREMES, draw_heads
from .layer import DIFFERENCE_EXTREMES, DIFFERENCE_FIELDS, WEIGHT_FIELDS, draw_sizes
from ..expected.answers import (ref_fold_kv_mean, ref_fold_weights, ref_grouped_attention, ref_layer,
                                ref_output_difference, ref_single_head_attention)
from ..expected.compare import expect
from ..expected.inputs import as_rows, rand_tensor, random_weights
from ..language.i18n import _
from ..running.exchange import send_weights
from ..running.values import plain
from .refusals import (refuse_attention, refuse_cache_elements, refuse_decode, refuse_difference,
                       refuse_fold_weights, refuse_grouped, refuse_kv_cache, refuse_layer,
                       refuse_repeat_kv, refuse_single, refuse_types)


PARTS = []              # the parts of robustness, steps 26 on, each registered by robustness()


def robustness(number, name, summary, table):
    """Register a robustness part: table maps a lesson step's function to what it must
    withstand, fn(module, rng); each is a case, once public and once hidden."""
    def check(module, subject, rng):
        table[subject](module, rng)
    PARTS.append(Step(number, name, summary, 0, check, part="robustness", subjects=list(table)))


# ---------------------------------------------------------------------------
# types: TypeError for every argument of the wrong type (refusals.calls_of).
# ---------------------------------------------------------------------------

def _types_of(name):
    return lambda module, rng: refuse_types(module, name)


TYPES = {st.name: _types_of(st.name) for st in STEPS if st.name != "count_multiplies"}


# ---------------------------------------------------------------------------
# refusals: every other rule, and each message naming the function and numbers.
# ---------------------------------------------------------------------------

def _bad_g_pair(rng):
    """(h, g): an h with a non-divisor, and such a g."""
    h = rng.choice([4, 6, 8, 9, 10, 12, 15, 16])
    return h, bad_g(h, rng)


def _refuse_sizes(module, rng):
    module.raises("valid_g", [0], [0])
    module.raises("valid_g", [-4], [-4])


def _refuse_g(name):
    def refuse(module, rng):
        h, g = _bad_g_pair(rng)
        module.raises(name, [h, g], [h, g])
        for g in (0, -h):                        # the range's edges: -h divides h, 0 divides nothing
            module.raises(name, [h, g], [h, g])
    return refuse


def _refuse_kv_head(module, rng):
    h, g = _bad_g_pair(rng)
    module.raises("kv_head", [0, h, g], [h, g])
    h, g = draw_hg(rng.randrange(len(ALL_HG)), rng)
    i = h + rng.randint(1, 3)                    # a query head past the last one
    module.raises("kv_head", [i, h, g], [i, h])
    for i in (h, -1):                            # each side's edge: one past the last, one before the first
        module.raises("kv_head", [i, h, g], [i])
    module.raises("kv_head", [0, h, 0], [0])


def _refuse_fold(module, rng):
    module.raises("fold_kv_mean", [[ragged(rng, 2, 2), rand_tensor(rng, 2, 2)], 1], [])
    h, g = _bad_g_pair(rng)
    module.raises("fold_kv_mean", [rand_tensor(rng, h, 1, 2), g], [h, g])


def _refuse_repeat(module, rng):
    refuse_repeat_kv(module, rng)
    g = rng.randint(2, 4)                        # g + 1 query heads: not a multiple of g
    module.raises("repeat_kv", [rand_tensor(rng, g, 1, 2), g + 1], [g, g + 1])


def _refuse_single(module, rng):
    refuse_single(module, rng)
    q, k, v = rand_tensor(rng, 3, 2), rand_tensor(rng, 2, 2), rand_tensor(rng, 2, 1)
    module.raises("single_head_attention", [q, k, v], [3, 2], kwargs={"causal": True})   # n > m
    q, k, v = rand_tensor(rng, 2, 2), rand_tensor(rng, 3, 2), ragged(rng, 3, 2)
    module.raises("single_head_attention", [q, k, v], [])


def _refuse_attention(module, rng):
    refuse_attention(module, rng)
    h, g = _bad_g_pair(rng)
    q = rand_tensor(rng, h, 1, 1)
    module.raises("attention", [q, q, q, g], [h, g])


def _refuse_init(module, rng):
    module.raises("init_weights", [0, 3, 2], [0], kwargs={"seed": 1})


def _refuse_layer(module, rng):
    refuse_layer(module, rng)
    module.raises("layer", [ragged(rng, 3, 2), send_weights(module, random_weights(rng, 2, 2, 1)), 1], [])


def _refuse_difference(module, rng):
    refuse_difference(module, rng)
    module.raises("output_difference", [rand_tensor(rng, 2, 3), rand_tensor(rng, 2, 2)], [])


def _refuse_cache_elements(module, rng):
    refuse_cache_elements(module, rng)
    module.raises("kv_cache_elements", [2, 0, 3, 4], [0])
    module.raises("kv_cache_elements", [2, 1, -1, 4], [-1])                     # a negative length
    module.raises("kv_cache_elements", [2, 1, 3, 4], [-1], kwargs={"batch": -1})


def _refuse_counts(name, good, edges, **kwargs):
    """name(*good) with each size of edges (index -> the value just past its rule) in turn:
    each must be refused, naming that value."""
    def refuse(module, rng):
        for at, value in edges:
            args, named = list(good), dict(kwargs)
            if isinstance(at, str):
                named[at] = value
            else:
                args[at] = value
            module.raises(name, args, [value], kwargs=named)
    return refuse


def _refuse_cache(module, rng):
    """KVCache's sizes, and appends refused whole: nothing stored unless both are valid."""
    refuse_kv_cache(module, rng)
    g, d = rng.randint(1, 3), rng.randint(1, 3)
    module.call("KVCache", g, d, keep="cache", value=False)
    k, v = rand_tensor(rng, g, d), rand_tensor(rng, g, d)
    module.call("$cache.append", k, v, value=False)
    module.raises("$cache.append", [k + [[0.0] * d], v], [g])                # g + 1 heads
    module.raises("$cache.append", [k, v[:-1] + [[0.0] * (d + 1)]], [d])      # a bad v
    expect(module.get("cache", "len")["len"], 1, f"g={g}, d={d}",
           _("len(cache) after refused appends (nothing is stored unless both are valid)"))


REFUSALS = {"valid_g": _refuse_sizes, "method_name": _refuse_g("method_name"),
            "kv_head": _refuse_kv_head, "group_heads": _refuse_g("group_heads"),
            "fold_kv_mean": _refuse_fold, "repeat_kv": _refuse_repeat,
            "single_head_attention": _refuse_single, "attention": _refuse_attention,
            "grouped_attention": refuse_grouped, "init_weights": _refuse_init,
            "fold_weights": refuse_fold_weights, "layer": _refuse_layer,
            "output_difference": _refuse_difference, "kv_cache_elements": _refuse_cache_elements,
            "KVCache": _refuse_cache, "decode_step": refuse_decode,
            "attention_multiplies": _refuse_counts("attention_multiplies", [2, 8, 2, 4, 16],
                                                   [(0, -1), (2, 0), (2, 3), (3, 0), (4, 0)]),
            "block_multiplies": _refuse_counts("block_multiplies", [2, 8, 2, 4, 16, 32],
                                               [(0, -1), (2, 9), (5, 0), ("mlp_matrices", 0)], mlp_matrices=3),
            "cache_table": _refuse_counts("cache_table", [4], [(0, 0), ("head_dim", 0), ("layers", -1),
                                                               ("length", -1), ("batch", -1)],
                                          layers=1, length=2, head_dim=2),
            "multiplies_table": _refuse_counts("multiplies_table", [1, 4, 2, 4], [(0, -1), (1, 0), (2, 0), (3, 0)]),
            "decode_traffic": _refuse_counts("decode_traffic", [2, 4, 1, 2, 8], [(0, -1), (2, 0), (3, 0),
                                                                                 ("batch", 0)], batch=1)}


# ---------------------------------------------------------------------------
# extremes: other kinds of rows, and values near the float range's ends.
# ---------------------------------------------------------------------------

def _scaled(t, f):
    """t with every number times f (inf and NaN stay what they are)."""
    return [_scaled(x, f) for x in t] if isinstance(t, list) else t * f


def _fold_extremes(module, rng):
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


def _single_extremes(module, rng):
    f = rng.uniform(0.8, 1.0)
    for where, q, k, v, causal in SINGLE_EXTREMES:
        if not isinstance(q[0], list):           # tuple or array rows: as they are
            f_q = q
        else:
            f_q = _scaled(q, f)
        expect(module.call("single_head_attention", f_q, k, v, causal=causal, fresh=True),
               ref_single_head_attention(f_q, k, v, causal), f"{_(where)}, causal={causal}",
               f"single_head_attention(q, k, v, causal={causal})")


def _grouped_extremes(module, rng):
    for how in ("tuple", "array"):
        h, g = draw_hg(rng.randrange(len(ALL_HG)), rng)
        q, k, v, causal, where = draw_heads(rng, 1, h, g)
        q, k, v = as_rows(q, how), as_rows(k, how), as_rows(v, how)
        expect(module.call("grouped_attention", q, k, v, causal=causal, fresh=True),
               ref_grouped_attention(q, k, v, causal),
               _("{case}, {how} rows").format(case=f"h={h}, g={g}, {where}", how=how),
               f"grouped_attention(q, k, v, causal={causal})")


def _fold_weights_extremes(module, rng):
    for how in ("tuple", "array"):
        h, g, _n, d, d_model, _where = draw_sizes(rng, rng.randrange(len(ALL_HG)))
        fields = [as_rows(t, how) for t in random_weights(rng, h, d_model, d)]
        folded = module.call("fold_weights", send_weights(module, fields), g)
        expect(fields_of(folded, f"fold_weights(w, {g})", "Weights", WEIGHT_FIELDS),
               plain(ref_fold_weights(*fields, g)),
               _("{case}, {how} rows").format(case=f"h={h}, g={g}, d={d}, d_model={d_model}", how=how),
               _("{call}: new lists throughout").format(call=f"fold_weights(weights, {g})"),
               names=WEIGHT_FIELDS)


def _layer_extremes(module, rng):
    for how in ("tuple", "array"):
        h, g, n, d, d_model, where = draw_sizes(rng, rng.randrange(len(ALL_HG)))
        fields, x = random_weights(rng, h, d_model, d), as_rows(rand_tensor(rng, n, d_model), how)
        expect(module.call("layer", x, send_weights(module, fields), g, fresh=True),
               ref_layer(x, *fields, g, False), _("{case}, x of {how} rows").format(case=where, how=how),
               f"layer(x, weights, g={g})")


def _difference_extremes(module, rng):
    f = rng.uniform(0.5, 1.0)
    rows, cols = rng.randint(1, 3), rng.randint(1, 4)
    cases = [(_(where), _scaled(a, f), _scaled(b, f)) for where, a, b in DIFFERENCE_EXTREMES]
    cases.append((_("{shape}, a of tuple rows, b of array rows").format(shape=f"[{rows}][{cols}]"),
                  as_rows(rand_tensor(rng, rows, cols), "tuple"), as_rows(rand_tensor(rng, rows, cols), "array")))
    for where, a, b in cases:
        got = module.call("output_difference", a, b)
        expect(fields_of(got, "output_difference(a, b)", "Difference", DIFFERENCE_FIELDS),
               ref_output_difference(plain(a), plain(b)), where,
               "output_difference(a, b): max_abs, rel_l2, cosine", names=DIFFERENCE_FIELDS)


EXTREMES = {"fold_kv_mean": _fold_extremes, "single_head_attention": _single_extremes,
            "grouped_attention": _grouped_extremes, "fold_weights": _fold_weights_extremes,
            "layer": _layer_extremes, "output_difference": _difference_extremes}


robustness(26, "types", "TypeError naming the function for an argument of the wrong type", TYPES)
robustness(27, "refusals", "GQAError for every rule a docstring states, naming the function and numbers",
           REFUSALS)
robustness(28, "extremes", "tuple and array('d') rows, values near the float range's ends, inf, NaN",
           EXTREMES)
