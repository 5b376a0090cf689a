"""What was submitted: the submissions of a class's folder, and a student's gqa.py in each.

A folder of submissions is read in any of three layouts, or a mix: .py files (one a
student, named by the file), folders each holding a gqa.py somewhere (GitHub
Classroom's clones, named by the folder), and a Gradescope export (submission_<id>
folders beside its submission_metadata.yml, which names their students).  A roster
(a CSV) can name the students instead.  Each entry becomes a Submission: the gqa.py
to grade, or why there is none (no gqa.py, two of them, a zip, a binary, ...).

missing_module() says what a folder holds when the gqa.py a run was given is not
there, and what to rename: the message a Gradescope submission gets.  given_steps()
reads the steps a track's starter wrote out for the student (its "# Given:" lines).
"""

import csv
import difflib
import io
import os
import re

from ..language import i18n, prose
from ..language.i18n import N_, _
from ..running.failures import Refused
from ..running.seal import read_module


# ---------------------------------------------------------------------------
# A class's folder: .py files, folders holding a gqa.py, a Gradescope export.
# ---------------------------------------------------------------------------

class Submission:
    """One student's entry: key is its name in the folder (the gradebook's key),
    student the id the gradebook shows; path the gqa.py to grade, or why it is not
    graded; note, a word on what was graded; absent, a student of the roster who
    submitted nothing (a blank in the gradebook, not a 0)."""

    def __init__(self, key, student, path=None, why=None, note="", name="", absent=False):
        self.key, self.student, self.path, self.why = key, student, path, why
        self.note, self.name, self.absent = note, name, absent
        self.unrostered = False


WALK_CAP = 5000          # files looked at in one submission's folder, at most
DEPTH_CAP = 24           # folders below a submission's folder, at most


def _files(folder):
    """(the files under folder as relative paths, hidden folders, __pycache__ and links
    aside; why the walk stopped short, or None).  A loop, not a recursion: any depth of
    folders, any names (bytes that are not UTF-8 come as surrogates), never a crash."""
    found, stack, short = [], [("", 0)], None
    while stack:
        relative, depth = stack.pop()
        try:
            with os.scandir(os.path.join(folder, relative)) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as err:
            short = short or _("a folder could not be read ({error})").format(error=err.strerror)
            continue
        folders = []
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if not e.name.startswith(".") and e.name != "__pycache__":
                    folders.append(os.path.join(relative, e.name))
            elif e.is_file(follow_symlinks=False):
                found.append(os.path.join(relative, e.name))
        if len(found) > WALK_CAP:
            return found[:WALK_CAP], _("more than {cap} files: only the first were looked at").format(
                cap=f"{WALK_CAP:,}")
        if folders and depth >= DEPTH_CAP:
            short = short or _("folders more than {cap} deep were not looked in").format(cap=DEPTH_CAP)
            continue
        stack += [(f, depth + 1) for f in reversed(folders)]
    return found, short


def locate(folder):
    """(the gqa.py to grade, why there is none, a note): the one file named gqa.py
    anywhere in folder; else what the folder holds and what to rename (and where the
    walk stopped short, if it did)."""
    found, short = _files(folder)
    if short and not any(os.path.basename(f) == "gqa.py" for f in found):
        return None, _("no gqa.py found: {why}").format(why=short), ""
    exact = [f for f in found if os.path.basename(f) == "gqa.py"]
    if len(exact) == 1:
        where = exact[0]
        return os.path.join(folder, where), None, "" if where == "gqa.py" else _("graded {path}").format(path=where)
    if exact:
        return None, _("{count} files named gqa.py ({files}): keep one").format(
            count=len(exact), files=_(", ").join(exact[:4])), ""
    near = [f for f in found if os.path.basename(f).lower() == "gqa.py"]
    zips = [f for f in found if f.lower().endswith(".zip")]
    if near:
        return None, _("no gqa.py; {path} would be it: rename it to gqa.py").format(path=near[0]), ""
    if zips:
        return None, _("no gqa.py; {path} is a zip: unpack it").format(path=zips[0]), ""
    held = _(", ").join(found[:5])
    if len(found) > 5:
        held = _("{files} and {count} more").format(files=held, count=len(found) - 5)
    return None, _("no gqa.py; the folder holds {files}").format(files=held) if found else _("an empty folder"), ""


def _head(path, size=8192):
    """The first bytes of the regular file at path, or why it cannot be read: opened
    without waiting (a named pipe never stops a class) and without following a link."""
    import stat
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError as err:
        return _("cannot read it: {error}").format(error=err.strerror)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return _("not a regular file (a pipe, a device or a socket)")
        return os.read(fd, size)
    except OSError as err:
        return _("cannot read it: {error}").format(error=err.strerror)
    finally:
        os.close(fd)


def examine(path):
    """Why the file at path is not Python source to grade (None when it may be)."""
    head = _head(path)
    if isinstance(head, str):
        return head
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None                 # text saved as UTF-16 (Notepad's "Unicode"): graded as its text
    if b"\0" in head:
        return _("a binary file, not Python source")
    if blank(head):
        return _(EMPTY)
    return None


EMPTY = N_("an empty file: there is no code in it to grade")


def blank(head, size=8192):
    """Whether a file whose first size bytes are head holds no code: read whole, blanks at most
    (a byte-order mark too)."""
    return len(head) < size and not head.strip(b" \t\r\n\f\xef\xbb\xbf")


def entry(folder, name):
    """The Submission of one entry of the submissions folder."""
    path = os.path.join(folder, name)
    stem = os.path.splitext(name)[0] if os.path.isfile(path) else name
    if os.path.islink(path):
        return Submission(name, stem, why=_("a symbolic link; a submission must be a file or a folder"))
    if os.path.isdir(path):
        module, why, note = locate(path)
        why = why or examine(module)
        return Submission(name, name, None if why else module, why, note)
    if name.endswith(".py"):
        why = examine(path)
        return Submission(name, stem, None if why else path, why)
    if name.lower().endswith(".zip"):
        return Submission(name, stem, why=_("a zip: unpack it, so that its gqa.py is a file of its own"))
    return Submission(name, stem, why=_("not a .py file nor a folder"))


def _entry_or_why(folder, name):
    """entry(folder, name), or, when reading it fails, a Submission that says why: one
    student's entry never stops the class."""
    try:
        return entry(folder, name)
    except (OSError, ValueError, RecursionError) as err:
        return Submission(name, name, why=_("it could not be read ({error})").format(
            error=f"{type(err).__name__}: {err}"))


def gradescope_metadata(path):
    """{submission folder: [(name, sid), ...]} from a Gradescope export's
    submission_metadata.yml: its top-level keys (the folders) and, under each, the
    :submitters: list's :name: and :sid: (otter-grader reads the export the same way:
    otter/grade/metadata.py).  Nothing else of the file is read."""
    found, current, person = {}, None, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            top = re.match(r"^([^\s#:'\"][^:]*):\s*$", line)
            if top:
                current = found.setdefault(top.group(1).strip(), [])
                continue
            field = re.match(r"^\s*(-\s+)?:(name|sid):\s*(.*?)\s*$", line)
            if current is None or not field:
                continue
            if field.group(1) or person is None:
                person = {}
                current.append(person)
            person[field.group(2)] = field.group(3).strip("'\"")
    return {k: [(p.get("name", ""), p.get("sid", "")) for p in v] for k, v in found.items()}


def read_roster(path):
    """{submission key or GitHub user: (student, name)} from a roster CSV: GitHub
    Classroom's (identifier, github_username, github_id, name), or rows of
    submission, student[, name] under a header."""
    with open(path, "rb") as f:
        text = i18n.decoded(f.read(16 << 20))
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=max(",;\t", key=text.split("\n", 1)[0].count)))
    if not rows:
        return {}, False
    header = [h.strip().lower() for h in rows[0]]
    if "github_username" not in header:
        return {r[0].strip(): (r[1].strip() if len(r) > 1 and r[1].strip() else r[0].strip(),
                               r[2].strip() if len(r) > 2 else "")
                for r in rows[1:] if r and r[0].strip()}, False
    at = {h: header.index(h) for h in ("identifier", "github_username", "name") if h in header}

    def get(row, h):
        return row[at[h]].strip() if h in at and at[h] < len(row) else ""
    return {get(r, "github_username"): (get(r, "identifier") or get(r, "github_username"),
                                        get(r, "name"))
            for r in rows[1:] if get(r, "github_username")}, True


def _roster_match(sub, roster, classroom):
    """The roster's key of sub: its name, or its name without the extension (alice.py,
    alice.zip: alice); a Classroom clone by its -<github_username> ending; otherwise a
    folder or file whose name is a roster's key and a suffix (s004-repo, s004-lab: s004),
    the longest key first."""
    stem = os.path.splitext(sub.key)[0] if "." in sub.key else sub.key
    for key in (sub.key, stem):
        if key in roster:
            return key
    longest = sorted(roster, key=len, reverse=True)
    if classroom:
        return next((u for u in longest if stem.endswith("-" + u) or stem == u), None)
    return next((k for k in longest if stem.startswith(k + "-") or stem.startswith(k + "_")), None)


def discover(folder, skip=(), roster_path=None):
    """Every submission in folder, by key; roster students with none get a row too."""
    names = sorted(n for n in os.listdir(folder) if not n.startswith(".")
                   and n not in ("submission_metadata.yml", "__pycache__")
                   and os.path.abspath(os.path.join(folder, n)) not in skip)
    subs = [_entry_or_why(folder, n) for n in names]
    meta = os.path.join(folder, "submission_metadata.yml")
    if os.path.isfile(meta):
        people = gradescope_metadata(meta)
        for sub in subs:
            who = people.get(sub.key)
            if who:
                sub.student = "+".join(sid for _, sid in who if sid) or sub.key
                sub.name = "; ".join(name for name, _ in who if name)
    if roster_path:
        roster, classroom = read_roster(roster_path)
        used = set()
        for sub in subs:
            key = _roster_match(sub, roster, classroom)
            if key is not None and key not in used:
                used.add(key)
                sub.student, sub.name = roster[key][0], roster[key][1] or sub.name
            else:
                sub.unrostered = True           # the class run names it: no row of the roster
        subs += [Submission(f"(no submission) {roster[k][0]}", roster[k][0], why=_("no submission"),
                            name=roster[k][1], absent=True) for k in sorted(set(roster) - used)]
    return subs


# ---------------------------------------------------------------------------
# No gqa.py where it should be: what was submitted, and what to rename.
# ---------------------------------------------------------------------------

def renames(found, name):
    """What to do with what was found, so that name is at the top: advice, one per line."""
    advice = []
    for path in found:
        base = os.path.basename(path)
        if base.lower() == name.lower() and path != name:
            template = (_("rename {path} to {name}") if base == path else
                        _("move {path} to the top of the submission, as {name}"))
        elif base.lower().endswith(".zip"):
            template = _("{path} is a zip: submit {name} itself, not a zip of it")
        else:
            continue
        advice.append(template.format(path=path, name=name))
    if not advice:
        py = [p for p in found if p.lower().endswith(".py")]
        if py:
            advice.append(_("if {files} is your lab, rename it to {name}").format(
                files=_(" or ").join(py[:3]), name=name))
    return advice


def missing_module(path):
    """Why there is nothing to grade at path (no such file), with what its folder holds;
    a folder named instead of its gqa.py, said so."""
    if os.path.isdir(path):
        inside = os.path.join(path, "gqa.py")
        return (_("{path} is a folder; name the gqa.py in it: --module {module}").format(path=path, module=inside)
                if os.path.isfile(inside) else
                _("{path} is a folder, and it holds no gqa.py; --module names the file to use").format(path=path))
    folder, name = os.path.split(os.path.abspath(path))
    if not os.path.isdir(folder):
        return _("no such file: {path} (there is no folder {folder})").format(path=path, folder=folder)
    found = sorted(_files(folder)[0][:200], key=lambda f: (f.count(os.sep), f))     # its own files first
    if not found:
        return _("no such file: {path}; the folder is empty").format(path=path)
    shown = _(", ").join(found[:20])
    if len(found) > 20:
        shown = _("{files} and {count} more").format(files=shown, count=len(found) - 20)
    if name.lower() == "gqa.py":                # the name a run requires: what to rename to it
        advice = renames(found, name)
    else:                                       # a name of the student's own: a near one, mistyped?
        beside = {f.lower(): f for f in found if os.sep not in f}           # GQA_LAB.py for gqa_lab.py too
        near = [beside[f] for f in difflib.get_close_matches(name.lower(), list(beside), n=3, cutoff=0.6)]
        advice = [_("did you mean {files}?").format(files=_(" or ").join(near))] if near else []
    return _("no such file: {path}; the folder holds {files}").format(path=path, files=shown) + "".join(
        _("; {advice}").format(advice=a) for a in advice)


# ---------------------------------------------------------------------------
# A track's starter: the steps it gives.
# ---------------------------------------------------------------------------

def _given_line():
    """The start of a given step's line (prose.GIVEN) in every language, up to its
    number: a pattern whose group is the number."""
    heads = {i18n.translation(lang, prose.DOMAIN).gettext(prose.GIVEN).split("{step}")[0] for lang in i18n.LANGUAGES}
    return re.compile(r"^# (?:" + "|".join(re.escape(head) for head in sorted(heads)) + r")(\d+)", re.M)


def given_steps(path):
    """The numbers of the steps that the gqa.py at path says were given to the student
    (written out by a track's starter, in any language: a handout of --steps core gives
    the steps outside its track); none when it cannot be read."""
    try:
        text = read_module(path).decode("utf-8-sig", "replace")
    except Refused:
        return set()
    return {int(number) for number in _given_line().findall(text)}
