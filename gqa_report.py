"""gqa_report: the lab's tables and report.md, written by the code.

    python -m gqa tables [--heads 8 --head-dim 128 --layers 32 --context 4096]
    python -m gqa report [--out report.md] [--check] [configuration options]

Every number in the tables and the report is computed, counted or measured
by gqa when the command runs: none is typed in.  The report is the same to
the byte on every run, machine and Python version: seeded random numbers,
a fixed order, fixed precision, no timings, no dates, no machine names.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from operator import mul
from typing import List, NamedTuple, Sequence

import gqa

# ---------------------------------------------------------------------------
# Formatting: aligned Markdown tables and Unicode bars.
# ---------------------------------------------------------------------------


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Return an aligned Markdown table; numbers are right-aligned."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    numeric = [all(_is_number(r[i]) for r in cells) and bool(cells) for i in range(len(headers))]

    def line(values):
        return "| " + " | ".join(v.rjust(w) if num else v.ljust(w)
                                 for v, w, num in zip(values, widths, numeric)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2))
                          for w, num in zip(widths, numeric)) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in cells])


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1) -> str:
    """Return a plain aligned table: the first `left` columns left-aligned, the rest right."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if i < left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(headers)] + [line(r) for r in rows])


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", "").rstrip("x%"))
    except ValueError:
        return False
    return True


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
    pad = max(map(len, labels), default=0)
    return "\n".join(f"{label.ljust(pad)}  {bar(v, top, width).ljust(width)}  {text}"
                     for label, v, text in zip(labels, values, texts))


def ratio(x: float) -> str:
    """Format a ratio to MHA."""
    return f"{x:.4g}"


# ---------------------------------------------------------------------------
# The two tables of the lab: what g changes, and what it does not.
# ---------------------------------------------------------------------------


def cache_markdown(h: int, layers: int, length: int, head_dim: int) -> str:
    """Return cache_table(...) as Markdown."""
    rows = gqa.cache_table(h, layers=layers, length=length, head_dim=head_dim)
    return markdown_table(
        ["method", "g (kv heads)", "h // g", "cache elements", "ratio to MHA"],
        [(r.method, r.kv_heads, r.group_size, f"{r.elements:,}", ratio(r.ratio)) for r in rows])


TERMS = ("q_proj", "k_proj", "v_proj", "scores", "weighted_sum", "o_proj", "total")


def multiplies_markdown(n: int, h: int, d: int, d_model: int, *, ratios: bool = False) -> str:
    """Return multiplies_table(...) as Markdown, one row per term, one column per g.

    With ratios=True each cell is the term's ratio to MHA instead of its count.
    """
    rows = gqa.multiplies_table(n, h, d, d_model)
    headers = ["term"] + [f"{r.method} g={r.kv_heads}" for r in rows]
    cells = [[term] + [ratio(getattr(r.ratio, term)) if ratios else f"{getattr(r.counts, term):,}"
                       for r in rows] for term in TERMS]
    return markdown_table(headers, cells)


def tables_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gqa tables",
        description="Print the KV-cache and multiplication tables for every valid g.")
    parser.add_argument("--heads", type=int, default=8, help="query heads h (default 8)")
    parser.add_argument("--head-dim", type=int, default=128, help="head dim d (default 128)")
    parser.add_argument("--layers", type=int, default=32, help="layers (default 32)")
    parser.add_argument("--context", type=int, default=4096,
                        help="positions: cache length and n (default 4096)")
    parser.add_argument("--d-model", type=int, default=None,
                        help="model width (default heads x head dim)")
    args = parser.parse_args(argv)
    d_model = args.d_model if args.d_model is not None else args.heads * args.head_dim
    try:
        cache = cache_markdown(args.heads, args.layers, args.context, args.head_dim)
        mult = multiplies_markdown(args.context, args.heads, args.head_dim, d_model)
    except (gqa.GQAError, TypeError) as err:
        parser.error(str(err))
    print(f"KV cache, {args.layers} layer(s) x {args.context} positions, head dim {args.head_dim}:\n")
    print(cache)
    print(f"\nMultiplications of one layer over n={args.context} positions, d_model={d_model}:\n")
    print(mult)
    print("\nThe same, as a ratio to MHA:\n")
    print(multiplies_markdown(args.context, args.heads, args.head_dim, d_model, ratios=True))
    return 0


def human_bytes(n: int) -> str:
    """Format a byte count in binary units: 1.5 GiB."""
    for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n} B"


# ---------------------------------------------------------------------------
# The report: what it is computed from.
# ---------------------------------------------------------------------------

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


def run_input(cfg: Config, seed: int) -> tuple:
    """The small configuration's weights and input for one seed: (weights, x [n][d_model])."""
    w = gqa.init_weights(cfg.heads, cfg.run_d_model, cfg.run_head_dim, seed=seed)
    rng = random.Random(f"input:{seed}")
    x = [[rng.uniform(-1.0, 1.0) for _ in range(cfg.run_d_model)] for _ in range(cfg.run_context)]
    return w, x


def counted_cache(cfg: Config, g: int) -> int:
    """Decode the small configuration through run_layers layers; return the floats cached."""
    caches = [gqa.KVCache(g, cfg.run_head_dim) for _ in range(cfg.run_layers)]
    weights = [gqa.fold_weights(gqa.init_weights(cfg.heads, cfg.run_d_model, cfg.run_head_dim,
                                                 seed=cfg.seed + layer), g)
               for layer in range(cfg.run_layers)]
    _, x = run_input(cfg, cfg.seed)
    for x_t in x:
        for w, cache in zip(weights, caches):
            x_t = gqa.decode_step(x_t, w, g, cache)
    return sum(cache.elements for cache in caches)


def tallied_multiplies(cfg: Config, g: int) -> gqa.Multiplies:
    """The multiplications tallied while layer() runs once on the small configuration."""
    w, x = run_input(cfg, cfg.seed)
    with gqa.count_multiplies() as tally:
        gqa.layer(x, w, g)
    return tally.multiplies()


def first_head(w: gqa.Weights, g: int) -> gqa.Weights:
    """Convert by keeping the first K/V head of each group."""
    groups = gqa.group_heads(len(w.w_q), g)
    return w._replace(w_k=[w.w_k[grp[0]] for grp in groups], w_v=[w.w_v[grp[0]] for grp in groups])


def random_heads(w: gqa.Weights, g: int, seed: int) -> gqa.Weights:
    """Convert by drawing g new random K/V heads (the scale of init_weights)."""
    fresh = gqa.init_weights(g, len(w.w_q[0]), len(w.w_q[0][0]), seed=seed)
    return w._replace(w_k=fresh.w_k, w_v=fresh.w_v)


CONVERSIONS = ("mean", "first", "random")


class Spread(NamedTuple):
    mean: float
    low: float
    high: float


def spread(values: Sequence[float]) -> Spread:
    return Spread(sum(values) / len(values), min(values), max(values))


class Measured(NamedTuple):
    """Everything the report measures on the small configuration."""
    cache_counted: dict             # g -> floats held by real caches
    tallied: dict                   # g -> Multiplies tallied while layer() ran
    difference: dict                # g -> (Spread of max_abs, rel_l2, cosine) over seeds
    exact_mha: bool                 # attention(g = h) == per-head MHA, for every seed
    conversion: dict                # (g, name) -> Spread of rel_l2 over seeds


def project(x: List[List[float]], w: List[List[float]]) -> List[List[float]]:
    """One head's projection, outside the tally: x [n][d_model] @ w [d_model][d] -> [n][d]."""
    cols = list(zip(*w))                                     # [d][d_model]
    return [[sum(map(mul, row, col)) for col in cols] for row in x]


def measure(cfg: Config) -> Measured:
    h, gs = cfg.heads, gqa.valid_g(cfg.heads)
    seeds = range(cfg.seed, cfg.seed + cfg.seeds)
    diffs = {g: [] for g in gs}
    conv = {(g, name): [] for g in gs for name in CONVERSIONS}
    exact = True
    for seed in seeds:
        w, x = run_input(cfg, seed)
        mha = gqa.layer(x, w, h)
        for g in gs:
            diffs[g].append(gqa.output_difference(gqa.layer(x, w, g), mha))
            for name, converted in (("mean", gqa.fold_weights(w, g)), ("first", first_head(w, g)),
                                    ("random", random_heads(w, g, seed + 10 ** 6))):
                conv[(g, name)].append(gqa.output_difference(gqa.layer(x, converted, g), mha).rel_l2)
        q = [project(x, wq) for wq in w.w_q]                        # [h][n][d]
        k = [project(x, wk) for wk in w.w_k]                        # [h][n][d]
        v = [project(x, wv) for wv in w.w_v]                        # [h][n][d]
        per_head = [gqa.single_head_attention(q[i], k[i], v[i]) for i in range(h)]
        exact = exact and gqa.attention(q, k, v, h) == per_head
    return Measured(
        cache_counted={g: counted_cache(cfg, g) for g in gs},
        tallied={g: tallied_multiplies(cfg, g) for g in gs},
        difference={g: tuple(spread([getattr(d, f) for d in diffs[g]])
                             for f in ("max_abs", "rel_l2", "cosine")) for g in gs},
        exact_mha=exact,
        conversion={key: spread(values) for key, values in conv.items()})


# ---------------------------------------------------------------------------
# The report: how it is written.
# ---------------------------------------------------------------------------

def _f(x: float) -> str:
    return f"{x:.4g}"


def _spread(s: Spread) -> str:
    return f"{_f(s.mean)} ({_f(s.low)} to {_f(s.high)})"


def _ranges(groups: List[List[int]], limit: int = 4) -> str:
    parts = [f"{grp[0]}–{grp[-1]}" if len(grp) > 1 else str(grp[0]) for grp in groups]
    return ", ".join(parts if len(parts) <= limit else parts[:2] + ["…"] + parts[-1:])


def _yes(ok: bool) -> str:
    return "yes" if ok else "**NO**"


def _code(text: str) -> str:
    return "```\n" + text + "\n```"


def build_report(cfg: Config, m: Measured) -> str:
    """Return report.md's text for a configuration and its measurements."""
    h, gs = cfg.heads, gqa.valid_g(cfg.heads)
    names = {g: gqa.method_name(h, g) for g in gs}
    label = {g: f"{names[g]} g={g}" for g in gs}
    cache = gqa.cache_table(h, layers=cfg.layers, length=cfg.context, head_dim=cfg.head_dim)
    mult = gqa.multiplies_table(cfg.context, h, cfg.head_dim, cfg.d_model)
    mha_mult = mult[-1].counts
    out = []
    add = out.append

    add("# gqa lab report\n")
    add(f"Written by `{cfg.command()}`. Every number below was computed, counted or measured "
        f"by `gqa.py` when that command ran; `python -m gqa report --check` tells whether this "
        f"file is still what the code writes. The real-size configuration (counted by the "
        f"closed forms) has h = {h} query heads, head dim {cfg.head_dim}, {cfg.layers} layers, "
        f"{cfg.context:,} positions and d_model = {cfg.d_model:,}. The small configuration that "
        f"the code actually runs has the same {h} query heads, head dim {cfg.run_head_dim}, "
        f"d_model {cfg.run_d_model}, {cfg.run_context} positions and {cfg.run_layers} layers, "
        f"with random, untrained weights from seeds {cfg.seed} to {cfg.seed + cfg.seeds - 1}.\n")

    add("## 1. What g is\n")
    add(f"One knob: g, the number of key/value heads. It must divide h = {h}, and each "
        f"contiguous block of h // g query heads reads one key/value head "
        f"(`kv_head(i, h, g) = i // (h // g)`).\n")
    add(markdown_table(["method", "g (kv heads)", "h // g", "query heads of each key/value head"],
                       [(names[g], g, h // g, _ranges(gqa.group_heads(h, g))) for g in gs]))
    add("")

    add("## 2. The KV cache: what g changes\n")
    add(f"{cfg.layers} layers x {cfg.context:,} positions x head dim {cfg.head_dim}, one sequence; "
        f"2 x layers x g x length x head_dim numbers (K and V; queries are never cached).\n")
    add(markdown_table(["method", "g", "cache elements", "ratio to MHA", "bytes at 16 bits"],
                       [(r.method, r.kv_heads, f"{r.elements:,}", _f(r.ratio),
                         f"{human_bytes(2 * r.elements)} ({2 * r.elements:,})") for r in cache]))
    add("")
    add(_code(bar_chart([label[r.kv_heads] for r in cache], [r.elements for r in cache],
                        [human_bytes(2 * r.elements) for r in cache])))
    add("")
    add(f"Counted: the small configuration decoded {cfg.run_context} positions through "
        f"{cfg.run_layers} layers with `KVCache` and `decode_step`, and the floats the caches "
        f"hold were counted from their `array('d')` storage.\n")
    add(markdown_table(["method", "g", "counted in real caches", "kv_cache_elements", "counted = formula"],
                       [(names[g], g, f"{m.cache_counted[g]:,}",
                         f"{gqa.kv_cache_elements(cfg.run_layers, g, cfg.run_context, cfg.run_head_dim):,}",
                         _yes(m.cache_counted[g] == gqa.kv_cache_elements(
                             cfg.run_layers, g, cfg.run_context, cfg.run_head_dim)))
                        for g in gs]))
    add("")

    add("## 3. Multiplications: what g does not change\n")
    add(f"One layer over n = {cfg.context:,} positions (full attention), per term. Only the K and "
        f"V projections have g in them; the attention body, scores and weighted sum "
        f"(h x n x n x d each), is the same at every g.\n")
    add(multiplies_markdown(cfg.context, h, cfg.head_dim, cfg.d_model))
    add("")
    add("As a ratio to MHA:\n")
    add(multiplies_markdown(cfg.context, h, cfg.head_dim, cfg.d_model, ratios=True))
    add("")
    add("Each bar is one g's total, split into the attention body (█), the q and o "
        "projections (▒) and the k and v projections (░):\n")
    width, top = 40, mha_mult.total
    lines = []
    for r in mult:
        c = r.counts
        body = round(width * (c.scores + c.weighted_sum) / top)
        qo = round(width * (c.scores + c.weighted_sum + c.q_proj + c.o_proj) / top) - body
        kv = round(width * c.total / top) - body - qo
        lines.append(f"{label[r.kv_heads]:<{max(map(len, label.values()))}}  "
                     f"{('█' * body + '▒' * qo + '░' * kv).ljust(width)}  {_f(r.ratio.total)} of MHA")
    add(_code("\n".join(lines)))
    add("")
    add(f"Tallied: `layer` ran once on the small configuration ({cfg.run_context} positions) "
        f"inside `count_multiplies()`, whose tally is kept by the code that multiplies.\n")
    formula = {g: gqa.attention_multiplies(cfg.run_context, h, g, cfg.run_head_dim, cfg.run_d_model)
               for g in gs}
    add(markdown_table(["method", "g", "tallied total", "formula total", "scores (tallied)",
                        "k_proj (tallied)", "tallied = formula, every term"],
                       [(names[g], g, f"{m.tallied[g].total:,}", f"{formula[g].total:,}",
                         f"{m.tallied[g].scores:,}", f"{m.tallied[g].k_proj:,}",
                         _yes(m.tallied[g] == formula[g])) for g in gs]))
    add("")

    add("## 4. The output: it changes\n")
    add(f"`layer(x, weights, g)` against the MHA output `layer(x, weights, {h})`, on the same "
        f"weights and input, over {cfg.seeds} seeds: mean (lowest to highest).\n")
    add(markdown_table(["method", "g", "max abs difference", "relative L2", "cosine"],
                       [(names[g], g) + tuple(_spread(s) for s in m.difference[g]) for g in gs]))
    add("")
    add(_code(bar_chart([label[g] for g in gs], [m.difference[g][1].mean for g in gs],
                        [f"relative L2 {_f(m.difference[g][1].mean)}" for g in gs])))
    add("")
    add(f"At g = h the difference is exactly zero: `attention(q, k, v, g={h}) == "
        f"[single_head_attention(q[i], k[i], v[i]) for each head]` was checked with `==`, "
        f"not a tolerance, on the projected q, k, v of every seed: {_yes(m.exact_mha)}.\n")

    add("## 5. Converting an MHA checkpoint: mean, first head, or random\n")
    add("Three ways to make g key/value heads from h: the mean of each group (the GQA "
        "paper's choice), the first head of each group, or new random heads. Relative L2 "
        "difference from the MHA output, mean (lowest to highest) over the seeds:\n")
    add(markdown_table(["method", "g"] + list(CONVERSIONS),
                       [(names[g], g) + tuple(_spread(m.conversion[(g, c)]) for c in CONVERSIONS)
                        for g in gs[:-1]]))
    add("")
    add(conversion_sentence(gs[:-1], m.conversion))
    add("")

    add("## 6. Decoding reads the whole cache for every token\n")
    add(f"Incremental decoding appends one position and then reads every cached K and V: "
        f"cache elements read to generate token t, all {cfg.layers} layers (from "
        f"`decode_traffic`).\n")
    points = sorted({max(1, cfg.context // 8), max(1, cfg.context // 4), max(1, cfg.context // 2),
                     cfg.context})

    def read_at(t: int, g: int) -> int:
        total = gqa.decode_traffic(t, h, g, cfg.head_dim, cfg.d_model).cache_reads
        return cfg.layers * (total - gqa.decode_traffic(t - 1, h, g, cfg.head_dim, cfg.d_model).cache_reads)
    add(markdown_table(["method", "g"] + [f"t = {t:,}" for t in points],
                       [(names[g], g) + tuple(f"{read_at(t, g):,}" for t in points) for g in gs]))
    add("")
    traffic = {(g, b): gqa.decode_traffic(cfg.context, h, g, cfg.head_dim, cfg.d_model, batch=b)
               for g in gs for b in (1, cfg.batch)}
    add(f"Elements read (cache and weights) per multiplication over the whole "
        f"{cfg.context:,}-token decode. On hardware that does far more multiplications per "
        f"element it reads, a high ratio means the decode waits on memory; batching shares "
        f"the weight reads, but every sequence has its own cache (Shazeer 2019, section 3).\n")
    add(markdown_table(["method", "g", "batch 1", f"batch {cfg.batch}"],
                       [(names[g], g, _f(traffic[(g, 1)].ratio), _f(traffic[(g, cfg.batch)].ratio))
                        for g in gs]))
    add("")

    add("## 7. How to read this\n")
    mqa, mha_c = cache[0], cache[-1]
    add(f"- **What g changes: memory.** The cache shrinks in proportion to g: MQA holds "
        f"{_f(mqa.ratio)} of MHA's cache here ({human_bytes(2 * mqa.elements)} instead of "
        f"{human_bytes(2 * mha_c.elements)} at 16 bits for {cfg.context:,} positions). "
        f"Decoding re-reads the whole cache for every token, so on memory-bound hardware a "
        f"smaller cache decodes faster: at batch {cfg.batch}, MHA reads "
        f"{_f(traffic[(h, cfg.batch)].ratio)} elements per multiplication and MQA "
        f"{_f(traffic[(1, cfg.batch)].ratio)}.")
    add(f"- **What g does not change: the attention body.** Scores and weighted sum are "
        f"{mha_mult.scores + mha_mult.weighted_sum:,} multiplications per layer over "
        f"{cfg.context:,} positions at every g, and they grow as n x n. Only the K and V "
        f"projections shrink, so prefill's multiplications fall only to "
        f"{_f(mult[0].ratio.total)} of MHA's at g = 1, all of the saving in those two "
        f"projections; the body's share of MHA's total, "
        f"{_f((mha_mult.scores + mha_mult.weighted_sum) / mha_mult.total)}, is untouched.")
    add(f"- **A changed output is not a measured loss of quality.** These weights are random "
        f"and untrained, so the relative L2 difference of {_f(m.difference[1][1].mean)} at "
        f"g = 1 says how much the output changed, not how much worse a model got. Quality "
        f"is measured on a trained model and a task; the GQA paper converts a trained MHA "
        f"checkpoint by the mean and then continues training for about "
        f"{GQA_PAPER_UPTRAINING:.0%} of the original pre-training steps to recover it.")
    add(f"- **Exact where it must be.** At g = h the lab's function is MHA bit for bit "
        f"({'checked' if m.exact_mha else 'NOT the case'}), and every count above that was "
        f"tallied or counted agrees with its closed form "
        f"({'all rows' if all(m.tallied[g] == formula[g] for g in gs) else 'NOT all rows'}).")
    return "\n".join(out) + "\n"


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


# ---------------------------------------------------------------------------
# The command: write atomically, or check.
# ---------------------------------------------------------------------------

def write_atomically(path: str, text: str) -> None:
    """Write text to path through a temporary file and os.replace: all or nothing."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def first_difference_line(old: str, new: str) -> str:
    a, b = old.splitlines(), new.splitlines()
    for i, (x, y) in enumerate(zip(a, b), 1):
        if x != y:
            return f"line {i}:\n  on disk: {x}\n  code:    {y}"
    i = min(len(a), len(b)) + 1
    return f"line {i}: " + ("the file has lines the code does not write" if len(a) > len(b)
                            else "the file ends where the code goes on")


def add_int_options(parser: argparse.ArgumentParser, defaults: NamedTuple,
                    note=lambda name: "") -> None:
    """Add an int option --some-name for each field some_name of defaults, None when not given."""
    for name, value in defaults._asdict().items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=None,
                            help=f"(default {value}{note(name)})")


def int_options(parser: argparse.ArgumentParser, args: argparse.Namespace, base: NamedTuple):
    """Return base with the options given on the command line; each positive, a seed at least 0."""
    values = {name: getattr(base, name) if getattr(args, name) is None else getattr(args, name)
              for name in base._fields}
    for name, value in values.items():
        if value < (0 if name == "seed" else 1):
            rule = "at least 0" if name == "seed" else "positive"
            parser.error(f"--{name.replace('_', '-')} must be {rule}; got {value}")
    return type(base)(**values)


def default_report_path() -> str:
    """report.md at the root of a checkout (beside gqa.py and pyproject.toml), else ./report.md."""
    root = os.path.dirname(os.path.abspath(gqa.__file__))
    if os.path.exists(os.path.join(root, "pyproject.toml")):
        return os.path.join(root, "report.md")
    return "report.md"


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
    try:
        write_atomically(path, text)
    except OSError as err:
        print(f"gqa report: cannot write {path}: {err.strerror or err}; nothing was changed",
              file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa tables|report`."""
    return {"tables": tables_main, "report": report_main}[command](argv)
