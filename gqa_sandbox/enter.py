"""Run a program in a root of its own: the script that gqa_sandbox.command() starts in new
mount, PID, IPC, network and UTS namespaces (util-linux's unshare makes them), as root.

    python -I -S enter.py SPEC PROGRAM [ARG ...]

SPEC is JSON: {"root": an empty folder to build the root on, "ro": [paths shown read-only],
"rw": [paths shown writable], "tmpfs": {path: bytes}, "devices": [device files],
"cwd": where the program starts, "report": a file descriptor open for writing}.  When
the root cannot be built, {"sandbox_error": why} is written to report (to stdout
without one) and the exit status is 125; report is closed at exec, so the program can
never write there.  This script, PID 1 of the new PID namespace,
makes every mount private to the namespace, mounts a small tmpfs on root, shows there
each path of ro and rw at the same place (a bind mount; a symbolic link as a link),
mounts each tmpfs of its size, a /proc that shows this namespace's processes only and
the devices named, then changes root into it and runs PROGRAM (which drops root
itself, before it runs anything untrusted).  The network namespace has only its own
loopback, down: no network.  When the namespace's last process ends, every mount and
every file written into a tmpfs goes with it.  Standard library only; it imports
nothing of the project, and reads nothing but SPEC.
"""

import ctypes
import json
import os
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)


def mount(source, target, fstype, flags, data=None):
    if _libc.mount(source and os.fsencode(source), os.fsencode(target), fstype and fstype.encode(), flags,
                   data and data.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source or fstype} on {target}: {os.strerror(err)}")


def place(root, path, is_dir):
    """The mount point of path inside root: its folders made, and an empty file for a file."""
    inside = root + path
    os.makedirs(inside if is_dir else os.path.dirname(inside), mode=0o755, exist_ok=True)
    if not is_dir and not os.path.exists(inside):
        open(inside, "w").close()
    return inside


def show(root, path, writable):
    """path (as it is here) at the same place inside root: a link as a link, else bound."""
    if os.path.islink(path):
        os.makedirs(os.path.dirname(root + path), mode=0o755, exist_ok=True)
        if not os.path.lexists(root + path):
            os.symlink(os.readlink(path), root + path)
        return
    if not os.path.exists(path):
        return
    inside = place(root, path, os.path.isdir(path))
    mount(path, inside, None, MS_BIND)                  # not recursive: no mount below it, writable or not
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | (0 if writable else MS_RDONLY)
    mount(None, inside, None, flags)


def build(spec):
    root = spec["root"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)          # nothing below propagates out
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for path, size in sorted(spec.get("tmpfs", {}).items()):   # first: a path below shows on top
        mount("tmpfs", place(root, path, True), "tmpfs", MS_NOSUID | MS_NODEV,
              f"size={int(size)},nr_inodes=4096,mode=1777")             # capped in files too
    for path in spec.get("ro", []):
        show(root, path, False)
    for path in spec.get("rw", []):
        show(root, path, True)
    for device in spec.get("devices", []):
        inside = place(root, device, False)
        mount(device, inside, None, MS_BIND)
        mount(None, inside, None, MS_BIND | MS_REMOUNT | MS_NOSUID)
    mount("proc", place(root, "/proc", True), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)   # its folders: fixed
    os.chroot(root)
    os.chdir(spec.get("cwd") or "/")


def main(argv):
    """Build the root, then run the program; when the root cannot be built, one JSON line
    on stdout, {"sandbox_error": why}, which the caller reads as it reads the program's
    first line (the program's own stderr may be closed), and exit 125."""
    spec = json.loads(argv[1])
    report = spec.get("report")                         # a pipe of the caller's, if it gave one
    try:
        if report is not None:
            os.set_inheritable(report, False)           # closed at exec: the program never has it
        build(spec)
        os.execv(argv[2], argv[2:])
    except Exception as err:                            # never the program's: it has not run
        line = json.dumps({"sandbox_error": f"{type(err).__name__}: {err}"}) + "\n"
        if report is not None:
            os.write(report, line.encode("utf-8"))
        else:
            sys.stdout.write(line)
            sys.stdout.flush()
        return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv))
