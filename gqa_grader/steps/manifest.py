"""The lab's steps, in order: the one place that says what a step is.

A step's number is its place in STEPS, counted from 1: the lesson's steps (each a
public function or class of gqa.py, in the order gqa.py's docstring teaches them),
then the three parts of robustness.  Each row says

    name     the function it grades (a robustness part: its own name)
    part     the module of steps/ that holds its check, its refusals and its extremes
             (heads, layer, counting, decoding, backward; robustness)
    summary  one line, a message id: shown translated
    core     why the handout's lab asks for it (the track core), "" when it does not

Everything else that lists steps reads them here: the checks register against it
(checking.step_into), the tracks (tracks.py), the parts of robustness, the tools'
step list (gqa_tools/referee.py) and the tests' counts.  It imports the language
alone, so that the tools' sealed child can read it.
"""

from typing import NamedTuple

from ..language.i18n import N_


class Entry(NamedTuple):
    """One step of the lab, as STEPS lists it."""
    name: str
    part: str
    summary: str
    core: str = ""


STEPS = (
    # Part 1, group the query heads; Part 2, fold, repeat, attend.
    Entry("valid_g", "heads", N_("the valid g for h: its divisors, in increasing order"),
          "h must be divisible by g: the valid g are the divisors of h"),
    Entry("method_name", "heads", N_("MHA at g = h, MQA at g = 1 < h, GQA between"),
          "g = h is MHA, g = 1 is MQA, anything between is GQA: one knob, three names"),
    Entry("kv_head", "heads", N_("query head i reads key/value head i // (h // g)"),
          "query heads grouped in contiguous blocks: query head i reads key/value head i // (h // g)"),
    Entry("group_heads", "heads", N_("the query heads of each group, contiguous blocks"),
          "the query heads of each group, as the handout groups them"),
    Entry("fold_kv_mean", "heads", N_("h heads fold to g, each the mean of its group, new lists"),
          "fold each group's key/value heads into one by their mean"),
    Entry("repeat_kv", "heads", N_("g heads repeat out to h, interleaved, not tiled"),
          "repeat the folded heads out to the h query heads"),
    Entry("single_head_attention", "heads", N_("softmax(q k^T / sqrt(d)) v, causal or not"),
          "single-head attention, which every head runs"),
    Entry("attention", "heads", N_("fold, repeat, attend: MHA at g = h to the last bit"),
          "one attention(g) that runs MHA, GQA and MQA on the same weights: g = h is MHA to the last bit"),
    Entry("grouped_attention", "heads", N_("h query heads read g key/value heads by index")),
    # Part 3, one attention layer on MHA weights.
    Entry("init_weights", "layer", N_("random MHA weights, drawn as documented, the same for a seed")),
    Entry("fold_weights", "layer", N_("the same weights with g K/V heads, by mean")),
    Entry("prepare_weights", "layer", N_("weights checked, folded and transposed once")),
    Entry("layer", "layer", N_("one layer on MHA weights with g key/value heads, causal or not")),
    Entry("output_difference", "layer", N_("max abs, relative L2 and cosine of two outputs"),
          "the output difference from MHA, measured in numbers"),
    # Part 4, what g changes (the cache) and what it does not.
    Entry("kv_cache_elements", "counting", N_("2 x layers x g x length x head_dim x batch numbers"),
          "the KV cache's elements: 2 x layers x g x length x head_dim, with no h in it"),
    Entry("attention_multiplies", "counting", N_("multiplications per term, full and causal, as counted"),
          "the multiplications of one layer, per term: the scores and the weighted sum have no g"),
    Entry("block_multiplies", "counting", N_("a whole block's multiplications, its MLP included"),
          "the same for a whole block, its MLP included: the share that g can change"),
    Entry("cache_table", "counting", N_("the cache for every divisor g, with ratios to MHA"),
          "the cache table, one row per g: the first of the report's two tables"),
    Entry("multiplies_table", "counting", N_("the multiplications for every divisor g, with ratios to MHA"),
          "the multiplications table, one row per g: the second"),
    Entry("count_multiplies", "counting", N_("the tally kept while the code runs, nested blocks too")),
    # Part 5, decoding, one token at a time.
    Entry("KVCache", "decoding", N_("a cache of g heads: append, len, elements, nbytes, any capacity")),
    Entry("decode_step", "decoding", N_("decoding position by position equals a causal layer")),
    Entry("decode_traffic", "decoding", N_("cache and weight reads of n decode steps, batched")),
    # Part 6, the backward pass.
    Entry("grouped_attention_backward", "backward", N_("gradients of q, k, v: a shared head sums its group's")),
    Entry("layer_backward", "backward", N_("gradients of one layer's x and weights, through the mean fold")),
    # Robustness: the module's rules beyond the lesson, graded apart.
    Entry("types", "robustness", N_("TypeError naming the function for an argument of the wrong type")),
    Entry("refusals", "robustness",
          N_("GQAError for every rule a docstring states, naming the function and numbers")),
    Entry("extremes", "robustness", N_("tuple and array('d') rows, values near the float range's ends, inf, NaN")),
)

LESSON = tuple(entry for entry in STEPS if entry.part != "robustness")     # the lab's steps, 1 on
NUMBER = {entry.name: number for number, entry in enumerate(STEPS, 1)}     # a step's number, by name
PARTS = ("heads", "layer", "counting", "decoding", "backward")            # the lesson's, in order
