"""Steps 24-25, the backward pass: gradients against central finite differences
computed here, and at g = h against per-head MHA gradients, bit for bit."""

from __future__ import annotations

import copy
import unittest

import gqa
from gqa_grader.expected import reference as ref
from gqa_grader.expected.reference import rand_tensor
from tests.helpers import new_rng

EPS = 1e-6


def leaves(t, path=()):
    """(path, value) of every number of a nested list."""
    if isinstance(t, list):
        for i, x in enumerate(t):
            yield from leaves(x, path + (i,))
    else:
        yield path, t


def nudged(t, path, delta):
    t = copy.deepcopy(t)
    target = t
    for i in path[:-1]:
        target = target[i]
    target[path[-1]] += delta
    return t


def dot(a, b):
    return sum(x * y for (_, x), (_, y) in zip(leaves(a), leaves(b)))


def numeric_gradient(f, t):
    """d f / d t by central differences, element by element: [(path, value)]."""
    return [(path, (f(nudged(t, path, EPS)) - f(nudged(t, path, -EPS))) / (2 * EPS))
            for path, _ in leaves(t)]


class FiniteDifferences(unittest.TestCase):

    def assertGradient(self, analytic, numeric, what):
        got = dict(leaves(analytic))
        top = max(abs(x) for _, x in numeric) or 1.0
        worst = max(abs(got[path] - x) / top for path, x in numeric)
        self.assertLess(worst, 1e-6, what)

    def test_grouped_attention_backward_for_every_divisor_g(self):
        rng = new_rng(40)
        for h in (1, 2, 4, 6):
            for g in ref.ref_valid_g(h):
                n, m, d, dv = rng.randint(1, 3), rng.randint(3, 4), rng.randint(1, 3), rng.randint(1, 2)
                for causal in (False, True):
                    q, k, v = rand_tensor(rng, h, n, d), rand_tensor(rng, g, m, d), rand_tensor(rng, g, m, dv)
                    d_out = rand_tensor(rng, h, n, dv)
                    dq, dk, dv_ = gqa.grouped_attention_backward(q, k, v, d_out, causal=causal)
                    loss = {"q": lambda t: dot(gqa.grouped_attention(t, k, v, causal=causal), d_out),
                            "k": lambda t: dot(gqa.grouped_attention(q, t, v, causal=causal), d_out),
                            "v": lambda t: dot(gqa.grouped_attention(q, k, t, causal=causal), d_out)}
                    for name, grad, t in (("q", dq, q), ("k", dk, k), ("v", dv_, v)):
                        self.assertGradient(grad, numeric_gradient(loss[name], t), (h, g, causal, name))

    def test_layer_backward_through_the_mean_fold(self):
        rng = new_rng(41)
        for h, g in ((2, 1), (4, 2), (3, 3)):
            for causal in (False, True):
                w = gqa.init_weights(h, 3, 2, seed=h * 10 + g)
                fields = [copy.deepcopy(f) for f in w]
                x, d_y = rand_tensor(rng, 3, 3), rand_tensor(rng, 3, 3)
                dx, grads = gqa.layer_backward(x, w, g, d_y, causal=causal)

                def loss(x_=x, fields_=fields):
                    return dot(gqa.layer(x_, gqa.Weights(*fields_), g, causal=causal), d_y)
                self.assertGradient(dx, numeric_gradient(lambda t: loss(x_=t), x), (h, g, "dx"))
                for i, name in enumerate(("w_q", "w_k", "w_v", "w_o")):
                    def partial(t, i=i):
                        return loss(fields_=fields[:i] + [t] + fields[i + 1:])
                    self.assertGradient(getattr(grads, name), numeric_gradient(partial, fields[i]),
                                        (h, g, causal, name))

    def test_at_g_equals_h_each_head_gets_its_own_mha_gradient_bit_for_bit(self):
        rng = new_rng(42)
        for h in (1, 3, 4):
            q, k, v = rand_tensor(rng, h, 3, 2), rand_tensor(rng, h, 4, 2), rand_tensor(rng, h, 4, 3)
            d_out = rand_tensor(rng, h, 3, 3)
            together = gqa.grouped_attention_backward(q, k, v, d_out, causal=True)
            alone = [gqa.grouped_attention_backward([q[i]], [k[i]], [v[i]], [d_out[i]], causal=True)
                     for i in range(h)]
            for t in range(3):
                self.assertTrue(together[t] == [a[t][0] for a in alone], (h, t))

    def test_a_shared_head_gets_the_sum_of_its_query_heads_gradients(self):
        rng = new_rng(43)
        q, k, v = rand_tensor(rng, 4, 2, 2), rand_tensor(rng, 1, 3, 2), rand_tensor(rng, 1, 3, 2)
        d_out = rand_tensor(rng, 4, 2, 2)
        _, dk, dv = gqa.grouped_attention_backward(q, k, v, d_out)
        _, dk_copies, dv_copies = gqa.grouped_attention_backward(q, k * 4, v * 4, d_out)   # MHA on copies
        for shared, copies in ((dk, dk_copies), (dv, dv_copies)):
            summed = [[sum(c[r][col] for c in copies) for col in range(2)] for r in range(3)]
            for r in range(3):
                for col in range(2):
                    self.assertAlmostEqual(shared[0][r][col], summed[r][col], places=14)

    def test_bad_input(self):
        q = [[[1.0]]] * 4
        with self.assertRaisesRegex(gqa.GQAError, r"grouped_attention_backward: g=3 \(the heads of k and v\) does not divide h=4"):
            gqa.grouped_attention_backward(q, q[:3], q[:3], q)
        with self.assertRaisesRegex(gqa.GQAError, r"grouped_attention_backward: d_out must have h=4 heads"):
            gqa.grouped_attention_backward(q, q[:2], q[:2], q[:3])
        with self.assertRaisesRegex(gqa.GQAError, r"grouped_attention_backward: d_out head 0 must have 1 rows"):
            gqa.grouped_attention_backward(q, q[:2], q[:2], [[[1.0], [1.0]]] * 4)
        w = gqa.init_weights(2, 3, 2, seed=0)
        with self.assertRaisesRegex(gqa.GQAError, r"layer_backward: d_y must have 1 rows"):
            gqa.layer_backward([[1.0] * 3], w, 1, [[1.0] * 3] * 2)
        with self.assertRaisesRegex(TypeError, r"layer_backward: causal must be True or False"):
            gqa.layer_backward([[1.0] * 3], w, 1, [[1.0] * 3], causal=None)


# layer_backward as it was written before it reused the forward: it ran the
# forward again.  Kept here, word for word but for names, so that reusing
# the forward's saved softmax is checked to change no bit of any gradient.
def _old_attend(q, keys, v_cols, causal):
    import math
    n, m = len(q), len(keys)
    scale, exp = 1.0 / math.sqrt(len(q[0])), math.exp
    out = []
    for i, qi in enumerate(q):
        seen = i + 1 + m - n if causal else m
        s = gqa._dots(keys[:seen] if seen < m else keys, qi)
        top = max(s)
        if top == math.inf:
            s, top = [0.0 if x == math.inf else -math.inf for x in s], 0.0
        e = [exp((x - top) * scale) for x in s]
        z = sum(e)
        cols = v_cols if seen == m else [c[:seen] for c in v_cols]
        out.append([x / z for x in gqa._dots(cols, e)])
    return out


def _old_attend_backward(q, keys, v_rows, d_out, causal):
    import math
    n, m = len(q), len(keys)
    scale, exp = 1.0 / math.sqrt(len(q[0])), math.exp
    tr = lambda rows: list(zip(*rows))
    p_rows, ds_rows = [], []
    for i, qi in enumerate(q):
        seen = i + 1 + m - n if causal else m
        s = gqa._dots(keys[:seen] if seen < m else keys, qi)
        top = max(s)
        if top == math.inf:
            s, top = [0.0 if x == math.inf else -math.inf for x in s], 0.0
        e = [exp((x - top) * scale) for x in s]
        z = sum(e)
        p = [x / z for x in e]
        dp = gqa._dots(v_rows[:seen] if seen < m else v_rows, d_out[i])
        c = gqa._dots([p], dp)[0]
        pad = [0.0] * (m - seen)
        p_rows.append(p + pad)
        ds_rows.append([pj * (dpj - c) for pj, dpj in zip(p, dp)] + pad)
    dq = [[x * scale for x in gqa._dots(tr(keys), ds)] for ds in ds_rows]
    dk = [[x * scale for x in gqa._dots(tr(q), col)] for col in tr(ds_rows)]
    dv = [gqa._dots(tr(d_out), col) for col in tr(p_rows)]
    return dq, dk, dv


def _old_layer_backward(x, weights, g, d_y, causal):
    from operator import add
    mm, tr = gqa._mm, (lambda rows: list(zip(*rows)))
    h, d_model = len(weights.w_q), len(weights.w_q[0])

    def fold(heads):
        if len(heads) == g:
            return heads
        group = len(heads) // g
        return [[[sum(vals) / group for vals in zip(*rows)]
                 for rows in zip(*heads[j * group:(j + 1) * group])] for j in range(g)]

    def unfold(grads, heads):
        group = heads // len(grads)
        if group == 1:
            return grads
        return [[[t / group for t in row] for row in grads[i // group]] for i in range(heads)]

    w_k, w_v = fold(weights.w_k), fold(weights.w_v)
    q = [mm(x, tr(wq)) for wq in weights.w_q]
    k = [mm(x, tr(wk)) for wk in w_k]
    v = [mm(x, tr(wv)) for wv in w_v]
    group = h // g
    heads = [_old_attend(q[i], k[i // group], tr(v[i // group]), causal) for i in range(h)]
    d_y_cols = tr(d_y)
    d_w_o = [mm(tr(hd), d_y_cols) for hd in heads]
    d_heads = [mm(d_y, wo) for wo in weights.w_o]
    dq, dk, dv = [], [None] * g, [None] * g
    for i in range(h):
        j = i // group
        dq_i, dk_i, dv_i = _old_attend_backward(q[i], k[j], v[j], d_heads[i], causal)
        dq.append(dq_i)
        dk[j] = dk_i if dk[j] is None else [list(map(add, a, b)) for a, b in zip(dk[j], dk_i)]
        dv[j] = dv_i if dv[j] is None else [list(map(add, a, b)) for a, b in zip(dv[j], dv_i)]
    x_cols = tr(x)
    d_w_q = [mm(x_cols, tr(t)) for t in dq]
    d_w_k = [mm(x_cols, tr(t)) for t in dk]
    d_w_v = [mm(x_cols, tr(t)) for t in dv]
    dx = [[0.0] * d_model for _ in x]
    for grads_t, w_t in ((dq, weights.w_q), (dk, w_k), (dv, w_v)):
        for gt, wt in zip(grads_t, w_t):
            dx = [list(map(add, row, part)) for row, part in zip(dx, mm(gt, wt))]
    return dx, gqa.Weights(d_w_q, unfold(d_w_k, len(weights.w_k)), unfold(d_w_v, len(weights.w_v)), d_w_o)


class SavedForward(unittest.TestCase):
    """_layer_forward keeps what _layer_backward needs: the backward runs no forward again."""

    CASES = ((1, 1), (2, 1), (4, 2), (6, 3), (3, 3), (4, 4))

    def weights_for(self, rng, h, g):
        w = gqa.init_weights(h, 5, 2, seed=rng.randint(0, 10 ** 6))
        kinds = [("mha", w), ("folded", gqa.fold_weights(w, g)),
                 ("k only folded", w._replace(w_k=gqa.fold_weights(w, g).w_k)),
                 ("prepared", gqa.prepare_weights(w, g))]
        return w, kinds

    def test_y_is_layer_and_the_gradients_are_the_old_ones_bit_for_bit(self):
        rng = new_rng(44)
        for h, g in self.CASES:
            w, kinds = self.weights_for(rng, h, g)
            for causal in (False, True):
                n = rng.randint(1, 4)
                x, d_y = rand_tensor(rng, n, 5), rand_tensor(rng, n, 5)
                for kind, weights in kinds:
                    with self.subTest(h=h, g=g, causal=causal, weights=kind):
                        y, saved = gqa._layer_forward(x, weights, g, causal=causal)
                        self.assertTrue(y == gqa.layer(x, weights, g, causal=causal))
                        plain = weights if kind != "prepared" else gqa.fold_weights(w, g)
                        old = _old_layer_backward(x, plain, g, d_y, causal)
                        new = gqa._layer_backward(saved, d_y)
                        self.assertTrue(new[0] == old[0], "dx")
                        for name in ("w_q", "w_k", "w_v", "w_o"):
                            got = [[list(r) for r in head] for head in getattr(new[1], name)]
                            self.assertTrue(got == getattr(old[1], name), name)
                        if kind != "prepared":
                            self.assertTrue(gqa.layer_backward(x, weights, g, d_y, causal=causal) == new)

    def test_the_backward_multiplies_no_projection_and_no_score_again(self):
        # Run again, the forward would tally its projections and scores once more.
        w = gqa.init_weights(4, 5, 2, seed=1)
        x, d_y = rand_tensor(new_rng(45), 3, 5), rand_tensor(new_rng(46), 3, 5)
        for weights in (w, gqa.prepare_weights(w, 2)):
            with gqa.count_multiplies() as forward:
                _, saved = gqa._layer_forward(x, weights, 2, causal=True)
            with gqa.count_multiplies() as backward:
                gqa._layer_backward(saved, d_y)
            self.assertEqual(forward.multiplies(),
                             gqa.attention_multiplies(3, 4, 2, 2, 5, causal=True))
            self.assertEqual(backward.multiplies().total, 0)

    def test_no_rows_gives_zero_gradients_shaped_as_the_weights(self):
        w = gqa.init_weights(4, 3, 2, seed=0)
        for weights, kv in ((w, 4), (gqa.fold_weights(w, 2), 2), (gqa.prepare_weights(w, 2), 2)):
            y, saved = gqa._layer_forward([], weights, 2, causal=False)
            dx, grads = gqa._layer_backward(saved, [])
            self.assertEqual((y, dx), ([], []))
            self.assertEqual(grads, gqa.Weights([[[0.0] * 2] * 3] * 4, [[[0.0] * 2] * 3] * kv,
                                                [[[0.0] * 2] * 3] * kv, [[[0.0] * 3] * 2] * 4))


if __name__ == "__main__":
    unittest.main()
