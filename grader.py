"""grader: the referee of the gqa lab, checked step by step against an independent reference.

    python grader.py                          grade ./gqa.py (or the one beside this file)
    python grader.py --module mylab/gqa.py    grade another
    python grader.py --starter mylab          write a starter mylab/gqa.py to fill in
    python grader.py --only 5 --case 7 --show
                                              one case of step 5; its failing call as
                                              Python to paste beside the module
    python grader.py --json | --format gradescope      for course tooling
    python grader.py --sealed                 the teacher's run: the module shut in
    python grader.py --autograder dist        dist/autograder.zip for Gradescope
    python grader.py --class subs --gradebook grades.csv
                                              a class's submissions, each a sealed run,
                                              into a gradebook (docs/teachers.md)
    python grader.py --classroom DIR          DIR/.github/workflows/classroom.yml

The module under test runs only in a child process, the worker
(gqa_grader/running/worker.py), which imports it and answers calls; this process
draws the cases, computes the expected values with the reference
(gqa_grader/expected/reference.py), and decides.  Nothing the module does reaches the
verdict.  The referee's files, one job each, are listed in
gqa_grader/__init__.py; what each run guarantees is in docs/sandbox.md.

Output: one line per step in the lab's order, the first failing case of a
failed step with the command that repeats it, the progress, and a last line
"N passed, M failed".  Exit status 0 when every check passes, 1 when one
fails, 2 for a usage error or a module that cannot be imported.
"""

# The door to the referee, which lives in gqa_grader/ beside this file.  No
# `from __future__ import annotations` here or there: that line imports a
# module named __future__, and a file of that name planted in a student's
# folder would run first.  This file's folder leaves sys.path before anything
# is imported, and gqa_grader is loaded from beside this file by its path, so
# every other module the grader imports is the standard library's.
import sys

if __name__ == "__main__" and not sys.flags.isolated and not getattr(sys.flags, "safe_path", False):
    del sys.path[0]                      # the script's folder, put there by `python grader.py`


def _teachers_run(argv):
    """Whether argv names --sealed, --class or --format, whole or as argparse takes it
    shortened ("--seal")."""
    return any(option.startswith(word.split("=")[0])
               for word in argv if word.startswith("--") and len(word.split("=")[0]) > 3
               for option in ("--sealed", "--class", "--format"))


def _hide_command_line():
    """A sealed or class run's options (its seed among them) off the command line, which
    every process of the machine may read (/proc/PID/cmdline): on Linux, a run whose
    options include --sealed, --class or --format starts grader.py again at once, in
    this process (exec: the same pid, streams and signals), with the options on a pipe,
    before anything else is loaded; /proc then shows `grader.py --arguments-from FD`."""
    import json
    import os
    argv = sys.argv[1:]
    if not sys.platform.startswith("linux") or argv[:1] == ["--arguments-from"] or not _teachers_run(argv):
        return
    data = json.dumps(argv).encode("utf-8", "surrogateescape")
    if len(data) > 60000:                # more than a pipe holds unread: left as it is
        return
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    os.set_inheritable(read, True)
    flags = ["-I"] if sys.flags.isolated else []
    os.execv(sys.executable, [sys.executable] + flags + [os.path.abspath(__file__), "--arguments-from", str(read)])


if __name__ == "__main__":
    _hide_command_line()


def _load_referee():
    """The package gqa_grader beside this file (never one found elsewhere on sys.path)."""
    import importlib.util
    import os
    if "gqa_grader" in sys.modules:
        return sys.modules["gqa_grader"]
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gqa_grader")
    spec = importlib.util.spec_from_file_location(
        "gqa_grader", os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])
    package = importlib.util.module_from_spec(spec)
    sys.modules["gqa_grader"] = package
    spec.loader.exec_module(package)
    return package


_load_referee()
from gqa_grader.cli import main, run   # noqa: E402  (after the path is made safe)

if __name__ == "__main__":
    sys.exit(run())
