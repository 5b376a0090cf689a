"""Grading: run each step's cases in a worker, and say how it went.

grade() returns one result per step (a dict: status "passed", "failed" or "not
started", the cases, the first failure's message, case, inputs and --show
transcript, what the step needs and touches); Trusted grades modules one trusts
one after another in one worker.  print_report() writes them as a
teacher would (records.gradescope, as Gradescope's results.json).
"""

import json
import os
import sys
import time

from .checking import PUBLIC_CASES, Draw
from .checks import STEP_OF, STEPS
from .compare import bounded, clean_data
from .exchange import Case, Student
from .failures import Failure, NotStarted, OutOfTime, Refused
from .i18n import N_, _, ljust, ngettext, width
from .process import BUDGET_NOTE, DEFAULT_TIMEOUT, Worker
from .seal import DEFAULT_BUDGET, HERE, Seal
from .tracks import ALL_STEPS, BY_NAME, covered, default_track

GRADER_VERSION = "4.1"
DEFAULT_MODULE = os.path.join(HERE, "gqa.py")
DEFAULT_CASES = 5       # hidden random cases per check, from the run's seed, after the public ones
PUBLIC_SEED = 0         # the seed of the public cases: the same in every run, and in a handout
MAX_CASES = 1000        # at most this many: 1,000 random cases per step take minutes
# A teacher's run (sealed, --class, Gradescope's seed of each submission) draws its seed
# from 10**18, so that no module can find it by trying seeds against the hidden inputs
# it is handed (a million take it a few seconds); a student's self-check from 10**6, to
# type.  A seed given with fewer than GUESSABLE digits is said to be guessable.
SEALED_SEEDS, SELF_CHECK_SEEDS, GUESSABLE = 10 ** 18, 10 ** 6, 13


def guessable(seed):
    """A teacher's note when the seed one gave shares hidden cases yet could be found by
    a module that tries seeds; None for a seed too wide to try."""
    if seed is None or abs(seed) >= 10 ** (GUESSABLE - 1):
        return None
    return (f"--seed {seed} has fewer than {GUESSABLE} digits: a module can find it by trying "
            f"seeds against the hidden inputs it is handed, and then make every hidden case; "
            f"leave --seed out (the grader draws one of 18 digits) or give a longer one")


# ---------------------------------------------------------------------------
# Grading: run the steps, report like a teacher.
# ---------------------------------------------------------------------------


def blocked_by(st, err):
    """The other step whose function made this step's check stop as not started: the step
    of the module's function that raised NotImplementedError (its class's, for a method),
    as the worker saw it; None when that is this step or no step."""
    number = STEP_OF.get((err.function or "").split(".")[0])
    return number if number is not None and number != st.number else None


def public_end(st):
    """The number of st's cases that are public: a lesson step's systematic ones, then
    PUBLIC_CASES random ones; a robustness part's subjects.  Cases from there on are
    hidden, drawn from the run's seed."""
    return len(st.subjects) if st.part == "robustness" else st.systematic + PUBLIC_CASES


def case_ids(st, cases, names):
    """The cases a run of the steps names grades of st: the public ones, then the hidden
    ones (cases of them for a lesson step; a robustness part's subjects again).  A
    robustness part's cases are those of the functions it covers (tracks.covered)."""
    end = public_end(st)
    if st.part == "lesson":
        return list(range(end + cases))
    keep = covered(names)
    ids = [k for k, name in enumerate(st.subjects) if name in keep]
    return ids + ([end + k for k in ids] if cases else [])


def case_seed(st, k, seed):
    """The seed case k of step st is drawn from: PUBLIC_SEED for a public case."""
    return PUBLIC_SEED if k < public_end(st) else seed


def run_step(st, student, seed, cases, only_case=None, fail_fast=False, names=None):
    """Run one step's cases; return its result dict.  Nothing the worker sends raises
    from here: an answer the grader cannot check fails its case, saying why.  A case
    not run (the step stopped early) counts as not passed."""
    ids = [only_case] if only_case is not None else case_ids(st, cases, names or [st.name])
    end = public_end(st)
    hidden = sum(k >= end for k in ids)
    result = {"step": st.number, "name": st.name, "part": st.part, "summary": st.summary,
              "status": "passed", "cases": len(ids), "cases_passed": 0,
              "public": [0, len(ids) - hidden], "hidden": [0, hidden], "message": "", "case": None,
              "inputs": None, "show": None, "needs": [], "touches": list(st.touches), "notes": [],
              "advice": []}
    student.advice = []
    try:
        _run_cases(st, student, seed, ids, only_case, fail_fast, result)
    finally:
        result["advice"] = [bounded(a, 600) for a in student.advice[:3]]
    return result


def _run_cases(st, student, seed, ids, only_case, fail_fast, result):
    robust = st.part == "robustness"
    for k in ids:
        shown = Case(student, strict=robust)
        student.pending = []
        hidden = k >= public_end(st)
        try:
            st.fn(shown, st.subjects[k % len(st.subjects)] if robust else k,
                  Draw(f"{st.name}:{case_seed(st, k, seed)}:{k}", hidden))
            result["cases_passed"] += 1
            result["hidden" if hidden else "public"][0] += 1
            if only_case is not None:
                result.update(inputs=shown.inputs(), show=shown.show(whole=True))
        except OutOfTime:
            result.update(status="failed", message=_(BUDGET_NOTE) + student.worker.budget_text,
                          case=None, inputs=None, show=None)
            return
        except NotStarted as err:
            if robust:                             # one function not started: that case fails
                _failed(result, _("case {case}: {error}").format(case=k, error=f"{err}{err.where}"), k, shown)
                continue
            blocked = blocked_by(st, err)
            if blocked:
                result["needs"] = [{"step": blocked, "name": STEPS[blocked - 1].name}]
            result["stub"] = err.direct and STEP_OF.get((err.function or "").split(".")[0]) is not None
            where = err.where                      # the student's file and line
            started = result["cases_passed"] > 0
            result.update(status="failed" if started else "not started", case=k, inputs=shown.inputs(),
                          message=(_("case {case}: {error}").format(case=k, error=f"{err}{where}")
                                   if started else f"{err}{where}"),
                          show=shown.show())
            return
        except (Failure, Refused, Exception) as err:
            if not isinstance(err, (Failure, Refused)):
                err = _("the grader could not check this case's answer ({type}: {error})").format(
                    type=type(err).__name__, error=err)
            _failed(result, str(err), k, shown)
            if student.worker.proc is None or fail_fast:   # it hung or died: one such case per step
                return
        if student.worker.out_of_time():
            if result["status"] == "passed" and k != ids[-1]:
                result.update(status="failed", message=_(BUDGET_NOTE) + student.worker.budget_text)
            return


def _failed(result, message, k, shown):
    """The step failed at case k, unless it failed already (the first failure is shown)."""
    if result["status"] == "passed":
        result.update(status="failed", message=message, case=k, inputs=shown.inputs(), show=shown.show())


WITHHELD = N_("a hidden case failed: its input, the answer expected, its calls and the seed that "
              "makes it are withheld, since every submission meets the same hidden cases")


def withhold_hidden(results):
    """results with each failing hidden case's message, inputs and calls withheld: the
    feedback a class is sent (the case's number and the command that repeats it stay,
    for the teacher, who has the grader and its seed)."""
    return [dict(r, message=_("case {case}: {error}").format(case=r["case"], error=_(WITHHELD)),
                 inputs=None, show=None)
            if r["status"] != "passed" and r.get("case") is not None
            and r["case"] >= public_end(BY_NAME[r["name"]]) else r
            for r in results]


def not_graded(st, why, ids=(), end=0):
    """A step the run did not reach: each of its cases ids counts as not passed."""
    hidden = sum(k >= end for k in ids)
    return {"step": st.number, "name": st.name, "part": st.part, "summary": st.summary,
            "status": "failed", "cases": len(ids), "cases_passed": 0,
            "public": [0, len(ids) - hidden], "hidden": [0, hidden], "message": why, "case": None,
            "inputs": None, "show": None, "needs": [], "touches": list(st.touches), "notes": [],
            "advice": []}


def points(r, weight=1.0, cases=1, all_or_nothing=False):
    """A step's points, the one rule of every run: weight times the share of its graded
    cases that passed (with all_or_nothing, weight only when every one did).  A run
    with hidden cases (cases > 0) grades those alone: the public ones, whose answers a
    handout holds, give feedback and earn nothing.  Without hidden cases (a handout's
    self-check), the public cases are graded, and that is not the grade."""
    passed, total = (r.get("hidden") if cases else r.get("public")) or [0, 0]
    if r.get("status") == "not started" or not total:
        return 0.0
    share = 1.0 if passed == total else 0.0 if all_or_nothing else passed / total
    return round(weight * share, 4)


def scored(results, weights, cases, all_or_nothing=False):
    """results, each with its points and max_points (points(); weights: name -> points,
    1 where not given)."""
    return [dict(r, points=points(r, float(weights.get(r["name"], 1.0)), cases, all_or_nothing),
                 max_points=float(weights.get(r["name"], 1.0))) for r in results]


def grade(path, seed, cases=DEFAULT_CASES, only=None, timeout=DEFAULT_TIMEOUT, case=None,
          fail_fast=False, budget=DEFAULT_BUDGET, seal=None, label=None):
    """Grade the module at path; return the list of step results.

    With fail_fast, each step stops at its first failing case.  The run ends
    after budget seconds: the steps not reached say so.  seal: how the
    worker is shut in (default: limits and a session of its own, on POSIX).

    Raises Refused when the module cannot be imported (or imports the grader).
    """
    own = seal is None
    seal = seal or Seal(budget=budget)
    worker = Worker(path, timeout, seal, label=label)
    try:
        return _graded(worker, worker.start, seed, cases, only, case, fail_fast, budget)
    finally:
        worker.stop()
        if own:
            seal.close()


class Trusted:
    """One worker process in which to grade modules one trusts, one after another (a lab's
    own variants, such as the tests' mutants), never a student's.  The worker imports each
    module afresh (a new module object, nothing kept from the last), but what a module does
    to the worker's process stays for those after it, where grade() gives each module a
    process of its own.  Use it in a with block, or close() it."""

    def __init__(self, budget=DEFAULT_BUDGET):
        self.seal = Seal(budget=budget)
        self.worker = Worker("", DEFAULT_TIMEOUT, self.seal, reload=True)

    def grade(self, path, seed, cases=DEFAULT_CASES, only=None, timeout=DEFAULT_TIMEOUT,
              case=None, fail_fast=False, budget=DEFAULT_BUDGET, label=None):
        """grade() of the module at path, in this worker (budget: this module's)."""
        worker = self.worker
        worker.timeout = timeout
        return _graded(worker, lambda: worker.load(path, label), seed, cases, only, case,
                       fail_fast, budget)

    def close(self):
        self.worker.stop()
        self.seal.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _graded(worker, start, seed, cases, only, case, fail_fast, budget):
    """The steps' results, from the worker, once start() has imported the module in it."""
    worker.budget_end = time.monotonic() + budget
    worker.budget_text = _(" (--budget {budget} s)").format(budget=f"{budget:g}")
    try:
        start()
    except OutOfTime:
        raise Refused(_("importing {module} did not finish within the run's time budget "
                        "({budget} s)").format(module=worker.label, budget=f"{budget:g}")) from None
    student = Student(worker)
    results = []
    names = list(only or default_track())
    for st in ALL_STEPS:
        if st.name not in names:
            continue
        if worker.out_of_time():
            ids = [case] if case is not None else case_ids(st, cases, names)
            results.append(not_graded(st, _(BUDGET_NOTE) + worker.budget_text, ids, public_end(st)))
        else:
            results.append(run_step(st, student, seed, cases, case, fail_fast, names))
    for r in results:
        r["message"] = bounded(r["message"])
        r["notes"] = step_notes(r)
    return results


def grader_command():
    """How to run this grader from the current folder: "python grader.py", "python
    ../grader.py", or "python -m gqa_grader" where no grader.py stands beside the package."""
    script = os.path.join(HERE, "grader.py")
    if not os.path.isfile(script):
        return "python -m gqa_grader"
    try:
        rel = os.path.relpath(script)
    except ValueError:                   # another drive (Windows)
        rel = script
    return f"python {script if rel.startswith(os.pardir + os.sep + os.pardir) else rel}"


SEED_WITHHELD = "SEED"      # the seed, where it is withheld: the teacher's gradebook has it


def shown_seed(args, withheld=SEED_WITHHELD):
    """The seed as a command shows it (and, with withheld=None, a document): withheld with
    the hidden cases, since the seed and the handout's checks make every hidden case again."""
    return withheld if getattr(args, "withhold_hidden", False) else args.seed


def reproduce(args, name=None, case=None):
    """The command that repeats this run, or one step of it, or one case."""
    parts = [grader_command()]
    if getattr(args, "module_given", args.module != DEFAULT_MODULE):
        parts.append(f"--module {args.module}")
    step = BY_NAME.get(name)
    public = case is not None and step is not None and case < public_end(step)
    if not public and args.cases:                   # a public case needs no seed
        parts.append(f"--seed {shown_seed(args)}")
    if name:
        parts.append(f"--only {name}")
    elif getattr(args, "only", None):
        parts.append(f"--steps {getattr(args, 'steps_spec', None) or ','.join(args.only)}")
    if case is not None:
        parts.append(f"--case {case} --show")
    elif args.cases != DEFAULT_CASES:
        parts.append(f"--cases {args.cases}")
    if args.timeout != DEFAULT_TIMEOUT:
        parts.append(f"--timeout {args.timeout:g}")
    if "lang" in getattr(args, "given", ()):
        parts.append(f"--lang {args.lang}")
    return " ".join(parts)


def and_list(numbers):
    """'7, 9 and 13' (in the language in use)."""
    words = [str(n) for n in numbers]
    if len(words) < 2:
        return "".join(words)
    return _("{items} and {last}").format(items=_(", ").join(words[:-1]), last=words[-1])


def step_notes(r):
    """What a step that is not done needs and touches: 'needs step 21, KVCache: not started'."""
    st = BY_NAME[r["name"]]
    notes = [_("needs step {step}, {name}: not started").format(step=n["step"], name=n["name"])
             for n in r.get("needs", [])]
    if st.touches and r["status"] != "passed":
        notes.append(ngettext("step {step}, {name}, means changing step {steps} {why}",
                              "step {step}, {name}, means changing steps {steps} {why}",
                              len(st.touches)).format(step=st.number, name=st.name,
                                                      steps=and_list(st.touches), why=_(st.why) if st.why else "").rstrip())
    return notes


def progress(results):
    """'5 of 25 steps done; next: step 6, repeat_kv'."""
    done = [r for r in results if r["status"] == "passed"]
    todo = [r for r in results if r["status"] != "passed"]
    text = _("{done} of {total} steps done").format(done=len(done), total=len(results))
    if todo:
        needs = _(" and ").join(_("step {step}, {name}").format(step=n["step"], name=n["name"])
                                for n in todo[0].get("needs", []))
        template = (_("{done}; next: step {step}, {name} (it needs {needs}, first)") if needs
                    else _("{done}; next: step {step}, {name}"))
        text = template.format(done=text, step=todo[0]["step"], name=todo[0]["name"], needs=needs)
    return text


def summary(results, args):
    """The last lines: the points, by the rule of every run (points()), then 'N passed,
    M failed' (and the steps not started: never counted as failed)."""
    earned, most = sum(r.get("points", 0.0) for r in results), sum(r.get("max_points", 1.0) for r in results)
    aon = getattr(args, "all_or_nothing", False)
    if args.case is not None:
        graded = _("this one case")
    elif args.cases:
        graded = (_("each step's hidden cases, all or nothing") if aon
                  else _("each step's hidden cases, the share that pass"))
    else:
        graded = (_("each step's public cases, all or nothing: the teacher's rule, not the grade, "
                    "which counts hidden cases") if aon
                  else _("each step's public cases, the share that pass: the teacher's rule, not the "
                         "grade, which counts hidden cases"))
    counts = {s: sum(r["status"] == s for r in results) for s in ("passed", "failed", "not started")}
    line = _("{passed} passed, {failed} failed").format(passed=counts["passed"], failed=counts["failed"])
    if counts["not started"]:
        line = _("{passed} passed, {failed} failed, {not_started} not started").format(
            passed=counts["passed"], failed=counts["failed"], not_started=counts["not started"])
    return _("points: {earned} of {most} ({graded})").format(earned=f"{earned:g}", most=f"{most:g}",
                                                            graded=graded) + "\n" + line


def print_report(results, args, out=None):
    out = out or sys.stdout
    results = clean_data(results)
    names = max((len(r["name"]) for r in results), default=0)
    counts = {r["name"]: _("not started") if r["status"] == "not started" else
              _("{passed}/{cases} cases").format(passed=r["cases_passed"], cases=r["cases"]) for r in results}
    columns = max([13] + [width(c) for c in counts.values()])
    for r in results:
        status = {"passed": "PASS", "failed": "FAIL", "not started": "----"}[r["status"]]
        if args.quiet and status != "FAIL":
            continue
        print(_("  step {step}  {status}  {name}  {count} {summary}").format(
            step=f"{r['step']:>2}", status=status, name=r["name"].ljust(names),
            count=ljust(counts[r["name"]], columns), summary=_(r["summary"])), file=out)
        for note in r.get("notes", []):
            print(f"        {note}", file=out)
        for advice in r.get("advice", [])[:1]:        # a refusal's wording: advice, not a failure
            print("        " + _("advice (not graded): {advice}").format(advice=advice.splitlines()[0]),
                  file=out)
        if status == "----" and not r.get("stub"):
            for line in r["message"].splitlines():    # raised midway or by a helper: what and where
                print(f"        {line}", file=out)
        if status == "FAIL":
            for line in r["message"].splitlines():
                print(f"        {line}", file=out)
            if not r["message"].startswith(_(BUDGET_NOTE)):
                print("        " + _("reproduce: {command}").format(
                    command=reproduce(args, r["name"], r["case"])), file=out)
        if args.show and r.get("show") and (status == "FAIL" or args.case is not None):
            case = r["case"] if r["case"] is not None else args.case
            folder = os.path.relpath(os.path.dirname(os.path.abspath(args.module)))
            folder = _("this folder") if folder == "." else folder
            what = (_("the call of case {case}, to paste into python started in {folder}:") if status == "FAIL"
                    else _("the calls of case {case}, to paste into python started in {folder}:"))
            print("        " + what.format(case=case, folder=folder) + "\n", file=out)
            print(r["show"], file=out)


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
