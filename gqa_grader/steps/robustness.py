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

What each asks of a function is stated beside its step's check, in its part's module
(the step's types, refusals and extremes): a part's cases are the lesson steps that
state one, in the lab's order.  Each case runs once with the public seed, once with
the run's (the extremes scale their values by a draw, so a hidden case's answer is
not a public one).  A part's failures never fail a lesson step; `--steps robustness`
(or `all,robustness`) asks for them, covering the functions of the lesson steps
graded with them.
"""

from . import manifest
from .checking import Step
from .checks import STEPS
from .refusals import refuse_types


def _types(module, st, rng):
    refuse_types(module, st)


def _refusals(module, st, rng):
    st.refusals(module, rng)


def _extremes(module, st, rng):
    st.extremes(module, rng)


def part(name, fn, asks):
    """The robustness part name (manifest.STEPS): a case per lesson step whose `asks`
    (types, refusals or extremes) is stated, fn(module, that step, rng)."""
    table = {st.name: st for st in STEPS if getattr(st, asks) is not None}

    def check(module, subject, rng):
        fn(module, table[subject], rng)
    entry = manifest.STEPS[manifest.NUMBER[name] - 1]
    return Step(manifest.NUMBER[name], name, entry.summary, 0, check, part="robustness", subjects=list(table))


PARTS = [part("types", _types, "types"), part("refusals", _refusals, "refusals"),
         part("extremes", _extremes, "extremes")]          # after the lesson's steps, each a part
