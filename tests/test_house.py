"""The layout of the house: one job a file, imports one way, short functions, what is
installed, and a student's folder honoured by the grader."""

from __future__ import annotations

import ast
import functools
import os
import re
import shutil
import tempfile
import unittest

from tests.helpers import ROOT, heavy, run_grader


# The referee's rooms, lowest first, as gqa_grader/__init__.py lists them: a room imports
# only the rooms below it.  Inside a room, each module is a floor of its own, in the
# order the room's __init__.py lists them (its map, and the order they import each other).
ROOMS = ["language", "running", "expected", "steps", "verdict", "teacher"]
ROOM_LIMIT = 12                 # modules a room holds at most


def room_modules(room):
    """The modules of a room of the referee, as its __init__.py's docstring lists them."""
    with open(os.path.join(ROOT, "gqa_grader", room, "__init__.py"), encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    return re.findall(r"^    (\w+) ", doc, re.M)


# The floors, lowest first: a module may import the standard library and the modules
# on floors below its own, and nothing else of the project.
FLOORS = [
    ["gqa"],
    ["gqa_sandbox.enter"], ["gqa_sandbox"],
    [f"gqa_grader.{room}" for room in ROOMS],           # a room's face: a docstring, no import
    *[[f"gqa_grader.{room}.{name}"] for room in ROOMS for name in room_modules(room)],
    ["gqa_grader.cli"],
    ["gqa_grader"], ["gqa_grader.__main__", "grader"],
    ["gqa_tools.svg", "gqa_tools.statistics", "gqa_tools.seeds"],
    ["gqa_tools.formats", "gqa_tools.options", "gqa_tools.referee"], ["gqa_tools.counts", "gqa_tools.language"],
    ["gqa_tools.sizer.units", "gqa_tools.sizer.rules", "gqa_tools.sizer.families", "gqa_tools.sizer.fields"],
    ["gqa_tools.sizer.kinds", "gqa_tools.sizer.files"], ["gqa_tools.sizer.accounting"],
    ["gqa_tools.sizer.layouts"], ["gqa_tools.sizer.readers"], ["gqa_tools.sizer.decoder"],
    ["gqa_tools.sizer.shape"], ["gqa_tools.sizer.cache"], ["gqa_tools.sizer.summary"],
    ["gqa_tools.sizer", "gqa_tools.uptraining.recipe"],
    ["gqa_tools.uptraining.tasks", "gqa_tools.uptraining.claims"],
    ["gqa_tools.uptraining.model", "gqa_tools.uptraining.sentences"],
    ["gqa_tools.uptraining.experiment", "gqa_tools.uptraining.printing"], ["gqa_tools.uptraining"],
    ["gqa_tools.report.settings", "gqa_tools.report.files"], ["gqa_tools.report.lab", "gqa_tools.report.reads"],
    ["gqa_tools.report.measuring", "gqa_tools.report.record"], ["gqa_tools.report.text", "gqa_tools.report.figures"],
    ["gqa_tools.report.costs", "gqa_tools.report.outputs", "gqa_tools.report.trained"],
    ["gqa_tools.report.reading", "gqa_tools.report.student"], ["gqa_tools.report.sections"],
    ["gqa_tools.report.child"], ["gqa_tools.report.command"],
    ["gqa_tools.tables", "gqa_tools.report", "gqa_tools.sizer.command", "gqa_tools.bench",
     "gqa_tools.uptraining.command"],
    ["gqa_tools.cli"], ["gqa_tools"],
]


def project_modules():
    """{dotted name: path} of the project's own modules (tests, benchmarks aside), the
    modules of sub-packages too."""
    found = {"gqa": os.path.join(ROOT, "gqa.py"), "grader": os.path.join(ROOT, "grader.py")}
    for package in ("gqa_sandbox", "gqa_grader", "gqa_tools"):
        for folder, dirs, files in os.walk(os.path.join(ROOT, package)):
            dirs[:] = sorted(d for d in dirs if os.path.isfile(os.path.join(folder, d, "__init__.py")))
            prefix = os.path.relpath(folder, ROOT).replace(os.sep, ".")
            for name in sorted(files):
                if name.endswith(".py"):
                    stem = name[:-3]
                    found[prefix if stem == "__init__" else f"{prefix}.{stem}"] = os.path.join(folder, name)
    return found


def packages_of():
    """The project's packages and sub-packages, dotted, sorted."""
    return sorted(dotted for dotted, path in MODULES.items() if path.endswith("__init__.py"))


@functools.lru_cache(maxsize=None)
def tree_of(path):
    """The syntax tree of a file, parsed once for all the tests here (none changes it)."""
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read())


LOADERS = {"import_module", "__import__", "run_module", "find_spec", "spec_from_file_location"}


def loaded_by_name(node):
    """The module a call such as importlib.import_module("gqa_tools.cli") loads by a
    name written in the code (a string), or None."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
    first = node.args[0]
    if func in LOADERS and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def main_block(tree):
    """The lines of a file's `if __name__ == "__main__":` block: (first, last), or None."""
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and \
                getattr(node.test.left, "id", None) == "__name__" and \
                any(isinstance(c, ast.Constant) and c.value == "__main__" for c in node.test.comparators):
            return node.lineno, node.end_lineno
    return None


@functools.lru_cache(maxsize=None)
def imports_of(dotted, path):
    """[(imported project module, enclosing function or None, line)] of a file: every
    import in it (inside functions too, relative ones resolved), and every module it
    loads by a name written in it (importlib.import_module("..."), __import__,
    runpy.run_module); all but those of its `if __name__ == "__main__":` block, which
    runs when the file is the program and is no import of the module (main_imports)."""
    tree = tree_of(path)
    package = dotted if path.endswith("__init__.py") else dotted.rpartition(".")[0]
    spans = [(n.lineno, n.end_lineno, n.name) for n in ast.walk(tree)
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    main = main_block(tree) or (0, -1)
    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", 0) and main[0] <= node.lineno <= main[1]:
            continue
        if loaded_by_name(node):
            names = [loaded_by_name(node)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(filter(None, [package, base]))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                     for a in node.names]          # a module of a package, or a name in one
        else:
            continue
        inside = [name for start, end, name in spans if start <= node.lineno <= end]
        for name in names:
            if name.split(".")[0] in ("gqa", "gqa_sandbox", "gqa_grader", "gqa_tools", "grader"):
                found.append((name, inside[-1] if inside else None, node.lineno))
    return found


MODULES = project_modules()


@heavy
class Layout(unittest.TestCase):

    def setUp(self):
        self.modules = MODULES
        self.floor = {name: i for i, row in enumerate(FLOORS) for name in row}

    def test_every_module_has_a_floor(self):
        self.assertEqual(sorted(set(self.modules) - set(self.floor)), [])

    def test_imports_run_one_way(self):
        for dotted, path in self.modules.items():
            for name, _function, line in imports_of(dotted, path):
                if name not in self.modules or name == dotted:
                    continue                 # "from gqa_grader import x": x is checked as a module
                self.assertLess(self.floor[name], self.floor[dotted],
                                f"{path}:{line}: {dotted} imports {name}, on a floor not below its own")

    def test_the_referee_is_in_rooms_that_import_one_way(self):
        # gqa_grader/__init__.py lists the rooms in ROOMS' order; every module of the
        # referee but its door (cli, __main__) is in one; none holds over ROOM_LIMIT; and
        # no module imports one of a room above its own (the floors say it line by line).
        doc = ast.get_docstring(tree_of(self.modules["gqa_grader"]))
        self.assertEqual(re.findall(r"^    (\w+) ", doc, re.M), ROOMS + ["cli"])
        door = {"gqa_grader", "gqa_grader.cli", "gqa_grader.__main__"}
        homeless = [name for name in self.modules if name.startswith("gqa_grader") and name not in door
                    and name.split(".")[1] not in ROOMS]
        self.assertEqual(homeless, [])
        for room in ROOMS:
            with self.subTest(room=room):
                self.assertLessEqual(len(room_modules(room)), ROOM_LIMIT)
        for dotted, path in self.modules.items():
            if dotted.startswith("gqa_grader.") and dotted not in door:
                own = ROOMS.index(dotted.split(".")[1])
                for name, _function, line in imports_of(dotted, path):
                    if name.startswith("gqa_grader.") and name.split(".")[1] in ROOMS:
                        self.assertLessEqual(ROOMS.index(name.split(".")[1]), own,
                                             f"{path}:{line}: {dotted} imports {name}, of a room above its own")

    def test_a_module_loaded_by_its_name_counts_as_an_import(self):
        source = ("import importlib\n"
                  "def door():\n"
                  "    return importlib.import_module('gqa_tools.cli'), __import__('gqa_grader')\n"
                  "if __name__ == '__main__':\n"
                  "    import gqa_tools.report\n")
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(source)
        self.addCleanup(os.unlink, f.name)
        self.assertEqual(imports_of("gqa", f.name), [("gqa_tools.cli", "door", 3), ("gqa_grader", "door", 3)])

    def test_the_lab_as_a_program_hands_its_command_line_to_the_tools_alone(self):
        # `python -m gqa COMMAND` runs gqa.py as the program: its __main__ block (no import of
        # the module gqa) names the tools' command line, and nothing else of the project.
        tree = tree_of(self.modules["gqa"])
        first, last = main_block(tree)
        named = sorted({loaded_by_name(n) for n in ast.walk(tree) if loaded_by_name(n)} |
                       {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
                        if a.name.split(".")[0] in ("gqa_tools", "gqa_grader", "gqa_sandbox")})
        self.assertEqual(named, ["gqa_tools.cli"])
        self.assertTrue(all(first <= n.lineno <= last for n in ast.walk(tree) if loaded_by_name(n)))

    def test_the_referee_imports_nothing_of_the_lab_or_the_tools(self):
        for dotted, path in self.modules.items():
            if dotted.startswith("gqa_grader"):
                tops = {name.split(".")[0] for name, _, _ in imports_of(dotted, path)}
                self.assertLessEqual(tops, {"gqa_grader", "gqa_sandbox"}, path)

    def test_the_lab_is_the_lesson_first_and_imports_nothing_of_the_project(self):
        path = self.modules["gqa"]
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        step_1 = next(i for i, line in enumerate(lines, 1) if line.startswith("def valid_g("))
        self.assertLessEqual(step_1, 100)                       # the manual, then step 1
        project = ("gqa", "gqa_sandbox", "gqa_grader", "gqa_tools", "grader")
        imported = [(n.lineno, a.name if isinstance(n, ast.Import) else n.module)
                    for n in ast.walk(tree_of(path)) if isinstance(n, (ast.Import, ast.ImportFrom))
                    for a in n.names]
        self.assertEqual([(line, name) for line, name in imported if name.split(".")[0] in project], [])

    def test_no_function_over_60_lines(self):
        long = []
        for path in self.modules.values():
            tree = tree_of(path)
            long += [f"{os.path.relpath(path, ROOT)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
                     for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.end_lineno - n.lineno + 1 > 60]
        self.assertEqual(long, [])

    def test_no_file_of_the_three_parts_over_600_lines_but_the_lab(self):
        long = []
        for dotted, path in self.modules.items():
            with open(path, encoding="utf-8") as f:
                lines = len(f.read().splitlines())
            if dotted != "gqa" and lines > 600:
                long.append(f"{os.path.relpath(path, ROOT)} ({lines} lines)")
        self.assertEqual(long, [])

    def test_no_test_file_over_800_lines(self):
        # A module's tests are in tests/test_<module>.py; shared helpers in helpers.py or a
        # tests/<name>_support.py.
        folder = os.path.join(ROOT, "tests")
        long = []
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    lines = len(f.read().splitlines())
                if lines > 800:
                    long.append(f"tests/{name} ({lines} lines)")
        self.assertEqual(long, [])

    def test_a_status_is_compared_as_a_status_never_as_its_text(self):
        # results.Status: a step's status (and a class row's) is compared to Status.PASSED,
        # never to "passed": one misspelt literal would be silently never equal.
        statuses = {"passed", "failed", "not started", "not graded"}
        found = []
        for dotted, path in self.modules.items():
            for node in ast.walk(tree_of(path)):
                if not isinstance(node, ast.Compare):
                    continue
                sides = [node.left] + list(node.comparators)
                texts = [n.value for side in sides
                         for n in (side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side])
                         if isinstance(n, ast.Constant) and n.value in statuses]
                if texts:
                    found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno} {texts}")
        self.assertEqual(found, [])

    def test_each_package_says_which_module_holds_what(self):
        # The package's docstring is its map: every module and sub-package is named in it.
        for dotted in packages_of():
            doc = ast.get_docstring(tree_of(self.modules[dotted])) or ""
            parts = {name.rpartition(".")[2] for name in self.modules
                     if name.rpartition(".")[0] == dotted}
            with self.subTest(package=dotted):
                self.assertEqual(sorted(p for p in parts if not re.search(rf"\b{re.escape(p)}\b", doc)), [])

    def test_contributing_lists_every_file_once_with_a_sentence(self):
        with open(os.path.join(ROOT, "CONTRIBUTING.md"), encoding="utf-8") as f:
            text = f.read()
        layout = text[text.index("## Layout"):text.index("\n## ", text.index("## Layout") + 1)]
        listed = {}
        for row in layout.splitlines():
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            if len(cells) == 2 and cells[0].startswith("`"):
                for name in re.findall(r"`([^`]+)`", cells[0]):
                    listed[name] = cells[1]
        files = sorted(os.path.relpath(p, ROOT).replace(os.sep, "/") for p in self.modules.values())
        self.assertEqual([f for f in files if f not in listed], [])
        for name, sentence in listed.items():
            with self.subTest(name=name):
                self.assertTrue(os.path.exists(os.path.join(ROOT, name.rstrip("/"))), name)
                self.assertGreater(len(sentence.split()), 3, name)

    def test_no_future_import_in_the_referee(self):
        # It would import a module named __future__, which a planted file could be.
        for dotted, path in self.modules.items():
            if dotted.startswith("gqa_grader") or dotted == "grader":
                future = [n.lineno for n in ast.walk(tree_of(path))
                          if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
                self.assertEqual(future, [], path)

    def test_what_is_installed_is_the_lab_the_referee_and_the_tools(self):
        with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn('py-modules = ["gqa"]\n', text)
        listed = ", ".join(f'"{p}"' for p in packages_of())
        self.assertIn(f'packages = [{listed}]\n', text)
        packages = sorted(d for d in os.listdir(ROOT)
                          if os.path.isfile(os.path.join(ROOT, d, "__init__.py")) and d != "tests")
        self.assertEqual(packages, ["gqa_grader", "gqa_sandbox", "gqa_tools"])
        loose = sorted(n for n in os.listdir(ROOT) if n.endswith(".py"))
        self.assertEqual(loose, ["gqa.py", "grader.py"])      # grader.py is a door, not installed


@heavy
class StudentFolder(unittest.TestCase):
    """Inside a lab folder, `python ../grader.py` grades ./gqa.py, and says so."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.lab = tempfile.mkdtemp(dir=ROOT, prefix=".mylab-")    # a lab folder in the project
        made = run_grader("--starter", cls.lab, cwd=os.getcwd(), timeout=60)
        assert made.returncode == 0, made.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)
        shutil.rmtree(cls.lab)

    def grade_in(self, folder, *args):
        grader = os.path.relpath(os.path.join(ROOT, "grader.py"), folder)
        return run_grader("--only", "1", "--cases", "0", *args, grader=grader, cwd=folder, timeout=60)

    def test_the_grader_grades_the_folders_own_gqa_py(self):
        run = self.grade_in(self.lab)
        first, *rest = run.stdout.splitlines()
        self.assertTrue(first.startswith("grading ./gqa.py (grader "), first)
        self.assertIn("repeat with: python ../grader.py", first)
        self.assertEqual(run.returncode, 1)                   # the bare starter: not started
        self.assertIn("step  1  ----  valid_g", run.stdout)

    def test_a_folder_without_one_grades_the_gqa_py_beside_the_grader(self):
        run = self.grade_in(self.dir, "--json")
        import json
        doc = json.loads(run.stdout)
        self.assertEqual(os.path.abspath(os.path.join(self.dir, doc["module"])),
                         os.path.join(ROOT, "gqa.py"))
        self.assertEqual((doc["passed"], run.returncode), (1, 0))


if __name__ == "__main__":
    unittest.main()
