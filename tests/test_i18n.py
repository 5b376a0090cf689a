"""The students' languages: the catalogs hold every message the code asks for, each
translation keeps its template's named fields, each .mo is its .po compiled, the
environment chooses the language as gettext does, and wide characters line up."""

from __future__ import annotations

import contextlib
import gettext
import io
import os
import re
import string
import unittest
from unittest import mock

from gqa_grader.language import catalogs, i18n, prose
from gqa_grader import cli
from gqa_grader.steps import tracks
from tests.helpers import ROOT, heavy, run_gqa, run_grader
from tests.untranslated import others, untranslated, used_ids


def plural_forms(entries):
    """(how many forms, the form for a number) as a catalog's header says (Plural-Forms:
    nplurals=N; plural=EXPR;), read here from the .po: EXPR is C, evaluated by gettext's c2py."""
    header = dict(line.split(": ", 1) for line in entries[0]["msgstr"][0].splitlines() if ": " in line)
    count, expression = re.fullmatch(r"nplurals=(\d+); *plural=(.+?);?", header["Plural-Forms"].strip()).groups()
    return int(count), gettext.c2py(expression)


def fields(template):
    return sorted(name for _, name, _, _ in string.Formatter().parse(template) if name is not None)


def read(lang, domain=i18n.DOMAIN):
    _lang, _domain, po, mo = next(c for c in catalogs.catalogs() if c[:2] == (lang, domain))
    with open(po, encoding="utf-8") as f:
        entries = catalogs.read_po(f.read())
    return po, mo, entries


@heavy
class Catalogs(unittest.TestCase):

    def test_every_message_the_code_asks_for_is_in_each_catalog(self):
        ids = used_ids()
        self.assertGreater(len(ids), 50)
        for lang in i18n.LANGUAGES[1:]:
            _po, _mo, entries = read(lang)
            held = {(e["msgid"], e.get("msgid_plural")) for e in entries}
            with self.subTest(lang=lang):
                self.assertEqual([m for m in ids if m not in held], [])

    def test_each_translation_keeps_its_fields_and_is_neither_empty_nor_fuzzy(self):
        for lang in i18n.LANGUAGES[1:]:
            _po, _mo, entries = read(lang)
            self.assertEqual(entries[0]["msgid"], "")                 # the header
            self.assertIn("charset=UTF-8", entries[0]["msgstr"][0])
            for e in entries[1:]:
                with self.subTest(lang=lang, msgid=e["msgid"]):
                    self.assertNotIn("fuzzy", e["flags"])
                    self.assertEqual(len(e["msgstr"]), plural_forms(entries)[0] if "msgid_plural" in e else 1)
                    self.assertTrue(e["msgstr"][0].strip())
                    if re.search(r"[A-Za-z]{2,}", re.sub(r"\{[^}]*\}", "", e["msgid"])):   # words: translated
                        self.assertNotEqual(e["msgstr"][0], e["msgid"])
                    self.assertEqual(fields(e["msgstr"][0]), fields(e["msgid"]))
                    if "msgid_plural" in e:
                        self.assertEqual(fields(e["msgid_plural"]), fields(e["msgid"]))
                        for form in e["msgstr"]:
                            self.assertTrue(form.strip())
                            self.assertEqual(fields(form), fields(e["msgid"]))

    def test_no_catalog_holds_a_message_the_code_no_longer_asks_for(self):
        ids = set(used_ids())
        for lang in i18n.LANGUAGES[1:]:
            _po, _mo, entries = read(lang)
            with self.subTest(lang=lang):
                self.assertEqual([e["msgid"] for e in entries[1:]
                                  if (e["msgid"], e.get("msgid_plural")) not in ids], [])

    def test_each_mo_is_its_po_compiled_and_gettext_reads_it_so(self):
        for lang in i18n.LANGUAGES[1:]:
            _po, mo, entries = read(lang)
            with open(mo, "rb") as f:
                data = f.read()
            with self.subTest(lang=lang):
                self.assertEqual(data, catalogs.compile_mo(entries))
                # The standard library's reader, not ours, on what we wrote.
                read_back = gettext.GNUTranslations(io.BytesIO(data))
                _count, form_of = plural_forms(entries)
                for e in entries[1:]:
                    if "msgid_plural" in e:
                        for n in (0, 1, 2, 5, 7, 11, 21, 101):
                            self.assertEqual(read_back.ngettext(e["msgid"], e["msgid_plural"], n),
                                             e["msgstr"][form_of(n)])
                    else:
                        self.assertEqual(read_back.gettext(e["msgid"]), e["msgstr"][0])

    def test_a_po_file_with_escapes_plurals_and_flags_reads_back(self):
        text = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
                '#, fuzzy\nmsgid "a \\"b\\"\\n"\nmsgstr "x"\n\n'
                'msgid "{n} step"\nmsgid_plural "{n} steps"\nmsgstr[0] "{n} ステップ"\n"だけ"\n')
        entries = catalogs.read_po(text)
        self.assertEqual([e["msgid"] for e in entries], ["", 'a "b"\n', "{n} step"])
        self.assertEqual(entries[1]["flags"], ["fuzzy"])
        self.assertEqual(entries[2]["msgstr"], ["{n} ステップだけ"])
        self.assertEqual(entries[2]["msgid_plural"], "{n} steps")
        with self.assertRaises(ValueError):
            catalogs.read_po('msgid "a"\nmsgtext "b"\n')


def starters():
    """The starters a student can be given: every step, the core track's, and a core
    handout's (its own first and last lines)."""
    from gqa_grader.teacher import handout
    with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
        source = f.read()
    return source, [handout.make_starter(source, handout.given_steps(track), in_handout)
                    for track, in_handout in ((None, False), (list(tracks.TRACKS["core"]), False),
                                              (list(tracks.TRACKS["core"]), True))]


def stub_raises(tree):
    """The raise NotImplementedError("...") nodes of a syntax tree, in order: a stub's."""
    import ast
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
            and getattr(node.exc.func, "id", None) == "NotImplementedError"
            and len(node.exc.args) == 1 and isinstance(node.exc.args[0], ast.Constant)]


def stubs_bare(text):
    """text with every stub's message, and what `python gqa.py` prints, taken out (their
    words are checked on their own)."""
    text = re.sub(r'raise NotImplementedError\((?:\s*"(?:[^"\\]|\\.)*")+\)', "raise NotImplementedError()", text)
    return re.sub(r'print\((?:\s*"(?:[^"\\]|\\.)*")+, file=sys.stderr\)', "print()", text)


def without_docstrings(text):
    """text's syntax tree, as a string, with every docstring and every stub's message
    taken out: its code."""
    import ast
    tree = ast.parse(text)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body[0] = ast.Pass()
    for node in stub_raises(tree):
        node.exc.args[0].value = "a stub's message"
    for node in ast.walk(tree):                                 # what `python gqa.py` prints
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print" and node.args \
                and isinstance(node.args[0], ast.Constant) and "gqa.py" in str(node.args[0].value):
            node.args[0].value = "what python gqa.py prints"
    return ast.dump(tree)


@heavy
class Starter(unittest.TestCase):
    """A starter's prose in Japanese and Korean: every paragraph translated, the code
    and the doctest examples untouched."""

    @classmethod
    def setUpClass(cls):
        cls.source, cls.starters = starters()
        cls.ids = []
        for text in cls.starters:
            cls.ids += [p for p in prose.paragraphs(text) if p not in cls.ids]

    def test_every_paragraph_of_a_starter_is_in_each_catalog_and_no_other(self):
        self.assertGreater(len(self.ids), 100)
        for lang in i18n.LANGUAGES[1:]:
            _po, _mo, entries = read(lang, "starter")
            held = [e["msgid"] for e in entries[1:]]
            with self.subTest(lang=lang):
                self.assertEqual([p for p in self.ids if p not in held], [])
                self.assertEqual([p for p in held if p not in self.ids], [])

    def test_only_the_prose_changes_and_the_names_stay(self):
        names = re.compile(r"[A-Za-z_]\w*\([^)]*\)|--[a-z-]+|\b[A-Za-z]+_\w+")
        def joined(text):                                               # a call wrapped across lines
            return re.sub(r"\s*\n\s*(# )?", " ", text)
        for text in self.starters:
            english_names = sorted(names.findall(joined(stubs_bare(text))))
            for lang in i18n.LANGUAGES[1:]:
                done = prose.translated(text, lang)
                with self.subTest(lang=lang):
                    self.assertEqual(without_docstrings(done), without_docstrings(text))
                    self.assertNotEqual(done, text)
                    missing = [n for n in set(english_names) if n not in joined(stubs_bare(done))]
                    self.assertEqual(missing, [])
                    self.assertLessEqual(max(i18n.width(line) for line in done.splitlines()),
                                         max(i18n.width(line) for line in text.splitlines()))

    def test_a_stubs_message_is_in_the_language_with_its_step_and_name(self):
        # What a student's REPL shows when they call a step not yet written: read from
        # the syntax trees, the English message's step and name kept, its words not.
        import ast
        for text in self.starters:
            english = [r.exc.args[0].value for r in stub_raises(ast.parse(text))]
            self.assertGreater(len(english), 10)
            for lang in i18n.LANGUAGES[1:]:
                done = [r.exc.args[0].value for r in stub_raises(ast.parse(prose.translated(text, lang)))]
                said = i18n.translation(lang, prose.DOMAIN).gettext(prose.STUB_BARE)
                with self.subTest(lang=lang):
                    self.assertNotEqual(said, prose.STUB_BARE)
                    self.assertEqual(len(done), len(english))
                    for before, after in zip(english, done):
                        step, name = before.split(": ")[:2]
                        self.assertTrue(after.startswith(said.format(step=step.split()[1], name=name)), after)
                        if before.count(": ") >= 2:                         # it has a summary
                            self.assertNotIn(before.split(": ", 2)[-1], after)

    def test_a_records_table_keeps_its_names_and_translates_its_words(self):
        # Multiplies, DecodeTraffic, ...: each row "name   description", in the docstring of the
        # step that returns the record; read from the syntax tree, a row whose description has a
        # word that is not one of the record's names is in the language, its names and their
        # order kept.
        import ast
        row = re.compile(r"^(\w+) {2,}(\S.*)$", re.M)
        for lang in i18n.LANGUAGES[1:]:
            done = ast.parse(prose.translated(self.starters[0], lang))
            changed = 0
            for before, after in zip(ast.walk(ast.parse(self.starters[0])), ast.walk(done)):
                if not isinstance(before, (ast.ClassDef, ast.FunctionDef)) or not ast.get_docstring(before):
                    continue
                english, there = row.findall(ast.get_docstring(before)), row.findall(ast.get_docstring(after))
                with self.subTest(lang=lang, record=before.name):
                    self.assertEqual([n for n, _ in there], [n for n, _ in english])
                    names = {n for n, _ in english}
                    for (_, text), (_, new) in zip(english, there):
                        if set(re.findall(r"(?<![\w.])[a-z]{3,}(?![\w(])", text)) - names:
                            self.assertNotEqual(new, text)
                            changed += 1
            self.assertGreater(changed, 10)

    def test_japanese_lines_break_between_words_and_banners_keep_their_width(self):
        # A wrapped paragraph is not broken inside a run of hiragana (あ / らかじめ), leaves
        # no line of a word's last character alone (す。), and a translated banner of a step
        # ends at column 79 as the lab's own do.
        kana = "[\u3041-\u309f]"
        for text in self.starters:
            lines = prose.translated(text, "ja").split("\n")
            for above, below in zip(lines, lines[1:]):
                words = below.strip().lstrip("#").strip()
                with self.subTest(above=above, below=below):
                    self.assertFalse(re.search(kana + "$", above) and re.match(kana, words))
                    self.assertFalse(words and i18n.width(words) <= 4 and re.match(kana + "+。$", words))
            for line in lines:
                if re.match(r"# Step \d+\. \w+: .*[\u3000-\u9fff].* ---+$", line):
                    self.assertLessEqual(i18n.width(line), 79, line)

    def test_a_records_field_that_names_a_record_is_prose(self):
        # "counts  attention_multiplies(...), a Multiplies": its words in the language.
        english = next(line for line in self.source.split("\n") if line.strip().startswith("counts "))
        for lang in i18n.LANGUAGES[1:]:
            lines = prose.translated(self.source, lang).split("\n")
            with self.subTest(lang=lang):
                self.assertNotIn(english, lines)
                self.assertTrue(any(line.startswith(english[:english.index("attention")]) and "Multiplies" in line
                                    for line in lines))

    def test_the_table_of_shapes_is_in_the_language_and_still_lined_up(self):
        # The module docstring's "Shapes:" table: its heading and what each letter counts
        # translated; the letters, the names and the shapes as they were, lined up, but for
        # a shape's word ("[h or g]"), said as the Weights docstring says it.
        import ast
        def table(text):
            doc = ast.get_docstring(ast.parse(text), clean=False).split("\n\n")
            return next(part for part in doc if re.match(r"\S.*\n    h  +\S", part)).split("\n")
        english = table(self.starters[0])
        self.assertTrue(english[0].startswith("Shapes:") and len(english) > 4)
        names = english[1].index(" q ") + 1                     # where the names' column starts
        for lang in i18n.LANGUAGES[1:]:
            rows = table(prose.translated(self.starters[0], lang))
            shape = "[h or g][d_model][d]"
            said = i18n.translation(lang, prose.DOMAIN).gettext(shape)
            with self.subTest(lang=lang):
                self.assertEqual(len(rows), len(english))
                self.assertNotEqual(rows[0], english[0])
                self.assertNotEqual(said, shape)
                self.assertIn(shape, "\n".join(english))
                columns = set()
                for before, after in zip(english[1:], rows[1:]):
                    letter, rest = before[:13], before[names:].replace(shape, said)
                    self.assertTrue(after.startswith(letter) and after.endswith(rest), after)
                    meaning = after[len(letter):len(after) - len(rest)]
                    self.assertNotIn(before[len(letter):names].strip(), meaning)      # the English meaning
                    self.assertTrue(meaning.endswith(" "), after)
                    columns.add(i18n.width(after[:len(after) - len(rest)]))
                self.assertEqual(len(columns), 1, rows)

    def test_an_inline_comments_words_are_in_the_language_and_its_code_kept(self):
        # "MAX_ALLOCATION = 10 ** 8    # floats one call may allocate (800 MB)": the code and
        # the gap as they were, the words after "# " in the language.
        inline = re.compile(r"^(.*\S {2,}# )(.*\b[a-z]{3,} [a-z]{2,}\b.*)$")
        for text in self.starters:
            english = [m.groups() for m in map(inline.match, text.split("\n")) if m and "#" not in m.group(1)[:-2]]
            self.assertGreater(len(english), 5)
            for lang in i18n.LANGUAGES[1:]:
                lines = prose.translated(text, lang).split("\n")
                with self.subTest(lang=lang):
                    for code, words in english:
                        after = [line[len(code):] for line in lines if line.startswith(code)]
                        self.assertEqual(len(after), 1, code)
                        self.assertNotEqual(after[0], words, code)
                        self.assertNotIn(words.strip(), after[0])

    def test_what_python_gqa_py_prints_is_in_the_language_with_its_commands(self):
        import subprocess
        import sys
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            for lang in others():
                word = i18n.translation(lang, prose.DOMAIN).gettext(prose.MAIN_SAYS).split("{")[0].strip()
                path = os.path.join(folder, f"gqa_{lang}.py")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(prose.translated(self.starters[0], lang))
                run = subprocess.run([sys.executable, path], capture_output=True, text=True, encoding="utf-8")
                with self.subTest(lang=lang):
                    self.assertEqual(run.returncode, 2)
                    self.assertIn(word, run.stderr)
                    for command in ("python grader.py --module PATH/gqa.py",
                                    "python -m gqa report --module PATH/gqa.py"):
                        self.assertIn(f"{command} --lang {lang}", run.stderr)
                    self.assertNotIn("not its tools", run.stderr)

    def test_the_doctests_pass_with_the_prose_translated(self):
        # gqa.py itself, its prose in each language: the examples are the lab's, whole.
        import doctest
        import types
        for lang in i18n.LANGUAGES[1:]:
            module = types.ModuleType(f"gqa_{lang}")
            exec(compile(prose.translated(self.source, lang), f"gqa_{lang}.py", "exec"), module.__dict__)
            with self.subTest(lang=lang):
                result = doctest.testmod(module, verbose=False, report=False)
                self.assertGreater(result.attempted, 10)
                self.assertEqual(result.failed, 0)


class Choosing(unittest.TestCase):

    def tearDown(self):
        i18n.use("en")

    def test_the_environment_chooses_as_gettext_reads_it(self):
        for environ, lang in (({}, None), ({"LANG": "ja_JP.UTF-8"}, "ja"), ({"LANG": "ko_KR.UTF-8"}, "ko"),
                              ({"LANG": "fr_FR.UTF-8"}, None), ({"LANGUAGE": "fr:ko", "LANG": "ja_JP"}, "ko"),
                              ({"LC_ALL": "C", "LANG": "ja_JP.UTF-8"}, None),     # the first one set decides
                              ({"LC_MESSAGES": "ja_JP.eucJP", "LANG": "ko_KR"}, "ja"),
                              ({"LANG": "en_US.UTF-8"}, "en"),
                              ({"LANGUAGE": "", "LANG": "ja"}, "ja"), ({"LANG": "C.UTF-8"}, None)):
            with self.subTest(environ=environ):
                self.assertEqual(i18n.from_environment(environ), lang)

    def test_gettext_finds_the_same_catalog(self):
        # gettext.find reads the same variables; where it finds one of ours, it is the one we chose.
        for environ in ({"LANG": "ja_JP.UTF-8"}, {"LANGUAGE": "fr:ko", "LANG": "ja_JP"}, {"LANG": "fr_FR"}):
            saved = {k: os.environ.get(k) for k in i18n.ENVIRONMENT}
            try:
                for k in i18n.ENVIRONMENT:
                    os.environ.pop(k, None)
                os.environ.update(environ)
                found = gettext.find(i18n.DOMAIN, i18n.LOCALE)
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            with self.subTest(environ=environ):
                lang = i18n.from_environment(environ)
                expected = None if lang in ("en", None) else os.path.join(i18n.LOCALE, lang, "LC_MESSAGES", "gqa.mo")
                self.assertEqual(found, expected)

    def test_lang_overrides_the_environment_and_an_unknown_one_is_a_usage_error(self):
        args = cli.parse_args(["--lang", "ko", "--steps", "1"])
        self.assertEqual((args.lang, i18n.language()), ("ko", "ko"))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit):
            cli.parse_args(["--lang", "fr"])
        self.assertIn("--lang", err.getvalue())

    def test_use_refuses_a_language_it_has_not(self):
        with self.assertRaisesRegex(ValueError, r"use: lang must be one of en, ja, ko; got 'fr'"):
            i18n.use("fr")


class LiningUp(unittest.TestCase):

    def test_wide_characters_take_two_columns(self):
        self.assertEqual(i18n.width("abc"), 3)
        self.assertEqual(i18n.width("ケース"), 6)
        self.assertEqual(i18n.width("케이스"), 6)
        self.assertEqual(i18n.width("ｱ"), 1)                  # half-width katakana
        self.assertEqual(i18n.width("e\u0301"), 1)            # a combining accent takes none
        self.assertEqual(i18n.ljust("未着手", 13), "未着手" + " " * 7)
        self.assertEqual(i18n.ljust("abcdef", 3), "abcdef")   # never cut

    def test_the_step_lines_line_up_in_every_language(self):
        from gqa_grader.verdict import printing
        from gqa_grader.verdict.results import StepResult
        results = [StepResult(step=n, name=name, part="lesson", status=status, cases=c, cases_passed=p,
                              summary=summary, public=(p, c), hidden=(0, 0), stub=True)
                   for n, name, status, c, p, summary in (
                       (1, "valid_g", "passed", 26, 26, tracks.BY_NAME["valid_g"].summary),
                       (2, "method_name", "failed", 60, 3, tracks.BY_NAME["method_name"].summary),
                       (3, "kv_head", "not started", 60, 0, tracks.BY_NAME["kv_head"].summary))]
        args = cli.parse_args(["--steps", "1-3"])
        for lang in i18n.LANGUAGES:
            i18n.use(lang)
            out = io.StringIO()
            printing.print_report(results, args, out)
            lines = [line for line in out.getvalue().splitlines() if line.startswith("  ")
                     and not line.startswith("   ")]
            with self.subTest(lang=lang):
                self.assertEqual(len(lines), 3)
                starts = {i18n.width(line[:line.index(r.summary if lang == "en" else i18n._(r.summary))])
                          for line, r in zip(lines, results)}
                self.assertEqual(len(starts), 1, out.getvalue())     # every summary in one column
        i18n.use("en")


@heavy
class Speaking(unittest.TestCase):
    """A run in Japanese or Korean prints none of the English texts it translates."""

    def test_the_grader_s_own_lines_carry_no_english_sentence(self):
        from gqa_grader.verdict import printing
        from gqa_grader.verdict.results import StepResult, step_notes
        results = [StepResult(step=20, name="count_multiplies", part="lesson", status="failed", cases=10,
                              cases_passed=4, summary=tracks.BY_NAME["count_multiplies"].summary,
                              public=(4, 10), hidden=(0, 0), message="", case=3, show=None,
                              advice=("a refusal's wording",), stub=False, needs=()),
                   StepResult(step=22, name="decode_step", part="lesson", status="not started", cases=10,
                              cases_passed=0, summary=tracks.BY_NAME["decode_step"].summary,
                              public=(0, 10), hidden=(0, 0), message="", case=None, show=None,
                              advice=(), stub=True, needs=({"step": 21, "name": "KVCache"},))]
        results = [r._replace(notes=step_notes(r)) for r in results]
        for lang in i18n.LANGUAGES:
            args = cli.parse_args(["--steps", "20,22", "--lang", lang])
            results = [r._replace(notes=step_notes(r)) for r in results]
            out = io.StringIO()
            printing.print_report(results, args, out)
            out.write(printing.progress(results) + "\n" + printing.summary(results, args) + "\n")
            out.write(cli._what_is_graded(args) + "\n")
            text = out.getvalue()
            with self.subTest(lang=lang):
                if lang == "en":
                    self.assertGreater(len(untranslated(text)), 20)             # the check can find English
                else:
                    self.assertEqual(untranslated(text, lang), [], text)
        i18n.use("en")


class Documents(unittest.TestCase):
    """Gradescope's and GitHub Classroom's results, which students read there: in the
    language the autograder was made in (it carries --lang)."""

    def tearDown(self):
        i18n.use("en")

    def test_a_gradescope_and_a_classroom_result_carry_no_english_sentence(self):
        import argparse
        from gqa_grader.verdict import documents
        from gqa_grader.verdict.results import scored
        from gqa_grader.verdict.results import StepResult

        def step_result(step, name, status, case=None, public=None, hidden=None):
            return StepResult(step, name, "lesson", tracks.BY_NAME[name].summary, status, 23,
                              23 if status == "passed" else 20, public, hidden, message="", case=case)
        args = argparse.Namespace(seed=9, cases=10, timeout=5.0, hidden_visibility="after_due_date", weight_map={})
        for lang in i18n.LANGUAGES:
            i18n.use(lang)
            results = scored([step_result(3, "kv_head", "passed", public=[13, 13], hidden=[10, 10]),
                              step_result(4, "group_heads", "failed", case=15, public=[13, 13], hidden=[9, 10]),
                              step_result(5, "fold_kv_mean", "failed", case=2, public=[12, 13], hidden=[8, 10]),
                              step_result(6, "repeat_kv", "not started", public=[0, 13], hidden=[0, 10])],
                             {}, 10)
            tests = documents.gradescope(results, args)["tests"] + documents.classroom_result(results, args)["tests"]
            said = "\n".join(t["name"] + "\n" + (t.get("output") or t.get("message") or "") for t in tests)
            with self.subTest(lang=lang):
                if lang == "en":
                    self.assertIn("hidden cases passed", untranslated(said))      # the check can find English
                else:
                    self.assertEqual(untranslated(said, lang), [], said)


class Helping(unittest.TestCase):
    """`python -m gqa --help` and `report --help` in the language asked for (a student
    reads them before any report is written)."""

    def test_the_commands_and_the_reports_options_are_listed_in_the_language(self):
        from tests.helpers import run_gqa
        for lang in others():
            runs = [run_gqa("--help", "--lang", lang), run_gqa("report", "--help", "--lang", lang),
                    run_gqa("report", "--lang", lang), run_gqa("nope", "--lang", lang),
                    run_gqa("uptrain", "--help", "--lang", lang)]
            with self.subTest(lang=lang):
                self.assertEqual([r[0] for r in runs], [0, 0, 2, 2, 0])
                said = "".join(r[1] + r[2] for r in runs)
                self.assertEqual(untranslated(said, lang), [], said)
        status, out, _err = run_gqa("report", "--help")
        self.assertIn("Write report.md: the lab's tables", " ".join(out.split()))     # English by default
        i18n.use("en")


@heavy
class Uptraining(unittest.TestCase):
    """What `python -m gqa uptrain` prints, in Japanese and Korean: the committed record's
    result rendered (its numbers are report.md's section 8)."""

    def tearDown(self):
        i18n.use("en")

    def test_the_rendered_lab_carries_no_english_sentence(self):
        import json
        from gqa_tools.uptraining.printing import render
        with open(os.path.join(ROOT, "report-training.json"), encoding="utf-8") as f:
            result = json.load(f)["sumprod"]["result"]
        i18n.use("en")
        self.assertIn("Pre-trained MHA (the frozen baseline", untranslated(render(result)))    # the check can fail
        # The default recipe's equal-cache part too (the committed quick record trains none):
        # its models' names as the experiment writes them, each row a seed's counts.
        import copy
        from gqa_tools.uptraining import experiment
        from gqa_tools.uptraining.recipe import Recipe
        rows, _note = experiment.same_cache_models(Recipe())
        with_rows = copy.deepcopy(result)
        for t in with_rows["tasks"].values():
            correct = t["pretrained"]["correct"]
            t["same_cache"] = [{"model": row[0], "cache_per_token": 8, "parameters": 1000, "d_ff": 6,
                                "correct": [max(0, c - k) for c in correct]} for k, row in enumerate(rows)]
        for lang in others():
            i18n.use(lang)
            for shown in (result, with_rows):
                text = render(shown)
                with self.subTest(lang=lang, equal_cache=shown is with_rows):
                    self.assertEqual(untranslated(text, lang), [], text)

    def test_the_equal_cache_models_names_and_notes_are_read_back_in_the_language(self):
        # Read back by their pattern (sentences.said) from what the experiment writes (f-strings):
        # a name the pattern no longer matches would be left in English here.
        from gqa_tools.uptraining import experiment, sentences
        from gqa_tools.uptraining.recipe import Recipe
        said = []
        for r in (Recipe(), Recipe()._replace(heads=6, head_dim=6), Recipe()._replace(head_dim=3)):
            rows, note = experiment.same_cache_models(r)
            said += [row[0] for row in rows] + ([note] if note else [])
        self.assertEqual(len(said), 9)
        i18n.use("en")
        self.assertEqual([sentences.said(text) for text in said], said)
        self.assertTrue(all(untranslated(text) for text in said))                 # the check can find English
        for lang in others():
            i18n.use(lang)
            for text in said:
                with self.subTest(lang=lang, text=text):
                    self.assertNotEqual(sentences.said(text), text)
                    self.assertEqual(untranslated(sentences.said(text), lang), [])


@heavy
class Tools(unittest.TestCase):
    """python -m gqa config, bench and uptrain's progress in Japanese and Korean: --lang, or
    the environment's language; English stays the default."""

    CONFIG = ("examples/configs/llama-2-70b.json", "--context", "4096", "--batch", "16", "--memory", "80GiB",
              "--weights", "140GB", "--tp", "8", "--hardware", "h100-sxm")
    TINY_BENCH = ("bench", "--quick", "--repeats", "1", "--heads", "2", "--head-dim", "1", "--d-model", "2",
                  "--context", "1")

    def tearDown(self):
        i18n.use("en")

    def runs(self, lang):
        from tests.helpers import run_gqa
        return [run_gqa("config", *self.CONFIG, "--lang", lang),
                run_gqa("config", "examples/configs/gemma-3-12b.json", "--context", "32768", "--lang", lang),
                run_gqa("config", "examples/configs/whisper-large-v3.json", "--lang", lang),
                run_gqa("config", "--help", "--lang", lang),
                run_gqa("config", "examples/configs/llama-2-70b.json", "--memory", "8XB", "--lang", lang),
                run_gqa("config", "no-such-config.json", "--lang", lang),
                run_gqa(*self.TINY_BENCH, "--lang", lang), run_gqa("bench", "--help", "--lang", lang),
                run_gqa("--lang", lang), run_gqa("--lang", lang, "bench", "--help")]

    def test_config_and_bench_print_no_english_sentence(self):
        english = self.runs("en")
        self.assertEqual([r[0] for r in english], [0, 0, 0, 0, 2, 2, 0, 0, 2, 0])
        said = "".join(r[1] + r[2] for r in english)
        self.assertIn("requests that fit", said)                                    # the check can find English
        self.assertGreater(len(untranslated(said)), 50)
        for lang in others():
            runs = self.runs(lang)
            with self.subTest(lang=lang):
                self.assertEqual([r[0] for r in runs], [r[0] for r in english])
                said = "".join(r[1] + r[2] for r in runs)
                self.assertEqual(untranslated(said, lang), [], said)

    def test_the_environment_s_language_is_the_default(self):
        from unittest import mock
        from tests.helpers import run_gqa
        with mock.patch.dict(os.environ, {"LANGUAGE": "", "LC_ALL": "", "LC_MESSAGES": "", "LANG": "ja_JP.UTF-8"}):
            runs = [run_gqa("config", *self.CONFIG), run_gqa(*self.TINY_BENCH), run_gqa()]
        said = "".join(r[1] + r[2] for r in runs)
        self.assertEqual(untranslated(said, "ja"), [], said)
        self.assertIn("トークン", runs[0][1])
        self.assertTrue(runs[2][2].startswith("使い方"), runs[2][2])

    def test_config_json_stays_english_in_every_language(self):
        from tests.helpers import run_gqa
        outs = [run_gqa("config", *self.CONFIG, "--json", "--lang", lang)[1] for lang in i18n.LANGUAGES]
        self.assertEqual(outs[1:], outs[:1] * (len(outs) - 1))
        self.assertIn('"context_from": "given with --context"', outs[0])

    def test_uptrain_s_progress_lines_are_in_the_language(self):
        # The lines a small run of the experiment writes (every kind: same cache or not, in
        # processes or not), replayed through the command's own progress line.
        import contextlib
        import json
        from unittest import mock
        from gqa_tools.uptraining import command, experiment
        from gqa_tools.uptraining.recipe import QUICK
        lines = []
        small = QUICK._replace(pretrain=2, budgets=(1,), held_out=4, seeds=1)
        for r, jobs in ((small, 1), (small._replace(same_cache=True), 1), (small._replace(seeds=2), 2)):
            experiment.run(r, progress=lines.append, jobs=jobs)
        self.assertTrue(any("same cache" in line for line in lines) and any("processes" in line for line in lines))
        with open(os.path.join(ROOT, "report-training.json"), encoding="utf-8") as f:
            result = json.load(f)["sumprod"]["result"]

        def replay(recipe, progress, jobs):
            for line in lines:
                progress(line)
            return result
        for lang in i18n.LANGUAGES:
            err = io.StringIO()
            with mock.patch.object(command, "run", replay), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(err):
                self.assertEqual(command.main("uptrain", ["--lang", lang, "--jobs", "1"]), 0)
            said = err.getvalue()
            with self.subTest(lang=lang):
                self.assertEqual(said.count("uptrain: "), len(lines))
                if lang == "en":
                    self.assertIn("seed 0, offsets: pre-training", said)
                else:
                    self.assertEqual(untranslated(said, lang), [], said)


@heavy
class Refusing(unittest.TestCase):
    """What the grader says when it will not run, in the student's language too."""

    def test_a_step_not_named_and_a_starter_already_written_are_said_in_the_language(self):
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            open(os.path.join(folder, "gqa.py"), "w").close()
            for lang in others():
                runs = [run_grader("--steps", "kv_heads", "--lang", lang),
                        run_grader("--starter", folder, "--lang", lang)]
                exists = i18n.translation(lang).gettext("{path} exists already; the starter will not overwrite it")
                with self.subTest(lang=lang):
                    self.assertEqual([r.returncode for r in runs], [2, 2])
                    self.assertIn("kv_heads", runs[0].stderr)
                    self.assertIn(exists.format(path=os.path.join(folder, "gqa.py")), runs[1].stderr)
                    said = runs[0].stderr + runs[1].stderr
                    self.assertEqual(untranslated(said, lang), [], said)
            english_run = run_grader("--steps", "kv_heads", "--lang", "en")
            self.assertIn("no step, range or track named kv_heads", english_run.stderr)


# A module with one failure of each kind: a wrong value, a refusal missing, an argument
# changed in place, an exception of its own, a step not started.
KINDS = (("return query_head // group", "return query_head % g"),
         ('    _check_int("valid_g", "h", h, low=1)\n', '    _check_int("valid_g", "h", h, low=None)\n'),
         ("    return _fold_kv_mean(kv, g)\n", "    folded = _fold_kv_mean(kv, g)\n    kv[0][0][0] = 0.0\n    return folded\n"),
         ("def repeat_kv(kv: Sequence[Matrix], h: int) -> Heads:\n",
          "def repeat_kv(kv: Sequence[Matrix], h: int) -> Heads:\n    {}['key']\n"),
         ("def method_name(h: int, g: int) -> str:\n",
          "def method_name(h: int, g: int) -> str:\n    raise NotImplementedError\n"))


@heavy
class GradedRun(unittest.TestCase):
    """A whole graded run in Japanese and in Korean, of a module with a failure of
    every kind: none of the English texts the grader translates is left in it."""

    def test_a_run_with_every_kind_of_failure_prints_no_english_sentence(self):
        import tempfile
        with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
            source = f.read()
        for old, new in KINDS:
            self.assertEqual(source.count(old), 1, old)
            source = source.replace(old, new)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            for lang in others():
                run = run_grader("--module", path, "--steps", "1-7", "--seed", "5", "--lang", lang)
                with self.subTest(lang=lang):
                    self.assertEqual(run.returncode, 1, run.stderr)
                    self.assertEqual(run.stdout.count("FAIL"), 4, run.stdout)     # steps 1, 3, 5 and 6; 2 not started
                    self.assertEqual(untranslated(run.stdout, lang), [], run.stdout)




class TheGlossaryHolds(unittest.TestCase):
    """What GLOSSARY.md settles, held in every Korean entry (a native reader's review)."""

    def entries(self):
        for domain in ("gqa", "starter"):
            for entry in read("ko", domain)[2][1:]:
                yield entry["msgid"], " ".join(entry["msgstr"])

    def test_attention_scores_and_a_grades_points_are_two_words(self):
        # scores (Q·Kᵀ): 어텐션 스코어; 점수, a grade's points, never for them.
        scores = 0
        for msgid, said in self.entries():
            if not re.search(r"\bscores?\b", msgid):
                continue
            grade = re.search(r"\bpoints?\b|JSON document|no score depends", msgid)
            with self.subTest(msgid=msgid):
                self.assertNotIn("스코어" if grade else "점수", said)
                if not grade and "weighted_sum" not in msgid:            # scores, a tally's field
                    self.assertIn("스코어", said)
                    scores += 1
        self.assertGreater(scores, 10)

    def test_no_particle_is_guessed_after_a_field(self):
        # {path}을(를), {folder} 은(는): the sentence worded so that none follows a path,
        # an option or a name the code fills in.
        guessed = re.compile(r"\}`? ?(을\(를\)|이\(가\)|은\(는\)|와\(과\)|\(으\)로|\(이\))|\}(을|를|이|가|은|는|와|과)\(")
        for msgid, said in self.entries():
            with self.subTest(msgid=msgid):
                self.assertIsNone(guessed.search(said), said)

    def test_the_mean_fold_is_mean_pooling(self):
        # 평균 풀링 names the method (평균으로 접기 was a calque of 畳む); 평균 stays the statistic.
        for msgid, said in self.entries():
            with self.subTest(msgid=msgid):
                self.assertNotIn("평균으로 접", said)
                if re.fullmatch(r"mean|mean, Adam carried over|6\. Converting.*", msgid):
                    self.assertIn("평균 풀링", said)


@heavy
class AMistypedName(unittest.TestCase):
    """--lang kr (a country's code, not its language's) and a command one letter off are
    refused naming what was meant; a value that means none of ours stays argparse's."""

    def test_lang_kr_jp_and_korean_name_the_language_they_mean(self):
        for argv, meant in ((["--lang", "kr"], "ko"), (["--lang=jp"], "ja"), (["--la", "Korean"], "ko"),
                            (["--lang", "ko_KR.UTF-8"], "ko")):
            graded = run_grader(*argv, "--list")
            status, _out, err = run_gqa("tables", *argv)
            with self.subTest(argv=argv):
                self.assertEqual(graded.returncode, 2, graded.stderr)
                self.assertIn(f"--lang {argv[-1].split('=')[-1]}: ", graded.stderr.splitlines()[-1])
                self.assertIn(f"--lang {meant}", graded.stderr.splitlines()[-1])
                self.assertEqual((status, len(err.splitlines())), (2, 1), err)
                self.assertIn(f"--lang {meant}", err)
        graded = run_grader("--lang", "xx", "--list")
        self.assertEqual(graded.returncode, 2)
        self.assertIn("'en', 'ja', 'ko'", graded.stderr.splitlines()[-1])

    def test_a_command_one_letter_off_is_named(self):
        status, _out, err = run_gqa("tabels", "--lang", "en")
        self.assertEqual(status, 2)
        self.assertEqual(err.splitlines()[-1], "gqa: unknown command 'tabels'; did you mean tables?")
        status, _out, err = run_gqa("nothing-like-it", "--lang", "en")
        self.assertEqual(err.splitlines()[-1], "gqa: unknown command 'nothing-like-it'")

    def test_in_a_handout_a_command_it_lacks_is_said_to_be_the_projects_in_the_students_language(self):
        with mock.patch("gqa_tools.cli.handout", lambda: {"steps": ["valid_g"], "lang": "ja", "track": "core"}):
            said = [run_gqa(*argv)[2].splitlines()[-1] for argv in (["bench", "--lang", "en"], ["bench", "--lang", "ja"],
                                                                    ["bnech", "--lang", "en"])]
        self.assertEqual(said, ["gqa: bench is a command of the project's tools, not of this handout's, which has: "
                                "tables, report", "gqa: bench はプロジェクトのツールのコマンドで、この配布版にはありません。"
                                "配布版にあるコマンド: tables, report", "gqa: unknown command 'bnech'"])  # not "bench?"


class HelpWraps(unittest.TestCase):
    """--help in Japanese and Korean fits the terminal: argparse's textwrap breaks only at
    spaces, which Japanese has none of, and counts a wide character as one column."""

    def test_every_help_line_fits_80_columns_but_for_a_mark_that_cannot_start_one(self):
        env = dict(os.environ, COLUMNS="80")
        for lang in i18n.LANGUAGES[1:]:
            shown = run_grader("--help", "--lang", lang, env=env).stdout
            with mock.patch.dict(os.environ, {"COLUMNS": "80"}):
                _status, told, _err = run_gqa("tables", "--help", "--lang", lang)
            for text in (shown, told):
                lines = [line for line in text.splitlines() if not line.lstrip().startswith("[")]   # usage
                with self.subTest(lang=lang):
                    self.assertGreater(len(lines), 10)
                    self.assertLessEqual(max(map(i18n.width, lines)), 82, text)

if __name__ == "__main__":
    unittest.main()
