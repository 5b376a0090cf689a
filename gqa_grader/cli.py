"""The command line: `python grader.py [options]` (see parse_args, and grader.py's docstring)."""

import argparse
import base64
import contextlib
import json
import math
import os
import random
import shlex
import signal
import sys
import threading
import time

from .expected.answers import HANDOUT
from .expected.compare import ABS_TOL, REL_TOL
from .language.i18n import (LANGUAGES, N_, _, default as i18n_default, default_said, help_wrapped,
                            how_to_change, lang_option, lang_values, listed, meant_lang, ngettext, use)
from .running.atomic import write_atomically
from .running.failures import Refused
from .running.process import DEFAULT_TIMEOUT
from .running.seal import DEFAULT_BUDGET, Seal
from .running.values import bounded, clean_data, clean_text
from .steps.tracks import ALL_STEPS, TRACKS, default_track, handout_lang, select
from .teacher import commands, submissions
from .verdict import records
from .verdict.documents import classroom_result, gradescope, nothing_graded, run_document
from .verdict.grading import (DEFAULT_CASES, DEFAULT_MODULE, GRADER_VERSION, MAX_CASES, PUBLIC_CASES,
                              PUBLIC_SEED, SEALED_SEEDS, SELF_CHECK_SEEDS, grade, withhold_hidden)
from .verdict.printing import print_report, progress, reproduce, shown_seed, summary
from .verdict.results import Status, scored


# ---------------------------------------------------------------------------
# Command line.
# ---------------------------------------------------------------------------

def default_module(cwd=None):
    """The module graded without --module: ./gqa.py when the current folder holds one (a
    student's lab folder), else the gqa.py beside grader.py."""
    here = os.path.join(cwd or os.getcwd(), "gqa.py")
    return here if os.path.isfile(here) else DEFAULT_MODULE


def shown_path(path):
    """A path as the first line shows it: relative to the current folder, with its folder
    ("./gqa.py", "mylab/gqa.py"), or whole when it is far away."""
    path = os.path.abspath(path)
    try:
        rel = os.path.relpath(path)
    except ValueError:                   # another drive (Windows)
        return path
    if rel.startswith(os.pardir + os.sep + os.pardir):
        return path
    return rel if os.sep in rel or (os.altsep and os.altsep in rel) else os.path.join(os.curdir, rel)


# argparse's own words, exactly as its module asks gettext for them (Python 3.9 to 3.13),
# for the catalogs: while our parser is built and parses, argparse's _ is ours
# (_argparse_speaks), so --help and a usage error are all in the language in use.  The
# ones our options can meet; "argument %(argument_name)s: %(message)s" is asked for
# from 3.11 on (3.9 and 3.10 write it in English), "options" from 3.10 on.
ARGPARSE_WORDS = [
    N_("usage: "),
    N_("options"),
    N_("optional arguments"),                                  # Python 3.9
    N_("show this help message and exit"),
    N_("%(prog)s: error: %(message)s\n"),
    N_("argument %(argument_name)s: %(message)s"),
    N_("invalid choice: %(value)r (choose from %(choices)s)"),
    N_("invalid %(type)s value: %(value)r"),
    N_("expected one argument"),
    N_("ignored explicit argument %r"),
    N_("ambiguous option: %(option)s could match %(matches)s"),
    N_("unrecognized arguments: %s"),
]
_ARGPARSE_LOCK = threading.RLock()


@contextlib.contextmanager
def _argparse_speaks():
    """argparse's own words ("usage: ", "options", "error: ", "invalid choice: ...") in the
    language in use, within the block: argparse takes them from its module's _ (gettext's),
    pointed at i18n._ here and back after, one thread at a time."""
    with _ARGPARSE_LOCK:
        saved = argparse._
        argparse._ = _
        try:
            with help_wrapped():
                yield
        finally:
            argparse._ = saved


def asked_lang(argv):
    """The language argv asks for with --lang, read as argparse would (--lang ja, --lang=ja,
    an abbreviation such as --la ja; the last one counts), before the parser is built, so
    that --help and the usage errors speak it; None when it asks for none of ours."""
    values = list(lang_values(argv))
    return values[-1] if values and values[-1] in LANGUAGES else None


def meant(argv):
    """The language a --lang that is none of ours means (--lang kr: ko), or None."""
    values = list(lang_values(argv))
    return meant_lang(values[-1]) if values and values[-1] not in LANGUAGES else None


def _parser():
    parser = argparse.ArgumentParser(
        prog="python grader.py",
        description=_("Grade a gqa.py step by step against an independent reference; the "
                      "module runs in a child process and cannot change the verdict."))
    add = parser.add_argument
    add("--module", default=None, metavar="PATH",
        help=_("the gqa.py to grade (default: ./gqa.py if this folder has one, else the one "
               "beside grader.py)"))
    add("--seed", type=int, default=None,
        help=_("not in a handout: its cases are the public ones, from seed {seed} in every run").format(
            seed=PUBLIC_SEED) if HANDOUT else _("the seed of the random cases (default: a fresh one, printed)"))
    cases = 0 if HANDOUT else DEFAULT_CASES         # a handout's self-check: its public cases alone
    add("--cases", type=int, default=cases, metavar="K",
        help=_("0 in a handout: its hidden cases are your teacher's run's") if HANDOUT else
        _("random cases per step, after the systematic ones: 0 to {most} "
          "(default {default}; every step has systematic cases too)").format(most=f"{MAX_CASES:,}", default=cases))
    add("--steps", "--only", dest="only", default=None, metavar="STEPS",
        help=_("grade these steps of this handout's: numbers (3), ranges (1-8) and names (kv_head), "
               "comma-separated, or robustness (the rules beyond the lesson) (default: all of its steps; "
               "see --list)") if HANDOUT else
        _("grade these steps: numbers (3), ranges (1-8), names (kv_head) and tracks "
          "(core: the handout's lab; all: the lab's {number} steps; robustness: the rules beyond "
          "the lesson), comma-separated: --steps core, --steps 1-8,14-19 (default: all, or a "
          "handout's track; see --list)").format(number=len(TRACKS["all"])))
    add("--all-or-nothing", action="store_true",
        help=_("a step earns its points only when every graded case passes (default: the "
               "share of its graded cases that pass)"))
    add("--case", type=int, default=None, metavar="K",
        help=_("run only case K of the one step given with --only"))
    add("--show", action="store_true",
        help=_("print a failing case's failing call (or every call of --case) as Python to "
               "paste into python started beside the module"))
    add("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
        help=_("seconds a call may take before it fails (default {default})").format(
            default=f"{DEFAULT_TIMEOUT:g}"))
    add("--list", action="store_true", help=_("name the steps, in order, and exit"))
    add("--json", action="store_true", help=_("print one JSON document: the score and each step's result"))
    add("-x", "--fail-fast", action="store_true",
        help=_("stop each step at its first failing case (faster; the counts are partial)"))
    add("-q", "--quiet", action="store_true", help=_("print only failures and the summary"))
    teach = parser.add_argument_group(_("for teachers: a class, Gradescope, GitHub Classroom, a handout")).add_argument
    teach("--format", choices=("text", "json", "gradescope", "classroom"), default=None,
        help=_("text (default), json (as --json), gradescope (its results.json), or classroom "
               "(a GitHub Classroom step's result=... line; the report goes to stderr)"))
    teach("--weights", metavar="FILE", default=None,
        help=_("with --format gradescope: a JSON object of step name -> points (default 1 each)"))
    teach("--withhold-hidden", action="store_true",
        help=_("a failing hidden case says only that it failed: its input, the answer expected, "
               "its calls and the seed are withheld (what --class's feedback does)"))
    _run_options(add, teach)
    commands.add_options(teach)
    return parser


def _run_options(add, teach):
    """The options of the language and the run's time (add), and of the teacher's runs and the
    files the grader writes (teach: --help shows them apart, a student needs none)."""
    add("--lang", choices=LANGUAGES, default=None,
        help=_("the language of what the grader prints: {languages}; {default}").format(
            languages=listed(), default=default_said(handout_lang())))
    add("-v", "--verbose", action="store_true", help=_("also print the wall time"))
    add("--budget", type=float, default=DEFAULT_BUDGET, metavar="S",
        help=_("seconds the whole run may take (default {default}); the steps not "
               "reached by then are not graded").format(default=f"{DEFAULT_BUDGET:g}"))
    teach("--starter", metavar="DIR", help=_("write a starter gqa.py for students into DIR and exit"))
    teach("--sealed", action="store_true",
        help=_("the teacher's grading run: the module alone in a private folder, PATH its only "
               "variable, limits, and (as root) another user; implied by --format gradescope"))
    teach("--user", metavar="NAME", default=None,
        help=_("with --sealed, as root: the worker's user (default: a user id drawn for the "
               "run, which no other process has)"))
    teach("--out", metavar="PATH", default=None,
        help=_("also write the run's JSON document (Gradescope's with --format gradescope) to "
               "PATH, once the worker is gone"))
    teach("--secret", metavar="FILE", default=None,
        help=_("the hidden cases' seed made from FILE's bytes and the module's sha256: each "
               "submission meets cases of its own, and the seed is recorded (what an "
               "--autograder zip does unless --seed is given); not with --seed"))
    teach("--autograder", metavar="DIR",
        help=_("write DIR/autograder.zip for Gradescope (this grader, sealed) and exit"))
    teach("--handout", metavar="DIR",
        help=_("write what students get into DIR (the starter, a self-check of the public cases "
               "that holds no reference, and the tools of their report: python -m gqa report and "
               "tables, in DIR) and exit"))


def _check_secret(parser, args):
    if args.secret is None:
        return
    if args.seed is not None:
        parser.error(_("--secret makes each module's seed; give it or --seed, not both"))
    if not os.path.isfile(args.secret):
        parser.error(_("--secret {path}: no such file").format(path=args.secret))


def _check_ranges(parser, args):
    if not (0 < args.budget <= 86400):
        parser.error(_("--budget must be more than 0 and at most 86400 seconds; got {budget}").format(
            budget=f"{args.budget:g}"))
    if args.user is not None and not args.sealed:
        parser.error(_("--user goes with --sealed (or --format gradescope)"))
    if args.out == "":
        parser.error(_("--out must name a file; got an empty path"))
    if args.out is not None:
        folder = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(folder):
            parser.error(_("--out {path}: no such folder {folder}").format(path=args.out, folder=folder))
        if not os.access(folder, os.W_OK) or os.path.isdir(args.out):
            parser.error(_("--out {path}: cannot write a file there").format(path=args.out))
    if not 0 <= args.cases <= MAX_CASES:
        parser.error(_("--cases must be from 0 to {most}; got {cases}").format(
            most=f"{MAX_CASES:,}", cases=args.cases))
    if not (0 < args.timeout <= 3600):
        parser.error(_("--timeout must be more than 0 and at most 3600 seconds; got {timeout}").format(
            timeout=f"{args.timeout:g}"))


def _steps_named(parser, only):
    """--steps's steps as names, in the lab's order, each once (3,kv_head is one step)."""
    try:
        return select(only)
    except ValueError as err:
        parser.error(f"--steps {only}: {err}")


def _weights(parser, path):
    """--weights FILE: a JSON object of step name -> points."""
    try:
        with open(path, encoding="utf-8") as f:
            weights = json.load(f)
        if not isinstance(weights, dict) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                and math.isfinite(v) for v in weights.values()):
            raise ValueError(_("not an object of step name -> points"))
    except (OSError, ValueError) as err:
        parser.error(f"--weights {path}: {err}")
    unknown = sorted(set(weights) - {st.name for st in ALL_STEPS})
    if unknown:
        parser.error(_("--weights {path}: no step named {names}").format(
            path=path, names=_(", ").join(unknown)))
    return weights


def parse_args(argv):
    """The command line's options, checked; the language of every message from here on
    chosen (--lang, else the environment's) before the parser is built, so that --help,
    argparse's own words and the usage errors are in it too."""
    argv = sys.argv[1:] if argv is None else list(argv)
    use(asked_lang(argv) or meant(argv) or i18n_default(handout_lang()))
    with _argparse_speaks():
        return _parse_args(argv)


def _parse_args(argv):
    parser = _parser()
    if meant(argv):
        parser.error(_("--lang {given}: no such language; did you mean --lang {meant}?").format(
            given=list(lang_values(argv))[-1], meant=meant(argv)))
    args = parser.parse_args(argv)
    args.lang = args.lang or i18n_default(handout_lang())
    use(args.lang)
    args.format = args.format or ("json" if args.json else "text")
    args.sealed = args.sealed or args.format == "gradescope"
    args.module_given = args.module is not None
    args.module = args.module if args.module is not None else default_module()
    _check_ranges(parser, args)
    _check_secret(parser, args)
    if args.starter is not None and args.module_given:       # it would be silently left unused
        parser.error(_("--starter writes the starter of the lab's own gqa.py, beside grader.py; "
                       "--module {path} is not used with it").format(path=args.module))
    if args.only is not None:
        args.steps_spec = ",".join(word.strip() for word in args.only.split(","))
        args.steps_option = records.steps_option(argv)
        args.only = _steps_named(parser, args.only)
    if args.case is not None and (not args.only or len(args.only) != 1 or args.case < 0):
        parser.error(_("--case K needs --only with one step (a name or a number), and K at least 0"))
    args.weight_map = _weights(parser, args.weights) if args.weights else {}
    commands.check_args(parser, args, argv)
    commands.check_unused(parser, args)
    if HANDOUT:
        from .teacher import selfcheck
        selfcheck.check_options(parser, args)
        args.seed = PUBLIC_SEED              # its cases' seed, the one there is (never a fresh one)
    return args


def emit(doc):
    json.dump(clean_data(doc), sys.stdout, indent=2, allow_nan=False)
    print()


def write_out(path, doc):
    """Write doc to path as JSON, whole or not at all (atomic.write_atomically)."""
    text = json.dumps(clean_data(doc), indent=2, allow_nan=False) + "\n"
    write_atomically(os.path.abspath(path), text.encode("utf-8"))


def asked_format(argv):
    """The document format argv asks for ("json", "gradescope" or None), read as argparse
    would (abbreviations too), for the one place argparse cannot print it: a usage error."""
    fmt = None
    for i, arg in enumerate(argv):
        name, _, value = arg.partition("=")
        if len(name) >= 3 and "--json".startswith(name):
            fmt = fmt or "json"
        elif len(name) >= 4 and "--format".startswith(name):
            value = value or (argv[i + 1] if i + 1 < len(argv) else "")
            fmt = value if value in ("json", "gradescope") else fmt
    return fmt


class Stopped(BaseException):
    """The grader was sent SIGTERM, SIGHUP or SIGINT: the run ends, its worker dies first."""


def _stop_run(signum, frame):
    for which in STOP_SIGNALS:                  # a second signal waits for the cleaning up
        signal.signal(which, signal.SIG_IGN)
    raise Stopped(signum)


STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n))


def main(argv=None):
    """The command; on SIGTERM, SIGHUP or SIGINT the worker's group (and, with a uid of
    the run's own, every process of that uid) is killed and its folder removed first."""
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    before = {which: signal.signal(which, _stop_run) for which in STOP_SIGNALS}
    try:
        return _main(argv)
    finally:
        for which, handler in before.items():
            signal.signal(which, handler)


def _parse_or_document(argv):
    """(args, None), or (None, exit status) once a usage error is printed: as one
    document when argv asks for one, for the one place argparse cannot print it."""
    fmt = asked_format(argv)
    if fmt is None:
        return parse_args(argv), None
    import contextlib
    import io
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            args = parse_args(argv)
    except SystemExit as exit_:
        sys.stderr.write(said.getvalue())
        if not exit_.code:
            raise
        why = said.getvalue().strip().splitlines()[-1] if said.getvalue().strip() else _("usage error")
        emit(gradescope([], None, error=why) if fmt == "gradescope" else
             nothing_graded(why))
        return None, 2
    sys.stderr.write(said.getvalue())
    return args, None


def _list_steps(documents):
    """The steps, each with its part and the tracks it is in."""
    def tracks_of(st):
        return [name for name, names in TRACKS.items() if st.name in names]
    if documents:
        emit({"grader": GRADER_VERSION, "default": default_track(), "steps": [
            {"step": st.number, "name": st.name, "summary": st.summary, "part": st.part,
             "tracks": tracks_of(st)} for st in ALL_STEPS]})
        return 0
    for st in ALL_STEPS:
        print(_("step {step}  {name} {tracks}  {summary}").format(
            step=f"{st.number:>2}", name=f"{st.name:<26}", tracks=f"{','.join(tracks_of(st)):<10}",
            summary=_(st.summary)))
    return 0


def _write_handout(args, documents):
    """--starter, --handout or --autograder DIR: write it and say where; None when none is asked."""
    if not (args.starter or args.handout or args.autograder):
        return None                           # their modules are imported only when one is asked for
    from .teacher import handout, selfcheck
    for what, option, write, then in (
            ("starter", args.starter, lambda d: handout.write_starter(d, track=args.only, lang=args.lang),
             _("wrote {path}; grade it with: {command}")),
            ("handout", args.handout, lambda d: selfcheck.write_handout(d, only=args.only, lang=args.lang),
             _("wrote {path}; give students this folder; they run `python grader.py` in it")),
            ("autograder", args.autograder, lambda d: handout.write_autograder(
                d, args, records.carried(args, args.given, "weights.json"), secret="seed" not in args.given),
             _("wrote {path}; upload it as the assignment's autograder on Gradescope"))):
        if not option:
            continue
        try:
            path = write(option)
        except (OSError, RuntimeError) as err:     # RuntimeError: the solution fails its steps
            why = {"starter": _("cannot write the starter: {error}"),
                   "handout": _("cannot write the handout: {error}"),
                   "autograder": _("cannot write the autograder: {error}")}[what].format(error=err)
            print(f"grader: {why}", file=sys.stderr)
            if documents:
                emit({"grader": GRADER_VERSION, "error": why})
            return 2
        if documents:
            emit({"grader": GRADER_VERSION, what: path})
        else:
            print(then.format(path=path, command=f"python grader.py --module {shlex.quote(path)}{_track_words(args)}"
                                                 f"{lang_option()}"))
        return 0
    return None


def _track_words(args):
    """' --steps SPEC' when a starter was made for a track: the command grades that track."""
    return f" --steps {args.steps_spec}" if args.only else ""


def _restore_signals():
    if threading.current_thread() is threading.main_thread():
        for which in STOP_SIGNALS:          # nothing left to clean up: signals end it
            signal.signal(which, signal.default_int_handler if which == signal.SIGINT
                          else signal.SIG_DFL)


def _what_is_graded(args):
    """The first line's parenthesis: the grader, the cases graded, the tolerance, the
    command that repeats the run, and the language."""
    if args.case is not None:
        name = args.only[0]
        cases = _("case {case} of step {name} alone").format(case=args.case, name=name)
        again = reproduce(args, name, args.case)
    else:
        seed = (_("a seed withheld ({seed} below: the gradebook's)").format(seed=shown_seed(args))
                if args.withhold_hidden else _("seed {seed}").format(seed=args.seed))
        cases = (ngettext("the public cases: the systematic ones and {random} random ones per step, then "
                          "{hidden} hidden one from {seed}",
                          "the public cases: the systematic ones and {random} random ones per step, then "
                          "{hidden} hidden ones from {seed}", args.cases) if args.cases
                 else _("the public cases: the systematic ones and {random} random ones per step"))
        cases = cases.format(random=PUBLIC_CASES, hidden=args.cases, seed=seed)
        again = reproduce(args)
    return _("grader {version}; {cases}; floats to rel {rel}, abs {abs}; repeat with: {command}; "
             "{language}").format(version=GRADER_VERSION, cases=cases, rel=f"{REL_TOL:g}",
                                  abs=f"{ABS_TOL:g}", command=again, language=how_to_change())


def _grade_sealed(args, label):
    """Grade as args ask, the worker shut in; (results, why, partly, stopped, notes): why
    is the reason nothing was graded, or None; notes, what the cleanup removed or could
    not.  The worker, its folder and what it left are gone on return."""
    seal, results, why, partly, stopped = None, None, None, None, None
    try:
        seal = Seal(args.sealed, args.user, args.out, args.budget, alone=True)
        args.namespaces = seal.tool
        if seal.partly:
            partly = f"partly sealed: {seal.partly}"
            print(f"grader: {partly}", file=sys.stdout if args.format == "text" else sys.stderr)
        if args.format == "text" and not args.quiet:
            print(_("grading {module} ({what})").format(module=label, what=_what_is_graded(args)))
            sys.stdout.flush()
        if not os.path.isfile(args.module):
            raise Refused(submissions.missing_module(args.module))
        with open(args.module, "rb") as f:          # as --class says it (each step said "no valid_g")
            if submissions.blank(f.read(8192)):
                raise Refused(_(submissions.EMPTY))
        results = grade(args.module, args.seed, args.cases, args.only, args.timeout, args.case,
                        args.fail_fast, args.budget, seal, label)
    except Refused as err:
        why = bounded(_("cannot grade {module}: {why}").format(module=label, why=err))
    except Stopped as err:
        stopped = err.args[0]
        why = _("cannot grade {module}: the grader was stopped by {signal}; the worker was "
                "killed").format(module=label, signal=signal.Signals(stopped).name)
    except Exception as err:              # the grader's own fault: still one document
        why = bounded(_("cannot grade {module}: the grader failed ({type}: {error})").format(
            module=label, type=type(err).__name__, error=err))
    finally:
        if seal is not None:
            seal.close()
            args.sha256 = records.sha256_of(seal, args.module)
            args.encoding_said = seal.said
        _restore_signals()
    return results, why, partly, stopped, seal.notes if seal is not None else []


def _print_text(args, results, why, seconds, notes):
    said = getattr(args, "encoding_said", None)          # the module is not UTF-8: for its author
    for note in ([said] if said else []) + notes:
        print(f"grader: {clean_text(note)}", file=sys.stderr)
    if why is not None:
        print(f"grader: {clean_text(why)}", file=sys.stderr)
        return
    print_report(results, args)
    print(progress(results))
    if args.verbose:
        print(_("graded in {seconds} s of wall time").format(seconds=f"{seconds:.2f}"))
    print(summary(results, args))


def _main(argv=None):
    args, status = _parse_or_document(sys.argv[1:] if argv is None else list(argv))
    if args is None:
        return status
    documents = args.format in ("json", "gradescope")   # --json, --format: one JSON document, always
    if args.list:
        return _list_steps(documents)
    status = commands.dispatch(args, main)
    if status is None:
        status = _write_handout(args, documents)
    if status is not None:
        return status
    if args.secret is not None:
        args.seed = records.seed_of_secret(args.secret, args.module)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(SEALED_SEEDS if args.sealed else SELF_CHECK_SEEDS)
    # A run whose hidden cases are withheld writes what a student reads (a class's feedback,
    # Gradescope): the module by its own name, no path of the teacher's.
    label = os.path.basename(args.module) if args.withhold_hidden else shown_path(args.module)
    start = time.perf_counter()
    results, why, partly, stopped, notes = _grade_sealed(args, label)
    if results is not None:
        results = scored(results, args.weight_map, args.cases, args.all_or_nothing)
    if results is not None and args.withhold_hidden:
        results = withhold_hidden(results)
    # From here on the worker and its process group are gone: only the grader's state counts.
    doc = records.stamp(run_document(args, label, results, why, partly, notes), args,
                        time.perf_counter() - start)
    if args.out:
        try:
            write_out(args.out, doc)
        except OSError as err:
            print("grader: " + _("cannot write {path}: {error}").format(path=args.out, error=err),
                  file=sys.stderr)
            why = why or _("cannot write {path}").format(path=args.out)
    if args.format == "classroom":                # the report to the log, the result to $GITHUB_OUTPUT
        with contextlib.redirect_stdout(sys.stderr):
            _print_text(args, results, why, time.perf_counter() - start, doc.get("cleanup", []))
        result = classroom_result(results or [], args, error=why)
        print("result=" + base64.b64encode(json.dumps(result).encode("utf-8")).decode("ascii"))
        return 0                           # the step's result says it: the reporter must still run
    if documents:
        emit(doc)
    else:
        _print_text(args, results, why, time.perf_counter() - start, doc.get("cleanup", []))
    if stopped is not None:
        return 128 + stopped
    if why is not None:
        return 2
    return 0 if all(r.status == Status.PASSED for r in results) else 1


ARGUMENTS_FROM = "--arguments-from"      # grader.py's own restart (grader.py: _hide_command_line)


def hidden_command_line(argv):
    """The arguments of a sealed or class run of grader.py, read back from the pipe that
    grader.py gave its second start (`grader.py --arguments-from FD`, all that /proc
    shows of it); argv itself otherwise."""
    if argv[:1] != [ARGUMENTS_FROM] or len(argv) != 2:
        return argv
    try:
        with os.fdopen(int(argv[1]), "rb") as pipe:
            given = json.loads(pipe.read().decode("utf-8", "surrogateescape"))
    except (ValueError, OSError):
        return argv                      # not grader.py's own: argparse says it is unknown
    return given if isinstance(given, list) and all(isinstance(a, str) for a in given) else argv


def run(argv=None):
    """main() as a program: its exit status, Ctrl-C and a closed pipe included.  What
    the terminal's encoding cannot show is escaped (backslashreplace), never a crash."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    if argv is None:
        argv = hidden_command_line(sys.argv[1:])
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("grader: " + _("interrupted"), file=sys.stderr)
        return 130
    except BrokenPipeError:                      # `python grader.py | head`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
