"""A student's report, `python -m gqa report --module`: after the handout's lab (the core
track, steps 1-8 and 14-19) it holds the KV cache table, the multiplications per term and
the output difference, every number from the student's own functions, and leaves out only
what needs a later step, naming that step."""

from __future__ import annotations

import ast
import contextlib
import io
import math
import os
import random
import re
import shutil
import sys
import tempfile
import types
import unittest
from unittest import mock

import gqa
from gqa_grader.language import i18n
from gqa_grader.expected import reference
from gqa_grader.steps.manifest import LESSON, NUMBER
from gqa_tools import cli as gqa_cli
from gqa_tools import referee
from gqa_tools.referee import Graded
from gqa_tools.report import lab as report_lab
from gqa_tools.report import sections as report_sections
from gqa_tools.report import settings as report_settings
from gqa_tools.report import student as report_student
from tests.helpers import early, heavy, multiplies_by_hand, start_early


def load_tests(loader, tests, pattern):
    """The reports are built early, beside the suite (tests/helpers.py, early)."""
    return start_early(tests)


# The handout's lab: steps 1-8 and 14-19 of gqa.py's own table (its docstring).
CORE = set(range(1, 9)) | set(range(14, 20))
SMALL = report_settings.Config(heads=6, head_dim=8, layers=3, context=64, batch=4, run_head_dim=2,
                               run_d_model=6, run_context=5, run_layers=2, seed=3, seeds=2)
ARGS = [a for name, value in SMALL._asdict().items() for a in (f"--{name.replace('_', '-')}", str(value))]
DIVISORS = (1, 2, 3, 6)


def documented_steps():
    """{number: name} from the step table of gqa.py's docstring ("    8  attention(q, k, v, g) ...")."""
    table = gqa.__doc__.split("The lab, in order")[1].split("\n\n")[0]
    return {int(n): name for n, name in re.findall(r"^\s+(\d+)\s+(\w+)", table, re.M)}


def stubbed(source, names):
    """gqa.py's source with the bodies of the steps in names (a class: its __init__) replaced
    by a starter's raise NotImplementedError, docstrings kept."""
    lines, steps = source.split("\n"), {name: n for n, name in documented_steps().items()}
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            found.append((node.name, node))
        elif isinstance(node, ast.ClassDef) and node.name in names:
            found += [(node.name, fn) for fn in node.body
                      if isinstance(fn, ast.FunctionDef) and fn.name == "__init__"]
    assert sorted({name for name, _ in found}) == sorted(names), found
    for name, fn in sorted(found, key=lambda f: -f[1].lineno):
        has_doc = isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant)
        first = fn.body[1] if has_doc else fn.body[0]
        lines[first.lineno - 1:fn.end_lineno] = [
            " " * first.col_offset + f'raise NotImplementedError("step {steps[name]}: {name}")']
    return "\n".join(lines)


def section(text, number):
    """Section number of a report, without the line that seals the code's sections (its hash
    is of the whole report above it)."""
    from gqa_tools.report.files import SEAL
    return SEAL.sub("", text.split(f"\n## {number}. ")[1].split("\n## ")[0])


def table_header(body, first):
    """The header cells of the Markdown table whose first row after the rule starts with first."""
    lines = body.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(f"| {first} "))
    return [c.strip() for c in lines[i - 2].strip("|").split("|")]


def table(body, *first):
    """The rows (lists of cells, header first) of the Markdown table whose header starts with first."""
    lines = body.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("| ") and [c.strip() for c in line.strip("|").split("|")][:len(first)]
                 == list(first))
    rows = []
    for line in lines[start:start + 1] + lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


class Steps(unittest.TestCase):
    """How the tools number and name the lab's steps, in this process."""

    def test_the_tools_number_the_steps_as_gqa_py_does(self):
        documented = documented_steps()
        self.assertEqual(sorted(documented), list(range(1, len(LESSON) + 1)))
        self.assertEqual(referee.STEPS, tuple(documented[n] for n in sorted(documented)))
        self.assertEqual(referee.step_name("KVCache"), "step 21, KVCache")
        self.assertIsNone(referee.step_name("_fold"))

    def test_a_step_not_implemented_is_named_with_its_number(self):
        def fold_kv_mean(kv, g):
            raise NotImplementedError("step 5: fold_kv_mean")

        def attention(q, k, v, g):                  # done, but calls a step that is not
            return fold_kv_mean(k, g)

        def helper():
            raise NotImplementedError

        lab = report_lab.Lab(types.SimpleNamespace(attention=attention, helper=helper), "student.py")
        for call, says in ((lambda: lab.attention([], [], [], 1), "needs step 5, fold_kv_mean: not implemented yet"),
                           (lambda: lab.helper(), "`helper` is not implemented yet"),
                           (lambda: lab.KVCache(1, 1), "needs step 21, KVCache: student.py has no `KVCache`"),
                           (lambda: lab.no_such_thing, "student.py has no `no_such_thing`")):
            with self.assertRaises(report_lab.Unavailable) as caught:
                call()
            self.assertEqual(str(caught.exception), says)

    def test_the_student_report_changes_sections_5_and_9_only(self):
        mine, ours = report_sections.STUDENT_SECTIONS, report_sections.SECTIONS
        self.assertEqual([t for t, _ in mine][:4] + [t for t, _ in mine][5:8],
                         [t for t, _ in ours][:4] + [t for t, _ in ours][5:8])
        self.assertEqual((mine[4][1], mine[8][1]), (report_student.section_output_of_module,
                                                    report_student.section_write_up))
        self.assertEqual(ours[8][0], "9. How to read this")


@heavy
class CoreTrack(unittest.TestCase):
    """The report of a module with the core steps only, and of one without steps 15 and 18."""

    EARLY = ("reports",)

    @staticmethod
    def reports():
        """report --module of the core module, of the core module without the cache's steps,
        and of the core module in Japanese (--lang ja): {kind: [status, stdout, stderr, the
        report, its path]}.  Which steps the grader passes (section 8's) is test_report's; here
        the grader is said to fail step 9 (in the language of the report)."""
        folder = tempfile.mkdtemp()
        with open(gqa.__file__, encoding="utf-8") as f:
            source = f.read()
        later = [name for n, name in documented_steps().items() if n not in CORE]
        done = {}
        try:
            for kind, names, lang in (("core", later, "en"),
                                      ("no cache", later + ["kv_cache_elements", "cache_table"], "en"),
                                      ("core ja", later, "ja")):
                said = mock.patch("gqa_tools.report.child.graded", side_effect=lambda *args, **kwargs: Graded(
                    [i18n._("step {step}, {name}: not started").format(step=9, name="grouped_attention")], []))
                done[kind] = report_of(os.path.join(folder, kind.replace(" ", "_")), stubbed(source, names), lang,
                                       said)
        finally:
            shutil.rmtree(folder)
        return done

    def report(self, kind="core"):
        status, out, err, text, path = early(self.reports)[kind]
        self.assertEqual(status, 0, err)
        self.assertIn(f"--module {path}", text.splitlines()[2])
        return text

    def test_a_report_in_japanese_holds_the_handouts_tables_and_no_english_sentence(self):
        from tests.untranslated import untranslated
        english, text = self.report(), self.report("core ja")
        _status, out, _err, _text, path = early(self.reports)["core ja"]
        report = os.path.join(os.path.dirname(path), "r.md")                     # its --out
        self.assertIn(f"--module {path} --out {report} --lang ja ", text.splitlines()[2])   # what writes it again
        i18n.use("ja")
        try:
            titles = [i18n._(title) for title, _section in report_sections.STUDENT_SECTIONS]
            heading = i18n._("gqa lab report")
        finally:
            i18n.use("en")
        self.assertTrue(text.startswith(f"# {heading}\n"))
        self.assertEqual(re.findall(r"^## (.*)$", text, re.M), titles)
        self.assertEqual([t for t, _section in report_sections.STUDENT_SECTIONS if i18n._(t) in titles], [])  # translated
        # The handout's two tables, the KV cache (section 2) and the multiplications per term (section 3):
        # the same rows as in English, under translated headers.
        for n, first in ((2, "MQA"), (3, "q_proj")):
            rows = [table(section(report, n), *table_header(section(report, n), first)) for report in (english, text)]
            self.assertEqual(rows[1][1:], rows[0][1:], n)
            self.assertEqual(len(rows[1][0]), len(rows[0][0]))
            self.assertNotEqual(rows[1][0][0], rows[0][0][0])
        self.assertEqual(untranslated(text + out, "ja"), [], text)
        # Every table lines up by display width: each of its lines as wide, each | in one column.
        tables = re.findall(r"(?:^\|.*\n)+", text, re.M)
        self.assertGreaterEqual(len(tables), 8)
        for block in tables:
            columns = {tuple(i18n.width(line[:i]) for i, c in enumerate(line) if c == "|")
                       for line in block.splitlines()}
            self.assertEqual(len(columns), 1, block)
        self.assertTrue(any(i18n.width(line) > len(line) for block in tables for line in block.splitlines()))

    def test_the_kv_cache_table_is_the_closed_form_worked_by_hand(self):
        two = section(self.report(), 2)
        rows = table(two, "method", "g")
        self.assertEqual([int(r[1]) for r in rows[1:]], list(DIVISORS))            # every divisor of h = 6
        for r in rows[1:]:
            g = int(r[1])
            elements = 2 * 3 * g * 64 * 8                  # 2 x layers x g x length x head_dim
            self.assertEqual(r[0], {1: "MQA", 6: "MHA"}.get(g, "GQA"))
            self.assertEqual(r[2], f"{elements:,}")
            self.assertAlmostEqual(float(r[3]), g / 6, places=4)             # the ratio to MHA
            self.assertIn(f"({2 * elements:,})", r[4])     # bytes at 16 bits
        self.assertIn("*Not counted in real caches: needs step 21, KVCache: not implemented yet.*", two)
        self.assertNotIn("counted in real caches |", two)

    def test_the_multiplications_per_term_are_worked_by_hand(self):
        three = section(self.report(), 3)
        rows = table(three, "term")
        self.assertEqual(rows[0][1:], [f"{'MQA' if g == 1 else 'MHA' if g == 6 else 'GQA'} g={g}"
                                       for g in DIVISORS])
        cell = {(r[0], g): int(c.replace(",", "")) for r in rows[1:] for g, c in zip(DIVISORS, r[1:])}
        for g in DIVISORS:
            for term, value in multiplies_by_hand(g).items():
                self.assertEqual(cell[(term, g)], value, (term, g))
        self.assertIn("*Not tallied while the code ran: needs step 20, count_multiplies: not "
                      "implemented yet.*", three)

    def test_the_whole_block_is_counted(self):
        four = section(self.report(), 4)
        proj, mlp, body = 4096 * 4096, 3 * 4096 * 11008, 32 * 128 * 65       # per token at 64 positions
        row = next(r for r in table(four, "method", "g") if r[:2] == ["MHA", "32"])
        self.assertEqual([int(c.replace(",", "")) for c in row[2:7]],
                         [2 * proj, 2 * proj, body, mlp, 4 * proj + mlp + body])

    def test_the_output_difference_is_attention_on_the_stated_seed(self):
        five = section(self.report(), 5)
        self.assertIn('`random.Random("attention inputs:3")`, seed 3', five)
        rng = random.Random("attention inputs:3")
        q, k, v = ([[[rng.uniform(-1.0, 1.0) for _ in range(2)] for _ in range(5)] for _ in range(6)]
                   for _ in range(3))                # q, then k, then v: [h=6][n=5][d=2]
        mha = reference.ref_attention(q, k, v, 6)
        rows = table(five, "method", "g", "max abs difference")
        self.assertEqual([int(r[1]) for r in rows[1:]], list(DIVISORS))
        for r in rows[1:]:
            expected = reference.ref_output_difference(reference.ref_attention(q, k, v, int(r[1])), mha)
            for got, want in zip(r[2:], expected):              # printed to 4 significant digits
                self.assertTrue(math.isclose(float(got), want, rel_tol=1e-3, abs_tol=1e-12), (r, expected))
        self.assertEqual(rows[-1][2:], ["0", "0", "1"])                          # g = h is MHA
        self.assertGreater(float(rows[1][3]), 0.1)                               # g = 1 is not
        self.assertIn("checked with `==`, not a tolerance: yes.", five)
        self.assertIn("(`layer(x, weights, g)` on random weights, over 2 seeds): needs step 10, "
                      "init_weights: not implemented yet.*", five)

    def test_the_write_up_is_left_for_the_student_with_the_handouts_questions(self):
        text = self.report()
        self.assertNotIn("## 9. How to read this", text)
        nine = section(text, 9)
        self.assertTrue(text.split("\n## 9. ")[1].startswith("Your write-up"))
        for asked in ("shrinks by a factor of h/g", "scores", "weighted sum", "stay the same at every g",
                      "not yet a measured loss of quality", "GQA paper", "by their mean"):
            self.assertIn(asked, " ".join(nine.split()))
        self.assertEqual(nine.count("*(your answer)*"), 2)

    def test_every_section_left_out_names_the_step_it_needs(self):
        text = self.report()
        self.assertNotIn("a function it needs", text)
        said = re.findall(r"(.{0,80})not implemented yet", text)
        self.assertTrue(said)
        for before in said:
            self.assertRegex(before, r"needs step \d+, \w+: $")
        self.assertEqual(text.count("*Not computed from"), 3)      # sections 6, 7 and 8

    def test_without_the_cache_steps_only_the_cache_section_is_left_out(self):
        core, path = self.report(), early(self.reports)["core"][4]
        other, other_path = self.report("no cache"), early(self.reports)["no cache"][4]
        self.assertEqual(section(other, 2), f"The KV cache: what g changes\n\n*Not computed from "
                                            f"{other_path}: needs step 18, cache_table: not implemented yet.*\n")
        for n in (1, 3, 5, 6, 7, 8, 9):
            self.assertEqual(section(other, n).replace(other_path, "PATH"),
                             section(core, n).replace(path, "PATH"), n)
        # Section 4's figure draws the cache beside the work: its tables stay, the figure names the step.
        block = section(core, 4).split("Every g of Llama-2-7B's attention")[0]
        self.assertTrue(section(other, 4).startswith(block))
        self.assertIn("*Figure not drawn: needs step 18, cache_table: not implemented yet.*", section(other, 4))


def report_of(folder, source, lang, *patches):
    """`python -m gqa report --module` (in this process) of source written as folder/gqa.py,
    with patches on: [status, stdout, stderr, the report, the module's path]."""
    os.mkdir(folder)
    path, report = os.path.join(folder, "gqa.py"), os.path.join(folder, "r.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        status = gqa_cli.main(["report", "--module", path, "--out", report, "--lang", lang, *ARGS])
    with open(report, encoding="utf-8") as f:
        return [status, out.getvalue(), err.getvalue(), f.read(), path]


def planted(source, name, code, method=None):
    """gqa.py's source with code put first in the body of function name (of class name's
    method, when method is given), after its docstring."""
    tree = ast.parse(source)
    node = next(n for n in tree.body if getattr(n, "name", None) == name)
    if method:
        node = next(n for n in node.body if getattr(n, "name", None) == method)
    has_doc = isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    first = node.body[1] if has_doc else node.body[0]
    lines = source.split("\n")
    lines[first.lineno - 1:first.lineno - 1] = [" " * first.col_offset + line for line in code.split("\n")]
    return "\n".join(lines)


# A call that never returns, even to a module's own `except Exception`: busy, or asleep.
# Python 3.10 looks for a signal at no instruction of a loop whose body is only `try: pass`
# (its interpreter's gap, closed in 3.11; lab.Watch says so): there the busy loop calls.
ENDLESS = "while True:\n    try:\n        {}\n    except Exception:\n        pass".format(
    "len(())" if sys.version_info[:2] == (3, 10) else "pass")
SLEEPING = "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except Exception:\n        pass"


class Watching(unittest.TestCase):
    """lab.Watch: a call into the module that does not return in its time is stopped, named
    by its step, and the step answers no more."""

    def setUp(self):
        import importlib.util
        self.dir = tempfile.TemporaryDirectory()
        path = os.path.join(self.dir.name, "hangs.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write("calls = 0\n\n"
                    "def _flatten(a):\n" + "".join("    " + line + "\n" for line in ENDLESS.split("\n")) +
                    "\ndef output_difference(a, b):\n    global calls\n    calls += 1\n    return _flatten(a)\n\n"
                    "class KVCache:\n    @property\n    def elements(self):\n        while True:\n            pass\n")
        spec = importlib.util.spec_from_file_location("hangs", path)
        self.module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.module)

    def tearDown(self):
        self.dir.cleanup()

    def test_a_step_that_hangs_is_stopped_named_and_not_called_again(self):
        lab = report_lab.Lab(self.module, "hangs.py")
        why = "a call did not return within 0.2 s: step 14, output_difference"   # its helper looped
        with report_lab.Watch(self.module, 0.2) as watch:
            for _ in range(2):
                with self.assertRaises(report_lab.Unavailable) as raised:
                    lab.output_difference([[1.0]], [[1.0]])
                self.assertEqual(str(raised.exception), why)
        self.assertEqual((watch.hung, self.module.calls), ([why], 1))          # the second call never ran it

    def test_a_method_that_hangs_is_named_by_its_class_even_outside_a_guarded_call(self):
        cache = self.module.KVCache()
        with report_lab.Watch(self.module, 0.2), self.assertRaises(report_lab.Hung) as raised:
            cache.elements                                   # read by the report's own code, not through Lab
        self.assertEqual(raised.exception.why, "a call did not return within 0.2 s: step 21, KVCache")
        hung = raised.exception
        self.assertEqual(report_lab.attempt(lambda: (_ for _ in ()).throw(hung)), report_lab.Missing(hung.why))


class TheWriteUp(unittest.TestCase):
    """Section 9 is the student's: running the report again writes the sections above anew and
    keeps the answers as written (a rerun that --check suggested wiped them), and --check does
    not call them a difference; read as Notepad saves it, a mark and CRLF."""

    def finish(self, path, numbers, checking=False):
        from gqa_tools.report import command
        title = i18n._(report_sections.STUDENT_SECTIONS[-1][0])
        parts = [report_sections.Part("", "# A report\n"), report_sections.Part("1. Numbers", numbers + "\n"),
                 report_sections.Part(title, "The questions.\n\n*(your answer)*\n")]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = command.finish(path, parts, checking, "python -m gqa report", None)
        with open(path, encoding="utf-8") as f:
            return status, f.read(), err.getvalue()

    def test_answers_are_kept_and_the_sections_above_written_anew(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "report.md")
            status, first, err = self.finish(path, "| 1 |")
            self.assertEqual((status, err), (0, ""))
            answers = "The cache shrinks by h/g; the scores do not.\n\nSee row 2."
            answered = first.replace("*(your answer)*", answers)
            with open(path, "wb") as f:                                  # as Notepad saves it
                f.write(b"\xef\xbb\xbf" + answered.replace("\n", "\r\n").encode("utf-8"))
            status, again, err = self.finish(path, "| 2 |")
            self.assertEqual(status, 0)
            fresh = self.fresh("| 2 |")
            self.assertEqual(again, fresh.replace("*(your answer)*", answers))   # the sections above anew
            self.assertIn("your write-up, section 9, is kept as you wrote it", err)
            self.assertEqual(os.listdir(folder), ["report.md"])           # the numbers changed: no word lost
            self.assertEqual(self.finish(path, "| 2 |", checking=True)[0], 0)
            self.assertEqual(self.finish(path, "| 3 |", checking=True)[0], 1)      # the numbers still count
            with open(path, "w", encoding="utf-8") as f:                   # written in another language
                f.write(again.replace("## 9. ", "## 9. 여러분의 글: "))
            rewritten = self.finish(path, "| 2 |")[1]
            self.assertIn("9. 여러분의 글: ", rewritten)                           # its answers still there
            self.assertIn("The cache shrinks by h/g; the scores do not.", rewritten)
            os.remove(path)
            status, fresh, err = self.finish(path, "| 2 |")                  # nothing to keep: nothing said
            self.assertEqual((status, err), (0, ""))
            self.assertIn("*(your answer)*", fresh)

    def test_a_report_of_an_earlier_grader_keeps_its_answers_and_no_copy_is_made(self):
        # No seal line: the write-up is found by its heading, and the sections above it, as
        # the code writes them now, lose nothing.
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "report.md")
            first = self.finish(path, "| 1 |")[1]
            with open(path, "w", encoding="utf-8") as f:
                f.write(re.sub(r"<!--[^\n]*-->\n", "", first).replace("*(your answer)*", "my answer"))
            status, text, err = self.finish(path, "| 1 |")
            self.assertEqual((status, os.listdir(folder)), (0, ["report.md"]), err)
            self.assertEqual(text, first.replace("*(your answer)*", "my answer"))

    def test_a_report_is_never_written_over_python_source(self):
        # `report --out gqa.py` wrote the report over the student's lab.
        from gqa_tools.report import files
        with tempfile.TemporaryDirectory() as folder:
            lab = os.path.join(folder, "gqa.py")
            with open(lab, "w", encoding="utf-8") as f:
                f.write("x = 1\n")
            for path, module in ((lab, None), (lab, lab), (os.path.join(folder, "tool.py"), None)):
                self.assertIn("it is Python source, perhaps your gqa.py", files.why_not_write(path, module))
            self.assertFalse(files.why_not_write(os.path.join(folder, "mine.md"), lab))

    def fresh(self, numbers):
        """The report finish writes where there was none."""
        with tempfile.TemporaryDirectory() as folder:
            return self.finish(os.path.join(folder, "report.md"), numbers)[1]

    def test_no_word_a_student_wrote_is_lost_however_many_runs(self):
        # The write-up's heading taken out, a note written in a section above, the file saved in
        # Korean Windows' cp949: a rerun wrote over the answers, then a copy of them kept beside
        # the report was written over by the next run.
        answers = "The cache shrinks by h/g; the scores do not."
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "report.md")
            first = self.finish(path, "| 1 |")[1]

            def run(data, numbers="| 1 |", lang="en"):
                with open(path, "wb") as f:
                    f.write(data)
                i18n.use(lang)
                try:
                    status, text, err = self.finish(path, numbers)
                finally:
                    i18n.use("en")
                self.assertEqual(status, 0, err)
                return text, err, sorted(os.listdir(folder))

            # The heading taken out: the seal above it finds the write-up; nothing to keep apart.
            text, err, files = run(re.sub(r"\n## 9\.[^\n]*\n", "\n", first).replace("*(your answer)*", answers)
                                   .encode("utf-8"), "| 2 |")
            self.assertIn(answers, text)
            self.assertEqual(files, ["report.md"])
            # A note in a section the code writes: the file kept, first as it was, then never written over.
            for k, (now, then, note) in enumerate((("| 2 |", "| 3 |", "my note: row 2 is MQA"),
                                                  ("| 3 |", "| 2 |", "another note")), 1):
                data = text.replace(now, f"{now} {note}").encode("utf-8")
                text, err, files = run(data, then)
                kept = os.path.join(folder, "report.previous.md" if k == 1 else "report.previous-2.md")
                with open(kept, "rb") as f:
                    self.assertEqual(f.read(), data)                         # the bytes, as they were
                self.assertIn(f"held words of yours outside your write-up, where the code writes anew: the file "
                              f"as it was is kept in {kept}", err)
                self.assertIn(answers, text)
            self.assertEqual(files, ["report.md", "report.previous-2.md", "report.previous.md"])
            # Saved in cp949: read as Korean Windows saves it, written in UTF-8, its bytes kept.
            data = text.replace(answers, "캐시는 h/g배 줄어든다").encode("cp949")
            text, err, files = run(data, lang="ko")
            self.assertIn("캐시는 h/g배 줄어든다", text)
            self.assertIn("UTF-8로 저장되어 있지 않았습니다", err)         # the likelier why, not "words of yours"
            with open(os.path.join(folder, "report.previous-3.md"), "rb") as f:
                self.assertEqual(f.read(), data)
            # Seal and heading both taken out: the write-up cannot be told, so the file is kept.
            bare = re.sub(r"<!--[^\n]*-->\n", "", re.sub(r"\n## 9\.[^\n]*\n", "\n", text))
            text, err, files = run(bare.encode("utf-8"), lang="ko")
            self.assertIn("report.previous-4.md", files)
            # Unchanged, or empty: nothing to keep, nothing said.
            for data in (text.encode("utf-8"), b""):
                again, err, after = run(data, lang="ko")
                self.assertEqual((after, err), (files, ""))


@heavy
class AStepThatHangs(unittest.TestCase):
    """A report of a module one of whose steps hangs: the sections that need the step name it,
    the others and the write-up are written, and its progress is shown meanwhile."""

    EARLY = ("reports",)

    @staticmethod
    def reports():
        """report --module, each call given 1 s (on the command's configuration), its progress
        shown at once, of gqa.py with output_difference looping (in English) and with KVCache's
        elements sleeping for ever (in Korean); section 8 does not train (grouped_attention_backward not started):
        {kind: [status, stdout, stderr, the report, its path]}."""
        from gqa_tools.report import child as report_child
        folder = tempfile.mkdtemp()
        with open(gqa.__file__, encoding="utf-8") as f:
            source = stubbed(f.read(), ["grouped_attention_backward"])
        done = {}
        try:
            for kind, lang, planting in (("output_difference", "en", ("output_difference", ENDLESS)),
                                         ("elements", "ko", ("KVCache", SLEEPING, "elements"))):
                done[kind] = report_of(os.path.join(folder, kind), planted(source, *planting), lang,
                                       mock.patch.object(report_child, "CALL_TIMEOUT", 1.0),
                                       mock.patch.object(report_child, "CHILD_TIMEOUT", 30.0),
                                       mock.patch.object(report_child, "PROGRESS_AFTER", 0.0))
        finally:
            shutil.rmtree(folder)
        return done

    def test_only_the_sections_that_need_the_step_name_it_and_the_rest_are_written(self):
        status, _out, err, text, path = early(self.reports)["output_difference"]
        self.assertEqual(status, 0, err)
        why = "a call did not return within 1 s: step 14, output_difference"
        for n in (5, 6):
            self.assertIn(f"*Not computed from {path}: {why}.*", section(text, n), n)
        for n in (1, 2, 3, 4, 7):
            self.assertNotIn("Not computed", section(text, n), n)
            self.assertNotIn("did not return", section(text, n), n)
        self.assertIn("| MQA ", section(text, 2))                            # its tables are there
        self.assertIn(f"not yet: step {NUMBER['grouped_attention_backward']}, grouped_attention_backward: not started",
                      section(text, 8))
        self.assertEqual(section(text, 9).count("*(your answer)*"), 2)
        self.assertIn(f"gqa report: {why}; the sections that need it say so\n", err)
        self.assertRegex(err, rf"gqa report: \d+ s: [^\n]+ \(the report of {re.escape(path)}, built in the grader's "
                              r"worker\)\n")

    def test_a_method_that_hangs_names_its_class_in_the_students_language(self):
        status, _out, err, text, path = early(self.reports)["elements"]
        self.assertEqual(status, 0, err)
        why = "1초 안에 반환되지 않은 호출이 있었습니다: 단계 21, KVCache"
        self.assertIn(why, section(text, 2))
        self.assertIn(f"gqa report: {why}. 그 단계가 필요한 절에는 그렇다고 적습니다\n", err)
        self.assertIn("초 경과: ", err)
        for n in (1, 3, 5, 6):
            self.assertNotIn(why, section(text, n), n)
        self.assertEqual(section(text, 9).count("*(여기에 답을 쓰세요)*"), 2)


if __name__ == "__main__":
    unittest.main()
