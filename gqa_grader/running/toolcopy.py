"""The tools' files, copied: a handout's (copy_tools: the tools a student runs in the
handout's folder), and what a tool's child imports in namespaces (tools_for_child: the
tools, the grader's language and the lab's starter, never the project's folder, its
solution or its reference)."""

import os
import shutil

from ..language import i18n
from ..language.starter import make_starter

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))      # gqa_grader/
HERE = os.path.dirname(PACKAGE)        # the grader's folder, the tools beside it


# The tools' modules a handout leaves out: the commands it does not offer (bench,
# config and uptrain run the tools' own gqa.py, which a handout does not hold).
TOOLS_LEFT_OUT = ("bench.py", "sizer/command.py", "uptraining/command.py")


def copy_tools(directory):
    """Copy the tools (gqa_tools/, beside the grader) into directory/gqa_tools: every
    module of the package and its sub-packages but TOOLS_LEFT_OUT; nothing else (no
    gqa.py, no report, no training record: a handout holds no answer)."""
    source = os.path.join(HERE, "gqa_tools")
    for folder, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if os.path.isfile(os.path.join(folder, d, "__init__.py")))
        inside = os.path.relpath(folder, source)
        for name in sorted(files):
            where = os.path.normpath(os.path.join(inside, name)).replace(os.sep, "/")
            if name.endswith(".py") and where not in TOOLS_LEFT_OUT:
                os.makedirs(os.path.join(directory, "gqa_tools", inside), exist_ok=True)
                shutil.copyfile(os.path.join(folder, name), os.path.join(directory, "gqa_tools", where))


def tools_for_child(directory):
    """What a tool's child imports in namespaces (Seal.child_paths), written into directory,
    root's and readable by every user (folders 0755, files 0644): the tools (copy_tools),
    the grader's language (gqa_grader's __init__.py, running/failures.py,
    language/i18n.py, language/linebreak.py, each room's __init__.py, the compiled catalogs)
    and the lab's steps (steps/manifest.py), and as gqa.py the starter made from the grader's gqa.py (the lab's names,
    each step a stub: the tools use its GQAError and records, never a step).  No answer, no
    reference, no solution: nothing a student's module running beside them may not read."""
    copy_tools(directory)
    package = os.path.join(directory, "gqa_grader")
    here = PACKAGE
    for name in ("__init__.py", "running/__init__.py", "running/failures.py",   # i18n and what it imports
                 "language/__init__.py", "language/i18n.py", "language/linebreak.py",
                 "steps/__init__.py", "steps/manifest.py"):                     # the lab's steps, by name
        os.makedirs(os.path.dirname(os.path.join(package, name)), exist_ok=True)
        shutil.copyfile(os.path.join(here, name), os.path.join(package, name))
    for lang_code in i18n.LANGUAGES[1:]:
        messages = os.path.join("locale", lang_code, "LC_MESSAGES")
        os.makedirs(os.path.join(package, messages), exist_ok=True)
        shutil.copyfile(os.path.join(here, messages, "gqa.mo"), os.path.join(package, messages, "gqa.mo"))
    # In a handout, HERE's gqa.py is the student's, saved perhaps with a byte-order mark.
    with open(os.path.join(HERE, "gqa.py"), encoding="utf-8-sig") as f:
        starter_text = make_starter(f.read(), {})       # no step numbers: no one reads its stubs
    with open(os.path.join(directory, "gqa.py"), "w", encoding="utf-8") as f:
        f.write(starter_text)
    for folder, dirs, files in os.walk(directory):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
