"""--class's graders: N processes of the grader (`python grader.py --class-serve`), each
running the class's runs one after another, and the protocol between them.

The protocol, whole (the one place it is written; Server speaks one side, serve()
the other):

    --class -> a grader, on its stdin, one JSON line per run:
        {"argv": [ARGUMENTS...], "report": PATH}
        the arguments of one `python grader.py` run (--sealed --withhold-hidden
        --module M --out OUT, and the options carried); PATH, the file its text goes to
    a grader -> --class, on its stdout, one JSON line once that run has ended:
        {"status": N}
        the run's exit status (2 for the grader's own fault, said in the report)
    A grader ends when its stdin does, or after a run that a signal stopped (a status
    of 128 or more).  --class stops a grader that is late or gone with SIGTERM to its
    process group (its run, if any, kills its worker and cleans up), then SIGKILL.
    Nothing else crosses: the run's document is its --out file, read by --class.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

from ..running.seal import HERE


# The protocol's two lines, each written and read here alone.

def request_line(argv, report):
    """--class -> a grader: run argv, its text into the file report."""
    return json.dumps({"argv": argv, "report": report}) + "\n"


def read_request(line):
    """(argv, report) of a request_line."""
    job = json.loads(line)
    return job["argv"], job["report"]


def answer_line(status):
    """A grader -> --class: the run ended with exit status status."""
    return json.dumps({"status": status}) + "\n"


def read_answer(line):
    """The exit status of an answer_line; ValueError, KeyError or TypeError for another line."""
    return int(json.loads(line)["status"])


def grader_argv():
    """How to start this grader as a process of its own."""
    script = os.path.join(HERE, "grader.py")
    if os.path.isfile(script):
        return [sys.executable, script]
    return [sys.executable, "-m", "gqa_grader"]


class Server:
    """A grader process of --class's own (`python grader.py --class-serve`) that runs
    the class's runs one after another: each a whole `python grader.py --sealed ...`
    run (cli.main with its own seal, user id and worker), its text in its report and
    its document in its --out.  A grader that starts once per job slot, not once per
    submission, saves the start and the search of the file system for world-writable
    folders (shared by the runs that follow: cleanup.FolderSearch) of every run."""

    def __init__(self):
        self.proc = subprocess.Popen(grader_argv() + ["--class-serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.buffer, self.job, self.started = b"", None, 0.0

    def send(self, job):
        self.job, self.started = job, time.monotonic()
        line = request_line(job.argv, job.text)
        try:
            self.proc.stdin.write(line.encode("utf-8"))
            self.proc.stdin.flush()
        except OSError:
            pass                                 # it died: answer() says so

    def answer(self):
        """The job's exit status once the server has said it (None before; "gone" when
        the server ended without saying it)."""
        if b"\n" not in self.buffer:
            chunk = os.read(self.proc.stdout.fileno(), 1 << 12)
            if not chunk:
                return "gone"
            self.buffer += chunk
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            return read_answer(line)
        except (ValueError, KeyError, TypeError):
            return "gone"

    def stop(self):
        """Stop it: SIGTERM (its run, if any, kills its worker and cleans up), then SIGKILL."""
        for which, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(self.proc.pid, which)
            except OSError:
                pass
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def close(self):
        """An idle server ends when its input does."""
        try:
            self.proc.stdin.close()
            self.proc.wait(15)
            self.proc.stdout.close()
        except (OSError, subprocess.TimeoutExpired):
            self.stop()


class Job:
    """One submission's run: its arguments and where its outputs go first."""

    def __init__(self, sub, folder, argv):
        self.sub = sub
        self.out = os.path.join(folder, ".results.json")
        self.text = os.path.join(folder, ".report.txt")
        self.argv = argv + ["--out", self.out]

    def discard(self):
        for path in (self.out, self.text):
            try:
                os.remove(path)
            except OSError:
                pass


def serve(main):
    """--class-serve: run the jobs that --class sends on stdin, one JSON line each
    ({"argv": [...], "report": PATH}), each as main(argv) with its output in the
    report, each answered by a line {"status": N}; end with stdin, or after a run a
    signal stopped (the protocol: this module's docstring)."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for which in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(which, signal.SIG_DFL)     # between runs nothing needs cleaning up
    status = 0
    for line in requests:
        argv, report_path = read_request(line)
        with open(report_path, "w", encoding="utf-8", errors="backslashreplace") as report, \
                contextlib.redirect_stdout(report), contextlib.redirect_stderr(report):
            try:
                status = main(argv)
            except SystemExit as stop:
                status = stop.code if isinstance(stop.code, int) else 2
            except Exception as err:             # the grader's own fault: this run's row says so
                print(f"grader: the grader failed ({type(err).__name__}: {err})")
                status = 2
        answers.write(answer_line(status))
        answers.flush()
        if status >= 128:
            break
    return status if status >= 128 else 0
