"""The command line: `python -m gqa COMMAND` (or `gqa COMMAND` once installed).

gqa.py, the lab, hands its command line here and needs none of it; each
command lives in a module of its own, imported only when it is run.

The tools run with their own gqa.py, the one beside gqa_tools/.  Run in a
student's folder, `python -m gqa` finds the student's gqa.py first (the
current folder comes first on sys.path); the tools do not import it, and
say in one line what to run instead: the tools' own gqa.py, with
--module for the commands that take it.

In a handout (`python grader.py --handout DIR` writes the tools into DIR), the
gqa.py beside gqa_tools/ is the student's: its last lines hand `python -m gqa
COMMAND` here, and the handout's commands (HANDOUT_COMMANDS) run it in the
grader's worker, speaking the handout's language unless --lang or the
environment names another.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shlex
import sys
from typing import Optional, Sequence

from gqa_grader.language import i18n
from gqa_grader.language.i18n import N_

COMMANDS = {
    "tables": ("gqa_tools.tables", N_("print the cache and multiplication tables for every g")),
    "report": ("gqa_tools.report", N_("write report.md, or --check that it is current")),
    "config": ("gqa_tools.sizer.command", N_("size a model's KV cache from its config.json")),
    "bench": ("gqa_tools.bench", N_("time and memory per g, measured on this machine")),
    "uptrain": ("gqa_tools.uptraining.command", N_("convert a trained MHA model to GQA/MQA, train on, measure quality")),
}
TAKE_MODULE = ("tables", "report", "uptrain")   # the commands that run another gqa.py with --module PATH
HANDOUT_COMMANDS = ("tables", "report")         # the commands a handout carries (gqa_grader.teacher.selfcheck)

# The tools' own gqa.py: beside gqa_tools/, in a checkout and once installed.
OWN_LAB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gqa.py")


def other_lab() -> Optional[str]:
    """The file `import gqa` gives when it is not the tools' own gqa.py, else None.

    `python -m gqa` looks in the current folder first, so in a student's
    folder it finds the student's gqa.py; the tools never import that one
    (a student's module runs only in the grader's worker, with --module).
    Found without running it.
    """
    module = sys.modules.get("gqa")
    if module is not None:
        found = getattr(module, "__file__", None)
    else:
        spec = importlib.util.find_spec("gqa")
        found = spec.origin if spec is not None else None
    if not found:                       # none at all: importing the command says so
        return None
    try:
        return None if os.path.samefile(found, OWN_LAB) else found
    except OSError:                     # the tools' own is not there
        return found


def instead(command: str, argv: Sequence[str], lab: str) -> str:
    """The command to run instead, from the same folder: the tools' own gqa.py, and the other
    one given with --module where the command takes it."""
    shown = os.path.relpath(lab)
    if shown.startswith(os.pardir):
        shown = os.path.abspath(lab)
    given = any(a == "--module" or a.startswith("--module=") for a in argv)
    extra = ["--module", shown] if command in TAKE_MODULE and not given else []
    return " ".join(shlex.quote(a) for a in ["python", OWN_LAB, command] + extra + list(argv))


def handout() -> Optional[dict]:
    """The handout these tools were written into (gqa_grader.handout_track), or None."""
    import gqa_grader
    return gqa_grader.handout_track()


def commands() -> dict:
    """The commands offered here: COMMANDS, or in a handout HANDOUT_COMMANDS."""
    return {name: v for name, v in COMMANDS.items() if name in HANDOUT_COMMANDS or not handout()}


def language_of(command: str, argv: Sequence[str]) -> str:
    """The language a command speaks, read from its options before it is imported (its
    module imports gqa): --lang X, else the environment's, else a handout's, else English;
    `report` speaks English without --module, but in a handout.  For the lines printed
    here; the command chooses its own."""
    found = handout()
    if command == "report" and not found and not any(
            a == "--module" or a.startswith("--module=") for a in argv):
        return "en"
    lang = None
    for i, arg in enumerate(argv):
        if arg == "--lang" and i + 1 < len(argv):
            lang = argv[i + 1]
        elif arg.startswith("--lang="):
            lang = arg[len("--lang="):]
    return (lang if lang in i18n.LANGUAGES else
            i18n.default((found or {}).get("lang")))


def say(lang: str, template: str, **fields: str) -> str:
    """template (an N_ message) in lang, its fields filled; the language in use unchanged."""
    saved = i18n.language()
    i18n.use(lang)
    try:
        return i18n._(template).format(**fields)
    finally:
        i18n.use(saved)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run a gqa command line tool; return its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    lang_words = []                             # --lang X before the command: the command's option
    if args[:1] == ["--lang"] or args[:1] and args[0].startswith("--lang="):
        lang_words, args = (args[:2], args[2:]) if args[0] == "--lang" else (args[:1], args[1:])
        if args and args[0] in COMMANDS:
            args, lang_words = args[:1] + lang_words + args[1:], []
    offered = commands()
    if not args or args[0] in ("-h", "--help") or args[0] not in offered:
        lang = language_of("tables", args + lang_words)     # --lang X anywhere, else the environment's
        lines = [f"  {name:<8} {say(lang, doc)}" for name, (_module, doc) in offered.items()]
        print(say(lang, N_("usage: python -m gqa COMMAND [options]")) + "\n\n" + say(lang, N_("commands:"))
              + "\n" + "\n".join(lines) + "\n\n" + say(lang, N_("'python -m gqa COMMAND --help' describes "
                                                              "a command's options.")),
              file=sys.stdout if args[:1] in (["-h"], ["--help"]) else sys.stderr)
        if args and args[0] not in ("-h", "--help"):
            import difflib                   # a misspelt command alone needs it
            near = difflib.get_close_matches(args[0], list(offered), n=1, cutoff=0.6)
            if args[0] in COMMANDS:          # in a handout: one of the project's, not the handout's
                said = say(lang, N_("{command} is a command of the project's tools, not of this handout's, "
                                    "which has: {commands}"), command=args[0], commands=", ".join(offered))
            elif near:
                said = say(lang, N_("unknown command {command}; did you mean {name}?"), command=repr(args[0]),
                           name=near[0])
            else:
                said = say(lang, N_("unknown command {command}"), command=repr(args[0]))
            print("gqa: " + said, file=sys.stderr)
        return 0 if args[:1] in (["-h"], ["--help"]) else 2
    values = list(i18n.lang_values(args[1:]))
    meant = i18n.meant_lang(values[-1]) if values and values[-1] not in i18n.LANGUAGES else None
    if meant:                                # --lang kr: said in the language it meant
        print(f"gqa {args[0]}: " + say(meant, N_("--lang {given}: no such language; did you mean --lang {meant}?"),
                                       given=values[-1], meant=meant), file=sys.stderr)
        return 2
    for stream in (sys.stdout, sys.stderr):  # a path the terminal cannot show is escaped, not fatal
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    lab, lang = other_lab(), language_of(args[0], args[1:])
    if lab is not None:
        print(f"gqa {args[0]}: " + say(lang, N_("{lab} is not the tools' own gqa.py, and they do not import "
                                                "another; run instead: {command}"),
                                       lab=lab, command=instead(args[0], args[1:], lab)), file=sys.stderr)
        return 2
    try:
        tool = importlib.import_module(COMMANDS[args[0]][0])
        return tool.main(args[0], args[1:])
    except BrokenPipeError:                  # `gqa tables | head`: the reader left early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # as the Python docs advise
        return 1
    except KeyboardInterrupt:                # Ctrl-C: one line; a report is written whole or not at all
        print(f"gqa {args[0]}: " + say(lang, N_("interrupted")), file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
