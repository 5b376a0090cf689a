"""The copy report (gqa_grader.teacher.copies): what a copier changes cheaply does not hide a copy,
and what every student writes alike is not one.  Every submission here is made from
gqa.py's own text, transformed with ast as a copier would."""

from __future__ import annotations

import ast
import builtins
import keyword
import unittest

from gqa_grader.teacher import copies, handout
from gqa_grader.language.i18n import LANGUAGES
from gqa_grader.steps.tracks import LESSON, TRACKS
from tests.helpers import ROOT

with open(f"{ROOT}/gqa.py", encoding="utf-8") as _f:
    SOURCE = _f.read()
LINES = SOURCE.splitlines()
STARTER = handout.make_starter(SOURCE)                       # the default track: every step
STARTERS = handout.starters(SOURCE)                          # ... in each language
NON_CORE = [name for name in LESSON if name not in TRACKS["core"]]


def functions(text):
    """{name: node} of text's top-level functions and of its classes' methods (Class.name)."""
    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            found.update((f"{node.name}.{n.name}", n) for n in node.body if isinstance(n, ast.FunctionDef))
    return found


def without_docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node) is not None:
            node.body = node.body[1:] or [ast.Pass()]
    return tree


class Renamed(ast.NodeTransformer):
    """Every name the module makes (functions, arguments, variables) spelled otherwise;
    builtins, keywords and dunders kept, so that the program still means the same."""

    def __init__(self):
        self.names = {}

    def new(self, name):
        if hasattr(builtins, name) or keyword.iskeyword(name) or name.startswith("__"):
            return name
        return self.names.setdefault(name, f"my_{len(self.names)}_{name.strip('_')[::-1]}")

    def visit_Name(self, node):
        node.id = self.new(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.new(node.arg)
        return self.generic_visit(node)

    def visit_FunctionDef(self, node):
        node.name = self.new(node.name)
        return self.generic_visit(node)


def disguised(text):
    """text as ast.unparse prints it, its docstrings out, its names changed and its
    top-level functions in the reverse order."""
    tree = Renamed().visit(without_docstrings(ast.parse(text)))
    places = [i for i, node in enumerate(tree.body) if isinstance(node, ast.FunctionDef)]
    defs = [tree.body[i] for i in places]
    for i, node in zip(places, reversed(defs)):
        tree.body[i] = node
    return ast.unparse(tree)


def padded(text):
    """text with a pass after every statement (ast.unparse's layout)."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                setattr(node, field, [s for stmt in body for s in (stmt, ast.Pass())])
    return ast.unparse(tree)


def replaced(text, bodies):
    """text with the statements after the docstring of each function named in bodies
    replaced by the lines given for it (indented as gqa.py's function bodies are)."""
    lines = text.splitlines()
    found = functions(text)
    for name, new in sorted(bodies.items(), key=lambda item: -found[item[0]].lineno):
        node = found[name]
        first = node.body[1 if ast.get_docstring(node) is not None else 0].lineno
        lines[first - 1:node.end_lineno] = new
    return "\n".join(lines) + "\n"


def body_lines(name, skip=0):
    """The lines of gqa.py's function name after its docstring (and skip statements more)."""
    node = functions(SOURCE)[name]
    first = node.body[(1 if ast.get_docstring(node) is not None else 0) + skip]
    return LINES[first.lineno - 1:node.end_lineno]


def stubbed(names):
    """gqa.py with the functions named (a class: its methods) each a stub: its docstring,
    then a raise."""
    found = functions(SOURCE)
    chosen = [key for key in found if key in names or key.partition(".")[0] in names]
    return replaced(SOURCE, {key: [" " * found[key].body[0].col_offset + 'raise NotImplementedError("not yet")']
                             for key in chosen})


class Copies(unittest.TestCase):

    def test_a_copy_unparsed_renamed_reordered_and_without_docstrings_is_found(self):
        copy = disguised(SOURCE)
        self.assertNotEqual(copies.tokens(copy), copies.tokens(SOURCE))       # the tokens differ
        groups, pairs, solutions = copies.compare({"ann": SOURCE, "ben": copy}, STARTERS, SOURCE)
        self.assertEqual(groups, [["ann", "ben"]])
        self.assertEqual([(key, share >= copies.SOLUTION) for share, key, _ in solutions],
                         [("ann", True), ("ben", True)])
        text = copies.report(groups, pairs, str, solutions)
        self.assertIn("same code but for functions under 40 tokens (2): ann = ben", text)
        self.assertRegex(text, r"\nben is the shipped solution over again: it holds \d+% of the solution's code")

    def test_a_classmates_lab_padded_with_pass_is_found(self):
        cut = SOURCE.index("# Step 10.")
        lab = SOURCE[:cut] + STARTER[STARTER.index("# Step 10."):]           # steps 1-9 written
        groups, pairs, _ = copies.compare({"ann": lab, "ben": padded(lab)}, STARTERS, SOURCE)
        self.assertEqual(groups, [["ann", "ben"]])

    def test_untouched_starters_in_japanese_and_korean_are_no_copies(self):
        for track in (None, TRACKS["core"]):
            given = handout.given_steps(track)
            english = handout.make_starter(SOURCE, given)
            for lang in LANGUAGES[1:]:
                text = handout.starters(SOURCE, given)[LANGUAGES.index(lang)]
                self.assertNotEqual(text, english)
                class_of = {"ann.py": text, "ben.py": text, "cal.py": text + "\n"}
                for base in (english, handout.starters(SOURCE, given)):
                    with self.subTest(track=track, lang=lang, base=type(base).__name__):
                        self.assertEqual(copies.compare(class_of, base, SOURCE), ([], [], []))

    def test_two_labs_of_steps_1_to_3_in_the_tokens_they_need_are_no_copies(self):
        bodies = {"valid_g": body_lines("valid_g", skip=1),                 # the check left out
                  "method_name": body_lines("_method_name"), "kv_head": body_lines("_kv_head")}
        lab = replaced(STARTER, bodies)
        self.assertNotEqual(lab, STARTER)
        other = lab.replace("query_head", "i").replace("small", "divisors")
        groups, pairs, solutions = copies.compare({"ann": lab, "ben": other}, STARTERS, SOURCE)
        self.assertEqual((groups, pairs, solutions), ([], [], []))

    def test_the_solution_with_the_steps_outside_the_core_stubbed_is_reported_with_its_share(self):
        partial = stubbed(NON_CORE)
        fingerprints = set(copies.fingerprints(partial))
        for given in ((), handout.given_steps(TRACKS["core"])):
            base = handout.starters(SOURCE, given)
            common = set().union(*(copies.fingerprints(text) for text in base))
            solution = set(copies.fingerprints(SOURCE)) - common
            expected = len(solution & fingerprints) / len(solution)        # the share, counted here
            with self.subTest(given=len(given)):
                self.assertTrue(0.5 < expected < copies.SOLUTION, expected)
                groups, pairs, solutions = copies.compare({"ann": partial}, base, SOURCE)
                self.assertEqual([(key, share) for share, key, _ in solutions], [("ann", round(expected, 2))])
                self.assertIn(f"\nann shares {expected:.0%} of the shipped solution's code (its lines ",
                              copies.report(groups, pairs, str, solutions))

    def test_different_work_is_not_flagged(self):
        cut = SOURCE.index("# Step 10.")
        first = SOURCE[:cut] + STARTER[STARTER.index("# Step 10."):]         # steps 1-9 written
        second = STARTER[:STARTER.index("# Step 10.")] + SOURCE[cut:]        # steps 10-25 written
        groups, pairs, solutions = copies.compare({"ann": first, "ben": second}, STARTERS, SOURCE)
        self.assertEqual((groups, pairs), ([], []))
        self.assertEqual(sorted(key for _, key, _ in solutions), ["ann", "ben"])   # each part of it

    def test_a_copy_that_does_not_parse_is_still_found_by_its_other_functions(self):
        broken = replaced(SOURCE, {"kv_head": ["    return kv_head(:"]})
        self.assertRaises(SyntaxError, ast.parse, broken)
        groups, pairs, solutions = copies.compare({"ann": broken, "ben": disguised(SOURCE)}, STARTERS, SOURCE)
        self.assertEqual([key for share, key, _ in solutions if share >= copies.SOLUTION], ["ann", "ben"])
        self.assertEqual(copies.fingerprints("def f(:\n"), {})
        self.assertEqual(copies.fingerprints("\x00"), {})


if __name__ == "__main__":
    unittest.main()
