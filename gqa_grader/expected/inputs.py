"""The cases' inputs: drawn, shaped and flattened; and the counter the reference counts with.

None of it answers a step: the checks draw their inputs with these (rand_tensor,
random_weights), shape them as the lab's conventions allow (as_rows), read the
module's answers back as plain lists (running/values.py's plain), and the reference counts its
multiplications and reads in a Counter.  A student's handout holds this file, and
not the reference.
"""

from array import array

from ..running.values import FLAT


class Counter:
    """Multiplications counted one at a time, by term; and elements read, by kind."""

    def __init__(self):
        self.counts = {}                    # term -> multiplications performed
        self.reads = {}                     # "weight_reads" or "cache_reads" -> elements read

    def add(self, term, k=1):
        self.counts[term] = self.counts.get(term, 0) + k

    def read(self, kind, k):
        self.reads[kind] = self.reads.get(kind, 0) + k

    def times(self, term, a, b):
        counts = self.counts                # add(term), written out: a call for every multiplication
        counts[term] = counts.get(term, 0) + 1
        return a * b


def _no_count(term, a, b):
    return a * b


def nested(shape, fill=0.0):
    """A real nested list of the given shape."""
    if not shape:
        return fill
    return [nested(shape[1:], fill) for _ in range(shape[0])]


def leaves(t):
    """The numbers of a nested list (or tuple), in order."""
    if isinstance(t, (list, tuple)):
        if FLAT.issuperset(map(type, t)):
            yield from t
            return
        for x in t:
            yield from leaves(x)
    else:
        yield t


def count_leaves(t):
    return sum(1 for _ in leaves(t))


def rand_tensor(rng, *shape):
    if len(shape) == 1:                    # rng.uniform(-1.0, 1.0), whose a + (b - a) * random() it is,
        draw = rng.random                  # without its call for each number
        return [-1.0 + 2.0 * draw() for _ in range(shape[0])]
    return [rand_tensor(rng, *shape[1:]) for _ in range(shape[0])]


def as_rows(t, how):
    """t with its innermost rows made tuples ("tuple") or array('d') ("array"), or as it is."""
    if how is None:
        return t
    if t and isinstance(t[0], (list, tuple, array)):
        return [as_rows(x, how) for x in t]
    return tuple(t) if how == "tuple" else array("d", t)


def random_weights(rng, h, d_model, d, kv_heads=None):
    """w_q [h][d_model][d], w_k and w_v [kv_heads or h][d_model][d], w_o [h][d][d_model]."""
    kv = kv_heads or h
    return [rand_tensor(rng, h, d_model, d), rand_tensor(rng, kv, d_model, d),
            rand_tensor(rng, kv, d_model, d), rand_tensor(rng, h, d, d_model)]
