"""gqa_tools.report.measuring: the small configuration, run for real.

measure() runs the lab on the report's small configuration, over its seeds:
the floats real caches hold, the multiplications tallied while a layer ran,
the output of every g against MHA's, the three conversions, how alike the
heads' keys are, and section 8's training (gqa_tools.uptraining's quick recipe).
Each measurement is a value or Missing(why).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Generator, List, NamedTuple, Optional, Sequence, Tuple

import gqa
from gqa_grader.language.i18n import _
from gqa_tools import uptraining as training
from gqa_tools.counts import project
from gqa_tools.seeds import rng_for, seed_for
from gqa_tools.report.lab import Lab, Missing, Unavailable, attempt
from gqa_tools.report.settings import Config


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
    conv: Dict[Tuple[int, str], list] = {(g, name): [] for g in gs for name in training.CONVERSIONS}
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
    stages = measuring(cfg, lab, progress, untrained, recipe, jobs, record)
    while True:
        try:
            next(stages)
        except StopIteration as done:
            return done.value


def measuring(cfg: Config, lab: Optional[Lab] = None,
              progress: Optional[Callable[[str], None]] = None,
              untrained: Optional[str] = None, recipe: Optional[Any] = None, jobs: int = 1,
              record: Optional[dict] = None) -> Generator[str, None, Measured]:
    """measure(), its stages said as it goes: yields what it measures next (in the language
    in use), and returns the Measured."""
    lab = lab or Lab(gqa, "gqa.py")
    if untrained is None:
        untrained = "" if lab.module is gqa else _("not run for this module")
    gs = lambda: lab.valid_g(cfg.heads)      # noqa: E731
    yield _("comparing the output at every g with MHA's")
    outputs = attempt(lambda: measure_outputs(lab, cfg))
    part = (lambda i: Missing(outputs.why)) if isinstance(outputs, Missing) else outputs.__getitem__
    yield _("counting the floats the KV caches hold")
    cache_counted = attempt(lambda: {g: counted_cache(lab, cfg, g) for g in gs()})
    yield _("tallying one layer's multiplications")
    tallied = attempt(lambda: {g: tallied_multiplies(lab, cfg, g) for g in gs()})
    yield _("comparing the heads' keys")
    head_cosine = attempt(lambda: head_cosines(lab, cfg))
    if untrained:
        trained = Missing(untrained)
    elif record is not None:
        trained = record
    else:
        yield _("training section 8: a minute or more")
        trained = train(cfg, lab, recipe, progress, jobs)
    return Measured(cache_counted=cache_counted, tallied=tallied, difference=part(0), conversion=part(1),
                    exact_mha=part(2), head_cosine=head_cosine, training=trained)


def train(cfg: Config, lab: Lab, recipe: Optional[Any] = None,
          progress: Optional[Callable[[str], None]] = None, jobs: int = 1) -> Any:
    """Section 8's training with lab's steps (report_recipe's), or Missing(why)."""
    return attempt(lambda: training.run(report_recipe(cfg, recipe), lab=lab if lab.module is not gqa else gqa,
                                        progress=progress, jobs=jobs))


def report_recipe(cfg: Config, recipe: Optional[Any] = None) -> Any:
    """The recipe section 8 trains: the quick one (or recipe), from the report's seed."""
    return (recipe or training.QUICK)._replace(seed=cfg.seed)
