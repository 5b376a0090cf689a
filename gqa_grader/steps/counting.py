"""The checks of Part 4 of the lab, counting what g changes (the
cache) and what it does not: kv_cache_elements, attention_multiplies,
block_multiplies, cache_table, multiplies_table, count_multiplies.
"""

from ..expected.answers import (RefKVCache, ref_attention_multiplies, ref_block_multiplies, ref_cache_table,
                                ref_count_multiplies, ref_decode_step, ref_grouped_attention,
                                ref_kv_cache_elements, ref_layer, ref_multiplies_table,
                                ref_single_head_attention)
from ..expected.compare import expect
from ..expected.inputs import Counter, rand_tensor, random_weights
from ..language.i18n import N_, _, ngettext
from ..running.exchange import ref, send_weights
from ..running.failures import Failure
from ..running.values import Record, _short, kind
from .checking import ALL_HG, GROUPABLE_WIDE, GROUPED, WIDE, fields_of, not_a_record, shadows, step_into
from .layer import draw_sizes
from .refusals import BOOL, CAUSAL, bad, refuse_counts, sizes

STEPS = []                       # Part 4's steps, in order: each @step below adds its own
step = step_into(STEPS, "counting")


CACHE_CASES = [(1, 1, 0, 1, 1), (2, 3, 0, 4, 2), (1, 1, 1, 1, 1), (3, 2, 5, 4, 1), (2, 4, 3, 2, 3),
               (1, 4, 0, 3, 3)]                      # length = 0 is valid: an empty cache


def types_kv_cache_elements(c):
    """The calls of kv_cache_elements that must raise TypeError."""
    return (sizes("kv_cache_elements", [1, 2, 3, 4], 0, 2, batch=1)
            + bad("kv_cache_elements", [1, 2, 3, 4], BOOL, batch=True))


def refuse_kv_cache_elements(module, rng):
    """The values of kv_cache_elements that break a rule: GQAError, naming them."""
    module.raises("kv_cache_elements", [1, 1, 1, 0], [0])                         # head_dim 0
    module.raises("kv_cache_elements", [-1, 1, 1, 1], [-1])                       # a negative count
    module.raises("kv_cache_elements", [2, 0, 3, 4], [0])
    module.raises("kv_cache_elements", [2, 1, -1, 4], [-1])                     # a negative length
    module.raises("kv_cache_elements", [2, 1, 3, 4], [-1], kwargs={"batch": -1})


@step("kv_cache_elements", len(CACHE_CASES), hidden="4 <= layers <= 9; 2 <= kv_heads <= 64, kv_heads = 1; "
                                                 "batch in (1, 3)",
      types=types_kv_cache_elements,
      refusals=refuse_kv_cache_elements,
      mistakes=(("no_2", "mis_cache_no_2"), ("no_batch", "mis_cache_no_batch")))
def check_cache_elements(module, case, rng):
    if case < len(CACHE_CASES):
        layers, g, length, d, batch = CACHE_CASES[case]
    elif rng.hidden:                             # 4 to 9 layers, where no public case is; g > 1
        layers, g, length, d, batch = (rng.randint(4, 9), rng.randint(2, 64), rng.randint(1, 5),
                                       rng.randint(1, 4), rng.choice((1, 3)))    # batch 2 would be K and V
    else:
        layers, g, length, d, batch = (rng.randint(1, 3), rng.randint(1, 4), rng.randint(0, 5),
                                       rng.randint(1, 4), rng.randint(1, 2))
    for g in [g, 1] if rng.hidden else [g]:     # a hidden case again at MQA's one K/V head
        expect(module.call("kv_cache_elements", layers, g, length, d, batch=batch),
               ref_kv_cache_elements(layers, g, length, d, batch),
               f"layers={layers}, kv_heads={g}, length={length}, head_dim={d}, batch={batch}",
               _("kv_cache_elements(...) against the elements of a cache built as nested lists"),
               mistakes=shadows("kv_cache_elements", lambda f, g=g: f(layers, g, length, d, batch)))


TERMS = ("q_proj", "k_proj", "v_proj", "scores", "weighted_sum", "o_proj")


def types_attention_multiplies(c):
    """The calls of attention_multiplies that must raise TypeError."""
    return (sizes("attention_multiplies", [2, 8, 2, 4, 16], 0, 3)
            + bad("attention_multiplies", [2, 8, 2, 4, 16], CAUSAL, causal=1))


@step("attention_multiplies", len(ALL_HG), hidden=WIDE,
      types=types_attention_multiplies,
      refusals=refuse_counts("attention_multiplies", [2, 8, 2, 4, 16],
                                   [(0, -1), (2, 0), (2, 3), (3, 0), (4, 0)]),
      mistakes=(("kv_h", "mis_multiplies_kv_h"), ("body_g", "mis_multiplies_body_g"),
                ("causal_full", "mis_multiplies_causal_full"), ("causal_strict", "mis_multiplies_causal_strict")))
def check_multiplies(module, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case, wide=True)
    causal = case % 2 == 1
    def terms(c):
        return [c.get(t, 0) for t in TERMS] + [sum(c.values())]
    args = (n, h, g, d, d_model, causal, rng)
    counts = ref_attention_multiplies(*args)
    got = module.call("attention_multiplies", n, h, g, d, d_model, causal=causal)
    expect(fields_of(got, "attention_multiplies(...)", "Multiplies", TERMS + ("total",)), terms(counts),
           f"{where}{_(', ')}causal={causal}", "attention_multiplies(...) " + ", ".join(TERMS + ("total",)),
           names=TERMS + ("total",), mistakes=shadows("attention_multiplies", lambda f: terms(f(*args))))


BLOCK_FIELDS = ("q_o_proj", "k_v_proj", "body", "mlp", "total")


def types_block_multiplies(c):
    """The calls of block_multiplies that must raise TypeError."""
    return (sizes("block_multiplies", [2, 8, 2, 4, 16, 32], "mlp_matrices", 5, mlp_matrices=3)
            + bad("block_multiplies", [2, 8, 2, 4, 16, 32], CAUSAL, causal=None))


@step("block_multiplies", 8, hidden=WIDE,
      types=types_block_multiplies,
      refusals=refuse_counts("block_multiplies", [2, 8, 2, 4, 16, 32],
                                   [(0, -1), (2, 9), (5, 0), ("mlp_matrices", 0)], mlp_matrices=3),
      mistakes=(("block_non_causal", "mis_block_non_causal"), ("kv_h", "mis_block_kv_h"),
                ("body_g", "mis_block_body_g")))
def check_block(module, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case * 6, wide=True)
    d_ff, matrices = rng.randint(1, 5), rng.choice([2, 3])
    causal = case % 3 != 2                       # one case in three: causal=False, given; else the default
    given = {"causal": False} if not causal else {"causal": True} if case % 3 == 1 else {}

    def parts(c):
        return [c.get("q_proj", 0) + c.get("o_proj", 0), c.get("k_proj", 0) + c.get("v_proj", 0),
                c.get("scores", 0) + c.get("weighted_sum", 0), c.get("mlp", 0), sum(c.values())]
    args = (n, h, g, d, d_model, d_ff, matrices, rng, causal)
    c = ref_block_multiplies(*args)
    got = module.call("block_multiplies", n, h, g, d, d_model, d_ff, mlp_matrices=matrices, **given)
    shown = f"causal={causal}" if given else _("causal=True (the default)")
    expect(fields_of(got, "block_multiplies(...)", "BlockMultiplies", BLOCK_FIELDS), parts(c),
           f"{where}, d_ff={d_ff}, mlp_matrices={matrices}, {shown}",
           "block_multiplies(...) q_o_proj, k_v_proj, body, mlp, total", names=BLOCK_FIELDS,
           mistakes=shadows("block_multiplies", lambda f: parts(f(*args))))


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
            raise not_a_record(text, what, record, names, r)
        found.append(fields_of(r, what, record, names))
    return found


@step("cache_table", 16, hidden="17 <= h <= 32",
      types=lambda c: sizes("cache_table", [4], 0, "length", layers=1, length=2, head_dim=2),
      refusals=refuse_counts("cache_table", [4], [(0, 0), ("head_dim", 0), ("layers", -1), ("length", -1),
                                                  ("batch", -1)], layers=1, length=2, head_dim=2),
      mistakes=(("inverted", "mis_cache_table_inverted"), ("named", "mis_cache_table_named"),
                ("no_2", "mis_cache_table_no_2"), ("no_batch", "mis_cache_table_no_batch")))
def check_cache_table(module, case, rng):
    h = case + 1 if case < 16 else rng.choice(GROUPABLE_WIDE) if rng.hidden else rng.randint(1, 16)
    layers, length, d = rng.randint(1, 2), rng.randint(1, 4), rng.randint(1, 3)
    if case % 4 == 3:                            # no layers, or nothing cached: every ratio is 1.0
        layers, length = (0, length) if case % 8 == 3 else (layers, 0)
    batch = 1 + case % 3                         # given when it is not the default, 1
    rows = module.call("cache_table", h, layers=layers, length=length, head_dim=d,
                       **({"batch": batch} if batch > 1 else {}))
    expect(rows_of(rows, "cache_table(...)", "CacheRow",
                   ("method", "kv_heads", "group_size", "elements", "ratio")),
           ref_cache_table(h, layers, length, d, batch),
           f"h={h}, layers={layers}, length={length}, head_dim={d}, batch={batch}",
           _("cache_table rows (method, kv_heads, group_size, elements, ratio)"),
           mistakes=shadows("cache_table", lambda f: f(h, layers, length, d, batch)))


def types_multiplies_table(c):
    """The calls of multiplies_table that must raise TypeError."""
    return (sizes("multiplies_table", [1, 4, 2, 4], 2, 1)
            + bad("multiplies_table", [1, 4, 2, 4], CAUSAL, causal=1))


@step("multiplies_table", 16, hidden="17 <= h <= 32",
      types=types_multiplies_table,
      refusals=refuse_counts("multiplies_table", [1, 4, 2, 4], [(0, -1), (1, 0), (2, 0), (3, 0)]),
      mistakes=(("inverted", "mis_table_inverted"), ("of_total", "mis_table_of_total"),
                ("named", "mis_table_named"), ("kv_h", "mis_table_kv_h")))
def check_multiplies_table(module, case, rng):
    h = case + 1 if case < 16 else rng.choice(GROUPABLE_WIDE) if rng.hidden else rng.randint(1, 16)
    n, d, d_model, causal = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 4), case % 2 == 1
    if case % 4 == 3:                            # n = 0: every ratio is 1.0
        n = 0
    rows = module.call("multiplies_table", n, h, d, d_model, causal=causal)
    fields = TERMS + ("total",)
    got = [[method, g, size, fields_of(counts, _("each row's counts"), "Multiplies", fields, call=False),
            fields_of(ratio, _("each row's ratio"), "Multiplies", fields, call=False)]
           for method, g, size, counts, ratio in rows_of(rows, "multiplies_table(...)", "MultipliesRow",
                                                         ("method", "kv_heads", "group_size", "counts", "ratio"))]
    args = (n, h, d, d_model, causal, rng)
    expect(got, ref_multiplies_table(*args), f"n={n}, h={h}, d={d}, d_model={d_model}, causal={causal}",
           _("multiplies_table rows (method, kv_heads, group_size, counts, ratio), each of counts and ratio "
             "[{fields}]").format(fields=", ".join(fields)),
           mistakes=shadows("multiplies_table", lambda f: f(*args)))


def tally_is_its_closed_form(module, rng):
    """What count_multiplies() counts while layer() runs is what attention_multiplies()
    says it costs, term by term: the module's count and its formula agree."""
    h, g, n, d, d_model, where = draw_sizes(rng, rng.randrange(len(ALL_HG)))
    causal = rng.random() < 0.5
    w = send_weights(module, random_weights(rng, h, d_model, d))
    x = rand_tensor(rng, n, d_model)
    tally = module.tally([("layer", [x, w, g], {"causal": causal})], TERMS)
    closed = module.call("attention_multiplies", n, h, g, d, d_model, causal=causal)
    expect([tally[t] for t in TERMS], fields_of(closed, "attention_multiplies(...)", "Multiplies", TERMS),
           f"{where}{_(', ')}causal={causal}",
           _("tally fields {fields} after layer(), against your own attention_multiplies(...) (a count "
             "and its closed form agree)").format(fields=", ".join(TERMS)), names=TERMS)


@step("count_multiplies", len(ALL_HG), hidden=GROUPED, needs=("KVCache", "decode_step"),
      touches=("single_head_attention", "grouped_attention", "layer", "decode_step"),
      why=N_("to count what their kernels multiply and read"), agrees=tally_is_its_closed_form)
def check_tally(module, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    w = send_weights(module, fields)
    causal = case % 2 == 1
    counter = ref_count_multiplies(x, fields, g, causal)
    expected = [counter.counts.get(t, 0) for t in TERMS] + [counter.reads["weight_reads"]]
    nested_block = case % 3 == 2                 # a block inside a block adds to the outer one
    tally = module.tally([("layer", [x, w, g], {"causal": causal})], TERMS + ("weight_reads",),
                    nested=nested_block)
    # A count is worth something only when the work it counts is real: the values
    # computed inside the block must be the layer's (a closed-form tally is not a tally).
    expect(tally.get("values", [None])[0], ref_layer(x, *fields, g, causal=causal),
           f"{where}{_(', ')}causal={causal}", _("the value layer() returned inside count_multiplies() "
                                          "(a tally counts real work)"))
    if nested_block:
        what = _("the outer tally fields {fields} after layer() in a count_multiplies() block inside it")
    else:
        what = _("tally fields {fields} after layer()")
    expect([tally[t] for t in TERMS] + [tally["weight_reads"]], expected, f"{where}{_(', ')}causal={causal}",
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
    tally = module.tally([("grouped_attention", [q, k, v], {"causal": causal}),
                     ("single_head_attention", [q[0], k[0], v[0]], {"causal": causal})], TERMS)
    expect([tally["scores"], tally["weighted_sum"]], [kernels.counts.get("scores", 0),
                                                      kernels.counts.get("weighted_sum", 0)],
           f"h={h}, g={g}, n={n2}, m={m2}, d={d2}, d_v={dv2}, causal={causal}",
           _("tally fields scores, weighted_sum after grouped_attention() and single_head_attention() "
             "(scores count d per key, the weighted sum d_v)"))
    module.call("KVCache", g, d, keep="cache", value=False)
    cache, decoding = RefKVCache(g, d), Counter()
    for x_t in x:
        ref_decode_step(x_t, fields, g, cache, decoding)
    tally = module.tally([("decode_step", [x_t, w, g, ref("cache")], {}) for x_t in x],
                    ("cache_reads", "weight_reads"))
    rows = ref_layer(x, *fields, g, causal=True)
    expect(tally.get("values"), rows, where, _("the values decode_step returned inside "
                                               "count_multiplies(), row by row, against the reference causal "
                                               "layer (a tally counts real work)"))
    expect([tally["cache_reads"], tally["weight_reads"]],
           [decoding.reads["cache_reads"], decoding.reads["weight_reads"]], where,
           _("tally fields cache_reads, weight_reads after decoding x row by row"))
