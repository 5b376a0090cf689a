"""What a run records, so that the same grade can be had again.

- The options a Gradescope zip or a Classroom workflow carries (carried()): the
  seed, and each option the command line gave (options_given()); commands.check_args
  refuses the ones it cannot carry, with a usage error, never dropped.
- Every document's provenance (stamp()): the grader's version, the seed, the
  options and the sha256 of the module's bytes that were graded.
- A submission's seed made from a secret and its bytes (seed_of(), --secret): what
  an --autograder zip grades each submission with, recorded in its document.  Grading the
  same bytes twice with the same seed and options gives the same document, times
  aside.

The documents themselves are documents.py's.
"""

import argparse
import hashlib

from ..running.failures import Refused
from ..running.seal import read_module
from .grading import GRADER_VERSION, SEALED_SEEDS
from .printing import shown_seed

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")   # Gradescope's


# ---------------------------------------------------------------------------
# The options a command line gave, and those a zip or a workflow carries.
# ---------------------------------------------------------------------------

_UNSET = object()


def options_given(parser, argv):
    """The dests of the options argv gives (an option equal to its default included)."""
    appended = {a.dest for a in parser._actions if isinstance(a, argparse._AppendAction)}
    namespace = argparse.Namespace(**{a.dest: None if a.dest in appended else _UNSET
                                      for a in parser._actions})
    parser.parse_args(argv, namespace)
    return {dest for dest, value in vars(namespace).items()
            if value is not _UNSET and not (dest in appended and value is None)}


def steps_option(argv):
    """The spelling of the steps' option the command line gave last: --only or --steps (an
    abbreviation read as argparse reads it), for the commands that repeat the run."""
    typed = "--steps"
    for word in argv:
        if word == "--":
            break
        head = word.split("=", 1)[0]
        if len(head) > 3 and head.startswith("--"):
            typed = next((o for o in ("--only", "--steps") if o.startswith(head)), typed)
    return typed


def flag(parser, dest):
    """The option's long name: "--hidden-visibility" for dest hidden_visibility."""
    for action in parser._actions:
        if action.dest == dest:
            return max(action.option_strings, key=len)
    return "--" + dest.replace("_", "-")


def carried(args, dests, weights_file=None):
    """The options, as words, that repeat this run's grading: each one the command
    line gave (dests), and the seed.  --weights becomes weights_file when given."""
    words = []
    if "weights" in dests and args.weights:
        words += ["--weights", weights_file or args.weights]
    for dest, text in (("cases", str(args.cases)), ("timeout", f"{args.timeout:g}"),
                       ("budget", f"{args.budget:g}")):
        if dest in dests:
            words += ["--" + dest, text]
    if "only" in dests and args.only:
        words += ["--steps", getattr(args, "steps_spec", None) or ",".join(args.only)]
    if "fail_fast" in dests and args.fail_fast:
        words.append("--fail-fast")
    if "all_or_nothing" in dests and args.all_or_nothing:
        words.append("--all-or-nothing")
    if "hidden_visibility" in dests:
        words += ["--hidden-visibility", args.hidden_visibility]
    if "lang" in dests and getattr(args, "lang", None):
        words += ["--lang", args.lang]
    return words + ["--seed", str(args.seed)]


# ---------------------------------------------------------------------------
# Provenance: what every document records.
# ---------------------------------------------------------------------------

def options_of(args):
    """The options that decided what was graded, as plain data: a document records
    them, and a gradebook's row is kept only when they are the same."""
    return {"cases": args.cases, "only": list(args.only) if args.only else None,
            "case": args.case, "timeout": args.timeout, "budget": args.budget,
            "fail_fast": bool(args.fail_fast),
            "all_or_nothing": bool(getattr(args, "all_or_nothing", False))}


def sha256_of(seal, path):
    """The sha256 of the bytes graded: those the seal read once and placed in its
    private folder; else (a run without one) the file's, read now; None when there
    are none."""
    data = getattr(seal, "source", None)
    if data is None:
        try:
            data = read_module(path, follow=True)
        except Exception:
            return None
    return hashlib.sha256(data).hexdigest()


def provenance(args):
    return {"grader": GRADER_VERSION, "seed": shown_seed(args, None), "options": options_of(args),
            "sha256": getattr(args, "sha256", None)}


def stamp(doc, args, seconds):
    """doc with its provenance: in the grader's document at the top; in Gradescope's,
    in extra_data (and the run's seconds as its execution_time)."""
    doc = dict(doc)
    if args.format == "gradescope":
        doc["execution_time"] = int(round(seconds))
        doc["extra_data"] = provenance(args)
        doc["extra_data"]["options"].update(weights=dict(getattr(args, "weight_map", {}) or {}),
                                            hidden_visibility=args.hidden_visibility)
    else:
        doc.update(provenance(args))
    return doc


# ---------------------------------------------------------------------------
# A submission's seed, from a secret and its bytes.
# ---------------------------------------------------------------------------

def seed_of(secret, module_sha256):
    """A submission's seed: its hidden cases, made from the secret and the module's
    bytes (their sha256), so that other bytes meet other cases and only the holder of
    the secret can make them; the teacher repeats one with --seed, as recorded."""
    return int(hashlib.sha256(secret + b"\0" + module_sha256.encode("ascii")).hexdigest(), 16) % SEALED_SEEDS


def seed_of_secret(secret_path, module):
    """--secret FILE: the seed of the module at path module (seed_of); None when the
    module cannot be read (the run then says why, with a seed drawn now)."""
    with open(secret_path, "rb") as f:
        secret = f.read()
    try:
        source = read_module(module)
    except (Refused, OSError):
        return None
    return seed_of(secret, hashlib.sha256(source).hexdigest())
