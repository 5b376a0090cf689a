"""Steps 24-25, the backward pass: gradients against central finite differences
computed here, and at g = h against per-head MHA gradients, bit for bit."""

from __future__ import annotations

import copy
import unittest

import gqa
import grader as ref
from grader import rand_tensor
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
        with self.assertRaisesRegex(gqa.GQAError, r"grouped_attention_backward: k and v have g=3 heads"):
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


if __name__ == "__main__":
    unittest.main()
