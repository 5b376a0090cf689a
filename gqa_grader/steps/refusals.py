"""What the parts of robustness ask a step's function to refuse, as its part's module
states it beside its check (the step's types and refusals; checking.step_into).

Arguments of the wrong type must raise TypeError, whose message names the function
(gqa.py's docstring): a size that is not an int (or is a bool), data that is not
nested lists of ints and floats (tuples and array('d') rows too), a causal flag that
is not a bool.  A step's types(c) lists its calls: sizes() gives one bool and one
float where an int size goes, and that int as a str; bad() one call; data holding
strs (or no list at all), or a bool; a causal flag of 1 or None, each also as "yes"
(more_of).  Their arguments are fixed, drawn from no random stream; what several
share is c's (Calls: small tensors, and Weights and a KVCache kept in the worker,
made when first asked for).  count_multiplies() takes no argument, so step 20 has none.

Values that break a rule of the lab must raise GQAError, whose message names the
function and the numbers at fault: a step's refusals(module, rng), written with the
helpers here where they serve (refuse_g, refuse_counts).
"""

from ..language.i18n import N_, _
from ..running.exchange import ref, send_weights
from .checking import bad_g


# ---------------------------------------------------------------------------
# Arguments of the wrong type: TypeError, naming the function.
# ---------------------------------------------------------------------------

# The rules a call breaks (message ids: shown translated, _(rule), in refuse_types).
BOOL = N_("a size is an int, and a bool is not one")
FLOAT = N_("a size is an int, not a float")
STR = N_("a size is an int, not a str")
DATA = N_("data is nested lists of ints and floats")
BOOLS = N_("data is nested lists of ints and floats, and a bool is not one")
CAUSAL = N_("causal is True or False")

STRS = [[["1.0", "2.0"]]]                      # [1][1][2] of strs: a tensor that is not numbers


class Calls:
    """What a step's wrong-type calls share: q, k, v (h=2, g=1, d=2), x ([n=2][d_model=3]);
    w, Weights of h=2, d_model=3, d=2, and strs, the same with a w_q of strs, kept in the
    worker when first asked for; cache, a KVCache(g=1, d=2) kept as "cache" (a ref)."""

    q, k, v = [[[1.0, 0.0]], [[0.0, 1.0]]], [[[1.0, 0.0], [0.5, 0.5]]], [[[1.0], [2.0]]]
    x = [[1.0, 0.0, -1.0], [0.5, 0.5, 0.5]]

    def __init__(self, module):
        self.module, self._made = module, {}

    def _weights(self, name, w_q=None):
        def heads(h, rows, cols):
            return [[[0.5 * (i + 1) - 0.25 * j - 0.125 * c for c in range(cols)] for j in range(rows)]
                    for i in range(h)]
        return send_weights(self.module, [w_q or heads(2, 3, 2), heads(2, 3, 2), heads(2, 3, 2),
                                          heads(2, 2, 3)], name)

    @property
    def w(self):
        if "w" not in self._made:
            self._made["w"] = self._weights("typed")
        return self._made["w"]

    @property
    def strs(self):
        if "strs" not in self._made:
            self._made["strs"] = self._weights("strs", [[["1.0"] * 2] * 3] * 2)
        return self._made["strs"]

    @property
    def cache(self):
        if "cache" not in self._made:
            self.module.call("KVCache", 1, 2, keep="cache", value=False)
            self._made["cache"] = ref("cache")
        return self._made["cache"]


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


def more_of(calls):
    """calls, then each causal flag's again as "yes" (neither int nor None), then the
    calls whose data holds a bool."""
    flags = [(fn, args, rule, dict(kwargs, causal="yes")) for fn, args, rule, kwargs in calls if rule == CAUSAL]
    return [c for c in calls if c[2] != BOOLS] + flags + [c for c in calls if c[2] == BOOLS]


def refuse_types(module, st):
    """Make every call of step st (a Step) that must raise TypeError."""
    for fn, args, rule, kwargs in more_of(st.types(Calls(module))):
        module.raises_type(fn, args, _(rule), kwargs)


# ---------------------------------------------------------------------------
# Values that break the lab's rules: GQAError, naming the numbers given.
# ---------------------------------------------------------------------------

def bad_g_pair(rng):
    """(h, g): an h with a non-divisor, and such a g."""
    h = rng.choice([4, 6, 8, 9, 10, 12, 15, 16])
    return h, bad_g(h, rng)


def refuse_g(name):
    """The refusals of name(h, g): a g that does not divide h, and the range's edges."""
    def refuse(module, rng):
        h, g = bad_g_pair(rng)
        module.raises(name, [h, g], [h, g])
        for g in (0, -h):                        # the range's edges: -h divides h, 0 divides nothing
            module.raises(name, [h, g], [h, g])
    return refuse


def refuse_counts(name, good, edges, **kwargs):
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
