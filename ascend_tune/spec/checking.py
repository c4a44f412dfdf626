"""`ascend-tune check`: classify YAML files as spec or profile and list their problems."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.yamlio import load_yaml
from ascend_tune.hardware import load_profile
from ascend_tune.spec import OperatorSpec, load_spec


def check_files(paths: Sequence[Path]) -> list[str]:
    """One message per problem found in any file, plus clashes between the specs: they may
    all land in one operator project, where two TilingData classes with one name are an ODR
    violation (one operator serialises with the other's layout)."""
    problems: list[str] = []
    owners: dict[str, tuple[str, Path]] = {}
    for path in paths:
        found, spec = _check_file(path)
        problems += found
        if spec is None:
            continue
        owner = owners.setdefault(spec.tiling_struct, (spec.name, path))
        if owner[0] != spec.name:
            problems.append(f"{path}: tiling struct {spec.tiling_struct} of {spec.name} is "
                            f"already the tiling struct of {owner[0]} ({owner[1]}); two "
                            "operators in one project need distinct names")
    return problems


def check_file(path: Path) -> list[str]:
    """One message per problem found (empty when the file is valid)."""
    return _check_file(path)[0]


def _check_file(path: Path) -> tuple[list[str], OperatorSpec | None]:
    if path.is_dir():
        return [f"{path}: is a folder; give YAML files (e.g. {path}/*.yaml)"], None
    try:
        data, _ = load_yaml(path, "file")
    except AscendTuneError as exc:
        return [str(exc)], None
    try:
        if isinstance(data, dict) and "operator" in data:
            return [], load_spec(str(path))
        if isinstance(data, dict) and ("chip" in data or "base" in data):
            load_profile(str(path))
            return [], None
        return [f"{path}: neither an operator spec (has 'operator') nor a hardware "
                "profile (has 'chip' or 'base')"], None
    except AscendTuneError as exc:
        return [str(exc)], None
