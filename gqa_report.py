"""gqa_report: report.md, the lab report, written by the code.

    python -m gqa report [--out report.md] [--check] [configuration options]

Every number in the report is computed, counted or measured by gqa when the
command runs: none is typed in.  The report is the same to the byte on every
run, machine and Python version: seeded random numbers (gqa_tools' one
scheme), a fixed order, fixed precision, no timings, no dates, no machine
names.  measure() runs the lab; each section_*() function writes one section
from its results; build_report() puts them together.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, NamedTuple, Sequence, Tuple

import gqa
from gqa_tools import (add_int_options, bar_chart, cache_markdown, fmt, human_bytes,
                       int_options, markdown_table, multiplies_markdown, project, rng_for,
                       seed_for, write_atomically)

# Ainslie et al. 2023 (GQA), section 3.1: after mean-pooling, the converted
# checkpoints are trained further for alpha = 0.05 of the original pre-training
# steps.  A citation, not a measurement: it is the one number the report quotes.
GQA_PAPER_UPTRAINING = 0.05


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

    def command(self) -> str:
        parts = ["python -m gqa report"]
        for name, value in self._asdict().items():
            parts.append(f"--{name.replace('_', '-')} {value}")
        return " ".join(parts)


# ---------------------------------------------------------------------------
# Measuring: the small configuration, run for real.
# ---------------------------------------------------------------------------

def run_weights(cfg: Config, seed: int, layer: int = 0) -> gqa.Weights:
    """The small configuration's MHA weights of one layer, for one seed."""
    stream = "weights" if layer == 0 else f"weights of layer {layer}"
    return gqa.init_weights(cfg.heads, cfg.run_d_model, cfg.run_head_dim, seed=seed_for(stream, seed))


def run_input(cfg: Config, seed: int) -> List[List[float]]:
    """The small configuration's input for one seed: x [n][d_model]."""
    rng = rng_for("input", seed)
    return [[rng.uniform(-1.0, 1.0) for _ in range(cfg.run_d_model)] for _ in range(cfg.run_context)]


def counted_cache(cfg: Config, g: int) -> int:
    """Decode the small configuration through run_layers layers; return the floats cached."""
    caches = [gqa.KVCache(g, cfg.run_head_dim) for _ in range(cfg.run_layers)]
    weights = [gqa.prepare_weights(run_weights(cfg, cfg.seed, layer), g)
               for layer in range(cfg.run_layers)]
    for x_t in run_input(cfg, cfg.seed):
        for w, cache in zip(weights, caches):
            x_t = gqa.decode_step(x_t, w, g, cache)
    return sum(cache.elements for cache in caches)


def tallied_multiplies(cfg: Config, g: int) -> gqa.Multiplies:
    """The multiplications tallied while layer() runs once on the small configuration."""
    w, x = run_weights(cfg, cfg.seed), run_input(cfg, cfg.seed)
    with gqa.count_multiplies() as tally:
        gqa.layer(x, w, g)
    return tally.multiplies()


def first_head(w: gqa.Weights, g: int) -> gqa.Weights:
    """Convert by keeping the first K/V head of each group."""
    groups = gqa.group_heads(len(w.w_q), g)
    return w._replace(w_k=[w.w_k[grp[0]] for grp in groups], w_v=[w.w_v[grp[0]] for grp in groups])


def random_heads(w: gqa.Weights, g: int, seed: int) -> gqa.Weights:
    """Convert by drawing g new random K/V heads (the scale of init_weights)."""
    fresh = gqa.init_weights(g, len(w.w_q[0]), len(w.w_q[0][0]), seed=seed_for("random heads", seed))
    return w._replace(w_k=fresh.w_k, w_v=fresh.w_v)


CONVERSIONS = ("mean", "first", "random")


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
    """Everything the report measures on the small configuration."""
    cache_counted: Dict[int, int]                   # g -> floats held by real caches
    tallied: Dict[int, gqa.Multiplies]              # g -> tallied while layer() ran
    difference: Dict[int, DifferenceSpread]         # g -> layer(g) against layer(h)
    exact_mha: bool                                 # attention(g = h) == per-head MHA, every seed
    conversion: Dict[Tuple[int, str], Spread]       # (g, conversion) -> relative L2


def measure(cfg: Config) -> Measured:
    h, gs = cfg.heads, gqa.valid_g(cfg.heads)
    diffs: Dict[int, list] = {g: [] for g in gs}
    conv: Dict[Tuple[int, str], list] = {(g, name): [] for g in gs for name in CONVERSIONS}
    exact = True
    for seed in range(cfg.seed, cfg.seed + cfg.seeds):
        w, x = run_weights(cfg, seed), run_input(cfg, seed)
        mha = gqa.layer(x, w, h)
        for g in gs:
            diffs[g].append(gqa.output_difference(gqa.layer(x, w, g), mha))
            for name, converted in (("mean", gqa.fold_weights(w, g)), ("first", first_head(w, g)),
                                    ("random", random_heads(w, g, seed))):
                conv[(g, name)].append(gqa.output_difference(gqa.layer(x, converted, g), mha).rel_l2)
        q, k, v = ([project(x, wi) for wi in heads] for heads in (w.w_q, w.w_k, w.w_v))   # [h][n][d]
        per_head = [gqa.single_head_attention(q[i], k[i], v[i]) for i in range(h)]
        exact = exact and gqa.attention(q, k, v, h) == per_head
    return Measured(
        cache_counted={g: counted_cache(cfg, g) for g in gs},
        tallied={g: tallied_multiplies(cfg, g) for g in gs},
        difference={g: DifferenceSpread(*(spread([getattr(d, f) for d in diffs[g]])
                                          for f in DifferenceSpread._fields)) for g in gs},
        exact_mha=exact,
        conversion={key: spread(values) for key, values in conv.items()})


# ---------------------------------------------------------------------------
# Writing: one function per section, each returning its Markdown.
# ---------------------------------------------------------------------------

def _spread(s: Spread) -> str:
    return f"{fmt(s.mean)} ({fmt(s.low)} to {fmt(s.high)})"


def _ranges(groups: List[List[int]], limit: int = 4) -> str:
    parts = [f"{grp[0]}–{grp[-1]}" if len(grp) > 1 else str(grp[0]) for grp in groups]
    return ", ".join(parts if len(parts) <= limit else parts[:2] + ["…"] + parts[-1:])


def _yes(ok: bool) -> str:
    return "yes" if ok else "**NO**"


def _code(text: str) -> str:
    return "```\n" + text + "\n```"


class Labels(NamedTuple):
    """What every section names the valid g by."""
    gs: List[int]
    name: Dict[int, str]        # g -> "MHA", "GQA" or "MQA"
    label: Dict[int, str]       # g -> "GQA g=4"


def labels(h: int) -> Labels:
    gs = gqa.valid_g(h)
    name = {g: gqa.method_name(h, g) for g in gs}
    return Labels(gs, name, {g: f"{name[g]} g={g}" for g in gs})


def section_header(cfg: Config) -> str:
    return (f"# gqa lab report\n\n"
            f"Written by `{cfg.command()}`. Every number below was computed, counted or measured "
            f"by `gqa.py` when that command ran; `python -m gqa report --check` tells whether this "
            f"file is still what the code writes. The real-size configuration (counted by the "
            f"closed forms) has h = {cfg.heads} query heads, head dim {cfg.head_dim}, {cfg.layers} "
            f"layers, {cfg.context:,} positions and d_model = {cfg.d_model:,}. The small "
            f"configuration that the code actually runs has the same {cfg.heads} query heads, head "
            f"dim {cfg.run_head_dim}, d_model {cfg.run_d_model}, {cfg.run_context} positions and "
            f"{cfg.run_layers} layers, with random, untrained weights from seeds {cfg.seed} to "
            f"{cfg.seed + cfg.seeds - 1}.\n")


def section_what_g_is(cfg: Config, lab: Labels) -> str:
    h = cfg.heads
    return "\n".join([
        "## 1. What g is\n",
        f"One knob: g, the number of key/value heads. It must divide h = {h}, and each "
        f"contiguous block of h // g query heads reads one key/value head "
        f"(`kv_head(i, h, g) = i // (h // g)`).\n",
        markdown_table(["method", "g (kv heads)", "h // g", "query heads of each key/value head"],
                       [(lab.name[g], g, h // g, _ranges(gqa.group_heads(h, g))) for g in lab.gs]),
        ""])


def section_cache(cfg: Config, lab: Labels, m: Measured) -> str:
    cache = gqa.cache_table(cfg.heads, layers=cfg.layers, length=cfg.context, head_dim=cfg.head_dim)
    formula = {g: gqa.kv_cache_elements(cfg.run_layers, g, cfg.run_context, cfg.run_head_dim)
               for g in lab.gs}
    return "\n".join([
        "## 2. The KV cache: what g changes\n",
        f"{cfg.layers} layers x {cfg.context:,} positions x head dim {cfg.head_dim}, one sequence; "
        f"2 x layers x g x length x head_dim numbers (K and V; queries are never cached).\n",
        markdown_table(["method", "g", "cache elements", "ratio to MHA", "bytes at 16 bits"],
                       [(r.method, r.kv_heads, f"{r.elements:,}", fmt(r.ratio),
                         f"{human_bytes(2 * r.elements)} ({2 * r.elements:,})") for r in cache]),
        "",
        _code(bar_chart([lab.label[r.kv_heads] for r in cache], [r.elements for r in cache],
                        [human_bytes(2 * r.elements) for r in cache])),
        "",
        f"Counted: the small configuration decoded {cfg.run_context} positions through "
        f"{cfg.run_layers} layers with `KVCache` and `decode_step`, and the floats the caches "
        f"hold were counted from their `array('d')` storage.\n",
        markdown_table(["method", "g", "counted in real caches", "kv_cache_elements", "counted = formula"],
                       [(lab.name[g], g, f"{m.cache_counted[g]:,}", f"{formula[g]:,}",
                         _yes(m.cache_counted[g] == formula[g])) for g in lab.gs]),
        ""])


def _split_bars(cfg: Config, lab: Labels, width: int = 40) -> str:
    """One bar per g: the attention body, the q and o projections, the k and v projections."""
    mult = gqa.multiplies_table(cfg.context, cfg.heads, cfg.head_dim, cfg.d_model)
    top, pad = mult[-1].counts.total, max(map(len, lab.label.values()))
    lines = []
    for r in mult:
        c = r.counts
        body = round(width * (c.scores + c.weighted_sum) / top)
        qo = round(width * (c.scores + c.weighted_sum + c.q_proj + c.o_proj) / top) - body
        kv = round(width * c.total / top) - body - qo
        lines.append(f"{lab.label[r.kv_heads]:<{pad}}  "
                     f"{('█' * body + '▒' * qo + '░' * kv).ljust(width)}  {fmt(r.ratio.total)} of MHA")
    return "\n".join(lines)


def run_formula(cfg: Config, g: int) -> gqa.Multiplies:
    return gqa.attention_multiplies(cfg.run_context, cfg.heads, g, cfg.run_head_dim, cfg.run_d_model)


def section_multiplies(cfg: Config, lab: Labels, m: Measured) -> str:
    args = (cfg.context, cfg.heads, cfg.head_dim, cfg.d_model)
    formula = {g: run_formula(cfg, g) for g in lab.gs}
    return "\n".join([
        "## 3. Multiplications: what g does not change\n",
        f"One layer over n = {cfg.context:,} positions (full attention), per term. Only the K and "
        f"V projections have g in them; the attention body, scores and weighted sum "
        f"(h x n x n x d each), is the same at every g.\n",
        multiplies_markdown(*args), "",
        "As a ratio to MHA:\n",
        multiplies_markdown(*args, ratios=True), "",
        "Each bar is one g's total, split into the attention body (█), the q and o "
        "projections (▒) and the k and v projections (░):\n",
        _code(_split_bars(cfg, lab)), "",
        f"Tallied: `layer` ran once on the small configuration ({cfg.run_context} positions) "
        f"inside `count_multiplies()`, whose tally is kept by the code that multiplies.\n",
        markdown_table(["method", "g", "tallied total", "formula total", "scores (tallied)",
                        "k_proj (tallied)", "tallied = formula, every term"],
                       [(lab.name[g], g, f"{m.tallied[g].total:,}", f"{formula[g].total:,}",
                         f"{m.tallied[g].scores:,}", f"{m.tallied[g].k_proj:,}",
                         _yes(m.tallied[g] == formula[g])) for g in lab.gs]),
        ""])


def section_output(cfg: Config, lab: Labels, m: Measured) -> str:
    rel = {g: m.difference[g].rel_l2.mean for g in lab.gs}
    return "\n".join([
        "## 4. The output: it changes\n",
        f"`layer(x, weights, g)` against the MHA output `layer(x, weights, {cfg.heads})`, on the "
        f"same weights and input, over {cfg.seeds} seeds: mean (lowest to highest).\n",
        markdown_table(["method", "g", "max abs difference", "relative L2", "cosine"],
                       [(lab.name[g], g) + tuple(_spread(s) for s in m.difference[g]) for g in lab.gs]),
        "",
        _code(bar_chart([lab.label[g] for g in lab.gs], [rel[g] for g in lab.gs],
                        [f"relative L2 {fmt(rel[g])}" for g in lab.gs])),
        "",
        f"At g = h the difference is exactly zero: `attention(q, k, v, g={cfg.heads}) == "
        f"[single_head_attention(q[i], k[i], v[i]) for each head]` was checked with `==`, "
        f"not a tolerance, on the projected q, k, v of every seed: {_yes(m.exact_mha)}.\n"])


def section_conversion(lab: Labels, m: Measured) -> str:
    gs = lab.gs[:-1]
    return "\n".join([
        "## 5. Converting an MHA checkpoint: mean, first head, or random\n",
        "Three ways to make g key/value heads from h: the mean of each group (the GQA "
        "paper's choice), the first head of each group, or new random heads. Relative L2 "
        "difference from the MHA output, mean (lowest to highest) over the seeds:\n",
        markdown_table(["method", "g"] + list(CONVERSIONS),
                       [(lab.name[g], g) + tuple(_spread(m.conversion[(g, c)]) for c in CONVERSIONS)
                        for g in gs]),
        "",
        conversion_sentence(gs, m.conversion),
        ""])


def conversion_sentence(gs: Sequence[int], conv: dict) -> str:
    """One sentence comparing the measured ordering with the paper's (mean, first, random)."""
    order = {g: sorted(CONVERSIONS, key=lambda c: conv[(g, c)].mean) for g in gs}
    paper = list(CONVERSIONS)
    agree = [g for g in gs if order[g] == paper]
    if len(agree) == len(gs):
        return ("On these untrained weights the output moves least with the mean, then the "
                "first head, then random heads, at every g: the GQA paper's ordering of the "
                "three (which it measured on quality after training).")
    differ = ", ".join(f"g = {g}: {' < '.join(order[g])}" for g in gs if g not in agree)
    return (f"On these untrained weights the ordering (by mean relative L2, smallest first) "
            f"matches the GQA paper's (mean, then first, then random, measured on quality after "
            f"training) at {len(agree)} of {len(gs)} values of g, and differs at {differ}.")


def decode_traffic(cfg: Config, g: int, batch: int = 1) -> gqa.DecodeTraffic:
    return gqa.decode_traffic(cfg.context, cfg.heads, g, cfg.head_dim, cfg.d_model, batch=batch)


def section_decoding(cfg: Config, lab: Labels) -> str:
    points = sorted({max(1, cfg.context // 8), max(1, cfg.context // 4), max(1, cfg.context // 2),
                     cfg.context})

    def read_at(t: int, g: int) -> int:
        """Cache elements read for token t, all layers: the step from t - 1 to t."""
        total = gqa.decode_traffic(t, cfg.heads, g, cfg.head_dim, cfg.d_model).cache_reads
        before = gqa.decode_traffic(t - 1, cfg.heads, g, cfg.head_dim, cfg.d_model).cache_reads
        return cfg.layers * (total - before)

    return "\n".join([
        "## 6. Decoding reads the whole cache for every token\n",
        f"Incremental decoding appends one position and then reads every cached K and V: "
        f"cache elements read to generate token t, all {cfg.layers} layers (from "
        f"`decode_traffic`).\n",
        markdown_table(["method", "g"] + [f"t = {t:,}" for t in points],
                       [(lab.name[g], g) + tuple(f"{read_at(t, g):,}" for t in points)
                        for g in lab.gs]),
        "",
        f"Elements read (cache and weights) per multiplication over the whole "
        f"{cfg.context:,}-token decode. On hardware that does far more multiplications per "
        f"element it reads, a high ratio means the decode waits on memory; batching shares "
        f"the weight reads, but every sequence has its own cache (Shazeer 2019, section 3).\n",
        markdown_table(["method", "g", "batch 1", f"batch {cfg.batch}"],
                       [(lab.name[g], g, fmt(decode_traffic(cfg, g).ratio),
                         fmt(decode_traffic(cfg, g, cfg.batch).ratio)) for g in lab.gs]),
        ""])


def section_reading(cfg: Config, lab: Labels, m: Measured) -> str:
    h = cfg.heads
    cache = gqa.cache_table(h, layers=cfg.layers, length=cfg.context, head_dim=cfg.head_dim)
    mult = gqa.multiplies_table(cfg.context, h, cfg.head_dim, cfg.d_model)
    mqa, mha_cache, mha = cache[0], cache[-1], mult[-1].counts
    body = mha.scores + mha.weighted_sum
    tallied_ok = all(m.tallied[g] == run_formula(cfg, g) for g in lab.gs)
    return "\n".join([
        "## 7. How to read this\n",
        f"- **What g changes: memory.** The cache shrinks in proportion to g: MQA holds "
        f"{fmt(mqa.ratio)} of MHA's cache here ({human_bytes(2 * mqa.elements)} instead of "
        f"{human_bytes(2 * mha_cache.elements)} at 16 bits for {cfg.context:,} positions). "
        f"Decoding re-reads the whole cache for every token, so on memory-bound hardware a "
        f"smaller cache decodes faster: at batch {cfg.batch}, MHA reads "
        f"{fmt(decode_traffic(cfg, h, cfg.batch).ratio)} elements per multiplication and MQA "
        f"{fmt(decode_traffic(cfg, 1, cfg.batch).ratio)}.",
        f"- **What g does not change: the attention body.** Scores and weighted sum are "
        f"{body:,} multiplications per layer over {cfg.context:,} positions at every g, and they "
        f"grow as n x n. Only the K and V projections shrink, so prefill's multiplications fall "
        f"only to {fmt(mult[0].ratio.total)} of MHA's at g = 1, all of the saving in those two "
        f"projections; the body's share of MHA's total, {fmt(body / mha.total)}, is untouched.",
        f"- **A changed output is not a measured loss of quality.** These weights are random "
        f"and untrained, so the relative L2 difference of {fmt(m.difference[1].rel_l2.mean)} at "
        f"g = 1 says how much the output changed, not how much worse a model got. Quality "
        f"is measured on a trained model and a task; the GQA paper converts a trained MHA "
        f"checkpoint by the mean and then continues training for about "
        f"{GQA_PAPER_UPTRAINING:.0%} of the original pre-training steps to recover it.",
        f"- **Exact where it must be.** At g = h the lab's function is MHA bit for bit "
        f"({'checked' if m.exact_mha else 'NOT the case'}), and every count above that was "
        f"tallied or counted agrees with its closed form "
        f"({'all rows' if tallied_ok else 'NOT all rows'})."])


def build_report(cfg: Config, m: Measured) -> str:
    """Return report.md's text for a configuration and its measurements."""
    lab = labels(cfg.heads)
    return "\n".join([section_header(cfg), section_what_g_is(cfg, lab), section_cache(cfg, lab, m),
                      section_multiplies(cfg, lab, m), section_output(cfg, lab, m),
                      section_conversion(lab, m), section_decoding(cfg, lab),
                      section_reading(cfg, lab, m)]) + "\n"


# ---------------------------------------------------------------------------
# The command: write atomically, or check.
# ---------------------------------------------------------------------------

def first_difference_line(old: str, new: str) -> str:
    a, b = old.splitlines(), new.splitlines()
    for i, (x, y) in enumerate(zip(a, b), 1):
        if x != y:
            return f"line {i}:\n  on disk: {x}\n  code:    {y}"
    i = min(len(a), len(b)) + 1
    return f"line {i}: " + ("the file has lines the code does not write" if len(a) > len(b)
                            else "the file ends where the code goes on")


def default_report_path() -> str:
    """report.md at the root of a checkout (beside gqa.py and pyproject.toml), else ./report.md."""
    root = os.path.dirname(os.path.abspath(gqa.__file__))
    if os.path.exists(os.path.join(root, "pyproject.toml")):
        return os.path.join(root, "report.md")
    return "report.md"


def check(path: str, text: str, cfg: Config) -> int:
    """Exit status of --check: 0 when the file at path is text, 1 otherwise."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            old = f.read()
    except OSError as err:
        print(f"gqa report --check: cannot read {path}: {err.strerror}", file=sys.stderr)
        return 1
    if old != text:
        print(f"gqa report --check: {path} differs from what the code writes now, first at "
              f"{first_difference_line(old, text)}\nregenerate it with: {cfg.command()}",
              file=sys.stderr)
        return 1
    print(f"{path} is what the code writes now")
    return 0


def report_main(argv: Sequence[str]) -> int:
    defaults = Config()
    parser = argparse.ArgumentParser(
        prog="python -m gqa report",
        description="Write report.md: the lab's tables, counted and measured by the code.")
    parser.add_argument("--out", default=None, metavar="PATH",
                        help="where to write (default: report.md at the root of the "
                             "checkout, or in the current directory when gqa is installed)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the file differs from what the code writes now")
    add_int_options(parser, defaults)
    args = parser.parse_args(argv)
    cfg = int_options(parser, args, defaults)
    path = args.out or default_report_path()
    try:
        text = build_report(cfg, measure(cfg))
    except (gqa.GQAError, TypeError) as err:
        parser.error(str(err))
    if args.check:
        return check(path, text, cfg)
    try:
        write_atomically(path, text)
    except OSError as err:
        print(f"gqa report: cannot write {path}: {err.strerror or err}; nothing was changed",
              file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa report`."""
    return report_main(argv)
