"""The teacher's commands on the command line: --class, --classroom, --autograder and
--handout, their options, what each can carry (anything else given with one is a
usage error, never dropped), and where each goes (dispatch); what --list and --starter
use of the other options (check_unused).

    python grader.py --class SUBMISSIONS --gradebook grades.csv [--jobs N] [--roster FILE]
    python grader.py --classroom DIR
    python grader.py --autograder DIR
    python grader.py --handout DIR

--class is classroom.py's gradebook, its graders pool.py's; --classroom's workflow is
workflow.py's; the zip and the handout are handout.py's and selfcheck.py's.
"""

import argparse
import os
import sys

from ..language.i18n import _
from ..steps.tracks import default_track
from ..verdict.grading import guessable
from ..verdict.records import VISIBILITIES, flag, options_given


# ---------------------------------------------------------------------------
# The command line: the options, and what each command can carry.
# ---------------------------------------------------------------------------

# What each command takes beyond its own options: the options that grade, the seed,
# the weights; the zip also the hidden tests' visibility.  Anything else given with it
# is refused, never dropped.
CARRY = ("cases", "only", "timeout", "budget", "fail_fast", "seed", "weights", "all_or_nothing", "lang")
ALLOWED = {"autograder": CARRY + ("autograder", "hidden_visibility", "sealed", "format", "json"),
           "classroom": CARRY + ("classroom", "sealed"),
           "class_dir": CARRY + ("class_dir", "gradebook", "jobs", "roster", "regrade", "sealed",
                                 "quiet"),
           "handout": ("handout", "only", "lang")}
NAMES = {"autograder": "--autograder", "classroom": "--classroom", "class_dir": "--class",
         "handout": "--handout"}
WHY_NOT = {"module": "it grades each submission's own gqa.py (the handout: the project's)", "case": "it grades every case",
           "show": "it prints no transcript", "out": "it writes each run's results itself",
           "user": "each run draws a user id of its own", "quiet": "its report is whole",
           "verbose": "it prints no wall time", "hidden_visibility": "hidden tests are Gradescope's",
           "format": "it writes files, not a document", "json": "it writes files, not a document"}


def add_options(add):
    """--class's options and GitHub Classroom's, with add (the parser's teachers' group's)."""
    add("--class", dest="class_dir", metavar="SUBMISSIONS",
        help=_("grade every submission in this folder (.py files, folders holding a gqa.py, or "
               "a Gradescope export), each a sealed run of its own, into --gradebook"))
    add("--gradebook", metavar="FILE", help=_("with --class: the CSV to write, one row per "
        "student; each student's feedback goes in FILE's folder, in STEM-feedback/"))
    add("--jobs", type=int, default=None, metavar="N",
        help=_("with --class: runs at a time (default: the number of CPUs)"))
    add("--roster", metavar="FILE", help=_("with --class: a CSV naming each submission's student "
        "(submission, student[, name]), or GitHub Classroom's roster"))
    add("--regrade", action="append", metavar="NAME",
        help=_("with --class: grade this student again (the gradebook's student or submission), "
               "even when nothing changed; give it once per student"))
    add("--classroom", metavar="DIR",
        help=_("write DIR/.github/workflows/classroom.yml for GitHub Classroom: a graded step "
               "per lab step, with its points"))
    add("--class-serve", action="store_true", help=argparse.SUPPRESS)   # --class's own graders
    add("--hidden-visibility", choices=VISIBILITIES, default="hidden",
        help=_("with --format gradescope or --autograder: when students see the tests of the "
               "hidden cases (Gradescope's visibility; default hidden)"))


def check_args(parser, args, argv):
    """The usage errors of these commands: what each cannot carry, and its own options."""
    args.given = options_given(parser, argv)
    commands = [dest for dest in NAMES if getattr(args, dest)]
    if len(commands) > 1 or commands and args.starter:
        parser.error("give one of --class, --classroom, --autograder, --handout and --starter at a time")
    for dest in sorted(args.given):
        command = next((c for c in commands if dest not in ALLOWED[c]), None)
        if command is not None:
            why = WHY_NOT.get(dest, "it is another command")
            parser.error(f"{NAMES[command]} cannot carry {flag(parser, dest)} ({why}); "
                         f"leave it out")
    for dest in ("gradebook", "jobs", "roster", "regrade"):
        if dest in args.given and not args.class_dir:
            parser.error(_("{option} goes with --class").format(option=flag(parser, dest)))
    if "hidden_visibility" in args.given and not (args.autograder or args.format == "gradescope"):
        parser.error(_("--hidden-visibility goes with --format gradescope or --autograder"))
    if args.class_dir:
        _check_class(parser, args)
    if args.classroom:
        bad = ", ".join(f"{n}: {w:g}" for n, w in args.weight_map.items() if float(w) != int(w))
        if bad:
            parser.error(_("--classroom: GitHub Classroom's points are whole numbers (its max-score); "
                           "--weights gives {bad}").format(bad=bad))
    unused = sorted(set(args.weight_map) - set(args.only or default_track()))
    one_step = args.only is not None and len(args.only) == 1     # Classroom's test of a step, a --case
    if unused and not one_step:      # the docs' weights.json, given with --steps core: said, not an error
        print("grader: " + _("note: {why}").format(why=_(
            "--weights gives points to steps this run does not grade, which it does not use: {names}").format(
                names=", ".join(unused))), file=sys.stderr)


# What --list and --starter use of the other options (beyond --module, said apart): any
# other given with one is refused, never left unused in silence.
ALONE = {"list": ("list", "json", "format", "lang"),
         "starter": ("starter", "module", "only", "lang", "json", "format")}


def check_unused(parser, args):
    """Refuse an option the command given does not use beside --list or --starter; say so
    of --quiet or --verbose beside a document (--json, --format json or gradescope), which
    is printed whole."""
    for command, allowed in ALONE.items():
        unused = sorted(dest for dest in args.given if dest not in allowed)
        if getattr(args, command) and unused:
            option = flag(parser, unused[0])
            parser.error((_("--list names the steps and exits; {option} is not used with it (only --json and "
                            "--lang are)") if command == "list" else
                          _("--starter writes a starter and exits; {option} is not used with it (only --steps, "
                            "--lang and --json are)")).format(option=option))
    document = "--json" if args.json else f"--format {args.format}"
    for dest in ("quiet", "verbose"):
        if dest in args.given and args.format in ("json", "gradescope"):
            print("grader: " + _("{option} is for the text report, and is not used: {document} prints one "
                                 "document, whole").format(option=flag(parser, dest), document=document),
                  file=sys.stderr)


def _check_class(parser, args):
    if not os.path.isdir(args.class_dir):
        parser.error(_("--class {folder}: no such folder").format(folder=args.class_dir))
    if not args.gradebook:
        parser.error(_("--class needs --gradebook FILE, the CSV it writes"))
    folder = os.path.dirname(os.path.abspath(args.gradebook))
    if os.path.isdir(args.gradebook):
        parser.error(_("--gradebook {path} is a folder: give the CSV file to write").format(path=args.gradebook))
    if not os.path.isdir(folder):
        parser.error(_("--gradebook {path}: no such folder {folder}").format(path=args.gradebook, folder=folder))
    if args.jobs is not None and not 1 <= args.jobs <= 64:
        parser.error(_("--jobs must be between 1 and {most}; got {jobs}").format(most=64, jobs=args.jobs))
    if args.roster and not os.path.isfile(args.roster):
        parser.error(_("--roster {path}: no such file").format(path=args.roster))


def dispatch(args, main):
    """Run --class (or a class's own grader) or --classroom and return the exit status;
    for --autograder say how its seeds are made; else None.  main is the command's own
    (cli.main): --class's graders run it once per submission.  A command's modules are
    imported when it is asked for, so that a student's run, and each of a class's graders,
    starts without them."""
    if args.classroom:
        from .workflow import write_workflow
        return write_workflow(args)
    if args.class_serve:
        from .pool import serve
        return serve(main)
    if args.autograder and args.seed is None:
        print("grader: " + _("the autograder grades each submission with a seed of its own, made from a "
                             "secret drawn now into the zip and the submission's bytes, and recorded in its "
                             "results.json (give --seed for one seed for every submission)"), file=sys.stderr)
    elif args.autograder and guessable(args.seed):
        print("grader: " + _("note: {why}").format(why=guessable(args.seed)), file=sys.stderr)
    if args.class_dir:
        from .classroom import Gradebook
        return Gradebook(args).run()
    return None
