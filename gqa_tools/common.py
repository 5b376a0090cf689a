"""gqa_tools.common: what the command-line tools share, and nothing else.

The commands (gqa_tools.tables, report, sizer.command, bench and
uptraining.command) import gqa, this module and the libraries (gqa_tools.svg,
statistics, sizer, uptraining), never each other; with --module they run a
student's gqa.py through the grader's worker (gqa_grader.run_in_child),
never in their own process.  Here: plain and Markdown tables, bars, number
formats, the integer options of `report` and `bench`, a projection kept
outside the tally, a progress line on stderr, the
lab's steps by number and which of them the grader passes for a student's
module, what a tool as root says of its seal (sealed), and the handout the tools were copied into, if any (handout(): there
the gqa.py beside gqa_tools/, LAB, is the student's, and the commands run it
in the worker too).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from operator import mul
from typing import Callable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import gqa
from gqa_grader import i18n
from gqa_grader.i18n import N_, _, ngettext

# The checkout: the folder that holds gqa.py and gqa_tools/ (a --module run's worker
# imports the tools from it), and the most processes a command is given.
PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB = os.path.join(PROJECT, "gqa.py")          # its gqa.py: the project's, or in a handout the student's
MAX_JOBS = 64


# ---------------------------------------------------------------------------
# Numbers and tables.
# ---------------------------------------------------------------------------


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


def _pad(text: str, columns: int, right: bool = False) -> str:
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
        return "| " + " | ".join(_pad(v, w, num) for v, w, num in zip(values, widths, numeric)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2))
                          for w, num in zip(widths, numeric)) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in cells])


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1) -> str:
    """Return a plain table lined up by display width: the first `left` columns left-aligned,
    the rest right."""
    widths = [max(i18n.width(h), *(i18n.width(r[i]) for r in rows)) if rows else i18n.width(h)
              for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(_pad(c, w, i >= left) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

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
    return "\n".join(f"{_pad(label, pad)}  {bar(v, top, width).ljust(width)}  {text}"
                     for label, v, text in zip(labels, values, texts))


# ---------------------------------------------------------------------------
# The lab's two tables, as Markdown: what g changes, and what it does not.
# ---------------------------------------------------------------------------

TERMS = gqa.Multiplies._fields         # q_proj, k_proj, ..., o_proj, total


def cache_markdown(h: int, layers: int, length: int, head_dim: int, *, lab=gqa) -> str:
    """Return lab.cache_table(...) as Markdown (lab: gqa, or another module like it)."""
    rows = lab.cache_table(h, layers=layers, length=length, head_dim=head_dim)
    return markdown_table(
        [_("method"), _("g (kv heads)"), "h // g", _("cache elements"), _("ratio to MHA")],
        [(r.method, r.kv_heads, r.group_size, f"{r.elements:,}", fmt(r.ratio)) for r in rows])


def multiplies_markdown(n: int, h: int, d: int, d_model: int, *, causal: bool = False,
                        ratios: bool = False, lab=gqa) -> str:
    """Return lab.multiplies_table(...) as Markdown, one row per term, one column per g.

    With ratios=True each cell is the term's ratio to MHA instead of its count.
    """
    rows = lab.multiplies_table(n, h, d, d_model, causal=causal)
    headers = [_("term")] + [f"{r.method} g={r.kv_heads}" for r in rows]
    cells = [[term] + [fmt(getattr(r.ratio, term)) if ratios else f"{getattr(r.counts, term):,}"
                       for r in rows] for term in TERMS]
    return markdown_table(headers, cells)


class Block(NamedTuple):
    """One row of the whole-block view: a method and its block's multiplications."""
    method: str                 # MHA, GQA or MQA
    g: int
    counts: "gqa.BlockMultiplies"


def block_rows(n: int, h: int, model_g: Optional[int], d: int, d_model: int, d_ff: int,
               mlp_matrices: int, *, lab=gqa) -> List[Block]:
    """Causal blocks over n positions: MHA (g = h), the model's own g and MQA (g = 1),
    or every valid g from h down when model_g is None."""
    gs = sorted({h, model_g, 1} if model_g else set(lab.valid_g(h)), reverse=True)
    return [Block(lab.method_name(h, g), g,
                  lab.block_multiplies(n, h, g, d, d_model, d_ff, mlp_matrices=mlp_matrices))
            for g in gs]


# The block's parts: the field of gqa.BlockMultiplies, its name (translated where shown), its bar.
BLOCK_PARTS = (("q_o_proj", N_("q and o projections"), "▓"), ("k_v_proj", N_("k and v projections"), "░"),
               ("body", N_("attention body"), "▒"), ("mlp", "MLP", "█"))


def block_markdown(rows: Sequence[Block], n: int) -> str:
    """The multiplications per token of each row's block, by part, with g's share."""
    mha = rows[0].counts
    return markdown_table(
        [_("method"), "g"] + [_(name) for _part, name, _char in BLOCK_PARTS]
        + [_("total"), _("k and v share"), _("saved vs MHA")],
        [(r.method, r.g) + tuple(f"{getattr(r.counts, part) // n:,}" for part, _name, _char in BLOCK_PARTS)
         + (f"{r.counts.total // n:,}", fmt(r.counts.k_v_proj / r.counts.total),
            fmt(1 - r.counts.total / mha.total)) for r in rows])


def block_bars(labels: Sequence[str], rows: Sequence[Block], width: int = 40) -> str:
    """One bar per row, its parts drawn with their own blocks, scaled to the first row."""
    top, pad = rows[0].counts.total, max(map(i18n.width, labels))
    lines = []
    for label, r in zip(labels, rows):
        bar_text, done = "", 0.0
        for part, _name, char in BLOCK_PARTS:
            done += getattr(r.counts, part)
            bar_text += char * (round(width * done / top) - len(bar_text))
        lines.append(f"{_pad(label, pad)}  {bar_text.ljust(width)}  "
                     + _("{ratio} of MHA").format(ratio=fmt(r.counts.total / top)))
    legend = _(", ").join(f"{char} {_(name)}" for _part, name, char in BLOCK_PARTS)
    return "\n".join(lines + [legend])


# ---------------------------------------------------------------------------
# A student's module: the lab's steps, and which of them the grader passes.
# ---------------------------------------------------------------------------

# The lab's 25 steps in order, step N being STEPS[N - 1], as gqa.py's docstring
# numbers them (tests/test_student_report.py reads that table).  Here, not read
# from gqa at run time: in the grader's worker, `gqa` is the student's module.
STEPS = ("valid_g", "method_name", "kv_head", "group_heads", "fold_kv_mean", "repeat_kv",
         "single_head_attention", "attention", "grouped_attention", "init_weights", "fold_weights",
         "prepare_weights", "layer", "output_difference", "kv_cache_elements", "attention_multiplies",
         "block_multiplies", "cache_table", "multiplies_table", "count_multiplies", "KVCache",
         "decode_step", "decode_traffic", "grouped_attention_backward", "layer_backward")


def step_name(name: str) -> Optional[str]:
    """How a report names a step of the lab, "step 21, KVCache"; None for any other name."""
    return _("step {step}, {name}").format(step=STEPS.index(name) + 1, name=name) if name in STEPS else None


# ---------------------------------------------------------------------------
# Which steps the grader passes.
# ---------------------------------------------------------------------------


class Graded(NamedTuple):
    """What the grader says of some steps of a student's gqa.py (graded())."""
    failing: List[str]      # every step it does not pass, "step N, name: failed" (or not started)
    failed: List[str]       # every step failing a public case, "step N, name" (not started: not one)


def graded(path: str, names: Sequence[str], cases: int, timeout: Optional[float] = None) -> Graded:
    """The grader's word on the steps among names for the gqa.py at path: graded in its
    worker (the module never runs in this process) on the public cases and cases random
    ones of seed 0, each step stopping at its first failing case; a call may take timeout
    seconds (the grader's default when None).  A module that cannot be graded fails with
    the grader's reason, and fails no public case."""
    import gqa_grader as grader
    try:
        results = grader.grade(path, 0, cases=cases, only=list(names), fail_fast=True, label=path, for_tool=True,
                               timeout=grader.DEFAULT_TIMEOUT if timeout is None else timeout)
    except grader.Refused as err:
        return Graded([str(err)], [])
    status = grader.Status
    return Graded([(_("step {step}, {name}: not started") if r.status == status.NOT_STARTED else
                    _("step {step}, {name}: failed")).format(step=r.step, name=r.name)
                   for r in results if r.status != status.PASSED],
                  [_("step {step}, {name}").format(step=r.step, name=r.name)        # passed < graded:
                   for r in results if r.status == status.FAILED and r.public[0] < r.public[1]])  # a public case


def failed_steps(path: str, names: Sequence[str], timeout: Optional[float] = None) -> List[str]:
    """The steps among names that the grader fails for the gqa.py at path, its public cases
    alone, as "step N, name" (a step not started is not among them: the report says it is
    not implemented where it is needed); [] when the module cannot be graded."""
    return graded(path, names, 0, timeout).failed


def sealed(command: str, path: str) -> None:
    """Before a tool runs the student's module at path: as root, one line on stderr saying
    that the module runs sealed, as a grade runs it (gqa_grader.tool_seal), or GQAError
    saying why it cannot (namespaces cannot be made here); nothing when not root."""
    import gqa_grader as grader
    try:
        said = grader.tool_seal()
    except grader.Refused as err:
        raise gqa.GQAError(f"--module {path}: {err}") from None
    if said:
        print(f"gqa {command}: {said}", file=sys.stderr)


def failing_steps(path: str, names: Sequence[str], timeout: Optional[float] = None) -> List[str]:
    """The steps among names that the grader does not pass for the gqa.py at path.

    Each as "step N, name: status"; [] when every one passes.  Graded by the
    grader, in its worker (the module never runs in this process), on the
    systematic cases and two random ones of seed 0, stopping at the first
    failing case of each step; a call may take timeout seconds (the grader's
    default when None).
    """
    return graded(path, names, 2, timeout).failing


# ---------------------------------------------------------------------------
# The language a student reads: --lang, else the environment's, else English.
# ---------------------------------------------------------------------------


def given(argv: Sequence[str], option: str, parser: argparse.ArgumentParser) -> Optional[str]:
    """The value argv gives option as parser would read it, before it does: --lang ja,
    --lang=ja, or an abbreviation that starts none of parser's other options (--mod PATH);
    the last one counts; None when argv does not give it."""
    longs = [name for name in parser._option_string_actions if name.startswith("--")]
    value = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        name, equals, rest = arg.partition("=")
        if name == option or (name.startswith("--") and [o for o in longs if o.startswith(name)] == [option]):
            value = rest if equals else (argv[i + 1] if i + 1 < len(argv) else "")
    return value


def chosen_lang(argv: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """The language of a command line: its --lang when that is one of ours, else the
    environment's (i18n.from_environment), else a handout's (as its self-check chooses),
    else English."""
    lang = given(argv, "--lang", parser)
    return lang if lang in i18n.LANGUAGES else default_lang()


def default_lang() -> str:
    """The language when no --lang names one (i18n.default): a Japanese or Korean handout's,
    else the environment's, else the handout's, else English."""
    found = handout()
    return i18n.default(found.lang if found else None)


# ---------------------------------------------------------------------------
# A handout: the tools written beside a student's gqa.py by `python grader.py --handout`.
# ---------------------------------------------------------------------------

class Handout(NamedTuple):
    """What a handout's grader says of it (gqa_grader.handout_track)."""
    steps: Tuple[str, ...]      # its track: the steps it grades, in the lab's order
    lang: Optional[str]         # the language it was written in
    track: Optional[str]        # the name of its track ("core"), or None


def handout() -> Optional[Handout]:
    """The handout these tools were written into, or None (in the project).  In a handout
    the gqa.py beside gqa_tools/ is the student's (LAB): the commands run it in the
    grader's worker, and never its lesson in their own process."""
    import gqa_grader as grader
    found = grader.handout_track()
    return Handout(tuple(found["steps"]), found.get("lang"), found.get("track")) if found else None


@contextlib.contextmanager
def speaking(lang: str) -> Iterator[None]:
    """Within the block, every message in lang, argparse's own words ("usage: ", "error: ")
    too; the language in use before, after it (a command run in-process leaves none behind)."""
    saved, saved_argparse = i18n.language(), argparse._
    i18n.use(lang)
    argparse._ = _
    try:
        with i18n.help_wrapped():
            yield
    finally:
        argparse._ = saved_argparse
        i18n.use(saved)


# ---------------------------------------------------------------------------
# Arithmetic outside the tally.
# ---------------------------------------------------------------------------


def project(x: List[List[float]], w: List[List[float]]) -> List[List[float]]:
    """One head's projection, not tallied: x [n][d_model] @ w [d_model][d] -> [n][d].

    Outside gqa's kernels, so what a tool prepares is not counted as the lab's work.
    """
    cols = list(zip(*w))                                     # [d][d_model]
    return [[sum(map(mul, row, col)) for col in cols] for row in x]


# ---------------------------------------------------------------------------
# --module: a student's gqa.py.
# ---------------------------------------------------------------------------


def module_missing(path: str) -> str:
    """Why --module path is no file to run: a folder (the gqa.py in it named, if it holds
    one), or nothing there.  The grader says the same of its own --module."""
    if os.path.isdir(path):
        inside = os.path.join(path, "gqa.py")
        return (_("{path} is a folder; name the gqa.py in it: --module {module}").format(path=path, module=inside)
                if os.path.isfile(inside) else
                _("{path} is a folder, and it holds no gqa.py; --module names the file to use").format(path=path))
    return _("--module {path}: no such file").format(path=path)


# ---------------------------------------------------------------------------
# Integer options: --some-name for each field of a record of defaults.
# ---------------------------------------------------------------------------


def add_int_options(parser: argparse.ArgumentParser, defaults: NamedTuple, limits: dict,
                    note=lambda name: "", what: Optional[Callable[[str], str]] = None) -> None:
    """Add an int option --some-name for each field some_name of defaults, None when not given;
    its help the default, the limit, and what(name) (translated) or else note(name) (English)."""
    for name, value in defaults._asdict().items():
        text = (_("(default {default}, at most {most}; {what})").format(
                    default=value, most=f"{limits[name]:,}", what=what(name)) if what else
                f"(default {value}, at most {limits[name]:,}{note(name)})")
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=None, help=text)


def int_options(parser: argparse.ArgumentParser, args: argparse.Namespace, base: NamedTuple,
                limits: dict):
    """Return base with the options given on the command line.

    Each must be positive (a seed at least 0) and at most its limit: past
    the limits a pure-Python run could only take hours or run out of memory.
    """
    values = {name: getattr(base, name) if getattr(args, name) is None else getattr(args, name)
              for name in base._fields}
    for name, value in values.items():
        option = f"--{name.replace('_', '-')}"
        if value < (0 if name == "seed" else 1):
            parser.error((_("{option} must be at least 0; got {value}") if name == "seed" else
                          _("{option} must be positive; got {value}")).format(option=option, value=value))
        if value > limits[name]:
            parser.error((_("{option} must be at most {most}; got {value}") if value < 10 ** 30 else
                          _("{option} must be at most {most}; got a larger number")).format(
                              option=option, most=f"{limits[name]:,}", value=value))
    return type(base)(**values)


@contextlib.contextmanager
def progress_line(tool: str) -> Iterator[Callable[[str], None]]:
    """Yield a function that shows progress on stderr as "tool: text ...".

    On a terminal each message overwrites the last and the line is cleared
    at the end; otherwise each is a line of its own, so a log keeps them.
    """
    tty = sys.stderr.isatty()

    def show(text: str) -> None:
        print(f"\r{tool}: {text} ...", end="" if tty else "\n", file=sys.stderr, flush=True)

    try:
        yield show
    finally:
        if tty:
            print("\r" + " " * 60 + "\r", end="", file=sys.stderr, flush=True)
