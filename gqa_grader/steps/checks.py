"""The lab's checks, one per step, in the manifest's order: a module per part of the lab.

    heads      Parts 1-2     group the query heads; fold, repeat, attend
    layer      Part 3        one attention layer on MHA weights
    counting   Part 4        what g changes (the cache) and what it does not
    decoding   Part 5        decoding, one token at a time
    backward   Part 6        the backward pass

How a check is registered and called, and what every check uses, is checking.py's;
what a step is (its number, name, summary, track) is manifest.py's.  The parts of
robustness (the steps after the lesson's) are robustness.py's.
"""

from . import backward, checking, counting, decoding, heads, layer, manifest

# The modules whose checks ask the reference: checking, then the parts in the lab's
# order, manifest.PARTS (the self-check records the reference's answers through their names).
MODULES = (checking, heads, layer, counting, decoding, backward)

_MISSING = [entry.name for entry in manifest.LESSON if entry.name not in checking.REGISTERED]
if _MISSING:
    raise LookupError(f"checks: no check is registered for the steps {', '.join(_MISSING)} of manifest.STEPS")
STEPS = [checking.REGISTERED[entry.name] for entry in manifest.LESSON]      # the lab's steps, in order

# The step of each public name, as the manifest numbers them; a class's methods
# belong to the step of its class (Tally is count_multiplies').
STEP_OF = {st.name: st.number for st in STEPS}
STEP_OF["Tally"] = STEP_OF["count_multiplies"]
