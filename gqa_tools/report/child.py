"""gqa_tools.report.child: a student's report, built in a child process and assembled here.

parts_from_child() runs child_parts() in the grader's worker
(gqa_grader.run_in_child), with its limits and deadlines: this process
never imports the student's module.  What comes back is plain data, read
back into Parts; a part that never came is its section's note saying why.
In a handout, the report is the handout's own (HANDOUT_SECTIONS), of the
handout's gqa.py: it does not train, and a step outside the handout's track
is said to be so (lab.handout_track).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import gqa
from gqa_grader.language import i18n
from gqa_grader.language.i18n import _
from gqa_tools import uptraining as training
from gqa_tools.referee import PROJECT, STEPS, Graded, Handout, failed_steps, graded, module_missing, sealed, step_name
from gqa_tools.report import measuring
from gqa_tools.report.lab import Lab, Watch, handout_track
from gqa_tools.report.sections import (HANDOUT_SECTIONS, STUDENT_SECTIONS, TRAINING_SECTION, Part, build_part,
                                       build_parts, not_computed, section_header)
from gqa_tools.report.settings import Config


CHILD_TIMEOUT = 120.0       # seconds the child may take to send a part (the measuring comes first)
CHILD_BUDGET = 300.0        # seconds it may take in all
CHILD_TRAINING = 900.0      # both, when section 8 trains with the module (its seeds, two tasks, one process)
CALL_TIMEOUT = 5.0          # seconds a call into the module may take (the grader's own default), on the
                            # default configuration; on a larger one, in proportion to its work (call_timeout)
PROGRESS_AFTER = 3.0        # seconds a student's module runs before its progress is shown
PROGRESS_EVERY = 15.0       # then at least this often (off a terminal: each stage, and this often)


def child_parts(module: Any, cfg_values: List[int], label: str, lang: Optional[str] = None,
                handout_values: Optional[list] = None, shown: Optional[str] = None,
                out: Optional[str] = None, seconds: Optional[float] = None,
                recipe_values: Optional[list] = None) -> Iterator[list]:
    """In the child process (gqa_grader.run_in_child): the report's Parts built from module,
    each as plain data [title, body, [[file name, SVG], ...]], written in the parent's
    language lang, section 8 aside (it is the parent's to decide); with recipe_values (a
    training.Recipe's), section 8 alone, trained with that recipe.  handout_values: a
    handout's (referee.Handout's fields), whose report it is; shown, the --module its
    command names (None: the handout's own gqa.py); out, the --out it names.  Before the
    parts, ["progress", what it measures next]; a call that does not return within
    seconds is stopped (lab.Watch), and said, ["hung", why]."""
    if lang:
        i18n.use(lang)
    cfg, lab = Config(*cfg_values), Lab(module, label)
    handout = Handout(*handout_values) if handout_values else None
    watch = Watch(module, seconds or call_timeout(cfg))
    with handout_track(handout.steps, handout.track) if handout else contextlib.nullcontext(), watch:
        if recipe_values is not None:
            yield ["progress", _("training section 8: a minute or more")]
            trained = measuring.train(cfg, lab, _recipe(recipe_values))
            nothing = measuring.Missing("")
            measured = measuring.Measured(*[nothing] * 6, training=trained)    # type: ignore[arg-type]
            parts = [build_part(cfg, measured, lab, *TRAINING_SECTION)]
        else:
            stages, said = measuring.measuring(cfg, lab, untrained=_("not run for this module")), 0
            while True:
                try:
                    stage = next(stages)
                except StopIteration as done:
                    measured = done.value
                    break
                yield from (["hung", why] for why in watch.hung[said:])
                said = len(watch.hung)
                yield ["progress", stage]
            yield ["progress", _("writing the sections")]
            parts = build_parts(cfg, measured, lab, shown if handout else label, handout, out)
            parts = [p for p in parts if p.title != _(TRAINING_SECTION[0])]
        yield from (["hung", why] for why in watch.hung[said if recipe_values is None else 0:])
        for part in parts:
            yield [part.title, part.body, [list(f) for f in part.figures]]


def _recipe(values: list) -> Any:
    """The training.Recipe whose values these are (as the parent sent them)."""
    fields = dict(zip(training.Recipe._fields, values))
    return training.Recipe(**{**fields, "budgets": tuple(fields["budgets"])})


def call_timeout(cfg: Config) -> float:
    """The seconds a call into a student's module may take on cfg: CALL_TIMEOUT on the default
    configuration, and in proportion to a layer's work on a larger one."""
    def work(c: Config) -> int:
        return c.heads * c.run_context * c.run_head_dim * (4 * c.run_d_model + 2 * c.run_context)
    return CALL_TIMEOUT * max(1.0, work(cfg) / work(Config()))


def _as_part(item: Any) -> Optional[Part]:
    """A Part from what the child sent; None when it is not one."""
    if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
            and isinstance(item[1], str) and isinstance(item[2], list)):
        return None
    figures = tuple(tuple(f) for f in item[2])
    if not all(len(f) == 2 and all(isinstance(x, str) for x in f) for f in figures):
        return None
    return Part(item[0], item[1], figures)


def parts_from_child(cfg: Config, path: str, handout: Optional[Handout] = None,
                     shown: Optional[str] = None, out: Optional[str] = None) -> List[Part]:
    """The report's Parts built from the gqa.py at path in a sandboxed child process
    (the grader's worker: its limits, its own session, a deadline per part and one in
    all); this process never imports the module.  A part that never came (the child
    hung, exited or ran out of memory) is that section's note saying why; a call that
    hung costs the sections that need its step only.  Beside the child, the grader
    grades the module: the steps section 8's training needs (when they pass, section 8
    is trained in a child of its own) and, for the header, every other step.  Progress
    is shown on stderr once this runs for PROGRESS_AFTER seconds.  In a handout (handout;
    shown: the --module given, None for its own gqa.py, named path), its report, which
    does not train.  out: the --out given, which the report's command names.  Raises
    GQAError when the module cannot be imported."""
    if not os.path.isfile(path):
        raise gqa.GQAError(module_missing(path))
    label = (shown or "gqa.py") if handout else path
    sealed("report", label)
    pool = ThreadPoolExecutor(2)
    try:
        with Progress(label) as progress:
            if handout:
                needs, rest = None, pool.submit(failed_steps, path, list(handout.steps), CALL_TIMEOUT)
            else:
                needs = pool.submit(graded, path, training.NEEDS, 2, CALL_TIMEOUT)
                rest = pool.submit(failed_steps, path, [n for n in STEPS if n not in training.NEEDS], CALL_TIMEOUT)
            came, why = _came(cfg, path, label, handout, shown, out, progress)
            progress.stage(_("waiting for the grader's word on the module's steps"))
            if needs is not None:
                title = _(TRAINING_SECTION[0])
                came[title] = _section_8(cfg, path, needs.result(), progress, title)
            failed = (needs.result().failed if needs else []) + rest.result()
    finally:
        pool.shutdown(wait=False)
    # The header is this process's own, never the child's: what the report says of the
    # module (and of what the grader passes) is never text the module could have written.
    header = Part("", section_header(cfg, Lab(None, label), shown if handout else label, handout, out))
    header = _warned(header, sorted(failed, key=_step_number), shown or "gqa.py" if handout else label)
    return [header] + [came.get(_(title)) or came.get(title) or     # English where its catalog was unread
                       Part(_(title), not_computed(label, why))
                       for title, _section in (HANDOUT_SECTIONS if handout else STUDENT_SECTIONS)]


def _step_number(named: str) -> int:
    """The number of a step said as "step N, name" (in the language in use): its place in STEPS."""
    return next((i for i, name in enumerate(STEPS) if named == step_name(name)), len(STEPS))


def _section_8(cfg: Config, path: str, needs: Graded, progress: "Progress", title: str) -> Part:
    """Section 8 of a student's report: trained in a child of its own when the grader passes
    the steps training needs (needs), else its note naming those that it does not pass."""
    untrained = section_8_trains(path, needs, progress.say)
    if untrained:
        return Part(title, not_computed(path, untrained))
    came, why = _came(cfg, path, path, None, None, None, progress, list(training.QUICK))
    return came.get(title) or came.get(TRAINING_SECTION[0]) or Part(title, not_computed(path, why))


def _came(cfg: Config, path: str, label: str, handout: Optional[Handout], shown: Optional[str],
          out: Optional[str], progress: "Progress", recipe: Optional[list] = None) -> Tuple[Dict[str, Part], str]:
    """The Parts a child sent, by title, and why the others never came: the report's, or
    with recipe (a training.Recipe's values) section 8 alone, trained with it."""
    import gqa_grader as grader
    came: Dict[str, Part] = {}
    why = _("the child process building the report did not send it")
    try:
        for item in grader.run_in_child(path, "gqa_tools.report:child_parts",
                                        [list(cfg), label, i18n.language(), list(handout) if handout else None,
                                         shown, out, call_timeout(cfg), recipe],
                                        paths=[PROJECT], label=label, what=_("building the report"),
                                        item_timeout=CHILD_TIMEOUT if recipe is None else CHILD_TRAINING,
                                        budget=CHILD_BUDGET if recipe is None else CHILD_TRAINING):
            if isinstance(item, list) and len(item) == 2 and item[0] in ("progress", "hung") \
                    and isinstance(item[1], str):
                if item[0] == "progress":
                    progress.stage(item[1])
                else:
                    progress.say(_("{why}; the sections that need it say so").format(why=item[1]))
                continue
            part = _as_part(item)
            if part is not None and part.title not in came:
                came[part.title] = part
    except grader.Refused as err:
        raise gqa.GQAError(f"--module {label}: {err}") from None
    except grader.Failure as err:
        why = str(err)
    return came, why


class Progress:
    """What a report says on stderr while a student's module runs (a thread of its own):
    nothing for PROGRESS_AFTER seconds, then the stage and the seconds so far, on a
    terminal one line rewritten every second, elsewhere a line for each stage and one
    every PROGRESS_EVERY seconds; say() prints a line of its own at once."""

    def __init__(self, module: str) -> None:
        self.module, self.what = module, _("starting the grader's worker")
        self.tty = sys.stderr.isatty()
        self._start, self._done = time.monotonic(), threading.Event()
        self._lock, self._shown, self._drawn, self._last = threading.Lock(), None, 0, 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._done.set()
        self._thread.join()
        with self._lock:
            self._clear()

    def stage(self, what: str) -> None:
        self.what = what

    def say(self, line: str) -> None:
        with self._lock:
            self._clear()
            print("gqa report: " + line, file=sys.stderr, flush=True)

    def _clear(self) -> None:
        if self._drawn:                             # the columns of the line drawn last
            print("\r" + " " * self._drawn + "\r", end="", file=sys.stderr, flush=True)
            self._drawn = 0

    def _run(self) -> None:
        while not self._done.wait(1.0):
            seconds = time.monotonic() - self._start
            what = self.what
            if seconds < PROGRESS_AFTER or not self.tty and what == self._shown \
                    and seconds - self._last < PROGRESS_EVERY:
                continue
            text = "gqa report: " + _("{seconds} s: {what} (the report of {module}, built in the grader's "
                                      "worker)").format(module=self.module, seconds=int(seconds), what=what)
            with self._lock:
                if self._done.is_set():
                    return
                self._clear()
                if self.tty:                        # one row of the terminal, rewritten
                    text = _fitted(text + " ...", shutil.get_terminal_size().columns - 1)
                print(("\r" + text) if self.tty else text, end="" if self.tty else "\n", file=sys.stderr,
                      flush=True)
                self._drawn = i18n.width(text) if self.tty else 0
                self._shown, self._last = what, seconds


def _fitted(text: str, columns: int) -> str:
    """text, cut at its end to at most columns of a terminal (i18n.width)."""
    while i18n.width(text) > columns > 0:
        text = text[:-1]
    return text


def _warned(header: Part, failed: Sequence[str], module: str) -> Part:
    """The header, with a warning after it when the grader fails some of the module's steps."""
    if not failed:
        return header
    note = _("*The grader does not pass {steps} of {module} yet: a number below that comes from "
             "them may be wrong (see where with: {command}).*").format(
                 steps=_("; ").join(failed), module=module,
                 command=f"python grader.py --module {shlex.quote(module)}{i18n.lang_option()}")
    return header._replace(body=header.body.rstrip("\n") + "\n\n" + note + "\n")


def section_8_trains(path: str, needs: Graded, say: Callable[[str], None]) -> str:
    """"" when section 8 trains with the gqa.py at path (the grader passes the steps training
    needs: needs, graded()'s word on them), which it says, with say; else why not, naming
    those steps."""
    if not needs.failing:
        say(_("its steps pass, so section 8 trains with {path} in the grader's worker: a minute or "
              "more").format(path=path))
        return ""
    return _("section 8 trains with the module's own steps once the grader passes them; not yet: "
             "{steps} (grade them with: {command})").format(
                 steps="; ".join(needs.failing),
                 command=f"python grader.py --module {shlex.quote(path)}{i18n.lang_option()}")
