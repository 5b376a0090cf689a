"""Comparing the module's answers with the reference's: values, record fields, the
types the lab's conventions promise, and text from the worker made safe to print.

Floats agree to REL_TOL relative or ABS_TOL absolute, whichever is looser;
integers, strings and shapes exactly.  first_difference names where two values
first part ("[2][0][1]: got 0.5, expected 0.25"), and expect() fails a case with
both values when they differ.  clean_text escapes what a
terminal or a document must not hold as it is (control characters, invisible
format characters, lone surrogates).
"""

import math
import re
import unicodedata

from .failures import Failure
from .i18n import _, ljust, ngettext, width

REL_TOL = 1e-9          # values are compared to this relative tolerance...
ABS_TOL = 1e-12         # ...or this absolute one, whichever is looser


# ---------------------------------------------------------------------------
# Comparing: values, and the types the lab's conventions promise.
# ---------------------------------------------------------------------------

class Other:
    """A value the worker could not send as plain data (a generator, an array, ...)."""

    def __init__(self, type_name, text):
        self.type_name, self.text = type_name, text

    def __repr__(self):
        return f"<{self.type_name} {self.text}>"


class Record(dict):
    """A record the module returned (a NamedTuple or a record class), by field."""

    def __init__(self, type_name, fields):
        super().__init__(fields)
        self.type_name = type_name

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            if not self:
                raise Failure(_("the {record} returned has no field {field}; it has none").format(
                    record=self.type_name, field=name)) from None
            raise Failure(_("the {record} returned has no field {field}; it has {fields}").format(
                record=self.type_name, field=name, fields=_(", ").join(self))) from None

    def __repr__(self):
        return f"{self.type_name}({', '.join(f'{k}={v!r}' for k, v in self.items())})"


# Types that are never a list or a dict: a list of these alone is decoded as it is (a copy),
# one call for a row of numbers, not one for each number.
_FLAT = frozenset((float, int, bool, str, type(None)))


def decode(x):
    """The worker's plain data back into values: lists, tuples, records, Other."""
    if isinstance(x, list):
        return list(x) if _FLAT.issuperset(map(type, x)) else [decode(v) for v in x]
    if isinstance(x, dict):
        if "$tuple" in x:
            return tuple(decode(v) for v in x["$tuple"])
        if "$record" in x:
            return Record(x["$record"], {k: decode(v) for k, v in x["fields"].items()})
        if "$array" in x:
            n = len(x["values"])
            held = Other(f"array('{x['$array']}')",
                         ngettext("of {count} value", "of {count} values", n).format(count=n))
            held.values = decode(x["values"])
            return held
        if "$other" in x:
            return Other(x["$other"], x.get("repr", ""))
        return {k: decode(v) for k, v in x.items()}      # the answer of a get or a tally
    return x


def kind(x):
    """What x is, as a noun phrase for a message's field: "a tuple", "the bool True"."""
    if isinstance(x, Other):
        return _("a {type}").format(type=x.type_name)
    if isinstance(x, bool):
        return _("the bool {value}").format(value=x)
    if isinstance(x, Record):
        return _("a {type} record").format(type=x.type_name)
    return _("a {type}").format(type=type(x).__name__)


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
_FILLERS = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f"
                     "\u2800\u3164\uffa0" + "".join(map(chr, range(0xfe00, 0xfe10)))
                     + "".join(map(chr, range(0xe0100, 0xe01f0))))
_ASCII_KEEP_LINES = re.compile("[\x00-\x09\x0b-\x1f\x7f]")
_ASCII_ALL = re.compile("[\x00-\x1f\x7f]")


def _escaped(ch):
    o = ord(ch)
    if o in (9, 10, 13):
        return {9: "\\t", 10: "\\n", 13: "\\r"}[o]
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def _unsafe(ch):
    category = unicodedata.category(ch)
    return category[0] == "C" or category in ("Zl", "Zp") or ch in _FILLERS


def clean_text(text, newlines=True):
    """text with every unsafe character escaped (newlines too, with newlines=False)."""
    text = str(text)
    if text.isascii():
        return (_ASCII_KEEP_LINES if newlines else _ASCII_ALL).sub(lambda m: _escaped(m.group()), text)
    return "".join(_escaped(ch) if _unsafe(ch) and not (newlines and ch == "\n") else ch
                   for ch in text)


MESSAGE_CAP = 4000       # characters: a longer message is cut, saying how much went


def bounded(text, cap=MESSAGE_CAP):
    """text, or its first cap characters and a note of how many more were cut."""
    if len(text) <= cap:
        return text
    n = len(text) - cap
    return text[:cap] + " " + ngettext("[... {count} more character cut]", "[... {count} more characters cut]",
                                       n).format(count=f"{n:,}")


def clean_data(x, newlines=True):
    """x (JSON data) with every string cleaned and nan, inf, -inf as strings."""
    if isinstance(x, str):
        return clean_text(x, newlines)
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    if isinstance(x, dict):
        return {clean_text(k, newlines): clean_data(v, newlines) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_data(v, newlines) for v in x]
    return x


def _short(x):
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


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
