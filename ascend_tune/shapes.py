"""Shape lists: YAML or JSON lists of mappings, CSV with one column per shape variable, or
``--shape K=V,...`` on the command line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NoReturn

from ascend_tune.errors import AscendTuneError, did_you_mean
from ascend_tune.spec import OperatorSpec, check_shape, parse_assignments, shape_key
from ascend_tune.yamlio import (
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

_INT = re.compile(r"[+-]?[0-9]+")


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
    lines = csv_rows(text, origin)
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
