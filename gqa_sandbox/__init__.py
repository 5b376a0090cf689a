"""gqa_sandbox: a program run where it sees only what it is given, by the kernel's namespaces.

It knows neither the grader nor the tools.  command(spec, argv) is the command that runs
argv (a program and its arguments) in new mount, PID, IPC, network and UTS namespaces, in
a root of its own built from spec by a well-kept tool, never by mount code of ours:

    bwrap     bubblewrap (which Flatpak runs on), where it is installed: as root, or as
              any user where the kernel allows unprivileged user namespaces (then in a
              new user namespace too, with no capability left)
    unshare   util-linux's unshare, as root, where bubblewrap is not installed: enter.py
              builds the root with util-linux's mount, from an fstab it writes, and
              enters it with pivot_root

As root, each run has a user namespace of its own too, made by enter.py (user_namespace):
root and the run's user (the spec's "user") mapped, each to itself, and no user namespace
can be made inside it.  The keys a run's users store (the kernel's key store keeps a
user's keyrings per user namespace) go with it.  (bubblewrap's own --unshare-user, as
root, maps root alone: its program could not become the run's user.)

A spec names what the root holds:

    root    an empty folder the caller made, to build the root on (unshare's alone: a
            tmpfs there; bubblewrap builds its own)
    ro      paths shown read-only at the same place (the Python installation, the
            system's libraries); a symbolic link as a link
    files   {path inside: path here}: files shown read-only at another place (the
            program's own script, whose path here would tell of the machine)
    hidden  folders below ro shown empty (site_folders(): the installed packages, so
            that only the standard library of the Python is in sight)
    rw      paths shown writable (the run's private folder)
    tmpfs   {path: bytes}: private, size-capped file systems (/tmp, /dev/shm, ...)
    devices device files shown (/dev/null, /dev/zero, /dev/urandom)
    cwd     where the program starts
    user    [uid, gid]: the user the program becomes, mapped in the run's user namespace
            beside root (as root; None: root alone)

Inside, the program is PID 1 (its parent out of sight), sees its own processes only in
/proc, has no network (its own loopback, down), and sees no other file of the machine;
all it wrote outside rw goes with the namespaces when it ends: nothing to clean.  As
root it starts as root of its user namespace and must drop to the run's user, and every
capability, before it runs anything untrusted (the grader's worker does).

When the root cannot be built, the tool says why on the program's stderr before the
program starts (bwrap: "bwrap: ..."; enter.py: one JSON line, {"sandbox_error": ...})
and the command exits non-zero: the caller gives stderr a pipe of its own and the
program closes its stderr before it runs anything untrusted (the worker points it at
the null device first thing).

available() says which tool can make namespaces here, and why none can.  Standard
library only.
"""

import os
import shutil
import subprocess
import sys

ENTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "enter.py")
TOOLS = ("bwrap", "unshare")         # preferred first
UNSHARE = ["--mount", "--pid", "--ipc", "--net", "--uts", "--fork", "--kill-child"]
BWRAP = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
         "--die-with-parent", "--as-pid-1"]
BWRAP_USER = ["--unshare-user"]      # not root: a user namespace, where the program keeps no capability
TMPFS = {"/tmp": 32 << 20, "/var/tmp": 8 << 20, "/dev/shm": 16 << 20, "/run/lock": 1 << 20}
DEVICES = ["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"]
SYSTEM = ["/usr", "/bin", "/lib", "/lib32", "/lib64", "/libx32", "/sbin"]   # libraries, the loader
_SEARCH = os.defpath + os.pathsep + "/usr/bin:/bin:/usr/local/bin"
_ANSWERS = {}                        # available()'s answer, for each tuple of tools asked
_PROBED = {}                         # each tool's probe's answer, (ok, why): a tool is tried once
_PATHS = {}                          # each tool that works here: its path
_FOLDERS = {}                        # site_folders()'s answer, once


def available(tools=None):
    """(True, tool) for the first of tools (TOOLS by default) that makes namespaces here
    ("bwrap" or "unshare"), else (False, why not): each tool's reason, in order."""
    tools = tuple(TOOLS if tools is None else tools)
    if tools not in _ANSWERS:
        whys = []
        for tool in tools:
            if tool not in _PROBED:              # command(spec, argv, tool) asks again, of one tool
                _PROBED[tool] = _probe(tool)
            ok, why = _PROBED[tool]
            if ok:
                _ANSWERS[tools] = (True, tool)
                break
            whys.append(why)
        else:
            _ANSWERS[tools] = (False, "; ".join(whys) or "no tool was named")
    return _ANSWERS[tools]


def _probe(tool):
    """(True, None) when tool runs a program in new namespaces here, else (False, why)."""
    if not sys.platform.startswith("linux"):
        return False, "namespaces are Linux's"
    root = os.geteuid() == 0
    if tool == "unshare" and not root:
        return False, "util-linux's unshare makes them as root only"
    path = shutil.which(tool, path=_SEARCH)
    if path is None:
        return False, {"bwrap": "bubblewrap is not installed",
                       "unshare": "util-linux's unshare is not installed"}[tool]
    enter = [os.path.realpath(sys.executable), "-I", "-S", ENTER]
    if tool == "bwrap":                  # namespaces, and a tmpfs capped in size (bubblewrap 0.8+)
        probe = [path] + BWRAP + ([] if root else BWRAP_USER) + [
            "--ro-bind", "/", "/", "--perms", "1777", "--size", str(1 << 20), "--tmpfs", "/tmp", "true"]
        if root:                         # in a user namespace of its own (enter.py's)
            probe = enter + ["--user-only"] + probe
    else:
        probe = [path] + UNSHARE + ["--mount-proc"] + enter + ["--probe"]     # its /proc: its PIDs
    try:
        done = subprocess.run(probe, capture_output=True, timeout=10, input=b'{"user": null}\n')
    except (OSError, subprocess.TimeoutExpired) as err:
        return False, f"{tool} did not run ({err})"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return False, f"{tool}: the kernel or the tool refused ({why[-1] if why else done.returncode})"
    _PATHS[tool] = path
    return True, None


def site_folders():
    """Where packages are installed, outside the standard library: this Python's and its
    base's site-packages (purelib, platlib), the user's, and the system Pythons' (/usr,
    /usr/local), each as resolved, those that exist."""
    if "site" in _FOLDERS:
        return list(_FOLDERS["site"])
    import glob
    import site
    import sysconfig
    found = []
    for prefix in dict.fromkeys((sys.base_prefix, sys.prefix)):
        found += site.getsitepackages([prefix])
        found += [sysconfig.get_path(key, vars={"base": prefix, "platbase": prefix}) for key in ("purelib", "platlib")]
    try:
        found.append(site.getusersitepackages())
    except (AttributeError, KeyError, OSError):
        pass
    for pattern in ("/usr/lib/python3*/*-packages", "/usr/local/lib/python3*/*-packages", "/usr/lib/python3/dist-packages"):
        found += sorted(glob.glob(pattern))
    _FOLDERS["site"] = [f for f in dict.fromkeys(os.path.realpath(f) for f in found if f) if os.path.isdir(f)]
    return list(_FOLDERS["site"])


def library_folders():
    """Where this Python's standard library is imported from (what `python -I -S` puts on
    sys.path): its zip, its folder and lib-dynload, those that exist."""
    import sysconfig
    paths = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix,
                                      "installed_base": sys.base_prefix, "installed_platbase": sys.base_prefix})
    folders = [os.path.join(sys.base_prefix, "lib", f"python{sys.version_info[0]}{sys.version_info[1]}.zip"),
               paths["stdlib"], paths["platstdlib"], os.path.join(paths["platstdlib"], "lib-dynload"),
               os.path.dirname(os.__file__)]
    return [f for f in dict.fromkeys(os.path.realpath(f) for f in folders) if os.path.exists(f)]


def _below(path, folders):
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)


def spec(root, ro=(), rw=(), cwd=None, tmpfs=None, files=None, user=None):
    """A spec for command(): ro and rw as given, the system's libraries and a Python's
    own installation (sys.base_prefix and where its executable is) read-only, every
    folder of installed packages below them hidden (empty: the standard library alone), files
    ({path inside: path here}) shown read-only where they are named, not where they are
    (a program's script, its path telling nothing of the machine), the private file
    systems of TMPFS (or tmpfs) and the DEVICES; user, [uid, gid] the program becomes
    (mapped in the run's user namespace, as root)."""
    python = [os.path.realpath(sys.base_prefix), os.path.dirname(os.path.realpath(sys.executable))]
    shown = list(dict.fromkeys(SYSTEM + python + list(ro)))
    hidden = [f for f in site_folders() if _below(f, [os.path.realpath(p) for p in shown])]
    return {"root": root, "ro": shown, "rw": list(rw), "files": dict(files or {}), "hidden": hidden,
            "tmpfs": dict(TMPFS if tmpfs is None else tmpfs), "devices": DEVICES, "cwd": cwd,
            "user": list(user) if user else None}


def command(run_spec, argv, tool=None):
    """(the command that runs argv, its program an absolute path, as run_spec says; the
    bytes to write first on its stdin, before the program's own input), made by tool
    (by default the first that available() finds).  Nothing of the spec is on the
    command line, where every process of the machine could read it: bubblewrap's
    options name what the root shows, never the run; enter.py reads its spec from
    stdin's first line (as root, bubblewrap's too: the run's user, for the user namespace
    enter.py makes first)."""
    import json
    if tool is None:
        ok, tool = available()
        if not ok:
            raise OSError(tool)
    elif not available((tool,))[0]:
        raise OSError(available((tool,))[1])
    enter = [os.path.realpath(sys.executable), "-I", "-S", ENTER]
    if tool == "bwrap":
        argv = [_PATHS["bwrap"]] + bwrap_options(run_spec) + ["--"] + list(argv)
        if os.geteuid() != 0:
            return argv, b""
        user = {"user": run_spec.get("user")}
        return enter + ["--user-only"] + argv, (json.dumps(user) + "\n").encode("utf-8")
    return ([_PATHS["unshare"]] + UNSHARE + enter + list(argv),
            (json.dumps(run_spec) + "\n").encode("utf-8", "surrogateescape"))


def bwrap_options(run_spec):
    """bubblewrap's options for run_spec, in the order enter.py mounts: the tmpfs first
    (a path below one shows on top of it), then what is shown, then /proc."""
    options = BWRAP + ([] if os.geteuid() == 0 else BWRAP_USER)
    for path, size in sorted(run_spec.get("tmpfs", {}).items()):
        options += ["--perms", "1777", "--size", str(int(size)), "--tmpfs", path]
    for path, writable in [(p, False) for p in run_spec.get("ro", [])] + [(p, True) for p in run_spec.get("rw", [])]:
        if os.path.islink(path):
            options += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            options += ["--bind" if writable else "--ro-bind", path, path]
    for path in run_spec.get("hidden", []):          # installed packages: an empty folder in their place
        options += ["--perms", "0555", "--size", "4096", "--tmpfs", path]
    for inside, here in sorted(run_spec.get("files", {}).items()):
        options += ["--ro-bind", here, inside]
    for device in run_spec.get("devices", []):
        options += ["--dev-bind", device, device]
    options += ["--proc", "/proc", "--remount-ro", "/", "--chdir", run_spec.get("cwd") or "/"]
    return options
