"""A language is its catalogs and one line of the registry (gqa_grader.language.i18n.REGISTRY).

Shown with a pseudo-language made here: every message its English wrapped in marks,
⟦like this⟧, a line at a time; two plural forms, as its catalogs' header says; its
catalogs compiled at test time into a folder of their own and registered as a line of
the registry would be.  The whole grader then speaks it, in this process: a graded
run of a module with a failure of every kind, and --help.  Every line it prints is a
message's (inside marks), and no message's English is left outside them."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import unittest

from gqa_grader.language import catalogs, i18n
from gqa_grader import cli
from tests.helpers import ROOT, captured, heavy
from tests.untranslated import others, untranslated, used_ids

CODE, NAME, OPEN, CLOSE = "xx", "⟦pseudo⟧", "⟦", "⟧"
HEADER = ("Content-Type: text/plain; charset=UTF-8\nLanguage: xx\n"
          "Plural-Forms: nplurals=2; plural=(n != 1);\n")


def marked(text):
    """text with each of its lines (but a blank one) wrapped in the marks."""
    return "\n".join(OPEN + line + CLOSE if line.strip() else line for line in text.split("\n"))


def po_string(text):
    """text as a .po file writes a string."""
    return json.dumps(text, ensure_ascii=False)


def write_catalogs(folder):
    """The pseudo-language's catalogs, folder/xx/LC_MESSAGES/gqa.po and starter.po: the
    message ids of each domain (as another language's catalog holds them), each marked;
    compiled by the project's own `python -m gqa_grader.language.catalogs` once registered."""
    for domain in (i18n.DOMAIN, "starter"):
        _lang, _domain, po, _mo = next(c for c in catalogs.catalogs() if c[:2] == (others()[0], domain))
        with open(po, encoding="utf-8") as f:
            ids = catalogs.read_po(f.read())[1:]
        text = [f'msgid ""\nmsgstr {po_string(HEADER)}\n']
        for e in ids:
            text.append(f"msgid {po_string(e['msgid'])}")
            if "msgid_plural" in e:
                text += [f"msgid_plural {po_string(e['msgid_plural'])}",
                         f"msgstr[0] {po_string(marked(e['msgid']))}",
                         f"msgstr[1] {po_string(marked(e['msgid_plural']))}\n"]
            else:
                text.append(f"msgstr {po_string(marked(e['msgid']))}\n")
        os.makedirs(os.path.join(folder, CODE, "LC_MESSAGES"), exist_ok=True)
        with open(os.path.join(folder, CODE, "LC_MESSAGES", domain + ".po"), "w", encoding="utf-8") as f:
            f.write("\n".join(text))


def unmarked(text):
    """The lines of text that are no message's: neither holding a mark nor inside one."""
    depth, left = 0, []
    for line in text.splitlines():
        if line.strip() and depth == 0 and OPEN not in line and CLOSE not in line:
            left.append(line)
        depth += line.count(OPEN) - line.count(CLOSE)
    return left


def outside(text):
    """text with every marked span taken out, the innermost first (a message's field
    may hold another message)."""
    while True:
        shorter = re.sub(f"{OPEN}[^{OPEN}{CLOSE}]*{CLOSE}", " ", text)
        if shorter == text:
            return text
        text = shorter


@heavy
class APseudoLanguage(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="gqa-language-")
        write_catalogs(cls.folder)
        i18n.register(i18n.Language(CODE, NAME, ("pseudo",), cls.folder))      # the registry's line
        cls.compiled = captured(catalogs.main, [])                             # python -m gqa_grader.language.catalogs

    @classmethod
    def tearDownClass(cls):
        i18n.forget(CODE)
        i18n.use("en")
        shutil.rmtree(cls.folder)

    def tearDown(self):
        i18n.use("en")

    def speaks_it(self, said):
        """said, all the grader printed, is the pseudo-language's whole."""
        self.assertEqual(said.count(OPEN), said.count(CLOSE), said)
        self.assertEqual(unmarked(said), [], said)
        self.assertEqual(untranslated(outside(said)), [], said)

    def test_a_graded_run_of_a_module_with_failures_speaks_it(self):
        from tests.test_i18n import KINDS
        with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
            source = f.read()
        for old, new in KINDS:
            source = source.replace(old, new)
        path = os.path.join(self.folder, "gqa.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        status, out, err = captured(cli.main, ["--module", path, "--steps", "1-7", "--seed", "5", "--lang", CODE])
        self.assertEqual(status, 1, err)
        self.assertGreater(len(out.splitlines()), 10)
        self.speaks_it(out + err)
        self.assertIn(f"--lang {CODE}", out)                               # the command that repeats it
        english = captured(cli.main, ["--module", path, "--steps", "1-7", "--seed", "5", "--lang", "en"])
        self.assertTrue(unmarked(english[1]) and untranslated(english[1]))     # the checks can fail

    def test_help_speaks_it_and_lists_it(self):
        status, out, err = captured(cli.main, ["--help", "--lang", CODE])
        self.assertEqual((status, err), (0, ""))
        usage = out.split("\n\n")[0]                        # the options' syntax, after a marked "usage: "
        self.assertTrue(usage.startswith(marked("usage: ")), usage)
        names = re.compile(r"  (-[-\w]*( [A-Z]+| \{[\w,]+\})?(, )?)+")           # an option's names alone
        self.speaks_it("\n".join(line for line in out[len(usage):].splitlines() if not names.fullmatch(line)))
        self.assertIn(f"{CODE} ({NAME})", " ".join(out.split()))         # --lang's list, from the registry
        i18n.use(others()[0])
        self.assertIn(f"{CODE} ({NAME})", i18n.listed())                 # and in every language's --help

    def test_its_catalogs_compile_and_hold_what_every_catalog_must(self):
        # The catalogs' own tests, run on it: every message the code asks for, each field
        # kept, its two plural forms read from its header, each .mo its .po compiled.
        from tests.test_i18n import Catalogs
        self.assertEqual(self.compiled[0], 0)
        self.assertEqual(sorted(os.path.basename(line.split(":")[0]) for line in self.compiled[1].splitlines()),
                         ["gqa.mo", "starter.mo"])                         # its two, and no other catalog
        names = unittest.defaultTestLoader.getTestCaseNames(Catalogs)
        self.assertEqual(len(names), 5)
        for name in names:                          # called, not run: CI may run the class elsewhere
            getattr(Catalogs(name), name)()

    def test_its_header_gives_its_plural_forms(self):
        i18n.use(CODE)
        said = [i18n.ngettext("of {count} value", "of {count} values", n) for n in (1, 2)]
        self.assertEqual(said, ["⟦of {count} value⟧", "⟦of {count} values⟧"])
        i18n.use(others()[0])
        one = i18n.ngettext("of {count} value", "of {count} values", 1)
        self.assertEqual([i18n.ngettext("of {count} value", "of {count} values", n) for n in (2, 5)], [one, one])

    def test_the_environment_and_a_mistyped_lang_find_it(self):
        self.assertEqual(i18n.from_environment({"LANG": f"{CODE}_XX.UTF-8"}), CODE)
        self.assertEqual(i18n.meant_lang("Pseudo"), CODE)
        self.assertEqual(cli.parse_args(["--lang", CODE]).lang, CODE)


class TheRegistry(unittest.TestCase):
    """Nothing but the registry names the languages."""

    def test_no_message_id_holds_the_list_of_languages(self):
        names = [language.name for language in i18n.REGISTRY if language.code != "en"]
        held = [msgid for msgid, _plural in used_ids()
                if any(name in msgid for name in names) or re.search(r"\ben, ja\b", msgid)]
        self.assertEqual(held, [])

    def test_the_list_is_the_registry_worded_in_the_language(self):
        items = ["en"] + [f"{language.code} ({language.name})" for language in i18n.REGISTRY[1:]]
        i18n.use("en")
        said = i18n.listed()
        self.assertTrue(said.startswith("en, ja (日本語)") and said.endswith(" or " + items[-1]), said)
        self.assertEqual([item for item in items if item not in said], [])
        try:
            for lang in others():
                i18n.use(lang)
                catalog = i18n.translation(lang)
                expected = items[0]
                for item in items[1:-1]:
                    expected = catalog.gettext("{first}, {next}").format(first=expected, next=item)
                expected = catalog.gettext("{first} or {last}").format(first=expected, last=items[-1])
                with self.subTest(lang=lang):
                    self.assertEqual(i18n.listed(), expected)
        finally:
            i18n.use("en")

if __name__ == "__main__":
    unittest.main()
