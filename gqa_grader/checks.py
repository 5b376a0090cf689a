"""The 25 checks, one per step, in the lab's order: a module per part of the lab.

    checks_heads     steps 1-9     group the query heads; fold, repeat, attend
    checks_layer     steps 10-14   one attention layer on MHA weights
    checks_counting  steps 15-20   what g changes (the cache) and what it does not
    checks_decoding  steps 21-23   decoding, one token at a time
    checks_backward  steps 24-25   the backward pass

How a check is called, and what every check uses, is checking.py's.  The
parts of robustness (steps 26 to 28) are robustness.py's.
"""

from . import checking, checks_backward, checks_counting, checks_decoding, checks_heads, checks_layer

# The modules whose checks ask the reference, in the lab's order (the self-check
# records the reference's answers through their names).
MODULES = (checking, checks_heads, checks_layer, checks_counting, checks_decoding, checks_backward)
STEPS = [st for module in MODULES[1:] for st in module.STEPS]      # the lab's 25 steps, in order


def check_names():
    return [st.name for st in STEPS]


# The step of each public name, as the checks above number them; a class's
# methods belong to the step of its class (Tally is count_multiplies').
STEP_OF = {st.name: st.number for st in STEPS}
STEP_OF["Tally"] = STEP_OF["count_multiplies"]
