"""The command line (grader.py, gqa_grader/cli.py) around a hostile or a wrong module:
standard modules planted beside the grader, Gradescope's format and weights (Folder),
the autograder (Autograder), a teacher's run known by its options (CommandLine), one
document when asked (OneDocument)."""

from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from gqa_grader.steps import checking, checks, tracks
from gqa_grader.verdict import grading
from gqa_grader.language import i18n
from tests.helpers import ROOT, early, heavy, start_early
from tests.sealed_support import (SOURCE, STARTER, ROOT_POSIX, NOT_ROOT, Copy, main_in,
                                  one_document, completed, as_run)


@heavy
class Folder(unittest.TestCase):

    EARLY = ("runs",)
    PLANTED = ("__future__", "json", "queue", "argparse", "select", "random", "ast")

    @staticmethod
    def runs():
        """A starter graded by a grader with standard modules' names planted beside it (a
        process of its own: what python finds first), and a gradescope run with weights."""
        copy = Copy(STARTER)
        try:
            for name in Folder.PLANTED:
                with open(os.path.join(copy.dir, name + ".py"), "w", encoding="utf-8") as f:
                    f.write("raise SystemExit('planted module ran')\n")
            planted = completed(copy.run("--json", "--cases", "1"))
        finally:
            copy.close()
        with tempfile.TemporaryDirectory() as tmp:
            weights = os.path.join(tmp, "weights.json")
            with open(weights, "w", encoding="utf-8") as f:
                json.dump({"kv_head": 3, "layer": 2}, f)
            copy = Copy(SOURCE.replace("return _kv_head(query_head, h, g)", "return query_head % g"))
            try:
                gradescope = completed(main_in(copy.dir, "--module", copy.module, "--seed", "1", "--format",
                                               "gradescope", "--weights", weights, "--only", "kv_head,layer",
                                               "--cases", "1"))
            finally:
                copy.close()
        return {"planted": planted, "gradescope": gradescope}

    def test_planted_standard_modules_beside_the_grader_never_run(self):
        # Standard modules' names planted beside grader.py (the module's own folder is its own).
        run = as_run(early(self.runs)["planted"])
        doc = one_document(self, run)
        self.assertEqual((run.returncode, doc["passed"]), (1, 0))
        self.assertEqual({s["status"] for s in doc["steps"]}, {"not started"})
        self.assertNotIn("planted", run.stdout + run.stderr)

    def test_gradescope_format_and_weights(self):
        data = one_document(self, as_run(early(self.runs)["gradescope"]))
        # The points come from the hidden case alone (--cases 1): strided grouping (i % g) is
        # right there only when its (h, g), drawn as the check draws it, has g = 1 or g = h.
        first = grading.public_end(checks.STEPS[2])
        h, g = checking.draw_hg(first, checking.Draw(f"kv_head:1:{first}", True), wide=True)
        kv = 3.0 if g in (1, h) else 0.0
        self.assertEqual(data["score"], kv + 2.0)
        feedback = " (public cases: feedback, no points)"
        self.assertEqual([(t["name"], t["score"], t["max_score"], t["status"]) for t in data["tests"]],
                         [("step 3: kv_head" + feedback, 0.0, 0.0, "failed"),   # feedback, worth nothing
                          ("step 3: kv_head", kv, 3.0, "passed" if kv else "failed"),   # the points
                          ("step 13: layer" + feedback, 0.0, 0.0, "passed"),
                          ("step 13: layer", 2.0, 2.0, "passed")])
        if not ROOT_POSIX:
            self.assertTrue(data["output"].startswith("partly sealed:"))


@heavy
class Autograder(unittest.TestCase):

    EARLY = ("made",)

    @staticmethod
    def made():
        """autograder.zip made with weights, read, and run as Gradescope would (as root)."""
        import zipfile
        folder = tempfile.mkdtemp()
        copy = Copy(STARTER)
        try:
            weights = os.path.join(folder, "w.json")
            with open(weights, "w", encoding="utf-8") as f:
                json.dump({"kv_head": 2}, f)
            made = {"made": completed(main_in(copy.dir, "--autograder", folder, "--cases", "1",
                                               "--weights", weights))}
            package = [os.path.relpath(os.path.join(top, n), ROOT).replace(os.sep, "/")
                       for p in ("gqa_grader", "gqa_sandbox") for top, _, names in os.walk(os.path.join(ROOT, p))
                       for n in names if n.endswith(".py")]
            with zipfile.ZipFile(os.path.join(folder, "autograder.zip")) as z:
                made["names"], made["package"] = sorted(z.namelist()), package
                made["mode"] = z.getinfo("run_autograder").external_attr >> 16 & 0o777
                made["same"] = {}
                for name in ["grader.py"] + package:
                    with open(os.path.join(ROOT, name), "rb") as f:
                        made["same"][name] = z.read(name) == f.read()
                run = made["run"] = z.read("run_autograder").decode()
                made["setup"] = z.read("setup.sh").decode()
                z.extractall(os.path.join(folder, "source"))
            if not ROOT_POSIX:
                return made
            # Gradescope's folders under a temporary root, the submission a starter.
            os.makedirs(os.path.join(folder, "submission"))
            shutil.copy(copy.module, os.path.join(folder, "submission", "gqa.py"))
            script = os.path.join(folder, "run_autograder")
            with open(script, "w", encoding="utf-8") as f:
                f.write(run.replace("/autograder", folder).replace("python3 ", f"{sys.executable} "))
            made["done"] = completed(subprocess.run(["bash", script], capture_output=True, text=True,
                                                    timeout=60))
            with open(os.path.join(folder, "results", "results.json"), encoding="utf-8") as f:
                made["results"] = json.load(f)
            return made
        finally:
            copy.close()
            shutil.rmtree(folder)

    def test_the_zip_has_gradescopes_layout_and_its_run_writes_the_results(self):
        made = early(self.made)
        self.assertEqual(made["made"][0], 0, made["made"][2])
        self.assertEqual(made["names"], sorted(["grader.py", "run_autograder", "secret", "setup.sh",
                                                "weights.json"] + made["package"]
                                               + [f"gqa_grader/locale/{lang}/LC_MESSAGES/gqa.mo"
                                                  for lang in i18n.LANGUAGES[1:]]))   # --lang's catalogs
        self.assertIn("gqa_grader/running/seal.py", made["package"])
        self.assertEqual(made["mode"], 0o755)
        self.assertEqual(made["same"], dict.fromkeys(["grader.py"] + made["package"], True))
        run, setup = made["run"], made["setup"]
        installs = re.findall(r"(?:apt-get|pip|npm) install[^;}\n]*", setup)
        self.assertEqual(installs, ["apt-get install -y bubblewrap"])       # the sandbox's tool only
        self.assertIn("if ! command -v bwrap", setup)                       # and only where it is missing
        self.assertIn("--sealed --format gradescope --module /autograder/submission/gqa.py", run)
        self.assertIn("--out /autograder/results/results.json --weights weights.json --cases 1", run)
        if not ROOT_POSIX:
            self.skipTest(NOT_ROOT)
        done = as_run(made["done"])
        self.assertEqual((done.returncode, done.stdout), (0, ""), done.stderr)
        results = made["results"]
        self.assertEqual(results["score"], 0.0)
        self.assertEqual(len(results["tests"]), 2 * len(checks.STEPS))      # public, hidden
        points = {x["name"]: x["max_score"] for x in results["tests"]}
        self.assertEqual((points["step 3: kv_head (public cases: feedback, no points)"],
                          points["step 3: kv_head"]), (0.0, 2.0))
        self.assertNotIn("output", results)                                   # fully sealed


class CommandLine(unittest.TestCase):

    def test_a_teachers_run_is_known_by_its_options_and_their_abbreviations(self):
        import grader
        for argv, hidden in ((["--sealed"], True), (["--seal", "--seed", "5"], True), (["--clas", "s"], True),
                             (["--format=gradescope"], True), (["--class-serve"], False),
                             (["--seed", "5", "--module", "m.py"], False), (["--cases", "3", "--json"], False)):
            with self.subTest(argv=argv):
                self.assertIs(grader._teachers_run(argv), hidden)


class OneDocument(unittest.TestCase):

    def test_list_starter_and_autograder_print_one_document_when_asked(self):
        folder = tempfile.mkdtemp()
        try:
            runs = [main_in(ROOT, "--json", "--list"),
                    main_in(ROOT, "--json", "--starter", folder),
                    main_in(ROOT, "--format", "gradescope", "--autograder", folder),
                    main_in(ROOT, "--json", "--starter", os.path.join(folder, "gqa.py", "x"))]
            docs = [one_document(self, run) for run in runs]
        finally:
            shutil.rmtree(folder)
        self.assertEqual([run.returncode for run in runs], [0, 0, 0, 2])
        self.assertEqual([s["name"] for s in docs[0]["steps"]], tracks.LESSON + tracks.ROBUSTNESS)
        self.assertEqual(docs[1]["starter"], os.path.join(folder, "gqa.py"))
        self.assertEqual(docs[2]["autograder"], os.path.join(folder, "autograder.zip"))
        self.assertIn("cannot write the starter", docs[3]["error"])


def load_tests(loader, tests, pattern):
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


if __name__ == "__main__":
    unittest.main()
