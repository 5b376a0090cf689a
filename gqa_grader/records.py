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
from .sandbox import read_module

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
        words += ["--only", ",".join(args.only)]
    if "fail_fast" in dests and args.fail_fast:
        words.append("--fail-fast")
    if "hidden_visibility" in dests:
        words += ["--hidden-visibility", args.hidden_visibility]
    return words + ["--seed", str(args.seed)]


# ---------------------------------------------------------------------------
# Provenance: what every document records.
# ---------------------------------------------------------------------------

def options_of(args):
    """The options that decided what was graded, as plain data: a document records
    them, and a gradebook's row is kept only when they are the same."""
    return {"cases": args.cases, "only": list(args.only) if args.only else None,
            "case": args.case, "timeout": args.timeout, "budget": args.budget,
            "fail_fast": bool(args.fail_fast)}


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


def split_counts(r):
    """(public, hidden), each [passed, total], where the step's result splits them;
    None where it does not (then every case counts as public)."""
    public, hidden = r.get("public"), r.get("hidden")
    if isinstance(public, (list, tuple)) and isinstance(hidden, (list, tuple)):
        return list(public), list(hidden)
    return None


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


def _hidden_failure(r):
    """A hidden case's failure, by its inputs: the call to paste, where there is one."""
    text = fenced(r["message"] or r["summary"])
    if r.get("show"):
        text += ("\n\nThe failing call, to paste into python started in your lab's folder:"
                 f"\n\n{fenced(r['show'], 'python')}")
    return text


def _test(name, number, points, ok, output, visibility=None):
    test = {"name": name, "number": number, "score": points if ok else 0.0, "max_score": points,
            "status": "passed" if ok else "failed", "output": output, "output_format": "md"}
    if visibility:
        test["visibility"] = visibility
    return test


def step_tests(r, weight, args):
    """A step's tests: one for its public cases, and, when the run has hidden cases and
    the result counts them apart, one for those, with the visibility args chose (the
    step's points split between the two)."""
    name, passed = f"step {r['step']}: {r['name']}", r["status"] == "passed"
    split = split_counts(r) if args.cases else None
    if split is None:
        return [_test(name, str(r["step"]), weight, passed,
                      f"All {r['cases']} cases passed." if passed else _failure(r, args))]
    (public, public_total), (hidden, hidden_total) = split
    first_hidden = r["case"] is not None and r["case"] >= public_total
    public_ok = passed or first_hidden
    hidden_ok = passed or (not first_hidden and r["case"] is not None and r["status"] == "failed"
                           and hidden == hidden_total == args.cases)
    if hidden_ok:
        hidden_text = f"All {hidden_total} hidden cases passed."
    elif first_hidden:
        hidden_text = _hidden_failure(r)
    else:
        hidden_text = (f"{hidden} of {args.cases} hidden cases passed; the step's first failing "
                       f"case is a public one (see the test above).")
    return [_test(name, str(r["step"]), weight / 2, public_ok,
                  f"All {public_total} public cases passed." if public_ok else _failure(r, args)),
            _test(f"{name} (hidden cases)", f"{r['step']}.1", weight / 2, hidden_ok, hidden_text,
                  args.hidden_visibility)]


def gradescope(results, args, error=None):
    """Gradescope's results.json for these step results (or for a run that graded
    nothing: error says why)."""
    weights = getattr(args, "weight_map", {}) or {}
    tests = [t for r in results for t in step_tests(r, float(weights.get(r["name"], 1.0)), args)]
    doc = {"score": sum(t["score"] for t in tests), "output_format": "md", "tests": tests}
    if error:
        doc["output"] = error
    return doc
