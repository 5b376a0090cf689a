"""What every check uses: a Step, how a check is registered, a case's random
stream, the (h, g) it draws, and reading what the module returned.

A check is called once per case as check(module, case, rng): module is the
module under test as this case sees it (exchange.Case: each call goes to the
worker and is written down as Python, so a failure shows it), case the case's
number, rng its random stream (a Draw); it raises Failure on a wrong answer.
Each step has systematic cases (the same on every run: every (h, g) with h <=
16, causal on and off, the edge cases, the refusals its docstring states), then
random ones drawn from random.Random(f"{step}:{seed}:{case}").  The expected
values come from the reference, computed from the grader's own copy of the
inputs.  The checks are in heads.py, layer.py, counting.py, decoding.py and
backward.py, a module per part of the lab; checks.py puts them in order.
"""

import random
import re

from ..expected import answers
from ..expected.answers import ref_valid_g
from ..expected.inputs import rand_tensor
from ..language.i18n import ngettext
from ..running.failures import Failure
from ..running.values import Record, _short, kind
from . import manifest


# ---------------------------------------------------------------------------
# A Step per graded part, and the decorator that registers a lesson step's check.
# ---------------------------------------------------------------------------

class Step:
    """One graded part.  part: "lesson" (a step of the lab: one public function of gqa.py)
    or "robustness" (the module's other rules, a kind at a time: its cases are its
    subjects, the lesson steps' functions, each once with the public seed and once with
    the run's).  A lesson step carries what the parts of robustness ask of its function
    (types, refusals, extremes: None where they ask nothing), the misconceptions its
    check recognises (mistakes: (key, the wrong function's name in answers), ...), and
    what its hidden cases draw from where it is not what its public ones draw from
    (hidden, written as code: "" where they draw alike)."""

    def __init__(self, number, name, summary, systematic, fn, needs=(), touches=(), why="",
                 part="lesson", subjects=(), types=None, refusals=None, extremes=None, mistakes=(), hidden=""):
        self.number, self.name, self.summary = number, name, summary
        self.systematic, self.fn = systematic, fn
        self.needs, self.touches, self.why = tuple(needs), tuple(touches), why
        self.part, self.subjects = part, tuple(subjects)
        self.types, self.refusals, self.extremes = types, refusals, extremes
        self.mistakes, self.hidden = tuple(mistakes), hidden


PUBLIC_CASES = 5        # public random cases per lesson step, after the systematic ones


class Draw(random.Random):
    """A case's random stream; hidden: whether the case is a hidden one (drawn from the
    run's seed), whose integer inputs come from a space the public cases do not cover.
    end: None, or one of ENDS, the same hidden case again at an end of the knob (g = h,
    g = 1: draw_grouping); grouped: whether the case drew a grouping (draw_grouping), so
    that its runner runs it at the ends too."""

    def __new__(cls, key, hidden=False, end=None):     # Random's own takes one argument (3.10)
        return super().__new__(cls, key)

    def __init__(self, key, hidden=False, end=None):
        super().__init__(key)
        self.hidden, self.end, self.grouped = hidden, end, False


REGISTERED = {}         # a lesson step's Step, by name, as its part's module registers it


def step_into(steps, part):
    """The decorator that registers the checks of a part of the lab (manifest.PARTS) in
    steps, the part's list: `step = step_into(STEPS, "heads")`, then `@step(name, ...)`
    above each check.  A step's number, summary and part are the manifest's."""

    def step(name, systematic, hidden="", needs=(), touches=(), why="", agrees=None, types=None,
             refusals=None, extremes=None, mistakes=()):
        """Register the check of the lesson step name, with systematic cases before its
        random ones; hidden: what its hidden cases draw from (a student failing one alone
        is told it, and no case; WIDE and GROUPED are draw_grouping's).  needs: the later
        steps (by name) whose functions it calls too; touches: the earlier steps a student
        goes back to for it, and why.  One more
        systematic case may follow the check's own: agrees(module, rng), the module's own
        functions agreeing with each other (no reference in it, so a handout checks it as
        the teacher's run does).  The check sees its random cases numbered from systematic
        on, whatever came between.  What robustness asks of the step's function: types(c),
        its calls that must raise TypeError (refusals.Calls c holds what they share);
        refusals(module, rng) and extremes(module, rng), cases that raise Failure.
        mistakes: the misconceptions its check recognises, (key, wrong function) pairs
        (mistakes.MISTAKES's keys; the functions stand beside the reference)."""
        number = manifest.NUMBER.get(name)
        if number is None or part not in manifest.PARTS or manifest.STEPS[number - 1].part != part:
            raise LookupError(f"step({name!r}): manifest.STEPS has no step {name!r} of the part {part!r}")
        extra = [agrees] if agrees else []

        def register(fn):
            def check(module, case, rng):
                if systematic <= case < systematic + len(extra):
                    return extra[case - systematic](module, rng)
                return fn(module, case - len(extra) if case > systematic else case, rng)
            st = Step(number, name, manifest.STEPS[number - 1].summary, systematic + len(extra), check,
                      [manifest.NUMBER[n] for n in needs], [manifest.NUMBER[n] for n in touches], why,
                      types=types, refusals=refusals, extremes=extremes, mistakes=mistakes, hidden=hidden)
            steps.append(st)
            REGISTERED[name] = st
            return fn
        return register
    return step


def shadows(name, build):
    """The misconceptions the check of step name recognises, each as (key, answer):
    answer() is build(f) with the misconception's wrong function f in place of the
    reference's, called as the check calls the reference."""
    return tuple((key, lambda fn=fn: build(getattr(answers, fn))) for key, fn in REGISTERED[name].mistakes)


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
# What draw_grouping draws, written as code (a step's hidden): wide, and not.
WIDE, GROUPED = "17 <= h <= 32; 1 < g < h, g = h, g = 1", "4 <= h <= 16; 1 < g < h, g = h, g = 1"
ENDS = ("mha", "mqa")     # a hidden case that drew a grouping runs again at g = h, then g = 1


def draw_grouping(rng, wide=False):
    """A hidden case's (h, g): first 1 < g < h, where GQA's answer differs from MHA's,
    MQA's, a strided grouping's (i % g) and a tiled repeat's, so that no module right
    only at the ends earns the case; then (rng.end, as the case's runner asks) the case
    again at g = h and at g = 1, the knob's two ends, so that no module wrong at one earns
    it either, at an h of the range drawn again (a prime one too: a module wrong at g = h
    for a prime h alone earned them all).  The case passes when all three do.  wide: h from
    17 to 32, so that an integer answer cannot be looked up in the public cases."""
    if rng.end:                      # the ends need no grouping proper: any h of the range, a prime too
        h = rng.choice(range(17, 33) if wide else range(4, 17))
        return h, h if rng.end == "mha" else 1
    h = rng.choice(GROUPABLE_WIDE if wide else GROUPABLE)
    rng.grouped = True
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
        raise not_a_record(text, what, record, names, got)
    return [getattr(got, name) for name in names]


def not_a_record(text, what, record, names, got):
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


def scaled(t, f):
    """t with every number times f (inf and NaN stay what they are)."""
    return [scaled(x, f) for x in t] if isinstance(t, list) else t * f
