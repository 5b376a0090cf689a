"""gqa_tools.language: the language a student reads, --lang, else the environment's, else English.

A command line's language (chosen_lang), the language when none is named, a handout's
first (default_lang), and every message in it, argparse's own words too (speaking).
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Iterator, Sequence

from gqa_grader.language import i18n
from gqa_grader.language.i18n import _
from gqa_tools.options import given
from gqa_tools.referee import handout


def chosen_lang(argv: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """The language of a command line: its --lang when that is one of ours, else the
    environment's (i18n.from_environment), else a handout's (as its self-check chooses),
    else English."""
    lang = given(argv, "--lang", parser)
    return lang if lang in i18n.LANGUAGES else default_lang()


def default_lang() -> str:
    """The language when no --lang names one (i18n.default): a Japanese or Korean handout's,
    else the environment's, else the handout's, else English."""
    found = handout()
    return i18n.default(found.lang if found else None)


def default_said() -> str:
    """--help's words for default_lang(): a handout's not made in English, else the environment's."""
    found = handout()
    return i18n.default_said(found.lang if found else None)


@contextlib.contextmanager
def speaking(lang: str) -> Iterator[None]:
    """Within the block, every message in lang, argparse's own words ("usage: ", "error: ")
    too; the language in use before, after it (a command run in-process leaves none behind)."""
    saved, saved_argparse = i18n.language(), argparse._
    i18n.use(lang)
    argparse._ = _
    try:
        with i18n.help_wrapped():
            yield
    finally:
        argparse._ = saved_argparse
        i18n.use(saved)
