"""gqa_tools.report.files: writing a report and its figures atomically, or checking them.

A report is written whole or not at all (write_report), its figures into
the folder beside it (figures_folder); what would stop a write is refused
before any work (why_not_write); --check compares the report and every
figure with what the code writes now (check).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from typing import List, Optional, Sequence, Tuple, Union

import gqa
from gqa_grader.language.i18n import _, decoded, ngettext
from gqa_tools.referee import PROJECT


# ---------------------------------------------------------------------------
# Writing a file: all or nothing.
# ---------------------------------------------------------------------------


class WriteRefused(Exception):
    """A path the tools will not write to, and why."""


def write_target(path: str) -> str:
    """The file a write to path replaces: path itself, or the file a symlink points to.

    Refuses an empty path and anything that is not a regular file (a
    directory, a device such as /dev/null, a FIFO): replacing those would
    destroy them.
    """
    if not path:
        raise WriteRefused(_("the path is empty"))
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isfile(target):
        raise WriteRefused(_("it is not a regular file (a directory, a device or a pipe); "
                             "only a file is replaced"))
    return target


def stage(target: str, text: Union[str, bytes]) -> str:
    """Write text (UTF-8; bytes as they are) to a new temporary file beside target; return its path.

    The file gets the mode target has (or, for a new file, 0666 less the
    umask), so that os.replace(staged, target) then swaps it in whole: the
    first half of an all-or-nothing write.
    """
    if os.path.exists(target):
        mode = os.stat(target).st_mode & 0o7777
    else:
        mask = os.umask(0)
        os.umask(mask)
        mode = 0o666 & ~mask
    import tempfile                    # writing alone needs it (--check writes nothing)
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".tmp", dir=os.path.dirname(target))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text if isinstance(text, bytes) else text.encode("utf-8"))
        os.chmod(tmp, mode)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp

# The folder of figures beside report.md: report-figures/ (beside myreport.md,
# myreport-figures/), so that two reports in one directory keep their own.


def figures_folder(path: str) -> str:
    """The folder of figures beside the report at path: its name without .md, then -figures."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.join(os.path.dirname(path), f"{stem}-figures")


def first_difference_line(old: str, new: str) -> str:
    a, b = old.splitlines(), new.splitlines()
    for i, (x, y) in enumerate(zip(a, b), 1):
        if x != y:
            return _("line {line}:\n  on disk: {disk}\n  code:    {code}").format(line=i, disk=x, code=y)
    i = min(len(a), len(b)) + 1
    return (_("line {line}: the file has lines the code does not write") if len(a) > len(b) else
            _("line {line}: the file ends where the code goes on")).format(line=i)


def default_report_path() -> str:
    """report.md at the root of a checkout (beside gqa.py and pyproject.toml), else ./report.md."""
    root = os.path.dirname(os.path.abspath(gqa.__file__))
    if os.path.exists(os.path.join(root, "pyproject.toml")):
        return os.path.join(root, "report.md")
    return "report.md"


def differs(path: str, text: str) -> Optional[str]:
    """Why the file at path is not text, or None when it is."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            old = f.read(len(text) + 2)
    except OSError as err:
        return _("cannot read {path}: {error}").format(path=path, error=err.strerror)
    except UnicodeDecodeError:
        return _("{path} is not UTF-8 text: it differs from what the code writes now").format(path=path)
    if old != text:
        return _("{path} differs from what the code writes now, first at {where}").format(
            path=path, where=first_difference_line(old, text))
    return None


def read_report(path: str) -> Optional[str]:
    """The text of the report at path as an editor may have saved it (i18n.decoded: UTF-8,
    a mark, UTF-16, the report's language's Windows encoding first), its lines ended by
    LF; None when there is no file."""
    try:
        with open(path, "rb") as f:
            return decoded(f.read()).replace("\r\n", "\n")
    except OSError:
        return None


# The line a student's report holds above its write-up: the start of the sha256 of the
# sections above it, as the code wrote them, so that a later run tells the code's words
# there from a student's (kept_write_up).  Its words are the language's; this reads any.
SEAL = re.compile(r"^<!-- [^\n]* sha256 ([0-9a-f]{16}) -->\n", re.M)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def sealed(text: str, heading: str) -> str:
    """A student's report text with the seal line (SEAL) put before its write-up, the
    section of heading; text as it is when it has none."""
    at = text.find(f"\n## {heading}\n")
    if at < 0:
        return text
    line = _("python -m gqa report writes the sections above anew on each run; this line checks them")
    return f"{text[:at]}<!-- {line}: sha256 {_digest(text[:at])} -->\n{text[at:]}"


def kept_write_up(path: str, text: str, heading: str) -> Tuple[str, bool, bool]:
    """(text, kept, lost) for a student's report text, sealed, about to replace the file at
    path (read as an editor may have saved it: read_report).  kept: text holds the file's
    own write-up instead of its own, the file's part after its seal line (their answers,
    heading taken out or not), or, in a file with no seal line, from its section of
    heading's number on ("## 9. ...", in whatever language).  lost: the file holds words
    this text does not keep, a student's (the sections above its seal are not what the code
    wrote there, or no write-up was found in a file with words in it): keep_previous keeps
    the file first.  Never a difference for --check: a write-up is the student's."""
    new = SEAL.search(text)
    old = read_report(path) if new else None
    if old is None or not old.strip():
        return text, False, False
    seal = SEAL.search(old)
    if seal:
        mine, lost = old[seal.end():], _digest(old[:seal.start()]) != seal.group(1)
    else:                                          # a report of an earlier grader, or its seal taken out
        was = old.find(f"\n## {heading.split(' ')[0]} ")
        mine = old[was:] if was >= 0 else None
        lost = was < 0 or old[:was] != text[:new.start()]
    if mine is None or mine == text[new.end():]:
        return text, False, lost
    return text[:new.end()] + mine.rstrip("\n") + "\n", True, lost


def previous_path(path: str) -> str:
    """Where the report at path is kept before a run writes over words of a student's:
    report.previous.md beside it, else report.previous-2.md, -3, ...: never one written
    before (a second run would have written over the first's copy)."""
    stem, extension = os.path.splitext(path)
    extension = extension or ".md"
    for n in range(1, 1000):
        keep = f"{stem}.previous{'' if n == 1 else f'-{n}'}{extension}"
        if not os.path.lexists(keep):
            return keep
    raise WriteRefused(_("{path}: a thousand earlier copies are kept beside it already").format(path=path))


def not_utf8(path: str) -> bool:
    """Whether the file at path is there and not UTF-8 text (its words were read in a guess)."""
    try:
        with open(path, "rb") as f:
            f.read().decode("utf-8")
    except OSError:
        return False
    except UnicodeDecodeError:
        return True
    return False


def keep_previous(path: str) -> str:
    """The file at path, its bytes as they are, copied to previous_path (through no link);
    the copy's path."""
    with open(path, "rb") as f:
        data = f.read()
    keep = previous_path(path)
    staged = stage(keep, data)
    try:
        os.replace(staged, keep)
    except OSError:
        os.unlink(staged)
        raise
    return keep


def _svg_files(folder: str) -> List[str]:
    try:
        return sorted(name for name in os.listdir(folder) if name.endswith(".svg"))
    except OSError:
        return []


def check(path: str, text: str, command: str, figures: Sequence[Tuple[str, str]] = ()) -> int:
    """Exit status of --check: 0 when the report at path is text and its figures are figures, 1 otherwise.

    Every figure is compared; an .svg file in the figure folder that the
    report does not draw is a difference too.
    """
    folder = figures_folder(path)
    problems = [differs(path, text)] + [differs(os.path.join(folder, name), svg)
                                         for name, svg in figures]
    names = {name for name, _ in figures}
    problems += [_("{path} is not a figure of the report: the code does not write it").format(
                     path=os.path.join(folder, name)) for name in _svg_files(folder) if name not in names]
    problems = [p for p in problems if p]
    for problem in problems:
        print(f"gqa report --check: {problem}", file=sys.stderr)
    if problems:
        print(_("regenerate it with: {command}").format(command=command), file=sys.stderr)
        return 1
    print(ngettext("{path} is what the code writes now, and so are its {count} figure in {folder}",
                   "{path} is what the code writes now, and so are its {count} figures in {folder}",
                   len(figures)).format(path=path, count=len(figures), folder=folder) if figures else
          _("{path} is what the code writes now").format(path=path))
    return 0


def own_folder(folder: str) -> None:
    """Refuse a figures folder that is not a folder of the writer's own: a symbolic link,
    not a folder, another user's, or one every user may write into.  (Run as root on a
    student's module, whose worker is another user, a folder it made beside the report
    could point the figures anywhere.)"""
    try:
        st = os.lstat(folder)
    except OSError:
        return
    import stat
    if not stat.S_ISDIR(st.st_mode):
        raise WriteRefused(_("{folder} is there and is not a folder; the figures go in it").format(
            folder=folder))
    if hasattr(os, "geteuid") and (st.st_uid != os.geteuid() or st.st_mode & 0o002):
        raise WriteRefused(_("{folder} is another user's folder, or every user may write into it; "
                             "the figures go only in a folder of one's own (remove it, or choose "
                             "another --out)").format(folder=folder))


def write_report(path: str, text: str, figures: Sequence[Tuple[str, str]],
                 expected: Optional[str] = None) -> str:
    """Write the figures into the folder beside path, then the report; return the report's file.

    All or nothing, as far as the file system allows: every file is written
    to a temporary file first, and only when all are written are they moved
    into place (os.replace), the report last.  A failure leaves the old
    files, and no folder this call made.  .svg files of the folder that the
    report no longer draws are removed.  The report's own path is written
    through a symlink (write_target); the figures' folder is the writer's
    own (own_folder), and a figure in it is replaced, never written through.
    expected: the file path led to when the work began (write_target then); a path
    that leads elsewhere now (a link made meanwhile) is refused.
    """
    target = write_target(path)
    if expected is not None and target != expected:
        raise WriteRefused(_("{path} leads to {now} now, not to {then} as when the report was begun; "
                             "nothing is written through a link made meanwhile").format(
                                 path=path, now=target, then=expected))
    folder = figures_folder(path)
    made = bool(figures) and not os.path.lexists(folder)
    if figures and not made:
        own_folder(folder)
    if made:
        os.mkdir(folder)
    staged: List[Tuple[str, str]] = []
    try:
        for name, svg in figures:
            final = os.path.join(folder, name)
            if not os.path.islink(final):               # a link is replaced, not followed
                final = write_target(final)
            staged.append((stage(final, svg), final))
        staged.append((stage(target, text), target))
        for tmp, final in staged:
            os.replace(tmp, final)
    except BaseException:
        for tmp, _final in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
        if made:                            # everything in it is this call's
            for name in os.listdir(folder):
                os.unlink(os.path.join(folder, name))
            os.rmdir(folder)
        raise
    names = {name for name, _ in figures}
    for name in _svg_files(folder):
        if name not in names:
            os.unlink(os.path.join(folder, name))
    return target


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:                         # one of them is not there (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def why_not_write(path: str, module: Optional[str]) -> Optional[str]:
    """Why the report will not be written to path, known before any work; None when it may be.

    Refused: a path that is not a regular file (write_target), a folder that
    is not there or not writable, a figures' folder not the writer's own
    (own_folder); and,
    for a report from a module other than the project's gqa.py, the project's
    own report.md and its figures.
    """
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:          # bytes that are not UTF-8, read as surrogates
        return _("will not write {path}: its name is not UTF-8 text, and the report links its "
                 "figures by that name; give --out a name in UTF-8").format(
                     path="".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else c
                                  for c in path))
    try:
        target = write_target(path)
    except WriteRefused as why:
        return _("will not write {path}: {why}").format(path=path, why=why)
    if target.endswith((".py", ".pyw")) or module and _same_file(target, module):   # --out gqa.py wrote over the lab
        return _("will not write {path}: it is Python source, perhaps your gqa.py; a report is Markdown: give "
                 "--out a name that ends in .md").format(path=path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        return _("cannot write {path}: there is no folder {folder}; nothing was changed").format(
            path=path, folder=os.path.dirname(path))
    if not os.access(folder, os.W_OK):
        return _("cannot write {path}: its folder is not writable; nothing was changed").format(path=path)
    figures = figures_folder(path)
    try:
        own_folder(figures)
    except WriteRefused as why:
        return _("will not write {path}: {why}").format(path=path, why=why)
    own = os.path.join(PROJECT, "report.md")
    if not module or _same_file(module, os.path.join(PROJECT, "gqa.py")):
        return None
    what = (_("it is the project's own report") if _same_file(target, own) else
            _("its figures would go in the project's own {folder}").format(folder=figures_folder(own))
            if _same_file(figures, figures_folder(own)) else "")
    return what and _("will not write {path}: {what}, and {module} is not the project's gqa.py; "
                      "give --out another file (without --out, the report of a --module goes "
                      "beside it)").format(path=path, what=what, module=module)


def wrote(path: str, target: str, figures: int) -> str:
    """The line that says what was written: the report (through a link, to target) and its figures."""
    folder = figures_folder(path)
    if os.path.islink(path):
        return ngettext("wrote {path} (through the link, to {target}) and {count} figure in {folder}",
                        "wrote {path} (through the link, to {target}) and {count} figures in {folder}",
                        figures).format(path=path, target=target, count=figures, folder=folder) \
            if figures else _("wrote {path} (through the link, to {target})").format(path=path, target=target)
    return ngettext("wrote {path} and {count} figure in {folder}", "wrote {path} and {count} figures in {folder}",
                    figures).format(path=path, count=figures, folder=folder) \
        if figures else _("wrote {path}").format(path=path)
