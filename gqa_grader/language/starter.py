"""gqa_grader.language.starter: the gqa.py a student starts from, made from the text of gqa.py.

make_starter(source, step_of) keeps gqa.py's own lines: the module docstring, the
banners, comments, shapes and citations, the imports, GQAError, the limits and the
records (plain NamedTuples).  Each public function's and public method's body becomes
its docstring, as indented in gqa.py, and

    raise NotImplementedError("step N: NAME: summary")

which the grader reads as "not started" (step_of gives N: "valid_g" -> 1, a class's
methods take its class's step).  The private kernels and helpers that only the
solution uses are left out, with the comments that describe them (a "# Step N." line
among them stays); a private name is kept only where kept code needs it, and gqa.py's
kept code needs none.  The command line becomes one line saying what to run.

ast is used only to find where each definition starts and ends (lineno, end_lineno)
and which names kept code needs; every line written is a line of gqa.py, or a stub's
raise, or the header and command line below.  The same source gives the same bytes.
"""

import ast
import re

HEADER = [
    "# A starter for the gqa lab: gqa.py with the code of each step taken out.  Each",
    "# step's function raises NotImplementedError until you write it; from the project's",
    "# folder, python grader.py --module PATH/gqa.py grades what you have done.",
    "# GQAError, the limits and the records are the lab's interface: the grader reads them,",
    "# so leave them as they are.",
]

MAIN = [
    'if __name__ == "__main__":           # the lab is graded and read by the tools, not run',
    "    import sys",
    '    print("this gqa.py is the lab, not its tools: from the project\'s folder, run "',
    '          "python grader.py --module PATH/gqa.py or python -m gqa report "',
    '          "--module PATH/gqa.py", file=sys.stderr)',
    "    sys.exit(2)",
]

# A handout's starter (--handout): the tools are beside it, so python -m gqa COMMAND, which
# runs this file as the program, hands the command line to them (as gqa.py's own last lines
# do), and python gqa.py alone says what to run in this folder.
HANDOUT_HEADER = [
    "# A starter for the gqa lab: gqa.py with the code of each step taken out.  Each",
    "# step's function raises NotImplementedError until you write it; in this folder,",
    "# python grader.py grades what you have done, and python -m gqa report writes your",
    "# report from it.  GQAError, the limits and the records are the lab's interface: the",
    "# grader and the tools read them, so leave them as they are.",
]

HANDOUT_MAIN = [
    'if __name__ == "__main__":           # python -m gqa COMMAND: the tools of this folder',
    "    import sys",
    "    if sys.argv[1:]:",
    "        import importlib",
    '        sys.modules["gqa"] = sys.modules[__name__]',
    '        sys.exit(importlib.import_module("gqa_tools.cli").main())',
    '    print("this gqa.py is the lab, not its tools: in this folder, run "',
    '          "python grader.py or python -m gqa report", file=sys.stderr)',
    "    sys.exit(2)",
]

GIVEN = "# Given: step {step}, {name}, is not in your track; it is written for you, to be read and called."
# Comments of gqa.py about what the starter leaves out (its kernels, the checks at the
# door): a comment paragraph, or a banner, whose first line starts so is left out too.
SOLUTION_ONLY = ("# One naming rule:", "# The door:")
WIDTH = 99                              # the longest line a stub's raise is wrapped to
_STEP_LINE = re.compile(r"# Step \d+\.")
_BANNER_LINE = re.compile(r"# -{20,}$")


def make_starter(source: str, step_of: dict, given: tuple = (), handout: bool = False) -> str:
    """Return the text of a starter gqa.py made from source, the text of gqa.py.

    step_of maps a public function's or class's name to its step number; a name it
    lacks is stubbed without one.  given: the public names kept whole, with what they
    need, each under a GIVEN line: the steps outside a student's track, written for
    them so that later steps can call them.  handout: the starter of a handout, whose
    tools are beside it (HANDOUT_HEADER, HANDOUT_MAIN).  Raises ValueError for a construct the
    starter cannot take apart (a one-line def, a public name defined under an if).
    """
    lines = source.splitlines()
    tree = ast.parse(source)
    given = _givable(tree, lines, step_of, frozenset(given))
    needed = _needed(tree, given)
    pieces = [("comment", line) for line in (HANDOUT_HEADER if handout else HEADER)]
    placed = 0                                            # lines[:placed] are dealt with
    for node in tree.body:
        start = _start(node)
        action = _action(node, needed, given)
        pieces += _gap(lines[placed:start], dropped=action == "drop")
        if action == "given":
            pieces.append(("comment", GIVEN.format(step=step_of.get(node.name), name=node.name)))
            pieces += [("code", line) for line in lines[start:node.end_lineno]]
        elif action == "keep":
            pieces += [("code", line) for line in lines[start:node.end_lineno]]
        elif action == "stub":
            pieces += [("code", line) for line in _stub(lines, node, node.name, step_of.get(node.name))]
        elif action == "class":
            pieces += [("code", line) for line in _class(lines, node, step_of.get(node.name))]
        elif action == "main":
            pieces += [("main", line) for line in (HANDOUT_MAIN if handout else MAIN)]
        placed = node.end_lineno
    pieces += _gap(lines[placed:], dropped=False)
    return _assemble(pieces)


# ---------------------------------------------------------------------------
# What each top-level definition becomes.
# ---------------------------------------------------------------------------

def _step_sections(tree: ast.Module, lines: list) -> dict:
    """The step each top-level private definition belongs to: the "# Step N." line above
    it, within its banner's section (None for what stands under no step, such as the
    checks at the door)."""
    step_at, current = [], None
    for line in lines:
        found = re.match(r"# Step (\d+)\.", line)
        if found:
            current = int(found.group(1))
        elif _BANNER_LINE.match(line):
            current = None
        step_at.append(current)
    return {name: step_at[node.lineno - 1] for node in tree.body for name in _defined(node)
            if not _public(name)}


def _givable(tree: ast.Module, lines: list, step_of: dict, given: frozenset) -> frozenset:
    """The names of given that can be written out without a private kernel of a step
    the student writes (which would hand over its answer): the others stay stubs."""
    if not given:
        return given
    section = _step_sections(tree, lines)
    private = {name: node for node in tree.body for name in _defined(node) if not _public(name)}
    secret = {name for name, step in section.items()
              if step is not None and not any(step_of.get(g) == step for g in given)}
    kept = set()
    for node in tree.body:
        if getattr(node, "name", None) not in given:
            continue
        reads, todo = set(), [n for n in _names(node) if n in private]
        while todo:
            name = todo.pop()
            if name not in reads:
                reads.add(name)
                todo += [n for n in _names(private[name]) if n in private]
        if not reads & secret:
            kept.add(node.name)
    return frozenset(kept)


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _start(node: ast.AST) -> int:
    """The index of a node's first line, its decorators included."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1


def _defined(node: ast.AST) -> list:
    """The names a top-level statement defines."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, ast.If):
        return [name for child in node.body + node.orelse for name in _defined(child)]
    return []


def _is_main(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and any(
        isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(node.test))


def _action(node: ast.AST, needed: set, given: frozenset = frozenset()) -> str:
    """keep, given (a public step kept whole), stub (a public function), class (a public
    class with methods to stub), main (the command line) or drop."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in given:
        return "given"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return "keep"
    if isinstance(node, ast.Expr):                        # the module docstring
        return "keep" if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) \
            else "drop"
    if _is_main(node):
        return "main"
    names = _defined(node)
    if not names:                                         # loops and the like: machinery
        return "drop"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(node.name):
        return "stub"
    if isinstance(node, ast.ClassDef) and _public(node.name):
        return "class" if any(_member_action(m) == "stub" for m in node.body) else "keep"
    if isinstance(node, ast.If) and any(_public(name) for name in names):
        raise ValueError(f"line {node.lineno}: a public name defined under an if "
                         f"({', '.join(names)}); the starter cannot take it apart")
    if all(_public(name) for name in names) or any(name in needed for name in names):
        return "keep"
    return "drop"


def _member_action(node: ast.AST) -> str:
    """Within a public class: stub its public methods, __init__ and its documented
    dunders; keep its docstring and public constants; drop the rest."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return "keep"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        name = node.name
        if not name.startswith("_") or name == "__init__" or (
                name.startswith("__") and name.endswith("__") and ast.get_docstring(node)):
            return "stub"
        return "drop"
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and all(not n.startswith("_") for n in _defined(node)):
        return "keep"
    return "drop"


def _names(node: ast.AST) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _signature_names(fn: ast.AST) -> set:
    """The names a stub still reads: its decorators, defaults and annotations."""
    parts = fn.decorator_list + fn.args.defaults + [d for d in fn.args.kw_defaults if d is not None]
    args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs + [fn.args.vararg, fn.args.kwarg]
    parts += [a.annotation for a in args if a is not None and a.annotation is not None]
    parts += [fn.returns] if fn.returns is not None else []
    return set().union(*map(_names, parts)) if parts else set()


def _needed(tree: ast.Module, given: frozenset = frozenset()) -> set:
    """The private top-level names that the kept code reads (the given steps' too), and
    what they read in turn."""
    private = {name: node for node in tree.body for name in _defined(node) if not _public(name)}
    reads = set()
    for node in tree.body:
        if _is_main(node) or any(name in private for name in _defined(node)):
            continue                                      # private: kept only if needed
        action = _action(node, set(), given)
        if action in ("keep", "given"):
            reads |= _names(node)
        elif action == "stub":
            reads |= _signature_names(node)
        elif action == "class":
            reads |= set().union(*map(_names, node.bases + node.keywords + node.decorator_list))
            for member in node.body:
                kind = _member_action(member)
                reads |= _signature_names(member) if kind == "stub" else _names(member) if kind == "keep" else set()
    needed, todo = set(), [name for name in reads if name in private]
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo += [n for n in _names(private[name]) if n in private and n not in needed]
    return needed


# ---------------------------------------------------------------------------
# The lines written: gaps between definitions, stubs, classes.
# ---------------------------------------------------------------------------

def _gap(gap: list, dropped: bool) -> list:
    """The blank and comment lines before a definition, as pieces: banners whole; when
    the definition is dropped, the comments right above it go with it, but for a
    "# Step N." line among them."""
    pieces, i = [], 0
    while i < len(gap):
        line = gap[i]
        if _BANNER_LINE.match(line):                     # a banner: to its closing dashes
            end = next((j for j in range(i + 1, len(gap)) if _BANNER_LINE.match(gap[j])), i)
            if end == i or not gap[i + 1].startswith(SOLUTION_ONLY):
                pieces += [("banner", text) for text in gap[i:end + 1]]
            i = end + 1
            continue
        if line.startswith(SOLUTION_ONLY):              # the paragraph: to a line not a comment
            while i < len(gap) and gap[i].startswith("#"):
                i += 1
            continue
        pieces.append(("blank" if not line.strip() else "comment", line))
        i += 1
    if dropped:
        attached = len(pieces)
        while attached and pieces[attached - 1][0] == "comment":
            attached -= 1
        pieces[attached:] = [("step", text) for _, text in pieces[attached:] if _STEP_LINE.match(text)]
    return pieces


def _stub(lines: list, fn: ast.AST, qualname: str, step) -> list:
    """A function as its signature, its docstring and a raise NotImplementedError."""
    first = fn.body[0]
    if first.lineno == fn.lineno:
        raise ValueError(f"line {fn.lineno}: {qualname} is a one-line def; the starter "
                         f"cannot keep its signature apart from its body")
    out = lines[_start(fn):first.lineno - 1]
    doc = ast.get_docstring(fn)
    if doc is not None:
        out += lines[first.lineno - 1:first.end_lineno]
    summary = doc.splitlines()[0] if doc else ""
    label = f"step {step}: {qualname}" if step is not None else qualname
    return out + _raise(" " * first.col_offset, label + (f": {summary}" if summary else ""))


def _raise(indent: str, message: str) -> list:
    """raise NotImplementedError(message), its string wrapped at spaces to WIDTH."""
    head = f"{indent}raise NotImplementedError("
    room = max(WIDTH - len(head) - 3, 20)
    escaped = message.replace("\\", "\\\\").replace('"', '\\"')
    chunks, current = [], ""
    for token in re.findall(r"\S+\s*|\s+", escaped):           # a word and the spaces after it
        if current and len(current + token.rstrip()) > room:
            chunks.append(current)
            current = ""
        current += token
    chunks.append(current)
    quoted = [f'"{chunk}"' for chunk in chunks]
    out = [head + quoted[0]] + [" " * len(head) + q for q in quoted[1:]]
    out[-1] += ")"
    return out


def _class(lines: list, cls: ast.ClassDef, step) -> list:
    """A public class with its docstring and public constants, its methods stubbed
    (a method's step is its class's), its private methods and attributes left out."""
    out = lines[_start(cls):cls.body[0].lineno - 1]
    placed = cls.body[0].lineno - 1
    for member in cls.body:
        start, kind = _start(member), _member_action(member)
        for what, text in _gap(lines[placed:start], dropped=kind == "drop"):
            if what != "blank" or (out and out[-1].strip()):       # one blank line at most
                out.append(text)
        if kind == "keep":
            out += lines[start:member.end_lineno]
        elif kind == "stub":
            out += _stub(lines, member, f"{cls.name}.{member.name}", step)
        placed = member.end_lineno
    while out and not out[-1].strip():
        out.pop()
    return out


def _assemble(pieces: list) -> str:
    """The pieces as text: a banner over nothing kept goes, with the comments of its
    section; a kept "# Step N." line sits on what follows it; two blank lines at most."""
    kept, section = [], []
    for piece in pieces + [("end", "")]:
        if piece[0] in ("banner", "main", "end") and not (section and section[-1][0] == "banner"):
            if section and section[0][0] == "banner" and not any(k == "code" for k, _ in section):
                section = [p for p in section if p[0] == "blank"]
            kept += section
            section = []
        section.append(piece)
    out = []
    for kind, text in kept:
        if kind == "blank" and (len(out) >= 2 and not out[-1].strip() and not out[-2].strip()
                                or out and _STEP_LINE.match(out[-1]) or not out):
            continue
        out.append(text)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n"
