"""Shared by the tests of the referee against hostile modules (test_seal, test_worker,
test_process, test_users, test_cli, and RealWork in test_counting): each test writes a
small module into a temporary folder and grades it with a disposable copy of grader.py
(attacks that would edit files edit the copies).  What no module may do in either run
(crash or stall the grader, print a second document) is tested in both; what only the
sealed run closes (reading the grader, reaching its process, its files and its results)
is tested in a sealed run as root, and shown to work in the self-check, so that each
test could fail.  Here: the solution (SOURCE) and its starter, the Copy of the grader,
and the runs' helpers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from gqa_grader import cli
from gqa_grader.running import failures
from gqa_grader.verdict import grading
from gqa_grader.teacher import handout
from gqa_grader.running.seal import sandbox_package
from tests.helpers import ROOT, copy_grader, run_grader

with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as _f:
    SOURCE = _f.read()
STARTER = handout.make_starter(SOURCE)
ROOT_POSIX = os.name == "posix" and hasattr(os, "geteuid") and os.geteuid() == 0
NOT_ROOT = "a sealed run drops privileges only as root; this test runs as another user"


class Copy:
    """A private folder holding copies of grader.py and the solution gqa.py beside it,
    and another holding the module under test."""

    def __init__(self, module_source, grader_edit=None):
        self.dir = tempfile.mkdtemp()
        os.chmod(self.dir, 0o700)
        self.grader = copy_grader(self.dir)
        if grader_edit:                      # (file in gqa_grader/, old text, new text)
            edited = os.path.join(self.dir, "gqa_grader", grader_edit[0])
            with open(edited, encoding="utf-8") as f:
                text = f.read()
            self.assertEdited = text.count(grader_edit[1]) == 1
            with open(edited, "w", encoding="utf-8") as f:
                f.write(text.replace(*grader_edit[1:]))
        self.sub = tempfile.mkdtemp()
        self.module = os.path.join(self.sub, "gqa.py")
        with open(self.module, "w", encoding="utf-8") as f:
            f.write(module_source.replace("__GRADER__", self.grader))
        self.results = os.path.join(self.dir, "results.json")

    def run(self, *args, timeout=60):
        return run_grader("--module", self.module, *args, grader=self.grader, cwd=self.dir, timeout=timeout)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.sub, ignore_errors=True)


def main_in(here, *argv):
    """cli.main(argv) in this process, as if grader.py stood in the folder here; the
    module still runs in a worker.  Returns what a subprocess run would (code, stdout, stderr)."""
    import contextlib
    import io
    from unittest import mock
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            mock.patch("gqa_grader.running.seal.HERE", here):
        code = cli.main(list(argv))
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def one_document(test, run):
    """The run's stdout parsed as exactly one JSON document."""
    text = run.stdout
    doc, end = json.JSONDecoder().raw_decode(text)
    test.assertEqual(text[end:].strip(), "", "more than one document")
    return doc


def in_each(jobs, at_once=2):
    """fn() for each fn, at_once at a time (each grades in its own worker process)."""
    with ThreadPoolExecutor(at_once) as pool:
        return list(pool.map(lambda fn: fn(), jobs))


def completed(run):
    """A run (subprocess.CompletedProcess) as plain data, for a job: [status, stdout, stderr]."""
    return [run.returncode, run.stdout, run.stderr]


def as_run(data):
    """A run from completed()'s data."""
    return subprocess.CompletedProcess(None, *data)


def raised(fn):
    """What fn() raised, as plain data: {"failure": whether a Failure (or kind of one),
    "refused": whether Refused, "type", "message"}; None when it raised nothing."""
    try:
        fn()
    except Exception as err:
        return {"failure": isinstance(err, failures.Failure), "refused": isinstance(err, failures.Refused),
                "type": type(err).__name__, "message": str(err)}
    return None


def grade_source(source, **options):
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "gqa.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    try:
        return {r.name: r.as_json() for r in grading.grade(path, 1, **options)}
    finally:
        shutil.rmtree(folder)


def outside_namespaces():
    """The defences of a run outside namespaces, tried where namespaces could be made."""
    from unittest import mock
    return mock.patch.object(sandbox_package(), "TOOLS", ())


def fixed_hash():
    """hash("gqa") with PYTHONHASHSEED=0, in a process of its own: a module's str hashes, and so
    the order of its sets of strings, are the same in every run (the same file and seed score
    the same; each worker drew its own once)."""
    return int(subprocess.run([sys.executable, "-c", "print(hash('gqa'))"], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONHASHSEED="0"), check=True).stdout)
