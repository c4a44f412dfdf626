"""Measurement rows as `calibrate` and `validate` take them: the manifest with the command
line's ``--where`` filter on top, the files loaded, and rows the model rejects on the profile
moved to the skipped list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate import measurements
from ascend_tune.calibrate.fit import split_valid
from ascend_tune.calibrate.measurements import LoadReport
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import OperatorSpec


def parse_where(text: str) -> dict[str, str]:
    """``COLUMN=VALUE,...`` as a mapping (names and values stripped of spaces)."""
    pairs = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise AscendTuneError(f"--where '{text}': expected COLUMN=VALUE pairs")
        pairs[key.strip()] = value.strip()
    return pairs


def load_rows(files: Sequence[Path], spec: OperatorSpec, hw: HardwareProfile,
              manifest_path: Path | None, where: str | None) -> LoadReport:
    """Every row of ``files`` the manifest and ``where`` select; rows that do not load or
    that the model rejects are in ``skipped`` with their reason. May hold no usable row: see
    ``require_rows``."""
    manifest = measurements.load_manifest(manifest_path)
    if where:
        manifest = replace(manifest, where={**manifest.where, **parse_where(where)})
    report = measurements.read_files(list(files), spec, manifest)
    report.rows, invalid = split_valid(spec, hw, report.rows)
    report.skipped += invalid
    return report


def require_rows(report: LoadReport, files: Sequence[Path]) -> None:
    """Refuse a load that left nothing to fit or compare against."""
    if not report.rows:
        first = f"; first: {report.skipped[0]}" if report.skipped else ""
        raise AscendTuneError(f"no usable measurement row in {', '.join(map(str, files))} "
                              f"({len(report.skipped)} skipped{first})")
