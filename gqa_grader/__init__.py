"""The referee of the gqa lab: grades a gqa.py step by step against an independent
reference, the module running only in a sandboxed worker (`python grader.py`).

One job a file, each importing only those above it in this list, the standard
library and gqa_sandbox (never gqa.py, never the tools):

    linebreak  where a line may break, in any script: the Unicode line breaking
               algorithm's classes and rules (UAX #14)
    i18n       the languages a student reads, one line each in its registry:
               _() and ngettext() over gettext's catalogs (locale/), chosen by
               --lang or the environment; display width; lines filled
    atomic     a file written whole or not at all
    failures   how a case or a run ends when it does not pass: kinds with data
    copies     submissions that share most of their code (winnowing), flagged, not scored
    cleanup    what a run's user left behind, removed; never raises
    starter    the starter, built from gqa.py's text
    compare    comparing answers; text from the worker made safe to print
    inputs     the cases' inputs, drawn, shaped and flattened; the counter the reference
               counts with
    reference  the reference: one ref_ function per step, built another way; beside
               it, the classic mistakes' wrong functions (mis_)
    answers    where the checks' expected answers come from: the reference, or the
               answers a handout recorded
    mistakes   the classic mistakes by name: a failing answer recognised as one
    toolcopy   the tools' files copied: a handout's, and what a tool's sealed child imports
    worker     the worker program, run as a script: the only importer of the module
    users      the worker's users: a user id per run, its processes killed, what it reaches
    seal       the seal: limits, a private folder, a user id per run, gqa_sandbox's
               namespaces where they can be made, the cleanup
    process    the Worker process and the worker protocol (written down there), and
               run_in_child (the tools' door)
    exchange   calls to the worker and back; the --show transcript
    refusals   the calls each step must refuse: GQAError for values, TypeError for types
    checking   what every check uses: a Step, its registration, a case's draws
    checks     the 25 checks in order, a module per part of the lab (checks_heads,
               checks_layer, checks_counting, checks_decoding, checks_backward)
    robustness the three parts of robustness: types, refusals, extremes
    tracks     the steps a run grades: numbers, ranges, names, tracks (core, all, robustness)
    results    a step's result (StepResult), built in one place, and its points
    grading    running the checks: each step's cases, public and hidden, in the worker
    printing   the text report: a line per step, progress, points, the command to repeat
    documents  the grader's JSON document, Gradescope's results.json, Classroom's result
    prose      a starter's docstrings and comments in the student's language
    catalogs   the catalogs' .po read and compiled to .mo; the message ids in the code
    handout    the starter's file and Gradescope's autograder.zip
    selfcheck  --handout: the students' starter and a self-check that holds no reference
    records    what a run records to be had again: provenance, the options carried,
               a submission's seed from a secret
    submissions  what was submitted: a class's folder, a student's gqa.py in it
    pool       --class's graders (--class-serve) and the protocol they speak
    ledger     what a gradebook keeps, read back as a spreadsheet saved it: the class's
               record (its seed), the LMSs' exports, the class's statistics
    classroom  a class: --class's gradebook and each student's feedback
    workflow   --classroom: GitHub Classroom's workflow, written by a small YAML emitter
    commands   the teacher's commands (--class, --classroom, --autograder, --handout):
               what each can carry, and where each goes
    cli        the command line
    __main__   python -m gqa_grader: the same as python grader.py

The public door, for the tools: grade() (a StepResult per step, read by its fields),
run_in_child(), tool_seal() (what a tool as root says of the seal, or its refusal), and
their errors; handout_track(), the track of the handout the grader
was written into (None in the project), for the tools a handout carries.
"""

from .failures import Failure, Refused

__all__ = ["DEFAULT_TIMEOUT", "Failure", "Refused", "Status", "grade", "handout_track", "run_in_child", "tool_seal"]


def __getattr__(name):
    """grade, run_in_child, DEFAULT_TIMEOUT and Status, imported when first asked for: a tool
    that needs only the language (gqa_grader.i18n) does not load the whole grader."""
    if name == "grade":
        from .grading import grade
        return grade
    if name in ("run_in_child", "DEFAULT_TIMEOUT"):
        from . import process
        return getattr(process, name)
    if name == "Status":
        from .results import Status
        return Status
    if name == "tool_seal":
        from .seal import tool_seal
        return tool_seal
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def handout_track():
    """tracks.handout_track(): the track of the handout this grader was written into, or
    None; outside a handout (no tracks.TRACK_FILE beside this file) said without
    importing the checks."""
    import os
    if not os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "track.json")):
        return None
    from .tracks import handout_track
    return handout_track()
