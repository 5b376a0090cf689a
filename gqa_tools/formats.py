"""gqa_tools.formats: numbers, tables and bars as text, lined up by display width.

Every command prints with these: a ratio to 4 significant digits (fmt), a byte count in
binary units (human_bytes), an aligned Markdown table (markdown_table), a plain table
(text_table), a bar of Unicode blocks (bar) and labelled bars (bar_chart); padded() lines a
cell up by its display columns (two for a Japanese or Korean character).
"""

from __future__ import annotations

from typing import Sequence

from gqa_grader.language import i18n


def fmt(x: float) -> str:
    """Format a measured or computed ratio: 4 significant digits."""
    return f"{x:.4g}"


def human_bytes(n: int) -> str:
    """Format a byte count in binary units: 1.5 GiB."""
    for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n} B"


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", "").rstrip("x%"))
    except ValueError:
        return False
    return True


def padded(text: str, columns: int, right: bool = False) -> str:
    """text padded with spaces to columns display columns (i18n.width: two for a Japanese or
    Korean character), on the left when right; str.ljust and str.rjust for English text."""
    spaces = " " * max(0, columns - i18n.width(text))
    return spaces + text if right else text + spaces


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Return an aligned Markdown table, lined up by display width; numbers are right-aligned."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(i18n.width(h), *(i18n.width(r[i]) for r in cells)) if cells else i18n.width(h)
              for i, h in enumerate(headers)]
    numeric = [all(_is_number(r[i]) for r in cells) and bool(cells) for i in range(len(headers))]

    def line(values):
        return "| " + " | ".join(padded(v, w, num) for v, w, num in zip(values, widths, numeric)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2))
                          for w, num in zip(widths, numeric)) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in cells])


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1) -> str:
    """Return a plain table lined up by display width: the first `left` columns left-aligned,
    the rest right."""
    widths = [max(i18n.width(h), *(i18n.width(r[i]) for r in rows)) if rows else i18n.width(h)
              for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(padded(c, w, i >= left) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(headers)] + [line(r) for r in rows])


_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: float, top: float, width: int = 40) -> str:
    """Return a bar of Unicode blocks, width characters for value = top."""
    if top <= 0 or value <= 0:
        return ""
    eighths = round(8 * width * min(value, top) / top)
    full, part = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[part] if part else "")


def bar_chart(labels: Sequence[str], values: Sequence[float], texts: Sequence[str],
              width: int = 40) -> str:
    """Return labelled bars, one per line, scaled to the largest value."""
    top = max(values, default=0.0)
    pad = max(map(i18n.width, labels), default=0)
    return "\n".join(f"{padded(label, pad)}  {bar(v, top, width).ljust(width)}  {text}"
                     for label, v, text in zip(labels, values, texts))
