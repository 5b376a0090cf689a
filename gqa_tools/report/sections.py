"""gqa_tools.report.sections: the report's sections in order, put together.

SECTIONS are the project's report, STUDENT_SECTIONS a student's (--module),
HANDOUT_SECTIONS a handout's (`python -m gqa report` in a handout's folder);
each title is a message id.  build_parts() writes each section as a Part (a
section that cannot be computed says why in its place), assemble() joins
them into report.md's text, and figures_of() checks every figure that
comes back, from this process or a child's.
"""

from __future__ import annotations

import re
from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple, Union

import gqa
from gqa_grader.language.i18n import N_, _
from gqa_tools.referee import Handout
from gqa_tools.report.costs import (section_block, section_cache, section_decoding, section_multiplies,
                                    section_what_g_is)
from gqa_tools.report.lab import Hung, Lab, reason
from gqa_tools.report.measuring import Measured
from gqa_tools.report.outputs import section_conversion, section_output
from gqa_tools.report.reading import section_reading
from gqa_tools.report.settings import Config
from gqa_tools.report.student import handout_header, section_output_of_module, section_write_up, student_header
from gqa_tools.report.text import FIGURES, Figures
from gqa_tools.report.trained import section_training
from gqa_tools.svg import not_a_figure


def section_header(cfg: Config, lab: Lab, module: Optional[str], handout: Optional[Handout] = None,
                   out: Optional[str] = None) -> str:
    """The report's header: a handout's (handout_header), a student's (student_header), or
    the project's, always in English; its command names out, the --out given."""
    if handout:
        return handout_header(cfg, lab, module, handout, out)
    if module:
        return student_header(cfg, lab, module, out)
    return (f"# gqa lab report\n\n"
            f"Written by `{cfg.command(out=out)}`. Every number below was computed, counted or "
            f"measured by `{lab.label}` when that command ran; `python -m gqa report --check` tells "
            f"whether this file is still what the code writes. The real-size configuration "
            f"(counted by the closed forms) has h = {cfg.heads} query heads, head dim "
            f"{cfg.head_dim}, {cfg.layers} layers, {cfg.context:,} positions and d_model = "
            f"{cfg.d_model:,}. The small configuration that the code actually runs has the same "
            f"{cfg.heads} query heads, head dim {cfg.run_head_dim}, d_model {cfg.run_d_model}, "
            f"{cfg.run_context} positions and {cfg.run_layers} layers, with random, untrained "
            f"weights from seeds {cfg.seed} to {cfg.seed + cfg.seeds - 1}.\n")


# The sections' titles are message ids: a student's report shows them translated, _(title).
SECTIONS = ((N_("1. What g is"), section_what_g_is),
            (N_("2. The KV cache: what g changes"), section_cache),
            (N_("3. One attention layer's multiplications: the body has no g"), section_multiplies),
            (N_("4. The whole block: what share of the work g changes"), section_block),
            (N_("5. The output: it changes"), section_output),
            (N_("6. Converting an MHA checkpoint: mean, first head, or random"), section_conversion),
            (N_("7. Decoding reads the whole cache for every token"), section_decoding),
            (N_("8. Converting is not training: does quality come back?"), section_training),
            ("9. How to read this", section_reading))

# Section 8, the one that trains (a student's module trains in a child process of its own).
TRAINING_SECTION = SECTIONS[7]

# A student's report (--module): section 5 first runs `attention` on random q, k, v (the
# handout's lab has no `layer` yet), and section 9 is the student's own write-up.
STUDENT_SECTIONS = (SECTIONS[:4] + ((N_("5. The output: it changes"), section_output_of_module),)
                    + SECTIONS[5:8] + ((N_("9. Your write-up: what these numbers say"), section_write_up),))

# A handout's report: a student's without section 8 (the handout's lab does not train; its
# header says so).
HANDOUT_SECTIONS = STUDENT_SECTIONS[:7] + STUDENT_SECTIONS[8:]


class Part(NamedTuple):
    """One piece of report.md: its heading ("" for the header), its Markdown and its figures.

    figures holds (file name, SVG text) pairs, written into the folder beside
    the report (report-figures/ beside report.md); the body links them as
    figures/NAME, and assemble() points the links at that folder.  A Part is
    plain data, so a report built from a student's module in another process
    comes back as a list of them (figures_of() checks what comes back).
    """
    title: str
    body: str
    figures: Tuple[Tuple[str, str], ...] = ()


def build_parts(cfg: Config, m: Measured, lab: Optional[Lab] = None,
                module: Optional[str] = None, handout: Optional[Handout] = None,
                out: Optional[str] = None) -> List[Part]:
    """Return report.md's header and sections as Parts, in order: SECTIONS, with a module
    (a student's, named so in the header) STUDENT_SECTIONS, in a handout HANDOUT_SECTIONS
    (module: the one --module gave, or None for the handout's own gqa.py); the header's
    command names out, the --out given.

    A section that cannot be computed from lab says why, in its place.
    """
    lab = lab or Lab(gqa, "gqa.py")
    parts = [Part("", section_header(cfg, lab, module, handout, out))]
    for title, section in HANDOUT_SECTIONS if handout else STUDENT_SECTIONS if module else SECTIONS:
        parts.append(build_part(cfg, m, lab, title, section))
    return parts


def build_part(cfg: Config, m: Measured, lab: Lab, title: str, section: Callable[..., Any]) -> Part:
    """One section as a Part: written by section, or, when it cannot be computed, its note."""
    try:
        written: Union[str, Tuple[str, Figures]] = section(cfg, lab, m)
        body, figures = (written, ()) if isinstance(written, str) else written
    except (Exception, Hung) as err:        # a student's module can fail in any way
        return Part(_(title), not_computed(lab.label, reason(err)))
    return Part(_(title), body, tuple(figures))


def not_computed(module: str, why: str) -> str:
    """A section's note in its place: why it was not computed from module."""
    return _("*Not computed from {module}: {why}.*").format(module=module, why=why) + "\n"


def assemble(parts: Sequence[Part], folder: str = "report-figures") -> str:
    """report.md's text from its Parts, its figures linked in folder (relative to it)."""
    text = "\n".join(p.body if not p.title else f"## {p.title}\n\n{p.body}"
                     for p in parts).rstrip("\n") + "\n"
    return text.replace(f"]({FIGURES}/", f"]({folder}/")


def figures_of(parts: Sequence[Part]) -> List[Tuple[str, str]]:
    """Every Part's figures, in order, each checked: a plain file name, and SVG that draws only.

    ValueError when a name could leave the folder, two figures share one,
    or an SVG holds what the figures never do (a script, a link): Parts may
    come back from another process.
    """
    figures = [fig for p in parts for fig in p.figures]
    names = [name for name, _ in figures]
    for name, svg in figures:
        if not (isinstance(name, str) and FIGURE_NAME.fullmatch(name) and isinstance(svg, str)):
            raise ValueError(_("a figure must be a file name such as grouping.svg and its SVG text; "
                               "got {name}").format(name=repr(name)))
        why = not_a_figure(svg)
        if why:
            raise ValueError(_("figure {name} is not one the report draws: {why}").format(name=name, why=why))
    if len(set(names)) != len(names):
        raise ValueError(_("two figures share a file name: {names}").format(names=sorted(names)))
    return figures


# What a figure's file name may be: no folder, no dot file, nothing but .svg.
FIGURE_NAME = re.compile(r"[a-z0-9][a-z0-9-]*\.svg")


def build_report(cfg: Config, m: Measured, lab: Optional[Lab] = None,
                 module: Optional[str] = None) -> str:
    """Return report.md's text for a configuration and its measurements."""
    return assemble(build_parts(cfg, m, lab, module))
