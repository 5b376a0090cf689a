"""Checking a step: the lab's checks, a module per part of the lab, the parts of
robustness, and the tracks a run grades.  Imports the language, running and expected.

    checking   what every check uses: a Step, its registration, a case's draws
    heads      the checks of steps 1 to 9: group the query heads; fold, repeat, attend
    layer      the checks of steps 10 to 14: one attention layer on MHA weights
    counting   the checks of steps 15 to 20: the cache and the multiplications, counted
    decoding   the checks of steps 21 to 23: decoding, one token at a time
    backward   the checks of steps 24 and 25: the backward pass
    checks     the 25 checks in the lab's order, gathered from the five above
    refusals   the calls each step must refuse: GQAError for values, TypeError for types
    robustness the three parts of robustness: types, refusals, extremes (steps 26-28)
    tracks     the steps a run grades: numbers, ranges, names, tracks (core, all, robustness)

Each imports only those above it (refusals before the checks that call it) and the
rooms below this one.
"""
