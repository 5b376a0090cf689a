"""The worker's process: started, spoken to, stopped; and the worker protocol.

Worker runs worker.py (in this folder) as a script, `python -s -S worker.py`,
shut in by a Seal (seal.py), and exchanges JSON lines with it, each read and
write with a deadline.  run_in_child is the tools' door: a function the tool
names run with the module in a worker, its items streamed back.

The worker protocol
-------------------
One protocol between the grader and every worker (a grading run's, the
self-check's, a tool's child), written down here; worker.py speaks it.  Each
message is one line of JSON, UTF-8.

The config, the first line the grader writes on the worker's stdin (never on a
command line, which other processes could read):

    path           the module's file (its private copy, where there is one)
    shown          how messages name the module
    limits         {"cpu", "memory", "processes", "file_size", "open_files",
                   "message_queues"}: the limits the worker lowers itself to
    drop           [uid, gid] the worker becomes before the import, or null
    paths          the folders put first on sys.path
    refuse_grader  whether a module that imports the grader is refused
    name, register the module's name ("gqa") and whether it goes in sys.modules
    environment    ["PATH"]: the only variables kept (a sealed run, a tool's child), or absent
    reload         true: the worker takes "load" requests (trusted modules)
    run            {"target": "package.module:function", "args": [...]}: a run
                   (below) instead of requests; the target is its caller's, imported
                   before the module is

The worker's first line: {"ready": true} once the module is imported (a run
sends its items instead), or {"import_error": "why"} (and it ends).  The
sandbox's failure and the worker's own (it could not become the run's user, a
run's target could not be imported) come on another pipe, the worker's stderr
as started, which the worker closes before the module runs:
{"sandbox_error": "why"} (gqa_sandbox's enter.py; bubblewrap: its own line,
"bwrap: ...") or {"worker_error": "why"}.  Whatever comes on stdout may be the
module's: an import_error in none of the worker's forms is shown as the module's
text (failures.import_error), never as the sandbox's or the grader's word.

A request: {"n": N, "items": [item, ...]}, N counting the requests.  Each item
is one of:

    {"op": "call", "fn": NAME, "args": [...], "kwargs": {...},
     "keep": KEY, "value": true, "fresh": false}
                   call the module's NAME (or "$KEY.attr", a method of a kept
                   object); keep the result as KEY; send its value or not;
                   fresh: say whether the result shares a list with the args
    {"op": "get", "ref": KEY, "attrs": [...]}
                   attributes of a kept object ("len" is its len())
    {"op": "tally", "calls": [call, ...], "fields": [...], "values": bool,
     "nested": bool}
                   the calls inside the module's count_multiplies() block (and a
                   nested one); the tally's fields, "multiplies()", the values
    {"op": "load", "path": PATH, "shown": TEXT}
                   (reload only) another module imported afresh in its place

The answers: one line per item, {"n": N, "i": I, ...}, in order, stopping at the
first that holds an error:

    value          the result, encoded (below); for get and tally a dict
    changed        the names of the arguments the call changed in place
    aliased        (fresh) whether the result shares a list with the arguments
    ready, import_error
                   (load) as the first line
    error          {"type", "message", "gqa_error", "type_error", "where",
                   "raised_in", "direct"}: what the module raised (type
                   "missing", "signature", "refused" or "protocol" when the
                   worker refused the item itself)

Values go as plain JSON, with their types where JSON has none: a tuple
{"$tuple": [...]}, an array {"$array": "d", "values": [...]}, a record
{"$record": NAME, "fields": {...}}, anything else {"$other": TYPE, "repr":
TEXT}; in a request, {"$ref": KEY} is a kept object.  Nothing is pickled.

A run (the config's run): no requests.  The worker imports the target by its
name and sends {"item": DATA} for each item target(module, *args) yields, then
{"done": true}; or {"error": {...}} when it raises.  The caller checks each
item's shape: it is the module's data.

The grader believes nothing of a line before it has checked it: a line is at
most ANSWER_CAP bytes, the answers to a request ROUND_TRIP_CAP, a line's values
and lists STRUCTURE_CAP, an integer 100 digits; an answer out of turn stops the
worker.
"""

import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time

from ..language.i18n import N_, _
from .failures import Failure, OutOfTime, Refused, import_error
from .seal import DEFAULT_BUDGET, Seal
from .values import bounded, clean_data, clean_text

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
DEFAULT_TIMEOUT = 5.0   # seconds one call may take before its worker is killed
BUDGET_NOTE = N_("not graded: the run's time budget ran out")   # shown as _(BUDGET_NOTE)


# What one answer may be.  The largest of a full run of the lab (--cases 200) is
# about 19 KB with about 400 lists, a report part about 20 KB: the caps leave a
# wide margin and keep the grader's own memory small whatever the worker sends.
ANSWER_CAP = 4 << 20                 # bytes: a longer answer line fails its case
ROUND_TRIP_CAP = 8 << 20             # bytes: all the answers to one request, or one child's items
STRUCTURE_CAP = 200_000              # values and lists in one line, counted before it is parsed
IMPORT_TIMEOUT = 10.0                # seconds the module's import may take (at least)


def worker_env(env=None):
    """The worker's environment: env (a sealed run's, PATH alone), else this process's,
    without a PYTHON* variable (as -E would have it) but PYTHONHASHSEED=0, so that a str's
    hash, and with it the order of a set of strings, is the same in every run: a module
    that iterates one scores the same each time (with -I, or -E, each worker drew its own)."""
    kept = {k: v for k, v in (os.environ if env is None else env).items() if not k.startswith("PYTHON")}
    return dict(kept, PYTHONHASHSEED="0")


def _bounded_int(text):
    """An integer of the worker's answer: at most 100 digits (converting more is slow)."""
    if len(text) > 100:
        raise ValueError("an integer of more than 100 digits")
    return int(text)


def _child_of(parent):
    """The one child process of parent (its pid), from /proc: the children file where the
    kernel has it, else each process's stat; None when there is none."""
    try:
        with open(f"/proc/{parent}/task/{parent}/children", "rb") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rindex(b")") + 2:].split()[1]) == parent:    # its fields after the name
                return int(name)
    return None


class Worker:
    """One child process running worker.py on the module; replaced when it dies or hangs.

    On POSIX the worker starts in a session of its own, and the whole process
    group is killed when it stops.  Answers are read with select() on POSIX and
    by a reader thread elsewhere (Windows), requests written without blocking
    (or by a thread); every read and write has a deadline: the call's timeout,
    or the end of the run's budget when that comes first.
    """

    def __init__(self, path, timeout, seal=None, budget_end=None, label=None, run=None,
                 paths=None, reload=False):
        self.path, self.timeout, self.label = path, timeout, label or path
        self.seal = seal or Seal()
        self.budget_end = budget_end if budget_end is not None else time.monotonic() + DEFAULT_BUDGET
        self.run, self.paths, self.reload = run, paths, reload
        self.proc = None
        self.started = 0
        self.sent = 0
        self.budget_text = ""

    def out_of_time(self):
        return time.monotonic() >= self.budget_end

    def _popen(self):
        placed = self.seal.place(self.path)
        config = {"path": placed, "shown": self.label, "limits": self.seal.limits,
                  "drop": self.seal.drop, "refuse_grader": self.run is None,
                  "paths": self.paths if self.paths is not None else list(dict.fromkeys(
                      [os.path.dirname(placed)] + ([] if self.seal.sealed or self.seal.drop else
                                                   [os.path.dirname(os.path.abspath(self.path))])))}
        if self.run is not None:
            config.update(run=self.run, name="gqa_under_tool", register=False)
        if self.reload:
            config["reload"] = True
        if self.seal.sealed or self.run is not None:    # a tool's child: a module its caller
            config["environment"] = ["PATH"]            # did not write, no secret of the caller's
        report = os.pipe() if os.name == "posix" else None   # the sandbox's and the worker's own word
        argv, first = self.seal.command([sys.executable, "-s", "-S", WORKER])
        try:                             # its stderr, until the worker points it at /dev/null
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=report[1] if report else subprocess.DEVNULL,
                cwd=self.seal.cwd(), env=worker_env(self.seal.env()), start_new_session=os.name == "posix")
        finally:
            if report:
                os.close(report[1])
        self.report = report and report[0]
        self.started += 1
        self.buffer, self.scanned, self.round_trip = bytearray(), 0, 0
        try:                             # its configuration on its stdin: no path on a command line
            self.proc.stdin.write(first + (json.dumps(config) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except OSError:
            pass                         # it ended at once: its first answer says so
        if os.name == "posix":
            os.set_blocking(self.proc.stdin.fileno(), False)
        else:
            self.lines = queue.Queue()
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines),
                             daemon=True).start()

    def start(self):
        """Start a worker and import the module; raise Refused when it cannot be imported."""
        self._popen()
        wait = max(IMPORT_TIMEOUT, 2 * self.timeout + 5)
        try:
            first = self._answer(_("importing {module}").format(module=self.label), wait)
        except OutOfTime:
            raise
        except Failure as err:
            self._root_failed()
            raise Refused(str(err)) from None
        if not isinstance(first, dict) or first.get("ready") is not True:
            self._root_failed()
        self._root_failed(ready=True)
        if not isinstance(first, dict) or "import_error" in first or first.get("ready") is not True:
            self.stop()
            why = first.get("import_error") if isinstance(first, dict) else None
            raise Refused(clean_text(bounded(import_error(why, self.label)), False) if isinstance(why, str)
                          else _("the worker's first answer for {module} was not readable").format(
                              module=self.label))
        if self.seal.drop:
            self._check_user()

    def _root_failed(self, ready=False):
        """Raise Refused when the run's root could not be built: what its builder wrote on
        its own pipe before it ended, which the module never holds (closed at the worker's
        exec).  ready: the worker answered, so the root was built: the pipe is closed."""
        fd, self.report = getattr(self, "report", None), None
        if fd is None:
            return
        if ready:
            os.close(fd)
            return
        try:
            ready = select.select([fd], [], [], 1)[0] if os.name == "posix" else [fd]
            text = os.read(fd, 4096).decode("utf-8", "replace") if ready else ""
        except OSError:
            text = ""
        finally:
            os.close(fd)
        try:                                        # enter.py's line, the worker's, or bubblewrap's own
            said = json.loads(text) if text else None
            why, own = (said.get("sandbox_error"), said.get("worker_error")) if isinstance(said, dict) else (None, None)
        except ValueError:
            why, own = (text.strip() if text.startswith("bwrap: ") else None), None
        if why:
            self.stop()                             # the run's root, not the module, failed
            raise Refused(_("the run's namespaces could not be made ({why}); nothing was graded").format(
                why=clean_text(bounded(str(why), 300), False)))
        if own:
            self.stop()                             # the grader's worker, before the module ran
            raise Refused(_("the grader's worker failed before the module ran ({why}); nothing was "
                            "graded").format(why=clean_text(bounded(str(own), 300), False)))

    def load(self, path, label=None):
        """For a worker made with reload (modules one trusts): the module at path in place
        of the last one, in the same process, imported afresh (a fresh worker if there is
        none).  Raises Refused when it cannot be imported, as start() does."""
        if not self.reload:
            raise ValueError("load() needs a worker made with reload=True")
        self.path, self.label = path, label or path
        self.seal.source = None                      # the next module's bytes, read afresh
        if self.proc is None:
            return self.start()
        self.sent += 1
        self.round_trip = 0
        load = {"op": "load", "path": self.seal.place(path), "shown": self.label}
        what = _("importing {module}").format(module=self.label)
        self._write((json.dumps({"n": self.sent, "items": [load]}) + "\n").encode("utf-8"), what)
        try:
            answer = self._answer(what, max(IMPORT_TIMEOUT, 2 * self.timeout + 5))
        except OutOfTime:
            raise
        except Failure as err:
            raise Refused(str(err)) from None
        if (not isinstance(answer, dict) or answer.get("ready") is not True
                or (answer.get("n"), answer.get("i")) != (self.sent, 0)):
            self.stop()
            why = answer.get("import_error") if isinstance(answer, dict) else None
            raise Refused(clean_text(import_error(why, self.label), False) if isinstance(why, str)
                          else _("the worker's answer to {what} was not readable").format(what=what))
        return None

    def _check_user(self):
        """Where /proc exists: the worker's real, effective, saved uid and gid are the drop's."""
        pid = self.proc.pid
        if self.seal.tool is not None:             # the tool's one child: the worker, PID 1 inside
            pid = _child_of(pid)
            if pid is None:
                self.stop()
                raise Refused(_("the worker's process could not be found to check its user; "
                                "nothing was graded")) from None
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                text = f.read().decode("utf-8", "replace")      # its name may be any bytes
            status = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        except (OSError, ValueError):
            return
        uid, gid = self.seal.drop
        if (set(status.get("Uid", "").split()) != {str(uid)}
                or set(status.get("Gid", "").split()) != {str(gid)}
                or status.get("Groups", "").split() not in ([], [str(gid)])):
            self.stop()
            raise Refused(f"the worker did not run as uid {uid}, gid {gid}; nothing was graded")

    @staticmethod
    def _read(stream, lines):
        while True:
            line = stream.readline(ANSWER_CAP + 1)
            if not line or len(line) > ANSWER_CAP:
                lines.put(None if not line else b"")
                return
            lines.put(line.rstrip(b"\n"))

    def _deadline(self, timeout):
        """(deadline, whether it is the budget's)."""
        mine = time.monotonic() + timeout
        return (self.budget_end, True) if self.budget_end < mine else (mine, False)

    def _line(self, deadline):
        """The worker's next line (bytes), None at its end; raise queue.Empty at the deadline
        and OverflowError for a line longer than ANSWER_CAP."""
        if os.name != "posix":
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line == b"":
                raise OverflowError
            return line
        fd = self.proc.stdout.fileno()
        while True:
            at = self.buffer.find(b"\n", self.scanned)
            if at > ANSWER_CAP:
                raise OverflowError
            if at >= 0:
                line = bytes(self.buffer[:at])
                del self.buffer[:at + 1]
                self.scanned = 0
                return line
            self.scanned = len(self.buffer)
            if self.scanned > ANSWER_CAP:
                raise OverflowError
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise queue.Empty
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk

    def _write(self, data, what):
        """Send data to the worker, by the call's deadline; a dead worker is left to _answer."""
        deadline, budget = self._deadline(self.timeout)
        if os.name != "posix":
            def write():
                try:
                    self.proc.stdin.write(data)
                    self.proc.stdin.flush()
                except OSError:
                    pass
            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            writer.join(max(0.0, deadline - time.monotonic()))
            if writer.is_alive():
                self._stalled(what, budget)
            return
        fd, view = self.proc.stdin.fileno(), memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                self._stalled(what, budget)
            try:
                view = view[os.write(fd, view[:1 << 16]):]
            except BlockingIOError:
                continue
            except OSError:
                return

    def _stalled(self, what, budget):
        self.stop()
        if budget:
            raise OutOfTime(_(BUDGET_NOTE))
        raise Failure(_("{what} did not read its request within {seconds} s (is there an endless "
                        "loop?); the worker was stopped").format(what=what, seconds=f"{self.timeout:g}"))

    def _answer(self, what, timeout):
        deadline, budget = self._deadline(timeout)
        try:
            line = self._line(deadline)
        except queue.Empty:
            self.stop()
            if budget:
                raise OutOfTime(_(BUDGET_NOTE)) from None
            raise Failure(_("{what} did not return within {seconds} s (is there an endless "
                            "loop?); the worker was stopped").format(
                                what=what, seconds=f"{timeout:g}")) from None
        except OverflowError:
            self.stop()
            raise Failure(_("the answer to {what} was longer than {size} MiB; the worker was "
                            "stopped").format(what=what, size=ANSWER_CAP >> 20)) from None
        if line is None:
            code = self.stop()
            if code is None or code >= 0:
                raise Failure(_("the module ended its process (status {status}) during {what}").format(
                    status=code, what=what))
            raise Failure(_("the module ended its process (signal {signal}) during {what}").format(
                signal=-code, what=what))
        self.round_trip += len(line)
        if self.round_trip > ROUND_TRIP_CAP:
            self.stop()
            raise Failure(_("the worker's answers to one request (up to {what}) came to more "
                            "than {size} MiB; the worker was stopped").format(
                                what=what, size=ROUND_TRIP_CAP >> 20))
        if line.count(b"[") + line.count(b"{") + line.count(b",") > STRUCTURE_CAP:
            self.stop()
            raise Failure(_("the answer to {what} held more than {count} values and lists; the "
                            "worker was stopped").format(what=what, count=f"{STRUCTURE_CAP:,}"))
        try:
            return json.loads(line, parse_int=_bounded_int)
        except (ValueError, RecursionError, MemoryError):
            self.stop()
            raise Failure(_("the worker's answer to {what} was not readable").format(what=what)) from None

    def exchange(self, items, whats):
        """Send items in one request; return their answers, up to the first error.

        Each answer has the call's own deadline, so a timeout names the call that hung.
        """
        if self.proc is None:
            self.start()
        self.sent += 1
        self.round_trip = 0
        self._write((json.dumps({"n": self.sent, "items": items}) + "\n").encode("utf-8"),
                    whats[0])
        answers = []
        for i, what in enumerate(whats):
            answer = self._answer(what, self.timeout)
            if not isinstance(answer, dict) or answer.get("n") != self.sent or answer.get("i") != i:
                self.stop()
                raise Failure(_("the worker's answer to {what} was out of turn or not an answer; "
                                "the worker was stopped").format(what=what))
            answers.append(answer)
            if "error" in answer:
                break
        return answers

    def items(self):
        """With run: each item the child sends, until it is done; Failure when it ends otherwise."""
        self.start_run()
        while True:
            try:
                line = self._answer(self.what, self.timeout)
            except OutOfTime:
                raise Failure(_("{what} did not finish within its time budget").format(
                    what=self.what)) from None
            except Failure:
                self._root_failed()                  # the sandbox's or the worker's word, if it said one
                raise
            self._root_failed(ready=isinstance(line, dict) and ("item" in line or line.get("done") is True))
            if not isinstance(line, dict):
                self.stop()
                raise Failure(_("the child process sent something that is not an item"))
            if "item" in line:
                if _deeper_than(line["item"], ITEM_DEPTH):
                    self.stop()
                    raise Failure(_("the child process sent something that is not an item"))
                yield clean_data(line["item"])
            elif line.get("done") is True:
                return
            elif "import_error" in line and isinstance(line["import_error"], str):
                self.stop()
                raise Refused(clean_text(bounded(import_error(line["import_error"], self.label)), False))
            else:
                error = line.get("error")
                self.stop()
                if isinstance(error, dict):
                    error = clean_data({k: bounded(v) if isinstance(v, str) else None
                                        for k, v in error.items() if k in ("type", "message")},
                                       newlines=False)
                    raise Failure(_("it raised {type}: {message}").format(type=error.get("type"),
                                                                          message=error.get("message")))
                raise Failure(_("the child process sent something that is not an item"))

    def start_run(self):
        self._popen()

    def stop(self):
        """Kill the worker and its process group; return its exit status (None if not known)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if os.name == "posix":
            try:                             # before wait(): the group's id cannot be reused yet
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            proc.kill()
        except OSError:
            pass
        try:
            code = proc.wait(10)
        except subprocess.TimeoutExpired:
            code = None
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.seal.kill_all()
        return code


# A tool's item is a few lists and dicts deep (a report's parts, the tables, a training's
# result); one deeper is not an item, and cleaning it (clean_data) would recurse into it.
ITEM_DEPTH = 32


def _deeper_than(x, limit):
    """Whether JSON data x nests lists and dicts more than limit deep (found without recursion)."""
    stack = [(x, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (list, dict)):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return False


def run_in_child(path, target, args=(), *, paths=(), label=None, what="running the module",
                 item_timeout=60.0, budget=DEFAULT_BUDGET):
    """Yield what the function target yields when called as target(the module at path,
    *args) in a worker, each item as plain JSON data.  target names it as
    "package.module:function" ("gqa_tools.tables:child_texts"): the worker imports it
    from paths, so the grader knows no tool; the name is the caller's alone (it goes in
    the worker's config, read before the module is imported).

    The worker is sealed as a grade is where namespaces can be made (Seal's for_tool: a
    root of its own, no network, the tools' copy in place of paths; as root refused where
    they cannot be), and has the grader's limits, its own session (killed at the end), a
    private folder holding a copy of the module (read by read_module: no symbolic
    link, at most 1 MiB), as root a user id of the run's own (Seal), a deadline per
    item and one for the whole run; the items' strings come back cleaned (clean_data); what names the work in
    messages ("building the report did not return within 60 s").  Raises Refused when the
    module cannot be imported, Failure (after the items that came) when the
    child hangs, dies, runs out of the budget or sends something else.  The
    caller's process never imports the module.
    """
    module, colon, function = target.partition(":")
    if not (colon and function.isidentifier() and all(p.isidentifier() for p in module.split("."))):
        raise ValueError(f"run_in_child: target is named package.module:function, not {target!r}")
    seal = Seal(budget=budget, private=True, for_tool=True)
    try:
        worker = Worker(path, item_timeout, seal, time.monotonic() + budget,
                        label=label, run={"target": target, "args": list(args)}, paths=seal.child_paths(paths))
    except BaseException:
        seal.close()
        raise
    worker.what = what
    try:
        yield from worker.items()
    finally:
        worker.stop()
        seal.close()

