"""The language a student reads: the first room, importing nothing of the referee.

    linebreak  where a line may break, in any script: the Unicode line breaking
               algorithm's classes and rules (UAX #14)
    i18n       the languages, one line each in its registry: _() and ngettext() over
               gettext's catalogs (gqa_grader/locale/), chosen by --lang or the
               environment; display width; lines filled
    catalogs   the catalogs' .po read and compiled to .mo (python -m
               gqa_grader.language.catalogs); the message ids in the code
    prose      a starter's docstrings and comments in the student's language
    starter    the starter, built from gqa.py's text

Each imports only those above it and the standard library.
"""
