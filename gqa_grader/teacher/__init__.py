"""The teacher's commands: a handout, a class, Gradescope and GitHub Classroom.  Imports
every room below (language, running, expected, steps, verdict).

    submissions  what was submitted: a class's folder, a student's gqa.py in it
    ledger     what a gradebook keeps, read back as a spreadsheet saved it: the class's
               record (its seed), the LMSs' exports, the class's statistics
    copies     submissions that share most of their code (winnowing), flagged, not scored
    pool       --class's graders (--class-serve) and the protocol they speak
    handout    the starter's file and Gradescope's autograder.zip; the grader's files
    classroom  a class: --class's gradebook and each student's feedback
    workflow   --classroom: GitHub Classroom's workflow, written by a small YAML emitter
    selfcheck  --handout: the students' starter and a self-check that holds no reference
    commands   the teacher's commands (--class, --classroom, --autograder, --handout):
               what each can carry, and where each goes

Each imports only those above it and the rooms below this one.
"""
