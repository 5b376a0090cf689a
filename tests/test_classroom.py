"""A class on GitHub Classroom and what its students hand in (gqa_grader/teacher/classroom.py,
workflow.py): the workflow --classroom writes, parsed back and its commands run
(Classroom, Emitter); names, files and roster fields that reach the gradebook and the
terminal as text (Cells); one student's hostile entry that never stops the class
(HostileNames); copies flagged for a person, never scored (Copies)."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from gqa_grader.steps import checks
from gqa_grader.teacher import classroom, workflow
from tests.helpers import heavy, start_early
from tests.class_support import SOURCE, WRONG, write, Private, usage_error, rows_of


def parse_yaml(text):
    """The YAML the workflow is written in, and nothing more: block mappings and
    sequences by indentation, keys plain or double-quoted, scalars double-quoted (JSON's
    escapes) or whole numbers.  Anything else (a plain string, a flow collection, a tab,
    a duplicate key) raises ValueError."""
    lines = [(len(line) - len(line.lstrip(" ")), line.strip()) for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    if any("\t" in line for _, line in lines):
        raise ValueError("a tab")

    def scalar(token):
        if re.fullmatch(r"-?[0-9]+", token):
            return int(token)
        if token in ("true", "false"):
            return token == "true"
        if token.startswith('"'):
            value, end = json.JSONDecoder().raw_decode(token)
            if end == len(token) and isinstance(value, str):
                return value
        raise ValueError(f"not a scalar of the subset: {token!r}")

    def pair(token):
        if token.startswith('"'):
            key, end = json.JSONDecoder().raw_decode(token)
        else:
            match = re.match(r"[A-Za-z_][A-Za-z0-9_-]*", token)
            if not match:
                raise ValueError(f"not a key: {token!r}")
            key, end = match.group(), match.end()
        rest = token[end:]
        if rest == ":":
            return key, None
        if not rest.startswith(": "):
            raise ValueError(f"not a key and value: {token!r}")
        return key, rest[2:]

    def block(i, indent):
        if lines[i][1].startswith("- "):
            items = []
            while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
                rest = lines[i][1][2:]
                if re.match(r'("[^"]*"|[A-Za-z_][\w-]*):( |$)', rest):
                    lines[i] = (indent + 2, rest)            # a mapping, one line in
                    value, i = block(i, indent + 2)
                else:
                    value, i = scalar(rest), i + 1
                items.append(value)
            return items, i
        mapping = {}
        while i < len(lines) and lines[i][0] == indent:
            key, rest = pair(lines[i][1])
            if key in mapping:
                raise ValueError(f"a duplicate key {key}")
            if rest is None:
                if i + 1 >= len(lines) or lines[i + 1][0] <= indent:
                    raise ValueError(f"nothing under {key}")
                mapping[key], i = block(i + 1, lines[i + 1][0])
            else:
                mapping[key], i = scalar(rest), i + 1
        if i < len(lines) and lines[i][0] > indent:
            raise ValueError(f"a line out of place: {lines[i][1]!r}")
        return mapping, i

    value, end = block(0, 0)
    if end != len(lines):
        raise ValueError(f"a line out of place: {lines[end][1]!r}")
    return value


@heavy
class Classroom(unittest.TestCase):

    def test_the_parser_refuses_what_the_readme_once_shipped(self):
        with self.assertRaises(ValueError):
            parse_yaml("steps:\n  - name: Grade gqa.py (sealed: the grader as root)\n")
        self.assertEqual(parse_yaml('a:\n  - "x"\n  - b: 2\n    "on": "y"\n'), {"a": ["x", {"b": 2, "on": "y"}]})

    def test_one_graded_step_per_lab_step_with_its_points_then_the_reporter(self):
        private = Private(self)
        weights = write(os.path.join(private.work, "w.json"), json.dumps({"kv_head": 3, "layer": 0}))
        status, out, err = private.main("--classroom", private.work, "--weights", weights, "--seed", "4")
        self.assertEqual(status, 0)
        # The steps grade the public cases (--cases 0): a seed is no option of theirs (a
        # handout's self-check noted it unused in every step's log), and said so here.
        self.assertIn("--seed is not used", err)
        self.assertNotIn("seed", out)
        with open(os.path.join(private.work, ".github", "workflows", "classroom.yml"), encoding="utf-8") as f:
            text = f.read()
            flow = parse_yaml(text)
        self.assertNotIn("--seed", text)
        self.assertEqual(flow["on"], ["push", "repository_dispatch"])
        steps = flow["jobs"]["run-autograding-tests"]["steps"]
        self.assertEqual(steps[0]["uses"], "actions/checkout@v4")
        prepare, graded, reporter = steps[1], steps[2:-1], steps[-1]
        self.assertEqual(prepare["id"], "prepare")
        self.assertEqual(len(graded), len(checks.STEPS))
        for s, st in zip(graded, checks.STEPS):
            words = shlex.split(s["run"])
            self.assertEqual(words[:6], ["$GQA_AS", "python3", "$GQA_GRADER", "--sealed", "--module", "gqa.py"])
            self.assertEqual(s["if"], "env.GQA_IMPORTED == 'yes'")
            self.assertEqual(words[words.index("--only") + 1], str(st.number))
            self.assertEqual(words[words.index("--format") + 1], "classroom")
            self.assertEqual(words[words.index("--weights") + 1], "weights.json")
            self.assertEqual(words[-2:], [">>", "$GITHUB_OUTPUT"])
            self.assertTrue(re.fullmatch(r"[a-z0-9]+", s["id"]), s["id"])
            self.assertIsInstance(s["timeout-minutes"], int)
        with open(os.path.join(private.work, "weights.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f), {"kv_head": 3, "layer": 0})
        ids = [s["id"] for s in graded]
        self.assertEqual(len(set(ids)), len(ids))
        self.assertEqual(reporter["uses"], "classroom-resources/autograding-grading-reporter@v1")
        self.assertEqual(reporter["with"]["runners"].split(","), ids)
        self.assertEqual(reporter["if"], "always()")               # whatever a step met
        for i, st in zip(ids, checks.STEPS):
            value = reporter["env"][f"{i.upper()}_RESULTS"]
            fallback = re.fullmatch(r"\$\{\{ steps\.%s\.outputs\.result \|\| '([A-Za-z0-9+/=]+)' \}\}" % i, value)
            self.assertIsNotNone(fallback, value)                    # a step that wrote nothing: 0 of its points
            unfinished = json.loads(base64.b64decode(fallback.group(1)))
            self.assertEqual((unfinished["max_score"], unfinished["tests"][0]["score"]),
                             (3 if st.name == "kv_head" else 0 if st.name == "layer" else 1, 0))
            self.assertIn(f"the step '{prepare['name']}' says why", unfinished["tests"][0]["message"])
        # In Japanese, the step it points to is named as the log names it (it said 'Prepare the
        # sealed grader', a step no Japanese log shows).
        ja = os.path.join(private.work, "ja")
        os.mkdir(ja)
        self.assertEqual(private.main("--classroom", ja, "--lang", "ja")[0], 0)
        with open(os.path.join(ja, ".github", "workflows", "classroom.yml"), encoding="utf-8") as f:
            flow = parse_yaml(f.read())["jobs"]["run-autograding-tests"]["steps"]
        said = json.loads(base64.b64decode(re.search(r"'([A-Za-z0-9+/=]+)'", flow[-1]["env"]["STEP1_RESULTS"]).group(1)))
        self.assertIn(f"「{flow[1]['name']}」", said["tests"][0]["message"])
        self.assertTrue(all(s["continue-on-error"] is True for s in graded))
        # A step's command grades that step, run in the repository (gqa.py and weights.json
        # beside grader.py): its result, as the reporter reads it, holds the step's points by
        # the rule of every run (the share of its public cases that pass), its report the log.
        repo = private.dir
        shutil.copy(os.path.join(private.work, "weights.json"), repo)
        for source, step, weight in ((WRONG, 3, 3), (WRONG, 1, 1)):
            write(os.path.join(repo, "gqa.py"), source)
            words = shlex.split(graded[step - 1]["run"])[:-2]
            words = [sys.executable, os.path.join(repo, "grader.py")] + words[3:]
            done = subprocess.run(words, cwd=repo, capture_output=True, text=True, timeout=60)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            key, _, value = done.stdout.strip().partition("=")
            result = json.loads(base64.b64decode(value))
            sealed = json.loads(subprocess.run(words[:words.index("--format")] + [
                "--json"] + words[words.index("--format") + 2:], cwd=repo, capture_output=True,
                text=True, timeout=60).stdout)["steps"][0]
            with self.subTest(step=step):
                self.assertEqual(key, "result")
                self.assertEqual((result["version"], result["max_score"]), (1, weight))
                self.assertEqual([t["score"] for t in result["tests"]], [round(sealed["points"], 2)])
                self.assertIn(f"step {step:>2}", done.stderr)
                if step == 3:                                # public cases at g = 1 or h pass
                    self.assertEqual(result["status"], "fail")
                    self.assertTrue(0 < result["tests"][0]["score"] < weight, result)
                else:
                    self.assertEqual((result["status"], result["tests"][0]["score"]), ("pass", 1))

    def test_points_classroom_cannot_hold_are_refused(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        weights = write(os.path.join(folder, "w.json"), json.dumps({"kv_head": 2.5}))
        self.assertIn("whole numbers", usage_error("--classroom", folder, "--weights", weights))


class Cells(unittest.TestCase):
    """What a student names (files, folders, roster fields) reaches the gradebook and the
    terminal as text: escaped, never a formula, never a second row."""

    HOSTILE = ["=HYPERLINK(\"http://x\")", "\tcmd", "\r=1+1", "a\rb\nc", "\x1b[31mred\x1b[0m", "+1", "-2",
               "@SUM(A1)", "ok name", "caf\udce9", "\x85next"]

    def test_a_hostile_name_is_text_in_a_cell_and_reads_back_as_written(self):
        rows = [{"student": name, "score": "1"} for name in self.HOSTILE]
        text = io.StringIO()
        writer = csv.DictWriter(text, ["student", "score"], lineterminator="\n", quoting=csv.QUOTE_ALL)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: classroom.cell(v) for k, v in row.items()})
        written = text.getvalue()
        self.assertEqual(len(written.splitlines()), len(rows) + 1)          # one line a row
        self.assertFalse(any(ch in written for ch in "\x1b\r\x85"), repr(written))
        back = list(csv.DictReader(io.StringIO(written)))
        self.assertEqual([r["student"] for r in back], [classroom.cell(n) for n in self.HOSTILE])
        for r in back:
            self.assertNotIn(r["student"][:1], "=+-@\t\r", r)               # no formula starts a cell
        self.assertEqual(classroom.cell("ok name"), "ok name")
        self.assertEqual(classroom.cell("\x1b[31mred"), "\\x1b[31mred")
        written.encode("utf-8")                                              # no lone surrogate left

    def test_a_submissions_feedback_folder_is_its_own_whatever_the_class_holds(self):
        # "bob x.py" and "bob_x.py" took turns at bob_x.py/ and bob_x.py-1/ as the class changed:
        # one student's feedback in the folder another's had been sent from.
        names = ["bob.py", "bob x.py", "bob_x.py", "bob_x.py~0", ".bob", "bob", "note\udce9.py", "note\udcea.py",
                 "井上 花子 (inoue)", "x" * 150, "x" * 151, "..", "", "a/b"] + self.HOSTILE
        folders = [classroom.safe_name(name) for name in names]
        self.assertEqual(len(set(folders)), len(names))
        self.assertEqual(folders[:3], ["bob.py", "bob_x.py~" + folders[1].split("~")[1], "bob_x.py"])
        for folder in folders:
            self.assertRegex(folder, r"^[\w.+@~-]{1,100}$")
            self.assertNotIn(folder, (".", ".."))

    def test_every_name_reads_back_as_itself_and_no_two_as_one(self):
        # "'=x" read back as "=x", the key of another submission (a hostile walk found it).
        from gqa_grader.teacher import ledger
        names = ["=x", "'=x", "''=x", "'x", "'", "''", "-", "'-1", "x'", "", "alice", "alice ", " =x", "alice\u3000",
                 "\u00a0alice"] + self.HOSTILE
        back = [ledger.unquoted(ledger.cell(name)) for name in names]
        self.assertEqual(back, [ledger.escaped(name) for name in names])
        self.assertEqual(len(set(back)), len(names))
        # And through a gradebook's file: "alice " and "alice" were one row read back.
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "g.csv")
            with open(path, "w", encoding="utf-8-sig", newline="") as f:
                writer = csv.writer(f, quoting=csv.QUOTE_ALL)
                writer.writerows([["student", "submission"]] + [[str(i), ledger.cell(n)] for i, n in enumerate(names)])
            book = ledger.read_gradebook(path)
        self.assertEqual(sorted(book), sorted(name for name in back if name))


@heavy
class HostileNames(unittest.TestCase):
    """One student's entry never stops the class: a folder whose name is not UTF-8, an
    upload named so, an escape sequence in a name, 1,100 nested folders."""

    def test_the_class_is_graded_whole_and_its_gradebook_reads_back(self):
        private = Private(self)
        subs = os.path.join(private.work, "subs").encode()
        for name in (b"bad\xff\xfename/lab/gqa.py", b"up\xe9.py", b"esc\x1b[31mred/gqa.py",
                     "\u202eyp.dab.py".encode()):                     # shown reversed, as it is
            os.makedirs(os.path.dirname(os.path.join(subs, name)), exist_ok=True)
            with open(os.path.join(subs, name), "wb") as f:
                f.write(SOURCE.encode())
        from gqa_grader.running import cleanup
        self.addCleanup(lambda: cleanup.remove_tree(os.path.join(subs, b"deep").decode(), time.monotonic() + 30))
        os.mkfifo(os.path.join(subs, b"pipe.py"))          # opened as it is, it would wait forever
        here = os.open(subs, os.O_RDONLY)
        os.mkdir("deep", dir_fd=here)
        for _ in range(1100):                   # deeper than Python's recursion limit
            below = os.open("deep" if _ == 0 else "d", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = below
            os.mkdir("d", dir_fd=here)
        os.close(here)
        book = os.path.join(private.work, "g.csv")
        run = private.run("--class", subs.decode(), "--gradebook", book, "--only", "1", "--cases", "0", "--quiet")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertNotIn("\x1b", run.stdout + run.stderr)                 # escaped in the terminal
        self.assertNotIn("\u202e", run.stdout + run.stderr)
        rows = rows_of(book)
        self.assertEqual(sorted(rows), sorted(classroom.cell(n) for n in (
            "bad\udcff\udcfename", "deep", "esc\x1b[31mred", "pipe.py", "up\udce9.py", "\u202eyp.dab.py")))
        self.assertIn("\\u202eyp.dab.py", rows)                             # its escape, in the cell
        self.assertEqual({k: r["status"] for k, r in rows.items() if k not in ("deep", "pipe.py")},
                         {k: "passed" for k in rows if k not in ("deep", "pipe.py")})
        self.assertIn("not a regular file", rows["pipe.py"]["notes"])
        self.assertIn("folders more than 24 deep", rows["deep"]["notes"])
        again = private.run("--class", subs.decode(), "--gradebook", book, "--only", "1", "--cases", "0")
        self.assertIn("4 submissions graded before with the same bytes", again.stderr)   # read back


class Emitter(unittest.TestCase):

    def test_strings_are_quoted_whatever_they_hold(self):
        data = {"on": ["a: b", "#c", "x'y\"z", "é\n", "ステップ 1: valid_g", "a\u2028b\u202e"], "n": 3,
                "key with space": {"k": "v"}}
        text = "\n".join(workflow.yaml_lines(data))
        self.assertEqual(parse_yaml(text), data)
        self.assertIn("ステップ 1: valid_g", text)          # as written: a teacher reads and edits it
        self.assertNotIn("\u2028", text)                    # a line break to YAML: escaped


class Copies(unittest.TestCase):
    """Copies are flagged for a person, never scored: a solution renamed and stripped of
    its comments pairs with the solution; the starter, and a starter with one function
    of its own, pair with nothing (tests/test_copies.py has the rest)."""

    def test_a_renamed_copy_pairs_with_what_it_copies_and_honest_work_with_nothing(self):
        from gqa_grader.teacher import copies, handout
        base = handout.make_starter(SOURCE)
        renamed = re.sub(r"\bgroup\b", "members_per_kv_head", re.sub(r"#[^\n]*", "", SOURCE))
        reindented = renamed.replace("    ", "\t")
        own = base.replace('raise NotImplementedError("step 1: valid_g',
                           'return [d for d in range(1, h + 1) if h % d == 0]\n    raise NotImplementedError("step 1: valid_g')
        half = SOURCE[:SOURCE.index("# Step 10.")] + base[base.index("# Step 10."):]   # steps 1-9 copied
        groups, pairs, solutions = copies.compare({"ann": SOURCE, "ben": renamed, "cal": base, "dee": own,
                                                   "eve": reindented, "fay": half}, base, SOURCE)
        self.assertEqual(groups, [["ann", "ben", "eve"]])           # the same code, names and layout aside
        self.assertEqual([(a, b) for _, a, b, _, _ in pairs], [("ann", "fay")])
        self.assertEqual([(key, share >= copies.SOLUTION) for share, key, _ in solutions],
                         [("ann", True), ("ben", True), ("eve", True), ("fay", False)])   # fay: steps 1-9
        text = copies.report(groups, pairs, classroom.escaped, solutions)
        self.assertIn("same code but for functions under 40 tokens (3): ann = ben = eve", text)
        self.assertRegex(text, r"\n\d+%  ann  [\d, .-]+  fay  ")
        self.assertRegex(text, r"\nben is the shipped solution over again: it holds \d+% of the solution's code")
        self.assertRegex(text, r"\nfay shares \d+% of the shipped solution's code \(its lines [\d, .-]+\)\n")
        self.assertEqual(copies.tokens("def f(:\n"), [])          # what does not tokenize: nothing shared
        self.assertEqual(copies.fingerprints(""), {})


def load_tests(loader, tests, pattern):
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


if __name__ == "__main__":
    unittest.main()
