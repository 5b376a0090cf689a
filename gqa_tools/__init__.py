"""The gqa command line tools: `python -m gqa COMMAND` (cli.py hands each command to its module).

    common    what the commands share: tables, formats, seeds, safe writes, the door to the grader
    sizer/    sizing real models' caches from config.json     sizer.command  gqa config
    train     the uptraining lab's training                    uptrain  gqa uptrain
    figures   SVG figures, standard library only               report   gqa report
    bench     gqa bench                                        tables   gqa tables

Each module imports gqa.py (the lab) and only modules listed above it on its floor
(CONTRIBUTING.md, the layout); a student's module runs only in the grader's worker.
"""
