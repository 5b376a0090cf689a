"""gqa_tools.report.command: `python -m gqa report`, its options and what it prints.

The project's report is measured and written here (project_parts); a
student's (--module), and a handout's (handout_report: in a handout's folder,
of its gqa.py), come from the child process (gqa_tools.report.child).
Both are written by gqa_tools.report.files, or --check-ed against the files.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable, List, Optional, Sequence, Tuple

import gqa
from gqa_grader.language import i18n
from gqa_grader.language.i18n import _
from gqa_tools.language import chosen_lang, default_said, speaking
from gqa_tools.options import MAX_JOBS, add_int_options, given, int_options, progress_line
from gqa_tools.referee import LAB, Handout, handout, module_missing
from gqa_tools.report import measuring, sections
from gqa_tools.report.files import (WriteRefused, check, default_report_path, differs, figures_folder, keep_previous,
                                    kept_write_up, not_utf8, sealed, write_report, write_target, why_not_write,
                                    wrote)
from gqa_tools.report.lab import Lab
from gqa_tools.report.record import TRAINING_RECORD, recorded_training, write_training
from gqa_tools.report.settings import LIMITS, OPTION_HELP, Config




def make_parser(handout: Optional[Handout] = None) -> argparse.ArgumentParser:
    """The options of `report`: in a handout, those of its report (which does not train)."""
    parser = argparse.ArgumentParser(
        prog="python -m gqa report",
        description=_("Write report.md: the lab's tables, counted and measured by the code."))
    if handout:
        return _handout_options(parser)
    parser.add_argument("--out", default=None, metavar="PATH",
                        help=_("where to write (default: report.md at the root of the "
                               "checkout, or in the current directory when gqa is installed; "
                               "with --module, report.md beside the module)"))
    parser.add_argument("--check", action="store_true",
                        help=_("write nothing; exit 1 if the file differs from what the code writes now"))
    parser.add_argument("--retrain", action="store_true",
                        help=_("train section 8 again, whatever {record} says (it is used when the code it "
                               "was trained with is unchanged)").format(record=TRAINING_RECORD))
    parser.add_argument("--module", default=None, metavar="PATH",
                        help=_("build the report from this gqa.py (a student's) instead of the project's"))
    parser.add_argument("--lang", choices=i18n.LANGUAGES, default=None,
                        help=_("with --module, the language of the student's report and of what the "
                               "command prints: {languages}; {default}. The project's report.md is always "
                               "English").format(languages=i18n.listed(), default=default_said()))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help=_("processes that train section 8's seeds (default: the number of CPUs; "
                               "at most {most}); the report is the same for every N (with "
                               "--module, one process)").format(most=MAX_JOBS))
    add_int_options(parser, Config(), LIMITS, what=lambda name: _(OPTION_HELP[name]))
    return parser


def _handout_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A handout's `report`: its report of the gqa.py in its folder, which does not train."""
    parser.add_argument("--out", default=None, metavar="PATH",
                        help=_("where to write (default: report.md beside the module, in this folder)"))
    parser.add_argument("--check", action="store_true",
                        help=_("write nothing; exit 1 if the file differs from what the code writes now"))
    parser.add_argument("--module", default=None, metavar="PATH",
                        help=_("build the report from this gqa.py instead of the one in this folder"))
    parser.add_argument("--lang", choices=i18n.LANGUAGES, default=None,
                        help=_("the language of the report and of what the command prints: {languages}; "
                               "{default}").format(languages=i18n.listed(), default=default_said()))
    add_int_options(parser, Config(), LIMITS, what=lambda name: _(OPTION_HELP[name]))
    return parser


def report_main(argv: Sequence[str]) -> int:
    found = handout()
    parser = make_parser(found)
    args = parser.parse_args(argv)
    if found:
        return handout_report(parser, args, found)
    if args.lang and not args.module:
        print("gqa report: " + _("the project's report.md is English; --lang goes with --module PATH "
                                 "(a student's report)"), file=sys.stderr)
        return 2
    unused = _unused(args, argv, parser)
    if unused:
        print("gqa report: " + unused, file=sys.stderr)
        return 2
    cfg = int_options(parser, args, Config(), LIMITS)
    if args.out == "":
        parser.error(_("--out must name a file; got an empty path"))
    if not 1 <= args.jobs <= MAX_JOBS:
        parser.error(_("--jobs must be between 1 and {most}; got {jobs}").format(most=MAX_JOBS, jobs=args.jobs))
    if args.module and not os.path.isfile(args.module):
        print("gqa report: " + module_missing(args.module), file=sys.stderr)
        return 2
    path = args.out or (os.path.join(os.path.dirname(args.module), "report.md") if args.module
                        else default_report_path())
    refused = None if args.check else why_not_write(path, args.module)
    if refused:
        print(f"gqa report: {refused}", file=sys.stderr)
        return 2
    expected = None if args.check else write_target(path)     # what path leads to, before any work
    if args.check and not os.path.isfile(path):       # nothing to compare with: said at once
        print(f"gqa report --check: {differs(path, '')}\n"
              + _("regenerate it with: {command}").format(command=cfg.command(args.module, out=args.out)),
              file=sys.stderr)
        return 1
    try:
        if args.module:
            from gqa_tools.report import child        # a student's report alone builds in a child
            parts = child.parts_from_child(cfg, args.module, out=args.out)
        else:
            parts, training_done = project_parts(cfg, args, path)
    except gqa.GQAError as err:
        if args.module:
            print(f"gqa report: {err}", file=sys.stderr)
            return 2
        parser.error(str(err))
    except TypeError as err:
        parser.error(str(err))
    recorded = None if args.module or not isinstance(training_done, dict) else lambda: write_training(
        os.path.join(os.path.dirname(os.path.abspath(path)), TRAINING_RECORD),
        measuring.report_recipe(cfg), training_done)
    return finish(path, parts, args.check, cfg.command(args.module, out=args.out), expected, recorded)


def _unused(args: Any, argv: Sequence[str], parser: argparse.ArgumentParser) -> Optional[str]:
    """Why an option given is not used, or None: --retrain with --module (a student's report
    has no record: it trains), --jobs with --module (the module trains in one process)."""
    if args.retrain and args.module:
        return _("--retrain is for the project's report.md, whose section 8 is recorded; a report "
                 "with --module trains with the module whenever its steps pass")
    if args.module and given(argv, "--jobs", parser) is not None:
        return _("--jobs is for the project's report; with --module, section 8 trains in one process, "
                 "the grader's worker")
    return None


def handout_report(parser: argparse.ArgumentParser, args: Any, found: Handout) -> int:
    """A handout's `report`: of the gqa.py in its folder (or --module's), in the grader's
    worker, beside it unless --out says where."""
    cfg = int_options(parser, args, Config(), LIMITS)
    if args.out == "":
        parser.error(_("--out must name a file; got an empty path"))
    module = args.module or LAB
    if not os.path.isfile(module):
        print("gqa report: " + _("--module {path}: no such file").format(path=module), file=sys.stderr)
        return 2
    shown = None if _same(module, LAB) else args.module
    path = args.out or _near(os.path.join(os.path.dirname(module), "report.md"))
    refused = None if args.check else why_not_write(path, None)
    if refused:
        print(f"gqa report: {refused}", file=sys.stderr)
        return 2
    if args.check and not os.path.isfile(path):
        print(f"gqa report --check: {differs(path, '')}\n"
              + _("regenerate it with: {command}").format(command=cfg.command(shown, handout=True, out=args.out)),
              file=sys.stderr)
        return 1
    expected = None if args.check else write_target(path)
    try:
        from gqa_tools.report import child
        parts = child.parts_from_child(cfg, module, found, shown, args.out)
    except gqa.GQAError as err:
        print(f"gqa report: {err}", file=sys.stderr)
        return 2
    return finish(path, parts, args.check, cfg.command(shown, handout=True, out=args.out), expected)


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _near(path: str) -> str:
    """path relative to the current folder when it is under it (report.md, in the handout's)."""
    near = os.path.relpath(path)
    return path if near.startswith(os.pardir) else near


def finish(path: str, parts: List[sections.Part], checking: bool, command: str, expected: Any,
           then: Optional[Callable[[], Any]] = None) -> int:
    """Write the report's parts to path (or --check them against it): its text and figures,
    and then what then writes (section 8's training record), refused alike.  A student's
    write-up (the last section of their report) is kept as the file at path has it."""
    text = sections.assemble(parts, os.path.basename(figures_folder(path)))
    kept = lost = False
    student = bool(parts) and parts[-1].title == _(sections.STUDENT_SECTIONS[-1][0])
    if student:
        text, kept, lost = kept_write_up(path, sealed(text, parts[-1].title), parts[-1].title)
    try:
        figures = sections.figures_of(parts)
    except ValueError as err:
        print("gqa report: " + _("{error}; nothing was written").format(error=err), file=sys.stderr)
        return 2
    if checking:
        return check(path, text, command, figures)
    try:
        encoded = student and not_utf8(path)
        kept_as = keep_previous(path) if lost or encoded else None
        target = write_report(path, text, figures, expected)
        if then is not None:
            then()
    except (OSError, WriteRefused) as err:
        why = getattr(err, "strerror", None) or err
        print("gqa report: " + _("cannot write {path}: {why}; nothing was changed").format(path=path, why=why),
              file=sys.stderr)
        return 2
    if kept:
        print("gqa report: " + _("{path}: your write-up, section {number}, is kept as you wrote it; the "
                                 "sections above it are written anew").format(
                                     path=path, number=parts[-1].title.split(".")[0]), file=sys.stderr)
    if kept_as:
        why = (_("{path} was not saved as UTF-8: it is written in UTF-8 now, and kept as it was in {previous}")
               if encoded else       # the likelier why: an encoding loses characters too ("–" as "?")
               _("{path} held words of yours outside your write-up, where the code writes anew: the file as "
                 "it was is kept in {previous}"))
        print("gqa report: " + why.format(path=path, previous=_near(kept_as)), file=sys.stderr)
    print(wrote(path, target, len(figures)))
    return 0


def project_parts(cfg: Config, args: Any, path: str) -> Tuple[List[sections.Part], Any]:
    """The project's own report's parts, and its training when it trained (to be recorded
    when written; else None): the training comes from the record beside path, of this
    Python's family, when its key is the code's (--retrain: never)."""
    lab = Lab(gqa, "gqa.py")
    record = (None if args.retrain else
              recorded_training(os.path.join(os.path.dirname(os.path.abspath(path)), TRAINING_RECORD),
                                measuring.report_recipe(cfg)))
    with progress_line("report") as progress:           # section 8 trains for seconds
        measured = measuring.measure(cfg, lab, progress, jobs=args.jobs, record=record)
    return sections.build_parts(cfg, measured, lab, out=args.out), measured.training if record is None else None


def report_lang(argv: Sequence[str]) -> str:
    """The language of `report`: the student's (chosen_lang) in a handout, with --module,
    with --help, or with --lang itself (to say that it goes with --module); otherwise
    English whatever the environment, the project's report.md being checked byte for byte."""
    found = handout()
    parser = make_parser(found)
    asked = found or given(argv, "--module", parser) or given(argv, "--lang", parser) or \
        any(a in ("-h", "--help") for a in argv)
    return chosen_lang(argv, parser) if asked else "en"


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa report`."""
    with speaking(report_lang(argv)):
        return report_main(argv)
