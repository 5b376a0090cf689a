"""Shared by the tests that grade variants of gqa.py (test_grader, test_grading,
test_handout): the solution (SOURCE), a mutant of it (mutate, in_kv_head), a variant
in a folder of its own (Module), graded in a worker (grade_source, grade_all) or in
trusted workers (grade_trusted), and the grader's main run in this process (run_main)."""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor

from gqa_grader import cli
from gqa_grader.verdict import grading
from tests.helpers import ROOT, captured

GQA = os.path.join(ROOT, "gqa.py")
with open(GQA, encoding="utf-8") as _f:
    SOURCE = _f.read()


def function_lines(source, where):
    """(first, end): the lines of source that hold the function where ("kv_head", or
    "KVCache.append" for a method), as indices into source.splitlines()."""
    cls, _, name = where.rpartition(".")
    body = ast.parse(source).body
    if cls:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == cls).body
    node = next((n for n in body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if node is None:
        raise AssertionError(f"gqa.py has no function {where}")
    return node.lineno - 1, node.end_lineno


def mutate(where, old, new, source=SOURCE):
    """source with old replaced by new inside the function where (its name, or
    Class.method), where old must stand once; old None: the whole function replaced by
    new.  A mutant is anchored in its function, so a line written elsewhere in gqa.py
    never moves it."""
    first, end = function_lines(source, where)
    lines = source.splitlines(keepends=True)
    text = "".join(lines[first:end])
    if old is None:
        text = new
    elif text.count(old) != 1:
        raise AssertionError(f"the mutant's text must stand once in gqa.py's {where}: {old!r}")
    else:
        text = text.replace(old, new)
    return "".join(lines[:first]) + text + "".join(lines[end:])


def in_kv_head(body):
    """gqa.py with body run at the start of kv_head's last line."""
    return mutate("_kv_head", "    return query_head // group\n", body + "    return query_head // group\n")


class Module:
    """A gqa.py variant in a folder of its own."""

    def __init__(self, source, beside_grader=False):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "gqa.py")
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(source)
        if beside_grader:
            shutil.copy(os.path.join(ROOT, "grader.py"), self.dir)

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.dir)


def grade_source(source, seed=12345, cases=2, only=None, timeout=5.0, fail_fast=True):
    """The results of grading source in a worker of its own, as a student's module is
    graded, each step stopped at its first failing case."""
    with Module(source) as path:
        return {r.name: r.as_json() for r in grading.grade(path, seed, cases, only, timeout, fail_fast=fail_fast)}


def grade_all(jobs, at_once=2):
    """grade_source(source, **options) for each (source, options), at_once at a time (each in
    its own worker process)."""
    with ThreadPoolExecutor(at_once) as pool:
        return list(pool.map(lambda job: grade_source(job[0], **job[1]), jobs))


def grade_trusted(jobs):
    """grade_source(source, **options) for each (source, options) written here (mutants and
    other variants of gqa.py, modules these tests trust): in grading.Trusted workers (two for
    ten or more, each grading its half in turn), rather than a worker process per module."""
    def part(k, n):
        graded = []
        with grading.Trusted() as trusted:
            for source, options in jobs[k::n]:
                options = dict({"seed": 12345, "cases": 2, "fail_fast": True}, **options)
                with Module(source) as path:
                    graded.append({r.name: r.as_json() for r in trusted.grade(path, **options)})
        return graded
    if len(jobs) < 10:                                   # not worth a second worker
        return part(0, 1)
    with ThreadPoolExecutor(2) as pool:
        evens, odds = pool.map(part, (0, 1), (2, 2))
    return [(evens if i % 2 == 0 else odds)[i // 2] for i in range(len(jobs))]


class Run:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_main(*args):
    """cli.main(ARGS) in this process (the module graded still runs in a worker), as
    [status, stdout, stderr]: plain data, for a job (read it with Run(*data))."""
    return list(captured(cli.main, args))


# Modules right everywhere but at one end of the knob, where the h of every hidden case is
# (each function wrapped: the lab's own answers elsewhere).
ENDS_WRONG = ("kv_head", "group_heads", "repeat_kv", "kv_cache_elements")
WRONG_AT_AN_END = {end: f"""

_right = (kv_head, group_heads, repeat_kv, kv_cache_elements)


def kv_head(query_head, h, g):
    return {kv_head} if h > 1 and {test} else _right[0](query_head, h, g)


def group_heads(h, g):
    return {groups} if h > 1 and {test} else _right[1](h, g)


def repeat_kv(kv, h):
    g = len(kv)
    return [[[0.0]]] if h > 1 and {test} else _right[2](kv, h)


def kv_cache_elements(layers, kv_heads, length, head_dim, *, batch=1):
    return 7 if kv_heads == 1 and {mqa} else _right[3](layers, kv_heads, length, head_dim, batch=batch)
""" for end, test, kv_head, groups, mqa in (
    ("MHA", "g == h", "0", "[list(range(h))]", False),                # MQA's answers at g = h
    ("MQA", "g == 1", "query_head", "[[i] for i in range(h)]", True))}    # MHA's at g = 1


UNDER_THE_STUB = '''def valid_g(h: int) -> list:
    """The valid g, written under the starter's raise."""
    raise NotImplementedError("step 1: valid_g: Return every valid number of key/value heads "
                              "for h query heads.")
    return [g for g in range(1, h + 1) if h % g == 0]
'''
WRONG_AT_A_PRIME = """

_right_at = (kv_head, kv_cache_elements)


def kv_head(query_head, h, g):
    return 0 if g == h and all(h % p for p in range(2, h)) else _right_at[0](query_head, h, g)


def kv_cache_elements(layers, kv_heads, length, head_dim, *, batch=1):
    right = _right_at[1](layers, kv_heads, length, head_dim, batch=batch)
    return right if kv_heads <= 4 else right // 2
"""
