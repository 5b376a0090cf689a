"""The catalogs of gqa_grader/language/i18n.py: each locale/<lang>/LC_MESSAGES/gqa.po read and
compiled into the gqa.mo beside it (GNU's format, as msgfmt writes it, without the
optional hash table), and the message ids the code asks for, found in its text.

    python -m gqa_grader.language.catalogs            compile every .po whose .mo differs
    python -m gqa_grader.language.catalogs --check    write nothing; exit 1 if a .mo differs
"""

import argparse
import ast
import os
import struct
import sys

from .i18n import DOMAIN, LANGUAGES, registered


def read_po(text):
    """The entries of a .po file's text: [{"msgid", "msgid_plural", "msgstr": [..], "flags"}],
    the header (msgid "") first, as it stands."""
    entries, entry, key = [], None, None

    def finish():
        if entry is not None and "msgid" in entry:
            entries.append(entry)
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            if line.startswith("#,"):
                finish()
                entry, key = {"flags": [f.strip() for f in line[2:].split(",")], "msgstr": []}, None
            continue
        if line.startswith('"'):
            if key is None:
                raise ValueError(f"line {number}: a string outside an entry")
            _append(entry, key, ast.literal_eval(line))
            continue
        word, _space, rest = line.partition(" ")
        if word == "msgid":
            if entry is None or "msgid" in entry:
                finish()
                entry = {"flags": [], "msgstr": []}
            key = "msgid"
        elif word == "msgid_plural":
            key = "msgid_plural"
        elif word == "msgstr" or word.startswith("msgstr["):
            key = ("msgstr", len(entry["msgstr"]))
            entry["msgstr"].append("")
        else:
            raise ValueError(f"line {number}: {word} is not a keyword of a .po file")
        _append(entry, key, ast.literal_eval(rest))
    finish()
    return entries


def _append(entry, key, text):
    if isinstance(key, tuple):
        entry["msgstr"][key[1]] += text
    else:
        entry[key] = entry.get(key, "") + text


def compile_mo(entries):
    """The bytes of a .mo file holding entries (read_po's), sorted by message id."""
    pairs = []
    for e in entries:
        if e["msgid"] and ("fuzzy" in e["flags"] or not any(e["msgstr"])):
            continue                                    # as msgfmt: English rather than a blank
        original = e["msgid"] + ("\0" + e["msgid_plural"] if "msgid_plural" in e else "")
        pairs.append((original.encode("utf-8"), "\0".join(e["msgstr"]).encode("utf-8")))
    pairs.sort()
    n = len(pairs)
    start = 7 * 4 + 16 * n                                 # the header, then the two tables
    ids = b"".join(k + b"\0" for k, _v in pairs)
    strs = b"".join(v + b"\0" for _k, v in pairs)
    table, offset = [], start
    for k, _v in pairs:
        table += [len(k), offset]
        offset += len(k) + 1
    for _k, v in pairs:
        table += [len(v), offset]
        offset += len(v) + 1
    header = struct.pack("<7I", 0x950412DE, 0, n, 7 * 4, 7 * 4 + 8 * n, 0, start)
    return header + struct.pack(f"<{4 * n}I", *table) + ids + strs


def messages(paths):
    """The message ids the code at paths asks for: (msgid, msgid_plural or None) of
    each call of _(), N_() and ngettext() with text written in it, in order, once each."""
    found = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            texts = [a.value for a in node.args[:2] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if node.func.id in ("_", "N_") and texts:
                item = (texts[0], None)
            elif node.func.id == "ngettext" and len(texts) == 2:
                item = (texts[0], texts[1])
            else:
                continue
            if item not in found:
                found.append(item)
    return found


def catalogs(domains=(DOMAIN, "starter")):
    """(lang, domain, the .po's path, the .mo's path) of each catalog: the grader's
    messages (gqa) and a starter's prose (starter, gqa_grader/language/prose.py), for each
    language of the registry but English, in its folder (locale/<lang>/LC_MESSAGES)."""
    return [(lang, domain, os.path.join(registered(lang).locale, lang, "LC_MESSAGES", domain + ".po"),
             os.path.join(registered(lang).locale, lang, "LC_MESSAGES", domain + ".mo"))
            for lang in LANGUAGES[1:] for domain in domains]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gqa_grader.language.catalogs",
                                     description="Compile each catalog's .po into its .mo.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a .mo differs")
    args = parser.parse_args(argv)
    stale = []
    for _lang, _domain, po, mo in catalogs():
        if not os.path.exists(po):
            continue
        with open(po, encoding="utf-8") as f:
            data = compile_mo(read_po(f.read()))
        try:
            with open(mo, "rb") as f:
                same = f.read() == data
        except FileNotFoundError:
            same = False
        if same:
            continue
        stale.append(mo)
        if not args.check:
            with open(mo, "wb") as f:
                f.write(data)
    verb = "differs from its .po" if args.check else "written"
    for mo in stale:
        print(f"{os.path.relpath(mo)}: {verb}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
