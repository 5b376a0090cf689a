"""The run as a teacher says it: a line per step, the progress, the points, and the
command that repeats a run, a step or a case (`python grader.py`'s text report).
"""

import os
import shlex
import sys

from ..language.i18n import _, ljust, ngettext, width
from ..running.process import BUDGET_NOTE, DEFAULT_TIMEOUT
from ..running.seal import HERE
from ..steps.tracks import BY_NAME
from .grading import DEFAULT_CASES, DEFAULT_MODULE, public_end
from .results import STEP_STATUSES, Status


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
    return f"python {shlex.quote(script if rel.startswith(os.pardir + os.sep + os.pardir) else rel)}"


def _folder_shown(folder):
    """The module's folder as --show names it: "this folder", a path from here, or the
    whole path when it is far away (two folders up or more, or on another drive)."""
    try:
        rel = os.path.relpath(folder)
    except ValueError:                   # another drive (Windows)
        return folder
    if rel == os.curdir:
        return _("this folder")
    return folder if rel.startswith(os.pardir + os.sep + os.pardir) else rel


SEED_WITHHELD = "SEED"      # the seed, where it is withheld: the teacher's gradebook has it


def shown_seed(args, withheld=SEED_WITHHELD):
    """The seed as a command shows it (and, with withheld=None, a document): withheld with
    the hidden cases, since the seed and the handout's checks make every hidden case again."""
    return withheld if getattr(args, "withhold_hidden", False) else args.seed


def reproduce(args, name=None, case=None):
    """The command that repeats this run, or one step of it, or one case.  In a run whose
    hidden cases are withheld (a class's feedback, Gradescope's results), the command is
    the student's, run in their own lab's folder: its grader.py and its gqa.py, no path of
    the teacher's; so too in GitHub Classroom's, whose grader runs from a copy of its own
    outside the student's checkout (which holds the handout's grader.py)."""
    student = getattr(args, "withhold_hidden", False) or getattr(args, "format", None) == "classroom"
    parts = ["python grader.py" if student else grader_command()]
    if not student and getattr(args, "module_given", args.module != DEFAULT_MODULE):
        parts.append(f"--module {shlex.quote(args.module)}")    # a path with a space pastes whole
    step = BY_NAME.get(name)
    public = case is not None and step is not None and case < public_end(step)
    if not public and args.cases:                   # a public case needs no seed
        parts.append(f"--seed {shown_seed(args)}")
    if name:
        parts.append(f"--only {name}")
    elif getattr(args, "only", None):              # as typed: --only stays --only
        parts.append(f"{getattr(args, 'steps_option', '--steps')} "
                     f"{getattr(args, 'steps_spec', None) or ','.join(args.only)}")
    if case is not None:
        parts.append(f"--case {case} --show")
    elif args.cases != DEFAULT_CASES:
        parts.append(f"--cases {args.cases}")
    if args.timeout != DEFAULT_TIMEOUT:
        parts.append(f"--timeout {args.timeout:g}")
    if "lang" in getattr(args, "given", ()) or getattr(args, "lang", "en") != "en":   # the environment's too
        parts.append(f"--lang {args.lang}")
    return " ".join(parts)


def progress(results):
    """'5 of 25 steps done; next: step 6, repeat_kv'."""
    done = [r for r in results if r.status == Status.PASSED]
    todo = [r for r in results if r.status != Status.PASSED]
    text = _("{done} of {total} steps done").format(done=len(done), total=len(results))
    if todo:
        needs = _(" and ").join(_("step {step}, {name}").format(step=n["step"], name=n["name"])
                                for n in todo[0].needs if not n.get("outside"))     # a stub of no track: not next
        template = (_("{done}; next: step {step}, {name} (it needs {needs}, first)") if needs
                    else _("{done}; next: step {step}, {name}"))
        text = template.format(done=text, step=todo[0].step, name=todo[0].name, needs=needs)
    return text


def summary(results, args):
    """The last lines: the points, by the rule of every run (points()), then 'N passed,
    M failed' (and the steps not started: never counted as failed)."""
    earned, most = sum((r.points or 0.0) for r in results), sum(1.0 if r.max_points is None else r.max_points for r in results)
    aon = getattr(args, "all_or_nothing", False)
    if args.case is not None and args.cases and not any((r.hidden or (0, 0))[1] for r in results):
        graded = _("case {case} alone, a public case: public cases earn no points, the hidden ones "
                   "do").format(case=args.case)
    elif args.case is not None:
        graded = _("this one case")
    elif args.cases:
        graded = (_("each step's hidden cases, all or nothing") if aon
                  else _("each step's hidden cases, the share that pass"))
    else:
        graded = (_("each step's public cases, all or nothing: the teacher's rule, not the grade, "
                    "which counts hidden cases") if aon
                  else _("each step's public cases, the share that pass: the teacher's rule, not the "
                         "grade, which counts hidden cases"))
    counts = {s: sum(r.status == s for r in results) for s in STEP_STATUSES}
    line = _("{passed} passed, {failed} failed").format(passed=counts[Status.PASSED], failed=counts[Status.FAILED])
    if counts[Status.NOT_STARTED]:
        line = _("{passed} passed, {failed} failed, {not_started} not started").format(
            passed=counts[Status.PASSED], failed=counts[Status.FAILED], not_started=counts[Status.NOT_STARTED])
    text = _("points: {earned} of {most} ({graded})").format(earned=f"{earned:g}", most=f"{most:g}",
                                                            graded=graded)
    earning = [r for r in results if r.status == Status.FAILED and r.points]
    if earning:                                    # points beside a FAIL: say what they are
        text += "\n" + ngettext(
            "{count} failed step earns points: {steps}; its points count the cases graded for points "
            "that pass, and its failure is shown above",
            "{count} failed steps earn points: {steps}; their points count the cases graded for points "
            "that pass, and each failure is shown above", len(earning)).format(
                count=len(earning), steps=_(", ").join(f"{r.name} {r.points:g}/{r.max_points:g}"
                                                        for r in earning))
    return text + "\n" + line


def print_report(results, args, out=None):
    out = out or sys.stdout
    results = [r.cleaned() for r in results]
    names = max((len(r.name) for r in results), default=0)
    counts = {r.name: _("not started") if r.status == Status.NOT_STARTED else
              _("{passed}/{cases} cases").format(passed=r.cases_passed, cases=r.cases) for r in results}
    columns = max([13] + [width(c) for c in counts.values()])
    for r in results:
        status = {Status.PASSED: "PASS", Status.FAILED: "FAIL", Status.NOT_STARTED: "----"}[r.status]
        if args.quiet and status != "FAIL":
            continue
        print(_("  step {step}  {status}  {name}  {count} {summary}").format(
            step=f"{r.step:>2}", status=status, name=r.name.ljust(names),
            count=ljust(counts[r.name], columns), summary=_(r.summary)), file=out)
        for note in r.notes:
            print(f"        {note}", file=out)
        for advice in r.advice[:1]:        # a refusal's wording: advice, not a failure
            print("        " + _("advice (not graded): {advice}").format(advice=advice.splitlines()[0]),
                  file=out)
        if status == "----" and not r.stub:
            for line in r.message.splitlines():    # raised midway or by a helper: what and where
                print(f"        {line}", file=out)
        if status == "FAIL":
            for line in r.message.splitlines():
                print(f"        {line}", file=out)
            if not r.message.startswith(_(BUDGET_NOTE)):
                command = reproduce(args, r.name, r.case)      # a hidden case's, withheld: the teacher's
                said = (_("reproduce (SEED: the teacher's gradebook): {command}") if f"--seed {SEED_WITHHELD}" in command
                        else _("reproduce: {command}"))
                print("        " + said.format(command=command), file=out)
        if args.show and r.show and (status == "FAIL" or args.case is not None):
            case = r.case if r.case is not None else args.case
            folder = _folder_shown(os.path.dirname(os.path.abspath(args.module)))
            what = (_("the call of case {case}, to paste into python started in {folder}:") if status == "FAIL"
                    else _("the calls of case {case}, to paste into python started in {folder}:"))
            print("        " + what.format(case=case, folder=folder) + "\n", file=out)
            print(r.show, file=out)
