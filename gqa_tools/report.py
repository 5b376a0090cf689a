"""gqa_tools.report: report.md, the lab report, written by the code.

    python -m gqa report [--out report.md] [--check] [--module PATH] [configuration options]

Every number in the report is computed, counted or measured by a gqa.py when
the command runs: none is typed in.  By default that is the project's gqa.py
(beside gqa_tools/), written to the checkout's report.md (./report.md once
installed); --module PATH builds the report from another one, a student's,
in a child process with the grader's limits and deadlines (this process
never imports it), and a section whose functions are missing or fail, or
that never came back, says so instead.  That is the student's report
(STUDENT_SECTIONS): section 5 first runs the module's `attention` on random
q, k, v, and section 9 holds the handout's questions for the student to
answer; a section, or a part of one (the counted caches, the tally), that
needs a step the module lacks names that step ("needs step 21, KVCache"),
and the rest of it stands.  That report goes beside the module
(report.md in PATH's folder) unless --out says where, and never over the
project's own.  What would stop a write (no such folder, a path that is not
a file) is refused before any work.  The report is the same to the byte on
every run, machine and Python version: seeded random numbers
(gqa_tools.common's one scheme), a fixed order, fixed precision, no
timings, no dates, no machine names.

measure() runs the lab on a small configuration; each section_*() function
writes one section from the closed forms and those measurements, and returns
its Markdown, or its Markdown and its figures (SVG text drawn by
gqa_tools.figures from the numbers of the table beside each); build_parts() and
assemble() put the sections together.  The figures are written into a folder
beside the report, report-figures/ beside report.md, and --check compares
them too.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import gqa
from gqa_grader import i18n
from gqa_grader.i18n import N_, _, ngettext
from gqa_tools import figures as draw
from gqa_tools import uptraining as training
from gqa_tools.common import (WriteRefused, add_int_options, bar, bar_chart, block_bars, block_markdown,
                       block_rows, chosen_lang, failing_steps, fmt, given, human_bytes, int_options,
                       markdown_table, multiplies_markdown, progress_line, project, rng_for, seed_for,
                       speaking, stage, step_name, write_target)
from gqa_tools.statistics import share_verdict
from gqa_tools.uptraining import CONVERSIONS

# Ainslie et al. 2023 (GQA), section 3.1: after mean-pooling, the converted
# checkpoints are trained further for alpha = 0.05 of the original pre-training
# steps.  A citation, not a measurement: it is the one number the report quotes.
GQA_PAPER_UPTRAINING = 0.05


class Model(NamedTuple):
    """A real model's block, as its config.json gives it."""
    name: str
    heads: int          # num_attention_heads
    kv_heads: int       # num_key_value_heads
    head_dim: int       # hidden_size / num_attention_heads
    d_model: int        # hidden_size
    d_ff: int           # intermediate_size
    mlp_matrices: int   # gate, up and down: Llama's SwiGLU MLP


# The whole-block view's two models, with the fields of their config.json
# files (examples/configs/llama-2-7b.json and llama-2-70b.json; a test checks
# that these agree with what gqa_tools.sizer reads from those files).
BLOCK_MODELS = (Model("Llama-2-7B", 32, 32, 128, 4096, 11008, 3),
                Model("Llama-2-70B", 64, 8, 128, 8192, 28672, 3))


class Config(NamedTuple):
    """What the report is computed for; the defaults are the committed report.md."""
    heads: int = 32             # h, query heads, in both configurations
    head_dim: int = 128         # d of the real-size configuration
    layers: int = 32
    context: int = 4096         # positions of the real-size configuration
    batch: int = 32             # for the decode traffic ratio
    run_head_dim: int = 4       # the small configuration the code actually runs
    run_d_model: int = 32
    run_context: int = 12
    run_layers: int = 2
    seed: int = 0
    seeds: int = 5              # seeds seed, seed + 1, ..., for the output difference

    @property
    def d_model(self) -> int:
        return self.heads * self.head_dim

    def command(self, module: Optional[str] = None) -> str:
        """The command that writes the report: with a module, in the language in use."""
        parts = ["python -m gqa report"] + ([f"--module {module}"] if module else [])
        if module and i18n.language() != "en":
            parts.append(f"--lang {i18n.language()}")
        for name, value in self._asdict().items():
            parts.append(f"--{name.replace('_', '-')} {value}")
        return " ".join(parts)


# The largest value of each option: the closed forms take any size, but the
# small configuration is run in pure Python, and past these a report would
# take far more than minutes.
LIMITS = {"heads": 256, "head_dim": 65536, "layers": 10 ** 6, "context": 10 ** 9, "batch": 10 ** 9,
          "run_head_dim": 64, "run_d_model": 512, "run_context": 256, "run_layers": 8,
          "seed": 10 ** 9, "seeds": 100}

# What each option means, for --help: one line each (translated where shown).
OPTION_HELP = {
    "heads": N_("query heads h of both configurations"),
    "head_dim": N_("head dim d of the real-size configuration (counted, not run)"),
    "layers": N_("layers of the real-size configuration"),
    "context": N_("positions of the real-size configuration (and of the whole-block view)"),
    "batch": N_("sequences decoded together, for section 7's reads per multiplication"),
    "run_head_dim": N_("head dim of the small configuration that the code runs"),
    "run_d_model": N_("model width of the small configuration"),
    "run_context": N_("positions of the small configuration"),
    "run_layers": N_("layers the small configuration decodes through"),
    "seed": N_("the first seed of the random weights and inputs"),
    "seeds": N_("how many seeds (seed, seed + 1, ...) the measured figures are averaged over"),
}


# ---------------------------------------------------------------------------
# The module the report is built from: every call guarded.
# ---------------------------------------------------------------------------

class Unavailable(Exception):
    """A number the report cannot get from the module it is built from."""


def reason(err: BaseException) -> str:
    """Why a section could not be computed, in one line."""
    if isinstance(err, Unavailable):
        return str(err)
    if isinstance(err, NotImplementedError):
        step = _raising_step(err)
        return not_implemented(step) if step else _("a function it needs is not implemented yet")
    return _("computing it raised {type}: {error}").format(type=type(err).__name__, error=err)


# This folder: a frame of the tools' own is never the lab's step that raised.
TOOLS = os.path.dirname(os.path.abspath(__file__))


def _raising_step(err: BaseException, called: Optional[str] = None) -> Optional[str]:
    """The lab's step whose code raised err: the innermost frame named as a step (the
    starter's stub of fold_kv_mean, called by the student's attention), else called."""
    found, tb = called, err.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if step_name(code.co_name) and os.path.dirname(os.path.abspath(code.co_filename)) != TOOLS:
            found = code.co_name
        tb = tb.tb_next
    return found


def not_implemented(name: str) -> str:
    """What a section says for a function that raised NotImplementedError: the step it needs."""
    step = step_name(name)
    return (_("needs {step}: not implemented yet").format(step=step) if step else
            _("`{name}` is not implemented yet").format(name=name))


class Lab:
    """A gqa module whose functions raise Unavailable, saying why, when they cannot answer."""

    def __init__(self, module: Any, label: str) -> None:
        self.module, self.label = module, label

    def __getattr__(self, name: str) -> Any:
        obj = getattr(self.module, name, None)
        if obj is None:
            step = step_name(name)
            raise Unavailable((_("needs {step}: {label} has no `{name}`") if step else
                               _("{label} has no `{name}`")).format(step=step, label=self.label, name=name))
        if not callable(obj) or isinstance(obj, type) and issubclass(obj, BaseException):
            return obj

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return obj(*args, **kwargs)
            except NotImplementedError as err:
                raise Unavailable(not_implemented(_raising_step(err, name) or name)) from None
            except Unavailable:
                raise
            except Exception as err:
                raise Unavailable(_("`{name}` raised {type}: {error}").format(
                    name=name, type=type(err).__name__, error=err)) from None
        return call


class Missing(NamedTuple):
    """A measurement that could not be made, and why."""
    why: str


def attempt(measurement: Callable[[], Any]) -> Any:
    """The measurement's value, or Missing(why)."""
    try:
        return measurement()
    except Exception as err:            # a student's module can fail in any way
        return Missing(reason(err))


def need(value: Any) -> Any:
    """The value of a measurement; Unavailable when it is Missing."""
    if isinstance(value, Missing):
        raise Unavailable(value.why)
    return value


# ---------------------------------------------------------------------------
# Measuring: the small configuration, run for real.
# ---------------------------------------------------------------------------

def run_weights(lab: Lab, cfg: Config, seed: int, layer: int = 0) -> Any:
    """The small configuration's MHA weights of one layer, for one seed."""
    stream = "weights" if layer == 0 else f"weights of layer {layer}"
    return lab.init_weights(cfg.heads, cfg.run_d_model, cfg.run_head_dim, seed=seed_for(stream, seed))


def run_input(cfg: Config, seed: int) -> List[List[float]]:
    """The small configuration's input for one seed: x [n][d_model]."""
    rng = rng_for("input", seed)
    return [[rng.uniform(-1.0, 1.0) for _ in range(cfg.run_d_model)] for _ in range(cfg.run_context)]


def ready(lab: Lab, w: Any, g: int) -> Any:
    """prepare_weights(w, g), checked once for a whole decode, where the module has it; else w."""
    try:
        return lab.prepare_weights(w, g)
    except Unavailable:
        return w


def counted_cache(lab: Lab, cfg: Config, g: int) -> int:
    """Decode the small configuration through run_layers layers; return the floats cached."""
    caches = [lab.KVCache(g, cfg.run_head_dim) for _ in range(cfg.run_layers)]
    weights = [ready(lab, run_weights(lab, cfg, cfg.seed, layer), g) for layer in range(cfg.run_layers)]
    for x_t in run_input(cfg, cfg.seed):
        for w, cache in zip(weights, caches):
            x_t = lab.decode_step(x_t, w, g, cache)
    return sum(cache.elements for cache in caches)


def tallied_multiplies(lab: Lab, cfg: Config, g: int) -> Any:
    """The multiplications tallied while a causal layer() runs once on the small configuration."""
    counting = lab.count_multiplies()       # asked for first: a module without step 20 is told so
    w, x = run_weights(lab, cfg, cfg.seed), run_input(cfg, cfg.seed)
    with counting as tally:
        lab.layer(x, w, g, causal=True)
    return tally.multiplies()


def first_head(lab: Lab, w: Any, g: int) -> Any:
    """Convert by keeping the first K/V head of each group."""
    groups = lab.group_heads(len(w.w_q), g)
    return w._replace(w_k=[w.w_k[grp[0]] for grp in groups], w_v=[w.w_v[grp[0]] for grp in groups])


def random_heads(lab: Lab, w: Any, g: int, seed: int) -> Any:
    """Convert by drawing g new random K/V heads (the scale of init_weights)."""
    fresh = lab.init_weights(g, len(w.w_q[0]), len(w.w_q[0][0]), seed=seed_for("random heads", seed))
    return w._replace(w_k=fresh.w_k, w_v=fresh.w_v)


class Spread(NamedTuple):
    """A measured value over the seeds."""
    mean: float
    low: float
    high: float


def spread(values: Sequence[float]) -> Spread:
    return Spread(sum(values) / len(values), min(values), max(values))


class DifferenceSpread(NamedTuple):
    """gqa.Difference's three fields, each over the seeds."""
    max_abs: Spread
    rel_l2: Spread
    cosine: Spread


class Measured(NamedTuple):
    """Everything the report measures on the small configuration; any field may be Missing."""
    cache_counted: Any          # g -> floats held by real caches
    tallied: Any                # g -> Multiplies tallied while a causal layer() ran
    difference: Any             # g -> DifferenceSpread of layer(g) against layer(h)
    exact_mha: Any              # attention(g = h) == per-head MHA, on every seed
    conversion: Any             # (g, conversion) -> Spread of the relative L2
    head_cosine: Any            # Spread of |cosine| between two heads' projected keys
    training: Any = None        # training.run(QUICK): the uptraining lab's quick recipe


def measure_outputs(lab: Lab, cfg: Config) -> Tuple[Dict[int, DifferenceSpread], Dict, bool]:
    """Each seed's layer(g) against layer(h), each conversion's, and the exact-MHA check."""
    h, gs = cfg.heads, lab.valid_g(cfg.heads)
    diffs: Dict[int, list] = {g: [] for g in gs}
    conv: Dict[Tuple[int, str], list] = {(g, name): [] for g in gs for name in CONVERSIONS}
    exact = True
    for seed in range(cfg.seed, cfg.seed + cfg.seeds):
        w, x = run_weights(lab, cfg, seed), run_input(cfg, seed)
        mha = lab.layer(x, w, h)
        for g in gs:
            diffs[g].append(lab.output_difference(lab.layer(x, w, g), mha))
            for name, converted in (("mean", lab.fold_weights(w, g)), ("first", first_head(lab, w, g)),
                                    ("random", random_heads(lab, w, g, seed))):
                conv[(g, name)].append(lab.output_difference(lab.layer(x, converted, g), mha).rel_l2)
        q, k, v = ([project(x, wi) for wi in heads] for heads in (w.w_q, w.w_k, w.w_v))   # [h][n][d]
        per_head = [lab.single_head_attention(q[i], k[i], v[i]) for i in range(h)]
        exact = exact and lab.attention(q, k, v, h) == per_head
    difference = {g: DifferenceSpread(*(spread([getattr(d, f) for d in diffs[g]])
                                        for f in DifferenceSpread._fields)) for g in gs}
    return difference, {key: spread(values) for key, values in conv.items()}, exact


def head_cosines(lab: Lab, cfg: Config) -> Spread:
    """|cosine| between the projected keys of every two heads, over every pair and seed."""
    values = []
    for seed in range(cfg.seed, cfg.seed + cfg.seeds):
        w, x = run_weights(lab, cfg, seed), run_input(cfg, seed)
        k = [project(x, wk) for wk in w.w_k]                             # [h][n][d]
        values += [abs(lab.output_difference(k[i], k[j]).cosine)
                   for i in range(len(k)) for j in range(i + 1, len(k))]
    return spread(values)


# Section 8's training, the report's one slow part, is kept beside report.md in
# report-training.json with the sha256 of all its numbers come from (gqa.py's kernels,
# the training's code and seeds, the recipe, and whether this Python adds with
# math.sumprod).  `report --check` trains again unless that record's key is the one the
# code has now; writing the report always trains, and writes the record.
TRAINING_RECORD = "report-training.json"


def training_key(recipe: Any) -> str:
    """The sha256 of what section 8's numbers depend on: its inputs' bytes and the recipe."""
    import hashlib
    import json
    from gqa_tools import common
    digest = hashlib.sha256()
    for module in (gqa, *training.SOURCES, common):
        with open(module.__file__, "rb") as f:
            digest.update(hashlib.sha256(f.read()).digest())
    digest.update(json.dumps(recipe._asdict(), sort_keys=True).encode("utf-8"))
    digest.update(b"sumprod" if hasattr(math, "sumprod") else b"sum")
    return digest.hexdigest()


def recorded_training(path: str, recipe: Any) -> Optional[dict]:
    """The training in the record at path, when its key is the code's now; else None."""
    import json
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record.get("result") if isinstance(record, dict) and record.get("key") == training_key(recipe) else None


def write_training(path: str, recipe: Any, result: dict) -> None:
    """The record of section 8's training at path, whole or not at all."""
    import json
    result = dict(result, seconds=0.0)              # how long it took: not the report's, and not the same twice
    text = json.dumps({"key": training_key(recipe), "recipe": recipe._asdict(), "result": result},
                      sort_keys=True, indent=1, allow_nan=False) + "\n"
    target = write_target(path)
    os.replace(stage(target, text), target)


def measure(cfg: Config, lab: Optional[Lab] = None,
            progress: Optional[Callable[[str], None]] = None,
            untrained: Optional[str] = None, recipe: Optional[Any] = None, jobs: int = 1,
            record: Optional[dict] = None) -> Measured:
    """Everything the report measures.  Section 8 trains with lab when untrained is
    "", and says why not when it is text; by default (None) it trains the project's
    gqa.py only: another module is trained when its caller has checked that the
    steps training needs pass (parts_from_child).  jobs: the processes that train
    section 8's seeds (the project's gqa.py only; the report is the same for every jobs).
    record: section 8's training as recorded (recorded_training), used instead of training."""
    lab = lab or Lab(gqa, "gqa.py")
    if untrained is None:
        untrained = "" if lab.module is gqa else _("not run for this module")
    outputs = attempt(lambda: measure_outputs(lab, cfg))
    part = (lambda i: Missing(outputs.why)) if isinstance(outputs, Missing) else outputs.__getitem__
    return Measured(
        cache_counted=attempt(lambda: {g: counted_cache(lab, cfg, g) for g in lab.valid_g(cfg.heads)}),
        tallied=attempt(lambda: {g: tallied_multiplies(lab, cfg, g) for g in lab.valid_g(cfg.heads)}),
        difference=part(0), conversion=part(1), exact_mha=part(2),
        head_cosine=attempt(lambda: head_cosines(lab, cfg)),
        training=(record if record is not None else
                  attempt(lambda: training.run(report_recipe(cfg, recipe), lab=lab if lab.module is not gqa else gqa,
                                               progress=progress, jobs=jobs)))
        if not untrained else Missing(untrained))


def report_recipe(cfg: Config, recipe: Optional[Any] = None) -> Any:
    """The recipe section 8 trains: the quick one (or recipe), from the report's seed."""
    return (recipe or training.QUICK)._replace(seed=cfg.seed)


# ---------------------------------------------------------------------------
# Writing: one function per section, each returning its Markdown body.
# ---------------------------------------------------------------------------

# A section's figures: (file name, SVG text) pairs, written into the report's
# figure folder; its body links them with figure_link().
Figures = Tuple[Tuple[str, str], ...]


def figure_link(name: str, alt: str) -> str:
    """Markdown that shows a figure: alt text says what it shows.

    Links point into FIGURES; assemble() points them at the folder beside
    the report being written.
    """
    return f"![{alt}]({FIGURES}/{name})"


def _spread(s: Spread) -> str:
    return _("{mean} ({low} to {high})").format(mean=fmt(s.mean), low=fmt(s.low), high=fmt(s.high))


def _ranges(groups: List[List[int]], limit: int = 4) -> str:
    parts = [f"{grp[0]}–{grp[-1]}" if len(grp) > 1 else str(grp[0]) for grp in groups]
    return ", ".join(parts if len(parts) <= limit else parts[:2] + ["…"] + parts[-1:])


def _yes(ok: bool) -> str:
    return _("yes") if ok else _("**NO**")


def _code(text: str) -> str:
    return "```\n" + text + "\n```"


class Labels(NamedTuple):
    """What every section names the valid g by."""
    gs: List[int]
    name: Dict[int, str]        # g -> "MHA", "GQA" or "MQA"
    label: Dict[int, str]       # g -> "GQA g=4"


def labels(lab: Lab, h: int) -> Labels:
    gs = lab.valid_g(h)
    name = {g: lab.method_name(h, g) for g in gs}
    return Labels(gs, name, {g: f"{name[g]} g={g}" for g in gs})


def section_header(cfg: Config, lab: Lab, module: Optional[str]) -> str:
    """The report's header: a student's (student_header), or the project's, always in English."""
    if module:
        return student_header(cfg, lab, module)
    return (f"# gqa lab report\n\n"
            f"Written by `{cfg.command()}`. Every number below was computed, counted or "
            f"measured by `{lab.label}` when that command ran; `python -m gqa report --check` tells "
            f"whether this file is still what the code writes. The real-size configuration "
            f"(counted by the closed forms) has h = {cfg.heads} query heads, head dim "
            f"{cfg.head_dim}, {cfg.layers} layers, {cfg.context:,} positions and d_model = "
            f"{cfg.d_model:,}. The small configuration that the code actually runs has the same "
            f"{cfg.heads} query heads, head dim {cfg.run_head_dim}, d_model {cfg.run_d_model}, "
            f"{cfg.run_context} positions and {cfg.run_layers} layers, with random, untrained "
            f"weights from seeds {cfg.seed} to {cfg.seed + cfg.seeds - 1}.\n")


def student_header(cfg: Config, lab: Lab, module: str) -> str:
    """The header of a student's report (--module), in the language in use."""
    return "# " + _("gqa lab report") + "\n\n" + _(
        "Written by `{command}`. Every number below was computed, counted or measured by "
        "`{module}` (given with `--module`, not the `gqa.py` of this project), in the grader's "
        "worker, when that command ran; the same command with `--check` tells whether this file "
        "is still what the code writes. A section, or a part of one, that needs a step this module "
        "does not have yet names that step in its place, and one that failed says how. Section 9 "
        "is yours to write. The real-size configuration (counted by the closed forms) has h = "
        "{heads} query heads, head dim {head_dim}, {layers} layers, {context} positions and "
        "d_model = {d_model}. The small configuration that the code actually runs has the same "
        "{heads} query heads, head dim {run_head_dim}, d_model {run_d_model}, {run_context} "
        "positions and {run_layers} layers, with random, untrained weights from seeds {first} to "
        "{last}.").format(
            command=cfg.command(module), module=lab.label, heads=cfg.heads, head_dim=cfg.head_dim,
            layers=cfg.layers, context=f"{cfg.context:,}", d_model=f"{cfg.d_model:,}",
            run_head_dim=cfg.run_head_dim, run_d_model=cfg.run_d_model, run_context=cfg.run_context,
            run_layers=cfg.run_layers, first=cfg.seed, last=cfg.seed + cfg.seeds - 1) + "\n"


def section_what_g_is(cfg: Config, lab: Lab, m: Measured) -> Tuple[str, Figures]:
    h, ids = cfg.heads, labels(lab, cfg.heads)
    try:
        drawn, figures = grouping(lab)
    except Unavailable as why:
        drawn, figures = _("*Figure not drawn: {why}.*").format(why=why) + "\n", ()
    return _table_of_groups(cfg, lab, h, ids) + "\n" + drawn, figures


def _table_of_groups(cfg: Config, lab: Lab, h: int, ids: "Labels") -> str:
    try:
        groups = {g: _ranges(lab.group_heads(h, g)) for g in ids.gs}
        note = []
    except Unavailable as why:
        groups = {g: "—" for g in ids.gs}
        note = [_("*Not shown: {why}.*").format(why=why) + "\n"]
    return "\n".join([
        _("One knob: g, the number of key/value heads. It must divide h = {h}, and each "
          "contiguous block of h // g query heads reads one key/value head "
          "(`kv_head(i, h, g) = i // (h // g)`).").format(h=h) + "\n",
        markdown_table([_("method"), _("g (kv heads)"), "h // g", _("query heads of each key/value head")],
                       [(ids.name[g], g, h // g, groups[g]) for g in ids.gs]),
        ""] + note)


# The grouping figure's h: eight query heads, as in the GQA paper's Figure 2.
GROUPING_HEADS = 8


def grouping(lab: Lab) -> Tuple[str, Figures]:
    """The grouping at h = 8, g = 8, 4, 2, 1: a table of kv_head and its figure."""
    h = GROUPING_HEADS
    gs = sorted(lab.valid_g(h), reverse=True)
    reads = {g: [lab.kv_head(i, h, g) for i in range(h)] for g in gs}
    for g in gs:
        for i, j in enumerate(reads[g]):
            if type(j) is not int or not 0 <= j < g:
                raise Unavailable(_("`kv_head({i}, {h}, {g})` returned {value}, not a key/value head "
                                    "0 to {last}").format(i=i, h=h, g=g, value=repr(j), last=g - 1))
    names = {g: lab.method_name(h, g) for g in gs}
    svg = draw.grouping_figure(h, [(names[g], g, reads[g]) for g in gs])
    body = "\n".join([
        _("Drawn for h = {h}, as in the GQA paper's Figure 2: the key/value head that each query head "
          "reads, `kv_head(i, {h}, g)`, at g = {gs}.").format(h=h, gs=", ".join(map(str, gs))) + "\n",
        markdown_table([_("method"), "g"] + [f"q{i}" for i in range(h)],
                       [(names[g], g) + tuple(reads[g]) for g in gs]),
        "",
        figure_link("grouping.svg", _("For h = {h} query heads at g = {gs}: each query head joined to "
                                      "the key/value head it reads; groups of {sizes} neighbouring "
                                      "query heads share one").format(
                        h=h, gs=", ".join(map(str, gs)), sizes=", ".join(str(h // g) for g in gs))),
        ""])
    return body, (("grouping.svg", svg),)


def section_cache(cfg: Config, lab: Lab, m: Measured) -> str:
    ids = labels(lab, cfg.heads)
    cache = lab.cache_table(cfg.heads, layers=cfg.layers, length=cfg.context, head_dim=cfg.head_dim)
    return "\n".join([
        _("{layers} layers x {context} positions x head dim {head_dim}, one sequence; "
          "2 x layers x g x length x head_dim numbers (K and V; queries are never cached).").format(
              layers=cfg.layers, context=f"{cfg.context:,}", head_dim=cfg.head_dim) + "\n",
        markdown_table([_("method"), "g", _("cache elements"), _("ratio to MHA"), _("bytes at 16 bits")],
                       [(r.method, r.kv_heads, f"{r.elements:,}", fmt(r.ratio),
                         f"{human_bytes(2 * r.elements)} ({2 * r.elements:,})") for r in cache]),
        "",
        _code(bar_chart([ids.label[r.kv_heads] for r in cache], [r.elements for r in cache],
                        [human_bytes(2 * r.elements) for r in cache])),
        "",
        counted_in_caches(cfg, lab, m, ids)])


def counted_in_caches(cfg: Config, lab: Lab, m: Measured, ids: Labels) -> str:
    """Section 2's second table: the floats real caches held, beside kv_cache_elements;
    without KVCache (step 21) or the steps that decode, a note naming the step."""
    try:
        counted = need(m.cache_counted)
        formula = {g: lab.kv_cache_elements(cfg.run_layers, g, cfg.run_context, cfg.run_head_dim)
                   for g in ids.gs}
    except Unavailable as why:
        return _("*Not counted in real caches: {why}.*").format(why=why) + "\n"
    return "\n".join([
        _("Counted: the small configuration decoded {positions} positions through {layers} layers "
          "with `KVCache` and `decode_step`, and the floats the caches hold were counted from their "
          "`array('d')` storage.").format(positions=cfg.run_context, layers=cfg.run_layers) + "\n",
        markdown_table([_("method"), "g", _("counted in real caches"), "kv_cache_elements",
                        _("counted = formula")],
                       [(ids.name[g], g, f"{counted[g]:,}", f"{formula[g]:,}",
                         _yes(counted[g] == formula[g])) for g in ids.gs]),
        ""])


def _split_bars(cfg: Config, lab: Lab, ids: Labels, width: int = 40) -> str:
    """One bar per g: the attention body, the q and o projections, the k and v projections."""
    mult = lab.multiplies_table(cfg.context, cfg.heads, cfg.head_dim, cfg.d_model, causal=True)
    top, pad = mult[-1].counts.total, max(map(i18n.width, ids.label.values()))
    lines = []
    for r in mult:
        c = r.counts
        body = round(width * (c.scores + c.weighted_sum) / top)
        qo = round(width * (c.scores + c.weighted_sum + c.q_proj + c.o_proj) / top) - body
        kv = round(width * c.total / top) - body - qo
        lines.append(f"{i18n.ljust(ids.label[r.kv_heads], pad)}  {('█' * body + '▒' * qo + '░' * kv).ljust(width)}  "
                     + _("{ratio} of MHA").format(ratio=fmt(r.ratio.total)))
    return "\n".join(lines)


def run_formula(lab: Lab, cfg: Config, g: int) -> Any:
    return lab.attention_multiplies(cfg.run_context, cfg.heads, g, cfg.run_head_dim,
                                    cfg.run_d_model, causal=True)


def section_multiplies(cfg: Config, lab: Lab, m: Measured) -> str:
    ids = labels(lab, cfg.heads)
    args = (cfg.context, cfg.heads, cfg.head_dim, cfg.d_model)
    mha = lab.multiplies_table(*args, causal=True)[-1].counts
    kv_share = (mha.k_proj + mha.v_proj) / mha.total
    return "\n".join([
        _("One attention layer over a prompt of n = {n} positions, causal (a decoder's prefill: "
          "query i attends to positions 0 to i, n (n + 1) / 2 pairs), per term. Only the K and V "
          "projections have g in them; the attention body, scores and weighted sum (h x d x "
          "n (n + 1) / 2 each), is the same at every g.").format(n=f"{cfg.context:,}") + "\n",
        multiplies_markdown(*args, causal=True, lab=lab), "",
        _("As a ratio to MHA:") + "\n",
        multiplies_markdown(*args, causal=True, ratios=True, lab=lab), "",
        _("Each bar is one g's total, split into the attention body (█), the q and o "
          "projections (▒) and the k and v projections (░):") + "\n",
        _code(_split_bars(cfg, lab, ids)), "",
        _("Within this one attention layer the K and V projections are {share} of MHA's "
          "multiplications, so MQA saves up to that share here. A transformer block also has "
          "an MLP, which g does not touch either: section 4 counts the whole block.").format(
              share=fmt(kv_share)) + "\n",
        tallied_while_run(cfg, lab, m, ids)])


def tallied_while_run(cfg: Config, lab: Lab, m: Measured, ids: Labels) -> str:
    """Section 3's last table: the tally of a real layer() beside attention_multiplies;
    without count_multiplies (step 20) or the steps it runs, a note naming the step."""
    try:
        tallied = need(m.tallied)
        formula = {g: run_formula(lab, cfg, g) for g in ids.gs}
    except Unavailable as why:
        return _("*Not tallied while the code ran: {why}.*").format(why=why) + "\n"
    return "\n".join([
        _("Tallied: a causal `layer` ran once on the small configuration ({positions} positions) "
          "inside `count_multiplies()`, whose tally is kept by the code that multiplies, and is "
          "compared with `attention_multiplies(..., causal=True)`.").format(
              positions=cfg.run_context) + "\n",
        markdown_table([_("method"), "g", _("tallied total"), _("formula total"), _("scores (tallied)"),
                        _("k_proj (tallied)"), _("tallied = formula, every term")],
                       [(ids.name[g], g, f"{tallied[g].total:,}", f"{formula[g].total:,}",
                         f"{tallied[g].scores:,}", f"{tallied[g].k_proj:,}",
                         _yes(tallied[g] == formula[g])) for g in ids.gs]),
        ""])


def section_block(cfg: Config, lab: Lab, m: Measured) -> Tuple[str, Figures]:
    n, parts = cfg.context, []
    for model in BLOCK_MODELS:
        rows = block_rows(n, model.heads, model.kv_heads, model.head_dim, model.d_model,
                          model.d_ff, model.mlp_matrices, lab=lab)
        names = [_("{label} (the model)").format(label=f"{r.method} g={r.g}") if r.g == model.kv_heads
                 else f"{r.method} g={r.g}" for r in rows]
        parts += [_("**{name}**: d_model {d_model}, h = {h}, g = {g}, head dim {head_dim}, an MLP of "
                    "{matrices} matrices of {d_model} x {d_ff}; multiplications per token:").format(
                      name=model.name, d_model=f"{model.d_model:,}", h=model.heads, g=model.kv_heads,
                      head_dim=model.head_dim, matrices=model.mlp_matrices, d_ff=f"{model.d_ff:,}") + "\n",
                  block_markdown(rows, n), "", _code(block_bars(names, rows)), ""]
    llama = BLOCK_MODELS[0]
    block = {g: lab.block_multiplies(n, llama.heads, g, llama.head_dim, llama.d_model, llama.d_ff,
                                     mlp_matrices=llama.mlp_matrices) for g in (llama.heads, 8, 1)}
    mha = block[llama.heads]
    try:
        drawn, figures = what_g_changes(cfg, lab)
    except Exception as err:                # a student's module can fail in any way
        drawn, figures = _("*Figure not drawn: {why}.*").format(why=reason(err)) + "\n", ()
    return "\n".join([
        _("A transformer block is the attention layer and an MLP. Counted with `block_multiplies` "
          "for two real models' shapes (from their config.json), over a prompt of {n} positions "
          "(causal), per token: the Q and O projections, the K and V projections (the only part "
          "with g in it), the attention body, and the MLP.").format(n=f"{n:,}") + "\n"] + parts + [
        _("In Llama-2-7B's block the K and V projections are {share} of the work at {n} positions: "
          "MQA would save {mqa} of it and 8 key/value heads {eight}, while its KV cache would fall to "
          "1/{h} and 1/{h_8}. That is why prefill barely speeds up with g and decoding, which "
          "re-reads the whole cache for every token, does.").format(
              share=fmt(mha.k_v_proj / mha.total), n=f"{n:,}", mqa=fmt(1 - block[1].total / mha.total),
              eight=fmt(1 - block[8].total / mha.total), h=llama.heads, h_8=llama.heads // 8) + "\n",
        drawn]), figures


def what_g_changes(cfg: Config, lab: Lab) -> Tuple[str, Figures]:
    """Llama-2-7B at every g: its KV cache, one layer's and the block's work, as fractions of MHA."""
    llama, n = BLOCK_MODELS[0], cfg.context
    h, d, d_model = llama.heads, llama.head_dim, llama.d_model
    ids = labels(lab, h)
    cache = {r.kv_heads: r.ratio for r in lab.cache_table(h, layers=cfg.layers, length=n, head_dim=d)}
    layer = {g: lab.attention_multiplies(n, h, g, d, d_model, causal=True).total for g in ids.gs}
    block = {g: lab.block_multiplies(n, h, g, d, d_model, llama.d_ff,
                                     mlp_matrices=llama.mlp_matrices).total for g in ids.gs}
    table = {g: (cache[g], layer[g] / layer[h], block[g] / block[h]) for g in ids.gs}
    svg = draw.g_changes_figure(
        h, ids.gs, ids.name, {g: t[0] for g, t in table.items()}, {g: t[1] for g, t in table.items()},
        {g: t[2] for g, t in table.items()},
        cache_note=f"K and V of every layer, {n:,} positions",
        work_note=f"{llama.name}, a {n:,}-position prefill")
    body = "\n".join([
        _("Every g of {name}'s attention (h = {h}), as a fraction of MHA's: the KV cache (section 2), "
          "the multiplications of one attention layer (section 3) and of the whole block with its "
          "MLP, over {n} positions (causal).").format(name=llama.name, h=h, n=f"{n:,}") + "\n",
        markdown_table([_("method"), "g", _("KV cache"), _("one attention layer"), _("whole block")],
                       [(ids.name[g], g) + tuple(fmt(v) for v in table[g]) for g in ids.gs]),
        "",
        figure_link("what-g-changes.svg",
                    _("Two panels against g = {gs}: the KV cache falls in proportion to g, to {cache} "
                      "of MHA's at g = 1, while one attention layer's multiplications fall only to "
                      "{layer} and the whole block's to {block}").format(
                        gs=", ".join(map(str, ids.gs)), cache=fmt(table[1][0]), layer=fmt(table[1][1]),
                        block=fmt(table[1][2]))),
        ""])
    return body, (("what-g-changes.svg", svg),)


def section_output(cfg: Config, lab: Lab, m: Measured) -> str:
    ids, difference = labels(lab, cfg.heads), need(m.difference)
    rel = {g: difference[g].rel_l2.mean for g in ids.gs}
    paragraphs = [
        _("`layer(x, weights, g)` against the MHA output `layer(x, weights, {h})`, on the same "
          "weights and input, over {seeds} seeds: mean (lowest to highest).").format(
              h=cfg.heads, seeds=cfg.seeds) + "\n",
        markdown_table(_difference_headers(),
                       [(ids.name[g], g) + tuple(_spread(s) for s in difference[g]) for g in ids.gs]),
        "",
        _code(bar_chart([ids.label[g] for g in ids.gs], [rel[g] for g in ids.gs],
                        [_("relative L2 {value}").format(value=fmt(rel[g])) for g in ids.gs])),
        "",
        _("At g = h the difference is exactly zero: `attention(q, k, v, g={h}) == "
          "[single_head_attention(q[i], k[i], v[i]) for each head]` was checked with `==`, not a "
          "tolerance, on the projected q, k, v of every seed: {yes}.").format(
              h=cfg.heads, yes=_yes(need(m.exact_mha))) + "\n"]
    if not isinstance(m.head_cosine, Missing):
        cos = m.head_cosine
        paragraphs.append(_(
            "Why so much, even at g = {g}: these heads are random and untrained, so they have "
            "nothing in common. The keys that two different heads project from the same input have "
            "a cosine of {mean} on average in absolute value ({low} to {high} over every pair of "
            "heads and every seed): they point in unrelated directions, and their mean is a shorter "
            "vector that is like none of them. In a trained model, heads that learned similar things "
            "would fold with less change, and the GQA paper found the mean the best starting point "
            "for further training; how alike trained heads are, this report cannot tell: it has no "
            "trained model.").format(g=ids.gs[-2], mean=fmt(cos.mean), low=fmt(cos.low),
                                     high=fmt(cos.high)) + "\n")
    return "\n".join(paragraphs)


def _difference_headers() -> List[str]:
    return [_("method"), "g", _("max abs difference"), _("relative L2"), _("cosine")]


def attention_inputs(cfg: Config) -> Tuple[list, list, list]:
    """A student's section 5: q, k and v, each [h][n][d] of the small configuration, uniform in
    [-1, 1), drawn q, then k, then v, from the stream "attention inputs" of the first seed."""
    rng = rng_for("attention inputs", cfg.seed)
    n, d = cfg.run_context, cfg.run_head_dim
    q, k, v = ([[[rng.uniform(-1.0, 1.0) for _ in range(d)] for _ in range(n)] for _ in range(cfg.heads)]
               for _ in range(3))
    return q, k, v


def attention_difference(cfg: Config, lab: Lab) -> str:
    """A student's section 5, first: attention(q, k, v, g) against g = h on one random q, k, v
    (steps 8 and 14), and whether g = h is per-head attention to the last bit (step 7)."""
    h, ids = cfg.heads, labels(lab, cfg.heads)
    q, k, v = attention_inputs(cfg)
    mha = lab.attention(q, k, v, h)
    diff = {g: lab.output_difference(lab.attention(q, k, v, g), mha) for g in ids.gs}
    rel = {g: diff[g].rel_l2 if math.isfinite(diff[g].rel_l2) else 0.0 for g in ids.gs}
    try:
        per_head = [lab.single_head_attention(q[i], k[i], v[i]) for i in range(h)]
        exact = _("checked with `==`, not a tolerance: {yes}").format(yes=_yes(mha == per_head))
    except Unavailable as why:
        exact = _("not checked: {why}").format(why=why)
    return "\n".join([
        _("`attention(q, k, v, g)` against the MHA output `attention(q, k, v, {h})`, on the same "
          "random q, k and v: {h} heads of {positions} positions x head dim {head_dim}, drawn uniform "
          "in [-1, 1) (q, then k, then v) from `random.Random(\"{stream}\")`, seed {seed}; full "
          "attention, not causal. At g < h, `attention` folds k and v to g heads by their group mean "
          "and repeats them back out to h.").format(
              h=h, positions=cfg.run_context, head_dim=cfg.run_head_dim,
              stream=seed_for("attention inputs", cfg.seed), seed=cfg.seed) + "\n",
        markdown_table(_difference_headers(),
                       [(ids.name[g], g, fmt(diff[g].max_abs), fmt(diff[g].rel_l2), fmt(diff[g].cosine))
                        for g in ids.gs]),
        "",
        _code(bar_chart([ids.label[g] for g in ids.gs], [rel[g] for g in ids.gs],
                        [_("relative L2 {value}").format(value=fmt(diff[g].rel_l2)) for g in ids.gs])),
        "",
        _("At g = h nothing is folded: `attention(q, k, v, g={h}) == [single_head_attention(q[i], "
          "k[i], v[i]) for each head]`, {exact}.").format(h=h, exact=exact) + "\n"])


def section_output_of_module(cfg: Config, lab: Lab, m: Measured) -> str:
    """Section 5 of a student's report: attention on random q, k, v, then the project's
    section 5 (a whole layer on random weights), or a note naming the step it needs."""
    first = attention_difference(cfg, lab)
    try:
        then = section_output(cfg, lab, m)
    except Exception as err:                # a student's module can fail in any way
        then = _("*Not computed for a whole layer (`layer(x, weights, g)` on random weights, over "
                 "{seeds} seeds): {why}.*").format(seeds=cfg.seeds, why=reason(err)) + "\n"
    return first + "\n" + then


def section_write_up(cfg: Config, lab: Lab, m: Measured) -> str:
    """Section 9 of a student's report: the handout's questions, for the student to answer."""
    return "\n".join([
        _("This section is yours: the code wrote the ones above from your module, and here you say, "
          "in your own words and from your own numbers, what they show. Write each answer under its "
          "question and cite the rows you use. Running the command again writes this file anew, "
          "with this section unfilled: answer in a copy, or give a later run another `--out`.") + "\n",
        _("**1. What g changes, and what it does not.** From g = {h} (MHA) down to g = 1 (MQA), the "
          "KV cache of section 2 shrinks by a factor of h/g, while the multiplications of the scores "
          "and of the weighted sum in section 3 stay the same at every g. Why? Which terms does g "
          "change, and why does a smaller cache make decoding faster but prefill barely (section "
          "4)?").format(h=cfg.heads) + "\n",
        _("*(your answer)*") + "\n",
        _("**2. A changed output is not yet a measured loss of quality.** Section 5 shows the output "
          "moving away from MHA's as g falls. Why is that not yet a loss of quality? What are the "
          "weights and inputs here, what would measure quality, and what does the GQA paper do after "
          "it folds each group's key/value heads by their mean?") + "\n",
        _("*(your answer)*") + "\n"])


def section_conversion(cfg: Config, lab: Lab, m: Measured) -> str:
    ids, conversion = labels(lab, cfg.heads), need(m.conversion)
    gs = ids.gs[:-1]
    return "\n".join([
        _("Three ways to make g key/value heads from h: the mean of each group (the GQA "
          "paper's choice), the first head of each group, or new random heads. Relative L2 "
          "difference from the MHA output, mean (lowest to highest) over the seeds:") + "\n",
        markdown_table([_("method"), "g"] + [_(c) for c in CONVERSIONS],
                       [(ids.name[g], g) + tuple(_spread(conversion[(g, c)]) for c in CONVERSIONS)
                        for g in gs]),
        "",
        conversion_sentence(gs, conversion),
        ""])


def conversion_sentence(gs: Sequence[int], conv: dict) -> str:
    """One sentence comparing the measured ordering with the paper's (mean, first, random)."""
    order = {g: sorted(CONVERSIONS, key=lambda c: conv[(g, c)].mean) for g in gs}
    paper = list(CONVERSIONS)
    agree = [g for g in gs if order[g] == paper]
    if len(agree) == len(gs):
        return _("On these untrained weights the output moves least with the mean, then the "
                 "first head, then random heads, at every g: the GQA paper's ordering of the "
                 "three (which it measured on quality after training).")
    differ = _(", ").join(f"g = {g}: {' < '.join(_(c) for c in order[g])}" for g in gs if g not in agree)
    return _("On these untrained weights the ordering (by mean relative L2, smallest first) "
             "matches the GQA paper's (mean, then first, then random, measured on quality after "
             "training) at {agree} of {total} values of g, and differs at {differ}.").format(
                 agree=len(agree), total=len(gs), differ=differ)


def decode_traffic(lab: Lab, cfg: Config, g: int, batch: int = 1) -> Any:
    return lab.decode_traffic(cfg.context, cfg.heads, g, cfg.head_dim, cfg.d_model, batch=batch)


def section_decoding(cfg: Config, lab: Lab, m: Measured) -> Tuple[str, Figures]:
    ids = labels(lab, cfg.heads)
    points = sorted({max(1, cfg.context // 8), max(1, cfg.context // 4), max(1, cfg.context // 2),
                     cfg.context})

    def read_at(t: int, g: int) -> int:
        """Cache elements read for token t, all layers: the step from t - 1 to t."""
        total = lab.decode_traffic(t, cfg.heads, g, cfg.head_dim, cfg.d_model).cache_reads
        before = lab.decode_traffic(t - 1, cfg.heads, g, cfg.head_dim, cfg.d_model).cache_reads
        return cfg.layers * (total - before)

    reads = {g: [read_at(t, g) for t in points] for g in ids.gs}
    svg = draw.decoding_figure(points, [(ids.label[g], reads[g]) for g in ids.gs],
                                      layers=cfg.layers)
    return "\n".join([
        _("Incremental decoding appends one position and then reads every cached K and V: cache "
          "elements read to generate token t, all {layers} layers (from `decode_traffic`).").format(
              layers=cfg.layers) + "\n",
        markdown_table([_("method"), "g"] + [f"t = {t:,}" for t in points],
                       [(ids.name[g], g) + tuple(f"{v:,}" for v in reads[g]) for g in ids.gs]),
        "",
        _("The same, drawn in bytes at 16 bits (2 bytes an element):") + "\n",
        figure_link("decoding.svg",
                    _("Cache bytes read to generate the token at position t, one line per g: straight "
                      "lines through zero whose slopes are in proportion to g, {least} for {fewest} at "
                      "t = {t} and {most} for {all}").format(
                        least=human_bytes(2 * reads[ids.gs[-1]][-1]), fewest=ids.label[ids.gs[-1]],
                        t=f"{points[-1]:,}", most=human_bytes(2 * reads[ids.gs[0]][-1]),
                        all=ids.label[ids.gs[0]])),
        "",
        _("Elements read (cache and weights) per multiplication over the whole {n}-token decode. On "
          "hardware that does far more multiplications per element it reads, a high ratio means the "
          "decode waits on memory; batching shares the weight reads, but every sequence has its own "
          "cache (Shazeer 2019, section 3).").format(n=f"{cfg.context:,}") + "\n",
        markdown_table([_("method"), "g", _("batch {size}").format(size=1),
                        _("batch {size}").format(size=cfg.batch)],
                       [(ids.name[g], g, fmt(decode_traffic(lab, cfg, g).ratio),
                         fmt(decode_traffic(lab, cfg, g, cfg.batch).ratio)) for g in ids.gs]),
        ""]), (("decoding.svg", svg),)


def section_reading(cfg: Config, lab: Lab, m: Measured) -> str:
    h, ids = cfg.heads, labels(lab, cfg.heads)
    cache = lab.cache_table(h, layers=cfg.layers, length=cfg.context, head_dim=cfg.head_dim)
    one_layer = lab.multiplies_table(cfg.context, h, cfg.head_dim, cfg.d_model, causal=True)
    llama = BLOCK_MODELS[0]
    block = {g: lab.block_multiplies(cfg.context, llama.heads, g, llama.head_dim, llama.d_model,
                                     llama.d_ff, mlp_matrices=llama.mlp_matrices)
             for g in (llama.heads, 1)}
    mqa, mha_cache = cache[0], cache[-1]
    tallied = need(m.tallied)
    tallied_ok = all(tallied[g] == run_formula(lab, cfg, g) for g in ids.gs)
    difference = need(m.difference)
    return "\n".join([
        f"- **What g changes: memory.** The cache shrinks in proportion to g: MQA holds "
        f"{fmt(mqa.ratio)} of MHA's cache here ({human_bytes(2 * mqa.elements)} instead of "
        f"{human_bytes(2 * mha_cache.elements)} at 16 bits for {cfg.context:,} positions). "
        f"Decoding re-reads the whole cache for every token, so on memory-bound hardware a "
        f"smaller cache decodes faster: at batch {cfg.batch}, MHA reads "
        f"{fmt(decode_traffic(lab, cfg, h, cfg.batch).ratio)} elements per multiplication and "
        f"MQA {fmt(decode_traffic(lab, cfg, 1, cfg.batch).ratio)}.",
        f"- **What g barely changes: the work of a prefill.** The attention body, scores and "
        f"weighted sum, has no g in it. Only the K and V projections shrink: within one "
        f"attention layer they are a large share, so MQA does {fmt(one_layer[0].ratio.total)} of "
        f"MHA's multiplications there (section 3), but a block also has an MLP, and in "
        f"Llama-2-7B's block at {cfg.context:,} positions MQA does "
        f"{fmt(block[1].total / block[llama.heads].total)} of MHA's work (section 4) while "
        f"holding 1/{llama.heads} of its cache.",
        f"- **A changed output is not a measured loss of quality.** These weights are random "
        f"and untrained, so the relative L2 difference of {fmt(difference[1].rel_l2.mean)} at "
        f"g = 1 says how much the output changed, not how much worse a model got. Quality "
        f"is measured on a trained model and a task; the GQA paper converts a trained MHA "
        f"checkpoint by the mean and then continues training for about "
        f"{GQA_PAPER_UPTRAINING:.0%} of the original pre-training steps to recover it."
        + _training_sentence(m),
        f"- **Exact where it must be.** At g = h the lab's function is MHA bit for bit "
        f"({'checked' if need(m.exact_mha) else 'NOT the case'}), and every count above that "
        f"was tallied or counted agrees with its closed form "
        f"({'all rows' if tallied_ok else 'NOT all rows'})."])


def section_training(cfg: Config, lab: Lab, m: Measured) -> Tuple[str, tuple]:
    """The uptraining lab's quick recipe (gqa_tools.uptraining), trained with lab's steps; its figures."""
    result = need(m.training)
    r = result["recipe"]
    recipe = training.Recipe(**{**r, "budgets": tuple(r["budgets"])})
    figures, curves = _training_figures(result)
    notes = sorted({result["tasks"][task]["same_cache_note"] for task in training.TASKS} - {""})
    body = "\n".join([
        _training_intro(result),
        _("- {task}.").format(task=training.describe(recipe, "offsets")),
        _("- {task}.").format(task=training.describe(recipe, "recall")) + "\n",
        markdown_table([_("task"), _("held out per seed"), _("pre-trained MHA (the frozen baseline)"),
                        _("seeds at 0.95 or more")], _pretrained_rows(result)),
        "",
        markdown_table([_("task"), "g", _("model")] + training.steps_header(r), _uptraining_rows(result)),
        "",
        _code("\n".join(_uptraining_bars(result))),
        "",
        "\n\n".join(curves),
        "",
        "\n\n".join(f"**{task}.** " + i18n.sentences(training.findings(result, task))
                     for task in training.TASKS) + "\n",
        _same_cache_part(result, notes),
        ""])
    return body, tuple(figures)


def _same_cache_part(result: dict, notes: Sequence[str]) -> str:
    """The MQA paper's comparison at one cache: its table, sentences and figure; or where it is run."""
    r, K = result["recipe"], len(result["seeds"])
    if not any(result["tasks"][task]["same_cache"] for task in training.TASKS):
        return _("The MQA paper's comparison at one cache size (MQA, one head and narrower heads, "
                 "trained from scratch) is not trained in this recipe: `python -m gqa uptrain` "
                 "trains it over {seeds} seeds, and `docs/uptraining.md` states what it "
                 "measured.").format(seeds=training.Recipe().seeds)
    return "\n".join([
        f"Same cache, three ways (the MQA paper's comparison): at MQA's cache per token, trained "
        f"from scratch for {r['pretrain']} steps on the same batches; every K/V head starts with the "
        f"same variance, and the models with fewer attention parameters get a wider MLP, so the "
        f"parameter counts match to within one MLP unit"
        + ("" if not notes else f" ({'; '.join(notes)})") + ".\n",
        markdown_table(["task", "model", "K/V cache per token", "parameters", "MLP width",
                        "held-out accuracy"], _same_cache_rows(result)),
        "",
        "\n\n".join(f"**{task}.** " + training.same_cache_finding(result, task)
                     for task in training.TASKS) + "\n",
        figure_link("equal-cache.svg", f"At one K/V cache size, the held-out accuracy of MQA, of "
                                       f"one head and of narrower heads, for each task: the mean "
                                       f"of {K} seeds as a bar, its 95 % interval as a whisker")])


def _training_intro(result: dict) -> str:
    """Section 8's first paragraph: what is trained, what is compared, how it is written and decided."""
    r, seeds = result["recipe"], result["seeds"]
    n = r["held_out"]
    return _(
        "Everything above runs on random, untrained weights. Here a model is trained and its "
        "quality measured (`gqa_tools/train.py`): an MHA model (h = {heads}, head dim {head_dim}, "
        "d_model {d_model}, an MLP of width {d_ff}) is pre-trained for {pretrain} steps of {batch} "
        "sequences on each of two tasks; a copy of it is trained on for {more} more steps (*the "
        "control*), and it is converted to each g < h by the mean of each group, its first head or "
        "new random heads, each conversion trained on with the control's batches; the budgets are "
        "checkpoints of one run. {seeds}; every accuracy is on {n} held-out sequences per seed that "
        "training never sees (for an accuracy p of one seed, a 95 % interval at most "
        "1.96 √(p(1 − p)/{n}) wide on each side: {half} at p = 0.5, {high} at p = 0.95), written "
        "mean ± sd [95 % interval of the mean] over the seeds, a t-interval; a count of seeds is "
        "written k/K [its 95 % Wilson interval]. {rule}").format(
            heads=r["heads"], head_dim=r["head_dim"], d_model=r["d_model"], d_ff=r["d_ff"],
            pretrain=r["pretrain"], batch=r["batch"], more=max(r["budgets"]),
            seeds=training.seeds_text(seeds), n=n, half=f"{1.96 * (0.25 / n) ** 0.5:.3f}",
            high=f"{1.96 * (0.95 * 0.05 / n) ** 0.5:.3f}", rule=_(training.RULE)) + "\n"


def _pretrained_rows(result: dict) -> List[tuple]:
    K = len(result["seeds"])
    rows = []
    for task in training.TASKS:
        t = result["tasks"][task]
        rows.append((task, _("{sequences} sequences, {answers} answers").format(
                         sequences=f"{t['held_out']:,}", answers=f"{t['answers']:,}"),
                     training.spread_text(training.stats(t["pretrained"]["correct"], t["answers"])),
                     f"{training.pretrained_at(t)}/{K}"))
    return rows


def _uptraining_rows(result: dict) -> List[tuple]:
    """Section 8's main table: for each task and g, the control, the conversions and the shares."""
    rows = []
    for task in training.TASKS:
        t = result["tasks"][task]
        for g in sorted({x["g"] for x in t["uptrain"]}):
            rows += [(task, g, *row) for row in training.uptraining_rows(result, task, g)]
    return rows


def _uptraining_bars(result: dict) -> List[str]:
    """The table's means as bars, one line per task, g and model."""
    r = result["recipe"]
    lines, pad = [], max(i18n.width(_(how)) for how in ("control",) + training.CONVERSIONS)
    for task in training.TASKS:
        t = result["tasks"][task]
        n, steps = t["answers"], (0,) + tuple(r["budgets"])
        for g in sorted({x["g"] for x in t["uptrain"]}):
            for how in ("control",) + training.CONVERSIONS:
                means = [training.stats(training.baseline(t, s) if how == "control" else
                                        training.cell(t, g, how, s), n).mean for s in steps]
                lines.append(f"{task:<7} g={g} {i18n.ljust(_(how), max(pad, 7))}  "
                             + "  ".join(f"{bar(a, 1.0, 8):<8}" for a in means)
                             + "  " + " -> ".join(f"{a:.2f}" for a in means))
    return lines


def _same_cache_rows(result: dict) -> List[tuple]:
    return [(task, x["model"], x["cache_per_token"], f"{x['parameters']:,}", x["d_ff"],
             training.spread_text(training.stats(x["correct"], result["tasks"][task]["answers"])))
            for task in training.TASKS for x in result["tasks"][task]["same_cache"]]


def _spread_of(correct: Sequence[int], answers: int) -> Tuple[float, float, float]:
    s = training.stats(correct, answers)
    return s.mean, s.low, s.high


def _training_figures(result: dict) -> Tuple[List[Tuple[str, str]], List[str]]:
    """Section 8's figures, (file name, SVG) pairs: each task's uptraining curves, then the
    equal-cache bars; and the links to the curves."""
    r, K = result["recipe"], len(result["seeds"])
    steps = (0,) + tuple(r["budgets"])
    figures, curves, bars_of = [], [], {}
    mark = (training.paper_budget(r), "the GQA paper's 5 %")
    for task in training.TASKS:
        t = result["tasks"][task]
        n = t["answers"]
        spreads = {(x["g"], x["conversion"]): [_spread_of(training.cell(t, x["g"], x["conversion"], s), n)
                                               for s in steps] for x in t["uptrain"]}
        name = f"uptraining-{task}.svg"
        figures.append((name, draw.uptraining_figure(
            task, steps, spreads, _spread_of(t["pretrained"]["correct"], n),
            [_spread_of(training.baseline(t, s), n) for s in steps], seeds=K, mark=mark)))
        curves.append(figure_link(name, _("Held-out accuracy of the {task} task against uptraining "
                                          "steps after converting by the mean, the first head or "
                                          "random heads, at each g: the mean of {seeds} seeds as a "
                                          "line, its 95 % interval as a band, the MHA model trained on "
                                          "the same batches as a dotted line, the frozen pre-trained "
                                          "model as a dashed line").format(task=task, seeds=K)))
        bars_of[task] = {x["model"]: _spread_of(x["correct"], n) for x in t["same_cache"]}
    cache = sorted({x["cache_per_token"] for task in training.TASKS
                    for x in result["tasks"][task]["same_cache"]})
    if not cache:                                   # the recipe trained no equal-cache models
        return figures, curves
    figures.append(("equal-cache.svg", draw.equal_cache_figure(
        bars_of, note=f"{', '.join(map(str, cache))} cached values per token, "
                      f"{r['pretrain']} steps from scratch", seeds=K)))
    return figures, curves


def _and(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _training_sentence(m: Measured) -> str:
    """What section 8 measured, in one sentence, when it ran."""
    if isinstance(m.training, Missing) or m.training is None:
        return ""
    result = m.training
    r, K = result["recipe"], len(result["seeds"])
    said = []
    for steps in r["budgets"]:
        by_verdict: Dict[str, List[str]] = {}
        for task in training.TASKS:
            t = result["tasks"][task]
            for g in sorted({x["g"] for x in t["uptrain"]}):
                k = training.recovered(t, g, steps)
                by_verdict.setdefault(share_verdict(k, K, training.RECOVERS), []).append(
                    f"{task} at g = {g} ({k}/{K})")
        said.append(f"after {steps} steps ({100 * steps / r['pretrain']:.3g} % of the pre-training) it "
                    + "; ".join(f"{training.verdict_text(word, K)} for {_and(items)}"
                                for word, items in sorted(by_verdict.items())))
    return (f" Section 8 measures it on a small trained model (h = {r['heads']}) over {K} seeds, "
            f"against an MHA model trained on the same batches for as many steps: whether the mean "
            f"conversion *recovers* (by section 8's rule; in brackets, the seeds in which it came to "
            f"no more than 0.02 below that model): " + "; ".join(said) + ".")


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

# A student's report (--module): section 5 first runs `attention` on random q, k, v (the
# handout's lab has no `layer` yet), and section 9 is the student's own write-up.
STUDENT_SECTIONS = (SECTIONS[:4] + ((N_("5. The output: it changes"), section_output_of_module),)
                    + SECTIONS[5:8] + ((N_("9. Your write-up: what these numbers say"), section_write_up),))


# The folder of figures beside report.md: report-figures/ (beside myreport.md,
# myreport-figures/), so that two reports in one directory keep their own.
# A section's body links its figures as FIGURES/name.
FIGURES = "figures"


def figures_folder(path: str) -> str:
    """The folder of figures beside the report at path: its name without .md, then -figures."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.join(os.path.dirname(path), f"{stem}-figures")


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
                module: Optional[str] = None) -> List[Part]:
    """Return report.md's header and sections as Parts, in order: SECTIONS, or with a
    module (a student's, named so in the header) STUDENT_SECTIONS.

    A section that cannot be computed from lab says why, in its place.
    """
    lab = lab or Lab(gqa, "gqa.py")
    parts = [Part("", section_header(cfg, lab, module))]
    for title, section in STUDENT_SECTIONS if module else SECTIONS:
        try:
            written: Union[str, Tuple[str, Figures]] = section(cfg, lab, m)
            body, figures = (written, ()) if isinstance(written, str) else written
        except Exception as err:            # a student's module can fail in any way
            body, figures = _("*Not computed from {module}: {why}.*").format(
                module=lab.label, why=reason(err)) + "\n", ()
        parts.append(Part(_(title), body, tuple(figures)))
    return parts


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
        why = draw.not_a_figure(svg)
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


# ---------------------------------------------------------------------------
# Another module, a student's: built in a child process, assembled here.
# ---------------------------------------------------------------------------

CHILD_TIMEOUT = 120.0       # seconds the child may take to send a part (the measuring comes first)
CHILD_BUDGET = 300.0        # seconds it may take in all
CHILD_TRAINING = 900.0      # both, when section 8 trains with the module (its seeds, two tasks, one process)


def child_parts(module: Any, cfg_values: List[int], label: str,
                untrained: Optional[str] = None,
                recipe_values: Optional[list] = None, lang: Optional[str] = None) -> Iterator[list]:
    """In the child process (gqa_grader.run_in_child): the report's Parts built from module,
    each as plain data [title, body, [[file name, SVG], ...]], written in the parent's
    language lang; section 8 trains with the recipe whose values the parent sent (its
    training.QUICK)."""
    if lang:
        i18n.use(lang)
    if untrained is None:
        untrained = _("not run for this module")
    cfg, lab = Config(*cfg_values), Lab(module, label)
    recipe = None
    if recipe_values is not None:
        fields = dict(zip(training.Recipe._fields, recipe_values))
        recipe = training.Recipe(**{**fields, "budgets": tuple(fields["budgets"])})
    for part in build_parts(cfg, measure(cfg, lab, untrained=untrained, recipe=recipe), lab, label):
        yield [part.title, part.body, [list(f) for f in part.figures]]


def _as_part(item: Any) -> Optional[Part]:
    """A Part from what the child sent; None when it is not one."""
    if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
            and isinstance(item[1], str) and isinstance(item[2], list)):
        return None
    figures = tuple(tuple(f) for f in item[2])
    if not all(len(f) == 2 and all(isinstance(x, str) for x in f) for f in figures):
        return None
    return Part(item[0], item[1], figures)


def parts_from_child(cfg: Config, path: str) -> List[Part]:
    """The report's Parts built from the gqa.py at path in a sandboxed child process
    (the grader's worker: its limits, its own session, a deadline per part and one in
    all); this process never imports the module.  A part that never came (the child
    hung, exited or ran out of memory) is that section's note saying why.  Raises
    GQAError when the module cannot be imported."""
    import gqa_grader as grader
    if not os.path.isfile(path):
        raise gqa.GQAError(_("--module {path}: no such file").format(path=path))
    came: Dict[str, Part] = {}
    why = _("the child process building the report did not send it")
    failing = failing_steps(path, training.NEEDS, timeout=min(CHILD_TIMEOUT, 5.0))
    untrained = "" if not failing else _(
        "section 8 trains with the module's own steps once the grader passes them; not yet: "
        "{steps} (grade them with: python grader.py --module {path})").format(steps="; ".join(failing),
                                                                             path=path)
    if not failing:
        print("gqa report: " + _("its steps pass, so section 8 trains with {path} in the grader's "
                                 "worker: a minute or more").format(path=path), file=sys.stderr)
    try:
        for item in grader.run_in_child(path, "gqa_tools.report:child_parts",
                                        [list(cfg), path, untrained, list(training.QUICK), i18n.language()],
                                        paths=[os.path.dirname(os.path.dirname(os.path.abspath(__file__)))],
                                        label=path, what=_("building the report"),
                                        item_timeout=CHILD_TRAINING if not failing else CHILD_TIMEOUT,
                                        budget=CHILD_TRAINING if not failing else CHILD_BUDGET):
            part = _as_part(item)
            if part is not None and part.title not in came:
                came[part.title] = part
    except grader.Refused as err:
        raise gqa.GQAError(f"--module {path}: {err}") from None
    except grader.Failure as err:
        why = str(err)
    header = came.get("") or Part("", section_header(cfg, Lab(None, path), path))
    return [header] + [came.get(_(title)) or came.get(title) or     # English where its catalog was unread
                       Part(_(title), _("*Not computed from {module}: {why}.*").format(module=path, why=why) + "\n")
                       for title, _section in STUDENT_SECTIONS]


# ---------------------------------------------------------------------------
# The command: write atomically, or check.
# ---------------------------------------------------------------------------

def first_difference_line(old: str, new: str) -> str:
    a, b = old.splitlines(), new.splitlines()
    for i, (x, y) in enumerate(zip(a, b), 1):
        if x != y:
            return _("line {line}:\n  on disk: {disk}\n  code:    {code}").format(line=i, disk=x, code=y)
    i = min(len(a), len(b)) + 1
    return (_("line {line}: the file has lines the code does not write") if len(a) > len(b) else
            _("line {line}: the file ends where the code goes on")).format(line=i)


def default_report_path() -> str:
    """report.md at the root of a checkout (beside gqa.py and pyproject.toml), else ./report.md."""
    root = os.path.dirname(os.path.abspath(gqa.__file__))
    if os.path.exists(os.path.join(root, "pyproject.toml")):
        return os.path.join(root, "report.md")
    return "report.md"


def _differs(path: str, text: str) -> Optional[str]:
    """Why the file at path is not text, or None when it is."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            old = f.read(len(text) + 2)
    except OSError as err:
        return _("cannot read {path}: {error}").format(path=path, error=err.strerror)
    except UnicodeDecodeError:
        return _("{path} is not UTF-8 text: it differs from what the code writes now").format(path=path)
    if old != text:
        return _("{path} differs from what the code writes now, first at {where}").format(
            path=path, where=first_difference_line(old, text))
    return None


def _svg_files(folder: str) -> List[str]:
    try:
        return sorted(name for name in os.listdir(folder) if name.endswith(".svg"))
    except OSError:
        return []


def check(path: str, text: str, command: str, figures: Sequence[Tuple[str, str]] = ()) -> int:
    """Exit status of --check: 0 when the report at path is text and its figures are figures, 1 otherwise.

    Every figure is compared; an .svg file in the figure folder that the
    report does not draw is a difference too.
    """
    folder = figures_folder(path)
    problems = [_differs(path, text)] + [_differs(os.path.join(folder, name), svg)
                                         for name, svg in figures]
    names = {name for name, _ in figures}
    problems += [_("{path} is not a figure of the report: the code does not write it").format(
                     path=os.path.join(folder, name)) for name in _svg_files(folder) if name not in names]
    problems = [p for p in problems if p]
    for problem in problems:
        print(f"gqa report --check: {problem}", file=sys.stderr)
    if problems:
        print(_("regenerate it with: {command}").format(command=command), file=sys.stderr)
        return 1
    print(ngettext("{path} is what the code writes now, and so are its {count} figure in {folder}",
                   "{path} is what the code writes now, and so are its {count} figures in {folder}",
                   len(figures)).format(path=path, count=len(figures), folder=folder) if figures else
          _("{path} is what the code writes now").format(path=path))
    return 0


def write_report(path: str, text: str, figures: Sequence[Tuple[str, str]]) -> str:
    """Write the figures into the folder beside path, then the report; return the report's file.

    All or nothing, as far as the file system allows: every file is written
    to a temporary file first, and only when all are written are they moved
    into place (os.replace), the report last.  A failure leaves the old
    files, and no folder this call made.  .svg files of the folder that the
    report no longer draws are removed.  A symlink is written through
    (write_target).
    """
    target = write_target(path)
    folder = figures_folder(path)
    made = bool(figures) and not os.path.lexists(folder)
    if figures and not made and not os.path.isdir(folder):
        raise WriteRefused(_("{folder} is there and is not a folder; the figures go in it").format(
            folder=folder))
    if made:
        os.mkdir(folder)
    staged: List[Tuple[str, str]] = []
    try:
        for name, svg in figures:
            final = write_target(os.path.join(folder, name))
            staged.append((stage(final, svg), final))
        staged.append((stage(target, text), target))
        for tmp, final in staged:
            os.replace(tmp, final)
    except BaseException:
        for tmp, _final in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
        if made:                            # everything in it is this call's
            for name in os.listdir(folder):
                os.unlink(os.path.join(folder, name))
            os.rmdir(folder)
        raise
    names = {name for name, _ in figures}
    for name in _svg_files(folder):
        if name not in names:
            os.unlink(os.path.join(folder, name))
    return target


MAX_JOBS = 64


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gqa report",
        description=_("Write report.md: the lab's tables, counted and measured by the code."))
    parser.add_argument("--out", default=None, metavar="PATH",
                        help=_("where to write (default: report.md at the root of the "
                               "checkout, or in the current directory when gqa is installed; "
                               "with --module, report.md beside the module)"))
    parser.add_argument("--check", action="store_true",
                        help=_("write nothing; exit 1 if the file differs from what the code writes now"))
    parser.add_argument("--retrain", action="store_true",
                        help=_("with --check: train section 8 again, whatever {record} says (it is used "
                               "when the code it was trained with is unchanged)").format(record=TRAINING_RECORD))
    parser.add_argument("--module", default=None, metavar="PATH",
                        help=_("build the report from this gqa.py (a student's) instead of the project's"))
    parser.add_argument("--lang", choices=i18n.LANGUAGES, default=None,
                        help=_("with --module, the language of the student's report and of what the "
                               "command prints: en, ja (日本語) or ko (한국어); default: the "
                               "environment's (LANGUAGE, LC_ALL, LC_MESSAGES, LANG), else en. The "
                               "project's report.md is always English"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help=_("processes that train section 8's seeds (default: the number of CPUs; "
                               "at most {most}); the report is the same for every N (with "
                               "--module, one process)").format(most=MAX_JOBS))
    add_int_options(parser, Config(), LIMITS, what=lambda name: _(OPTION_HELP[name]))
    return parser


# The project: the folder that holds gqa_tools/, its gqa.py and its report.md.
PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:                         # one of them is not there (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def why_not_write(path: str, module: Optional[str]) -> Optional[str]:
    """Why the report will not be written to path, known before any work; None when it may be.

    Refused: a path that is not a regular file (write_target), a folder that
    is not there or not writable, a file where the figures' folder goes; and,
    for a report from a module other than the project's gqa.py, the project's
    own report.md and its figures.
    """
    try:
        target = write_target(path)
    except WriteRefused as why:
        return _("will not write {path}: {why}").format(path=path, why=why)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        return _("cannot write {path}: there is no folder {folder}; nothing was changed").format(
            path=path, folder=os.path.dirname(path))
    if not os.access(folder, os.W_OK):
        return _("cannot write {path}: its folder is not writable; nothing was changed").format(path=path)
    figures = figures_folder(path)
    if os.path.lexists(figures) and not os.path.isdir(figures):
        return _("will not write {path}: {folder} is there and is not a folder; the figures go in "
                 "it").format(path=path, folder=figures)
    own = os.path.join(PROJECT, "report.md")
    if not module or _same_file(module, os.path.join(PROJECT, "gqa.py")):
        return None
    what = (_("it is the project's own report") if _same_file(target, own) else
            _("its figures would go in the project's own {folder}").format(folder=figures_folder(own))
            if _same_file(figures, figures_folder(own)) else "")
    return what and _("will not write {path}: {what}, and {module} is not the project's gqa.py; "
                      "give --out another file (without --out, the report of a --module goes "
                      "beside it)").format(path=path, what=what, module=module)


def report_main(argv: Sequence[str]) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.lang and not args.module:
        print("gqa report: the project's report.md is English; --lang goes with --module PATH "
              "(a student's report)", file=sys.stderr)
        return 2
    cfg = int_options(parser, args, Config(), LIMITS)
    if args.out == "":
        parser.error(_("--out must name a file; got an empty path"))
    if not 1 <= args.jobs <= MAX_JOBS:
        parser.error(_("--jobs must be between 1 and {most}; got {jobs}").format(most=MAX_JOBS, jobs=args.jobs))
    if args.module and not os.path.isfile(args.module):
        print("gqa report: " + _("--module {path}: no such file").format(path=args.module), file=sys.stderr)
        return 2
    path = args.out or (os.path.join(os.path.dirname(args.module), "report.md") if args.module
                        else default_report_path())
    refused = None if args.check else why_not_write(path, args.module)
    if refused:
        print(f"gqa report: {refused}", file=sys.stderr)
        return 2
    if args.check and not os.path.isfile(path):       # nothing to compare with: said at once
        print(f"gqa report --check: {_differs(path, '')}\n"
              + _("regenerate it with: {command}").format(command=cfg.command(args.module)), file=sys.stderr)
        return 1
    try:
        if args.module:
            parts = parts_from_child(cfg, args.module)
        else:
            parts, training_done = project_parts(cfg, args, path)
    except gqa.GQAError as err:
        if args.module:
            print(f"gqa report: {err}", file=sys.stderr)
            return 2
        parser.error(str(err))
    except TypeError as err:
        parser.error(str(err))
    text = assemble(parts, os.path.basename(figures_folder(path)))
    try:
        figures = figures_of(parts)
    except ValueError as err:
        print("gqa report: " + _("{error}; nothing was written").format(error=err), file=sys.stderr)
        return 2
    if args.check:
        return check(path, text, cfg.command(args.module), figures)
    try:
        target = write_report(path, text, figures)
        if not args.module and isinstance(training_done, dict):
            write_training(os.path.join(os.path.dirname(os.path.abspath(path)), TRAINING_RECORD),
                           report_recipe(cfg), training_done)
    except (OSError, WriteRefused) as err:
        why = getattr(err, "strerror", None) or err
        print("gqa report: " + _("cannot write {path}: {why}; nothing was changed").format(path=path, why=why),
              file=sys.stderr)
        return 2
    print(wrote(path, target, len(figures)))
    return 0


def project_parts(cfg: Config, args: Any, path: str) -> Tuple[List[Part], Any]:
    """The project's own report's parts, and its training (to be recorded when written);
    --check takes the training from the record beside path when its key is the code's."""
    lab = Lab(gqa, "gqa.py")
    record = (recorded_training(os.path.join(os.path.dirname(os.path.abspath(path)), TRAINING_RECORD),
                                report_recipe(cfg)) if args.check and not args.retrain else None)
    with progress_line("report") as progress:           # section 8 trains for seconds
        measured = measure(cfg, lab, progress, jobs=args.jobs, record=record)
    return build_parts(cfg, measured, lab), measured.training


def wrote(path: str, target: str, figures: int) -> str:
    """The line that says what was written: the report (through a link, to target) and its figures."""
    folder = figures_folder(path)
    if os.path.islink(path):
        return ngettext("wrote {path} (through the link, to {target}) and {count} figure in {folder}",
                        "wrote {path} (through the link, to {target}) and {count} figures in {folder}",
                        figures).format(path=path, target=target, count=figures, folder=folder) \
            if figures else _("wrote {path} (through the link, to {target})").format(path=path, target=target)
    return ngettext("wrote {path} and {count} figure in {folder}", "wrote {path} and {count} figures in {folder}",
                    figures).format(path=path, count=figures, folder=folder) \
        if figures else _("wrote {path}").format(path=path)


def report_lang(argv: Sequence[str]) -> str:
    """The language of `report`: the student's (chosen_lang) with --module; without it, English
    whatever the environment, the project's report.md being checked byte for byte."""
    parser = make_parser()
    return chosen_lang(argv, parser) if given(argv, "--module", parser) else "en"


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa report`."""
    with speaking(report_lang(argv)):
        return report_main(argv)
