"""gqa_tools.report.reading: section 9 of the project's report, how to read it.

What g changes (memory), what it barely changes (the work of a prefill),
why a changed output is not a measured loss of quality (and what section 8
measured of it, by section 8's verdicts), and that every count agrees with its closed form.
"""

from __future__ import annotations

from typing import Dict, List, Sequence

from gqa_tools import uptraining as training
from gqa_tools.formats import fmt, human_bytes
from gqa_tools.report.costs import BLOCK_MODELS, run_formula, traffic
from gqa_tools.report.lab import Lab, Missing, need
from gqa_tools.report.measuring import Measured
from gqa_tools.report.settings import Config
from gqa_tools.report.text import labels


# Ainslie et al. 2023 (GQA), section 3.1: after mean-pooling, the converted
# checkpoints are trained further for alpha = 0.05 of the original pre-training
# steps.  A citation, not a measurement: it is the one number the report quotes.
GQA_PAPER_UPTRAINING = 0.05


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
        f"{fmt(traffic(lab, cfg, h, cfg.batch).ratio)} elements per multiplication and "
        f"MQA {fmt(traffic(lab, cfg, 1, cfg.batch).ratio)}.",
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


def _and(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _training_sentence(m: Measured) -> str:
    """What section 8 decided of the recovery, in one sentence, when it ran."""
    if isinstance(m.training, Missing) or m.training is None:
        return ""
    result = m.training
    r, K = result["recipe"], len(result["seeds"])
    decided = [d for d in training.verdicts(result, training.TASKS) if d.claim.kind == "recovers"]
    said = []
    for steps in r["budgets"]:
        by_verdict: Dict[str, List[str]] = {}
        for d in decided:
            if d.claim.steps == steps:
                by_verdict.setdefault(d.verdict, []).append(
                    f"{d.claim.task} at g = {d.claim.g} ({d.stats.mean:+.3f})")
        said.append(f"after {steps} steps ({100 * steps / r['pretrain']:.3g} % of the pre-training) it "
                    + "; ".join(f"{'is not resolved' if word == 'not resolved' else word} for {_and(items)}"
                                for word, items in sorted(by_verdict.items())))
    return (f" Section 8 measures it on a small trained model (h = {r['heads']}, d_model {r['d_model']}) "
            f"over {K} seeds, against an MHA model trained on the same batches for as many steps: whether "
            f"the mean conversion *recovers*, its accuracy no more than 0.02 below that model's (by the "
            f"paired gap's exact sign-flip interval, Holm-corrected; in brackets, the mean gap): " + "; ".join(said) + ".")
