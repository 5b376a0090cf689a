"""Build a root of its own and run a program in it: the script that gqa_sandbox.command()
starts under util-linux's unshare (new mount, PID, IPC, network and UTS namespaces), as root.

    python -I -S enter.py PROGRAM [ARG ...]             (SPEC, one line, first on stdin)
    python -I -S enter.py --user-only PROGRAM [ARG ...] (bubblewrap as root: SPEC's "user" alone)
    python -I -S enter.py --probe                       (the user namespace made, then exit 0)

SPEC, on stdin's first line (never on a command line, which any process may read), is JSON: {"root": an empty folder to build the root on, "ro": [paths shown read-only],
"rw": [paths shown writable], "hidden": [folders below ro shown empty], "files": {path inside: file here, shown read-only},
"tmpfs": {path: bytes}, "devices": [device files], "cwd": where the program starts,
"user": [uid, gid] of the run's user, or null}.  This script, PID 1 of the new PID namespace, mounts
nothing itself: util-linux's mount makes every mount of the namespace private (nothing
propagates out), mounts a small tmpfs on root, and then, from an fstab this script
writes (fstab(5): each path escaped as mount reads it), shows each path of ro and rw at
the same place (a bind mount, not recursive: no mount below it comes along; read-only,
no set-user-id, no device files), each of files where it is named, mounts each tmpfs of its size and at most 4,096
files, the devices named and a /proc that shows this namespace's processes only, and
makes the root read-only.  Then it enters the root with pivot_root(2) and detaches the
old one (no chroot: nothing of the machine's file system stays mounted below it), and
enters a user namespace of the run's own (user_namespace): root and the run's user
mapped, each to itself, no other id, and no user namespace can be made inside it.  Then
it runs PROGRAM, which drops root itself, with every capability (the bounding set too),
before it runs anything untrusted.  The network namespace has only its own loopback,
down: no network.  When the namespace's last process ends, every mount, every file
written into a tmpfs, and the user namespace with the keys its users stored (their
keyrings are the namespace's) go with it.

With --user-only (bubblewrap as root, whose own user namespace would map root alone, so
that its program could not become the run's user): the user namespace alone, then
PROGRAM (bubblewrap), which makes the other namespaces inside it.

When the root cannot be built: one JSON line on stderr, {"sandbox_error": why}, and
exit status 125; PROGRAM never ran.  Standard library only; it imports nothing of the
project, and reads nothing but SPEC.
"""

import os
import sys

FILES_CAP = 4096                     # files in each tmpfs: its size caps bytes, this caps inodes
CLONE_NEWUSER = 0x10000000
MNT_DETACH = 2
# pivot_root(2) has no wrapper in the C library: its system call's number, by machine.
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "loongarch64": 41, "i686": 217, "i386": 217,
              "armv7l": 218, "armv8l": 218, "ppc64le": 203, "ppc64": 203, "s390x": 217}


def mount(*args, fstab=None):
    """Run util-linux's mount with args (and fstab's text through a file of its own)."""
    import shutil
    import subprocess
    found = shutil.which("mount", path=os.defpath + os.pathsep + "/usr/bin:/bin")
    if found is None:
        raise OSError("util-linux's mount is not installed")
    fd = None
    if fstab is not None:
        fd = os.memfd_create("fstab", 0)          # a file only this process and its child see
        os.write(fd, fstab.encode("utf-8", "surrogateescape"))
        args += ("--fstab", f"/proc/self/fd/{fd}")
    try:
        done = subprocess.run([found] + list(args), capture_output=True, pass_fds=() if fd is None else (fd,))
    finally:
        if fd is not None:
            os.close(fd)
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}"
        raise OSError(f"mount {' '.join(args[:2])}: {said}")


def escaped(path):
    """path as a field of fstab(5): space, tab, newline and backslash in octal."""
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in path)


def place(root, path, is_dir):
    """The mount point of path inside root: its folders made, and an empty file for a file."""
    inside = root + path
    os.makedirs(inside if is_dir else os.path.dirname(inside), mode=0o755, exist_ok=True)
    if not is_dir and not os.path.exists(inside):
        open(inside, "w").close()
    return inside


def line(source, path, kind, options):
    """One line of fstab(5)."""
    return f"{escaped(source)} {escaped(path)} {kind} {options} 0 0\n"


def tmpfs(spec):
    """The fstab of the private file systems, mounted first: a path below one shows on
    top of it (the run's folder under /tmp)."""
    return "".join(line("tmpfs", place(spec["root"], path, True), "tmpfs",
                        f"size={int(size)},nr_inodes={FILES_CAP},mode=1777,nosuid,nodev")
                   for path, size in sorted(spec.get("tmpfs", {}).items()))


def shown(spec):
    """The fstab of the rest, in order: what is shown, the devices, /proc, and the root
    made read-only.  Makes each mount point (in the tmpfs, when it is below one); a
    symbolic link of ro or rw is made as the same link instead."""
    root, lines = spec["root"], []
    for path, options in ([(p, "bind,ro,nosuid,nodev") for p in spec.get("ro", [])]
                          + [(p, "bind,nosuid,nodev") for p in spec.get("rw", [])]):
        if os.path.islink(path):
            os.makedirs(os.path.dirname(root + path), mode=0o755, exist_ok=True)
            if not os.path.lexists(root + path):
                os.symlink(os.readlink(path), root + path)
        elif os.path.exists(path):
            lines.append(line(path, place(root, path, os.path.isdir(path)), "none", options))
    for path in spec.get("hidden", []):              # installed packages: an empty folder in their place
        lines.append(line("tmpfs", place(root, path, True), "tmpfs", "size=4k,nr_inodes=8,mode=0555,ro,nosuid,nodev"))
    for inside, here in sorted(spec.get("files", {}).items()):
        lines.append(line(here, place(root, inside, False), "none", "bind,ro,nosuid,nodev"))
    for device in spec.get("devices", []):
        lines.append(line(device, place(root, device, False), "none", "bind,nosuid"))
    lines.append(line("proc", place(root, "/proc", True), "proc", "nosuid,nodev,noexec"))
    lines.append(line("none", root, "none", "remount,ro,nosuid,nodev"))     # its folders: fixed
    return "".join(lines)


def build(spec):
    root = spec["root"]
    mount("--make-rprivate", "/")                        # nothing below propagates out
    mount("-t", "tmpfs", "-o", "size=1m,mode=0755,nosuid,nodev", "tmpfs", root)
    mount("--all", fstab=tmpfs(spec))
    mount("--all", fstab=shown(spec))
    enter_root(root)
    os.chdir(spec.get("cwd") or "/")


def _libc():
    import ctypes
    return ctypes, ctypes.CDLL(None, use_errno=True)


def _failed(ctypes, what):
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def enter_root(root):
    """The root built at root becomes this process's and its mount namespace's root
    (pivot_root(2), the old root put on top of it and detached): no path leads out."""
    ctypes, libc = _libc()
    number = PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(f"pivot_root's system call is not known on {os.uname().machine}")
    os.chdir(root)
    if libc.syscall(number, b".", b".") != 0:
        raise _failed(ctypes, "pivot_root")
    if libc.umount2(b".", MNT_DETACH) != 0:
        raise _failed(ctypes, "detaching the old root")
    os.chdir("/")


def user_namespace(user):
    """Enter a new user namespace in which root and user ([uid, gid] or None) are mapped,
    each to itself, and no other id; none can be made inside it (its limit of user
    namespaces is 0).  The keys its users store live in its keyrings and go with it.
    A child process makes it (unshare(2)) and waits while this process, root in the
    namespace above, writes its maps; then this process joins it (setns(2))."""
    ctypes, libc = _libc()
    ready, go = os.pipe(), os.pipe()
    child = os.fork()
    if child == 0:                                   # the namespace's maker: nothing else
        os.close(ready[0])
        os.close(go[1])
        made = libc.unshare(CLONE_NEWUSER) == 0
        os.write(ready[1], b"1" if made else str(ctypes.get_errno()).encode())
        os.read(go[0], 1)
        os._exit(0)
    os.close(ready[1])
    os.close(go[0])
    try:
        said = os.read(ready[0], 16)
        if said != b"1":
            number = int(said) if said.isdigit() else 0
            raise OSError(number, f"unshare(CLONE_NEWUSER): {os.strerror(number)}")
        for kind, index in (("uid", 0), ("gid", 1)):
            ids = [0] + ([int(user[index])] if user and int(user[index]) != 0 else [])
            with open(f"/proc/{child}/{kind}_map", "w") as f:
                f.write("".join(f"{i} {i} 1\n" for i in ids))
        fd = os.open(f"/proc/{child}/ns/user", os.O_RDONLY)
    finally:
        os.close(go[1])
        os.close(ready[0])
        os.waitpid(child, 0)
    try:
        if libc.setns(fd, CLONE_NEWUSER) != 0:
            raise _failed(ctypes, "setns(CLONE_NEWUSER)")
    finally:
        os.close(fd)
    with open("/proc/sys/user/max_user_namespaces", "w") as f:     # this namespace's own limit
        f.write("0\n")


def spec_of(line):
    """SPEC's line read as JSON.  The two lines bubblewrap's --user-only is given,
    {"user": null} and {"user": [uid, gid]} as json.dumps writes them, are read by hand:
    importing json (and the re it imports) is most of this script's start-up, which every
    run and every probe pays; any other line is json's to read."""
    text = line.rstrip("\n")
    if text == '{"user": null}':
        return {"user": None}
    head, tail = '{"user": [', ']}'
    if text.startswith(head) and text.endswith(tail):
        ids = text[len(head):-len(tail)].split(", ")
        if len(ids) == 2 and all(i.isascii() and i.isdigit() and i == str(int(i)) for i in ids):
            return {"user": [int(i) for i in ids]}
    import json
    return json.loads(line)


def first_line():
    """stdin's first line, read a byte at a time: what follows it is the program's."""
    read = bytearray()
    while not read.endswith(b"\n"):
        byte = os.read(0, 1)
        if not byte:
            raise OSError("stdin ended before the spec's line did")
        read += byte
    return read.decode("utf-8", "surrogateescape")


def main(argv):
    """Build the root (or, --user-only, make the user namespace alone), then run the
    program; when the root cannot be built, one JSON line on stderr, {"sandbox_error":
    why}, and exit 125.  --probe: the user namespace made, then exit 0."""
    try:
        if argv[1:] == ["--probe"]:
            user_namespace(None)
            return 0
        spec = spec_of(first_line())
        if argv[1] == "--user-only":
            argv = argv[1:]
        else:
            build(spec)
        user_namespace(spec.get("user"))
        os.execv(argv[1], argv[1:])
    except Exception as err:                            # never the program's: it has not run
        import json
        sys.stderr.write(json.dumps({"sandbox_error": f"{type(err).__name__}: {err}"}) + "\n")
        sys.stderr.flush()
        return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv))
