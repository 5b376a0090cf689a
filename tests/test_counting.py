"""Counters and decoding: closed forms checked against counts taken while running; and the
grader's check of count_multiplies, which a tally without the work it counts fails
(RealWork, a graded run)."""

from __future__ import annotations

import sys
import unittest
from array import array

import gqa
from gqa_grader.expected import reference as ref
from gqa_grader.expected.reference import rand_tensor
from tests.helpers import CloseMixin, early, heavy, new_rng, random_case, start_early
from tests.sealed_support import SOURCE, grade_source, in_each


class ClosedForms(unittest.TestCase):

    def test_kv_cache_elements_by_hand(self):
        # Llama-2-70B: 80 layers, 8 kv heads, head dim 128: 163,840 numbers per token.
        self.assertEqual(gqa.kv_cache_elements(80, 8, 1, 128), 163840)
        self.assertEqual(gqa.kv_cache_elements(80, 8, 4096, 128, batch=2), 163840 * 4096 * 2)
        self.assertEqual(gqa.kv_cache_elements(1, 1, 0, 1), 0)

    def test_attention_multiplies_by_hand(self):
        m = gqa.attention_multiplies(n=3, h=4, g=2, d=5, d_model=7)
        self.assertEqual(m, gqa.Multiplies(q_proj=3 * 7 * 20, k_proj=3 * 7 * 10, v_proj=3 * 7 * 10,
                                           scores=4 * 9 * 5, weighted_sum=4 * 9 * 5,
                                           o_proj=3 * 20 * 7, total=420 + 210 + 210 + 180 + 180 + 420))

    def test_causal_attention_multiplies_by_hand_and_as_tallied(self):
        # n = 3 causal: query 0 sees 1 key, query 1 sees 2, query 2 sees 3: 6 pairs.
        m = gqa.attention_multiplies(n=3, h=4, g=2, d=5, d_model=7, causal=True)
        self.assertEqual((m.scores, m.weighted_sum, m.k_proj), (4 * 6 * 5, 4 * 6 * 5, 3 * 7 * 10))
        rng = new_rng(21)
        for trial in range(10):
            h, g, n, _, d, _ = random_case(rng, max_h=8)
            w = gqa.init_weights(h, 5, d, seed=trial)
            with gqa.count_multiplies() as tally:
                gqa.layer(rand_tensor(rng, n, 5), w, g, causal=True)
            self.assertEqual(tally.multiplies(), gqa.attention_multiplies(n, h, g, d, 5, causal=True))
        with self.assertRaisesRegex(TypeError, r"attention_multiplies: causal must be True or False"):
            gqa.attention_multiplies(3, 4, 2, 5, 7, causal="no")

    def test_block_multiplies_by_hand(self):
        # Llama-2-7B, per token over 4,096 positions: q, k, v, o 4 x 4096^2, a SwiGLU MLP
        # 3 x 4096 x 11008, and the causal body 2 x 32 x 128 x (4096 x 4097 / 2) / 4096.
        b = gqa.block_multiplies(4096, 32, 32, 128, 4096, 11008)
        per_token = [x // 4096 for x in b]
        self.assertEqual(per_token, [2 * 4096 ** 2, 2 * 4096 ** 2, 32 * 128 * 4097, 3 * 4096 * 11008,
                                     4 * 4096 ** 2 + 32 * 128 * 4097 + 3 * 4096 * 11008])
        self.assertAlmostEqual(b.k_v_proj / b.total, 0.1531, places=4)
        gqa8 = gqa.block_multiplies(4096, 32, 8, 128, 4096, 11008)
        self.assertAlmostEqual(1 - gqa8.total / b.total, 0.1148, places=4)
        full = gqa.block_multiplies(2, 1, 1, 1, 1, 1, mlp_matrices=2, causal=False)
        self.assertEqual(full, gqa.BlockMultiplies(4, 4, 8, 4, 20))

    def test_only_the_kv_projections_depend_on_g(self):
        for h in (1, 6, 8, 12):
            rows = [gqa.attention_multiplies(9, h, g, 4, 16) for g in ref.ref_valid_g(h)]
            for term in ("q_proj", "scores", "weighted_sum", "o_proj"):
                self.assertEqual(len({getattr(r, term) for r in rows}), 1, term)
            for a, b in zip(rows, rows[1:]):
                self.assertLess(a.k_proj, b.k_proj)

    def test_brute_force_count_equals_formula(self):
        # An instrumented reference counts its own multiplications one by one.
        rng = new_rng(20)
        for trial in range(15):
            h, g, n, _, d, _ = random_case(rng, max_h=6)
            d_model = rng.randint(1, 5)
            w = gqa.init_weights(h, d_model, d, seed=trial)
            counter = ref.Counter()
            ref.ref_layer(rand_tensor(rng, n, d_model), *w, g, counter=counter)
            expected = gqa.attention_multiplies(n, h, g, d, d_model)._asdict()
            del expected["total"]
            self.assertEqual(counter.counts, expected, (h, g, n, d, d_model))

    def test_tables(self):
        cache = gqa.cache_table(8, layers=2, length=10, head_dim=4)
        self.assertEqual([(r.method, r.kv_heads, r.group_size) for r in cache],
                         [("MQA", 1, 8), ("GQA", 2, 4), ("GQA", 4, 2), ("MHA", 8, 1)])
        self.assertEqual([r.elements for r in cache], [160, 320, 640, 1280])
        self.assertEqual([r.ratio for r in cache], [0.125, 0.25, 0.5, 1.0])
        mult = gqa.multiplies_table(n=10, h=8, d=4, d_model=32)
        self.assertEqual([r.kv_heads for r in mult], [1, 2, 4, 8])
        self.assertEqual([r.ratio.v_proj for r in mult], [0.125, 0.25, 0.5, 1.0])
        self.assertEqual({r.ratio.scores for r in mult}, {1.0})
        self.assertEqual(mult[0].counts, gqa.attention_multiplies(10, 8, 1, 4, 32))

    def test_bad_sizes(self):
        with self.assertRaisesRegex(gqa.GQAError, r"kv_cache_elements: length must be at least 0; got length=-1"):
            gqa.kv_cache_elements(1, 1, -1, 1)
        with self.assertRaisesRegex(gqa.GQAError, r"kv_cache_elements: kv_heads must be positive"):
            gqa.kv_cache_elements(1, 0, 1, 1)
        with self.assertRaisesRegex(TypeError, r"kv_cache_elements: head_dim must be an int, not float"):
            gqa.kv_cache_elements(1, 1, 1, 128.0)
        with self.assertRaisesRegex(TypeError, r"kv_cache_elements: batch must be an int, not bool"):
            gqa.kv_cache_elements(1, 1, 1, 1, batch=True)
        with self.assertRaisesRegex(gqa.GQAError, r"attention_multiplies: g=3 does not divide h=8"):
            gqa.attention_multiplies(1, 8, 3, 1, 1)
        with self.assertRaisesRegex(gqa.GQAError, r"attention_multiplies: n must be at least 0; got n=-4"):
            gqa.attention_multiplies(-4, 8, 2, 1, 1)
        with self.assertRaisesRegex(gqa.GQAError, r"decode_traffic: g=5 does not divide h=6"):
            gqa.decode_traffic(3, 6, 5, 1, 1)
        with self.assertRaisesRegex(TypeError, r"cache_table: "):
            gqa.cache_table(8, layers=1, length="4096", head_dim=128)


class Tallied(unittest.TestCase):

    def test_layer_tally_equals_formula(self):
        rng = new_rng(21)
        for trial in range(60):
            h, g, n, _, d, _ = random_case(rng, max_h=16)
            d_model = rng.randint(1, 9)
            w = gqa.init_weights(h, d_model, d, seed=trial)
            with gqa.count_multiplies() as tally:
                gqa.layer(rand_tensor(rng, n, d_model), w, g)
            self.assertEqual(tally.multiplies(), gqa.attention_multiplies(n, h, g, d, d_model),
                             (h, g, n, d, d_model))

    def test_causal_layer_skips_masked_products(self):
        # Causal: query i of n sees i + 1 keys, so scores are h * d * n (n + 1) / 2.
        w = gqa.init_weights(h=4, d_model=6, d=3, seed=0)
        with gqa.count_multiplies() as tally:
            gqa.layer(rand_tensor(new_rng(22), 5, 6), w, 2, causal=True)
        self.assertEqual(tally.scores, 4 * 3 * (1 + 2 + 3 + 4 + 5))
        self.assertEqual(tally.weighted_sum, tally.scores)

    def test_no_tally_outside_the_block_and_nesting_adds_up(self):
        w = gqa.init_weights(h=2, d_model=2, d=2, seed=0)
        x = [[1.0, 2.0]]
        with gqa.count_multiplies() as outer:
            gqa.layer(x, w, 1)
            with gqa.count_multiplies() as inner:
                gqa.layer(x, w, 1)
            self.assertEqual(inner.multiplies(), gqa.attention_multiplies(1, 2, 1, 2, 2))
        gqa.layer(x, w, 1)
        self.assertEqual(outer.multiplies().total, 2 * inner.multiplies().total)


class Cache(unittest.TestCase):

    def test_elements_held_equal_the_formula(self):
        for g, d, length in ((1, 4, 7), (4, 3, 5), (8, 16, 1)):
            cache = gqa.KVCache(g, d)
            for t in range(length):
                cache.append([[float(t)] * d] * g, [[-float(t)] * d] * g)
            held = sum(len(a) for a in cache.k) + sum(len(a) for a in cache.v)
            self.assertEqual(held, gqa.kv_cache_elements(1, g, length, d))
            self.assertEqual(cache.elements, held)
            self.assertEqual(cache.nbytes, 8 * held)
            self.assertEqual(len(cache), length)

    def test_a_cache_made_with_its_capacity_holds_8_bytes_per_element(self):
        # sys.getsizeof counts an array's allocated items; an empty array's
        # size is its header.  Appending would over-allocate.
        header = sys.getsizeof(array("d"))
        for g, d, n in ((1, 4, 64), (3, 5, 17), (2, 32, 1024)):
            cache = gqa.KVCache(g, d, capacity=n)
            for t in range(n):
                cache.append([[float(t)] * d] * g, [[-float(t)] * d] * g)
            self.assertEqual((len(cache), cache.capacity), (n, n))
            for a in cache.k + cache.v:
                self.assertEqual(sys.getsizeof(a) - header, 8 * n * d, (g, d, n))
            self.assertEqual(cache.elements, 2 * g * n * d)
            self.assertEqual(list(cache.v[g - 1][-d:]), [-float(n - 1)] * d)

    def test_a_cache_grows_past_its_capacity_and_holds_only_what_was_appended(self):
        cache = gqa.KVCache(2, 2, capacity=3)
        self.assertEqual((len(cache), cache.elements, cache.nbytes), (0, 0, 0))
        rows = [([[t, t + 0.5], [-t, 1.0]], [[2.0 * t, 0.0], [t, t]]) for t in range(5)]
        for k, v in rows:
            cache.append(k, v)
        self.assertEqual((len(cache), cache.elements, cache.nbytes), (5, 40, 320))
        self.assertEqual(list(cache.k[0]), [x for k, _ in rows for x in k[0]])
        self.assertEqual(list(cache.v[1]), [x for _, v in rows for x in v[1]])
        half = gqa.KVCache(1, 2, capacity=4)
        half.append([[1.0, 2.0]], [[3.0, 4.0]])
        self.assertEqual((len(half), half.elements, half.capacity), (1, 4, 4))
        with self.assertRaisesRegex(gqa.GQAError, r"KVCache: capacity must be at least 0; got capacity=-1"):
            gqa.KVCache(1, 2, capacity=-1)

    def test_rows_are_stored_in_order(self):
        cache = gqa.KVCache(g=2, d=2)
        cache.append([[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]])
        cache.append([[9.0, 10.0], [11.0, 12.0]], [[13.0, 14.0], [15.0, 16.0]])
        self.assertEqual(list(cache.k[1]), [3.0, 4.0, 11.0, 12.0])
        self.assertEqual(list(cache.v[0]), [5.0, 6.0, 13.0, 14.0])

    def test_rejects_wrong_shapes_and_stores_nothing(self):
        cache = gqa.KVCache(g=2, d=3)
        with self.assertRaisesRegex(gqa.GQAError, r"KVCache.append: k_rows has 1 heads; this cache holds g=2"):
            cache.append([[1.0] * 3], [[1.0] * 3] * 2)
        with self.assertRaisesRegex(gqa.GQAError, r"KVCache.append: v_rows head 1 has 2 values; this cache holds d=3"):
            cache.append([[1.0] * 3] * 2, [[1.0] * 3, [1.0] * 2])
        with self.assertRaises(TypeError):
            cache.append([[1.0] * 3] * 2, [[1.0] * 3, ["x"] * 3])
        self.assertEqual((len(cache), cache.elements), (0, 0))
        with self.assertRaisesRegex(gqa.GQAError, r"KVCache: g must be positive; got g=0"):
            gqa.KVCache(0, 3)


class Decoding(CloseMixin, unittest.TestCase):

    def test_decoding_equals_causal_layer_for_every_g(self):
        rng = new_rng(23)
        for h in (1, 2, 6, 8):
            for g in ref.ref_valid_g(h):
                d_model, d, n = rng.randint(2, 9), rng.randint(1, 5), rng.randint(1, 8)
                w = gqa.init_weights(h, d_model, d, seed=h * 10 + g)
                x = rand_tensor(rng, n, d_model)
                cache = gqa.KVCache(g, d)
                steps = [gqa.decode_step(x_t, w, g, cache) for x_t in x]
                self.assertClose(steps, gqa.layer(x, w, g, causal=True), rel=1e-12, abs_tol=1e-14,
                                 msg=str((h, g)))
                self.assertClose(steps, ref.ref_layer(x, *w, g, causal=True), rel=1e-9, abs_tol=1e-12)
                self.assertEqual(cache.elements, gqa.kv_cache_elements(1, g, n, d))

    def test_prepared_weights_and_a_sized_cache_decode_exactly_as_the_causal_layer(self):
        # The same kernel reads the cache through views and layer() through
        # lists, in the same order: equal to the last bit, not just close.
        rng = new_rng(25)
        for h in (1, 4, 6):
            for g in ref.ref_valid_g(h):
                d_model, d, n = rng.randint(2, 9), rng.randint(1, 5), rng.randint(1, 8)
                w = gqa.init_weights(h, d_model, d, seed=h + 100 * g)
                x = rand_tensor(rng, n, d_model)
                prepared = gqa.prepare_weights(w, g)
                for capacity in (0, n // 2, n):
                    cache = gqa.KVCache(g, d, capacity=capacity)
                    steps = [gqa.decode_step(x_t, prepared, g, cache) for x_t in x]
                    self.assertTrue(steps == gqa.layer(x, w, g, causal=True), (h, g, capacity))
                raw = gqa.KVCache(g, d)
                self.assertTrue([gqa.decode_step(x_t, w, g, raw) for x_t in x] == steps)

    def test_decode_traffic_equals_what_decode_step_reads(self):
        rng = new_rng(24)
        for trial in range(30):
            h, g, n, _, d, _ = random_case(rng, max_h=12)
            n = rng.randint(1, 9)
            d_model = rng.randint(1, 6)
            w = gqa.fold_weights(gqa.init_weights(h, d_model, d, seed=trial), g)
            cache = gqa.KVCache(g, d)
            with gqa.count_multiplies() as tally:
                for x_t in rand_tensor(rng, n, d_model):
                    gqa.decode_step(x_t, w, g, cache)
            traffic = gqa.decode_traffic(n, h, g, d, d_model)
            self.assertEqual(tally.cache_reads, traffic.cache_reads, (h, g, n, d))
            self.assertEqual(tally.weight_reads, traffic.weight_reads)
            self.assertEqual(tally.multiplies().total, traffic.multiplies)

    def test_decode_traffic_by_hand(self):
        # Three steps read caches of 1, 2, 3 positions: 6 positions x 2 (K, V) x g x d.
        t = gqa.decode_traffic(3, h=8, g=2, d=4, d_model=32, batch=5)
        self.assertEqual(t.cache_reads, 6 * 2 * 2 * 4 * 5)
        self.assertEqual(t.weight_reads, 3 * 32 * 4 * (8 + 2 + 2 + 8))
        mha = gqa.decode_traffic(3, h=8, g=8, d=4, d_model=32, batch=5)
        self.assertEqual(mha.cache_reads, 4 * t.cache_reads)
        self.assertEqual(t.ratio, (t.cache_reads + t.weight_reads) / t.multiplies)

    def test_mqa_ratio_falls_with_batch_mha_ratio_does_not(self):
        # Shazeer 2019: batching shares the weight reads, but every sequence
        # has its own cache, so MHA decoding stays memory-bound.
        big = dict(n=2048, h=16, d=64, d_model=1024)
        mha = [gqa.decode_traffic(g=16, batch=b, **big).ratio for b in (1, 256)]
        mqa = [gqa.decode_traffic(g=1, batch=b, **big).ratio for b in (1, 256)]
        self.assertGreater(mha[1], 0.25)          # still an element read per 4 multiplies
        self.assertLess(mqa[1], 0.05)
        self.assertGreater(mqa[0] / mqa[1], 10)
        self.assertLess(mha[0] / mha[1], 4)

    def test_decode_step_rejects_a_cache_of_the_wrong_shape(self):
        w = gqa.init_weights(h=4, d_model=3, d=2, seed=0)
        with self.assertRaisesRegex(gqa.GQAError, r"decode_step: the cache must hold the step's g key/value "
                                    r"heads; got a cache of g=4 for g=2$"):
            gqa.decode_step([1.0] * 3, w, 2, gqa.KVCache(4, 2))
        with self.assertRaisesRegex(gqa.GQAError, r"decode_step: the cache's heads must be as wide as the "
                                    r"weights' head dim; got a cache of d=3 for weights of d=2$"):
            gqa.decode_step([1.0] * 3, w, 2, gqa.KVCache(2, 3))
        with self.assertRaisesRegex(gqa.GQAError, r"decode_step: x_t has 2 values; the weights need d_model=3"):
            gqa.decode_step([1.0] * 2, w, 2, gqa.KVCache(2, 2))
        with self.assertRaisesRegex(TypeError, r"decode_step: cache must be a KVCache"):
            gqa.decode_step([1.0] * 3, w, 2, [])

    def test_cache_can_grow_after_a_step(self):
        cache = gqa.KVCache(1, 2)
        w = gqa.init_weights(h=2, d_model=2, d=2, seed=0)
        gqa.decode_step([1.0, 0.0], w, 1, cache)
        cache.append([[0.0, 0.0]], [[0.0, 0.0]])      # no view of the cache is left behind
        self.assertEqual(len(cache), 2)


@heavy
class RealWork(unittest.TestCase):
    """A tally is worth something only with the work it counts."""

    EARLY = ("graded",)

    @staticmethod
    def graded():
        """count_multiplies graded for a module whose layer and decode_step count the real work
        (the lab's own runs) and return zeros, and for the lab."""
        source = SOURCE + (
            "\n_real_layer, _real_decode_step = layer, decode_step\n"
            "def layer(x, *a, **k):\n"
            "    y = _real_layer(x, *a, **k)\n"
            "    return [[0.0] * len(r) for r in y]\n"
            "def decode_step(x_t, *a, **k):\n"
            "    return [0.0] * len(_real_decode_step(x_t, *a, **k))\n")
        return in_each([lambda src=src: grade_source(src, only=["count_multiplies"], cases=0, fail_fast=True)
                        for src in (source, SOURCE)])

    def test_a_tally_with_fake_values_fails_its_step(self):
        # The counts are the real ones (the lab's own layer runs), the values zeros.
        fake, lab = early(self.graded)
        self.assertEqual(fake["count_multiplies"]["status"], "failed")
        self.assertIn("the value layer() returned inside count_multiplies()",
                      fake["count_multiplies"]["message"])
        # The check does not fail the lab itself: its step passes.
        self.assertEqual(lab["count_multiplies"]["status"], "passed")


def load_tests(loader, tests, pattern):
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


if __name__ == "__main__":
    unittest.main()
