"""The 25 checks, one per step, in the lab's order: a module per part of the lab.

    heads      steps 1-9     group the query heads; fold, repeat, attend
    layer      steps 10-14   one attention layer on MHA weights
    counting   steps 15-20   what g changes (the cache) and what it does not
    decoding   steps 21-23   decoding, one token at a time
    backward   steps 24-25   the backward pass

How a check is called, and what every check uses, is checking.py's.  The
parts of robustness (steps 26 to 28) are robustness.py's.
"""

from . import backward, checking, counting, decoding, heads, layer

# The modules whose checks ask the reference, in the lab's order (the self-check
# records the reference's answers through their names).
MODULES = (checking, heads, layer, counting, decoding, backward)
STEPS = [st for module in MODULES[1:] for st in module.STEPS]      # the lab's 25 steps, in order


def check_names():
    return [st.name for st in STEPS]


# The step of each public name, as the checks above number them; a class's
# methods belong to the step of its class (Tally is count_multiplies').
STEP_OF = {st.name: st.number for st in STEPS}
STEP_OF["Tally"] = STEP_OF["count_multiplies"]
