"""What a class's gradebook keeps, read back as a spreadsheet may have saved it, and the
files written beside it.

A teacher opens grades.csv in Excel, LibreOffice or Google Sheets and saves it: the
file may come back with a byte-order mark, CRLF line ends, cells quoted or not, a
semicolon for a comma, in the spreadsheet's own encoding, and with the 18-digit seed
written as 4.77997E+17.  So the gradebook is what the run writes, never what it
trusts: the class's record, STEM-class.json beside it (no spreadsheet opens it), keeps
the seed and, for each submission graded, the seed it was graded with and its seconds.
A run goes on from the record; from the gradebook alone (a gradebook of grader 4.1)
only when its seed is exact, and otherwise it stops and says why (seed_problem()).

Beside the gradebook, each rewritten whole as a row is added:

- STEM-class.json, the record;
- STEM-canvas.csv, Canvas's grade import: the columns Student, ID, SIS User ID,
  SIS Login ID and Section, then one column of points, named after the lab (the
  columns Canvas's gradebook export has and its import reads: Instructure's guide
  "How do I import grades in the Gradebook?");
- STEM-moodle.csv, Moodle's CSV grade import (Grades > Import > CSV file): a header
  row, a column that identifies the student (mapped on import to the username or ID
  number), and a column of points (mapped to the grade item);
- STEM-statistics.txt, the class's statistics: what the run prints at its end.

In both exports a student with no submission has a blank, not a 0: an LMS reads a
blank as "no grade" and a 0 as a grade.
"""

import csv
import io
import json
import os
import re

from ..language.i18n import LANGUAGES, _, decoded, ngettext, use
from ..running.atomic import write_atomically
from ..running.values import clean_text
from ..steps.tracks import BY_NAME, TRACKS
from ..verdict.grading import MAX_CASES

RECORD_FORMAT = 1
ASSIGNMENT = "gqa lab"          # the exports' column of points: the assignment's name
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
BESIDE = ("class.json", "canvas.csv", "moodle.csv", "statistics.txt", "copies.txt")


def beside(path, suffix):
    """The file named STEM-suffix beside the gradebook at path."""
    return os.path.splitext(path)[0] + "-" + suffix


# ---------------------------------------------------------------------------
# The gradebook, read as a spreadsheet saved it.
# ---------------------------------------------------------------------------

def read_gradebook(path):
    """{submission: row} of a gradebook written before ({} when there is none, or when it
    is no CSV): comma, semicolon or tab between cells, quoted or not, any line ends.  A
    cell that a spreadsheet kept with the ' the gradebook wrote before a formula's first
    character, or dropped it, reads the same: the key is the cell without it."""
    try:
        with open(path, "rb") as f:
            text = decoded(f.read(64 << 20))
    except OSError:
        return {}
    first = text.split("\n", 1)[0]
    delimiter = max(",;\t", key=first.count)
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter))
    except csv.Error:
        return {}
    book = {}
    for row in rows:
        row = {(k or "").strip(): v if (k or "").strip() == "submission" else (v or "").strip()
               for k, v in row.items() if isinstance(v, str)}       # a key as written: "alice " is not "alice"
        if row.get("submission"):
            book[unquoted(row["submission"])] = row
    return book


def cell(value):
    """A gradebook cell that a spreadsheet shows as text and a terminal as it is: every
    control character (TAB, CR, LF, ESC, DEL, C1), format character and byte of a name
    that is not UTF-8 written as its escape (escaped: \\x1b, \\u202e, \\udcff), and one that would start a formula
    (=, +, -, @: a file's name or a module's message can) with a ' before it.  The
    gradebook quotes every cell (OWASP's advice on CSV injection)."""
    text = escaped("" if value is None else str(value))
    return "'" + text if _quoted(text) else text


def own_cell(value):
    """A cell of a column of the teacher's own (own_columns): as cell writes it, but for its
    line breaks, kept (a note typed over two lines in Excel came back with a \\n in it)."""
    lines = ("" if value is None else str(value)).replace("\r\n", "\n").split("\n")
    return "\n".join([cell(lines[0])] + [escaped(line) for line in lines[1:]])


def _quoted(text):
    """Whether a cell of text starts with a ': a formula's first character, or a ' that
    unquoted would take off (a name "'=x" kept apart from "=x", which is written "'=x")."""
    return text[:1] in ("=", "+", "-", "@") or text[:1] == "'" and _quoted(text[1:])


def escaped(text):
    """text with every character a terminal or a cell must not hold as it is written as
    its escape (compare.clean_text, as for the worker's strings): the controls, a byte of
    a name that is not UTF-8 (a lone surrogate), the format characters (a right-to-left
    override that shows a name reversed) and the blanks that draw as nothing."""
    return clean_text(text, newlines=False)


def own_columns(book, ours):
    """The columns of the gradebook's file (book: read_gradebook's) that are not the
    grader's, in the file's order: a teacher's notes, a spreadsheet's.  Each run keeps them."""
    seen = []
    for row in book.values():
        seen += [k for k in row if k and k not in ours and k not in seen]
    return seen


def with_own(row, old, extra):
    """The gradebook's row: the grade's row, with the teacher's cells of the file's row (old)
    kept: each of their own columns (extra), and a name typed in where the grader has none
    (no roster gives it)."""
    kept = dict(row, **{column: unquoted(old.get(column, "")) for column in extra})
    if not kept.get("name") and old.get("name"):
        kept["name"] = unquoted(old["name"])
    return kept


GONE = "\0gone"            # a kept row's mark (gone): no column's name, never written


def gone(book, here):
    """The rows of book (read_gradebook's) whose submission is not among here (the run's
    submissions, as their cells read back): a file renamed, or left out of an LMS's export.
    Each run keeps them as they were, the teacher's columns with them (a row the teacher
    deletes goes); a roster's student with no submission is none (that row is made anew)."""
    return {key: dict(row, **{GONE: True}) for key, row in book.items()
            if key not in here and not key.startswith("(no submission) ") and row.get("status")}


def short(text, cap):
    """text, cut to cap characters with "..." where it is longer."""
    return text if len(text) <= cap else text[:cap - 3].rstrip() + "..."


def gone_said(rows):
    """What a run says of the rows gone kept (None for none)."""
    if not rows:
        return None
    names = _(", ").join(sorted(rows))
    return ngettext("note: {count} row of the gradebook has no submission in the folder now: kept as it "
                    "was ({names}); delete it from the gradebook to drop it",
                    "note: {count} rows of the gradebook have no submission in the folder now: kept as "
                    "they were ({names}); delete a row from the gradebook to drop it", len(rows)).format(
                        count=len(rows), names=escaped(short(names, 300)))


def changed_said(students):
    """What a run says of the submissions changed since their grade: graded again, with the
    class's seed, whose hidden cases their first modules met (and may have said); None for none."""
    if not students:
        return None
    names = _(", ").join(sorted(students))
    return ngettext("note: {count} submission changed since it was graded ({names}): graded again with the "
                    "class's seed; its hidden cases are those its first file met, which a module can say in "
                    "its feedback (for work handed in after feedback went out, see teachers.md: a new gradebook)",
                    "note: {count} submissions changed since they were graded ({names}): graded again with the "
                    "class's seed; their hidden cases are those their first files met, which a module can say in "
                    "its feedback (for work handed in after feedback went out, see teachers.md: a new gradebook)",
                    len(students)).format(count=len(students),
                                          names=escaped(short(names, 300)))


def unquoted(text):
    """A cell's text without the ' that keeps a spreadsheet from reading it as a formula
    (cell's: unquoted(cell(t)) is t's escaped text, whatever t)."""
    return text[1:] if text[:1] == "'" and _quoted(text[1:]) else text


SEED = re.compile(r"\d{1,19}")


def exact_seed(text):
    """The seed a gradebook's cell holds when it holds it exactly, else None: digits only
    (4.77997E+17, 4.78E17 and 477997000000000000.0 are a spreadsheet's rounding), and
    not an 18-digit number ending in the zeros that a spreadsheet's 15 significant
    digits leave (477997123456789000)."""
    text = (text or "").strip()
    if not SEED.fullmatch(text):
        return None
    if len(text) > 15 and set(text[15:]) == {"0"}:
        return None
    return int(text)


def rounded_from(text, seed):
    """Whether a cell a spreadsheet wrote (4.77997E+17, 477997123456789000) is seed rounded
    to the cell's significant digits: with no record, a row graded with --seed's seed is
    known by it (two seeds of 18 digits share 6 leading digits once in a million)."""
    text = (text or "").strip().replace(",", ".")
    mantissa = re.split(r"[eE]", text)[0].lstrip("+-").replace(".", "").lstrip("0").rstrip("0")
    try:
        value = float(text)
    except ValueError:
        return False
    digits = max(1, len(mantissa))
    return value == float(f"{seed:.{digits - 1}e}")


def seed_problem(rows, record_path):
    """(the seed of a gradebook written before, or None; why it cannot be used, or None),
    for a gradebook with no record beside it."""
    cells = sorted({row.get("seed", "") for row in rows.values() if row.get("seed")})
    if not cells:
        return None, None
    seeds = {exact_seed(c) for c in cells}
    if len(cells) == 1 and None not in seeds:
        return seeds.pop(), None
    shown = _(", ").join(cells[:3])
    return None, _("the gradebook's seed column reads {cells}, which is not one seed written "
                   "exactly (a spreadsheet writes an 18-digit number rounded, as 4.77997E+17), and "
                   "{record}, which keeps it, is not beside it; give the class's seed with --seed "
                   "(the first line of each run's summary printed it), or move the gradebook away to "
                   "grade the class anew with a new seed").format(
                       cells=shown, record=os.path.basename(record_path))


# ---------------------------------------------------------------------------
# The class's record: the seed, and what each submission was graded with.
# ---------------------------------------------------------------------------

def read_document(path):
    """The JSON object at path (a record, a run's results.json), or None when there is none."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def read_record(path):
    """The record at path as written ({"seed": int, "graded": {key: {...}}}), or None
    when there is none or it is not one."""
    doc = read_document(path)
    if doc is None or type(doc.get("seed")) is not int:
        return None
    graded = doc.get("graded")
    doc["graded"] = {k: v for k, v in graded.items() if isinstance(v, dict)} if isinstance(graded, dict) else {}
    return doc


# The options a class is graded with, beside its seed in the record: a run that does not
# give one takes the record's (resumed), as it takes its seed.
RESUMED = ("only", "cases", "timeout", "budget", "fail_fast", "all_or_nothing", "lang")


def _valid(dest, value):
    if dest == "only":
        return value is None or isinstance(value, list) and bool(value) and all(n in BY_NAME for n in value)
    if dest == "cases":
        return type(value) is int and 0 <= value <= MAX_CASES
    if dest in ("timeout", "budget"):
        return type(value) in (int, float) and 0 < value < float("inf")
    if dest == "lang":
        return value in LANGUAGES
    return type(value) is bool


def recorded_options(args):
    """The options of RESUMED that args grade with, as the record keeps them."""
    return {dest: list(args.only) if dest == "only" and args.only else getattr(args, dest, None)
            for dest in RESUMED}


def resume_options(args, record):
    """Set on args each option of RESUMED that the command line did not give from the
    record's (a class graded with --steps core --lang ja, run again without them, goes on
    in its steps and its language; it was graded again whole, its new feedback in
    English).  (taken, differing): the options taken, and those given otherwise than
    the record's (its rows graded again; said)."""
    kept = record.get("options") if record else None
    if not isinstance(kept, dict):
        return [], []
    same = {d: kept[d] for d in RESUMED if d in kept and _valid(d, kept[d])}
    taken = [d for d in same if d not in args.given and same[d] != recorded_options(args)[d]]
    differing = [d for d in same if d in args.given and same[d] != recorded_options(args)[d]]
    for dest in taken:
        setattr(args, dest, same[dest])
    if "only" in taken:                  # spelled as a track where it is one: a student's command reads so
        args.steps_spec = next((name for name, steps in TRACKS.items() if steps == args.only), ",".join(args.only))
    if "lang" in taken:
        use(args.lang)
    return taken, differing


def write_record(path, seed, grader, graded, options=None):
    """The record, whole: json escapes a name's bytes that are not UTF-8 (\\udcff); options:
    recorded_options of the run."""
    doc = {"format": RECORD_FORMAT, "seed": seed, "grader": grader,
           "graded": {k: graded[k] for k in sorted(graded)}}
    if options is not None:
        doc["options"] = options
    write_atomically(path, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode("utf-8"), 0o600)


# ---------------------------------------------------------------------------
# The exports, for an LMS.
# ---------------------------------------------------------------------------

def _csv(header, rows, cell):
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(header)
    for row in rows:
        writer.writerow([cell(v) for v in row])
    return text.getvalue().encode("utf-8")


def exported(rows):
    """(student, name, points or "") of each row: blank for a student with no submission."""
    return [(r["student"], r["name"], "" if r.get("absent") else r["score"]) for r in rows]


def write_exports(path, rows, cell):
    """STEM-canvas.csv and STEM-moodle.csv beside the gradebook at path, in the gradebook's
    order.  cell() makes each value safe to open in a spreadsheet."""
    marks = exported(rows)
    canvas = [(name or student, "", student, "", "", points) for student, name, points in marks]
    write_atomically(beside(path, "canvas.csv"), _csv(CANVAS_COLUMNS + (ASSIGNMENT,), canvas, cell))
    write_atomically(beside(path, "moodle.csv"), _csv(("student", "name", ASSIGNMENT), marks, cell))


# ---------------------------------------------------------------------------
# The class's statistics: printed at the end, and written beside the gradebook.
# ---------------------------------------------------------------------------

def _bar(share, width=30):
    return "#" * round(width * share)


def pass_rates(graded, steps, weights):
    """A line per step: how many of the graded passed it whole, and the share of its points
    the class earned, partial credit counted (a step's points are the share of its hidden
    cases passed), with a bar of that share."""
    names = max(len(st.name) for st in steps)
    lines = [_("pass rate per step, of the {count} graded (passed whole; then the points earned, "
               "partial credit counted):").format(count=len(graded))]
    for st in steps:
        column = f"{st.number} {st.name}"
        passed = sum(st.name in r["passed"] for r in graded)
        most = weights[st.name] * len(graded)
        share = sum(float(r.get(column) or 0) for r in graded) / most if most else 1.0
        lines.append(_("  step {step} {name} {passed}/{graded} {rate} {points} {bar}").format(
            step=f"{st.number:>2}", name=f"{st.name:<{names}}", passed=f"{passed:>4}",
            graded=f"{len(graded):<4}", rate=f"{passed / len(graded):>4.0%}", points=f"{share:>4.0%}",
            bar=_bar(share)))
    return lines


def histogram(graded, most):
    """Scores as a share of the most points, in tenths (100% a bar of its own)."""
    bins = [0] * 11
    for r in graded:
        share = float(r["score"]) / most if most else 1.0
        bins[10 if share >= 1 else min(9, int(share * 10))] += 1
    top = max(bins) or 1
    lines = [_("scores, out of {most} points:").format(most=f"{most:g}")]
    for i in range(10, -1, -1):
        label = "100%" if i == 10 else f"{10 * i}-{10 * i + 9}%"
        bar = "#" * -(-30 * bins[i] // top) if bins[i] else ""
        lines.append(f"  {label:>7} {bar:<30} {bins[i]}")
    return lines
