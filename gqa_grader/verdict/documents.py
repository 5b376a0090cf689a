"""The run's documents, each built in one place: the grader's own JSON (--json, a
class's feedback), Gradescope's results.json and GitHub Classroom's result of a step;
each fitted to DOCUMENT_CAP bytes.

- The grader's own (run_document(), nothing_graded()): the score, the counts, the
  progress and each step's result in its JSON form (results.StepResult.as_json).
- Gradescope's (gradescope()): a test per step, the hidden cases in tests of their
  own with the visibility the teacher chose, Markdown, and for a failing case what
  repeats it: the command, for a public case (the handout's self-check has its
  answer); the call to paste, for a hidden one.  A run that graded nothing, a
  usage error among them, is the same document with no test and the reason.
- Classroom's (classroom_result()): the autograding reporter's input for one step.
"""

import argparse
import json

from ..language.i18n import N_, _, sentences
from ..expected.mistakes import named
from ..running.values import bounded, clean_data
from .grading import GRADER_VERSION
from .printing import progress, reproduce, shown_seed
from .results import STEP_STATUSES, Status


# ---------------------------------------------------------------------------
# The grader's own document.
# ---------------------------------------------------------------------------

def nothing_graded(why, **head):
    """The grader's document of a run that graded nothing: head's fields (the grader's
    version first), then why, and a score of none."""
    return dict({"grader": GRADER_VERSION}, **head, error=why, score=0.0, passed=0, failed=0, steps=[])


def run_document(args, label, results, why, partly, notes):
    """The run's one document: Gradescope's results.json, or the grader's own; why:
    the reason nothing was graded, or None; partly: how the run was partly sealed, or
    None; notes: what the cleanup said."""
    if why is not None:
        doc = (gradescope([], args, error=why) if args.format == "gradescope" else
               nothing_graded(why, module=label, seed=shown_seed(args, None)))
    elif args.format == "gradescope":
        doc = gradescope(results, args)
    else:
        counts = {status: sum(r.status == status for r in results)
                  for status in STEP_STATUSES}
        doc = {"grader": GRADER_VERSION, "module": label, "seed": shown_seed(args, None), "cases": args.cases,
               "score": round(sum(r.points for r in results), 4),
               "max_score": sum(r.max_points for r in results), "passed": counts[Status.PASSED],
               "failed": counts[Status.FAILED], "not_started": counts[Status.NOT_STARTED],
               "progress": progress(results),
               "steps": [dict(r.as_json(), summary=_(r.summary)) for r in results]}   # prose, in the run's language
    if args.sealed and args.format != "gradescope":
        doc["sealed"] = partly or "sealed"
        if getattr(args, "namespaces", None):        # the tool that made the run's namespaces
            doc["namespaces"] = args.namespaces
    elif partly:
        doc["output"] = (partly + "\n" + doc.get("output", "")).rstrip("\n")
    said = getattr(args, "encoding_said", None)       # the module is not UTF-8: for its author
    if said and args.format == "gradescope":
        doc["output"] = (said + "\n" + doc.get("output", "")).rstrip("\n")
    elif said:
        doc["note"] = said
    if notes:
        doc["cleanup"] = [bounded(n, 500) for n in notes[:20]] + (
            [f"... and {len(notes) - 20} more notes"] if len(notes) > 20 else [])
    return fit(doc)


# ---------------------------------------------------------------------------
# Gradescope's results.json: a test per step, hidden cases in tests of their own.
# ---------------------------------------------------------------------------

def fenced(text, lang="text"):
    """text in a Markdown code block whose fence no run of backticks in it can close."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def student_command(args, name=None, case=None):
    """The command that repeats a case (or the run) in a student's lab folder, where
    grader.py stands beside gqa.py."""
    words = reproduce(argparse.Namespace(module=None, module_given=False, seed=args.seed,
                                         cases=args.cases, timeout=args.timeout), name, case)
    options = words.split(" ", 2)[2:]              # less "python PATH/grader.py"
    return " ".join(["python grader.py"] + options)


# A step's status as a GitHub Classroom message says it, where the step left no message.
STATUS = (N_("failed"), N_("not started"))


def _failure(r, args):
    """The first failing case, in Markdown, with the command that repeats it."""
    text = fenced(r.message or _(r.summary))
    if r.case is None or r.status == Status.NOT_STARTED:
        return text
    return (f"{text}\n\n" + _("Repeat it in your lab's folder:") + "\n\n"
            f"{fenced(student_command(args, r.name, r.case), 'sh')}")


def _test(name, number, most, earned, output, visibility=None):
    """A Gradescope test worth most points, earned of them (passed when all; -1.0 for a
    test worth none that failed)."""
    ok = earned >= most if most else earned >= 0
    test = {"name": name, "number": number, "score": max(earned, 0.0), "max_score": most,
            "status": "passed" if ok else "failed", "output": output, "output_format": "md"}
    if visibility:
        test["visibility"] = visibility
    return test


def _hidden_text(r, args):
    """What a step's graded test says: how many hidden cases passed; a failing hidden
    case by its number alone, never its input or answer (one seed serves the class)."""
    passed, total = r.hidden
    said = [_("{passed} of {total} hidden cases passed: {points} of {most} points.").format(
        passed=passed, total=total, points=f"{r.points:g}", most=f"{r.max_points:g}")]
    first_hidden = r.case is not None and r.case >= r.public[1] and r.status != Status.NOT_STARTED
    if first_hidden:                 # its public cases, before it, all passed
        said.append(_("The first that failed is case {case}; a hidden case's input and answer are "
                      "withheld.").format(case=r.case))
        said.append(named(r.mistake) if r.mistake else
                    _("Every public case passes: the hidden ones draw other inputs, and the step's "
                      "docstring states each rule they check."))
    return sentences(said)


def step_tests(r, weight, args):
    """A step's tests.  With hidden cases: one for its public cases, feedback worth no
    points; one for its hidden cases, worth the step's points (results.points: the
    share that pass), with the visibility args chose.  Without: one test, its public
    cases graded by the same rule."""
    name, public_ok = _("step {step}: {name}").format(step=r.step, name=r.name), r.public[0] == r.public[1]
    if r.status == Status.NOT_STARTED:
        public_ok = False
    public_text = (_("All {count} public cases passed.").format(count=r.public[1]) if public_ok
                   else _failure(r, args) if r.case is None or r.case < r.public[1]
                   else _("{passed} of {total} public cases passed.").format(passed=r.public[0],
                                                                            total=r.public[1]))
    if not args.cases:
        return [_test(name, str(r.step), weight, r.points, public_text)]
    return [_test(_("{name} (public cases: feedback, no points)").format(name=name), str(r.step), 0.0,
                  0.0 if public_ok else -1.0, public_text),
            _test(name, f"{r.step}.1", weight, r.points, _hidden_text(r, args), args.hidden_visibility)]


def _failing_line(r):
    """A failing step's line beside its score: its failure, and what points it earned say
    what they are (a FAIL beside points earned is the share of the cases that pass)."""
    line = (r.message or _(r.status)).splitlines()[0]
    if not r.points:
        return line
    return _("{points} of {most} points, the share of its cases that pass; it fails: {failure}").format(
        points=f"{r.points:g}", most=f"{r.max_points:g}", failure=line)


def classroom_result(results, args, error=None):
    """GitHub Classroom's result of one graded step (the autograding reporter's input:
    {"version", "status", "max_score", "tests": [{"name", "status", "score", "message"}]}),
    its score the step's points by the rule of every run (results.points: in Classroom,
    which holds no reference, the share of the public cases that pass), so that a step
    half done earns half its points there too."""
    tests = [{"name": _("step {step}: {name}").format(step=r.step, name=r.name),
              "status": "pass" if r.status == Status.PASSED else "fail",
              "score": round(r.points, 2), "message": _failing_line(r) if r.status != Status.PASSED else "",
              "line_no": 0} for r in results]
    if error:                              # nothing graded: the step's points, none of them earned
        return classroom_error(_("grading"), error, round(sum(
            float((getattr(args, "weight_map", None) or {}).get(name, 1))
            for name in (getattr(args, "only", None) or [])), 2))
    return {"version": 1, "status": "pass" if all(t["status"] == "pass" for t in tests) else "fail",
            "max_score": round(sum(r.max_points for r in results), 2), "tests": tests}


def classroom_error(name, message, max_score):
    """GitHub Classroom's result of a step that graded nothing (a usage error, a step
    that never finished): worth max_score, none of it earned, its one test named name."""
    return {"version": 1, "status": "error", "max_score": max_score,
            "tests": [{"name": name, "status": "error", "score": 0, "message": message, "line_no": 0}]}


def gradescope(results, args, error=None):
    """Gradescope's results.json for these step results (or for a run that graded
    nothing: error says why)."""
    tests = [t for r in results for t in step_tests(r, r.max_points, args)]
    doc = {"score": round(sum(t["score"] for t in tests), 4), "output_format": "md", "tests": tests}
    if error:                              # it may hold the module's own text: shown, never rendered
        doc["output"] = fenced(error)
    return doc


# ---------------------------------------------------------------------------
# Every document: at most DOCUMENT_CAP bytes.
# ---------------------------------------------------------------------------

DOCUMENT_CAP = 1 << 20   # bytes of a JSON document, counted after escaping


def _size(doc):
    return len(json.dumps(clean_data(doc), indent=2, allow_nan=False).encode("utf-8"))


def fit(doc, cap=DOCUMENT_CAP):
    """doc, whose JSON (strings escaped) takes at most cap bytes: first each step's
    transcript and inputs go and its message is cut to 200 characters, then the steps."""
    if _size(doc) <= cap:
        return doc
    doc, note = dict(doc), _("the document was cut to fit {size} bytes").format(size=f"{cap:,}")
    if "steps" in doc:
        doc["steps"] = [dict(r, show=None, inputs=None, message=bounded(r.get("message") or "", 200))
                        for r in doc["steps"]]
    if "tests" in doc:
        doc["tests"] = [dict(r, output=bounded(r.get("output") or "", 200)) for r in doc["tests"]]
    doc["output"] = (note + "\n" + doc.get("output", "")).rstrip("\n")
    if _size(doc) > cap:
        doc.update({key: [] for key in ("steps", "tests", "cleanup") if key in doc},
                   output=_("the document was cut to fit {size} bytes; its steps were left out").format(
                       size=f"{cap:,}"))
    return doc
