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

from ..language.i18n import N_, _
from ..running.atomic import write_atomically
from ..steps.tracks import ALL_STEPS, default_track
from ..verdict.documents import classroom_error
from ..verdict.grading import GRADER_VERSION
from ..verdict.records import carried


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
    are YAML's), so that no ': ' or '#' in it can be read as structure; its letters as
    written (a Japanese step name readable, not \\u30b9...), what is not printable escaped."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "".join(c if c.isprintable() else f"\\U{ord(c):08x}" if ord(c) > 0xffff else f"\\u{ord(c):04x}"
                   for c in json.dumps(str(value), ensure_ascii=False))


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

# The job's first step, before any graded one.  A sealed run refuses a grader whose folder
# the worker's user could open, and a checkout is readable by every user of the runner;
# so the grader (grader.py, gqa_grader/, gqa_sandbox/ where the template holds it) is
# copied into a folder of mktemp -d's (mode 700) and run from there on the checkout's
# gqa.py.  As the runner's own user, the grader runs as root through sudo where sudo asks
# no password (GitHub's hosted runners): the run is then sealed as a teacher's is, a user
# id of its own, not partly.  Then the module is imported once, sealed: a module that
# cannot be imported, or whose import does not end, costs this one timeout, and every
# graded step is skipped (its result the reporter's fallback: none of its points).
PREPARE = """set -u
as_root=""
if [ "$(id -u)" != 0 ] && sudo -n true 2>/dev/null; then as_root="sudo -n"; fi
grader_dir="$($as_root mktemp -d)"
parts="grader.py gqa_grader"
if [ -d gqa_sandbox ]; then parts="$parts gqa_sandbox"; fi
$as_root cp -R $parts "$grader_dir"/
echo "GQA_AS=$as_root" >> "$GITHUB_ENV"
echo "GQA_GRADER=$grader_dir/grader.py" >> "$GITHUB_ENV"
if $as_root python3 "$grader_dir/grader.py" --sealed --module gqa.py --only 1 --quiet {options}; [ $? -le 1 ]; then
  echo "GQA_IMPORTED=yes" >> "$GITHUB_ENV"
fi"""


PREPARE_NAME = N_("Prepare the sealed grader, and import gqa.py once")    # shown as _(PREPARE_NAME)


def workflow(args):
    """The workflow as data: the grader made private and the module imported once
    (PREPARE), then a step per lab step (the sealed run of that step alone, its result
    written as GitHub Classroom's reporter reads it: --format classroom, its score the
    step's points by the rule of every run), then the reporter of them all."""
    words = carried(args, args.given & {"cases", "timeout", "budget", "fail_fast", "all_or_nothing", "lang",
                                       "weights"},
                    WEIGHTS_FILE)
    if "cases" not in args.given:
        words = ["--cases", "0"] + words      # the handout holds the public cases' answers only
    if not seeded(args):                      # the public cases' seed is the same in every run
        words = words[:-2]
    minutes = math.ceil(args.budget / 60) + 1
    graded = [st for st in ALL_STEPS if st.name in (args.only or default_track())]
    gate = carried(args, args.given & {"timeout", "budget", "lang"})[:-2] + ["--cases", "0"]   # its limits
    steps = [{"name": _("Checkout code"), "uses": "actions/checkout@v4"},
             {"name": _(PREPARE_NAME), "id": "prepare",
              "timeout-minutes": minutes, "continue-on-error": True,
              "run": PREPARE.replace("{options}", " ".join(gate))}]
    for st in graded:
        command = " ".join(["$GQA_AS", "python3", '"$GQA_GRADER"', "--sealed", "--module", "gqa.py",
                            "--only", str(st.number), "--format", "classroom"] + words)
        steps.append({"name": _("step {step}: {name}").format(step=st.number, name=st.name),
                      "id": f"step{st.number}",
                      "if": "env.GQA_IMPORTED == 'yes'",
                      "timeout-minutes": minutes, "continue-on-error": True,
                      "run": command + ' >> "$GITHUB_OUTPUT"'})
    steps.append({"name": _("Autograding Reporter"), "if": "always()",   # whatever a step met
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
                             _("the step did not run, or did not finish within its time: none of it was "
                               "graded (where gqa.py could not be imported, the step '{prepare}' says "
                               "why)").format(prepare=_(PREPARE_NAME)),       # by its name in the log
                             args.weight_map.get(st.name, 1))
    return base64.b64encode(json.dumps(result, sort_keys=True).encode("utf-8")).decode("ascii")


def seeded(args):
    """Whether the workflow's steps grade hidden cases (--cases K given, K > 0: a template that
    holds the reference), whose seed they then need; the public cases' is the same in every
    run, and a handout's self-check takes none (it said so in every step's log)."""
    return "cases" in args.given and args.cases > 0


def write_workflow(args):
    """--classroom DIR: DIR/.github/workflows/classroom.yml, and what DIR still needs."""
    if args.seed is None and seeded(args):
        args.seed = random.SystemRandom().randrange(10 ** 6)     # in the student's repository: no secret
    elif "seed" in args.given and not seeded(args):
        print("grader: " + _("note: --seed is not used: the workflow's steps grade the public cases alone "
                             "(--cases 0), whose seed is the same in every run"), file=sys.stderr)
    data = workflow(args)
    graded = [st for st in data["jobs"]["run-autograding-tests"]["steps"] if st.get("id", "").startswith("step")]
    head = ["# GitHub Classroom's autograding for the gqa lab, written by `python grader.py "
            "--classroom`:",
            f"# one graded step per lab step, {f'seed {args.seed}, ' if seeded(args) else ''}grader "
            f"{GRADER_VERSION}.  Write it again rather than edit it."]
    path = os.path.join(args.classroom, ".github", "workflows", "classroom.yml")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomically(path, ("\n".join(head + yaml_lines(data)) + "\n").encode("utf-8"))
        if args.weights:                            # the steps' --weights, beside grader.py
            write_atomically(os.path.join(args.classroom, WEIGHTS_FILE),
                             (json.dumps(args.weight_map, sort_keys=True) + "\n").encode("utf-8"))
    except OSError as err:
        print(_("grader: cannot write {path}: {error}").format(path=path, error=err), file=sys.stderr)
        return 2
    points = sum(args.weight_map.get(st.name, 1) for st in ALL_STEPS
                 if st.name in (args.only or default_track()))
    said = (_("wrote {path}: {steps} graded steps, {points} points, seed {seed}") if seeded(args) else
            _("wrote {path}: {steps} graded steps, {points} points"))
    print(said.format(path=path, steps=len(graded), points=f"{points:g}", seed=args.seed))
    if not os.path.isfile(os.path.join(args.classroom, "grader.py")):
        print(_("{folder} has no grader.py yet: the template repository holds the handout (python "
                "grader.py --handout {folder})").format(folder=args.classroom))
    return 0
