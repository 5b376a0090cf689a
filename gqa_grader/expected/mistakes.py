"""The lab's classic mistakes, by name: what a failing answer is, when it is one of them.

Each misconception has a key, a name a teacher says out loud ("strided grouping")
and one sentence of the lesson it misses.  Its answer on a case's inputs comes from
its own small wrong function, beside the reference (mistaken.py's mis_ functions).
A step names the misconceptions its check recognises where it is registered (the
step's mistakes, in its part's module of steps/), and the check hands expect() their
answers (checking.shadows()); when the case fails, the grading asks recognised()
which of them give the module's very answer, and the feedback names it (named()).
A hidden case's feedback names it too, without the case.

In a handout the wrong functions are absent, as the reference is: their answers to
the public cases are recorded beside the reference's, and a case with none recorded
is simply not recognised.
"""

from ..language.i18n import N_, _
from ..running.failures import Failure
from .compare import _difference

# key: (name, the lesson it misses), message ids.
MISTAKES = {
    "strided": (N_("strided grouping"),
                N_("head i went to group i % g (query head i read key/value head i % g); contiguous groups "
                   "hold h // g neighbours each, head i in group i // (h // g)")),
    "tiled": (N_("tiled, not interleaved"),
              N_("the g heads were repeated as a block, h // g times over; each head is repeated h // g "
                 "times in place, so query head i reads head i // (h // g)")),
    "sum": (N_("sum, not mean"),
            N_("a group's heads were added; the fold takes their mean, the sum divided by h // g")),
    "first": (N_("first head kept"),
              N_("each group kept its first head; the fold takes the mean of all h // g heads of the group")),
    "k_only": (N_("K folded but not V"),
               N_("the keys were folded to g heads and the values were not; attention folds both by the mean")),
    "unscaled": (N_("scale missing"),
                 N_("the scores were not divided by sqrt(d); softmax takes q k^T / sqrt(d)")),
    "scale_d": (N_("scaled by d"),
                N_("the scores were divided by d; they are divided by sqrt(d), the square root of the "
                   "keys' width")),
    "scale_dv": (N_("scaled by sqrt(d_v)"),
                 N_("the scores were divided by sqrt(d_v), of the values' width; the scale is sqrt(d), "
                    "of the queries' and keys' width")),
    "no_offset": (N_("causal mask without the m - n offset"),
                  N_("query i saw keys 0 .. i; with m keys for n queries it sees keys 0 .. i + (m - n)")),
    "no_2": (N_("the factor 2 for K and V forgotten"),
             N_("the cache holds both K and V: 2 x layers x g x length x head_dim x batch")),
    "no_batch": (N_("batch forgotten"),
                 N_("each sequence of the batch has a cache of its own: the count is multiplied by batch")),
    "kv_h": (N_("K/V projections counted with h"),
             N_("the K and V projections make g heads, not h: n x d_model x g x d multiplications each")),
    "body_g": (N_("the scores and the weighted sum counted with g"),
               N_("g shrinks the K and V projections alone: each of the h query heads still scores its "
                  "keys and sums its values, h x pairs x d multiplications each")),
    "causal_full": (N_("causal pairs counted as n x n"),
                    N_("a causal query i sees keys 0 .. i: n (n + 1) / 2 pairs, not n x n")),
    "causal_strict": (N_("causal pairs counted as n (n - 1) / 2"),
                      N_("a causal query i sees keys 0 .. i, itself included: n (n + 1) / 2 pairs")),
    "block_non_causal": (N_("causal ignored"),
                         N_("block_multiplies counts a causal layer unless causal=False (its default "
                            "is True): n (n + 1) / 2 pairs, not n x n")),
    "inverted": (N_("the ratio inverted"),
                 N_("a row's ratio is its count divided by MHA's (g = h), not MHA's divided by its")),
    "of_total": (N_("a term's ratio taken to MHA's total"),
                 N_("each term's ratio divides by the same term of MHA (g = h), not by MHA's total")),
    "named": (N_("a row's method named otherwise"),
              N_("a row's method names its g: MHA at g = h, MQA at g = 1 < h, GQA between; it was "
                 "named by the group size h // g")),
}


def recognised(err):
    """The keys of the misconceptions whose answer is the module's on the case err failed,
    in the order the check gave them ([] when none is, or the check gave none)."""
    got, candidates, options = getattr(err, "mistakes", (None, (), {}))
    found = []
    for key, answer in candidates:
        try:
            value = answer()
        except (Failure, ArithmeticError, ValueError, IndexError):   # none recorded (a handout), or none
            continue
        if _difference(got, value, **options) is None:
            found.append(key)
    return found


def named(key):
    """The line that names the misconception key, in the language in use."""
    name, lesson = MISTAKES[key]
    return _("this is a known mistake, {name}: {lesson}").format(name=_(name), lesson=_(lesson))
