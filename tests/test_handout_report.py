"""A handout's own tools: in the folder `python grader.py --handout DIR --steps core` writes,
`python -m gqa report` writes the student's report from the student's gqa.py (the cache and
multiplications tables, the output difference, the questions), in the handout's language,
without section 8, and nothing in the handout holds an answer."""

from __future__ import annotations

import ast
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from gqa_grader.language import i18n
from gqa_grader.expected import reference
from gqa_grader.steps.manifest import NUMBER
from tests.helpers import ROOT, early, heavy, multiplies_by_hand, run_grader, start_early
from tests.test_handout import source_lines
from tests.test_student_report import documented_steps, section, table
from tests.untranslated import others, untranslated


def load_tests(loader, tests, pattern):
    """The handouts are written and their reports run early, beside the suite (tests/helpers.py)."""
    return start_early(tests)


# The handout's lab: steps 1-8 and 14-19 of gqa.py's own step table.
CORE = set(range(1, 9)) | set(range(14, 20))
# The report's small options: h = 6 (g = 1, 2, 3, 6), every size small, two seeds.
SIZES = {"heads": 6, "head-dim": 8, "layers": 3, "context": 64, "batch": 4, "run-head-dim": 2,
         "run-d-model": 6, "run-context": 5, "run-layers": 2, "seed": 3, "seeds": 2}
ARGS = [w for name, value in SIZES.items() for w in (f"--{name}", str(value))]
DIVISORS = (1, 2, 3, 6)
LANGS = others()                 # the registry's, but English


def quiet_env():
    """The environment with no language of its own: the handout's is the one spoken."""
    env = {k: v for k, v in os.environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")}
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def run_in(folder, *argv, **env):
    """A command run as a process in folder (env: variables beside quiet_env's): [status,
    stdout, stderr]."""
    run = subprocess.run([sys.executable, *argv], cwd=folder, capture_output=True, timeout=300,
                         env=dict(quiet_env(), **env), encoding="utf-8")
    return [run.returncode, run.stdout, run.stderr]


def defined(node):
    """The name a top-level statement defines, or None."""
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def is_main(node):
    return isinstance(node, ast.If) and "__main__" in ast.dump(node.test)


def fill(path, names):
    """Put the project's functions of those names in place of the starter's at path, and the
    project's private definitions the starter does not have (its kernels, and the ones
    chosen by Python version) before the starter's last lines: the steps done."""
    with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
        source = f.read()
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    tree, ours = ast.parse("".join(lines)), ast.parse(source).body
    have = {defined(n) for n in tree.body}
    solution = {defined(n): ast.get_source_segment(source, n) for n in ours if defined(n) in names}
    assert sorted(solution) == sorted(names), solution.keys()
    kernels = [ast.get_source_segment(source, n) for n in ours
               if (defined(n) or "").startswith("_") and defined(n) not in have | {"__all__"}
               or isinstance(n, ast.If) and not is_main(n)]
    main = next(n for n in tree.body if is_main(n))
    lines[main.lineno - 1:main.lineno - 1] = ["\n\n".join(kernels) + "\n\n\n"]
    for old in sorted((n for n in tree.body if defined(n) in solution), key=lambda n: -n.lineno):
        lines[old.lineno - 1:old.end_lineno] = [solution[defined(old)] + "\n"]
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(lines))


def text_of(path):
    """The text of the file at path; None when there is none."""
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return f.read()


def texts_of(folder):
    """{path in folder: its text} of every file there (a compiled catalog as its bytes, decoded)."""
    texts = {}
    for top, _dirs, names in os.walk(folder):
        for name in names:
            with open(os.path.join(top, name), "rb") as f:
                texts[os.path.relpath(os.path.join(top, name), folder)] = f.read().decode("utf-8", "replace")
    return texts


def given_mark(starter, name):
    """The mark of the comment that a starter writes above a given step, def name(...): the
    words before the colon of the last comment line above it that names it ("Given")."""
    above = starter.split(f"\ndef {name}(")[0].splitlines()
    return next(re.match(r"# ([^:]+): ", line).group(1) for line in reversed(above)
                if line.startswith("# ") and re.search(rf"\b{name}\b", line))


@heavy
class HandoutReport(unittest.TestCase):
    """Handouts of the core track in Japanese and Korean: their files as written, `python gqa.py`,
    and `python -m gqa report` (and `tables`) run there, on the bare starter and on the
    starter with the core steps done."""

    EARLY = ("made",)

    @staticmethod
    def made():
        folder = tempfile.mkdtemp(prefix="gqa-handout-report-")
        core = [name for n, name in documented_steps().items() if n in CORE]
        done = {}
        try:
            for lang in LANGS:
                handout = os.path.join(folder, lang)
                made = run_grader("--handout", handout, "--steps", "core", "--lang", lang, cwd=folder, timeout=300)
                assert made.returncode == 0, made.stderr
                got = done[lang] = {"texts": texts_of(handout), "main": run_in(handout, "gqa.py"),
                                    "help": [run_in(handout, *argv, LANG="en_US.UTF-8")[1] for argv in
                                             (["grader.py", "--help"], ["-m", "gqa", "report", "--help"],
                                              ["-m", "gqa", "tables", "--help"])]}
                if lang == "ja":                                     # the bare starter's report
                    got["bare"] = run_in(handout, "-m", "gqa", "report", *ARGS)
                    got["bare_report"] = text_of(os.path.join(handout, "report.md"))
                fill(os.path.join(handout, "gqa.py"), core)
                got["en_US"] = [run_in(handout, "grader.py", "--steps", "1", "-q", LANG="en_US.UTF-8"),
                                run_in(handout, "-m", "gqa", "tables", "--heads", "4", LANG="en_US.UTF-8")]
                got["done"] = run_in(handout, "-m", "gqa", "report", *ARGS)
                got["report"] = text_of(os.path.join(handout, "report.md"))
                figures = os.path.join(handout, "report-figures")
                got["figures"] = sorted(os.listdir(figures)) if os.path.isdir(figures) else []
                if lang == "ja":                     # the tables at the report's sizes (read in Japanese)
                    got["tables"] = run_in(handout, "-m", "gqa", "tables", "--heads", "6", "--head-dim", "8",
                                           "--layers", "3", "--context", "64")
                if lang == "ko":                                      # kv_head made wrong: said
                    path = os.path.join(handout, "gqa.py")
                    with open(path, encoding="utf-8") as f:
                        source = f.read()
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(source.replace("return query_head // group", "return query_head % g"))
                    got["wrong"] = run_in(handout, "-m", "gqa", "report", *ARGS)
                    got["wrong_report"] = text_of(os.path.join(handout, "report.md"))
        finally:
            shutil.rmtree(folder)
        return done

    @classmethod
    def setUpClass(cls):
        cls.runs = early(cls.made)

    def in_lang(self, lang, template, **fields):
        """template in lang, its fields filled."""
        i18n.use(lang)
        try:
            return i18n._(template).format(**fields)
        finally:
            i18n.use("en")

    def report(self, lang):
        status, out, err = self.runs[lang]["done"]
        self.assertEqual(status, 0, err)
        count = len(self.runs[lang]["figures"])
        i18n.use(lang)
        try:
            wrote = i18n.ngettext("wrote {path} and {count} figure in {folder}",
                                  "wrote {path} and {count} figures in {folder}", count)
        finally:
            i18n.use("en")
        self.assertEqual(out, wrote.format(path="report.md", count=count, folder="report-figures") + "\n")
        return self.runs[lang]["report"]

    def test_tables_help_speaks_of_this_folders_gqa_py_not_the_projects(self):
        # In a handout it said "instead of the project's (a student's)", a teacher's words.
        for lang in LANGS:
            with self.subTest(lang=lang):
                said = "".join(self.runs[lang]["help"][2].split())
                self.assertIn("".join(self.in_lang(lang, "compute with this gqa.py instead of the one in this "
                                                         "folder").split()), said)

    def test_the_help_names_the_handouts_language_as_the_default_whatever_the_terminals(self):
        # It said "the environment's, else en", where a Japanese handout speaks Japanese in an
        # en_US terminal.
        from gqa_grader.language.i18n import registered
        for lang in LANGS:
            said = self.in_lang(lang, "default: this handout's, {name}", name=registered(lang).name)
            for helped in self.runs[lang]["help"]:
                with self.subTest(lang=lang):
                    self.assertIn("".join(said.split()), "".join(helped.split()))     # wrapped anywhere

    def test_the_report_is_the_handouts_sections_in_its_language_without_section_8(self):
        from gqa_tools.report.sections import STUDENT_SECTIONS
        for lang in LANGS:
            text = self.report(lang)
            with self.subTest(lang=lang):
                titles = [self.in_lang(lang, title) for title, _ in STUDENT_SECTIONS if not title.startswith("8.")]
                self.assertEqual(len(titles), 8)
                self.assertTrue(text.startswith("# " + self.in_lang(lang, "gqa lab report") + "\n"))
                self.assertEqual(re.findall(r"^## (.*)$", text, re.M), titles)
                # Why section 8 is not there, in the header: the lab does not train, and training
                # needs grouped_attention_backward (the backward), which the core track does not hold.
                header = text.split("\n## ")[0]
                said = self.in_lang(lang, "Section 8 of the lab's report, whether quality comes back with "
                                          "training, is left out: this handout's lab does not train, and "
                                          "training needs {steps}, outside the track this handout grades.",
                                    steps="\0").split("\0")
                self.assertIn(said[0], header)
                self.assertIn(self.in_lang(lang, "step {step}, {name}", step=NUMBER["grouped_attention_backward"],
                                           name="grouped_attention_backward"),
                              header.split(said[0])[1].split(said[1])[0])
                self.assertIn("`python -m gqa report --lang " + lang + " --heads 6 ", header)

    def test_it_holds_no_english_sentence(self):
        for lang in LANGS:
            with self.subTest(lang=lang):
                text = self.report(lang)
                self.assertEqual(untranslated(text, lang), [])

    def test_the_kv_cache_table_is_the_closed_form_worked_by_hand(self):
        for lang in LANGS:
            two = section(self.report(lang), 2)
            rows = table(two, self.in_lang(lang, "method"), "g")
            with self.subTest(lang=lang):
                self.assertEqual([int(r[1]) for r in rows[1:]], list(DIVISORS))
                for r in rows[1:]:
                    g = int(r[1])
                    self.assertEqual(r[2], f"{2 * 3 * g * 64 * 8:,}")      # 2 x layers x g x length x head_dim
                    self.assertAlmostEqual(float(r[3]), g / 6, places=4)
                # The part that needs decode_step, step 22, says it is outside the core track.
                outside = self.in_lang(lang, "{step}, is outside the {track} track this handout grades",
                                       step=self.in_lang(lang, "step {step}, {name}", step=22, name="decode_step"),
                                       track="core")
                self.assertIn(outside, two)

    def test_the_multiplications_table_is_worked_by_hand(self):
        for lang in LANGS:
            three = section(self.report(lang), 3)
            rows = table(three, self.in_lang(lang, "term"))
            cell = {(r[0], g): int(c.replace(",", "")) for r in rows[1:] for g, c in zip(DIVISORS, r[1:])}
            with self.subTest(lang=lang):
                for g in DIVISORS:
                    for term, value in multiplies_by_hand(g).items():
                        self.assertEqual(cell[(term, g)], value, (term, g))

    def test_the_output_difference_at_every_g_is_the_references(self):
        rng = random.Random("attention inputs:3")
        q, k, v = ([[[rng.uniform(-1.0, 1.0) for _ in range(2)] for _ in range(5)] for _ in range(6)]
                   for _ in range(3))                     # q, then k, then v: [h=6][n=5][d=2]
        mha = reference.ref_attention(q, k, v, 6)
        for lang in LANGS:
            five = section(self.report(lang), 5)
            rows = table(five, self.in_lang(lang, "method"), "g")
            with self.subTest(lang=lang):
                self.assertEqual([int(r[1]) for r in rows[1:]], list(DIVISORS))
                for r in rows[1:]:
                    want = reference.ref_output_difference(reference.ref_attention(q, k, v, int(r[1])), mha)
                    for got, value in zip(r[2:], want):
                        self.assertAlmostEqual(float(got), value, delta=1e-3 * abs(value) + 1e-12)

    def test_the_write_up_holds_the_handouts_questions(self):
        for lang in LANGS:
            nine = section(self.report(lang), 9)
            with self.subTest(lang=lang):
                self.assertEqual(nine.count(self.in_lang(lang, "*(your answer)*")), 2)
                self.assertEqual(re.findall(r"^\*\*(\d)\. ", nine, re.M), ["1", "2"])

    def test_no_part_says_a_step_of_the_track_is_missing(self):
        # Every core step is done: what is left out needs a step outside the track.
        for lang in LANGS:
            text = self.report(lang)
            missing = self.in_lang(lang, "needs {step}: not implemented yet", step="\0").split("\0")[1]
            with self.subTest(lang=lang):
                self.assertNotIn(missing, text)

    def test_python_gqa_py_points_to_the_handouts_folder(self):
        for lang in LANGS:
            status, out, err = self.runs[lang]["main"]
            with self.subTest(lang=lang):
                self.assertEqual((status, out), (2, ""))
                self.assertIn(f"python grader.py --lang {lang}", err)
                self.assertIn(f"python -m gqa report --lang {lang}", err)
                self.assertNotIn("PATH/gqa.py", err)
                self.assertNotIn(self.in_lang(lang, "this gqa.py is the lab, not its tools: from the project's "
                                                   "folder, run {grader} or {tools}", grader="\0",
                                             tools="\0").split("\0")[0][-8:], err)

    def test_tables_run_on_the_students_module_in_its_language(self):
        status, out, err = self.runs["ja"]["tables"]
        self.assertEqual(status, 0, err)
        first = out.splitlines()[0]
        self.assertEqual(first, self.in_lang("ja", "Computed by gqa.py, your module in this folder, in the "
                                                    "grader's worker."))
        rows = table(out, self.in_lang("ja", "method"), self.in_lang("ja", "g (kv heads)"))
        self.assertEqual([r[3].replace(",", "") for r in rows[1:]], [str(2 * 3 * g * 64 * 8) for g in DIVISORS])

    def test_a_terminal_in_english_does_not_undo_the_handouts_language(self):
        """Many a student's terminal says en_US: a Japanese or Korean handout speaks its
        own language all the same (i18n.default); --lang still chooses."""
        for lang in LANGS:
            (status, out, err), (t_status, t_out, t_err) = self.runs[lang]["en_US"]
            with self.subTest(lang=lang):
                self.assertEqual((status, t_status), (0, 0), err + t_err)
                self.assertIn(self.in_lang(lang, "{passed} passed, {failed} failed", passed=1, failed=0), out)
                self.assertEqual(t_out.splitlines()[0], self.in_lang(
                    lang, "Computed by gqa.py, your module in this folder, in the grader's worker."))
        self.assertEqual([i18n.default(h, {"LANG": "en_US.UTF-8"}) for h in ("ja", "ko", "en", None)],
                         ["ja", "ko", "en", "en"])
        self.assertEqual([i18n.default(h, {"LANG": "ko_KR.UTF-8"}) for h in ("en", None)], ["ko", "ko"])

    def test_a_step_the_grader_fails_is_said_before_any_number(self):
        """Never a silent wrong number: the report of a module whose kv_head the grader fails
        says so under its header; a finished one says nothing of the kind."""
        status, _out, err = self.runs["ko"]["wrong"]
        self.assertEqual(status, 0, err)
        warning = self.in_lang("ko", "*The grader does not pass {steps} of {module} yet: a number below "
                                     "that comes from them may be wrong (see where with: {command}).*",
                               steps="\0", module="gqa.py", command="python grader.py --module gqa.py --lang ko")
        before, after = warning.split("\0")
        header = self.runs["ko"]["wrong_report"].split("\n## ")[0]
        said = header[header.index(before):]                       # the steps that kv_head fails
        self.assertTrue(said.rstrip("\n").endswith(after), said)   # (and those that call it)
        self.assertIn(self.in_lang("ko", "step {step}, {name}", step=3, name="kv_head"), said)
        for lang in LANGS:                                       # a finished module: no warning
            opening = self.in_lang(lang, "*The grader does not pass {steps} of {module} yet: a number "
                                         "below that comes from them may be wrong (see where with: "
                                         "{command}).*", steps="\0", module="\0", command="")
            self.assertNotIn(opening.split("\0")[0], self.report(lang).split("\n## ")[0])

    def test_the_readme_says_how_to_make_the_report_in_its_language(self):
        for lang in LANGS:
            texts = self.runs[lang]["texts"]
            readme, starter = texts["README.md"], texts["gqa.py"]
            with self.subTest(lang=lang):
                self.assertIn("python -m gqa report ", readme)
                self.assertIn("python -m gqa tables ", readme)
                self.assertEqual(untranslated(readme, lang), [])
                # The mark of a given step is the one the starter writes above each given step.
                marks = {given_mark(starter, "init_weights"), given_mark(starter, "decode_traffic")}
                self.assertEqual(len(marks), 1)
                self.assertNotEqual(marks, {"Given"})
                self.assertIn(marks.pop(), readme)

    def test_nothing_in_the_handout_holds_an_answer(self):
        with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        core = {name for n, name in documented_steps().items() if n in CORE}
        by_name = {defined(n): n for n in tree.body if defined(n)}
        for lang in LANGS:
            texts = self.runs[lang]["texts"]
            kept = {defined(n) for n in ast.parse(texts["gqa.py"]).body}
            # The core steps' bodies, and the private kernels they call that the starter does not keep.
            needed, todo = set(), list(core)
            while todo:
                name = todo.pop()
                if name in needed:
                    continue
                needed.add(name)
                todo += [n.id for n in ast.walk(by_name[name]) if isinstance(n, ast.Name)
                         and n.id.startswith("_") and n.id in by_name and n.id not in kept]
            solution = source_lines(os.path.join(ROOT, "gqa.py"), lambda fn, owner: (owner or fn).name in needed)
            solution -= source_lines(os.path.join(ROOT, "gqa.py"),         # what the steps given share with them
                                     lambda fn, owner: (owner or fn).name in kept - core)
            answers = source_lines(os.path.join(ROOT, "gqa_grader", "expected", "reference.py"))
            for name in ("checking", "heads", "layer", "counting", "decoding",
                         "backward"):                                       # inputs drawn alike
                answers -= source_lines(os.path.join(ROOT, "gqa_grader", "steps", f"{name}.py"))
            with self.subTest(lang=lang):
                self.assertGreater(len(solution), 40)
                self.assertGreater(len(answers), 100)
                self.assertTrue(any(name.startswith("gqa_tools") for name in texts))
                self.assertEqual([name for name in texts if os.path.basename(name) in
                                  ("reference.py", "report.md", "report-training.json")], [])
                for name, text in texts.items():
                    self.assertEqual([(name, line) for line in solution | answers if line in text], [])

    def test_a_report_of_the_bare_starter_holds_no_number_of_the_solutions(self):
        status, out, err = self.runs["ja"]["bare"]
        self.assertEqual(status, 0, err)
        bare, done = self.runs["ja"]["bare_report"], self.report("ja")
        header = done.split("\n## ")[0]
        numbers = {n for line in done.splitlines() if line.startswith("|")
                   for n in re.findall(r"\d[\d,.]*\d", line)} - set(re.findall(r"\d[\d,.]*\d", header))
        self.assertGreater(len(numbers), 50)
        self.assertEqual(sorted(n for n in numbers if re.search(rf"(?<![\d,.]){re.escape(n)}(?![\d,.])", bare)), [])
        self.assertNotIn("\n|", bare)
        first = self.in_lang("ja", "needs {step}: not implemented yet",
                             step=self.in_lang("ja", "step {step}, {name}", step=1, name="valid_g"))
        self.assertIn(first, section(bare, 1))


if __name__ == "__main__":
    unittest.main()
