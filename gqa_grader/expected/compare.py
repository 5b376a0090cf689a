"""Comparing the module's answers with the reference's: values, record fields, and
the types the lab's conventions promise.

Floats agree to REL_TOL relative or ABS_TOL absolute, whichever is looser;
integers, strings and shapes exactly.  first_difference names where two values
first part ("[2][0][1]: got 0.5, expected 0.25"), and expect() fails a case with
both values when they differ.  What the worker sent, decoded, is running/values.py's.
"""

import math

from ..language.i18n import _, ljust, ngettext, width
from ..running.failures import Failure
from ..running.values import _short, kind

REL_TOL = 1e-9          # values are compared to this relative tolerance...
ABS_TOL = 1e-12         # ...or this absolute one, whichever is looser


# ---------------------------------------------------------------------------
# Comparing: values, and the types the lab's conventions promise.
# ---------------------------------------------------------------------------

def first_difference(got, expected, rel=REL_TOL, abs_tol=ABS_TOL, exact=False, where=(),
                     loose_lists=False):
    """Return None when got matches expected, else a sentence on the first difference.

    Nested lists are walked in order; floats are compared with math.isclose
    (or ==, with exact=True); the first differing index is named with its
    absolute and relative error.  The types are the lab's: a list where a
    list is expected (not a tuple, unless loose_lists), an int for a count.
    """
    found = _difference(got, expected, rel, abs_tol, exact, where, loose_lists)
    if found is None:
        return None
    place, difference = _place(found[0]), found[1]
    if not place:
        return _("at the top: {difference}").format(difference=difference)
    return _("at {place}: {difference}").format(place=place, difference=difference)


def _place(where):
    """A path in a value as code: [2][0][1], a record's field by its name: w_o[0][1];
    "" for the value itself (the top)."""
    return "".join(i if isinstance(i, str) else f"[{i}]" for i in where)


def _difference(got, expected, rel=REL_TOL, abs_tol=ABS_TOL, exact=False, where=(),
                loose_lists=False):
    """first_difference's finding: None, or (where it is, as _place reads it; what it is)."""
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)) or (isinstance(got, tuple) and not loose_lists):
            return where, _("expected a list of {count}, got {kind}: {value}").format(
                count=len(expected), kind=kind(got), value=_short(got))
        if len(got) != len(expected):
            return where, ngettext("expected {count} item, got {got}", "expected {count} items, got {got}",
                                   len(expected)).format(count=len(expected), got=len(got))
        isclose = math.isclose
        for i, (a, b) in enumerate(zip(got, expected)):
            if a is b or type(a) is type(b) is float and (                 # two floats that match: the
                    a == b or not exact and isclose(a, b, rel_tol=rel, abs_tol=abs_tol)):   # float case's rule
                continue
            found = _difference(a, b, rel, abs_tol, exact, where + (i,), loose_lists)
            if found:
                return found
        return None
    if isinstance(expected, float):
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return where, _("expected {expected}, got {kind}: {value}").format(
                expected=repr(expected), kind=kind(got), value=_short(got))
        if got == expected or (math.isnan(got) and math.isnan(expected)):
            return None
        if not exact and math.isclose(got, expected, rel_tol=rel, abs_tol=abs_tol):
            return None
        err = abs(got - expected)
        rel_err = err / abs(expected) if expected else math.inf
        return where, _("expected {expected}, got {got} (abs error {abs}, rel error {rel})").format(
            expected=repr(expected), got=repr(got), abs=f"{err:.3g}", rel=f"{rel_err:.3g}")
    if isinstance(expected, int) and not isinstance(expected, bool):
        if type(got) is not int:
            return where, _("expected the int {expected}, got {kind}: {value} (counts are ints)").format(
                expected=expected, kind=kind(got), value=_short(got))
    if got != expected or type(got) is bool and type(expected) is not bool:
        return where, _("expected {expected}, got {got}").format(expected=repr(expected), got=_short(got))
    return None


# What the worker sends is printed and written only through these: control
# characters, lone surrogates and the invisible format characters become
# escapes (\x1b, \ud800), so a message can neither fake a line of the report
# nor crash its writing; a float that JSON cannot hold becomes a string.
# Characters a terminal or a document must not hold as they are: every control,
# format, surrogate, private-use and unassigned code point (categories Cc, Cf, Cs, Co,
# Cn), line and paragraph separators, and the fillers and blanks that draw as nothing
# (Hangul fillers, the braille blank, combining grapheme joiner, variation selectors).
def expect(got, expected, where, what, exact=False, rel=REL_TOL, loose=False, names=None, mistakes=()):
    """Raise a Failure naming the case, and showing both values when they are short.
    names: got and expected are a record's fields, in this order (named in the message).
    mistakes: the misconceptions of what is compared, (key, answer) pairs (mistakes.shadows),
    held by the Failure, with got, for the grading to recognise (mistakes.recognised)."""
    found = None
    if names is not None and isinstance(got, list) and len(got) == len(names) == len(expected):
        for name, a, b in zip(names, got, expected):
            found = _difference(a, b, rel=rel, exact=exact, where=(name,), loose_lists=loose)
            if found:
                break
    else:
        found = _difference(got, expected, rel=rel, exact=exact, loose_lists=loose)
    if found:
        place, difference = _place(found[0]), found[1]
        labels = (_("expected:"), _("got:"))           # in two columns, lined up in every language
        column = max(map(width, labels)) + 1
        first = (_("first difference at {place}: {difference}").format(place=place, difference=difference)
                 if place else _("first difference at the top: {difference}").format(difference=difference))
        err = Failure("\n".join([_("case {case}: {error}").format(case=where, error=what),
                                  ljust(labels[0], column) + _cut(expected),
                                  ljust(labels[1], column) + _cut(got),
                                  first]))
        err.mistakes = (got, tuple(mistakes), {"rel": rel, "exact": exact, "loose_lists": loose})
        raise err


def _cut(x, limit=200):
    """repr(x), its middle cut when long (--show prints the whole call)."""
    text = repr(x)
    if len(text) <= limit:
        return text
    return _("{start} ... {end} ({count} characters; --show prints the call)").format(
        start=text[:limit * 3 // 4], end=text[-limit // 4:], count=len(text))
