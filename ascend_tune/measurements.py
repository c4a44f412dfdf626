"""Read measured kernel times (msprof, msprof op, torch_npu, plain CSV) into model-ready rows.

Layouts (column names from performance_model.md §2.4, matched after stripping spaces and case):

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

import csv
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_tune.engine import PIPE_COLUMNS
from ascend_tune.errors import AscendTuneError
from ascend_tune.spec import OperatorSpec, shape_key
from ascend_tune.yamlio import load_yaml, read_text

# normalised header -> model pipe column
_PIPES = {
    "aic_mac_time(us)": "aic_mac_time_us", "aic_cube_time(us)": "aic_mac_time_us",
    "aic_mte1_time(us)": "aic_mte1_time_us", "aic_mte2_time(us)": "aic_mte2_time_us",
    "aic_fixpipe_time(us)": "aic_fixpipe_time_us", "aic_scalar_time(us)": "aic_scalar_time_us",
    "aiv_vec_time(us)": "aiv_vec_time_us", "aiv_mte2_time(us)": "aiv_mte2_time_us",
    "aiv_mte3_time(us)": "aiv_mte3_time_us", "aiv_scalar_time(us)": "aiv_scalar_time_us",
    **{c: c for c in PIPE_COLUMNS},
}
_DURATION = ("taskduration(us)", "duration(us)", "time_us")
_BLOCK = ("blockdim", "blocknum")
_FROM = re.compile(r"^input(\d+)\.(size|rows|last|dim(\d+))$")


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


@dataclass
class LoadReport:
    rows: list[Measurement]
    skipped: list[str]  # one "file:line: reason" per bad row
    files: list[str]


@dataclass(frozen=True)
class Manifest:
    default: Mapping[str, int]
    free: tuple[str, ...]
    per_file: Mapping[str, Mapping[str, Any]]
    per_shape: Mapping[str, Mapping[str, int]]
    where: Mapping[str, str]


def load_manifest(path: Path | None) -> Manifest:
    if path is None:
        return Manifest({}, (), {}, {}, {})
    data, _ = load_yaml(path, "manifest")
    if not isinstance(data, dict):
        raise AscendTuneError(f"{path}: manifest must be a mapping")
    allowed = {"config", "free", "files", "shapes", "where"}
    for key in data:
        if key not in allowed:
            raise AscendTuneError(f"{path}: unknown manifest key '{key}'; allowed: "
                                  f"{', '.join(sorted(allowed))}")
    free = data.get("free") or []
    if not isinstance(free, list) or not all(isinstance(f, str) for f in free):
        raise AscendTuneError(f"{path}: free: expected a list of parameter names")
    return Manifest(dict(data.get("config") or {}), tuple(free), dict(data.get("files") or {}),
                    dict(data.get("shapes") or {}),
                    {str(k): str(v) for k, v in (data.get("where") or {}).items()})


def _parse_input_shapes(text: str) -> list[list[int]]:
    tensors = []
    for part in text.strip().strip('"').split(";"):
        part = part.strip()
        tensors.append([int(d) for d in part.split(",") if d.strip()] if part else [])
    return tensors


def _shape_from_inputs(spec: OperatorSpec, tensors: Sequence[Sequence[int]]) -> dict[str, int]:
    out = {}
    for var in spec.shape_vars:
        source = spec.shape_from.get(var, "")
        m = _FROM.match(source)
        if not m:
            raise ValueError(f"shape variable {var} has no 'from: inputN...' to read it from "
                             "Input Shapes")
        idx = int(m.group(1))
        if idx >= len(tensors) or not tensors[idx]:
            raise ValueError(f"Input Shapes has no tensor {idx}")
        dims = tensors[idx]
        kind = m.group(2)
        size = 1
        for d in dims:
            size *= d
        if kind == "size":
            out[var] = size
        elif kind == "last":
            out[var] = dims[-1]
        elif kind == "rows":
            out[var] = size // dims[-1] if dims[-1] else 0
        else:
            d = int(m.group(3))
            if d >= len(dims):
                raise ValueError(f"tensor {idx} has {len(dims)} dims, {var} reads dim {d}")
            out[var] = dims[d]
    return out


def _config_for(spec: OperatorSpec, manifest: Manifest, file_name: str,
                shape: Mapping[str, int], row: Mapping[str, str]) -> dict[str, int]:
    config: dict[str, int] = {}
    config.update({k: int(v) for k, v in manifest.default.items()})
    per_file = manifest.per_file.get(file_name, {})
    config.update({k: int(v) for k, v in (per_file.get("config") or {}).items()})
    config.update({k: int(v) for k, v in manifest.per_shape.get(shape_key(shape), {}).items()})
    for p in spec.params:
        value = row.get(p)
        if value not in (None, ""):
            config[p] = int(value)
    unknown = [k for k in config if k not in spec.params]
    if unknown:
        raise ValueError(f"unknown parameter '{unknown[0]}' for {spec.name}")
    return config


def load(paths: Sequence[Path], spec: OperatorSpec, manifest: Manifest) -> LoadReport:
    rows: list[Measurement] = []
    skipped: list[str] = []
    for path in paths:
        text = read_text(path, "measurement file")
        reader = csv.DictReader(io.StringIO("\n".join(
            line for line in text.splitlines() if not line.startswith("#"))))
        if reader.fieldnames is None:
            skipped.append(f"{path}: empty file")
            continue
        header = {_norm(h): h for h in reader.fieldnames if h is not None}
        per_block = "block_id" in header and "sub_block_id" in header
        if per_block:
            rows += _load_pipe_utilization(path, reader, header, spec, manifest, skipped)
            continue
        # Comment lines were dropped above, so line numbers count data lines after the header.
        comment_lines = sum(1 for line in text.splitlines() if line.startswith("#"))
        for i, raw in enumerate(reader, start=2 + comment_lines):
            where = f"{path}:{i}"
            try:
                row = {k: (v or "").strip() for k, v in raw.items() if k is not None}
                if not _where_ok(row, manifest.where):
                    continue
                rows.append(_summary_row(where, path.name, row, header, spec, manifest))
            except (ValueError, KeyError) as exc:
                skipped.append(f"{where}: {exc}")
    return LoadReport(rows, skipped, [str(p) for p in paths])


def _where_ok(row: Mapping[str, str], where: Mapping[str, str]) -> bool:
    return all(row.get(k) == v for k, v in where.items())


def _summary_row(where: str, file_name: str, row: Mapping[str, str], header: Mapping[str, str],
                 spec: OperatorSpec, manifest: Manifest) -> Measurement:
    duration_col = next((header[k] for k in _DURATION if k in header), None)
    if duration_col is None:
        raise ValueError("no Task Duration(us), Duration(us) or time_us column")
    time_us = float(row[duration_col])
    if not time_us > 0:
        raise ValueError(f"time {time_us} is not positive")
    if all(v in row for v in spec.shape_vars):
        shape = {v: int(row[v]) for v in spec.shape_vars}
    elif "inputshapes" in header:
        shape = _shape_from_inputs(spec, _parse_input_shapes(row[header["inputshapes"]]))
    else:
        raise ValueError(f"no shape: neither columns {', '.join(spec.shape_vars)} nor "
                         "Input Shapes")
    block_col = next((header[k] for k in _BLOCK if k in header), None)
    block = int(float(row[block_col])) if block_col and row.get(block_col) else None
    pipes = {}
    for norm, original in header.items():
        if norm in _PIPES and row.get(original) not in (None, ""):
            pipes[_PIPES[norm]] = float(row[original])
    config = _config_for(spec, manifest, file_name, shape, row)
    return Measurement(where, shape, config, manifest.free, time_us, pipes, block)


def _load_pipe_utilization(path: Path, reader: csv.DictReader[str], header: Mapping[str, str],
                           spec: OperatorSpec, manifest: Manifest,
                           skipped: list[str]) -> list[Measurement]:
    entry = manifest.per_file.get(path.name)
    if entry is None or "shape" not in entry:
        skipped.append(f"{path}: PipeUtilization.csv has no shapes; the manifest needs "
                       f"files: {{{path.name}: {{shape: {{...}}, config: {{...}}}}}}")
        return []
    shape = {k: int(v) for k, v in entry["shape"].items()}
    time_us = 0.0
    pipes: dict[str, float] = {}
    for i, raw in enumerate(reader, start=2):
        try:
            for total in ("aic_time(us)", "aiv_time(us)"):
                if total in header and raw.get(header[total]):
                    time_us = max(time_us, float(raw[header[total]]))
            for norm, original in header.items():
                if norm in _PIPES and raw.get(original):
                    col = _PIPES[norm]
                    pipes[col] = max(pipes.get(col, 0.0), float(raw[original]))
        except ValueError as exc:
            skipped.append(f"{path}:{i}: {exc}")
    if "taskduration(us)" in {k.lower() for k in entry}:
        time_us = float(entry["Task Duration(us)"])
    time_us = float(entry.get("time_us", time_us))
    if time_us <= 0:
        skipped.append(f"{path}: no aic_time(us)/aiv_time(us) and no time_us in the manifest")
        return []
    config = _config_for(spec, manifest, path.name, shape, {})
    return [Measurement(f"{path}", shape, config, manifest.free, time_us, pipes)]
