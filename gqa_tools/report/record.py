"""gqa_tools.report.record: section 8's training, kept beside report.md.

Section 8's training, the report's one slow part, is kept beside report.md in
report-training.json, one record for each of the two families of Python that
train to different bits: "sum" (3.9 to 3.11, whose dot products and sums add
with plain sum) and "sumprod" (3.12 and later: math.sumprod, and sum()'s
compensated addition).  Each family's record is keyed by the sha256 of what its
numbers come from: the code the training reads (gqa_tools.report.reads: the
definitions it reaches, without docstrings), the recipe, and the family.  The
report, written or --check-ed, takes the training from the record of the
running Python's family when its key is the code's now, and trains otherwise
(or with --retrain); a report that trained writes its family's record and keeps
the other's.
"""

from __future__ import annotations

import math
import os
from typing import Any, Mapping, Optional

from gqa_tools.report.files import stage, write_target
from gqa_tools.report.reads import read_forms


TRAINING_RECORD = "report-training.json"
FAMILIES = ("sum", "sumprod")           # Python 3.9 to 3.11; 3.12 and later


def family() -> str:
    """The running Python's family: "sumprod" where math has sumprod (3.12+), else "sum"."""
    return "sumprod" if hasattr(math, "sumprod") else "sum"


def training_key(recipe: Any, of: Optional[str] = None, texts: Optional[Mapping[str, str]] = None) -> str:
    """The sha256 of what section 8's numbers depend on: the code its training reads, the
    recipe, and the family (of: the running Python's by default).  texts: a module's text by
    its dotted name, read instead of its file."""
    import hashlib
    import json
    digest = hashlib.sha256()
    for line in read_forms(texts):
        digest.update(hashlib.sha256(line.encode("utf-8")).digest())
    digest.update(json.dumps(recipe._asdict(), sort_keys=True).encode("utf-8"))
    digest.update((of or family()).encode("utf-8"))
    return digest.hexdigest()


def _records(path: str) -> dict:
    """The records at path by family ({} when there is none to read)."""
    import json
    try:
        with open(path, encoding="utf-8") as f:
            records = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(records, dict):
        return {}
    return {name: records[name] for name in FAMILIES if isinstance(records.get(name), dict)}


def recorded_training(path: str, recipe: Any, of: Optional[str] = None) -> Optional[dict]:
    """The training in the record at path of a family (the running Python's by default),
    when its key is the code's now; else None."""
    record = _records(path).get(of or family(), {})
    return record.get("result") if record.get("key") == training_key(recipe, of) else None


def write_training(path: str, recipe: Any, result: dict) -> None:
    """The running Python's family's record of section 8's training at path, the other
    family's kept as it was; the file whole or not at all."""
    import json
    records = _records(path)
    result = dict(result, seconds=0.0)              # how long it took: not the report's, and not the same twice
    records[family()] = {"key": training_key(recipe), "result": result}
    text = json.dumps(records, sort_keys=True, indent=1, allow_nan=False) + "\n"
    target = write_target(path)
    os.replace(stage(target, text), target)
