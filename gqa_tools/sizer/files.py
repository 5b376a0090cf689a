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
from gqa_tools.sizer.fields import show
from gqa_tools.sizer.units import MAX_BYTES

MAX_CONFIG_BYTES = 4 << 20          # a config.json is a few KB; anything far larger is not one
MAX_INDEX_BYTES = 64 << 20          # a checkpoint's index lists every tensor: a few MB at most
INDEX = "model.safetensors.index.json"


def load_json(path: str, limit: int = MAX_CONFIG_BYTES, what: str = "config") -> Dict[str, Any]:
    try:
        if not os.path.isfile(path):
            raise GQAError(f"{what} {path}: cannot read it: "
                           f"{'not a regular file' if os.path.exists(path) else 'no such file'}")
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as err:
        raise GQAError(f"{what} {path}: cannot read it: {err.strerror or err}") from None
    if len(raw) > limit:
        raise GQAError(f"{what} {path} is larger than {limit // 2 ** 20} MiB: not a {what} file")
    try:
        config = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise GQAError(f"{what} {path} is not UTF-8 text (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise GQAError(f"{what} {path} is not JSON: line {err.lineno}, column {err.colno}: "
                       f"{err.msg}") from None
    except (RecursionError, ValueError) as err:
        raise GQAError(f"{what} {path} cannot be read as JSON: {str(err)[:80]}") from None
    if not isinstance(config, dict):
        raise GQAError(f"{what} {path} is not a JSON object but a {type(config).__name__}")
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
        raise GQAError(f"--weights {path}: the folder holds no {INDEX}; give the weights' size "
                       f"(for example 140GB)")
    total = (load_json(index, MAX_INDEX_BYTES, "weights index").get("metadata") or {}).get("total_size")
    if isinstance(total, bool) or not isinstance(total, int) or not 0 < total <= MAX_BYTES:
        raise GQAError(f"weights index {index}: metadata.total_size must be a whole number of bytes "
                       f"from 1 to {MAX_BYTES:.0e}; got {show(total)}")
    return total, f"{index}'s metadata.total_size"
