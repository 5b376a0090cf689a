"""gqa_tools.referee: a student's module, and the referee's word on it.

Where the lab is (PROJECT, the checkout; LAB, its gqa.py: the project's, or in a
handout the student's); the lab's steps by number (STEPS, step_name); which of them the
grader passes for a student's gqa.py, graded in the grader's worker, never in the
tool's own process (graded, failing_steps, failed_steps); what a tool as root says of
its seal (sealed); the handout the tools were copied into, if any (handout); and why a
--module path is no file to run (module_missing).  Every call goes through the
referee's public door (gqa_grader.grade, tool_seal, handout_track).
"""

from __future__ import annotations

import os
import sys
from typing import List, NamedTuple, Optional, Sequence, Tuple

import gqa
from gqa_grader.language.i18n import _
from gqa_grader.steps import manifest

# The checkout: the folder that holds gqa.py and gqa_tools/ (a --module run's worker
# imports the tools from it).
PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB = os.path.join(PROJECT, "gqa.py")          # its gqa.py: the project's, or in a handout the student's


# ---------------------------------------------------------------------------
# The lab's steps, by number.
# ---------------------------------------------------------------------------

# The lab's steps in order, step N being STEPS[N - 1], as the referee's manifest
# lists them (gqa.py's docstring numbers them alike: tests/test_student_report.py).
# Read from the referee, not from gqa at run time: in the grader's worker, `gqa` is
# the student's module.
STEPS = tuple(entry.name for entry in manifest.LESSON)


def step_name(name: str) -> Optional[str]:
    """How a report names a step of the lab, "step 21, KVCache"; None for any other name."""
    return _("step {step}, {name}").format(step=STEPS.index(name) + 1, name=name) if name in STEPS else None


# ---------------------------------------------------------------------------
# Which steps the grader passes.
# ---------------------------------------------------------------------------


class Graded(NamedTuple):
    """What the grader says of some steps of a student's gqa.py (graded())."""
    failing: List[str]      # every step it does not pass, "step N, name: failed" (or not started)
    failed: List[str]       # every step failing a public case, "step N, name" (not started: not one)


def graded(path: str, names: Sequence[str], cases: int, timeout: Optional[float] = None) -> Graded:
    """The grader's word on the steps among names for the gqa.py at path: graded in its
    worker (the module never runs in this process) on the public cases and cases random
    ones of seed 0, each step stopping at its first failing case; a call may take timeout
    seconds (the grader's default when None).  A module that cannot be graded fails with
    the grader's reason, and fails no public case."""
    import gqa_grader as grader
    try:
        results = grader.grade(path, 0, cases=cases, only=list(names), fail_fast=True, label=path, for_tool=True,
                               timeout=grader.DEFAULT_TIMEOUT if timeout is None else timeout)
    except grader.Refused as err:
        return Graded([str(err)], [])
    status = grader.Status
    return Graded([(_("step {step}, {name}: not started") if r.status == status.NOT_STARTED else
                    _("step {step}, {name}: failed")).format(step=r.step, name=r.name)
                   for r in results if r.status != status.PASSED],
                  [_("step {step}, {name}").format(step=r.step, name=r.name)        # passed < graded:
                   for r in results if r.status == status.FAILED and r.public[0] < r.public[1]])  # a public case


def failed_steps(path: str, names: Sequence[str], timeout: Optional[float] = None) -> List[str]:
    """The steps among names that the grader fails for the gqa.py at path, its public cases
    alone, as "step N, name" (a step not started is not among them: the report says it is
    not implemented where it is needed); [] when the module cannot be graded."""
    return graded(path, names, 0, timeout).failed


def sealed(command: str, path: str) -> None:
    """Before a tool runs the student's module at path: as root, one line on stderr saying
    that the module runs sealed, as a grade runs it (gqa_grader.tool_seal), or GQAError
    saying why it cannot (namespaces cannot be made here); nothing when not root."""
    import gqa_grader as grader
    try:
        said = grader.tool_seal()
    except grader.Refused as err:
        raise gqa.GQAError(f"--module {path}: {err}") from None
    if said:
        print(f"gqa {command}: {said}", file=sys.stderr)


def failing_steps(path: str, names: Sequence[str], timeout: Optional[float] = None) -> List[str]:
    """The steps among names that the grader does not pass for the gqa.py at path.

    Each as "step N, name: status"; [] when every one passes.  Graded by the
    grader, in its worker (the module never runs in this process), on the
    systematic cases and two random ones of seed 0, stopping at the first
    failing case of each step; a call may take timeout seconds (the grader's
    default when None).
    """
    return graded(path, names, 2, timeout).failing


# ---------------------------------------------------------------------------
# A handout: the tools written beside a student's gqa.py by `python grader.py --handout`.
# ---------------------------------------------------------------------------

class Handout(NamedTuple):
    """What a handout's grader says of it (gqa_grader.handout_track)."""
    steps: Tuple[str, ...]      # its track: the steps it grades, in the lab's order
    lang: Optional[str]         # the language it was written in
    track: Optional[str]        # the name of its track ("core"), or None


def handout() -> Optional[Handout]:
    """The handout these tools were written into, or None (in the project).  In a handout
    the gqa.py beside gqa_tools/ is the student's (LAB): the commands run it in the
    grader's worker, and never its lesson in their own process."""
    import gqa_grader as grader
    found = grader.handout_track()
    return Handout(tuple(found["steps"]), found.get("lang"), found.get("track")) if found else None


# ---------------------------------------------------------------------------
# --module: a student's gqa.py.
# ---------------------------------------------------------------------------


def module_missing(path: str) -> str:
    """Why --module path is no file to run: a folder (the gqa.py in it named, if it holds
    one), or nothing there.  The grader says the same of its own --module."""
    if os.path.isdir(path):
        inside = os.path.join(path, "gqa.py")
        return (_("{path} is a folder; name the gqa.py in it: --module {module}").format(path=path, module=inside)
                if os.path.isfile(inside) else
                _("{path} is a folder, and it holds no gqa.py; --module names the file to use").format(path=path))
    return _("--module {path}: no such file").format(path=path)
