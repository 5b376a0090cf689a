"""gqa_tools.report: report.md, the lab report, written by the code.

    python -m gqa report [--out report.md] [--check] [--module PATH] [configuration options]

Every number in the report is computed, counted or measured by a gqa.py when
the command runs: none is typed in.  By default that is the project's gqa.py
(beside gqa_tools/), written to the checkout's report.md (./report.md once
installed); --module PATH builds the report from another one, a student's,
in a child process with the grader's limits and deadlines (this process
never imports it), and a section whose functions are missing, fail or
hang (a call is given seconds; one that does not return is stopped, and
named by its step where it is needed), or that never came back, says so
instead.  That is the student's report
(STUDENT_SECTIONS): section 5 first runs the module's `attention` on random
q, k, v, and section 9 holds the handout's questions for the student to
answer; a section, or a part of one (the counted caches, the tally), that
needs a step the module lacks names that step ("needs step 21, KVCache"),
and the rest of it stands.  In a handout's folder (`python grader.py
--handout DIR` copies the tools there), the report is of the handout's own
gqa.py, the student's, run so (HANDOUT_SECTIONS): section 8 is left out, the
handout's lab not training, and a step outside the handout's track is named
as such.  That report goes beside the module
(report.md in PATH's folder) unless --out says where, and never over the
project's own.  What would stop a write (no such folder, a path that is not
a file) is refused before any work.  The report is the same to the byte on
every run, machine and Python version: seeded random numbers
(gqa_tools.seeds' one scheme), a fixed order, fixed precision, no
timings, no dates, no machine names.

measure() runs the lab on a small configuration; each section_*() function
writes one section from the closed forms and those measurements, and returns
its Markdown, or its Markdown and its figures (SVG text drawn by
gqa_tools.report.figures from the numbers of the table beside each);
build_parts() and assemble() put the sections together.  The figures are
written into a folder beside the report, report-figures/ beside report.md,
and --check compares them too.

Its modules, each with one job, in the order they build on each other:

    settings     Config (what a report is computed for), the options' limits and help
    files        writing a report and its figures atomically, or --check
    lab          Lab: the module a report is built from, every call guarded
    reads        what section 8's training reads: the definitions it reaches, found in the code
    measuring    measure(): the small configuration, run for real
    record       section 8's training, kept in report-training.json by Python family
    text         what every section is written with: figure links, labels
    figures      the report's figures as SVG (drawn with gqa_tools.svg)
    costs        sections 1 to 4 and 7: what g is and what it changes, counted
    outputs      sections 5 and 6: how the output changes with g
    trained      section 8: converting is not training
    reading      section 9: how to read this
    student      a student's header, section 5 and write-up (--module)
    sections     SECTIONS, STUDENT_SECTIONS; build_parts(), assemble(), figures_of()
    child        a student's report, built in the grader's worker
    command      the command line: main()
"""

from __future__ import annotations

from gqa_tools.report.command import main

__all__ = ["child_parts", "main"]


def __getattr__(name: str) -> object:
    """child_parts, the door of a student's report in the worker (run_in_child's target
    "gqa_tools.report:child_parts"), imported when it is asked for: the project's report
    builds no child, and child's imports (a thread pool's) are not its to pay."""
    if name == "child_parts":
        from gqa_tools.report.child import child_parts
        return child_parts
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
