"""Where the checks' expected answers come from: the reference, or recorded answers.

In the grader this module hands on the reference's functions (reference.py).  A
student's handout (python grader.py --handout DIR) holds no reference: there, each
ref_ function and RefKVCache give back what the reference answered, for the same
inputs, when the handout was made (gqa_grader/answers.json, written by
selfcheck.record()).  The handout grades the public cases only: their inputs come from the
fixed public seed, so they are the very inputs recorded.  A call with other inputs
has no recorded answer, and the case fails saying so.

A recorded answer is found by a key: a hash of the function's name and of its
arguments written out whole (floats by repr, objects by their fields), so that an
answer is never given for inputs that differ from the recorded ones by a bit.
"""

import hashlib
import json
import math
import os
from array import array
from fractions import Fraction

from ..language.i18n import _
from ..running.failures import Failure
from ..running.values import FLAT
from .inputs import Counter

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "answers.json")   # in the package


# ---------------------------------------------------------------------------
# Values as plain JSON, and arguments as a key.
# ---------------------------------------------------------------------------

def state(x):
    """The fields of one of the reference's state holders: a Counter's counts and reads;
    a cache's g, d, rows, length and element count (the reference's or a replayed one)."""
    if type(x).__name__ == "Counter":
        return {"counts": x.counts, "reads": x.reads}
    return {"g": x.g, "d": x.d, "k": x.k, "v": x.v, "len": len(x), "elements": x.elements}


_WHOLE = FLAT - {float}             # JSON as they are; a float is, when it is finite


def encode(x):
    """x as JSON data, its types tagged: tuples, arrays, fractions, non-finite floats,
    a Random by its state's hash, and the state holders (a Counter, a cache) by state()."""
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else {"$float": repr(x)}
    if isinstance(x, list):
        kinds = set(map(type, x))       # a row of finite floats, or of ints and text, at once
        if kinds <= _WHOLE or kinds == {float} and all(map(math.isfinite, x)):
            return list(x)
        return [encode(v) for v in x]
    if isinstance(x, tuple):
        return {"$tuple": [encode(v) for v in x]}
    if isinstance(x, array):
        return {"$array": x.typecode, "values": list(x)}
    if isinstance(x, Fraction):
        return {"$fraction": [x.numerator, x.denominator]}
    if isinstance(x, dict):
        return {"$dict": [[encode(k), encode(v)] for k, v in x.items()]}
    if hasattr(x, "getstate") and hasattr(x, "getrandbits"):          # a random.Random
        return {"$random": hashlib.sha256(repr(x.getstate()).encode()).hexdigest()}
    if type(x).__name__ in HOLDERS:
        kind = "Counter" if type(x).__name__ == "Counter" else "cache"
        return {"$" + kind: encode(state(x))}
    raise TypeError(f"no answer is recorded of a {type(x).__name__}")


HOLDERS = ("Counter", "RefKVCache", "Recorded")


def decode(x):
    """The value encode(x) was made from (a cache as a Recorded)."""
    if isinstance(x, list):
        return list(x) if FLAT.issuperset(map(type, x)) else [decode(v) for v in x]
    if not isinstance(x, dict):
        return x
    if "$float" in x:
        return float(x["$float"])
    if "$tuple" in x:
        return tuple(decode(v) for v in x["$tuple"])
    if "$array" in x:
        return array(x["$array"], x["values"])
    if "$fraction" in x:
        return Fraction(*x["$fraction"])
    if "$dict" in x:
        return {decode(k): decode(v) for k, v in x["$dict"]}
    if "$Counter" in x:
        made = Counter()
        made.__dict__.update(decode(x["$Counter"]))
        return made
    if "$cache" in x:
        made = Recorded.__new__(Recorded)
        made.__dict__.update(decode(x["$cache"]))
        return made
    raise ValueError(f"answers.json: a value of no known kind: {sorted(x)}")


def key(name, args, kwargs):
    text = json.dumps([name, encode(list(args)), encode(dict(kwargs))], sort_keys=True, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


# ---------------------------------------------------------------------------
# Recording, when a handout is made; replaying, in the handout.
# ---------------------------------------------------------------------------

def _mutable(args):
    """The arguments a reference function may change: a Counter, a cache."""
    return [i for i, a in enumerate(args) if type(a).__name__ in HOLDERS]


def recorder(name, fn, table, shadows=()):
    """fn, recording in table each answer and what it did to its mutable arguments; and,
    when it holds none, the answer of each misconception's wrong function in shadows (the
    names of those that shadow fn: a step's mistakes) to the same arguments, asked before
    fn is (as a handout, where fn's answer is replayed, asks them): a handout recognises a
    mistake on a public case as the grader does."""
    def recorded(*args, **kwargs):
        k = key(name, args, kwargs)
        if not _mutable(args):
            from . import mistaken
            for shadow in shadows:
                try:                     # a mistake with no answer (an overflow, ...) has none recorded
                    answer = encode(getattr(mistaken, shadow)(*args, **kwargs))
                except (ArithmeticError, ValueError, IndexError):
                    continue
                table[key(shadow, args, kwargs)] = {"value": answer, "after": {}}
        value = fn(*args, **kwargs)
        table[k] = {"value": encode(value),
                    "after": {str(i): encode(state(args[i])) for i in _mutable(args)}}
        return value
    return recorded


class Recorded:
    """RefKVCache in a handout: a cache whose every state is a recorded answer."""

    def __init__(self, g, d):
        self.__dict__.update(_replay("RefKVCache", (g, d), {}).__dict__)

    def append(self, k_rows, v_rows):
        self.__dict__.update(_replay("RefKVCache.append", (self, k_rows, v_rows), {}).__dict__)

    def __len__(self):
        return self.__dict__["len"]


def recording_cache(cls, table):
    """RefKVCache while a handout is made: the reference's class, each state it takes
    (made, then after each append) recorded as the answer to the call that made it."""
    class Cache(cls):
        def __init__(self, g, d):
            super().__init__(g, d)
            table[key("RefKVCache", (g, d), {})] = {"value": encode(self), "after": {}}

        def append(self, k_rows, v_rows):
            k = key("RefKVCache.append", (self, k_rows, v_rows), {})
            super().append(k_rows, v_rows)
            table[k] = {"value": encode(self), "after": {}}
    Cache.__name__ = "RefKVCache"
    return Cache


TABLE = None


def _replay(name, args, kwargs):
    """The recorded answer to name(*args, **kwargs); its mutable arguments put in the
    state the call left them in.  A Failure when there is none."""
    global TABLE
    if TABLE is None:
        try:
            with open(DATA, encoding="utf-8") as f:
                TABLE = json.load(f)
        except (OSError, ValueError) as err:
            raise Failure(_("the handout's answers.json cannot be read ({error}); make the handout again "
                            "with: python grader.py --handout DIR").format(error=err)) from None
    entry = TABLE.get(key(name, args, kwargs))
    if entry is None:
        raise Failure(_("these inputs are not a public case's, so the handout has no answer of {function} "
                        "to compare with (the teacher's run grades such cases)").format(
                            function=name.replace("ref_", "")))
    for i, after in entry["after"].items():
        args[int(i)].__dict__.update(decode(after))
    return decode(entry["value"])


def _replayed(name):
    def replayed(*args, **kwargs):
        return _replay(name, args, kwargs)
    replayed.__name__ = name
    return replayed


try:
    from . import mistaken as _mistaken, reference as _reference
except ImportError:                      # a handout: the recorded answers stand in
    _mistaken = _reference = None

HANDOUT = _reference is None            # a student's handout: answers replayed, not computed

RefKVCache = Recorded if HANDOUT else _reference.RefKVCache


def __getattr__(name):
    """A reference function (ref_...) or a misconception's wrong function (mis_...), by
    name: the reference's own in the grader; in a handout, the answers it recorded."""
    if not name.startswith(("ref_", "mis_")):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if HANDOUT:
        return _replayed(name)
    return getattr(_reference if name.startswith("ref_") else _mistaken, name)
