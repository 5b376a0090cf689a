"""gqa_grader/verdict/printing.py: the folder --show names, the points line of one case, and
the command that repeats a run."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import unittest
from unittest import mock

from gqa_grader import cli
from gqa_grader.teacher import handout
from gqa_grader.verdict import printing
from gqa_grader.steps import tracks
from gqa_grader.verdict.results import StepResult


class ShownFolder(unittest.TestCase):
    """--show's "to paste into python started in FOLDER": a folder the student can cd to."""

    def test_near_folders_are_relative_far_ones_whole(self):
        top = os.path.realpath(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, top)
        here = os.path.join(top, "a", "b", "c")
        os.makedirs(here)
        before = os.getcwd()
        os.chdir(here)
        self.addCleanup(os.chdir, before)
        far = os.path.join(top, "elsewhere")
        self.assertEqual(printing._folder_shown(here), "this folder")
        self.assertEqual(printing._folder_shown(os.path.join(here, "mylab")), "mylab")
        self.assertEqual(printing._folder_shown(os.path.join(os.path.dirname(here), "lab")),
                         os.path.join(os.pardir, "lab"))
        self.assertEqual(printing._folder_shown(far), far)          # not ../../../elsewhere


@contextlib.contextmanager
def graders_copy(name):
    """A grader.py in the folder name of a temporary one (printing.HERE patched to it), run
    from three folders down: far from the copy, which a command then names whole, wherever
    the checkout is (a clone in /tmp saw ../tmpXXXX).  Yields the copy's folder."""
    with tempfile.TemporaryDirectory() as top:
        copy, here = os.path.join(top, name), os.path.join(top, "a", "b", "c")
        os.makedirs(copy)
        os.makedirs(here)
        open(os.path.join(copy, "grader.py"), "w").close()
        before = os.getcwd()
        os.chdir(here)
        try:
            with mock.patch.object(printing, "HERE", copy):
                yield copy
        finally:
            os.chdir(before)


class Repeat(unittest.TestCase):
    """The command that repeats a case: GitHub Classroom's grader runs from a copy of its own
    (a folder of mktemp's), and the student repeats the case with their checkout's grader.py."""

    def test_classroom_names_the_students_grader_not_the_runners_copy(self):
        from gqa_grader.language import i18n
        self.addCleanup(i18n.use, "en")                  # --lang ko is the run's language
        with graders_copy("copy") as copy:
            argv = ["--module", "gqa.py", "--only", "3", "--cases", "0", "--sealed", "--lang", "ko"]
            said = {form: printing.reproduce(cli.parse_args(argv + more), "kv_head", 6)
                    for form, more in (("classroom", ["--format", "classroom"]), ("text", []))}
        self.assertEqual(said["classroom"], "python grader.py --only kv_head --case 6 --show --lang ko")
        self.assertEqual(said["text"], f"python {os.path.join(copy, 'grader.py')} --module gqa.py --only kv_head "
                                       "--case 6 --show --lang ko")       # a teacher's own run: the grader it ran


class PastedWhole(unittest.TestCase):
    """A path with a space (a folder named "課題 1") in a command to paste: one word in a shell."""

    def test_the_module_and_the_grader_are_each_one_word(self):
        import shlex
        with graders_copy("my grader") as copy:
            said = printing.reproduce(cli.parse_args(["--module", "../課題 1/gqa.py", "--only", "3"]), "kv_head", 6)
        words = shlex.split(said)
        self.assertEqual(words[:4], ["python", os.path.join(copy, "grader.py"), "--module", "../課題 1/gqa.py"])
        self.assertEqual(words[4:], ["--only", "kv_head", "--case", "6", "--show"])


class OneCase(unittest.TestCase):
    """The points line of a run of one case (--case N)."""

    def test_a_public_case_earns_nothing_where_hidden_cases_grade_and_its_share_where_none_do(self):
        result = StepResult(step=3, name="kv_head", part="lesson", status="passed", cases=1, cases_passed=1,
                            summary=tracks.BY_NAME["kv_head"].summary, public=(1, 1), hidden=(0, 0),
                            message="", points=0.0, max_points=1.0)
        run = cli.parse_args(["--only", "kv_head", "--case", "3"])
        self.assertIn("a public case: public cases earn no points", printing.summary([result], run))
        handout = cli.parse_args(["--only", "kv_head", "--case", "3", "--cases", "0"])   # a handout's run
        self.assertNotIn("public cases earn no points", printing.summary([result._replace(points=1.0)], handout))
        self.assertIn("points: 1 of 1 (this one case)", printing.summary([result._replace(points=1.0)], handout))


class OnlyOnce(unittest.TestCase):
    """--only names a step once however it is given, so the command that repeats a run
    names it once too."""

    def test_a_step_by_number_and_by_name_is_one_step(self):
        from gqa_grader import cli
        args = cli.parse_args(["--only", "3,kv_head,1", "--seed", "1"])
        self.assertEqual(args.only, ["valid_g", "kv_head"])              # in the lab's order
        self.assertIn("--only 3,kv_head,1", printing.reproduce(args))      # as it was given


if __name__ == "__main__":
    unittest.main()
