"""How a case, a step or a run ends when it does not pass: kinds with their data.

Code decides by the class and its fields, never by the words of a message: the
message is for people, and it may hold the student's own text.
"""

from ..language.i18n import _


class Failure(Exception):
    """A case that failed.  str(err) is the message; kind names what failed, for code:
    "wrong" (a wrong answer), "changed_input" (an argument changed in place), "aliased"
    (lists of the input returned), "worker" (the worker hung, died or sent garbage)."""

    def __init__(self, message, kind="wrong"):
        super().__init__(message)
        self.kind = kind


class NotStarted(Failure):
    """A function the check called still raises NotImplementedError.

    function: the name of the module's function that raised it ("attention",
    "KVCache.append"), where the worker could tell, else None; direct: whether that
    function raised it itself, as the starter's stubs do, not something it called;
    where: the student's file and line, as text to print; line: the line of the raise, in
    the module's file, where the worker said it.
    """

    def __init__(self, message, function=None, direct=False, where="", line=None):
        super().__init__(message, kind="not_started")
        self.function, self.direct, self.where, self.line = function, direct, where, line


class OutOfTime(Failure):
    """The run's time budget ran out."""

    def __init__(self, message):
        super().__init__(message, kind="out_of_time")


class Refused(Exception):
    """The module cannot be graded at all (it cannot be imported, or imports the grader)."""


def import_error(why, shown):
    """The worker's reason the module shown (its label) could not be imported, in the
    language in use.  The worker has no language: it writes the reason in English, in
    one of worker.w_import's forms, which are read back here by their fixed words around
    the label and Python's own text.  A reason in no such form was written by the module
(the protocol's stream is in its reach): it is shown as the module's, never as the
sandbox's or the grader's word, which come on a pipe of their own (process.py)."""
    if why == f"{shown} is not a Python file (it must end in .py)":
        return _("{module} is not a Python file (it must end in .py)").format(module=shown)
    if why == (f"{shown} imports the grader (grader.py or gqa_grader): the grader grades a "
               f"module that does its own work, so it refuses this one"):
        return _("{module} imports the grader (grader.py or gqa_grader): the grader grades a "
                 "module that does its own work, so it refuses this one").format(module=shown)
    syntax = f"{shown} has a syntax error, line "
    if why.startswith(syntax):
        line, colon, error = why[len(syntax):].partition(": ")
        if colon and (line.isdigit() or line == "None"):
            return _("{module} has a syntax error, line {line}: {error}").format(
                module=shown, line=line, error=error)
    raised = f"importing {shown} raised "
    if why.startswith(raised):
        return _("importing {module} raised {error}").format(module=shown, error=why[len(raised):])
    return _("{module} was not imported, and its worker's answer was in none of the worker's "
             "forms (the module may have written it): {text}").format(module=shown, text=why)
