"""What is handed out: the starter a student fills in, and Gradescope's autograder.zip."""

import ast
import os
import shlex
import zipfile

from .checks import STEP_OF
from .grading import DEFAULT_MODULE
from . import sandbox




def make_starter(source):
    """Return the source of a starter gqa.py: public functions and methods stubbed.

    Keeps the module docstring, imports, records, private base classes and
    constants (a student's helpers may use them); drops private helpers, the
    kernels and the command line; replaces each
    public function's body by its docstring and
    raise NotImplementedError("step N: NAME: ..."), N being the grader's step.
    """
    tree = ast.parse(source)

    def stub(fn, qualname, owner):
        doc = ast.get_docstring(fn)
        summary = doc.splitlines()[0] if doc else ""
        body = [ast.Expr(ast.Constant(doc))] if doc else []
        number = STEP_OF.get(owner)
        label = f"step {number}: {qualname}" if number else f"{qualname} (not graded)"
        body.append(ast.Raise(ast.Call(ast.Name("NotImplementedError", ast.Load()),
                                       [ast.Constant(label + (f": {summary}" if summary else ""))],
                                       []), None))
        fn.body = body

    kept = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("_") or node.name == "main":
                continue
            stub(node, node.name, node.name)
        elif isinstance(node, ast.ClassDef):
            if not node.name.startswith("_"):        # a private base class is kept whole
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and (not item.name.startswith("_")
                                                               or item.name in ("__init__", "__len__")):
                        stub(item, f"{node.name}.{item.name}", node.name)
        elif isinstance(node, ast.If) and ("__name__" in ast.dump(node.test) or all(
                isinstance(n, ast.FunctionDef) and n.name.startswith("_")
                for n in node.body + node.orelse)):
            continue                                 # the command line, private kernels
        kept.append(node)
    tree.body = kept
    header = ('# A starter for the gqa lab, written by `python grader.py --starter`.\n'
              '# Replace each `raise NotImplementedError` with your code, step by step, and run\n'
              '# `python grader.py --module THIS_FILE` to see your progress.\n')
    return header + ast.unparse(tree) + "\n"


def write_starter(directory, source_path=DEFAULT_MODULE):
    with open(source_path, encoding="utf-8") as f:
        text = make_starter(f.read())
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "gqa.py")
    if os.path.exists(path):
        raise FileExistsError(f"{path} exists already; the starter will not overwrite it")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


# ---------------------------------------------------------------------------
# Gradescope: an autograder.zip in one command.
# ---------------------------------------------------------------------------

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the image.  The grader needs the
# standard library of Python 3.9 or later and nothing else: nothing is installed.
python3 -c 'import sys; assert sys.version_info >= (3, 9), sys.version'
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this as root for every submission.  The grader's folder is
# made private first, so the student's module (run as a user id drawn for
# the run) can
# read neither grader.py nor anything beside it, and only the grader writes
# the results.
set -u
chmod 700 /autograder/source
mkdir -p /autograder/results
chmod 755 /autograder/results
cd /autograder/source
python3 grader.py --sealed --format gradescope --module /autograder/submission/gqa.py \\
    --out /autograder/results/results.json{options} > /dev/null
exit 0
"""


def _grader_files():
    """The grader's own files, as paths relative to its folder: grader.py and gqa_grader/."""
    package = os.path.join(sandbox.HERE, "gqa_grader")
    return ["grader.py"] + sorted(f"gqa_grader/{name}" for name in os.listdir(package)
                                  if name.endswith(".py"))


def _add(z, name, data, mode):
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data)


def write_autograder(directory, args, options):
    """Write directory/autograder.zip: setup.sh, run_autograder (the grader's run with
    options, the words that repeat the grading: the seed and every option given), the
    grader (grader.py and gqa_grader/) and the weights, if any."""
    options = "".join(" " + shlex.quote(word) for word in options)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "autograder.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text, mode in (("setup.sh", SETUP_SH, 0o755),
                                 ("run_autograder", RUN_AUTOGRADER.format(options=options), 0o755)):
            _add(z, name, text, mode)
        for name in _grader_files():
            with open(os.path.join(sandbox.HERE, name), "rb") as f:
                _add(z, name, f.read(), 0o644)
        if args.weights:
            with open(args.weights, "rb") as f:
                _add(z, "weights.json", f.read(), 0o644)
    return path


# ---------------------------------------------------------------------------
