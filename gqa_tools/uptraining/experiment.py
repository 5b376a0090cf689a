"""gqa_tools.uptraining.experiment: the paired runs over seeds, in processes; run().

For every task and seed (`seeds` seeds from `seed` on), every accuracy
measured on `held_out` sequences of that seed that training never sees:

1. Pre-train an MHA model (g = h) for `pretrain` steps.
2. The control: train a copy of it on, max(budgets) more steps, measured
   after each budget.
3. For every g < h and every conversion (the mean of each group, its first
   head, new random heads), convert the K/V projections (everything else is
   copied), measure, then train on.  `budgets` are checkpoints of one run of
   max(budgets) steps, and the control and every conversion of a seed train
   on the same batches (paired runs), each with an Adam of its own.
4. The controls of the uptraining (when the recipe's scratch and carried
   are true; else their lists are empty): (a) at every g < h, the smaller-
   cache model trained from scratch on the pre-training's batches, then the
   uptraining's, measured after pretrain + 0 and pretrain + each budget
   steps: does converting and uptraining beat training it directly?  (b)
   the control and the mean conversion at every g trained on the same
   batches up to the first budget with pre-training's Adam carried over (its moments, folded by
   the mean as the weights are, and its step count) instead of a fresh
   one: how much of the first budget's dip is the optimizer's restart.
5. Same cache, three ways, the MQA paper's comparison (when the recipe's
   same_cache is true; else "same_cache" is empty and "same_cache_note" says
   so): at MQA's cache per token
   (2 x head_dim values per layer), train from scratch for `pretrain` steps, on
   the same batches, (a) h query heads sharing one K/V head, (b) one head,
   (c) n heads of dim head_dim / n, n the largest divisor of head_dim up to
   h that leaves a dim of at least 2 (no such n: the row is left out, and
   "same_cache_note" says why).  Every K/V
   head starts with the same variance; the models with fewer attention
   parameters get a wider MLP, so the parameter counts match to within one
   MLP unit (as the MQA paper widened its feed-forward layers).

Each (seed, task) is measured on its own (measure_seed), from its own seeded
draws: run(recipe, jobs=N) measures them in N processes and gives the same
result for every N.  Every lab function the experiment uses (Weights,
init_weights, fold_weights, group_heads, valid_g, grouped_attention,
grouped_attention_backward, kv_cache_elements) is called through `lab`, gqa
by default, so the experiment can run on a student's module.

run(recipe, lab=gqa) returns plain JSON-able data:

    {"recipe": {...Recipe fields...},
     "seeds": [0, 1, ..., 19],
     "seconds": float,                               # wall time, never printed in report.md
     "tasks": {"offsets": T, "recall": T}}

    T = {"task": str, "description": str,
         "held_out": sequences, "answers": held-out answers per seed,
         "pretrained": {"steps": int, "correct": [per seed], "accuracy": [per seed], "loss": [per seed]},
         "control": [{"steps": int, "correct": [per seed], ...}, ...],       # one per budget
         "uptrain": [{"g": int, "conversion": "mean" | "first" | "random", "steps": int,
                      "correct": [per seed], "accuracy": [per seed], "loss": [per seed]}, ...],
         "scratch": [{"g": int, "steps": pretrain + budget, "budget": budget,
                      "correct": [per seed], ...}, ...],   # every g < h, budget in (0,) + budgets
         "carried": [{"model": "control" | "mean", "g": int, "steps": int,
                      "correct": [per seed], ...}, ...],   # the control at g = h; the first budget
         "same_cache": [{"model": label, "heads": int, "kv_heads": int, "head_dim": int,
                         "d_ff": int, "cache_per_token": int, "parameters": int, "steps": int,
                         "correct": [per seed], "accuracy": [per seed], "loss": [per seed]}, ...],
         "same_cache_note": str}                    # why a row is missing, or ""

Every list "per seed" is in the order of "seeds"; "uptrain" holds every
g < h, conversion and steps in (0,) + budgets; accuracy is correct / answers.
"""

from __future__ import annotations

import signal
import time
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import gqa
from gqa_grader.language.i18n import N_
from gqa_tools.seeds import seed_for
from gqa_tools.uptraining.model import Adam, Model, carried, copy_model, evaluate, init_model, parameters, train
from gqa_tools.uptraining.recipe import CONVERSIONS, TASKS, Recipe
from gqa_tools.uptraining.tasks import batches, check, describe, held_out

# What a result's same_cache_note says when its recipe trains no equal-cache models.
NOT_TRAINED = N_("the equal-cache models are not trained in this recipe; python -m gqa uptrain "
                 "(the default recipe) trains them")


# ---------------------------------------------------------------------------
# Converting a trained MHA model, and the equal-cache models of the MQA paper.
# ---------------------------------------------------------------------------

def convert(model: Model, heads: int, g: int, how: str, r: Recipe, task: str, seed: int,
            lab: Any = gqa) -> Model:
    """The model with g K/V heads: by the mean of each group, its first head, or new heads."""
    new = copy_model(model)
    w = lab.Weights(*new.weights)
    if how == "mean":
        w = lab.fold_weights(w, g)
    elif how == "first":
        groups = lab.group_heads(heads, g)
        w = w._replace(w_k=[w.w_k[grp[0]] for grp in groups], w_v=[w.w_v[grp[0]] for grp in groups])
    else:
        fresh = lab.init_weights(g, r.d_model, r.head_dim, seed=seed_for(f"{task} random heads g={g}", seed))
        w = w._replace(w_k=fresh.w_k, w_v=fresh.w_v)
    return new._replace(weights=[w.w_q, w.w_k, w.w_v, w.w_o])


class SameCache(NamedTuple):
    model: str
    heads: int
    kv_heads: int
    head_dim: int


def same_cache_models(r: Recipe) -> Tuple[List[SameCache], str]:
    """The equal-cache rows at MQA's cache, and why a row is left out ("" when none is)."""
    h, d = r.heads, r.head_dim
    rows = [SameCache(f"{h} heads sharing 1 K/V head (MQA)", h, 1, d),
            SameCache("1 head (MHA, h = 1)", 1, 1, d)]
    for n in range(min(h, d // 2), 1, -1):               # narrower heads, none below dim 2
        if d % n == 0:
            rows.append(SameCache(f"{n} heads of dim {d // n} (MHA)", n, n, d // n))
            return rows, ""
    return rows, (f"no narrower heads: head dim {d} cannot be split into 2 or more heads of "
                  f"a whole dim of at least 2")


def _matched(r: Recipe, task: str, rows: Sequence[SameCache], lab: Any) -> List[dict]:
    """Each row's cache per token, MLP width and parameter count, the widths matching parameters."""
    sizes = []
    for row in rows:
        probe = init_model(r, task, row.heads, row.head_dim, row.kv_heads, 1, "probe", 0, lab)
        sizes.append(parameters(probe) - 2 * r.d_model)          # without its 1-unit MLP
    top, unit = sizes[0] + 2 * r.d_model * r.d_ff, 2 * r.d_model    # MQA with the recipe's MLP
    out = []
    for row, size in zip(rows, sizes):
        d_ff = max(1, (top - size + unit // 2) // unit)           # the nearest whole width
        out.append(dict(model=row.model, heads=row.heads, kv_heads=row.kv_heads,
                        head_dim=row.head_dim, d_ff=d_ff,
                        cache_per_token=lab.kv_cache_elements(1, row.kv_heads, 1, row.head_dim),
                        parameters=size + unit * d_ff))
    caches = {x["cache_per_token"] for x in out}
    if len(caches) != 1:
        raise RuntimeError(f"same_cache: the rows' caches differ: {sorted(caches)}")
    return out


# ---------------------------------------------------------------------------
# One task and seed, measured on its own; then every one, in processes.
# ---------------------------------------------------------------------------

def _blank(r: Recipe, task: str, lab: Any) -> dict:
    rows, note = same_cache_models(r)
    h = r.heads

    def entry(**fields: Any) -> dict:
        return dict(fields, correct=[], accuracy=[], loss=[])
    ups = [entry(g=g, conversion=how, steps=s)
           for g in lab.valid_g(h) if g < h for how in CONVERSIONS for s in (0,) + tuple(r.budgets)]
    same = [entry(**x, steps=r.pretrain) for x in _matched(r, task, rows, lab)] if r.same_cache else []
    note = note if r.same_cache else NOT_TRAINED
    gs = [g for g in lab.valid_g(h) if g < h]
    scratch = [entry(g=g, steps=r.pretrain + s, budget=s)
               for g in gs for s in (0,) + tuple(r.budgets)] if r.scratch else []
    kept = [entry(model=how, g=g, steps=r.budgets[0])
            for how, g in [("control", h)] + [("mean", g) for g in gs]] if r.carried else []
    return dict(task=task, description=describe(r, task), held_out=r.held_out, answers=None,
                pretrained=entry(steps=r.pretrain), control=[entry(steps=s) for s in r.budgets],
                uptrain=ups, scratch=scratch, carried=kept, same_cache=same, same_cache_note=note)


def measure_seed(r: Recipe, task: str, seed: int, lab: Any = gqa,
                 note: Callable[[str], None] = lambda text: None) -> dict:
    """One task and seed of the experiment: every (correct, mean loss) it measures.

    {"answers": held-out answers, "pretrained": value, "control": {steps: value},
     "uptrain": {(g, conversion, steps): value}, "same_cache": [value per row]}
    """
    h, test = r.heads, held_out(r, task, seed)
    exclude = {ex[0] for ex in test}
    got: dict = {"answers": sum(len(ex[1]) for ex in test), "control": {}, "uptrain": {}}

    def measure(model: Model, g: int) -> Tuple[int, float]:
        return evaluate(model, g, test, lab)

    note(f"seed {seed}, {task}: pre-training")
    mha = init_model(r, task, h, r.head_dim, h, r.d_ff, "mha", seed, lab)
    pre_batches = batches(r, task, seed, "pretrain", r.pretrain, exclude)
    adam = train(mha, h, pre_batches, lab, r.lr)
    got["pretrained"] = measure(mha, h)
    # One stream of uptraining batches: the control and every conversion train on it.
    shared = batches(r, task, seed, "uptrain", max(r.budgets), exclude)
    note(f"seed {seed}, {task}: the control, MHA trained on")
    control = copy_model(mha)
    train(control, h, shared, lab, r.lr, checkpoints=r.budgets,
          measure=lambda k: got["control"].__setitem__(k, measure(control, h)))
    for g in [g for g in lab.valid_g(h) if g < h]:
        note(f"seed {seed}, {task}: uptraining g = {g}")
        for how in CONVERSIONS:
            model = convert(mha, h, g, how, r, task, seed, lab)
            got["uptrain"][(g, how, 0)] = measure(model, g)
            train(model, g, shared, lab, r.lr, checkpoints=r.budgets,
                  measure=lambda k: got["uptrain"].__setitem__((g, how, k), measure(model, g)))
    got["scratch"] = _scratch(r, task, seed, lab, pre_batches + shared, measure) if r.scratch else {}
    got["carried"] = _carried(r, task, seed, lab, mha, adam, shared, measure) if r.carried else {}
    note(f"seed {seed}, {task}: same cache, from scratch" if r.same_cache else f"seed {seed}, {task}: done")
    got["same_cache"] = _from_scratch(r, task, seed, lab, exclude, measure) if r.same_cache else []
    return got


def _scratch(r: Recipe, task: str, seed: int, lab: Any, stream: Sequence,
             measure: Callable[[Model, int], Tuple[int, float]]) -> dict:
    """Each g < h trained from scratch on stream (the pre-training's batches, then the
    uptraining's): {(g, budget): its measurement after pretrain + budget steps}."""
    out: dict = {}
    for g in [g for g in lab.valid_g(r.heads) if g < r.heads]:
        model = init_model(r, task, r.heads, r.head_dim, g, r.d_ff, f"scratch g={g}", seed, lab)
        train(model, g, stream, lab, r.lr, checkpoints=[r.pretrain + s for s in (0,) + tuple(r.budgets)],
              measure=lambda k: out.__setitem__((g, k - r.pretrain), measure(model, g)))
    return out


def _carried(r: Recipe, task: str, seed: int, lab: Any, mha: Model, adam: Adam, stream: Sequence,
             measure: Callable[[Model, int], Tuple[int, float]]) -> dict:
    """The control and the mean conversion at every g, trained on stream up to the first budget
    with pre-training's Adam carried over (its moments folded as the weights are):
    {(model, g, steps): measurement}."""
    h, out = r.heads, {}
    m, v = adam.state(mha)
    for how, g in [("control", h)] + [("mean", g) for g in lab.valid_g(h) if g < h]:
        model, mg, vg = (convert(x, h, g, "mean", r, task, seed, lab) for x in (mha, m, v))
        train(model, g, stream[:r.budgets[0]], lab, r.lr, optimizer=carried(model, r.lr, mg, vg, adam.t),
              checkpoints=r.budgets[:1],
              measure=lambda k: out.__setitem__((how, g, k), measure(model, g)))
    return out


def _from_scratch(r: Recipe, task: str, seed: int, lab: Any, exclude: set,
                  measure: Callable[[Model, int], Tuple[int, float]]) -> list:
    """The equal-cache models, trained from scratch on one stream: each one's measurement."""
    scratch = batches(r, task, seed, "from scratch", r.pretrain, exclude)
    out = []
    for row in _matched(r, task, same_cache_models(r)[0], lab):
        model = init_model(r, task, row["heads"], row["head_dim"], row["kv_heads"], row["d_ff"],
                           f"scratch {row['model']}", seed, lab)
        if parameters(model) != row["parameters"]:
            raise RuntimeError(f"same_cache: {row['model']} has {parameters(model)} "
                               f"parameters, not {row['parameters']}")
        train(model, row["kv_heads"], scratch, lab, r.lr)
        out.append(measure(model, row["kv_heads"]))
    return out


def _record(t: dict, got: dict) -> None:
    """Append one seed's measurements (measure_seed) to a task's entries."""
    n = t["answers"] = got["answers"]
    pairs = [(t["pretrained"], got["pretrained"])]
    pairs += [(x, got["control"][x["steps"]]) for x in t["control"]]
    pairs += [(x, got["uptrain"][(x["g"], x["conversion"], x["steps"])]) for x in t["uptrain"]]
    pairs += [(x, got["scratch"][(x["g"], x["budget"])]) for x in t["scratch"]]
    pairs += [(x, got["carried"][(x["model"], x["g"], x["steps"])]) for x in t["carried"]]
    pairs += list(zip(t["same_cache"], got["same_cache"]))
    for entry, (correct, loss) in pairs:
        entry["correct"].append(correct)
        entry["accuracy"].append(correct / n)
        entry["loss"].append(loss)


def _in_a_process(job: tuple) -> tuple:
    """A worker's job: measure_seed(recipe, task, seed) with the project's gqa.py."""
    r, task, seed = job
    return (seed, task), measure_seed(r, task, seed)


def _quiet() -> None:
    """A worker ignores Ctrl-C: the command that started it ends it, and says so once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _measure_all(r: Recipe, units: Sequence[tuple], lab: Any, note: Callable[[str], None],
                 jobs: int) -> dict:
    """{(seed, task): measure_seed(...)}, run in jobs processes when lab is the project's gqa.py.

    Each (seed, task) is measured alone from its own seeded draws, so the
    result is the same whatever the number of processes and the order they
    finish in.  Another module (a student's, in the grader's worker) runs
    in this process only.
    """
    if jobs <= 1 or lab is not gqa or len(units) < 2:
        return {(seed, task): measure_seed(r, task, seed, lab, note) for seed, task in units}
    import multiprocessing
    jobs = min(jobs, len(units))
    note(f"{len(units)} runs (a seed and a task each) in {jobs} processes")
    done = {}
    # fork where the system has it: the workers start at once, with this process's modules,
    # and no script that called run() is imported again (spawn, elsewhere, does that).
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with multiprocessing.get_context(method).Pool(jobs, initializer=_quiet) as pool:
        for (seed, task), got in pool.imap_unordered(_in_a_process, [(r, task, seed) for seed, task in units]):
            done[(seed, task)] = got
            note(f"seed {seed}, {task}: measured ({len(done)} of {len(units)} runs)")
    return done


def run(r: Recipe, lab: Any = gqa, progress: Optional[Callable[[str], None]] = None,
        jobs: int = 1) -> Dict[str, Any]:
    """The whole experiment, every task and seed, as plain data (see the module docstring).

    jobs: how many processes measure the seeds (the project's gqa.py only;
    the result is the same for every jobs).
    """
    check(r)
    start = time.perf_counter()
    seeds = list(range(r.seed, r.seed + r.seeds))
    out = {task: _blank(r, task, lab) for task in TASKS}
    units = [(seed, task) for seed in seeds for task in TASKS]
    measured = _measure_all(r, units, lab, progress or (lambda text: None), jobs)
    for seed, task in units:                             # in the order of the seeds
        _record(out[task], measured[(seed, task)])
    recipe = r._asdict()
    recipe["budgets"] = list(r.budgets)
    return {"recipe": recipe, "seeds": seeds, "seconds": time.perf_counter() - start, "tasks": out}


def child_run(module: Any, values: Sequence[Any]) -> Iterator[Dict[str, Any]]:
    """In a worker (gqa_grader.run_in_child): run(Recipe(*values)) with module's steps; its result."""
    fields = dict(zip(Recipe._fields, values))
    fields["budgets"] = tuple(fields["budgets"])
    yield run(Recipe(**fields), lab=module)
