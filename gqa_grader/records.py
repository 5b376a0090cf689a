"""What a run records, so that the same grade can be had again.

- The options a Gradescope zip or a Classroom workflow carries (carried()): the
  seed, and each option the command line gave (given()); classroom.check_args
  refuses the ones it cannot carry, with a usage error, never dropped.
- Every document's provenance (stamp()): the grader's version, the seed, the
  options and the sha256 of the module's bytes that were graded.  Grading the
  same bytes twice with the same seed and options gives the same document, times
  aside.
- Gradescope's results.json (gradescope()): a test per step, the hidden cases in
  tests of their own with the visibility the teacher chose, Markdown, and for a
  failing case what repeats it: the command, for a public case (the handout's
  self-check has its answer); the call to paste, for a hidden one.
"""

import argparse
import hashlib

from .grading import GRADER_VERSION, reproduce, shown_seed
from .seal import read_module

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")   # Gradescope's


# ---------------------------------------------------------------------------
# The options a command line gave, and those a zip or a workflow carries.
# ---------------------------------------------------------------------------

_UNSET = object()


def given(parser, argv):
    """The dests of the options argv gives (an option equal to its default included)."""
    namespace = argparse.Namespace(**{a.dest: _UNSET for a in parser._actions})
    parser.parse_args(argv, namespace)
    return {dest for dest, value in vars(namespace).items() if value is not _UNSET}


def flag(parser, dest):
    """The option's long name: "--hidden-visibility" for dest hidden_visibility."""
    for action in parser._actions:
        if action.dest == dest:
            return max(action.option_strings, key=len)
    return "--" + dest.replace("_", "-")


def carried(args, dests, weights_file=None):
    """The options, as words, that repeat this run's grading: each one the command
    line gave (dests), and the seed.  --weights becomes weights_file when given."""
    words = []
    if "weights" in dests and args.weights:
        words += ["--weights", weights_file or args.weights]
    for dest, text in (("cases", str(args.cases)), ("timeout", f"{args.timeout:g}"),
                       ("budget", f"{args.budget:g}")):
        if dest in dests:
            words += ["--" + dest, text]
    if "only" in dests and args.only:
        words += ["--steps", getattr(args, "steps_spec", None) or ",".join(args.only)]
    if "fail_fast" in dests and args.fail_fast:
        words.append("--fail-fast")
    if "all_or_nothing" in dests and args.all_or_nothing:
        words.append("--all-or-nothing")
    if "hidden_visibility" in dests:
        words += ["--hidden-visibility", args.hidden_visibility]
    if "lang" in dests and getattr(args, "lang", None):
        words += ["--lang", args.lang]
    return words + ["--seed", str(args.seed)]


# ---------------------------------------------------------------------------
# Provenance: what every document records.
# ---------------------------------------------------------------------------

def options_of(args):
    """The options that decided what was graded, as plain data: a document records
    them, and a gradebook's row is kept only when they are the same."""
    return {"cases": args.cases, "only": list(args.only) if args.only else None,
            "case": args.case, "timeout": args.timeout, "budget": args.budget,
            "fail_fast": bool(args.fail_fast),
            "all_or_nothing": bool(getattr(args, "all_or_nothing", False))}


def sha256_of(seal, path):
    """The sha256 of the bytes graded: those the seal read once and placed in its
    private folder; else (a run without one) the file's, read now; None when there
    are none."""
    data = getattr(seal, "source", None)
    if data is None:
        try:
            data = read_module(path, follow=True)
        except Exception:
            return None
    return hashlib.sha256(data).hexdigest()


def provenance(args):
    return {"grader": GRADER_VERSION, "seed": shown_seed(args, None), "options": options_of(args),
            "sha256": getattr(args, "sha256", None)}


def stamp(doc, args, seconds):
    """doc with its provenance: in the grader's document at the top; in Gradescope's,
    in extra_data (and the run's seconds as its execution_time)."""
    doc = dict(doc)
    if args.format == "gradescope":
        doc["execution_time"] = int(round(seconds))
        doc["extra_data"] = provenance(args)
        doc["extra_data"]["options"].update(weights=dict(getattr(args, "weight_map", {}) or {}),
                                            hidden_visibility=args.hidden_visibility)
    else:
        doc.update(provenance(args))
    return doc


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


def _failure(r, args):
    """The first failing case, in Markdown, with the command that repeats it."""
    text = fenced(r["message"] or r["summary"])
    if r["case"] is None or r["status"] == "not started":
        return text
    return (f"{text}\n\nRepeat it in your lab's folder:\n\n"
            f"{fenced(student_command(args, r['name'], r['case']), 'sh')}")


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
    passed, total = r["hidden"]
    text = f"{passed} of {total} hidden cases passed: {r['points']:g} of {r['max_points']:g} points."
    first_hidden = r["case"] is not None and r["case"] >= r["public"][1] and r["status"] != "not started"
    if first_hidden:
        text += (f" The first that failed is case {r['case']}; a hidden case's input and answer "
                 f"are withheld. Make the public cases pass first (see the test above).")
    return text


def step_tests(r, weight, args):
    """A step's tests.  With hidden cases: one for its public cases, feedback worth no
    points; one for its hidden cases, worth the step's points (grading.points: the
    share that pass), with the visibility args chose.  Without: one test, its public
    cases graded by the same rule."""
    name, public_ok = f"step {r['step']}: {r['name']}", r["public"][0] == r["public"][1]
    if r["status"] == "not started":
        public_ok = False
    public_text = (f"All {r['public'][1]} public cases passed." if public_ok
                   else _failure(r, args) if r["case"] is None or r["case"] < r["public"][1]
                   else f"{r['public'][0]} of {r['public'][1]} public cases passed.")
    if not args.cases:
        return [_test(name, str(r["step"]), weight, r["points"], public_text)]
    return [_test(f"{name} (public cases: feedback, no points)", str(r["step"]), 0.0, 0.0 if public_ok
                  else -1.0, public_text),
            _test(name, f"{r['step']}.1", weight, r["points"], _hidden_text(r, args), args.hidden_visibility)]


def classroom_result(results, args, error=None):
    """GitHub Classroom's result of one graded step (the autograding reporter's input:
    {"version", "status", "max_score", "tests": [{"name", "status", "score", "message"}]}),
    its score the step's points by the rule of every run (grading.points: in Classroom,
    which holds no reference, the share of the public cases that pass), so that a step
    half done earns half its points there too."""
    tests = [{"name": f"step {r['step']}: {r['name']}", "status": "pass" if r["status"] == "passed" else "fail",
              "score": round(r["points"], 2), "message": (r.get("message") or r["status"]).splitlines()[0]
              if r["status"] != "passed" else "", "line_no": 0} for r in results]
    most = sum(r["max_points"] for r in results)
    if error:                              # nothing graded: the step's points, none of them earned
        tests = [{"name": "grading", "status": "error", "score": 0, "message": error, "line_no": 0}]
        most = sum(float((getattr(args, "weight_map", None) or {}).get(name, 1))
                   for name in (getattr(args, "only", None) or []))
    return {"version": 1, "status": "error" if error else "pass" if all(t["status"] == "pass" for t in tests)
            else "fail", "max_score": round(most, 2), "tests": tests}


def gradescope(results, args, error=None):
    """Gradescope's results.json for these step results (or for a run that graded
    nothing: error says why)."""
    tests = [t for r in results for t in step_tests(r, r["max_points"], args)]
    doc = {"score": round(sum(t["score"] for t in tests), 4), "output_format": "md", "tests": tests}
    if error:                              # it may hold the module's own text: shown, never rendered
        doc["output"] = fenced(error)
    return doc
