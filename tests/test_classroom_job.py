"""GitHub Classroom's job, run as a runner runs it: the template repository (a handout
and the workflow --classroom writes) checked out where every user may read it, each
`run` step in bash -e with GITHUB_ENV and GITHUB_OUTPUT, a step whose `if` is false
skipped, and the reporter's sum of the results.  As root (a container job) and as
another user, the solution earns every point; a module whose import never ends costs
one timeout, and no graded step runs."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from tests.helpers import ROOT, early, heavy, run_grader, start_early
from tests.test_classroom import parse_yaml

AS_ROOT = os.name == "posix" and os.geteuid() == 0
NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")


def run_job(checkout, prefix=()):
    """The job's run steps, in order, as a runner runs them: {step id: (exit status, the
    result it wrote or None, its stderr)}; a step skipped by its `if` is not there."""
    with open(os.path.join(checkout, ".github", "workflows", "classroom.yml"), encoding="utf-8") as f:
        steps = parse_yaml(f.read())["jobs"]["run-autograding-tests"]["steps"]
    scratch = tempfile.mkdtemp()
    os.chmod(scratch, 0o755)
    env_file = os.path.join(scratch, "env")
    open(env_file, "w").close()
    os.chmod(env_file, 0o666)
    ran = {}
    for i, step in enumerate(s for s in steps if "run" in s):
        with open(env_file) as f:
            extra = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
        if step.get("if") == "env.GQA_IMPORTED == 'yes'" and extra.get("GQA_IMPORTED") != "yes":
            continue
        if step.get("if") not in (None, "env.GQA_IMPORTED == 'yes'"):
            raise ValueError(f"a condition this runner does not read: {step['if']}")
        out = os.path.join(scratch, f"out{i}")
        open(out, "w").close()
        os.chmod(out, 0o666)
        path = os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"])
        done = subprocess.run([*prefix, "bash", "-e", "-c", step["run"]], cwd=checkout, capture_output=True,
                              text=True, timeout=300,
                              env=dict(PATH=path, GITHUB_ENV=env_file, GITHUB_OUTPUT=out, **extra))
        with open(out) as f:
            written = f.read().strip()
        result = json.loads(base64.b64decode(written[len("result="):])) if written.startswith("result=") else None
        ran[step["id"]] = (done.returncode, result, done.stderr)
    shutil.rmtree(scratch, True)
    return ran


def points(ran):
    return sum(t["score"] for _, result, _ in ran.values() if result for t in result["tests"])


def load_tests(loader, tests, pattern):
    """The job's runs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


@heavy
@unittest.skipUnless(AS_ROOT, "the job's users (root, another) need root to be made here")
class ClassroomJob(unittest.TestCase):
    EARLY = ("jobs",)

    @staticmethod
    def jobs():
        """The template made once (a handout of steps 1 to 3, its workflow, the solution as
        the student's gqa.py); its job run from a checkout every user may read, as root and
        as another user; then with a gqa.py whose import never ends.  As plain data."""
        top = tempfile.mkdtemp()
        try:
            template = os.path.join(top, "template")
            for argv in (["--handout", template, "--steps", "1-3"],
                         ["--classroom", template, "--steps", "1-3", "--timeout", "1"]):
                done = run_grader(*argv)
                assert done.returncode == 0, done.stderr
            shutil.copy(os.path.join(ROOT, "gqa.py"), os.path.join(template, "gqa.py"))
            data = {"sandbox": os.path.isdir(os.path.join(template, "gqa_sandbox")), "ran": {}}
            users = {"root": ()}
            if shutil.which("setpriv"):
                users["another user"] = NOBODY
            for user, prefix in list(users.items()) + [("hang", ())]:
                repo = os.path.join(top, user.replace(" ", "-"))
                shutil.copytree(template, repo)
                if user == "hang":
                    with open(os.path.join(repo, "gqa.py"), "w") as f:
                        f.write("import time\ntime.sleep(10 ** 6)\n")
                for folder, _, files in os.walk(top):           # a checkout every user may read
                    os.chmod(folder, 0o755)
                    for name in files:
                        os.chmod(os.path.join(folder, name), 0o644)
                data["ran"][user] = run_job(repo, prefix)
            return data
        finally:
            shutil.rmtree(top, True)

    @classmethod
    def setUpClass(cls):
        cls.data = early(cls.jobs)

    def test_the_solution_earns_every_point_as_root_and_as_another_user(self):
        self.assertTrue(self.data["sandbox"])                    # the handout carries it
        users = [u for u in self.data["ran"] if u != "hang"]
        self.assertEqual(users[0], "root")
        for user in users:
            ran = self.data["ran"][user]
            with self.subTest(user=user):
                self.assertEqual(sorted(ran), ["prepare", "step1", "step2", "step3"], ran)
                self.assertEqual([ran[f"step{n}"][1]["status"] for n in (1, 2, 3)], ["pass"] * 3, ran)
                self.assertEqual(points(ran), 3)
                for status, _, err in ran.values():
                    self.assertEqual(status, 0, err)

    def test_a_module_whose_import_never_ends_costs_one_timeout(self):
        ran = self.data["ran"]["hang"]
        self.assertEqual(list(ran), ["prepare"])                 # no graded step ran
        self.assertIn("did not return within", ran["prepare"][2])
        self.assertEqual(points(ran), 0)


if __name__ == "__main__":
    unittest.main()
