"""The command line: `python -m gqa COMMAND` (or `gqa COMMAND` once installed).

gqa.py, the lab, hands its command line here and needs none of it; each
command lives in a module of its own, imported only when it is run.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Optional, Sequence

COMMANDS = {
    "tables": ("gqa_tools.tables", "print the cache and multiplication tables for every g"),
    "report": ("gqa_tools.report", "write report.md, or --check that it is current"),
    "config": ("gqa_tools.config", "size a model's KV cache from its config.json"),
    "bench": ("gqa_tools.bench", "time and memory per g, measured on this machine"),
    "uptrain": ("gqa_tools.uptrain", "convert a trained MHA model to GQA/MQA, train on, measure quality"),
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run a gqa command line tool; return its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0] not in COMMANDS:
        lines = [f"  {name:<8} {doc}" for name, (_, doc) in COMMANDS.items()]
        print("usage: python -m gqa COMMAND [options]\n\ncommands:\n" + "\n".join(lines)
              + "\n\n'python -m gqa COMMAND --help' describes a command's options.",
              file=sys.stdout if args[:1] in (["-h"], ["--help"]) else sys.stderr)
        if args and args[0] not in ("-h", "--help"):
            print(f"gqa: unknown command {args[0]!r}", file=sys.stderr)
        return 0 if args[:1] in (["-h"], ["--help"]) else 2
    for stream in (sys.stdout, sys.stderr):  # a path the terminal cannot show is escaped, not fatal
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        tool = importlib.import_module(COMMANDS[args[0]][0])
        return tool.main(args[0], args[1:])
    except BrokenPipeError:                  # `gqa tables | head`: the reader left early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # as the Python docs advise
        return 1
    except KeyboardInterrupt:                # Ctrl-C: one line; a report is written whole or not at all
        print(f"gqa {args[0]}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
