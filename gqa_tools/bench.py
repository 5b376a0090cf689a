"""gqa_tools.bench: time and memory per g, measured on this machine.

    python -m gqa bench [--heads 8 --head-dim 32 --d-model 32 --context 64 --repeats 5] [--quick] [--json] [--lang ja]

For every divisor g of h, on the same weights: prefill (a causal `layer`
over n positions), decode (n steps of `decode_step`), the KV cache's real memory
(tracemalloc around building it, with room for n positions) beside
8 x kv_cache_elements, and the multiplications tallied during a run beside
the formula.  The lesson it
shows: the cache's memory falls in proportion to g, but pure-Python time
does not, because CPython is bound by arithmetic, not by memory bandwidth;
the MQA paper's decoding speed-up appears on memory-bound accelerators.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tracemalloc
from typing import Any, Callable, Dict, List, NamedTuple, Sequence

import gqa
from gqa_grader.language import i18n
from gqa_grader.language.i18n import _
from gqa_tools.counts import project
from gqa_tools.formats import human_bytes, text_table
from gqa_tools.language import chosen_lang, speaking
from gqa_tools.options import add_int_options, int_options, progress_line
from gqa_tools.seeds import rng_for, seed_for


class Settings(NamedTuple):
    heads: int = 8
    head_dim: int = 32
    d_model: int = 32
    context: int = 64
    repeats: int = 5
    seed: int = 0


QUICK = Settings(heads=4, head_dim=8, d_model=32, context=16, repeats=2)

# Past these a pure-Python bench would take hours or run out of memory.
LIMITS = {"heads": 64, "head_dim": 256, "d_model": 1024, "context": 1024, "repeats": 100,
          "seed": 10 ** 9}


def projected_rows(x: list, heads: list) -> list:
    """The K (or V) rows decode_step appends: x [n][d_model], heads [g][d_model][d] -> [n][g][d]."""
    return [list(rows) for rows in zip(*(project(x, w) for w in heads))]


def cache_memory(rows_k: list, rows_v: list, g: int, d: int) -> int:
    """Bytes tracemalloc sees held after filling a KVCache, made with room for the rows.

    A small cache is built first and thrown away, so that what the
    interpreter allocates once, on a function's first call (frames kept for
    reuse, before Python 3.11), is not counted as the cache's.
    """
    warm = gqa.KVCache(g, d, capacity=1)
    warm.append(rows_k[0], rows_v[0])
    del warm
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cache = gqa.KVCache(g, d, capacity=len(rows_k))
        for k, v in zip(rows_k, rows_v):
            cache.append(k, v)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return held


class Work(NamedTuple):
    """The two timed workloads of one g: prefill and a whole decode."""
    prefill: Callable[[], object]
    decode: Callable[[], object]


def workloads(s: Settings, x: list, weights: gqa.Weights, g: int) -> Work:
    """Prefill with a causal layer(), decode with decode_step(), on weights prepared once."""
    prepared = gqa.prepare_weights(weights, g)

    def decode() -> list:
        cache = gqa.KVCache(g, s.head_dim, capacity=len(x))
        return [gqa.decode_step(x_t, prepared, g, cache) for x_t in x]

    return Work(lambda: gqa.layer(x, prepared, g, causal=True), decode)


def counted(s: Settings, x: list, weights: gqa.Weights, g: int, work: Work) -> Dict[str, Any]:
    """One g's untimed figures: the memory a cache holds and the tallied multiplications."""
    h, n, d = s.heads, s.context, s.head_dim
    with gqa.count_multiplies() as tally_prefill:
        work.prefill()
    with gqa.count_multiplies() as tally_decode:
        work.decode()
    w = gqa.fold_weights(weights, g)
    return {
        "method": gqa.method_name(h, g), "g": g,
        "cache_bytes_measured": cache_memory(projected_rows(x, w.w_k), projected_rows(x, w.w_v), g, d),
        "cache_bytes_formula": 8 * gqa.kv_cache_elements(1, g, n, d),
        "prefill_multiplies_tallied": tally_prefill.multiplies().total,
        "prefill_multiplies_formula": gqa.attention_multiplies(n, h, g, d, s.d_model, causal=True).total,
        "decode_multiplies_tallied": tally_decode.multiplies().total,
        "decode_multiplies_formula": gqa.decode_traffic(n, h, g, d, s.d_model).multiplies,
    }


def timed(s: Settings, work: Dict[int, Work], progress=None) -> Dict[int, tuple]:
    """g -> (prefill seconds, decode seconds) of each repeat, every g once per repeat.

    Interleaved, so that the machine's changing load falls on all g alike.
    """
    times: Dict[int, tuple] = {g: ([], []) for g in work}
    for r in range(s.repeats):
        if progress:
            progress(_("run {run} of {runs}").format(run=r + 1, runs=s.repeats))
        for g, w in work.items():
            for fn, store in zip(w, times[g]):
                start = time.perf_counter()
                fn()
                store.append(time.perf_counter() - start)
    return times


def _summary(values: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run(s: Settings, progress=None) -> Dict[str, Any]:
    """Measure every g; return plain data (times in seconds, bytes, counts)."""
    h, n = s.heads, s.context
    weights = gqa.init_weights(h, s.d_model, s.head_dim, seed=seed_for("weights", s.seed))
    rng = rng_for("input", s.seed)
    x = [[rng.uniform(-1.0, 1.0) for _ in range(s.d_model)] for _ in range(n)]   # [n][d_model]
    work = {g: workloads(s, x, weights, g) for g in gqa.valid_g(h)}
    rows = {g: counted(s, x, weights, g, w) for g, w in work.items()}     # also the warm-up
    for g, (prefill, decode) in timed(s, work, progress).items():
        rows[g]["prefill_s"] = _summary(prefill)
        rows[g]["decode_s_per_token"] = _summary([t / n for t in decode])
    mha = rows[h]
    for row in rows.values():
        row["cache_ratio_to_mha"] = row["cache_bytes_measured"] / mha["cache_bytes_measured"]
        row["cache_over_formula"] = row["cache_bytes_measured"] / row["cache_bytes_formula"]
        for what, key in (("prefill_time", "prefill_s"), ("decode_time", "decode_s_per_token")):
            row[f"{what}_ratio_to_mha"] = row[key]["median"] / mha[key]["median"]
        for what in ("prefill_multiplies", "decode_multiplies"):
            row[f"{what}_ratio_to_mha"] = row[f"{what}_formula"] / mha[f"{what}_formula"]
    return {"settings": s._asdict(), "python": sys.version.split()[0], "rows": list(rows.values())}


def spread_percent(values: Sequence[float]) -> float:
    """(largest - smallest) / smallest, in percent."""
    return 100.0 * (max(values) - min(values)) / min(values)


def render(result: Dict[str, Any]) -> str:
    s, rows = result["settings"], result["rows"]
    h = s["heads"]
    head = (_("method"), "g", _("prefill ms (min-max)"), _("decode ms/token (min-max)"), _("time vs MHA"),
            _("multiplies vs MHA"), _("cache measured"), _("8 x elements"), _("cache vs MHA"),
            _("tally = formula"))
    table = []
    for r in rows:
        p, dcd = r["prefill_s"], r["decode_s_per_token"]
        table.append((
            r["method"], str(r["g"]),
            f"{p['median'] * 1e3:.1f} ({p['min'] * 1e3:.1f}-{p['max'] * 1e3:.1f})",
            f"{dcd['median'] * 1e3:.2f} ({dcd['min'] * 1e3:.2f}-{dcd['max'] * 1e3:.2f})",
            f"{r['prefill_time_ratio_to_mha']:.2f} / {r['decode_time_ratio_to_mha']:.2f}",
            f"{r['prefill_multiplies_ratio_to_mha']:.2f} / {r['decode_multiplies_ratio_to_mha']:.2f}",
            f"{human_bytes(r['cache_bytes_measured'])} ({r['cache_over_formula']:.3f}x)",
            human_bytes(r["cache_bytes_formula"]),
            f"{r['cache_ratio_to_mha']:.3f} (g/h {r['g'] / h:.3f})",
            _("yes") if r["prefill_multiplies_tallied"] == r["prefill_multiplies_formula"]
            and r["decode_multiplies_tallied"] == r["decode_multiplies_formula"] else _("NO")))
    worst = max(abs(r["cache_ratio_to_mha"] - r["g"] / h) for r in rows)
    mqa = rows[0]
    return "\n".join([
        _("h={h} query heads, head dim {head_dim}, d_model {d_model}, {n} positions; median of {repeats} "
          "interleaved runs; Python {python}").format(h=h, head_dim=s["head_dim"], d_model=s["d_model"],
                                                      n=s["context"], repeats=s["repeats"], python=result["python"]),
        "", text_table(head, table, left=2), "",
        _("memory: g/h of MHA, measured (off by at most {worst}); time: prefill within {prefill}%, decode "
          "within {decode}% across g. At g={g} the cache is {cache} of MHA's, the multiplications "
          "{prefill_multiplies} (prefill) and {decode_multiplies} (decode), and the time {prefill_time} and "
          "{decode_time}: pure Python is bound by arithmetic and interpreter work, not by memory.").format(
            worst=f"{worst:.3f}", prefill=f"{spread_percent([r['prefill_s']['median'] for r in rows]):.0f}",
            decode=f"{spread_percent([r['decode_s_per_token']['median'] for r in rows]):.0f}", g=mqa["g"],
            cache=f"{mqa['cache_ratio_to_mha']:.3f}",
            prefill_multiplies=f"{mqa['prefill_multiplies_ratio_to_mha']:.2f}",
            decode_multiplies=f"{mqa['decode_multiplies_ratio_to_mha']:.2f}",
            prefill_time=f"{mqa['prefill_time_ratio_to_mha']:.2f}",
            decode_time=f"{mqa['decode_time_ratio_to_mha']:.2f}"),
        _("These are wall-clock times on a shared machine: read the ratios across g, not the absolute times. "
          "'{time}' and '{multiplies}' are prefill / decode. '{measured}' is what tracemalloc saw held by a "
          "KVCache made with room for {n} positions, with its ratio to 8 bytes x kv_cache_elements (the rest "
          "is the arrays' and lists' headers).").format(time=head[4], multiplies=head[5], measured=head[6],
                                                        n=s["context"])])


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gqa bench",
                                     description=_("Time and memory per g, measured on this machine."))
    add_int_options(parser, Settings(), LIMITS,
                    what=lambda name: _("quick mode {value}").format(value=getattr(QUICK, name)))
    parser.add_argument("--quick", action="store_true", help=_("a small run, in about a second"))
    parser.add_argument("--json", action="store_true", help=_("print the raw numbers as JSON"))
    parser.add_argument("--lang", choices=i18n.LANGUAGES, default=None,
                        help=_("the language of what the command prints: {languages}; default: the "
                               "environment's (LANGUAGE, LC_ALL, LC_MESSAGES, LANG), else en").format(
                                   languages=i18n.listed()))
    return parser


def bench_main(argv: Sequence[str]) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    s = int_options(parser, args, QUICK if args.quick else Settings(), LIMITS)
    try:
        with progress_line("bench") as progress:
            result = run(s, progress)
    except gqa.GQAError as err:
        parser.error(str(err))
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


def main(command: str, argv: Sequence[str]) -> int:
    """Entry point for `python -m gqa bench`."""
    with speaking(chosen_lang(argv, make_parser())):
        return bench_main(argv)
