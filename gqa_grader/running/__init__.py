"""Running a student's module: the worker, its seal, and the calls to it and back.
Imports the language alone.

    failures   how a case or a run ends when it does not pass: kinds with data
    atomic     a file written whole or not at all
    values     what crosses from the worker: its data decoded into values, text made
               safe to print
    cleanup    what a run's user left behind, removed; never raises
    users      the worker's users: a user id per run, its processes killed, what it reaches
    toolcopy   the tools' files copied: a handout's, and what a tool's sealed child imports
    seal       the seal: limits, a private folder, a user id per run, gqa_sandbox's
               namespaces where they can be made, the cleanup
    worker     the worker program, run as a script: the only importer of the module
    process    the Worker process and the worker protocol (written down there), and
               run_in_child (the tools' door)
    exchange   calls to the worker and back; the --show transcript

Each imports only those above it, the language, the standard library and gqa_sandbox.
"""
