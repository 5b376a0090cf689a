"""Where a line may break, in any script: the Unicode line breaking algorithm (UAX #14).

pieces(text) cuts text where a line may end: each piece is what must stay on one line
with the spaces after it, and "".join(pieces(text)) == text.  The starter's prose and
its strings (gqa_grader.language.prose), --help (gqa_grader.language.i18n.wrapped) and the figures' notes
(gqa_tools.svg) fill their lines with these pieces, each counting widths its own way;
the text's lines let a Japanese stop or closing mark hang past the line's end (core()),
a figure's do not.
So German breaks at its spaces and never inside "Größenänderung", Japanese between any
two characters but never before a small kana or a closing mark nor after an opening
one, and Korean at its spaces.

The classes.  The standard library has no table of the line breaking property
(LineBreak.txt), so line_class() derives the classes from what unicodedata gives,
and from short lists where the category cannot tell (_LISTED):

    SP  white space (str.isspace), but for the no-break spaces
    GL  no-break spaces (U+00A0, U+2007, U+202F);  WJ  word joiner, U+FEFF;  ZW  U+200B
    CM  combining marks (categories Mn, Mc, Me) and the zero width joiner
    OP  opening punctuation (category Ps), and ¡ ¿;  CL  closing punctuation (Pe), and
        the ideographic comma and full stop (、。，．, category Po);  CP  ) and ]
    QU  quotation marks (Pi, Pf, and the ASCII " and ')
    NS  what a Japanese line never starts with: the small kana, ー, 々, ゝ, ヽ, ・, ：, ；
        (their UAX #14 class CJ resolved as NS: strict breaking, as JIS X 4051)
    EX  ! ? and their full-width forms;  IS  , . : ;;  SY  /;  HY  -
    BA  | and the hyphens and dashes U+2010 to U+2013, the soft hyphen;  B2  the em dash
    IN  … and ‥;  PR  currency signs (Sc) and + \\;  PO  % ‰ ° ′ ″ ℃ ¢ and ％
    NU  decimal digits (Nd)
    ID  the rest of what is wide (east_asian_width W or F): kanji, kana, full-width forms
    AL  everything else: letters of the alphabets, other symbols and punctuation

The rules followed (UAX #14 section 6, by number), between the character before a
position and the one after it:

    LB7   no break before a space or ZW;  LB8  a break after ZW (and the spaces after it)
    LB9   a combining mark stays with its base and takes its class;  LB10  one with no
          base (first, or after a space) is AL;  LB8a  no break after a zero width joiner
    LB11  no break beside WJ;  LB12  none after GL;  LB12a  none before GL but after a
          space, BA or HY
    LB13  no break before CL, CP, EX, IS or SY
    LB14  none after OP, spaces between or not;  LB15  none between QU and OP, spaces
          between or not;  LB16  none between CL or CP and NS, spaces between or not;
          LB17  none between two B2, spaces between or not
    LB18  a break after spaces
    LB19  no break before or after QU
    LB21  no break before BA, HY or NS;  LB22  none before IN
    LB23  none between a letter and a digit;  LB23a  none between PR and ID, nor
          between ID and PO;  LB24  none between PR or PO and a letter
    LB25  numbers: none in PR NU, PO NU, PR OP NU, PO OP NU, OP NU, HY NU, NU NU, NU SY,
          NU IS, SY NU, IS NU, and before PR or PO after NU, CL or CP
    LB28  none between two letters (AL);  LB29  none in IS AL;  LB30  none in AL OP or
          NU OP (OP not wide), nor in CP AL or CP NU
    LB31  a break everywhere else

Tailorings and simplifications (each one UAX #14 allows, or a case our text never has):

  - A word is never broken: no break between two characters where neither is a space
    nor wide punctuation, nor of class ID, NS or ZW.  The texts are full of code,
    options, ranges, paths and shapes (--all-or-nothing, 1-8,14-19, a/b, [h][n][d]);
    UAX #14 would break after a hyphen, a slash or a closing bracket there (LB21,
    LB31), which suits prose and breaks code.
  - A hyphen after a wide character may start a line (LB21 keeps it with what is
    before it): the option in "で、--cases は" is a word of its own.
  - Korean is written with spaces between its words, and breaks there: its syllables
    and jamo (U+1100-U+11FF, U+3130-U+318F, U+A960-U+A97F, U+AC00-U+D7A3,
    U+D7B0-U+D7FF) are AL, as UAX #14 suggests for Korean that breaks at spaces
    (section 5.4; CSS's word-break: keep-all), not H2, H3, JL, JV, JT.
  - A mandatory break (BK, CR, LF, NL) is a space: a paragraph's lines are joined
    before it is filled again.
  - AI, SA, SG, XX, CB, and HL are AL (LB1, without a dictionary for Thai and its
    neighbours: they break at spaces); RI and the emoji classes (EB, EM) are ID or AL
    by their width, without LB30a and LB30b.  LB19 is the rule before Unicode 15.1
    (no break beside any quotation mark); LB15a-d, LB20, LB20a, LB21a, LB21b and LB28a
    (Hebrew, the Brahmic scripts' clusters, and a hyphen at a word's start) are not
    followed.  The texts have none of these.
"""

import functools
import unicodedata

_LISTED = {}
for _chars, _class in (("\u00a0\u2007\u202f", "GL"), ("\u2060\ufeff", "WJ"), ("\u200b", "ZW"),
                       ("\u200d", "CM"), ("¡¿", "OP"), ("、。，．｡､", "CL"), (")]", "CP"), ("\"'", "QU"),
                       ("ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶーｧｨｩｪｫｬｭｮｯｰ"
                        "\u31f0\u31f1\u31f2\u31f3\u31f4\u31f5\u31f6\u31f7\u31f8\u31f9\u31fa\u31fb\u31fc\u31fd\u31fe\u31ff"
                        "々〻ゝゞヽヾ゛゜゠・･：；〜", "NS"),
                       ("!?！？‼⁇⁈⁉", "EX"), (",.:;", "IS"), ("/", "SY"), ("-", "HY"),
                       ("|\u00ad\u2010\u2012\u2013", "BA"), ("\u2014", "B2"), ("…‥", "IN"), ("+\\", "PR"),
                       ("%‰‱°′″℃¢％", "PO")):
    _LISTED.update(dict.fromkeys(_chars, _class))
del _chars, _class

_KOREAN = ((0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xAC00, 0xD7A3), (0xD7B0, 0xD7FF))


@functools.lru_cache(maxsize=4096)
def line_class(ch):
    """ch's line breaking class, as this module's docstring derives it."""
    listed = _LISTED.get(ch)
    if listed:
        return listed
    if ch.isspace():
        return "SP"
    category = unicodedata.category(ch)
    if category in ("Mn", "Mc", "Me"):
        return "CM"
    if any(low <= ord(ch) <= high for low, high in _KOREAN):
        return "AL"
    if category == "Nd":
        return "NU"
    if category in ("Ps", "Pe", "Pi", "Pf", "Sc"):
        return {"Ps": "OP", "Pe": "CL", "Pi": "QU", "Pf": "QU", "Sc": "PR"}[category]
    return "ID" if unicodedata.east_asian_width(ch) in "WF" else "AL"


# A word's characters (the first tailoring): never broken between.
_WORD = {"AL", "NU", "HY", "BA", "B2", "SY", "IS", "CP", "CL", "OP", "QU", "EX", "PR", "PO", "IN", "GL", "WJ"}
# Pairs (before, after) with no break between (LB23 to LB30, LB25 as pairs).
_KEPT = {("AL", "NU"), ("NU", "AL"), ("PR", "ID"), ("ID", "PO"), ("PR", "AL"), ("PO", "AL"), ("AL", "PR"),
         ("AL", "PO"), ("PR", "NU"), ("PO", "NU"), ("OP", "NU"), ("HY", "NU"), ("NU", "NU"), ("NU", "SY"),
         ("NU", "IS"), ("SY", "NU"), ("IS", "NU"), ("NU", "PO"), ("NU", "PR"), ("CL", "PO"), ("CP", "PO"),
         ("CL", "PR"), ("CP", "PR"), ("AL", "AL"), ("IS", "AL"), ("CP", "AL"), ("CP", "NU")}


def _wide(ch):
    return unicodedata.east_asian_width(ch) in "WF"


def _word(ch, cls):
    """Whether ch is a word's character (the first tailoring): not a space, not of class ID
    or NS, not wide punctuation (a Korean syllable is wide, and a letter)."""
    return cls in _WORD and (cls == "AL" or not _wide(ch))


def classes(text):
    """The class each character of text breaks by: its own, a combining mark its base's
    (LB9), or AL where it has none (LB10)."""
    out = []
    for ch in text:
        cls = line_class(ch)
        if cls == "CM":
            cls = out[-1] if out and out[-1] not in ("SP", "ZW") else "AL"
        out.append(cls)
    return out


def _breaks_before(text, cls, i, last):
    """Whether a line may break before text[i]: cls the classes, last the index of the
    last character before i that is not a space (or -1)."""
    a, b = cls[i - 1], cls[i]
    if b in ("SP", "ZW") or line_class(text[i]) == "CM" and a not in ("SP", "ZW"):
        return False                                            # LB7, LB9
    if last >= 0 and cls[last] == "ZW":
        return True                                             # LB8
    if text[i - 1] == "\u200d" or "WJ" in (a, b) or a == "GL" or b == "GL" and a not in ("SP", "BA", "HY"):
        return False                                            # LB8a, LB11, LB12, LB12a
    if b in ("CL", "CP", "EX", "IS", "SY"):
        return False                                            # LB13
    before = cls[last] if last >= 0 else None
    if before == "OP" or (before, b) in (("QU", "OP"), ("CL", "NS"), ("CP", "NS"), ("B2", "B2")):
        return False                                            # LB14 to LB17
    if a == "SP":
        return True                                             # LB18
    if b == "HY" and _wide(text[i - 1]):
        return True                                             # the hyphen of an option after Japanese
    if "QU" in (a, b) or b in ("BA", "HY", "NS", "IN"):
        return False                                            # LB19, LB21, LB22
    if (a, b) in _KEPT or b == "OP" and a in ("AL", "NU") and not _wide(text[i]):
        return False                                            # LB23 to LB30
    if a in ("PR", "PO") and b == "OP" and i + 1 < len(text) and cls[i + 1] == "NU":
        return False                                            # LB25: PR OP NU
    return not (_word(text[i - 1], a) and _word(text[i], b))   # the first tailoring, else LB31


def breaks(text):
    """The positions i (0 < i < len(text)) where a line of text may end before text[i]."""
    cls = classes(text)
    found, last = [], -1
    for i in range(1, len(text)):
        if cls[i - 1] != "SP":
            last = i - 1
        if _breaks_before(text, cls, i, last):
            found.append(i)
    return found


def pieces(text):
    """text cut where a line may end (breaks): each piece what stays on one line, the
    spaces after it included."""
    cuts = [0] + breaks(text) + [len(text)]
    return [text[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


_HANGING = {"CL", "CP", "EX", "IS", "NS"}


def core(piece):
    """What of a piece must fit in its line: the piece without the spaces after it, nor
    the marks that no line may start with at its end (two at most), when they are wide
    (、。」！) or follow a Chinese or Japanese character: those may pass the line's end,
    JIS X 4051's hanging punctuation (ぶら下げ), rather than take a character down with
    them.  Not in a word of letters: "value," fits whole."""
    text = piece.rstrip()
    end = len(text)
    while end > max(1, len(text) - 2) and line_class(text[end - 1]) in _HANGING and (
            _wide(text[end - 1]) or line_class(text[end - 2]) in ("ID", "NS")):
        end -= 1
    return text[:end]
