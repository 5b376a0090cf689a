"""gqa_sandbox: a program run where it sees only what it is given, by the kernel's namespaces.

It knows neither the grader nor the tools.  command(spec, argv) is the command that runs
argv (a program and its arguments) in new mount, PID, IPC, network and UTS namespaces,
through util-linux's `unshare`, in a root of its own that enter.py builds from spec:

    root    an empty folder the caller made, to build the new root on (a tmpfs there)
    ro      paths shown read-only at the same place (the Python installation, the
            system's libraries, the program's own script)
    rw      paths shown writable (the run's private folder)
    tmpfs   {path: bytes}: private, size-capped file systems (/tmp, /dev/shm, ...)
    devices device files shown (/dev/null, /dev/zero, /dev/urandom)
    cwd     where the program starts

Inside, the program is PID 1's child, sees its own processes only in /proc, has no
network (its own loopback, down), and sees no other file of the machine; all it wrote
outside rw goes with the namespace when its last process ends: nothing to clean.  The
program starts as root (root of the machine: these are not user namespaces) and must
drop to another user before it runs anything untrusted (the grader's worker does).

available() says whether namespaces can be made here (as root, on Linux, with unshare),
and why not.  Standard library only.
"""

import os
import shutil
import subprocess
import sys

ENTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "enter.py")
NAMESPACES = ["--mount", "--pid", "--ipc", "--net", "--uts", "--fork", "--kill-child"]
TMPFS = {"/tmp": 32 << 20, "/var/tmp": 8 << 20, "/dev/shm": 16 << 20, "/run/lock": 1 << 20}
DEVICES = ["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"]
SYSTEM = ["/usr", "/bin", "/lib", "/lib32", "/lib64", "/libx32", "/sbin"]   # libraries, the loader
_FOUND = {}


def available():
    """(True, "unshare") when a program can be run in namespaces here, else (False, why)."""
    if "answer" not in _FOUND:
        _FOUND["answer"] = _probe()
    return _FOUND["answer"]


def _probe():
    if not sys.platform.startswith("linux"):
        return False, "namespaces are Linux's"
    if os.geteuid() != 0:
        return False, "making namespaces needs root here"
    unshare = shutil.which("unshare", path=os.defpath + os.pathsep + "/usr/bin:/bin")
    if unshare is None:
        return False, "util-linux's unshare is not installed"
    try:
        done = subprocess.run([unshare] + NAMESPACES + ["true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as err:
        return False, f"unshare did not run ({err})"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return False, f"the kernel refused new namespaces ({why[-1] if why else done.returncode})"
    _FOUND["unshare"] = unshare
    return True, "unshare"


def spec(root, ro=(), rw=(), cwd=None, tmpfs=None):
    """A spec for command(): ro and rw as given, the system's libraries, a Python's own
    installation (sys.base_prefix and where its executable is) and enter.py read-only,
    the private file systems of TMPFS (or tmpfs) and the DEVICES."""
    python = [os.path.realpath(sys.base_prefix), os.path.dirname(os.path.realpath(sys.executable))]
    shown = list(dict.fromkeys(SYSTEM + python + [ENTER] + list(ro)))
    return {"root": root, "ro": shown, "rw": list(rw), "tmpfs": dict(TMPFS if tmpfs is None else tmpfs),
            "devices": DEVICES, "cwd": cwd}


def command(run_spec, argv):
    """The command that runs argv (its program an absolute path) as run_spec says."""
    import json
    ok, why = available()
    if not ok:
        raise OSError(why)
    return ([_FOUND["unshare"]] + NAMESPACES
            + [os.path.realpath(sys.executable), "-I", "-S", ENTER, json.dumps(run_spec)] + list(argv))
