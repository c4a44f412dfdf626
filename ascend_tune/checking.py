"""`ascend-tune check`: classify a YAML file as spec or profile and list its problems."""

from __future__ import annotations

from pathlib import Path

from ascend_tune.errors import AscendTuneError
from ascend_tune.hardware import load_profile
from ascend_tune.spec import load_spec
from ascend_tune.yamlio import load_yaml


def check_file(path: Path) -> list[str]:
    """One message per problem found (empty when the file is valid)."""
    try:
        data, _ = load_yaml(path, "file")
    except AscendTuneError as exc:
        return [str(exc)]
    try:
        if isinstance(data, dict) and "operator" in data:
            load_spec(str(path))
        elif isinstance(data, dict) and ("chip" in data or "base" in data):
            load_profile(str(path))
        else:
            return [f"{path}: neither an operator spec (has 'operator') nor a hardware "
                    "profile (has 'chip' or 'base')"]
    except AscendTuneError as exc:
        return [str(exc)]
    return []
