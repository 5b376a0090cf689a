"""Bad input, at random: every call of the API ends in a result, a GQAError or a
TypeError whose message names the function, quickly; never anything else."""

from __future__ import annotations

import math
import random
import time
import unittest
from array import array
from decimal import Decimal
from fractions import Fraction

import gqa

W = gqa.init_weights(h=4, d_model=3, d=2, seed=0)
JUNK = [None, True, -1, 0, 3, 10 ** 9, 10 ** 12, 10 ** 13, 2 ** 70, -(10 ** 400), 1.5, math.nan, math.inf, "2", b"\0" * 8,
        3 + 4j, Fraction(1, 2), Decimal("1.5"), [], [[]], [[1.0, "x"]], [[1.0, None]], {1: 2}, {1.0},
        range(3), [[1.0]] * 3, [[[1.0]]] * 4, [[[1.0, 2.0]], [[1.0]]], [[10 ** 400]], (1.0,),
        [array("i", [1])], [array("d", [1.0, 2.0])], [[[math.nan]]], [[1e308, -1e308]], W, tuple(W),
        gqa.prepare_weights(W, 2), [1.0, 2.0, 3.0], [[[1.0, 2.0]]] * 4,
        gqa.prepare_weights(W, 2)._replace(q_cols=None), gqa.prepare_weights(W, 2)._replace(o_cols=5),
        W._replace(w_k=None), W._replace(w_q=[[[1.0]]] * 4)]

Q, K, V = [[[1.0, 2.0]]] * 4, [[[1.0, 2.0]]] * 2, [[[1.0]]] * 2
CALLS = [  # (name, function, a valid call's positional arguments, keyword names)
    ("valid_g", gqa.valid_g, (4,), ()),
    ("method_name", gqa.method_name, (4, 2), ()),
    ("kv_head", gqa.kv_head, (1, 4, 2), ()),
    ("group_heads", gqa.group_heads, (4, 2), ()),
    ("fold_kv_mean", gqa.fold_kv_mean, (Q, 2), ()),
    ("repeat_kv", gqa.repeat_kv, (K, 4), ()),
    ("single_head_attention", gqa.single_head_attention, ([[1.0, 2.0]], [[1.0, 2.0]], [[1.0]]), ("causal",)),
    ("attention", gqa.attention, (Q, Q, [[[1.0]]] * 4, 2), ("causal",)),
    ("grouped_attention", gqa.grouped_attention, (Q, K, V), ("causal",)),
    ("init_weights", gqa.init_weights, (2, 3, 2), ("seed",)),
    ("fold_weights", gqa.fold_weights, (W, 2), ()),
    ("prepare_weights", gqa.prepare_weights, (W, 2), ()),
    ("layer", gqa.layer, ([[1.0, 2.0, 3.0]], W, 2), ("causal",)),
    ("output_difference", gqa.output_difference, ([[1.0]], [[2.0]]), ()),
    ("kv_cache_elements", gqa.kv_cache_elements, (1, 2, 3, 4), ("batch",)),
    ("attention_multiplies", gqa.attention_multiplies, (2, 4, 2, 2, 3), ("causal",)),
    ("block_multiplies", gqa.block_multiplies, (2, 4, 2, 2, 3, 5), ("mlp_matrices",)),
    ("cache_table", lambda h, layers, length, head_dim: gqa.cache_table(
        h, layers=layers, length=length, head_dim=head_dim), (4, 1, 2, 3), ()),
    ("multiplies_table", gqa.multiplies_table, (2, 4, 2, 3), ("causal",)),
    ("decode_traffic", gqa.decode_traffic, (2, 4, 2, 2, 3), ("batch",)),
    ("KVCache", gqa.KVCache, (2, 2), ("capacity",)),
    ("decode_step", lambda x, w, g: gqa.decode_step(x, w, g, gqa.KVCache(2, 2)), ([1.0, 2.0, 3.0], W, 2), ()),
    ("KVCache.append", lambda k, v: gqa.KVCache(2, 2).append(k, v), ([[1.0, 2.0]] * 2, [[1.0, 2.0]] * 2), ()),
    ("Weights", gqa.Weights, (W.w_q, W.w_k, W.w_v), ()),
    ("grouped_attention_backward", gqa.grouped_attention_backward, (Q, K, V, [[[1.0]]] * 4), ("causal",)),
    ("layer_backward", gqa.layer_backward, ([[1.0, 2.0, 3.0]], W, 2, [[1.0, 2.0, 3.0]]), ("causal",)),
]


class Fuzz(unittest.TestCase):

    def test_malformed_calls_keep_the_promise(self):
        rng = random.Random("fuzz:0")
        # The calls' own CPU time (process_time), which other processes on the machine do
        # not stretch: what a slow refusal would cost.
        unnamed, slow, start = [], [], time.process_time()
        for trial in range(1500):
            name, fn, valid, keywords = CALLS[trial % len(CALLS)]
            # Each argument valid or junk, at even odds: a call is malformed in one place or many.
            args = [a if rng.random() < 0.5 else rng.choice(JUNK + [2, 4, 1]) for a in valid]
            kwargs = {k: rng.choice(JUNK + [True, False, 2]) for k in keywords
                      if k == "seed" or rng.random() < 0.7}
            began = time.process_time()
            try:
                fn(*args, **kwargs)
            except (gqa.GQAError, TypeError) as err:
                # A record is a plain NamedTuple: wrong fields are Python's own TypeError.
                record = isinstance(fn, type) and issubclass(fn, tuple)
                if not record and not str(err).startswith((f"{name}:", f"{name}(")):
                    unnamed.append(f"{name}: {type(err).__name__}: {err}")
            except Exception as err:            # anything else breaks the promise
                self.fail(f"{name}{tuple(args)} {kwargs} raised {type(err).__name__}: {err}")
            if time.process_time() - began > 0.5:   # a refusal is instant; the valid calls are tiny
                slow.append(f"{name}{tuple(args)} {kwargs}")
        self.assertEqual(unnamed, [])
        self.assertEqual(slow, [])
        self.assertLess(time.process_time() - start, 10.0)    # no call hangs (two seconds, with room)

    def test_sizes_that_could_only_hang_or_exhaust_memory_are_refused_at_once(self):
        start = time.process_time()
        cases = [(gqa.method_name, (10 ** 12, 7), r"g=7 does not divide h=1000000000000; .*\(169 in all\)"),
                 (gqa.kv_head, (0, 2 ** 63, 3), r"h must be at most 1,000,000,000,000"),
                 (gqa.decode_traffic, (1, 10 ** 12, 7, 1, 1), r"does not divide"),
                 (gqa.valid_g, (2 ** 61 - 1,), r"must be at most"),
                 (gqa.KVCache, (10 ** 7, 1), r"g must be at most 65,536"),
                 (lambda: gqa.KVCache(64, 128, capacity=10 ** 6), (),
                  r"must be at most the 100,000,000 one call may allocate; got g=64, capacity=1000000, d=128"),
                 (gqa.init_weights, (10 ** 4, 10 ** 3, 10 ** 2),
                  r"must be at most the 100,000,000 floats one call may allocate; got h=10000, d_model=1000, d=100")]
        for fn, args, message in cases:
            kwargs = {"seed": 0} if fn is gqa.init_weights else {}
            with self.assertRaisesRegex(gqa.GQAError, message):
                fn(*args, **kwargs)
        self.assertLess(time.process_time() - start, 1.0)

    def test_numerics_that_the_docs_promise(self):
        d = gqa.output_difference([[1.0, math.nan]], [[1.0, 1.0]])       # NaN wherever it is
        self.assertTrue(all(math.isnan(x) for x in d))
        self.assertEqual(gqa.output_difference([[1e308] * 2], [[-1e308] * 2]).rel_l2, 2.0)
        with self.assertRaisesRegex(TypeError, r"single_head_attention: causal must be True or False"):
            gqa.single_head_attention([[1.0]], [[1.0]], [[1.0]], causal="no")
        with self.assertRaisesRegex(gqa.GQAError, r"layer: x row 0 holds an int beyond the largest float"):
            gqa.layer([[10 ** 400, 1.0, 1.0]], W, 2)
        for bad in ([[1.0, "x"]], [[1.0, None]], [[True, 1.0]], [[1 + 2j, 1.0]]):
            with self.assertRaisesRegex(TypeError, r"single_head_attention: q row 0 holds"):
                gqa.single_head_attention(bad, [[1.0, 1.0]], [[1.0]])

    def test_the_promises_the_grader_grades(self):
        # output_difference scales before it squares: worked by hand, a = (1, 2) s, b = (1, 1) s
        # gives |a - b| / |b| = 1 / sqrt(2) and a . b / (|a| |b|) = 3 / sqrt(10), whatever s is.
        for s in (1e200, 1e-200, 1.0):
            d = gqa.output_difference([[s, 2 * s]], [[s, s]])
            self.assertEqual(d.max_abs, s)
            self.assertAlmostEqual(d.rel_l2, 1 / math.sqrt(2), places=15)
            self.assertAlmostEqual(d.cosine, 3 / math.sqrt(10), places=15)
        self.assertEqual(gqa.fold_kv_mean([[[1e308, -1e308]], [[1e308, -1e308]]], 1), [[[1e308, -1e308]]])
        self.assertEqual(gqa.fold_weights(gqa.Weights([[[1.0]]] * 2, [[[1e308]]] * 2, [[[-1e308]]] * 2,
                                                      [[[1.0]]] * 2), 1).w_k, [[[1e308]]])
        with self.assertRaisesRegex(gqa.GQAError, r"output_difference: a holds an int beyond the largest float"):
            gqa.output_difference([[10 ** 400]], [[1.0]])
        ragged = [(gqa.single_head_attention, ([[1.0], [1.0, 2.0]], [[1.0]], [[1.0]])),
                  (gqa.fold_kv_mean, ([[[1.0]], [[1.0, 2.0]]], 1)),
                  (gqa.grouped_attention, ([[[1.0]]] * 2, [[[1.0], [1.0, 2.0]]], [[[1.0], [1.0]]])),
                  (gqa.layer, ([[1.0] * 3, [1.0] * 2], W, 2)),
                  (gqa.layer_backward, ([[1.0] * 3], W, 2, [[1.0] * 2]))]
        for fn, args in ragged:
            with self.assertRaisesRegex(gqa.GQAError, rf"{fn.__name__}: .*(ragged rows|values)"):
                fn(*args)
        with gqa.count_multiplies() as outer:                  # a nested tally adds to the outer one
            gqa.single_head_attention([[1.0, 2.0]], [[1.0, 2.0]], [[1.0]])
            with gqa.count_multiplies() as inner:
                gqa.single_head_attention([[1.0, 2.0]] * 3, [[1.0, 2.0]], [[1.0]])
        self.assertEqual((inner.scores, outer.scores, outer.weighted_sum), (6, 8, 4))

    def test_sizes_past_one_calls_allocation_are_refused_at_once(self):
        start = time.process_time()
        for fn, args, h in ((gqa.repeat_kv, ([[[1.0]]], 10 ** 9), 10 ** 9),
                            (gqa.repeat_kv, ([[[1.0]]], 10 ** 12), 10 ** 12), (gqa.group_heads, (10 ** 9, 1), 10 ** 9)):
            with self.assertRaisesRegex(gqa.GQAError, rf"{fn.__name__}: h must be at most the "
                                        rf"100,000,000 items one call may allocate; got h={h}$"):
                fn(*args)
        self.assertLess(time.process_time() - start, 1.0)

    def test_a_failing_decode_step_leaves_the_cache_as_it_was(self):
        cache = gqa.KVCache(2, 2, capacity=1)
        p = gqa.prepare_weights(W, 2)
        gqa.decode_step([1.0, 2.0, 3.0], p, 2, cache)
        before = (len(cache), [list(a) for a in cache.k + cache.v])
        with self.assertRaises(TypeError):
            gqa.decode_step([1.0, "x", 3.0], p, 2, cache)
        self.assertEqual((len(cache), [list(a) for a in cache.k + cache.v]), before)
        gqa.decode_step([0.5, 0.5, 0.5], p, 2, cache)       # and it can grow again
        self.assertEqual(len(cache), 2)

    def test_the_cache_shape_cannot_be_changed_after_it_is_made(self):
        cache = gqa.KVCache(2, 3)
        with self.assertRaises(AttributeError):
            cache.d = 0
        with self.assertRaisesRegex(TypeError, r"KVCache.append: k_rows head 0 must be a list of floats, not bytes"):
            cache.append([b"\0" * 8] * 2, [[1.0] * 3] * 2)
        with self.assertRaisesRegex(TypeError, r"KVCache.append: k_rows head 0 must be a list of floats, not dict"):
            cache.append([{1: 2, 3: 4, 5: 6}] * 2, [[1.0] * 3] * 2)
        self.assertEqual((len(cache), cache.elements), (0, 0))


if __name__ == "__main__":
    unittest.main()
