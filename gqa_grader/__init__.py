"""The referee of the gqa lab: grades a gqa.py step by step against an independent
reference, the module running only in a sandboxed worker (`python grader.py`).

Its rooms, one job each, a folder each; each room imports only the rooms above it
in this list, the standard library and gqa_sandbox (never gqa.py, never the tools),
and each room's __init__.py names its modules in the order they import each other:

    language   the language a student reads: line breaking (UAX #14), the catalogs
               and their languages, a starter's prose, the starter itself
    running    running a student's module: the worker, its users and seal, the worker
               process, the calls to it and back, what it sent made safe to print
    expected   what an answer is expected to be: the cases' inputs, the reference
               (and the classic mistakes' wrong functions), the answers a handout
               recorded, comparing, the mistakes by name
    steps      checking a step: the 25 checks, a module per part of the lab, the
               refusals, the three parts of robustness, the tracks
    verdict    a run's verdict: the checks run, each step's result and its points,
               the text report, the documents (JSON, Gradescope, Classroom), records
    teacher    the teacher's commands: a class's folder and gradebook, the copies,
               the graders of a class, GitHub Classroom's workflow, the handout and
               its self-check, Gradescope's autograder.zip
    cli        the command line (a module, beside __main__: python -m gqa_grader)

The public door, for the tools: grade() (a StepResult per step, read by its fields),
run_in_child(), tool_seal() (what a tool as root says of the seal, or its refusal), and
their errors; handout_track(), the track of the handout the grader
was written into (None in the project), for the tools a handout carries.
"""

from .running.failures import Failure, Refused

__all__ = ["DEFAULT_TIMEOUT", "Failure", "Refused", "Status", "grade", "handout_track", "run_in_child", "tool_seal"]


def __getattr__(name):
    """grade, run_in_child, DEFAULT_TIMEOUT and Status, imported when first asked for: a tool
    that needs only the language (gqa_grader.language.i18n) does not load the whole grader."""
    if name == "grade":
        from .verdict.grading import grade
        return grade
    if name in ("run_in_child", "DEFAULT_TIMEOUT"):
        from .running import process
        return getattr(process, name)
    if name == "Status":
        from .verdict.results import Status
        return Status
    if name == "tool_seal":
        from .running.seal import tool_seal
        return tool_seal
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def handout_track():
    """tracks.handout_track(): the track of the handout this grader was written into, or
    None; outside a handout (no tracks.TRACK_FILE beside this file) said without
    importing the checks."""
    import os
    if not os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "track.json")):
        return None
    from .steps.tracks import handout_track
    return handout_track()
