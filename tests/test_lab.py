"""The lab module, step by step: grouping, folding, repeating, attending."""

from __future__ import annotations

import doctest
import math
import pydoc
import random
import re
import unittest

import gqa
from gqa_grader.expected import reference as ref
from gqa_grader.steps.manifest import LESSON
from gqa_grader.expected.reference import rand_tensor
from tests.helpers import ROOT, CloseMixin, flat, new_rng, random_case, random_layer_case


def load_tests(loader, tests, ignore):
    """Run the module's doctests as tests too."""
    tests.addTests(doctest.DocTestSuite(gqa))
    return tests


class Grouping(unittest.TestCase):

    def test_group_heads_by_hand(self):
        self.assertEqual(gqa.group_heads(8, 2), [[0, 1, 2, 3], [4, 5, 6, 7]])
        self.assertEqual(gqa.group_heads(6, 3), [[0, 1], [2, 3], [4, 5]])
        self.assertEqual(gqa.group_heads(5, 1), [[0, 1, 2, 3, 4]])
        self.assertEqual(gqa.group_heads(3, 3), [[0], [1], [2]])

    def test_kv_head_is_repeat_interleave_of_range_g(self):
        # torch.repeat_interleave(arange(g), h // g), built by hand.
        for h in range(1, 17):
            for g in ref.ref_valid_g(h):
                expected = [j for j in range(g) for _ in range(h // g)]
                self.assertEqual([gqa.kv_head(i, h, g) for i in range(h)], expected, (h, g))
                self.assertEqual(gqa.group_heads(h, g),
                                 [[i for i in range(h) if expected[i] == j] for j in range(g)])

    def test_contiguous_not_strided(self):
        self.assertEqual([gqa.kv_head(i, 6, 3) for i in range(6)], [0, 0, 1, 1, 2, 2])
        self.assertNotEqual([gqa.kv_head(i, 6, 3) for i in range(6)], [i % 3 for i in range(6)])

    def test_valid_g_is_every_divisor(self):
        for h in range(1, 300):
            self.assertEqual(gqa.valid_g(h), [g for g in range(1, h + 1) if h % g == 0], h)
        self.assertEqual(gqa.valid_g(2 ** 39), [2 ** i for i in range(40)])
        self.assertEqual(len(gqa.valid_g(10 ** 12)), 13 * 13)     # 2^12 5^12

    def test_valid_g_and_method_name(self):
        self.assertEqual(gqa.valid_g(12), [1, 2, 3, 4, 6, 12])
        self.assertEqual(gqa.valid_g(1), [1])
        self.assertEqual(gqa.valid_g(13), [1, 13])
        self.assertEqual([gqa.method_name(4, g) for g in (1, 2, 4)], ["MQA", "GQA", "MHA"])
        self.assertEqual(gqa.method_name(1, 1), "MHA")


class Folding(CloseMixin, unittest.TestCase):

    def test_by_hand(self):
        kv = [[[1.0, 2.0]], [[3.0, 4.0]], [[10.0, 0.0]], [[20.0, -4.0]]]
        self.assertEqual(gqa.fold_kv_mean(kv, 2), [[[2.0, 3.0]], [[15.0, -2.0]]])
        self.assertEqual(gqa.fold_kv_mean(kv, 1), [[[8.5, 0.5]]])

    def test_against_loops(self):
        rng = new_rng(1)
        for _ in range(40):
            h, g, n, m, d, _ = random_case(rng)
            kv = rand_tensor(rng, h, m, d)
            self.assertClose(gqa.fold_kv_mean(kv, g), ref.ref_fold_kv_mean(kv, g), msg=str((h, g)))

    def test_g_equals_h_returns_equal_values(self):
        rng = new_rng(2)
        kv = rand_tensor(rng, 6, 3, 4)
        folded = gqa.fold_kv_mean(kv, 6)
        self.assertEqual(folded, kv)
        self.assertIsNot(folded[0], kv[0])

    def test_permuting_heads_within_a_group_leaves_the_fold_unchanged(self):
        rng = new_rng(3)
        kv = [[[float(rng.randint(-8, 8)) for _ in range(3)] for _ in range(2)] for _ in range(6)]
        swapped = [kv[1], kv[2], kv[0], kv[4], kv[3], kv[5]]      # within groups of 3
        self.assertEqual(gqa.fold_kv_mean(kv, 2), gqa.fold_kv_mean(swapped, 2))

    def test_folds_weights_too(self):
        w = gqa.init_weights(h=4, d_model=5, d=3, seed=0)
        folded = gqa.fold_kv_mean(w.w_k, 2)
        self.assertEqual((len(folded), len(folded[0]), len(folded[0][0])), (2, 5, 3))
        self.assertClose(folded, ref.ref_fold_kv_mean(w.w_k, 2))


class Repeating(unittest.TestCase):

    def test_head_j_is_head_kv_head_j(self):
        kv = [[[float(j)]] for j in range(3)]
        out = gqa.repeat_kv(kv, 6)
        self.assertEqual(out, [[[0.0]], [[0.0]], [[1.0]], [[1.0]], [[2.0]], [[2.0]]])

    def test_not_tile(self):
        kv = [[[0.0]], [[1.0]]]
        self.assertNotEqual(gqa.repeat_kv(kv, 4), kv * 2)

    def test_rows_are_shared_not_copied(self):
        kv = [[[1.0]], [[2.0]]]
        out = gqa.repeat_kv(kv, 4)
        self.assertIs(out[0], kv[0])
        self.assertIs(out[1], kv[0])
        self.assertIs(out[3], kv[1])

    def test_equals_reference_copy(self):
        rng = new_rng(4)
        for _ in range(20):
            h, g, _, m, d, _ = random_case(rng)
            kv = rand_tensor(rng, g, m, d)
            self.assertEqual(gqa.repeat_kv(kv, h), ref.ref_repeat_kv(kv, h))


class SingleHead(CloseMixin, unittest.TestCase):

    def test_by_hand(self):
        # Equal scores: the output is the mean of the values.
        self.assertEqual(gqa.single_head_attention([[1.0, 0.0]], [[0.0, 1.0], [0.0, 2.0]],
                                                   [[1.0, 10.0], [3.0, 20.0]]), [[2.0, 15.0]])
        # d = 4, scores 0 and 2 * sqrt(4) / sqrt(4) = 2: weights 1 / (1 + e^2) and e^2 / (1 + e^2).
        got = gqa.single_head_attention([[1.0, 1.0, 1.0, 1.0]], [[0.0] * 4, [1.0, 1.0, 1.0, 1.0]],
                                        [[0.0], [1.0]])
        self.assertAlmostEqual(got[0][0], math.e ** 2 / (1 + math.e ** 2), places=15)

    def test_scale_is_one_over_sqrt_d(self):
        # Scores 4 / sqrt(4) = 2 and 0: p = sigmoid(2).
        got = gqa.single_head_attention([[2.0, 0.0, 0.0, 0.0]], [[2.0, 0.0, 0.0, 0.0], [0.0] * 4],
                                        [[1.0], [0.0]])
        self.assertAlmostEqual(got[0][0], 1 / (1 + math.exp(-2.0)), places=15)

    def test_against_loops(self):
        rng = new_rng(5)
        for _ in range(60):
            _, _, n, m, d, dv = random_case(rng)
            q, k, v = rand_tensor(rng, n, d), rand_tensor(rng, m, d), rand_tensor(rng, m, dv)
            for causal in (False, True):
                self.assertClose(gqa.single_head_attention(q, k, v, causal=causal),
                                 ref.ref_single_head_attention(q, k, v, causal), msg=str((n, m, d, causal)))

    def test_causal_mask_by_hand(self):
        # Three queries are the last three of four positions; all scores 0.
        v = [[1.0], [2.0], [3.0], [4.0]]
        got = gqa.single_head_attention([[0.0]] * 3, [[0.0]] * 4, v, causal=True)
        self.assertEqual(got, [[1.5], [2.0], [2.5]])

    def test_causal_single_query_sees_every_key(self):
        rng = new_rng(6)
        q, k, v = rand_tensor(rng, 1, 4), rand_tensor(rng, 9, 4), rand_tensor(rng, 9, 3)
        self.assertEqual(gqa.single_head_attention(q, k, v, causal=True),
                         gqa.single_head_attention(q, k, v))

    def test_large_logits_do_not_overflow(self):
        got = gqa.single_head_attention([[1e300]], [[1.0], [-1.0]], [[5.0], [7.0]])
        self.assertEqual(got, [[5.0]])
        got = gqa.single_head_attention([[-1e300]], [[1.0], [-1.0]], [[5.0], [7.0]])
        self.assertEqual(got, [[7.0]])

    def test_nan_propagates_and_an_infinite_score_takes_all_the_weight(self):
        self.assertTrue(math.isnan(gqa.single_head_attention([[math.nan]], [[1.0]], [[1.0]])[0][0]))
        self.assertTrue(math.isnan(gqa.single_head_attention([[1.0]], [[0.0], [math.nan]],
                                                             [[1.0], [2.0]])[0][0]))
        got = gqa.single_head_attention([[1.0]], [[math.inf], [0.0]], [[1.0], [2.0]])
        self.assertEqual(got, [[1.0]])                   # the limit of the softmax
        got = gqa.single_head_attention([[1.0]], [[-math.inf], [0.0]], [[1.0], [2.0]])
        self.assertEqual(got, [[2.0]])

    def test_finite_inputs_whose_scores_overflow(self):
        # 1e308 x 1e308 is beyond the float range: that key takes all the weight.
        self.assertEqual(gqa.single_head_attention([[1e308]], [[1e308]], [[2.0]]), [[2.0]])
        self.assertEqual(gqa.single_head_attention([[1e308]], [[1e308], [1e308]], [[2.0], [4.0]]),
                         [[3.0]])
        self.assertEqual(gqa.fold_kv_mean([[[1e308]], [[1e308]]], 1), [[[1e308]]])

    def test_no_queries(self):
        self.assertEqual(gqa.single_head_attention([], [[1.0]], [[1.0]]), [])


class Unified(CloseMixin, unittest.TestCase):

    def test_g_equals_h_is_mha_bit_for_bit(self):
        rng = new_rng(7)
        for _ in range(80):
            h, _, n, m, d, dv = random_case(rng, max_h=16)
            q, k, v = rand_tensor(rng, h, n, d), rand_tensor(rng, h, m, d), rand_tensor(rng, h, m, dv)
            causal = rng.random() < 0.5
            mha = [gqa.single_head_attention(q[i], k[i], v[i], causal=causal) for i in range(h)]
            self.assertTrue(gqa.attention(q, k, v, h, causal=causal) == mha, (h, n, m, d, causal))

    def test_against_reference_for_every_g(self):
        rng = new_rng(8)
        for _ in range(40):
            h, g, n, m, d, dv = random_case(rng)
            q, k, v = rand_tensor(rng, h, n, d), rand_tensor(rng, h, m, d), rand_tensor(rng, h, m, dv)
            kc = ref.ref_repeat_kv(ref.ref_fold_kv_mean(k, g), h)
            vc = ref.ref_repeat_kv(ref.ref_fold_kv_mean(v, g), h)
            expected = [ref.ref_single_head_attention(q[i], kc[i], vc[i]) for i in range(h)]
            self.assertClose(gqa.attention(q, k, v, g), expected, msg=str((h, g)))

    def test_g_below_h_changes_the_output(self):
        rng = new_rng(9)
        for h in (2, 4, 6, 8):
            q, k, v = rand_tensor(rng, h, 4, 5), rand_tensor(rng, h, 4, 5), rand_tensor(rng, h, 4, 5)
            mha = gqa.attention(q, k, v, h)
            for g in ref.ref_valid_g(h)[:-1]:
                self.assertGreater(gqa.output_difference(gqa.attention(q, k, v, g), mha).max_abs,
                                   1e-6, (h, g))

    def test_mqa_gives_every_query_head_the_same_k_and_v(self):
        rng = new_rng(10)
        h = 4
        q, k, v = rand_tensor(rng, h, 3, 2), rand_tensor(rng, h, 5, 2), rand_tensor(rng, h, 5, 2)
        k_mean = [[sum(k[i][r][c] for i in range(h)) / h for c in range(2)] for r in range(5)]
        v_mean = [[sum(v[i][r][c] for i in range(h)) / h for c in range(2)] for r in range(5)]
        got = gqa.attention(q, k, v, 1)
        for i in range(h):
            self.assertClose(got[i], ref.ref_single_head_attention(q[i], k_mean, v_mean), msg=f"head {i}")

    def test_grouped_equals_repeat_path_bit_for_bit(self):
        rng = new_rng(11)
        for _ in range(60):
            h, g, n, m, d, dv = random_case(rng, max_h=16)
            q, k, v = rand_tensor(rng, h, n, d), rand_tensor(rng, g, m, d), rand_tensor(rng, g, m, dv)
            causal = rng.random() < 0.5
            kr, vr = gqa.repeat_kv(k, h), gqa.repeat_kv(v, h)
            expected = [gqa.single_head_attention(q[i], kr[i], vr[i], causal=causal)
                        for i in range(h)]
            self.assertTrue(gqa.grouped_attention(q, k, v, causal=causal) == expected, (h, g))
            self.assertClose(gqa.grouped_attention(q, k, v, causal=causal),
                             [ref.ref_single_head_attention(q[i], ref.ref_repeat_kv(k, h)[i], ref.ref_repeat_kv(v, h)[i], causal)
                              for i in range(h)])

    def test_grouped_attention_leaves_k_and_v_alone(self):
        rng = new_rng(12)
        q, k, v = rand_tensor(rng, 4, 2, 3), rand_tensor(rng, 2, 2, 3), rand_tensor(rng, 2, 2, 3)
        before = (repr(k), repr(v))
        gqa.grouped_attention(q, k, v)
        self.assertEqual((repr(k), repr(v)), before)


class Layer(CloseMixin, unittest.TestCase):

    def test_init_weights_is_deterministic(self):
        a = gqa.init_weights(h=3, d_model=4, d=2, seed=5)
        self.assertEqual(a, gqa.init_weights(h=3, d_model=4, d=2, seed=5))
        self.assertNotEqual(a, gqa.init_weights(h=3, d_model=4, d=2, seed=6))
        self.assertEqual([len(a.w_k), len(a.w_k[0]), len(a.w_k[0][0])], [3, 4, 2])
        self.assertEqual([len(a.w_o), len(a.w_o[0]), len(a.w_o[0][0])], [3, 2, 4])

    def test_init_weights_scale(self):
        w = gqa.init_weights(h=4, d_model=64, d=16, seed=0)
        values = flat(w.w_q)
        variance = sum(x * x for x in values) / len(values)
        self.assertAlmostEqual(variance * 64, 1.0, delta=0.1)
        bound = math.sqrt(3 / 64)
        self.assertTrue(all(-bound <= x <= bound for x in values))

    def test_against_reference_for_every_g(self):
        rng = new_rng(13)
        for trial in range(25):
            h, g, w, x = random_layer_case(rng, trial)
            for causal in (False, True):
                self.assertClose(gqa.layer(x, w, g, causal=causal),
                                 ref.ref_layer(x, *w, g, causal=causal), msg=str((h, g, causal)))

    def test_fold_then_project_equals_project_then_fold(self):
        rng = new_rng(14)
        for trial in range(20):
            h, g, w, x = random_layer_case(rng, trial)
            folded_w = gqa.fold_weights(w, g)
            fold_then_project = [ref.matmul(x, folded_w.w_k[j]) for j in range(g)]
            project_then_fold = gqa.fold_kv_mean([ref.matmul(x, w.w_k[i]) for i in range(h)], g)
            self.assertClose(fold_then_project, project_then_fold, rel=1e-12, abs_tol=1e-13)

    def test_layer_accepts_folded_weights(self):
        w = gqa.init_weights(h=4, d_model=6, d=3, seed=1)
        x = rand_tensor(new_rng(15), 3, 6)
        self.assertEqual(gqa.layer(x, gqa.fold_weights(w, 2), 2), gqa.layer(x, w, 2))

    def test_layer_at_g_equals_h_is_unfolded_mha_and_other_g_differ(self):
        w = gqa.init_weights(h=4, d_model=8, d=2, seed=2)
        x = rand_tensor(new_rng(16), 5, 8)
        mha = gqa.layer(x, w, 4)
        # Folding groups of one head changes no value: the MHA weights as they are.
        self.assertEqual(gqa.fold_weights(w, 4), w)
        self.assertClose(mha, ref.ref_layer(x, *w, 4))
        for g in (1, 2):
            self.assertGreater(gqa.output_difference(gqa.layer(x, w, g), mha).max_abs, 1e-6)


class Prepared(unittest.TestCase):
    """prepare_weights: checked, folded and transposed once, the same results."""

    def test_layer_on_prepared_weights_equals_layer_on_weights_bit_for_bit(self):
        rng = new_rng(30)
        for trial in range(12):
            _, g, w, x = random_layer_case(rng, trial)
            p = gqa.prepare_weights(w, g)
            for causal in (False, True):
                self.assertTrue(gqa.layer(x, p, g, causal=causal) == gqa.layer(x, w, g, causal=causal))

    def test_holds_the_transposes_of_the_folded_weights(self):
        w = gqa.init_weights(h=4, d_model=3, d=2, seed=3)
        p = gqa.prepare_weights(w, 2)
        folded = ref.ref_fold_kv_mean(w.w_k, 2)
        self.assertEqual((p.h, p.g, p.d_model, p.d), (4, 2, 3, 2))
        for j in range(2):
            for r in range(3):
                for c in range(2):
                    self.assertEqual(p.k_cols[j][c][r], folded[j][r][c])
        # w_o stacked over heads: column c of row (i, r) is w_o[i][r][c].
        self.assertEqual(p.o_cols[1][2 * 3 + 1], w.w_o[3][1][1])
        self.assertIsInstance(p.q_cols[0][0], tuple)          # nothing left to change in place

    def test_weights_prepared_for_another_g_are_refused(self):
        p = gqa.prepare_weights(gqa.init_weights(h=4, d_model=3, d=2, seed=0), 2)
        with self.assertRaisesRegex(gqa.GQAError, r"layer: these weights were prepared for g=2; got g=1"):
            gqa.layer([[1.0] * 3], p, 1)
        with self.assertRaisesRegex(gqa.GQAError, r"decode_step: g=3 does not divide h=4"):
            gqa.decode_step([1.0] * 3, p, 3, gqa.KVCache(3, 2))
        with self.assertRaisesRegex(TypeError, r"prepare_weights: weights must be a Weights record"):
            gqa.prepare_weights(p, 2)


    def test_prepared_weights_made_by_hand_are_refused_by_name(self):
        p = gqa.prepare_weights(gqa.init_weights(h=4, d_model=3, d=2, seed=0), 2)
        for bad, field in ((p._replace(q_cols=None), "q_cols"), (p._replace(k_cols=p.k_cols[:1]), "k_cols"),
                           (p._replace(o_cols=5), "o_cols"), (p._replace(d="2"), "d")):
            with self.assertRaisesRegex((gqa.GQAError, TypeError), rf"layer: .*{field}"):
                gqa.layer([[1.0] * 3], bad, 2)
            with self.assertRaisesRegex((gqa.GQAError, TypeError), rf"decode_step: .*{field}"):
                gqa.decode_step([1.0] * 3, bad, 2, gqa.KVCache(2, 2))

    def test_prepared_weights_with_a_column_cut_short_are_refused_not_truncated(self):
        # Cut short, a column would make a shorter dot product (sum(map(mul, ...)) stops at
        # the shorter of the two): a wrong number with no error, unless the door counts.
        p = gqa.prepare_weights(gqa.init_weights(h=4, d_model=3, d=2, seed=0), 2)
        def short(t):                                     # every innermost tuple loses its last value
            return tuple(short(x) for x in t) if type(t[0]) is tuple else t[:-1]
        for field in ("q_cols", "k_cols", "v_cols", "o_cols"):
            bad = p._replace(**{field: short(getattr(p, field))})
            with self.assertRaisesRegex(gqa.GQAError, rf"layer: weights.{field} must be"):
                gqa.layer([[1.0] * 3], bad, 2)
            with self.assertRaisesRegex(gqa.GQAError, rf"decode_step: weights.{field} must be"):
                gqa.decode_step([1.0] * 3, bad, 2, gqa.KVCache(2, 2))

    def test_fold_weights_gives_lists_whatever_rows_it_was_given(self):
        w = gqa.init_weights(h=4, d_model=3, d=2, seed=0)
        as_tuples = gqa.Weights(*(tuple(tuple(tuple(r) for r in head) for head in t) for t in w))
        for given in (as_tuples, w):
            for g in (2, 4):
                folded = gqa.fold_weights(given, g)
                self.assertTrue(folded == gqa.fold_weights(w, g), g)
                self.assertEqual({type(r) for t in folded for head in t for r in head}, {list})
                self.assertTrue(all(a is not b for a, b in zip(folded.w_q, w.w_q)))   # not the input's


class DecodingPlainWeights(unittest.TestCase):
    """decode_step prepares the Weights it is given at every step: a value changed in place is used."""

    def decode(self, w, xs, g):
        cache = gqa.KVCache(g, 2)
        return [gqa.decode_step(x, w, g, cache) for x in xs]

    def test_a_weight_changed_between_tokens_is_used_at_the_next_token(self):
        w = gqa.init_weights(h=4, d_model=3, d=2, seed=5)
        xs = [[1.0, -0.5, 0.25], [0.5, 0.5, -1.0], [0.0, 1.0, 2.0]]
        for g in (1, 2, 4):
            for name in ("w_q", "w_k", "w_v", "w_o"):
                cache, changed = gqa.KVCache(g, 2), gqa.init_weights(h=4, d_model=3, d=2, seed=5)
                ys = [gqa.decode_step(xs[0], changed, g, cache)]
                getattr(changed, name)[-1][0][0] += 0.5                  # in place, between tokens
                ys += [gqa.decode_step(x, changed, g, cache) for x in xs[1:]]
                # Written another way: a fresh copy of the changed weights from the second token on.
                fresh_cache = gqa.KVCache(g, 2)
                expected = [gqa.decode_step(xs[0], gqa.init_weights(4, 3, 2, seed=5), g, fresh_cache)]
                copy = gqa.Weights(*([[list(r) for r in head] for head in t] for t in changed))
                expected += [gqa.decode_step(x, copy, g, fresh_cache) for x in xs[1:]]
                self.assertTrue(ys == expected, (g, name))
        self.assertTrue(self.decode(w, xs, 2) == self.decode(gqa.prepare_weights(w, 2), xs, 2))

    def test_a_value_made_invalid_between_tokens_is_refused(self):
        w = gqa.init_weights(h=2, d_model=3, d=2, seed=6)
        cache = gqa.KVCache(1, 2)
        gqa.decode_step([1.0, 2.0, 3.0], w, 1, cache)
        w.w_v[1][2][1] = "x"
        with self.assertRaisesRegex(TypeError, r"decode_step: w_v head 1 row 2 holds str"):
            gqa.decode_step([1.0, 2.0, 3.0], w, 1, cache)
        w.w_v[1][2][1] = 0.0
        w.w_o[0].append([1.0, 1.0, 1.0])                                  # a row too many
        with self.assertRaisesRegex(gqa.GQAError, r"decode_step: w_o head 0 must have 2 rows"):
            gqa.decode_step([1.0, 2.0, 3.0], w, 1, cache)
        self.assertEqual(len(cache), 1)


RECORDS = ("Weights", "PreparedWeights", "Difference", "Multiplies", "BlockMultiplies", "CacheRow",
           "MultipliesRow", "DecodeTraffic")


class Records(unittest.TestCase):

    def test_fields_by_name_and_position_unpacking_equality(self):
        d = gqa.Difference(1.0, rel_l2=2.0, cosine=0.5)
        self.assertEqual((d.max_abs, d.rel_l2, d.cosine), (1.0, 2.0, 0.5))
        self.assertEqual(tuple(d), (1.0, 2.0, 0.5))
        self.assertEqual(d, gqa.Difference(1.0, 2.0, 0.5))
        self.assertEqual(d, (1.0, 2.0, 0.5))                  # a record is a tuple with names
        self.assertEqual(gqa.Difference._fields, ("max_abs", "rel_l2", "cosine"))
        self.assertEqual(repr(d), "Difference(max_abs=1.0, rel_l2=2.0, cosine=0.5)")
        self.assertEqual(d._replace(cosine=1.0), gqa.Difference(1.0, 2.0, 1.0))
        self.assertEqual(d._asdict(), {"max_abs": 1.0, "rel_l2": 2.0, "cosine": 0.5})
        self.assertEqual(len({d, gqa.Difference(1.0, 2.0, 0.5)}), 1)

    def test_set_once(self):
        d = gqa.Difference(1.0, 2.0, 0.5)
        with self.assertRaises(AttributeError):
            d.cosine = 0.0
        with self.assertRaises(AttributeError):
            d.other = 0.0

    def test_wrong_fields(self):
        for args, kwargs in (((1.0, 2.0), {}), ((1.0, 2.0, 3.0, 4.0), {}),
                             ((1.0,), {"max_abs": 2.0, "rel_l2": 3.0}), ((1.0, 2.0, 3.0), {"x": 1})):
            with self.assertRaises(TypeError):
                gqa.Difference(*args, **kwargs)

    def test_help_reads_as_a_manual(self):
        text = pydoc.render_doc(gqa, renderer=pydoc.plaintext)
        # At most 700 lines as printed, on every Python (3.13's pydoc writes a long
        # signature a parameter a line); the lesson, not a tuple's methods.
        self.assertLessEqual(len(text.splitlines()), 700)
        for machinery in ("builtins.tuple", "_make(", "__match_args__", "__orig_bases__", "ForwardRef"):
            self.assertNotIn(machinery, text)
        # Each record's fields, each on a row of the table in the docstring of the step that
        # returns it (its name, then what it holds).
        for name in RECORDS:
            for field in getattr(gqa, name)._fields:
                self.assertRegex(text, rf"\n {{8}}{field} {{2,}}\S", (name, field))
        self.assertIn("largest |a - b| over all values", text)
        lines = text.splitlines()
        table = lines.index("DESCRIPTION") + 1                  # the step table comes first
        self.assertIn("The lab, in order", lines[table])
        self.assertEqual(lines[table + 1].split()[:2], ["1", "valid_g(h)"])
        self.assertEqual(lines[table + len(LESSON)].split()[:2], [str(len(LESSON)), LESSON[-1].name])

    def test_every_step_says_what_it_refuses(self):
        for name in gqa.__all__:
            if name in ("GQAError", "count_multiplies") or name[0].isupper() and name != "KVCache":
                continue
            doc = " ".join(getattr(gqa, name).__doc__.split())
            self.assertIn("Refuses (GQAError, naming the numbers at fault)", doc, name)

    def test_init_weights_draws_as_its_docstring_says(self):
        # One Random(seed): every value of w_q, then w_k, w_v, w_o, in the order
        # of the nested lists; each (2 * random() - 1) * sqrt(3 / fan_in).
        h, d_model, d = 3, 4, 2
        rng = random.Random("a seed")
        draws = iter([rng.random() for _ in range(4 * h * d_model * d)])

        def take(count, rows, cols, fan_in):
            a = math.sqrt(3.0 / fan_in)
            flat_values = [(2.0 * next(draws) - 1.0) * a for _ in range(count * rows * cols)]
            return [[flat_values[(i * rows + r) * cols:(i * rows + r + 1) * cols] for r in range(rows)]
                    for i in range(count)]
        expected = [take(h, d_model, d, d_model), take(h, d_model, d, d_model),
                    take(h, d_model, d, d_model), take(h, d, d_model, h * d)]
        self.assertEqual(list(gqa.init_weights(h, d_model, d, seed="a seed")), expected)


class House(unittest.TestCase):
    """gqa.py is the ground floor: the lesson first, and nothing of the project imported."""

    def setUp(self):
        with open(gqa.__file__, encoding="utf-8") as f:
            self.source = f.read()

    def test_it_imports_only_the_standard_library(self):
        import ast
        tree = ast.parse(self.source)
        names = set()
        for node in tree.body:                      # the top level; the __main__ block is apart
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                names.add(node.module.split(".")[0])
        self.assertLessEqual(names, {"__future__", "array", "contextlib", "itertools", "math",
                                     "operator", "random", "sys", "typing"})
        main = next(n for n in tree.body if isinstance(n, ast.If) and "__name__" in ast.dump(n.test))
        self.assertLessEqual(len(main.body), 3)     # the hand-off to the command line, by name
        self.assertEqual([a.name for n in main.body if isinstance(n, ast.Import) for a in n.names],
                         ["importlib"])
        lines = self.source[:self.source.index('if __name__ == "__main__":')]
        self.assertNotIn("gqa_", lines)

    def test_the_lesson_comes_first(self):
        lines = self.source.splitlines()
        first = {name: next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
                 for name in ("valid_g", "layer_backward", "_check_int", "_check_matrix")}
        self.assertLess(first["valid_g"], 150)                          # step 1 on the first screens
        self.assertLess(first["layer_backward"], first["_check_int"])    # the door after the last step
        self.assertLess(first["layer_backward"], first["_check_matrix"])
        banners = [int(line.split()[2].rstrip(".")) for line in lines if line.startswith("# Step ")]
        self.assertEqual(banners, list(range(1, len(LESSON) + 1)))

    def test_python_m_gqa_hands_off_to_the_command_line(self):
        import os
        import subprocess
        import sys
        run = subprocess.run([sys.executable, "-m", "gqa", "--help"], capture_output=True, text=True,
                             cwd=ROOT, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("usage: python -m gqa COMMAND", run.stdout)

    def test_python_m_gqa_runs_the_lab_once(self):
        # An audit hook (in a sitecustomize of its own) counts the runs of gqa.py's body:
        # `python -m gqa config` runs it as __main__, and the tools' `import gqa` gets that module.
        import os
        import subprocess
        import sys
        import tempfile
        hook = ("import atexit, os, sys\n"
                "runs = []\n"
                "sys.addaudithook(lambda event, args: runs.append(1) if event == 'exec' and\n"
                "                 os.path.basename(getattr(args[0], 'co_filename', '')) == 'gqa.py' else None)\n"
                "atexit.register(lambda: open(os.environ['GQA_RUNS'], 'w').write(str(len(runs))))\n")
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as f:
                f.write(hook)
            env = dict(os.environ, PYTHONPATH=folder, GQA_RUNS=os.path.join(folder, "runs"))
            run = subprocess.run([sys.executable, "-m", "gqa", "config", "examples/configs/llama-2-70b.json",
                                  "--context", "4096"], capture_output=True, text=True, cwd=ROOT,
                                 env=env, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("llama", run.stdout.lower())
            with open(env["GQA_RUNS"], encoding="utf-8") as f:
                self.assertEqual(f.read(), "1")


class Difference(unittest.TestCase):

    def test_by_hand(self):
        d = gqa.output_difference([[1.0, 2.0], [2.0, 0.0]], [[1.0, 2.0], [0.0, 0.0]])
        self.assertEqual(d.max_abs, 2.0)
        self.assertAlmostEqual(d.rel_l2, 2 / math.sqrt(5), places=15)
        self.assertAlmostEqual(d.cosine, 5 / (3 * math.sqrt(5)), places=15)

    def test_zero_reference(self):
        self.assertEqual(gqa.output_difference([[0.0]], [[0.0]]).rel_l2, 0.0)
        self.assertEqual(gqa.output_difference([[1.0]], [[0.0]]).rel_l2, math.inf)
        self.assertTrue(math.isnan(gqa.output_difference([[1.0]], [[0.0]]).cosine))

    def test_identical_and_scaled_outputs_have_cosine_exactly_one(self):
        rng = new_rng(17)
        for _ in range(200):
            a = rand_tensor(rng, 2, rng.randint(1, 20))
            self.assertEqual(gqa.output_difference(a, a), gqa.Difference(0.0, 0.0, 1.0))
            self.assertEqual(gqa.output_difference([[2 * x for x in r] for r in a], a).cosine, 1.0)

    def test_tiny_and_huge_values(self):
        self.assertEqual(gqa.output_difference([[1e-200]], [[1e-200]]).cosine, 1.0)
        self.assertEqual(gqa.output_difference([[1e200, 1e200]], [[1e200, 1e200]]).cosine, 1.0)
        self.assertEqual(gqa.output_difference([[1e-200, 0.0]], [[0.0, 1e-200]]).cosine, 0.0)

    def test_nan_propagates(self):
        d = gqa.output_difference([[math.nan, 1.0]], [[1.0, 1.0]])
        self.assertTrue(all(math.isnan(x) for x in d), d)

    def test_a_row_of_floats_is_taken_whole_as_each_value_would_be(self):
        # _flatten takes a row of floats at once: what it gives, or the first error it raises, is
        # what taking one value at a time gives (written out here), on random nested values.
        import sys
        from array import array
        sequences = (list, tuple, array)

        def one_at_a_time(a, b):
            fa, fb, stack = [], [], [(a, b, ())]
            while stack:
                x, y, where = stack.pop()
                if not isinstance(x, sequences) and not isinstance(y, sequences):
                    for name, value in (("a", x), ("b", y)):
                        if type(value) not in (int, float):
                            return TypeError, (f"output_difference: {name} holds {type(value).__name__} "
                                               f"{gqa._brief(value)} at {list(where)}; values must be int or float")
                        if type(value) is int and abs(value) > sys.float_info.max:
                            return gqa.GQAError, (f"output_difference: {name} holds an int beyond the largest "
                                                  f"float, {gqa._brief(value)}, at {list(where)}")
                    fa.append(x)
                    fb.append(y)
                elif not (isinstance(x, sequences) and isinstance(y, sequences)) or len(x) != len(y):
                    size = [len(t) if isinstance(t, sequences) else "a number" for t in (x, y)]
                    return gqa.GQAError, (f"output_difference: a and b differ in shape at index {list(where)}: "
                                          f"{size[0]} vs {size[1]}")
                elif len(where) == 3:
                    return gqa.GQAError, ("output_difference: a and b nest deeper than 3 levels; they must be a "
                                          "matrix [n][d] or a multi-head tensor [h][n][d]")
                else:
                    stack.extend((xi, yi, where + (i,)) for i, (xi, yi) in reversed(list(enumerate(zip(x, y)))))
            return fa, fb

        rng = new_rng(48)
        odd = [lambda: float(rng.randrange(3)), lambda: rng.randrange(-2, 3), lambda: True, lambda: "x",
               lambda: 10 ** 400, lambda: math.nan, lambda: [1.0]]

        def make(dims):
            if not dims:
                return rng.choice(odd)() if rng.random() < 0.05 else rng.uniform(-1, 1)
            row = [make(dims[1:]) for _ in range(dims[0])]
            kind = rng.random()
            if kind < 0.1 and all(type(v) is float for v in row):
                return array("d", row)
            return tuple(row) if kind < 0.2 else row
        for _ in range(600):
            shape = [rng.randrange(1, 4) for _ in range(rng.randrange(1, 5))]
            a = make(shape)
            b = make(shape) if rng.random() < 0.9 else make([d + 1 for d in shape])
            try:
                got = gqa._flatten(a, b)
            except (TypeError, gqa.GQAError) as err:
                got = type(err), str(err)
            self.assertEqual(repr(got), repr(one_at_a_time(a, b)), (a, b))      # repr: NaN as NaN

    def test_shapes_must_match(self):
        with self.assertRaisesRegex(gqa.GQAError, r"output_difference: .*shape.*\[1\]"):
            gqa.output_difference([[1.0], [2.0, 3.0]], [[1.0], [2.0]])
        with self.assertRaisesRegex(gqa.GQAError, "output_difference"):
            gqa.output_difference([[1.0, 2.0]], [1.0, 2.0])


class BadInput(unittest.TestCase):
    """Every bad input ends in a clear error, never a wrong answer."""

    def err(self, pattern, func, *args, **kwargs):
        with self.assertRaises(gqa.GQAError) as cm:
            func(*args, **kwargs)
        self.assertRegex(str(cm.exception), pattern)
        self.assertIsInstance(cm.exception, ValueError)

    def test_g_must_divide_h(self):
        self.err(r"^group_heads: g=3 does not divide h=8; valid g: 1, 2, 4, 8$", gqa.group_heads, 8, 3)
        self.err(r"kv_head: .*g=5 does not divide h=6", gqa.kv_head, 0, 6, 5)
        self.err(r"fold_kv_mean: .*valid g: 1, 2, 4$", gqa.fold_kv_mean, [[[1.0]]] * 4, 3)
        self.err(r"repeat_kv: .*g=3 does not divide h=4", gqa.repeat_kv, [[[1.0]]] * 3, 4)
        q = [[[1.0]]] * 4
        self.err(r"attention: .*g=3 does not divide h=4", gqa.attention, q, q, q, 3)
        self.err(r"grouped_attention: g=3 \(the heads of k and v\) does not divide h=4 \(the heads of q\)",
                 gqa.grouped_attention, q, q[:3], q[:3])
        self.err(r"method_name: g must be between 1 and h; got g=0, h=8; valid g: 1, 2, 4, 8$",
                 gqa.method_name, 8, 0)

    def test_a_refusal_names_each_number_given_once(self):
        w = gqa.init_weights(4, 3, 2, seed=0)
        q = [[[1.0]]] * 4
        calls = [  # (the call, the numbers it was given that its message names)
            (lambda: gqa.method_name(8, 3), (8, 3)), (lambda: gqa.method_name(8, 9), (8, 9)),
            (lambda: gqa.kv_head(9, 8, 2), (9, 8)), (lambda: gqa.group_heads(6, 4), (6, 4)),
            (lambda: gqa.fold_kv_mean([[[1.0]]] * 3, 2), (3, 2)),
            (lambda: gqa.repeat_kv([[[1.0]]] * 2, 3), (2, 3)),
            (lambda: gqa.grouped_attention(q, q[:3], q[:3]), (4, 3)),
            (lambda: gqa.grouped_attention_backward(q, q[:3], q[:3], q), (4, 3)),
            (lambda: gqa.fold_weights(w, 3), (4, 3)), (lambda: gqa.attention_multiplies(1, 6, 4, 1, 1), (6, 4)),
            (lambda: gqa.group_heads(2 * 10 ** 8, 1), (2 * 10 ** 8,)),
            (lambda: gqa.init_weights(100, 999, 1001, seed=0), (100, 999, 1001)),
            (lambda: gqa.KVCache(3, 100, capacity=10 ** 6), (3, 100, 10 ** 6)),
            (lambda: gqa.decode_step([1.0] * 3, w, 2, gqa.KVCache(4, 2)), (4, 2)),
            (lambda: gqa.decode_step([1.0] * 3, w, 2, gqa.KVCache(2, 3)), (3, 2)),
        ]
        for call, numbers in calls:
            with self.assertRaises(gqa.GQAError) as cm:
                call()
            message = str(cm.exception).split("; valid g: ")[0]      # the advice lists valid g apart
            for x in numbers:
                found = re.findall(rf"(?<!\d)(?<!\d,){x}(?!\d|,\d)", message)      # not in 100,000,000
                self.assertEqual(len(found), 1, (message, x))
        self.err(r"layer: .*g=3 does not divide h=4", gqa.layer, [[1.0]], gqa.init_weights(4, 1, 1, seed=0), 3)

    def test_g_out_of_range(self):
        self.err(r"g must be between 1 and h; got g=0, h=4", gqa.group_heads, 4, 0)
        self.err(r"g must be between 1 and h; got g=8, h=4", gqa.kv_head, 0, 4, 8)
        self.err(r"g must be between 1 and h; got g=-1", gqa.fold_kv_mean, [[[1.0]]], -1)

    def test_h_must_be_positive(self):
        self.err(r"group_heads: h must be positive; got h=0", gqa.group_heads, 0, 1)
        self.err(r"valid_g: h must be positive; got h=-2", gqa.valid_g, -2)
        self.err(r"repeat_kv: h must be positive; got h=0", gqa.repeat_kv, [[[1.0]]], 0)

    def test_sizes_must_be_ints_not_bools(self):
        for bad in (2.0, "2", None, True):
            with self.assertRaisesRegex(TypeError, r"group_heads: g must be an int"):
                gqa.group_heads(4, bad)
            with self.assertRaisesRegex(TypeError, r"kv_head: h must be an int"):
                gqa.kv_head(0, bad, 1)
        with self.assertRaisesRegex(TypeError, r"init_weights: d must be an int, not float"):
            gqa.init_weights(2, 2, 2.5, seed=0)

    def test_ragged_rows_name_head_and_row(self):
        self.err(r"fold_kv_mean: kv head 1 row 2 has 1 values, expected 2",
                 gqa.fold_kv_mean, [[[1.0, 2.0]] * 3, [[1.0, 2.0], [1.0, 2.0], [1.0]]], 1)
        self.err(r"single_head_attention: k row 1 has 3 values, expected 2",
                 gqa.single_head_attention, [[1.0, 2.0]], [[1.0, 2.0], [1.0, 2.0, 3.0]], [[1.0], [1.0]])
        self.err(r"fold_kv_mean: kv head 1 must have 2 rows; got 1",
                 gqa.fold_kv_mean, [[[1.0], [2.0]], [[1.0]]], 1)
        self.err(r"attention: q head 0 row 1 has 2 values, expected 1",
                 gqa.attention, [[[1.0], [1.0, 2.0]]], [[[1.0]]], [[[1.0]]], 1)

    def test_head_dims_must_agree(self):
        self.err(r"single_head_attention: q and k head dims differ: q has d=2, k has d=3",
                 gqa.single_head_attention, [[1.0, 2.0]], [[1.0, 2.0, 3.0]], [[1.0]])
        self.err(r"grouped_attention: q and k head dims differ",
                 gqa.grouped_attention, [[[1.0, 2.0]]] * 2, [[[1.0]]], [[[1.0]]])

    def test_k_and_v_rows_must_agree(self):
        self.err(r"single_head_attention: k and v row counts differ: k has m=2, v has 1",
                 gqa.single_head_attention, [[1.0]], [[1.0], [2.0]], [[1.0]])

    def test_kv_heads_must_match(self):
        q = [[[1.0]]] * 4
        self.err(r"attention: k and v must have h=4 heads .*got 2", gqa.attention, q, q[:2], q[:2], 2)
        self.err(r"k and v head counts differ: k has 2, v has 1", gqa.grouped_attention, q, q[:2], q[:1])

    def test_no_keys(self):
        self.err(r"single_head_attention: there are no keys", gqa.single_head_attention, [[1.0]], [], [])
        self.err(r"grouped_attention: there are no keys", gqa.grouped_attention, [[[1.0]]], [[]], [[]])
        self.err(r"attention: k has no heads", gqa.attention, [[[1.0]]], [], [], 1)

    def test_zero_head_dim(self):
        self.err(r"head dim d must be positive", gqa.single_head_attention, [[]], [[]], [[1.0]])

    def test_causal_needs_enough_keys(self):
        self.err(r"single_head_attention: causal attention needs at least as many keys as "
                 r"queries .*got n=3, m=2",
                 gqa.single_head_attention, [[1.0]] * 3, [[1.0]] * 2, [[1.0]] * 2, causal=True)

    def test_query_head_out_of_range(self):
        self.err(r"kv_head: query_head must be in 0..h-1 for h=8; got query_head=9", gqa.kv_head, 9, 8, 2)
        self.err(r"kv_head: query_head must be at least 0; got query_head=-1", gqa.kv_head, -1, 8, 2)

    def test_layer_shapes(self):
        w = gqa.init_weights(h=4, d_model=3, d=2, seed=0)
        self.err(r"layer: x row 0 has 2 values, expected 3", gqa.layer, [[1.0, 2.0]], w, 2)
        bad = w._replace(w_k=w.w_k[:3])
        self.err(r"layer: w_k has 3 heads; expected h=4 \(MHA weights, folded to g\) or g=2",
                 gqa.layer, [[1.0] * 3], bad, 2)
        self.err(r"layer: w_o has 2 heads; expected h=4", gqa.layer, [[1.0] * 3],
                 w._replace(w_o=w.w_o[:2]), 2)
        with self.assertRaisesRegex(TypeError, "layer: weights must be a Weights record"):
            gqa.layer([[1.0] * 3], tuple(w), 2)


if __name__ == "__main__":
    unittest.main()
