"""The calibrated profile as written: the base profile plus sourced overrides, each naming the
fit's rows (split from :mod:`ascend_tune.calibrate.fit`)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ascend_tune.calibrate.coefficients import BY_NAME, leaf
from ascend_tune.calibrate.result import FitResult, compress_origins
from ascend_tune.results import format as results


def _short(value: Any) -> str:
    text = json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= 90 else text[:87] + "..."


def profile_document(result: FitResult, base_ref: str, name: str, files: Sequence[str],
                     rows_used: int, rows_skipped: int) -> dict[str, Any]:
    """The calibrated profile as YAML-ready data: the base plus sourced overrides. Each
    overridden leaf's note keeps the sourced value it replaces and names its fit rows."""
    doc: dict[str, Any] = {"name": name, "base": base_ref,
                           "description": f"{base_ref} calibrated by ascend-tune"}
    for coef_name in result.fitted:
        coef = BY_NAME[coef_name]
        factor = result.scales[coef_name]
        if abs(factor - 1.0) < 1e-6:
            continue
        origins = result.rows_by_coefficient.get(coef_name, [])
        for path in coef.leaves:
            target = doc
            for key in path[:-1]:
                target = target.setdefault(key, {})
            base_leaf = leaf(result.base_data, path) if result.base_data else {}
            interval = result.intervals.get(coef_name)
            within = (f" (95 % interval x{interval.low:.4g}..x{interval.high:.4g})"
                      if interval is not None and interval.percent < 1e6 else "")
            target[path[-1]] = {
                "value": leaf(result.data, path)["value"],
                "source": f"calibrated: {coef.doc} x{factor:.4g} of {base_ref}, fitted on "
                          f"{len(origins)} of {rows_used} measurement(s){within}",
                "confidence": "med",
                "note": f"sourced value in {base_ref}: {_short(base_leaf.get('value'))} "
                        f"({str(base_leaf.get('source', '')).strip()[:120]}); fit rows: "
                        f"{'; '.join(compress_origins(origins)) or 'none'}",
            }
    fit_doc = result.document()
    doc["calibration"] = {
        "files": list(files),
        "rows_used": rows_used,
        "rows_skipped": rows_skipped,
        **fit_doc,
    }
    return doc


def write_profile(output: Path, result: FitResult, hw_ref: str, name: str, files: Sequence[str],
                  rows_used: int, rows_skipped: int) -> None:
    """Write the calibrated profile to ``output``. Its base is ``hw_ref``: a built-in name as
    given, a profile file as a path relative to the output's folder."""
    hw_path = Path(hw_ref)
    base_ref = (os.path.relpath(hw_path.resolve(), output.resolve().parent)
                if hw_path.is_file() else hw_ref)
    doc = profile_document(result, base_ref, name, files, rows_used, rows_skipped)
    results.write_atomic(output, yaml.safe_dump(doc, sort_keys=False, width=100))
