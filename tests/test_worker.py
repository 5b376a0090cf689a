"""The worker (gqa_grader/running/worker.py) and what it sends: a file of its own, run as a
script (WorkerCode); what it sends bounded before the grader builds anything from it
(TheGradersMemory, Blocked), and every string from it escaped when printed or written
(WhatTheWorkerSays)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import unittest
from unittest import mock

from gqa_grader import cli
from gqa_grader.running import values
from gqa_grader.running import failures, process
from gqa_grader.running import worker as worker_program
from tests.helpers import ROOT, early, heavy, run_grader, start_early
from tests.sealed_support import (STARTER, Copy, fixed_hash, main_in, one_document, in_each, completed, as_run,
                                  raised, grade_source)


class Values(unittest.TestCase):
    """What the worker sends and takes: a row of numbers crosses at once, as each of its
    values would one at a time."""

    @staticmethod
    def one_at_a_time(x, depth=0):
        """w_enc as it was written before rows crossed at once: every value on its own."""
        from array import array
        if depth > 50:
            return {"$other": "nesting", "repr": "deeper than 50 levels"}
        if x is None or type(x) in (bool, str, int, float):
            return x
        if type(x) is list:
            return [Values.one_at_a_time(v, depth + 1) for v in x]
        if type(x) is tuple:
            return {"$tuple": [Values.one_at_a_time(v, depth + 1) for v in x]}
        if type(x) is array:
            return {"$array": x.typecode, "values": [Values.one_at_a_time(v, depth + 1) for v in x]}
        return worker_program.w_enc(x, depth)

    def test_a_row_is_sent_as_its_values_one_at_a_time_would_be(self):
        import random
        from array import array
        rng = random.Random(7)
        leaves = [0.5, -0.0, float("nan"), float("inf"), 3, True, None, "a", 2 ** 70]

        def value(depth):
            pick = rng.random()
            if depth > 3 or pick < 0.3:
                return rng.choice(leaves)
            if pick < 0.7:
                return [value(depth + 1) for _ in range(rng.randint(0, 4))]
            if pick < 0.85:
                return tuple(value(depth + 1) for _ in range(rng.randint(0, 3)))
            return array(rng.choice("di"), [rng.randint(-3, 3) for _ in range(rng.randint(0, 3))])
        deep = []
        for depth in range(47, 53):            # rows about the depth of 50, where nesting is cut
            x = [1.5, 2]
            for _ in range(depth):
                x = [x, array("d", [1.0])]
            deep.append(x)
        for x in [value(0) for _ in range(300)] + deep:
            self.assertEqual(json.dumps(worker_program.w_enc(x)), json.dumps(self.one_at_a_time(x)))
        row = [1.0, 2, None, "s"]                   # taken as json.loads made it: a list of its own
        self.assertIs(worker_program.w_dec(row), row)
        self.assertEqual(worker_program.w_dec([row, {"$tuple": [row]}]), [row, (row,)])


class WorkerCode(unittest.TestCase):
    """The worker is a file of its own, run as a script: the process that imports the
    module holds the standard library and worker.py, no reference and no check."""

    def test_the_worker_imports_only_the_standard_library(self):
        import ast
        with open(process.WORKER, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        stdlib = {"array", "ctypes", "importlib", "inspect", "json", "linecache", "os", "resource",
                  "sys", "traceback"}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                self.assertLessEqual({n.split(".")[0] for n in names}, stdlib, node.lineno)
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.assertIn("w_main", defined)
        self.assertTrue(all(name.startswith(("w_", "_w_")) for name in defined), defined)

    def test_a_run_calls_the_target_its_caller_names(self):
        # "package.module:function", imported by the worker from the run's paths; a name of
        # another form is refused on both sides.
        self.assertIs(worker_program.w_target("json:dumps"), json.dumps)
        for name in ("tables", "json.dumps", "json:", ":dumps", "json:no_such", "os:sep", "json:a.b", None):
            with self.subTest(name=name), self.assertRaises(LookupError):
                worker_program.w_target(name)
        with self.assertRaisesRegex(ValueError, "package.module:function"):
            list(process.run_in_child(os.path.join(ROOT, "gqa.py"), "tables"))

    def test_a_module_cannot_choose_the_target(self):
        # The target is the caller's, imported from the worker's config before the module is:
        # a module that rewrites the config, plants a module of the target's name in
        # sys.modules, or has a function of the target's name, is still called by the caller's.  (A module runs its own code in its
        # worker anyway, and can replace the worker's functions, as DAEMON does: naming a
        # target gives it nothing more; what it sends is data the caller checks.)
        folder = tempfile.mkdtemp()
        try:
            with open(os.path.join(folder, "callers.py"), "w", encoding="utf-8") as f:
                f.write("def child(module, *args):\n    yield ['the caller', module.__name__, list(args)]\n"
                        "def other(module, *args):\n    yield 'chosen by the module'\n")
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write("import __main__, sys, types\n__main__.W.config['run']['target'] = 'callers:other'\n"
                        "sys.modules['callers'] = types.SimpleNamespace(child=lambda *a: iter(['planted']))\n"
                        "def child(*args):\n    yield 'the module'\n")
            os.chmod(folder, 0o755)               # as root, the worker's user reads callers.py
            os.chmod(os.path.join(folder, "callers.py"), 0o644)
            items = list(process.run_in_child(path, "callers:child", [1], paths=[folder]))
        finally:
            shutil.rmtree(folder)
        self.assertEqual(items, [["the caller", "gqa_under_tool", [1]]])

    def test_a_childs_item_too_deep_or_of_another_shape_is_refused_not_a_crash(self):
        # A module in a tool's child can replace the worker's w_run and send what it likes:
        # a list nested 700 deep (JSON reads it, cleaning it would recurse past the limit),
        # or tables without their keys; each is the child's failure, never a traceback.
        folder = tempfile.mkdtemp()
        try:
            path = os.path.join(folder, "gqa.py")
            for sent, tables in (("'[' * 700 + ']' * 700", False), ("'{\"cache\": \"x\"}'", True)):
                with open(path, "w", encoding="utf-8") as f:
                    f.write("import __main__, json\n"
                            "def _run(mod, run):\n"
                            f"    __main__.W.out.write('{{\"item\": ' + {sent} + '}}\\n')\n"
                            "    __main__.W.out.flush()\n"
                            "    __main__.w_send({'done': True})\n"
                            "__main__.w_run = _run\n")
                os.chmod(folder, 0o755)
                os.chmod(path, 0o644)
                if tables:
                    from gqa_tools import tables as gqa_tables
                    with self.assertRaisesRegex(ValueError, "the child process sent no tables"):
                        gqa_tables.texts_from_child(path, {}, None, False)
                else:
                    with self.assertRaisesRegex(failures.Failure, "sent something that is not an item"):
                        list(process.run_in_child(path, "gqa_tools.tables:child_texts", [{}, None, False],
                                                  paths=[ROOT]))
        finally:
            shutil.rmtree(folder)

    def test_a_tools_child_gets_no_variable_of_the_callers_but_path(self):
        folder = tempfile.mkdtemp()
        try:
            with open(os.path.join(folder, "callers.py"), "w", encoding="utf-8") as f:
                f.write("import os\ndef child(module):\n    yield sorted(os.environ)\n")
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write("X = 1\n")
            os.chmod(folder, 0o755)
            os.chmod(os.path.join(folder, "callers.py"), 0o644)
            with mock.patch.dict(os.environ, {"A_TEACHERS_TOKEN": "secret"}):
                items = list(process.run_in_child(path, "callers:child", paths=[folder]))
        finally:
            shutil.rmtree(folder)
        self.assertEqual(items, [["PATH"]])

    def test_the_worker_is_run_as_a_script(self):
        with open(process.WORKER, encoding="utf-8") as f:
            self.assertTrue(f.read().rstrip().endswith('if __name__ == "__main__":\n    w_main(sys.argv)'))

    def test_values_go_as_plain_data_with_their_types(self):
        from array import array
        self.assertEqual(worker_program.w_enc((1, [2.5, None])), {"$tuple": [1, [2.5, None]]})
        self.assertEqual(worker_program.w_enc(array("d", [1.0])), {"$array": "d", "values": [1.0]})
        self.assertEqual(worker_program.w_enc(object())["$other"], "object")
        deep = []
        for _ in range(60):
            deep = [deep]
        encoded = json.dumps(worker_program.w_enc(deep))
        self.assertIn('"$other": "nesting"', encoded)
        self.assertEqual(values.decode(worker_program.w_enc((1, [2.0]))), (1, [2.0]))


def forging(lines_expr):
    """A starter whose worker answers the request for valid_g with the lines lines_expr
    evaluates to (in the worker), each a line of its own."""
    return STARTER + (
        "\nimport __main__, itertools as _it\n"
        "_serve = __main__.w_serve\n"
        "def _forge(mod, requests):\n"
        "    line = requests.readline()\n"
        "    if '\"valid_g\"' not in line:\n"
        "        return _serve(mod, _it.chain([line], requests))\n"
        f"    for _line in {lines_expr}:\n"
        "        __main__.W.out.write(_line + '\\n')\n"
        "    __main__.W.out.flush()\n"
        "    requests.readline()\n"
        "__main__.w_serve = _forge\n")


@heavy
class TheGradersMemory(unittest.TestCase):
    """What the worker sends is bounded before the grader builds anything from it."""

    # Answers the module's loop forges, made in the worker, and what each must fail with.
    LARGE = [("[" + "'{\"n\": 1, \"i\": 0, \"value\": [' + '[],' * (1 << 20) + '[]]}'" + "]",
              "more than 200,000 values and lists"),
             ("[" + "'{\"n\": 1, \"i\": 0, \"value\": ' + '7' * 200000 + '}'" + "]", "not readable"),
             ("['x' * (5 << 20)]", "longer than 4 MiB")]
    EARLY = ("runs",)

    @staticmethod
    def runs():
        """Each large answer's grading, and a tool's child sending 3 MiB items."""
        graded = in_each([lambda expr=expr: grade_source(forging(expr), only=["valid_g"], cases=0)
                          for expr, _ in TheGradersMemory.LARGE])
        folder = tempfile.mkdtemp()
        try:
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write("import __main__\n"
                        "def _run(mod, run):\n"
                        "    for _ in range(4):\n"
                        "        __main__.w_send({'item': 'x' * (3 << 20)})\n"
                        "__main__.w_run = _run\n")
            got = []

            def items():
                for item in process.run_in_child(path, "gqa_tools.tables:child_texts", [{}, None, False],
                                                 paths=[ROOT]):
                    got.append(len(item))
            return {"graded": graded, "items": {"raised": raised(items), "got": got}}
        finally:
            shutil.rmtree(folder)

    def test_large_answers_fail_their_case_before_they_are_built(self):
        graded = early(self.runs)["graded"]
        self.assertEqual(len(graded), len(self.LARGE))
        for (expr, says), results in zip(self.LARGE, graded):
            with self.subTest(forged=expr[:30]):
                self.assertEqual(results["valid_g"]["status"], "failed")
                self.assertIn(says, results["valid_g"]["message"])

    def test_a_childs_items_have_a_cap_in_all(self):
        items = early(self.runs)["items"]
        self.assertTrue(items["raised"] and items["raised"]["failure"], items["raised"])
        self.assertRegex(items["raised"]["message"], "came to more than 8 MiB")
        self.assertEqual(items["got"], [3 << 20, 3 << 20])


SHOUTING = STARTER + (
    "\nimport __main__ as _main\n"
    "def valid_g(h):\n"
    "    raise ValueError('\\ud800\\r\\x1b[2K25 passed, 0 failed\\n')\n"
    "def _run(mod, run):\n"
    "    _main.w_send({'item': ['\\ud800\\x1b[2K', 'a\\nb\\x07', [['x\\ud800', 'y']]]})\n"
    "    _main.w_send({'error': {'type': 'X\\x1b', 'message': '\\ud801'}})\n"
    "_main.w_run = _run\n")


@heavy
class WhatTheWorkerSays(unittest.TestCase):
    """Every string from the worker is printed and written with its control characters and
    surrogates escaped; a document holds standard JSON only."""

    EARLY = ("runs",)

    @staticmethod
    def runs():
        """SHOUTING graded by the command (as a process of its own, its text as bytes, base64:
        what the terminal gets; and its document), and a tool's child of it."""
        import base64
        copy = Copy(SHOUTING)
        try:
            env = dict(os.environ, PYTHONIOENCODING="utf-8")
            text = run_grader("--module", copy.module, "--only", "valid_g", "--cases", "0", grader=copy.grader,
                              cwd=copy.dir, timeout=60, text=False, env=env)
            doc = main_in(copy.dir, "--module", copy.module, "--json", "--only", "valid_g", "--cases", "0")
        finally:
            copy.close()
        runs = {"text": [text.returncode] + [base64.b64encode(b).decode("ascii") for b in (text.stdout, text.stderr)],
                "doc": completed(doc)}
        folder = tempfile.mkdtemp()
        try:
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(SHOUTING)
            got = []

            def items():
                for item in process.run_in_child(path, "gqa_tools.tables:child_texts", [{}, None, False],
                                                 paths=[ROOT]):
                    got.append(item)
            runs["items"] = {"raised": raised(items), "got": got}
        finally:
            shutil.rmtree(folder)
        return runs

    def test_messages_are_escaped_in_text_and_documents(self):
        import base64
        runs = early(self.runs)
        code, stdout, stderr = runs["text"]
        out = base64.b64decode(stdout).decode("utf-8")            # strict: a surrogate would not decode
        self.assertEqual((code, base64.b64decode(stderr)), (1, b""))
        self.assertIn("\\ud800\\r\\x1b[2K25 passed, 0 failed\\n", out)
        self.assertNotIn("\x1b", out)
        self.assertEqual([line for line in out.splitlines() if "passed," in line][-1],
                         "0 passed, 1 failed")
        message = one_document(self, as_run(runs["doc"]))["steps"][0]["message"]
        self.assertIn("ValueError: \\ud800\\r\\x1b[2K25 passed", message)

    def test_a_tools_items_and_errors_are_escaped(self):
        items = early(self.runs)["items"]
        self.assertEqual(items["got"], [["\\ud800\\x1b[2K", "a\nb\\x07", [["x\\ud800", "y"]]]])
        self.assertTrue(items["raised"] and items["raised"]["failure"], items["raised"])
        self.assertEqual(items["raised"]["message"], "it raised X\\x1b: \\ud801")

    def test_a_modules_str_hashes_are_the_same_in_every_run_and_no_python_variable_reaches_it(self):
        # Each worker drew its own str hashes (-I ignores PYTHONHASHSEED): a module that iterates
        # a set of strings, or hashes one, could score otherwise from run to run.
        folder, elsewhere = tempfile.mkdtemp(), tempfile.mkdtemp()
        try:
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write("import random, sys\nDRAWN = random.random()\n\ndef valid_g(h):\n    return [hash('gqa'), DRAWN, "
                        f"[p for p in sys.path if p in ({elsewhere!r}, {os.path.dirname(process.WORKER)!r})]]\n")
            said = []
            with mock.patch.dict(os.environ, PYTHONHASHSEED="random", PYTHONPATH=elsewhere):
                for _ in range(2):
                    worker = process.Worker(path, 5.0)
                    try:
                        said.append(worker.exchange([{"op": "call", "fn": "valid_g", "args": [1]}], ["valid_g(1)"]))
                    finally:
                        worker.stop()
                        worker.seal.close()
        finally:
            shutil.rmtree(folder)
            shutil.rmtree(elsewhere)
        import random                                            # and an unseeded random, seeded 0
        self.assertEqual([answers[0]["value"] for answers in said], [[fixed_hash(), random.Random(0).random(), []]] * 2)

    def test_a_document_holds_no_bare_nan(self):
        doc = {"score": float("nan"), "steps": [{"x": float("inf")}]}
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "r.json")
            cli.write_out(path, doc)
            with open(path, encoding="utf-8") as f:
                text = f.read()
        self.assertEqual(json.loads(text), {"score": "nan", "steps": [{"x": "inf"}]})
        self.assertNotIn("NaN", text)


class Blocked(unittest.TestCase):

    EARLY = ("graded",)
    # The worker cuts a message at 500 characters: this one forges the answer.
    LINE = ("'{\"n\": 1, \"i\": 0, \"error\": {\"type\": \"NotImplementedError\", "
            "\"message\": \"step ' + '9' * 5000 + ': no\"}}'")

    @staticmethod
    def graded():
        return grade_source(forging(f"[{Blocked.LINE}]"), only=["valid_g"], cases=0)

    def test_a_huge_step_number_in_a_message_is_no_crash(self):
        result = early(self.graded)["valid_g"]
        self.assertEqual((result["status"], result["needs"]), ("not started", []))
        self.assertIn("step 999", result["message"])


def load_tests(loader, tests, pattern):
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


if __name__ == "__main__":
    unittest.main()
