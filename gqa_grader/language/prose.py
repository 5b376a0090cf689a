"""gqa_grader.language.prose: a starter's prose in the student's language.

translated(text, lang) rewrites the prose of a starter (gqa_grader.language.starter's text):
each docstring's paragraphs and each block of whole-line comments, from the catalog
locale/<lang>/LC_MESSAGES/starter.po, and leaves everything else as it is: names,
code, the doctest examples (so the doctests still pass), the names, letters and
shapes in tables (what a row describes is prose, its columns lined up again); an
inline comment's words are prose too.  A paragraph's message id is its text with its lines
joined by single spaces; a list item ("- ...") is a paragraph of its own.  The
translation is wrapped again to the paragraph's width, counting a Japanese or Korean
character as two columns, never breaking a word of Latin letters or a piece of code.
A paragraph the catalog lacks stays English (tests/test_i18n checks that none does).

paragraphs(text) gives the message ids a starter's text asks for.
"""

import ast
import re

from .i18n import translation, width
from .linebreak import core, line_class, pieces

DOMAIN = "starter"
_BULLET = re.compile(r"- ")


def _is_prose(lines):
    """Lines (a paragraph, or a list item without its "- " and its continuation
    indent) are prose unless they are code, a doctest or a table: indented, a line of
    >>> or ..., or columns lined up by runs of spaces."""
    return all(line and not line[0].isspace() and not line.startswith((">>>", "...")) and "   " not in line
               for line in lines)


def _split(block):
    """A block of lines (no blank one) as its parts: the lines before the first list
    item, then each item ("- " and the lines indented by two spaces after it)."""
    parts, part = [], []
    for line in block:
        if line.startswith("- ") and (part or parts):
            parts.append(part)
            part = []
        part.append(line)
    parts.append(part)
    return [p for p in parts if p]


def _units(lines):
    """Dedented lines (a docstring's or a comment block's) as units: (kind, lines),
    kind "prose" (a paragraph, or one list item) or "keep" (the rest, blank lines too)."""
    units, block = [], []

    def flush():
        for part in _split(block):
            item = part[0].startswith("- ")
            body = [part[0][2:]] + [line[2:] if line.startswith("  ") and not line.startswith("   ") else " " + line
                                    for line in part[1:]] if item else part
            units.append(("prose" if _is_prose(body) else "keep", part))
        block.clear()
    for line in lines:
        if line.strip():
            block.append(line)
        else:
            flush()
            units.append(("keep", [line]))
    flush()
    return units


def _message(lines):
    """A prose unit's message id: its lines joined by single spaces (a list item's
    "- " and continuation indent are not part of it)."""
    text = " ".join(line.strip() for line in lines)
    return text[2:] if lines[0].startswith("- ") else text


def _wrap(text, columns, first, rest):
    """text in lines of at most columns display columns (after first or rest), broken
    where linebreak lets a line end (at spaces, between the characters of a wide
    script, never inside a word of letters or a piece of code); in text written without
    spaces (kanji and kana), near a line's end rather after a punctuation mark or where
    a run of hiragana ends (_soft_break)."""
    lines, line, used, cuts = [], first, width(first), []
    unspaced = any(line_class(c) == "ID" for c in text)
    for piece in pieces(" ".join(text.split())):
        if used + width(core(piece)) > columns and line.strip() and line != first:
            start = len(rest if lines else first)
            cut = (_soft_break(line, [c for c in cuts if c > start + 1], piece, width(line) > columns)
                   if unspaced else len(line))
            lines.append(line[:cut].rstrip())
            line = rest + line[cut:]
            cuts = [c - cut + len(rest) for c in cuts if c > cut]
            used = width(line)
        cuts.append(len(line))
        line += piece
        used += width(piece)
    lines.append(line.rstrip())
    return lines


_SOFT_AFTER = set("、。，．）」』】 ")
_HIRAGANA = re.compile("[\u3041-\u309f]")
_KATAKANA = re.compile("[\u30a1-\u30fa]")


def _soft_break(line, cuts, after, spaced_out):
    """Where to end line when the piece after does not fit: at its end, or at one of cuts
    (where a line may end) up to 10 characters back, after a punctuation mark, a space
    or a run of hiragana (its particle), else after a run of katakana, so that a word of
    kana is not split and no line holds only a word's last character.  spaced_out: the
    space at the line's end does not fit either, and the line ends at the word before it."""
    end = len(line.rstrip()) if spaced_out else len(line)
    for strong in (True, False):
        for cut in [len(line)] + [c for c in reversed(cuts) if c > len(line) - 10]:
            before = line[(end if cut == len(line) else cut) - 1]
            then = line[cut] if cut < len(line) else line[end] if end < len(line) else after[0]
            if (before in _SOFT_AFTER or (_HIRAGANA.match(before) and not _HIRAGANA.match(then)) if strong
                    else _KATAKANA.match(before) and _HIRAGANA.match(then)):
                return cut
    return len(line)


def _rewrite(lines, indent, translate):
    """Dedented lines (a docstring's or a comment block's) with their prose translated."""
    out = []
    for kind, unit in _units(lines):
        if kind == "keep":
            out += _grid_rows(unit, translate) or [_row(line, translate) for line in unit]
            continue
        message = _message(unit)
        text = translate(message)
        if text == message:
            out += unit
            continue
        columns = max(max(width(line) for line in unit), 60) + len(indent)
        bullet = unit[0].startswith("- ")
        out += [line[len(indent):] for line in _wrap(text, columns, indent + ("- " if bullet else ""),
                                                     indent + ("  " if bullet else ""))]
    return out


def _docstrings(text):
    """{first line: (last line, indent)} of each docstring in text, 1-based, as ast
    finds them: the module's, each class's and each function's."""
    found = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                indent = "" if isinstance(node, ast.Module) else " " * first.col_offset
                found[first.lineno] = (first.end_lineno, indent)
    return found


def _pieces(text):
    """The starter's lines as pieces: ("doc", its lines, indent) for a docstring,
    ("comment", the comments' texts, indent) for a block of whole-line comments
    (not a "# Step N." line, a banner, or a "# Given:" line), ("code", [line])."""
    lines = text.split("\n")
    docs = _docstrings(text)
    pieces, i = [], 0
    while i < len(lines):
        if i + 1 in docs:
            end, indent = docs[i + 1]
            pieces.append(("doc", lines[i:end], indent))
            i = end
            continue
        stripped = lines[i].lstrip()
        indent = lines[i][:len(lines[i]) - len(stripped)]
        block = []
        while i < len(lines) and lines[i].startswith(indent + "# ") and not _KEPT.match(lines[i].lstrip()):
            block.append(lines[i][len(indent) + 2:])
            i += 1
        if block:
            pieces.append(("comment", block, indent))
        else:
            pieces.append(("code", [lines[i]], ""))
            i += 1
    return pieces


_KEPT = re.compile(r"# (Step \d+\.|-{20,}|Given: )")
# A step's banner, "# Step 3. kv_head: the one line that makes GQA -----": its words
# after the name are prose; and a given step's line (gqa_grader.language.starter.GIVEN).
BANNER_COLUMNS = 79         # a translated banner's dashes end here (or 3 after its words)
_BANNER = re.compile(r"(?P<head># Step \d+\. \w+(?::|,) )(?P<text>.*?)(?P<dashes> -{3,})?")
_GIVEN = re.compile(r"# Given: step (?P<step>\d+), (?P<name>\w+), is not in your track; it is "
                    r"written for you, to be read and called\.")
GIVEN = "Given: step {step}, {name}, is not in your track; it is written for you, to be read and called."


# A row of the lab's table in the module's docstring: "    3  kv_head(i, h, g)   which
# key/value head query head i reads": its description is prose, its name code.
_ROW = re.compile(r'(?P<head> {3,4}\d{1,2}  \w+(?:\([^)]*\))?\s+)(?P<text>["A-Za-z].*)')


# A table's own line (its heading, a note under it): unindented words, not a doctest.
_TABLE_LINE = re.compile(r"[A-Z][a-z]*[ :][^>]*[.:)]")


# A row of a record's or an argument's table: "group_size   h // g query heads per
# key/value head": its name code, its description prose where it has a word in it (a
# lower-case word, or "a Multiplies": an article before a record's name).
_FIELD = re.compile(r"(?P<head>[a-z_]\w*(?:, [a-z_]\w*)* {2,})(?P<text>.*(?:\b[a-z]{2,}\b|\ba [A-Z]).*)")


# An inline comment with words in it, after code (or a doctest's line) on the same line:
# "x = 1    # what x is".  Not where the code before it holds a # or an open quote.
_INLINE = re.compile(r"(?P<code>[^#]*?\S {2,}# )(?P<text>[^#]*\b[a-z]{3,}\b[^#]*)")


def _inline(line):
    match = _INLINE.fullmatch(line)
    code = match.group("code") if match else ""
    return match if match and code.count('"') % 2 == 0 and code.count("'") % 2 == 0 else None


def _table_message(line):
    """The prose in a line of a table (a paragraph kept as it is): a row's description,
    or the whole of a heading line; None for the rest (code, indented cells)."""
    row = _ROW.fullmatch(line) or _FIELD.fullmatch(line) or _inline(line)
    return row.group("text") if row else line if _TABLE_LINE.fullmatch(line) else None


def _grid(unit):
    """A table of columns lined up in unit (the module docstring's shapes): (its rows'
    indices, the column starts, the indices of the columns of words), or None. A column
    starts where every row has a space before a character; a column is of words where
    each cell has one (query heads), not code or a shape ([h][n][d])."""
    rows = [i for i, line in enumerate(unit) if line.startswith("    ") and line.strip()
            and not line.lstrip().startswith((">>>", "..."))]
    if len(rows) < 3 or any(_ROW.fullmatch(unit[i]) or _FIELD.fullmatch(unit[i]) for i in rows):
        return None
    longest = max(len(unit[i]) for i in rows)
    starts = [c for c in range(4, longest) if all(c >= len(unit[i]) or (unit[i][c - 1] == " " and unit[i][c] != " ")
                                                  for i in rows) and any(c < len(unit[i]) for i in rows)]
    cells = [[cell.strip() for cell in _cut(unit[i], starts)] for i in rows]
    words = [k for k in range(len(starts)) if all(re.search(r"\b[a-z]{3,}\b", row[k]) for row in cells)]
    return (rows, starts, words) if words and len(starts) > 1 else None


# A word in a cell of code or shapes ("[h or g][d_model][d]"): that cell is translated too.
_CELL_WORD = re.compile(r"\b[a-z]{2,}\b")


def _worded(k, cell, words):
    """Whether a grid's cell is translated: a column of words, or a cell with a word in it."""
    return k in words or _CELL_WORD.search(cell) is not None


def _cut(line, starts):
    return [line[a:b] for a, b in zip(starts, starts[1:] + [len(line)])]


def _grid_messages(unit):
    grid = _grid(unit)
    return [] if grid is None else [cell.strip() for i in grid[0] for k, cell in enumerate(_cut(unit[i], grid[1]))
                                    if _worded(k, cell, grid[2])]


def _grid_rows(unit, translate):
    """unit with its table's columns of words in the language, every column lined up
    again by display width (a wide character two columns)."""
    grid = _grid(unit)
    if grid is None:
        return None
    rows, starts, words = grid
    cells = {i: [translate(c.strip()) if _worded(k, c, words) else c.strip() for k, c in enumerate(_cut(unit[i], starts))]
             for i in rows}
    room = [max([b - a] + [width(cells[i][k]) + 1 for i in rows]) for k, (a, b) in enumerate(zip(starts, starts[1:]))]
    out = [_row(line, translate) for line in unit]                # the heading above the rows
    for i in rows:
        line = unit[i][:starts[0]]
        for k, cell in enumerate(cells[i]):
            line += cell if k == len(room) else cell + " " * (room[k] - width(cell))
        out[i] = line
    return out


def _row(line, translate):
    row = _ROW.fullmatch(line) or _FIELD.fullmatch(line)
    inline = None if row else _inline(line)
    return (row.group("head") + translate(row.group("text")) if row
            else inline.group("code") + translate(inline.group("text")) if inline
            else translate(line) if _TABLE_LINE.fullmatch(line) else line)


def _lines(line, translate):
    """A banner's or a given step's line with its words in the language (wrapped to
    the line's width), else the line: a list of lines."""
    banner = _BANNER.fullmatch(line)
    if banner and banner.group("text"):
        text = banner.group("head") + translate(banner.group("text"))
        return [text + (" " + "-" * max(3, min(width(line), BANNER_COLUMNS) - width(text) - 1)
                        if banner.group("dashes") else "")]
    given = _GIVEN.fullmatch(line)
    if given:
        return _wrap(translate(GIVEN).format(**given.groupdict()), width(line), "# ", "# ")
    inline = _inline(line)
    if inline:
        return [inline.group("code") + translate(inline.group("text"))]
    return [line]


# A stub's raise, as gqa_grader.language.starter writes it: raise NotImplementedError("step N:
# NAME: summary"), its string cut into pieces over lines; the summary is the first line
# of the docstring above it, a paragraph of the catalog.  Its words are the student's
# too: the REPL shows them.
_RAISE = re.compile(r'^(?P<indent> *)raise NotImplementedError\((?P<args>"(?:[^"\\\n]|\\.)*"'
                    r'(?:\n *"(?:[^"\\\n]|\\.)*")*)\)$', re.M)
_STUB = re.compile(r"step (?P<step>\d+): (?P<name>[\w.]+)(?:: (?P<summary>.*))?", re.S)
STUB = "step {step}: {name}: {summary}"
STUB_BARE = "step {step}: {name}"


def _stub_messages(text):
    """The message ids a starter's stubs ask for, beyond their docstrings' paragraphs."""
    found = []
    for match in _RAISE.finditer(text):
        stub = _STUB.fullmatch(ast.literal_eval("(" + match.group("args") + ")"))
        wanted = (STUB if stub.group("summary") else STUB_BARE) if stub else None
        if wanted and wanted not in found:
            found.append(wanted)
    return found


def _stub(match, translate):
    """A stub's raise with its message in the language, cut again to RAISE_WIDTH."""
    indent, message = match.group("indent"), ast.literal_eval("(" + match.group("args") + ")")
    stub = _STUB.fullmatch(message)
    if stub:
        fields = dict(stub.groupdict())
        if fields["summary"]:
            fields["summary"] = translate(fields["summary"])
        message = translate(STUB if fields["summary"] else STUB_BARE).format(**fields)
    return "\n".join(_string_lines(f"{indent}raise NotImplementedError(", message, ")"))


RAISE_WIDTH = 99                # as gqa_grader.language.starter.WIDTH (on the same floor: not imported), in columns


def _string_lines(head, message, tail):
    """head + message as a string literal + tail, the string cut into pieces one under
    another so that no line is wider than RAISE_WIDTH columns (a Japanese or Korean
    character two), where linebreak lets a line end: gqa_grader.language.starter's _raise, for
    a string in any language."""
    room = max(RAISE_WIDTH - width(head) - 2 - len(tail), 20)
    chunks, current = [], ""
    for piece in pieces(message):
        piece = piece.replace("\\", "\\\\").replace('"', '\\"')
        if current and width(current + core(piece)) > room:
            chunks.append(current)
            current = ""
        current += piece
    chunks.append(current)
    lines = [head + f'"{chunks[0]}"'] + [" " * width(head) + f'"{c}"' for c in chunks[1:]]
    lines[-1] += tail
    return lines


# The starter's last lines (gqa_grader.language.starter.MAIN): what `python gqa.py` prints.
_MAIN_PRINT = re.compile(r'^(?P<indent> *)print\((?P<args>"this gqa\.py is the lab(?:[^"\\\n]|\\.)*"'
                         r'(?:\n *"(?:[^"\\\n]|\\.)*")*), file=sys\.stderr\)$', re.M)
MAIN_SAYS = "this gqa.py is the lab, not its tools: from the project's folder, run {grader} or {tools}"
HANDOUT_SAYS = "this gqa.py is the lab, not its tools: in this folder, run {grader} or {tools}"   # a handout's
_COMMANDS = r"(?P<grader>python grader\.py.*?) or (?P<tools>python -m gqa .*)"
_MAIN_COMMANDS = {said: re.compile(re.escape(said.split("{")[0]) + _COMMANDS)
                  for said in (MAIN_SAYS, HANDOUT_SAYS)}


def _main_said(match):
    """(the message id of what python gqa.py prints, its commands' match), or (None, None)."""
    text = ast.literal_eval("(" + match.group("args") + ")")
    for said, pattern in _MAIN_COMMANDS.items():
        found = pattern.fullmatch(text)
        if found:
            return said, found
    return None, None


def _main_print(match, translate, lang):
    """What python gqa.py prints, in lang, its two commands given --lang lang (a command the
    student is told to run keeps their language)."""
    said, commands = _main_said(match)
    if not said:
        return match.group(0)
    commands = {name: f"{command} --lang {lang}" for name, command in commands.groupdict().items()}
    return "\n".join(_string_lines(f"{match.group('indent')}print(", translate(said).format(**commands),
                                  ", file=sys.stderr)"))


def _doc_lines(block, indent):
    """A docstring's lines, its quotes taken off: (what comes before the text, the
    text's lines dedented, what follows)."""
    head = block[0]
    quote = head.index('"""') + 3
    whole = "\n".join(block)
    close = whole.rindex('"""')
    inner = whole[quote:close].split("\n")
    inner = inner[:1] + [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in inner[1:]]
    return head[:quote], inner, whole[close:]


def _prose_lines(piece):
    kind, lines, indent = piece
    return _doc_lines(lines, indent)[1] if kind == "doc" else lines


def paragraphs(text):
    """The message ids of a starter's prose, in order, once each (a banner's words and
    the given steps' line too)."""
    found = []
    for piece in _pieces(text):
        if piece[0] == "code":
            for line in piece[1]:
                banner, given, inline = _BANNER.fullmatch(line), _GIVEN.fullmatch(line), _inline(line)
                message = (banner.group("text") if banner and banner.group("text") else GIVEN if given
                           else inline.group("text") if inline else None)
                if message and message not in found:
                    found.append(message)
            continue
        for kind, unit in _units(_prose_lines(piece)):
            table = [] if kind == "prose" else [_table_message(line) for line in unit] + _grid_messages(unit)
            for message in [_message(unit)] if kind == "prose" else [m for m in table if m]:
                if message not in found:
                    found.append(message)
    found += [m for m in _stub_messages(text) if m not in found]
    said = _main_said(_MAIN_PRINT.search(text))[0] if _MAIN_PRINT.search(text) else None
    return found + ([said] if said and said not in found else [])


def translated(text, lang):
    """text (a starter) with its prose in lang; text itself for English.  The last few
    made are kept: a class, a handout and the copies' base ask for the same starters."""
    if lang == "en":
        return text
    if (text, lang) not in _TRANSLATED:
        if len(_TRANSLATED) >= 8:
            _TRANSLATED.clear()
        _TRANSLATED[text, lang] = _translated(text, lang)
    return _TRANSLATED[text, lang]


_TRANSLATED = {}            # (text, lang): translated's answer


def _translated(text, lang):
    catalog = translation(lang, DOMAIN)
    out = []
    for piece in _pieces(text):
        kind, lines, indent = piece
        if kind == "code":
            out += [new for line in lines for new in _lines(line, catalog.gettext)]
        elif kind == "comment":
            out += [(indent + "# " + line).rstrip() for line in _rewrite(lines, "", catalog.gettext)]
        else:
            before, inner, after = _doc_lines(lines, indent)
            new = _rewrite(inner, "", catalog.gettext)
            if len(new) == 1:
                out.append(before + new[0] + after)
            else:
                out += ([before + new[0]] + [indent + line if line else "" for line in new[1:-1]]
                        + [indent + new[-1] + after])
    out = _RAISE.sub(lambda match: _stub(match, catalog.gettext), "\n".join(out))
    return _MAIN_PRINT.sub(lambda match: _main_print(match, catalog.gettext, lang), out)
