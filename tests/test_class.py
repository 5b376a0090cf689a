"""A lab a teacher gives a class: grades that reproduce (the same document twice, the
seed and options a Gradescope zip carries, a failing case's command that repeats
it), a gradebook of a folder of submissions (--class: its layouts, its bad
submissions, resumed, stopped) and Gradescope's details (hidden cases, what to
rename).  GitHub Classroom's workflow, students' names and copies: test_classroom.py;
the helpers shared with it: tests/class_support.py.

The sealed runs as root use a private copy of the grader, as a teacher's must be
(a sealed run refuses a grader its workers could read); as another user they run
partly sealed, and the tests that need the seal itself say so and are skipped."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
import zipfile
from unittest import mock

from gqa_grader.steps import checking, checks, tracks
from gqa_grader import cli
from gqa_grader.language import i18n
from gqa_grader.teacher import classroom, submissions
from gqa_grader.verdict import documents, grading
from gqa_grader.verdict.results import StepResult, scored
from gqa_grader.running.seal import sandbox_package
from tests.helpers import ROOT, early, heavy, run_grader, start_early
from tests.class_support import (AS_ROOT, BIG_WRONG, SOURCE, WRONG, Private, rows_of, sha256, usage_error,
                                 write)


def load_tests(loader, tests, pattern):
    """The gradebooks' runs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


@heavy
class HiddenCasesWithheld(unittest.TestCase):
    """A class's feedback shows no hidden case: every submission meets the same ones."""

    def test_a_failing_hidden_case_is_withheld_where_asked_and_in_every_class_run(self):
        private = Private(self)
        module = write(os.path.join(private.work, "sub", "gqa.py"), BIG_WRONG)
        hidden = grading.public_end(checks.STEPS[0])          # step 1's first hidden case
        got, seeds = {}, {}
        for case, extra in ((hidden, []), (hidden, ["--withhold-hidden"]),
                            (hidden - 1, ["--withhold-hidden"])):   # the last public one
            status, out, _ = private.main("--module", module, "--json", "--seed", "424242", "--only", "1",
                                          "--case", str(case), *extra)
            self.assertEqual(status, 1, out)
            got[case, bool(extra)] = json.loads(out)["steps"][0]
            seeds[case, bool(extra)] = (json.loads(out)["seed"], "424242" in out)
        # The seed and the handout's checks make every hidden case again: it goes too.
        self.assertEqual(seeds, {(hidden, False): (424242, True), (hidden, True): (None, False),
                                 (hidden - 1, True): (None, False)})
        status, text, _ = private.main("--module", module, "--seed", "424242", "--only", "1",
                                       "--withhold-hidden")
        self.assertEqual(status, 1, text)
        self.assertNotIn("424242", text)
        # The feedback's commands are the student's, run in their own lab's folder: no path of
        # the teacher's (the module's, the grader's) in any of them.
        self.assertIn("repeat with: python grader.py --seed SEED --only 1;", text)
        self.assertNotIn(f"--module {module}", text)
        self.assertIn("reproduce: python grader.py --only valid_g --case", text)
        # A hidden case's command needs the seed the student does not have: it says whose it is
        # (a student ran it as printed: "--seed: invalid int value: 'SEED'").
        status, text, _ = private.main("--module", module, "--seed", "424242", "--only", "1", "--case", str(hidden),
                                       "--withhold-hidden")
        self.assertIn(f"reproduce (SEED: the teacher's gradebook): python grader.py --seed SEED --only valid_g "
                      f"--case {hidden} --show", text)
        shown, withheld, public = got[hidden, False], got[hidden, True], got[hidden - 1, True]
        for step in (shown, withheld, public):
            self.assertEqual(step["status"], "failed")
        self.assertIn("got:      [1]", shown["message"])
        self.assertIsNotNone(shown["inputs"])
        self.assertEqual((withheld["case"], withheld["inputs"], withheld["show"]), (hidden, None, None))
        self.assertEqual(withheld["message"].splitlines()[0], f"case {hidden}: {grading.WITHHELD}")
        self.assertIn("401 <= h <= 4000", withheld["message"])      # where to look, no case
        self.assertNotIn("[1]", withheld["message"])
        self.assertIn("got:      [1]", public["message"])          # a public case is shown whole
        args = cli.parse_args(["--class", private.work, "--gradebook", os.path.join(private.work, "g.csv"),
                               "--seed", "2"])
        argv = classroom.Gradebook(args)._argv(submissions.Submission("a.py", "a", path=module))
        self.assertTrue(cli.parse_args(argv).withhold_hidden, argv)


@heavy
class EveryRunner(unittest.TestCase):
    """The same file and seed score the same in every runner: the sealed run's document,
    --class's gradebook and Gradescope's results.json, step by step."""

    def test_one_module_one_seed_one_score_in_the_sealed_run_the_gradebook_and_gradescope(self):
        private = Private(self)
        module = write(os.path.join(private.work, "subs", "pat", "gqa.py"),
                       BIG_WRONG.replace("return query_head // group", "return query_head % g"))
        options = ["--seed", "31337", "--steps", "1-6,15", "--cases", "4"]
        status, out, err = private.main("--sealed", "--module", module, "--json", *options)
        self.assertEqual(status, 1, err)
        sealed = json.loads(out)
        status, out, err = private.main("--module", module, "--format", "gradescope", *options)
        gradescope = json.loads(out)
        book = os.path.join(private.work, "marks", "grades.csv")
        os.mkdir(os.path.dirname(book))
        run = private.run("--class", os.path.join(private.work, "subs"), "--gradebook", book, *options)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("note: --seed 31337 has fewer than 13 digits: a module can find it", run.stderr)
        # The teacher's terminal names the gradebook's folder; the statistics shown to the class
        # name the gradebook and its feedback alone (they showed the teacher's folders).
        self.assertIn(f"1 of 1 submissions in {os.path.join('marks', 'grades.csv')} (feedback in "
                      f"{os.path.join('marks', 'grades-feedback')}{os.sep})", run.stdout)
        with open(os.path.join(private.work, "marks", "grades-statistics.txt"), encoding="utf-8") as f:
            self.assertTrue(f.read().startswith(f"1 of 1 submissions in grades.csv (feedback in grades-feedback{os.sep}), "
                                                "seed (in the gradebook, withheld here), "))
        row = rows_of(book)["pat"]
        # The same points, step by step, each the share of its hidden cases that passed.
        by_step = {r["name"]: r["points"] for r in sealed["steps"]}
        self.assertEqual({name: float(row[f"{st.number} {name}"]) for name in by_step
                          for st in checks.STEPS if st.name == name}, by_step)
        hidden = {t["name"]: t["score"] for t in gradescope["tests"] if "public" not in t["name"]}
        self.assertEqual({name.split(": ", 1)[1]: score for name, score in hidden.items()}, by_step)
        self.assertEqual({sealed["score"], float(row["score"]), gradescope["score"]}, {sealed["score"]})
        # Partly right: steps 2 and 15 earn their points, the strided grouping and valid_g none.
        self.assertLess(0, sealed["score"])
        self.assertLess(sealed["score"], sealed["max_score"])
        self.assertEqual([r["hidden"][1] for r in sealed["steps"]], [4] * len(sealed["steps"]))


# ---------------------------------------------------------------------------
# 2. Grades that reproduce.
# ---------------------------------------------------------------------------

@heavy
class GradesThatReproduce(unittest.TestCase):

    def test_the_same_submission_twice_gives_the_same_document_times_aside(self):
        private = Private(self)
        module = write(os.path.join(private.work, "sub", "gqa.py"), SOURCE)
        for fmt in ("json", "gradescope"):
            docs = []
            for _ in range(2):
                status, out, _ = private.main("--sealed", "--module", module, "--format", fmt,
                                              "--seed", "7", "--only", "1,2", "--cases", "2")
                self.assertEqual(status, 0, out)
                doc = json.loads(out)
                docs.append(doc)
                doc.pop("execution_time", None)
            self.assertEqual(docs[0], docs[1])
            made = docs[0] if fmt == "json" else docs[0]["extra_data"]
            self.assertEqual((made["grader"], made["seed"], made["sha256"]),
                             (grading.GRADER_VERSION, 7, sha256(module)))
            self.assertEqual((made["options"]["cases"], made["options"]["only"]),
                             (2, ["valid_g", "method_name"]))
        self.assertEqual(json.loads(private.main("--sealed", "--module", module, "--json",
                                                 "--only", "1", "--seed", "8")[1])["seed"], 8)
        drawn = [json.loads(private.main(*argv, "--module", module, "--json", "--only", "1", "--cases", "0")[1])["seed"]
                 for argv in (["--sealed"], [])]                 # a teacher's run, a student's
        self.assertTrue(10 ** 12 <= drawn[0] < 10 ** 18 and 0 <= drawn[1] < 10 ** 6, drawn)

    def test_a_failing_case_in_gradescope_says_the_command_that_repeats_it(self):
        private = Private(self)
        wrong = write(os.path.join(private.work, "wrong", "gqa.py"), WRONG)
        right = write(os.path.join(private.work, "right", "gqa.py"), SOURCE)
        status, out, _ = private.main("--module", wrong, "--format", "gradescope", "--seed", "3",
                                      "--only", "kv_head", "--cases", "0")
        doc = json.loads(out)
        test = doc["tests"][0]
        self.assertEqual((test["status"], test["output_format"], doc["output_format"]),
                         ("failed", "md", "md"))
        command = re.search(r"```sh\n(python grader\.py [^\n]*)\n```", test["output"]).group(1)
        words = shlex.split(command)
        self.assertEqual(words[:4], ["python", "grader.py", "--only", "kv_head"])   # public: no seed
        self.assertIn("--case", words)
        # The command repeats that one case: it fails the wrong module, passes the right one.
        failed = private.main(*words[2:], "--module", wrong)
        passed = private.main(*words[2:], "--module", right)
        self.assertEqual((failed[0], passed[0]), (1, 0), failed[1])
        self.assertIn("0/1 cases", failed[1])
        self.assertIn("1/1 cases", passed[1])

    def test_the_autograder_carries_the_seed_and_every_option_given(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        weights = write(os.path.join(folder, "w.json"), json.dumps({"kv_head": 2}))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(["--autograder", folder, "--cases", "3", "--only", "1,kv_head",
                               "-x", "--hidden-visibility", "after_due_date", "--timeout", "4",
                               "--budget", "100", "--weights", weights])
        self.assertEqual(status, 0, err.getvalue())
        with zipfile.ZipFile(os.path.join(folder, "autograder.zip")) as z:
            run = z.read("run_autograder").decode()
            secret = z.getinfo("secret")
            self.assertEqual(secret.external_attr >> 16 & 0o777, 0o600)
            self.assertEqual(len(z.read("secret").strip()), 64)
        line = run[run.index("python3 grader.py"):].replace("\\\n", " ")
        words = shlex.split(line.split(">")[0])
        pairs = {w: words[i + 1] for i, w in enumerate(words[:-1]) if w.startswith("--")}
        self.assertEqual({k: pairs[k] for k in ("--cases", "--steps", "--hidden-visibility",
                                                "--timeout", "--budget", "--weights", "--secret")},
                         {"--cases": "3", "--steps": "1,kv_head",
                          "--hidden-visibility": "after_due_date", "--timeout": "4",
                          "--budget": "100", "--weights": "weights.json", "--secret": "secret"})
        self.assertNotIn("--seed", words)            # each submission's seed: its own
        self.assertIn("--fail-fast", words)
        said = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(said):
            cli.main(["--autograder", folder, "--seed", "11"])
        self.assertIn("note: --seed 11 has fewer than 13 digits", said.getvalue())
        with zipfile.ZipFile(os.path.join(folder, "autograder.zip")) as z:
            self.assertIn("--seed 11 >", z.read("run_autograder").decode())
        for argv, says in ((["--seed", "11"], "注意: --seed 11 は 13 桁より短いシードです"),
                           ([], "自動採点は提出物ごとに専用のシードで採点します")):    # the teacher's language
            said = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(said):
                cli.main(["--autograder", folder, "--lang", "ja", *argv])
            i18n.use("en")
            self.assertIn(says, said.getvalue())

    def test_each_submission_meets_hidden_cases_of_its_own_from_the_secret(self):
        private = Private(self)
        secret = write(os.path.join(private.work, "secret"), "0123456789abcdef" * 4)
        a = write(os.path.join(private.work, "a", "gqa.py"), WRONG)
        b = write(os.path.join(private.work, "b", "gqa.py"), WRONG + "\n# resubmitted\n")
        copy = write(os.path.join(private.work, "c", "gqa.py"), WRONG)          # a's bytes again

        def graded(module, *extra):
            status, out, err = private.main("--module", module, "--json", "--steps", "3", *extra)
            self.assertEqual(status, 1, err)
            return json.loads(out)
        docs = [graded(m, "--secret", secret) for m in (a, b, copy)]
        seeds = [d["seed"] for d in docs]
        self.assertTrue(all(10 ** 12 <= seed < 10 ** 18 for seed in seeds), seeds)   # too many to try
        self.assertEqual(seeds[0], seeds[2])                      # the same bytes, the same cases
        self.assertNotEqual(seeds[0], seeds[1])                   # other bytes, other cases
        again = graded(a, "--seed", str(seeds[0]))                # the teacher repeats it from the record
        self.assertEqual(again["steps"], docs[0]["steps"])
        self.assertIn("not both", usage_error("--secret", secret, "--seed", "3"))

    def test_what_a_zip_or_a_workflow_cannot_carry_is_refused_not_dropped(self):
        for argv, says in ((["--autograder", "d", "--module", "x.py"], "cannot carry --module"),
                           (["--autograder", "d", "--only", "1", "--case", "2"], "cannot carry --case"),
                           (["--autograder", "d", "--out", "r.json"], "cannot carry --out"),
                           (["--autograder", "d", "-q"], "cannot carry --quiet"),
                           (["--autograder", "d", "--user", "nobody", "--sealed"], "cannot carry --user"),
                           (["--classroom", "d", "--hidden-visibility", "visible"],
                            "cannot carry --hidden-visibility"),
                           (["--classroom", "d", "--autograder", "e"], "one of"),
                           (["--hidden-visibility", "visible"], "goes with --format gradescope"),
                           (["--jobs", "2"], "--jobs goes with --class"),
                           (["--class", ROOT], "--class needs --gradebook"),
                           (["--class", ROOT, "--gradebook", "g.csv", "--module", "x.py"],
                            "--class cannot carry --module"),
                           (["--class", ROOT, "--gradebook", "g.csv", "--jobs", "0"], "--jobs must be")):
            with self.subTest(argv=argv):
                self.assertIn(says, usage_error(*argv) or "no usage error")
        self.assertIsNone(usage_error("--autograder", "d", "--seed", "1", "--cases", "0", "--json"))

    def test_weights_of_steps_the_run_does_not_grade_are_said_unused(self):
        with tempfile.TemporaryDirectory() as folder:
            weights = write(os.path.join(folder, "weights.json"), json.dumps({"kv_head": 2, "layer": 3,
                                                                               "decode_step": 2}))
            # One step (GitHub Classroom's test of a step, a --case): the others' weights are for
            # the other runs, and a note in every step's log called kv_head's weight unused.
            for argv, said in ((["--steps", "core"], "decode_step, layer"), (["--steps", "1-3,13"], "decode_step"),
                               ([], None), (["--only", "3", "--format", "classroom"], None),
                               (["--only", "1", "--quiet"], None), (["--only", "kv_head", "--case", "2"], None)):
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    cli.parse_args(["--weights", weights, *argv])
                self.assertEqual(err.getvalue(), "" if said is None else "grader: note: --weights gives points to "
                                 f"steps this run does not grade, which it does not use: {said}\n", argv)

    def test_a_gradebook_where_none_can_be_written_is_refused_in_the_teachers_language(self):
        missing = os.path.join(ROOT, "no-such-folder")
        for argv, says in (([missing], {"en": f"--class {missing}: no such folder",
                                        "ja": f"--class {missing}: そのようなフォルダはありません"}),
                           ([ROOT, "--gradebook", os.path.join(missing, "g.csv")],
                            {"en": f"no such folder {missing}", "ko": f"{missing} 폴더가 없습니다"}),
                           ([ROOT, "--gradebook", ROOT], {"en": "is a folder: give the CSV file to write",
                                                          "ja": "はフォルダです。書き出す CSV ファイルを指定してください"})):
            for lang, said in says.items():
                with self.subTest(argv=argv, lang=lang):
                    self.assertIn(said, usage_error("--class", *argv, "--lang", lang) or "no usage error")


# ---------------------------------------------------------------------------
# 5. Gradescope: hidden cases in tests of their own, what to rename.
# ---------------------------------------------------------------------------

def step_result(step, name, status, case=None, public=None, hidden=None, message="", show=None):
    return StepResult(step, name, "lesson", f"what {name} does", status, 23,
                      23 if status == "passed" else 20, public, hidden, message=message, case=case,
                      show=show)


@heavy
class Gradescope(unittest.TestCase):

    ARGS = argparse.Namespace(seed=9, cases=10, timeout=5.0, hidden_visibility="after_due_date",
                              weight_map={"kv_head": 4})

    def graded(self, *results, all_or_nothing=False):
        results = scored(list(results), self.ARGS.weight_map, self.ARGS.cases, all_or_nothing)
        doc = documents.gradescope(results, self.ARGS)
        return doc, [(t["name"], t["score"], t["max_score"], t.get("visibility")) for t in doc["tests"]]

    RESULTS = (step_result(3, "kv_head", "passed", public=[13, 13], hidden=[10, 10]),
               step_result(4, "group_heads", "failed", case=15, public=[13, 13], hidden=[9, 10],
                           message="case 15: wrong", show=">>> group_heads(4, 2)"),
               step_result(5, "fold_kv_mean", "failed", case=2, public=[12, 13], hidden=[8, 10],
                           message="case 2: wrong"),
               step_result(6, "repeat_kv", "failed", case=1, public=[12, 13], hidden=[10, 10],
                           message="case 1: wrong"))

    def test_the_hidden_cases_earn_the_points_and_the_public_ones_give_feedback(self):
        doc, tests = self.graded(*self.RESULTS)
        feedback = " (public cases: feedback, no points)"
        self.assertEqual(tests, [
            ("step 3: kv_head" + feedback, 0.0, 0.0, None), ("step 3: kv_head", 4.0, 4.0, "after_due_date"),
            ("step 4: group_heads" + feedback, 0.0, 0.0, None),
            ("step 4: group_heads", 0.9, 1.0, "after_due_date"),        # 9 of 10 hidden cases
            ("step 5: fold_kv_mean" + feedback, 0.0, 0.0, None),
            ("step 5: fold_kv_mean", 0.8, 1.0, "after_due_date"),
            ("step 6: repeat_kv" + feedback, 0.0, 0.0, None),
            ("step 6: repeat_kv", 1.0, 1.0, "after_due_date")])
        self.assertEqual(doc["score"], 4.0 + 0.9 + 0.8 + 1.0)
        self.assertEqual([t["status"] for t in doc["tests"]][::2], ["passed", "passed", "failed", "failed"])
        hidden_failure, public_failure = doc["tests"][3]["output"], doc["tests"][4]["output"]
        self.assertNotIn("group_heads(4, 2)", hidden_failure)           # a hidden case's call: withheld
        self.assertIn("case 15", hidden_failure)
        self.assertNotIn("--case", hidden_failure)
        self.assertIn("python grader.py --only fold_kv_mean --case 2 --show", public_failure)   # no seed
        self.assertTrue(all(t["output_format"] == "md" for t in doc["tests"]))
        # Its public cases all passed: the hidden test never tells it to make them pass.
        self.assertNotIn("public cases pass first", hidden_failure)
        self.assertIn("Every public case passes: the hidden ones draw other inputs", hidden_failure)

    def test_a_hidden_case_failing_as_a_known_mistake_names_it(self):
        from gqa_grader.expected.mistakes import MISTAKES
        failed = step_result(3, "kv_head", "failed", case=15, public=[13, 13], hidden=[0, 10],
                             message="case 15: wrong")._replace(mistake="strided")
        doc, _tests = self.graded(failed)
        said = doc["tests"][1]["output"]
        self.assertIn("this is a known mistake, " + MISTAKES["strided"][0], said)
        self.assertIn("case 15", said)
        self.assertNotIn("Every public case passes", said)

    def test_a_modules_text_is_shown_as_text_never_as_markdown(self):
        # An image that would load when a TA opens the page, a link, a fence to close.
        text = "importing gqa.py raised ValueError: ![x](http://127.0.0.1/t.png) [regrade](http://x) ```\n# big"
        doc = documents.gradescope([], self.ARGS, error=text)
        self.assertTrue(doc["output"].startswith("````text\n"), doc["output"])
        self.assertTrue(doc["output"].endswith("\n````"), doc["output"])
        failing = step_result(4, "group_heads", "failed", case=0, public=[0, 13], hidden=[0, 10], message=text)
        _doc, tests = self.graded(failing)
        output = _doc["tests"][0]["output"]
        self.assertTrue(output.startswith("````text\n" + text + "\n````"), output)

    def test_all_or_nothing_gives_a_step_its_points_only_when_every_hidden_case_passes(self):
        doc, tests = self.graded(*self.RESULTS, all_or_nothing=True)
        self.assertEqual([score for _, score, _, _ in tests[1::2]], [4.0, 0.0, 0.0, 1.0])

    def test_a_submission_without_gqa_py_lists_what_was_submitted_and_what_to_rename(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        for name in ("GQA.py", "notes.txt", os.path.join("mylab", "gqa.py"), "lab.zip"):
            write(os.path.join(folder, name), "x")
        text = submissions.missing_module(os.path.join(folder, "gqa.py"))
        for says in ("GQA.py", "notes.txt", "lab.zip", "rename GQA.py to gqa.py",
                     "move mylab/gqa.py to the top", "lab.zip is a zip"):
            self.assertIn(says, text)
        os.makedirs(os.path.join(folder, "empty"))
        self.assertIn("the folder is empty", submissions.missing_module(os.path.join(folder, "empty", "gqa.py")))

    def test_a_module_of_another_name_not_found_gets_a_near_name_and_the_folders_own_files_first(self):
        # --module path/gqa-lab.py, mistyped: the near names beside it, never "rename" advice
        # for .py files deep in the folder (a --module in /tmp met hundreds of them).
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        for name in ("gqa_lab.py", "notes.txt", os.path.join("a", "b", "tool.py"), os.path.join("a", "z.py")):
            write(os.path.join(folder, name), "x")
        text = submissions.missing_module(os.path.join(folder, "gqa-lab.py"))
        self.assertIn("did you mean gqa_lab.py?", text)
        self.assertNotIn("rename", text)
        listed = text.split("the folder holds ")[1].split(";")[0].split(", ")
        self.assertEqual(listed, ["gqa_lab.py", "notes.txt", os.path.join("a", "z.py"), os.path.join("a", "b", "tool.py")])
        self.assertNotIn("did you mean", submissions.missing_module(os.path.join(folder, "report.md")))

    def test_the_autograders_run_names_what_to_rename(self):
        private = Private(self)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            cli.main(["--autograder", private.work, "--seed", "5"])
        top = os.path.join(private.work, "autograder")
        with zipfile.ZipFile(os.path.join(private.work, "autograder.zip")) as z:
            z.extractall(os.path.join(top, "source"))
            run = z.read("run_autograder").decode()
        os.chmod(top, 0o700)
        write(os.path.join(top, "submission", "GQA.py"), SOURCE)
        script = write(os.path.join(top, "run_autograder"),
                       run.replace("/autograder", top).replace("python3 ", f"{sys.executable} "))
        done = subprocess.run(["bash", script], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(os.path.join(top, "results", "results.json"), encoding="utf-8") as f:
            results = json.load(f)
        self.assertEqual((results["score"], results["tests"], results["extra_data"]["seed"]), (0, [], 5))
        self.assertIn("rename GQA.py to gqa.py", results["output"])


# ---------------------------------------------------------------------------
# 3. --class: a folder of submissions into a gradebook.
# ---------------------------------------------------------------------------

def alive_in(folder):
    """The processes whose command line names folder (where /proc exists; else none)."""
    alive = []
    if os.path.isdir("/proc"):
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    alive += [pid] if folder.encode() in f.read() else []
            except OSError:
                pass
    return alive


@heavy
class AHandoutsClass(unittest.TestCase):
    """A class given a track's handout (--steps core), graded without --steps: refused before
    any run, naming the steps its starter gave, in any of the starter's languages."""

    def test_the_steps_a_starter_gave_are_not_graded_as_the_students_work(self):
        with tempfile.TemporaryDirectory() as top:
            folder, gradebook = os.path.join(top, "class"), os.path.join(top, "grades.csv")
            os.mkdir(folder)
            for lang in ("en", "ja", "ko"):
                made = run_grader("--starter", os.path.join(top, lang), "--steps", "core", "--lang", lang)
                self.assertEqual(made.returncode, 0, made.stderr)
                shutil.copy(os.path.join(top, lang, "gqa.py"), os.path.join(folder, f"student-{lang}.py"))
            shutil.copy(os.path.join(ROOT, "gqa.py"), os.path.join(folder, "student-all.py"))
            with open(os.path.join(top, "en", "gqa.py"), encoding="utf-8") as f:     # the English starter's word
                given = [int(n) for n in re.findall(r"^# Given: step (\d+), ", f.read(), re.M)]
            self.assertTrue(given)
            self.assertFalse(set(given) & {tracks.BY_NAME[name].number for name in tracks.TRACKS["core"]})
            run = run_grader("--class", folder, "--gradebook", gradebook, "--seed", "1")
            self.assertEqual(run.returncode, 2, run.stderr)
            self.assertIn(f"cannot grade the class: 3 submissions come from a track's starter, which gave them "
                          f"steps {', '.join(map(str, sorted(given)))} (", run.stderr)
            self.assertIn("give the track their handout was made with (--steps core)", run.stderr)
            self.assertEqual(sorted(os.listdir(top)), ["class", "en", "ja", "ko"])     # nothing written
            for steps in ("core", "all"):                   # the track given: nothing said of it
                args = cli.parse_args(["--class", folder, "--gradebook", gradebook, "--steps", steps])
                self.assertIsNone(classroom.Gradebook(args)._given_graded(submissions.discover(folder)), steps)
            for name in ("student-ja.py", "student-ko.py"):      # one file of four: noted, never a stop
                shutil.copy(os.path.join(folder, "student-all.py"), os.path.join(folder, name))
            args = cli.parse_args(["--class", folder, "--gradebook", gradebook])
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertIsNone(classroom.Gradebook(args)._given_graded(submissions.discover(folder)))
            self.assertTrue(err.getvalue().startswith(f"grader: note: from a track's starter, which gave steps "
                                                      f"{', '.join(map(str, sorted(given)))} ("), err.getvalue())
            self.assertIn(": student-en.py; graded with every step of the lab, as the rest of the class is",
                          err.getvalue())


@heavy
class Gradebook(unittest.TestCase):
    EARLY = ("mixed", "stopped")

    @staticmethod
    def mixed():
        """A mixed class graded (--jobs 2), then again after bob submits a new file: the
        runs, the gradebooks and bob's feedback, as plain data."""
        private = Private()
        try:
            subs = os.path.join(private.work, "subs")
            alice = write(os.path.join(subs, "alice.py"), SOURCE)
            bob = write(os.path.join(subs, "bob.py"), WRONG)
            write(os.path.join(subs, "carol-repo", "lab", "gqa.py"), SOURCE)   # a Classroom clone
            write(os.path.join(subs, "dave.zip"), b"PK\x03\x04")
            write(os.path.join(subs, "erin", "GQA.py"), SOURCE)
            write(os.path.join(subs, "frank.py"), "def valid_g(h:\n")
            write(os.path.join(subs, "gina", "a", "gqa.py"), SOURCE)
            write(os.path.join(subs, "gina", "b", "gqa.py"), SOURCE)
            write(os.path.join(subs, "hank.py"), b"\x7fELF\x00\x00")
            write(os.path.join(subs, "ivan.py"), "class GQAError(ValueError):\n    pass\n" + "".join(
                f"def {name}(*args):\n    raise NotImplementedError\n"
                for name in ("valid_g", "method_name", "kv_head")))            # a starter, untouched
            roster = write(os.path.join(private.work, "roster.csv"),
                           "submission,student,name\nalice.py,s001,Alice A\nzoe,s026,Zoe Z\n")
            argv = ["--class", "subs", "--gradebook", "grades.csv", "--only", "1,2,3", "--cases", "0",
                    "--roster", roster, "--jobs", "2"]
            run = private.run(*argv)
            data = {"first": [run.returncode, run.stdout, run.stderr],
                    "rows": rows_of(os.path.join(private.work, "grades.csv")),
                    "sha256": [sha256(alice), sha256(bob)]}
            feedback = os.path.join(private.work, "grades-feedback", "bob.py")
            data["feedback"] = sorted(os.listdir(feedback))
            with open(os.path.join(feedback, "results.json"), encoding="utf-8") as f:
                data["sealed"] = json.load(f)["sealed"]
            with open(os.path.join(feedback, "report.txt"), encoding="utf-8") as f:
                data["report"] = f.read()
            write(bob, SOURCE)
            book = os.path.join(private.work, "grades.csv")      # alice's score typed over, by hand
            with open(book, encoding="utf-8", newline="") as f:
                text = f.read()
            with open(book, "w", encoding="utf-8", newline="") as f:
                f.write(text.replace('"s001","Alice A","alice.py","3"', '"s001","Alice A","alice.py","2"', 1))
            data["edited"] = '"s001","Alice A","alice.py","3"' in text          # the cell found, to type over
            run = private.run(*argv)
            data.update(again=[run.returncode, run.stdout, run.stderr],
                        after=rows_of(os.path.join(private.work, "grades.csv")))
            return data
        finally:
            private.remove()

    def test_a_mixed_class_resumed_and_a_changed_submission_graded_again(self):
        data = early(self.mixed)
        (status, stdout, stderr), rows = data["first"], data["rows"]
        self.assertEqual(status, 0, stderr)
        self.assertEqual(sorted(rows), ["(no submission) s026", "alice.py", "bob.py", "carol-repo",
                                        "dave.zip", "erin", "frank.py", "gina", "hank.py", "ivan.py"])
        seed = re.search(r"seed (\d+) \(drawn now\)", stderr).group(1)
        self.assertGreaterEqual(int(seed), 10 ** 12)            # 18 digits but one in a million draws
        self.assertNotIn("note: --seed", stderr)
        got = {k: (r["student"], r["score"], r["status"]) for k, r in rows.items()}
        # bob's strided kv_head (i % g) is right where g is 1 or h, and nowhere else: with
        # --cases 0 his points for it are the share of its public cases at such a pair.
        first = len(checking.ALL_HG)
        pairs = checking.ALL_HG + [checking.draw_hg(k, checking.Draw(f"kv_head:0:{k}"))
                                   for k in range(first, first + checking.PUBLIC_CASES)]
        share = round(sum(g in (1, h) for h, g in pairs) / len(pairs), 4)
        self.assertEqual({k: got[k] for k in ("alice.py", "bob.py", "carol-repo")},
                         {"alice.py": ("s001", "3", "passed"), "bob.py": ("bob", f"{2 + share:g}", "failed"),
                          "carol-repo": ("carol-repo", "3", "passed")})
        self.assertEqual((rows["bob.py"]["3 kv_head"], rows["bob.py"]["1 valid_g"]), (f"{share:g}", "1"))
        self.assertEqual(got["ivan.py"], ("ivan", "0", "not started"))      # never "failed"
        self.assertIn("2 passed every step, 1 failed some, 1 not started, 6 not graded", stdout)
        self.assertEqual([rows["alice.py"]["sha256"], rows["bob.py"]["sha256"]], data["sha256"])
        self.assertEqual(rows["alice.py"]["seed"], seed)
        self.assertEqual(data["sha256"], [hashlib.sha256(SOURCE.encode()).hexdigest(),
                                          hashlib.sha256(WRONG.encode()).hexdigest()])
        self.assertIn("graded lab/gqa.py", rows["carol-repo"]["notes"])
        for key, says in (("dave.zip", "a zip"), ("erin", "rename it to gqa.py"), ("frank.py", "syntax error"),
                          ("gina", "2 files named gqa.py"), ("hank.py", "binary"),
                          ("(no submission) s026", "no submission")):
            self.assertEqual(rows[key]["status"], "not graded", key)
            self.assertIn(says, rows[key]["notes"], key)
        self.assertRegex(stdout, r"step  3 kv_head +2/4 ")        # the class's pass rate
        self.assertEqual(data["feedback"], ["report.txt", "results.json"])
        self.assertEqual(data["sealed"], "sealed" if AS_ROOT else mock.ANY)   # a uid of its own
        self.assertIn("FAIL  kv_head", data["report"])
        # Again, after bob submits a new file: his alone is graded again.
        again, after = data["again"][2], data["after"]
        self.assertIn("4 submissions graded before with the same bytes", again)   # alice, carol, frank, ivan
        self.assertIn("[1/1] bob: passed", again)
        self.assertIn("note: 1 submission changed since it was graded (bob): graded again with the class's seed; "
                      "its hidden cases are those its first file met", again)    # it was graded again unsaid
        self.assertTrue(data["edited"])                         # and the edit undone, said so
        self.assertIn("grader: 1 kept row's points differ from grades.csv's (s001: score 2 in the file, 3 graded)",
                      again)
        self.assertEqual(after["bob.py"]["score"], "3")
        self.assertEqual({k: r for k, r in after.items() if k != "bob.py"},
                         {k: r for k, r in rows.items() if k != "bob.py"})

    @unittest.skipUnless(AS_ROOT, "a worker's user of its own needs root")
    def test_submissions_or_a_gradebook_a_worker_could_open_are_refused(self):
        private = Private(self)
        shared = tempfile.mkdtemp()                      # a folder every user may enter
        self.addCleanup(shutil.rmtree, shared, True)
        os.chmod(shared, 0o755)
        subs = os.path.join(shared, "subs")
        write(os.path.join(subs, "alice.py"), SOURCE)    # a classmate's solution, by its name
        mine = os.path.join(private.work, "subs")
        write(os.path.join(mine, "mallory.py"), SOURCE)
        os.makedirs(os.path.join(shared, "x"))
        os.symlink(os.path.join(shared, "x"), os.path.join(private.work, "lnk"))
        through = os.path.join(private.work, "lnk", "..", "subs")   # the system reads it as subs
        os.makedirs(os.path.join(shared, "fb"))
        os.makedirs(os.path.join(private.work, "linked"))
        os.symlink(os.path.join(shared, "fb"), os.path.join(private.work, "linked", "g-feedback"))
        for class_dir, book, where, what in (
                (subs, os.path.join(private.work, "g.csv"), subs, "the submissions of --class"),
                (through, os.path.join(private.work, "g.csv"), subs, "the submissions of --class"),
                (mine, os.path.join(shared, "g.csv"), shared, "the folder of --gradebook"),
                (mine, os.path.join(private.work, "linked", "g.csv"), os.path.join(shared, "fb"),
                 "the feedback of --gradebook")):
            with mock.patch.object(sandbox_package(), "TOOLS", ()):    # outside namespaces
                status, out, err = private.main("--class", class_dir, "--gradebook", book, "--only", "1",
                                                "--cases", "0", "--quiet")
            self.assertEqual(status, 2, err)
            self.assertRegex(err, rf"cannot grade the class: the worker's user uid \d+ could open "
                                  rf"files in {re.escape(where)}, {what}")
            self.assertIn(f"chmod 700 {where}", err)
            self.assertFalse(os.path.exists(book))       # refused before any run or row
            if "linked" not in book:                     # nor a feedback folder left
                self.assertFalse(os.path.exists(book[:-len(".csv")] + "-feedback"), book)
        if sandbox_package().available()[0]:     # in namespaces none of it is in sight: graded
            status, out, err = private.main("--class", subs, "--gradebook", os.path.join(private.work, "n.csv"),
                                            "--only", "1", "--cases", "0", "--quiet")
            self.assertEqual(status, 0, err)
        # Links the teacher left in the gradebook's private folder: written through, the
        # grades or a student's feedback would go where each says.
        planted = os.path.join(shared, "planted.csv")
        write(planted, "student,seed\nx,4242\n")
        os.makedirs(os.path.join(private.work, "books"))
        os.symlink(planted, os.path.join(private.work, "books", "a.csv"))
        os.makedirs(os.path.join(private.work, "books", "b-feedback"))
        os.symlink(os.path.join(shared, "fb"), os.path.join(private.work, "books", "b-feedback", "mallory.py"))
        for book in ("a.csv", "b.csv"):
            path = os.path.join(private.work, "books", book)
            status, out, err = private.main("--class", mine, "--gradebook", path, "--only", "1",
                                            "--cases", "0", "--quiet")
            self.assertEqual(status, 2, err)
            self.assertIn("is a symbolic link; the gradebook and its feedback folders must be", err)
        with open(planted, encoding="utf-8") as f:
            self.assertEqual(f.read(), "student,seed\nx,4242\n")

    @staticmethod
    def stopped():
        """A class stopped by SIGINT while b's import waits, then run again after b submits
        a new file: what it said and left, as plain data."""
        private = Private()
        try:
            subs = os.path.join(private.work, "subs")
            write(os.path.join(subs, "a.py"), SOURCE)
            slow = write(os.path.join(subs, "b.py"), "import time\ntime.sleep(60)\n")   # its import waits
            write(os.path.join(subs, "c.py"), SOURCE)
            argv = [sys.executable, os.path.join(private.dir, "grader.py"), "--class", "subs",
                    "--gradebook", "g.csv", "--only", "1", "--cases", "0", "--jobs", "1", "--timeout", "30"]
            proc = subprocess.Popen(argv, cwd=private.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            for line in proc.stderr:                        # a's row is written; b's run is under way
                if "[1/3] a:" in line:
                    break
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=60)
            data = {"stopped": [proc.returncode, out], "rows": sorted(rows_of(os.path.join(private.work, "g.csv"))),
                    "left": [name for top, _, files in os.walk(os.path.join(private.work, "g-feedback"))
                             for name in files if name.startswith(".")], "alive": alive_in(private.dir)}
            write(slow, SOURCE)                             # b submits again
            again = subprocess.run(argv, cwd=private.work, capture_output=True, text=True, timeout=120)
            data.update(again=[again.returncode, again.stderr], statuses={
                k: r["status"] for k, r in rows_of(os.path.join(private.work, "g.csv")).items()})
            return data
        finally:
            private.remove()

    def test_a_stopped_class_keeps_what_was_written_and_goes_on_from_there(self):
        data = early(self.stopped)
        status, out = data["stopped"]
        self.assertEqual(status, 130, out)
        self.assertIn("stopped by SIGINT: 1 of 3 written", out)
        self.assertEqual(data["rows"], ["a.py"])
        self.assertEqual(data["left"], [])
        self.assertEqual(data["alive"], [])                 # no grader, no worker left
        status, stderr = data["again"]
        self.assertEqual(status, 0, stderr)
        self.assertIn("1 submission graded before", stderr)
        self.assertEqual(data["statuses"], {"a.py": "passed", "b.py": "passed", "c.py": "passed"})

    def test_a_gradescope_export_and_a_classroom_roster_name_the_students(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        write(os.path.join(folder, "submission_metadata.yml"),
              "submission_101:\n  :submitters:\n  - :name: Solo Student\n    :sid: '100'\n"
              "    :email: solo@example.edu\n  :created_at: 2024-01-01\n"
              "submission_102:\n  :submitters:\n  - :name: Pair One\n    :sid: '200'\n"
              "  - :name: Pair Two\n    :sid: '201'\n")
        write(os.path.join(folder, "submission_101", "gqa.py"), SOURCE)
        write(os.path.join(folder, "submission_102", "lab", "GQA.py"), SOURCE)
        found = {s.key: (s.student, s.name, s.path is not None) for s in submissions.discover(folder)}
        self.assertEqual(found, {"submission_101": ("100", "Solo Student", True),
                                 "submission_102": ("200+201", "Pair One; Pair Two", False)})
        clones = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, clones)
        write(os.path.join(clones, "lab1-octocat", "gqa.py"), SOURCE)
        write(os.path.join(clones, "lab1-hubot", "gqa.py"), SOURCE)
        roster = write(os.path.join(folder, "classroom_roster.csv"),
                       '"identifier","github_username","github_id","name"\n'
                       '"ann@example.edu","octocat","1","Ann"\n"bo@example.edu","","",""\n')
        found = {s.key: s.student for s in submissions.discover(clones, roster_path=roster)}
        self.assertEqual(found, {"lab1-hubot": "lab1-hubot", "lab1-octocat": "ann@example.edu"})


# ---------------------------------------------------------------------------
# 4. GitHub Classroom: the workflow, parsed back.
# ---------------------------------------------------------------------------


if __name__ == "__main__":
    unittest.main()
