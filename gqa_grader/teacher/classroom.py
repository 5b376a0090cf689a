"""A class: a folder of submissions graded into a gradebook.

    python grader.py --class SUBMISSIONS --gradebook grades.csv [--jobs N] [--roster FILE]

--class grades every submission in SUBMISSIONS, each a sealed run of its own: what
`python grader.py --sealed --module M --out ...` does, with a seal, a worker and (as
root) a user id of its own, so that no run can see another.  N grader processes
(pool.Server) take the runs one after another.  It reads the layouts submissions.py
knows: .py files, folders holding a gqa.py (GitHub Classroom's clones), a Gradescope
export.  It writes one CSV row per student, rewritten whole (atomic.write_atomically)
as each run ends, so that stopping it loses nothing already written, and a feedback
folder per student beside the gradebook (report.txt, the text report; results.json,
the run's document), in the class's language (--lang, else the environment's).  Run
again, it grades only what is not graded yet with the same bytes, grader, seed and
options: the seed, and what each submission was graded with, come from the class's
record beside the gradebook (ledger.py), never from cells a spreadsheet may have
rounded.  --regrade NAME grades one student again.  A submission that cannot be graded
is a row that says why.
"""

import csv
import hashlib
import json
import os
import random
import re
import signal
import sys
import time

from ..language.i18n import N_, _, ngettext
from ..running.atomic import write_atomically
from ..running.failures import Refused
from ..running.seal import HERE, Seal, read_module
from ..running.values import clean_text
from ..steps.tracks import ALL_STEPS, LESSON, TRACKS, default_track
from ..verdict.documents import nothing_graded
from ..verdict.grading import GRADER_VERSION, SEALED_SEEDS, guessable
from ..verdict.records import carried, options_of
from ..verdict.results import STEP_STATUSES, Status, StepResult, points
from . import copies, handout, ledger
from .ledger import cell, escaped, short
from .pool import Job, Server
from .submissions import discover, given_steps

# ---------------------------------------------------------------------------
# Cells, folder names, and what an earlier run wrote.
# ---------------------------------------------------------------------------

# A row's status: the gradebook's word (for a spreadsheet's formulas), shown translated.
STATUSES = (N_("passed"), N_("failed"), N_("not started"), N_("not graded"))


def safe_name(key):
    """A submission's feedback folder's name, its own in every run whatever the others are:
    the key where it is a safe name already, else the key made one, then "~" (which no kept
    key holds) and the start of the key's sha256 ("bob x.py" and "bob_x.py" once took turns
    at one folder, as the class changed)."""
    name = re.sub(r"[^\w.+@-]+", "_", key).strip("._") or "submission"
    if name == key and len(name) <= 100:
        return name
    return f"{name[:89]}~{hashlib.sha256(key.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"


# ---------------------------------------------------------------------------
# The gradebook: each submission a sealed run of its own, N at a time.
# ---------------------------------------------------------------------------

class Gradebook:
    """--class SUBMISSIONS --gradebook FILE: see the module's docstring."""

    def __init__(self, args):
        self.args, self.path = args, os.path.abspath(args.gradebook)
        stem = os.path.splitext(os.path.basename(self.path))[0]
        self.feedback = os.path.join(os.path.dirname(self.path), f"{stem}-feedback")
        self.jobs = args.jobs or os.cpu_count() or 1
        self.record_path = ledger.beside(self.path, "class.json")
        self.record = ledger.read_record(self.record_path)
        self.resumed = ledger.resume_options(args, self.record)     # its steps, its language: as before
        self.steps = [st for st in ALL_STEPS if st.name in (args.only or default_track())]
        self.weights = {st.name: float(args.weight_map.get(st.name, 1.0)) for st in self.steps}
        self.old = ledger.read_gradebook(self.path)
        self.graded = dict(self.record["graded"]) if self.record else {}
        self.rows, self.stopped, self.reused, self.edited = {}, None, 0, []   # edited: _edited
        self.changed = []                   # the students whose file changed since its grade (_known)

    def run(self):
        beside = {self.path, self.feedback} | {ledger.beside(self.path, n) for n in ledger.BESIDE}
        subs = discover(self.args.class_dir, beside, self.args.roster)
        why = self._cannot_go_on(subs)
        if why:
            print(_("grader: cannot grade the class: {why}").format(why=why), file=sys.stderr)
            return 2
        self._choose_seed()
        self._say_resumed()
        self._roster_left(subs)
        made = not os.path.isdir(self.feedback)
        os.makedirs(self.feedback, exist_ok=True)
        why = self._check_seal()
        if why:
            if made:
                os.rmdir(self.feedback)         # refused: nothing left of the run
            print(_("grader: cannot grade the class: {why}").format(why=why), file=sys.stderr)
            return 2
        todo = [sub for sub in subs if not self._known(sub)]
        gone = ledger.gone(self.old, {ledger.unquoted(cell(sub.key)) for sub in subs})
        self.rows.update(gone)                                   # a grade and a teacher's notes: never dropped
        self._say(ledger.gone_said(gone))
        if self.reused:
            self._say(ngettext("{count} submission graded before with the same bytes, grader, seed "
                               "and options: kept",
                               "{count} submissions graded before with the same bytes, grader, seed "
                               "and options: kept", self.reused).format(count=self.reused))
        self._say_edited()
        self._say(ledger.changed_said(self.changed))
        self._write()
        self._grade(todo)
        if not self.stopped:
            self._copies(subs)
        self._summary(len(subs))
        return 128 + self.stopped if self.stopped else 0

    def _copies(self, subs):
        """The pairs of submissions that share most of their code (copies.compare), in
        STEM-copies.txt beside the gradebook, and a note on each row whose code is the
        shipped solution's over again: flagged for the teacher, never scored."""
        solution = copies.read_source(os.path.join(HERE, "gqa.py"))
        track = [st.name for st in self.steps]              # the starter of the class's track
        bases = handout.starters(solution, handout.given_steps(track)) if solution else ()
        sources = {sub.key: copies.read_source(sub.path) for sub in subs if sub.path}
        groups, pairs, shares = copies.compare(sources, bases, solution or None)
        path = os.path.splitext(self.path)[0] + "-copies.txt"
        write_atomically(path, copies.report(groups, pairs, escaped, shares).encode("utf-8"))
        solutions = [key for share, key, _ in shares if share >= copies.SOLUTION]
        for key in solutions:
            note = _("the shipped solution over again (flagged, not scored)")
            self.rows[key]["notes"] = "; ".join(n for n in (note, self.rows[key].get("notes")) if n)
        if solutions:
            self._write()
        self._say(_("groups of submissions with the same code: {groups}; pairs more that share most "
                    "of it: {pairs}; submissions the shipped solution's: {solutions}; more that share "
                    "part of it: {partial}: {path}").format(
                        groups=len(groups), pairs=len(pairs), solutions=len(solutions),
                        partial=len(shares) - len(solutions), path=escaped(os.path.relpath(path))))

    def _say(self, text):
        """Progress, on stderr (none with --quiet, or once stderr is closed; none for no text)."""
        if text and not self.args.quiet:
            try:
                print(f"grader: {text}", file=sys.stderr)
                sys.stderr.flush()
            except (OSError, ValueError):
                self.args.quiet = True

    def _cannot_go_on(self, subs):
        """Why this run would grade the class otherwise than the teacher expects, or None:
        a --regrade that names no student; a gradebook whose feedback folder is not beside
        it (every row would be graded again); a seed no record keeps and no cell holds
        exactly (the hidden cases would be new).  Said before any run."""
        names = {n for s in subs if not s.absent for n in self._names(s)}
        unknown = [n for n in self.args.regrade or () if n not in names]
        absent = [n for n in unknown if any(n in self._names(s) for s in subs)]
        if absent:
            return _("--regrade {name}: the student submitted nothing to grade").format(name=escaped(absent[0]))
        if unknown:
            return _("--regrade {name}: no submission of the class is named so (the gradebook's "
                     "student or submission column); the class has {names}").format(
                         name=escaped(unknown[0]), names=escaped(short(_(", ").join(sorted(names)), 300)))
        graded = [r for r in self.old.values() if r.get("status") not in (None, "", Status.NOT_GRADED)]
        if graded and not os.path.isdir(self.feedback):
            return _("{gradebook} holds {count} graded rows, but its feedback folder {folder} is not "
                     "beside it: without it no row can be kept, and the whole class would be graded "
                     "again; put the folder back beside the gradebook, or move the gradebook away to "
                     "grade the class anew").format(
                         gradebook=escaped(os.path.basename(self.path)), count=len(graded),
                         folder=escaped(os.path.basename(self.feedback) + os.sep))
        seed_problem = ledger.seed_problem(self.old, self.record_path)[1] if self.args.seed is None \
            and self.record is None else None
        return seed_problem or self._given_graded(subs)

    def _given_graded(self, subs):
        """Why grading every step would count the steps that a track's starter gave most of
        the class (a handout of --steps core graded without --steps), or None.  When fewer
        than half the submissions come from such a starter, a note names them and the run
        goes on: one file never stops a class."""
        if self.args.only is not None:
            return None
        graded = {st.number for st in self.steps}
        given = {sub.key: given_steps(sub.path) & graded for sub in subs if sub.path}
        given = {key: numbers for key, numbers in given.items() if numbers}
        if not given:
            return None
        counted = sorted(set().union(*given.values()))
        numbers, names = _(", ").join(map(str, counted)), _(", ").join(ALL_STEPS[n - 1].name for n in counted)
        if 2 * len(given) <= sum(1 for sub in subs if sub.path):
            print("grader: " + _("note: from a track's starter, which gave steps {numbers} ({names}): {submissions}; "
                                 "graded with every step of the lab, as the rest of the class is, they earn those "
                                 "steps' points").format(numbers=numbers, names=names,
                                                         submissions=escaped(_(", ").join(sorted(given)))),
                  file=sys.stderr)
            return None
        tracks = [name for name, steps in TRACKS.items() if name != "all" and set(steps) <= set(LESSON)
                  and not {ALL_STEPS[n - 1].name for n in counted} & set(steps)]
        return ngettext("{count} submission comes from a track's starter, which gave it steps {numbers} ({names}: "
                        "its \"# Given:\" lines); graded with every step of the lab, it would earn their points: "
                        "give the track its handout was made with ({tracks}), or --steps all to grade every step",
                        "{count} submissions come from a track's starter, which gave them steps {numbers} ({names}: "
                        "their \"# Given:\" lines); graded with every step of the lab, they would earn their "
                        "points: give the track their handout was made with ({tracks}), or --steps all to grade "
                        "every step", len(given)).format(
            count=len(given), numbers=numbers, names=names,
            tracks=_(", ").join(f"--steps {t}" for t in tracks) or "--steps TRACK")

    def _roster_left(self, subs):
        """With --roster: the submissions no row of it names, and its students with none
        (each a row of its own, which an LMS would read apart): said, never silent."""
        if not self.args.roster:
            return
        loose = [escaped(s.key) for s in subs if s.unrostered]
        absent = [escaped(s.student) for s in subs if s.absent]
        if loose:
            self._say(_("note: no row of --roster names {count} of the submissions: {names}; each is "
                        "graded under its own name").format(count=len(loose), names=short(_(", ").join(loose), 300)))
        if absent and loose:
            self._say(_("note: students of --roster with no submission: {names} (match a submission's "
                        "name to its student in the roster, or rename it)").format(
                            names=short(_(", ").join(absent), 300)))

    def _choose_seed(self):
        """--seed; else the class's record's seed (so that a second run goes on where the
        first stopped); else, with no record (a gradebook of grader 4.1), the gradebook's
        seed when a cell holds it exactly; else one drawn now.  Said on stderr."""
        given = self.args.seed is not None
        if given:
            how = _("given")
        elif self.record is not None:
            self.args.seed, how = self.record["seed"], _("the class's record's")
            cells = {ledger.exact_seed(r.get("seed")) for r in self.old.values() if r.get("seed")}
            if cells and cells != {self.args.seed}:
                self._say(_("note: the gradebook's seed column is not the seed the record {record} "
                            "keeps (a spreadsheet rounds an 18-digit number); the record's is used").format(
                                record=os.path.basename(self.record_path)))
        elif ledger.seed_problem(self.old, self.record_path)[0] is not None:
            self.args.seed, how = ledger.seed_problem(self.old, self.record_path)[0], _("the gradebook's")
        else:
            self.args.seed, how = random.SystemRandom().randrange(SEALED_SEEDS), _("drawn now")
        self._say(_("grading the class with seed {seed} ({how}), {jobs} at a time").format(
            seed=self.args.seed, how=how, jobs=self.jobs))
        if given and guessable(self.args.seed):
            self._say(_("note: {why}").format(why=guessable(self.args.seed)))

    def _check_seal(self):
        """Why no sealed run can be made here, or None; said once, before any run.  The
        workers must reach neither the grader's folder, nor the submissions (a classmate's
        file is a solution), nor the gradebook's folder (the grades, the feedback)."""
        try:
            seal = Seal(True, None, os.path.join(self.feedback, "results.json"), self.args.budget,
                        out_name=f"--gradebook {self.args.gradebook}'s feedback")
        except Refused as err:
            return str(err)
        try:                                    # as the system resolves them: links, then ".."
            seal.keep_private(self.args.class_dir, "the submissions of --class")
            seal.keep_private(os.path.dirname(self.path), "the folder of --gradebook "
                              f"{self.args.gradebook}")
            seal.keep_private(self.feedback, f"the feedback of --gradebook {self.args.gradebook}")
            links = [p for p in [self.path, self.feedback] + [os.path.join(self.feedback, n) for n in
                                                              sorted(os.listdir(self.feedback))]
                     if os.path.islink(p)]
            if links:                       # written through, it would go where the link says
                return (f"{links[0]} is a symbolic link; the gradebook and its feedback folders "
                        f"must be files and folders of their own")
        except Refused as err:
            return str(err)
        finally:
            seal.close()
        if seal.partly:
            print(f"grader: partly sealed: {seal.partly}", file=sys.stderr)
        return None

    # -- what is known already ------------------------------------------------

    def _folder(self, sub):
        """sub's feedback folder: named after its key, and no other submission's."""
        return os.path.join(self.feedback, safe_name(sub.key))

    def _known(self, sub):
        """Whether sub needs no run: it cannot be graded (its row says why), or its
        feedback holds a document of the same bytes, grader, seed and options."""
        sha = None
        if sub.why is None:
            try:
                sha = hashlib.sha256(read_module(sub.path)).hexdigest()
            except Refused as err:
                sub.why = str(err)
        if sub.why is not None:
            doc = self._document(sub, error=sub.why)
            text = _("{student}: not graded: {why}").format(student=sub.student, why=sub.why)
            self._keep(sub, doc, (escaped(text) + "\n").encode("utf-8"), None)
            return True
        doc = ledger.read_document(os.path.join(self._folder(sub), "results.json"))
        if doc and doc.get("sha256") not in (None, sha):
            self.changed.append(sub.student)
        if (doc is None or set(self._names(sub)) & set(self.args.regrade or ())
                or not os.path.isfile(os.path.join(self._folder(sub), "report.txt"))
                or [doc.get(k) for k in ("sha256", "grader", "options")] + [self._seed_of(sub)]
                != [sha, GRADER_VERSION, options_of(self.args), self.args.seed]):
            return False
        old = self._old(sub.key)
        self.rows[sub.key] = self._row(sub, doc, self.graded.get(sub.key, {}).get("seconds", old.get("seconds", "")))
        self.graded[sub.key] = {"seed": self.args.seed, "seconds": self.rows[sub.key]["seconds"]}   # the record's
        self.reused += 1
        self._edited(sub, old)
        return True

    def _say_resumed(self):
        """What resume_options did: the record's options taken, or given otherwise."""
        taken, differing = self.resumed
        if taken:
            self._say(_("note: the class is graded with its record's options, as its rows were: {options}").format(
                options=" ".join(carried(self.args, set(taken))[:-2])))
        if differing:
            shown = ", ".join(f"--{d.replace('_', '-')} {self.record['options'][d]}" for d in differing)
            self._say(_("note: the class's record graded its rows with {options}; those this run cannot keep "
                        "are graded again").format(options=shown))

    def _old(self, key):
        """The gradebook file's row of submission key, {} when it has none."""
        return self.old.get(ledger.unquoted(cell(key)), self.old.get(key, {}))

    def _say_edited(self):
        """The kept rows whose points the gradebook's file said otherwise (_edited): said on
        stderr, even with --quiet, since what the file said is undone."""
        if not self.edited:
            return
        print("grader: " + ngettext(
            "{count} kept row's points differ from {gradebook}'s ({rows}): the gradebook is written from "
            "the grades; points given by hand belong in a file of their own, since each run writes it whole",
            "{count} kept rows' points differ from {gradebook}'s ({rows}): the gradebook is written from "
            "the grades; points given by hand belong in a file of their own, since each run writes it whole",
            len(self.edited)).format(count=len(self.edited), gradebook=escaped(os.path.basename(self.path)),
                                     rows=short(_("; ").join(self.edited), 300)), file=sys.stderr)

    def _edited(self, sub, old):
        """Note where the gradebook's file gave a kept row other points than its grade (a
        score typed in by hand, which the gradebook, written from the grades, undoes)."""
        row = self.rows[sub.key]
        for column in ["score"] + [f"{st.number} {st.name}" for st in self.steps]:
            said = (old.get(column) or "").replace(",", ".")
            try:
                same = said == "" or abs(float(said) - float(row[column])) <= 1e-9
            except (TypeError, ValueError):
                same = False
            if not same:
                self.edited.append(_("{student}: {column} {said} in the file, {graded} graded").format(
                    student=escaped(sub.student), column=column, said=escaped(short(old.get(column), 20)),
                    graded=row[column]))
                return

    @staticmethod
    def _names(sub):
        """What names sub in --regrade: its student and its submission, as the folder holds
        them and as the gradebook and the terminal show them (a byte that is not UTF-8 as
        its escape, \\udce9)."""
        return {sub.student, sub.key, escaped(sub.student), escaped(sub.key)}

    def _seed_of(self, sub):
        """The seed sub was graded with: the record's (the seed is withheld from its
        document); with no record, its gradebook cell's, when the cell holds it exactly."""
        if self.record is not None:
            return self.graded.get(sub.key, {}).get("seed")
        old = self._old(sub.key)
        if ledger.exact_seed(old.get("seed")) is None and ledger.rounded_from(old.get("seed"), self.args.seed):
            return self.args.seed             # a spreadsheet's rounding of --seed's seed
        return ledger.exact_seed(old.get("seed"))

    def _document(self, sub, error):
        """The document of a submission no run graded."""
        return nothing_graded(error, module=sub.key, seed=None, options=options_of(self.args), sha256=None)

    def _keep(self, sub, doc, text, seconds):
        """sub's feedback (its document and report) and its row, each written whole."""
        folder = self._folder(sub)
        os.makedirs(folder, exist_ok=True)
        write_atomically(os.path.join(folder, "results.json"),
                         (json.dumps(doc, indent=2) + "\n").encode("utf-8"))
        write_atomically(os.path.join(folder, "report.txt"), text)
        self.rows[sub.key] = self._row(sub, doc, "" if seconds is None else f"{seconds:.1f}")
        if doc.get("sha256"):                   # graded: the record keeps its seed
            self.graded[sub.key] = {"seed": self.args.seed, "seconds": self.rows[sub.key]["seconds"]}
        else:
            self.graded.pop(sub.key, None)

    # -- the runs -------------------------------------------------------------

    def _argv(self, sub):
        """A run's command line: sealed, hidden cases withheld, in the class's language,
        with the grading options given and those taken from the record (resumed)."""
        dests = self.args.given | set(self.resumed[0])
        dests &= {"cases", "only", "timeout", "budget", "fail_fast", "all_or_nothing"}
        return (["--sealed", "--withhold-hidden", "--module", sub.path, "--lang", self.args.lang]
                + carried(self.args, dests))

    def _grade(self, todo):
        """Run todo's submissions, jobs at a time; each row written as its run ends.  A
        signal stops it: the runs under way are stopped and leave nothing."""
        if not todo:
            return
        handlers = self._catch_signals()
        servers = [Server() for _ in range(min(self.jobs, len(todo)))]
        queue, done, start, limit = list(todo), 0, time.monotonic(), self.args.budget + 60
        try:
            while (queue or any(s.job for s in servers)) and not self.stopped:
                for server in servers:
                    if server.job is None and queue:
                        sub = queue.pop(0)
                        os.makedirs(self._folder(sub), exist_ok=True)
                        server.send(Job(sub, self._folder(sub), self._argv(sub)))
                for server in self._ended(servers, limit):
                    status, job = server.ended, server.job
                    server.job = None
                    if status == "late" or status == "gone":
                        server.stop()
                        servers[servers.index(server)] = Server()
                    self._finish(job, status, time.monotonic() - server.started)
                    done += 1
                    self._progress(job, done, len(todo), start)
        finally:
            for server in servers:
                if server.job is not None:
                    server.stop()
                    server.job.discard()
                else:
                    server.close()
            for which, handler in handlers.items():
                signal.signal(which, handler)

    def _ended(self, servers, limit):
        """The busy servers whose job ended or ran out of time (each with .ended: its exit
        status, "gone" or "late"); waits up to 0.1 s for one."""
        import select
        busy = [s for s in servers if s.job is not None]
        try:
            ready = select.select([s.proc.stdout for s in busy], [], [], 0.1)[0] if busy else []
        except (OSError, ValueError):
            ready = []
        ended = []
        for server in busy:
            server.ended = server.answer() if server.proc.stdout in ready else None
            if server.ended is None and time.monotonic() - server.started > limit:
                server.ended = "late"
            if server.ended is not None and not self.stopped:
                ended.append(server)
        return ended

    def _catch_signals(self):
        """SIGINT, SIGTERM and SIGHUP stop the class's runs (in the main thread only)."""
        import threading
        if threading.current_thread() is not threading.main_thread():
            return {}

        def stop(signum, frame):
            self.stopped = signum
        which = [getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)]
        return {s: signal.signal(s, stop) for s in which}

    def _finish(self, job, status, seconds):
        """A run that ended (or was stopped): its document, report and row."""
        doc = ledger.read_document(job.out) if isinstance(status, int) and status < 128 else None
        try:
            with open(job.text, "rb") as f:
                text = f.read()
        except OSError:
            text = b""
        job.discard()
        if doc is None:
            why = (_("the run did not end within its time; it was stopped") if status == "late" else
                   _("the grader ended (status {status}) without a document").format(status=status))
            doc = self._document(job.sub, why)
            text += (_("not graded: {why}").format(why=why) + "\n").encode("utf-8")
        if doc.get("sha256"):                   # the seed is withheld: the gradebook has it
            text += (_("sha256 of the bytes graded: {sha256}; grader {grader}").format(
                sha256=doc["sha256"], grader=doc.get("grader")) + "\n").encode("utf-8")
        self._keep(job.sub, doc, text, seconds)
        self._write()

    def _progress(self, job, done, total, start):
        row = self.rows[job.sub.key]
        left = (time.monotonic() - start) / done * (total - done)
        what = (_("not graded ({why})").format(why=short(row["notes"], 70)) if row["status"] == Status.NOT_GRADED
                else _("{status}, {score}/{most} points").format(status=_(row["status"]), score=row["score"],
                                                                 most=row["max_score"]))
        line = _("[{done}/{total}] {student}: {what}, {seconds} s").format(
            done=f"{done:>{len(str(total))}}", total=total, student=escaped(job.sub.student), what=what,
            seconds=row["seconds"])
        if done < total:
            line = _("{line}; about {left} s left").format(line=line, left=f"{left:.0f}")
        self._say(line)

    # -- the gradebook --------------------------------------------------------

    def columns(self):
        """The gradebook's columns: who, the points, each step's points, what to know, then
        each step's public and hidden cases passed ("passed/of")."""
        return (["student", "name", "submission", "score", "max_score"]
                + [f"{st.number} {st.name}" for st in self.steps]
                + ["status", "seed", "sha256", "seconds", "grader", "notes"]
                + [f"{st.number} {st.name} {which}" for st in self.steps for which in ("public", "hidden")])

    def _row(self, sub, doc, seconds):
        """The gradebook's row of sub, from its document: points per step (results.points,
        the rule of every run, on the document's counts), the status and what to know.  A
        submission that could not be graded scores 0, with the reason; a student of the
        roster who submitted nothing has blanks, as an LMS reads "no grade"."""
        row = {"student": sub.student, "name": sub.name, "submission": sub.key,
               "seed": self.args.seed, "sha256": doc.get("sha256") or "", "seconds": seconds,
               "grader": doc.get("grader"), "max_score": f"{sum(self.weights.values()):g}"}
        steps = {r.get("name"): StepResult.from_json(r) for r in doc.get("steps") or [] if isinstance(r, dict)}
        if doc.get("error") or not steps:
            why = str(doc.get("error") or _("nothing was graded"))
            prefix = _("cannot grade {module}: {why}").format(module=doc.get("module"), why="")
            why = why[len(prefix):] if why.startswith(prefix) else why
            mark = "" if sub.absent else "0"
            row.update({f"{st.number} {st.name}": mark for st in self.steps}, status=Status.NOT_GRADED,
                       score=mark, notes=clean_text(why, newlines=False), absent=sub.absent)
            return row
        earned = {st: points(steps.get(st.name), self.weights[st.name], self.args.cases,
                             self.args.all_or_nothing) for st in self.steps}
        failed = [st for st in self.steps if st.name not in steps or steps[st.name].status != Status.PASSED]
        notes = [sub.note] if sub.note else []
        if failed:
            first = steps.get(failed[0].name)
            message = ((first.message or _(first.status)) if first else _("not graded")).splitlines()
            notes.append(_("step {step} {name}: {message}").format(
                step=failed[0].number, name=failed[0].name, message=message[0] if message else ""))
        notes += [_("partly sealed")] if doc.get("sealed", "sealed") != "sealed" else []
        notes += [str(n) for n in doc.get("cleanup") or []]
        row["passed"] = {st.name for st in self.steps if st not in failed}
        untouched = all(st.name in steps and steps[st.name].status == Status.NOT_STARTED for st in self.steps)
        status = Status.PASSED if not failed else Status.NOT_STARTED if untouched else Status.FAILED
        row.update({f"{st.number} {st.name}": f"{p:g}" for st, p in earned.items()},
                   score=f"{round(sum(earned.values()), 4):g}", status=status,
                   notes=clean_text(short(_("; ").join(notes), 300), newlines=False))
        for st in self.steps:
            r = steps.get(st.name)
            for which in ("public", "hidden"):
                row[f"{st.number} {st.name} {which}"] = "{}/{}".format(*getattr(r, which)) if r else ""
        return row

    def _write(self):
        """The gradebook, whole: every row known so far, by submission; then the class's
        record and the LMSs' exports beside it (ledger.py)."""
        import io
        text = io.StringIO()
        extra = ledger.own_columns(self.old, self.columns())      # a teacher's notes: kept, never dropped
        writer = csv.DictWriter(text, self.columns() + extra, extrasaction="ignore", lineterminator="\n",
                                quoting=csv.QUOTE_ALL)
        writer.writeheader()
        rows = [ledger.with_own(self.rows[key], self._old(key), extra) for key in sorted(self.rows)]
        for row in rows:
            writer.writerow({k: (ledger.own_cell if k in extra else cell)(v) for k, v in row.items()})
        write_atomically(self.path, text.getvalue().encode("utf-8-sig"))   # the mark: Excel reads UTF-8 so
        ledger.write_record(self.record_path, self.args.seed, GRADER_VERSION, self.graded,
                            ledger.recorded_options(self.args))
        ledger.write_exports(self.path, rows, cell)

    def _summary(self, total):
        """What the class did: counts, the pass rate per step, a histogram of scores; printed,
        and written beside the gradebook (STEM-statistics.txt)."""
        rows = [self.rows[k] for k in sorted(self.rows) if not self.rows[k].get(ledger.GONE)]
        graded = [r for r in rows if r["status"] != Status.NOT_GRADED]
        count = {s: sum(r["status"] == s for r in rows) for s in STEP_STATUSES}
        first = _("{written} of {total} submissions in {gradebook} (feedback in {feedback}), seed "
                  "{seed}, grader {grader}: {passed} passed every step, {failed} failed some, "
                  "{not_started} not started, {not_graded} not graded").format(
                      seed="\0", written=len(rows), total=total, gradebook="\1", feedback="\2",
                      grader=GRADER_VERSION, passed=count[Status.PASSED], failed=count[Status.FAILED],
                      not_started=count[Status.NOT_STARTED], not_graded=len(rows) - len(graded))
        lines = [first.replace("\0", str(self.args.seed)).replace("\1", escaped(os.path.relpath(self.path))).replace(
            "\2", escaped(os.path.relpath(self.feedback)) + os.sep)]
        named = ["  " + _("not graded: {student}: {why}").format(student=escaped(r["student"]),   # the teacher's
                                                                 why=escaped(short(r["notes"], 100)))
                 for r in rows if r["status"] == Status.NOT_GRADED]
        if graded:
            lines += ledger.pass_rates(graded, self.steps, self.weights)
            lines += ledger.histogram(graded, sum(self.weights.values()))
        if self.stopped:
            lines.append(_("stopped by {signal}: {written} of {total} written; run the same command "
                           "again to grade the rest").format(signal=signal.Signals(self.stopped).name,
                                                             written=len(rows), total=total))
        said = "\n".join(lines[:1] + named + lines[1:])
        # Written first (`| head` may end the print), for the class: the seed withheld, no one named,
        # no folder of the teacher's (the gradebook and its feedback by their names alone).
        lines[0] = first.replace("\0", _("(in the gradebook, withheld here)")).replace(
            "\1", escaped(os.path.basename(self.path))).replace("\2", escaped(os.path.basename(self.feedback)) + os.sep)
        write_atomically(ledger.beside(self.path, "statistics.txt"), ("\n".join(lines) + "\n").encode("utf-8"))
        print(said)
