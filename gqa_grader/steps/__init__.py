"""Checking a step: what a step is (the manifest), the lab's checks, a module per part
of the lab, the parts of robustness, and the tracks a run grades.  Imports the
language, running and expected.

    manifest   the lab's steps in order, one row each: name, part, summary, track;
               a step's number is its place
    checking   what every check uses: a Step, its registration against the manifest,
               a case's draws, the misconceptions a check names
    refusals   what robustness asks a step's function to refuse: the calls of wrong
               types (TypeError) and their rules, the helpers of the values refused
    heads      the checks of Parts 1 and 2: group the query heads; fold, repeat, attend
    layer      the checks of Part 3: one attention layer on MHA weights
    counting   the checks of Part 4: the cache and the multiplications, counted
    decoding   the checks of Part 5: decoding, one token at a time
    backward   the checks of Part 6: the backward pass
    checks     the lab's checks in the manifest's order, gathered from the five above
    robustness the three parts of robustness: types, refusals, extremes (after the lesson),
               each a case per step whose part module states what it asks
    tracks     the steps a run grades: numbers, ranges, names, tracks (core, all, robustness)

Each imports only those above it and the rooms below this one.  A part's module
holds, for each of its steps, the check, what robustness asks of the step's function
(its types, refusals and extremes) and the misconceptions the check names.
"""
