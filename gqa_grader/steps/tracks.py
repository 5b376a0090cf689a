"""The steps a run grades: numbers, ranges, names and named tracks.

    core        the handout's lab: steps 1-8 and 14-19 (the manifest's core says why each)
    all         every step of the lab
    robustness  the three parts of robustness.py: types, refusals, extremes

`--steps 1-8,14-16,18,19`, `--steps core`, `--steps core,robustness`, `--steps kv_head,5`:
any mix, comma-separated; the steps come out in the lab's order, each once.  A run
that names none grades its default track: `all`, or a handout's own.
"""

import json
import os

from ..language.i18n import _
from . import manifest
from .checks import STEPS
from .robustness import PARTS

ALL_STEPS = STEPS + PARTS               # every step a run can grade, by number
LESSON = [st.name for st in STEPS]
ROBUSTNESS = [st.name for st in PARTS]
BY_NAME = {st.name: st for st in ALL_STEPS}

# core: the handout's lab (the Japanese handout's "次のラボですること"), the steps whose
# manifest row says what of it they do.
TRACKS = {"core": [entry.name for entry in manifest.LESSON if entry.core], "all": LESSON,
          "robustness": ROBUSTNESS}
TRACK_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "track.json")   # in the package


def default_track():
    """The steps a run grades when it names none: a handout's track (track.json, written
    beside this file by --handout), else every step of the lab."""
    try:
        with open(TRACK_FILE, encoding="utf-8") as f:
            names = json.load(f)["steps"]
    except FileNotFoundError:
        return list(LESSON)
    return [st.name for st in ALL_STEPS if st.name in names]


def handout_lang():
    """The language a handout was made in (track.json's "lang"), the default of its
    self-check when neither --lang nor the environment names one; None elsewhere."""
    try:
        with open(TRACK_FILE, encoding="utf-8") as f:
            return json.load(f).get("lang")
    except FileNotFoundError:
        return None


def handout_track():
    """The handout this grader was written into, as the tools read it (track.json, beside
    this file): {"steps": its track's step names in the lab's order, "lang": its language,
    "track": the name of the track its lesson steps are ("core"), else None}; None outside
    a handout."""
    try:
        with open(TRACK_FILE, encoding="utf-8") as f:
            saved = json.load(f)
    except FileNotFoundError:
        return None
    steps = [st.name for st in ALL_STEPS if st.name in saved["steps"]]
    lesson = [name for name in steps if name in LESSON]
    return {"steps": steps, "lang": saved.get("lang"),
            "track": next((name for name, names in TRACKS.items() if names == lesson), None)}


def select(spec):
    """The step names spec asks for, in the lab's order, each once; ValueError naming
    what is not a step, a range or a track."""
    by_number = {str(st.number): st.name for st in ALL_STEPS}
    wanted, unknown = set(), []
    for word in (w.strip() for w in spec.split(",")):
        first, dash, last = word.partition("-")
        if word in TRACKS:
            wanted.update(TRACKS[word])
        elif word in by_number.values():
            wanted.add(word)
        elif word in by_number:
            wanted.add(by_number[word])
        elif dash and first.isdigit() and last.isdigit() and first in by_number and last in by_number \
                and int(first) <= int(last):
            wanted.update(by_number[str(n)] for n in range(int(first), int(last) + 1))
        else:
            unknown.append(repr(word) if not word or word != word.strip() else word)
    if unknown or not wanted:
        raise ValueError(_("no step, range or track named {names}; give step numbers (3), ranges (1-8), "
                           "names (kv_head) or tracks ({tracks}), comma-separated").format(
                             names=", ".join(unknown) or repr(spec), tracks=", ".join(TRACKS)))
    return [st.name for st in ALL_STEPS if st.name in wanted]


def covered(names):
    """The lesson functions a run's robustness parts cover: those of its lesson steps,
    or, when it grades none, those of its default track."""
    lesson = [n for n in names if n in LESSON]
    return set(lesson or [n for n in default_track() if n in LESSON])
