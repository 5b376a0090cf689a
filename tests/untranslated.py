"""What a run in another language leaves in English, read from the catalogs' ids: the
English texts of the messages the code asks for (their words between their fields),
found in the run's output, that the language's own catalogs do not write themselves
(a name they keep: MHA, Adam, GitHub Classroom).  Not from letters: German is written
in Latin letters, and none of its words is a message id's.

The languages a test loops over come from the registry too (others()): a language
added to gqa_grader.language.i18n.REGISTRY is checked by every such test."""

from __future__ import annotations

import functools
import glob
import os
import re

from gqa_grader.language import catalogs, i18n
from gqa_grader.steps import tracks
from tests.helpers import ROOT


def others():
    """The registry's languages but English, the message ids' own: what a test of the
    translations loops over."""
    return tuple(code for code in i18n.LANGUAGES if code != "en")


@functools.lru_cache(maxsize=None)
def used_ids():
    """(msgid, plural) of every message the grader and the tools ask for: their code's _()
    and ngettext() texts (gqa_grader's, then gqa_tools': a student's report and tables),
    and the step summaries and reasons the grader translates as it prints."""
    ids = catalogs.messages(sorted(glob.glob(os.path.join(ROOT, "gqa_grader", "**", "*.py"), recursive=True))
                            + sorted(glob.glob(os.path.join(ROOT, "gqa_tools", "**", "*.py"), recursive=True)))
    for st in tracks.ALL_STEPS:
        for text in (st.summary, st.why):
            if text and (text, None) not in ids:
                ids.append((text, None))
    return tuple(ids)


def english_chunks():
    """The English of every message the grader asks for: the runs of two words or more
    between its fields that hold no code."""
    english = []
    for msgid, plural in used_ids():
        for text in (msgid, plural or ""):
            for chunk in re.split(r"\{[^}]*\}", text):
                words = re.findall(r"[A-Za-z]{3,}", chunk)
                if len(words) >= 2 and not re.search(r"[(=\[]|\w\(|--|\bg\b|MHA|TypeError|GQAError|%", chunk):
                    english.append(chunk.strip())
    return english


_FIELD = re.compile(r"\{[^}]*\}|%\(\w+\)[a-z]|%[a-z]")
_EDGES = " \n,;:.()[]*`'\"—–-|/"
# Code in a text: an option, a path or a dotted or snake_case name, a hyphenated word.
_CODE = re.compile(r"--[\w-]+|\S*[_/.]\S*|\b\w+-\w+\b")


@functools.lru_cache(maxsize=None)
def fragments():
    """The English of the message ids, piece by piece: each id's text between its fields,
    its ends' spaces and marks taken off, where it has a word of three letters; its
    single words apart (a name of a column, "heads"), to be found as words."""
    found = set()
    for msgid, plural in used_ids():
        for text in (msgid, plural or ""):
            for piece in _FIELD.split(text):
                piece = piece.strip(_EDGES)
                if re.search(r"[A-Za-z]{3,}", piece):
                    found.add(piece)
    return tuple(sorted(found))


@functools.lru_cache(maxsize=None)
def written_by(lang):
    """Everything lang's catalogs write: the English they keep stands in it."""
    said = []
    for code, _domain, po, _mo in catalogs.catalogs():
        if code == lang:
            with open(po, encoding="utf-8") as f:
                said += [form for entry in catalogs.read_po(f.read())[1:] for form in entry["msgstr"]]
    return "\n".join(said)


def _found(piece, text, code_free):
    """Whether piece stands in text: a phrase as it is written, a single word as a word of
    code_free (text without its code)."""
    if " " in piece:
        return piece in text
    return re.search(rf"(?<![\w-]){re.escape(piece)}(?![\w-])", code_free) is not None


def untranslated(text, lang=None):
    """The message ids' English left in text, a run in lang: the fragments found in it,
    but those lang's catalogs write too (lang None: every fragment counts)."""
    code_free = _CODE.sub(" ", text)
    kept = written_by(lang) if lang else ""
    kept_free = _CODE.sub(" ", kept)
    return sorted(piece for piece in fragments()
                  if _found(piece, text, code_free) and not (kept and _found(piece, kept, kept_free)))
