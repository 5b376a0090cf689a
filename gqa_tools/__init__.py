"""The gqa command line tools: `python -m gqa COMMAND` (cli.py hands each command to its module).

    svg           SVG drawing, standard library only
    statistics    intervals over a few seeds (Student's t, Wilson's) and their verdicts
    common        what the commands share: tables, formats, seeds, safe writes, the door to the grader
    sizer/        sizing real models' caches from config.json    sizer.command       gqa config
    uptraining/   the uptraining lab                            uptraining.command  gqa uptrain
    report/       report.md, the lab report, and its figures    report.command      gqa report
    tables        gqa tables                                    bench               gqa bench

Each module imports gqa.py (the lab) and only modules listed above it on its floor
(CONTRIBUTING.md, the layout); a student's module runs only in the grader's worker.
"""
