"""gqa_tools.sizer.files: a config.json and a checkpoint's index, read from disk within limits.

A path names a config.json or a model folder holding one; the weights'
bytes come from a model.safetensors.index.json (its metadata.total_size).
Anything that is not a small JSON object is refused with one line.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Tuple

from gqa import GQAError
from gqa_grader.language.i18n import N_, _
from gqa_tools.sizer.fields import show
from gqa_tools.sizer.units import MAX_BYTES

MAX_CONFIG_BYTES = 4 << 20          # a config.json is a few KB; anything far larger is not one
MAX_INDEX_BYTES = 64 << 20          # a checkpoint's index lists every tensor: a few MB at most
INDEX = "model.safetensors.index.json"


# What a file is, as a refusal names it: the words translated where they are shown.
WHAT = (N_("config"), N_("weights index"))


def load_json(path: str, limit: int = MAX_CONFIG_BYTES, what: str = "config") -> Dict[str, Any]:
    """The JSON object at path, a what (config, weights index) of at most limit bytes."""
    said = _(what)
    try:
        if not os.path.isfile(path):
            raise GQAError((_("{what} {path}: cannot read it: not a regular file") if os.path.exists(path) else
                            _("{what} {path}: cannot read it: no such file")).format(what=said, path=path))
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as err:
        raise GQAError(_("{what} {path}: cannot read it: {error}").format(
            what=said, path=path, error=err.strerror or err)) from None
    if len(raw) > limit:
        raise GQAError(_("{what} {path} is larger than {size} MiB: not a {what} file").format(
            what=said, path=path, size=limit // 2 ** 20))
    try:
        config = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise GQAError(_("{what} {path} is not UTF-8 text (byte {byte})").format(
            what=said, path=path, byte=err.start)) from None
    except json.JSONDecodeError as err:
        raise GQAError(_("{what} {path} is not JSON: line {line}, column {column}: {error}").format(
            what=said, path=path, line=err.lineno, column=err.colno, error=err.msg)) from None
    except (RecursionError, ValueError) as err:
        raise GQAError(_("{what} {path} cannot be read as JSON: {error}").format(
            what=said, path=path, error=str(err)[:80])) from None
    if not isinstance(config, dict):
        raise GQAError(_("{what} {path} is not a JSON object but a {type}").format(
            what=said, path=path, type=type(config).__name__))
    return config


def config_path(path: str) -> str:
    """The config.json a path names: the file itself, or the one in a model folder."""
    return os.path.join(path, "config.json") if os.path.isdir(path) else path


def checkpoint_bytes(path: str) -> Tuple[int, str]:
    """The weights' bytes, all devices, from a checkpoint: (bytes, where they were read).

    path is a model.safetensors.index.json, whose metadata.total_size is the bytes of every
    tensor, or a model folder holding one.
    """
    index = os.path.join(path, INDEX) if os.path.isdir(path) else path
    if os.path.isdir(path) and not os.path.isfile(index):
        raise GQAError(_("--weights {path}: the folder holds no {index}; give the weights' size (for example "
                         "140GB)").format(path=path, index=INDEX))
    total = (load_json(index, MAX_INDEX_BYTES, "weights index").get("metadata") or {}).get("total_size")
    if isinstance(total, bool) or not isinstance(total, int) or not 0 < total <= MAX_BYTES:
        raise GQAError(_("weights index {index}: metadata.total_size must be a whole number of bytes from 1 to "
                         "{most}; got {value}").format(index=index, most=f"{MAX_BYTES:.0e}", value=show(total)))
    return total, _("{index}'s metadata.total_size").format(index=index)
