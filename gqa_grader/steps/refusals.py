"""The refusals each step's docstring states, beyond those its check draws.

Values that break a rule of the lab must raise GQAError, whose message names the
function and the numbers at fault: refuse_repeat_kv ... refuse_decode, each a
systematic case of its step.  Arguments of the wrong type must raise TypeError,
whose message names the function (gqa.py's docstring): a size that is not an int
(or is a bool), data that is not nested lists of ints and floats (tuples and
array('d') rows too), a causal flag that is not a bool.  For each step whose
function takes them, calls_of lists one bool and one float where an int size
goes, and that int as a str; data holding strs (or no list at all), and for four
steps a bool; a causal flag of 1 or None, and "yes".
Their arguments are fixed, drawn from no random stream: each step makes them in
its case 0, after the case's own (refuse_types).  count_multiplies() takes no
argument, so step 20 has none.
"""

from ..expected.compare import expect
from ..expected.inputs import rand_tensor, random_weights
from ..language.i18n import N_, _
from ..running.exchange import ref, send_weights


# ---------------------------------------------------------------------------
# Values that break the lab's rules: GQAError, naming the numbers given.  Each is
# a systematic case of its step (step()'s refusals).
# ---------------------------------------------------------------------------

def refuse_repeat_kv(module, rng):
    module.raises("repeat_kv", [[], 2], [])                                       # no heads


def refuse_single(module, rng):
    module.raises("single_head_attention", [[[1.0]], [], []], [])                 # no keys
    module.raises("single_head_attention", [[[1.0, 2.0]], [[1.0]], [[1.0]]], [2, 1])   # d differs
    module.raises("single_head_attention", [[[1.0]], [[1.0], [2.0]], [[1.0], [2.0], [3.0]]], [2, 3])


def refuse_attention(module, rng):
    module.raises("attention", [[[[1.0]], [[1.0]]], [[[1.0]]], [[[1.0]]], 1], [2, 1])   # k, v not h heads


def refuse_grouped(module, rng):
    module.raises("grouped_attention", [[[[1.0]], [[1.0]]], [[[1.0]], [[1.0]]], [[[1.0]]]], [2, 1])


def refuse_fold_weights(module, rng):
    w_q, w_k, w_v, w_o = random_weights(rng, 4, 3, 2)
    module.raises("fold_weights", [send_weights(module, [w_q, w_k[:3], w_v, w_o]), 2], [3, 4, 2])
    module.raises("fold_weights", [send_weights(module, [w_q, w_k, w_v, [h[:1] for h in w_o]]), 2], [])


def refuse_layer(module, rng):
    module.call("prepare_weights", send_weights(module, random_weights(rng, 2, 3, 2)), 1, keep="p", value=False)
    module.raises("layer", [rand_tensor(rng, 1, 3), ref("p"), 2], [1, 2])      # prepared for another g


def refuse_difference(module, rng):
    module.raises("output_difference", [[[[[1.0]]]], [[[[1.0]]]]], [])           # deeper than 3 levels


def refuse_cache_elements(module, rng):
    module.raises("kv_cache_elements", [1, 1, 1, 0], [0])                         # head_dim 0
    module.raises("kv_cache_elements", [-1, 1, 1, 1], [-1])                       # a negative count


def refuse_kv_cache(module, rng):
    module.raises("KVCache", [0, 2], [0])
    module.raises("KVCache", [2, 0], [0])


def refuse_decode(module, rng):
    w = send_weights(module, random_weights(rng, 2, 3, 2))
    module.call("KVCache", 2, 2, keep="cache", value=False)
    module.raises("decode_step", [[1.0, 2.0, 3.0], w, 1, ref("cache")], [2, 1])  # a cache for another g
    module.call("KVCache", 1, 2, keep="cache", value=False)
    module.raises("decode_step", [[1.0, 2.0], w, 1, ref("cache")], [2, 3])       # x_t not d_model long
    expect(module.get("cache", "len")["len"], 0, _("a refused decode_step"),
           _("len(cache) after refused steps"))


# ---------------------------------------------------------------------------
# Arguments of the wrong type: TypeError, naming the function.  Made in case 0.
# ---------------------------------------------------------------------------

# The rules a call breaks (message ids: shown translated, _(rule), in refuse_types).
BOOL = N_("a size is an int, and a bool is not one")
FLOAT = N_("a size is an int, not a float")
STR = N_("a size is an int, not a str")
DATA = N_("data is nested lists of ints and floats")
BOOLS = N_("data is nested lists of ints and floats, and a bool is not one")
CAUSAL = N_("causal is True or False")

STRS = [[["1.0", "2.0"]]]                      # [1][1][2] of strs: a tensor that is not numbers


def _weights(module, name="typed", w_q=None):
    """Weights of h=2, d_model=3, d=2 kept in the worker as name (w_q in place of w_q's own)."""
    def heads(h, rows, cols):
        return [[[0.5 * (i + 1) - 0.25 * j - 0.125 * c for c in range(cols)] for j in range(rows)]
                for i in range(h)]
    return send_weights(module, [w_q or heads(2, 3, 2), heads(2, 3, 2), heads(2, 3, 2), heads(2, 2, 3)], name)


def sizes(fn, good, bool_at, float_at, **kwargs):
    """fn's calls with one bad size each: good's arguments (and kwargs) with True at
    bool_at, then the int as a float and as a str at float_at; each an index, or a
    keyword's name."""
    def call(at, wrong, rule):
        args, named = list(good), dict(kwargs)
        if isinstance(at, str):
            named[at] = wrong(named[at])
        else:
            args[at] = wrong(args[at])
        return fn, args, rule, named
    return [call(bool_at, lambda x: True, BOOL), call(float_at, float, FLOAT), call(float_at, str, STR)]


def bad(fn, args, rule, **kwargs):
    """One call of fn that must raise TypeError."""
    return [(fn, args, rule, kwargs)]


def calls_of(module, name):
    """[(fn, args, rule, kwargs)]: the calls step `name` must refuse with TypeError; what
    they need kept in the worker (Weights, a KVCache) is made first."""
    q, k, v = [[[1.0, 0.0]], [[0.0, 1.0]]], [[[1.0, 0.0], [0.5, 0.5]]], [[[1.0], [2.0]]]  # h=2, g=1
    x = [[1.0, 0.0, -1.0], [0.5, 0.5, 0.5]]                          # [n=2][d_model=3]
    w = strs = None
    if name in ("fold_weights", "prepare_weights", "layer", "decode_step", "layer_backward"):
        w = _weights(module)                                                 # h=2, d_model=3, d=2
    if name in ("fold_weights", "prepare_weights"):
        strs = _weights(module, "strs", [[["1.0"] * 2] * 3] * 2)            # its w_q of strs
    if name in ("KVCache", "decode_step"):
        module.call("KVCache", 1, 2, keep="cache", value=False)              # g=1, d=2
    table = {
        "valid_g": lambda: sizes("valid_g", [8], 0, 0),
        "method_name": lambda: sizes("method_name", [8, 2], 1, 0),
        "kv_head": lambda: sizes("kv_head", [0, 8, 2], 0, 2),
        "group_heads": lambda: sizes("group_heads", [8, 2], 0, 1),
        "fold_kv_mean": lambda: sizes("fold_kv_mean", [k + k, 1], 1, 1)
        + bad("fold_kv_mean", [STRS, 1], DATA),
        "repeat_kv": lambda: sizes("repeat_kv", [k, 2], 1, 1) + bad("repeat_kv", [STRS, 1], DATA),
        "single_head_attention": lambda: bad("single_head_attention", [q[0], k[0], v[0]], CAUSAL, causal=1)
        + bad("single_head_attention", [[["1.0", "0.0"]], k[0], v[0]], DATA),
        "attention": lambda: sizes("attention", [q, k + k, v + v, 2], 3, 3)
        + bad("attention", ["q", k + k, v + v, 2], DATA)
        + bad("attention", [q, k + k, v + v, 2], CAUSAL, causal=None),
        "grouped_attention": lambda: bad("grouped_attention", [q, [[["1.0", "0.0"], ["0.5", "0.5"]]], v],
                                         DATA)
        + bad("grouped_attention", [q, k, v], CAUSAL, causal=1),
        "init_weights": lambda: sizes("init_weights", [2, 3, 2], 0, 1, seed=0),
        "fold_weights": lambda: sizes("fold_weights", [w, 1], 1, 1) + bad("fold_weights", [strs, 1], DATA),
        "prepare_weights": lambda: sizes("prepare_weights", [w, 2], 1, 1)
        + bad("prepare_weights", [strs, 1], DATA),
        "layer": lambda: sizes("layer", [x, w, 1], 2, 2) + bad("layer", [[["a", "b", "c"]], w, 1], DATA)
        + bad("layer", [x, w, 1], CAUSAL, causal=None),
        "output_difference": lambda: bad("output_difference", [[["1.0"]], [[1.0]]], DATA)
        + bad("output_difference", [[[1.0]], [[None]]], DATA),
        "kv_cache_elements": lambda: sizes("kv_cache_elements", [1, 2, 3, 4], 0, 2, batch=1)
        + bad("kv_cache_elements", [1, 2, 3, 4], BOOL, batch=True),
        "attention_multiplies": lambda: sizes("attention_multiplies", [2, 8, 2, 4, 16], 0, 3)
        + bad("attention_multiplies", [2, 8, 2, 4, 16], CAUSAL, causal=1),
        "block_multiplies": lambda: sizes("block_multiplies", [2, 8, 2, 4, 16, 32], "mlp_matrices", 5,
                                          mlp_matrices=3)
        + bad("block_multiplies", [2, 8, 2, 4, 16, 32], CAUSAL, causal=None),
        "cache_table": lambda: sizes("cache_table", [4], 0, "length", layers=1, length=2, head_dim=2),
        "multiplies_table": lambda: sizes("multiplies_table", [1, 4, 2, 4], 2, 1)
        + bad("multiplies_table", [1, 4, 2, 4], CAUSAL, causal=1),
        "KVCache": lambda: sizes("KVCache", [2, 2], 0, 1) + bad("KVCache", [2, 2], BOOL, capacity=True)
        + bad("$cache.append", [[["1.0", "2.0"]], [[1.0, 2.0]]], DATA),
        "decode_step": lambda: sizes("decode_step", [[1.0, 0.0, -1.0], w, 1, ref("cache")], 2, 2)
        + bad("decode_step", ["abc", w, 1, ref("cache")], DATA),
        "decode_traffic": lambda: sizes("decode_traffic", [2, 4, 1, 2, 8], 2, "batch", batch=1),
        "grouped_attention_backward": lambda: bad("grouped_attention_backward",
                                                  [q, k, v, [[["1.0"]]] * 2], DATA)
        + bad("grouped_attention_backward", [q, k, v, [[[1.0]], [[1.0]]]], CAUSAL, causal=1),
        "layer_backward": lambda: sizes("layer_backward", [x, w, 1, x], 2, 2)
        + bad("layer_backward", [x, w, 1, [["a"] * 3] * 2], DATA)
        + bad("layer_backward", [x, w, 1, x], CAUSAL, causal=None),
    }
    return more_of(name, table.get(name, list)())


def more_of(name, calls):
    """calls, then each causal flag's again as "yes" (neither int nor None), then name's
    data holding a bool."""
    flags = [(fn, args, rule, dict(kwargs, causal="yes")) for fn, args, rule, kwargs in calls
             if rule == CAUSAL]
    return calls + flags + BOOL_DATA.get(name, [])


# Data holding a bool (an int to Python, not a number to the lab), where data goes first.
BOOL_DATA = {
    "fold_kv_mean": bad("fold_kv_mean", [[[[True, 1.0]]], 1], BOOLS),
    "repeat_kv": bad("repeat_kv", [[[[True, 1.0]]], 1], BOOLS),
    "single_head_attention": bad("single_head_attention", [[[True, 0.0]], [[1.0, 0.0]], [[1.0]]], BOOLS),
    "output_difference": bad("output_difference", [[[True]], [[1.0]]], BOOLS),
}


def refuse_types(module, name):
    """Make every call of step `name` that must raise TypeError."""
    for fn, args, rule, kwargs in calls_of(module, name):
        module.raises_type(fn, args, _(rule), kwargs)
