"""The checks of Part 6 of the lab, the backward pass:
grouped_attention_backward, layer_backward.
"""

from ..expected.answers import ref_grouped_attention_backward, ref_layer_backward
from ..expected.compare import REL_TOL, expect
from ..expected.inputs import rand_tensor, random_weights
from ..language.i18n import _
from ..running.exchange import send_weights
from ..running.failures import Failure
from ..running.values import Record, _short
from .checking import ALL_HG, GROUPED, draw_hg, fields_of, step_into
from .heads import draw_heads
from .layer import WEIGHT_FIELDS, draw_sizes
from .refusals import CAUSAL, DATA, bad, sizes

STEPS = []                       # Part 6's steps, in order: each @step below adds its own
step = step_into(STEPS, "backward")


def types_grouped_attention_backward(c):
    """The calls of grouped_attention_backward that must raise TypeError."""
    return (bad("grouped_attention_backward", [c.q, c.k, c.v, [[["1.0"]]] * 2], DATA)
            + bad("grouped_attention_backward", [c.q, c.k, c.v, [[[1.0]], [[1.0]]]], CAUSAL, causal=1))


@step("grouped_attention_backward", len(ALL_HG), hidden=GROUPED,
      types=types_grouped_attention_backward)
def check_backward(module, case, rng):
    h, g = draw_hg(case, rng)
    q, k, v, causal, where = draw_heads(rng, case, h, g)
    d_out = rand_tensor(rng, h, len(q[0]), len(v[0][0]))
    got = module.call("grouped_attention_backward", q, k, v, d_out, causal=causal, fresh=True)
    if not isinstance(got, (list, tuple)) or len(got) != 3:
        raise Failure(_("case {case}: grouped_attention_backward must return (dq, dk, dv); got {value}").format(
            case=f"h={h}, g={g}", value=_short(got)))
    expect(list(got), list(ref_grouped_attention_backward(q, k, v, d_out, causal)), f"h={h}, g={g}, {where}",
           "grouped_attention_backward(q, k, v, d_out): dq, dk, dv", rel=REL_TOL, names=("dq", "dk", "dv"))


def types_layer_backward(c):
    """The calls of layer_backward that must raise TypeError."""
    return (sizes("layer_backward", [c.x, c.w, 1, c.x], 2, 2)
            + bad("layer_backward", [c.x, c.w, 1, [["a"] * 3] * 2], DATA)
            + bad("layer_backward", [c.x, c.w, 1, c.x], CAUSAL, causal=None))


@step("layer_backward", len(ALL_HG), hidden=GROUPED,
      types=types_layer_backward)
def check_layer_backward(module, case, rng):
    h, g, n, d, d_model, where = draw_sizes(rng, case)
    folded = case % 3 == 2                       # weights that already have g K/V heads
    fields = random_weights(rng, h, d_model, d, g if folded else None)
    x, d_y, causal = rand_tensor(rng, n, d_model), rand_tensor(rng, n, d_model), case % 2 == 1
    got = module.call("layer_backward", x, send_weights(module, fields), g, d_y, causal=causal, fresh=True)
    if not isinstance(got, (list, tuple)) or len(got) != 2 or not isinstance(got[1], Record):
        raise Failure(_("case {case}: layer_backward must return (dx, a Weights record of gradients); "
                        "got {value}").format(case=where, value=_short(got)))
    dx, grads = ref_layer_backward(x, *fields, g, d_y, causal)
    expect([got[0]] + fields_of(got[1], "layer_backward(...)[1]", "Weights", WEIGHT_FIELDS), [dx] + grads,
           _("{case}, causal={causal}, K/V heads given {count}").format(case=where, causal=causal,
                                                                       count=len(fields[1])),
           "layer_backward(x, weights, g, d_y): dx, grads.w_q, w_k, w_v, w_o", rel=REL_TOL,
           names=("dx",) + tuple(f"grads.{f}" for f in WEIGHT_FIELDS))
