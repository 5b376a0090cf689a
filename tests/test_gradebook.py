"""A class's gradebook as a teacher in Japan meets it: a class graded with --lang ja
(uploads named in another encoding, a Notepad file, a binary, a student with no
submission), the gradebook saved again by a spreadsheet, a run resumed from it, a
record lost, a student graded again, the feedback folder left behind; and what the
gradebook is read with (ledger.py), against spreadsheets' own ways of writing a CSV."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import unittest

from gqa_grader.teacher import ledger
from tests.helpers import heavy
from tests.class_support import SOURCE, WRONG, Private, write


def spreadsheet_saved(path, seed):
    """The gradebook at path as Excel saves it as "CSV UTF-8": a byte-order mark, CRLF,
    cells quoted only where they must be, the ' before a formula's character dropped (it
    only told the spreadsheet to show text), and the seed, a number of 18 digits, in
    scientific notation with 6 significant digits."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    at = rows[0].index("seed")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(rows[0])
    for row in rows[1:]:
        row = [c[1:] if c[:2] in ("'=", "'+", "'-", "'@") else c for c in row]
        row[at] = "%.5E" % float(seed)
        writer.writerow(row)
    with open(path, "wb") as f:
        f.write(b"\xef\xbb\xbf" + out.getvalue().encode("utf-8"))


class Reading(unittest.TestCase):
    """ledger's readers against what a spreadsheet writes, each made here by hand."""

    def test_a_seed_is_read_only_when_a_cell_holds_it_exactly(self):
        seed = 477997123456789012
        self.assertEqual(ledger.exact_seed(str(seed)), seed)
        self.assertEqual(ledger.exact_seed(" 42 "), 42)
        for rounded in ("%.5E" % seed, "%.14E" % seed, "%.1f" % seed, "477997123456789000", "4,77997E+17",
                        "", "seed", "-3"):
            with self.subTest(rounded):
                self.assertIsNone(ledger.exact_seed(rounded))

    def test_a_gradebook_reads_back_in_each_spreadsheet_dialect(self):
        dialects = {
            "written": '"student","submission","seed"\n"渡辺","\'=cmd.py","12"\n'.encode("utf-8"),
            "excel utf-8": b"\xef\xbb\xbf" + "student,submission,seed\r\n渡辺,=cmd.py,12\r\n".encode("utf-8"),
            "excel japan": "student,submission,seed\r\n渡辺,=cmd.py,12\r\n".encode("cp932"),
            "excel unicode": "student\tsubmission\tseed\r\n渡辺\t=cmd.py\t12\r\n".encode("utf-16"),
            "libreoffice ;": "student;submission;seed\n渡辺;=cmd.py;12\n".encode("utf-8"),
        }
        for name, data in dialects.items():
            with self.subTest(name):
                path = write(os.path.join(self.tmp, name + ".csv"), data)
                book = ledger.read_gradebook(path)
                self.assertEqual(list(book), ["=cmd.py"])          # the key, as the submission is named
                self.assertEqual([book["=cmd.py"][k] for k in ("student", "seed")], ["渡辺", "12"])
        # Excel's CSV in Korea, in a Korean class: cp949, which read as cp932 first gave katakana.
        from gqa_grader.language import i18n
        self.addCleanup(i18n.use, "en")
        i18n.use("ko")
        path = write(os.path.join(self.tmp, "excel korea.csv"), "student,submission,seed\r\n김민준,=cmd.py,12\r\n".encode("cp949"))
        self.assertEqual(ledger.read_gradebook(path)["=cmd.py"]["student"], "김민준")

    def test_a_record_reads_back_what_was_written_with_a_name_that_is_not_utf8(self):
        path = os.path.join(self.tmp, "g-class.json")
        graded = {"caf\udce9.py": {"seed": 10 ** 17 + 3, "seconds": "0.5"}}
        ledger.write_record(path, 10 ** 17 + 3, "4.2", graded)
        self.assertEqual(ledger.read_record(path)["graded"], graded)
        self.assertEqual(ledger.read_record(path)["seed"], 10 ** 17 + 3)
        write(path, '{"seed": "1"}')
        self.assertIsNone(ledger.read_record(path))                 # not a record: none

    def setUp(self):
        import tempfile
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)


class Resuming(unittest.TestCase):
    """A class's record keeps the options it was graded with: a run that does not give one
    takes the record's, as it takes its seed."""

    def test_the_records_options_are_taken_where_none_is_given_and_said_where_one_differs(self):
        from gqa_grader import cli
        from gqa_grader.language import i18n
        self.addCleanup(i18n.use, "en")
        first = cli.parse_args(["--class", ".", "--gradebook", "g.csv", "--steps", "core", "--cases", "2",
                                "--lang", "ja"])
        record = {"seed": 5, "graded": {}, "options": ledger.recorded_options(first)}
        record = json.loads(json.dumps(record))                    # as read back from the file
        again = cli.parse_args(["--class", ".", "--gradebook", "g.csv", "--lang", "en"])
        taken, differing = ledger.resume_options(again, record)
        self.assertEqual((sorted(taken), differing), (["cases", "only"], ["lang"]))
        self.assertEqual((again.only, again.cases, again.lang), (first.only, 2, "en"))
        self.assertEqual(again.steps_spec, "core")          # as the first run's commands said it, not 14 names
        bare = cli.parse_args(["--class", ".", "--gradebook", "g.csv"])
        self.assertEqual(sorted(ledger.resume_options(bare, record)[0]), ["cases", "lang", "only"])
        self.assertEqual(i18n._("passed"), "合格")                  # the record's language, from here on
        i18n.use("en")
        for bad in ({"only": ["no_such_step"]}, {"cases": -1}, {"lang": "xx"}, {"timeout": "5"}, "options"):
            with self.subTest(bad=bad):
                run = cli.parse_args(["--class", ".", "--gradebook", "g.csv"])
                options = dict(record["options"], **bad) if isinstance(bad, dict) else bad
                taken, _differing = ledger.resume_options(run, dict(record, options=options))
                self.assertFalse(set(taken) & (set(bad) if isinstance(bad, dict) else {"only", "cases", "lang"}))
        self.assertEqual(ledger.resume_options(bare, None), ([], []))   # grader 4.3's record: none kept


class ClassroomInTheLanguage(unittest.TestCase):
    """GitHub Classroom's result of a step that never wrote one: in the class's language."""

    def test_an_unfinished_steps_result_is_in_the_language_of_the_workflow(self):
        import base64
        from gqa_grader.steps import checks
        from gqa_grader import cli
        from gqa_grader.language import i18n
        from gqa_grader.teacher import workflow
        self.addCleanup(i18n.use, "en")
        said = {}
        for lang in i18n.LANGUAGES:
            args = cli.parse_args(["--classroom", ".", "--lang", lang])
            doc = json.loads(base64.b64decode(workflow._unfinished(checks.STEPS[2], args)))
            said[lang] = (doc["tests"][0]["name"], doc["tests"][0]["message"])
        self.assertEqual(said["en"][0], "step 3: kv_head")
        self.assertIn("did not finish within its time", said["en"][1])
        for lang in i18n.LANGUAGES[1:]:                     # each in its catalog's words
            catalog = i18n.translation(lang)
            with self.subTest(lang=lang):
                self.assertEqual(said[lang][0], catalog.gettext("step {step}: {name}").format(step=3, name="kv_head"))
                self.assertNotEqual(said[lang][0], said["en"][0])
                self.assertNotEqual(said[lang][1], said["en"][1])
                template = ("the step did not run, or did not finish within its time: none of it was graded (where "
                            "gqa.py could not be imported, the step '{prepare}' says why)")
                self.assertEqual(said[lang][1], catalog.gettext(template).format(   # the step as its log names it
                    prepare=catalog.gettext(workflow.PREPARE_NAME)))

    def test_every_step_of_the_workflow_is_named_in_its_language(self):
        # What a student sees in the Actions log: the checkout, the preparing step, each lab
        # step and the reporter, not English around steps in Japanese.
        from gqa_grader import cli
        from gqa_grader.language import i18n
        from gqa_grader.teacher import workflow
        self.addCleanup(i18n.use, "en")
        names = {}
        for lang in i18n.LANGUAGES:
            args = cli.parse_args(["--classroom", ".", "--lang", lang, "--steps", "1-2"])
            steps = workflow.workflow(args)["jobs"]["run-autograding-tests"]["steps"]
            names[lang] = [step["name"] for step in steps]
        self.assertEqual(len(names["en"]), 5)                      # checkout, prepare, 2 steps, reporter
        for lang in i18n.LANGUAGES[1:]:
            for english, said in zip(names["en"], names[lang]):
                with self.subTest(lang=lang, step=english):
                    self.assertNotEqual(said, english)


def rows_of(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return {row["submission"]: row for row in csv.DictReader(f)}


@heavy
class JapaneseClass(unittest.TestCase):
    maxDiff = None
    """One class, graded in Japanese, then resumed the ways a teacher resumes it."""

    def setUp(self):
        self.private = Private(self)
        work = self.private.work
        subs = os.path.join(work, "subs").encode()
        files = {b"alice.py": SOURCE.encode(), b"bob.py": WRONG.encode(),
                 b"note\xe9.py": SOURCE.encode("utf-16"),                 # Notepad's "Unicode"
                 b"clone\xff/gqa.py": SOURCE.replace("\n", "\r\n").encode("utf-16"),
                 b"bin\xe9.py": b"\x7fELF\x02\x01\x01\x00" * 8,
                 b"two\xfe/gqa.py": SOURCE.encode(), b"two\xfe/old/gqa.py": SOURCE.encode()}
        for name, data in files.items():
            write(os.path.join(subs, name), data)
        write(os.path.join(subs, b"carol.zip"), b"PK\x03\x04")
        write(os.path.join(work, "roster.csv"),                  # as Japanese Excel saves a CSV
              "submission,student,name\r\nalice.py,s1,山田 花子\r\nbob.py,s2,Bob\r\ncarol,s3,Carol\r\n"
              "dan.py,s4,Dan\r\n".encode("cp932"))
        self.argv = ["--class", "subs", "--gradebook", "g.csv", "--only", "1,3", "--cases", "2",
                     "--roster", "roster.csv", "--lang", "ja", "--jobs", "2"]
        self.book = os.path.join(work, "g.csv")

    def run_class(self, *extra):
        return self.private.run(*self.argv, *extra)

    def test_a_teachers_term_graded_resumed_and_regraded(self):
        """One walk, as a teacher's term goes (a class is costly to grade: it is graded
        once, then resumed): the first run, a spreadsheet's save, a lost record, one
        student again, the feedback left behind."""
        first, summary = self.graded_in_japanese_every_upload_in_its_own_row()
        self.a_gradebook_a_spreadsheet_saved_resumes_with_its_seed_and_grades(first, summary)
        self.one_student_regraded_and_a_gradebook_without_its_feedback_refused()

    def graded_in_japanese_every_upload_in_its_own_row(self):
        run = self.run_class()
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(self.book, "rb") as f:       # UTF-8 with its mark, which Japanese Excel needs to read it so
            self.assertEqual(f.read(4), b'\xef\xbb\xbf"')
        rows = rows_of(self.book)
        self.assertEqual(sorted(rows), sorted(["(no submission) s4", "alice.py", "bin\\udce9.py", "bob.py",
                                               "carol.zip", "clone\\udcff", "note\\udce9.py", "two\\udcfe"]))
        self.assertEqual([rows["alice.py"]["name"], rows["carol.zip"]["student"]], ["山田 花子", "s3"])
        self.assertIn("--roster のどの行にも名前がない提出物が 4 件あります", run.stderr)
        status = {k: r["status"] for k, r in rows.items()}
        self.assertEqual(status, {"(no submission) s4": "not graded", "alice.py": "passed",
                                  "bin\\udce9.py": "not graded", "bob.py": "failed",
                                  "clone\\udcff": "passed", "note\\udce9.py": "passed",
                                  "two\\udcfe": "not graded", "carol.zip": "not graded"})
        self.assertIn("バイナリファイル", rows["bin\\udce9.py"]["notes"])
        self.assertIn("gqa.py という名前のファイルが 2 個", rows["two\\udcfe"]["notes"])
        dan = rows["(no submission) s4"]                  # a blank, as an LMS reads "no grade"
        self.assertEqual([dan["score"], dan["1 valid_g"], dan["3 kv_head"]], ["", "", ""])
        self.assertEqual([rows["bob.py"]["1 valid_g public"], rows["bob.py"]["1 valid_g hidden"]],
                         ["21/21", "2/2"])
        self.assertEqual(rows["bob.py"]["3 kv_head hidden"].split("/")[1], "2")
        self.assertNotEqual(rows["bob.py"]["3 kv_head public"].split("/")[0],
                            rows["bob.py"]["3 kv_head public"].split("/")[1])
        # The class's summary, on stdout and beside the gradebook, in Japanese.
        self.assertIn("全ステップ合格 3、一部不合格 1", run.stdout)
        with open(os.path.join(self.private.work, "g-statistics.txt"), encoding="utf-8") as f:
            statistics = f.read()       # what the run printed, its seed withheld, no student named
        seed = rows["alice.py"]["seed"]
        self.assertIn(seed, run.stdout.splitlines()[0])
        self.assertNotIn(seed, statistics)
        said = run.stdout.replace(seed, "(成績表に記載。ここには書きません)", 1).splitlines(keepends=True)
        self.assertEqual(statistics, "".join(line for line in said if not line.startswith("  採点していません: ")))
        self.assertIn("  採点していません: s3: ", run.stdout)              # the teacher's own terminal names them
        for who in {w for row in rows.values() for w in (row["student"], row["name"], row["submission"]) if w}:
            self.assertNotIn(who, statistics)
        # bob's feedback: Japanese, the commands his own folder runs, no teacher's path, no seed.
        with open(os.path.join(self.private.work, "g-feedback", "bob.py", "report.txt"), encoding="utf-8") as f:
            feedback = f.read()
        self.assertIn("ステップ  3  FAIL  kv_head", feedback)
        self.assertIn("再現: python grader.py --only kv_head --case", feedback)
        self.assertIn("--lang ja", feedback)
        for leak in (self.private.work, self.private.dir, "seed None", rows["bob.py"]["seed"]):
            self.assertNotIn(leak, feedback)
        # The exports: Canvas's columns, Moodle's; dan's points blank, not 0.
        with open(os.path.join(self.private.work, "g-canvas.csv"), newline="", encoding="utf-8") as f:
            canvas = list(csv.reader(f))
        self.assertEqual(canvas[0], ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "gqa lab"])
        self.assertIn(["Dan", "", "s4", "", "", ""], canvas)
        self.assertIn(["山田 花子", "", "s1", "", "", "2"], canvas)
        with open(os.path.join(self.private.work, "g-moodle.csv"), newline="", encoding="utf-8") as f:
            moodle = {r["student"]: r["gqa lab"] for r in csv.DictReader(f)}
        self.assertEqual([moodle["s1"], moodle["s4"], moodle["bin\\udce9"]], ["2", "", "0"])
        return rows, run.stdout

    def a_gradebook_a_spreadsheet_saved_resumes_with_its_seed_and_grades(self, before, first_run_summary):
        seed = before["alice.py"]["seed"]
        spreadsheet_saved(self.book, seed)
        again = self.run_class()
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("採点済みの提出物 4 件は、そのまま残しました", again.stderr)
        self.assertIn(f"シード {seed} (クラスの記録のもの)", again.stderr)
        self.assertEqual(rows_of(self.book), before)              # the same seed, the same grades
        # Without its record, the rounded seed is never taken, nor a new one drawn.
        os.remove(os.path.join(self.private.work, "g-class.json"))
        spreadsheet_saved(self.book, seed)
        with open(self.book, "rb") as f:
            saved = f.read()
        lost = self.run_class()
        self.assertEqual(lost.returncode, 2, lost.stderr)
        self.assertIn("--seed", lost.stderr)
        self.assertIn("E+17", lost.stderr)
        with open(self.book, "rb") as f:
            self.assertEqual(f.read(), saved)                     # nothing was written
        self.assertIn("各実行の最後の要約の 1 行目", lost.stderr)     # where the exact seed is
        self.assertIn(seed, first_run_summary.splitlines()[0])
        given = self.run_class("--seed", seed)        # each rounded cell is that seed's rounding:
        self.assertEqual(given.returncode, 0, given.stderr)          # every row kept
        self.assertIn("採点済みの提出物 4 件", given.stderr)
        self.assertEqual(rows_of(self.book), before)
        kept = self.run_class()                        # the record written anew keeps them all
        self.assertIn("採点済みの提出物 4 件", kept.stderr)
        again = self.run_class("--seed", str(int(seed) + 10 ** 9))  # another seed: graded again
        self.assertIn("[4/4]", again.stderr)

    def one_student_regraded_and_a_gradebook_without_its_feedback_refused(self):
        # The teacher's own column, added in a spreadsheet, and a name typed in where the roster
        # has none: kept by every run (a regrade dropped them in silence).
        with open(self.book, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
        at, name = rows[0].index("submission"), rows[0].index("name")
        notes = {"bob.py": "再提出を待つ\n来週", "alice.py": "=よくできました"}   # two lines, as Alt+Enter types
        rows = [rows[0] + ["教師メモ"]] + [r + [notes.get(r[at], "")] for r in rows[1:]]
        for r in rows[1:]:
            if r[at] == "bin\\udce9.py":
                r[name] = "佐藤 一郎"
        out = io.StringIO()
        csv.writer(out, lineterminator="\r\n").writerows(rows)
        with open(self.book, "wb") as f:
            f.write(b"\xef\xbb\xbf" + out.getvalue().encode("utf-8"))
        again = self.run_class("--regrade", "s2")
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("採点済みの提出物 3 件", again.stderr)
        self.assertIn("[1/1] s2:", again.stderr)
        kept = rows_of(self.book)
        self.assertEqual([kept[k]["教師メモ"] for k in ("bob.py", "alice.py", "carol.zip")],
                         ["再提出を待つ\n来週", "'=よくできました", ""])   # a formula's first character kept as text
        self.assertEqual(kept["bin\\udce9.py"]["name"], "佐藤 一郎")
        self.assertEqual(kept["alice.py"]["name"], "山田 花子")             # the roster's, as before
        # Run again without --only, --cases and --lang: the record's, so nothing is graded again,
        # in English and on every step (a rerun once regraded the whole class so, in two languages).
        # Its summary read by `| head`, which leaves at once: the statistics file is written all
        # the same (it was lost with the print).
        statistics = os.path.join(self.private.work, "g-statistics.txt")
        os.remove(statistics)
        bare = subprocess.Popen([sys.executable, os.path.join(self.private.dir, "grader.py"), "--class", "subs",
                                 "--gradebook", "g.csv", "--roster", "roster.csv"], cwd=self.private.work,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        bare.stdout.close()
        err = bare.stderr.read().decode("utf-8")
        self.assertIn(bare.wait(120), (0, 1), err)                  # 1: the reader left
        bare.stderr.close()
        self.assertIn("記録にあるオプションで採点します: --cases 2 --steps valid_g,kv_head --lang ja", err)
        self.assertIn("採点済みの提出物 4 件", err)
        self.assertNotIn("[1/", err)
        self.assertEqual(rows_of(self.book), kept)
        with open(statistics, encoding="utf-8") as f:
            self.assertIn("(成績表に記載。ここには書きません)", f.read())
        # A row graded again so is graded with the record's options too (its run was given
        # none of them: the gradebook said 2 steps, the student's feedback all 25).
        regraded = self.private.run("--class", "subs", "--gradebook", "g.csv", "--roster", "roster.csv",
                                    "--regrade", "s2")
        self.assertIn("[1/1] s2:", regraded.stderr)
        with open(os.path.join(self.private.work, "g-feedback", "bob.py", "results.json"), encoding="utf-8") as f:
            steps = {st["name"]: st for st in json.load(f)["steps"]}
        self.assertEqual(sorted(steps), ["kv_head", "valid_g"])
        self.assertEqual(steps["kv_head"]["hidden"][1], 2)                        # --cases 2
        self.assertEqual(steps["kv_head"]["summary"], "クエリヘッド i はキー・値ヘッド i // (h // g) を読む")   # was English
        with open(os.path.join(self.private.work, "g-feedback", "bob.py", "report.txt"), encoding="utf-8") as f:
            self.assertIn("ステップ  3  FAIL  kv_head", f.read())
        self.assertEqual({k: v for k, v in rows_of(self.book)["bob.py"].items() if k != "seconds"},
                         {k: v for k, v in kept["bob.py"].items() if k != "seconds"})
        wrong = self.run_class("--regrade", "s9")
        self.assertEqual(wrong.returncode, 2)
        self.assertIn("--regrade s9", wrong.stderr)
        shown = self.run_class("--regrade", "note\\udce9")       # the name as the gradebook shows it
        self.assertIn("[1/1] note\\udce9:", shown.stderr)
        nothing = self.run_class("--regrade", "s4")                # dan submitted nothing
        self.assertEqual(nothing.returncode, 2)
        self.assertIn("--regrade s4", nothing.stderr)
        # A submission gone from the folder (renamed, or left out of an export): its row, its grade
        # and the teacher's note kept, and said (they went without a word).
        before = rows_of(self.book)
        shutil.move(os.path.join(self.private.work, "subs", "bob.py"), os.path.join(self.private.work, "bob.py"))
        left = self.run_class()
        shutil.move(os.path.join(self.private.work, "bob.py"), os.path.join(self.private.work, "subs", "bob.py"))
        self.assertEqual(left.returncode, 0, left.stderr)
        self.assertIn("成績表の 1 行には、いまフォルダに提出物がありません: そのまま残しました (bob.py)", left.stderr)
        self.assertEqual(rows_of(self.book)["bob.py"], before["bob.py"])
        self.assertEqual(rows_of(self.book)["bob.py"]["教師メモ"], "再提出を待つ\n来週")
        self.assertIn("8 件の提出物のうち 8 件", left.stdout)             # the class's counts: the folder's
        shutil.move(os.path.join(self.private.work, "g-feedback"), os.path.join(self.private.work, "away"))
        with open(self.book, "rb") as f:
            saved = f.read()
        alone = self.run_class()
        self.assertEqual(alone.returncode, 2, alone.stderr)
        self.assertIn("g-feedback/", alone.stderr)
        with open(self.book, "rb") as f:
            self.assertEqual(f.read(), saved)


if __name__ == "__main__":
    unittest.main()
