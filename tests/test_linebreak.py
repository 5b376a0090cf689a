"""Where a line may break (gqa_grader.language.linebreak, UAX #14) and the lines filled with it:
--help's (i18n.wrapped), a starter's prose and strings (prose), a figure's notes (svg).
German breaks at its spaces and never inside a word, Japanese between its characters
but never before a small kana or a closing mark nor after an opening one, Korean at its
spaces; code stays whole.  The expected classes are UAX #14's (LineBreak.txt), written
here by hand."""

from __future__ import annotations

import random
import unittest

from gqa_grader.language import i18n, linebreak, prose
from gqa_tools import svg

GERMAN = ("Größenänderung der Schlüssel: die Köpfe für Abfragen teilen sich Schlüssel- und "
          "Wertköpfe, übrigens läuft die Prüfung für jeden Schritt außerhalb des Prüflings; "
          "Schlüsselgrößenänderungsmöglichkeiten überprüfen.")
JAPANESE = ("キー・値ヘッドを共有します（g は h を割り切ります）。「グループ」ごとにキャッシュを"
            "読みます。人々はショートカットとチョッキを使います。")
KOREAN = "쿼리 헤드 h개가 키·값 헤드 g개를 공유합니다(g는 h의 약수). 그룹마다 캐시를 읽습니다."

# Classes from UAX #14's LineBreak.txt (CJ, the small kana and ー, as the strict NS;
# Hangul as AL: Korean that breaks at spaces).
CLASSES = {"a": "AL", "Z": "AL", "ö": "AL", "ß": "AL", "λ": "AL", "ж": "AL", "#": "AL", "5": "NU",
           "٣": "NU", " ": "SP", "\u00a0": "GL", "\u200b": "ZW", "\u0301": "CM", "(": "OP", "[": "OP",
           "「": "OP", "（": "OP", ")": "CP", "]": "CP", "}": "CL", "」": "CL", "）": "CL", "、": "CL",
           "。": "CL", "，": "CL", "!": "EX", "?": "EX", "！": "EX", ",": "IS", ".": "IS", ":": "IS",
           ";": "IS", "/": "SY", "-": "HY", "|": "BA", "\u2013": "BA", "\u2014": "B2", "…": "IN",
           "%": "PO", "％": "PO", "$": "PR", "€": "PR", '"': "QU", "'": "QU", "«": "QU", "“": "QU",
           "ッ": "NS", "ャ": "NS", "ぁ": "NS", "ー": "NS", "々": "NS", "・": "NS", "：": "NS",
           "漢": "ID", "あ": "ID", "カ": "ID", "Ａ": "ID", "가": "AL", "ㄱ": "AL"}
NEVER_START = set("、。，．）」』】〕〉》ッャュョァィゥェォっゃゅょぁぃぅぇぉー々・：；！？)],.;:!?")
NEVER_END = set("（「『【〔〈《([")


def words_whole(text, lines, joiner=" "):
    """Whether lines are text broken only at its spaces."""
    return joiner.join(line.strip() for line in lines) == " ".join(text.split())


class Classes(unittest.TestCase):

    def test_the_classes_are_uax_14s(self):
        self.assertEqual({ch: linebreak.line_class(ch) for ch in CLASSES}, CLASSES)

    def test_a_combining_mark_takes_its_bases_class_and_stays_with_it(self):
        text = "cafe\u0301 de\u0301ja\u0300"                     # é and à as a letter and its accent
        self.assertEqual(linebreak.classes(text)[4], "AL")
        self.assertEqual(linebreak.breaks(text), [6])


class Breaks(unittest.TestCase):

    def test_a_german_word_is_never_broken(self):
        self.assertEqual([p.strip() for p in linebreak.pieces(GERMAN)], GERMAN.split())
        self.assertEqual(linebreak.pieces("Größenänderung der Schlüssel"), ["Größenänderung ", "der ", "Schlüssel"])

    def test_words_of_any_alphabet_break_only_at_spaces(self):
        letters = "abcdefghijklmnopqrstuvwxyzäöüßéèêçñøåœłžčşğıαβγδεζηθλμπστφχψωабвгдежзийклмнопрстуфхцчшщыэюя"
        rng = random.Random(48)
        for _ in range(200):
            words = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(1, 8))]
            text = " ".join(words)
            with self.subTest(text=text):
                self.assertEqual([p.strip() for p in linebreak.pieces(text)], words)

    def test_japanese_breaks_between_characters_but_at_its_marks(self):
        cut = linebreak.breaks(JAPANESE)
        self.assertGreater(len(cut), len(JAPANESE) // 2)                  # between most characters
        for i in cut:
            with self.subTest(at=JAPANESE[i - 1:i + 1]):
                self.assertNotIn(JAPANESE[i], NEVER_START)
                self.assertNotIn(JAPANESE[i - 1], NEVER_END)
        kanji = [i for i in range(1, len(JAPANESE)) if JAPANESE[i - 1] in "共有読" and JAPANESE[i] in "有しみ"]
        self.assertTrue(set(kanji) <= set(cut) and kanji)

    def test_korean_breaks_at_its_spaces(self):
        self.assertEqual([p.strip() for p in linebreak.pieces(KOREAN)], KOREAN.split())

    def test_code_options_ranges_paths_and_shapes_stay_whole(self):
        text = "--all-or-nothing 1-8,14-19 a/b [h][n][d] kv_head(i, h, g) 2.5% $3 x_t[0]"
        self.assertEqual([p.strip() for p in linebreak.pieces(text)], text.split())

    def test_an_option_after_japanese_may_start_a_line(self):
        self.assertEqual(linebreak.pieces("採点し、--gradebook に"), ["採", "点", "し、", "--gradebook ", "に"])

    def test_a_japanese_stop_hangs_a_latin_comma_does_not(self):
        self.assertEqual([linebreak.core(p) for p in ("す)。", "ッ", "value, ", "값, ", "query_head。")],
                         ["す", "ッ", "value,", "값,", "query_head"])


class Filled(unittest.TestCase):
    """The lines each filler makes: German at its spaces in all of them."""

    def test_help_wraps_german_at_its_spaces(self):
        for columns in (12, 20, 33, 50):
            lines = i18n.wrapped(GERMAN, columns)
            with self.subTest(columns=columns):
                self.assertTrue(words_whole(GERMAN, lines), lines)
                self.assertLessEqual(max(i18n.width(line) for line in lines),
                                     max(columns, max(len(w) for w in GERMAN.split())))

    def test_a_starters_paragraph_and_string_wrap_german_at_its_spaces(self):
        for columns in (20, 40, 60):
            lines = prose._wrap(GERMAN, columns, "# ", "# ")
            with self.subTest(columns=columns):
                self.assertTrue(words_whole(GERMAN, [line[2:] for line in lines]), lines)
        chunks = [line.split('"')[1] for line in prose._string_lines("    raise NotImplementedError(", GERMAN, ")")]
        self.assertGreater(len(chunks), 1)
        self.assertTrue(all(chunk.endswith(" ") for chunk in chunks[:-1]), chunks)
        self.assertEqual("".join(chunks), GERMAN)

    def test_a_figures_note_breaks_german_at_its_spaces(self):
        self.assertEqual([p.strip() for p in svg._pieces(GERMAN)], GERMAN.split())

    def test_help_lines_fit_and_japanese_keeps_its_marks(self):
        for columns in (10, 17, 24, 40):
            lines = i18n.wrapped(JAPANESE, columns)
            with self.subTest(columns=columns):
                self.assertEqual("".join(lines).replace(" ", ""), JAPANESE.replace(" ", ""))
                for line in lines:
                    self.assertLessEqual(i18n.width(line.rstrip("".join(NEVER_START))), columns, line)
                    self.assertLessEqual(i18n.width(line), columns + 4, line)        # two marks hang at most
                    self.assertNotIn(line[0], NEVER_START, lines)
                    self.assertNotIn(line[-1], NEVER_END, lines)

    def test_korean_help_lines_break_at_spaces_and_fit(self):
        for columns in (14, 21, 30):
            lines = i18n.wrapped(KOREAN, columns)
            with self.subTest(columns=columns):
                self.assertTrue(words_whole(KOREAN, lines), lines)
                self.assertLessEqual(max(i18n.width(line) for line in lines), columns, lines)


if __name__ == "__main__":
    unittest.main()
