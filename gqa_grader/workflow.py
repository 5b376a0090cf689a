"""GitHub Classroom: --classroom writes DIR/.github/workflows/classroom.yml, a step per
lab step, each the sealed run of that step writing its result for the reporter
(--format classroom: its points by the rule of every run), then the reporter; written
from data by a small YAML emitter.
"""

import json
import math
import os
import random
import re
import sys

from .atomic import write_atomically
from .documents import classroom_error
from .grading import GRADER_VERSION
from .i18n import _
from .records import carried
from .tracks import ALL_STEPS, default_track


# Checked against the actions' published files (their tag v1):
# classroom-resources/autograding-grading-reporter, action.yml, README and
# src/main.js, src/notify-classroom.js, src/console-results.js: input runners (the step
# ids, comma-separated); each runner's result, base64 JSON, in the environment as
# <ID in capitals>_RESULTS: {"max_score", "status" ("pass", "fail" or "error"),
# "tests": [{"name", "status", "score", "message"}]} (what autograding-command-grader's
# output `result` holds, version 1); the points it reports to Classroom are the sum of
# the tests' scores over the sum of the runners' max_score.  Our steps are plain `run`
# steps writing `result=...` into $GITHUB_OUTPUT (documents.classroom_result), so that a
# step's score can be a share of its cases, which the command grader's cannot.  Classroom's own workflow template (its
# name, triggers, permissions, the job's `if`) is the one these READMEs show.

YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}   # YAML 1.1's


def yaml_scalar(value):
    """A scalar as YAML: whole numbers plain, every string double-quoted (JSON's escapes
    are YAML's), so that no ': ' or '#' in it can be read as structure."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))


def yaml_key(key):
    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key) and key.lower() not in YAML_WORDS
    return key if plain else json.dumps(key)


def yaml_lines(value, indent=0):
    """The lines of value (a dict, a list, or a scalar) in block style."""
    pad, lines = " " * indent, []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{yaml_key(key)}:")
                lines += yaml_lines(item, indent + 2)
            else:
                lines.append(f"{pad}{yaml_key(key)}: {yaml_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                inner = yaml_lines(item, indent + 2)
                lines += [f"{pad}- {inner[0].lstrip()}"] + inner[1:]
            else:
                lines.append(f"{pad}- {yaml_scalar(item)}")
    else:
        lines.append(pad + yaml_scalar(value))
    return lines


WEIGHTS_FILE = "weights.json"          # beside the workflow's grader.py: --weights, carried


def workflow(args):
    """The workflow as data: a step per lab step (the sealed run of that step alone, its
    result written as GitHub Classroom's reporter reads it: --format classroom, its score
    the step's points by the rule of every run), then the reporter of them all."""
    words = carried(args, args.given & {"cases", "timeout", "budget", "fail_fast", "all_or_nothing", "lang",
                                       "weights"},
                    WEIGHTS_FILE)
    if "cases" not in args.given:
        words = ["--cases", "0"] + words      # the handout holds the public cases' answers only
    minutes = math.ceil(args.budget / 60) + 1
    graded = [st for st in ALL_STEPS if st.name in (args.only or default_track())]
    steps = [{"name": "Checkout code", "uses": "actions/checkout@v4"}]
    for st in graded:
        command = " ".join(["python3", "grader.py", "--sealed", "--only", str(st.number),
                            "--format", "classroom"] + words)
        steps.append({"name": f"step {st.number}: {st.name}", "id": f"step{st.number}",
                      "timeout-minutes": minutes, "continue-on-error": True,
                      "run": command + ' >> "$GITHUB_OUTPUT"'})
    steps.append({"name": "Autograding Reporter", "if": "always()",   # whatever a step met
                  "uses": "classroom-resources/autograding-grading-reporter@v1",
                  "env": {f"STEP{st.number}_RESULTS": f"${{{{ steps.step{st.number}.outputs.result || "
                                                      f"'{_unfinished(st, args)}' }}}}" for st in graded},
                  "with": {"runners": ",".join(f"step{st.number}" for st in graded)}})
    return {"name": "Autograding Tests", "on": ["push", "repository_dispatch"],
            "permissions": {"checks": "write", "actions": "read", "contents": "read"},
            "jobs": {"run-autograding-tests": {
                "runs-on": "ubuntu-latest", "if": "github.actor != 'github-classroom[bot]'",
                "steps": steps}}}


def _unfinished(st, args):
    """The result of a step that wrote none (it ran out of time, or never started): worth
    its points, none earned, in the form the reporter reads (base64 JSON)."""
    import base64
    result = classroom_error(_("step {step}: {name}").format(step=st.number, name=st.name),
                             _("the step did not finish within its time; none of it was graded"),
                             args.weight_map.get(st.name, 1))
    return base64.b64encode(json.dumps(result, sort_keys=True).encode("utf-8")).decode("ascii")


def write_workflow(args):
    """--classroom DIR: DIR/.github/workflows/classroom.yml, and what DIR still needs."""
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(10 ** 6)     # in the student's repository: no secret
    data = workflow(args)
    graded = data["jobs"]["run-autograding-tests"]["steps"][1:-1]
    head = ["# GitHub Classroom's autograding for the gqa lab, written by `python grader.py "
            "--classroom`:",
            f"# one graded step per lab step, seed {args.seed}, grader {GRADER_VERSION}.  Write it "
            "again rather than edit it."]
    path = os.path.join(args.classroom, ".github", "workflows", "classroom.yml")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomically(path, ("\n".join(head + yaml_lines(data)) + "\n").encode("utf-8"))
        if args.weights:                            # the steps' --weights, beside grader.py
            write_atomically(os.path.join(args.classroom, WEIGHTS_FILE),
                             (json.dumps(args.weight_map, sort_keys=True) + "\n").encode("utf-8"))
    except OSError as err:
        print(f"grader: cannot write {path}: {err}", file=sys.stderr)
        return 2
    points = sum(args.weight_map.get(st.name, 1) for st in ALL_STEPS
                 if st.name in (args.only or default_track()))
    print(f"wrote {path}: {len(graded)} graded steps, {points:g} points, seed {args.seed}")
    if not os.path.isfile(os.path.join(args.classroom, "grader.py")):
        print(f"{args.classroom} has no grader.py yet: the template repository holds the "
              f"handout (python grader.py --handout {args.classroom})")
    return 0
