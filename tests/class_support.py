"""Shared by the tests of a class's runs (test_class, test_classroom, test_gradebook,
test_copies): the solution (SOURCE) and wrong modules made from it (WRONG fails step 3,
BIG_WRONG step 1's random cases), a Private copy of the grader as a teacher's, files
written (write) and read back (sha256, rows_of: a gradebook's rows), and a usage error
as printed (usage_error)."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import os
import shutil
import tempfile
from unittest import mock

from gqa_grader import cli
from tests.helpers import ROOT, copy_grader, run_grader

GQA = os.path.join(ROOT, "gqa.py")
with open(GQA, encoding="utf-8") as _f:
    SOURCE = _f.read()
WRONG = SOURCE.replace("return query_head // group", "return query_head % g")   # step 3 fails
_DOC = SOURCE.index('"""', SOURCE.index('"""', SOURCE.index("def valid_g(")) + 3) + 3
BIG_WRONG = (SOURCE[:_DOC] + "\n    if type(h) is int and h > 16:\n        return [1]"   # step 1's random
             + SOURCE[_DOC:])                                                          # cases fail
AS_ROOT = os.name == "posix" and os.geteuid() == 0


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(text.encode("utf-8") if isinstance(text, str) else text)
    return path


class Private:
    """A folder only root can enter, holding a copy of grader.py and gqa_grader/ (and the
    solution, as a teacher's has), and a work folder beside it for what a test writes."""

    def __init__(self, test=None):
        """Removed after test; with no test (an early job's), by remove()."""
        self.top = tempfile.mkdtemp()
        if test is not None:
            test.addCleanup(self.remove)
        self.dir = os.path.join(self.top, "grader")
        os.makedirs(self.dir, mode=0o700)
        copy_grader(self.dir)
        self.work = os.path.join(self.top, "work")
        os.makedirs(self.work)

    def remove(self):
        shutil.rmtree(self.top, True)

    def run(self, *argv, **kw):
        return run_grader(*argv, grader=os.path.join(self.dir, "grader.py"), cwd=self.work, **kw)

    def main(self, *argv):
        """cli.main in this process, as if grader.py stood in the private folder (the
        module still runs in a worker): (status, stdout, stderr)."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                mock.patch("gqa_grader.running.seal.HERE", self.dir):
            status = cli.main(list(argv))
        return status, out.getvalue(), err.getvalue()


def usage_error(*argv):
    """parse_args(argv)'s usage error, as printed (None when there is none)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            cli.parse_args(list(argv))
        except SystemExit as stop:
            return err.getvalue().strip().splitlines()[-1] if stop.code == 2 else None
    return None


def rows_of(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return {row["submission"]: row for row in csv.DictReader(f)}
