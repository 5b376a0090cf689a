"""Writing a file whole or not at all: every file the grader writes for a teacher (a
gradebook, a student's feedback, --out's document, a Classroom workflow) and the
search the runs share (cleanup.save_search) goes through write_atomically.
"""

import os
import tempfile


def write_atomically(path, data, mode=0o644):
    """Write bytes to path whole or not at all: a temporary file beside it (made anew,
    never through a link), given mode, then renamed over path."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".gqa-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
