"""gqa_tools.svg: drawing SVG with the standard library.

Not a plotting library: the few pieces report.md's figures are made of,
each a function or a method that returns or adds SVG text.

    Figure(width, height, title, desc)   an SVG with an opaque background,
                                         a visible title, <title> and <desc>
    Figure.axes(...) -> Axes             a plot area with ticks and labels
    Axes.plot / band / hbars / hline     the data, in data coordinates
    Axes.end_labels, Figure.legend       which line is which
    nice_ticks(lo, hi)                   ticks at 1, 2 or 5 x 10^k
    style(i)                             colour, dash and marker of series i
    not_a_figure(svg)                    why SVG text is not one these pieces draw

    >>> nice_ticks(0, 4096, cover=False).values
    [0.0, 1000.0, 2000.0, 3000.0, 4000.0]
    >>> fig = Figure(200, 120, "A line", "One line through two points.")
    >>> ax = fig.axes(40, 40, 140, 50, x=nice_ticks(0, 1), y=nice_ticks(0, 2))
    >>> ax.plot([0, 1], [0, 2], style(0), titles=["0: 0", "1: 2"])
    >>> fig.svg().startswith('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 120"')
    True

Every figure is the same to the byte on every run and Python version: the
coordinates are written with two decimals at most (num()), tick labels with
the decimals of their step, and nothing depends on dict order, time or
machine.  Every element lies inside the view box: text widths are estimated
(text_width()) on the wide side, and the layouts leave room for them.

The colours stay distinct for colour-blind readers, and each series has its
own dash and marker as well, so that the figures also read in greyscale.
gqa_tools.report.figures draws the report's figures with these pieces, from
the numbers of the table the report puts beside each.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from html import escape
from typing import List, NamedTuple, Optional, Sequence, Tuple

from gqa_grader.language.i18n import width
from gqa_grader.language.linebreak import pieces

# ---------------------------------------------------------------------------
# Numbers, text and styles.
# ---------------------------------------------------------------------------

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
INK, MUTED, GRID, BACKGROUND = "#1a1a1a", "#555555", "#e3e3e3", "#ffffff"

# Okabe & Ito, "Color Universal Design" (2008): blue, vermillion, bluish
# green, reddish purple, orange, sky blue, black.  Yellow is left out: it
# does not show on white.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
DASHES = ("", "7 3", "2 2.5", "9 3 2 3", "4 2", "1 3", "12 3")
MARKERS = ("circle", "square", "triangle", "diamond", "cross", "plus", "triangle-down")


class Style(NamedTuple):
    """How one series is drawn: colour, dash pattern ("" for solid) and marker."""
    colour: str
    dash: str
    marker: str


def style(i: int) -> Style:
    """Return series i's style: seven are distinct by colour, dash and marker, and past
    seven each colour comes back with another dash and marker."""
    turn = i // len(PALETTE)
    return Style(PALETTE[i % len(PALETTE)], DASHES[(i + turn) % len(DASHES)],
                 MARKERS[(i + 2 * turn) % len(MARKERS)])


def num(x: float) -> str:
    """Format a coordinate: at most two decimals, no trailing zeros.

    >>> num(12.0), num(3.14159), num(-0.001)
    ('12', '3.14', '0')
    """
    if not math.isfinite(x):
        raise ValueError(f"num: a coordinate must be finite; got {x!r}")
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


# Advance widths of DejaVu Sans (the widest of the fonts named in FONT), in
# ems, rounded up: a text's estimated width is never smaller than drawn.
_NARROW, _WIDE = set("il.,:;'|!()[]ftrj "), set("mwMW@%")


def _wide(ch: str) -> bool:
    return width(ch) == 2                       # a kana, a kanji, a hangul, 、 and 。


def _pieces(text: str) -> List[str]:
    """Where lines_of_text may break text: where gqa_grader.language.linebreak lets a line end (at
    a space, between two Japanese characters, never before a mark that closes or after
    one that opens, never inside a word or a number), each piece after the first with
    the one space before it."""
    cut = pieces(" ".join(text.split()))
    return [(" " if i and cut[i - 1].endswith(" ") else "") + piece.rstrip() for i, piece in enumerate(cut)]


def text_width(text: str, size: float) -> float:
    """Return an estimate, on the wide side, of text's width at font size `size`."""
    em = 0.0
    for ch in text:
        if ch in _NARROW:
            em += 0.4
        elif ch in _WIDE or _wide(ch):
            em += 1.0
        elif ch.isupper() or ch in "–—×=+<>~#&_":
            em += 0.78
        else:
            em += 0.64
    return max(em, 0.6 * len(text)) * size          # never less than 0.6 em a character


def _attrs(**attrs: object) -> str:
    """Attributes in the order given; None leaves one out; class_ is written class."""
    return "".join(f' {k.rstrip("_").replace("_", "-")}="{v}"'
                   for k, v in attrs.items() if v is not None and v != "")


class Ticks(NamedTuple):
    """An axis: its range lo..hi and its ticks as (value, label) pairs."""
    lo: float
    hi: float
    ticks: Tuple[Tuple[float, str], ...]

    @property
    def values(self) -> List[float]:
        return [v for v, _ in self.ticks]


def nice_ticks(lo: float, hi: float, most: int = 6, cover: bool = True, scale: float = 1.0) -> Ticks:
    """Return ticks at multiples of 1, 2 or 5 x 10^k, at most `most` intervals.

    cover=True widens the range to the ticks around lo..hi (the data fits
    inside); cover=False keeps lo..hi and the ticks within it.  scale
    divides the values before the labels are written (2 ** 30: GiB).

    >>> nice_ticks(0, 0.85).ticks[-2:]
    ((0.8, '0.8'), (1.0, '1.0'))
    >>> nice_ticks(0, 2 * 2 ** 30, scale=2 ** 30).ticks[1]
    (536870912.0, '0.5')
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        raise ValueError(f"nice_ticks: need finite lo <= hi; got {lo!r}, {hi!r}")
    a, b = lo / scale, hi / scale
    span = (b - a) or abs(b) or 1.0
    exp, mantissa = math.floor(math.log10(span / most)), 1
    while True:                 # the smallest step 1, 2, 5 x 10^exp that needs at most `most` intervals
        step = _decimal(mantissa, exp)
        if cover:
            first, last = math.floor(a / step + 1e-9), math.ceil(b / step - 1e-9)
        else:
            first, last = math.ceil(a / step - 1e-9), math.floor(b / step + 1e-9)
        if last - first <= most:
            break
        mantissa, exp = {1: (2, exp), 2: (5, exp), 5: (1, exp + 1)}[mantissa]
    digits = max(0, -exp)
    values = [_decimal(k * mantissa, exp) for k in range(first, last + 1)]
    ticks = tuple((v * scale, f"{v:,.{digits}f}") for v in values)
    if cover:
        lo, hi = min(lo, values[0] * scale), max(hi, values[-1] * scale)
    return Ticks(lo, hi, ticks)


def _decimal(mantissa: int, exp: int) -> float:
    """mantissa x 10^exp, correctly rounded (no 0.30000000000000004)."""
    return float(mantissa * 10 ** exp) if exp >= 0 else mantissa / 10 ** -exp


def categories(labels: Sequence[str]) -> Ticks:
    """An axis of categories at 0, 1, ..., with half a step to spare at each end."""
    return Ticks(-0.5, len(labels) - 0.5, tuple((float(i), s) for i, s in enumerate(labels)))


# ---------------------------------------------------------------------------
# The figure: an SVG document.
# ---------------------------------------------------------------------------

class Canvas:
    """A list of SVG elements, and the helpers that add them."""

    def __init__(self) -> None:
        self.items: List[object] = []

    def add(self, element: object) -> None:
        self.items.append(element)

    def text(self, x: float, y: float, text: str, *, size: float = 12, anchor: str = "start",
             weight: str = "", colour: str = INK, class_: str = "", halo: bool = False) -> None:
        """Add text whose baseline starts (anchor start), centres or ends at x, y.

        halo=True outlines the letters in the background colour, so that text
        drawn over lines stays readable.
        """
        attrs = _attrs(class_=class_, x=num(x), y=num(y), font_size=num(size) if size != 12 else "",
                       text_anchor=anchor if anchor != "start" else "", font_weight=weight,
                       fill=colour if colour != INK else "")
        if halo:
            attrs += f' stroke="{BACKGROUND}" stroke-width="3" paint-order="stroke"'
        self.add(f"<text{attrs}>{escape(text)}</text>")

    def lines_of_text(self, x: float, y: float, text: str, width: float, *, size: float = 11,
                      colour: str = MUTED) -> float:
        """Add text broken into lines at most `width` wide (estimated); return the last baseline.
        Lines break at spaces, and between two wide characters (Japanese has no spaces)."""
        line = ""
        for piece in _pieces(text):
            if line and text_width(line + piece.rstrip(), size) > width:
                self.text(x, y, line.rstrip(), size=size, colour=colour)
                line, y = piece.lstrip(), y + size * 1.35
            else:
                line += piece if line else piece.lstrip()
        self.text(x, y, line.rstrip(), size=size, colour=colour)
        return y

    def line(self, x1: float, y1: float, x2: float, y2: float, colour: str = INK,
             width: float = 1, dash: str = "", class_: str = "", title: str = "") -> None:
        attrs = _attrs(class_=class_, x1=num(x1), y1=num(y1), x2=num(x2), y2=num(y2),
                       stroke=colour, stroke_width=num(width) if width != 1 else "",
                       stroke_dasharray=dash)
        self.add(f"<line{attrs}><title>{escape(title)}</title></line>" if title else f"<line{attrs}/>")

    def rect(self, x: float, y: float, w: float, h: float, fill: str, stroke: str = "",
             class_: str = "", title: str = "", rx: float = 0) -> None:
        attrs = _attrs(class_=class_, x=num(x), y=num(y), width=num(w), height=num(h),
                       rx=num(rx) if rx else "", fill=fill, stroke=stroke)
        self.add(f"<rect{attrs}><title>{escape(title)}</title></rect>" if title else f"<rect{attrs}/>")

    def render(self) -> str:
        return "\n".join(item if isinstance(item, str) else item.render() for item in self.items)


class Figure(Canvas):
    """An SVG figure: an opaque background, a visible title, and what is added to it."""

    def __init__(self, width: float, height: float, title: str, desc: str) -> None:
        super().__init__()
        self.width, self.height, self.title, self.desc = width, height, title, desc
        self.text(width / 2, 22, title, size=15, anchor="middle", weight="bold")

    def axes(self, left: float, top: float, width: float, height: float, *, x: Ticks, y: Ticks,
             xlabel: str = "", ylabel: str = "", title: str = "", grid: bool = True) -> "Axes":
        """Add a plot area at left, top (its size width x height) and return it."""
        axes = Axes(left, top, width, height, x, y, xlabel, ylabel, title, grid)
        self.add(axes)
        return axes

    def legend(self, x: float, y: float, entries: Sequence[Tuple[str, Style]], *,
               sample: float = 26, gap: float = 18) -> float:
        """Add a row of legend entries (a line sample, its marker, its text); return its width."""
        for text, st in entries:
            self.line(x, y - 4, x + sample, y - 4, st.colour, 2, st.dash, class_="legend")
            self.add(marker(st, x + sample / 2, y - 4, class_="legend"))
            self.text(x + sample + 5, y, text)
            x += sample + 5 + text_width(text, 12) + gap
        return x

    def svg(self) -> str:
        """Return the SVG text."""
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {num(self.width)} '
                f'{num(self.height)}" width="{num(self.width)}" height="{num(self.height)}" '
                f'font-family="{FONT}" font-size="12" role="img">\n'
                f"<title>{escape(self.title)}</title>\n<desc>{escape(self.desc)}</desc>\n"
                f'<rect class="background" x="0" y="0" width="{num(self.width)}" '
                f'height="{num(self.height)}" fill="{BACKGROUND}"/>\n')
        return head + self.render() + "\n</svg>\n"


def marker(st: Style, x: float, y: float, r: float = 3.6, class_: str = "marker", title: str = "") -> str:
    """One marker centred at x, y: its bounding box is centred there too."""
    c, a = st.colour, r * 0.9
    if st.marker == "circle":
        shape = f"M{num(x - r)} {num(y)}a{num(r)} {num(r)} 0 1 0 {num(2 * r)} 0a{num(r)} {num(r)} 0 1 0 {num(-2 * r)} 0Z"
    elif st.marker == "square":
        shape = f"M{num(x - a)} {num(y - a)}H{num(x + a)}V{num(y + a)}H{num(x - a)}Z"
    elif st.marker == "triangle":
        shape = f"M{num(x)} {num(y - r)}L{num(x + r)} {num(y + r)}H{num(x - r)}Z"
    elif st.marker == "triangle-down":
        shape = f"M{num(x)} {num(y + r)}L{num(x + r)} {num(y - r)}H{num(x - r)}Z"
    elif st.marker == "diamond":
        shape = f"M{num(x)} {num(y - r * 1.2)}L{num(x + r)} {num(y)}L{num(x)} {num(y + r * 1.2)}L{num(x - r)} {num(y)}Z"
    elif st.marker == "cross":
        shape = f"M{num(x - a)} {num(y - a)}L{num(x + a)} {num(y + a)}M{num(x - a)} {num(y + a)}L{num(x + a)} {num(y - a)}"
    else:                                                               # plus
        shape = f"M{num(x - r)} {num(y)}H{num(x + r)}M{num(x)} {num(y - r)}V{num(y + r)}"
    open_ = st.marker in ("cross", "plus")
    attrs = _attrs(class_=class_, d=shape, fill="none" if open_ else c,
                   stroke=c, stroke_width="1.8" if open_ else "", )
    return f"<path{attrs}><title>{escape(title)}</title></path>" if title else f"<path{attrs}/>"


# ---------------------------------------------------------------------------
# Axes: a plot area in data coordinates.
# ---------------------------------------------------------------------------

class Axes(Canvas):
    """A plot area: a left and a bottom axis with ticks, light grid lines, and the data.

    Written as <g class="axes"> holding <rect class="plot-area">; every data
    element (class line, band, bar, whisker, marker, reference) lies inside
    that rectangle.
    """

    def __init__(self, left: float, top: float, width: float, height: float,
                 x: Ticks, y: Ticks, xlabel: str, ylabel: str, title: str, grid: bool) -> None:
        super().__init__()
        self.left, self.top, self.width, self.height = left, top, width, height
        self.xaxis, self.yaxis = x, y
        bottom, right = top + height, left + width
        self.add(f'<rect class="plot-area" x="{num(left)}" y="{num(top)}" width="{num(width)}" '
                 f'height="{num(height)}" fill="none"/>')
        if title:
            self.text(left - 6, top - 28, title, size=13, weight="bold")
        if ylabel:
            self.text(left - 6, top - 10, ylabel, colour=MUTED)
        for value, label in y.ticks:
            py = self.y(value)
            if grid:
                self.line(left, py, right, py, GRID)
            self.line(left - 4, py, left, py, MUTED, class_="ytick")
            self.text(left - 7, py + 4, label, anchor="end", class_="ytick")
        for value, label in x.ticks:
            px = self.x(value)
            self.line(px, bottom, px, bottom + 4, MUTED, class_="xtick")
            self.text(px, bottom + 17, label, anchor="middle", class_="xtick")
        self.line(left, top, left, bottom, MUTED)
        self.line(left, bottom, right, bottom, MUTED)
        if xlabel:
            self.text(left + width / 2, bottom + 36, xlabel, anchor="middle", colour=MUTED)

    def render(self) -> str:
        return '<g class="axes">\n' + super().render() + "\n</g>"

    def x(self, value: float) -> float:
        a = self.xaxis
        return self.left + (value - a.lo) / (a.hi - a.lo) * self.width

    def y(self, value: float) -> float:
        a = self.yaxis
        return self.top + self.height - (value - a.lo) / (a.hi - a.lo) * self.height

    def plot(self, xs: Sequence[float], ys: Sequence[float], st: Style, *,
             titles: Sequence[str] = (), width: float = 2) -> None:
        """Add a line through the points (data coordinates), a marker at each; titles name each point."""
        points = " ".join(f"{num(self.x(a))},{num(self.y(b))}" for a, b in zip(xs, ys))
        self.add(f"<polyline{_attrs(class_='line', points=points, fill='none', stroke=st.colour, stroke_width=num(width), stroke_dasharray=st.dash, stroke_linejoin='round')}/>")
        for i, (a, b) in enumerate(zip(xs, ys)):
            self.add(marker(st, self.x(a), self.y(b), title=titles[i] if titles else ""))

    def band(self, xs: Sequence[float], lows: Sequence[float], highs: Sequence[float], st: Style,
             opacity: float = 0.16) -> None:
        """Add a shaded band between lows and highs (an interval at each point)."""
        upper = [f"{num(self.x(a))},{num(self.y(b))}" for a, b in zip(xs, highs)]
        lower = [f"{num(self.x(a))},{num(self.y(b))}" for a, b in zip(xs, lows)]
        self.add(f"<polygon{_attrs(class_='band', points=' '.join(upper + lower[::-1]), fill=st.colour, fill_opacity=num(opacity))}/>")

    def hbars(self, ys: Sequence[float], values: Sequence[float], fill: str, *,
              height: float = 0.6, titles: Sequence[str] = (),
              lows: Sequence[float] = (), highs: Sequence[float] = ()) -> None:
        """Add horizontal bars from 0 (or the axis' foot) to each value; whiskers from lows to highs."""
        base = self.x(max(self.xaxis.lo, 0.0))
        half = height / 2 * self.height / (self.yaxis.hi - self.yaxis.lo)
        for i, (b, v) in enumerate(zip(ys, values)):
            px, py = self.x(v), self.y(b)
            self.rect(min(px, base), py - half, abs(px - base), 2 * half, fill, stroke=INK,
                      class_="bar", title=titles[i] if titles else "")
            if lows:
                lo, hi, w = self.x(lows[i]), self.x(highs[i]), min(half / 2, 7)
                self.add(f'<path class="whisker" d="M{num(lo)} {num(py)}H{num(hi)}M{num(lo)} '
                         f'{num(py - w)}V{num(py + w)}M{num(hi)} {num(py - w)}V{num(py + w)}" '
                         f'stroke="{INK}" stroke-width="1.5" fill="none"/>')

    def vline(self, value: float, label: str, colour: str = MUTED, dash: str = "2 3") -> None:
        """Add a vertical reference line, its label at its foot, right of it."""
        px = self.x(value)
        self.line(px, self.top, px, self.top + self.height, colour, 1.2, dash, class_="reference")
        self.text(px + 4, self.top + self.height - 6, label, colour=colour, size=11, halo=True)

    def hline(self, value: float, label: str, colour: str = INK, dash: str = "5 3") -> None:
        """Add a horizontal reference line across the plot, its label below its left end."""
        py = self.y(value)
        self.line(self.left, py, self.left + self.width, py, colour, 1.2, dash, class_="reference")
        self.text(self.left + 4, py + 14, label, colour=colour, size=11, halo=True)

    def end_labels(self, entries: Sequence[Tuple[float, str, Style]], gap: float = 15) -> None:
        """Label lines right of their ends: (last y value, text, style), pushed apart to stay readable."""
        order = sorted(range(len(entries)), key=lambda i: -entries[i][0])     # top of the plot first
        wanted = [self.y(entries[i][0]) + 4 for i in order]
        placed = _spread_out(wanted, gap, self.top + 4, self.top + self.height + 4)
        x = self.left + self.width + 10
        for i, py in zip(order, placed):
            _, text, st = entries[i]
            self.line(x, py - 4, x + 18, py - 4, st.colour, 2, st.dash, class_="label-sample")
            self.add(marker(st, x + 9, py - 4, class_="label-sample"))
            self.text(x + 24, py, text)


def _spread_out(wanted: Sequence[float], gap: float, low: float, high: float) -> List[float]:
    """Positions as near the wanted ones (sorted, top down) as they can be, gap apart, within low..high."""
    placed = list(wanted)
    for i in range(len(placed)):                            # down: away from the one above
        placed[i] = max(placed[i], low if i == 0 else placed[i - 1] + gap)
    for i in range(len(placed) - 1, -1, -1):                # up: away from the one below
        placed[i] = min(placed[i], high if i == len(placed) - 1 else placed[i + 1] - gap)
    return placed


# ---------------------------------------------------------------------------
# What a figure may contain: checked where figures come from another process.
# ---------------------------------------------------------------------------

_ELEMENTS = {"svg", "title", "desc", "g", "rect", "text", "line", "polyline", "polygon", "path"}
_ATTRIBUTES = {"viewBox", "width", "height", "font-family", "font-size", "font-weight", "role",
               "class", "x", "y", "x1", "y1", "x2", "y2", "rx", "points", "d", "fill", "fill-opacity",
               "stroke", "stroke-width", "stroke-dasharray", "stroke-linejoin", "paint-order",
               "text-anchor"}


def not_a_figure(svg: str) -> Optional[str]:
    """Why svg is not a figure this module could have drawn (a script, a link, ...), or None.

    Only the elements and attributes these figures use are allowed: SVG
    text that comes back from a student's process is written to disk only
    when it passes.

    >>> not_a_figure(Figure(100, 50, "t", "d").svg()) is None
    True
    >>> not_a_figure('<svg xmlns="http://www.w3.org/2000/svg"><script>x</script></svg>')
    'it has a <script> element'
    """
    if "<!" in svg or "<?" in svg:
        return "it has a declaration, a comment or an entity"
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as err:
        return f"it is not well-formed XML ({err})"
    ns = "{http://www.w3.org/2000/svg}"
    if root.tag != f"{ns}svg":
        return "its root is not an SVG element"
    for el in root.iter():
        name = el.tag[len(ns):] if el.tag.startswith(ns) else el.tag
        if name not in _ELEMENTS:
            return f"it has a <{name}> element"
        for attr in el.attrib:
            if attr not in _ATTRIBUTES:
                return f"its <{name}> has a {attr} attribute"
    return None
