"""gqa_tools.report.lab: the module a report is built from, every call guarded.

Lab wraps a gqa module (the project's gqa.py, or a student's in the child
process): a function that is missing, not implemented or failing raises
Unavailable, saying why in a sentence the report prints in the section's
place.  A costly measurement is attempt()-ed once: its value or Missing(why),
and need() turns a Missing back into Unavailable where a section reads it.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from gqa_grader.i18n import _
from gqa_tools.common import step_name


class Unavailable(Exception):
    """A number the report cannot get from the module it is built from."""


def reason(err: BaseException) -> str:
    """Why a section could not be computed, in one line."""
    if isinstance(err, Unavailable):
        return str(err)
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
    except Exception as err:            # a student's module can fail in any way
        return Missing(reason(err))


def need(value: Any) -> Any:
    """The value of a measurement; Unavailable when it is Missing."""
    if isinstance(value, Missing):
        raise Unavailable(value.why)
    return value
