"""gqa_tools.report.lab: the module a report is built from, every call guarded.

Lab wraps a gqa module (the project's gqa.py, or a student's in the child
process): a function that is missing, not implemented or failing raises
Unavailable, saying why in a sentence the report prints in the section's
place.  A costly measurement is attempt()-ed once: its value or Missing(why),
and need() turns a Missing back into Unavailable where a section reads it.
Within Watch (the child process's), a call into the module that does not
return in its time is stopped (Hung), named by the step that was running,
and that step answers no more: the sections that need it say so, the
others are written.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from gqa_grader.language.i18n import _
from gqa_tools.referee import step_name


class Unavailable(Exception):
    """A number the report cannot get from the module it is built from."""


class Hung(BaseException):
    """A call into the module that did not return in its time (Watch), and why, naming the
    step: a BaseException, so that the module's own `except Exception` lets it through."""

    @property
    def why(self) -> str:
        return str(self.args[0])


def reason(err: BaseException) -> str:
    """Why a section could not be computed, in one line."""
    if isinstance(err, Unavailable):
        return str(err)
    if isinstance(err, Hung):
        return err.why
    if isinstance(err, NotImplementedError):
        step = _raising_step(err)
        return not_implemented(step) if step else _("a function it needs is not implemented yet")
    return _("computing it raised {type}: {error}").format(type=type(err).__name__, error=err)


# The tools' folder, gqa_tools/: a frame of the tools' own is never the lab's step that raised.
TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _raising_step(err: BaseException, called: Optional[str] = None) -> Optional[str]:
    """The lab's step whose code raised err: the innermost frame named as a step (the
    starter's stub of fold_kv_mean, called by the student's attention), else called."""
    found, tb = called, err.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if step_name(code.co_name) and not _in_tools(code.co_filename):
            found = code.co_name
        tb = tb.tb_next
    return found


def _in_tools(filename: str) -> bool:
    """Whether the code of filename is the tools' own: a file in gqa_tools/ or a folder of it."""
    return os.path.abspath(filename).startswith(TOOLS + os.sep)


def not_implemented(name: str) -> str:
    """What a section says for a function that raised NotImplementedError: the step it needs,
    or, in a handout's report (within handout_track), that the step is outside its track."""
    step = step_name(name)
    if step and _TRACK and name not in _TRACK[-1][0]:
        track = _TRACK[-1][1]
        return (_("{step}, is outside the {track} track this handout grades") if track else
                _("{step}, is outside the track this handout grades")).format(step=step, track=track)
    return (_("needs {step}: not implemented yet").format(step=step) if step else
            _("`{name}` is not implemented yet").format(name=name))


# The track of the handout whose report is being built, while it is: (its steps, its name).
_TRACK: List[Tuple[Sequence[str], Optional[str]]] = []


@contextlib.contextmanager
def handout_track(steps: Sequence[str], track: Optional[str]) -> Iterator[None]:
    """Within the block, a report of a handout whose track is steps (named track, or None):
    a step outside it that the module has not implemented is said to be outside the track,
    not yet to be written."""
    _TRACK.append((tuple(steps), track))
    try:
        yield
    finally:
        _TRACK.pop()


class Lab:
    """A gqa module whose functions raise Unavailable, saying why, when they cannot answer."""

    def __init__(self, module: Any, label: str) -> None:
        self.module, self.label = module, label

    def __getattr__(self, name: str) -> Any:
        obj = getattr(self.module, name, None)
        if obj is None:
            step = step_name(name)
            raise Unavailable((_("needs {step}: {label} has no `{name}`") if step else
                               _("{label} has no `{name}`")).format(step=step, label=self.label, name=name))
        if not callable(obj) or isinstance(obj, type) and issubclass(obj, BaseException):
            return obj

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return obj(*args, **kwargs)
            except NotImplementedError as err:
                raise Unavailable(not_implemented(_raising_step(err, name) or name)) from None
            except Unavailable:
                raise
            except Hung as err:
                raise Unavailable(err.why) from None
            except Exception as err:
                raise Unavailable(_("`{name}` raised {type}: {error}").format(
                    name=name, type=type(err).__name__, error=err)) from None
        return call


class Missing(NamedTuple):
    """A measurement that could not be made, and why."""
    why: str


def attempt(measurement: Callable[[], Any]) -> Any:
    """The measurement's value, or Missing(why)."""
    try:
        return measurement()
    except (Exception, Hung) as err:    # a student's module can fail in any way
        return Missing(reason(err))


def need(value: Any) -> Any:
    """The value of a measurement; Unavailable when it is Missing."""
    if isinstance(value, Missing):
        raise Unavailable(value.why)
    return value


class Watch:
    """Within the block, a call into module (any frame of its file on the stack, entered
    from outside it) that has not returned after seconds is stopped: Hung is raised in it,
    the step running named ("a call did not return within 5 s: step 14, output_difference"),
    and that step (a function or class of the module) answers every later call with the
    same Hung at once, so that one hang costs its time once.  A tick (SIGALRM) looks at the
    stack a few times a second; in the main thread of a POSIX process only, else nothing
    is watched.  Python 3.10 runs no signal handler inside a loop whose body does nothing
    but `try: pass` (a gap of its interpreter, closed in 3.11): such a loop is ended by
    the child's deadline instead, which costs the sections not yet sent.  hung: each
    hang's sentence, in order."""

    def __init__(self, module: Any, seconds: float) -> None:
        self.module, self.seconds = module, seconds
        self.file = getattr(module, "__file__", None)
        self.hung: List[str] = []
        self._entry: Any = None
        self._since = 0.0
        self._before: Any = None

    def __enter__(self) -> "Watch":
        if self.file and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
            tick = min(0.25, self.seconds / 10)
            self._before = signal.signal(signal.SIGALRM, self._tick)
            signal.setitimer(signal.ITIMER_REAL, tick, tick)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._before is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._before)
            self._before = None
        self._entry = None

    def _tick(self, signum: int, frame: Any) -> None:
        ours = []                                   # the module's frames, innermost first
        while frame is not None:
            if frame.f_code.co_filename == self.file:
                ours.append(frame)
            frame = frame.f_back
        entry, now = (ours[-1] if ours else None), time.monotonic()
        if entry is not self._entry:                # another call, or none: its time starts
            self._entry, self._since = entry, now
            return
        if entry is None or now - self._since < self.seconds:
            return
        name = _running_step(ours)
        why = _("a call did not return within {seconds} s: {step}").format(
            seconds=f"{self.seconds:g}", step=step_name(name) or f"`{name}`")
        if why not in self.hung:
            self.hung.append(why)
            if callable(getattr(self.module, name, None)):
                setattr(self.module, name, _hung(why))
        raise Hung(why)


def _running_step(frames: Sequence[Any]) -> str:
    """The step that was running in frames (innermost first): the innermost function named
    as a step, or whose `self` is an instance of one (KVCache's methods), else the
    outermost function of the module."""
    for frame in frames:
        name = frame.f_code.co_name
        if step_name(name):
            return name
        owner = type(frame.f_locals.get("self")).__name__
        if step_name(owner):
            return owner
    return frames[-1].f_code.co_name


def _hung(why: str) -> Callable[..., Any]:
    """What stands for a step once it has hung: every call raises Hung(why) at once."""
    def hung(*args: Any, **kwargs: Any) -> Any:
        raise Hung(why)
    return hung
