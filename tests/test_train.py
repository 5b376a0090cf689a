"""The uptraining lab: its model's gradients against finite differences, a batch that
is its sequences side by side, paired runs (one stream for the control and every
conversion, checkpoints of one run), a held-out set training never sees, an equal
cache that is equal, the statistics (t quantiles, Wilson intervals) against values
derived another way, the verdicts of the committed report against its own intervals,
and runs that are the same to the byte when repeated, in one process or two."""

from __future__ import annotations

import contextlib
import copy
import doctest
import io
import itertools
import json
import math
import os
import random
import re
import statistics
import unittest
from fractions import Fraction
from itertools import chain
from unittest import mock

import gqa
from gqa_tools import cli as gqa_cli
from gqa_tools import statistics as gqa_statistics
from gqa_tools import uptraining as gqa_train
from gqa_tools.uptraining import claims, experiment, tasks
from gqa_tools.uptraining import sentences as gqa_sentences
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


Z = statistics.NormalDist().inv_cdf(0.975)


def t_by_hand(p, df):
    """Student's t quantiles in closed form: df = 1 (Cauchy), 2 and 4."""
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    a = 4 * p * (1 - p)                                  # df = 4
    q = math.cos(math.acos(math.sqrt(a)) / 3) / math.sqrt(a)
    return math.copysign(2 * math.sqrt(q - 1), p - 0.5)


def simpson(t, df, steps=2000):
    """The t density's integral from 0 to t, by Simpson's rule: P(0 < T < t)."""
    h = t / steps
    return h / 3 * sum((1 if i in (0, steps) else 4 if i % 2 else 2) * t_density(i * h, df)
                       for i in range(steps + 1))


def t_density(t, df):
    return math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi) \
        * (1 + t * t / df) ** (-(df + 1) / 2)


class by_patterns:
    """Exact values' sign patterns, all 2^K of them, listed one by one: the sign-flip test and its
    interval as their definitions say, for a few seeds."""

    def __init__(self, values):
        self.values = list(values)
        self.patterns = [(sum(s * v for s, v in zip(signs, self.values)), sum(signs))
                         for signs in itertools.product((1, -1), repeat=len(self.values))]

    def p(self, bar):
        """The share of patterns whose sum of signed (value - bar) is at least as far from 0 as the measured."""
        measured = abs(sum(self.values) - len(self.values) * bar)
        return Fraction(sum(abs(a - b * bar) >= measured for a, b in self.patterns), len(self.patterns))

    def interval(self, alpha):
        """The bars with p >= alpha, as (lowest, highest); None where bars beyond every mean pass.
        p changes only where a subset's mean crosses the bar, so the subset means and the points
        between and beyond them are every case."""
        means = sorted({Fraction(sum(c), len(c)) for r in range(1, len(self.values) + 1)
                        for c in itertools.combinations(self.values, r)})
        points = [means[0] - 1] + means + [(x + y) / 2 for x, y in zip(means, means[1:])] + [means[-1] + 1]
        kept = sorted(x for x in points if self.p(x) >= Fraction(alpha))
        return (None if kept[0] < means[0] else kept[0], None if kept[-1] > means[-1] else kept[-1])


class Statistics(unittest.TestCase):

    def test_t_quantiles_against_closed_forms(self):
        for df in (1, 2, 4):
            for p in (0.6, 0.9, 0.975, 0.995):
                want = t_by_hand(p, df)
                self.assertAlmostEqual(gqa_statistics.t_quantile(p, df), want, delta=1e-9 * want, msg=(p, df))

    def test_t_cdf_against_the_integral_of_its_density(self):
        for df in (3, 7, 30):
            for t in (0.5, 2.0):
                steps = 2000                                  # Simpson's rule from 0 to t
                h = t / steps
                area = h / 3 * sum((1 if i in (0, steps) else 4 if i % 2 else 2) * t_density(i * h, df)
                                   for i in range(steps + 1))
                self.assertAlmostEqual(gqa_statistics.t_cdf(t, df), 0.5 + area, places=10, msg=(df, t))

    def test_t_quantiles_fall_towards_the_normal_one(self):
        qs = [gqa_statistics.t_quantile(0.975, df) for df in range(1, 101)]
        self.assertTrue(all(a > b for a, b in zip(qs, qs[1:])))
        self.assertGreater(qs[-1], Z)
        self.assertLess(qs[-1] - Z, 0.03)

    def test_wilson_ends_solve_its_equation(self):
        # The Wilson interval is the p with |k/n - p| = z sqrt(p (1 - p) / n).
        for k, n in ((0, 20), (3, 20), (13, 20), (20, 20), (7, 9)):
            for end in gqa_statistics.wilson(k, n):
                residual = (k / n - end) ** 2 - Z * Z * end * (1 - end) / n
                self.assertAlmostEqual(residual, 0.0, places=12, msg=(k, n, end))
        self.assertAlmostEqual(gqa_statistics.wilson(0, 20)[0], 0.0, places=12)
        self.assertEqual(gqa_statistics.wilson(20, 20)[1], 1.0)

    def test_mean_sd_and_the_t_interval_from_the_counts(self):
        s = gqa_train.stats([3, 5, 8], 10)
        self.assertEqual(s.mean, 16 / 30)
        self.assertAlmostEqual(s.sd, statistics.stdev([0.3, 0.5, 0.8]), places=15)
        half = t_by_hand(0.975, 2) * statistics.stdev([0.3, 0.5, 0.8]) / math.sqrt(3)    # 3 seeds: df 2
        self.assertAlmostEqual(s.low, max(0.0, 16 / 30 - half), places=9)     # an accuracy: clipped
        wide = gqa_statistics.interval([Fraction(3, 10), Fraction(5, 10), Fraction(8, 10)])
        self.assertAlmostEqual(wide.low, 16 / 30 - half, places=9)
        self.assertAlmostEqual(s.high, min(1.0, 16 / 30 + half), places=9)
        self.assertEqual(gqa_train.spread_text(s), f"0.533 ± 0.252 [{s.low:.3f}, {s.high:.3f}]")
        self.assertEqual(gqa_train.stats([7], 10), (0.7, 0.0, 0.7, 0.7, 1))
        self.assertEqual(gqa_train.stats([10, 10, 9], 10).high, 1.0)            # an accuracy: clipped

    def fake(self, pre, mean, first, random_, control=None, same=((9, 9), (5, 5), (4, 9))):
        """A result of one task and g = 1, one budget (5 % of 100 steps), given each seed's counts of 100."""
        ups = []
        for how, counts in (("mean", mean), ("first", first), ("random", random_)):
            ups += [dict(g=1, conversion=how, steps=0, correct=[10] * len(pre)),
                    dict(g=1, conversion=how, steps=5, correct=list(counts))]
        rows = [dict(model=name, cache_per_token=8, correct=list(c))
                for name, c in zip(("MQA", "one head", "narrow"), same)]
        t = dict(answers=100, pretrained=dict(correct=list(pre)), uptrain=ups, same_cache=rows,
                 control=[dict(steps=5, correct=list(control or pre))])
        return dict(recipe=dict(pretrain=100, budgets=[5], heads=2), seeds=list(range(len(pre))),
                    tasks={"recall": t})

    def verdict_by_hand(self, k, n, bar):
        # Wilson's interval, written out: centre and half-width.
        p = k / n
        centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
        half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
        return "holds" if centre - half > bar else "does not hold" if centre + half < bar else "not resolved"

    def test_p_values_against_the_t_table_and_the_integral_of_the_density(self):
        def p_of(t, df):                         # a t over df + 1 seeds: mean t, se 1
            return gqa_statistics.p_value(gqa_statistics.Stats(t, math.sqrt(df + 1), 0, 0, df + 1), 0.0)
        # two-sided 5 % and 1 % points of printed t-tables
        for df, t, p in ((19, 2.093024, 0.05), (9, 3.249836, 0.01), (4, 2.776445, 0.05), (1, 12.706205, 0.05)):
            self.assertAlmostEqual(p_of(t, df), p, delta=2e-7, msg=(df, t))
            self.assertAlmostEqual(p_of(-t, df), p, delta=2e-7, msg=(df, -t))
        for df in (3, 7):
            for t in (0.5, 2.0):
                self.assertAlmostEqual(p_of(t, df), 1 - 2 * simpson(t, df), places=9, msg=(df, t))
        self.assertAlmostEqual(p_of(1.0, 1), 0.5, places=14)          # Cauchy: P(|T| > 1) = 1/2

    def test_holm_by_hand(self):
        # 0.005 < 0.05/4, 0.01 < 0.05/3, then 0.03 > 0.05/2: stop; 0.04 is never reached.
        self.assertEqual(gqa_statistics.holm([0.01, 0.04, 0.03, 0.005]),
                         [(True, 0.05 / 3), (False, 0.05 / 2), (False, 0.05 / 2), (True, 0.05 / 4)])
        self.assertEqual(gqa_statistics.holm([0.04, 0.001, 0.02]),
                         [(True, 0.05), (True, 0.05 / 3), (True, 0.05 / 2)])
        self.assertEqual(gqa_statistics.holm([0.03, 0.03]), [(False, 0.025), (False, 0.025)])
        rng = random.Random("holm")
        for _ in range(200):                     # never less than Bonferroni, never more than uncorrected
            ps = [rng.random() ** 3 for _ in range(rng.randrange(1, 12))]
            for p, (rejected, level) in zip(ps, gqa_statistics.holm(ps)):
                self.assertTrue(rejected or p >= 0.05 / len(ps))
                self.assertFalse(rejected and p >= 0.05)
                self.assertEqual(rejected, p < level)

    def test_every_verdict_is_holms_on_the_exact_test_and_follows_from_its_interval(self):
        # 8 seeds: 256 sign patterns, each counted here (by_patterns), against the claims as written out
        pre, mean = [100] * 8, [100, 99, 100, 99, 100, 99, 100, 99]
        first, random_ = [60, 70, 65, 62, 68, 61, 66, 64], [20, 25, 22, 21, 30, 24, 23, 26]
        result = self.fake(pre, mean, first, random_, same=())
        claims_ = [("drops", [p - 10 for p in pre], 0, True),
                   ("recovers", [p - m for p, m in zip(pre, mean)], Fraction(1, 50), False),
                   ("mean beats first", [m - f for m, f in zip(mean, first)], 0, True),
                   ("first beats random", [f - r for f, r in zip(first, random_)], 0, True),
                   ("control", [0] * 8, 0, True)]
        exact = [by_patterns([Fraction(d, 100) for d in diffs]) for _, diffs, _, _ in claims_]
        ps = [e.p(bar) for e, (_, _, bar, _) in zip(exact, claims_)]
        self.assertEqual(ps, [Fraction(2, 256)] * 4 + [1])
        order = sorted(range(5), key=lambda i: ps[i])
        levels, stopped = {}, None               # Holm, written out
        for rank, i in enumerate(order):
            alpha = stopped or 0.05 / (5 - rank)
            if stopped is None and ps[i] >= alpha:
                stopped = alpha
            levels[i] = alpha
        decided = gqa_train.verdicts(result, ["recall"])
        self.assertEqual([d.claim.kind for d in decided], [c[0] for c in claims_])
        for i, (d, e, (kind, diffs, bar, above)) in enumerate(zip(decided, exact, claims_)):
            self.assertEqual(d.p, ps[i], kind)
            self.assertAlmostEqual(d.level, 1 - levels[i], places=12, msg=kind)
            low, high = e.interval(levels[i])
            self.assertEqual((d.low, d.high), (low, high), kind)
            low, high = -1 if low is None else low, 1 if high is None else high
            side = "holds" if (low > bar if above else high < bar) else \
                "does not hold" if (high < bar if above else low > bar) else "not resolved"
            self.assertEqual(d.verdict, side, kind)
        self.assertEqual([d.verdict for d in decided], ["holds"] * 4 + ["not resolved"])

    def test_the_exact_p_value_counts_every_sign_pattern(self):
        rng = random.Random("sign flips")
        for _ in range(50):
            k, n = rng.randrange(1, 10), rng.choice((7, 10, 64, 640))
            values = [Fraction(rng.randrange(-n, n + 1) if rng.random() < 0.8 else rng.choice((0, 1, -1)), n)
                      for _ in range(k)]
            bar = rng.choice((Fraction(0), Fraction(1, 50), Fraction(rng.randrange(-n, n), n)))
            self.assertEqual(gqa_statistics.sign_flip_p(values, bar), by_patterns(values).p(bar), (values, bar))
        # 20 seeds all above the bar: only the measured pattern and its mirror are as far out
        self.assertEqual(gqa_statistics.sign_flip_p([Fraction(i + 1, 100) for i in range(20)], Fraction(0)),
                         Fraction(2, 2 ** 20))

    def test_the_exact_interval_is_the_bars_the_test_does_not_reject(self):
        rng = random.Random("sign flip intervals")
        for _ in range(20):
            k, n = rng.randrange(1, 8), rng.choice((7, 10, 64))
            values = [Fraction(rng.randrange(-n, n + 1), n) for _ in range(k)]
            level = rng.choice((0.5, 0.7, 0.9, 0.95, 0.99))
            self.assertEqual(gqa_statistics.sign_flip_interval(values, level),
                             by_patterns(values).interval(1 - level), (values, level))

    def test_the_exact_interval_counted_by_binomials_past_64_seeds(self):
        # Three values with multiplicities: every subset mean and how many subsets have it, counted by
        # binomial coefficients; each end is where the count of means beyond it reaches the level's.
        # 64 and 70 seeds take two 64-bit words a count.
        for k, (a, b, c), (na, nb) in ((64, (-3, 1, 4), (20, 30)), (70, (-5, 0, 2), (9, 41)),
                                       (20, (-1, 2, 7), (5, 6))):
            counts = {Fraction(a, 10): na, Fraction(b, 10): nb, Fraction(c, 10): k - na - nb}
            values = [v for v, m in counts.items() for _ in range(m)]
            random.Random(k).shuffle(values)
            means = {}
            for picks in itertools.product(*[range(m + 1) for m in counts.values()]):
                if sum(picks):
                    mean = sum(v * p for v, p in zip(counts, picks)) / sum(picks)
                    means[mean] = means.get(mean, 0) + math.prod(math.comb(m, p)
                                                                 for m, p in zip(counts.values(), picks))
            need = math.ceil(Fraction(1 - 0.999) * 2 ** (k - 1)) - 1       # means beyond an end, at most
            ends = []
            for order in (sorted(means), sorted(means, reverse=True)):
                seen = 0
                for x in order:
                    seen += means[x]
                    if seen >= need:
                        ends.append(x)
                        break
            self.assertEqual(gqa_statistics.sign_flip_interval(values, 0.999), tuple(ends), k)

    def test_below_six_seeds_no_verdict_can_resolve(self):
        # 5 seeds, every difference far above its bar: p is at least 2 / 2^5 = 0.0625, above 5 %.
        result = self.fake([100] * 5, [50] * 5, [30] * 5, [10] * 5, same=())
        decided = gqa_train.verdicts(result, ["recall"])
        self.assertEqual({d.verdict for d in decided}, {"not resolved"})
        self.assertEqual({d.p for d in decided[:4]}, {Fraction(2, 32)})
        self.assertEqual({(d.low, d.high, d.resolves) for d in decided}, {(None, None, None)})
        self.assertEqual({row[-1] for row in gqa_sentences.verdict_rows(result, decided)}, {"—"})

    def test_the_smallest_resolvable_gap_is_where_a_shifted_run_resolves(self):
        # Each claim's differences moved as one so that their mean lies just beyond, or just short
        # of, the smallest resolvable gap from the bar: every pattern counted, at the claim's level.
        pre, mean = [100] * 8, [97, 99, 100, 95, 100, 98, 100, 99]
        first, random_ = [60, 70, 65, 62, 68, 61, 66, 64], [20, 25, 62, 21, 70, 24, 23, 26]
        decided = gqa_train.verdicts(self.fake(pre, mean, first, random_, same=()), ["recall"])
        checked = 0
        for d in decided:
            if d.resolves is None:
                continue
            side = 1 if d.mean >= d.claim.bar else -1
            for step, rejected in ((Fraction(1, 1000), True), (-Fraction(1, 1000), False)):
                if d.resolves + step <= 0:          # no distance short of 0: every seed alike resolves at once
                    continue
                move = d.claim.bar + side * (d.resolves + step) - d.mean
                p = by_patterns([v + move for v in d.claim.values]).p(d.claim.bar)
                self.assertEqual(p < 1 - d.level, rejected, (d.claim.kind, step))
            checked += 1
        self.assertGreaterEqual(checked, 4)

    def test_recovers_is_non_inferiority_of_the_paired_gap(self):
        # The gap control - mean per seed: well inside the margin recovers though no seed is
        # exactly at the control; a gap above the margin in every seed does not hold.
        for mean, want in (([100, 99, 100, 99, 100, 100, 99, 100], "holds"),
                           ([90, 92, 91, 93, 90, 91, 92, 90], "does not hold"),
                           ([100, 90, 100, 96, 99, 100, 93, 100], "not resolved")):
            result = self.fake([100] * 8, mean, [50] * 8, [20] * 8, same=())
            got = [d for d in gqa_train.verdicts(result, ["recall"]) if d.claim.kind == "recovers"]
            self.assertEqual([d.verdict for d in got], [want], mean)

    def test_an_interval_end_is_never_printed_as_its_bar(self):
        # a verdict is read from the printed interval: an end that would round to the bar gets
        # the digits it needs, up to 6
        for x, bar, want in ((-0.0003, 0.0, "-0.0003"), (0.0174, 0.02, "+0.017"), (0.01996, 0.02, "+0.01996"),
                             (0.0, 0.0, "+0.000"), (0.123456, 0.0, "+0.123")):
            self.assertEqual(gqa_sentences.end_text(x, bar), want, (x, bar))

    def test_the_share_within_the_margin_is_counted_against_the_control(self):
        # Against a control that improved to 100 from a frozen 97, 98 is within 0.02 of both;
        # against one that fell to 95, 94 is within 0.02 of the control but not of the frozen model.
        result = self.fake([97] * 20, [94] * 20, [50] * 20, [20] * 20, control=[95] * 20)
        t = result["tasks"]["recall"]
        self.assertEqual((gqa_train.recovered(t, 1, 5), gqa_train.recovered(t, 1, 5, control=False)), (20, 0))
        self.assertEqual(gqa_train.half_within(t, 1, [5]), 5)
        self.assertIsNone(gqa_train.half_within(self.fake([100] * 4, [90] * 3 + [99], [5] * 4, [1] * 4)
                                                ["tasks"]["recall"], 1, [5]))        # 1 of 4 seeds

    def test_the_equal_cache_comparison_quotes_the_mqa_paper(self):
        result = self.fake([100] * 5, [90, 80, 70, 60, 50], [80, 80, 60, 70, 40], [10, 10, 10, 10, 40])
        same = gqa_train.same_cache_finding(result, "recall")
        self.assertIn("Shazeer 2019", same)
        # decided as averages too: MQA minus each other row, per seed (of 100 answers)
        rows = [d for d in gqa_train.verdicts(result, ["recall"]) if d.claim.kind == "same cache"]
        self.assertEqual([d.claim.g for d in rows], [1, 2])
        self.assertEqual([[float(v) for v in d.claim.values] for d in rows], [[0.04, 0.04], [0.05, 0.0]])
        two = self.fake([100] * 2, [9, 9], [5, 5], [1, 1], same=((9, 5), (5, 5), (4, 3)))
        self.assertIn(f"in {gqa_sentences.share_text(1, 2)} seeds (beat or tied them in 2/2;",
                      gqa_train.same_cache_finding(two, "recall"))

    def test_a_difference_is_decided_by_its_t_interval(self):
        drop = claims.difference([100, 100, 100], [60, 70, 80], 100)     # 0.3 ± 0.1, df 2
        half = t_by_hand(0.975, 2) * 0.1 / math.sqrt(3)
        self.assertAlmostEqual(drop.low, 0.3 - half, places=9)
        self.assertEqual(gqa_statistics.verdict(drop.low, drop.high, 0.0), "holds")
        level = claims.difference([100, 90, 95], [95, 95, 95], 100)
        self.assertEqual(gqa_statistics.verdict(level.low, level.high, 0.0), "not resolved")


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
        self.assertIn("step 24, grouped_attention_backward: failed", message)
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
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early);
    the examples of gqa_tools.statistics' docstring run too."""
    tests.addTests(doctest.DocTestSuite(gqa_statistics))
    return start_early(tests)


if __name__ == "__main__":
    unittest.main()
