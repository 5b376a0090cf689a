"""Grading: run each step's cases in a worker.

grade() returns one StepResult per step (results.py: a Status, passed, failed or
not started, the cases, the first failure's message, case, inputs and --show
transcript, what the step needs and touches); Trusted grades modules one trusts
one after another in one worker.  Which cases are public and which hidden, and
the seed each is drawn from, are said here.  printing.py says the results as a
teacher would; documents.py writes them as documents.
"""

import os
import time

from ..expected.mistakes import MISTAKES, named, recognised
from ..language.i18n import N_, _
from ..running.exchange import Case, Student
from ..running.failures import Failure, NotStarted, OutOfTime, Refused
from ..running.process import BUDGET_NOTE, DEFAULT_TIMEOUT, Worker
from ..running.seal import DEFAULT_BUDGET, HERE, Seal, read_module
from ..running.values import bounded
from ..steps.checking import ENDS, PUBLIC_CASES, Draw
from ..steps.checks import STEPS, STEP_OF
from ..steps.tracks import ALL_STEPS, BY_NAME, covered, default_track
from .results import Status, step_result

# What a grade is (CONTRIBUTING.md, "When GRADER_VERSION changes"): --class resumes only
# rows of this version, and teachers compare runs by it.  GRADER_CHECKS is the sha256 of
# the checks' code that the version names (tests/test_grading.py computes it, docstrings
# and messages aside, and fails when the code no longer matches it: set it again, and
# raise the version when what a case checks or how points count changed).
GRADER_VERSION = "4.4"
GRADER_CHECKS = "75b7330fb572b936ea342d65eac0b883c11dee39192160c6637ef4de8cf03cd3"
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
    return _("--seed {seed} has fewer than {digits} digits: a module can find it by trying seeds against "
             "the hidden inputs it is handed, and then make every hidden case; leave --seed out (the grader "
             "draws one of 18 digits) or give a longer one").format(seed=seed, digits=GUESSABLE)


# ---------------------------------------------------------------------------
# Grading: the cases of each step, run in the worker.
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
    """Run one step's cases; return its StepResult.  Nothing the worker sends raises
    from here: an answer the grader cannot check fails its case, saying why.  A case
    not run (the step stopped early) counts as not passed."""
    ids = [only_case] if only_case is not None else case_ids(st, cases, names or [st.name])
    run = _Run()
    student.advice = []
    _run_cases(st, student, seed, ids, only_case, fail_fast, run)
    for need in run.fields.get("needs", ()):        # a step the handout's track leaves a stub: never "do it first",
        if need["name"] not in (names or ()) and need["name"] not in default_track():
            need["outside"] = True
            run.status = Status.FAILED                  # nor "not started": the step is written, and calls it
    return step_result(st, ids, public_end(st), run.status, tuple(run.passed),
                       advice=tuple(bounded(a, 600) for a in student.advice[:3]), **run.fields)


class _Run:
    """A step's cases so far: how many passed (public, hidden), its status, and the
    fields of its first failure (message, case, inputs, show; needs and stub when a
    function is not started; the misconception it is, when one is recognised)."""

    TRIES = 12          # failing cases asked for a misconception, at most, when none is found

    def __init__(self):
        self.status, self.passed, self.fields = Status.PASSED, [0, 0], {}
        self.sure, self.tries = False, 0      # sure: one misconception alone was recognised

    def fail(self, message, k=None, shown=None, status=Status.FAILED):
        """The step ends as status, saying message; at case k, whose inputs and calls
        shown (its Case) holds, when the failure is a case's."""
        self.status = status
        self.fields.update(message=message, case=k, inputs=None if shown is None else shown.inputs(),
                           show=None if shown is None else shown.show())

    def first(self, message, k, shown):
        """The step failed at case k, unless it failed already (the first failure is shown)."""
        if self.status == Status.PASSED:
            self.fail(message, k, shown)

    def failed(self, err, k, shown):
        """Case k failed with err: the first failure is shown, unless a later one is the first
        recognised as a misconception (or as one alone, where the shown one could be several):
        a student is pointed at the mistake, not at a case that happens to fail first."""
        keys = []
        if not self.sure and self.tries < self.TRIES and isinstance(err, Failure):
            self.tries += 1
            keys = recognised(err)
        sure = len(keys) == 1
        if self.status == Status.PASSED or keys and (not self.fields.get("mistake") or sure and not self.sure):
            self.fail(str(err) + "".join("\n" + named(key) for key in keys[:1]), k, shown)
            self.fields["mistake"] = keys[0] if keys else None
            self.sure = sure


def code_after(source, line):
    """Whether the module's source (bytes) holds code under the statement at line (1 on),
    in its block: a stub's raise with the step written below it, which never runs.  Read
    as lines, never run or parsed: the lines after it at its indentation, before its block
    ends (deeper ones continue it; comments and blank lines say nothing)."""
    lines = source.decode("utf-8", "replace").splitlines()
    if not 0 < line <= len(lines):
        return False
    indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
    for text in lines[line:]:
        if text.strip() and not text.strip().startswith("#"):
            depth = len(text) - len(text.lstrip())
            if depth <= indent:
                return depth == indent
    return False


def _source(worker):
    """The bytes of the module a worker runs (b"" when they cannot be read)."""
    try:
        return worker.seal.source if worker.seal.source is not None else read_module(worker.path, True)
    except Refused:
        return b""


def _run_cases(st, student, seed, ids, only_case, fail_fast, run):
    robust = st.part == "robustness"
    for k in ids:
        shown = Case(student, strict=robust)
        student.pending = []
        hidden = k >= public_end(st)
        try:
            subject = st.subjects[k % len(st.subjects)] if robust else k
            key = f"{st.name}:{case_seed(st, k, seed)}:{k}"
            draw = Draw(key, hidden)
            st.fn(shown, subject, draw)
            for end in ENDS if draw.grouped else ():        # the same case at g = h and g = 1
                st.fn(shown, subject, Draw(key, hidden, end))
            run.passed[hidden] += 1
            if only_case is not None:
                run.fields.update(inputs=shown.inputs(), show=shown.show(whole=True))
        except OutOfTime:
            run.fail(_(BUDGET_NOTE) + student.worker.budget_text)
            return
        except NotStarted as err:
            if robust:                             # one function not started: that case fails
                run.first(_("case {case}: {error}").format(case=k, error=f"{err}{err.where}"), k, shown)
                continue
            blocked = blocked_by(st, err)
            if blocked:
                run.fields["needs"] = ({"step": blocked, "name": STEPS[blocked - 1].name},)
            after = err.direct and err.line and code_after(_source(student.worker), err.line)   # written, under it
            run.fields["stub"] = err.direct and STEP_OF.get((err.function or "").split(".")[0]) is not None and not after
            where = err.where                      # the student's file and line
            if after:
                where += "\n" + _("the lines under its raise NotImplementedError never run: delete that line")
            started = sum(run.passed) > 0
            run.fail(_("case {case}: {error}").format(case=k, error=f"{err}{where}") if started
                     else f"{err}{where}", k, shown, Status.FAILED if started else Status.NOT_STARTED)
            return
        except (Failure, Refused, Exception) as err:
            if not isinstance(err, (Failure, Refused)):
                err = _("the grader could not check this case's answer ({type}: {error})").format(
                    type=type(err).__name__, error=err)
            run.failed(err, k, shown)
            if student.worker.proc is None or fail_fast:   # it hung or died: one such case per step
                return
        if student.worker.out_of_time():
            if run.status == Status.PASSED and k != ids[-1]:
                run.fail(_(BUDGET_NOTE) + student.worker.budget_text)
            return


WITHHELD = N_("a hidden case failed: its input, the answer expected, its calls and the seed that "
              "makes it are withheld, since every submission meets the same hidden cases")


def withheld_note(r):
    """A withheld hidden case's feedback: that it failed, the ranges its step's hidden cases
    draw from, and the misconception it was recognised as."""
    lines = [_("case {case}: {error}").format(case=r.case, error=_(WITHHELD))]
    if getattr(BY_NAME[r.name], "hidden", ""):          # where the step says (checking.step_into)
        lines.append(_("this step's hidden cases draw from {ranges}").format(ranges=BY_NAME[r.name].hidden))
    if r.mistake in MISTAKES:
        lines.append(named(r.mistake))
    return "\n".join(lines)


def withhold_hidden(results):
    """results with each failing hidden case's message, inputs and calls withheld: the
    feedback a class is sent (the case's number and the command that repeats it stay,
    for the teacher, who has the grader and its seed).  The misconception the case was
    recognised as is named: a mistake's name gives away no case."""
    return [r._replace(message=withheld_note(r), inputs=None, show=None)
            if r.status != Status.PASSED and r.case is not None and r.case >= public_end(BY_NAME[r.name])
            else r for r in results]


def not_graded(st, why, ids=(), end=0):
    """A step the run did not reach: each of its cases ids counts as not passed."""
    return step_result(st, list(ids), end, Status.FAILED, message=why)


def grade(path, seed, cases=DEFAULT_CASES, only=None, timeout=DEFAULT_TIMEOUT, case=None,
          fail_fast=False, budget=DEFAULT_BUDGET, seal=None, label=None, for_tool=False):
    """Grade the module at path; return the list of step results.

    With fail_fast, each step stops at its first failing case.  The run ends
    after budget seconds: the steps not reached say so.  seal: how the
    worker is shut in (default: limits and a session of its own, on POSIX; for_tool: a
    tool's run of a student's module, sealed as Seal's for_tool says).

    Raises Refused when the module cannot be imported (or imports the grader).
    """
    own = seal is None
    seal = seal or Seal(budget=budget, for_tool=for_tool)
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
        if case is None and not case_ids(st, cases, names):   # a part none of the steps graded has
            continue                                          # a case of: never a PASS of 0 cases
        if worker.out_of_time():
            ids = [case] if case is not None else case_ids(st, cases, names)
            results.append(not_graded(st, _(BUDGET_NOTE) + worker.budget_text, ids, public_end(st)))
        else:
            results.append(run_step(st, student, seed, cases, case, fail_fast, names))
    return _same_mistakes(results)


def _same_mistakes(results):
    """results with a note on each failing step recognised as the mistake an earlier step's
    was: its function may take it from that step's (step 17's block_multiplies, counting with
    step 16's attention_multiplies, read as a mistake of its own)."""
    first = {}
    for i, r in enumerate(results):
        if r.mistake and r.status == Status.FAILED:
            earlier = first.setdefault(r.mistake, r)
            if earlier is not r:
                results[i] = r._replace(notes=r.notes + (_(
                    "the same mistake as step {step}, {name}'s: this step's function may take it from that "
                    "one").format(step=earlier.step, name=earlier.name),))
    return results


