"""gqa_grader.language.starter: the starter keeps gqa.py's lesson and holds none of its solutions."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from gqa_grader.language import starter
from gqa_grader.language.starter import make_starter
from gqa_grader.steps.manifest import LESSON
from tests.helpers import ROOT, heavy, run_grader

with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as _f:
    SOURCE = _f.read()
TREE = ast.parse(SOURCE)


def steps_of_the_table(source):
    """The step table of gqa.py's module docstring, name -> number; Tally, the class
    count_multiplies hands out, is step 20's."""
    doc = ast.get_docstring(ast.parse(source), clean=False)
    table = next(part for part in doc.split("\n\n") if part.startswith("The lab, in order"))
    steps = {m.group(2): int(m.group(1)) for m in re.finditer(r"^ *(\d+)  +(\w+)", table, re.M)}
    steps["Tally"] = steps["count_multiplies"]
    return steps


STEP_OF = steps_of_the_table(SOURCE)
STARTER = make_starter(SOURCE, STEP_OF)
# The lab's records (gqa.py's __all__ leaves them out: help(gqa) lists their fields at their steps).
RECORDS = ["Weights", "PreparedWeights", "Difference", "Multiplies", "BlockMultiplies", "CacheRow",
           "MultipliesRow", "DecodeTraffic"]


def load(text, name="starter_gqa"):
    """text as a module, imported from a file of its own."""
    folder = tempfile.mkdtemp(prefix="gqa-starter-")
    path = os.path.join(folder, "gqa.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def public_defs(tree):
    """(qualified name, node, owner) of every public function and method of a public class,
    __init__ and documented dunders included: what a student writes."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            out.append((node.name, node, node.name))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and (
                        not item.name.startswith("_") or item.name == "__init__"
                        or (item.name.endswith("__") and ast.get_docstring(item))):
                    out.append((f"{node.name}.{item.name}", item, node.name))
    return out


def dummies(fn):
    """None for every parameter fn requires, as it takes them: (args, kwargs)."""
    args, kwargs = [], {}
    for p in inspect.signature(fn).parameters.values():
        if p.default is p.empty and p.kind == p.KEYWORD_ONLY:
            kwargs[p.name] = None
        elif p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            args.append(None)
    return args, kwargs


@heavy
class FromGqa(unittest.TestCase):
    """The starter made from this checkout's gqa.py."""

    @classmethod
    def setUpClass(cls):
        cls.module, cls.path = load(STARTER)

    def test_it_keeps_every_step_banner_in_order(self):
        def banners(text):
            return [line for line in text.splitlines() if line.startswith("# Step ")]
        self.assertEqual(len(banners(SOURCE)), len(LESSON))
        self.assertEqual(banners(STARTER), banners(SOURCE))

    def test_it_keeps_the_manual_and_the_comments_above_each_step(self):
        self.assertEqual(self.module.__doc__, ast.get_docstring(TREE, clean=False))
        lines = SOURCE.splitlines()
        for node in TREE.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                top = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
                above = top
                while above and lines[above - 1].startswith("#"):
                    above -= 1
                if lines[above].startswith(starter.SOLUTION_ONLY):   # about the kernels: left out
                    above = top
                block = "\n".join(lines[above:top + 1])          # its comments and its first line
                self.assertTrue(block in STARTER, node.name)

    def test_it_says_nothing_of_the_kernels_and_the_checks_it_leaves_out(self):
        for opening in starter.SOLUTION_ONLY:
            self.assertIn(opening, SOURCE)
            self.assertNotIn(opening, STARTER)
        self.assertIn("MAX_SIZE = ", STARTER)                  # the limits stay, with their comment
        self.assertIn("# Limits: a size or count is at most MAX_SIZE", STARTER)
        for cited in ("Ainslie et al. 2023", "Shazeer 2019", "llama2.c's `h / kv_mul`",
                      "w_q   [h][d_model][d]", "MQA paper's einsum layout"):
            self.assertTrue(cited in STARTER, cited)

    def test_every_step_raises_not_implemented_naming_its_step(self):
        for qualname, _, owner in public_defs(TREE):
            with self.subTest(qualname):
                obj = self.module
                for part in qualname.split("."):
                    obj = getattr(obj, part) if obj is self.module else obj.__dict__[part]
                fn = obj.fget if isinstance(obj, property) else obj
                if inspect.isclass(fn):
                    fn = fn.__init__
                args, kwargs = dummies(fn)
                with self.assertRaises(NotImplementedError) as ctx:
                    fn(*args, **kwargs)
                self.assertTrue(str(ctx.exception).startswith(f"step {STEP_OF[owner]}: {qualname}"),
                                str(ctx.exception))

    def test_the_grader_finds_every_step_not_started(self):
        run = run_grader("--module", self.path, "--json")
        steps = json.loads(run.stdout)["steps"]
        self.assertEqual(len(steps), len(LESSON))
        self.assertEqual({s["status"] for s in steps}, {"not started"}, run.stdout)

    def test_in_japanese_every_step_raises_in_japanese_and_is_found_not_started(self):
        # The language is the prose's only: the grader reads the exception's type, never
        # its words, so a student's language changes no verdict.
        from gqa_grader.teacher import handout
        folder = tempfile.mkdtemp(prefix="gqa-starter-ja-")
        self.addCleanup(shutil.rmtree, folder)
        path = handout.write_starter(folder, os.path.join(ROOT, "gqa.py"), lang="ja")
        with open(path, encoding="utf-8") as f:
            module, _ = load(f.read(), "starter_gqa_ja")
        with self.assertRaises(NotImplementedError) as ctx:
            module.kv_head(0, 8, 2)
        self.assertTrue(str(ctx.exception).startswith(f"ステップ {STEP_OF['kv_head']}: kv_head: "),
                        str(ctx.exception))
        run = run_grader("--module", path, "--json")
        steps = json.loads(run.stdout)["steps"]
        self.assertEqual([s["status"] for s in steps], ["not started"] * len(LESSON), run.stdout)

    def test_it_holds_no_line_of_a_solution(self):
        lines = SOURCE.splitlines()
        inside = set()                                  # the lines of public bodies, docstrings aside
        for _, fn, _ in public_defs(TREE):
            body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
            for node in body:
                inside.update(range(node.lineno - 1, node.end_lineno))
        elsewhere = {lines[i].strip() for i in range(len(lines)) if i not in inside}
        solution = {lines[i].strip() for i in inside} - elsewhere - {""}
        self.assertGreater(len(solution), 150)
        leaked = [line for line in STARTER.splitlines() if line.strip() in solution]
        self.assertEqual(leaked, [])
        starter = ast.parse(STARTER)
        private = [n.name for n in starter.body if isinstance(n, ast.FunctionDef) and n.name.startswith("_")]
        self.assertEqual(private, [])                   # no kernel, no helper
        self.assertNotIn("_tally", STARTER)
        self.assertNotIn("_write", STARTER)             # KVCache's private methods go too

    def test_docstrings_keep_their_indentation(self):
        starter = load(STARTER, "starter_docs")[0]
        lines = SOURCE.splitlines()
        for qualname, fn, _ in public_defs(TREE):
            if ast.get_docstring(fn) is None:              # Tally.__init__, KVCache.__init__
                continue
            doc = fn.body[0]
            text = "\n".join(lines[doc.lineno - 1:doc.end_lineno])
            self.assertTrue(text in STARTER, qualname)
            self.assertTrue(text.startswith(" " * (fn.col_offset + 4) + '"""'), qualname)
        import gqa
        for name in gqa.__all__ + RECORDS:                  # the records are not in __all__
            self.assertEqual(inspect.getdoc(getattr(starter, name)), inspect.getdoc(getattr(gqa, name)), name)

    def test_the_records_are_kept_and_no_machinery(self):
        import gqa
        for name in RECORDS:
            theirs, ours = getattr(self.module, name), getattr(gqa, name)
            self.assertEqual(theirs._fields, ours._fields)
            self.assertEqual(str(inspect.signature(theirs)), str(inspect.signature(ours)))
        d = self.module.Difference(1.0, 2.0, 0.5)
        self.assertEqual((d.rel_l2, d._replace(cosine=1.0).cosine, list(d)), (2.0, 1.0, [1.0, 2.0, 0.5]))
        self.assertEqual((self.module.MAX_SIZE, self.module.MAX_ALLOCATION), (10 ** 12, 10 ** 8))
        self.assertTrue(issubclass(self.module.GQAError, ValueError))
        # The lesson and the one exception class: every class kept is public, no metaclass,
        # and nothing is marked as machinery to leave alone.
        classes = [n for n in ast.parse(STARTER).body if isinstance(n, ast.ClassDef)]
        self.assertEqual([n.name for n in classes if n.name.startswith("_")], [])
        self.assertEqual([n.name for n in classes if n.keywords], [])
        self.assertNotIn("leave it as it is", STARTER)

    def test_run_as_a_program_it_says_in_one_line_what_to_run(self):
        for argv in (["report"], ["tables", "--module", "gqa.py"], []):
            run = subprocess.run([sys.executable, self.path] + argv, capture_output=True, text=True,
                                 timeout=60, cwd=os.path.dirname(self.path))
            self.assertEqual((run.returncode, run.stdout), (2, ""))
            self.assertEqual(len(run.stderr.splitlines()), 1, run.stderr)
            self.assertIn("python grader.py --module PATH/gqa.py", run.stderr)
            self.assertIn("--module PATH/gqa.py", run.stderr.split("grader.py")[1])

    def test_the_same_bytes_every_time(self):
        self.assertEqual(make_starter(SOURCE, dict(reversed(list(STEP_OF.items())))), STARTER)
        self.assertEqual(make_starter(SOURCE, STEP_OF), STARTER)
        self.assertTrue(STARTER.endswith(")\n") and "\n\n\n\n" not in STARTER)
        self.assertLessEqual(max(map(len, (l for l in STARTER.splitlines() if "raise Not" in l))), 99)


SMALL = '''"""A small lab."""

import math

LIMIT = 10


# ---------------------------------------------------------------------------
# Part 1.
# ---------------------------------------------------------------------------


class _Base:
    """Machinery: leave it as it is."""


class Row(_Base):
    """A record."""
    __slots__ = ("a",)


# Step 1. double ---------------------------------------------------------------
# The helper below does it.
def _twice(x):
    return 2 * x


# A citation (Someone 2020).
def double(x: int = LIMIT) -> int:
    """Return 2 x.

    >>> double(2)
    4
    """
    return _twice(x)


class Counter:
    """Counts."""

    KINDS = ("a", "b")
    __slots__ = ("_n",)

    def __init__(self):
        self._n = 0

    def _bump(self):
        self._n += 1

    def __len__(self):
        """Return the count."""
        return self._n

    def __repr__(self):
        return "Counter()"


# ---------------------------------------------------------------------------
# Plumbing.
# ---------------------------------------------------------------------------

_CACHE = {}


def _helper():
    return math.pi


if __name__ == "__main__":
    print(double())
'''


class Rules(unittest.TestCase):
    """What the starter keeps and drops, on a lab small enough to read whole."""

    def test_a_small_lab(self):
        text = make_starter(SMALL, {"double": 1, "Counter": 2})
        self.assertIn("# Step 1. double ----", text)
        self.assertNotIn("The helper below does it", text)        # it described dropped code
        self.assertIn("# A citation (Someone 2020).\ndef double(x: int = LIMIT) -> int:", text)
        self.assertIn('    """Return 2 x.\n\n    >>> double(2)\n        4\n    """'.replace("        4", "    4"), text)
        self.assertIn('    raise NotImplementedError("step 1: double: Return 2 x.")', text)
        self.assertIn('        raise NotImplementedError("step 2: Counter.__init__")', text)
        self.assertIn('        raise NotImplementedError("step 2: Counter.__len__: Return the count.")', text)
        self.assertIn('    KINDS = ("a", "b")', text)
        for gone in ("_twice", "_bump", "__repr__", "_CACHE", "_helper", "Plumbing", "self._n", "print(double())"):
            self.assertTrue(gone not in text, gone)
        for kept in ('"""A small lab."""', "import math", "LIMIT = 10", "# Part 1.", "class _Base:",
                     "class Row(_Base):", '    __slots__ = ("a",)'):
            self.assertIn(kept, text)
        module = load(text, "small_starter")[0]
        with self.assertRaises(NotImplementedError):
            module.double()
        with self.assertRaises(NotImplementedError):
            module.Counter()

    def test_a_name_without_a_step_is_stubbed_without_one(self):
        text = make_starter('def f():\n    """Do it."""\n    return 1\n', {})
        self.assertIn('raise NotImplementedError("f: Do it.")', text)

    def test_what_it_cannot_take_apart_is_refused(self):
        with self.assertRaisesRegex(ValueError, "line 1: f is a one-line def"):
            make_starter("def f(): return 1\n", {"f": 1})
        with self.assertRaisesRegex(ValueError, "a public name defined under an if"):
            make_starter("import sys\nif sys.platform:\n    def f():\n        return 1\n", {"f": 1})

    def test_a_long_summary_wraps_and_quotes_survive(self):
        summary = 'Return "MHA" or ' + " ".join(["word"] * 40) + "."
        text = make_starter(f'def f():\n    """{summary}"""\n    return 1\n', {"f": 3})
        namespace = {}
        exec(compile(text, "starter", "exec"), namespace)
        with self.assertRaises(NotImplementedError) as ctx:
            namespace["f"]()
        self.assertEqual(str(ctx.exception), f"step 3: f: {summary}")
        self.assertLessEqual(max(len(line) for line in text.splitlines() if '"""' not in line), 99)


class TheModule(unittest.TestCase):

    def test_standard_library_only_and_no_future_import(self):
        path = os.path.join(ROOT, "gqa_grader", "language", "starter.py")
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        self.assertLessEqual(imported, {"ast", "re"})


if __name__ == "__main__":
    unittest.main()
