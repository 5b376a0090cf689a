"""The students' handout: the starter, and a self-check that holds no reference.

`python grader.py --handout DIR` writes what a class gets, and nothing else:

    DIR/gqa.py                 the starter (the lesson's text, each step's body a stub)
    DIR/grader.py              the self-check's door, as in the project
    DIR/gqa_grader/            the referee's files, less reference.py and mistaken.py
    DIR/gqa_grader/answers.json  the reference's answers to the public cases
    DIR/gqa_grader/track.json  its track and language: the self-check's and the tools' defaults
    DIR/gqa_tools/             the tools, less the commands a handout does not offer (toolcopy's TOOLS_LEFT_OUT):
                               python -m gqa tables and report, run in DIR on the student's gqa.py
    DIR/README.md              what a student does

The public cases are the systematic ones and PUBLIC_CASES random ones from the fixed
PUBLIC_SEED: the same in every run, so their answers can be recorded once, here, by
grading the project's own gqa.py with each reference function wrapped to write down
what it answered (answers.recorder).  In the handout answers.py finds no reference
and gives back those answers; the teacher's sealed run grades the same public cases,
and hidden ones from its seed, with the reference itself.
"""

import json
import os
import shutil
import sys

from ..expected import answers
from ..language import i18n
from ..language.i18n import N_, _, ngettext
from ..running.seal import HERE
from ..running.toolcopy import copy_tools
from ..steps import checks, tracks
from ..verdict.grading import DEFAULT_MODULE, PUBLIC_CASES, PUBLIC_SEED, grade, public_end
from ..verdict.results import Status
from . import handout

def check_options(parser, args):
    """In a handout, the self-check's options: it grades the public cases of its track only,
    and holds no reference.  A step outside the track, hidden cases (--cases), a seed (its
    cases' is PUBLIC_SEED, in every run), a case past a step's public ones and the commands
    that need the reference are usage errors, never dropped in silence; a seed is said
    unused."""
    track = tracks.default_track()
    outside = [n for n in args.only or [] if n not in track and n not in tracks.TRACKS["robustness"]]
    if outside:
        parser.error(ngettext("--steps: {steps} is not in this handout's track ({count} steps: see "
                              "--list); its checks hold no answers for it",
                              "--steps: {steps} are not in this handout's track ({count} steps: see "
                              "--list); its checks hold no answers for them", len(outside)).format(
                                  steps=_(", ").join(outside), count=len(track)))
    if args.cases:
        parser.error(_("this is a handout's self-check: it grades the public cases (the systematic "
                       "ones and {random} random ones per step, from seed {seed}), so --cases must "
                       "be 0; your teacher's run grades hidden ones").format(
                           random=PUBLIC_CASES, seed=PUBLIC_SEED))
    if args.seed is not None:          # said, not refused: GitHub Classroom's workflow gives one
        print("grader: " + _("note: {why}").format(why=_(
            "this is a handout's self-check: its cases are the public ones, from seed {seed} in every run, so "
            "--seed has nothing to choose; your teacher's run draws the hidden ones from a seed of its own").format(
                seed=PUBLIC_SEED)), file=sys.stderr)
    if args.case is not None and args.only:
        st = tracks.BY_NAME[args.only[0]]
        if args.case >= public_end(st):
            parser.error(_("--case {case}: step {step}, {name}, has {count} public cases, 0 to {last}; "
                           "the cases past them are hidden, graded by your teacher's run").format(
                               case=args.case, step=st.number, name=st.name, count=public_end(st),
                               last=public_end(st) - 1))
    for option in ("autograder", "handout", "class_dir", "classroom"):
        if getattr(args, option, None):
            parser.error(_("{option} needs the reference, which a handout does not hold").format(
                option=option.replace('class_dir', 'class').replace('_', '-').join(['--', ''])))


# What a student reads first, in the language of the run that writes the handout.
README = N_("""# The gqa lab

`gqa.py` is the lab.  Your track is {count} steps: {steps}.  Each is a function
whose body is a stub for you to write, in order; its docstring is the manual.{given}
Check your work as you go:

    python grader.py                   every step of your track (the public cases)
    python grader.py --only 5          one step, by number or name
    python grader.py --only 5 --case 7 --show
                                       one case, and its failing call as Python to paste

The self-check grades the public cases: the systematic ones and {public} random
ones per step, the same in every run, and counts points by your teacher's rule
(each step: the share of its cases that pass).  That count is not your grade:
your teacher's run grades hidden cases, drawn from a seed of theirs, with the same
checks.  Nothing else is needed: Python 3.9 or later, nothing to install.
""")
REPORT = N_("""
Your lab report is written from your own gqa.py, in this folder:

    python -m gqa report               report.md: the KV cache table, the multiplications
                                       table, the output difference at every g, and the
                                       questions for you to answer
    python -m gqa tables               the two tables, printed

Both run your gqa.py as the self-check does, in a child process, and take every
number from it: a part that needs a step you have not written yet names that step,
and one that needs a step outside your track says so.
Running report again writes report.md anew but for your answers (its last
section), which it keeps as you wrote them; words of yours elsewhere in it, or a
file saved in another encoding, are kept first in report.previous.md (then
report.previous-2.md, ...), never written over.
When python -m gqa stops at a SyntaxError (Python's own words, in English),
Python cannot read your gqa.py as it is saved (a typo, or a file not saved as
UTF-8): python grader.py says what and where.
""")
GIVEN = N_("""
The steps outside your track that later steps may call are written for you
(marked "Given"); the others stay stubs, and nothing grades them.""")


def record(module=DEFAULT_MODULE, only=None):
    """The reference's answers to every public case of every step (or of the steps named
    in only), as the checks ask for them while they grade module (the project's own
    gqa.py): {key: answer}."""
    from ..expected import reference
    table = {}
    shadows = {"ref_" + st.name: [fn for _key, fn in st.mistakes] for st in checks.STEPS}   # a step's mistakes
    wrapped = {name: answers.recorder(name, fn, table, shadows.get(name, ())) for name, fn in vars(reference).items()
               if name.startswith("ref_")}
    wrapped["RefKVCache"] = answers.recording_cache(reference.RefKVCache, table)
    spaces = [vars(m) for m in checks.MODULES]             # those whose checks ask the reference
    saved = [{name: space[name] for name in wrapped if name in space} for space in spaces]
    for space, names in zip(spaces, saved):
        space.update({name: wrapped[name] for name in names})
    try:
        for h in range(1, 17):                     # what the checks ask at import (ALL_HG)
            wrapped["ref_valid_g"](h)
        results = grade(module, PUBLIC_SEED, cases=0, only=only)
    finally:
        for space, names in zip(spaces, saved):
            space.update(names)
    failed = [r.name for r in results if r.status != Status.PASSED]
    if failed:
        raise RuntimeError(f"the handout's answers are recorded from {module}, which fails "
                           f"{', '.join(failed)}")
    return table


def write_handout(directory, module=DEFAULT_MODULE, only=None, lang="en"):
    """Write the handout into directory (which must not hold a gqa.py); return its path.
    only: its track, the steps whose answers it holds and its self-check grades (every
    step of the lab by default); the starter gives the lab's steps outside it.  lang:
    the language of its README, its starter's prose, and its self-check's default (the
    compiled catalogs go with it: a student may choose another with --lang)."""
    only = list(only or tracks.default_track())
    if os.path.exists(os.path.join(directory, "gqa.py")):
        raise FileExistsError(_("{path} exists already; the handout will not overwrite it").format(
            path=os.path.join(directory, "gqa.py")))
    table = record(module, only + [part.name for part in tracks.PARTS])   # robustness: its own check
    package = os.path.join(directory, "gqa_grader")
    os.makedirs(package, exist_ok=True)
    for name in handout.grader_files(left_out=("gqa_grader/expected/reference.py", "gqa_grader/expected/mistaken.py")):
        if name.startswith("gqa_grader/"):
            os.makedirs(os.path.dirname(os.path.join(directory, name)), exist_ok=True)
            shutil.copyfile(os.path.join(HERE, name), os.path.join(directory, name))
    for lang_code in i18n.LANGUAGES[1:]:
        messages = os.path.join(lang_code, "LC_MESSAGES")
        os.makedirs(os.path.join(package, "locale", messages), exist_ok=True)
        for name in ("gqa.mo",):                   # what the self-check prints; the starter is made
            shutil.copyfile(os.path.join(i18n.registered(lang_code).locale, messages, name),
                            os.path.join(package, "locale", messages, name))
    with open(os.path.join(package, "track.json"), "w", encoding="utf-8") as f:
        json.dump({"steps": only, "lang": lang}, f)
        f.write("\n")
    with open(os.path.join(package, "answers.json"), "w", encoding="utf-8") as f:
        # dumps, not dump: dump goes through json's encoder written in Python, 3 times slower
        f.write(json.dumps(table, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n")
    shutil.copyfile(os.path.join(HERE, "grader.py"), os.path.join(directory, "grader.py"))
    sandbox = os.path.join(HERE, "gqa_sandbox")         # the namespaces of a sealed run (Classroom's)
    if os.path.isdir(sandbox):
        shutil.copytree(sandbox, os.path.join(directory, "gqa_sandbox"), dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    with open(os.path.join(directory, "README.md"), "w", encoding="utf-8") as f:
        numbers = [st.number for st in tracks.ALL_STEPS if st.name in only]
        given = handout.given_steps(only)
        f.write(_(README).format(count=len(numbers), steps=_ranges(numbers), public=PUBLIC_CASES,
                                 given=_(GIVEN) if given else "") + _(REPORT))
    copy_tools(directory)
    handout.write_starter(directory, module, only, lang, handout=True)
    return directory


def _ranges(numbers):
    """[1, 2, 3, 5] as '1-3 and 5' (in the language in use)."""
    runs = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    words = [f"{a}-{b}" if b > a + 1 else _(", ").join([str(a), str(b)]) if b > a else str(a)
             for a, b in runs]
    return (_("{items} and {last}").format(items=_(", ").join(words[:-1]), last=words[-1])
            if len(words) > 1 else words[0])
