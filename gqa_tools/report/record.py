"""gqa_tools.report.record: section 8's training, kept beside report.md.

Section 8's training, the report's one slow part, is kept beside report.md in
report-training.json with the sha256 of all its numbers come from (gqa.py's kernels,
the training's code and seeds, the recipe, and whether this Python adds with
math.sumprod).  `report --check` trains again unless that record's key is the one the
code has now; writing the report always trains, and writes the record.
"""

from __future__ import annotations

import math
import os
from typing import Any, Optional

import gqa
from gqa_tools import uptraining as training
from gqa_tools.report.files import stage, write_target


TRAINING_RECORD = "report-training.json"


def training_key(recipe: Any) -> str:
    """The sha256 of what section 8's numbers depend on: its inputs' bytes and the recipe."""
    import hashlib
    import json
    from gqa_tools import seeds
    digest = hashlib.sha256()
    for module in (gqa, *training.SOURCES, seeds):
        with open(module.__file__, "rb") as f:
            digest.update(hashlib.sha256(f.read()).digest())
    digest.update(json.dumps(recipe._asdict(), sort_keys=True).encode("utf-8"))
    digest.update(b"sumprod" if hasattr(math, "sumprod") else b"sum")
    return digest.hexdigest()


def recorded_training(path: str, recipe: Any) -> Optional[dict]:
    """The training in the record at path, when its key is the code's now; else None."""
    import json
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record.get("result") if isinstance(record, dict) and record.get("key") == training_key(recipe) else None


def write_training(path: str, recipe: Any, result: dict) -> None:
    """The record of section 8's training at path, whole or not at all."""
    import json
    result = dict(result, seconds=0.0)              # how long it took: not the report's, and not the same twice
    text = json.dumps({"key": training_key(recipe), "recipe": recipe._asdict(), "result": result},
                      sort_keys=True, indent=1, allow_nan=False) + "\n"
    target = write_target(path)
    os.replace(stage(target, text), target)
