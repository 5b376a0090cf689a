"""The report's figures: valid SVG, inside their view box, and the table beside them, drawn.

Each SVG is read back with xml.etree, by code of this file: the plotted
points are recovered from their pixel positions through the axis ticks, and
compared with the numbers of the Markdown table beside the figure.
"""

from __future__ import annotations

import math
import os
import random
import re
import tempfile
import types
import unicodedata
import unittest
import xml.etree.ElementTree as ET
from unittest import mock

import gqa
from gqa_grader.language import i18n
from tests.helpers import ROOT, heavy, run_gqa, tiny_recipe
from tests.untranslated import others, untranslated
from gqa_tools import svg as gqa_svg
from gqa_tools import uptraining as gqa_train
from gqa_tools.referee import Graded
from gqa_tools.report import figures as report_figures
from gqa_tools.report import lab as report_lab
from gqa_tools.report import measuring as report_measuring
from gqa_tools.report import sections as report_sections
from gqa_tools.report import settings as report_settings

SVG = "{http://www.w3.org/2000/svg}"
SMALL = report_settings.Config(heads=6, head_dim=8, layers=3, context=64, batch=4, run_head_dim=2,
                               run_d_model=6, run_context=5, run_layers=2, seed=3, seeds=2)
NOTHING_MEASURED = report_measuring.Measured(*[report_lab.Missing("not measured in this test")] * 6)
UNITS = {"B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40}


# ---------------------------------------------------------------------------
# Reading an SVG back.
# ---------------------------------------------------------------------------

def numbers(text):
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)]


def classes(el):
    return el.get("class", "").split()


def title(el):
    t = el.find(f"{SVG}title")
    return t.text if t is not None else ""


def centre(el):
    """The centre of a marker path's bounding box (it is drawn centred on its point)."""
    pairs = path_points(el.get("d"))
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    return (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2


def path_points(d):
    """Absolute points of a path of M, L, H, V, Z and circles drawn as two relative arcs."""
    points, x, y = [], 0.0, 0.0
    for cmd, args in re.findall(r"([MLHVaZ])([^MLHVaZ]*)", d):
        v = numbers(args)
        if cmd in "ML":
            for i in range(0, len(v), 2):
                x, y = v[i], v[i + 1]
                points.append((x, y))
        elif cmd == "H":
            x = v[0]
            points.append((x, y))
        elif cmd == "V":
            y = v[0]
            points.append((x, y))
        elif cmd == "a":                         # a circle: rx ry rot large sweep dx dy
            r, dx = v[0], v[5]
            points += [(x + dx / 2, y - r), (x + dx / 2, y + r)]
            x += dx
            points.append((x, y))
    return points


def polyline(el):
    v = numbers(el.get("points"))
    return list(zip(v[0::2], v[1::2]))


class Axis:
    """Pixel <-> value along one axis, from its tick marks and their labels (any two ticks)."""

    def __init__(self, axes, which, scale=1.0):
        marks = [el for el in axes.iter(f"{SVG}line") if which in classes(el)]
        labels = [el for el in axes.iter(f"{SVG}text") if which in classes(el)]
        assert len(marks) == len(labels) >= 2, (which, len(marks), len(labels))
        pos = [float(m.get("x1" if which == "xtick" else "y1")) for m in marks]
        val = [float(t.text.replace(",", "")) * scale for t in labels]
        self.ticks = list(zip(pos, val))
        (p0, v0), (p1, v1) = self.ticks[0], self.ticks[-1]
        self.per_pixel = (v1 - v0) / (p1 - p0)
        self.p0, self.v0 = p0, v0
        # values grow rightwards and upwards, evenly
        assert self.per_pixel > 0 if which == "xtick" else self.per_pixel < 0, (which, self.ticks)
        for p, v in self.ticks:
            assert abs(self.value(p) - v) <= abs(self.per_pixel) * 0.02, (which, self.ticks)

    def value(self, pixel):
        return self.v0 + (pixel - self.p0) * self.per_pixel


def area(axes):
    rect = next(el for el in axes.iter(f"{SVG}rect") if "plot-area" in classes(el))
    x, y, w, h = (float(rect.get(k)) for k in ("x", "y", "width", "height"))
    return x, y, x + w, y + h


def all_axes(root):
    return [g for g in root.iter(f"{SVG}g") if "axes" in classes(g)]


def markers(axes):
    return [el for el in axes.iter(f"{SVG}path") if "marker" in classes(el)]


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table(body, *first):
    """The header and rows (lists of cells) of the Markdown table whose header starts with `first`."""
    lines = body.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("|") and cells(line)[:len(first)] == list(first))
    rows = [cells(lines[start])]
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(cells(line))
    return rows[0], rows[1:]


def section(text, number):
    return text.split(f"\n## {number}. ")[1].split("\n## ")[0]


def linked(body):
    """(alt text, path) of every image in a Markdown body."""
    return re.findall(r"!\[([^\]]*)\]\(([^)]+)\)", body)


class SvgChecks(unittest.TestCase):
    """What every figure must be, whatever it draws."""

    def check_svg(self, svg, name="figure"):
        root = ET.fromstring(svg)
        self.assertEqual(root.tag, f"{SVG}svg", name)
        box = numbers(root.get("viewBox"))
        self.assertEqual(box[:2], [0, 0], name)
        width, height = box[2], box[3]
        self.assertEqual((float(root.get("width")), float(root.get("height"))), (width, height))
        first = list(root)[:3]
        self.assertEqual([el.tag for el in first], [f"{SVG}title", f"{SVG}desc", f"{SVG}rect"], name)
        self.assertTrue(first[0].text.strip() and len(first[1].text) > 40, name)
        background = first[2]
        self.assertEqual([background.get(k) for k in ("x", "y", "width", "height", "fill")],
                         ["0", "0", num(width), num(height), "#ffffff"], name)
        for el in root.iter():
            for key, value in el.attrib.items():
                if key in ("x", "y", "x1", "y1", "x2", "y2", "width", "height", "points", "d"):
                    for v in numbers(value):
                        self.assertTrue(math.isfinite(v), (name, el.tag, key, value))
                if key in ("x", "x1", "x2"):
                    self.assertTrue(0 <= float(value) <= width, (name, el.tag, key, value))
                if key in ("y", "y1", "y2"):
                    self.assertTrue(0 <= float(value) <= height, (name, el.tag, key, value))
            if el.tag == f"{SVG}polyline" or el.tag == f"{SVG}polygon":
                for x, y in polyline(el):
                    self.assertTrue(0 <= x <= width and 0 <= y <= height, (name, x, y))
            if el.tag == f"{SVG}text":
                self.check_text(el, width, height, name)
        for axes in all_axes(root):
            self.check_inside(axes, name)
        return root

    def check_text(self, el, width, height, name):
        """The text's box, at 0.6 em a character (DejaVu Sans, the widest usual font, averages less)
        and a whole em a wide one (a kana, a kanji, a hangul), is inside the view box."""
        size = float(el.get("font-size", "12"))
        w = size * sum(1.0 if unicodedata.east_asian_width(ch) in "WF" else 0.6 for ch in el.text)
        x, y = float(el.get("x")), float(el.get("y"))
        left = {"start": x, "middle": x - w / 2, "end": x - w}[el.get("text-anchor", "start")]
        self.assertTrue(0 <= left and left + w <= width, (name, el.text, left, w, width))
        self.assertTrue(y - size >= 0 and y + 0.3 * size <= height, (name, el.text, y))

    def check_inside(self, axes, name):
        """Every plotted point lies inside its plot area."""
        x0, y0, x1, y1 = area(axes)
        points = []
        for el in axes.iter():
            kind = classes(el)
            if "marker" in kind:
                points.append(centre(el))
            elif "line" in kind or "band" in kind:
                points += polyline(el)
            elif "bar" in kind:
                x, y = float(el.get("x")), float(el.get("y"))
                points += [(x, y), (x + float(el.get("width")), y + float(el.get("height")))]
            elif "whisker" in kind:
                points += path_points(el.get("d"))
            elif "reference" in kind:
                points += [(float(el.get("x1")), float(el.get("y1"))), (float(el.get("x2")), float(el.get("y2")))]
        self.assertTrue(points, name)
        for x, y in points:
            self.assertTrue(x0 - 0.01 <= x <= x1 + 0.01 and y0 - 0.01 <= y <= y1 + 0.01,
                            (name, (x, y), (x0, y0, x1, y1)))

    def assertNear(self, got, expected, tolerance, msg=None):
        self.assertLessEqual(abs(got - expected), tolerance, (msg, got, expected))


def num(x):
    """A coordinate as the figures write it, written here another way."""
    text = "%.2f" % x
    while text.endswith("0"):
        text = text[:-1]
    return text[:-1] if text.endswith(".") else text


# ---------------------------------------------------------------------------
# The report's figures, against the tables beside them.
# ---------------------------------------------------------------------------

class ReportFigures(SvgChecks):
    """Figures and tables of one report: the committed one, and one built here for h = 6."""

    def reports(self):
        """(name, report text, {file name: SVG}) of each report checked."""
        with open(os.path.join(ROOT, "report.md"), encoding="utf-8") as f:
            committed = f.read()
        folder = os.path.join(ROOT, "report-figures")
        on_disk = {}
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                on_disk[name] = f.read()
        parts = report_sections.build_parts(SMALL, NOTHING_MEASURED)
        return [("report.md", committed, on_disk),
                ("h = 6", report_sections.assemble(parts), dict(report_sections.figures_of(parts)))]

    def setUp(self):
        if not hasattr(ReportFigures, "_reports"):
            ReportFigures._reports = self.reports()

    def test_every_figure_is_linked_with_alt_text_and_passes_the_svg_checks(self):
        for name, text, figures in self._reports:
            links = linked(text)
            self.assertEqual(sorted(path for _, path in links),
                             sorted(f"report-figures/{f}" for f in figures), name)
            self.assertTrue(all(len(alt) > 40 for alt, _ in links), name)
            for file, svg in figures.items():
                self.check_svg(svg, f"{name}: {file}")

    def test_the_grouping_figure_joins_each_query_head_to_the_head_in_its_table(self):
        for name, text, figures in self._reports:
            _, rows = table(section(text, 1), "method", "g", "q0")
            root = ET.fromstring(figures["grouping.svg"])
            panels = [g for g in root.iter(f"{SVG}g") if "panel" in classes(g)]
            self.assertEqual(len(panels), len(rows) == 4 and 4, name)
            for panel, row in zip(panels, rows):
                g = int(row[1])
                caption = next(t.text for t in panel.iter(f"{SVG}text") if "caption" in classes(t))
                self.assertEqual(caption, f"{row[0]}, g = {g}")
                reads = self.drawn_edges(panel)
                self.assertEqual(reads, [int(c) for c in row[2:]], (name, g))
                self.assertEqual(reads, [i * g // 8 for i in range(8)], (name, g))    # worked by hand

    def drawn_edges(self, panel):
        """Which key/value box each query box's edge ends on, from the geometry alone."""
        def boxes(kind):
            found = []
            for r in panel.iter(f"{SVG}rect"):
                if kind in classes(r):
                    x, y, w, h = (float(r.get(k)) for k in ("x", "y", "width", "height"))
                    found.append((x + w / 2, y, y + h))
            return sorted(found)
        queries, kvs = boxes("query"), boxes("kv")
        reads = [None] * len(queries)
        for e in panel.iter(f"{SVG}line"):
            if "edge" not in classes(e):
                continue
            x1, y1, x2, y2 = (float(e.get(k)) for k in ("x1", "y1", "x2", "y2"))
            i = [k for k, (x, top, bottom) in enumerate(queries) if abs(x - x1) < 0.02 and abs(bottom - y1) < 0.02]
            j = [k for k, (x, top, bottom) in enumerate(kvs) if abs(x - x2) < 0.02 and abs(top - y2) < 0.02]
            self.assertEqual((len(i), len(j)), (1, 1), e.attrib)
            self.assertIsNone(reads[i[0]])
            reads[i[0]] = j[0]
        return reads

    def test_the_g_figure_draws_the_fractions_of_its_table(self):
        for name, text, figures in self._reports:
            _, rows = table(section(text, 4), "method", "g", "KV cache")
            gs = [int(r[1]) for r in rows]
            self.assertEqual(gs, gqa.valid_g(32))                       # Llama-2-7B's h
            root = ET.fromstring(figures["what-g-changes.svg"])
            cache_axes, work_axes = all_axes(root)
            for axes, columns in ((cache_axes, [2]), (work_axes, [3, 4])):
                y = Axis(axes, "ytick")
                at = {t.text: float(t.get("x")) for t in axes.iter(f"{SVG}text") if "xtick" in classes(t)}
                self.assertEqual(list(at), [str(g) for g in gs])         # a category per g, in order
                drawn = markers(axes)
                self.assertEqual(len(drawn), len(columns) * len(gs))
                for k, column in enumerate(columns):
                    for i, row in enumerate(rows):
                        px, py = centre(drawn[k * len(gs) + i])
                        self.assertNear(px, at[row[1]], 0.02)
                        self.assertNear(y.value(py), float(row[column]), 0.0051, (name, row, column))
                        self.assertIn(f"{row[column]} of MHA", title(drawn[k * len(gs) + i]))
        # by hand, at 4,096 positions: the cache falls to 1/32, one layer's work to 0.6125, the
        # block's to 0.8517 (section 3's total and section 4's MQA row)
        self.assertEqual(self._reports[0][0], "report.md")
        self.assertEqual(table(section(self._reports[0][1], 4), "method", "g", "KV cache")[1][0][2:],
                         ["0.03125", "0.6125", "0.8517"])

    def test_the_decoding_figure_draws_the_reads_of_its_table(self):
        for name, text, figures in self._reports:
            body = section(text, 7)
            header, rows = table(body, "method", "g")
            positions = [int(c.replace("t = ", "").replace(",", "")) for c in header[2:]]
            root = ET.fromstring(figures["decoding.svg"])
            (axes,) = all_axes(root)
            unit = next(t.text for t in axes.iter(f"{SVG}text") if " read per new token" in t.text)
            x, y = Axis(axes, "xtick"), Axis(axes, "ytick", scale=UNITS[unit.split()[0]])
            lines = [el for el in axes.iter(f"{SVG}polyline") if "line" in classes(el)]
            self.assertEqual(len(lines), len(rows))
            for line, row in zip(lines, rows):
                for (px, py), t, cell in zip(polyline(line), positions, row[2:]):
                    self.assertNear(x.value(px), t, abs(x.per_pixel) * 0.01)
                    expected = 2 * int(cell.replace(",", ""))          # 16-bit: 2 bytes an element
                    self.assertNear(y.value(py), expected, abs(y.per_pixel) * 0.01, (name, row, t))
            # by hand: token t reads K and V, g heads, head dim, every layer
            g, t = int(rows[-1][1]), positions[-1]
            layers, d = (32, 128) if name == "report.md" else (SMALL.layers, SMALL.head_dim)
            self.assertEqual(rows[-1][-1], f"{2 * g * t * d * layers:,}")
            ends = [t for t in root.iter(f"{SVG}text") if t.text in {f"{r[0]} g={r[1]}" for r in rows}]
            ys = sorted(float(t.get("y")) for t in ends)
            self.assertEqual(len(ys), len(rows))
            self.assertTrue(all(b - a >= 12 for a, b in zip(ys, ys[1:])), ys)    # labels do not overlap


    def test_the_training_figures_draw_the_intervals_of_their_tables(self):
        _, text, figures = self._reports[0]                    # the committed report: it trained
        body = section(text, 8)
        header, rows = table(body, "task", "g", "model")
        budgets = [int(c.split()[0]) for c in header[3:]]
        spread = re.compile(r"([0-9.]+) ± [0-9.]+ \[([0-9.]+), ([0-9.]+)\]")
        for task in sorted({row[0] for row in rows}):
            root = self.check_svg(figures[f"uptraining-{task}.svg"], task)
            for axes in all_axes(root):
                g = next(t.text for t in axes.iter(f"{SVG}text") if t.text.startswith("g = "))[4:]
                x, y = Axis(axes, "xtick"), Axis(axes, "ytick")
                lines = [el for el in axes.iter(f"{SVG}polyline") if "line" in classes(el)]
                bands = [el for el in axes.iter(f"{SVG}polygon") if "band" in classes(el)]
                mine = [row for row in rows if row[0] == task and row[1] == g and spread.fullmatch(row[3])
                        and "Adam carried over" not in row[2] and "from scratch" not in row[2]]  # not drawn
                self.assertEqual([row[2] for row in mine], ["MHA trained on (the control)", "mean", "first", "random"])
                self.assertEqual((len(lines), len(bands)), (4, 3))      # the control: a line alone
                tol = abs(y.per_pixel) * 0.01 + 0.0005                 # the table rounds to 3 places
                for row, line, band in zip(mine[1:] + mine[:1], lines, bands + [None]):
                    drawn, n = polyline(line), len(budgets)
                    for i, (b, cell) in enumerate(zip(budgets, row[3:])):
                        mean, low, high = (float(v) for v in spread.fullmatch(cell).groups())
                        self.assertNear(x.value(drawn[i][0]), b, abs(x.per_pixel) * 0.01)
                        self.assertNear(y.value(drawn[i][1]), mean, tol, (task, row[2], b))
                        if band is not None:
                            outline = polyline(band)
                            self.assertNear(y.value(outline[i][1]), high, tol)
                            self.assertNear(y.value(outline[2 * n - 1 - i][1]), low, tol)
                frozen = float(spread.fullmatch(mine[0][3]).group(1))  # the control at 0 steps
                refs = [el for el in axes.iter(f"{SVG}line") if "reference" in classes(el)
                        and el.get("y1") == el.get("y2")]
                self.assertEqual(len(refs), 1)
                self.assertNear(y.value(float(refs[0].get("y1"))), frozen, tol)
        if "equal-cache.svg" not in figures:                   # a recipe without the equal-cache models
            self.assertIn("is not trained in this recipe", body)
            return
        header, rows = table(body, "task", "model")
        root = self.check_svg(figures["equal-cache.svg"], "equal cache")
        for task, axes in zip(sorted({row[0] for row in rows}, key=[r[0] for r in rows].index),
                              all_axes(root)):
            x = Axis(axes, "xtick")
            bars = [el for el in axes.iter(f"{SVG}rect") if "bar" in classes(el)]
            whiskers = [el for el in axes.iter(f"{SVG}path") if "whisker" in classes(el)]
            mine = [row for row in rows if row[0] == task]
            self.assertEqual((len(bars), len(whiskers)), (len(mine), len(mine)))
            for row, bar, whisker in zip(mine, bars, whiskers):
                mean, low, high = (float(v) for v in spread.fullmatch(row[-1]).groups())
                end = float(bar.get("x")) + float(bar.get("width"))
                tol = abs(x.per_pixel) * 0.01 + 0.0005
                self.assertNear(x.value(end), mean, tol, (task, row[1]))
                xs = [pt[0] for pt in path_points(whisker.get("d"))]
                self.assertNear(x.value(min(xs)), low, tol)
                self.assertNear(x.value(max(xs)), high, tol)


class FromAStudentsModule(unittest.TestCase):
    """A module whose kv_head fails, or answers out of range, draws no grouping figure and says why."""

    def body(self, kv_head):
        fake = types.SimpleNamespace(valid_g=gqa.valid_g, method_name=gqa.method_name,
                                     group_heads=gqa.group_heads, kv_head=kv_head)
        parts = report_sections.build_parts(SMALL, NOTHING_MEASURED, report_lab.Lab(fake, "student.py"))
        return parts[1]

    def test_not_implemented(self):
        def kv_head(i, h, g):
            raise NotImplementedError
        part = self.body(kv_head)
        self.assertEqual(part.figures, ())
        self.assertIn("*Figure not drawn: needs step 3, kv_head: not implemented yet.*", part.body)
        self.assertNotIn("![", part.body)

    def test_out_of_range(self):
        part = self.body(lambda i, h, g: i)
        self.assertEqual(part.figures, ())
        self.assertIn("`kv_head(4, 8, 4)` returned 4, not a key/value head 0 to 3", part.body)

    def test_a_figure_that_fails_leaves_its_section_and_says_why(self):
        with mock.patch("gqa_tools.report.figures.g_changes_figure", side_effect=ValueError("num: not finite")):
            part = report_sections.build_parts(SMALL, NOTHING_MEASURED)[4]
        self.assertEqual((part.title[:2], part.figures), ("4.", ()))
        self.assertIn("**Llama-2-7B**", part.body)
        self.assertIn("*Figure not drawn: computing it raised ValueError: num: not finite.*", part.body)

    def test_a_wrong_but_valid_answer_is_drawn_as_it_is(self):
        part = self.body(lambda i, h, g: i % g)                 # strided: the common mistake
        row = table(part.body, "method", "g", "q0")[1][1]      # g = 4
        self.assertEqual(row[2:], ["0", "1", "2", "3", "0", "1", "2", "3"])
        self.assertEqual([f for f, _ in part.figures], ["grouping.svg"])
        # ... and said as it is: its text named "query heads 0–4" for heads 0 and 4, and its
        # caption "neighbouring query heads" under groups that are not.
        desc = ET.fromstring(dict(part.figures)["grouping.svg"]).find(f"{SVG}desc").text
        self.assertIn("GQA g = 4: query heads 0, 4 read key/value head 0, query heads 1, 5 read", desc)
        self.assertIn("MHA g = 8: query heads 0 read key/value head 0", desc)
        self.assertIn("MQA g = 1: query heads 0–7 read key/value head 0", desc)
        self.assertNotIn("neighbouring", part.body)
        drawn = "".join(ET.fromstring(dict(part.figures)["grouping.svg"]).itertext())
        self.assertNotIn("i // (h // g)", drawn)                                # its footer said so
        self.assertIn("the key/value head each reads, by the module's kv_head.", drawn)
        self.assertIn("at g = 4, 2, the query heads that share a key/value head are not neighbours", part.body)
        right = self.body(gqa.kv_head)
        self.assertIn("groups of 1, 2, 4, 8 neighbouring query heads share one", right.body)
        self.assertIn("i // (h // g)", "".join(ET.fromstring(dict(right.figures)["grouping.svg"]).itertext()))
        self.assertIn("GQA g = 4: query heads 0–1 read key/value head 0",
                      ET.fromstring(dict(right.figures)["grouping.svg"]).find(f"{SVG}desc").text)


# ---------------------------------------------------------------------------
# The uptraining figures (section 8), on made-up data.
# ---------------------------------------------------------------------------

CONVERSIONS = ("mean", "first", "random")


def made_up_spread(rng):
    mean = rng.uniform(0.2, 0.9)
    return (mean, mean - rng.uniform(0.0, 0.1), mean + rng.uniform(0.0, 0.1))


def made_up_training(seed, budgets=(0, 3, 6, 12), gs=(1, 2)):
    rng = random.Random(f"made up:{seed}")
    curves = {(g, c): [made_up_spread(rng) for _ in budgets] for g in gs for c in CONVERSIONS}
    return budgets, curves, made_up_spread(rng), [made_up_spread(rng) for _ in budgets]


class TrainingFigures(SvgChecks):

    def test_lines_are_the_means_and_bands_their_intervals(self):
        for seed in range(3):
            budgets, curves, frozen, control = made_up_training(seed, budgets=((0, 3, 6, 12), (0, 15, 30, 60))[seed % 2])
            svg = report_figures.uptraining_figure("name the tokens before", budgets, curves, frozen, control,
                                                seeds=20, mark=(budgets[1], "5 % of pre-training"))
            root = self.check_svg(svg, f"uptraining {seed}")
            panels = all_axes(root)
            self.assertEqual(len(panels), 2)
            for g, axes in zip((1, 2), panels):
                self.assertIn(f"g = {g}", [t.text for t in axes.iter(f"{SVG}text")])
                x, y = Axis(axes, "xtick"), Axis(axes, "ytick")
                lines = [el for el in axes.iter(f"{SVG}polyline") if "line" in classes(el)]
                bands = [el for el in axes.iter(f"{SVG}polygon") if "band" in classes(el)]
                self.assertEqual((len(lines), len(bands)), (4, 3))
                for c, line, band in zip(CONVERSIONS, lines, bands):
                    drawn, outline, n = polyline(line), polyline(band), len(budgets)  # highs, then lows back
                    for i, (b, (mean, low, high)) in enumerate(zip(budgets, curves[(g, c)])):
                        self.assertNear(x.value(drawn[i][0]), b, abs(x.per_pixel) * 0.01)
                        self.assertNear(y.value(drawn[i][1]), mean, abs(y.per_pixel) * 0.01, (g, c, b))
                        self.assertNear(y.value(outline[i][1]), high, abs(y.per_pixel) * 0.01)
                        self.assertNear(y.value(outline[2 * n - 1 - i][1]), low, abs(y.per_pixel) * 0.01)
                for i, point in enumerate(polyline(lines[3])):        # the control, in every panel
                    self.assertNear(y.value(point[1]), control[i][0], abs(y.per_pixel) * 0.01)
                refs = [el for el in axes.iter(f"{SVG}line") if "reference" in classes(el)]
                heights = sorted({round(y.value(float(el.get("y1"))), 4) for el in refs if el.get("y1") == el.get("y2")})
                self.assertEqual(heights, [round(frozen[0], 4)])
            self.assertIn("band: its 95 % interval", svg)

    def test_one_g_and_one_seed_still_fit(self):
        budgets, curves, frozen, control = made_up_training(7, gs=(1,))
        svg = report_figures.uptraining_figure("name the tokens 1 and 2 positions back", budgets, curves,
                                            frozen, control, seeds=1)
        self.check_svg(svg, "one g, one seed")
        self.check_svg(report_figures.equal_cache_figure({"t": {"MQA": (0.5, 0.5, 0.5)}}, note="n", seeds=1),
                       "one bar")

    def test_ragged_or_inside_out_data_is_refused(self):
        budgets, curves, frozen, control = made_up_training(0)
        short = dict(curves)
        short[(1, "mean")] = curves[(1, "mean")][:-1]
        with self.assertRaises(ValueError):
            report_figures.uptraining_figure("t", budgets, short, frozen, control, seeds=5)
        inside_out = dict(curves)
        inside_out[(1, "mean")] = [(0.5, 0.6, 0.4)] * len(budgets)
        with self.assertRaises(ValueError):
            report_figures.uptraining_figure("t", budgets, inside_out, frozen, control, seeds=5)

    def test_equal_cache_bars_are_means_with_their_intervals(self):
        rng = random.Random("made up:bars")
        models = ("h heads, 1 K/V head (MQA)", "1 head (MHA, h = 1)", "h heads of dim d / h (MHA)")
        data = {task: {m: made_up_spread(rng) for m in models} for task in ("name the tokens before", "recall")}
        root = self.check_svg(report_figures.equal_cache_figure(data, note="6 values per token", seeds=5),
                              "equal cache")
        panels = all_axes(root)
        self.assertEqual(len(panels), 2)
        for task, axes in zip(data, panels):
            x = Axis(axes, "xtick")
            marks = [float(el.get("y1")) for el in axes.iter(f"{SVG}line") if "ytick" in classes(el)]
            names = [t.text for t in axes.iter(f"{SVG}text") if "ytick" in classes(t)]
            at = dict(zip(names, marks))
            self.assertEqual(sorted(at, key=at.get), list(models))          # top down, in order
            bars = [el for el in axes.iter(f"{SVG}rect") if "bar" in classes(el)]
            whiskers = [el for el in axes.iter(f"{SVG}path") if "whisker" in classes(el)]
            self.assertEqual((len(bars), len(whiskers)), (3, 3))
            for m, bar, whisker in zip(models, bars, whiskers):
                mean, low, high = data[task][m]
                self.assertNear(x.value(float(bar.get("x"))), 0, 1e-9)
                end = float(bar.get("x")) + float(bar.get("width"))
                self.assertNear(x.value(end), mean, abs(x.per_pixel) * 0.01, (task, m))
                self.assertNear(float(bar.get("y")) + float(bar.get("height")) / 2, at[m], 0.02)
                xs = [p[0] for p in path_points(whisker.get("d"))]
                self.assertNear(x.value(min(xs)), low, abs(x.per_pixel) * 0.01)
                self.assertNear(x.value(max(xs)), high, abs(x.per_pixel) * 0.01)
        with self.assertRaises(ValueError):
            report_figures.equal_cache_figure({"a": {"x": (1.0, 1.0, 1.0)}, "b": {"y": (1.0, 1.0, 1.0)}},
                                           note="", seeds=1)


@heavy
class InTheStudentsLanguage(SvgChecks):
    """A student's report in Japanese or Korean: its figures' words too, every one inside
    the figure, and the same numbers drawn as in English."""

    def tearDown(self):
        i18n.use("en")

    def figures(self, lang):
        """{name: SVG} of the figures of a report for h = 6 and of made-up training, in lang."""
        i18n.use(lang)
        found = dict(report_sections.figures_of(report_sections.build_parts(SMALL, NOTHING_MEASURED)))
        budgets, curves, frozen, control = made_up_training(5)
        found["uptraining.svg"] = report_figures.uptraining_figure(
            "offsets", budgets, curves, frozen, control, seeds=20, mark=(budgets[1], "5 %"))
        found["equal-cache.svg"] = report_figures.equal_cache_figure(
            {"offsets": {"MQA": made_up_spread(random.Random(1)), "MHA": made_up_spread(random.Random(2))}},
            note="8, 12", seeds=20)
        return found

    def words(self, root):
        """Every text a reader meets in an SVG: what it shows, and its titles and description."""
        return [el.text for el in root.iter() if el.tag in (f"{SVG}text", f"{SVG}title", f"{SVG}desc")
                and el.text]

    def test_no_sentence_is_left_in_english_and_every_word_fits(self):
        english = self.figures("en")
        for lang in others():
            figures = self.figures(lang)
            self.assertEqual(sorted(figures), sorted(english))
            for name, svg in figures.items():
                with self.subTest(lang=lang, figure=name):
                    root = self.check_svg(svg, f"{lang}: {name}")
                    self.assertEqual(untranslated("\n".join(self.words(root)), lang), [])
                    self.assertNotEqual(root.find(f"{SVG}title").text,
                                        ET.fromstring(english[name]).find(f"{SVG}title").text)
                    # The same points, where the words differ: every coordinate of every mark.
                    marks = lambda r: [el.get("points") or el.get("d") for el in r.iter()
                                       if el.tag in (f"{SVG}polyline", f"{SVG}polygon")]
                    self.assertEqual(marks(root), marks(ET.fromstring(english[name])))
        # In English, what the test would find: it can fail.
        self.assertTrue(all(untranslated("\n".join(self.words(ET.fromstring(svg)))) for svg in english.values()))

    def test_a_note_in_korean_breaks_only_between_words(self):
        fig = gqa_svg.Figure(200, 200, "t", "a description long enough for the checks here")
        note = "토큰당 값 8개를 캐시, 처음부터 100 스텝. 막대: 시드 20개의 평균, 수염: 그 95 % 구간."
        fig.lines_of_text(10, 20, note, 120)
        lines = [el.text for el in ET.fromstring(fig.svg()).iter(f"{SVG}text")][1:]
        self.assertGreater(len(lines), 2)
        self.assertEqual(" ".join(lines), note)                     # every break was a space

    def test_a_note_in_german_breaks_only_between_words(self):
        fig = gqa_svg.Figure(200, 200, "t", "a description long enough for the checks here")
        note = "Größenänderung der Schlüssel: 8 Werte je Token über 100 Schritte, Balken: Mittelwert übrigens."
        fig.lines_of_text(10, 20, note, 110)
        lines = [el.text for el in ET.fromstring(fig.svg()).iter(f"{SVG}text")][1:]
        self.assertGreater(len(lines), 2)
        self.assertEqual(" ".join(lines), note)                     # every break was a space

    def test_a_note_in_japanese_breaks_between_characters_and_keeps_its_marks(self):
        fig = gqa_svg.Figure(200, 200, "t", "a description long enough for the checks here")
        note = ("トークンあたり 8 個の値をキャッシュ、ゼロから 100 ステップ。棒: シードの平均「ヘッドのキャッシュ」、"
                "ひげ: その 95 % 区間。ッーャ")
        fig.lines_of_text(10, 20, note, 180)
        lines = [el.text for el in ET.fromstring(fig.svg()).iter(f"{SVG}text")][1:]      # after the title
        self.assertGreater(len(lines), 2)
        self.assertEqual("".join(lines).replace(" ", ""), note.replace(" ", ""))
        self.assertFalse(any(line[0] in "、。:ーッャュョ々」）" for line in lines), lines)
        self.assertFalse(any(line[-1] in "「（(" for line in lines), lines)
        # At least as wide as drawn: a kanji or a kana is an em, nothing else narrower than a space.
        drawn = [11 * sum(1.0 if unicodedata.east_asian_width(ch) == "W" else 0.4 for ch in line) for line in lines]
        self.assertLessEqual(max(drawn), 180, lines)


# ---------------------------------------------------------------------------
# Writing and checking the figures beside the report.
# ---------------------------------------------------------------------------

def run(*argv):
    """`gqa report ARGV` with nothing measured: (exit status, stdout, stderr)."""
    with mock.patch("gqa_tools.report.measuring.measure", return_value=NOTHING_MEASURED), \
            mock.patch("gqa_tools.uptraining.QUICK", tiny_recipe()):        # --module's child trains this
        return run_gqa("report", *argv)


ARGS = [a for name, value in SMALL._asdict().items() for a in (f"--{name.replace('_', '-')}", str(value))]


@heavy
class Writing(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "my.md")
        self.folder = os.path.join(self.dir.name, "my-figures")

    def tearDown(self):
        self.dir.cleanup()

    def test_figures_are_written_beside_the_report_and_checked(self):
        status, out, err = run("--out", self.path, *ARGS)
        self.assertEqual(status, 0, err)
        names = sorted(os.listdir(self.folder))
        self.assertIn("grouping.svg", names)
        with open(self.path, encoding="utf-8") as f:
            self.assertIn("](my-figures/grouping.svg)", f.read())
        status, out, _ = run("--check", "--out", self.path, *ARGS)
        self.assertEqual(status, 0)
        self.assertIn(f"so are its {len(names)} figures", out)

    def test_check_names_a_changed_a_missing_and_an_extra_figure(self):
        run("--out", self.path, *ARGS)
        names = sorted(os.listdir(self.folder))
        with open(os.path.join(self.folder, names[0]), "a", encoding="utf-8") as f:
            f.write(" ")
        os.unlink(os.path.join(self.folder, names[1]))
        with open(os.path.join(self.folder, "old.svg"), "w", encoding="utf-8") as f:
            f.write("<svg/>")
        status, _, err = run("--check", "--out", self.path, *ARGS)
        self.assertEqual(status, 1)
        self.assertIn(f"{names[0]} differs from what the code writes now", err)
        self.assertIn(f"cannot read {os.path.join(self.folder, names[1])}", err)
        self.assertIn("old.svg is not a figure of the report", err)
        self.assertIn("regenerate it with: python -m gqa report", err)
        self.assertEqual(run("--out", self.path, *ARGS)[0], 0)             # writing mends all three
        self.assertEqual(sorted(os.listdir(self.folder)), names)
        self.assertEqual(run("--check", "--out", self.path, *ARGS)[0], 0)

    def test_a_students_module_draws_its_own_figures(self):
        student = os.path.join(self.dir.name, "student_gqa.py")
        with open(gqa.__file__, encoding="utf-8") as f:
            source = f.read()
        with open(student, "w", encoding="utf-8") as f:        # the lab, with a strided kv_head and group_heads
            f.write(source.replace("    return query_head // group\n", "    return query_head % g\n").replace(
                "return [list(range(j * group, (j + 1) * group)) for j in range(g)]",
                "return [list(range(j, h, g)) for j in range(g)]"))
        out = os.path.join(self.dir.name, "report.md")
        # Which steps pass is the grader's to say, and whether the child then trains with the
        # module is test_report's (FromAnotherModule): here a step is said to fail, so that the
        # child draws section 1's figure from this module without grading or training first.
        with mock.patch("gqa_tools.report.child.graded",
                        return_value=Graded(["step 9, layer: failed"], [])) as graded:
            status, _, err = run("--module", student, "--out", out, *ARGS)
        self.assertEqual(status, 0, err)
        self.assertEqual(graded.call_args[0][:2], (student, gqa_train.NEEDS))
        with open(os.path.join(self.dir.name, "report-figures", "grouping.svg"), encoding="utf-8") as f:
            drawn = f.read()
        ours = dict(report_sections.figures_of(report_sections.build_parts(SMALL, NOTHING_MEASURED)))
        self.assertNotEqual(drawn, ours["grouping.svg"])
        with open(out, encoding="utf-8") as f:
            first = section(f.read(), 1)
        row = table(first, "method", "g", "q0")[1][1]
        self.assertEqual(row, ["GQA", "4", "0", "1", "2", "3", "0", "1", "2", "3"])     # i % g, as drawn
        # Its groups are said as they are ("0–4" read as five neighbours) and said not to be the
        # rule's contiguous blocks, which the sentence above the table gives.
        groups = {r[1]: r[3] for r in table(first, "method", "g (kv heads)", "h // g")[1]}
        self.assertEqual((groups["2"], groups["3"], groups["1"]), ("{0, 2, 4}, {1, 3, 5}", "{0, 3}, {1, 4}, {2, 5}", "0–5"))
        self.assertIn("your group_heads does not return the contiguous blocks of the rule above", first)

    def test_a_failed_write_changes_nothing(self):
        run("--out", self.path, *ARGS)
        with open(os.path.join(self.folder, "grouping.svg"), "w", encoding="utf-8") as f:
            f.write("old figure")
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("old report")
        with mock.patch("gqa_tools.report.files.os.replace", side_effect=OSError(28, "No space left on device")):
            status, _, err = run("--out", self.path, *ARGS)
        self.assertEqual(status, 2)
        self.assertIn("No space left on device; nothing was changed", err)
        with open(os.path.join(self.folder, "grouping.svg"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "old figure")
        with open(self.path, encoding="utf-8") as f:
            self.assertEqual(f.read(), "old report")
        leftovers = [n for d in (self.dir.name, self.folder) for n in os.listdir(d) if n.startswith(".")]
        self.assertEqual(leftovers, [])

    def test_a_file_where_the_folder_goes_is_refused(self):
        with open(self.folder, "w", encoding="utf-8") as f:
            f.write("a file\n")
        with mock.patch("gqa_tools.report.sections.build_parts", side_effect=AssertionError("it went to work")):
            status, _, err = run("--out", self.path, *ARGS)       # refused before any work
        self.assertEqual(status, 2)
        self.assertIn("is not a folder", err)
        self.assertFalse(os.path.exists(self.path))

    def test_a_figure_from_another_process_cannot_leave_the_folder_or_run_a_script(self):
        for name in ("../report.md", ".hidden.svg", "a/b.svg", "x.md"):
            with self.assertRaises(ValueError):
                report_sections.figures_of([report_sections.Part("t", "b", ((name, "<svg/>"),))])
        svg = '<svg xmlns="http://www.w3.org/2000/svg"/>'
        with self.assertRaises(ValueError):
            report_sections.figures_of([report_sections.Part("t", "b", (("a.svg", svg),)),
                                        report_sections.Part("u", "c", (("a.svg", svg),))])
        for bad in ('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
                    '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>',
                    '<svg xmlns="http://www.w3.org/2000/svg"><a href="http://x"><text>x</text></a></svg>',
                    '<!DOCTYPE svg [<!ENTITY a "aaaa">]><svg xmlns="http://www.w3.org/2000/svg"/>',
                    '<html/>', 'not xml <'):
            with self.assertRaises(ValueError, msg=bad):
                report_sections.figures_of([report_sections.Part("t", "b", (("a.svg", bad),))])
        self.assertEqual(len(report_sections.figures_of(report_sections.build_parts(SMALL, NOTHING_MEASURED))), 3)


if __name__ == "__main__":
    unittest.main()
