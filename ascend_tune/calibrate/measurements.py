"""Read measured kernel times (msprof, msprof op, torch_npu, plain CSV) into model-ready rows.

Layouts (column names as in docs/model.md "Measured pipe times", matched after stripping spaces
and case):

* msprof ``op_summary_*.csv``: ``Task Duration(us)``, ``Block Dim`` or ``Block Num``,
  ``Input Shapes`` (``;`` between tensors, ``,`` between dims), per-pipe ``aic_mac_time(us)``
  (or ``aic_cube_time(us)``), ``aic_mte2_time(us)``, ... ``aiv_vec_time(us)``;
* torch_npu ``kernel_details.csv``: the same with ``Duration(us)``;
* ``msprof op`` ``PipeUtilization.csv``: one row per block / sub-block; the kernel's time is
  the slowest block and each pipe's time its largest over blocks (the model reports the slowest
  core); shape and configuration come from the manifest, keyed by file name;
* plain CSV: one column per shape variable, optional parameter columns, ``time_us`` and
  optional per-pipe columns under the model's names (``aic_mte2_time_us``, ...).

Shapes in msprof files are mapped to the spec's variables through each variable's ``from``
(``input0.dim1``, ``input0.size``, ``input0.rows``, ``input0.last``). Parameters missing from a
row come from the manifest's ``config`` (per file or per shape), else the spec's baseline; a
manifest may mark parameters ``free`` (the model's best value is used, for kernels whose core
split the spec describes differently).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.vocabulary import MSPROF_PIPE_HEADERS, PIPE_COLUMNS
from ascend_tune.base.yamlio import (
    LIMIT_MEASUREMENTS,
    KeyPath,
    csv_rows,
    in_int64,
    load_yaml,
    read_text,
    show,
)
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import check_shape, shape_key

# normalised header -> model pipe column
_PIPES = {**MSPROF_PIPE_HEADERS, **{c: c for c in PIPE_COLUMNS}}
_DURATION = ("taskduration(us)", "duration(us)", "time_us")
_BLOCK = ("blockdim", "blocknum")


def _norm(header: str) -> str:
    return re.sub(r"\s+", "", header).lower()


@dataclass
class Measurement:
    origin: str  # file:line
    shape: dict[str, int]
    config: dict[str, int]
    free: tuple[str, ...]
    time_us: float
    pipes_us: dict[str, float] = field(default_factory=dict)
    block_dim: int | None = None
    runs_us: tuple[float, ...] = ()  # each run's time where `measure --repeat` kept them


@dataclass
class LoadReport:
    rows: list[Measurement]
    skipped: list[str]  # one "file:line: reason" per bad row
    files: list[str]


@dataclass(frozen=True)
class Manifest:
    default: Mapping[str, int]
    free: tuple[str, ...]
    # file name -> {"shape": {var: int}, "config": {param: int}, "time_us": float,
    #               "origin": "manifest:line" for messages}
    per_file: Mapping[str, Mapping[str, Any]]
    per_shape: Mapping[str, Mapping[str, int]]
    where: Mapping[str, str]


# ---- manifest -------------------------------------------------------------------------------

_FILE_KEYS = {"shape": "shape", "config": "config", "time_us": "time_us",
              "taskduration(us)": "time_us"}


class _ManifestReader:
    """Checks every value of a manifest, naming the file, line and key of the first bad one."""

    def __init__(self, path: Path, lines: Mapping[KeyPath, int]) -> None:
        self.path = path
        self.lines = lines

    def error(self, key: KeyPath, problem: str) -> AscendTuneError:
        line = None
        for n in range(len(key), 0, -1):  # the closest key that has a line
            line = self.lines.get(key[:n])
            if line:
                break
        where = f"{self.path}:{line}" if line else str(self.path)
        return AscendTuneError(f"{where}: {'.'.join(key)}: {problem}")

    def mapping(self, value: Any, key: KeyPath, what: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(key, f"expected a mapping of {what}, got {_kind(value)}")
        return value

    def integers(self, value: Any, key: KeyPath, what: str) -> dict[str, int]:
        out = {}
        for name, v in self.mapping(value, key, f"{what} to integers").items():
            if isinstance(v, bool) or not isinstance(v, int):
                raise self.error((*key, name), f"expected an integer, got {show(v)}")
            if not in_int64(v):
                raise self.error((*key, name), f"{show(v)} is outside the int64 range")
            out[name] = v
        return out

    def time(self, value: Any, key: KeyPath) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"expected a time in microseconds, got {show(value)}")
        if not math.isfinite(value) or value <= 0:
            raise self.error(key, f"{show(value)} is not a positive time")
        return float(value)


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, str):
        return f"the string {show(value)}"
    return show(value)


def load_manifest(path: Path | None) -> Manifest:
    if path is None:
        return Manifest({}, (), {}, {}, {})
    data, lines = load_yaml(path, "manifest")
    if not isinstance(data, dict):
        raise AscendTuneError(f"{path}: manifest must be a mapping")
    allowed = {"config", "free", "files", "shapes", "where"}
    for key in data:
        if key not in allowed:
            raise AscendTuneError(f"{path}: unknown manifest key {show(key)}; allowed: "
                                  f"{', '.join(sorted(allowed))}")
    m = _ManifestReader(path, lines)
    free = data.get("free") or []
    if not isinstance(free, list) or not all(isinstance(f, str) for f in free):
        raise m.error(("free",), "expected a list of parameter names")
    config = m.integers(data.get("config"), ("config",), "parameter names")
    per_file: dict[str, dict[str, Any]] = {}
    for name, entry in m.mapping(data.get("files"), ("files",), "file names to "
                                 "{shape, config, time_us}").items():
        key = ("files", name)
        checked: dict[str, Any] = {}
        for k, v in m.mapping(entry, key, "shape, config, time_us").items():
            kind = _FILE_KEYS.get(_norm(k))
            if kind is None:
                raise m.error((*key, k), "unknown key; allowed: config, shape, time_us")
            if kind in checked:
                raise m.error((*key, k), "time_us is given twice")
            if kind == "time_us":
                checked[kind] = m.time(v, (*key, k))
            else:
                checked[kind] = m.integers(v, (*key, k), "names")
        line = lines.get((*key, "shape")) or lines.get(key)
        checked["origin"] = f"{path}:{line}" if line else str(path)
        per_file[name] = checked
    per_shape = {k: m.integers(v, ("shapes", k), "parameter names")
                 for k, v in m.mapping(data.get("shapes"), ("shapes",),
                                       "shapes (M=..,N=..) to configurations").items()}
    where = {}
    for k, v in m.mapping(data.get("where"), ("where",), "column names to values").items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise m.error(("where", k), f"expected a column value, got {_kind(v)}")
        where[k] = str(v)
    return Manifest(config, tuple(free), per_file, per_shape, where)


# ---- cells ----------------------------------------------------------------------------------


def _number(row: Mapping[str, str], col: str) -> float:
    """A finite number from a non-empty cell; ValueError (the row's skip reason) otherwise."""
    raw = row.get(col, "")
    if raw == "":
        raise ValueError(f"no value for {col}" + (" (the row is short)" if col not in row else ""))
    value = float(raw)  # "could not convert string to float: 'oops'"
    if not math.isfinite(value):
        raise ValueError(f"{col}: {show(raw)} is not a finite number")
    return value


class _BadTime(Exception):
    """A time cell holding a number no measurement can have (inf, NaN, negative; zero for a
    kernel's time): a broken profiler or a typo. The row is refused, not skipped, so a
    calibration never silently runs on what is left (the reader adds file and line)."""


def _time(row: Mapping[str, str], col: str, *, zero_ok: bool = False) -> float:
    """A measured time: ValueError (skip) for an empty or non-numeric cell, _BadTime for a
    number that cannot be a time."""
    raw = row.get(col, "")
    if raw == "":
        raise ValueError(f"no value for {col}" + (" (the row is short)" if col not in row else ""))
    value = float(raw)  # "could not convert string to float: 'oops'"
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        kind = "non-negative" if zero_ok else "positive"
        raise _BadTime(f"column {col}: {show(raw)} is not a finite {kind} time")
    return value


def _pipe_time(row: Mapping[str, str], col: str) -> float:
    return _time(row, col, zero_ok=True)  # a pipe the kernel does not use reads 0


def _refused(where: str, exc: _BadTime) -> AscendTuneError:
    return AscendTuneError(f"{where}: {exc}; fix or remove the row")


def _integer(raw: str, what: str) -> int:
    raw = raw.strip()
    if not raw:
        raise ValueError(f"no value for {what}")
    try:
        value = int(raw) if len(raw) <= 40 else None
    except ValueError:
        value = None
    if value is None:
        raise ValueError(f"{what}: {show(raw)} is not an integer")
    if not in_int64(value):
        raise ValueError(f"{what}: {show(raw)} is outside the int64 range")
    return value


def _checked_shape(spec: OperatorSpec, shape: Mapping[str, int]) -> dict[str, int]:
    for var, value in shape.items():
        if not in_int64(value):
            raise ValueError(f"shape {var}={show(value)} is outside the int64 range")
    try:
        return check_shape(spec, shape, "shape")
    except AscendTuneError as exc:
        raise ValueError(str(exc)) from None


def _parse_input_shapes(text: str) -> list[list[int]]:
    tensors = []
    for part in text.strip().strip('"').split(";"):
        part = part.strip()
        tensors.append([_integer(d, "Input Shapes") for d in part.split(",") if d.strip()]
                       if part else [])
    return tensors


def _shape_from_inputs(spec: OperatorSpec, tensors: Sequence[Sequence[int]]) -> dict[str, int]:
    out = {}
    for var in spec.shape_vars:
        src = spec.shape_from.get(var)
        if src is None:
            raise ValueError(f"shape variable {var} has no 'from: inputN...' to read it from "
                             "Input Shapes")
        idx = src.input
        if idx >= len(tensors) or not tensors[idx]:
            raise ValueError(f"Input Shapes has no tensor {idx}")
        dims = tensors[idx]
        if src.dim is not None and src.dim >= len(dims):
            raise ValueError(f"tensor {idx} has {len(dims)} dims, {var} reads dim {src.dim}")
        out[var] = src.read(dims)
    return out


def _config_for(spec: OperatorSpec, manifest: Manifest, file_name: str,
                shape: Mapping[str, int], row: Mapping[str, str]) -> dict[str, int]:
    config: dict[str, int] = dict(manifest.default)
    config.update(manifest.per_file.get(file_name, {}).get("config") or {})
    config.update(manifest.per_shape.get(shape_key(shape), {}))
    for p in spec.params:
        value = row.get(p)
        if value not in (None, ""):
            config[p] = _integer(value, p)
    unknown = [k for k in config if k not in spec.params]
    if unknown:
        raise ValueError(f"unknown parameter {show(unknown[0])} for {spec.name}")
    return config


Record = tuple[int, dict[str, str]]  # (line, column -> stripped value; short rows lack keys)


def _records(rows: Iterator[tuple[int, list[str]]], fields: Sequence[str]) -> Iterator[Record]:
    for line, values in rows:
        # Extra values beyond the header are ignored; missing ones are absent.
        yield line, {k: v.strip() for k, v in zip(fields, values)}  # noqa: B905


def read_files(paths: Sequence[Path], spec: OperatorSpec, manifest: Manifest) -> LoadReport:
    rows: list[Measurement] = []
    skipped: list[str] = []
    for path in paths:
        text = read_text(path, "measurement file", LIMIT_MEASUREMENTS)
        lines = csv_rows(text, str(path), comments=True)
        first = next(lines, None)
        if first is None:
            skipped.append(f"{path}: empty file")
            continue
        fields = first[1]
        header = {_norm(h): h for h in fields}
        reader = next(r for r in READERS if r.matches(header))
        rows += reader.read(path, _records(lines, fields), header, spec, manifest, skipped)
    return LoadReport(rows, skipped, [str(p) for p in paths])


ReadFn = Callable[[Path, Iterator[Record], Mapping[str, str], OperatorSpec, Manifest, list[str]],
                  list[Measurement]]


@dataclass(frozen=True)
class Reader:
    """One measurement file layout. ``matches`` looks at the header only (normalised column
    name -> column as written); ``read`` turns the records into rows and appends one line
    per record it cannot use to ``skipped`` (file:line: why)."""

    name: str
    doc: str
    matches: Callable[[Mapping[str, str]], bool]
    read: ReadFn


def _read_summary(path: Path, records: Iterator[Record], header: Mapping[str, str],
                  spec: OperatorSpec, manifest: Manifest, skipped: list[str]) -> list[Measurement]:
    rows = []
    for line, row in records:
        where = f"{path}:{line}"
        try:
            if not _where_ok(row, manifest.where):
                continue
            rows.append(_summary_row(where, path.name, row, header, spec, manifest))
        except (ValueError, KeyError, ArithmeticError) as exc:
            skipped.append(f"{where}: {exc}")
        except _BadTime as exc:
            raise _refused(where, exc) from None
    return rows


def _where_ok(row: Mapping[str, str], where: Mapping[str, str]) -> bool:
    return all(row.get(k) == v for k, v in where.items())


def _summary_row(where: str, file_name: str, row: Mapping[str, str], header: Mapping[str, str],
                 spec: OperatorSpec, manifest: Manifest) -> Measurement:
    duration_col = next((header[k] for k in _DURATION if k in header), None)
    if duration_col is None:
        raise ValueError("no Task Duration(us), Duration(us) or time_us column")
    time_us = _time(row, duration_col)
    if all(v in header.values() for v in spec.shape_vars):
        shape = {v: _integer(row.get(v, ""), v) for v in spec.shape_vars}
    elif "inputshapes" in header:
        shape = _shape_from_inputs(spec, _parse_input_shapes(row.get(header["inputshapes"], "")))
    else:
        raise ValueError(f"no shape: neither columns {', '.join(spec.shape_vars)} nor "
                         "Input Shapes")
    shape = _checked_shape(spec, shape)
    block_col = next((header[k] for k in _BLOCK if k in header), None)
    block = None
    if block_col and row.get(block_col):
        raw = _number(row, block_col)
        if raw != int(raw) or not 1 <= raw <= 1 << 31:
            raise ValueError(f"{block_col}: {show(row[block_col])} is not a number of cores")
        block = int(raw)
    pipes = {}
    for norm, original in header.items():
        if norm in _PIPES and row.get(original):
            pipes[_PIPES[norm]] = _pipe_time(row, original)
    config = _config_for(spec, manifest, file_name, shape, row)
    return Measurement(where, shape, config, manifest.free, time_us, pipes, block)


def _read_pipe_utilization(path: Path, records: Iterator[Record], header: Mapping[str, str],
                           spec: OperatorSpec, manifest: Manifest,
                           skipped: list[str]) -> list[Measurement]:
    entry = manifest.per_file.get(path.name)
    if entry is None or "shape" not in entry:
        skipped.append(f"{path}: PipeUtilization.csv has no shapes; the manifest needs "
                       f"files: {{{path.name}: {{shape: {{...}}, config: {{...}}}}}}")
        return []
    # A manifest shape that does not fit the spec is a mistake in the manifest: an error.
    shape = check_shape(spec, entry["shape"], f"{entry.get('origin', 'manifest')}: "
                                              f"files.{path.name}.shape")
    time_us = 0.0
    pipes: dict[str, float] = {}
    for line, row in records:
        try:
            totals = [_pipe_time(row, header[t]) for t in ("aic_time(us)", "aiv_time(us)")
                      if t in header and row.get(header[t])]
            found = {_PIPES[norm]: _pipe_time(row, original) for norm, original in header.items()
                     if norm in _PIPES and row.get(original)}
        except ValueError as exc:
            skipped.append(f"{path}:{line}: {exc}")
            continue
        except _BadTime as exc:
            raise _refused(f"{path}:{line}", exc) from None
        time_us = max([time_us, *totals])
        for col, value in found.items():
            pipes[col] = max(pipes.get(col, 0.0), value)
    time_us = entry.get("time_us", time_us)
    if time_us <= 0:
        skipped.append(f"{path}: no aic_time(us)/aiv_time(us) and no time_us in the manifest")
        return []
    try:
        config = _config_for(spec, manifest, path.name, shape, {})
    except ValueError as exc:
        skipped.append(f"{path}: {exc}")
        return []
    return [Measurement(f"{path}", shape, config, manifest.free, time_us, pipes)]


# The registry of measurement layouts, tried in order (the first whose ``matches`` accepts the
# header reads the file; the last accepts any header and explains per row what it misses).
# tests/test_registries.py holds every reader to the same checks.
READERS: tuple[Reader, ...] = (
    Reader("pipe_utilization", "msprof op PipeUtilization.csv: one row per block, shape and "
           "configuration from the manifest",
           lambda header: "block_id" in header and "sub_block_id" in header,
           _read_pipe_utilization),
    Reader("summary", "one row per kernel launch: msprof op_summary, torch_npu "
           "kernel_details, or a plain CSV with shape columns and time_us",
           lambda header: True, _read_summary),
)
