"""The pages (README.md, CONTRIBUTING.md, docs/*.md) say what the code does now.

- A REPL session (`>>>`) runs as a doctest.
- A block that starts with `$ command` shows what the command prints now (on
  stdout; on stderr for a command that prints nothing on stdout); a line `...` in
  it stands for lines left out.  The exemptions are named in EXEMPT, each with its
  reason.
- A ```python block whose first line is `# mylab/gqa.py` (a starter's folder) is
  code a student puts in that starter: it replaces the function of that name there,
  and the page's later commands grade it.
- Every option a page gives a command (and every option in a table headed
  `| option |`, the grader's) is one that the command's --help lists, and every
  relative link leads to a file.

Each command runs once, from the project's folder: `python -m gqa` in this
process, `python grader.py` as a process of its own, started when the tests are
loaded, so that it runs beside the other modules' tests.  From a page's
`python grader.py --starter DIR` on, each of its commands runs in a copy of the
project that holds the starter with the page's edits before the command, each
starter made once, the commands beside each other.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import doctest
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Dict, NamedTuple, Optional

import gqa
from gqa_grader.steps.manifest import LESSON
from gqa_tools import cli as gqa_cli
from tests.helpers import ROOT, heavy

PAGES = ["README.md", "CONTRIBUTING.md"] + sorted(
    "docs/" + name for name in os.listdir(os.path.join(ROOT, "docs")) if name.endswith(".md"))


def read(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


TEXT = {page: read(page) for page in PAGES}

# The samples whose output is not compared, and why.
EXEMPT = {
    "python -m gqa bench": "measured: its times differ from run to run and from machine to machine",
    "python grader.py --handout class-handout": "it grades the shipped gqa.py to record the public "
                                                "cases' answers (2 s) and writes a folder; "
                                                "tests/test_handout.py makes a handout and checks "
                                                "what it holds and how it grades",
    "python -m gqa uptrain --quick": "it trains for about 40 s; its numbers are report.md's section 8, "
                                     "which report --check keeps current (tests/test_train.py, "
                                     "Committed, compares them)",
}


# ---------------------------------------------------------------------------
# Reading a page
# ---------------------------------------------------------------------------
BLOCK = re.compile(r"^```([\w-]*)\n(.*?)^```$", re.M | re.S)


class Sample(NamedTuple):
    page: str
    index: int              # its place among the page's events
    command: str
    expected: str


class Edit(NamedTuple):
    page: str
    index: int
    path: str               # relative to the folder the page's commands run in
    source: str


def events(page):
    """The page's samples and edits, in the page's order."""
    found = []
    for match in BLOCK.finditer(TEXT[page]):
        lang, body = match.groups()
        if not lang and body.startswith("$ "):
            command, _, expected = body.partition("\n")
            found.append(Sample(page, len(found), command[2:], expected))
        elif lang == "python" and re.match(r"# [\w-]+/gqa\.py\b", body):
            first, _, source = body.partition("\n")
            found.append(Edit(page, len(found), first[2:].split()[0].rstrip(",:"), source))
    return found


def samples(page=None):
    return [e for p in ([page] if page else PAGES) for e in events(p) if isinstance(e, Sample)]


def matches(expected, actual):
    """Whether actual is expected, where a line `...` stands for any lines, none too."""
    pattern = "".join("(?:.*\n)*?" if line == "...\n" else re.escape(line)
                      for line in expected.splitlines(keepends=True))
    return re.fullmatch(pattern, actual) is not None


# ---------------------------------------------------------------------------
# Running a page's commands
# ---------------------------------------------------------------------------
class Output(NamedTuple):
    text: str               # what a sample shows: stdout, or stderr when stdout is empty
    returncode: int
    stderr: str


def output_of(stdout, stderr, returncode):
    return Output(stdout or stderr, returncode, stderr)


def argv_of(command):
    """The process that runs a page's command, as typed: python grader.py ..., python -m gqa ..."""
    words = shlex.split(command)
    if not (words[:2] == ["python", "grader.py"] or words[:3] == ["python", "-m", "gqa"]
            or words[:1] == ["python"] and words[1].startswith("benchmarks/")):
        raise AssertionError(f"the pages' tests cannot run: {command}")
    return [sys.executable] + words[1:]


def run_process(argv, cwd):
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=120)
    return output_of(proc.stdout, proc.stderr, proc.returncode)


def run_in_process(command):
    """`python -m gqa ...` or `python grader.py --help` in this process, from the project's folder."""
    words = shlex.split(command)
    if words[:2] == ["python", "grader.py"]:
        import grader
        main, argv = grader.main, words[2:]
    else:
        main, argv = gqa_cli.main, words[3:]
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as stop:               # --help
                status = stop.code
    finally:
        os.chdir(here)
    return output_of(out.getvalue(), err.getvalue(), status or 0)


def in_process(command):
    """Whether the tests run command in their own process (else as a process of its own)."""
    return command.startswith("python -m gqa") or command == "python grader.py --help"


def in_session(page):
    """The page's events from its first `python grader.py --starter` on ([] if none)."""
    found = events(page)
    starts = [e.index for e in found if isinstance(e, Sample)
              and e.command.startswith("python grader.py --starter ")]
    return found[starts[0]:] if starts else []


def copy_project(folder):
    """A checkout of the project in folder, as a student's is: readable by all, its
    modules copied, its packages and examples linked (copied where links cannot be)."""
    os.chmod(folder, 0o755)
    for name in os.listdir(ROOT):
        path = os.path.join(ROOT, name)
        if name.endswith(".py") and os.path.isfile(path):
            shutil.copy2(path, folder)
        elif name == "examples" or name != "tests" and os.path.isfile(os.path.join(path, "__init__.py")):
            try:
                os.symlink(path, os.path.join(folder, name), target_is_directory=True)
            except OSError:
                shutil.copytree(path, os.path.join(folder, name))


def apply_edit(path, source):
    """Put source's functions in place of the functions of those names in the module at path."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    tree = ast.parse("".join(lines))
    for new in ast.parse(source).body:
        old = next(node for node in tree.body if getattr(node, "name", None) == new.name)
        lines[old.lineno - 1:old.end_lineno] = [""] * (old.end_lineno - old.lineno + 1)
        lines[old.lineno - 1] = ast.get_source_segment(source, new) + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(lines))


def in_a_copy(page):
    """{index: (starter, edits, command)} for each sample of the page from its starter on:
    the command runs in a copy of the project that holds the starter's folder with the
    edits made before it (starter None: the starter itself)."""
    session, found, edits = in_session(page), {}, ()
    for event in session:
        if isinstance(event, Edit):
            edits += ((event.path, event.source),)
        elif event.command not in EXEMPT:
            found[event.index] = (None if event == session[0] else session[0].command, edits, event.command)
    return found


class Copies:
    """The commands that run in copies of the project, each once: the starters first,
    then the rest beside each other.  They run in a process of their own (COPIES), so
    that no thread of the tests' process works while other tests run: tracemalloc
    (tests/test_bench.py) sees every thread."""

    def __init__(self):
        self.pool = ThreadPoolExecutor(max_workers=4)
        self.futures: Dict[tuple, Future] = {}

    def submit(self, starter, edits, command) -> Future:
        """(Output, folder), in time: command run in a copy of the project holding
        starter's folder with edits made (the starter itself when starter is None)."""
        key = (starter, edits, command)
        if key not in self.futures:
            self.futures[key] = self.pool.submit(self.run, *key)
        return self.futures[key]

    def run(self, starter, edits, command):
        folder = tempfile.mkdtemp(prefix="gqa-docs-")
        atexit.register(shutil.rmtree, folder, True)
        copy_project(folder)
        if starter:
            _, made_in = self.submit(None, (), starter).result(timeout=120)
            words = shlex.split(starter)
            name = words[words.index("--starter") + 1]
            shutil.copytree(os.path.join(made_in, name), os.path.join(folder, name))
        for path, source in edits:
            apply_edit(os.path.join(folder, path), source)
        return run_process(argv_of(command), folder), folder


def run_copies():
    """{"page:index": Output} for every page's samples from its starter on."""
    copies = Copies()
    keys = {f"{page}:{index}": key for page in PAGES for index, key in in_a_copy(page).items()}
    for key in sorted(set(keys.values()), key=lambda key: key[0] is not None):   # the starters first
        copies.submit(*key)
    return {name: copies.submit(*key).result(timeout=120)[0] for name, key in keys.items()}


COPIES = "import json, tests.test_docs as docs; print(json.dumps(docs.run_copies()))"


class Runs:
    """Every page's commands, each run once; the processes start at start().  A command
    alone runs in the project's folder, the rest in copies (run_copies)."""

    def __init__(self):
        self.started = False
        self.processes: Dict[str, subprocess.Popen] = {}
        self.done: Dict[str, Output] = {}
        self.copies: Optional[Dict[str, Output]] = None

    def start(self):
        if self.started:
            return
        self.started = True
        alone = [s.command for s in samples() if s.index not in in_a_copy(s.page) and s.command not in EXEMPT]
        for command in dict.fromkeys(alone + [f"{program} --help" for program in programs()]):
            if not in_process(command):
                self.popen(command, argv_of(command))
        self.popen("copies", [sys.executable, "-c", COPIES])

    def popen(self, name, argv):
        self.processes[name] = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, text=True)
        atexit.register(self.processes[name].kill)              # never outlives the suite

    def output(self, sample: Sample) -> Output:
        """What the sample's command prints, run where the page runs it."""
        if sample.index not in in_a_copy(sample.page):
            return self.alone(sample.command)
        if self.copies is None:
            stdout, stderr, status = self.collect("copies")
            if status:
                raise AssertionError(f"the copies' process failed:\n{stderr}")
            self.copies = {name: Output(*output) for name, output in json.loads(stdout).items()}
        return self.copies[f"{sample.page}:{sample.index}"]

    def alone(self, command) -> Output:
        if command not in self.done:
            if in_process(command):
                self.done[command] = run_in_process(command)
            else:
                stdout, stderr, status = self.collect(command)
                self.done[command] = output_of(stdout, stderr, status)
        return self.done[command]

    def collect(self, name):
        """(stdout, stderr, exit status) of the process started as name."""
        self.start()
        proc = self.processes[name]
        try:
            stdout, stderr = proc.communicate(timeout=180)
        finally:
            proc.kill()
        return stdout, stderr, proc.returncode


RUNS = Runs()


def load_tests(loader, tests, ignore):
    """The pages' REPL sessions as doctests, and the tool modules' doctests.  The pages'
    commands start now when their tests are to run here (not another shard's: helpers.heavy)."""
    import importlib
    import pkgutil
    from gqa_tools import sizer
    if any("PageSamples" in test.id() and not getattr(type(test), "__unittest_skip__", False)
           for suite in tests for test in suite):
        RUNS.start()
    for page in PAGES:
        if ">>> " in TEXT[page]:
            tests.addTests(doctest.DocFileSuite(os.path.join(ROOT, page), module_relative=False))
    for name in [""] + [f".{m.name}" for m in pkgutil.iter_modules(sizer.__path__)]:   # the sizer, each module
        tests.addTests(doctest.DocTestSuite(importlib.import_module("gqa_tools.sizer" + name)))
    tests.addTests(doctest.DocTestSuite(importlib.import_module("gqa_tools.seeds")))
    return tests


@heavy
class PageSamples(unittest.TestCase):
    maxDiff = None

    def test_every_sample_is_what_its_command_prints_now(self):
        for sample in samples():
            with self.subTest(page=sample.page, command=sample.command):
                if sample.command in EXEMPT:
                    continue
                run = RUNS.output(sample)
                if "...\n" in sample.expected.splitlines(keepends=True):
                    self.assertTrue(matches(sample.expected, run.text),
                                    f"the command printed:\n{run.text}\nand on stderr:\n{run.stderr}")
                else:
                    self.assertEqual(sample.expected, run.text, f"and on stderr:\n{run.stderr}")

    def test_the_shipped_module_passes_every_step(self):
        run = RUNS.alone("python grader.py --seed 1")
        self.assertEqual(run.returncode, 0, run.text + run.stderr)
        self.assertTrue(run.text.endswith(f"\n{len(LESSON)} passed, 0 failed\n"), run.text)

    def test_every_option_a_page_gives_is_one_the_command_takes(self):
        for page in PAGES:
            for program, options in mentions(TEXT[page]):
                if not options:
                    continue
                with self.subTest(page=page, program=program):
                    help_text = help_of(program)
                    for option in options:
                        self.assertIsNotNone(re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text),
                                             f"{program} takes no {option}")


COMMAND = re.compile(r"python3? (grader\.py|-m gqa [a-z]+|benchmarks/[a-z]+\.py)([^`\n|;#)]*)")


OPTION = re.compile(r"(?<![\w/-])(--?[a-zA-Z][\w-]*)")


def mentions(text):
    """(program, its options) for every command the text gives, and for each row of a
    table headed `| option |`, which lists the grader's."""
    for match in COMMAND.finditer(text):
        yield f"python {match.group(1)}", OPTION.findall(match.group(2))
    for table in re.findall(r"^\| option \|.*\n(?:\|.*\n)+", text, re.M):
        for row in table.splitlines()[2:]:
            yield "python grader.py", OPTION.findall(row.split("|")[1])


def programs():
    """The programs the pages give options to (python grader.py, python -m gqa config, ...)."""
    return sorted({program for page in PAGES for program, options in mentions(TEXT[page]) if options})


def help_of(program):
    if program.startswith("python -m gqa") and program.split()[-1] not in gqa_cli.COMMANDS:
        raise AssertionError(f"python -m gqa has no command {program.split()[-1]}")
    return RUNS.alone(f"{program} --help").text


class Pages(unittest.TestCase):

    def test_every_sample_can_be_run_or_is_exempt_with_its_reason(self):
        commands = {s.command for s in samples()}
        for command in commands - set(EXEMPT):
            argv_of(command)
        self.assertLessEqual(set(EXEMPT), commands)        # an exemption no page needs goes

    def test_every_edit_follows_a_starter(self):
        for page in PAGES:
            for event in events(page):
                if isinstance(event, Edit):
                    self.assertIn(event, in_session(page), page)

    def test_every_relative_link_leads_to_a_file(self):
        for page in PAGES:
            for target in re.findall(r"\]\(([^)#\s]+)", TEXT[page]):
                if "://" not in target:
                    path = os.path.join(ROOT, os.path.dirname(page), target)
                    self.assertTrue(os.path.exists(path), f"{page} links to {target}")

    def test_the_readme_is_one_page_and_gives_the_test_command(self):
        self.assertLessEqual(TEXT["README.md"].count("\n"), 150)
        self.assertIn("`python -m unittest`", TEXT["README.md"])

    def test_every_page_is_linked_from_the_readme(self):
        for page in PAGES[1:]:
            self.assertIn(f"]({page})", TEXT["README.md"], page)

    def test_a_yaml_value_with_a_colon_and_a_space_is_quoted(self):
        # `name: Grade gqa.py (sealed: the grader ...)` is a mapping inside a value:
        # YAML refuses the whole workflow.
        for page in PAGES:
            for lang, body in BLOCK.findall(TEXT[page]):
                if lang == "yaml":
                    for line in plain_values(body):
                        self.assertNotIn(": ", line, f"{page}: quote the value of {line!r}")
                        self.assertNotIn(" #", line, f"{page}: quote the value of {line!r}")

    def test_the_documented_refusal_is_the_codes(self):
        documented = re.search(r"`(kv_head: g=3 does not divide h=8; [^`]*)`", TEXT["CONTRIBUTING.md"]).group(1)
        self.assertEqual(documented, "kv_head: g=3 does not divide h=8; valid g: 1, 2, 4, 8")
        with self.assertRaises(gqa.GQAError) as refused:
            gqa.kv_head(0, 8, 3)
        self.assertEqual(str(refused.exception), documented)

    def test_the_graders_help_shows_a_students_options_first_and_the_teachers_apart(self):
        # A student in a handout read --class, --roster and --autograder among their own.
        from gqa_grader import cli as grader_cli
        helped = grader_cli._parser().format_help()
        apart = helped.index("\nfor teachers: a class, Gradescope, GitHub Classroom, a handout:\n")
        for option in ("--module", "--steps", "--case", "--show", "--lang", "--budget"):     # 3.13 writes
            self.assertLess(helped.index(f"\n  {option}"), apart, option)                      # a metavar once
        for option in ("--class", "--roster", "--autograder", "--handout", "--sealed"):
            self.assertGreater(helped.index(f"\n  {option}"), apart, option)

    def test_the_teachers_options_table_names_every_option_the_grader_takes(self):
        # It left out --steps, --lang, --case, --show, --secret, --regrade and more: a teacher
        # reading the table did not learn that a class's feedback can be in Japanese.
        from gqa_grader import cli as grader_cli
        table = re.search(r"^\| option \|.*\n(?:\|.*\n)+", TEXT["docs/teachers.md"], re.M).group(0)
        listed = {option for row in table.splitlines()[2:] for option in OPTION.findall(row.split("|")[1])}
        import argparse
        for action in grader_cli._parser()._actions:
            if action.dest != "help" and action.help != argparse.SUPPRESS:       # --class-serve is --class's own
                with self.subTest(option=action.option_strings):
                    self.assertTrue(set(action.option_strings) <= listed, action.option_strings)


def plain_values(yaml):
    """The unquoted values of a YAML text's `key: value` lines, block scalars (`|`) skipped."""
    scalar_indent: Optional[int] = None
    for line in yaml.splitlines():
        indent = len(line) - len(line.lstrip())
        if scalar_indent is not None and (indent > scalar_indent or not line.strip()):
            continue
        scalar_indent = None
        match = re.match(r"\s*(?:- )?[\w.-]+: (.*)$", line)
        if not match or line.lstrip().startswith("#"):
            continue
        value = match.group(1)
        if value in ("|", ">", "|-", ">-"):
            scalar_indent = indent
        elif value[:1] not in ("'", '"', "[", "{"):
            yield value


if __name__ == "__main__":
    unittest.main()


@heavy
class TeachersNumbers(unittest.TestCase):
    """teachers.md's numbers that no sample's output checks: the grader's version, the
    seeds of a teacher's runs, and what a document's score is."""

    def setUp(self):
        self.text = read("docs/teachers.md")

    def test_every_version_named_is_the_graders(self):
        from gqa_grader.verdict.grading import GRADER_VERSION
        named = re.findall(r'(?:\bgrader |"grader": ")(\d+\.\d+)', self.text)
        self.assertGreater(len(named), 3)
        self.assertEqual(sorted(set(named)), [GRADER_VERSION])

    def test_a_teachers_run_shows_a_seed_no_module_could_find(self):
        """A sealed, class or autograder run's seed is drawn from 10^18, and one of fewer
        than 13 digits is one the grader warns of: the page shows none."""
        from gqa_grader.verdict.grading import GUESSABLE
        seeds = [int(s) for s in re.findall(r"(?:grading the class with seed|seed) (\d+) \(", self.text)]
        for line in self.text.splitlines():
            if line.startswith("$ python grader.py") and re.search(r"--(sealed|class|autograder)\b", line):
                seeds += [int(s) for s in re.findall(r"--seed (\d+)", line)]
        self.assertGreater(len(seeds), 3)
        self.assertEqual([s for s in seeds if s < 10 ** (GUESSABLE - 1)], [])

    def test_score_is_the_points_earned_as_the_page_says(self):
        self.assertNotIn("share of steps passed", self.text)
        self.assertIn("`score` is the points earned", self.text)
        wrong = os.path.join(tempfile.mkdtemp(), "gqa.py")
        self.addCleanup(shutil.rmtree, os.path.dirname(wrong), True)
        with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
            source = f.read()
        with open(wrong, "w", encoding="utf-8") as f:              # step 3 half right
            f.write(source.replace("return query_head // group", "return query_head % g"))
        done = subprocess.run([sys.executable, os.path.join(ROOT, "grader.py"), "--module", wrong, "--json",
                               "--only", "1,3", "--seed", "5"], capture_output=True, text=True, timeout=120)
        doc = json.loads(done.stdout)
        points = [st["points"] for st in doc["steps"]]
        self.assertEqual(points[0], 1.0)
        self.assertLess(points[1], 1.0)
        self.assertEqual(doc["score"], round(sum(points), 4))
        self.assertNotEqual(doc["score"], doc["passed"] / len(doc["steps"]))   # not the share passed

    def test_the_copy_rule_is_the_codes(self):
        from gqa_grader.teacher import copies
        rule = " ".join(self.text[self.text.index("`grades-copies.txt`, beside"):].split("\n\n")[0].split())
        said = {"tokens": r"fingerprints of (\d+) tokens at a time", "small": r"at least\s+(\d+) tokens",
                "block": r"at least (\d+) fingerprints in\s+common", "shared": r"shares at least (\d+)% of its own",
                "contained": r"or one shares (\d+)%", "solution": r"holds at least (\d+)% of it"}
        found = {k: int(re.search(p, rule).group(1)) for k, p in said.items()}
        self.assertEqual(found, {"tokens": copies.K, "small": copies.SMALL, "block": copies.BLOCK,
                                 "shared": round(100 * copies.SHARED), "contained": round(100 * copies.CONTAINED),
                                 "solution": round(100 * copies.SOLUTION)})
