"""One entry of a results file, read from untrusted text: parsed (the C parser when that is
provably the same as the careful one), then checked, with errors that name the entry's index,
shape and field, and the file and line."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.yamlio import ReadError, parse_json
from ascend_tune.spec.shapes import shape_key


def corrupt(path: Path, why: str, line: int | None = None) -> AscendTuneError:
    where = f"{path}:{line}" if line else str(path)
    return AscendTuneError(f"{where}: corrupt results file ({why}); move it away or pass "
                           "another -o")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_entry(path: Path, entry: Any, line: int | None, index: int) -> dict[str, Any]:
    """An entry with an integer shape and a winner; otherwise an error naming the entry (its
    index in 'shapes' and its shape) and the field, so a hand edit is found at once."""
    where = f"shapes[{index}]"
    if not isinstance(entry, dict):
        raise corrupt(path, f"{where} is {kind(entry)}, not a shape result object", line)
    shape = entry.get("shape")
    if not isinstance(shape, dict):
        what = "has no 'shape'" if shape is None else f"'shape' is {kind(shape)}"
        raise corrupt(path, f"{where} {what}, expected an object of integers", line)
    bad = next((k for k, v in shape.items() if not is_int(v)), None)
    if bad is not None:
        raise corrupt(path, f"{where}: shape.{bad} is {show(shape[bad])}, not an integer",
                      line)
    best = entry.get("best")
    if not isinstance(best, dict):
        what = ("has no 'best' (the winning configuration)" if "best" not in entry else
                f"'best' is {kind(best)}, expected an object of integers")
        raise corrupt(path, f"{where} ({shape_key(shape) or 'empty shape'}) {what}", line)
    bad = next((k for k, v in best.items() if not is_int(v)), None)
    if bad is not None:
        raise corrupt(path, f"{where} ({shape_key(shape) or 'empty shape'}): best.{bad} is "
                            f"{show(best[bad])}, not an integer", line)
    return entry


def kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def show(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_text(text: str, path: Path, line: int | None = None) -> Any:
    """``text`` by the careful parser, its problem reported as a corrupt results file."""
    try:
        return parse_json(text, str(path), first_line=line or 1)
    except ReadError as exc:
        raise corrupt(path, exc.problem, exc.line or line) from None


def _no_constant(literal: str) -> Any:
    raise ValueError(literal)


# One decoder for every entry line: json.loads with an option builds a new one per call.
_ENTRY_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def entry_json(text: str, path: Path, line: int) -> Any:
    """One entry line. The C parser alone when that is safe: every key of the text is in the
    result (so none was given twice: the text's '":' count equals the keys parsed; a quote
    inside a string only makes the count larger) and every number is finite. Anything else
    (a hand edit) takes the careful parser, which names the problem. Reading a 178 000-entry
    file drops from ~25 s to a few seconds."""
    try:
        entry = _ENTRY_DECODER.decode(text)
    except (ValueError, RecursionError):
        return parse_text(text, path, line)
    if clean_keys(entry) == text.count('":'):
        return entry
    return parse_text(text, path, line)


def clean_keys(node: Any) -> int:
    """Keys in ``node``, all levels; -1 if it holds a number that is not finite. A loop over
    a stack, not recursion: ~1.5x faster on the ~30 containers of an entry."""
    total = 0
    stack = [node]
    while stack:
        item = stack.pop()
        of = type(item)
        if of is dict:
            total += len(item)
            stack.extend(item.values())
        elif of is list:
            stack.extend(item)
        elif of is float and not math.isfinite(item):
            return -1
    return total
