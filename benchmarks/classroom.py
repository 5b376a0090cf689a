"""How long `python grader.py --class` takes to grade a class: N submissions (the
shipped gqa.py each, or a mixed class), each a sealed run of its own.

    python benchmarks/classroom.py                       200 copies of gqa.py, --jobs default
    python benchmarks/classroom.py --count 40 --jobs 4
    python benchmarks/classroom.py --mixed --count 20 --make DIR
                                                         only write a mixed class into DIR

The grader is copied into a private folder first (a sealed run as root refuses a
grader its workers could read), and the class into another; both are removed
afterwards.  Prints the command, its wall time, the time per submission, and the
first line of the class's summary.  Nothing here is a test: times differ from
machine to machine and from run to run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _starter() -> str:
    """A bare starter, as `python grader.py --starter` writes it."""
    folder = tempfile.mkdtemp()
    try:
        subprocess.run([sys.executable, os.path.join(ROOT, "grader.py"), "--starter", folder],
                       check=True, capture_output=True)
        with open(os.path.join(folder, "gqa.py"), encoding="utf-8") as f:
            return f.read()
    finally:
        shutil.rmtree(folder)


def _write(path: str, text: str | bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(text.encode("utf-8") if isinstance(text, str) else text)


def _zip(path: str, name: str, text: str) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(name, text)


def mixed_class(folder: str, count: int) -> None:
    """count submissions of every kind a teacher meets, in turn: correct ones, one wrong
    step, a bare starter, a Classroom clone (gqa.py in a subfolder), a misnamed file,
    two gqa.py, a zip, a binary, a syntax error, an import that hangs, one that crashes,
    one that imports the grader."""
    with open(os.path.join(ROOT, "gqa.py"), encoding="utf-8") as f:
        solution = f.read()
    wrong = solution.replace("return query_head // group", "return query_head % g")
    kinds = [
        lambda p: _write(p + ".py", solution),
        lambda p: _write(p + ".py", wrong),
        lambda p: _write(p + ".py", _starter()),
        lambda p: _write(os.path.join(p + "-repo", "lab", "gqa.py"), solution),
        lambda p: _write(os.path.join(p, "GQA.py"), solution),
        lambda p: (_write(os.path.join(p, "a", "gqa.py"), solution),
                   _write(os.path.join(p, "b", "gqa.py"), wrong)),
        lambda p: _zip(p + ".zip", "gqa.py", solution),
        lambda p: _write(p + ".py", b"\x7fELF\x00\x01\x02"),
        lambda p: _write(p + ".py", "def valid_g(h:\n"),
        lambda p: _write(p + ".py", "while True:\n    pass\n"),
        lambda p: _write(p + ".py", "import os\nos._exit(3)\n"),
        lambda p: _write(p + ".py", "import grader\n"),
    ]
    os.makedirs(folder, exist_ok=True)
    for i in range(count):
        kinds[i % len(kinds)](os.path.join(folder, f"student{i + 1:03d}"))


def _children_cpu() -> float:
    """CPU seconds (user and system) of this process's waited-for children, 0 where unknown."""
    try:
        import resource
    except ImportError:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def copies(folder: str, count: int) -> None:
    os.makedirs(folder, exist_ok=True)
    for i in range(count):
        shutil.copy(os.path.join(ROOT, "gqa.py"), os.path.join(folder, f"student{i + 1:03d}.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="submissions (default 200)")
    parser.add_argument("--jobs", type=int, default=None, help="--class's --jobs (default its own)")
    parser.add_argument("--mixed", action="store_true", help="a mixed class, not copies of gqa.py")
    parser.add_argument("--make", metavar="DIR", help="only write the class into DIR, and stop")
    parser.add_argument("grader_options", nargs="*", help="more options for --class (after --)")
    args = parser.parse_args(argv)
    if args.make:
        (mixed_class if args.mixed else copies)(args.make, args.count)
        print(f"wrote {args.count} submissions into {args.make}")
        return 0
    work = tempfile.mkdtemp()
    try:
        private = os.path.join(work, "grader")
        os.makedirs(private, mode=0o700)
        shutil.copy(os.path.join(ROOT, "grader.py"), private)
        shutil.copytree(os.path.join(ROOT, "gqa_grader"), os.path.join(private, "gqa_grader"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(os.path.join(ROOT, "gqa_sandbox"), os.path.join(private, "gqa_sandbox"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        os.chmod(work, 0o755)
        (mixed_class if args.mixed else copies)(os.path.join(work, "class"), args.count)
        os.chmod(os.path.join(work, "class"), 0o700)        # a class's files: the teacher's alone
        os.makedirs(os.path.join(work, "out"), mode=0o700)
        argv = [sys.executable, os.path.join(private, "grader.py"), "--class", "class",
                "--gradebook", os.path.join("out", "grades.csv"), "-q"] + (["--jobs", str(args.jobs)] if args.jobs else [])
        argv += args.grader_options
        before = _children_cpu()
        start = time.perf_counter()
        run = subprocess.run(argv, cwd=work, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        cpu = _children_cpu() - before
        print(f"$ python grader.py --class class --gradebook grades.csv -q"
              f"{' --jobs %d' % args.jobs if args.jobs else ''} {' '.join(args.grader_options)}")
        print(f"{args.count} submissions in {seconds:.1f} s of wall time "
              f"({seconds / args.count:.2f} s each, {os.cpu_count()} CPUs); exit status {run.returncode}")
        if cpu:
            print(f"{cpu:.1f} s of CPU time ({cpu / args.count:.2f} s each): at least "
                  f"{cpu / (os.cpu_count() or 1):.0f} s of wall time on {os.cpu_count()} idle CPUs")
        print((run.stdout.splitlines() or [run.stderr.strip()])[0])
        return 0 if run.returncode == 0 else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
