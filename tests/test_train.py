"""The uptraining lab: its model's gradients against finite differences, and a
tiny run that is the same to the byte when repeated."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import unittest

import gqa
import gqa_cli
import gqa_train
from gqa_tools import rng_for

TINY = gqa_train.Recipe(heads=2, head_dim=2, d_model=4, vocab=3, length=4, offsets=2, batch=2,
                        pretrain=6, budgets=(2, 4), held_out=4, seed=5)


def answers(r):
    return r.batch * sum(r.length - o - 1 for o in range(r.offsets))


class Gradients(unittest.TestCase):

    def test_the_whole_model_against_central_differences(self):
        for g in (1, 2):
            model = gqa_train.init_model(TINY, 2, 2, g, "test")
            seqs = gqa_train.sequences(TINY, rng_for("test data", 0), TINY.batch)
            _, _, grads = gqa_train.step(TINY, model, seqs, g)

            def total(m):
                return gqa_train.step(TINY, m, seqs, g, train=False)[0] * answers(TINY)
            rng = rng_for("test probes", g)
            for part, path in (("emb", (1, 2)), ("pos", (3, 0)), ("out", (1, 2, 0)),
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
                                           msg=(g, part, path))
                    path = path[:-1] + ((path[-1] + rng.randrange(1, 2)) % 2,)


class Runs(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.result = gqa_train.run(TINY)

    def test_every_conversion_and_budget_is_measured(self):
        runs = self.result["runs"]
        self.assertEqual(runs[0]["kind"], "pretrained")
        ups = [(x["g"], x["conversion"], x["steps"]) for x in runs if x["kind"] == "uptrain"]
        self.assertEqual(ups, [(1, how, s) for how in gqa_train.CONVERSIONS for s in (0, 2, 4)])
        same = [x for x in runs if x["kind"] == "same cache"]
        self.assertEqual(len({x["cache_per_token"] for x in same}), 1)     # one cache size, three ways
        for x in runs:
            self.assertTrue(0.0 <= x["accuracy"] <= 1.0 and x["loss"] > 0, x)

    def test_the_mean_conversion_is_the_fold_of_the_trained_weights(self):
        model = gqa_train.init_model(TINY, 2, 2, 2, "fold test")
        folded = gqa_train.convert(model, 2, 1, "mean", TINY)
        self.assertEqual(folded.weights[1], gqa.fold_kv_mean(model.weights[1], 1))
        self.assertEqual(folded.weights[0], model.weights[0])          # queries untouched
        self.assertEqual(folded.emb, model.emb)

    def test_a_run_is_the_same_when_repeated(self):
        again = gqa_train.run(TINY)
        strip = lambda r: json.dumps({k: v for k, v in r.items() if k != "seconds"})
        self.assertEqual(strip(again), strip(self.result))
        text = gqa_train.render(self.result)
        self.assertIn("g = 1: held-out accuracy", text)
        self.assertIn("Same KV cache per token and layer (4 values)", text)

    def test_bad_seed_is_a_usage_error(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as cm:
            gqa_cli.main(["uptrain", "--seed", "-1"])
        self.assertEqual(cm.exception.code, 2)
        self.assertIn("--seed must be between 0", err.getvalue())


if __name__ == "__main__":
    unittest.main()
