"""How spec names, values and comments are written into the emitted C++ (the text the
templates receive; render.py and the attribute code share it)."""

from __future__ import annotations

import math
from typing import Any

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.expr import Expr, Kind

# Platform core counts replace the profile's at run time (GetCoreNumAic / GetCoreNumAiv).
RUNTIME_CORES = {"hw.cube_cores": "aicNum", "hw.vector_cores": "aivNum"}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def cpp_name(name: str) -> str:
    """Spec names in C++ get a prefix so they cannot collide with the code around them."""
    if name.startswith("hw."):
        return "hw_" + name[3:]
    if name.startswith("sizeof."):
        return "sizeof_" + name[7:]
    return "v_" + name


def cpp(e: Expr) -> str:
    return e.to_cpp(cpp_name)


def cpp_member(e: Expr) -> str:
    """Render reading spec names from a ``Values v`` (functions after Derive)."""
    def name(n: str) -> str:
        if n in RUNTIME_CORES:
            return "v." + RUNTIME_CORES[n]
        if n.startswith(("hw.", "sizeof.")):
            return cpp_name(n)
        return "v." + cpp_name(n)
    return e.to_cpp(name)


def _ctype(kind: Kind) -> str:
    return {Kind.INT: "int64_t", Kind.FLOAT: "double", Kind.BOOL: "bool"}[kind]


def _literal(value: Any) -> str:
    if type(value) is int and _INT64_MIN < value <= _INT64_MAX:
        return f"INT64_C({value})"  # first: a large tuned table is 4-5 of these per shape
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise AscendTuneError(f"value {value} does not fit a 64-bit integer")
        # INT64_MIN has no literal form: write it as an expression.
        return "(INT64_C(-9223372036854775807) - 1)" if value == _INT64_MIN else f"INT64_C({value})"
    number = float(value)
    if not math.isfinite(number):
        raise AscendTuneError(f"value {value} is not a finite number")
    text = repr(number)
    return text if ("." in text or "e" in text) else text + ".0"


def _comment(text: str) -> str:
    """Text from an input placed in a C++ comment: printable ASCII only, no line breaks."""
    return "".join(ch if " " <= ch <= "~" else "?" for ch in text)[:80]


def _bound(value: float) -> str:
    """A range bound as a C++ double literal (exact for every bound in cann.FIELD_CTYPES)."""
    return repr(float(value)) if abs(value) < 1e16 else f"{float(value):.17e}"
