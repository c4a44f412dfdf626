"""Shapes: checking one against a spec, its cache key, and shape lists (YAML or JSON lists of
mappings, CSV with one column per shape variable, or ``--shape K=V,...`` on the command line)."""

from __future__ import annotations

import re
from collections.abc import Mapping
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
    return out


def shape_key(shape: Mapping[str, int]) -> str:
    """The text key of one shape (``M=128,N=256``), in the shape's order."""
    return ",".join(f"{k}={v}" for k, v in shape.items())


def load_shape_file(path: Path, spec: OperatorSpec) -> list[dict[str, int]]:
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
        for i, r in enumerate(data):
            item = (*prefix, str(i))
            where = f"{origin}:{lines[item]}" if item in lines else origin
            for k, v in r.items():
                if isinstance(v, int) and not isinstance(v, bool) and not in_int64(v):
                    line = lines.get((*item, k)) or literal_line(text, str(v))
                    raise ReadError(origin, f"shapes.{i}.{k}: {show(v)} is outside the int64 "
                                            "range", line)
            rows.append((f"{where}: shapes.{i}", r))
    if not rows:
        raise AscendTuneError(f"{origin}: no shapes")
    return [check_shape(spec, r, where) for where, r in rows]


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
        try:
            parsed = {name: int(raw) for name, raw in zip(names, values, strict=True)}
        except ValueError:
            parsed = {}
        if len(parsed) != width or not all(INT64_MIN <= v <= INT64_MAX for v in parsed.values()):
            _bad_value(origin, line_no, names, values)
        rows.append((f"{origin}:{line_no}", parsed))
    return rows


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


def collect(spec: OperatorSpec, files: list[Path], inline: list[str]) -> list[dict[str, int]]:
    shapes: list[dict[str, int]] = []
    for f in files:
        shapes += load_shape_file(f, spec)
    for text in inline:
        shapes.append(check_shape(spec, parse_assignments(text, "--shape"), f"--shape {text}"))
    if not shapes:
        raise AscendTuneError("no shapes: pass --shapes FILE or --shape K=V,...")
    seen: set[str] = set()
    unique = []
    for s in shapes:
        k = shape_key(s)
        if k not in seen:
            seen.add(k)
            unique.append(s)
    return unique
