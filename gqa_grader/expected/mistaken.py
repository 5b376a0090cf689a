"""The misconceptions: the classic wrong answers, each its own small function with the
signature of the reference function it shadows (a step's mistakes pair them: the
check's @step(mistakes=...)), so that a failing case's answer can be recognised as one
(mistakes.py names them).  They are the reference's siblings, built on it, never the
lab's: a handout holds their answers to the public cases, recorded beside the
reference's, and neither module.
"""

import math
import random

from .reference import (_exact_mean, _term_list, ref_attention, ref_attention_multiplies, ref_block_multiplies,
                        ref_fold_kv_mean, ref_group_heads, ref_grouped_attention, ref_kv_cache_elements,
                        ref_method_name, ref_repeat_kv, ref_single_head_attention, ref_valid_g)

def mis_kv_head_strided(i, h, g):
    return i % g


def mis_group_heads_strided(h, g):
    return [[i for i in range(h) if i % g == j] for j in range(g)]


def _fold_by(kv, groups, pick):
    rows, cols = len(kv[0]), len(kv[0][0])
    return [[[pick([kv[i][r][c] for i in group]) for c in range(cols)] for r in range(rows)]
            for group in groups]


def mis_fold_sum(kv, g):
    return _fold_by(kv, ref_group_heads(len(kv), g), math.fsum)


def mis_fold_first(kv, g):
    return _fold_by(kv, ref_group_heads(len(kv), g), lambda values: values[0])


def mis_fold_strided(kv, g):
    return _fold_by(kv, mis_group_heads_strided(len(kv), g), _exact_mean)


def mis_repeat_tiled(kv, h):
    return [[list(row) for row in kv[i % len(kv)]] for i in range(h)]


def _scaled_q(q, factor):
    return [[x * factor for x in row] for row in q]


def mis_single_unscaled(q, k, v, causal=False):
    """softmax(q k^T) v: the reference's q times sqrt(d) undoes its scale."""
    return ref_single_head_attention(_scaled_q(q, math.sqrt(len(q[0]))), k, v, causal)


def mis_single_scale_d(q, k, v, causal=False):
    return ref_single_head_attention(_scaled_q(q, 1 / math.sqrt(len(q[0]))), k, v, causal)


def mis_single_scale_dv(q, k, v, causal=False):
    return ref_single_head_attention(_scaled_q(q, math.sqrt(len(q[0])) / math.sqrt(len(v[0]))), k, v, causal)


def mis_single_no_offset(q, k, v, causal=False):
    """Query i sees keys 0 .. i of m: the reference's mask on the first n keys."""
    seen = len(q) if causal else len(k)
    return ref_single_head_attention(q, k[:seen], v[:seen], causal)


def _attention_by(q, k, v, g, causal, fold_k, fold_v=None, repeat=ref_repeat_kv):
    h = len(q)
    kc = repeat(fold_k(k, g), h)
    vc = repeat((fold_v or fold_k)(v, g), h) if fold_v is not False else v
    return [ref_single_head_attention(q[i], kc[i], vc[i], causal) for i in range(h)]


def mis_attention_sum(q, k, v, g, causal=False):
    return _attention_by(q, k, v, g, causal, mis_fold_sum)


def mis_attention_first(q, k, v, g, causal=False):
    return _attention_by(q, k, v, g, causal, mis_fold_first)


def mis_attention_strided(q, k, v, g, causal=False):
    return _attention_by(q, k, v, g, causal, mis_fold_strided, repeat=mis_repeat_tiled)


def mis_attention_k_only(q, k, v, g, causal=False):
    return _attention_by(q, k, v, g, causal, ref_fold_kv_mean, fold_v=False)


def mis_attention_unscaled(q, k, v, g, causal=False):
    return ref_attention([_scaled_q(head, math.sqrt(len(head[0]))) for head in q], k, v, g, causal)


def mis_grouped_strided(q, k, v, causal=False):
    g = len(k)
    return [ref_single_head_attention(q[i], k[i % g], v[i % g], causal) for i in range(len(q))]


def mis_grouped_unscaled(q, k, v, causal=False):
    return ref_grouped_attention([_scaled_q(head, math.sqrt(len(head[0]))) for head in q], k, v, causal)


def _fold_weights_by(fold):
    def folded(w_q, w_k, w_v, w_o, g):
        return [w_q, w_k if len(w_k) == g else fold(w_k, g), w_v if len(w_v) == g else fold(w_v, g), w_o]
    return folded


mis_fold_weights_sum = _fold_weights_by(mis_fold_sum)
mis_fold_weights_first = _fold_weights_by(mis_fold_first)
mis_fold_weights_strided = _fold_weights_by(mis_fold_strided)


def mis_cache_no_2(layers, kv_heads, length, head_dim, batch=1):
    return ref_kv_cache_elements(layers, kv_heads, length, head_dim, batch) // 2


def mis_cache_no_batch(layers, kv_heads, length, head_dim, batch=1):
    return ref_kv_cache_elements(layers, kv_heads, length, head_dim, 1)


def _counts(n, h, g, d, d_model, causal):
    """A reference layer's counts on data of its own: a mistake never draws from the
    case's stream (a count does not depend on the values)."""
    return ref_attention_multiplies(n, h, g, d, d_model, causal, random.Random(0))


def _pairs_as(counts, n, pairs):
    """counts (of full attention) with the scores and weighted sum of `pairs` pairs."""
    out = dict(counts)
    for term in ("scores", "weighted_sum"):
        out[term] = counts.get(term, 0) // (n * n) * pairs if n else 0
    return out


def mis_multiplies_kv_h(n, h, g, d, d_model, causal, rng=None):
    counts, mha = _counts(n, h, g, d, d_model, causal), _counts(n, h, h, d, d_model, causal)
    return dict(counts, k_proj=mha.get("k_proj", 0), v_proj=mha.get("v_proj", 0))


def mis_multiplies_body_g(n, h, g, d, d_model, causal, rng=None):
    counts = _counts(n, h, g, d, d_model, causal)
    return dict(counts, **{term: counts.get(term, 0) // h * g for term in ("scores", "weighted_sum")})


def mis_multiplies_causal_full(n, h, g, d, d_model, causal, rng=None):
    return _counts(n, h, g, d, d_model, False)


def mis_multiplies_causal_strict(n, h, g, d, d_model, causal, rng=None):
    full = _counts(n, h, g, d, d_model, False)
    return _pairs_as(full, n, n * (n - 1) // 2) if causal else full


def mis_block_non_causal(n, h, g, d, d_model, d_ff, matrices, rng=None, causal=True):
    return ref_block_multiplies(n, h, g, d, d_model, d_ff, matrices, random.Random(0), False)


def mis_block_body_g(n, h, g, d, d_model, d_ff, matrices, rng=None, causal=True):
    counts = ref_block_multiplies(n, h, g, d, d_model, d_ff, matrices, random.Random(0), causal)
    return dict(counts, **{term: counts.get(term, 0) // h * g for term in ("scores", "weighted_sum")})


def mis_block_kv_h(n, h, g, d, d_model, d_ff, matrices, rng=None, causal=True):
    counts = ref_block_multiplies(n, h, g, d, d_model, d_ff, matrices, random.Random(0), causal)
    mha = ref_block_multiplies(n, h, h, d, d_model, d_ff, matrices, random.Random(0), causal)
    return dict(counts, k_proj=mha.get("k_proj", 0), v_proj=mha.get("v_proj", 0))


def _cache_rows(h, layers, length, head_dim, batch, elements=ref_kv_cache_elements, name=None,
                inverted=False):
    mha = elements(layers, h, length, head_dim, batch)
    rows = []
    for g in ref_valid_g(h):
        e = elements(layers, g, length, head_dim, batch)
        ratio = (mha / e if inverted else e / mha) if mha else 1.0
        rows.append([(name or ref_method_name)(h, g), g, h // g, e, ratio])
    return rows


def _named_by_size(h, g):
    return ref_method_name(h, h // g)


def mis_cache_table_inverted(h, layers, length, head_dim, batch=1):
    return _cache_rows(h, layers, length, head_dim, batch, inverted=True)


def mis_cache_table_named(h, layers, length, head_dim, batch=1):
    return _cache_rows(h, layers, length, head_dim, batch, name=_named_by_size)


def mis_cache_table_no_2(h, layers, length, head_dim, batch=1):
    return _cache_rows(h, layers, length, head_dim, batch, elements=mis_cache_no_2)


def mis_cache_table_no_batch(h, layers, length, head_dim, batch=1):
    return _cache_rows(h, layers, length, head_dim, batch, elements=mis_cache_no_batch)


def _table_rows(n, h, d, d_model, causal, ratio, name=ref_method_name, kv_heads=None):
    """multiplies_table's rows, each row's ratios ratio(counts, MHA's counts)."""
    counts = {g: _term_list(_counts(n, h, kv_heads or g, d, d_model, causal)) for g in ref_valid_g(h)}
    return [[name(h, g), g, h // g, counts[g], ratio(counts[g], counts[h])] for g in ref_valid_g(h)]


def _ratios(counts, mha):
    return [c / r if r else 1.0 for c, r in zip(counts, mha)]


def mis_table_inverted(n, h, d, d_model, causal, rng=None):
    return _table_rows(n, h, d, d_model, causal, lambda c, mha: [r / x if x else 1.0 for x, r in zip(c, mha)])


def mis_table_of_total(n, h, d, d_model, causal, rng=None):
    return _table_rows(n, h, d, d_model, causal, lambda c, mha: [x / mha[-1] if mha[-1] else 1.0 for x in c])


def mis_table_named(n, h, d, d_model, causal, rng=None):
    return _table_rows(n, h, d, d_model, causal, _ratios, name=_named_by_size)


def mis_table_kv_h(n, h, d, d_model, causal, rng=None):
    return _table_rows(n, h, d, d_model, causal, _ratios, kv_heads=h)
