"""A step's result: a record with named fields, built in one place, and its points.

grading.run_step makes one StepResult per step graded (step_result(): the one place
one is built); points() is the one rule of every run.  Code reads a result by its
fields (r.status, r.hidden); as_json() is its form in a document (--json, --out, a
class's feedback), the same keys in the same order as ever, and from_json() reads
that form back (the gradebook reads each run's document).
"""

import enum
from typing import NamedTuple, Optional

from ..language.i18n import _, ngettext
from ..running.values import bounded, clean_data
from ..steps.tracks import BY_NAME


class Status(str, enum.Enum):
    """A step's status, and a class's row's (NOT_GRADED: no step of it was): each is its
    text, what a document and a gradebook hold, and equal to it."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_STARTED = "not started"
    NOT_GRADED = "not graded"

    __str__ = str.__str__                # "passed", on every Python (3.12's Enum says "Status.PASSED")
    __format__ = str.__format__


STEP_STATUSES = (Status.PASSED, Status.FAILED, Status.NOT_STARTED)     # a step's, in the order counted


class StepResult(NamedTuple):
    """How one step went.  Its JSON form (as_json) has these keys, in this order."""

    step: int               # the step's number
    name: str               # its name: the lab's function ("kv_head") or a part ("types")
    part: str               # "lesson" or "robustness"
    summary: str            # what it checks (English: translated where it is shown)
    status: str             # a Status of STEP_STATUSES (its text, read back from a document)
    cases: int              # the cases graded
    cases_passed: int
    public: tuple           # (passed, of) the public cases
    hidden: tuple           # (passed, of) the hidden cases
    message: str = ""       # the first failure, for people ("" when it passed)
    case: Optional[int] = None      # the first failing case's number
    inputs: object = None   # its inputs, as JSON data (or those of --case)
    show: Optional[str] = None      # its calls as Python to paste (--show)
    needs: tuple = ()       # the steps it waits for: ({"step": 21, "name": "KVCache"},)
    touches: tuple = ()     # the steps that changing it means changing
    notes: tuple = ()       # what it needs and touches, as sentences
    advice: tuple = ()      # a refusal's wording: advice, not graded
    stub: Optional[bool] = None     # not started: whether a starter's stub raised
    points: Optional[float] = None  # scored(): its points, of max_points
    max_points: Optional[float] = None
    mistake: Optional[str] = None   # the misconception its failure is (mistakes.MISTAKES' key)

    def as_json(self):
        """The record as a document holds it: lists for the sequences; stub, points,
        max_points and mistake only when known."""
        doc = self._asdict()
        for key in ("public", "hidden", "needs", "touches", "notes", "advice"):
            doc[key] = list(doc[key])
        for key in ("stub", "points", "max_points", "mistake"):
            if doc[key] is None:
                del doc[key]
        return doc

    def cleaned(self):
        """The record with every string made safe to print (compare.clean_data)."""
        return self.from_json(clean_data(self.as_json()))

    @classmethod
    def from_json(cls, doc):
        """The record of as_json's form (a document's step, read back)."""
        return cls(**{key: doc[key] for key in cls._fields if key in doc})


def step_result(st, ids, end, status=Status.FAILED, passed=(0, 0), **outcome):
    """The result of step st, whose cases ids were graded (those from end on hidden):
    passed is (public, hidden) cases passed; outcome, the fields of the first failure
    (message, case, inputs, show), needs, stub and advice.  The message is bounded and
    the notes are said here."""
    hidden = sum(k >= end for k in ids)
    outcome["message"] = bounded(outcome.get("message", ""))
    r = StepResult(st.number, st.name, st.part, st.summary, status, len(ids), sum(passed),
                   (passed[0], len(ids) - hidden), (passed[1], hidden),
                   touches=tuple(st.touches), **outcome)
    return r._replace(notes=tuple(step_notes(r)))


def and_list(numbers):
    """'7, 9 and 13' (in the language in use)."""
    words = [str(n) for n in numbers]
    if len(words) < 2:
        return "".join(words)
    return _("{items} and {last}").format(items=_(", ").join(words[:-1]), last=words[-1])


def step_notes(r):
    """What a step that is not done needs and touches: 'needs step 21, KVCache: not started'."""
    st = BY_NAME[r.name]
    notes = [(_("calls step {step}, {name}, which your track leaves a stub: write it without that call")
              if n.get("outside") else _("needs step {step}, {name}: not started")).format(step=n["step"], name=n["name"])
             for n in r.needs]
    if st.touches and r.status != Status.PASSED:
        notes.append(ngettext("step {step}, {name}, means changing step {steps} {why}",
                              "step {step}, {name}, means changing steps {steps} {why}",
                              len(st.touches)).format(step=st.number, name=st.name,
                                                      steps=and_list(st.touches), why=_(st.why) if st.why else "").rstrip())
    return notes


def points(r, weight=1.0, cases=1, all_or_nothing=False):
    """A step's points, the one rule of every run: weight times the share of its graded
    cases that passed (with all_or_nothing, weight only when every one did).  A run
    with hidden cases (cases > 0) grades those alone: the public ones, whose answers a
    handout holds, give feedback and earn nothing.  Without hidden cases (a handout's
    self-check), the public cases are graded, and that is not the grade.  r: a
    StepResult, or None for a step the run has no result of (no points)."""
    if r is None or r.status == Status.NOT_STARTED:
        return 0.0
    passed, total = (r.hidden if cases else r.public) or (0, 0)
    if not total:
        return 0.0
    share = 1.0 if passed == total else 0.0 if all_or_nothing else passed / total
    return round(weight * share, 4)


def scored(results, weights, cases, all_or_nothing=False):
    """results, each with its points and max_points (points(); weights: name -> points,
    1 where not given)."""
    return [r._replace(points=points(r, float(weights.get(r.name, 1.0)), cases, all_or_nothing),
                       max_points=float(weights.get(r.name, 1.0))) for r in results]
