"""Helpers for the tests.  The brute-force reference itself lives in the grader
(gqa_grader/expected/reference.py, written independently of gqa.py), so the tests and the
grader share one.  Here too: the project's root (ROOT), running a command of
`python -m gqa` in this process (run_gqa), starting a grader as its own process
(run_grader) and copying one into a private folder (copy_grader); then CI's share
of the process-heavy classes (HEAVY), and their slow parts run early, beside the
suite (start_early, early)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import unittest

from gqa_grader.expected import compare, reference
# The modules that copy gqa_grader.running.seal.HERE when first imported (from ..running.seal
# import HERE) and that the grader imports late: imported here, first, so that none is first
# imported while a test patches HERE to a private folder (then removed), keeping that folder.
from gqa_grader.teacher import classroom, handout, pool, selfcheck  # noqa: F401,E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the project: gqa.py, grader.py


def captured(main, argv):
    """main(argv), a command line's main run in this process: (exit status, stdout,
    stderr), an exit by SystemExit (argparse's) read as its status."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as exit_:
            status = exit_.code
    return status, out.getvalue(), err.getvalue()


def run_gqa(*argv):
    """`python -m gqa ARGV` run in this process: (exit status, stdout, stderr)."""
    from gqa_tools import cli as gqa_cli
    return captured(gqa_cli.main, argv)


def run_grader(*argv, grader=None, cwd=None, timeout=120, python=None, text=True, **kw):
    """`python grader.py ARGV` as its own process, its output captured: the project's
    grader, or the one at grader (a copy); run in cwd (the project's root unless given)."""
    return subprocess.run([python or sys.executable, grader or os.path.join(ROOT, "grader.py"), *argv],
                          capture_output=True, text=text, cwd=cwd or ROOT, timeout=timeout, **kw)


def copy_grader(folder, lab=True):
    """The referee copied into folder (grader.py, gqa_grader/, gqa_sandbox/), and the
    solution gqa.py beside it when lab; the copy's grader.py.  Copied whole, as `cp -R`
    copies it: its bytecode too, where the project holds it (CI compiles it first), which
    spares each of the copy's runs compiling the grader again."""
    shutil.copy(os.path.join(ROOT, "grader.py"), folder)
    for package in ("gqa_grader", "gqa_sandbox"):
        shutil.copytree(os.path.join(ROOT, package), os.path.join(folder, package))
    if lab:
        shutil.copy(os.path.join(ROOT, "gqa.py"), folder)
    return os.path.join(folder, "grader.py")


def new_rng(seed):
    return random.Random(seed)


def random_case(rng, max_h=12):
    """A random (h, g, n, m, d, d_v) with g dividing h and m >= n."""
    h = rng.randint(1, max_h)
    g = rng.choice(reference.ref_valid_g(h))
    n = rng.randint(1, 5)
    m = rng.randint(n, 7)
    return h, g, n, m, rng.randint(1, 6), rng.randint(1, 6)


def random_layer_case(rng, seed, max_d_model=8):
    """random_case's sizes with a d_model, MHA weights from seed and an input x [n][d_model]."""
    import gqa
    h, g, n, _, d, _ = random_case(rng)
    d_model = rng.randint(1, max_d_model)
    return h, g, gqa.init_weights(h, d_model, d, seed=seed), reference.rand_tensor(rng, n, d_model)


def flat(t):
    if isinstance(t, (list, tuple)):
        return [y for x in t for y in flat(x)]
    return [t]


class CloseMixin:
    """assertClose, in the manner of CPython's test_statistics: the first
    differing index, with its absolute and relative error."""

    def assertClose(self, got, expected, rel=1e-12, abs_tol=1e-12, msg=""):
        diff = compare.first_difference(got, expected, rel=rel, abs_tol=abs_tol)
        if diff:
            self.fail(f"{msg}: {diff}" if msg else diff)


def multiplies_by_hand(g, n=64, h=6, d=8):
    """One causal layer's multiplications at g, worked by hand for a report's configuration
    (n positions, h heads of dimension d, d_model = h * d): {term: count}, total included."""
    pairs, d_model = n * (n + 1) // 2, h * d                # causal: query i sees keys 0..i
    counts = {"q_proj": n * d_model * h * d, "k_proj": n * d_model * g * d, "v_proj": n * d_model * g * d,
              "scores": h * pairs * d, "weighted_sum": h * pairs * d, "o_proj": n * h * d * d_model}
    counts["total"] = sum(counts.values())
    return counts


def tiny_recipe():
    """A training recipe that takes a fraction of a second: what a report built from a
    correct module trains in its child process, in tests that are not about training."""
    from gqa_tools import uptraining as gqa_train
    return gqa_train.Recipe(heads=2, head_dim=2, d_model=4, d_ff=2, vocab=3, length=4, offsets=2,
                            keys=3, values=3, pairs=2, queries=1, batch=2, pretrain=4,
                            budgets=(2,), held_out=6, seeds=1)


# ---------------------------------------------------------------------------
# CI's share of the process-heavy tests.
# ---------------------------------------------------------------------------
# The classes below start grader workers, child processes or whole commands, or
# read the project's own files (its layout, its starter, a class run's records, the
# checks' source: one list of the steps, one tolerance, the checks' fingerprint),
# which no Python version changes: they are most of the suite's time.
# `python -m unittest` runs all of them.  CI runs the suite under every Python
# 3.9+ on the machine: GQA_TEST_SHARD="light" runs every test but these (the
# arithmetic, the rules, every other in-process test), under each Python, and
# GQA_TEST_SHARD="heavy k/n" the k-th of n shares of these alone, each share under
# one of the Pythons; "k/n" runs both, the k-th share and every other test.  The
# numbers are CPU seconds measured on 3.11 (a class's early jobs, below, and its
# tests, run alone, with the CPU of the sealed runs' workers: perf stat's
# task-clock, not a wait's rusage, which loses them), used only to spread the
# classes evenly, over the shares and over the early pythons; classes in one tuple
# share work (the graded mutants) and run together.
HEAVY = (
    (12.3, ('test_handout_report.HandoutReport',)),
    (8.2, ('test_grader.CommandLine', 'test_grader.Mutants')),
    (8.1, ('test_docs.PageSamples',)),
    (7.2, ('test_gradebook.JapaneseClass',)),
    (7.1, ('test_report.FromAnotherModule',)),
    (6.7, ('test_student_report.AStepThatHangs',)),
    (5.7, ('test_handout.Handout',)),
    (5.6, ('test_mistakes.Named',)),
    (5.0, ('test_class.Gradebook',)),
    (4.5, ('test_process.ToolsThroughTheWorker',)),
    (4.0, ('test_editors.Graded',)),
    (3.8, ('test_trust.ToolsSealed',)),
    (3.3, ('test_student_report.CoreTrack',)),
    (2.9, ('test_classroom_job.ClassroomJob',)),
    (2.7, ('test_seal.Namespaces',)),
    (2.6, ('test_report.Writing',)),
    (2.4, ('test_grading.Referee',)),
    (2.4, ('test_trust.KeyStore',)),
    (2.3, ('test_i18n.Starter',)),
    (2.1, ('test_class.GradesThatReproduce',)),
    (1.9, ('test_class.EveryRunner',)),
    (1.9, ('test_classroom.HostileNames',)),
    (1.9, ('test_i18n.Tools',)),
    (1.7, ('test_figures.Writing',)),
    (1.6, ('test_process.Stalls',)),
    (1.5, ('test_classroom.Classroom',)),
    (1.5, ('test_i18n.GradedRun',)),
    (1.5, ('test_i18n.Uptraining',)),
    (1.4, ('test_holds.SealedRunHolds',)),
    (1.4, ('test_new_language.APseudoLanguage',)),
    (1.3, ('test_house.Layout',)),
    (1.3, ('test_train.WithAStudentsModule',)),
    (1.2, ('test_i18n.Refusing',)),
    (1.2, ('test_process.NeverCrashNeverStall',)),
    (1.2, ('test_seal.SealedAsRoot',)),
    (1.1, ('test_reads.Key',)),
    (1.1, ('test_trust.ForgedFailure',)),
    (1.0, ('test_tracks.LookingUp', 'test_tracks.Wording')),
    (1.0, ('test_train.Runs',)),
    (1.0, ('test_trust.GradersFiles',)),
    (0.9, ('test_starter.FromGqa',)),
    (0.8, ('test_handout.Starter',)),
    (0.7, ('test_cli.Folder',)),
    (0.7, ('test_i18n.AMistypedName',)),
    (0.7, ('test_users.NeverAsRoot',)),
    (0.6, ('test_figures.InTheStudentsLanguage',)),
    (0.6, ('test_house.StudentFolder',)),
    (0.6, ('test_trust.NoPowerLeft',)),
    (0.6, ('test_trust.StandardLibraryAlone',)),
    (0.6, ('test_worker.WhatTheWorkerSays',)),
    (0.5, ('test_class.HiddenCasesWithheld',)),
    (0.5, ('test_class.AHandoutsClass',)),
    (0.5, ('test_holds.EveryRunCleansUp',)),
    (0.5, ('test_i18n.Catalogs', 'test_i18n.Speaking')),
    (0.5, ('test_worker.TheGradersMemory',)),
    (0.4, ('test_cli.Autograder',)),
    (0.4, ('test_counting.RealWork',)),
    (0.4, ('test_grading.OneTolerance',)),
    (0.4, ('test_report.AFolderAsModule',)),
    (0.3, ('test_class.Gradescope',)),
    (0.3, ('test_manifest.NoSecondList',)),
    (0.3, ('test_docs.TeachersNumbers',)),
    (0.3, ('test_editors.Variants',)),
    (0.2, ('test_holds.SelfCheckAsRoot',)),
    (0.2, ('test_trust.OneFileInReach',)),
    (0.1, ('test_holds.NoWorkerOutlivesItsCaller',)),
    (0.1, ('test_grading.GraderVersion',)),
)


def _shard_of(name, n):
    """The shard (0..n-1) that runs class `name`: the heaviest group first, each to the
    shard with the least work so far (ties to the lowest index)."""
    load = [0.0] * n
    for cost, names in HEAVY:
        k = load.index(min(load))
        load[k] += cost
        if name in names:
            return k
    raise KeyError(f"{name} is not in tests.helpers.HEAVY")


def _share():
    """GQA_TEST_SHARD read: (the share of the heavy classes that runs here, (k, n); None
    when all of them run, () when none does) and whether every other test runs."""
    words = os.environ.get("GQA_TEST_SHARD", "").split()
    if not words:
        return None, True
    if words == ["light"]:
        return (), True
    if len(words) <= 2 and words[:-1] in ([], ["heavy"]) and re.fullmatch(r"\d+/[1-9]\d*", words[-1]):
        k, n = (int(part) for part in words[-1].split("/"))
        if k < n:
            return (k, n), words[0] != "heavy"
    raise ValueError(f'GQA_TEST_SHARD={os.environ["GQA_TEST_SHARD"]!r}: "light", "heavy k/n" or "k/n" '
                     f'(0 <= k < n)')


def _runs_here(name):
    """Whether heavy class name (module.Class) runs under GQA_TEST_SHARD."""
    share, _rest = _share()
    return share is None or bool(share) and _shard_of(name, share[1]) == share[0]


def heavy(cls):
    """Class decorator: under GQA_TEST_SHARD the class runs only in its own share."""
    module = cls.__module__
    if module == "__main__":                         # python -m tests.test_x: its own name
        module = getattr(sys.modules["__main__"].__spec__, "name", module)
    name = f"{module.rsplit('.', 1)[-1]}.{cls.__name__}"
    _shard_of(name, 1)                               # every heavy class is in the plan
    if _runs_here(name):
        return cls
    shard = os.environ["GQA_TEST_SHARD"]
    return unittest.skip(f"CI runs {name} in another share (GQA_TEST_SHARD={shard})")(cls)


def this_share(suite):
    """For the package's load_tests: suite without the tests that GQA_TEST_SHARD leaves to
    other runs (a heavy class of another share; under "heavy k/n", every test of no heavy
    class).  A module that failed to load stays, whatever the share."""
    share, rest = _share()
    if share is None and rest:
        return suite
    names = {name for _cost, group in HEAVY for name in group}
    kept = unittest.TestSuite()
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            inner = this_share(test)
            if inner.countTestCases():
                kept.addTest(inner)
            continue
        cls = type(test)
        name = f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}"
        if cls.__module__ == "unittest.loader" or (_runs_here(name) if name in names else rest):
            kept.addTest(test)
    return kept


# ---------------------------------------------------------------------------
# Work begun early, beside the suite.
# ---------------------------------------------------------------------------
# The slow part of a heavy class (modules graded in workers, whole commands, runs
# that wait out a deadline) is a job: a static method of the class, named in its
# EARLY, that takes no arguments and returns plain JSON data.  As a test module is
# loaded, its load_tests calls start_early: the jobs of each of its classes that is
# to run go to one of two early pythons (by HEAVY's costs, the one with less work so
# far), which runs its jobs one after another in the order the classes come (a job
# runs its parts two at a time where it can), while this python runs the tests
# before them; a test reads its job's data with early(fn).  Not in threads of this
# process: tests that measure its memory (tracemalloc) would see them.  A class run
# on its own (python -m unittest tests.test_grader.Mutants) runs its jobs here when
# first asked, their data passed through JSON all the same.  A job may read
# another's with early() (the same python runs both: classes that share work are
# one HEAVY group).

EARLY_PYTHONS = 2                  # the machine has two cores; this python is the third process
_EARLY = {"pythons": [], "runs": {}, "done": {}, "serving": False}   # runs: name -> its python


class _Early:
    """One early python: the jobs sent to it, and the lines it has written so far."""

    def __init__(self):
        import atexit
        import subprocess
        import sys
        import tempfile
        fd, self.path = tempfile.mkstemp(prefix="gqa-early-", suffix=".jsonl")
        os.close(fd)
        self.file = open(self.path, "rb")
        self.cost, self.groups = 0.0, set()             # HEAVY's costs of the classes sent here
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "import sys, tests.helpers as h; h.serve_early(sys.argv[1])", self.path],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, cwd=ROOT)
        atexit.register(self.stop)

    def send(self, names):
        self.proc.stdin.write("".join(n + "\n" for n in names).encode("utf-8"))
        self.proc.stdin.flush()

    def read(self):
        """The lines written since the last look, into done; whether the python has ended."""
        ended = self.proc.poll() is not None
        while True:
            at = self.file.tell()
            line = self.file.readline()
            if not line.endswith(b"\n"):                 # none, or one still being written
                self.file.seek(at)
                return ended
            entry = json.loads(line)
            _EARLY["done"][entry["job"]] = entry

    def stop(self):
        """At exit: the python ends once its stdin does; a job no test read ends with it."""
        import subprocess
        try:
            self.proc.stdin.close()
            self.proc.wait(0.5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.terminate()
            self.proc.wait()
        self.file.close()
        os.remove(self.path)


def job_name(fn):
    return f"{fn.__module__}:{fn.__qualname__}"


def _cases(suite):
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from _cases(test)
        else:
            yield test


def start_early(tests):
    """For load_tests: send the jobs of each class in tests that is to run (not skipped by
    heavy) to an early python; return tests."""
    if _EARLY["serving"]:
        return tests
    for cls in dict.fromkeys(type(test) for test in _cases(tests)):
        names = [job_name(getattr(cls, name)) for name in getattr(cls, "EARLY", ())]
        names = [n for n in names if n not in _EARLY["runs"]]
        if not names or getattr(cls, "__unittest_skip__", False):
            continue
        python = _python_for(f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}")
        python.send(names)
        _EARLY["runs"].update(dict.fromkeys(names, python))
    return tests


def _python_for(name):
    """The early python for class name's jobs: its HEAVY group's (classes that share work
    share a python), else the one with the least work so far by HEAVY's costs."""
    cost, group = next(((c, g) for c, g in HEAVY if name in g), (0.1, (name,)))
    pythons = _EARLY["pythons"]
    for python in pythons:
        if python.groups & set(group):
            return python
    if len(pythons) < EARLY_PYTHONS:
        pythons.append(_Early())
    python = min(pythons, key=lambda p: p.cost)
    python.cost += cost
    python.groups |= set(group)
    return python


def early(fn):
    """fn's data: from the early python when its job was started there, else run here."""
    import time
    name = job_name(fn)
    run = _EARLY["runs"].get(name)
    if run is None:
        if name not in _EARLY["done"]:
            _EARLY["done"][name] = {"job": name, "data": json.loads(json.dumps(fn()))}
        return _EARLY["done"][name]["data"]
    while name not in _EARLY["done"]:
        ended = run.read()
        if name not in _EARLY["done"] and ended:
            raise AssertionError(f"the early python ended (status {run.proc.returncode}) without {name}")
        time.sleep(0.005)
    entry = _EARLY["done"][name]
    if "error" in entry:
        raise AssertionError(f"{name}, run early, raised:\n{entry['error']}")
    return entry["data"]


def serve_early(path):
    """The early python: run each job named on stdin, in turn, and append a JSON line to
    path for each: {"job": name, "data": ...}, or "error": its traceback if it raised.
    It ends with its stdin, or at SIGTERM (the job it runs ending first, its workers too)."""
    import importlib
    import signal
    import sys
    import traceback
    _EARLY["serving"] = True
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    with open(path, "a", encoding="utf-8") as out:
        for line in sys.stdin:
            name = line.strip()
            module, _, qualname = name.partition(":")
            try:
                fn = importlib.import_module(module)
                for part in qualname.split("."):
                    fn = getattr(fn, part)
                entry = {"job": name, "data": early(fn)}
            except Exception:
                entry = {"job": name, "error": traceback.format_exc()}
            out.write(json.dumps(entry) + "\n")
            out.flush()
