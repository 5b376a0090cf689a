"""The students' handout: the starter, and a self-check that holds no reference.

`python grader.py --handout DIR` writes what a class gets, and nothing else:

    DIR/gqa.py                 the starter (the lesson's text, each step's body a stub)
    DIR/grader.py              the self-check's door, as in the project
    DIR/gqa_grader/            the referee's files, less reference.py
    DIR/gqa_grader/answers.json  the reference's answers to the public cases
    DIR/README.md              what a student does

The public cases are the systematic ones and PUBLIC_CASES random ones from the fixed
PUBLIC_SEED: the same in every run, so their answers can be recorded once, here, by
grading the project's own gqa.py with each reference function wrapped to write down
what it answered (answers.recorder).  In the handout answers.py finds no reference
and gives back those answers; the teacher's sealed run grades the same public cases,
and hidden ones from its seed, with the reference itself.
"""

import json
import os
import shutil

from . import answers, checks, handout, sandbox
from .grading import DEFAULT_MODULE, PUBLIC_CASES, PUBLIC_SEED, grade

README = """# The gqa lab

`gqa.py` is the lab: 25 steps, each a function whose body is a stub for you to
write, in order.  Its docstrings are the manual.  Check your work as you go:

    python grader.py                   every step (the public cases)
    python grader.py --only 5          one step, by number or name
    python grader.py --only 5 --case 7 --show
                                       one case, and its failing call as Python to paste

The self-check grades the public cases: the systematic ones and {public} random
ones per step, the same in every run.  Your teacher grades them too, and hidden
ones drawn from a seed of theirs, with the same checks.  Nothing else is needed:
Python 3.9 or later, nothing to install.
"""


def record(module=DEFAULT_MODULE, only=None):
    """The reference's answers to every public case of every step (or of the steps named
    in only), as the checks ask for them while they grade module (the project's own
    gqa.py): {key: answer}."""
    from . import reference
    table = {}
    wrapped = {name: answers.recorder(name, getattr(reference, name), table) for name in answers.NAMES}
    wrapped["RefKVCache"] = answers.recording_cache(reference.RefKVCache, table)
    saved = {name: getattr(checks, name) for name in wrapped}
    vars(checks).update(wrapped)
    try:
        for h in range(1, 17):                     # what the checks ask at import (ALL_HG)
            wrapped["ref_valid_g"](h)
        results = grade(module, PUBLIC_SEED, cases=0, only=only)
    finally:
        vars(checks).update(saved)
    failed = [r["name"] for r in results if r["status"] != "passed"]
    if failed:
        raise RuntimeError(f"the handout's answers are recorded from {module}, which fails "
                           f"{', '.join(failed)}")
    return table


def write_handout(directory, module=DEFAULT_MODULE, only=None):
    """Write the handout into directory (which must not hold a gqa.py); return its path.
    only: the steps whose answers it holds (all by default)."""
    if os.path.exists(os.path.join(directory, "gqa.py")):
        raise FileExistsError(f"{os.path.join(directory, 'gqa.py')} exists already; the handout "
                              f"will not overwrite it")
    table = record(module, only)
    package = os.path.join(directory, "gqa_grader")
    os.makedirs(package, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.endswith(".py") and name != "reference.py":
            shutil.copyfile(os.path.join(here, name), os.path.join(package, name))
    with open(os.path.join(package, "answers.json"), "w", encoding="utf-8") as f:
        json.dump(table, f, sort_keys=True, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    shutil.copyfile(os.path.join(sandbox.HERE, "grader.py"), os.path.join(directory, "grader.py"))
    with open(os.path.join(directory, "README.md"), "w", encoding="utf-8") as f:
        f.write(README.format(public=PUBLIC_CASES))
    handout.write_starter(directory, module)
    return directory
