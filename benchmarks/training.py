"""Training throughput of the uptraining lab against commit e5d473a's, side by side.

    python benchmarks/training.py [--repeats 3] [--steps 30] [--what both] [--commit e5d473a]

Extracts the old code at run time (`git show COMMIT:gqa_train.py`, `gqa.py`
and `gqa_tools.py`, the old layout: gqa_train.py at the root importing gqa
and gqa_tools) into a temporary folder, and skips with a message when git
or the commit is missing.  Then, interleaved (old, new, old, new, ...), each
run in a fresh process of this Python, it measures one fixed recipe (RECIPE
below, the shape of report.md's section 8: h = 4, both tasks):

  training     train() on the same batches of --steps steps, for every g
               (an MHA model at g = h, converted by the mean below it);
  experiment   run() of the whole recipe for one seed: pre-training, every
               conversion and its uptraining, the equal-cache models, and
               every evaluation on the held-out sequences; each code counts
               the sequence-steps its own experiment trains (the new one
               also trains the control).

Throughput is sequence-steps (a sequence through one training step) per
CPU second of the process (the machine may be shared: CPU seconds are what
the work costs).  Prints the median of each code and the ratio new / old
of the medians (and of the best runs, in brackets).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLD_FILES = ("gqa_train.py", "gqa.py", "gqa_tools.py")

# The fixed recipe: fields both codes' Recipe has.
RECIPE = dict(heads=4, head_dim=4, d_model=12, d_ff=6, vocab=6, length=4, offsets=2, keys=6,
              values=6, pairs=3, queries=2, batch=6, lr=0.03, pretrain=100, budgets=(5, 20),
              held_out=128, seed=0, seeds=1)

# What a child process runs: argv is (folder, "old" | "new", what, steps).
CHILD = r'''
import json, sys, time
folder, which, what, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, folder)
if which == "old":
    import gqa_train as T
else:
    from gqa_tools.uptraining import experiment as T     # it holds every name used here
import gqa
r = T.Recipe(**{**json.loads(sys.argv[5]), "budgets": tuple(json.loads(sys.argv[5])["budgets"])})
if what == "training":
    seconds = sequences = 0
    for task in T.TASKS:
        for g in sorted(gqa.valid_g(r.heads), reverse=True):
            model = T.init_model(r, task, r.heads, r.head_dim, r.heads, r.d_ff, "mha", 0)
            if g < r.heads:
                model = T.convert(model, r.heads, g, "mean", r, task, 0)
            batches = T.batches(r, task, 0, "bench", steps, set())
            start = time.process_time()
            T.train(model, g, batches, gqa, r.lr)
            seconds += time.process_time() - start
            sequences += steps * r.batch
else:
    start = time.process_time()
    T.run(r)
    seconds = time.process_time() - start
    kinds = len([g for g in gqa.valid_g(r.heads) if g < r.heads]) * len(T.CONVERSIONS)
    steps_run = r.pretrain + kinds * max(r.budgets) + 3 * r.pretrain      # its equal-cache rows: 3
    if which == "new":
        steps_run += max(r.budgets)                                        # the control
    sequences = len(T.TASKS) * r.seeds * steps_run * r.batch
print(json.dumps({"sequences": sequences, "seconds": seconds}))
'''


def old_code(commit: str) -> str:
    """A temporary folder holding the old code's files; SystemExit with a message when it cannot."""
    if shutil.which("git") is None:
        raise SystemExit("benchmarks/training.py: skipped: git is not installed (it extracts the old code)")
    folder = tempfile.mkdtemp(prefix="gqa-training-bench-")
    for name in OLD_FILES:
        got = subprocess.run(["git", "-C", HERE, "show", f"{commit}:{name}"], capture_output=True)
        if got.returncode != 0:
            shutil.rmtree(folder, True)
            raise SystemExit(f"benchmarks/training.py: skipped: this checkout has no {commit}:{name} "
                             f"({got.stderr.decode(errors='replace').strip()})")
        with open(os.path.join(folder, name), "wb") as f:
            f.write(got.stdout)
    return folder


def measure(folder: str, which: str, what: str, steps: int) -> float:
    """Sequence-steps per CPU second of one run, in a fresh process."""
    argv = [sys.executable, "-c", CHILD, folder, which, what, str(steps), json.dumps(RECIPE)]
    got = subprocess.run(argv, capture_output=True, text=True, cwd=folder)
    if got.returncode != 0:
        raise SystemExit(f"benchmarks/training.py: the {which} code failed:\n{got.stderr}")
    result = json.loads(got.stdout.splitlines()[-1])
    return result["sequences"] / result["seconds"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each code (default 3)")
    parser.add_argument("--steps", type=int, default=30, help="training steps per model (default 30)")
    parser.add_argument("--what", choices=("training", "experiment", "both"), default="both",
                        help="what to measure (default both)")
    parser.add_argument("--commit", default="e5d473a", help="the old code's commit (default e5d473a)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.steps < 1:
        parser.error("--repeats and --steps must be at least 1")
    old = old_code(args.commit)
    try:
        print(f"Python {sys.version.split()[0]}; recipe {json.dumps(RECIPE)}")
        for what in (("training", "experiment") if args.what == "both" else (args.what,)):
            runs = {"old": [], "new": []}
            for k in range(args.repeats):                                 # interleaved
                for which in ("old", "new"):
                    runs[which].append(measure(old if which == "old" else HERE, which, what, args.steps))
                    print(f"  {what}, run {k + 1} of {args.repeats}, {which}: "
                          f"{runs[which][-1]:,.0f} sequence-steps per CPU second", file=sys.stderr)
            med = {w: statistics.median(v) for w, v in runs.items()}
            print(f"{what}: old ({args.commit}) {med['old']:,.0f}, new {med['new']:,.0f} sequence-steps "
                  f"per CPU second (medians of {args.repeats}); new / old = {med['new'] / med['old']:.2f} "
                  f"(best runs: {max(runs['new']) / max(runs['old']):.2f})")
    finally:
        shutil.rmtree(old, True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
