"""grader: a referee for gqa.py, checked step by step against an independent reference.

    python grader.py                          grade gqa.py beside this file, fresh seed
    python grader.py --module mylab/gqa.py    grade your own (see --starter)
    python grader.py --starter mylab          write a starter mylab/gqa.py to fill in
    python grader.py --only 5 --case 7 --show
                                              one case of step 5; its failing call as
                                              Python to paste beside the module
    python grader.py --json | --format gradescope      for course tooling
    python grader.py --autograder dist        dist/autograder.zip for Gradescope

The module under test runs only in a child process: a worker that imports
it and answers calls.  This process draws the cases, computes the expected
values from its own copy of the inputs with the reference below, sends the
inputs, receives the outputs as plain data and decides.  Nothing the module
does (patching modules, printing, reading stdin, sys.exit, os._exit, an
endless loop, crashing the interpreter, sending garbage) reaches the verdict:
every read and write has a deadline (--timeout per call, --budget in all), a
worker that does not answer in time is killed with its process group, and
one that dies is replaced for the next case.  The worker is started as
`python -I -S` (no site-packages, no PYTHON* variables) with limits on CPU,
memory, processes, file size and open files.  That is the self-check, a
learning tool: the worker runs as the student, beside grader.py.  --sealed
(implied by --format gradescope) is the teacher's run: the module alone in a
private folder, an environment of PATH only and, as root, a user id drawn
for the run, which cannot signal, trace, read or write the grader, its folder or its
results.

The reference reads beside the lab: one function per step, in the lab's order
and named after it (ref_valid_g for valid_g, ..., RefKVCache for KVCache).  It
shares no code with gqa.py and is built differently on purpose: it copies
every key/value head into each query head it serves (the module indexes the
shared head), loops over indices, counts multiplications and cache elements
by performing and building them, never by a formula, and computes
output_difference in exact rational arithmetic.

Every check runs a fixed systematic set of cases (every (h, g) with h <= 16,
causal on and off, the refusals), the same on every run, and then --cases
random ones from the seed: case k of a check is drawn from
random.Random(f"{check}:{seed}:{k}"), so `--only NAME --case k` repeats it.

Output: one line per step in the lab's order ("not started" for a step whose
function still raises NotImplementedError, with the other step it waits for
and the earlier steps it sends the student back to), the first failing case
of a failed step with the command that reproduces it, the progress, and a
last line "N passed, M failed".  Exit status 0 when every check passes, 1 when one
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
