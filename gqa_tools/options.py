"""gqa_tools.options: what the commands share on their command line.

An option read before argparse reads it (given: --lang, --module, --jobs); the most
processes a command is given (MAX_JOBS); an int option for each field of a record of
defaults, within its limits (add_int_options, int_options); and a progress line on
stderr (progress_line).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Callable, Iterator, NamedTuple, Optional, Sequence

from gqa_grader.language.i18n import _

MAX_JOBS = 64               # the most processes a command is given (--jobs)


def given(argv: Sequence[str], option: str, parser: argparse.ArgumentParser) -> Optional[str]:
    """The value argv gives option as parser would read it, before it does: --lang ja,
    --lang=ja, or an abbreviation that starts none of parser's other options (--mod PATH);
    the last one counts; None when argv does not give it."""
    longs = [name for name in parser._option_string_actions if name.startswith("--")]
    value = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        name, equals, rest = arg.partition("=")
        if name == option or (name.startswith("--") and [o for o in longs if o.startswith(name)] == [option]):
            value = rest if equals else (argv[i + 1] if i + 1 < len(argv) else "")
    return value


# ---------------------------------------------------------------------------
# Integer options: --some-name for each field of a record of defaults.
# ---------------------------------------------------------------------------


def add_int_options(parser: argparse.ArgumentParser, defaults: NamedTuple, limits: dict,
                    note=lambda name: "", what: Optional[Callable[[str], str]] = None) -> None:
    """Add an int option --some-name for each field some_name of defaults, None when not given;
    its help the default, the limit, and what(name) (translated) or else note(name) (English)."""
    for name, value in defaults._asdict().items():
        text = (_("(default {default}, at most {most}; {what})").format(
                    default=value, most=f"{limits[name]:,}", what=what(name)) if what else
                f"(default {value}, at most {limits[name]:,}{note(name)})")
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=None, help=text)


def int_options(parser: argparse.ArgumentParser, args: argparse.Namespace, base: NamedTuple,
                limits: dict):
    """Return base with the options given on the command line.

    Each must be positive (a seed at least 0) and at most its limit: past
    the limits a pure-Python run could only take hours or run out of memory.
    """
    values = {name: getattr(base, name) if getattr(args, name) is None else getattr(args, name)
              for name in base._fields}
    for name, value in values.items():
        option = f"--{name.replace('_', '-')}"
        if value < (0 if name == "seed" else 1):
            parser.error((_("{option} must be at least 0; got {value}") if name == "seed" else
                          _("{option} must be positive; got {value}")).format(option=option, value=value))
        if value > limits[name]:
            parser.error((_("{option} must be at most {most}; got {value}") if value < 10 ** 30 else
                          _("{option} must be at most {most}; got a larger number")).format(
                              option=option, most=f"{limits[name]:,}", value=value))
    return type(base)(**values)


@contextlib.contextmanager
def progress_line(tool: str) -> Iterator[Callable[[str], None]]:
    """Yield a function that shows progress on stderr as "tool: text ...".

    On a terminal each message overwrites the last and the line is cleared
    at the end; otherwise each is a line of its own, so a log keeps them.
    """
    tty = sys.stderr.isatty()

    def show(text: str) -> None:
        print(f"\r{tool}: {text} ...", end="" if tty else "\n", file=sys.stderr, flush=True)

    try:
        yield show
    finally:
        if tty:
            print("\r" + " " * 60 + "\r", end="", file=sys.stderr, flush=True)
