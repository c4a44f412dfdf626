"""Profiles as people read them: every leaf with its source and confidence, and the list of
built-in profiles (what ``hw show`` and ``hw list`` print)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ascend_tune.hardware.load import load_profile, profile_paths
from ascend_tune.hardware.profile import HardwareProfile


def sourced_leaves(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any, str, str]]:
    """Flatten a merged profile to (key path, value, source, confidence) rows."""
    rows: list[tuple[str, Any, str, str]] = []
    for key, value in data.items():
        if key in ("name", "base", "description", "sources", "calibration"):
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict) and "value" in value:
            rows.append((path, value["value"], str(value.get("source", "")),
                         str(value.get("confidence", ""))))
        elif isinstance(value, dict):
            rows += sourced_leaves(value, path + ".")
    return rows


def builtin_summaries() -> list[dict[str, Any]]:
    """The headline numbers of every built-in profile (what `hw list` shows)."""
    rows = []
    for path in profile_paths():
        p = load_profile(str(path))
        rows.append({"name": p.name, "clock_mhz": p["clock_mhz"],
                     "cube_cores": p["cube_cores"], "vector_cores": p["vector_cores"],
                     "ub_bytes": p["ub_bytes"], "l1_bytes": p["l1_bytes"],
                     "hbm_bandwidth_gbps": p["hbm_bandwidth_gbps"],
                     "description": p.description})
    return rows


def show_document(p: HardwareProfile) -> dict[str, Any]:
    """Every number of a profile with its source and confidence (what `hw show --json` prints)."""
    return {"name": p.name, "description": p.description, "sha256": p.sha256,
            "sources": p.data.get("sources", {}),
            "values": {k: {"value": v, "source": s, "confidence": c}
                       for k, v, s, c in sourced_leaves(p.data)}}
