"""What is handed out: the starter a student fills in, and Gradescope's autograder.zip."""

import os
import shlex
import zipfile

from ..language import prose, starter
from ..language.i18n import LANGUAGES, _
from ..running.seal import HERE
from ..steps.checks import STEP_OF
from ..verdict.grading import DEFAULT_MODULE

_MADE = {}                          # source -> its starter: made once per process


def make_starter(source, given=(), handout=False):
    """The starter built from the text of source (gqa.py): starter.make_starter, each
    step numbered as the checks number them, the steps given written out, a handout's
    own first and last lines when handout; the same again from memory."""
    key = (source, tuple(given), handout)
    if key not in _MADE:
        _MADE.clear()                                 # one source at a time is kept
        _MADE[key] = starter.make_starter(source, STEP_OF, tuple(given), handout)
    return _MADE[key]


def starters(source, given=()):
    """The starter made from source, given the steps given, in each language a starter
    is written in (prose.translated): what every student of a class was given."""
    text = make_starter(source, given)
    return tuple(prose.translated(text, lang) for lang in LANGUAGES)


def given_steps(track):
    """The steps a starter for track writes out: the lab's steps outside it (none when
    track names no step of the lab, or is None)."""
    lesson = [name for name in STEP_OF if name != "Tally"]
    inside = [name for name in track or () if name in lesson]
    return tuple(name for name in lesson if name not in inside) if inside else ()


def write_starter(directory, source_path=DEFAULT_MODULE, track=None, lang="en", handout=False):
    """Write directory/gqa.py, the starter for track (a list of step names; None: every
    step), the steps outside it given, its prose in lang (prose.translated); handout: a
    handout's, whose tools are in directory too."""
    with open(source_path, encoding="utf-8") as f:
        text = prose.translated(make_starter(f.read(), given_steps(track), handout), lang)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "gqa.py")
    if os.path.exists(path):
        raise FileExistsError(_("{path} exists already; the starter will not overwrite it").format(path=path))
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


# ---------------------------------------------------------------------------
# Gradescope: an autograder.zip in one command.
# ---------------------------------------------------------------------------

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the image.  The grader needs the
# standard library of Python 3.9 or later.  Bubblewrap (Debian's and Ubuntu's
# package bubblewrap) shuts each run in namespaces of its own; without it the
# grader uses util-linux's unshare, and where the container allows neither,
# each result says "partly sealed" and why (docs/sandbox.md).
python3 -c 'import sys; assert sys.version_info >= (3, 9), sys.version'
if ! command -v bwrap > /dev/null 2>&1; then
    { apt-get update && apt-get install -y bubblewrap; } > /dev/null 2>&1 \\
        || echo "setup.sh: bubblewrap could not be installed; runs use unshare where they can"
fi
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this as root for every submission.  The grader's folder is
# made private first, so the student's module (run as a user id drawn for
# the run) can
# read neither grader.py nor anything beside it, and only the grader writes
# the results.
set -u
chmod 700 /autograder/source
mkdir -p /autograder/results
chmod 755 /autograder/results
cd /autograder/source
python3 grader.py --sealed --format gradescope --module /autograder/submission/gqa.py \\
    --out /autograder/results/results.json{options} > /dev/null
exit 0
"""


def grader_files(left_out=()):
    """The grader's modules, as paths relative to its folder ("gqa_grader/running/seal.py"):
    grader.py, gqa_grader/ with its rooms and gqa_sandbox/ (the namespaces a sealed run is
    shut in, where they can be made), in order; but those in left_out."""
    files = ["grader.py"]
    for package in ("gqa_grader", "gqa_sandbox"):
        for folder, dirs, names in os.walk(os.path.join(HERE, package)):
            dirs[:] = sorted(d for d in dirs if os.path.isfile(os.path.join(folder, d, "__init__.py")))
            inside = os.path.relpath(folder, HERE).replace(os.sep, "/")
            files += [f"{inside}/{name}" for name in sorted(names) if name.endswith(".py")]
    return [name for name in files if name not in left_out]


def _grader_files():
    """The grader's own files, as paths relative to its folder: its modules (grader_files)
    and the compiled catalogs."""
    files = grader_files()
    locale = os.path.join(HERE, "gqa_grader", "locale")       # --lang's catalogs
    return files + [f"gqa_grader/locale/{lang}/LC_MESSAGES/gqa.mo" for lang in sorted(os.listdir(locale))
                    if os.path.isfile(os.path.join(locale, lang, "LC_MESSAGES", "gqa.mo"))]


def _add(z, name, data, mode):
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data)


def write_autograder(directory, args, options, secret=False):
    """Write directory/autograder.zip: setup.sh, run_autograder (the grader's run with
    options, the words that repeat the grading: the seed and every option given), the
    grader (grader.py, gqa_grader/, gqa_sandbox/) and the weights, if any.  With secret,
    the seed is not one for all: the zip holds a secret drawn now, and each submission's
    hidden cases come from it and the submission's bytes (--secret), so that a student
    who resubmits meets other cases and harvests none."""
    if secret:
        options = [w for i, w in enumerate(options) if w != "--seed" and options[i - 1:i] != ["--seed"]]
        options += ["--secret", "secret"]
    options = "".join(" " + shlex.quote(word) for word in options)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "autograder.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text, mode in (("setup.sh", SETUP_SH, 0o755),
                                 ("run_autograder", RUN_AUTOGRADER.format(options=options), 0o755)):
            _add(z, name, text, mode)
        for name in _grader_files():
            with open(os.path.join(HERE, name), "rb") as f:
                _add(z, name, f.read(), 0o644)
        if args.weights:
            with open(args.weights, "rb") as f:
                _add(z, "weights.json", f.read(), 0o644)
        if secret:
            import secrets
            _add(z, "secret", secrets.token_hex(32) + "\n", 0o600)
    return path
