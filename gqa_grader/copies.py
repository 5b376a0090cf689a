"""Copies, flagged for a person to judge, never scored: a class's submissions that share
most of their code, and a submission that is the shipped solution over again.

The method is MOSS's (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for
document fingerprinting", SIGMOD 2003), on the standard library's tokenize:

- A module becomes its tokens with what a copier changes cheaply taken out: comments,
  blank lines and indentation go, every name that is not a keyword or a builtin
  becomes N, every number 0, every string S.  Renaming variables, rewording comments
  and reformatting leave the stream as it was.
- Each run of K tokens is hashed (crc32 of its text: the same on every Python), and
  of each window of W consecutive hashes the smallest (the rightmost, on ties) is kept:
  the module's fingerprints.  Any run of at least W + K - 1 tokens shared by two
  modules gives both a fingerprint in common.
- The starter's fingerprints are not counted (the code every student was given:
  MOSS's base file).  Code that most submissions share is counted all the same: in a
  class that copied one solution, that is the copy.

Two submissions are reported when each shares at least SHARED of its fingerprints
with the other, or one shares CONTAINED of its own, at least BLOCK of them (a part
copied into a module of its own), with the lines of each that hold them.
"""

import io
import os
import tokenize
import zlib

K, W = 12, 8             # tokens a fingerprint covers; hashes a window chooses one of
SHARED = 0.5             # the share of each one's fingerprints that makes a pair
CONTAINED = 0.8          # or of one's, when that is at least BLOCK fingerprints (a part copied)
BLOCK = 20
SOLUTION = 0.9           # the share that makes a submission the shipped solution again
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
    """[(token, line)] of source, normalised as the module's docstring says; [] when it
    does not tokenize."""
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


def fingerprints(source):
    """{hash: [line, ...]} of source: winnowing's choice of its K-grams' hashes, each
    with the lines (of its first token) where it stands."""
    toks = tokens(source)
    words = [t for t, _ in toks]
    hashes = [zlib.crc32(" ".join(words[i:i + K]).encode("utf-8")) for i in range(len(toks) - K + 1)]
    chosen, last, window = {}, None, []                 # window: indices of rising minima
    for i, h in enumerate(hashes):
        while window and hashes[window[-1]] >= h:       # >=: of equal hashes, the rightmost
            window.pop()
        window.append(i)
        if window[0] <= i - W:
            window.pop(0)
        if i >= W - 1 and window[0] != last:            # a full window: its minimum, once
            last = window[0]
            chosen.setdefault(hashes[last], []).append(toks[last][1])
    return chosen


def _ranges(lines):
    """'12-30, 41' of line numbers in increasing order (repeats allowed)."""
    out = []
    for n in lines:
        if out and n <= out[-1][1] + 1:
            out[-1][1] = max(n, out[-1][1])
        else:
            out.append([n, n])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)
    return text if len(text) <= 160 else text[:text.rindex(", ", 0, 160)] + ", ..."


def compare(sources, base="", solution=None):
    """(groups, pairs, solutions) of sources ({key: text}): groups, [[key, ...]] of two
    or more submissions whose code is the same (their fingerprints all alike); pairs,
    [(share, a, b, a's lines, b's lines)] of the others that share SHARED of their
    fingerprints, or CONTAINED of one's (share: the larger of the two), most first (a group stands by its first key); solutions, the keys
    whose code is the solution's (SOLUTION of it) over again.  The fingerprints of base
    (the starter) are not counted."""
    common = set(fingerprints(base)) if base else set()
    made = {}                                           # text -> its fingerprints: a copy costs nothing
    for text in sources.values():
        if text not in made:
            made[text] = {h: at for h, at in fingerprints(text).items() if h not in common}
    own = {key: made[text] for key, text in sorted(sources.items())}
    alike = {}
    for key, fp in own.items():
        if fp:
            alike.setdefault(frozenset(fp), []).append(key)
    groups = [keys for keys in alike.values() if len(keys) > 1]
    firsts = sorted(keys[0] for keys in alike.values())
    sets = {key: frozenset(own[key]) for key in firsts}
    shared = {}                                          # each pair's count of common fingerprints:
    for i, a in enumerate(firsts):                       # one intersection a pair (a class that
        for b in firsts[i + 1:]:                         # shares one solution shares most hashes)
            count = len(sets[a] & sets[b])
            if count:
                shared[a, b] = count
    by_line = {}                                         # each one's (line, hash), by line, once

    def lines_of(key, both):
        if key not in by_line:
            by_line[key] = sorted((n, h) for h, at in own[key].items() for n in at)
        return _ranges(n for n, h in by_line[key] if h in both)

    pairs = []
    for (a, b), count in shared.items():
        low, high = sorted((count / len(own[a]), count / len(own[b])))
        share = high
        if low >= SHARED or high >= CONTAINED and count >= BLOCK:
            both = sets[a] & sets[b]
            pairs.append((round(share, 2), a, b, lines_of(a, both), lines_of(b, both)))
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    solutions = []
    if solution:
        theirs = {h for h in fingerprints(solution) if h not in common}
        solutions = sorted(key for key, fp in own.items()
                           if theirs and fp and len(set(fp) & theirs) / len(theirs) >= SOLUTION)
    return sorted(groups), pairs, solutions


def report(groups, pairs, shown):
    """The copies file's text: a line per group of the same code, then a line per pair,
    its share and the lines each shares; shown(key) is how a submission is named."""
    head = [f"# Submissions that share most of their code (winnowed fingerprints of their "
            f"tokens, names and literals aside, the starter's code not counted; MOSS's "
            f"method).  Flagged for a person to judge; no score depends on it.",
            f"# the same code: submissions; then: share  submission  its lines  submission  its lines"]
    lines = [f"same code ({len(keys)}): " + " = ".join(shown(k) for k in keys) for keys in groups]
    return "\n".join(head + lines + [f"{share:.0%}  {shown(a)}  {la}  {shown(b)}  {lb}"
                                     for share, a, b, la, lb in pairs]) + "\n"


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
    return data.decode("utf-8", "replace") if os.path.basename(path).endswith(".py") else ""
