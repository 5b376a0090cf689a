"""gqa_tools.report.costs: sections 1 to 4 and 7, what g is and what it changes, counted.

1. What g is: which key/value head each query head reads, and its figure.
2. The KV cache: the closed form, beside the floats real caches held.
3. One attention layer's multiplications, beside a tally taken while it ran.
4. The whole block of two published models (BLOCK_MODELS), and its figure.
7. Decoding: the cache read for every new token, and its figure.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Tuple

from gqa_grader.language import i18n
from gqa_grader.language.i18n import _
from gqa_tools.counts import BLOCK_PARTS, block_bars, block_markdown, block_rows, multiplies_markdown
from gqa_tools.formats import bar_chart, fmt, human_bytes, markdown_table
from gqa_tools.report import figures as draw
from gqa_tools.report.lab import Hung, Lab, Unavailable, need, reason
from gqa_tools.report.measuring import Measured
from gqa_tools.report.settings import Config
from gqa_tools.report.text import Figures, Labels, code_block, figure_link, labels, yes_no


class PublishedModel(NamedTuple):
    """A published model's block, as its config.json gives it."""
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
BLOCK_MODELS = (PublishedModel("Llama-2-7B", 32, 32, 128, 4096, 11008, 3),
                PublishedModel("Llama-2-70B", 64, 8, 128, 8192, 28672, 3))


def _ranges(groups: List[List[int]], limit: int = 4) -> str:
    """Each group's query heads, a run "0–3" or one head "5"; a group of heads apart in
    braces, "{0, 4}" (a strided group_heads' shown as it is, never as "0–4")."""
    parts = [draw.runs(grp) for grp in groups]
    parts = [part if "," not in part else "{" + part + "}" for part in parts]
    return ", ".join(parts if len(parts) <= limit else parts[:2] + ["…"] + parts[-1:])


def section_what_g_is(cfg: Config, lab: Lab, m: Measured) -> Tuple[str, Figures]:
    h, ids = cfg.heads, labels(lab, cfg.heads)
    try:
        drawn, figures = grouping(lab)
    except Unavailable as why:
        drawn, figures = _("*Figure not drawn: {why}.*").format(why=why) + "\n", ()
    return _table_of_groups(cfg, lab, h, ids) + "\n" + drawn, figures


def _table_of_groups(cfg: Config, lab: Lab, h: int, ids: "Labels") -> str:
    try:
        made = {g: lab.group_heads(h, g) for g in ids.gs}
        groups = {g: _ranges(made[g]) for g in ids.gs}
        apart = [g for g in ids.gs if made[g] != [list(range(j * (h // g), (j + 1) * (h // g))) for j in range(g)]]
        note = [_("*At g = {gs}, your group_heads does not return the contiguous blocks of the rule above: the "
                  "table shows its groups as it returns them.*").format(gs=", ".join(map(str, apart))) + "\n"
                ] if apart else []
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


def _grouping_caption(h: int, gs: List[int], reads: Dict[int, List[int]]) -> str:
    """The grouping figure's text: what it draws, and that groups are neighbours only where
    the module's kv_head makes them so (a strided one's are drawn, and said, as they are)."""
    apart = [g for g in gs if not draw.neighbours(reads[g])]
    if not apart:
        return _("For h = {h} query heads at g = {gs}: each query head joined to the key/value head it "
                 "reads; groups of {sizes} neighbouring query heads share one").format(
                     h=h, gs=", ".join(map(str, gs)), sizes=", ".join(str(h // g) for g in gs))
    return _("For h = {h} query heads at g = {gs}: each query head joined to the key/value head it reads; "
             "at g = {apart}, the query heads that share a key/value head are not neighbours").format(
                 h=h, gs=", ".join(map(str, gs)), apart=", ".join(map(str, apart)))


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
        figure_link("grouping.svg", _grouping_caption(h, gs, reads)),
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
        code_block(bar_chart([ids.label[r.kv_heads] for r in cache], [r.elements for r in cache],
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
                         yes_no(counted[g] == formula[g])) for g in ids.gs]),
        ""])


# Each part's glyph, the same in section 3's bars as in section 4's (BLOCK_PARTS).
GLYPH = {key: glyph for key, _name, glyph in BLOCK_PARTS}


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
        bar = GLYPH["body"] * body + GLYPH["q_o_proj"] * qo + GLYPH["k_v_proj"] * kv
        lines.append(f"{i18n.ljust(ids.label[r.kv_heads], pad)}  {bar.ljust(width)}  "
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
        _("Each bar is one g's total, split into the attention body ({body}), the q and o "
          "projections ({q_o}) and the k and v projections ({k_v}):").format(
              body=GLYPH["body"], q_o=GLYPH["q_o_proj"], k_v=GLYPH["k_v_proj"]) + "\n",
        code_block(_split_bars(cfg, lab, ids)), "",
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
                         yes_no(tallied[g] == formula[g])) for g in ids.gs]),
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
                  block_markdown(rows, n), "", code_block(block_bars(names, rows)), ""]
    llama = BLOCK_MODELS[0]
    block = {g: lab.block_multiplies(n, llama.heads, g, llama.head_dim, llama.d_model, llama.d_ff,
                                     mlp_matrices=llama.mlp_matrices) for g in (llama.heads, 8, 1)}
    mha = block[llama.heads]
    try:
        drawn, figures = what_g_changes(cfg, lab)
    except (Exception, Hung) as err:                # a student's module can fail in any way
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
        cache_note=_("K and V of every layer, {n} positions").format(n=f"{n:,}"),
        work_note=_("{model}, a {n}-position prefill").format(model=llama.name, n=f"{n:,}"))
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


def traffic(lab: Lab, cfg: Config, g: int, batch: int = 1) -> Any:
    """The lab's decode_traffic for the report's configuration, g and batch."""
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
                       [(ids.name[g], g, fmt(traffic(lab, cfg, g).ratio),
                         fmt(traffic(lab, cfg, g, cfg.batch).ratio)) for g in ids.gs]),
        ""]), (("decoding.svg", svg),)
