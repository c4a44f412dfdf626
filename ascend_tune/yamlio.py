"""Read YAML/JSON files into plain Python data plus a line number for every mapping key.

Line numbers let error messages point at ``spec.yaml:42``. Duplicate keys, which PyYAML
silently merges, are rejected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ascend_tune.errors import AscendTuneError

KeyPath = tuple[str, ...]


def read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AscendTuneError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise AscendTuneError(f"{path}: is a folder, expected a {what} file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AscendTuneError(f"{path}: cannot read {what}: {exc}") from None


def parse_yaml(text: str, origin: str) -> tuple[Any, dict[KeyPath, int]]:
    """Parse ``text``; return the data and a map from key path to 1-based line number."""
    lines: dict[KeyPath, int] = {}
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = _convert(loader, node, (), lines, origin) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        loc = f"{origin}:{mark.line + 1}" if mark is not None else origin
        raise AscendTuneError(f"{loc}: malformed YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise AscendTuneError(f"{origin}: malformed YAML: {exc}") from None
    finally:
        loader.dispose()
    return data, lines


def _convert(loader: yaml.SafeLoader, node: yaml.Node, path: KeyPath,
             lines: dict[KeyPath, int], origin: str) -> Any:
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise AscendTuneError(f"{origin}:{key_node.start_mark.line + 1}: "
                                      f"mapping keys must be names, got {key!r}")
            skey = str(key)
            if skey in out:
                raise AscendTuneError(f"{origin}:{key_node.start_mark.line + 1}: "
                                      f"duplicate key '{'.'.join((*path, skey))}'")
            key_path = (*path, skey)
            lines[key_path] = key_node.start_mark.line + 1
            out[skey] = _convert(loader, value_node, key_path, lines, origin)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(loader, item, (*path, str(i)), lines, origin)
                for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def load_yaml(path: Path, what: str) -> tuple[Any, dict[KeyPath, int]]:
    return parse_yaml(read_text(path, what), str(path))
