"""gqa_grader/running/exchange.py: how a failing call's arguments are named, how values cross to
the worker and back (wire, decode, plain, leaves), how answers are compared and inputs drawn."""

from __future__ import annotations

import unittest


class ArgumentsInAMessage(unittest.TestCase):
    """A failing call names its tensors by shape, and a ragged one as ragged, not by
    the shape of its first rows."""

    def test_shapes_and_ragged_rows(self):
        from gqa_grader.running.exchange import _brief
        self.assertEqual(_brief([[[0.0] * 4] * 3] * 2), "<2x3x4 list>")
        self.assertEqual(_brief(([1.0, 2.0], (3.0, 4.0))), "<2x2 list>")
        self.assertEqual(_brief([[[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0]]]), "<ragged list of 2>")
        self.assertEqual(_brief([[1.0], [1.0, 2.0], [1.0]]), "<ragged list of 3>")
        self.assertEqual(_brief(8), "8")



def _nested(rng, depth=0):
    """A random value of the kinds that cross to the worker and back: numbers, None, bools,
    text, lists, tuples, array('d'), dicts of the worker's tags, a float subclass, an Other;
    rows of numbers alone often, and a row that mixes kinds."""
    import math
    from array import array
    from gqa_grader.running.values import Other

    class Half(float):
        pass
    leaf = [lambda: rng.uniform(-1, 1), lambda: rng.randrange(-3, 9), lambda: rng.random() < 0.5,
            lambda: None, lambda: "x", lambda: math.nan, lambda: -0.0, lambda: Half(0.5),
            lambda: Other("array('d')", "of 2 values")]
    if depth >= 3 or rng.random() < 0.2:
        return rng.choice(leaf)()
    n = rng.randrange(0, 5)
    kind = rng.randrange(6)
    if kind == 0:                                        # a row of floats alone
        return [rng.uniform(-1, 1) for _ in range(n)]
    if kind == 1:
        return tuple(_nested(rng, depth + 1) for _ in range(n))
    if kind == 2:
        return array("d", [rng.uniform(-1, 1) for _ in range(n)])
    if kind == 3:
        return {"$tuple": [_nested(rng, depth + 1) for _ in range(n)]}
    return [_nested(rng, depth + 1) for _ in range(n)]


class ValuesAcross(unittest.TestCase):
    """wire, decode, plain and leaves take a row of plain numbers whole: each gives what its
    definition, one value at a time, gives (written out here), on random nested values."""

    def test_each_is_its_definition_one_value_at_a_time(self):
        import random
        from array import array
        from gqa_grader.running.values import Other, decode
        from gqa_grader.running.exchange import wire
        from gqa_grader.expected.inputs import leaves
        from gqa_grader.running.values import plain

        def wire_one(x):
            if isinstance(x, list):
                return [wire_one(v) for v in x]
            if isinstance(x, tuple):
                return {"$tuple": [wire_one(v) for v in x]}
            if isinstance(x, array):
                return {"$array": "d", "values": list(x)}
            return x

        def plain_one(t):
            if isinstance(t, Other) and hasattr(t, "values"):
                return list(t.values)
            return [plain_one(x) for x in t] if isinstance(t, (list, tuple, array)) else t

        def decode_one(x):
            if isinstance(x, list):
                return [decode_one(v) for v in x]
            if isinstance(x, dict) and "$tuple" in x:
                return tuple(decode_one(v) for v in x["$tuple"])
            return decode(x)                # a dict: a record, an array, an Other (none here is nested)

        def leaves_one(t):
            return [y for x in t for y in leaves_one(x)] if isinstance(t, (list, tuple)) else [t]

        def same(a, b):               # equal, NaN as NaN, and of the same types all the way down
            if type(a) is not type(b):
                return False
            if isinstance(a, (list, tuple)):
                return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
            if isinstance(a, dict):
                return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
            if isinstance(a, Other):
                return repr(a) == repr(b) and same(getattr(a, "values", None), getattr(b, "values", None))
            return a is b or a == b or a != a and b != b

        rng = random.Random(48)
        for _ in range(1000):
            value = _nested(rng)
            sent = wire(value)
            self.assertTrue(same(sent, wire_one(value)), value)
            self.assertTrue(same(plain(value), plain_one(value)), value)
            self.assertTrue(same(list(leaves(value)), leaves_one(value)), value)
            if isinstance(value, list):
                self.assertIsNot(wire(value), value)               # a copy, never the argument itself
                self.assertIsNot(plain(value), value)
            back = decode(sent)
            if isinstance(sent, list):
                self.assertIsNot(back, sent)
            self.assertTrue(same(back, decode_one(sent)), sent)


    def test_a_difference_is_found_at_the_first_pair_out_of_tolerance(self):
        # Nested floats compared: None exactly when every pair is equal, both NaN, or within the
        # tolerance (math.isclose; exact: equal alone), else the first pair that is not, by index.
        import math
        import random
        from gqa_grader.expected.compare import ABS_TOL, REL_TOL, first_difference
        rng = random.Random("first difference")
        kinds = [lambda x: x, lambda x: x * (1 + 1e-12), lambda x: x * (1 + 1e-6), lambda x: math.nan,
                 lambda x: -x if x == 0 else x + 1e-13, lambda x: math.inf, lambda x: int(x) if math.isfinite(x) and x == int(x) else x]
        for _ in range(400):
            shape = [rng.randrange(1, 4) for _ in range(rng.randrange(1, 4))]
            flat = [rng.choice((rng.uniform(-2, 2), 0.0, 1.0, math.nan, math.inf)) for _ in range(math.prod(shape))]
            near = [rng.choice(kinds)(x) if rng.random() < 0.3 else x for x in flat]
            exact = rng.random() < 0.3

            def nest(values, dims):
                if len(dims) == 1:
                    return list(values)
                size = len(values) // dims[0]
                return [nest(values[i * size:(i + 1) * size], dims[1:]) for i in range(dims[0])]

            def index(n):
                out = []
                for d in reversed(shape):
                    out.insert(0, n % d)
                    n //= d
                return "".join(f"[{i}]" for i in out)
            same = [a == b or a != a and b != b or not exact and math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
                    for a, b in zip(near, flat)]
            found = first_difference(nest(near, shape), nest(flat, shape), exact=exact)
            if all(same):
                self.assertIsNone(found, (near, flat, exact))
            else:
                self.assertTrue(found.startswith(f"at {index(same.index(False))}: expected "), (found, near, flat))

    def test_a_tensor_is_drawn_as_uniform_draws_it(self):
        # rand_tensor's numbers are random.uniform(-1.0, 1.0)'s, in order, from a case's Draw or a
        # Random, and leave the generator where uniform would.
        import math
        import random
        from gqa_grader.steps.checking import Draw
        from gqa_grader.expected.inputs import leaves, rand_tensor
        for make in (lambda: random.Random(48), lambda: Draw("7:48:3"), lambda: Draw("7:48:3", hidden=True)):
            for shape in ((5,), (2, 3), (3, 2, 4), (1, 1, 1, 2)):
                drawn, by_uniform = make(), make()
                got = rand_tensor(drawn, *shape)
                flat = [by_uniform.uniform(-1.0, 1.0) for _ in range(math.prod(shape))]
                self.assertEqual(list(leaves(got)), flat)
                self.assertEqual(drawn.getstate(), by_uniform.getstate())

if __name__ == "__main__":
    unittest.main()


class WhatTheWorkerFound(unittest.TestCase):
    """A name the module lacks, or holds something else under: the worker sends what it found
    (it has no language), and the grader words it in the run's."""

    def test_each_is_said_in_the_runs_language(self):
        from gqa_grader.language import i18n
        from gqa_grader.running.exchange import _missing
        found = (["valid_g"], ["kv_head", "NoneType", "None"], ["group_heads", "int", "3"])
        english = [_missing(f) for f in found]
        self.assertEqual(english, ["the module has no valid_g", "kv_head is None, not a function",
                                   "group_heads is not a function but 3, of type int"])
        self.addCleanup(i18n.use, "en")
        for lang in i18n.LANGUAGES[1:]:
            i18n.use(lang)
            for f, said in zip(found, english):
                with self.subTest(lang=lang, found=f):
                    text = _missing(f)
                    self.assertIn(f[0], text)
                    self.assertNotIn("function", text)
                    self.assertNotIn("module", text)
                    self.assertNotEqual(text, said)
        self.assertEqual(_missing("not a list"), _missing([]))      # a worker's answer is never trusted
