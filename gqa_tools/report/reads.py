"""gqa_tools.report.reads: what section 8's training reads, found in the code.

Section 8's record (report-training.json) is keyed by the code its training
runs, not by whole files.  From the experiment's run() (START), each
definition reached is followed to every name it uses: a name of its own
module, a name imported from the project's modules (gqa, gqa_tools,
gqa_grader), and `lab.NAME`, the lab module that training is given (LAB:
gqa.py, for the report).  A definition is a module's top-level statement: a
function, a class, an assignment, an import, or a block that defines names in
its branches (gqa.py's `if hasattr(math, "sumprod"):`, both families' kernels).

Each definition reached is read as its syntax tree without its docstrings and
annotations (neither runs: every module has `from __future__ import
annotations`), written out field by field in the same form on Python 3.9 to
3.13.  A docstring, a comment, a type hint, the order of definitions, or a
function training never calls can change without training again.
"""

from __future__ import annotations

import ast
import os
from typing import Dict, Iterator, List, Mapping, Optional, Set, Tuple

import gqa

START = ("gqa_tools.uptraining.experiment", "run")
LAB = ("lab", "gqa")                    # the parameter training takes the lab by, and the lab's module
PROJECT = ("gqa", "gqa_tools", "gqa_grader", "gqa_sandbox")
# Fields that do not run (annotations, type comments), or that a later Python added empty
# (type_params, 3.12) or an older one filled (a constant's kind): left out of every form.
UNREAD = frozenset(("annotation", "returns", "type_comment", "type_params", "kind"))


def _path(dotted: str) -> Optional[str]:
    """The file of a project module, beside gqa.py; None for another module or none."""
    if dotted.split(".")[0] not in PROJECT:
        return None
    base = os.path.join(os.path.dirname(os.path.abspath(gqa.__file__)), *dotted.split("."))
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def _bound(stmt: ast.stmt) -> Iterator[str]:
    """The names a top-level statement binds (in any branch of a block)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield stmt.name
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for alias in stmt.names:
            yield alias.asname or alias.name.split(".")[0]
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        todo = list(stmt.targets) if isinstance(stmt, ast.Assign) else [stmt.target]
        while todo:                             # x, (a, b), *rest: not x[i] or x.y
            target = todo.pop()
            if isinstance(target, ast.Name):
                yield target.id
            elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
                todo += target.elts if not isinstance(target, ast.Starred) else [target.value]
    else:                                       # if, try, with, for: what their bodies bind
        for field in ("body", "orelse", "finalbody", "handlers"):
            for inner in getattr(stmt, field, ()):
                yield from _bound(inner) if isinstance(inner, ast.stmt) else (
                    n for s in inner.body for n in _bound(s))


_READ: Dict[type, Tuple[str, ...]] = {}      # a node type's fields, those of UNREAD left out


def _read(kind: type) -> Tuple[str, ...]:
    """The fields of a node type that are read (not UNREAD), in order; found once a type."""
    if kind not in _READ:
        _READ[kind] = tuple(name for name in kind._fields if name not in UNREAD)
    return _READ[kind]


def _walk(node: ast.AST) -> List[ast.AST]:
    """Every node of a tree but those of the UNREAD fields (annotations: names that never run),
    each node's children after it, its last child first."""
    found, todo, node_type = [], [node], ast.AST
    while todo:
        node = todo.pop()
        found.append(node)
        kind = type(node)
        for name in _READ[kind] if kind in _READ else _read(kind):
            value = getattr(node, name, None)
            if isinstance(value, list):
                todo += [v for v in value if isinstance(v, node_type)]
            elif isinstance(value, node_type):
                todo.append(value)
    return found


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def form(node: object) -> str:
    """A syntax tree written out field by field, without docstrings or the UNREAD fields."""
    if isinstance(node, list):
        return "[" + ", ".join(map(form, node)) + "]"
    if not isinstance(node, ast.AST):
        return repr(node)
    fields = []
    for name in _read(type(node)):
        value = getattr(node, name, None)
        if name == "body" and isinstance(node, _DEFINITIONS) and ast.get_docstring(node, clean=False) is not None:
            value = value[1:]
        fields.append(f"{name}={form(value)}")
    return f"{type(node).__name__}({', '.join(fields)})"


class _Module:
    """A project module's top-level statements, by the names they bind."""

    def __init__(self, dotted: str, text: str):
        self.dotted, self.body = dotted, ast.parse(text).body
        self.binds: Dict[str, List[ast.stmt]] = {}
        for stmt in self.body:
            for name in _bound(stmt):
                self.binds.setdefault(name, []).append(stmt)


class Reader:
    """The definitions reached from START: reached() gives (module, statement) pairs.

    texts: a module's text by its dotted name, instead of its file (what a test edits).
    """

    def __init__(self, texts: Optional[Mapping[str, str]] = None):
        self.texts = dict(texts or {})
        self.modules: Dict[str, Optional[_Module]] = {}
        self.seen: Set[Tuple[str, int]] = set()
        self.found: List[Tuple[str, ast.stmt]] = []
        self.imported: Set[str] = set()         # "module: from X import Y as Z", each reached once
        self.named: Dict[str, Dict[str, str]] = {}  # each module's names of project modules, by its imports

    def module(self, dotted: str) -> Optional[_Module]:
        """The project's module of that name, parsed once; None (also kept) for any other name."""
        if dotted not in self.modules:
            path = None if dotted in self.texts else _path(dotted)
            if path is not None:
                with open(path, encoding="utf-8") as f:
                    self.texts[dotted] = f.read()
            self.modules[dotted] = _Module(dotted, self.texts[dotted]) if dotted in self.texts else None
        return self.modules[dotted]

    def reach(self, dotted: str, name: str) -> None:
        """Follow a name of a project module to every definition it reads."""
        todo = [(dotted, name)]
        while todo:
            dotted, name = todo.pop()
            mod = self.module(dotted)
            for stmt in mod.binds.get(name, []) if mod else []:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    todo += self._imported(dotted, stmt, name)
                elif (dotted, id(stmt)) not in self.seen:
                    self.seen.add((dotted, id(stmt)))
                    self.found.append((dotted, stmt))
                    todo += self._uses(mod, stmt)

    def _imported(self, dotted: str, stmt: ast.stmt, name: str) -> List[Tuple[str, str]]:
        """An import of name, written down; the name it imports from a project module, to follow."""
        for alias in stmt.names:
            if (alias.asname or alias.name.split(".")[0]) != name:
                continue
            source = stmt.module if isinstance(stmt, ast.ImportFrom) else None
            self.imported.add(f"{dotted}: " + (f"from {source} " if source else "")
                              + f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else ""))
            if source is not None and self.module(f"{source}.{alias.name}") is None and _path(source):
                return [(source, alias.name)]
        return []

    def _modules_named(self, mod: _Module, imports: List[ast.stmt]) -> Dict[str, str]:
        """The names a statement reads as a project module: by its imports and its module's, and LAB
        (its module's part found once a module)."""
        if mod.dotted not in self.named:
            self.named[mod.dotted] = self._named_by({LAB[0]: LAB[1]},
                                                    [s for s in mod.body if isinstance(s, (ast.Import, ast.ImportFrom))])
        return self._named_by(dict(self.named[mod.dotted]), imports) if imports else self.named[mod.dotted]

    def _named_by(self, names: Dict[str, str], imports: List[ast.stmt]) -> Dict[str, str]:
        """names, with the project modules that imports bring by a name of their own."""
        for imp in imports:
            for alias in imp.names:
                if isinstance(imp, ast.ImportFrom):
                    full = f"{imp.module}.{alias.name}"
                else:
                    full = alias.name if alias.asname else alias.name.split(".")[0]
                if self.module(full) is not None:
                    names[alias.asname or alias.name.split(".")[0]] = full
        return names

    def _uses(self, mod: _Module, stmt: ast.stmt) -> List[Tuple[str, str]]:
        """The (module, name) pairs a statement reads: its module's names, a module's attributes,
        and the names its own imports bring (an import inside a function)."""
        nodes = _walk(stmt)
        imports = [n for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom))]
        modules = self._modules_named(mod, imports)
        uses = []
        for imp in imports:
            for alias in imp.names:
                uses += self._imported(mod.dotted, imp, alias.asname or alias.name.split(".")[0])
        name_type, attribute_type = ast.Name, ast.Attribute
        for node in nodes:
            kind = type(node)                   # a parsed tree's nodes are of the ast classes themselves
            if kind is name_type:
                uses.append((mod.dotted, node.id))
            elif kind is attribute_type:
                chain = [node.attr]
                base = node.value
                while isinstance(base, ast.Attribute):
                    chain.insert(0, base.attr)
                    base = base.value
                if isinstance(base, ast.Name) and base.id in modules:
                    where = modules[base.id]
                    while len(chain) > 1 and self.module(f"{where}.{chain[0]}") is not None:
                        where = f"{where}.{chain.pop(0)}"
                    uses.append((where, chain[0]))
        return uses

    def reached(self) -> List[Tuple[str, ast.stmt]]:
        """Every definition reached from START, in the order found."""
        if not self.found:
            self.reach(*START)
        return self.found


def read_forms(texts: Optional[Mapping[str, str]] = None) -> List[str]:
    """What section 8's training reads, one line each, sorted: each definition reached (its
    module and form) and each import it reads by."""
    reader = Reader(texts)
    return sorted([f"{dotted}: {form(stmt)}" for dotted, stmt in reader.reached()] + list(reader.imported))


def spans(texts: Optional[Mapping[str, str]] = None) -> Dict[str, List[Tuple[int, int]]]:
    """{file: [(first line, last line)]} of each definition reached (decorators included)."""
    out: Dict[str, List[Tuple[int, int]]] = {}
    for dotted, stmt in Reader(texts).reached():
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        out.setdefault(_path(dotted), []).append((first, stmt.end_lineno))
    return out
