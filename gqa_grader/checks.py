"""The 25 checks, one per step, in the lab's order.

A check is called once per case with the Case it talks through, the case's
number and its random.Random; it raises Failure on a wrong answer.  Each step
has systematic cases (the same on every run: every (h, g) with h <= 16, causal
on and off, the edge cases, the refusals its docstring states), then random
ones drawn from random.Random(f"{step}:{seed}:{case}").  The expected values
come from the reference, computed from the grader's own copy of the inputs.
"""

import math
import random
import re

from .compare import Other, Record, _short, expect, first_difference, kind
from .exchange import ref, send_weights
from .failures import Failure
from .i18n import N_, _, ngettext
from .inputs import Counter, as_rows, nested, plain, rand_tensor, random_weights
from .answers import (RefKVCache, ref_attention, ref_attention_multiplies, ref_block_multiplies,
                      ref_cache_table, ref_count_multiplies, ref_decode_step, ref_decode_traffic,
                      ref_fold_kv_mean, ref_fold_weights, ref_group_heads, ref_grouped_attention,
                      ref_grouped_attention_backward, ref_init_weights, ref_kv_cache_elements,
                      ref_kv_head, ref_layer, ref_layer_backward, ref_method_name,
                      ref_multiplies_table, ref_output_difference, ref_prepare_weights,
                      ref_repeat_kv, ref_single_head_attention, ref_valid_g)


# ---------------------------------------------------------------------------
# The steps, in the lab's order: one check per public function of gqa.py.
# Each check is called once per case; it raises Failure on a wrong answer.
# ---------------------------------------------------------------------------

class Step:
    """One graded part.  part: "lesson" (a step of the lab: one public function of gqa.py)
    or "robustness" (the module's other rules, a kind at a time: its cases are its
    subjects, the lesson steps' functions, each once with the public seed and once with
    the run's)."""

    def __init__(self, number, name, summary, systematic, fn, needs=(), touches=(), why="",
                 part="lesson", subjects=()):
        self.number, self.name, self.summary = number, name, summary
        self.systematic, self.fn = systematic, fn
        self.needs, self.touches, self.why = tuple(needs), tuple(touches), why
        self.part, self.subjects = part, tuple(subjects)


STEPS = []              # the lab's 25 steps, in order
PARTS = []              # the parts of robustness (robustness.py), steps 26 on
PUBLIC_CASES = 5        # public random cases per lesson step, after the systematic ones


class Draw(random.Random):
    """A case's random stream; hidden: whether the case is a hidden one (drawn from the
    run's seed), whose integer inputs come from a space the public cases do not cover."""

    def __new__(cls, key, hidden=False):          # Random's own takes one argument (3.10)
        return super().__new__(cls, key)

    def __init__(self, key, hidden=False):
        super().__init__(key)
        self.hidden = hidden


def step(number, name, summary, systematic, needs=(), touches=(), why="", agrees=None):
    """Register a lesson step's check.  needs: the later steps whose functions it calls
    too; touches: the earlier steps a student goes back to for it, and why.  One more
    systematic case may follow the check's own: agrees(s, rng), the module's own
    functions agreeing with each other (no reference in it, so a handout checks it as
    the teacher's run does).  The check sees its random cases numbered from systematic
    on, whatever came between."""
    extra = [agrees] if agrees else []

    def register(fn):
        def check(s, case, rng):
            if systematic <= case < systematic + len(extra):
                return extra[case - systematic](s, rng)
            return fn(s, case - len(extra) if case > systematic else case, rng)
        STEPS.append(Step(number, name, summary, systematic + len(extra), check, needs, touches, why))
        return fn
    return register


def robustness(number, name, summary, table):
    """Register a robustness part: table maps a lesson step's function to what it must
    withstand, fn(s, rng); each is a case, once public and once hidden."""
    def check(s, subject, rng):
        table[subject](s, rng)
    PARTS.append(Step(number, name, summary, 0, check, part="robustness", subjects=list(table)))


ALL_HG = [(h, g) for h in range(1, 17) for g in ref_valid_g(h)]     # every (h, g) with h <= 16


def draw_hg(case, rng, wide=False):
    """The systematic (h, g) pairs first, in order, then random ones; a hidden case
    draws a grouping proper (draw_grouping)."""
    if rng.hidden:
        return draw_grouping(rng, wide)
    if case < len(ALL_HG):
        return ALL_HG[case]
    h = rng.randint(1, 16)
    return h, rng.choice(ref_valid_g(h))


def proper_g(h):
    """The g of a grouping proper of h, 1 < g < h (none for h prime): counted here,
    not asked of the reference, whose answers a handout holds for public cases only."""
    return [g for g in range(2, h) if h % g == 0]


# The h that have a grouping proper: public cases' sizes, and hidden ones' of a
# step whose answer is an integer (wide), which no public case has.
GROUPABLE = [h for h in range(4, 17) if proper_g(h)]
GROUPABLE_WIDE = [h for h in range(17, 33) if proper_g(h)]


def draw_grouping(rng, wide=False):
    """A hidden case's (h, g): always 1 < g < h, where GQA's answer differs from MHA's,
    MQA's, a strided grouping's (i % g) and a tiled repeat's, so that points go to the
    grouping alone (MHA and MQA have their systematic public cases).  wide: h from 17
    to 32, so that an integer answer cannot be looked up in the public cases."""
    h = rng.choice(GROUPABLE_WIDE if wide else GROUPABLE)
    return h, rng.choice(proper_g(h))


def bad_g(h, rng):
    """A g that breaks the rule for h: a non-divisor when h has one, else out of range."""
    return rng.choice([g for g in range(2, h) if h % g] or [0, h + 1, -1])


def fields_of(got, what, record, names, call=None):
    """The fields of a record the module returned, in order; a Failure if it is not one.
    what: the call ("fold_weights(w, 2)": it must return one) or a part ("each row's ratio",
    translated); call: whether what is a call, by default whether it ends in ")" (give it
    for a translated what)."""
    if not isinstance(got, Record):
        if what.endswith(")") if call is None else call:
            text = ngettext("{call} must return a {record} record (with the field {fields}); "
                            "got {kind}: {value}",
                            "{call} must return a {record} record (with the fields {fields}); "
                            "got {kind}: {value}", len(names))
        else:
            text = ngettext("{call} must be a {record} record (with the field {fields}); "
                            "got {kind}: {value}",
                            "{call} must be a {record} record (with the fields {fields}); "
                            "got {kind}: {value}", len(names))
        raise _not_a_record(text, what, record, names, got)
    return [getattr(got, name) for name in names]


def _not_a_record(text, what, record, names, got):
    """The Failure of a value that is not the record asked for: text, a translated
    sentence with the fields {call}, {record}, {fields}, {kind} and {value}."""
    return Failure(text.format(call=what, record=record, fields=", ".join(names), kind=kind(got),
                               value=_short(got)))


def not_tuples(t, where=""):
    """Where in t a sequence is not a tuple ("[0][1]", "" for t itself), or None."""
    if not isinstance(t, tuple):
        return where
    for i, x in enumerate(t):
        if not isinstance(x, (int, float)):
            found = not_tuples(x, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def eval_at(t, where):
    """t[i][j]... for where = "[i][j]..."."""
    for i in re.findall(r"\[(\d+)\]", where):
        t = t[int(i)]
    return t


def ragged(rng, rows, cols):
    """A matrix whose last row is one value short (or long): ragged rows, to be refused."""
    m = rand_tensor(rng, rows, cols)
    m[-1] = m[-1][:-1] if cols > 1 else m[-1] + [0.5]
    return m


@step(1, "valid_g", "the valid g for h: its divisors, in increasing order", 16)
def check_valid_g(s, case, rng):
    h = case + 1 if case < 16 else rng.randint(401, 4000) if rng.hidden else rng.randint(17, 400)
    expect(s.call("valid_g", h), ref_valid_g(h), f"h={h}", f"valid_g({h})")
    if case == 0:
        s.raises("valid_g", [0], [0])
        s.raises("valid_g", [-4], [-4])
    elif rng.hidden:                             # the rule, in the cases that earn the points too
        bad = -rng.randint(0, 40)
        s.raises("valid_g", [bad], [bad])


@step(2, "method_name", "MHA at g = h, MQA at g = 1 < h, GQA between", len(ALL_HG))
def check_method_name(s, case, rng):
    h, g = draw_hg(case, rng, wide=True)
    if rng.hidden:                               # the lesson is the three names: each as often
        g = rng.choice([h, 1, g])
    expect(s.call("method_name", h, g), ref_method_name(h, g), f"h={h}, g={g}", f"method_name({h}, {g})")
    bad = bad_g(h, rng)
    s.raises("method_name", [h, bad], [h, bad])


@step(3, "kv_head", "query head i reads key/value head i // (h // g)", len(ALL_HG))
def check_kv_head(s, case, rng):
    h, g = draw_hg(case, rng, wide=True)
    expect(s.calls("kv_head", [(i, h, g) for i in range(h)]), [ref_kv_head(i, h, g) for i in range(h)],
           f"h={h}, g={g}", f"[kv_head(i, {h}, {g}) for i in range({h})]")
    bad = bad_g(h, rng)
    s.raises("kv_head", [0, h, bad], [h, bad])


@step(4, "group_heads", "the query heads of each group, contiguous blocks", len(ALL_HG))
def check_group_heads(s, case, rng):
    h, g = draw_hg(case, rng, wide=True)
    expect(s.call("group_heads", h, g), ref_group_heads(h, g), f"h={h}, g={g}", f"group_heads({h}, {g})")
    bad = bad_g(h, rng)
    s.raises("group_heads", [h, bad], [h, bad])


@step(5, "fold_kv_mean", "h heads fold to g, each the mean of its group, new lists", len(ALL_HG))
def check_fold(s, case, rng):
    h, g = draw_hg(case, rng)
    kv = rand_tensor(rng, h, rng.randint(1, 3), rng.randint(1, 3))
    where = f"h={h}, g={g}, kv [{h}][{len(kv[0])}][{len(kv[0][0])}]"
    expected = ref_fold_kv_mean(kv, g)           # from the grader's own copy, before the call
    expect(s.call("fold_kv_mean", kv, g, fresh=True), expected, where, f"fold_kv_mean(kv, {g})")
    expect(s.call("fold_kv_mean", kv, h, fresh=True), plain(kv), where,
           _("{call} == kv, exactly (new lists)").format(call=f"fold_kv_mean(kv, {h})"), exact=True)
    bad = bad_g(h, rng)
    s.raises("fold_kv_mean", [kv, bad], [h, bad])


@step(6, "repeat_kv", "g heads repeat out to h, interleaved, not tiled", len(ALL_HG))
def check_repeat(s, case, rng):
    h, g = draw_hg(case, rng)
    kv = rand_tensor(rng, g, rng.randint(1, 3), rng.randint(1, 3))
    expect(s.call("repeat_kv", kv, h), ref_repeat_kv(kv, h), f"h={h}, g={g}", f"repeat_kv(kv, {h})",
           exact=True)
    if g > 1:                                    # h = g + 1 is not a multiple of g
        s.raises("repeat_kv", [kv, g + 1], [g, g + 1])


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
     [[1.0], [2.0], [4.0]], True),
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
def check_single(s, case, rng):
    if case < len(SINGLE_CASES):
        where, q, k, v, causal = SINGLE_CASES[case]
        where = _(where)
    else:
        causal = case % 2 == 1
        q, k, v, where = draw_qkv(rng, causal)
    expect(s.call("single_head_attention", q, k, v, causal=causal, fresh=True),
           ref_single_head_attention(q, k, v, causal),
           f"{where}, causal={causal}", f"single_head_attention(q, k, v, causal={causal})")


def draw_heads(rng, case, h, kv_heads):
    """q [h][n][d], k and v [kv_heads][m][d or d_v], causal every other case."""
    n, m, d, dv = rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 3)
    causal = case % 2 == 1 and n <= m
    q = rand_tensor(rng, h, n, d)
    k, v = rand_tensor(rng, kv_heads, m, d), rand_tensor(rng, kv_heads, m, dv)
    return q, k, v, causal, f"n={n}, m={m}, d={d}, d_v={dv}, causal={causal}"


@step(8, "attention", "fold, repeat, attend: MHA at g = h to the last bit", 16)
def check_attention(s, case, rng):
    h = case + 1 if case < 16 else rng.choice(GROUPABLE) if rng.hidden else rng.randint(1, 16)
    q, k, v, causal, where = draw_heads(rng, case, h, h)
    for g in ref_valid_g(h):
        expected = ref_attention(q, k, v, g, causal)
        got = s.call("attention", q, k, v, g, causal=causal, fresh=True)
        expect(got, expected, f"h={h}, g={g}, {where}", f"attention(q, k, v, g={g}, causal={causal})")
    bad = bad_g(h, rng)
    s.raises("attention", [q, k, v, bad], [h, bad])
    try:                                         # the lab's claim, where single_head_attention works
        mha = [s.call("single_head_attention", q[i], k[i], v[i], causal=causal) for i in range(h)]
    except Failure:
        return
    if first_difference(mha, expected) is None:
        s.note(f"attention(q, k, v, {h}, causal={causal}) == [single_head_attention(q[i], k[i], v[i], "
               f"causal={causal}) for i in range({h})]", [("q", q), ("k", k), ("v", v)])
        expect(got, mha, f"h={h}, {where}", _("attention(q, k, v, g=h) must equal per-head "
                                              "single_head_attention bit for bit (==)"), exact=True)


@step(9, "grouped_attention", "h query heads read g key/value heads by index", len(ALL_HG))
def check_grouped(s, case, rng):
    h, g = draw_hg(case, rng)
    q, k, v, causal, where = draw_heads(rng, case, h, g)
    expect(s.call("grouped_attention", q, k, v, causal=causal, fresh=True),
           ref_grouped_attention(q, k, v, causal), f"h={h}, g={g}, {where}",
           f"grouped_attention(q, k, v, causal={causal})")
    if h % (g + 1):                              # g + 1 key/value heads do not divide h
        s.raises("grouped_attention", [q, k + k[:1], v + v[:1]], [h, g + 1])


WEIGHT_FIELDS = ("w_q", "w_k", "w_v", "w_o")


def weights_unchanged(s, fields, name, what, where):
    """The kept Weights `name` still hold the grader's lists: the call just made left them
    alone (shown as that call, then the weights' fields)."""
    s.statements[-1].setup = True
    held = s.get(name, *WEIGHT_FIELDS)
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


@step(10, "init_weights", "random MHA weights, drawn as documented, the same for a seed", 8)
def check_init_weights(s, case, rng):
    h, _g, _n, d, d_model, _where = draw_sizes(rng, case * 7)
    drawn = rng.randrange(1000, 10 ** 6) if rng.hidden else rng.randrange(1000)   # hidden: no public seed
    seed = drawn if case % 2 else f"seed {drawn}"
    what = f"init_weights({h}, {d_model}, {d}, seed={seed!r})"
    w = s.call("init_weights", h, d_model, d, seed=seed)
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
    s.raises("init_weights", [0, d_model, d], [0], kwargs={"seed": 1})


@step(11, "fold_weights", "the same weights with g K/V heads, by mean", len(ALL_HG))
def check_fold_weights(s, case, rng):
    h, g, _n, d, d_model, _where = draw_sizes(rng, case)
    where = f"h={h}, g={g}, d={d}, d_model={d_model}"
    fields = random_weights(rng, h, d_model, d)
    folded = s.call("fold_weights", send_weights(s, fields), g)
    expect(fields_of(folded, f"fold_weights(w, {g})", "Weights", WEIGHT_FIELDS),
           plain(ref_fold_weights(*fields, g)), where,
           _("{call}: new lists throughout").format(call=f"fold_weights(weights, {g})"), names=WEIGHT_FIELDS)
    weights_unchanged(s, fields, "w", f"fold_weights(w, {g})", where)
    ready = plain(ref_fold_weights(*fields, g))
    again = s.call("fold_weights", send_weights(s, ready, "folded"), g)
    expect(fields_of(again, f"fold_weights(folded, {g})", "Weights", WEIGHT_FIELDS)[1], ready[1], where,
           _("fold_weights of weights that already have g heads"))


PREPARED_FIELDS = ("h", "g", "d_model", "d", "q_cols", "k_cols", "v_cols", "o_cols")


@step(12, "prepare_weights", "weights checked, folded and transposed once", len(ALL_HG))
def check_prepare(s, case, rng):
    h, g, _n, d, d_model, _where = draw_sizes(rng, case)
    where = f"h={h}, g={g}, d={d}, d_model={d_model}"
    fields = random_weights(rng, h, d_model, d)
    p = s.call("prepare_weights", send_weights(s, fields), g)
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
    weights_unchanged(s, fields, "w", f"prepare_weights(w, {g})", where)


@step(13, "layer", "one layer on MHA weights with g key/value heads, causal or not", len(ALL_HG))
def check_layer(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    w = send_weights(s, fields)
    for causal in (False, True):
        expect(s.call("layer", x, w, g, causal=causal, fresh=True), ref_layer(x, *fields, g, causal),
               f"{where}, causal={causal}", f"layer(x, weights, g={g}, causal={causal})")
    if case % 5 == 0:                            # one case in five: the caller's weights
        weights_unchanged(s, fields, "w", f"layer(x, w, {g})", where)


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


@step(14, "output_difference", "max abs, relative L2 and cosine of two outputs",
      3 + len(DIFFERENCE_CASES))
def check_difference(s, case, rng):
    if 3 <= case < 3 + len(DIFFERENCE_CASES):
        where, a, b = DIFFERENCE_CASES[case - 3]
        where = _(where)
    else:
        rows, cols = rng.randint(1, 3), rng.randint(1, 4)
        shape = [rng.randint(1, 3), rows, cols] if rng.hidden and case % 2 else [rows, cols]   # [h][n][d] too
        a = rand_tensor(rng, *shape)
        b = a if case == 0 else nested(shape) if case == 1 else rand_tensor(rng, *shape)
        where = "".join(f"[{n}]" for n in shape)
    got = s.call("output_difference", a, b)
    expect(fields_of(got, "output_difference(a, b)", "Difference", DIFFERENCE_FIELDS),
           ref_output_difference(plain(a), plain(b)), where, "output_difference(a, b): max_abs, rel_l2, cosine",
           names=DIFFERENCE_FIELDS)


CACHE_CASES = [(1, 1, 0, 1, 1), (2, 3, 0, 4, 2), (1, 1, 1, 1, 1), (3, 2, 5, 4, 1), (2, 4, 3, 2, 3),
               (1, 4, 0, 3, 3)]                      # length = 0 is valid: an empty cache


@step(15, "kv_cache_elements", "2 x layers x g x length x head_dim x batch numbers", len(CACHE_CASES))
def check_cache_elements(s, case, rng):
    if case < len(CACHE_CASES):
        layers, g, length, d, batch = CACHE_CASES[case]
    elif rng.hidden:                             # 4 to 9 layers, where no public case is; g > 1
        layers, g, length, d, batch = (rng.randint(4, 9), rng.randint(2, 4), rng.randint(1, 5),
                                       rng.randint(1, 4), rng.randint(1, 2))
    else:
        layers, g, length, d, batch = (rng.randint(1, 3), rng.randint(1, 4), rng.randint(0, 5),
                                       rng.randint(1, 4), rng.randint(1, 2))
    expect(s.call("kv_cache_elements", layers, g, length, d, batch=batch),
           ref_kv_cache_elements(layers, g, length, d, batch),
           f"layers={layers}, kv_heads={g}, length={length}, head_dim={d}, batch={batch}",
           _("kv_cache_elements(...) against the elements of a cache built as nested lists"))


TERMS = ("q_proj", "k_proj", "v_proj", "scores", "weighted_sum", "o_proj")


@step(16, "attention_multiplies", "multiplications per term, full and causal, as counted", len(ALL_HG))
def check_multiplies(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case, wide=True)
    causal = case % 2 == 1
    counts = ref_attention_multiplies(n, h, g, d, d_model, causal, rng)
    got = s.call("attention_multiplies", n, h, g, d, d_model, causal=causal)
    expect(fields_of(got, "attention_multiplies(...)", "Multiplies", TERMS + ("total",)),
           [counts.get(t, 0) for t in TERMS] + [sum(counts.values())],
           f"{where}, causal={causal}", "attention_multiplies(...) " + ", ".join(TERMS + ("total",)),
           names=TERMS + ("total",))


BLOCK_FIELDS = ("q_o_proj", "k_v_proj", "body", "mlp", "total")


@step(17, "block_multiplies", "a whole block's multiplications, its MLP included", 8)
def check_block(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case * 6, wide=True)
    d_ff, matrices = rng.randint(1, 5), rng.choice([2, 3])
    c = ref_block_multiplies(n, h, g, d, d_model, d_ff, matrices, rng)
    got = s.call("block_multiplies", n, h, g, d, d_model, d_ff, mlp_matrices=matrices)
    expect(fields_of(got, "block_multiplies(...)", "BlockMultiplies", BLOCK_FIELDS),
           [c["q_proj"] + c["o_proj"], c["k_proj"] + c["v_proj"], c["scores"] + c["weighted_sum"],
            c["mlp"], sum(c.values())], f"{where}, d_ff={d_ff}, mlp_matrices={matrices}",
           "block_multiplies(...) q_o_proj, k_v_proj, body, mlp, total", names=BLOCK_FIELDS)


def rows_of(rows, what, record, names):
    if not isinstance(rows, list):
        raise Failure(_("{call} must return a list of {record} records; got {kind}: {value}").format(
            call=what, record=record, kind=kind(rows), value=_short(rows)))
    found = []
    for r in rows:
        if not isinstance(r, Record):
            text = ngettext("each row of {call} must return a {record} record (with the field {fields}); "
                            "got {kind}: {value}",
                            "each row of {call} must return a {record} record (with the fields {fields}); "
                            "got {kind}: {value}", len(names))
            raise _not_a_record(text, what, record, names, r)
        found.append(fields_of(r, what, record, names))
    return found


@step(18, "cache_table", "the cache for every divisor g, with ratios to MHA", 16)
def check_cache_table(s, case, rng):
    h = case + 1 if case < 16 else rng.choice(GROUPABLE_WIDE) if rng.hidden else rng.randint(1, 16)
    layers, length, d = rng.randint(1, 2), rng.randint(1, 4), rng.randint(1, 3)
    if case % 4 == 3:                            # no layers, or nothing cached: every ratio is 1.0
        layers, length = (0, length) if case % 8 == 3 else (layers, 0)
    rows = s.call("cache_table", h, layers=layers, length=length, head_dim=d)
    expect(rows_of(rows, "cache_table(...)", "CacheRow",
                   ("method", "kv_heads", "group_size", "elements", "ratio")),
           ref_cache_table(h, layers, length, d), f"h={h}, layers={layers}, length={length}, head_dim={d}",
           _("cache_table rows (method, kv_heads, group_size, elements, ratio)"))


@step(19, "multiplies_table", "the multiplications for every divisor g, with ratios to MHA", 16)
def check_multiplies_table(s, case, rng):
    h = case + 1 if case < 16 else rng.choice(GROUPABLE_WIDE) if rng.hidden else rng.randint(1, 16)
    n, d, d_model, causal = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 4), case % 2 == 1
    if case % 4 == 3:                            # n = 0: every ratio is 1.0
        n = 0
    rows = s.call("multiplies_table", n, h, d, d_model, causal=causal)
    got = [[g, size, fields_of(counts, _("each row's counts"), "Multiplies", ("total",), call=False)[0],
            fields_of(ratio, _("each row's ratio"), "Multiplies", ("total",), call=False)[0]]
           for g, size, counts, ratio in rows_of(rows, "multiplies_table(...)", "MultipliesRow",
                                                 ("kv_heads", "group_size", "counts", "ratio"))]
    expect(got, ref_multiplies_table(n, h, d, d_model, causal, rng),
           f"n={n}, h={h}, d={d}, d_model={d_model}, causal={causal}",
           _("multiplies_table rows (kv_heads, group_size, counts.total, ratio.total)"))


def tally_is_its_closed_form(s, rng):
    """What count_multiplies() counts while layer() runs is what attention_multiplies()
    says it costs, term by term: the module's count and its formula agree."""
    h, g, n, d, d_model, where = draw_sizes(rng, rng.randrange(len(ALL_HG)))
    causal = rng.random() < 0.5
    w = send_weights(s, random_weights(rng, h, d_model, d))
    x = rand_tensor(rng, n, d_model)
    tally = s.tally([("layer", [x, w, g], {"causal": causal})], TERMS)
    closed = s.call("attention_multiplies", n, h, g, d, d_model, causal=causal)
    expect([tally[t] for t in TERMS], fields_of(closed, "attention_multiplies(...)", "Multiplies", TERMS),
           f"{where}, causal={causal}",
           _("tally fields {fields} after layer(), against your own attention_multiplies(...) (a count "
             "and its closed form agree)").format(fields=", ".join(TERMS)), names=TERMS)


@step(20, "count_multiplies", "the tally kept while the code runs, nested blocks too",
      len(ALL_HG), needs=(21, 22), touches=(7, 9, 13, 22), why="to count what their kernels multiply and read",
      agrees=tally_is_its_closed_form)
def check_tally(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    w = send_weights(s, fields)
    causal = case % 2 == 1
    counter = ref_count_multiplies(x, fields, g, causal)
    expected = [counter.counts.get(t, 0) for t in TERMS] + [counter.reads["weight_reads"]]
    nested_block = case % 3 == 2                 # a block inside a block adds to the outer one
    tally = s.tally([("layer", [x, w, g], {"causal": causal})], TERMS + ("weight_reads",),
                    nested=nested_block)
    # A count is worth something only when the work it counts is real: the values
    # computed inside the block must be the layer's (a closed-form tally is not a tally).
    expect(tally.get("values", [None])[0], ref_layer(x, *fields, g, causal=causal),
           f"{where}, causal={causal}", _("the value layer() returned inside count_multiplies() "
                                          "(a tally counts real work)"))
    if nested_block:
        what = _("the outer tally fields {fields} after layer() in a count_multiplies() block inside it")
    else:
        what = _("tally fields {fields} after layer()")
    expect([tally[t] for t in TERMS] + [tally["weight_reads"]], expected, f"{where}, causal={causal}",
           what.format(fields=", ".join(TERMS + ("weight_reads",))))
    multiplies = _("the outer tally.multiplies()") if nested_block else "tally.multiplies()"
    expect(fields_of(tally["multiplies()"], multiplies, "Multiplies", TERMS + ("total",), call=True),
           expected[:6] + [sum(expected[:6])], where,
           _("{call} after layer()").format(call=multiplies))
    # The attention kernels alone, with d_v != d: scores count d, the weighted sum d_v.
    n2, m2, d2 = rng.randint(1, 3), rng.randint(3, 4), rng.randint(1, 3)
    dv2 = d2 + rng.randint(1, 2)
    q, k, v = rand_tensor(rng, h, n2, d2), rand_tensor(rng, g, m2, d2), rand_tensor(rng, g, m2, dv2)
    kernels = Counter()
    ref_grouped_attention(q, k, v, causal, kernels)
    ref_single_head_attention(q[0], k[0], v[0], causal, kernels)
    tally = s.tally([("grouped_attention", [q, k, v], {"causal": causal}),
                     ("single_head_attention", [q[0], k[0], v[0]], {"causal": causal})], TERMS)
    expect([tally["scores"], tally["weighted_sum"]], [kernels.counts.get("scores", 0),
                                                      kernels.counts.get("weighted_sum", 0)],
           f"h={h}, g={g}, n={n2}, m={m2}, d={d2}, d_v={dv2}, causal={causal}",
           _("tally fields scores, weighted_sum after grouped_attention() and single_head_attention() "
             "(scores count d per key, the weighted sum d_v)"))
    s.call("KVCache", g, d, keep="cache", value=False)
    cache, decoding = RefKVCache(g, d), Counter()
    for x_t in x:
        ref_decode_step(x_t, fields, g, cache, decoding)
    tally = s.tally([("decode_step", [x_t, w, g, ref("cache")], {}) for x_t in x],
                    ("cache_reads", "weight_reads"))
    rows = ref_layer(x, *fields, g, causal=True)
    expect(tally.get("values"), rows, where, _("the values decode_step returned inside "
                                               "count_multiplies(), row by row, against the reference causal "
                                               "layer (a tally counts real work)"))
    expect([tally["cache_reads"], tally["weight_reads"]],
           [decoding.reads["cache_reads"], decoding.reads["weight_reads"]], where,
           _("tally fields cache_reads, weight_reads after decoding x row by row"))


def cache_arrays(state, name, g, where):
    """cache.k or cache.v as the lab promises it: a list of g array('d'); a Failure if not."""
    held = state[name]
    if not isinstance(held, list) or len(held) != g:
        raise Failure(_("case {case}: {value} must be a list of g={g} array('d'); got {kind}: {shown}").format(
            case=where, value=f"cache.{name}", g=g, kind=kind(held), shown=_short(held)))
    for j, a in enumerate(held):
        if not isinstance(a, Other) or not a.type_name.startswith("array"):
            raise Failure(_("case {case}: {value} must be an array('d'); got {kind}").format(
                case=where, value=f"cache.{name}[{j}]", kind=kind(a)))
    return held


@step(21, "KVCache", "a cache of g heads: append, len, elements, nbytes, any capacity", 16)
def check_kv_cache(s, case, rng):
    g, d, n = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 5)
    capacity = [0, n, max(1, n // 2), n + 3][case % 4]
    rows = [(rand_tensor(rng, g, d), rand_tensor(rng, g, d)) for _row in range(n)]
    where = _("g={g}, d={d}, capacity={capacity}, {n} positions").format(g=g, d=d, capacity=capacity, n=n)
    s.call("KVCache", g, d, capacity=capacity, keep="cache", value=False)
    built = RefKVCache(g, d)
    for k, v in rows:
        s.call("$cache.append", k, v, value=False)
        built.append(k, v)
    state = s.get("cache", "len", "elements", "nbytes")
    expect([state["len"], state["elements"], state["nbytes"]], [len(built), built.elements,
                                                                8 * built.elements], where,
           "len(cache), cache.elements, cache.nbytes")
    state = s.get("cache", "k", "v")
    for name, store in (("k", built.k), ("v", built.v)):
        for j, held in enumerate(cache_arrays(state, name, g, where)):
            expect(held.values[:n * d], [x for row in store[j] for x in row], where,
                   _("{value}: the rows appended, in order").format(value=f"cache.{name}[{j}]"), exact=True)


def decoding_is_a_causal_layer(s, rng):
    """Decoding x row by row with decode_step gives the rows of the module's own causal
    layer(x): the two paths of one computation agree."""
    h, g, n, d, d_model, where = draw_sizes(rng, rng.randrange(len(ALL_HG)))
    w = send_weights(s, random_weights(rng, h, d_model, d))
    x = rand_tensor(rng, n + 1, d_model)
    s.call("KVCache", g, d, keep="cache", value=False)
    rows = [s.call("decode_step", x_t, w, g, ref("cache"), setup=True) for x_t in x]
    expect(rows, s.call("layer", x, w, g, causal=True), _("{case}, {n} positions").format(case=where, n=n + 1),
           _("decode_step row by row against your own layer(x, weights, g, causal=True)"))


@step(22, "decode_step", "decoding position by position equals a causal layer", len(ALL_HG),
      agrees=decoding_is_a_causal_layer)
def check_decode(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    w = send_weights(s, fields)
    s.call("KVCache", g, d, keep="cache", value=False)
    expected = ref_layer(x, *fields, g, causal=True)
    for t, x_t in enumerate(x):
        expect(s.call("decode_step", x_t, w, g, ref("cache"), fresh=True, setup=True), expected[t],
               _("{case}, position {t}").format(case=where, t=t),
               _("decode_step of x[{t}] against row {t} of the reference causal layer").format(t=t))
    built = RefKVCache(g, d)
    for _x_t in x:
        built.append(nested([g, d]), nested([g, d]))
    state = s.get("cache", "len", "elements")
    expect([state["len"], state["elements"]], [len(built), built.elements], where,
           "len(cache), cache.elements")
    if case % 5 == 0:
        weights_unchanged(s, fields, "w", f"decode_step(x_t, w, {g}, cache)", where)


TRAFFIC_FIELDS = ("cache_reads", "weight_reads", "multiplies", "ratio")


@step(23, "decode_traffic", "cache and weight reads of n decode steps, batched", len(ALL_HG))
def check_traffic(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case, wide=True)
    if case % 6 == 5:                            # no steps: every count 0, the ratio 0.0
        n, where = 0, where.replace(f"n={n}", "n=0")
    batch = [1, 2, 3][case % 3]
    expected = ref_decode_traffic(n, h, g, d, d_model, batch, rng)
    got = s.call("decode_traffic", n, h, g, d, d_model, batch=batch)
    expect(fields_of(got, "decode_traffic(...)", "DecodeTraffic", TRAFFIC_FIELDS), expected,
           f"{where}, batch={batch}", _("decode_traffic(...) cache_reads, weight_reads "
                                        "(read once per step for the whole batch), multiplies, ratio"),
           names=TRAFFIC_FIELDS)


@step(24, "grouped_attention_backward", "gradients of q, k, v: a shared head sums its group's",
      len(ALL_HG))
def check_backward(s, case, rng):
    h, g = draw_hg(case, rng)
    q, k, v, causal, where = draw_heads(rng, case, h, g)
    d_out = rand_tensor(rng, h, len(q[0]), len(v[0][0]))
    got = s.call("grouped_attention_backward", q, k, v, d_out, causal=causal, fresh=True)
    if not isinstance(got, (list, tuple)) or len(got) != 3:
        raise Failure(_("case {case}: grouped_attention_backward must return (dq, dk, dv); got {value}").format(
            case=f"h={h}, g={g}", value=_short(got)))
    expect(list(got), list(ref_grouped_attention_backward(q, k, v, d_out, causal)), f"h={h}, g={g}, {where}",
           "grouped_attention_backward(q, k, v, d_out): dq, dk, dv", rel=1e-8, names=("dq", "dk", "dv"))


@step(25, "layer_backward", "gradients of one layer's x and weights, through the mean fold",
      len(ALL_HG))
def check_layer_backward(s, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    folded = case % 3 == 2                       # weights that already have g K/V heads
    fields = random_weights(rng, h, d_model, d, g if folded else None)
    x, d_y, causal = rand_tensor(rng, n, d_model), rand_tensor(rng, n, d_model), case % 2 == 1
    got = s.call("layer_backward", x, send_weights(s, fields), g, d_y, causal=causal, fresh=True)
    if not isinstance(got, (list, tuple)) or len(got) != 2 or not isinstance(got[1], Record):
        raise Failure(_("case {case}: layer_backward must return (dx, a Weights record of gradients); "
                        "got {value}").format(case=where, value=_short(got)))
    dx, grads = ref_layer_backward(x, *fields, g, d_y, causal)
    expect([got[0]] + fields_of(got[1], "layer_backward(...)[1]", "Weights", WEIGHT_FIELDS), [dx] + grads,
           _("{case}, causal={causal}, K/V heads given {count}").format(case=where, causal=causal,
                                                                       count=len(fields[1])),
           "layer_backward(x, weights, g, d_y): dx, grads.w_q, w_k, w_v, w_o", rel=1e-8,
           names=("dx",) + tuple(f"grads.{f}" for f in WEIGHT_FIELDS))



def check_names():
    return [st.name for st in STEPS]


# The step of each public name, as the checks above number them; a class's
# methods belong to the step of its class (Tally is count_multiplies').
STEP_OF = {st.name: st.number for st in STEPS}
STEP_OF["Tally"] = STEP_OF["count_multiplies"]
