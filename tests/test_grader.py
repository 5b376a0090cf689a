"""The grader, proven by mutants: each classic mistake must fail the step that ought
to catch it, and the real module must pass (Mutants); and its command line, whose
--show a student pastes to repeat a failure (CommandLine).  Modules that misbehave:
test_grading.py's Referee; the shared helpers: tests/grader_support.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from gqa_grader.steps import checks, tracks
from gqa_grader.running import exchange, failures
from gqa_grader.verdict import grading
from tests.helpers import early, heavy, start_early
from tests.grader_support import (ENDS_WRONG, SOURCE, UNDER_THE_STUB, WRONG_AT_A_PRIME, WRONG_AT_AN_END, mutate,
                                  in_kv_head, Module, grade_all, grade_trusted, Run, run_main)


WRONG_AXIS_ATTEND = '''def _single_head_attention(q, keys, v_cols, causal):
    scale = 1.0 / math.sqrt(len(q[0]))
    s = [[sum(map(mul, qi, kj)) * scale for kj in keys] for qi in q]
    p_cols = []
    for col in zip(*s):                       # softmax over the queries: the wrong axis
        top = max(col)
        e = [math.exp(x - top) for x in col]
        p_cols.append([x / sum(e) for x in e])
    return [[sum(map(mul, pi, col)) for col in v_cols] for pi in zip(*p_cols)]
'''


# The steps whose functions take an int size, data (tensors, or Weights holding them),
# a causal flag: each must refuse a wrong type with TypeError.
TYPED_SIZES = ("valid_g", "method_name", "kv_head", "group_heads", "fold_kv_mean", "repeat_kv",
               "attention", "init_weights", "fold_weights", "prepare_weights", "layer",
               "kv_cache_elements", "attention_multiplies", "block_multiplies", "cache_table",
               "multiplies_table", "KVCache", "decode_step", "decode_traffic", "layer_backward")


TYPED_DATA = ("fold_kv_mean", "repeat_kv", "single_head_attention", "grouped_attention", "fold_weights",
              "prepare_weights", "layer", "KVCache", "grouped_attention_backward", "layer_backward")


CAUSAL_ONE = ("single_head_attention", "grouped_attention", "attention_multiplies", "multiplies_table",
              "grouped_attention_backward")                 # given causal=1


CAUSAL_NONE = ("attention", "layer", "block_multiplies", "layer_backward")     # given causal=None


class Robust:
    """A mutant that breaks a rule of robustness: the part that must fail, for each of
    the lesson steps named (graded with it), while those lesson steps pass."""

    def __init__(self, part, *subjects):
        self.part, self.subjects = part, subjects


# (name, the step that must fail (or a Robust), text in gqa.py, its replacement)
MUTANTS = [
    ("strided grouping (i % g)", "kv_head",
     "_kv_head", "return query_head // group", "return query_head % g"),
    ("group_heads returning tuples", "group_heads",
     "group_heads", "return [list(range(j * group, (j + 1) * group)) for j in range(g)]",
     "return [tuple(range(j * group, (j + 1) * group)) for j in range(g)]"),
    ("tile instead of repeat-interleave", "repeat_kv",
     "_repeat_kv", "return [kv[_kv_head(i, h, g)] for i in range(h)]", "return [kv[i % g] for i in range(h)]"),
    ("sum instead of mean in the fold", "fold_kv_mean",
     "_mean", "mean = sum(vals) / n\n", "mean = sum(vals)\n"),
    ("keeping the first head instead of the mean", "fold_kv_mean",
     "_fold_kv_mean", "members = kv[j * group:(j + 1) * group]", "members = [kv[j * group]] * group"),
    ("a fold that changes its input in place", "fold_kv_mean",
     "fold_kv_mean", "    return _fold_kv_mean(kv, g)\n", "    folded = _fold_kv_mean(kv, g)\n    kv[0][0][0] = 0.0\n    return folded\n"),
    ("a fold that returns its input itself at g = h", "fold_kv_mean",
     "fold_kv_mean", "    return _fold_kv_mean(kv, g)\n", "    return kv if g == h else _fold_kv_mean(kv, g)\n"),
    ("a missing 1/sqrt(d) scale", "single_head_attention",
     "_softmax", "scale, exp = 1.0 / math.sqrt(len(q[0])), math.exp\n    rows = []",
     "scale, exp = 1.0, math.exp\n    rows = []"),
    ("softmax over the wrong axis", "single_head_attention", "_single_head_attention", None, WRONG_AXIS_ATTEND),
    ("a softmax without its max subtracted", Robust("extremes", "single_head_attention"),
     "_softmax", "top = max(s)                                       # subtracted: exp cannot overflow",
     "top = 0.0"),
    ("a causal mask off by one", "single_head_attention",
     "_softmax", "seen = i + 1 + m - n if causal else m              # query i sees",
     "seen = min(m, i + 2 + m - n) if causal else m              # query i sees"),
    ("an MHA path that rounds the keys (not MHA to the last bit at g = h)", "attention",
     "attention", "k_rep = _repeat_kv(_fold_kv_mean(k, g), h)",
     "k_rep = _repeat_kv([[[x * 3.0 / 3.0 for x in r] for r in m] for m in _fold_kv_mean(k, g)], h)"),
    ("grouped attention reading head i % g", "grouped_attention",
     "_grouped_attention", "j = _kv_head(i, h, g)                               # the key/value head query head i reads",
     "j = i % g"),
    ("a cache counter using h instead of g", "cache_table",
     "cache_table", "elements = _kv_cache_elements(layers, g, length, head_dim, batch)",
     "elements = _kv_cache_elements(layers, h, length, head_dim, batch)"),
    ("a cache counter missing the factor 2 for K and V", "kv_cache_elements",
     "_kv_cache_elements", "return 2 * layers * kv_heads * length * head_dim * batch",
     "return layers * kv_heads * length * head_dim * batch"),
    ("a count returned as a float", "kv_cache_elements",
     "_kv_cache_elements", "return 2 * layers * kv_heads * length * head_dim * batch",
     "return 2.0 * layers * kv_heads * length * head_dim * batch"),
    ("a multiply counter with g in the scores term", "attention_multiplies",
     "_attention_multiplies", "scores=h * pairs * d,", "scores=g * pairs * d,"),
    ("causal attention counted as full", "attention_multiplies",
     "_attention_multiplies", "pairs = n * (n + 1) // 2 if causal else n * n", "pairs = n * n"),
    ("a block without its MLP", "block_multiplies",
     "block_multiplies", "                           mlp, a.total + mlp)", "                           mlp, a.total)"),
    ("the output projection tallied as q_proj", "count_multiplies",
     "_output", '_project(rows, o_cols, "o_proj")', '_project(rows, o_cols, "q_proj")'),
    ("weights counted once per row, not once per call", "count_multiplies",
     "_project", "_tally.weight_reads += len(w_cols) * len(w_cols[0])",
     "_tally.weight_reads += len(w_cols) * len(w_cols[0]) * len(x)"),
    ("cache reads left at zero", "count_multiplies",
     "_cache_views", "_tally.cache_reads += len(kv) + len(vv)", "_tally.cache_reads += 0"),
    ("a cache that counts only its keys", "KVCache",
     "KVCache.elements", "for a in chain(self.k, self.v))", "for a in self.k)"),
    ("a decode step that forgets to append to the cache", "decode_step",
     "decode_step", "    cache._append(k, v)\n", "    cache._length += 1\n"),
    ("decode traffic counting h cache heads", "decode_traffic",
     "decode_traffic", "cache_reads = 2 * g * d * positions * batch", "cache_reads = 2 * h * d * positions * batch"),
    ("a backward pass that forgets to sum a shared head's gradients over its group",
     "grouped_attention_backward",
     "_grouped_attention_backward", "dk[j] = dk_i if dk[j] is None else [list(map(add, a, b)) for a, b in zip(dk[j], dk_i)]",
     "dk[j] = dk_i"),
    ("a backward pass through the fold that forgets to divide by h // g", "layer_backward",
     "_unfold", "return [[[x / group for x in row] for row in grads[_kv_head(i, h, g)]]",
     "return [[list(row) for row in grads[_kv_head(i, h, g)]]"),
    ("decode traffic reading the weights once per sequence of the batch", "decode_traffic",
     "decode_traffic", "weight_reads = n * d_model * d * (2 * h + 2 * g)",
     "weight_reads = batch * n * d_model * d * (2 * h + 2 * g)"),
    # The promises below are about values at the edges, identity, state and documented rules.
    ("init_weights drawing w_k before w_q", "init_weights",
     "init_weights", "Weights(w_q=draw(h, d_model, d, d_model),       # [h][d_model][d]\n"
     "                   w_k=draw(h, d_model, d, d_model),",
     "Weights(w_k=draw(h, d_model, d, d_model),       # [h][d_model][d]\n"
     "                   w_q=draw(h, d_model, d, d_model),"),
    ("init_weights with variance 1 / (3 fan_in)", "init_weights",
     "init_weights", "a = math.sqrt(3.0 / fan_in)", "a = math.sqrt(1.0 / fan_in)"),
    ("init_weights accepting h = 0", "init_weights",
     "init_weights", '_check_int("init_weights", name, value, low=1)', '_check_int("init_weights", name, value, low=0)'),
    ("a mean fold that overflows for two values of 1e308", Robust("extremes", "fold_kv_mean"),
     "_mean", "if (mean == _INF or mean == -_INF) and all(abs(x) <= _FLOAT_MAX for x in vals):", "if False:"),
    ("ragged rows not refused", Robust("refusals", "single_head_attention"),
     "_check_matrix", "if widths is None or len(widths) > 1 or (cols is not None and widths - {cols}):",
     "if widths is None or (cols is not None and widths - {cols}):"),
    ("repeat_kv accepting an h that g does not divide", "repeat_kv",
     "repeat_kv", '    _group_size("repeat_kv", h, g)\n', '    _check_int("repeat_kv", "h", h, low=1)\n'),
    ("grouped_attention accepting g that does not divide h", "grouped_attention",
     "grouped_attention", '    _check_divides("grouped_attention", h, g)\n', ""),
    ("prepare_weights folding the caller's Weights in place", "prepare_weights",
     "_fold_weights", "    return weights._replace(w_k=fold(weights.w_k), w_v=fold(weights.w_v))\n",
     "    weights.w_k[:], weights.w_v[:] = fold(weights.w_k), fold(weights.w_v)\n    return weights\n"),
    ("output_difference squaring unscaled values (nan for 1e200, 0 for 1e-200)",
     Robust("extremes", "output_difference"),
     "output_difference", "sa, sb = max(map(abs, fa), default=0.0), max(map(abs, fb), default=0.0)",
     "sa, sb = 1.0 if fa else 0.0, 1.0 if fb else 0.0"),
    ("output_difference letting a NaN through as a max_abs of 0.0", Robust("extremes", "output_difference"),
     "output_difference", "if any(map(math.isnan, fa)) or any(map(math.isnan, fb)):", "if False:"),
    ("output_difference returning None", "output_difference",
     "output_difference", "    return Difference(max_abs=max_abs, rel_l2=rel_l2, cosine=cosine)\n", "    return None\n"),
    ("kv_cache_elements accepting kv_heads = 0", Robust("refusals", "kv_cache_elements"),
     "kv_cache_elements", '_check_int(func, "kv_heads", kv_heads, low=1)', '_check_int(func, "kv_heads", kv_heads, low=0)'),
    ("a nested count_multiplies that adds nothing to the outer tally", "count_multiplies",
     "count_multiplies", "setattr(outer, name, getattr(outer, name) + getattr(tally, name))", "pass"),
    ("a KVCache whose len is its capacity", "KVCache",
     "KVCache.__len__", '"""Return the number of positions held."""\n        return self._length',
     '"""Return the number of positions held."""\n        return len(self.k[0]) // self.d'),
    # Refusals the docstrings state: each accepted by one mutant.
    ("single_head_attention accepting q and k of two head dims", Robust("refusals", "single_head_attention"),
     "_check_qkv", "if q and dk != d:", "if False:"),
    ("attention accepting k and v with g heads", Robust("refusals", "attention"), "attention", "if len(k) != h:", "if False:"),
    ("grouped_attention accepting k and v of two head counts", Robust("refusals", "grouped_attention"),
     "_check_multihead", "if len(k) != len(v):", "if False:"),
    ("fold_weights accepting w_k with neither h nor g heads", Robust("refusals", "fold_weights"),
     "_check_weights", "if heads not in (h, g):", "if False:"),
    ("layer accepting weights prepared for another g", Robust("refusals", "layer"), "_weights_for", "if weights.g != g:", "if False:"),
    ("output_difference accepting four levels", Robust("refusals", "output_difference"), "_flatten", "if len(where) == 3:", "if False:"),
    ("kv_cache_elements accepting a negative count", Robust("refusals", "kv_cache_elements"),
     "kv_cache_elements", '_check_int(func, "layers", layers)', '_check_int(func, "layers", layers, low=None)'),
    ("a KVCache of d = 0", Robust("refusals", "KVCache"), "KVCache.__init__", '_check_int("KVCache", "d", d, low=1, high=MAX_ALLOCATION)',
     '_check_int("KVCache", "d", d, low=0, high=MAX_ALLOCATION)'),
    ("decode_step with a cache made for another g", Robust("refusals", "decode_step"),
     "decode_step", "if cache.g != g:", "if False:"),
    # Promises the docstrings state: edges, zero counts, row types, refusal messages.
    ("a softmax that gives NaN for an infinite score", Robust("extremes", "single_head_attention"),
     "_softmax", "        if top == _INF and all(map(eq, s, s)):", "        if False:"),
    ("a softmax where an infinite score hides a NaN one", Robust("extremes", "single_head_attention"),
     "_softmax", "if top == _INF and all(map(eq, s, s)):", "if top == _INF:"),
    ("a softmax that drops NaN scores as -inf", Robust("extremes", "single_head_attention"),
     "_softmax", "        top = max(s)                                       # subtracted: exp cannot overflow",
     "        s = [-_INF if x != x else x for x in s]\n        top = max(s)"),
    ("cache_table dividing by zero for layers = 0", "cache_table",
     "cache_table", "elements / mha if mha else 1.0))", "elements / mha))"),
    ("multiplies_table dividing by zero for n = 0", "multiplies_table",
     "multiplies_table", "c / r if r else 1.0 for c, r in", "c / r for c, r in"),
    ("decode_traffic dividing by zero for n = 0", "decode_traffic",
     "decode_traffic", "ratio = (cache_reads + weight_reads) / multiplies if multiplies else 0.0",
     "ratio = (cache_reads + weight_reads) / multiplies"),
    ("rows that must be lists (tuples and array('d') refused)",
     Robust("extremes", "fold_kv_mean", "single_head_attention", "grouped_attention", "layer"),
     "_check_matrix", '    _check_list(func, what, mat, "a list of rows")\n',
     '    _check_list(func, what, mat, "a list of rows")\n    if set(map(type, mat)) - {list}:\n'
     '        raise TypeError(f"{func}: {what} rows must be lists")\n'),
    ("output_difference refusing tuple and array('d') rows", Robust("extremes", "output_difference"),
     "_flatten", "    sequences = (list, tuple, array)\n    fa, fb", "    sequences = (list,)\n    fa, fb"),
    ("fold_weights keeping the input's tuple rows", Robust("extremes", "fold_weights"),
     "fold_weights", "_lists(t)            # tuple or array rows: lists", "list(t)            # tuple or array rows: lists"),
    ("prepare_weights holding lists where it promises tuples", "prepare_weights",
     "_prepare_weights", "return cols if once else tuple(cols)", "return cols if once else list(cols)"),
    ("a refusal whose message does not name its function", Robust("refusals", "kv_head"),
     "kv_head", 'raise GQAError(f"kv_head: query_head must be in', 'raise GQAError(f"query_head must be in'),
    ("kv_head's out-of-range refusal without the query head at fault", Robust("refusals", "kv_head"),
     "kv_head", 'f"got query_head={query_head}")', 'f"got a larger one")'),
    ("a decode_step that appends to the cache before refusing", Robust("refusals", "decode_step"),
     "decode_step", '    if len(x_t) != w.d_model:\n        raise GQAError(f"decode_step: x_t has',
     '    if len(x_t) != w.d_model:\n        cache._append([[0.0] * w.d] * g, [[0.0] * w.d] * g)\n'
     '        raise GQAError(f"decode_step: x_t has'),
    ("group_heads returning a list that holds itself", "group_heads",
     "group_heads", "    return [list(range(j * group, (j + 1) * group)) for j in range(g)]",
     "    out = [list(range(j * group, (j + 1) * group)) for j in range(g)]\n    out.append(out)\n"
     "    return out"),
    ("multiplies_table with ratios as plain tuples", "multiplies_table",
     "multiplies_table", "ratio = Multiplies(*(c / r if r else 1.0", "ratio = tuple((c / r if r else 1.0"),
    ("the weighted sum tallied with d instead of d_v", "count_multiplies",
     "_single_head_attention", "_tally.weighted_sum += seen * len(v_cols)", "_tally.weighted_sum += seen * len(qi)"),
    # Holes once: fields a check skipped, and the other side of a refusal's edge.
    ("multiplies_table rows named 'xyz', every per-term count and ratio 0", "multiplies_table",
     "multiplies_table", "rows.append(MultipliesRow(_method_name(h, g), g, h // g, counts, ratio))",
     "rows.append(MultipliesRow('xyz', g, h // g, Multiplies(0, 0, 0, 0, 0, 0, counts.total),\n"
     "                                 Multiplies(0, 0, 0, 0, 0, 0, ratio.total)))"),
    ("multiplies_table dividing each term by MHA's total", "multiplies_table",
     "multiplies_table", "c / r if r else 1.0 for c, r in zip(counts, mha)", "c / mha.total if mha.total else 1.0 for c in counts"),
    ("cache_table ignoring batch", "cache_table",
     "cache_table", "elements = _kv_cache_elements(layers, g, length, head_dim, batch)",
     "elements = _kv_cache_elements(layers, g, length, head_dim, 1)"),
    ("block_multiplies ignoring causal", "block_multiplies",
     "block_multiplies", "a = _attention_multiplies(n, h, g, d, d_model, _check_causal(func, causal))",
     "_check_causal(func, causal)\n    a = _attention_multiplies(n, h, g, d, d_model, False)"),
    ("kv_head accepting query_head == h", Robust("refusals", "kv_head"), "kv_head", "if query_head >= h:", "if query_head > h:"),
    ("kv_head accepting query_head == -1", Robust("refusals", "kv_head"),
     "kv_head", '_check_int("kv_head", "query_head", query_head)', '_check_int("kv_head", "query_head", query_head, low=-1)'),
    ("kv_cache_elements accepting a negative length", Robust("refusals", "kv_cache_elements"),
     "kv_cache_elements", '_check_int(func, "length", length)', '_check_int(func, "length", length, low=None)'),
    ("multiplies_table accepting n = -1", Robust("refusals", "multiplies_table"),
     "multiplies_table", 'low=0 if name == "n" else 1)', 'low=None if name == "n" else 1)'),
    ("cache_table accepting a negative batch", Robust("refusals", "cache_table"),
     "cache_table", 'low=1 if name in ("h", "head_dim") else 0)', 'low=1 if name in ("h", "head_dim") else None)'),
    ("decode_traffic accepting batch = 0", Robust("refusals", "decode_traffic"),
     "decode_traffic", '_check_int(func, "batch", batch, low=1)', '_check_int(func, "batch", batch, low=0)'),
    ("block_multiplies accepting mlp_matrices = 0", Robust("refusals", "block_multiplies"),
     "block_multiplies", '        _check_int(func, name, value, low=1)\n    a = _attention',
     '        _check_int(func, name, value, low=0)\n    a = _attention'),
    ("attention_multiplies accepting d = 0", Robust("refusals", "attention_multiplies"),
     "attention_multiplies", '    _check_int(func, "d", d, low=1)\n    _check_int(func, "d_model", d_model, low=1)\n    return _attention',
     '    _check_int(func, "d", d, low=0)\n    _check_int(func, "d_model", d_model, low=1)\n    return _attention'),
    # The rules of types (TypeError, naming the function), and valid_g's refusal below 0.
    ("valid_g accepting True and 8.0 (h = int(h))", Robust("types", "valid_g"),
     "valid_g", '    _check_int("valid_g", "h", h, low=1)\n',
     '    h = int(h)\n    if h < 1:\n        raise GQAError(f"valid_g: h must be positive; got h={h}")\n'),
    ("valid_g accepting 8.0 (bools refused, then h = int(h))", Robust("types", "valid_g"),
     "valid_g", '    _check_int("valid_g", "h", h, low=1)\n',
     '    if isinstance(h, bool):\n        raise TypeError(f"valid_g: h must be an int, not bool")\n'
     '    h = int(h)\n    if h < 1:\n        raise GQAError(f"valid_g: h must be positive; got h={h}")\n'),
    ("valid_g returning [] for a negative h", "valid_g",
     "valid_g", '    _check_int("valid_g", "h", h, low=1)\n',
     '    _check_int("valid_g", "h", h, low=None)\n    if h == 0:\n'
     '        raise GQAError("valid_g: h must be positive; got h=0")\n    if h < 0:\n        return []\n'),
    ("every size made an int with int() (True and 8.0 accepted)", Robust("types", *TYPED_SIZES),
     "_check_int", "    if isinstance(value, bool) or not isinstance(value, int):\n        raise TypeError(",
     "    value = int(value)\n    if False:\n        raise TypeError("),
    ("a causal flag checked with `in (True, False)` (1 accepted)", Robust("types", *CAUSAL_ONE),
     "_check_causal", "    if not isinstance(causal, bool):\n", "    if causal not in (True, False):\n"),
    ("a causal flag made bool(causal) (None accepted)", Robust("types", *CAUSAL_NONE),
     "_check_causal", "    if not isinstance(causal, bool):\n", "    causal = bool(causal)\n    if False:\n"),
    ("values never checked for their type (a tensor of strs accepted)", Robust("types", *TYPED_DATA),
     "_check_values", "    if not kinds <= _NUMBERS:\n", "    if False:\n"),
    ("output_difference accepting values that are not numbers", Robust("types", "output_difference"),
     "_flatten", "                if type(value) not in _NUMBERS:\n", "                if False:\n"),
    ("sizes refused only when bool or float (a str reaches Python's own TypeError)",
     Robust("types", *TYPED_SIZES),
     "_check_int", "    if isinstance(value, bool) or not isinstance(value, int):\n        raise TypeError(",
     "    if isinstance(value, (bool, float)):\n        raise TypeError("),
    ("values refused only when str or None (a bool accepted as a number)",
     Robust("types", "fold_kv_mean", "repeat_kv", "single_head_attention"),
     "_check_values", "    if not kinds <= _NUMBERS:\n", "    if str in kinds or type(None) in kinds:\n"),
    ("a causal flag refused only when None or an int (a str accepted)",
     Robust("types", *(CAUSAL_ONE + CAUSAL_NONE)),
     "_check_causal", "    if not isinstance(causal, bool):\n", "    if causal is None or type(causal) is int:\n"),
]


def steps_of(step):
    """The steps a mutant must fail: one name, or a tuple of them."""
    return (step,) if isinstance(step, str) else tuple(step)


def mutant_jobs(step, source):
    """(source, options) to grade a mutant with: its step; for a Robust one, its part's
    case for each function it names (one job each: the messages differ), then the
    lesson step it names first, which must still pass."""
    if isinstance(step, Robust):
        part = tracks.BY_NAME[step.part]
        return ([(source, {"only": [step.part], "case": part.subjects.index(name)}) for name in step.subjects]
                + [(source, {"only": [step.subjects[0]], "cases": 0})])
    return [(source, {"only": list(steps_of(step)), "cases": 0})]


def result_of(results, step):
    """The result that must fail of a mutant's results: its step's, or its Robust part's
    (for the first lesson step it names)."""
    if isinstance(step, Robust):
        return results[step.subjects[0]][step.part]
    return results[step]


def regroup(step, graded):
    """The results of mutant_jobs(step, ...): the one job's; for a Robust mutant, by lesson
    step {name: the part's result for it}, the first also with its lesson step's result."""
    if isinstance(step, Robust):
        results = {name: dict(job) for name, job in zip(step.subjects, graded)}
        results[step.subjects[0]].update(graded[-1])
        return results
    return graded[0]


# Mutants whose --show output, pasted into python beside them, must repeat their failure.
SHOWN = ["strided grouping (i % g)", "repeat_kv accepting an h that g does not divide",
         "prepare_weights folding the caller's Weights in place",
         "a nested count_multiplies that adds nothing to the outer tally",
         "a KVCache whose len is its capacity", "a decode step that forgets to append to the cache",
         "a fold that changes its input in place", "a fold that returns its input itself at g = h",
         "a decode_step that appends to the cache before refusing",
         "valid_g accepting True and 8.0 (h = int(h))", "valid_g returning [] for a negative h"]


# Of those, the ones whose paste beside the real gqa.py must raise its TypeError.
SHOWN_TYPES = ["valid_g accepting True and 8.0 (h = int(h))"]


# Pastes each text into a fresh interactive console beside its module, as a student
# pastes into python started in the module's folder, and prints what each showed:
# [[stdout, stderr], ...] (file paths left out).  Each text's gqa is imported afresh
# from its own folder.
PASTE = """
import code, contextlib, importlib, io, json, re, sys
shown = []
sys.path.insert(0, "")
for folder, text in json.load(sys.stdin):
    sys.modules.pop("gqa", None)
    sys.path[0] = folder
    importlib.invalidate_caches()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        console = code.InteractiveConsole({})
        for line in text.splitlines() + [""]:
            console.push(line)
    shown.append([out.getvalue(), re.sub(r'File "[^"]*"', "File", err.getvalue())])
print(json.dumps(shown))
"""


def paste(jobs):
    """What each text shows, for each (texts, source): each text pasted into a python
    console beside source, in one python (each module in a folder of its own)."""
    folders = [tempfile.mkdtemp() for _ in jobs]
    try:
        pasted = []
        for folder, (texts, source) in zip(folders, jobs):
            with open(os.path.join(folder, "gqa.py"), "w", encoding="utf-8") as f:
                f.write(source)
            pasted += [[folder, text] for text in texts]
        run = subprocess.run([sys.executable, "-I", "-S", "-c", PASTE], input=json.dumps(pasted),
                             capture_output=True, text=True, cwd=folders[0], timeout=60)
        shown = iter(json.loads(run.stdout))
        return [[next(shown) for _ in texts] for texts, _ in jobs]
    finally:
        for folder in folders:
            shutil.rmtree(folder)


def main_run(*args):
    return Run(*run_main(*args))


@heavy
class Mutants(unittest.TestCase):
    EARLY = ("graded", "alone", "trusted_after_trouble")

    @staticmethod
    def graded():
        """Every mutant graded once, by the step that must catch it (and a few more runs of
        variants of gqa.py); shared by the tests, and CommandLine's pastes."""
        wrong = mutate("_kv_head", "return query_head // group", "return query_head // group if (h, g) != (14, 7) "
                       "else 0")
        mutant = [mutant_jobs(step, mutate(where, old, new)) for _, step, where, old, new in MUTANTS]
        jobs = ([job for jobs in mutant for job in jobs]
                + [(SOURCE, {"cases": 0, "only": ["kv_cache_elements", "output_difference"]})]
                + [(wrong, {"seed": seed, "cases": 0, "only": ["kv_head"]}) for seed in (1, 2, 3)])
        # A size of the wrong type raising a TypeError subclass (passes), or GQAError (fails).
        raising = [mutate("_check_int", 'raise TypeError(f"{func}: {name} must be an int, "',
                          f'raise {error}(f"{{func}}: {{name}} must be an int, "') + extra
                   for error, extra in (("_SizeError", "\n\nclass _SizeError(TypeError):\n    pass\n"),
                                        ("GQAError", ""))]
        jobs += [(source, {"cases": 0, "only": ["valid_g", "types"]}) for source in raising]
        jobs += [(SOURCE + wrong_end, {"cases": 3, "fail_fast": False, "only": list(ENDS_WRONG)})
                 for wrong_end in WRONG_AT_AN_END.values()]
        jobs += [(SOURCE + WRONG_AT_A_PRIME, {"cases": 5, "fail_fast": False, "only": ["kv_head", "kv_cache_elements"]})]
        jobs += [(mutate("valid_g", None, UNDER_THE_STUB), {"cases": 0, "only": ["valid_g"]})]
        jobs += [(mutate("_attention_multiplies", "scores=h * pairs * d,\n                       weighted_sum=h * pairs",
                         "scores=g * pairs * d,\n                       weighted_sum=g * pairs"),   # steps 16 and 17's
                  {"cases": 0, "only": ["attention_multiplies", "block_multiplies"]})]
        graded = grade_trusted(jobs)
        mutants, at = [], 0
        for (_, step, *_), made in zip(MUTANTS, mutant):
            mutants.append(regroup(step, graded[at:at + len(made)]))
            at += len(made)
        graded = graded[at:]
        return {"mutants": mutants, "systematic": graded[0], "one_pair": graded[1:4],
                "subclass": graded[4], "gqa_error_for_type": graded[5], "wrong_at_an_end": graded[6:8],
                "wrong_at_a_prime": graded[8], "under_the_stub": graded[9], "same_mistake": graded[10]}

    def test_a_mistake_a_later_step_takes_from_an_earlier_one_says_so(self):
        # Step 17 named step 16's mistake as its own, a student looked for it in correct code.
        graded = early(self.graded)["same_mistake"]
        self.assertEqual([graded[n].get("mistake") for n in ("attention_multiplies", "block_multiplies")],
                         ["body_g", "body_g"])
        self.assertEqual(graded["attention_multiplies"]["notes"], [])
        self.assertIn("the same mistake as step 16, attention_multiplies's: this step's function may take it "
                      "from that one", graded["block_multiplies"]["notes"])

    def test_a_step_written_under_its_stubs_raise_is_told_the_lines_never_run(self):
        # It read "not started" and nothing more, the code written below the raise.
        step = early(self.graded)["under_the_stub"]["valid_g"]
        self.assertEqual((step["status"], step.get("stub")), ("not started", False))
        self.assertIn("the lines under its raise NotImplementedError never run: delete that line", step["message"])
        from gqa_grader.verdict.grading import code_after
        stub = b'def f(h):\n    raise NotImplementedError("step 1: "\n                              "more")\n'
        self.assertFalse(code_after(stub, 2))                                 # a bare stub
        self.assertTrue(code_after(stub + b"    # mine\n\n    return 1\n", 2))
        self.assertFalse(code_after(stub + b"\n\ndef g():\n    return 1\n", 2))   # the next function's
        self.assertFalse(code_after(stub, 9))

    def test_a_module_wrong_at_an_end_of_the_knob_earns_no_hidden_case(self):
        # The hidden cases drew 1 < g < h alone: a module wrong at MHA (g = h) or MQA (g = 1),
        # or that never refused there, failed public cases and lost no point.
        for end, graded in zip(WRONG_AT_AN_END, early(self.graded)["wrong_at_an_end"]):
            for name in ENDS_WRONG:
                with self.subTest(end=end, step=name):
                    result = graded[name]
                    if end == "MHA" and name == "kv_cache_elements":    # it has no h: nothing wrong
                        self.assertEqual((result["status"], result["hidden"]), ("passed", [3, 3]))
                        continue
                    self.assertEqual(result["hidden"], [0, 3])
                    self.assertLess(result["public"][0], result["public"][1])
        # Nor one wrong at g = h for a prime h alone (no grouping proper: the ends draw it too),
        # nor a cache count wrong past 4 key/value heads (the hidden cases stopped at 4).
        graded = early(self.graded)["wrong_at_a_prime"]
        for name in ("kv_head", "kv_cache_elements"):
            with self.subTest(step=name):
                self.assertLess(graded[name]["hidden"][0], graded[name]["hidden"][1], graded[name])

    def test_every_mutant_fails_the_step_that_ought_to_catch_it(self):
        # Each mutant is graded by the one step that should catch it: the
        # whole grader on every mutant proves no more and takes far longer.
        self.assertGreaterEqual(len(MUTANTS), 24)
        mutants = early(self.graded)["mutants"]
        self.assertEqual(len(mutants), len(MUTANTS))
        for (name, step, _where, old, new), results in zip(MUTANTS, mutants):
            if isinstance(step, Robust):          # the part fails; the lesson step named first passes
                first = step.subjects[0]
                with self.subTest(mutant=name, step=first):
                    self.assertEqual(results[first][first]["status"], "passed", f"{name}: lesson step {first} failed")
                for subject in step.subjects:
                    with self.subTest(mutant=name, part=step.part, step=subject):
                        self.assertEqual(results[subject][step.part]["status"], "failed",
                                         f"{name}: {step.part} passed for {subject}")
                        self.assertEqual(results[subject][step.part]["cases"], 1)
                continue
            for step in steps_of(step):
                with self.subTest(mutant=name, step=step):
                    self.assertIn(step, tracks.LESSON)
                    self.assertIn(step, list(results))
                    self.assertEqual(results[step]["status"], "failed", f"{name}: step {step} passed")
                    self.assertTrue(results[step]["message"])

    def test_messages_name_fields_sizes_and_values(self):
        # What each mutant's failure says, checked against the mutant's own mistake.
        graded = {name: results for (name, *_), results in zip(MUTANTS, early(self.graded)["mutants"])}
        # A record's field by name, not by index.
        message = graded["init_weights drawing w_k before w_q"]["init_weights"]["message"]
        self.assertRegex(message, r"first difference at w_[qk]\[0\]\[0\]\[0\]: expected")
        # Only the sizes the function takes (fold_weights has no n).
        message = graded["fold_weights keeping the input's tuple rows"]["fold_weights"]["extremes"]["message"]
        self.assertRegex(message, r"^case h=\d+, g=\d+, d=\d+, d_model=\d+, tuple rows: ")
        self.assertIn("first difference at w_q[0][0]: expected a list of", message)
        # A part of a result is not called: it must be a record, not return one.
        message = graded["multiplies_table with ratios as plain tuples"]["multiplies_table"]["message"]
        self.assertIn("each row's ratio must be a Multiplies record (with the fields q_proj, k_proj, v_proj, scores, "
                      "weighted_sum, o_proj, total); got a tuple",
                      message)
        # Expected and got, however long (cut in the middle: --show has the whole call).
        message = graded["tile instead of repeat-interleave"]["repeat_kv"]["message"]
        self.assertRegex(message, r"\nexpected: \[.*\ngot:      \[.*\nfirst difference at \[1\]")
        message = graded["group_heads returning a list that holds itself"]["group_heads"]["message"]
        self.assertRegex(message, r"\nexpected: \[\[0\]\]\ngot:      \[\[0\], \[\[0\], .* \.\.\. .*\]\]\]\] "
                                  r"\(\d+ characters; --show prints the call\)\nfirst difference")
        # A tally's inputs: each call made inside count_multiplies(), by name.
        result = graded["a nested count_multiplies that adds nothing to the outer tally"]["count_multiplies"]
        self.assertEqual([c["fn"] for c in result["inputs"]["calls"]], ["layer"])
        self.assertEqual(set(result["inputs"]["calls"][0]), {"fn", "x", "weights", "g", "causal"})

    def test_wrong_types_fail_saying_what_was_expected(self):
        # Each rule of types, broken by a mutant, fails with the call and the rule it broke.
        graded = {name: results for (name, *_), results in zip(MUTANTS, early(self.graded)["mutants"])}

        def message(mutant, step):
            kind = next(m[1] for m in MUTANTS if m[0] == mutant)
            results = graded[mutant][step]
            return results[kind.part]["message"] if isinstance(kind, Robust) else results["message"]
        self.assertEqual(message("valid_g accepting True and 8.0 (h = int(h))", "valid_g"),
                         "valid_g(True) returned [1] instead of raising TypeError (a size is an int, "
                         "and a bool is not one)")
        self.assertEqual(message("valid_g accepting 8.0 (bools refused, then h = int(h))", "valid_g"),
                         "valid_g(8.0) returned [1, 2, 4, 8] instead of raising TypeError (a size is an "
                         "int, not a float)")
        self.assertEqual(message("valid_g returning [] for a negative h", "valid_g"),
                         "valid_g(-4) returned [] instead of raising GQAError")
        for step in TYPED_SIZES:
            with self.subTest(step=step):
                self.assertRegex(message("every size made an int with int() (True and 8.0 accepted)", step),
                                 rf"^\$?{step}\(.*True.*\) (returned .* instead of raising TypeError|raised "
                                 rf"GQAError: .*, not TypeError) \(a size is an int, and a bool is not one")
        for mutant, steps, flag in (("a causal flag checked with `in (True, False)` (1 accepted)", CAUSAL_ONE, 1),
                                    ("a causal flag made bool(causal) (None accepted)", CAUSAL_NONE, None)):
            for step in steps:
                with self.subTest(step=step, causal=flag):
                    self.assertRegex(message(mutant, step), rf"^{step}\(.*, causal={flag}\) returned .* instead "
                                                            rf"of raising TypeError \(causal is True or False\)$")
        # Strs where numbers go: returned, or a TypeError of Python's own, which names no function.
        for step in TYPED_DATA + ("output_difference",):
            mutant = ("output_difference accepting values that are not numbers" if step == "output_difference"
                      else "values never checked for their type (a tensor of strs accepted)")
            with self.subTest(step=step):
                self.assertRegex(message(mutant, step), r"( instead of raising TypeError \(data is nested lists "
                                                        r"of ints and floats\)|\), which does not name the "
                                                        r"function, [\w.]+ \(a TypeError's message names)")

    CHOSEN = (0, 8, 21)                                 # lesson mutants, each graded by one step

    @staticmethod
    def alone():
        """A few mutants graded as a student's module is, each in a worker of its own."""
        return grade_all([(mutate(*MUTANTS[i][2:]), {"only": list(steps_of(MUTANTS[i][1])), "cases": 0})
                          for i in Mutants.CHOSEN])

    def test_mutants_in_one_worker_grade_as_in_workers_of_their_own(self):
        # Trusted's worker imports each mutant afresh: the same results as grade()'s.
        mutants = early(self.graded)["mutants"]
        for i, results in zip(self.CHOSEN, early(self.alone)):
            with self.subTest(mutant=MUTANTS[i][0]):
                self.assertEqual(results, mutants[i])

    @staticmethod
    def trusted_after_trouble():
        """One Trusted worker grading a module that ends its process, one that cannot be
        imported, then the lab: what each gave."""
        ends = in_kv_head("    import os\n    os._exit(0)\n")
        graded = []
        with grading.Trusted() as trusted:
            for source in (ends, "def f(:\n", SOURCE):
                with Module(source) as path:
                    try:
                        graded.append({r.name: r.as_json() for r in trusted.grade(path, 1, 0, ["kv_head"])})
                    except failures.Refused as err:
                        graded.append(str(err))
        return graded

    def test_a_trusted_worker_goes_on_after_a_module_that_ends_it_or_will_not_import(self):
        ends, syntax, lab = early(self.trusted_after_trouble)
        self.assertIn("the module ended its process (status 0)", ends["kv_head"]["message"])
        self.assertIn("has a syntax error, line 1", syntax)
        self.assertEqual(lab["kv_head"]["status"], "passed")

    def test_every_step_has_systematic_cases(self):
        # So --cases 0 never passes a step on no case at all.
        for st in checks.STEPS:
            self.assertGreater(st.systematic, 0, st.name)
        results = early(self.graded)["systematic"]
        self.assertEqual(set(results), {"kv_cache_elements", "output_difference"})
        for r in results.values():
            self.assertEqual(r["status"], "passed")
            self.assertEqual(r["cases"], r["cases_passed"])
            self.assertGreater(r["cases"], 0)

    def test_a_wrong_type_raises_a_typeerror_or_a_subclass_never_gqaerror(self):
        graded = early(self.graded)
        self.assertEqual(graded["subclass"]["types"]["status"], "passed")
        self.assertEqual(graded["gqa_error_for_type"]["valid_g"]["status"], "passed")   # the lesson
        result = graded["gqa_error_for_type"]["types"]
        self.assertEqual(result["status"], "failed")
        self.assertEqual(result["message"].splitlines()[0],
                         "valid_g(True) raised GQAError: valid_g: h must be an int, not bool (True), not "
                         "TypeError (a size is an int, and a bool is not one; GQAError is for values that "
                         "break the lab's rules, TypeError for arguments of the wrong type)")

    def test_a_module_wrong_at_one_pair_fails_on_every_seed(self):
        # The systematic cases hold every (h, g) with h <= 16, whatever the seed.
        graded = early(self.graded)["one_pair"]
        self.assertEqual(len(graded), 3)
        for results in graded:
            self.assertEqual(results["kv_head"]["status"], "failed")


@heavy
class CommandLine(unittest.TestCase):
    EARLY = ("runs", "pastes")

    @staticmethod
    def runs():
        """The command's runs the tests below read (cli.main; the modules in workers)."""
        runs = {"fresh seed": run_main("--cases", "1", "--only", "valid_g")}
        with Module(mutate(*MUTANTS[0][2:])) as path:
            runs["path"], runs["cwd"] = path, os.getcwd()
            runs["failure"] = run_main("--module", path, "--seed", "3", "--only", "kv_head")
            runs["one case"] = run_main("--module", path, "--seed", "3", "--only", "kv_head", "--case", "6",
                                        "--show")
        # method_name(h, g) passes; the failing call is the refusal with a bad g.
        with Module(mutate("method_name", '    _group_size("method_name", h, g)\n', "")) as path:
            runs["refused"] = run_main("--module", path, "--seed", "1", "--only", "2", "--case", "0", "--show",
                                       "--json")
        runs["json"] = [run_main("--seed", "5", "--json", "--only", "kv_head,layer", "--cases", "1")
                        for _ in range(2)]
        case = [st for st in grading.ALL_STEPS if st.name == "types"][0].subjects.index("decode_step")
        runs["typed"] = run_main("--seed", "1", "--only", "types", "--case", str(case), "--show", "--json")
        runs["quiet"] = run_main("-q", "--seed", "1", "--cases", "0", "--only", "valid_g,kv_head")
        runs["by number"] = run_main("-q", "--seed", "1", "--cases", "0", "--only", "3,1", "--json")
        return runs

    def test_a_run_prints_its_fresh_seed_and_the_graders_version(self):
        # The real module passing every step with the default cases is the README's
        # sample, checked in tests/test_docs.py.
        run = Run(*early(self.runs)["fresh seed"])
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        first = run.stdout.splitlines()[0]
        self.assertRegex(first, rf"^grading ./gqa.py \(grader {grading.GRADER_VERSION}; the public cases: "
                                rf"the systematic ones and {grading.PUBLIC_CASES} random ones per step, "
                                rf"then 1 hidden one from seed (\d+);.* repeat with: python grader.py "
                                rf"--seed \1 --only valid_g --cases 1; shown in English; others: --lang ja \(日本語\), "
                                rf"--lang ko \(한국어\)\)$")   # the steps it graded, and the other languages
        self.assertEqual(run.stdout.splitlines()[-1], "1 passed, 0 failed")

    def test_a_failure_shows_the_case_and_the_command_for_that_case(self):
        runs = early(self.runs)
        path, run, one = runs["path"], Run(*runs["failure"]), Run(*runs["one case"])
        # The first line shows the module's path from the folder the grader ran in, or whole
        # when that is two folders up or more (a project checked out beside the temporary folders).
        rel = os.path.relpath(path, runs["cwd"])
        shown = path if rel.startswith(os.path.join(os.pardir, os.pardir)) else rel
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertRegex(run.stdout, r"step  3  FAIL  kv_head .*\n\s+case h=4, g=2")
        self.assertIn("first difference at [1]: expected 0, got 1", run.stdout)
        self.assertIn(f"reproduce: python grader.py --module {path} --only kv_head --case 6 --show",
                      run.stdout)                  # a public case: the same in every run, no seed
        self.assertEqual(one.returncode, 1)
        self.assertEqual(one.stdout.splitlines()[0],     # what it graded: the one case, not a run
                         f"grading {shown} (grader {grading.GRADER_VERSION}; case 6 of step kv_head "
                         f"alone; floats to rel 1e-09, abs 1e-12; repeat with: python grader.py "
                         f"--module {path} --only kv_head --case 6 --show; shown in English; others: --lang ja (日本語), "
                         f"--lang ko (한국어))")
        self.assertIn("\nfrom gqa import *\n[kv_head(0, 4, 2), kv_head(1, 4, 2), kv_head(2, 4, 2), "
                      "kv_head(3, 4, 2)]\n", one.stdout)
        self.assertRegex(one.stdout.splitlines()[-1], r"^0 passed, 1 failed$")

    def test_show_prints_the_refused_call_itself(self):
        run = Run(*early(self.runs)["refused"])
        step = json.loads(run.stdout)["steps"][0]
        self.assertRegex(step["message"], r"returned '[MGQ]{2}A' instead of raising GQAError")
        self.assertRegex(step["message"], r"method_name\(1, (0|2|-1)\)")
        bad = int(step["message"].split("method_name(1, ")[1].split(")")[0])
        self.assertEqual(step["inputs"], {"arg0": 1, "arg1": bad})
        self.assertEqual(step["show"], f"from gqa import *\nmethod_name(1, {bad})\n")

    def test_a_whole_case_pasted_runs_past_its_typeerror_refusals(self):
        # The types part's case of decode_step (--case K --show) holds the calls of the wrong types, each
        # refused call but the last inside try/except TypeError: pasted, it runs to the end.
        run = Run(*early(self.runs)["typed"])
        text = json.loads(run.stdout)["steps"][0]["show"]
        self.assertIn("\nexcept TypeError as e:\n    print(e)\n", text)
        [[(out, err)]] = paste([([text], SOURCE)])
        self.assertIn("decode_step: g must be an int, not bool (True)\n", out)
        self.assertIn("decode_step: g must be an int, not float (1.0)\n", out)
        self.assertRegex(err, r"\nTypeError: decode_step: x_t must be a list of floats, not str\n$")

    @staticmethod
    def pastes():
        """Each shown mutant's failing call pasted beside the mutant, and all of them beside
        the real gqa.py: [(text, what it showed beside its mutant, beside gqa.py)]."""
        graded = {m[0]: results for m, results in zip(MUTANTS, early(Mutants.graded)["mutants"])}
        chosen = [m for m in MUTANTS if m[0] in SHOWN]
        texts = [result_of(graded[name], step)["show"] for name, step, *_ in chosen]
        shown = paste([([text], mutate(where, old, new)) for (_, _, where, old, new), text in zip(chosen, texts)]
                      + [(texts, SOURCE)])
        return [[text, wrong, right] for text, (wrong,), right in zip(texts, shown[:-1], shown[-1])]

    def test_what_show_prints_repeats_the_failure_when_pasted(self):
        # Each mutant's shown call, run in an interactive console beside the mutant and
        # beside the real gqa.py, gives different results.
        chosen = [m for m in MUTANTS if m[0] in SHOWN]
        self.assertEqual(len(chosen), len(SHOWN))
        graded = {m[0]: results for m, results in zip(MUTANTS, early(Mutants.graded)["mutants"])}
        pasted = early(self.pastes)
        self.assertEqual(len(pasted), len(chosen))
        for (name, step, *_), (text, wrong, right) in zip(chosen, pasted):
            with self.subTest(mutant=name):
                self.assertEqual(result_of(graded[name], step)["status"], "failed")
                self.assertEqual(text, result_of(graded[name], step)["show"])
                self.assertTrue(text.startswith("from gqa import *\n"), text)
                self.assertNotIn("...", text)
                compile(text.replace("\n\n", "\n"), "shown", "exec")       # whole Python, never cut
                if name in SHOWN_TYPES:                            # the real module's own refusal
                    self.assertRegex(right[1], rf"\nTypeError: {step.subjects[0]}: \w+ must be an int, not bool "
                                               rf"\(True\)\n$")
                else:
                    self.assertNotRegex(right[1], r"\b(Syntax|Name|Type|Attribute|Index)Error",
                                        f"{name}: the paste does not run on the real module")
                self.assertNotEqual(wrong, right, name)

    def test_literals_are_whole_python(self):
        # What --show prints evaluates back to the very values, never cut.
        value = [[1e308, -0.0, float("inf"), -float("inf")], (1,), (), [5e-324, 2 ** 70, "s", None, True]]
        text = exchange.literal(value)
        self.assertEqual(eval(text), value)
        self.assertEqual(repr(eval(exchange.literal([float("nan")]))), "[nan]")
        long = [[0.1 * i for i in range(300)]]
        self.assertEqual(eval(exchange.literal(long)), long)
        self.assertEqual(exchange.literal({"$ref": "w"}), "w")

    def test_json_is_one_document_with_a_score(self):
        run, again = (Run(*r) for r in early(self.runs)["json"])
        self.assertEqual(run.returncode, 0)
        data = json.loads(run.stdout)
        self.assertEqual((data["score"], data["max_score"], data["grader"]),
                         (float(len(data["steps"])), float(len(data["steps"])), grading.GRADER_VERSION))
        self.assertEqual([s["name"] for s in data["steps"]], ["kv_head", "layer"])
        self.assertEqual(json.loads(again.stdout), data)

    def test_list_quiet_and_usage_errors(self):
        listed = main_run("--list")
        self.assertEqual([line.split()[2] for line in listed.stdout.splitlines()],
                         tracks.LESSON + tracks.ROBUSTNESS)
        quiet = Run(*early(self.runs)["quiet"])
        self.assertEqual(quiet.stdout.strip().splitlines()[-1], "2 passed, 0 failed")
        by_number = Run(*early(self.runs)["by number"])
        self.assertEqual([s["name"] for s in json.loads(by_number.stdout)["steps"]], ["valid_g", "kv_head"])
        self.assertIn(f"0 to {grading.MAX_CASES:,}", " ".join(main_run("--help").stdout.split()))
        for bad in (["--only", "nope"], ["--only", ","], ["--only", ""], ["--cases", "-1"],
                    ["--only", str(len(tracks.ALL_STEPS) + 1)],
                    ["--cases", str(grading.MAX_CASES + 1)],
                    ["--seed", "x"], ["--case", "3"], ["--timeout", "0"]):
            run = main_run(*bad)
            self.assertEqual(run.returncode, 2, bad)
            self.assertNotIn("Traceback", run.stderr)


def load_tests(loader, tests, pattern):
    """The heavy classes' jobs start now, as the tests are loaded (tests/helpers.py, early)."""
    return start_early(tests)


if __name__ == "__main__":
    unittest.main()
