"""The gqa command line tools: `python -m gqa COMMAND` (cli.py hands each command to its module).

    svg           SVG drawing, standard library only
    statistics    intervals over a few seeds (Student's t, Wilson's) and their verdicts
    seeds         the one seeding scheme of every tool
    common        what the commands share: tables, formats, options, the door to the grader
    sizer/        sizing real models' caches from config.json    sizer.command       gqa config
    uptraining/   the uptraining lab                            uptraining.command  gqa uptrain
    report/       report.md, the lab report, and its figures    report.command      gqa report
    tables        gqa tables                                    bench               gqa bench

Each module imports the lab (gqa.py), the referee's language and door, and only
modules listed above it (CONTRIBUTING.md, the floors); a student's module runs only
in the grader's worker.
"""
