"""How a case, a step or a run ends when it does not pass: kinds with their data.

Code decides by the class and its fields, never by the words of a message: the
message is for people, and it may hold the student's own text.
"""


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
    where: the student's file and line, as text to print.
    """

    def __init__(self, message, function=None, direct=False, where=""):
        super().__init__(message, kind="not_started")
        self.function, self.direct, self.where = function, direct, where


class OutOfTime(Failure):
    """The run's time budget ran out."""

    def __init__(self, message):
        super().__init__(message, kind="out_of_time")


class Refused(Exception):
    """The module cannot be graded at all (it cannot be imported, or imports the grader)."""
