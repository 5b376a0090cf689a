"""The languages a student reads: English, and those of the registry (REGISTRY):
Japanese and Korean.

Every sentence a student meets is a template with named fields, its English text
the message id: _("{done} of {total} steps done").format(done=5, total=25).  The
translations are the standard library's gettext catalogs, in the usual layout
beside this file: locale/<lang>/LC_MESSAGES/gqa.po, the source, and gqa.mo, what
gettext reads, compiled from it by

    python -m gqa_grader.language.catalogs        (--check: exit 1 if a .mo is not its .po's)

A count's sentence takes the form its catalog's header (Plural-Forms) chooses for
the number, as gettext reads it: ngettext(singular, plural, n).

A language is its catalogs and one line of REGISTRY: its code, its name in its own
words, what else a student may type for it.  Nothing else names the languages: --lang's
choices, --help's list (listed()) and the first line's (how_to_change()) come from it.

English needs no catalog.  The language is --lang's, else the environment's as
gettext reads it (the first of LANGUAGE, LC_ALL, LC_MESSAGES and LANG that is set:
ja_JP.UTF-8 is Japanese), else English.  locale/GLOSSARY.md holds the words the
catalogs use, taken from the lab's handout (Japanese) and its reading (Korean).

A terminal gives a Japanese or Korean character two columns: width() and ljust()
count them so, for the lines that line up; wrapped() fills lines by them, broken
where the Unicode line breaking algorithm lets them break (gqa_grader.language.linebreak).
"""

import argparse
import contextlib
import gettext
import functools
import os
import unicodedata
from typing import NamedTuple

from .linebreak import core, pieces

LOCALE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "locale")     # gqa_grader/locale
DOMAIN = "gqa"
ENVIRONMENT = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


class Language(NamedTuple):
    """A language a student reads: its code (--lang's value, and its catalogs' folder
    locale/<code>/), its name in its own words, what else a student may type for it
    (--lang kr is refused naming ko), the folder of its catalogs, and the encoding its
    students' editors save in when they do not save UTF-8 (Windows' own for it: a module
    that is not UTF-8 is read in the first of these that reads it, seal.runnable)."""
    code: str
    name: str
    typed: tuple = ()
    locale: str = LOCALE
    legacy: str = "cp1252"


# The languages, one line each; English, the message ids' own, first.  A new language is
# its catalogs (locale/<code>/LC_MESSAGES/gqa.po and starter.po) and its line here.
REGISTRY = [
    Language("en", "English", ("eng", "english")),
    Language("ja", "日本語", ("jp", "jpn", "japanese"), legacy="cp932"),     # Shift_JIS, as Windows saves it
    Language("ko", "한국어", ("kr", "kor", "korean"), legacy="cp949"),       # EUC-KR, as Windows saves it
]
LANGUAGES = [language.code for language in REGISTRY]       # the codes, in the registry's order


def register(language):
    """Add language (a Language) to the languages a student may choose, or replace the one
    of its code: --lang, the environment and every list of the languages know it from now on."""
    forget(language.code)
    REGISTRY.append(language)
    LANGUAGES.append(language.code)


def forget(code):
    """Take the language of code out of the registry (a test's language, once it is done)."""
    REGISTRY[:] = [language for language in REGISTRY if language.code != code]
    LANGUAGES[:] = [language.code for language in REGISTRY]


def registered(code):
    """The Language of code."""
    return next(language for language in REGISTRY if language.code == code)


def translation(lang, domain=DOMAIN):
    """lang's catalog of domain, as gettext reads it (its Plural-Forms too); English's and
    a missing one's: the message ids themselves."""
    if lang == "en":
        return gettext.NullTranslations()
    return gettext.translation(domain, registered(lang).locale, languages=[lang], fallback=True)


def listed():
    """The languages as --help lists them: "en, ja (日本語) or ko (한국어)", each but English
    with its name, the list worded as the language in use words one."""
    items = [code if code == "en" else f"{code} ({registered(code).name})" for code in LANGUAGES]
    text = items[0] if len(items) < 3 else _joined(items[:-1], _("{first}, {next}"))
    return text if len(items) < 2 else _("{first} or {last}").format(first=text, last=items[-1])


_current = {"lang": "en", "catalog": gettext.NullTranslations()}


def from_environment(environ=None):
    """The language the environment asks for, as gettext reads it: the first of
    LANGUAGE, LC_ALL, LC_MESSAGES and LANG that is set (LANGUAGE may list several,
    ja:en); None where none is set or none of its languages is one of ours (C, fr_FR):
    the caller's default then, a handout's language or English."""
    environ = os.environ if environ is None else environ
    for variable in ENVIRONMENT:
        value = environ.get(variable)
        if not value:
            continue
        for item in value.split(":"):
            code = item.split(".")[0].split("@")[0].split("_")[0].split("-")[0].lower()
            if code in LANGUAGES:
                return code
        return None
    return None


def default(handout=None, environ=None):
    """The language when no --lang names one.  A handout made in Japanese or Korean speaks
    it, whatever the terminal's locale (many a Japanese student's terminal says en_US);
    else the environment's (from_environment), else the handout's, else English."""
    if handout in LANGUAGES and handout != "en":
        return handout
    return from_environment(environ) or handout or "en"


def default_said(handout=None):
    """--help's words for the language when no --lang names one (default()): a handout's
    in a handout made in another language than English, else the environment's."""
    if handout in LANGUAGES and handout != "en":
        return _("default: this handout's, {name}").format(name=registered(handout).name)
    return _("default: the environment's (LANGUAGE, LC_ALL, LC_MESSAGES, LANG), else en")


def use(lang):
    """Make lang (one of LANGUAGES: "en", "ja", "ko") the language of every message from now on."""
    if lang not in LANGUAGES:
        raise ValueError(f"use: lang must be one of {', '.join(LANGUAGES)}; got {lang!r}")
    try:
        catalog = gettext.NullTranslations() if lang == "en" else gettext.translation(
            DOMAIN, registered(lang).locale, languages=[lang])
    except OSError:                        # a copy without its catalogs: English, and it says so
        lang, catalog = "en", gettext.NullTranslations()
    _current.update(lang=lang, catalog=catalog)


def language():
    return _current["lang"]


def decoded(data, lang=None):
    """The text of bytes an editor or a spreadsheet saved (a report, a roster, a gradebook):
    UTF-16 with its mark (Excel's "Unicode text", Notepad's "Unicode"), UTF-8 with or
    without one, else the Windows encoding of lang (the language in use) and then the other
    languages' (Excel's CSV in Japan, cp932; in Korea, cp949, which read as cp932 first came
    out as half-width katakana), else Latin-1 through cp1252, which read any bytes: last."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", "replace")
    own = registered(lang or language()).legacy
    for encoding in dict.fromkeys(["utf-8-sig", own] + [entry.legacy for entry in REGISTRY]):
        if encoding != "cp1252":
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                pass
    return data.decode("latin-1")


def lang_values(argv):
    """Each value argv gives --lang, in order, read as argparse would: --lang ja,
    --lang=ja, an abbreviation such as --la ja; none after "--"."""
    for i, arg in enumerate(argv):
        if arg == "--":
            return
        name, equals, value = arg.partition("=")
        if len(name) >= 4 and "--lang".startswith(name):
            yield value if equals else (argv[i + 1] if i + 1 < len(argv) else "")


def meant_lang(value):
    """The language of ours a --lang value that is none of ours means (kr: ko, jp: ja,
    ko_KR.UTF-8: ko), or None."""
    text = value.strip().lower().replace("-", "_")
    typed = {said: language.code for language in REGISTRY for said in language.typed + (language.name.lower(),)}
    return typed.get(text) or next((lang for lang in LANGUAGES if text.split("_")[0].split(".")[0] == lang
                                    and text != lang), None)


def _(message):
    """message in the language in use (its English text where the catalog lacks it)."""
    return _current["catalog"].gettext(message)


def ngettext(singular, plural, n):
    return _current["catalog"].ngettext(singular, plural, n)


def sentences(items):
    """Sentences one after another, as the language writes them (a space in English and
    Korean, none in Japanese)."""
    return _joined(items, _("{first} {next}"))


def clauses(items):
    """Clauses of one sentence, as the language parts them ("; " in English)."""
    return _joined(items, _("{first}; {next}"))


def _joined(items, template):
    """items one after another, each pair as template ({first}, {next}) joins them."""
    items = list(items)
    text = items[0] if items else ""
    for item in items[1:]:
        text = template.format(first=text, next=item)
    return text


def N_(message):
    """message, untranslated: marks a module-level text as a message id, translated
    where it is used, _(TEXT), once the language is known."""
    return message


def lang_option():
    """' --lang CODE' for a command the student is told to run, so that it speaks as this
    one does; "" in English."""
    return "" if language() == "en" else f" --lang {language()}"


def how_to_change():
    """The first line's note of the language: its name, and the options for the others."""
    others = ", ".join(f"--lang {code} ({registered(code).name})" for code in LANGUAGES if code != language())
    return _("shown in {language}; others: {others}").format(language=registered(language()).name, others=others)


# ---------------------------------------------------------------------------
# Text that lines up: two columns for a wide character.
# ---------------------------------------------------------------------------

def width(text):
    """The columns text takes in a terminal: 2 for a wide or full-width character
    (Japanese, Korean), 0 for a combining one, 1 for the rest."""
    if text.isascii():
        return len(text)
    return sum(map(_columns, text))


@functools.lru_cache(maxsize=4096)
def _columns(c):
    """The columns one character takes (width's rule)."""
    return 0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1


def ljust(text, columns):
    """text padded with spaces to columns display columns (never cut)."""
    return text + " " * max(0, columns - width(text))


def wrapped(text, columns):
    """text's words in lines of at most columns display columns (a longer piece alone on
    its line, a Japanese stop past the end: linebreak.core), broken where linebreak lets
    a line end: at a space, between two Japanese characters."""
    lines, line = [], ""
    for piece in pieces(" ".join(text.split())):
        if line and width(line + core(piece)) > columns:
            lines.append(line.rstrip())
            line = ""
        line += piece
    return lines + ([line.rstrip()] if line.strip() else [])


_SPLIT_HELP, _FILL_HELP = argparse.HelpFormatter._split_lines, argparse.HelpFormatter._fill_text


def _split_help(formatter, text, columns):
    """argparse's help split in lines by display width: textwrap breaks only at spaces
    and counts a wide character as one column, so Japanese ran on past the terminal."""
    return _SPLIT_HELP(formatter, text, columns) if text.isascii() else wrapped(text, columns)


def _fill_help(formatter, text, columns, indent):
    """A parser's description, filled as _split_help splits an option's help."""
    return (_FILL_HELP(formatter, text, columns, indent) if text.isascii()
            else "\n".join(indent + line for line in wrapped(text, columns - len(indent))))


@contextlib.contextmanager
def help_wrapped():
    """Within the block, argparse's --help wraps Japanese and Korean to the terminal."""
    saved = argparse.HelpFormatter._split_lines, argparse.HelpFormatter._fill_text
    argparse.HelpFormatter._split_lines, argparse.HelpFormatter._fill_text = _split_help, _fill_help
    try:
        yield
    finally:
        argparse.HelpFormatter._split_lines, argparse.HelpFormatter._fill_text = saved
