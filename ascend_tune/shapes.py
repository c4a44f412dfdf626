"""Shape lists: YAML or JSON lists of mappings, CSV with one column per shape variable, or
``--shape K=V,...`` on the command line."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ascend_tune.errors import AscendTuneError
from ascend_tune.spec import OperatorSpec, check_shape, parse_assignments, shape_key
from ascend_tune.yamlio import parse_yaml, read_text


def load_shape_file(path: Path, spec: OperatorSpec) -> list[dict[str, int]]:
    text = read_text(path, "shape file")
    origin = str(path)
    rows: list[Any]
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        rows = []
        for line_no, row in enumerate(reader, start=2):
            parsed: dict[str, Any] = {}
            for k, v in row.items():
                if k is None:
                    raise AscendTuneError(f"{origin}:{line_no}: more values than columns")
                try:
                    parsed[k.strip()] = int((v or "").strip())
                except ValueError:
                    raise AscendTuneError(f"{origin}:{line_no}: {k}: '{v}' is not an "
                                          "integer") from None
            rows.append((f"{origin}:{line_no}", parsed))
    else:
        if path.suffix.lower() == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise AscendTuneError(f"{origin}:{exc.lineno}: malformed JSON: {exc.msg}") from None
        else:
            data, _ = parse_yaml(text, origin)
        if isinstance(data, dict) and "shapes" in data:
            data = data["shapes"]
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise AscendTuneError(f"{origin}: expected a list of mappings like "
                                  f"{{{', '.join(f'{v}: 1024' for v in spec.shape_vars)}}}")
        rows = [(f"{origin}: shapes.{i}", r) for i, r in enumerate(data)]
    if not rows:
        raise AscendTuneError(f"{origin}: no shapes")
    return [check_shape(spec, r, where) for where, r in rows]


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
