"""The checks of Part 5 of the lab, decoding one token at a
time: KVCache, decode_step, decode_traffic.
"""

from ..expected.answers import RefKVCache, ref_decode_traffic, ref_layer
from ..expected.compare import expect
from ..expected.inputs import nested, rand_tensor, random_weights
from ..language.i18n import _
from ..running.exchange import ref, send_weights
from ..running.failures import Failure
from ..running.values import Other, _short, kind
from .checking import ALL_HG, GROUPED, WIDE, fields_of, step_into
from .layer import draw_sizes, weights_unchanged
from .refusals import BOOL, DATA, bad, refuse_counts, sizes

STEPS = []                       # Part 5's steps, in order: each @step below adds its own
step = step_into(STEPS, "decoding")


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


def types_KVCache(c):
    """The calls of KVCache that must raise TypeError."""
    c.cache                                      # the cache $cache.append appends to
    return (sizes("KVCache", [2, 2], 0, 1) + bad("KVCache", [2, 2], BOOL, capacity=True)
            + bad("$cache.append", [[["1.0", "2.0"]], [[1.0, 2.0]]], DATA))


def refuse_KVCache(module, rng):
    """The values of KVCache that break a rule: GQAError, naming them."""
    module.raises("KVCache", [0, 2], [0])
    module.raises("KVCache", [2, 0], [0])
    g, d = rng.randint(1, 3), rng.randint(1, 3)
    module.call("KVCache", g, d, keep="cache", value=False)
    k, v = rand_tensor(rng, g, d), rand_tensor(rng, g, d)
    module.call("$cache.append", k, v, value=False)
    module.raises("$cache.append", [k + [[0.0] * d], v], [g])                # g + 1 heads
    module.raises("$cache.append", [k, v[:-1] + [[0.0] * (d + 1)]], [d])      # a bad v
    expect(module.get("cache", "len")["len"], 1, f"g={g}, d={d}",
           _("len(cache) after refused appends (nothing is stored unless both are valid)"))


@step("KVCache", 16,
      types=types_KVCache,
      refusals=refuse_KVCache)
def check_kv_cache(module, case, rng):
    g, d, n = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 5)
    capacity = [0, n, max(1, n // 2), n + 3][case % 4]
    rows = [(rand_tensor(rng, g, d), rand_tensor(rng, g, d)) for _row in range(n)]
    where = _("g={g}, d={d}, capacity={capacity}, {n} positions").format(g=g, d=d, capacity=capacity, n=n)
    module.call("KVCache", g, d, capacity=capacity, keep="cache", value=False)
    built = RefKVCache(g, d)
    for k, v in rows:
        module.call("$cache.append", k, v, value=False)
        built.append(k, v)
    state = module.get("cache", "len", "elements", "nbytes")
    expect([state["len"], state["elements"], state["nbytes"]], [len(built), built.elements,
                                                                8 * built.elements], where,
           "len(cache), cache.elements, cache.nbytes")
    state = module.get("cache", "k", "v")
    for name, store in (("k", built.k), ("v", built.v)):
        for j, held in enumerate(cache_arrays(state, name, g, where)):
            expect(held.values[:n * d], [x for row in store[j] for x in row], where,
                   _("{value}: the rows appended, in order").format(value=f"cache.{name}[{j}]"), exact=True)


def decoding_is_a_causal_layer(module, rng):
    """Decoding x row by row with decode_step gives the rows of the module's own causal
    layer(x): the two paths of one computation agree."""
    h, g, n, d, d_model, where = draw_sizes(rng, rng.randrange(len(ALL_HG)))
    w = send_weights(module, random_weights(rng, h, d_model, d))
    x = rand_tensor(rng, n + 1, d_model)
    module.call("KVCache", g, d, keep="cache", value=False)
    rows = [module.call("decode_step", x_t, w, g, ref("cache"), setup=True) for x_t in x]
    expect(rows, module.call("layer", x, w, g, causal=True),
           _("{case}, {n} positions").format(case=where, n=n + 1),
           _("decode_step row by row against your own layer(x, weights, g, causal=True)"))


def types_decode_step(c):
    """The calls of decode_step that must raise TypeError."""
    return (sizes("decode_step", [[1.0, 0.0, -1.0], c.w, 1, c.cache], 2, 2)
            + bad("decode_step", ["abc", c.w, 1, c.cache], DATA))


def refuse_decode_step(module, rng):
    """The values of decode_step that break a rule: GQAError, naming them."""
    w = send_weights(module, random_weights(rng, 2, 3, 2))
    module.call("KVCache", 2, 2, keep="cache", value=False)
    module.raises("decode_step", [[1.0, 2.0, 3.0], w, 1, ref("cache")], [2, 1])  # a cache for another g
    module.call("KVCache", 1, 2, keep="cache", value=False)
    module.raises("decode_step", [[1.0, 2.0], w, 1, ref("cache")], [2, 3])       # x_t not d_model long
    expect(module.get("cache", "len")["len"], 0, _("a refused decode_step"),
           _("len(cache) after refused steps"))


@step("decode_step", len(ALL_HG), hidden=GROUPED,
      agrees=decoding_is_a_causal_layer,
      types=types_decode_step,
      refusals=refuse_decode_step)
def check_decode(module, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    fields, x = random_weights(rng, h, d_model, d), rand_tensor(rng, n, d_model)
    w = send_weights(module, fields)
    module.call("KVCache", g, d, keep="cache", value=False)
    expected = ref_layer(x, *fields, g, causal=True)
    for t, x_t in enumerate(x):
        expect(module.call("decode_step", x_t, w, g, ref("cache"), fresh=True, setup=True), expected[t],
               _("{case}, position {t}").format(case=where, t=t),
               _("decode_step of x[{t}] against row {t} of the reference causal layer").format(t=t))
    built = RefKVCache(g, d)
    for _x_t in x:
        built.append(nested([g, d]), nested([g, d]))
    state = module.get("cache", "len", "elements")
    expect([state["len"], state["elements"]], [len(built), built.elements], where,
           "len(cache), cache.elements")
    if case % 5 == 0:
        weights_unchanged(module, fields, "w", f"decode_step(x_t, w, {g}, cache)", where)


TRAFFIC_FIELDS = ("cache_reads", "weight_reads", "multiplies", "ratio")


@step("decode_traffic", len(ALL_HG), hidden=WIDE,
      types=lambda c: sizes("decode_traffic", [2, 4, 1, 2, 8], 2, "batch", batch=1),
      refusals=refuse_counts("decode_traffic", [2, 4, 1, 2, 8], [(0, -1), (2, 0), (3, 0), ("batch", 0)],
                                   batch=1))
def check_traffic(module, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case, wide=True)
    if case % 6 == 5:                            # no steps: every count 0, the ratio 0.0
        n, where = 0, where.replace(f"n={n}", "n=0")
    batch = [1, 2, 3][case % 3]
    expected = ref_decode_traffic(n, h, g, d, d_model, batch, rng)
    got = module.call("decode_traffic", n, h, g, d, d_model, batch=batch)
    expect(fields_of(got, "decode_traffic(...)", "DecodeTraffic", TRAFFIC_FIELDS), expected,
           f"{where}, batch={batch}", _("decode_traffic(...) cache_reads, weight_reads "
                                        "(read once per step for the whole batch), multiplies, ratio"),
           names=TRAFFIC_FIELDS)
