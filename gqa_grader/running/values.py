"""What crosses from the worker: its plain data decoded into values (decode: lists,
tuples, records, Other), what a value is in words (kind), rows made plain (plain), and
text made safe to print.

clean_text escapes what a terminal or a document must not hold as it is (control
characters, invisible format characters, lone surrogates); bounded cuts a message
to its cap, saying how much went.
"""

import math
import re
import unicodedata
from array import array

from ..language.i18n import _, ngettext
from .failures import Failure


# ---------------------------------------------------------------------------
# The worker's data as values.
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


# Types that are never a list, a dict, a tuple or an array: a list of these alone is decoded
# (or flattened, inputs.leaves) as it is, one call for a row of numbers, not one for each number.
FLAT = frozenset((float, int, bool, str, type(None)))


def decode(x):
    """The worker's plain data back into values: lists, tuples, records, Other."""
    if isinstance(x, list):
        return list(x) if FLAT.issuperset(map(type, x)) else [decode(v) for v in x]
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


def plain(t):
    """t as nested lists (the rows a module returns); an array the worker sent, its values."""
    if isinstance(t, Other) and hasattr(t, "values"):
        return list(t.values)
    if isinstance(t, (list, tuple, array)):
        return list(t) if FLAT.issuperset(map(type, t)) else [plain(x) for x in t]
    return t


# ---------------------------------------------------------------------------
# Text from the worker, made safe to print.
# ---------------------------------------------------------------------------

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
