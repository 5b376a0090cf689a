"""A run's verdict: the checks run, each step's result, and what carries it.  Imports
the rooms below (language, running, expected, steps).

    results    a step's result (StepResult), built in one place, and its points
    grading    running the checks: each step's cases, public and hidden, in the worker
    printing   the text report: a line per step, progress, points, the command to repeat
    documents  the grader's JSON document, Gradescope's results.json, Classroom's result
    records    what a run records to be had again: provenance, the options carried, a
               submission's seed from a secret

Each imports only those above it and the rooms below this one.
"""
