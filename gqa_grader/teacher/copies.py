"""Copies, flagged for a person to judge, never scored: a class's submissions that share
most of their code, and a submission that holds the shipped solution's code, or part of it.

The method is MOSS's (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for
document fingerprinting", SIGMOD 2003), on a normalised program:

- A module is parsed (ast) a top-level definition at a time (with what follows it up
  to the next: a definition many submissions hold is parsed once), and each function
  and method becomes a token stream of its own, a class's own statements one more, and
  the other statements of each part one more: a token per node of the tree, in order.
  What a copier changes cheaply is not in it: layout, parentheses and comments (not in
  the tree), docstrings and every other statement that does nothing (pass, a bare
  constant), annotations, and names: every name that is not a builtin becomes N (a
  variable's, an argument's, a function's, an attribute's), every number 0, every
  string (an f-string too) S.  Reordering the functions changes nothing either: each
  is fingerprinted apart.  Where a part does not parse alone, the whole module is
  parsed; where that fails too, a part that does not parse is taken by its tokens
  (tokenize: names N, numbers 0, strings S, as above), so that a syntax error hides only its own part.
- In each stream, each run of K tokens is hashed (crc32 of its tokens' crc32s: the
  same on every Python), and of each window of W consecutive hashes the smallest (the
  rightmost, on ties) is kept: the module's fingerprints.  Any run of at least
  W + K - 1 tokens shared by two functions gives both a fingerprint in common.
- A function (or the rest) of fewer than SMALL tokens gives none: a step written in
  the few tokens it needs is what anyone writes, not evidence.
- The starter's fingerprints are not counted (the code every student was given:
  MOSS's base file), in each language a starter is written in.  Code that most
  submissions share is counted all the same: in a class that copied one solution,
  that is the copy.

Two submissions are reported when they have at least BLOCK fingerprints in common and
each shares at least SHARED of its fingerprints with the other, or one shares CONTAINED
of its own (a part copied into a module of its own), with the lines of each (of
its functions that hold them).  The shipped solution is compared with each submission by the same rule; a
submission it pairs with is reported with the share of the solution's fingerprints it
holds, and is the solution over again when that share is at least SOLUTION.
"""

import ast
import io
import os
import re
import tokenize
import zlib

from ..language.i18n import _

K, W = 12, 8             # tokens a fingerprint covers; hashes a window chooses one of
SHARED = 0.5             # the share of each one's fingerprints that makes a pair
CONTAINED = 0.8          # or of one's (a part copied)
BLOCK = 20               # fingerprints in common that a pair needs, at the least
SOLUTION = 0.9           # the share of the solution that makes a submission the solution again
SMALL = 40               # tokens a function needs to count (at least W + K - 1: a full window)
# Names kept as they are: the keywords and the builtin functions, as Python 3.9 has them
# (written out: a newer Python's new builtins would change the fingerprints).
_KEEP = set("""False None True and as assert async await break class continue def del elif else
except finally for from global if import in is lambda nonlocal not or pass raise return try
while with yield abs all any ascii bin bool bytearray bytes callable chr classmethod complex
dict dir divmod enumerate filter float format frozenset getattr hasattr hash hex id int
isinstance issubclass iter len list map max memoryview min next object oct open ord pow print
property range repr reversed round set setattr slice sorted staticmethod str sum super tuple
type vars zip""".split())
# Python 3.12's tokens of an f-string's parts: start first, end last (none before 3.12).
_FSTRING = tuple(getattr(tokenize, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
                 if hasattr(tokenize, name))


def tokens(source):
    """[(token, line)] of source's tokens, for a part that does not parse: comments,
    blank lines and indentation out, every name that is not a keyword or a builtin N,
    every number 0, every string S; [] when it does not tokenize."""
    found, inside = [], 0                  # inside: f-strings open (3.12+ tokenizes their parts)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            kind, text = tok.type, tok.string
            if kind in _FSTRING:                # an f-string is one S, as before 3.12
                inside += 1 if kind == _FSTRING[0] else -1 if kind == _FSTRING[-1] else 0
                if kind == _FSTRING[0] and inside == 1:
                    found.append(("S", tok.start[0]))
                continue
            if inside:
                continue
            if kind in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                        tokenize.DEDENT, tokenize.ENDMARKER, tokenize.ENCODING):
                continue
            if kind == tokenize.NAME:
                text = text if text in _KEEP else "N"
            elif kind == tokenize.NUMBER:
                text = "0"
            elif kind == tokenize.STRING:
                text = "S"
            found.append((text, tok.start[0]))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return found


# The fields of a node left out of its tokens: annotations (a copier drops or adds them
# cheaply) and what only says how a name is used (Load, Store, Del).
_LEFT_OUT = frozenset({"ctx", "annotation", "returns", "type_comment", "type_params"})
_AS = {"AnnAssign": "Assign", "AsyncFunctionDef": "FunctionDef", "AsyncFor": "For", "AsyncWith": "With"}
_CODES = {}                             # a token -> its four bytes (_code)
_FIELDS = {}                            # a node's type -> (its token, the fields walked)
_BARE = (ast.Constant, ast.JoinedStr)          # a bare one does nothing
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TOP = re.compile(r"(async\s+def|def|class)\b|@")        # a line that starts a top-level definition


def _idle(node):
    """Whether node is a statement that does nothing: pass, or a bare constant (a
    docstring, ..., a number, an f-string)."""
    return type(node) is ast.Pass or type(node) is ast.Expr and type(node.value) in _BARE


def _constant(value):
    if isinstance(value, (str, bytes)):
        return "S"
    return "0" if isinstance(value, (int, float, complex)) and not isinstance(value, bool) else repr(value)


def _flat(node):
    """[(token, line)] of node's tree, a token per node in order (the module's docstring
    says which), a node without a line on the line of the token before it; iterative, so
    that no nesting is too deep for it."""
    out, stack, line = [], [node], 1
    while stack:
        item = stack.pop()
        line = getattr(item, "lineno", line)
        kind = type(item)
        if kind is ast.Name:
            out.append((item.id if item.id in _KEEP else "N", line))
        elif kind is ast.Constant:
            out.append((_constant(item.value), line))
        elif kind is ast.JoinedStr:
            out.append(("S", line))
        else:
            if kind not in _FIELDS:
                _FIELDS[kind] = (_AS.get(kind.__name__, kind.__name__),
                                 tuple(f for f in kind._fields if f not in _LEFT_OUT))
            name, fields = _FIELDS[kind]
            out.append((name, line))
            children = []
            for field in fields:
                value = getattr(item, field, None)
                if type(value) is list:
                    children += [v for v in value if isinstance(v, ast.AST) and not (   # _idle, inline
                        type(v) is ast.Pass or type(v) is ast.Expr and type(v.value) in _BARE)]
                elif isinstance(value, ast.AST):
                    children.append(value)
            children.reverse()
            stack += children
    return out


def _units(body, rest):
    """[[(token, line)], ...] of the statements of body: one stream per function or
    method, the others' tokens added to rest (a class's own statements in a stream of
    their own)."""
    found = []
    for node in body:
        if _idle(node):
            continue
        if isinstance(node, _DEFS):
            found.append(_flat(node))
        elif isinstance(node, ast.ClassDef):
            own = [("ClassDef", node.lineno)]
            found += _units(node.body, own)
            found.append(own)
        else:
            rest += _flat(node)
    return found


def _parts(source):
    """(text, lines before it) of each top-level part of source: the lines before its
    first definition, then each definition with what follows it up to the next."""
    lines = [line + "\n" for line in source.split("\n")]       # as the parser counts lines
    lines[-1] = lines[-1][:-1]
    starts = [0] + [i for i, line in enumerate(lines) if i and _TOP.match(line)
                    and not _TOP.match(lines[i - 1])]          # a decorator's def goes with it
    return [("".join(lines[a:b]), a) for a, b in zip(starts, starts[1:] + [len(lines)])]


def _parsed(text):
    """The fingerprints of each stream of text ([{hash: [line, ...]}, ...], none of a
    stream of fewer than SMALL tokens); None when text does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    rest = []
    return _winnowed(_units(tree.body, rest) + [rest])


def _winnowed(streams):
    found = []
    for stream in streams:
        if len(stream) >= SMALL:
            chosen = {}
            _winnow(stream, chosen)
            found.append(chosen)
    return found


def stream_prints(source, cache=None):
    """[{hash: [line, ...]}, ...]: the fingerprints of each stream of source (the
    module's docstring), a top-level part at a time (cache: {part's text: what
    _parsed made of it}, so that a part many submissions hold is parsed once); the
    whole module's when a part does not parse alone but the module does; else the
    part's tokens."""
    cache = {} if cache is None else cache
    parts = _parts(source)
    for text, _ in parts:
        if text not in cache:
            cache[text] = _parsed(text)
    if any(cache[text] is None for text, _ in parts):
        whole = _parsed(source)
        if whole is not None:
            return whole
    found = []
    for text, before in parts:
        made = cache[text] if cache[text] is not None else _winnowed([tokens(text)])
        found += [{h: [n + before for n in at] for h, at in chosen.items()} for chosen in made]
    return found


def _code(token):
    """A token's four bytes (of its crc32: the same on every Python), once."""
    _CODES[token] = zlib.crc32(token.encode("utf-8", "surrogatepass")).to_bytes(4, "little")
    return _CODES[token]


def _winnow(stream, chosen):
    """Add stream's fingerprints to chosen ({hash: [line, ...]}): winnowing's choice of
    the hashes of its K-grams (crc32 of its tokens' codes), each with the line (of its
    first token) where it stands."""
    codes = bytes().join(_CODES.get(t) or _code(t) for t, _ in stream)
    hashes = [zlib.crc32(codes[i:i + 4 * K]) for i in range(0, len(codes) - 4 * K + 4, 4)]
    last, window = None, []                             # window: indices of rising minima
    for i, h in enumerate(hashes):
        while window and hashes[window[-1]] >= h:       # >=: of equal hashes, the rightmost
            window.pop()
        window.append(i)
        if window[0] <= i - W:
            window.pop(0)
        if i >= W - 1 and window[0] != last:            # a full window: its minimum, once
            last = window[0]
            chosen.setdefault(hashes[last], []).append(stream[last][1])


def fingerprints(source, cache=None):
    """{hash: [line, ...]} of source: the fingerprints of all its streams."""
    chosen = {}
    for made in stream_prints(source, cache):
        for h, at in made.items():
            chosen.setdefault(h, []).extend(at)
    return chosen


class _Own:
    """A submission's fingerprints, those of base aside: prints, {hash: [line, ...]};
    spans, [(hashes, first line, last line)] of each stream that has any left."""

    def __init__(self, made, common):
        self.prints, self.spans = {}, []
        for chosen in made:
            kept = {h: at for h, at in chosen.items() if h not in common}
            if kept:
                lines = [n for at in kept.values() for n in at]
                self.spans.append((frozenset(kept), min(lines), max(lines)))
                for h, at in kept.items():
                    self.prints.setdefault(h, []).extend(at)
        self.set = frozenset(self.prints)

    def lines(self, other):
        """'12-30, 41': the lines of each stream that shares a fingerprint with other (a
        set), from its first fingerprint to its last."""
        return _ranges(sorted((a, b) for hashes, a, b in self.spans if not hashes.isdisjoint(other)))


def _ranges(spans):
    """'12-30, 41' of (first, last) line spans in increasing order of first."""
    out = []
    for a, b in spans:
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(b, out[-1][1])
        else:
            out.append([a, b])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)
    return text if len(text) <= 160 else text[:text.rindex(", ", 0, 160)] + ", ..."


def _paired(count, one, other):
    """Whether two sets of one and other fingerprints with count in common make a pair:
    BLOCK in common, and SHARED of each, or CONTAINED of one."""
    if count < BLOCK:
        return False
    low, high = sorted((count / one, count / other))
    return low >= SHARED or high >= CONTAINED


def compare(sources, base=(), solution=None):
    """(groups, pairs, solutions) of sources ({key: text}): groups, [[key, ...]] of two
    or more submissions whose code is the same (their fingerprints all alike, BLOCK of
    them at least); pairs, [(share, a, b, a's lines, b's lines)] of the others that
    _paired pairs (share: the larger of the two), most first (a group stands by its
    first key); solutions, [(share, key, its lines)] of those _paired pairs with the
    solution (share: of the solution's fingerprints), most first.  The fingerprints of
    base, a starter's text or several (the starter in each language), are not counted."""
    cache, common = {}, set()
    for text in [base] if isinstance(base, str) else base:
        common.update(fingerprints(text, cache))
    made = {}                                           # text -> its _Own: a copy costs nothing
    for text in sources.values():
        if text not in made:
            made[text] = _Own(stream_prints(text, cache), common)
    own = {key: made[text] for key, text in sorted(sources.items())}
    alike = {}
    for key, mine in own.items():
        if mine.set:
            alike.setdefault(mine.set, []).append(key)
    groups = [keys for fp, keys in alike.items() if len(keys) > 1 and len(fp) >= BLOCK]
    firsts = sorted(keys[0] for keys in alike.values())
    pairs = []
    for i, a in enumerate(firsts):                       # one intersection a pair
        for b in firsts[i + 1:]:
            both = own[a].set & own[b].set
            if _paired(len(both), len(own[a].set), len(own[b].set)):
                share = max(len(both) / len(own[a].set), len(both) / len(own[b].set))
                pairs.append((round(share, 2), a, b, own[a].lines(own[b].set), own[b].lines(own[a].set)))
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    theirs = frozenset(fingerprints(solution, cache)) - common if solution else frozenset()
    solutions = []
    for key, mine in own.items():
        both = theirs & mine.set
        if _paired(len(both), len(mine.set) or 1, len(theirs) or 1):
            solutions.append((round(len(both) / len(theirs), 2), key, mine.lines(theirs)))
    solutions.sort(key=lambda s: (-s[0], s[1]))
    return sorted(groups), pairs, solutions


def report(groups, pairs, shown, solutions=()):
    """The copies file's text, in the language in use: what was compared, then a line
    per group of the same code, a line per pair (its share and the lines each shares)
    and a line per submission that shares the shipped solution (its share of it and
    its lines); shown(key) is how a submission is named."""
    head = ["# " + _("Submissions that share most of their code with each other or with the shipped "
                     "solution: flagged for a person to judge; no score depends on it."),
            "# " + _("Compared: each function's code apart, with its layout, comments, docstrings, "
                     "annotations, names and literals aside and its statements that do nothing (pass, "
                     "a bare constant) left out; neither the starter's code (in each language) nor a "
                     "function of fewer than {small} tokens counts. MOSS's winnowed fingerprints: a "
                     "pair shares at least {block} of them, and {shared} of each one's or {contained} "
                     "of one's; the shipped solution pairs with a submission by the same rule.").format(
                         small=SMALL, block=BLOCK, shared=f"{SHARED:.0%}", contained=f"{CONTAINED:.0%}"),
            "# " + _("the same code: submissions; then: share  submission  its lines  submission  its lines")]
    lines = [_("same code but for functions under {small} tokens ({count}): {submissions}").format(   # those
        small=SMALL, count=len(keys), submissions=" = ".join(shown(k) for k in keys)) for keys in groups]  # may differ
    lines += [f"{share:.0%}  {shown(a)}  {la}  {shown(b)}  {lb}" for share, a, b, la, lb in pairs]
    for share, key, at in solutions:
        text = (_("{submission} is the shipped solution over again: it holds {share} of the "
                  "solution's code (its lines {lines})") if share >= SOLUTION else
                _("{submission} shares {share} of the shipped solution's code (its lines {lines})"))
        lines.append(text.format(submission=shown(key), share=f"{share:.0%}", lines=at))
    return "\n".join(head + lines) + "\n"


def read_source(path):
    """A submission's text for comparing ("" when it cannot be read as text)."""
    import stat
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return ""
    try:
        data = os.read(fd, 1 << 20) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        data = b""
    finally:
        os.close(fd)
    return text_of(data) if os.path.basename(path).endswith(".py") else ""


def text_of(data):
    """The text of a module's bytes as the grader reads them (seal.runnable): UTF-16 with
    its mark (Notepad's "Unicode"), UTF-8 with or without a mark, else Latin-1; so that
    saving a copy another way hides nothing."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return ""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")
