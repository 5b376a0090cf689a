"""The lab's classic mistakes, named: each planted into the correct gqa.py (a text
replacement, as test_grader's MUTANTS are), the step that must catch it fails, and its
feedback names the mistake, in English, Japanese and Korean, on a public case and on a
hidden one (whose inputs and answer stay withheld)."""

from __future__ import annotations

import json
import os
import tempfile
import unittest

from gqa_grader.verdict import grading
from gqa_grader.language import i18n
from gqa_grader.expected import mistakes
from gqa_grader.steps.tracks import BY_NAME
from tests.grader_support import mutate
from tests.helpers import ROOT, heavy

with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as _f:
    SOURCE = _f.read()

SCALE = "scale, exp = 1.0 / math.sqrt(len(q[0])), math.exp"
MEMBERS = "members = kv[j * group:(j + 1) * group]"
PAIRS = "pairs = n * (n + 1) // 2 if causal else n * n"
RATIO = "c / r if r else 1.0 for c, r in zip(counts, mha)"

# (the mistake's key, the step that must name it, text in gqa.py, its replacement)
PLANTED = [
    ("strided", "kv_head", "_kv_head", "return query_head // group", "return query_head % g"),
    ("strided", "group_heads", "group_heads", "return [list(range(j * group, (j + 1) * group)) for j in range(g)]",
     "return [list(range(j, h, g)) for j in range(g)]"),
    ("strided", "fold_kv_mean", "_fold_kv_mean", MEMBERS, "members = kv[j::g]"),
    ("strided", "grouped_attention",
     "_grouped_attention", "j = _kv_head(i, h, g)                               # the key/value head query head i reads", "j = i % g"),
    ("tiled", "repeat_kv", "_repeat_kv", "return [kv[_kv_head(i, h, g)] for i in range(h)]",
     "return [kv[i % g] for i in range(h)]"),
    ("sum", "fold_kv_mean", "_mean", "mean = sum(vals) / n\n", "mean = sum(vals)\n"),
    ("sum", "attention", "_mean", "mean = sum(vals) / n\n", "mean = sum(vals)\n"),
    ("sum", "fold_weights", "_mean", "mean = sum(vals) / n\n", "mean = sum(vals)\n"),
    ("first", "fold_kv_mean", "_fold_kv_mean", MEMBERS, "members = [kv[j * group]] * group"),
    ("first", "attention", "_fold_kv_mean", MEMBERS, "members = [kv[j * group]] * group"),
    ("first", "fold_weights", "_fold_kv_mean", MEMBERS, "members = [kv[j * group]] * group"),
    ("k_only", "attention", "attention", "v_rep = _repeat_kv(_fold_kv_mean(v, g), h)", "v_rep = v"),
    ("unscaled", "single_head_attention", "_softmax", SCALE, "scale, exp = 1.0, math.exp"),
    ("unscaled", "grouped_attention", "_softmax", SCALE, "scale, exp = 1.0, math.exp"),
    ("scale_d", "single_head_attention", "_softmax", SCALE, "scale, exp = 1.0 / len(q[0]), math.exp"),
    ("scale_dv", "single_head_attention", "_single_head_attention", "for e, z in _softmax(q, keys, causal):",
     "for e, z in _softmax([[x * math.sqrt(len(q[0]) / len(v_cols)) for x in r] for r in q], keys, causal):"),
    ("no_offset", "single_head_attention", "_softmax", "seen = i + 1 + m - n if causal else m", "seen = i + 1 if causal else m"),
    ("no_2", "kv_cache_elements", "_kv_cache_elements", "return 2 * layers * kv_heads * length * head_dim * batch",
     "return layers * kv_heads * length * head_dim * batch"),
    ("no_batch", "kv_cache_elements", "_kv_cache_elements", "return 2 * layers * kv_heads * length * head_dim * batch",
     "return 2 * layers * kv_heads * length * head_dim"),
    ("kv_h", "attention_multiplies", "_attention_multiplies", "k_proj=n * d_model * g * d,\n                       v_proj=n * d_model * g * d,",
     "k_proj=n * d_model * h * d,\n                       v_proj=n * d_model * h * d,"),
    ("body_g", "attention_multiplies", "_attention_multiplies", "v_proj=n * d_model * g * d, scores=h * pairs * d,\n"
     "                       weighted_sum=h * pairs * d,", "v_proj=n * d_model * g * d, scores=g * pairs * d,\n"
     "                       weighted_sum=g * pairs * d,"),
    ("causal_full", "attention_multiplies", "_attention_multiplies", PAIRS, "pairs = n * n"),
    ("causal_strict", "attention_multiplies", "_attention_multiplies", PAIRS, "pairs = n * (n - 1) // 2 if causal else n * n"),
    ("block_non_causal", "block_multiplies",
     "block_multiplies", "a = _attention_multiplies(n, h, g, d, d_model, _check_causal(func, causal))",
     "_check_causal(func, causal)\n    a = _attention_multiplies(n, h, g, d, d_model, False)"),
    ("inverted", "cache_table", "cache_table", "elements / mha if mha else 1.0))", "mha / elements if mha else 1.0))"),
    ("named", "cache_table", "cache_table", "rows.append(CacheRow(_method_name(h, g),", "rows.append(CacheRow(_method_name(h, h // g),"),
    ("inverted", "multiplies_table", "multiplies_table", RATIO, "r / c if c else 1.0 for c, r in zip(counts, mha)"),
    ("of_total", "multiplies_table", "multiplies_table", RATIO, "c / mha.total if mha.total else 1.0 for c, r in zip(counts, mha)"),
    ("named", "multiplies_table", "multiplies_table", "rows.append(MultipliesRow(_method_name(h, g),",
     "rows.append(MultipliesRow(_method_name(h, h // g),"),
]
LANGS = tuple(i18n.LANGUAGES)            # the registry's
SEED = 424242


def planted(where, old, new):
    """gqa.py with old replaced by new in the function where (mutate's anchoring)."""
    return mutate(where, old, new)


def graded():
    """For each planted mistake: its step's result in each language, on the public cases
    stopped at the first failing one (as -x does; in English every case too), and on the
    first hidden case that fails, withheld as a class's feedback withholds it."""
    found = []
    with grading.Trusted() as trusted, tempfile.TemporaryDirectory() as folder:
        for k, (_key, step, where, old, new) in enumerate(PLANTED):
            path = os.path.join(folder, f"m{k}", "gqa.py")
            os.makedirs(os.path.dirname(path))
            with open(path, "w", encoding="utf-8") as f:
                f.write(planted(where, old, new))
            runs = {}
            hidden_case, in_english = hidden_case_of(trusted, path, step)
            for lang in LANGS:
                i18n.use(lang)
                try:
                    runs[lang] = {
                        "fast": trusted.grade(path, SEED, cases=0, only=[step], fail_fast=True)[0],
                        "hidden": grading.withhold_hidden(     # English's: the very run that found the case
                            in_english if lang == "en" else
                            trusted.grade(path, SEED, only=[step], case=hidden_case))[0],
                    }
                    if lang == "en":                 # every case: the one shown is a recognised one
                        runs[lang]["whole"] = trusted.grade(path, SEED, cases=2, only=[step])[0]
                finally:
                    i18n.use("en")
            found.append(runs)
    return found


def hidden_case_of(trusted, path, step):
    """The first of the step's hidden cases that the module fails, and its grade (in English)."""
    end = grading.public_end(BY_NAME[step])
    i18n.use("en")
    for k in range(end, end + 20):
        results = trusted.grade(path, SEED, only=[step], case=k)
        if results[0].status == "failed":
            return k, results
    raise AssertionError(f"no hidden case of {step} fails")


def name_in(lang, key):
    """The mistake's name as the language writes it (its catalog's, translated here from
    the .mo by gettext itself, not by the grader's lookup)."""
    import gettext
    name = mistakes.MISTAKES[key][0]
    if lang == "en":
        return name
    return gettext.translation("gqa", i18n.registered(lang).locale, languages=[lang]).gettext(name)


@heavy
class Named(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.runs = graded()

    def test_every_mistake_is_in_the_catalogue_and_planted(self):
        self.assertEqual(sorted(set(mistakes.MISTAKES)), sorted({key for key, *_rest in PLANTED}))

    def test_each_planted_mistake_fails_its_step_and_is_named(self):
        for (key, step, *_), runs in zip(PLANTED, self.runs):
            for lang in LANGS:
                name = name_in(lang, key)
                for how, r in runs[lang].items():
                    with self.subTest(mistake=key, step=step, lang=lang, run=how):
                        self.assertEqual(r.status, "failed", r.message)
                        self.assertEqual(r.mistake, key, r.message)
                        self.assertIn(name, r.message)
                        if lang != "en":
                            self.assertNotIn(mistakes.MISTAKES[key][0], r.message)

    def test_a_hidden_case_names_the_mistake_and_withholds_the_case(self):
        for (key, step, *_), runs in zip(PLANTED, self.runs):
            r = runs["en"]["hidden"]
            with self.subTest(mistake=key, step=step):
                self.assertIsNone(r.inputs)
                self.assertIsNone(r.show)
                self.assertNotIn("expected:", r.message)
                self.assertNotIn("got:", r.message)
                self.assertIn("withheld", r.message)

    def test_the_scale_is_named_on_the_first_case_shown(self):
        # Dividing by d failed first on a causal case: the feedback pointed at the mask.
        for (key, step, *_), runs in zip(PLANTED, self.runs):
            if key in ("unscaled", "scale_d", "scale_dv"):
                with self.subTest(mistake=key, step=step):
                    self.assertIn(mistakes.MISTAKES[key][0], runs["en"]["fast"].message.splitlines()[-1])


if __name__ == "__main__":
    unittest.main()


class Statuses(unittest.TestCase):
    """What a run says agrees with itself: the command that repeats it is the one typed,
    a part with no case is not a PASS, a withheld hidden case says where its step's hidden
    cases come from, and points beside a FAIL say what they are."""

    def parsed(self, argv, environ=None):
        from unittest import mock
        from gqa_grader import cli
        env = {k: v for k, v in os.environ.items() if k not in i18n.ENVIRONMENT}
        env.update(environ or {})
        with mock.patch.dict(os.environ, env, clear=True):
            try:
                return cli.parse_args(argv)
            finally:
                i18n.use("en")

    def test_a_rerun_repeats_the_option_typed_and_the_environments_language(self):
        from gqa_grader.verdict.printing import reproduce
        for typed in ("--only", "--steps", "--onl"):
            args = self.parsed([typed, "kv_head,5", "--seed", "3"])
            full = "--only" if typed.startswith("--o") else "--steps"
            self.assertIn(f" {full} kv_head,5", reproduce(args))
        args = self.parsed(["--only", "3", "--seed", "3"], {"LANG": "ko_KR.UTF-8"})
        self.assertTrue(reproduce(args).endswith("--lang ko"), reproduce(args))
        self.assertNotIn("--lang", reproduce(self.parsed(["--only", "3", "--seed", "3"])))

    def test_an_option_the_starter_does_not_use_is_refused(self):
        from gqa_grader import cli
        from tests.helpers import captured
        with tempfile.TemporaryDirectory() as folder:
            status, _out, err = captured(cli.main, ["--starter", os.path.join(folder, "s"),
                                                    "--module", os.path.join(ROOT, "gqa.py")])
            self.assertEqual(status, 2)
            self.assertIn("--module", err)
            self.assertFalse(os.path.exists(os.path.join(folder, "s", "gqa.py")))

    def test_an_option_that_list_or_starter_does_not_use_is_refused_in_the_students_language(self):
        from gqa_grader import cli
        from tests.helpers import captured
        with tempfile.TemporaryDirectory() as folder:
            starter = os.path.join(folder, "s")
            for argv, refused in ((["--list", "--steps", "core"], "--steps"), (["--list", "--show"], "--show"),
                                  (["--starter", starter, "--seed", "3"], "--seed"),
                                  (["--starter", starter, "--cases", "0", "--lang", "ja"], "--cases"),
                                  (["--starter", starter, "--timeout", "2", "--lang", "ko"], "--timeout"),
                                  (["--class", folder, "--gradebook", os.path.join(folder, "g.csv"), "--verbose"],
                                   "--verbose")):
                status, out, err = captured(cli.main, argv)
                self.assertEqual((status, out), (2, ""), argv)
                said = err.strip().splitlines()[-1]
                self.assertIn(refused, said)
                self.assertIn({"ja": "一緒には使いません", "ko": "함께 쓰지 않는 옵션입니다"}.get(
                    argv[-1], "--verbose (it prints no wall time)" if "--class" in argv else "is not used with it"),
                    said)
            self.assertEqual(os.listdir(folder), [])                    # no starter written
            # What --list and --starter do use is still theirs.
            self.assertEqual(captured(cli.main, ["--list", "--json", "--lang", "ja"])[0], 0)
            self.assertEqual(captured(cli.main, ["--starter", starter, "--steps", "core", "--lang", "ko"])[0], 0)

    def test_quiet_beside_a_document_is_said_to_be_unused(self):
        from gqa_grader import cli
        from tests.helpers import captured
        status, out, err = captured(cli.main, ["--json", "-q", "--steps", "1", "--cases", "0", "--seed", "1"])
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out)["steps"][0]["name"], "valid_g")     # the document, whole
        self.assertIn("grader: --quiet is for the text report, and is not used: --json prints one document, "
                      "whole\n", err)

    def test_a_part_with_no_case_is_not_graded_as_a_pass(self):
        results = grading.grade(os.path.join(ROOT, "gqa.py"), 1, cases=0, only=["valid_g", "extremes", "types"])
        public = grading.public_end(BY_NAME["valid_g"])
        self.assertEqual([(r.name, r.cases) for r in results], [("valid_g", public), ("types", 1)])

    def result(self, **fields):
        from gqa_grader.verdict.results import StepResult
        st = BY_NAME[fields.get("name", "kv_head")]
        base = dict(step=st.number, name=st.name, part="lesson", summary=st.summary, status="failed",
                    cases=65, cases_passed=40, public=(35, 60), hidden=(5, 5), message="case 6: wrong",
                    case=grading.public_end(st) + 1, points=1.0, max_points=1.0)
        base.update(fields)
        return StepResult(**base)

    def test_a_withheld_hidden_case_says_what_hidden_cases_draw_from(self):
        r = grading.withhold_hidden([self.result(hidden=(4, 5), points=0.8)])[0]
        self.assertIn("17 <= h <= 32", r.message)         # kv_head's public cases stop at h = 16
        self.assertNotIn("wrong", r.message)

    def test_points_beside_a_fail_say_what_they_are(self):
        import argparse
        from gqa_grader.verdict import documents, printing
        r = self.result(message="case 6: wrong\nexpected: 1")
        args = argparse.Namespace(case=None, cases=5, all_or_nothing=False)
        text = printing.summary([r], args)
        self.assertIn("1 failed step earns points: kv_head 1/1", text)
        test = documents.classroom_result([r], args)["tests"][0]
        self.assertEqual((test["status"], test["score"]), ("fail", 1.0))
        self.assertTrue(test["message"].startswith("1 of 1 points"), test["message"])
