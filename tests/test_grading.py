"""What a grade is made of, held still: one tolerance that every check reads and the
first line prints, and GRADER_VERSION raised whenever what a case checks or how points
count changes (the rule in CONTRIBUTING.md, "When GRADER_VERSION changes").

The checks' fingerprint is the sha256 of their code's syntax trees, written out by a
walk of our own (ast.dump's text differs between Pythons), without docstrings and with
the texts of messages (`_("...")`) left out: rewording feedback changes no grade.
tests/data/grader_version.json records the fingerprint of the code that GRADER_VERSION
names: a change in it fails the test until it is recorded (`python -m tests.test_grading
--record`), so that whoever changes a check decides, by the rule, whether the version
changes too."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
import unittest

from tests.helpers import ROOT, captured

# Where what a case checks, and how points count, is written: the inputs drawn, the
# expected answers, the comparison, every check and refusal part, the tracks' steps, the
# points, the grading loop.  Not: how a result is printed or named (printing, mistakes).
CHECKED = ("inputs", "reference", "answers", "compare", "refusals", "checking", "checks", "checks_heads",
           "checks_layer", "checks_counting", "checks_decoding", "checks_backward", "robustness", "tracks",
           "results", "grading")
RECORD = os.path.join(ROOT, "tests", "data", "grader_version.json")
MESSAGES = {"_", "N_", "ngettext"}


def _canonical(node, out):
    """Append node's tree to out as text that no Python version changes: each node's type
    and its fields that are set, a message's text as "S"."""
    if isinstance(node, list):
        out.append("[")
        for item in node:
            _canonical(item, out)
        out.append("]")
        return
    if not isinstance(node, ast.AST):            # a string escaped whole: repr() follows the Unicode tables
        out.append(json.dumps(node) if isinstance(node, str) else repr(node))
        return
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MESSAGES:
        out.append(f"message({node.func.id},{len(node.args)})")
        return
    out.append(type(node).__name__ + "(")
    for field in node._fields:
        value = getattr(node, field, None)
        if value is None or value == [] or field in ("kind", "type_comment"):
            continue
        out.append(field + "=")
        _canonical(value, out)
    out.append(")")


def _without_docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return tree


def fingerprint():
    """The sha256 of the checks' code (CHECKED), docstrings and messages' texts aside."""
    digest = hashlib.sha256()
    for name in CHECKED:
        with open(os.path.join(ROOT, "gqa_grader", name + ".py"), encoding="utf-8") as f:
            tree = _without_docstrings(ast.parse(f.read()))
        out = []
        _canonical(tree, out)
        digest.update(name.encode() + b"\0" + "".join(out).encode("utf-8") + b"\0")
    return digest.hexdigest()


def recorded():
    with open(RECORD, encoding="utf-8") as f:
        return json.load(f)


class GraderVersion(unittest.TestCase):
    """A class's grades are resumed, and compared between runs, by GRADER_VERSION: it must
    change whenever a check does."""

    def test_a_change_in_a_check_is_a_decision_about_the_version(self):
        from gqa_grader.grading import GRADER_VERSION
        record, now = recorded(), fingerprint()
        self.assertEqual(now, record["fingerprint"],
                         f"the checks' code (gqa_grader: {', '.join(CHECKED)}) changed since grader "
                         f"{record['version']} was recorded: if what a case checks or how points count "
                         "changed, raise GRADER_VERSION (CONTRIBUTING.md, \"When GRADER_VERSION changes\"); "
                         "either way, record it: python -m tests.test_grading --record")
        self.assertEqual(record["version"], GRADER_VERSION,
                         "GRADER_VERSION changed: record it (python -m tests.test_grading --record)")

    def test_the_fingerprint_sees_a_check_and_not_a_docstring_or_a_message(self):
        source = 'def f(x):\n    """Doc."""\n    return expect(x, _("case {c}"), rel=REL_TOL)\n'
        def canon(text):
            out = []
            _canonical(_without_docstrings(ast.parse(text)), out)
            return "".join(out)
        same = [source.replace("Doc.", "Another doc."), source.replace("case {c}", "the case {c}")]
        changed = [source.replace("rel=REL_TOL", "rel=1e-8"), source.replace("return expect(x", "return expect(-x")]
        self.assertEqual({canon(s) for s in same}, {canon(source)})
        self.assertNotIn(canon(source), {canon(s) for s in changed})
        self.assertEqual(len({canon(s) for s in changed}), 2)


class OneTolerance(unittest.TestCase):
    """Every check compares floats to compare.REL_TOL (or asks for no value at all: the
    shape alone), and the first line of a run prints that tolerance."""

    def test_no_check_names_a_tolerance_of_its_own(self):
        found = []
        folder = os.path.join(ROOT, "gqa_grader")
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".py") or name == "compare.py":
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                for keyword in getattr(node, "keywords", ()):
                    numbers = [n for n in ast.walk(keyword.value) if isinstance(n, ast.Constant)
                               and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)]
                    if keyword.arg in ("rel", "rel_tol", "abs_tol") and numbers:
                        found.append(f"{name}:{node.lineno}: {keyword.arg}={ast.unparse(keyword.value)}")
        self.assertEqual(found, [])

    def test_the_first_line_prints_the_tolerance_every_check_uses(self):
        from gqa_grader import cli, compare
        status, out, err = captured(cli.main, ["--steps", "1", "--cases", "0", "--lang", "en"])
        self.assertEqual(status, 0, err)
        self.assertIn(f"floats to rel {compare.REL_TOL:g}, abs {compare.ABS_TOL:g};", out.splitlines()[0])

if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        sys.path.insert(0, ROOT)
        from gqa_grader.grading import GRADER_VERSION
        with open(RECORD, "w", encoding="utf-8") as f:
            json.dump({"version": GRADER_VERSION, "fingerprint": fingerprint()}, f, indent=1)
            f.write("\n")
        print(f"recorded grader {GRADER_VERSION}'s checks in {os.path.relpath(RECORD)}")
    else:
        unittest.main()
