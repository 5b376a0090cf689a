"""gqa_tools.sizer.units: bytes per value of a dtype, and sizes and rates as people write them.

`--memory 80GiB`, `--weights 140GB`, `--bandwidth 3.35TB/s`, `--flops 312T`:
each read into a number, within bounds no device exceeds, or refused with
one line that says what would be valid.
"""

from __future__ import annotations

import re

from gqa import GQAError
from gqa_grader.language.i18n import N_, _

# Bytes per stored value, by the names configs and serving engines use.
DTYPE_BYTES = {"fp32": 4, "float32": 4, "fp16": 2, "float16": 2, "bf16": 2, "bfloat16": 2,
               "fp8": 1, "int8": 1}


def dtype_bytes(dtype: str) -> int:
    """Bytes per value of a dtype name (fp32, fp16, bf16, fp8, int8, ...)."""
    try:
        return DTYPE_BYTES[dtype.lower()]
    except (KeyError, AttributeError):
        raise GQAError(_("dtype {dtype} is not one of {dtypes}").format(dtype=repr(dtype),
                                                                         dtypes=", ".join(DTYPE_BYTES))) from None


# What a size or a rate is, as a refusal names it (an option's name stays as it is).
WHAT = (N_("size"), N_("bandwidth"), N_("compute rate"))

_UNITS = {"b": 1, "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12,
          "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "tib": 2 ** 40}
_SI = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}


MAX_BYTES = 10 ** 18         # an exabyte: no device has more memory, or reads faster per second
MAX_FLOPS = 10 ** 21         # a zettaFLOP per second


def _bounded(value: float, text: str, what: str, top: float) -> float:
    if not 0 < value <= top:
        raise GQAError(_("{what} {value} must be more than 0 and at most {most}").format(
            what=_(what), value=repr(str(text)[:40]), most=f"{top:.0e}"))
    return value


def parse_size(text: str, what: str = "size") -> int:
    """Bytes from '80GiB', '80GB', '1.5 TiB' or a plain number of bytes (0 allowed, at most 1e18).

    >>> parse_size("80GiB"), parse_size("80GB"), parse_size("4096")
    (85899345920, 80000000000, 4096)
    """
    match = re.fullmatch(r"\s*(\d{1,30}(?:\.\d{1,30})?)\s*([A-Za-z]*)\s*", str(text)[:100])
    unit = match.group(2).lower() if match else None
    if not match or unit not in _UNITS and unit != "":
        raise GQAError(_("{what} {value} is not a size: give bytes, or a number with one of B, KB, MB, GB, TB, "
                         "KiB, MiB, GiB, TiB (for example 80GiB)").format(what=_(what), value=repr(str(text)[:40])))
    value = float(match.group(1)) * _UNITS[unit or "b"]
    if value > MAX_BYTES:
        raise GQAError(_("{what} {value} must be at most {most} bytes").format(
            what=_(what), value=repr(str(text)[:40]), most=f"{MAX_BYTES:.0e}"))
    return int(round(value))


def parse_bandwidth(text: str) -> float:
    """Bytes per second from '2039GB/s', '3.35TB/s' or a plain number (more than 0)."""
    return _bounded(float(parse_size(re.sub(r"/s\s*$", "", str(text)[:100]), "bandwidth")),
                    text, "bandwidth", MAX_BYTES)


def parse_flops(text: str) -> float:
    """FLOP per second from '312T', '312TFLOPS', '3.12e14' or '989 TFLOP/s' (more than 0)."""
    match = re.fullmatch(r"\s*(\d{1,30}(?:\.\d{1,30})?(?:[eE][+-]?\d{1,3})?)\s*([kKmMgGtTpP]?)"
                         r"\s*(?:FLOPS|FLOP/s|flops|flop/s)?\s*", str(text)[:100])
    if not match:
        raise GQAError(_("compute rate {value} is not a rate: give FLOP/s as a number, with an optional k, M, G, "
                         "T or P (for example 312T or 312TFLOPS)").format(value=repr(str(text)[:40])))
    return _bounded(float(match.group(1)) * _SI[match.group(2).lower()], text, "compute rate",
                    MAX_FLOPS)
