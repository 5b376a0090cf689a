"""The exchange with the worker, and what a failing case shows.

Student is the module under test seen from the grader: each call goes to the
worker as a JSON request and comes back as plain data, checked for its shape
before it is believed.  Case writes every call down as Python (Statement), so
that a failure shows the very call that failed, as code a student can paste
(--show).
"""

import math
import re
from array import array

from ..language.i18n import _
from .failures import Failure, NotStarted
from .values import FLAT, _short, bounded, clean_data, decode, plain


# The records a transcript builds (send_weights): gqa.py's __all__ leaves its records out (so
# that help(gqa) is the lesson, not a tuple's methods), so `from gqa import *` does not bring
# them and a transcript imports them by name.
BUILT = ("Weights",)


def ref(name):
    """An argument that is an object kept in the worker."""
    return {"$ref": name}


def send_weights(module, fields, name="w"):
    """Make the module's Weights record from the grader's lists, kept in the worker as name."""
    w_q, w_k, w_v, w_o = fields
    module.call("Weights", w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, keep=name, value=False)
    return ref(name)


def _brief(value):
    """A short description of an argument: numbers as they are, tensors by shape."""
    if isinstance(value, dict) and "$ref" in value:
        return value["$ref"]
    if isinstance(value, (list, tuple, array)):
        shape = _shape(value)
        return ("<" + "x".join(map(str, shape)) + " list>" if shape is not None
                else f"<ragged list of {len(value)}>")
    text = repr(value)
    return text if len(text) <= 40 else type(value).__name__


def _shape(value):
    """The sizes of a nested list, outermost first; None when its rows are unequal."""
    if not isinstance(value, (list, tuple, array)):
        return []
    inner = [_shape(v) for v in value]
    if any(x is None or x != inner[0] for x in inner):
        return None
    return [len(value)] + (inner[0] if inner else [])


def wire(x):
    """An argument as the worker reads it: tuples and array('d') tagged (JSON has neither)."""
    if isinstance(x, list):
        return list(x) if FLAT.issuperset(map(type, x)) else [wire(v) for v in x]   # a row at once
    if isinstance(x, tuple):
        return {"$tuple": [wire(v) for v in x]}
    if isinstance(x, array):
        return {"$array": "d", "values": list(x)}
    return x


_FRAME = re.compile(r"(?P<file>.*), line (?P<line>\d+), in (?P<function>[^:]+): (?P<code>.*)", re.S)


def _frames(where):
    """The student's file and line of each frame, a line each: "\n  at gqa.py, line 12, in f".
    The worker writes a frame as "FILE, line N, in NAME: CODE" (it has no language)."""
    def shown(frame):
        parts = _FRAME.fullmatch(frame)
        return _("{file}, line {line}, in {function}: {code}").format(**parts.groupdict()) if parts else frame
    return "".join("\n  " + _("at {frame}").format(frame=shown(frame)) for frame in where)


def _missing(found):
    """What the worker found under a function's name (its error's "found": [name] when the
    module has nothing by that name, [name, type, repr] when it is no function), worded here."""
    found = [str(f) for f in found] if isinstance(found, list) else []
    if len(found) == 3 and found[1] == "NoneType":
        return _("{name} is None, not a function").format(name=found[0])
    if len(found) == 3:
        return _("{name} is not a function but {value}, of type {type}").format(
            name=found[0], value=found[2], type=found[1])
    return _("the module has no {name}").format(name=found[0] if found else "?")


def _malformed(what):
    return _("the worker's answer to {call} was malformed; the worker was stopped").format(call=what)


def _args(args, kwargs):
    return ", ".join([_brief(a) for a in args] + [f"{k}={_brief(v)}" for k, v in kwargs.items()])


class _Call:
    """A call as a message writes it, "fold_kv_mean(<4x1x2 list>, 2)": written only when a
    message is (most calls pass, and the shapes of their arguments cost time to find)."""
    __slots__ = ("fn", "args", "kwargs", "text")

    def __init__(self, fn, args, kwargs=None):
        self.fn, self.args, self.kwargs, self.text = fn, args, kwargs or {}, None

    def __str__(self):
        if self.text is None:
            self.text = f"{self.fn}({_args(self.args, self.kwargs)})"
        return self.text

    def __format__(self, spec):
        return format(str(self), spec)


def _well_formed(answer):
    """Whether an answer has the shape the protocol gives it (its values are checked later)."""
    e = answer.get("error")
    if e is not None:
        if not (isinstance(e, dict) and isinstance(e.get("type"), str)
                and isinstance(e.get("message"), str) and isinstance(e.get("where", []), list)
                and all(isinstance(x, str) for x in e.get("where", []))):
            return False
        e.setdefault("where", [])
        e["gqa_error"] = e.get("gqa_error") is True
        e["type_error"] = e.get("type_error") is True
        e.update(type=bounded(e["type"], 100), message=bounded(e["message"]),   # before any escaping
                 where=[bounded(frame, 300) for frame in e["where"][-3:]])
    changed = answer.get("changed", [])
    return isinstance(changed, list) and all(isinstance(c, str) for c in changed)


class Student:
    """The module under test, seen from here: calls go to the worker, answers come back as data.

    Calls made only to set something up in the worker (value=False) wait, and
    go with the next request that needs an answer, in one round trip.  The
    worker's flags about its own calls (an argument changed, an input
    returned) can only fail a case, never pass one.
    """

    def __init__(self, worker):
        self.worker = worker
        self.pending = []                   # [(request, what)] not sent yet
        self.advice = []                    # what a passing refusal's message could say better

    def _exchange(self, pairs):
        answers = self.worker.exchange([m for m, _w in pairs], [w for _m, w in pairs])
        for answer, (_m, what) in zip(answers, pairs):
            if not _well_formed(answer):
                self.worker.stop()
                raise Failure(_malformed(what))
        return answers

    def _send(self, message, what):
        """Send the pending requests and this one; return this one's answer."""
        queued, self.pending = self.pending, []
        answers = self._exchange(queued + [(message, what)])
        for answer, (_m, earlier) in zip(answers, queued):
            self._check(answer, earlier, False)
        if len(answers) != len(queued) + 1:
            raise Failure(_("the worker did not answer {call}").format(call=what))
        return answers[-1]

    def _raise(self, answer, what):
        e = clean_data(answer["error"], newlines=False)
        if e["type"] == "NotImplementedError":
            raised_in = e.get("raised_in") if isinstance(e.get("raised_in"), str) else None
            message = (_("not implemented yet: {message}").format(message=e["message"]) if e["message"]
                       else _("not implemented yet: {call} raised NotImplementedError").format(call=what))
            last = _FRAME.fullmatch(e["where"][-1]) if e["where"] else None      # the raise's own line
            raise NotStarted(message, function=raised_in, direct=e.get("direct") is True,
                             where=_frames(e["where"]), line=int(last.group("line")) if last else None)
        if e["type"] == "missing":
            raise Failure(_("{message} (needed for {call})").format(message=_missing(e.get("found")), call=what))
        if e["type"] == "signature":
            raise Failure(_("{call} has the wrong signature: {message}").format(call=what, message=e["message"]))
        raise Failure(_("{call} raised {error}: {message}").format(call=what, error=e["type"], message=e["message"])
                      + _frames(e["where"]))

    def _check(self, answer, what, fresh):
        if "error" in answer:
            self._raise(answer, what)
        if answer.get("changed"):
            raise Failure(_("{call} changed its argument {arguments} in place; it must leave its inputs "
                            "alone and return new lists").format(call=what, arguments=_(", ").join(answer["changed"])),
                          "changed_input")
        if fresh and answer.get("aliased"):
            raise Failure(_("{call} returned lists that belong to its input; it must return new "
                            "lists").format(call=what), "aliased")
        try:
            return decode(answer.get("value"))
        except Exception:                   # a tagged value without its parts, nested too deep
            self.worker.stop()
            raise Failure(_malformed(what)) from None

    def call(self, fn, *args, keep=None, value=True, fresh=False, **kwargs):
        """fn(*args, **kwargs) in the worker: its value (None with value=False, sent later)."""
        what = _Call(fn.lstrip("$"), args, kwargs)
        message = {"op": "call", "fn": fn, "args": wire(list(args)),
                   "kwargs": {k: wire(v) for k, v in kwargs.items()},
                   "keep": keep, "value": value, "fresh": fresh}
        if not value:
            self.pending.append((message, what))
            return None
        return self._check(self._send(message, what), what, fresh)

    def calls(self, fn, arg_lists):
        """[fn(*args) for args in arg_lists], in one round trip."""
        queued, self.pending = self.pending, []
        pairs = queued + [({"op": "call", "fn": fn, "args": wire(list(a))}, _Call(fn, a))
                          for a in arg_lists]
        answers = self._exchange(pairs)
        values = [self._check(a, what, False) for a, (_m, what) in zip(answers, pairs)]
        if len(values) != len(pairs):
            raise Failure(_("the worker did not answer {call}").format(call=pairs[len(values)][1]))
        return values[len(queued):]

    def get(self, name, *attrs):
        """Attributes of a kept object ("len" for len(obj))."""
        what = f"{name}.{'/'.join(attrs)}"
        return self._check(self._send({"op": "get", "ref": name, "attrs": list(attrs)}, what),
                           what, False)

    def tally(self, calls, fields, nested=False):
        """Run calls [(fn, args, kwargs)] inside count_multiplies() (nested: inside a second
        count_multiplies() block within it); the outer tally's fields, and under "values"
        the calls' values in order."""
        message = {"op": "tally", "fields": list(fields), "nested": nested, "values": True,
                   "calls": [{"op": "call", "fn": fn, "args": wire(list(a)),
                              "kwargs": {n: wire(v) for n, v in k.items()}, "value": False}
                             for fn, a, k in calls]}
        return self._check(self._send(message, "count_multiplies()"),
                           _("the calls inside count_multiplies()"), False)

    def _refusal(self, fn, args, kwargs, rule=None):
        """Call fn(*args, **kwargs), which must raise: its error (cleaned), and the call as
        text; a Failure if it returned, or did not get as far as refusing.  It must raise
        GQAError; with rule (a rule about types), TypeError."""
        what = _Call(fn, args, kwargs)
        answer = self._send({"op": "call", "fn": fn, "args": wire(list(args)),
                             "kwargs": {k: wire(v) for k, v in (kwargs or {}).items()}}, what)
        if "error" not in answer:
            value = _short(self._check(answer, what, False))
            if rule is None:
                raise Failure(_("{call} returned {value} instead of raising {expected}").format(
                    call=what, value=value, expected="GQAError"))
            raise Failure(_("{call} returned {value} instead of raising TypeError ({rule})").format(
                call=what, value=value, rule=rule))
        e = clean_data(answer["error"], newlines=False)
        if e["type"] in ("NotImplementedError", "missing", "signature"):
            self._raise(answer, what)
        return e, what

    @staticmethod
    def _names_function(fn, e, what, raised, why):
        name = "KVCache." + fn.split(".", 1)[1] if fn.startswith("$cache.") else fn
        if not re.search(rf"\b{re.escape(name)}\b", e["message"]):
            raise Failure(_("{call} raised {error}({message}), which does not name the function, "
                            "{function} ({why})").format(call=what, error=raised, message=repr(e["message"]),
                                                          function=name, why=why))

    def raises(self, fn, args, numbers, kwargs=None, strict=False):
        """fn(*args) must raise the module's GQAError.  Its message should name the
        function and the numbers given: with strict (robustness), a message that does
        not fails the case; else it is advice, kept in self.advice, and the case passes."""
        e, what = self._refusal(fn, args, kwargs)
        if not e["gqa_error"]:
            raise Failure(_("{call} raised {error}: {message}, not GQAError (a ValueError subclass)").format(
                call=what, error=e["type"], message=e["message"]) + _frames(e["where"]))
        try:
            self._names_function(fn, e, what, "GQAError", _("a refusal's message names the function, "
                                                            "the rule and the numbers at fault"))
            missing = [str(x) for x in numbers
                       if not re.search(rf"(?<!\d)(?<!\d\.){re.escape(str(x))}(?!\d|\.\d)", e["message"])]
            if missing:
                raise Failure(_("{call} raised GQAError({message}), which does not mention {numbers} "
                                "(a refusal's message names the numbers at fault)").format(
                    call=what, message=repr(e["message"]), numbers=_(", ").join(missing)))
        except Failure as err:
            if strict:
                raise
            if str(err) not in self.advice:
                self.advice.append(str(err))

    def raises_type(self, fn, args, rule, kwargs=None):
        """fn(*args) must raise TypeError (or a subclass, but not GQAError), naming the
        function: the argument breaks rule, a rule about types, not about values."""
        e, what = self._refusal(fn, args, kwargs, rule)
        if e["gqa_error"] or not e.get("type_error"):
            raise Failure(_("{call} raised {error}: {message}, not TypeError ({rule}; GQAError is for values "
                            "that break the lab's rules, TypeError for arguments of the wrong type)").format(
                call=what, error=e["type"], message=e["message"], rule=rule) + _frames(e["where"]))
        self._names_function(fn, e, what, e["type"], _("a TypeError's message names the function, as every "
                                                       "message of the lab does"))


# ---------------------------------------------------------------------------
# What a failing case shows: the calls it made, as Python a student can paste.
# ---------------------------------------------------------------------------

# The lab's parameter names, for the lists a shown call names on a line of their own.
PARAMS = {
    "fold_kv_mean": ("kv", "g"), "repeat_kv": ("kv", "h"),
    "single_head_attention": ("q", "k", "v"), "attention": ("q", "k", "v", "g"),
    "grouped_attention": ("q", "k", "v"), "fold_weights": ("weights", "g"),
    "prepare_weights": ("weights", "g"), "layer": ("x", "weights", "g"),
    "output_difference": ("a", "b"), "decode_step": ("x_t", "weights", "g", "cache"),
    "$cache.append": ("k_rows", "v_rows"),
    "grouped_attention_backward": ("q", "k", "v", "d_out"),
    "layer_backward": ("x", "weights", "g", "d_y"),
}


def literal(value):
    """value as Python source that evaluates to it: whole, never cut."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value}')"
    if isinstance(value, dict) and "$ref" in value:
        return value["$ref"]
    if isinstance(value, list):
        return "[" + ", ".join(map(literal, value)) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(map(literal, value)) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, array):
        return f"array('{value.typecode}', {literal(list(value))})"
    return repr(value)


class Statement:
    """One line (or block) of the transcript: lines that name its lists, then its code.
    Written only when shown: make() returns (code, hoisted [(name, value)], inputs).
    refused: the exception a refused call must raise ("GQAError", "TypeError"), or None."""

    def __init__(self, make, setup=False, refused=None):
        self.make, self.made, self.setup, self.refused = make, None, setup, refused

    def _parts(self):
        if self.made is None:
            code, hoisted, inputs = self.make()
            self.made = [code, list(hoisted), dict(inputs or {})]
        return self.made

    @property
    def code(self):
        return self._parts()[0]

    @code.setter
    def code(self, text):
        self._parts()[0] = text

    @property
    def hoisted(self):
        return self._parts()[1]

    @property
    def inputs(self):
        return self._parts()[2]

    def text(self, wrapped=False):
        """The lines; wrapped: a refused call inside try/except, so a paste runs on past it."""
        code = self.code
        if wrapped and self.refused:
            code = ("try:\n" + "".join(f"    {line}\n" for line in code.splitlines())
                    + f"except {self.refused} as e:\n    print(e)\n")
        return "".join(f"{name} = {literal(value)}\n" for name, value in self.hoisted) + code


def call_text(fn, args, kwargs, hoist=True):
    """(code, hoisted, inputs) for fn(*args, **kwargs): long lists on lines of their own."""
    names = PARAMS.get(fn, ())
    parts, hoisted, inputs = [], [], {}
    for i, a in enumerate(args):
        name = names[i] if i < len(names) else f"arg{i}"
        inputs[name] = literal(a) if isinstance(a, dict) else plain(a)
        if hoist and isinstance(a, list) and name:
            hoisted.append((name, a))
            parts.append(name)
        else:
            parts.append(literal(a))
    for k, v in kwargs.items():
        inputs[k] = literal(v) if isinstance(v, dict) else plain(v)
        parts.append(f"{k}={literal(v)}")
    target = fn[1:] if fn.startswith("$") else fn
    return f"{target}({', '.join(parts)})", hoisted, inputs


class Case:
    """The module as one case of a check sees it: every call goes to the Student, and
    is written down as Python, so a failure shows the very call that failed."""

    def __init__(self, student, strict=False):
        self.student = student
        self.strict = strict                 # a refusal's wording is graded (robustness), not advice
        self.statements = []                 # [Statement], in the order they ran

    def _note(self, statement):
        self.statements.append(statement)
        return statement

    def note(self, code, hoisted=(), setup=False):
        """Write down code the check compares itself (an expression built from calls made)."""
        return self._note(Statement(lambda: (code, hoisted, {}), setup))

    def call(self, fn, *args, keep=None, value=True, fresh=False, setup=False, **kwargs):
        def make():
            if keep:
                return f"{keep} = {call_text(fn, args, kwargs, hoist=False)[0]}", [], {}
            return call_text(fn, args, kwargs)
        st = self._note(Statement(make, setup or bool(keep) or fn.startswith("$")))
        try:
            return self.student.call(fn, *args, keep=keep, value=value, fresh=fresh, **kwargs)
        except Failure as err:                  # what the paste must print to show it
            code, names = st.code, [name for name, _v in st.hoisted]
            if names and err.kind == "changed_input":
                st.code = ("import copy\n" + "".join(f"{n}_before = copy.deepcopy({n})\n" for n in names)
                           + f"out = {code}\n" + " and ".join(f"{n} == {n}_before" for n in names))
            elif names and err.kind == "aliased":
                st.code = ("def ids(t): return {id(t)}.union(*map(ids, t)) if isinstance(t, (list, tuple)) "
                           "else set()\n\n" + f"out = {code}\n"
                           + f"bool(ids(out) & ({' | '.join(f'ids({n})' for n in names)}))")
            raise

    def calls(self, fn, arg_lists):
        self._note(Statement(lambda: ("[" + ", ".join(call_text(fn, a, {})[0] for a in arg_lists) + "]",
                                      [], {"calls": [list(a) for a in arg_lists]})))
        return self.student.calls(fn, arg_lists)

    def get(self, name, *attrs):
        self.note(", ".join(f"len({name})" if a == "len" else f"{name}.{a}" for a in attrs))
        return self.student.get(name, *attrs)

    def tally(self, calls, fields, nested=False):
        def make():
            body = [f"y = {call_text(fn, a, k, hoist=False)[0]}" for fn, a, k in calls]
            indent = "        " if nested else "    "
            code = "with count_multiplies() as tally:\n" + (
                "    with count_multiplies() as inner:\n" if nested else "")
            inputs = {"calls": [dict(call_text(fn, a, k)[2], fn=fn) for fn, a, k in calls]}
            return code + "".join(f"{indent}{line}\n" for line in body) + "\ntally", [], inputs
        self._note(Statement(make))
        return self.student.tally(calls, fields, nested=nested)

    def _refused(self, fn, args, kwargs, expected):
        # A refused call on an object kept in the worker (a method, or a kept argument)
        # may still change it: the paste makes it too, before what follows.
        keeps = fn.startswith("$") or any(isinstance(a, dict) and "$ref" in a
                                          for a in list(args) + list((kwargs or {}).values()))
        self._note(Statement(lambda: call_text(fn, args, kwargs or {}), keeps, refused=expected))

    def raises(self, fn, args, numbers, kwargs=None):
        self._refused(fn, args, kwargs, "GQAError")
        return self.student.raises(fn, args, numbers, kwargs, self.strict)

    def raises_type(self, fn, args, rule, kwargs=None):
        self._refused(fn, args, kwargs, "TypeError")
        return self.student.raises_type(fn, args, rule, kwargs)

    def failing(self):
        """The statement the failure is about."""
        return self.statements[-1] if self.statements else None

    def show(self, whole=False):
        """The Python that repeats the failing call: the setup it needs, then the call
        (whole: every call of the case, in order)."""
        last = self.failing()
        if last is None:
            return ""
        lines = ["from gqa import *"]
        for st in self.statements:
            if st is last:
                break
            if st.setup or whole:
                lines.append(st.text(wrapped=True))
        lines.append(last.text())
        if any("array('" in line for line in lines):
            lines.insert(1, "from array import array")
        built = [name for name in BUILT if any(f" = {name}(" in line for line in lines)]
        if built:
            lines.insert(1, f"from gqa import {', '.join(built)}")
        return "\n".join(lines) + "\n"

    def inputs(self):
        last = self.failing()
        return dict(last.inputs) if last is not None else {}


