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
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Dict, Iterator, List, Optional, Sequence

import gqa
from gqa_grader import i18n
from gqa_grader.i18n import _
from gqa_tools import uptraining as training
from gqa_tools.common import PROJECT, STEPS, Handout, failed_steps, failing_steps, module_missing, sealed
from gqa_tools.report import measuring
from gqa_tools.report.lab import Lab, handout_track
from gqa_tools.report.sections import HANDOUT_SECTIONS, STUDENT_SECTIONS, Part, build_parts, section_header
from gqa_tools.report.settings import Config


CHILD_TIMEOUT = 120.0       # seconds the child may take to send a part (the measuring comes first)
CHILD_BUDGET = 300.0        # seconds it may take in all
CHILD_TRAINING = 900.0      # both, when section 8 trains with the module (its seeds, two tasks, one process)


def child_parts(module: Any, cfg_values: List[int], label: str,
                untrained: Optional[str] = None,
                recipe_values: Optional[list] = None, lang: Optional[str] = None,
                handout_values: Optional[list] = None, shown: Optional[str] = None) -> Iterator[list]:
    """In the child process (gqa_grader.run_in_child): the report's Parts built from module,
    each as plain data [title, body, [[file name, SVG], ...]], written in the parent's
    language lang; section 8 trains with the recipe whose values the parent sent (its
    training.QUICK).  handout_values: a handout's (common.Handout's fields), whose report
    it is; shown, the --module its command names (None: the handout's own gqa.py)."""
    if lang:
        i18n.use(lang)
    if untrained is None:
        untrained = _("not run for this module")
    cfg, lab = Config(*cfg_values), Lab(module, label)
    recipe = None
    if recipe_values is not None:
        fields = dict(zip(training.Recipe._fields, recipe_values))
        recipe = training.Recipe(**{**fields, "budgets": tuple(fields["budgets"])})
    handout = Handout(*handout_values) if handout_values else None
    with handout_track(handout.steps, handout.track) if handout else contextlib.nullcontext():
        measured = measuring.measure(cfg, lab, untrained=untrained, recipe=recipe)
        for part in build_parts(cfg, measured, lab, shown if handout else label, handout):
            yield [part.title, part.body, [list(f) for f in part.figures]]


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
                     shown: Optional[str] = None) -> List[Part]:
    """The report's Parts built from the gqa.py at path in a sandboxed child process
    (the grader's worker: its limits, its own session, a deadline per part and one in
    all); this process never imports the module.  A part that never came (the child
    hung, exited or ran out of memory) is that section's note saying why.  In a handout
    (handout; shown: the --module given, None for its own gqa.py, named path), its
    report, which does not train.  Raises GQAError when the module cannot be imported."""
    import gqa_grader as grader
    if not os.path.isfile(path):
        raise gqa.GQAError(module_missing(path))
    label = (shown or "gqa.py") if handout else path
    sealed("report", label)
    came: Dict[str, Part] = {}
    why = _("the child process building the report did not send it")
    untrained = _("a handout's lab does not train") if handout else section_8_trains(path)
    checked = _checking(path, handout.steps if handout else STEPS)      # beside the child
    try:
        for item in grader.run_in_child(path, "gqa_tools.report:child_parts",
                                        [list(cfg), label, untrained, list(training.QUICK), i18n.language(),
                                         list(handout) if handout else None, shown],
                                        paths=[PROJECT],
                                        label=label, what=_("building the report"),
                                        item_timeout=CHILD_TRAINING if not untrained else CHILD_TIMEOUT,
                                        budget=CHILD_TRAINING if not untrained else CHILD_BUDGET):
            part = _as_part(item)
            if part is not None and part.title not in came:
                came[part.title] = part
    except grader.Refused as err:
        raise gqa.GQAError(f"--module {label}: {err}") from None
    except grader.Failure as err:
        why = str(err)
    # The header is this process's own, never the child's: what the report says of the
    # module (and of what the grader passes) is never text the module could have written.
    header = Part("", section_header(cfg, Lab(None, label), shown if handout else label, handout))
    header = _warned(header, checked.result(), shown or "gqa.py" if handout else label)
    return [header] + [came.get(_(title)) or came.get(title) or     # English where its catalog was unread
                       Part(_(title), _("*Not computed from {module}: {why}.*").format(module=label, why=why) + "\n")
                       for title, _section in (HANDOUT_SECTIONS if handout else STUDENT_SECTIONS)]


def _checking(path: str, names: Sequence[str]) -> Future:
    """The steps among names the grader fails for path (common.failed_steps), checked in a
    thread while the child builds the report: the report never prints a number of a
    failing step's without saying so."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(failed_steps, path, list(names), min(CHILD_TIMEOUT, 5.0))
    finally:
        pool.shutdown(wait=False)


def _warned(header: Part, failed: Sequence[str], module: str) -> Part:
    """The header, with a warning after it when the grader fails some of the module's steps."""
    if not failed:
        return header
    note = _("*The grader does not pass {steps} of {module} yet: a number below that comes from "
             "them may be wrong (see where with: {command}).*").format(
                 steps=_("; ").join(failed), module=module,
                 command=f"python grader.py --module {module}{i18n.lang_option()}")
    return header._replace(body=header.body.rstrip("\n") + "\n\n" + note + "\n")


def section_8_trains(path: str) -> str:
    """"" when section 8 trains with the gqa.py at path (the grader passes the steps training
    needs, which it says on stderr), else why not, naming those steps."""
    failing = failing_steps(path, training.NEEDS, timeout=min(CHILD_TIMEOUT, 5.0))
    if not failing:
        print("gqa report: " + _("its steps pass, so section 8 trains with {path} in the grader's "
                                 "worker: a minute or more").format(path=path), file=sys.stderr)
        return ""
    return _("section 8 trains with the module's own steps once the grader passes them; not yet: "
             "{steps} (grade them with: {command})").format(
                 steps="; ".join(failing), command=f"python grader.py --module {path}{i18n.lang_option()}")
