"""gqa_tools.uptraining.recipe: what one run of the uptraining lab is.

A Recipe holds the model's sizes, the tasks' sizes, the training and the seeds
in one record, so a run can be repeated; QUICK is the one report.md's section 8
runs.  The names a result gives its tasks and conversions, and the lab's steps
that training calls, are here too.
"""

from __future__ import annotations

from typing import NamedTuple


class Recipe(NamedTuple):
    """The model, the tasks and the training: one record, so a run can be repeated."""
    heads: int = 4
    head_dim: int = 4
    d_model: int = 16
    d_ff: int = 8                   # the MLP's width (the equal-cache rows widen it)
    vocab: int = 8                  # offsets: tokens
    length: int = 8                 # offsets: positions
    offsets: int = 4                # offsets: answers 1..offsets positions back
    keys: int = 8                   # recall: keys
    values: int = 8                 # recall: values
    pairs: int = 6                  # recall: key-value positions, then
    queries: int = 2                # recall: query positions
    batch: int = 8
    lr: float = 0.02
    pretrain: int = 200             # steps of pre-training (and of each equal-cache model)
    budgets: tuple = (10, 20, 40)   # uptraining checkpoints: 5 %, 10 %, 20 % of pretrain
    held_out: int = 256             # sequences per task and seed, never trained on
    seed: int = 0                   # the first seed
    seeds: int = 20                 # how many seeds
    same_cache: bool = True         # train the equal-cache models (the MQA paper's comparison)
    scratch: bool = False           # train each g < h from scratch for pretrain + budgets steps
    carried: bool = False           # the control and the mean to the first budget, pre-training's Adam carried over


# A smaller model (4 heads, so g = 1 and g = 2) on shorter tasks, measured at
# two budgets, without the equal-cache models (a third of its work would go to
# them) but with the two controls of the uptraining (each g trained from
# scratch; the restart with Adam carried over): report.md runs it.  The
# default recipe leaves both out, to stay within its time (they would add
# nearly half to its training, and 4 %); `uptrain --quick` trains them.
QUICK = Recipe(heads=4, head_dim=4, d_model=12, d_ff=6, vocab=6, length=4, offsets=2,
               keys=6, values=6, pairs=3, queries=2, batch=6, lr=0.03, pretrain=100,
               budgets=(5, 20), held_out=128, same_cache=False, scratch=True, carried=True)


TASKS = ("offsets", "recall")
CONVERSIONS = ("mean", "first", "random")
# The lab's steps that training calls: a student's module is trained on only
# once the grader passes every one of them.
NEEDS = ("valid_g", "group_heads", "grouped_attention", "init_weights", "fold_weights",
         "kv_cache_elements", "grouped_attention_backward")

