"""Shapes: checking one against a spec, its cache key, and shape lists (YAML or JSON lists of
mappings, CSV with one column per shape variable, or ``--shape K=V,...`` on the command line)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from ascend_tune.base.errors import AscendTuneError, did_you_mean
from ascend_tune.base.yamlio import (
    INT64_MAX,
    INT64_MIN,
    LIMIT_SHAPES,
    KeyPath,
    ReadError,
    csv_rows,
    in_int64,
    literal_line,
    parse_json,
    parse_yaml,
    read_text,
    show,
)
from ascend_tune.spec import OperatorSpec

_INT = re.compile(r"[+-]?[0-9]+")


def parse_assignments(text: str, what: str) -> dict[str, int]:
    """Parse ``K=V,K=V`` (integers) from the command line; spaces separate pairs as commas do
    (``K=V K=V``, the form the summary tables print)."""
    out: dict[str, int] = {}
    for part in re.split(r"[,\s]+", re.sub(r"\s*=\s*", "=", text.strip())):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise AscendTuneError(f"{what} '{text}': expected NAME=VALUE pairs separated by ','")
        try:
            out[key] = int(value.strip())
        except ValueError:
            raise AscendTuneError(f"{what} '{text}': value of {key} must be an integer, "
                                  f"got '{value.strip()}'") from None
    if not out:
        raise AscendTuneError(f"{what} is empty: expected NAME=VALUE pairs separated by ','")
    return out


def check_shape(spec: OperatorSpec, shape: Mapping[str, int], origin: str) -> dict[str, int]:
    """Validate one shape against the spec's variables; return it in the spec's order."""
    unknown = [k for k in shape if k not in spec.shape_vars]
    if unknown:
        k = unknown[0]
        raise AscendTuneError(f"{origin}: unknown shape variable '{k}'"
                              f"{did_you_mean(k, spec.shape_vars)}; "
                              f"{spec.name} takes {', '.join(spec.shape_vars)}")
    missing = [v for v in spec.shape_vars if v not in shape]
    if missing:
        raise AscendTuneError(f"{origin}: shape misses {', '.join(missing)}")
    out = {}
    for v in spec.shape_vars:
        value = shape[v]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise AscendTuneError(f"{origin}: {v} must be an integer, got {value!r:.60}")
        value = int(value)
        if not INT64_MIN <= value <= INT64_MAX:
            raise AscendTuneError(f"{origin}: {v}={str(value)[:40]} does not fit a 64-bit "
                                  "integer")
        if value < spec.shape_min[v] or (v in spec.shape_max and value > spec.shape_max[v]):
            hi = spec.shape_max.get(v)
            rng = f"[{spec.shape_min[v]}, {hi}]" if hi is not None else f">= {spec.shape_min[v]}"
            raise AscendTuneError(f"{origin}: {v}={value} is out of range {rng}")
        out[v] = value
    for v, m in spec.shape_multiple.items():
        if out[v] % m:
            raise AscendTuneError(refused(spec, v, out[v], origin))
    return out


def refused(spec: OperatorSpec, v: str, value: int, origin: str) -> str:
    """The one line for a shape value the kernel does not accept (not a multiple)."""
    m = spec.shape_multiple[v]
    lo, hi = value - value % m, value - value % m + m
    near = " or ".join(str(x) for x in (lo, hi) if x >= spec.shape_min[v]
                       and (v not in spec.shape_max or x <= spec.shape_max[v]))
    return (f"{origin}: {v}={value} is not a multiple of {m}, which the {spec.name} kernel "
            f"needs (shape.{v}.multiple_of); pad it to {near or 'a multiple'}")


def shape_key(shape: Mapping[str, int]) -> str:
    """The text key of one shape (``M=128,N=256``), in the shape's order."""
    return ",".join(f"{k}={v}" for k, v in shape.items())


# A shape range in a shape file: "LO:HI" (any format) or {min: LO, max: HI} (YAML, JSON).
_RANGE = re.compile(r"\s*([+-]?[0-9]+)\s*:\s*([+-]?[0-9]+)\s*")


@dataclass(frozen=True)
class ShapeList:
    """What shape files and ``--shape`` texts hold: shapes, and ranges as ``--shape-range``
    texts with where each came from (``file:line``), for ``search`` to tune."""

    shapes: list[dict[str, int]]
    ranges: list[tuple[str, str]]


def _range_value(value: Any) -> tuple[int, int] | None:
    if isinstance(value, str):
        m = _RANGE.fullmatch(value)
        return (int(m[1]), int(m[2])) if m else None
    if isinstance(value, dict) and set(value) == {"min", "max"} and all(
            isinstance(x, int) and not isinstance(x, bool) for x in value.values()):
        return int(value["min"]), int(value["max"])
    return None


def _range_text(row: Mapping[str, Any], where: str) -> str | None:
    """The entry as a ``--shape-range`` text when any of its values is a range, else None."""
    bounds = {k: _range_value(v) for k, v in row.items()}
    if all(b is None for b in bounds.values()):
        return None
    parts = []
    for k, v in row.items():
        b = bounds[k]
        if b is not None:
            parts.append(f"{k}={b[0]}:{b[1]}")
        elif isinstance(v, int) and not isinstance(v, bool):
            parts.append(f"{k}={v}")
        else:
            raise AscendTuneError(f"{where}: {k}: {show(v)} is neither an integer nor a range "
                                  "LO:HI or {min: LO, max: HI}")
    return ",".join(parts)


def read_shape_file(path: Path, spec: OperatorSpec) -> ShapeList:
    """The shapes and shape ranges of a YAML, JSON or CSV shape file."""
    text = read_text(path, "shape file", LIMIT_SHAPES)
    origin = str(path)
    if path.suffix.lower() == ".csv":
        rows = _csv_shapes(text, origin, spec)
    else:
        lines: dict[KeyPath, int] = {}
        if path.suffix.lower() == ".json":
            data = parse_json(text, origin)
        else:
            data, lines = parse_yaml(text, origin)
        prefix: KeyPath = ()
        if isinstance(data, dict) and "shapes" in data:
            data, prefix = data["shapes"], ("shapes",)
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise AscendTuneError(f"{origin}: expected a list of mappings like "
                                  f"{{{', '.join(f'{v}: 1024' for v in spec.shape_vars)}}}")
        rows = []
        # An entry's line: its own, else its first key's (a flow mapping `- {M: 1, ...}` has
        # no line of its own in the line table).
        first: dict[KeyPath, int] = {}
        for key, n in lines.items():
            if len(key) > len(prefix) and key[:len(prefix)] == prefix:
                entry = key[:len(prefix) + 1]
                first[entry] = min(n, first.get(entry, n))
        for i, r in enumerate(data):
            item = (*prefix, str(i))
            where = f"{origin}:{first[item]}" if item in first else origin
            for k, v in r.items():
                if isinstance(v, int) and not isinstance(v, bool) and not in_int64(v):
                    line = lines.get((*item, k)) or literal_line(text, str(v))
                    raise ReadError(origin, f"shapes.{i}.{k}: {show(v)} is outside the int64 "
                                            "range", line)
            rows.append((f"{where}: shapes.{i}", r))
    if not rows:
        raise AscendTuneError(f"{origin}: no shapes")
    out = ShapeList([], [])
    for where, r in rows:
        ranged = _range_text(r, where)
        if ranged is not None:
            out.ranges.append((where, ranged))
        else:
            out.shapes.append(check_shape(spec, r, where))
    return out


def load_shape_file(path: Path, spec: OperatorSpec) -> list[dict[str, int]]:
    """The shapes of a shape file that holds no ranges (only ``search`` tunes ranges)."""
    found = read_shape_file(path, spec)
    if found.ranges:
        raise AscendTuneError(f"{found.ranges[0][0]}: a shape range ({found.ranges[0][1]}); "
                              "only `ascend-tune search` tunes ranges")
    return found.shapes


def _csv_shapes(text: str, origin: str, spec: OperatorSpec) -> list[tuple[str, dict[str, Any]]]:
    rows: list[tuple[str, dict[str, Any]]] = []
    lines = csv_rows(text, origin, comments=True)  # "# ..." lines explain a shape list
    first = next(lines, None)
    if first is None:
        return rows
    header_line, header = first
    names = [h.strip() for h in header]
    seen: set[str] = set()
    for i, name in enumerate(names):
        if not name:
            raise ReadError(origin, f"column {i + 1} has no name in the header", header_line)
        if name in seen:
            raise ReadError(origin, f"column {show(name)} appears twice in the header",
                            header_line)
        if name not in spec.shape_vars:
            raise ReadError(origin, f"unknown shape variable {show(name)}"
                                    f"{did_you_mean(name, spec.shape_vars)}; {spec.name} takes "
                                    f"{', '.join(spec.shape_vars)}", header_line)
        seen.add(name)
    missing = [v for v in spec.shape_vars if v not in names]
    if missing:
        raise ReadError(origin, f"no column for {', '.join(missing)}", header_line)
    width = len(names)
    for line_no, values in lines:
        if len(values) != width:
            if len(values) > width:
                raise ReadError(origin, f"{len(values)} values but {width} columns", line_no)
            raise ReadError(origin, f"{len(values)} values but {width} columns (no value for "
                                    f"'{names[len(values)]}')", line_no)
        if any(_RANGE.fullmatch(raw) for raw in values):
            rows.append((f"{origin}:{line_no}", dict(zip(names, (
                raw.strip() if _RANGE.fullmatch(raw) else _csv_int(raw)
                for raw in values), strict=True))))
            continue
        try:
            parsed = {name: int(raw) for name, raw in zip(names, values, strict=True)}
        except ValueError:
            parsed = {}
        if len(parsed) != width or not all(INT64_MIN <= v <= INT64_MAX for v in parsed.values()):
            _bad_value(origin, line_no, names, values)
        rows.append((f"{origin}:{line_no}", parsed))
    return rows


def _csv_int(raw: str) -> int | str:
    """A CSV cell as an integer where it is one (a range row's fixed dimensions)."""
    try:
        return int(raw)
    except ValueError:
        return raw


def _bad_value(origin: str, line_no: int, names: list[str], values: list[str]) -> NoReturn:
    """Raise the error for the first value of a CSV row that is not an int64 integer."""
    for name, raw in zip(names, values, strict=True):
        value = raw.strip()
        if not value:
            raise ReadError(origin, f"{name}: empty value", line_no)
        try:
            number = int(value)
        except ValueError:  # not a number, or thousands of digits
            number = None
        if number is None and not _INT.fullmatch(value):
            raise ReadError(origin, f"{name}: {show(value)} is not an integer", line_no)
        if number is None or not in_int64(number):
            raise ReadError(origin, f"{name}: {show(value)} is outside the int64 range",
                            line_no)
    raise ReadError(origin, "bad row", line_no)


def collect_sources(spec: OperatorSpec, files: list[Path], inline: list[str]) -> ShapeList:
    """The shapes (duplicates dropped, first kept) and shape ranges of shape files and
    ``--shape`` texts, in order; either may be empty."""
    shapes: list[dict[str, int]] = []
    ranges: list[tuple[str, str]] = []
    for f in files:
        found = read_shape_file(f, spec)
        shapes += found.shapes
        ranges += found.ranges
    for text in inline:
        shapes.append(check_shape(spec, parse_assignments(text, "--shape"), f"--shape {text}"))
    return ShapeList(_unique(shapes), ranges)


def collect(spec: OperatorSpec, files: list[Path], inline: list[str]) -> list[dict[str, int]]:
    """The shapes of shape files and ``--shape`` texts, in order; none, or a range, is an
    error."""
    found = collect_sources(spec, files, inline)
    if found.ranges:
        raise AscendTuneError(f"{found.ranges[0][0]}: a shape range ({found.ranges[0][1]}); "
                              "only `ascend-tune search` tunes ranges")
    if not found.shapes:
        raise AscendTuneError("no shapes: pass --shapes FILE or --shape K=V,...")
    return found.shapes


def _unique(shapes: list[dict[str, int]]) -> list[dict[str, int]]:
    seen: set[str] = set()
    unique = []
    for s in shapes:
        k = shape_key(s)
        if k not in seen:
            seen.add(k)
            unique.append(s)
    return unique
