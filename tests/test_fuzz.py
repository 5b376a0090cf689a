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
        gqa.prepare_weights(W, 2), [1.0, 2.0, 3.0], [[[1.0, 2.0]]] * 4]

CALLS = [  # (name, function, how many positional arguments, keyword names)
    ("valid_g", gqa.valid_g, 1, ()),
    ("method_name", gqa.method_name, 2, ()),
    ("kv_head", gqa.kv_head, 3, ()),
    ("group_heads", gqa.group_heads, 2, ()),
    ("fold_kv_mean", gqa.fold_kv_mean, 2, ()),
    ("repeat_kv", gqa.repeat_kv, 2, ()),
    ("single_head_attention", gqa.single_head_attention, 3, ("causal",)),
    ("attention", gqa.attention, 4, ("causal",)),
    ("grouped_attention", gqa.grouped_attention, 3, ("causal",)),
    ("init_weights", gqa.init_weights, 3, ("seed",)),
    ("fold_weights", gqa.fold_weights, 2, ()),
    ("prepare_weights", gqa.prepare_weights, 2, ()),
    ("layer", gqa.layer, 3, ("causal",)),
    ("output_difference", gqa.output_difference, 2, ()),
    ("kv_cache_elements", gqa.kv_cache_elements, 4, ("batch",)),
    ("attention_multiplies", gqa.attention_multiplies, 5, ("causal",)),
    ("block_multiplies", gqa.block_multiplies, 6, ("mlp_matrices",)),
    ("cache_table", lambda h, layers, length, head_dim: gqa.cache_table(
        h, layers=layers, length=length, head_dim=head_dim), 4, ()),
    ("multiplies_table", gqa.multiplies_table, 4, ("causal",)),
    ("decode_traffic", gqa.decode_traffic, 5, ("batch",)),
    ("KVCache", gqa.KVCache, 2, ("capacity",)),
    ("decode_step", lambda x, w, g: gqa.decode_step(x, w, g, gqa.KVCache(2, 2)), 3, ()),
    ("KVCache.append", lambda k, v: gqa.KVCache(2, 2).append(k, v), 2, ()),
]


class Fuzz(unittest.TestCase):

    def test_malformed_calls_keep_the_promise(self):
        rng = random.Random("fuzz:0")
        unnamed, slow, start = [], [], time.perf_counter()
        for trial in range(1500):
            name, fn, count, keywords = CALLS[trial % len(CALLS)]
            args = [rng.choice(JUNK + [2, 4, 1]) for _ in range(count)]
            kwargs = {k: rng.choice(JUNK + [True, False, 2]) for k in keywords
                      if k == "seed" or rng.random() < 0.7}
            began = time.perf_counter()
            try:
                fn(*args, **kwargs)
            except (gqa.GQAError, TypeError) as err:
                if not str(err).startswith((f"{name}:", f"{name}(")):
                    unnamed.append(f"{name}: {type(err).__name__}: {err}")
            except Exception as err:            # anything else breaks the promise
                self.fail(f"{name}{tuple(args)} {kwargs} raised {type(err).__name__}: {err}")
            if time.perf_counter() - began > 0.5:   # a refusal is instant; the valid calls are tiny
                slow.append(f"{name}{tuple(args)} {kwargs}")
        self.assertEqual(unnamed, [])
        self.assertEqual(slow, [])
        self.assertLess(time.perf_counter() - start, 10.0)    # no call hangs (two seconds, with room)

    def test_sizes_that_could_only_hang_or_exhaust_memory_are_refused_at_once(self):
        start = time.perf_counter()
        cases = [(gqa.method_name, (10 ** 12, 7), r"g=7 does not divide h=1000000000000; .*\(169 in all\)"),
                 (gqa.kv_head, (0, 2 ** 63, 3), r"h must be at most 1,000,000,000,000"),
                 (gqa.decode_traffic, (1, 10 ** 12, 7, 1, 1), r"does not divide"),
                 (gqa.valid_g, (2 ** 61 - 1,), r"must be at most"),
                 (gqa.KVCache, (10 ** 7, 1), r"g must be at most 65,536"),
                 (lambda: gqa.KVCache(64, 128, capacity=10 ** 6), (), r"more than the 100,000,000 floats"),
                 (gqa.init_weights, (10 ** 4, 10 ** 3, 10 ** 2), r"more than the 100,000,000 floats")]
        for fn, args, message in cases:
            kwargs = {"seed": 0} if fn is gqa.init_weights else {}
            with self.assertRaisesRegex(gqa.GQAError, message):
                fn(*args, **kwargs)
        self.assertLess(time.perf_counter() - start, 1.0)

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
