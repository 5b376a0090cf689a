"""The uptraining lab: its model's gradients against finite differences, a batch that
is its sequences side by side, paired runs (one stream for the control and every
conversion, checkpoints of one run), a held-out set training never sees, an equal
cache that is equal, the verdicts of the committed report against its own intervals,
and runs that are the same to the byte when repeated, in one process or two.  The
statistics (t quantiles, Wilson intervals) against values derived another way:
test_statistics.py."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import random
import re
import statistics
import unittest
from itertools import chain
from unittest import mock

import gqa
from gqa_grader.steps.manifest import NUMBER
from gqa_tools import cli as gqa_cli
from gqa_tools import statistics as gqa_statistics
from gqa_tools import uptraining as gqa_train
from gqa_tools.uptraining import experiment, tasks
from gqa_tools.uptraining import model as gqa_model
from gqa_tools.seeds import rng_for
from tests.helpers import ROOT, early, heavy, start_early

TINY = gqa_train.Recipe(heads=2, head_dim=2, d_model=4, d_ff=2, vocab=3, length=4, offsets=2,
                        keys=3, values=3, pairs=2, queries=1, batch=2, pretrain=6, budgets=(2, 4),
                        held_out=6, seed=5, seeds=2)
_RUNS = {}


def run_of(recipe):
    """gqa_train.run(recipe) with the lab, run once for the tests that only read it."""
    if recipe not in _RUNS:
        _RUNS[recipe] = gqa_train.run(recipe)
    return _RUNS[recipe]


class Gradients(unittest.TestCase):

    def test_the_whole_model_against_central_differences(self):
        for task in gqa_train.TASKS:
            for g in (1, 2):
                model = gqa_model.init_model(TINY, task, 2, 2, g, 3, "test", 0)
                seqs = [tasks.draw(TINY, task, rng_for("test data", g)) for _ in range(3)]
                grads = gqa_model.step(model, seqs, g)[3]

                def total(m):
                    return gqa_model.step(m, seqs, g, train=False)[0]
                rng = rng_for("test probes", g)
                for part, path in (("emb", (1, 2)), ("pos", (2, 0)), ("out", (0, 2, 1)),
                                   ("mlp", (0, 1, 2)), ("mlp", (1, 2, 3)),
                                   ("weights", (0, 1, 2, 1)), ("weights", (1, 0, 3, 0)),
                                   ("weights", (2, 0, 1, 1)), ("weights", (3, 1, 0, 3))):
                    for _ in range(2):
                        eps = 1e-6
                        plus, minus = copy.deepcopy(model), copy.deepcopy(model)
                        for m, sign in ((plus, 1), (minus, -1)):
                            target = getattr(m, part)
                            for i in path[:-1]:
                                target = target[i]
                            target[path[-1]] += sign * eps
                        numeric = (total(plus) - total(minus)) / (2 * eps)
                        analytic = getattr(grads, part)
                        for i in path:
                            analytic = analytic[i]
                        self.assertAlmostEqual(analytic, numeric, delta=1e-6 * max(1.0, abs(numeric)),
                                               msg=(task, g, part, path))
                        path = path[:-1] + ((path[-1] + rng.randrange(1, 2)) % 2,)


class Batches(unittest.TestCase):
    """A batch runs its sequences as heads of one attention call: none may see another's keys."""

    def test_a_batch_is_the_sum_of_its_sequences_alone(self):
        r = TINY._replace(heads=4, head_dim=2, d_model=6)
        for task in gqa_train.TASKS:
            for g in (1, 2, 4):
                model = gqa_model.init_model(r, task, 4, 2, g, 3, "batch test", g)
                seqs = [tasks.draw(r, task, rng_for("batch data", g)) for _ in range(4)]
                loss, correct, count, grads = gqa_model.step(model, seqs, g)
                alone = [gqa_model.step(model, [s], g) for s in seqs]
                self.assertAlmostEqual(loss, math.fsum(a[0] for a in alone), places=9)
                self.assertEqual((correct, count), (sum(a[1] for a in alone), sum(a[2] for a in alone)))
                summed = [math.fsum(column) for column in zip(*(
                    [v for row in gqa_model._leaves(a[3]) for v in row] for a in alone))]
                flat = [v for row in gqa_model._leaves(grads) for v in row]
                for got, want in zip(flat, summed):
                    self.assertAlmostEqual(got, want, places=9)

    def test_evaluating_in_parts_counts_as_evaluating_at_once(self):
        model = gqa_model.init_model(TINY, "offsets", 2, 2, 1, 2, "parts", 0)
        test = tasks.held_out(TINY._replace(held_out=30), "offsets", 0)
        whole = gqa_model.evaluate(model, 1, test)
        with mock.patch.object(gqa_model, "EVALUATED_TOGETHER", 7):
            parts = gqa_model.evaluate(model, 1, test)
        self.assertEqual(parts[0], whole[0])
        self.assertAlmostEqual(parts[1], whole[1], places=12)


class Optimizer(unittest.TestCase):

    def test_adam_with_a_constant_gradient_moves_lr_a_step(self):
        # Bias-corrected Adam with the same gradient every step: m_hat = g and
        # v_hat = g * g, so each step moves a weight by lr * g / (|g| + eps).
        rows = ([[1.0, -2.0, 0.5]],)
        grads = ([[0.5, -0.25, 0.0]],)
        adam = gqa_model.Adam(rows, lr=0.1)
        for _ in range(3):
            adam.update(rows, grads, scale=2.0)                     # the gradient is 2 g
        for p, p0, g in zip(rows[0][0], (1.0, -2.0, 0.5), grads[0][0]):
            g = 2.0 * g
            self.assertAlmostEqual(p, p0 - 3 * 0.1 * g / (abs(g) + 1e-8), places=12)


class Tasks(unittest.TestCase):

    def test_recall_answers_are_the_value_of_the_asked_key(self):
        r = gqa_train.QUICK
        rng = rng_for("test recall", 0)
        for _ in range(50):
            inputs, answers = tasks.draw(r, "recall", rng)
            keys = [syms[0] for syms in inputs[:r.pairs]]
            self.assertEqual(len(set(keys)), r.pairs)                   # distinct keys
            for pos, head, target in answers:
                asked = inputs[pos][0]
                self.assertEqual(inputs[pos][1], r.keys + r.values)      # the blank value
                value = next(syms[1] for syms in inputs[:r.pairs] if syms[0] == asked)
                self.assertEqual((head, target), (0, value - r.keys))

    def test_offsets_answers_look_back(self):
        inputs, answers = tasks.draw(TINY, "offsets", rng_for("test offsets", 0))
        tokens = [syms[0] for syms in inputs]
        expected = [(i, o, tokens[i - o - 1]) for i in range(TINY.length) for o in range(TINY.offsets)
                    if i - o - 1 >= 0]
        self.assertEqual(sorted(answers), sorted(expected))

    def test_held_out_is_distinct_and_never_trained_on(self):
        # A task with 81 sequences and 30 held out: training draws hit them often.
        r = TINY._replace(held_out=30)
        test = tasks.held_out(r, "offsets", 0)
        inputs = [ex[0] for ex in test]
        self.assertEqual(len(set(inputs)), 30)
        trained = [ex[0] for b in tasks.batches(r, "offsets", 0, "pretrain", 100, set(inputs)) for ex in b]
        self.assertEqual(len(trained), 200)
        self.assertFalse(set(trained) & set(inputs))
        unfiltered = [ex[0] for b in tasks.batches(r, "offsets", 0, "pretrain", 100, set()) for ex in b]
        self.assertTrue(set(unfiltered) & set(inputs))                 # the filter is what keeps them apart

    def test_the_held_out_precision_the_docs_state(self):
        # docs/uptraining.md states, for each recipe, the 95 % half-width of one seed's
        # accuracy p over N held-out sequences at p = 0.5 and p = 0.95: 1.96 sqrt(p(1 - p)/N)
        # (a sequence's share of right answers lies in [0, 1], so its variance is at most p(1 - p)).
        with open(os.path.join(ROOT, "docs", "uptraining.md"), encoding="utf-8") as f:
            page = f.read()
        for recipe in (gqa_train.Recipe(), gqa_train.QUICK):
            n = recipe.held_out
            half = [statistics.NormalDist().inv_cdf(0.975) * math.sqrt(p * (1 - p) / n) for p in (0.5, 0.95)]
            self.assertIn(f"{n} held-out sequences: ±{half[0]:.3f} at p = 0.5, ±{half[1]:.3f} at p = 0.95", page)

    def test_a_recipe_too_small_for_its_held_out_set_is_refused(self):
        with self.assertRaisesRegex(gqa.GQAError, "81 different sequences"):
            gqa_train.run(TINY._replace(held_out=41))


class SameCache(unittest.TestCase):

    def test_every_row_has_mqas_cache_and_no_head_below_dim_2(self):
        for h, d, d_model in ((4, 4, 16), (4, 6, 12), (3, 4, 8), (8, 12, 16), (4, 3, 12), (2, 2, 4)):
            r = TINY._replace(heads=h, head_dim=d, d_model=d_model, d_ff=3)
            rows, note = experiment.same_cache_models(r)
            made = experiment._matched(r, "recall", rows, gqa)
            for x in made:
                self.assertEqual(x["cache_per_token"], 2 * 1 * d)      # MQA's: K and V, one head of dim d
                self.assertEqual(x["cache_per_token"], 2 * x["kv_heads"] * x["head_dim"])
                self.assertGreaterEqual(x["head_dim"], 2)
            narrow = [x for x in made if x["heads"] > 1 and x["kv_heads"] > 1]
            if d % 2 or d < 4:                      # d = 3, 2: no split into heads of dim 2 or more
                self.assertEqual(narrow, [])
                self.assertIn("no narrower heads", note)
            else:
                self.assertEqual(len(narrow), 1, (h, d))

    def test_parameters_match_within_one_mlp_unit(self):
        r = TINY._replace(heads=4, head_dim=6, d_model=12, d_ff=3)
        sh = tasks.shape(r, "recall")
        made = experiment._matched(r, "recall", experiment.same_cache_models(r)[0], gqa)
        counts = []
        for x in made:     # counted by hand: embeddings, attention, MLP, output head
            hq, kv, d = x["heads"], x["kv_heads"], x["head_dim"]
            by_hand = ((sh.symbols + sh.length) * 12 + 2 * hq * 12 * d + 2 * kv * 12 * d
                       + 2 * 12 * x["d_ff"] + sh.heads * 12 * sh.classes)
            self.assertEqual(x["parameters"], by_hand, x)
            model = gqa_model.init_model(r, "recall", hq, d, kv, x["d_ff"], "count", 0)
            self.assertEqual(len(json.dumps(model).split(",")), by_hand)   # every float, counted
            counts.append(by_hand)
        self.assertEqual(made[0]["d_ff"], 3)                          # MQA keeps the recipe's MLP
        self.assertTrue(all(abs(c - counts[0]) <= 12 for c in counts), counts)   # half a unit: d_model
        self.assertGreater(made[1]["d_ff"], 3)                        # fewer attention weights, wider MLP

    def test_kv_heads_start_with_the_same_variance(self):
        r = TINY._replace(d_model=64)
        for heads, kv in ((4, 1), (1, 1), (4, 4)):
            model = gqa_model.init_model(r, "offsets", heads, 8, kv, 2, "variance", 0)
            values = [v for head in model.weights[1] + model.weights[2] for row in head for v in row]
            self.assertEqual(len(model.weights[1]), kv)
            var = statistics.pvariance(values)
            self.assertAlmostEqual(var * 64, 1.0, delta=0.25, msg=(heads, kv))   # 1 / d_model, not 1 / (4 d_model)


@heavy
class Runs(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.result = run_of(TINY)

    def test_every_task_conversion_budget_and_seed_is_measured(self):
        self.assertEqual(self.result["seeds"], [5, 6])
        for task in gqa_train.TASKS:
            t = self.result["tasks"][task]
            ups = [(x["g"], x["conversion"], x["steps"]) for x in t["uptrain"]]
            self.assertEqual(ups, [(1, how, s) for how in gqa_train.CONVERSIONS for s in (0, 2, 4)])
            self.assertEqual([x["steps"] for x in t["control"]], [2, 4])
            for x in t["uptrain"] + t["same_cache"] + t["control"] + [t["pretrained"]]:
                self.assertEqual(len(x["accuracy"]), 2, x)
                self.assertEqual(x["accuracy"], [c / t["answers"] for c in x["correct"]])
            self.assertEqual(t["answers"], 6 * (5 if task == "offsets" else 1))

    def test_budgets_are_checkpoints_of_one_run(self):
        for budgets in ((4,), (2,)):
            alone = run_of(TINY._replace(budgets=budgets, seeds=1))
            for task in gqa_train.TASKS:
                mine = {(x["g"], x["conversion"], x["steps"]): (x["correct"], x["loss"])
                        for x in alone["tasks"][task]["uptrain"]}
                both = {(x["g"], x["conversion"], x["steps"]): (x["correct"][:1], x["loss"][:1])
                        for x in self.result["tasks"][task]["uptrain"]}
                for key, value in mine.items():
                    self.assertEqual(value, both[key], (task, budgets, key))

    def test_the_control_and_every_conversion_see_the_same_batches(self):
        seen = []
        real = gqa_model.train

        def spy(model, g, batches_, *args, **kwargs):
            seen.append((g, len(model.weights[0]), json.dumps(batches_)))
            return real(model, g, batches_, *args, **kwargs)
        with mock.patch.object(experiment, "train", spy):
            gqa_train.run(TINY._replace(seeds=1, heads=4, head_dim=4, d_model=4))
        per_task = len(seen) // 2
        for calls in (seen[:per_task], seen[per_task:]):
            pretrain, control, conversions, scratch = calls[0], calls[1], calls[2:8], calls[8:]
            self.assertEqual((pretrain[:2], control[:2]), ((4, 4), (4, 4)))      # MHA, then MHA again
            self.assertEqual([g for g, _, _ in conversions], [1, 1, 1, 2, 2, 2])
            self.assertEqual(len({b for _, _, b in [control] + conversions}), 1)  # one stream for all
            self.assertEqual(len(json.loads(control[2])), 4)                      # max(budgets) batches
            self.assertEqual(len(scratch), 3)
            self.assertEqual(len({b for _, _, b in scratch}), 1)
            self.assertNotEqual(scratch[0][2], control[2])
            self.assertNotEqual(pretrain[2], control[2])

    def test_the_control_is_the_pretrained_model_trained_on(self):
        # Put together again from the pieces: pre-train, measure, copy, train on the
        # uptraining stream, measure at each budget.
        r = TINY._replace(seeds=1)
        got = gqa_train.run(r)["tasks"]
        for task in gqa_train.TASKS:
            test = tasks.held_out(r, task, r.seed)
            exclude = {ex[0] for ex in test}
            mha = gqa_model.init_model(r, task, 2, r.head_dim, 2, r.d_ff, "mha", r.seed)
            gqa_model.train(mha, 2, tasks.batches(r, task, r.seed, "pretrain", r.pretrain, exclude), gqa, r.lr)
            self.assertEqual(got[task]["pretrained"]["correct"], [gqa_model.evaluate(mha, 2, test)[0]])
            stream = tasks.batches(r, task, r.seed, "uptrain", max(r.budgets), exclude)
            for x in got[task]["control"]:
                control = gqa_model.copy_model(mha)
                gqa_model.train(control, 2, stream[:x["steps"]], gqa, r.lr)
                self.assertEqual(x["correct"], [gqa_model.evaluate(control, 2, test)[0]], (task, x["steps"]))

    def test_each_g_from_scratch_trains_on_the_pretraining_then_the_uptraining_batches(self):
        # Put together again: a g-head model drawn anew, trained on the pre-training's
        # batches and then the uptraining's first `budget`, one Adam all through.
        r = TINY._replace(seeds=1, heads=4, head_dim=2, scratch=True)
        got = run_of(r)["tasks"]
        for task in gqa_train.TASKS:
            test = tasks.held_out(r, task, r.seed)
            exclude = {ex[0] for ex in test}
            stream = (tasks.batches(r, task, r.seed, "pretrain", r.pretrain, exclude)
                      + tasks.batches(r, task, r.seed, "uptrain", max(r.budgets), exclude))
            self.assertEqual([(x["g"], x["budget"], x["steps"]) for x in got[task]["scratch"]],
                             [(g, s, r.pretrain + s) for g in (1, 2) for s in (0, 2, 4)])
            for x in got[task]["scratch"]:
                model = gqa_model.init_model(r, task, 4, r.head_dim, x["g"], r.d_ff, f"scratch g={x['g']}", r.seed)
                self.assertEqual(len(model.weights[1]), x["g"])                       # g K/V heads from the start
                gqa_model.train(model, x["g"], stream[:x["steps"]], gqa, r.lr)
                self.assertEqual(x["correct"], [gqa_model.evaluate(model, x["g"], test)[0]], (task, x))

    def test_the_carried_optimizer_goes_on_from_the_pretraining(self):
        # The control with Adam carried over is the pre-trained model and its optimizer
        # copied together (deepcopy keeps the optimizer's rows the model's) and trained on.
        r = TINY._replace(seeds=1, carried=True)
        got = run_of(r)["tasks"]
        first = r.budgets[0]
        for task in gqa_train.TASKS:
            test = tasks.held_out(r, task, r.seed)
            exclude = {ex[0] for ex in test}
            mha = gqa_model.init_model(r, task, 2, r.head_dim, 2, r.d_ff, "mha", r.seed)
            adam = gqa_model.train(mha, 2, tasks.batches(r, task, r.seed, "pretrain", r.pretrain, exclude), gqa, r.lr)
            control, kept = copy.deepcopy((mha, adam))
            stream = tasks.batches(r, task, r.seed, "uptrain", first, exclude)
            gqa_model.train(control, 2, stream, gqa, r.lr, optimizer=kept)
            self.assertEqual([(x["model"], x["g"], x["steps"]) for x in got[task]["carried"]],
                             [("control", 2, first), ("mean", 1, first)])
            self.assertEqual(got[task]["carried"][0]["correct"], [gqa_model.evaluate(control, 2, test)[0]])
            fresh = [x["correct"] for x in got[task]["control"] if x["steps"] == first]
            self.assertNotEqual(kept.t, first)                   # it went on from the pre-training's steps
            self.assertEqual(kept.t, r.pretrain + first)
            self.assertEqual(len(fresh), 1)

    def test_the_carried_moments_are_folded_as_the_weights(self):
        r = TINY._replace(heads=4)
        model = gqa_model.init_model(r, "recall", 4, r.head_dim, 4, r.d_ff, "mha", 0)
        adam = gqa_model.Adam(model, 0.1)
        adam.m = [float(i) for i in range(len(adam.m))]
        adam.v = [float(i * i) for i in range(len(adam.v))]
        m, v = adam.state(model)
        for moments, flat in ((m, adam.m), (v, adam.v)):
            folded = experiment.convert(moments, 4, 2, "mean", r, "recall", 0)
            k = moments.weights[1]                                # [4][d_model][d]
            for group in range(2):                               # heads 2j and 2j + 1, averaged by hand
                for i, row in enumerate(folded.weights[1][group]):
                    for j, value in enumerate(row):
                        want = (k[2 * group][i][j] + k[2 * group + 1][i][j]) / 2
                        self.assertAlmostEqual(value, want, places=12)
        self.assertEqual(list(chain(*gqa_model._leaves(m))), adam.m)   # shaped, not changed
        new = gqa_model.carried(folded, 0.1, experiment.convert(m, 4, 2, "mean", r, "recall", 0), folded, 7)
        self.assertEqual((new.t, len(new.m)), (7, gqa_model.parameters(folded)))

    def test_a_recipe_without_the_equal_cache_models_trains_none_and_says_so(self):
        trained = []
        real = gqa_model.train

        def spy(model, g, batches_, *args, **kwargs):
            trained.append(g)
            return real(model, g, batches_, *args, **kwargs)
        with mock.patch.object(experiment, "train", spy):
            result = gqa_train.run(TINY._replace(seeds=1, same_cache=False))
        self.assertEqual(len(trained), 2 * (1 + 1 + 3))         # per task: pre-training, control, 3 conversions
        for task in gqa_train.TASKS:
            self.assertEqual(result["tasks"][task]["same_cache"], [])
        self.assertIn(f"({experiment.NOT_TRAINED}.)", gqa_train.render(result))

    def test_one_process_or_two_give_the_same_bytes_and_name_the_seeds(self):
        said = {1: [], 2: []}
        runs = {jobs: gqa_train.run(TINY, progress=said[jobs].append, jobs=jobs) for jobs in (1, 2)}
        strip = lambda r: json.dumps({k: v for k, v in r.items() if k != "seconds"})
        self.assertEqual(strip(runs[1]), strip(runs[2]))
        self.assertEqual(gqa_train.render(runs[1]), gqa_train.render(runs[2]))
        for jobs, lines in said.items():
            for seed in (5, 6):
                for task in gqa_train.TASKS:
                    self.assertTrue(any(line.startswith(f"seed {seed}, {task}") for line in lines), (jobs, lines))
        self.assertIn("4 runs (a seed and a task each) in 2 processes", said[2])

    def test_a_run_is_the_same_when_repeated(self):
        again = gqa_train.run(TINY)
        strip = lambda r: json.dumps({k: v for k, v in r.items() if k != "seconds"})
        self.assertEqual(strip(again), strip(self.result))
        text = gqa_train.render(self.result)
        self.assertIn("g = 1: held-out accuracy", text)
        self.assertIn("no narrower heads", text)
        for task in gqa_train.TASKS:
            for x in self.result["tasks"][task]["same_cache"]:
                self.assertRegex(text, re.escape(x["model"]) + r" +4 +" + f"{x['parameters']:,}")

    def test_the_mean_conversion_is_the_fold_of_the_trained_weights(self):
        model = gqa_model.init_model(TINY, "offsets", 2, 2, 2, 2, "fold test", 0)
        folded = experiment.convert(model, 2, 1, "mean", TINY, "offsets", 0)
        self.assertEqual(folded.weights[1], gqa.fold_kv_mean(model.weights[1], 1))
        self.assertEqual(folded.weights[0], model.weights[0])          # queries untouched
        self.assertEqual(folded.emb, model.emb)
        first = experiment.convert(model, 2, 1, "first", TINY, "offsets", 0)
        self.assertEqual(first.weights[2], [model.weights[2][0]])


class TheLab(unittest.TestCase):
    """run() takes the lab as a parameter: a student's module can be trained on."""

    def test_every_lab_call_goes_through_the_module_given_and_is_public(self):
        calls, private = {}, []

        class Counting:
            def __getattr__(self, name):
                if name.startswith("_"):                   # a student's module promises no helper
                    private.append(name)
                    raise AttributeError(name)
                obj = getattr(gqa, name)
                if not callable(obj) or isinstance(obj, type):
                    return obj

                def call(*args, **kwargs):
                    calls[name] = calls.get(name, 0) + 1
                    return obj(*args, **kwargs)
                return call
        r = TINY._replace(seeds=1, budgets=(2,))
        plain = run_of(r)
        got = gqa_train.run(r, lab=Counting())
        self.assertEqual(private, [])
        for name in gqa_train.NEEDS:                       # each step it needs, it calls
            self.assertGreater(calls.get(name, 0), 0, name)
        self.assertLessEqual(set(calls), set(gqa_train.NEEDS))     # what a student's module must pass
        strip = lambda res: json.dumps({k: v for k, v in res.items() if k != "seconds"})
        self.assertEqual(strip(got), strip(plain))

    def test_the_models_kernel_is_the_labs_to_the_last_bit(self):
        rng = random.Random("kernel")
        a = [[rng.uniform(-1, 1) for _ in range(7)] for _ in range(5)]
        b_cols = [[rng.uniform(-1, 1) for _ in range(7)] for _ in range(3)]
        self.assertEqual(gqa_model._mm(a, b_cols), gqa._mm(a, b_cols))
        by_hand = [[math.fsum(x * y for x, y in zip(col, row)) for col in b_cols] for row in a]
        for got, want in zip(gqa_model._mm(a, b_cols), by_hand):
            for x, y in zip(got, want):
                self.assertAlmostEqual(x, y, places=14)


class Command(unittest.TestCase):

    def test_bad_seed_and_seeds_are_usage_errors(self):
        for argv, message in ((["--seed", "-1"], "--seed must be between 0"),
                              (["--seeds", "0"], "--seeds must be between 1 and 100"),
                              (["--jobs", "0"], "--jobs must be between 1 and 64")):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as cm:
                gqa_cli.main(["uptrain"] + argv)
            self.assertEqual(cm.exception.code, 2)
            self.assertIn(message, err.getvalue())

    def test_jobs_with_a_students_module_is_refused_in_its_language(self):
        # A student's module trains in one process, the grader's worker: --jobs would be unused.
        for lang, says in (("en", "--jobs goes without --module"), ("ko", "--jobs는 --module 없이 씁니다")):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), \
                    mock.patch("gqa_tools.uptraining.command.run_module", side_effect=AssertionError("ran")):
                status = gqa_cli.main(["uptrain", "--module", "gqa.py", "--jobs", "2", "--lang", lang])
            self.assertEqual(status, 2)
            self.assertTrue(err.getvalue().startswith(f"gqa uptrain: {says}"), err.getvalue())
            self.assertEqual(len(err.getvalue().splitlines()), 1)


class Committed(unittest.TestCase):
    """What report.md's section 8 says (report --check keeps it the code's output)."""

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ROOT, "report.md"), encoding="utf-8") as f:
            text = f.read()
        cls.section = text.split("## 8.")[1].split("\n## ")[0]
        cls.reading = text.split("## 9.")[1].split("\n## ")[0]

    def test_gqa_beside_mqa_at_20_seeds_with_the_control(self):
        self.assertIn("(h = 4,", self.section)
        self.assertRegex(self.section, r"(\d+) seeds \(0 to \d+\)")
        seeds = int(re.search(r"(\d+) seeds \(0 to \d+\)", self.section).group(1))
        self.assertGreaterEqual(seeds, 20)
        for task in gqa_train.TASKS:
            for g in (1, 2):
                self.assertIn(f"| {task:<7} | {g} | MHA trained on (the control)", self.section)
                self.assertIn(f"| {task:<7} | {g} | mean ", self.section)

    def test_every_share_is_its_wilson_interval(self):
        shares = re.findall(r"(\d+)/(\d+) \[(\d\.\d{3}), (\d\.\d{3})\]", self.section)
        self.assertGreaterEqual(len(shares), 2 * 2 * 3 * 3)        # per task and g: 3 rows of shares, 3 columns
        for k, n, low, high in shares:
            want = gqa_statistics.wilson(int(k), int(n))
            self.assertEqual((low, high), (f"{want[0]:.3f}", f"{want[1]:.3f}"), (k, n))

    def test_every_verdict_follows_from_its_printed_interval_at_a_holm_level(self):
        rows = re.findall(r"\| (offsets|recall) +\| (.*?) +\| +([+-]\d\.\d{3}) \| \[([+-]\d\.\d{3,6}), "
                          r"([+-]\d\.\d{3,6})\] at ([\d.]+) % +\| +(\S+) \| (holds|does not hold|not resolved) +\| "
                          r"+(\d\.\d{3}|—) \|", self.section)
        m = len(rows)
        # per task: 2 drops, 4 recovers, 8 orderings, 2 of the control, 3 restarts, 4 from scratch
        self.assertEqual(m, 2 * (2 + 4 + 8 + 2 + 3 + 4))
        self.assertIn(f"All {m} verdicts, the diagnostics (the control's own change, Adam carried over) with the "
                      f"main claims, are decided as one family by Holm's step-down correction", self.section)
        holm_levels = {f"{100 * (1 - 0.05 / k):.3f}" for k in range(1, m + 1)}
        for task, claim, mean, low, high, level, p, word, gap in rows:
            below = re.search(r"< (0\.\d+)\)$", claim)
            bar = float(below.group(1)) if below else 0.0
            self.assertTrue(below or claim.endswith("> 0)"), claim)
            self.assertLessEqual(float(low), float(mean))
            self.assertLessEqual(float(mean), float(high))
            self.assertIn(level, holm_levels, claim)
            on, off = (float(high) < bar, float(low) > bar) if below else (float(low) > bar, float(high) < bar)
            self.assertEqual(word, "holds" if on else "does not hold" if off else "not resolved", (task, claim))
            near = float(low) if float(mean) >= bar else float(high)     # the end on the bar's side of the mean
            self.assertAlmostEqual(float(gap), abs(float(mean) - near), delta=0.0011, msg=(task, claim))
        # Holm's steps: the r resolved claims were tested at 0.05 / m, 0.05 / (m - 1), ...,
        # 0.05 / (m - r + 1), and every other at the level of the step that failed, the next.
        resolved = sorted(row[5] for row in rows if row[7] != "not resolved")
        r = len(resolved)
        self.assertEqual(resolved, sorted(f"{100 * (1 - 0.05 / (m - i)):.3f}" for i in range(r)))
        self.assertEqual({row[5] for row in rows if row[7] == "not resolved"}, {f"{100 * (1 - 0.05 / (m - r)):.3f}"})

    def test_the_training_record_is_the_codes_now(self):
        # report (written or --check-ed) takes section 8's training from the record of its Python's
        # family when its key is the code's: a stale one would cost CI, and a student on that
        # family, the training, so both families' are checked here, under every Python.
        from gqa_tools.report import measuring, record, settings
        path = os.path.join(ROOT, record.TRAINING_RECORD)
        recipe = measuring.report_recipe(settings.Config())
        for family, python in (("sum", "python3.11"), ("sumprod", "python3.12")):
            with self.subTest(family=family):
                recorded = record.recorded_training(path, recipe, family)
                self.assertIsNotNone(recorded, f"regenerate it with {python} -m gqa report")
                self.assertEqual(recorded["seeds"], list(range(gqa_train.QUICK.seeds)))
                self.assertEqual(recorded["seconds"], 0.0)                 # the same bytes from run to run
                for task in gqa_train.TASKS:       # a count for every seed (report --check reads the rest)
                    self.assertEqual(len(recorded["tasks"][task]["pretrained"]["correct"]), gqa_train.QUICK.seeds)

    def test_both_families_records_write_the_committed_section_8(self):
        # The two families' trainings differ in their last bits (losses), never in what the report
        # prints: section 8 and its figures, and section 9's sentence of it, written from either
        # record are report.md's (report --check reads report.md's whole under 3.12 in CI).
        from gqa_tools.report import lab, measuring, reading, record, sections, settings, trained
        path = os.path.join(ROOT, record.TRAINING_RECORD)
        cfg = settings.Config()
        written = []
        for family in record.FAMILIES:
            result = record.recorded_training(path, measuring.report_recipe(cfg), family)
            self.assertIsNotNone(result, family)
            m = measuring.Measured(*[None] * 6, training=result)
            body, figures = trained.section_training(cfg, lab.Lab(gqa, "gqa.py"), m)
            self.assertIn(sections.assemble([sections.Part("", body)]), self.section)
            written.append((body, figures, reading._training_sentence(m)))
        self.assertEqual(written[0], written[1])
        self.assertIn(written[0][2].strip(), self.reading)

    def test_section_9_says_what_section_8_decided(self):
        for task in gqa_train.TASKS:
            for g in (1, 2):
                self.assertIn(f"{task} at g = {g} (", self.reading)
        self.assertIn("against an MHA model trained on the same batches", self.reading)

    def test_the_docs_sample_is_the_reports_run(self):
        # docs/uptraining.md shows the offsets task of `uptrain --quick` (`...` for recall)
        with open(os.path.join(ROOT, "docs", "uptraining.md"), encoding="utf-8") as f:
            page = f.read()
        sample = re.search(r"```\n\$ python -m gqa uptrain --quick\n(.*?)```", page, re.S).group(1)
        spread = r"\d\.\d{3} ± \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]"
        spreads = re.findall(spread, sample)
        self.assertGreater(len(spreads), 10)
        in_report = re.findall(spread, self.section)
        for found in set(spreads):                   # each shown as often as the report has it
            self.assertLessEqual(spreads.count(found), in_report.count(found), found)
        found = [line[2:] for line in sample.splitlines() if line.startswith("- ")]
        self.assertTrue(found and all(s in self.section for s in found), found)


@heavy
class WithAStudentsModule(unittest.TestCase):
    """uptrain --module: trained with the module's own steps, in the grader's worker."""

    ONE = TINY._replace(seeds=1)
    EARLY = ("trained",)

    @staticmethod
    def trained():
        """run_module of a copy of the lab (what it trained to), and of the lab with
        grouped_attention_backward's gradients doubled (what it raised, training refused here)."""
        import shutil
        import tempfile
        from gqa_tools.uptraining import command as gqa_uptrain
        with open(gqa.__file__, encoding="utf-8") as f:
            source = f.read()
        broken = source.replace("    return _grouped_attention_backward(q, k, v, d_out, probs)",
                                "    return _grouped_attention_backward(q, k, v, [[[2 * x for x in r] for r in m] "
                                "for m in d_out], probs)", 1)
        folder = tempfile.mkdtemp(prefix="gqa-uptrain-")
        try:
            path = os.path.join(folder, "gqa.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            with contextlib.redirect_stderr(io.StringIO()):            # as root: "... runs sealed"
                theirs = gqa_uptrain.run_module(path, WithAStudentsModule.ONE)
            with open(path, "w", encoding="utf-8") as f:
                f.write(broken)
            try:
                with mock.patch.object(experiment, "run", side_effect=AssertionError("trained")), \
                        contextlib.redirect_stderr(io.StringIO()):
                    gqa_uptrain.run_module(path, WithAStudentsModule.ONE)
                refused = None
            except Exception as err:
                refused = [isinstance(err, ValueError), type(err).__name__, str(err)]
            return {"theirs": theirs, "path": path, "edited": broken != source, "refused": refused}
        finally:
            shutil.rmtree(folder, True)

    def test_a_copy_of_the_lab_trains_to_the_same_numbers_out_of_process(self):
        theirs = early(self.trained)["theirs"]
        ours = json.loads(json.dumps(gqa_train.run(self.ONE)))      # tuples as the wire sends them
        for result in (theirs, ours):
            self.assertGreater(result.pop("seconds"), 0)                # wall time, not a result
        self.assertEqual(theirs, ours)

    def test_steps_that_do_not_pass_are_named_and_nothing_is_trained(self):
        trained = early(self.trained)
        self.assertTrue(trained["edited"])               # grouped_attention_backward's gradients, doubled
        self.assertIsNotNone(trained["refused"], "the broken module was trained")
        value_error, kind, message = trained["refused"]
        self.assertTrue(value_error, f"{kind}: {message}")
        self.assertIn(f"step {NUMBER['grouped_attention_backward']}, grouped_attention_backward: failed", message)
        self.assertIn(f"python grader.py --module {trained['path']}", message)


# A small run's counts, written once by the code (regenerate with the snippet in
# CONTRIBUTING.md) and the same under every Python 3.9-3.13.  CI checks report.md
# under a 3.12+ Python only, and Committed checks the two families' records of the
# quick recipe; this is what catches the two float families (plain sum before 3.12,
# math.sumprod and compensated sum after) drifting apart in what section 8 prints,
# its counts, when training changes and before the records are written again.
SMALL_RUN = TINY._replace(vocab=4, keys=4, values=4, length=5, held_out=64)


def small_run_counts():
    r = gqa_train.run(SMALL_RUN)
    return {task: {"pretrained": t["pretrained"]["correct"],
                   "control": [[x["steps"], x["correct"]] for x in t["control"]],
                   "uptrain": [[x["g"], x["conversion"], x["steps"], x["correct"]] for x in t["uptrain"]],
                   "same_cache": [[x["model"], x["correct"]] for x in t["same_cache"]]}
            for task, t in r["tasks"].items()}


class EveryPython(unittest.TestCase):

    def test_a_small_run_counts_the_same_answers_on_every_python(self):
        with open(os.path.join(os.path.dirname(__file__), "data", "small_run.json"), encoding="utf-8") as f:
            self.assertEqual(small_run_counts(), json.load(f))


def load_tests(loader, tests, pattern):
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


if __name__ == "__main__":
    unittest.main()
