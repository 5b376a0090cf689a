"""Files as editors save them: the shipped gqa.py with a byte-order mark, CRLF line
endings, a comment in cp1252 (Latin-1) and no coding declaration, a coding cookie
for latin-1, tabs for indentation, and all at once, graded exactly as the module
itself, in the normal run and in the sealed run.  Each variant is written here, at
test time, into a folder of its own (no file of the project holds bytes that are
not UTF-8)."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
import tokenize
import unittest
from concurrent.futures import ThreadPoolExecutor
from unittest import mock

from gqa_grader.expected import compare
from gqa_grader.running import values
from gqa_grader.verdict import grading, records
from gqa_grader.teacher import submissions
from gqa_grader.running.seal import Seal, runnable
from tests.helpers import ROOT, early, heavy, start_early

with open(os.path.join(ROOT, "gqa.py"), "rb") as _f:
    SOURCE = _f.read()
ROOT_POSIX = os.name == "posix" and hasattr(os, "geteuid") and os.geteuid() == 0
NOT_ROOT = "a sealed run drops privileges only as root; this test runs as another user"
STEPS = ["valid_g", "kv_head", "fold_kv_mean", "attention"]
FEW = STEPS[:2]                    # each way alone: two steps whose refusals read tracebacks
SEED = 7
BOM = b"\xef\xbb\xbf"
LATIN = b"# Jos\xe9 \xe9crit ce module: 10 \x80, \xabcaf\xe9\xbb \x81\n"   # cp1252; \x81 is Latin-1's
CHECK = b'    _check_int("valid_g", "h", h, low=1)\n'


def bom(source):
    return BOM + source


def crlf(source):
    return source.replace(b"\n", b"\r\n")


def latin(source):
    """A cp1252 comment on the first line, and one at the end of a line of code."""
    return LATIN + source.replace(CHECK, CHECK[:-1] + b"   # d\xe9j\xe0 v\xe9rifi\xe9\n", 1)


def cookie(source):
    return b"# -*- coding: latin-1 -*-\n" + latin(source)


def tabs(source):
    """source indented with tabs: four leading spaces to a tab, on every line but those
    inside a string (a docstring keeps its text)."""
    text = source.decode("utf-8")
    inside = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    lines = text.split("\n")
    for row, line in enumerate(lines, 1):
        if row not in inside:
            body = line.lstrip(" ")
            depth = len(line) - len(body)
            lines[row - 1] = "\t" * (depth // 4) + " " * (depth % 4) + body
    return "\n".join(lines).encode("utf-8")


def notepad(source):
    """source as Windows Notepad saves "Unicode": UTF-16 with its byte-order mark, CRLF."""
    return crlf(source).decode("utf-8").encode("utf-16")


def every_one(source):
    return bom(crlf(latin(tabs(source))))


VARIANTS = {"bom": bom, "crlf": crlf, "latin": latin, "cookie": cookie, "tabs": tabs,
            "notepad": notepad, "every_one": every_one}
BUG = CHECK + b'    if h == 7:\n        raise RuntimeError("seven")\n'


class Folder:
    """Files written into a temporary folder, each in a folder of its own, as gqa.py."""

    def __init__(self):
        self.dir = tempfile.mkdtemp()

    def write(self, name, data):
        os.mkdir(os.path.join(self.dir, name))
        path = os.path.join(self.dir, name, "gqa.py")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)


def by_name(results):
    return {r.name: r.as_json() for r in results}


@heavy
class Variants(unittest.TestCase):
    """The variants themselves, and the copy a worker runs (seal.runnable)."""

    def test_each_variant_is_what_it_says(self):
        self.assertTrue(bom(SOURCE).startswith(BOM))
        self.assertEqual(crlf(SOURCE).count(b"\r\n"), SOURCE.count(b"\n"))
        self.assertIn(b"\n\tif ", tabs(SOURCE))
        self.assertNotIn(b"\n    if ", tabs(SOURCE))
        self.assertEqual(latin(SOURCE).count(b"\xe9"), 6)
        with self.assertRaises(UnicodeDecodeError):
            latin(SOURCE).decode("utf-8")
        for name, make in VARIANTS.items():
            with self.subTest(name):
                self.assertNotEqual(make(SOURCE), SOURCE)
                compile(runnable(make(SOURCE)), "gqa.py", "exec", dont_inherit=True)

    def test_the_copy_of_a_cp1252_module_is_its_text_in_utf8(self):
        data = latin(SOURCE)
        text = LATIN[:-1].decode("cp1252", "replace").replace("\ufffd", "\x81")
        copy = runnable(data)
        self.assertEqual(copy.decode("utf-8").splitlines()[0], text)
        self.assertIn("€", text)
        everything = every_one(SOURCE)
        self.assertEqual(runnable(everything), BOM + runnable(everything[3:]))
        utf8_cookie = b"# coding: utf-8\n" + data
        self.assertEqual(runnable(utf8_cookie), b"# coding: utf-8\n" + copy)

    def test_what_python_reads_as_it_is_runs_as_it_is(self):
        for data in (SOURCE, bom(SOURCE), crlf(SOURCE), tabs(SOURCE), cookie(SOURCE),
                     b"# coding: nonsense\n" + LATIN):
            with self.subTest(data[:30]):
                self.assertIs(runnable(data), data)

    def test_one_item_is_one_item(self):
        self.assertEqual(compare.first_difference([], [1.0]), "at the top: expected 1 item, got 0")
        self.assertEqual(compare.first_difference([1.0], [1.0, 2.0]),
                         "at the top: expected 2 items, got 1")
        self.assertTrue(values.bounded("x" * 5).endswith("x"))
        self.assertTrue(values.bounded("x" * 4001, 4000).endswith("[... 1 more character cut]"))
        self.assertTrue(values.bounded("x" * 5200, 4000).endswith("[... 1,200 more characters cut]"))
        self.assertEqual(repr(values.decode({"$array": "d", "values": [1.0]})), "<array('d') of 1 value>")

    def test_a_utf16_submission_is_graded_and_a_binary_one_is_named_so(self):
        with Folder() as folder:
            self.assertIsNone(submissions.examine(folder.write("utf16", notepad(SOURCE[:200]))))
            self.assertIsNone(submissions.examine(folder.write("bom", bom(SOURCE[:200]))))
            self.assertIn("binary", submissions.examine(folder.write("bin", b"\x7fELF\x02\x01\x00" * 9)))
            for empty in (b"", BOM + b"\r\n", b"\n" * 8000):        # an upload that holds nothing: said so,
                self.assertIn("an empty file", submissions.examine(folder.write(f"e{len(empty)}", empty)))
            self.assertIsNone(submissions.examine(folder.write("late", b"\n" * 9000 + b"x = 1\n")))  # not 14 failures
        self.assertEqual(runnable(notepad(SOURCE)), crlf(SOURCE))      # the text, as UTF-8

    def test_an_empty_upload_is_one_refusal_in_a_single_run_as_in_a_class(self):
        # Gradescope's run of an empty upload failed each step's two tests, each saying "the
        # module has no valid_g" (a class said "an empty file" in one row).
        import json
        from gqa_grader import cli as grader_cli
        from tests.helpers import captured
        with Folder() as folder:
            path = folder.write("gqa.py", BOM + b"\r\n")
            status, out, _err = captured(grader_cli.main, ["--module", path, "--format", "gradescope", "--only",
                                                           "1,3", "--cases", "0"])
        doc = json.loads(out)
        self.assertIn("an empty file: there is no code in it to grade", doc["output"])
        self.assertEqual((doc["score"], doc.get("tests", [])), (0, []))
        self.assertEqual(status, 2)

    def test_a_module_not_in_utf8_is_graded_and_its_author_told_python_cannot_run_it(self):
        # Graded 14/14 in cp949, the student then met a SyntaxError in English from report,
        # tables and every call pasted from --show, with no word of why.
        import json
        from gqa_grader import cli as grader_cli
        from tests.helpers import captured
        with Folder() as folder:
            docs = {name: json.loads(captured(grader_cli.main, ["--module", folder.write(name, data), "--json",
                                                                "--only", "1", "--cases", "0"])[1])
                    for name, data in (("cp949", "# 이 함수는 쿼리 헤드를 그룹으로 묶습니다\n".encode("cp949") + SOURCE),
                                       ("utf16", notepad(SOURCE)), ("utf8", bom(SOURCE)))}
        self.assertIn("gqa.py is not saved as UTF-8 (graded as read in cp949)", docs["cp949"]["note"])
        self.assertIn("(graded as read in UTF-16)", docs["utf16"]["note"])
        self.assertNotIn("note", docs["utf8"])                     # a mark and CRLF: Python reads it
        self.assertEqual({doc["passed"] for doc in docs.values()}, {1})

    def test_a_module_saved_in_a_languages_windows_encoding_is_read_in_it(self):
        # Shift_JIS: read as cp1252, 表's second byte (0x5C, a backslash there) swallowed the
        # closing quote, a syntax error the student's editor never showed.  In every run's
        # language alike: a file scores the same in every teacher's run.
        from gqa_grader.language import i18n
        self.addCleanup(i18n.use, "en")
        texts = (('NOTE = "一覧表"\nLEVEL = "能"\n', "cp932"),
                 ('# 이 함수는 쿼리 헤드를 그룹으로 묶습니다\nNOTE = "키와 값, 한국어 표"\n', "cp949"))
        for lang in i18n.LANGUAGES:
            i18n.use(lang)
            for text, encoding in texts:
                with self.subTest(lang=lang, encoding=encoding):
                    self.assertEqual(runnable(text.encode(encoding)), text.encode("utf-8"))
                    self.assertEqual(runnable(BOM + text.encode(encoding)), BOM + text.encode("utf-8"))
                    compile(runnable(text.encode(encoding)), "gqa.py", "exec", dont_inherit=True)
            self.assertEqual(runnable(latin(b"x = 1\n")).decode("utf-8").splitlines()[0],   # cp1252's, still
                             LATIN[:-1].decode("cp1252", "replace").replace("\ufffd", "\x81"))

    def test_a_handouts_gqa_py_saved_with_a_mark_makes_the_tools_lab(self):
        # In a handout, the grader's gqa.py is the student's: python -m gqa tables and report
        # copy for their child the starter made from it, where a mark ended in a SyntaxError.
        from gqa_grader.running import toolcopy
        with Folder() as folder, tempfile.TemporaryDirectory() as into:
            handout = os.path.dirname(folder.write("handout", bom(crlf(SOURCE))))
            with mock.patch.object(toolcopy, "HERE", handout):
                toolcopy.tools_for_child(into)
            with open(os.path.join(into, "gqa.py"), "rb") as f:
                made = f.read()
        compile(made, "gqa.py", "exec", dont_inherit=True)
        self.assertIn(b"\ndef kv_head(", made.replace(b"\r\n", b"\n"))


def load_tests(loader, tests, pattern):
    """The heavy class's jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


def graded_in(trusted, folder, names):
    """{variant: {step: result}} of the variants names, graded one after another in trusted:
    the module and every way at once on STEPS, each way alone on FEW."""
    makers = dict(module=lambda s: s, **VARIANTS)
    return {name: by_name(trusted.grade(folder.write(name, makers[name](SOURCE)), SEED, cases=1,
                                        only=STEPS if name in ("module", "every_one") else FEW))
            for name in names}


@heavy
class Graded(unittest.TestCase):
    """Each variant graded as the module itself: the same results, step by step."""

    EARLY = ("graded", "sealed")

    @staticmethod
    def graded():
        """The module and each variant in two Trusted workers; three variants of a module
        that fails; a cp1252 module graded with no private folder (not root, not sealed)."""
        def half(names):
            with grading.Trusted() as trusted:
                return graded_in(trusted, folder, names)
        with Folder() as folder:
            names = ["module"] + list(VARIANTS)
            with ThreadPoolExecutor(2) as pool:
                variants = dict(item for part in pool.map(half, (names[::2], names[1::2]))
                                for item in part.items())
            failures = {name: grading.grade(folder.write(f"bug-{name}", VARIANTS[name](
                SOURCE.replace(CHECK, BUG, 1))), SEED, cases=0, only=["valid_g"])[0].as_json()
                for name in ("bom", "latin", "every_one")}
            return {"variants": variants, "failures": failures,
                    "no_folder": Graded.no_folder(folder)}

    @staticmethod
    def no_folder(folder):
        """Not root, not sealed: no private folder but the one made for the copy, the worker
        started where the grader was; the sha256 recorded is of the student's bytes."""
        with mock.patch("gqa_grader.running.seal.DROP_ROOT", False):
            data = latin(SOURCE)
            path = folder.write("no-folder", data)
            seal = Seal()
            try:
                results = by_name(grading.grade(path, SEED, cases=1, only=FEW, seal=seal))
                copy_only, cwd, sha = seal.copy_only, seal.cwd(), records.sha256_of(seal, path)
            finally:
                seal.close()
            plain = Seal()
            bom_path = folder.write("no-folder-bom", bom(SOURCE))
            return {"results": results, "copy_only": copy_only, "cwd": cwd,
                    "sha_ok": sha == hashlib.sha256(data).hexdigest(),
                    "bom_in_place": plain.place(bom_path) == bom_path and plain.dir is None}

    @staticmethod
    def sealed():
        """As root, in sealed runs: the BOM module fully, and every one of the editors' ways
        at once (FEW), the public cases; each with whether its recorded sha256 is the bytes'."""
        if not ROOT_POSIX:
            return None
        private = tempfile.mkdtemp()                   # the grader's folder, as a sealed run needs
        os.chmod(private, 0o700)

        def run(job):
            name, only = job
            data = VARIANTS[name](SOURCE)
            path = folder.write(name, data)
            seal = Seal(sealed=True)
            try:
                results = [r.as_json() for r in grading.grade(path, SEED, cases=0, only=only, seal=seal)]
                return name, {"results": results, "sealed": seal.partly is None and bool(seal.drop),
                              "sha_ok": records.sha256_of(seal, path) == hashlib.sha256(data).hexdigest()}
            finally:
                seal.close()
        try:
            with Folder() as folder, mock.patch("gqa_grader.running.seal.HERE", private), \
                    ThreadPoolExecutor(2) as pool:
                return dict(pool.map(run, [("bom", None), ("every_one", FEW)]))
        finally:
            shutil.rmtree(private, ignore_errors=True)

    def test_every_variant_is_graded_as_the_module(self):
        graded = early(Graded.graded)["variants"]
        module = graded["module"]
        self.assertEqual(sorted(module), sorted(STEPS))
        for name, results in module.items():
            self.assertEqual(results["status"], "passed", name)
            self.assertGreater(results["cases"], 2, name)
        for variant in VARIANTS:
            with self.subTest(variant):
                self.assertEqual(graded[variant], {k: module[k] for k in graded[variant]})
                self.assertEqual(sorted(graded[variant]), sorted(STEPS if variant == "every_one" else FEW))

    def test_a_failure_shows_its_line_whatever_the_editor(self):
        for name, step in early(Graded.graded)["failures"].items():
            with self.subTest(name):
                self.assertEqual(step["status"], "failed")
                self.assertIn("valid_g(7) raised RuntimeError: seven", step["message"])
                self.assertIn('in valid_g: raise RuntimeError("seven")', step["message"])

    def test_without_a_private_folder_a_cp1252_module_runs_from_a_utf8_copy(self):
        graded = early(Graded.graded)
        run = graded["no_folder"]
        self.assertEqual(run["results"], {k: graded["variants"]["module"][k] for k in FEW})
        self.assertEqual((run["copy_only"], run["cwd"], run["sha_ok"], run["bom_in_place"]),
                         (True, None, True, True))

    @unittest.skipUnless(ROOT_POSIX, NOT_ROOT)
    def test_the_sealed_run_grades_them_fully(self):
        runs = early(Graded.sealed)
        bom_run, every = runs["bom"], runs["every_one"]
        self.assertGreaterEqual(len(bom_run["results"]), 20)
        for name, run in runs.items():
            with self.subTest(name):
                self.assertTrue(run["sealed"])
                self.assertTrue(run["sha_ok"])
                self.assertEqual([r["name"] for r in run["results"] if r["status"] != "passed"], [])
        module = early(Graded.graded)["variants"]["module"]
        for step in every["results"]:
            self.assertEqual((step["status"], step["public"]), ("passed", module[step["name"]]["public"]))


if __name__ == "__main__":
    unittest.main()
