"""gqa_tools.report.command: `python -m gqa report`, its options and what it prints.

The project's report is measured and written here (project_parts); a
student's (--module) comes from the child process (gqa_tools.report.child).
Both are written by gqa_tools.report.files, or --check-ed against the files.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List, Sequence, Tuple

import gqa
from gqa_grader import i18n
from gqa_grader.i18n import _
from gqa_tools.common import (MAX_JOBS, add_int_options, chosen_lang, given, int_options, progress_line,
                              module_missing, speaking)
from gqa_tools.report import child, measuring, sections
from gqa_tools.report.files import (WriteRefused, check, default_report_path, differs, figures_folder, write_report,
                                    write_target, why_not_write, wrote)
from gqa_tools.report.lab import Lab
from gqa_tools.report.record import TRAINING_RECORD, recorded_training, write_training
from gqa_tools.report.settings import LIMITS, OPTION_HELP, Config




def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gqa report",
        description=_("Write report.md: the lab's tables, counted and measured by the code."))
    parser.add_argument("--out", default=None, metavar="PATH",
                        help=_("where to write (default: report.md at the root of the "
                               "checkout, or in the current directory when gqa is installed; "
                               "with --module, report.md beside the module)"))
    parser.add_argument("--check", action="store_true",
                        help=_("write nothing; exit 1 if the file differs from what the code writes now"))
    parser.add_argument("--retrain", action="store_true",
                        help=_("with --check: train section 8 again, whatever {record} says (it is used "
                               "when the code it was trained with is unchanged)").format(record=TRAINING_RECORD))
    parser.add_argument("--module", default=None, metavar="PATH",
                        help=_("build the report from this gqa.py (a student's) instead of the project's"))
    parser.add_argument("--lang", choices=i18n.LANGUAGES, default=None,
                        help=_("with --module, the language of the student's report and of what the "
                               "command prints: en, ja (日本語) or ko (한국어); default: the "
                               "environment's (LANGUAGE, LC_ALL, LC_MESSAGES, LANG), else en. The "
                               "project's report.md is always English"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help=_("processes that train section 8's seeds (default: the number of CPUs; "
                               "at most {most}); the report is the same for every N (with "
                               "--module, one process)").format(most=MAX_JOBS))
    add_int_options(parser, Config(), LIMITS, what=lambda name: _(OPTION_HELP[name]))
    return parser


def report_main(argv: Sequence[str]) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.lang and not args.module:
        print("gqa report: " + _("the project's report.md is English; --lang goes with --module PATH "
                                 "(a student's report)"), file=sys.stderr)
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
              + _("regenerate it with: {command}").format(command=cfg.command(args.module)), file=sys.stderr)
        return 1
    try:
        if args.module:
            parts = child.parts_from_child(cfg, args.module)
        else:
            parts, training_done = project_parts(cfg, args, path)
    except gqa.GQAError as err:
        if args.module:
            print(f"gqa report: {err}", file=sys.stderr)
            return 2
        parser.error(str(err))
    except TypeError as err:
        parser.error(str(err))
    text = sections.assemble(parts, os.path.basename(figures_folder(path)))
    try:
        figures = sections.figures_of(parts)
    except ValueError as err:
        print("gqa report: " + _("{error}; nothing was written").format(error=err), file=sys.stderr)
        return 2
    if args.check:
        return check(path, text, cfg.command(args.module), figures)
    try:
        target = write_report(path, text, figures, expected)
        if not args.module and isinstance(training_done, dict):
            write_training(os.path.join(os.path.dirname(os.path.abspath(path)), TRAINING_RECORD),
                           measuring.report_recipe(cfg), training_done)
    except (OSError, WriteRefused) as err:
        why = getattr(err, "strerror", None) or err
        print("gqa report: " + _("cannot write {path}: {why}; nothing was changed").format(path=path, why=why),
              file=sys.stderr)
        return 2
    print(wrote(path, target, len(figures)))
    return 0


def project_parts(cfg: Config, args: Any, path: str) -> Tuple[List[sections.Part], Any]:
    """The project's own report's parts, and its training (to be recorded when written);
    --check takes the training from the record beside path when its key is the code's."""
    lab = Lab(gqa, "gqa.py")
    record = (recorded_training(os.path.join(os.path.dirname(os.path.abspath(path)), TRAINING_RECORD),
                                measuring.report_recipe(cfg)) if args.check and not args.retrain else None)
    with progress_line("report") as progress:           # section 8 trains for seconds
        measured = measuring.measure(cfg, lab, progress, jobs=args.jobs, record=record)
    return sections.build_parts(cfg, measured, lab), measured.training


def report_lang(argv: Sequence[str]) -> str:
    """The language of `report`: the student's (chosen_lang) with --module, with --help, or
    with --lang itself (to say that it goes with --module); otherwise English whatever the
    environment, the project's report.md being checked byte for byte."""
    parser = make_parser()
    asked = given(argv, "--module", parser) or given(argv, "--lang", parser) or \
        any(a in ("-h", "--help") for a in argv)
    return chosen_lang(argv, parser) if asked else "en"


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa report`."""
    with speaking(report_lang(argv)):
        return report_main(argv)
