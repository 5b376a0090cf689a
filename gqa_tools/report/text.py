"""gqa_tools.report.text: what every section is written with.

A section returns its Markdown, or (body, figures) with figures as (file
name, SVG text) pairs; it links each figure with figure_link().  labels()
names the valid g of h once for every section ("MHA", "GQA g=4").
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Tuple

from gqa_grader.language.i18n import _
from gqa_tools.formats import fmt
from gqa_tools.report.lab import Lab
from gqa_tools.report.measuring import Spread


# A section's figures: (file name, SVG text) pairs, written into the report's
# figure folder; its body links them with figure_link().
Figures = Tuple[Tuple[str, str], ...]

# The folder a section's body links its figures in, FIGURES/name; assemble()
# points the links at the folder beside the report (report-figures/ beside
# report.md, myreport-figures/ beside myreport.md).
FIGURES = "figures"


def figure_link(name: str, alt: str) -> str:
    """Markdown that shows a figure: alt text says what it shows.

    Links point into FIGURES; assemble() points them at the folder beside
    the report being written.
    """
    return f"![{alt}]({FIGURES}/{name})"


def mean_range(s: Spread) -> str:
    """A value measured over the seeds: "mean (lowest to highest)"."""
    return _("{mean} ({low} to {high})").format(mean=fmt(s.mean), low=fmt(s.low), high=fmt(s.high))


def yes_no(ok: bool) -> str:
    """A check's outcome in a table or a sentence: yes, or a bold NO."""
    return _("yes") if ok else _("**NO**")


def code_block(text: str) -> str:
    """text as a Markdown code block: the bars, which line up in a fixed-width font."""
    return "```\n" + text + "\n```"


class Labels(NamedTuple):
    """What every section names the valid g by."""
    gs: List[int]
    name: Dict[int, str]        # g -> "MHA", "GQA" or "MQA"
    label: Dict[int, str]       # g -> "GQA g=4"


def labels(lab: Lab, h: int) -> Labels:
    """The valid g of h, each named by the lab's method_name and labelled "GQA g=4"."""
    gs = lab.valid_g(h)
    name = {g: lab.method_name(h, g) for g in gs}
    return Labels(gs, name, {g: f"{name[g]} g={g}" for g in gs})
