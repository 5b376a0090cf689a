"""The gqa command line tools: `python -m gqa COMMAND` (cli.py hands each command to its module).

    svg           SVG drawing, standard library only
    statistics    intervals over a few seeds (Student's t, Wilson's) and their verdicts
    seeds         the one seeding scheme of every tool
    formats       numbers, tables and bars as text, lined up by display width
    options       the command line's shared parts: options read early, int options, --jobs, progress
    referee       a student's module and the referee's word on it: the lab's steps, graded, sealed, the handout
    counts        what the lab counts, as Markdown and bars (its two tables, the whole block); a projection
    language      the language a student reads: --lang, else the environment's, else the handout's
    sizer/        sizing real models' caches from config.json    sizer.command       gqa config
    uptraining/   the uptraining lab                            uptraining.command  gqa uptrain
    report/       report.md, the lab report, and its figures    report.command      gqa report
    tables        gqa tables                                    bench               gqa bench

Each module imports the lab (gqa.py), the referee's language and door, and only
modules listed above it (CONTRIBUTING.md, the floors); a student's module runs only
in the grader's worker.
"""
