"""The worker: the only process that imports the module under test.

The grader runs this file as a script, `python -s -S worker.py` (no site-packages, no
PYTHON* variable but PYTHONHASHSEED=0, not even this folder on sys.path, which it takes
off first), so the process that imports the module holds none of the reference: this
file imports only the standard library, and nothing of the project.  It speaks the worker
protocol, written down in one place, gqa_grader/running/process.py's docstring: its
configuration (the module's path, its limits, the user to become) is the first line of
its stdin, never on a command line that other processes could read; then JSON lines, a
request from the grader and an answer per item.  The worker keeps the protocol on private
copies of stdin and stdout and points fds 0, 1 and 2 at the null device, so the module's
prints and reads touch neither.  The module's values are encoded as plain data with their
types, never pickled.

As root (the config's "drop"), the worker imports the standard library it needs, gives up
every capability (its bounding set first), becomes the run's own user with no capability
left and no way to gain one (no_new_privs), joins a keyring of its own (not the one it
was started with, which other runs share), and only then puts the module's folders on
sys.path (and the standard library's, opened before, through /proc/self/fd) and imports
the module.  A run (the config's "run", a tool's child through gqa_grader.run_in_child)
calls the function its caller named, "package.module:function", with the module, in this
process: the worker knows no tool, and the name comes from the config, read before the
module is imported.
"""

import os
import sys

if sys.path and os.path.realpath(sys.path[0] or os.curdir) == os.path.dirname(os.path.realpath(__file__)):
    del sys.path[0]          # this folder, first (not -I, which ignores PYTHONHASHSEED): not the module's
import json  # noqa: E402
from array import array  # noqa: E402


class WorkerState:
    """The worker's state, one for its life (W): set by w_streams from the config."""

    __slots__ = ("out", "kept", "seen", "graders", "path", "refuse_grader", "reload", "config", "report")

    def __init__(self):
        self.out = None              # the protocol's stream: a private copy of stdout
        self.kept = {}               # objects kept by name ("keep"), sent back as {"$ref": name}
        self.seen = set()            # the names in sys.modules judged so far (w_has_grader)
        self.graders = set()         # those of them that are the grader's
        self.path = None             # the module's file, absolute: a frame of it is the module's
        self.refuse_grader = True    # a module that imports the grader is refused
        self.reload = False          # "load" requests are taken (trusted modules, one by one)
        self.config = {}             # the config, as the first line of stdin gave it
        self.report = None           # the grader's own pipe (fd 2 as started), closed before the module runs


W = WorkerState()
W_LIMITS = {"cpu": "RLIMIT_CPU", "memory": "RLIMIT_AS", "processes": "RLIMIT_NPROC", "file_size": "RLIMIT_FSIZE",
            "open_files": "RLIMIT_NOFILE", "message_queues": "RLIMIT_MSGQUEUE"}
W_FLAT = frozenset((float, int, bool, str, type(None)))    # a list of these alone is JSON as it is
# Imported before the worker gives up root, while only the standard library is on
# sys.path: what the worker itself imports later (W_OWN); and, where the standard
# library cannot be reached after the drop through /proc/self/fd (w_open_path), the
# rest that a module is likely to use (W_PRELOAD), since the library may not be
# readable by the worker's user (an interpreter under root's home, say).
W_OWN = ("inspect", "traceback", "linecache", "importlib.util")
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, KEYCTL_JOIN_SESSION_KEYRING = 1, 24, 38, 1
# keyctl(2)'s system call (the C library has no wrapper), by machine.
W_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "loongarch64": 219, "i686": 288, "i386": 288,
            "armv7l": 311, "armv8l": 311, "ppc64le": 271, "ppc64": 271, "s390x": 280}
W_PRELOAD = ("__future__", "inspect", "traceback", "importlib.util", "math", "random", "itertools", "functools",
             "operator", "contextlib", "typing", "collections", "dataclasses", "statistics", "copy", "abc", "enum",
             "re", "fractions", "numbers", "string", "bisect", "heapq", "time", "cmath", "decimal", "struct", "weakref",
             "types", "warnings")


def w_send(message):
    W.out.write(json.dumps(message) + "\n")
    W.out.flush()


def w_enc(x, depth=0):
    if depth > 50:
        return {"$other": "nesting", "repr": "deeper than 50 levels"}
    t = type(x)
    if x is None or t in (bool, str, int, float):
        return x
    if t is list:       # a row of numbers at once (its items, one level down, are within the 50)
        return x if depth < 50 and W_FLAT.issuperset(map(type, x)) else [w_enc(v, depth + 1) for v in x]
    if t is tuple and not hasattr(x, "_fields"):
        return {"$tuple": [w_enc(v, depth + 1) for v in x]}
    if t is array:
        return {"$array": x.typecode, "values": x.tolist() if depth < 50 else [w_enc(v, depth + 1) for v in x]}
    fields = getattr(x, "_fields", None) or (list(t.__slots__) if isinstance(
        getattr(t, "__slots__", None), dict) else None)
    if fields:
        return {"$record": t.__name__, "fields": {f: w_enc(getattr(x, f, None), depth + 1) for f in fields}}
    return {"$other": t.__name__, "repr": repr(x)[:60]}


def w_dec(x):
    if isinstance(x, dict) and "$ref" in x:
        return W.kept[x["$ref"]]
    if isinstance(x, dict) and "$tuple" in x:
        return tuple(w_dec(v) for v in x["$tuple"])
    if isinstance(x, dict) and "$array" in x:
        return array("d", [float(v) for v in x["values"]])
    if isinstance(x, list):             # a row of numbers as json.loads made it, a list of its own
        return x if W_FLAT.issuperset(map(type, x)) else [w_dec(v) for v in x]
    return x


def w_where(tb):
    import traceback
    frames = [f for f in traceback.extract_tb(tb) if os.path.abspath(f.filename) == W.path]
    return [f"{os.path.basename(W.path)}, line {f.lineno}, in {f.name}: {(f.line or '').strip()}"
            for f in frames[-3:]]


def w_error(type_name, message):
    return {"error": {"type": type_name, "message": message, "gqa_error": False, "type_error": False, "where": []}}


def w_raised_in(tb):
    """(name, direct) of the module's innermost function in traceback tb: its name, with
    its class for a method ("KVCache.append"), and whether the error was raised in it
    (not in something it called); (None, False) when no frame is the module's."""
    name, direct = None, False
    while tb is not None:
        frame = tb.tb_frame
        mine = os.path.abspath(frame.f_code.co_filename) == W.path
        if mine:
            owner = frame.f_locals.get("self", frame.f_locals.get("cls"))
            owner = owner if isinstance(owner, type) else type(owner) if owner is not None else None
            name = f"{owner.__name__}.{frame.f_code.co_name}" if owner else frame.f_code.co_name
        direct = mine
        tb = tb.tb_next
    return (name, direct) if name else (None, False)


def w_failure(err):
    message = f"called sys.exit({err.code!r})" if isinstance(err, SystemExit) else str(err)
    try:
        raised_in, direct = w_raised_in(err.__traceback__)
    except BaseException:
        raised_in, direct = None, False
    return {"error": {"type": type(err).__name__, "message": message[:500],
                      "gqa_error": type(err).__name__ == "GQAError" and isinstance(err, ValueError),
                      "type_error": isinstance(err, TypeError), "where": w_where(err.__traceback__),
                      "raised_in": raised_in if isinstance(raised_in, str) else None,
                      "direct": direct is True}}


def w_lists_in(x, found, depth=0):
    if isinstance(x, (list, tuple)) and depth < 50:
        found.update([id(x)] if isinstance(x, list) else [])
        for v in x:
            w_lists_in(v, found, depth + 1)
    return found


def w_resolve(mod, name):
    if name.startswith("$"):
        kept, _, attr = name[1:].partition(".")
        return getattr(W.kept[kept], attr)
    if not hasattr(mod, name):
        raise LookupError(name)                  # the grader words it, in the run's language
    fn = getattr(mod, name)
    if not callable(fn):
        raise LookupError(name, type(fn).__name__, repr(fn)[:40])
    return fn


def w_call(mod, req):
    import inspect
    try:
        fn = w_resolve(mod, req["fn"])
    except LookupError as err:
        answer = w_error("missing", "")
        answer["error"]["found"] = [str(a) for a in err.args]     # [name], or [name, type, repr]
        return answer
    raw = req.get("args", [])
    args = [w_dec(a) for a in raw]
    kwargs = {k: w_dec(v) for k, v in req.get("kwargs", {}).items()}
    names = [str(i) for i in range(len(args))]
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            names = list(signature.bind(*args, **kwargs).arguments)[:len(args)]
        except TypeError as err:
            return w_error("signature", f"{err}; its signature is {req['fn']}{signature}")
    mine = [i for i, a in enumerate(raw) if not (isinstance(a, dict) and "$ref" in a)]
    before = [json.dumps(w_enc(args[i])) for i in mine]
    try:
        value = fn(*args, **kwargs)
    except BaseException as err:
        return w_failure(err)
    answer = {}
    if req.get("keep"):
        W.kept[req["keep"]] = value
    if req.get("value", True):
        answer["value"] = w_enc(value)
    answer["changed"] = [names[i] for i, old in zip(mine, before)
                         if json.dumps(w_enc(args[i])) != old]
    if req.get("fresh"):
        inputs = set()
        for i in mine:
            w_lists_in(args[i], inputs)
        answer["aliased"] = bool(w_lists_in(value, set()) & inputs)
    return answer


def w_calls_in(mod, calls, values=None):
    """Run calls in order; the first one's error, or None (each value to values, if given)."""
    for r in calls:
        answer = w_call(mod, dict(r, value=values is not None))
        if "error" in answer:
            return answer
        if values is not None:
            values.append(answer["value"])
    return None


def w_handle(mod, req):
    op = req["op"]
    if op == "call":
        return w_call(mod, req)
    if op == "get":
        obj, values = W.kept[req["ref"]], {}
        for attr in req["attrs"]:
            try:
                values[attr] = w_enc(len(obj) if attr == "len" else getattr(obj, attr))
            except BaseException as err:
                return w_failure(err)
        return {"value": values}
    if op == "tally":
        values = [] if req.get("values") else None
        try:
            with mod.count_multiplies() as tally:
                if req.get("nested"):           # an inner block adds to this one as it ends
                    with mod.count_multiplies():
                        answer = w_calls_in(mod, req["calls"], values)
                else:
                    answer = w_calls_in(mod, req["calls"], values)
            if answer is not None:
                return answer
            fields = {f: w_enc(getattr(tally, f, None)) for f in req["fields"]}
            fields["multiplies()"] = w_enc(tally.multiplies())
            if values is not None:
                fields["values"] = values
        except BaseException as err:
            return w_failure(err)
        return {"value": fields}
    return w_error("protocol", f"unknown op {op}")


def w_is_grader(name):
    return isinstance(name, str) and (name == "grader" or name.split(".")[0] == "gqa_grader")


def w_has_grader():
    """Whether the module imported the grader (grader.py, or its package gqa_grader): whether
    sys.modules holds one of its names.  Each name is judged once, when it first appears."""
    names = set(sys.modules)
    new = names - W.seen
    W.seen |= new
    W.graders |= {name for name in new if w_is_grader(name)}
    return not W.graders.isdisjoint(names)


def w_serve(mod, requests):
    """Answer each request's items, one line each, until the grader closes the pipe."""
    for line in requests:
        try:
            request = json.loads(line)
            n, items = request["n"], request["items"]
        except BaseException as err:
            w_send(dict(w_failure(err), n=None, i=0))
            continue
        for i, item in enumerate(items):
            try:
                if item.get("op") == "load" and W.reload:
                    mod, answer = w_reload(item)
                else:
                    answer = w_handle(mod, item)
                if W.refuse_grader and w_has_grader():
                    answer = w_error("refused", "the module imported the grader (grader.py or "
                                     "gqa_grader) during the call; the grader refuses to grade it")
                text = json.dumps(dict(answer, n=n, i=i))
            except BaseException as err:
                answer = w_failure(err)
                text = json.dumps(dict(answer, n=n, i=i))    # a value json could not write, say
            W.out.write(text + "\n")
            W.out.flush()
            if "error" in answer:
                break


def w_target(name):
    """The function a run calls with the module, named by the config's run as
    "package.module:function" (the caller's, a tool's: never the module's), imported
    from the run's paths; LookupError for a name of another form or that is not there."""
    import importlib
    dotted, colon, function = name.partition(":") if isinstance(name, str) else ("", "", "")
    if not (colon and function.isidentifier() and all(part.isidentifier() for part in dotted.split("."))):
        raise LookupError(f"a run's target is named package.module:function, not {name!r}")
    target = getattr(importlib.import_module(dotted), function, None)
    if not callable(target):
        raise LookupError(f"{dotted} has no function {function}")
    return target


def w_run(mod, run):
    """Send each item that run's target(module, *args) yields, then done (the config's run, its target imported)."""
    try:
        for item in run["target"](mod, *run["args"]):
            w_send({"item": item})
    except BaseException as err:
        w_send(w_failure(err))
        return
    w_send({"done": True})


def w_limit(resource, limits):
    """Lower this process's limits (never above the hard limits it was given)."""
    for name, value in limits.items():
        which = getattr(resource, W_LIMITS[name], None)
        if which is None:                        # not on this system
            continue
        soft, hard = value, value + 1 if name == "cpu" else value
        old_hard = resource.getrlimit(which)[1]
        if old_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, old_hard), min(hard, old_hard)
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            pass


def w_open_path(paths):
    """Before the drop: a descriptor of each folder of paths, then of sys.path (the
    module's folders and the standard library, which may sit under a folder the worker's
    user cannot enter, such as root's home), and prctl.  Opening a folder runs nothing."""
    if not os.path.isdir("/proc/self/fd"):
        return None
    try:
        import ctypes
        prctl = ctypes.CDLL(None).prctl
    except (ImportError, OSError, AttributeError):
        return None
    folders = []
    for entry in list(paths) + sys.path:
        try:
            folders.append((os.path.abspath(entry), os.open(entry, os.O_RDONLY | os.O_DIRECTORY)))
        except OSError:
            pass
    return prctl, folders


def w_use_path(opened):
    """After the drop: import from those folders through /proc/self/fd (which the worker
    may read once it is dumpable again: only its own user can trace it)."""
    if not opened:
        return False
    prctl, folders = opened
    if prctl(4, 1, 0, 0, 0) != 0:                   # PR_SET_DUMPABLE
        return False
    sys.path[:0] = [f"/proc/self/fd/{fd}" for _, fd in folders]
    w_repath(folders)
    sys.path_importer_cache.clear()
    return True


def w_repath(folders):
    """After the drop: each package imported before it finds its submodules through its
    own __path__, never sys.path; put first in it the same folder reached through
    /proc/self/fd.  Without this, encodings finds no codec it has not imported yet: the
    traceback of a module saved with a byte-order mark is read as utf-8-sig (linecache),
    and codecs.lookup("utf-8-sig") raised LookupError: unknown encoding."""
    for mod in list(sys.modules.values()):
        path = getattr(mod, "__path__", None)
        if not isinstance(path, list):
            continue
        reached = []
        for entry in (e for e in path if isinstance(e, str) and os.path.isabs(e)):
            for top, fd in folders:
                under = os.path.relpath(entry, top)
                if under != os.pardir and not under.startswith(os.pardir + os.sep):
                    reached.append(os.path.normpath(f"/proc/self/fd/{fd}/{under}"))
                    break
        path[:0] = [entry for entry in reached if entry not in path]


def w_streams(config):
    """The protocol's answers on a private copy of stdout; fds 0, 1, 2 on the null device.
    2 was the sandbox's pipe for its own failure: the worker keeps a copy of it for its
    own failures (w_fail) until it closes it, before the module runs (w_unreport)."""
    W.out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    W.report = os.dup(2)
    W.path, W.config = os.path.abspath(config["path"]), config
    W.refuse_grader, W.reload = config.get("refuse_grader", True), config.get("reload") is True
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")
    sys.stdout = sys.stderr = open(os.devnull, "w", encoding="utf-8")
    sys.dont_write_bytecode = True
    os.umask(0o077)                      # what the module writes, no other user reads
    if config.get("environment") is not None:    # a sealed run's: PATH alone (bubblewrap adds PWD)
        for name in [n for n in os.environ if n not in config["environment"]]:
            del os.environ[name]


def w_drop(config):
    """As root: import what the worker uses while only the standard library is on sys.path
    (and what the module may use, where the library cannot be reached after the drop),
    become the run's user, then put the module's folders first.  Not root: the folders go
    first at once (the module runs as its own user).  Returns an error message, or None."""
    import importlib
    paths = config.get("paths", [])
    if not config.get("drop"):
        sys.path[:0] = paths
        return None
    opened = w_open_path(paths)
    if not opened:
        w_codec(config["path"])
    for name in W_OWN if opened else W_PRELOAD:       # nothing of the module's folders yet
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    uid, gid = config["drop"]
    try:
        w_bounding_set()
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        w_no_capabilities()
        w_own_keyring()
    except OSError as err:
        return f"the worker could not become uid {uid} with no capability: {err}"
    if not w_use_path(opened):
        sys.path[:0] = paths
    return None


def w_libc():
    import ctypes
    return ctypes, ctypes.CDLL(None, use_errno=True)


def w_bounding_set():
    """Before the drop (Linux): every capability out of the bounding set, so that no
    program this process runs can gain one."""
    if os.path.isfile("/proc/sys/kernel/cap_last_cap"):
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as f:
            last = int(f.read())
        ctypes, libc = w_libc()
        if any(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 for cap in range(last + 1)):
            raise OSError(ctypes.get_errno(), "dropping the bounding set")


def w_no_capabilities():
    """After the drop (Linux): no_new_privs set, and no capability left (permitted,
    effective, bounding, ambient), as /proc/self/status says; OSError otherwise."""
    if os.path.isfile("/proc/self/status"):
        ctypes, libc = w_libc()
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        with open("/proc/self/status", encoding="utf-8", errors="replace") as f:
            caps = dict(line.split(":", 1) for line in f if line.startswith("Cap"))
        left = [name for name in ("CapPrm", "CapEff", "CapBnd", "CapAmb") if int(caps.get(name, "0"), 16)]
        if left:
            raise OSError(0, f"capabilities left after the drop: {', '.join(left)}")


def w_own_keyring():
    """After the drop (Linux): a session keyring of the run's user's, not the grader's, which
    every run shares (a key a module linked into it would be read by the next run's)."""
    number = W_KEYCTL.get(os.uname().machine) if os.path.isdir("/proc") else None
    if number is not None:
        ctypes, libc = w_libc()
        if libc.syscall(number, KEYCTL_JOIN_SESSION_KEYRING, None) < 0 and ctypes.get_errno() != 38:
            raise OSError(ctypes.get_errno(), "joining a keyring of its own")   # 38, ENOSYS: no keys here


def w_fail(why):
    """The worker's own failure, before anything of the module ran: on the grader's pipe,
    which the module never holds, never on the protocol's stream (which it may write)."""
    if W.report is not None:
        try:
            os.write(W.report, (json.dumps({"worker_error": why}) + "\n").encode("utf-8"))
        except OSError:
            pass
    w_unreport()


def w_die_with(caller):
    """Linux: killed when its caller ends, however it ends (a grader killed, a terminal closed),
    not left to its CPU limit; set after the drop, which clears it.  A caller gone: it ends now."""
    if sys.platform.startswith("linux"):
        w_libc()[1].prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)     # SIGKILL
        if os.getppid() != caller:
            os._exit(1)


def w_unreport():
    """Close the grader's pipe: what follows may be the module's."""
    if W.report is not None:
        fd, W.report = W.report, None
        os.close(fd)


def w_codec(path):
    """Before a drop that cannot reach the standard library after it (no /proc/self/fd, so
    no w_repath): the module's lines read once, as a traceback reads them (linecache), so
    that the codec its source declares (utf-8-sig for a byte-order mark, a coding
    cookie's) is imported while the library can be read: not later, when it could not be."""
    import linecache
    linecache.getlines(path)


def w_refusal(shown):
    return (f"{shown} imports the grader (grader.py or gqa_grader): the grader grades a "
            f"module that does its own work, so it refuses this one")


def w_import(config):
    """(the module, imported under the config's name, None) or (None, why it was not)."""
    import importlib.util
    name, shown = config.get("name", "gqa"), config.get("shown", config["path"])
    spec = importlib.util.spec_from_file_location(name, W.path)
    if spec is None or spec.loader is None:
        return None, f"{shown} is not a Python file (it must end in .py)"
    mod = importlib.util.module_from_spec(spec)
    if config.get("register", True):
        sys.modules[name] = mod
    __import__("random").seed(0)         # a module's unseeded random: the same draws in every run
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as err:
        return None, f"{shown} has a syntax error, line {err.lineno}: {err.msg}"
    except BaseException as err:
        if W.refuse_grader and isinstance(err, ImportError) and w_is_grader(err.name):
            return None, w_refusal(shown)
        at = "; ".join(w_where(err.__traceback__))
        return None, (f"importing {shown} raised {type(err).__name__}: {err}"
                      + (f" ({at})" if at else ""))
    if W.refuse_grader and w_has_grader():
        return None, w_refusal(shown)
    return mod, None


def w_reload(item):
    """A load request, to a worker made to import one trusted module after another (never a
    student's): the next in place of the last, afresh, nothing kept.  (module or None, answer)."""
    import linecache
    W.path, W.kept = os.path.abspath(item["path"]), {}
    linecache.clearcache()                       # the last module's lines, where tracebacks look
    mod, why = w_import(dict(W.config, path=item["path"], shown=item["shown"]))
    return mod, {"ready": True} if why is None else {"import_error": why}


def w_main(argv):
    caller = os.getppid()
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    config = json.loads(requests.readline())     # on stdin: nothing of a run on a command line
    w_streams(config)
    try:
        import resource
    except ImportError:                  # Windows: no limits
        resource = None
    why = w_drop(config)
    if why is not None:
        w_fail(why)
        return
    w_die_with(caller)
    if resource is not None:
        w_limit(resource, config.get("limits", {}))
    run = None
    if config.get("run"):                # the caller's function and data, before the module is
        try:
            run = {"target": w_target(config["run"]["target"]), "args": list(config["run"].get("args", []))}
        except BaseException as err:
            w_fail(f"the tool's {config['run'].get('target')!r} could not be loaded: "
                   f"{type(err).__name__}: {err}"[:2000])
            return
    w_unreport()                         # nothing of the worker's own can fail now
    mod, why = w_import(config)
    if mod is None:
        w_send({"import_error": why})
        return
    if run is not None:
        w_run(mod, run)
        return
    w_send({"ready": True})
    w_serve(mod, requests)


if __name__ == "__main__":
    w_main(sys.argv)
