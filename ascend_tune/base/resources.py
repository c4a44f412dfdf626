"""Where the built-in operator specs, hardware profiles and templates live.

In an installed wheel they sit in ``ascend_tune/_data``; in a source checkout (or an
editable install) they are the top-level folders of the repository. This module is the only
code that knows.
"""

from __future__ import annotations

from pathlib import Path

# This file is ascend_tune/base/resources.py: the package is two folders up.
_PACKAGE = Path(__file__).resolve().parent.parent


def data_dir(kind: str) -> Path:
    """Folder of built-in ``operator_specs``, ``hw_profiles`` or ``templates``."""
    installed = _PACKAGE / "_data" / kind
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / kind


def builtin_names(kind: str, suffix: str = ".yaml") -> list[str]:
    folder = data_dir(kind)
    if not folder.is_dir():
        return []
    return sorted(p.name[: -len(suffix)] for p in folder.iterdir() if p.name.endswith(suffix))


def resolve(kind: str, name_or_path: str) -> Path:
    """A path as given if it exists (or looks like a path), else the built-in of that name."""
    path = Path(name_or_path)
    if path.is_file() or path.suffix in (".yaml", ".yml", ".json") or "/" in name_or_path:
        return path
    return data_dir(kind) / f"{name_or_path}.yaml"
