"""A tiny declarative schema: one description drives the loaders' key checks and the JSON
Schema files shipped for editors, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from ascend_tune.base.errors import did_you_mean
from ascend_tune.base.yamlio import KeyPath


@dataclass(frozen=True)
class Scalar:
    """A leaf. ``types`` uses JSON Schema names; 'expression' = string, number or boolean."""

    types: tuple[str, ...]
    enum: tuple[Any, ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class Obj:
    """A mapping with known keys (``fields``) and/or free keys validated by ``extra``."""

    # name -> (schema, required)
    fields: Mapping[str, tuple[Node, bool]] = field(default_factory=dict)
    extra: Node | None = None
    doc: str = ""


@dataclass(frozen=True)
class Arr:
    item: Node
    min_items: int = 0
    doc: str = ""


@dataclass(frozen=True)
class AnyOf:
    options: tuple[Node, ...]
    doc: str = ""


@dataclass(frozen=True)
class Anything:
    doc: str = ""


Node = Union[Scalar, Obj, Arr, AnyOf, Anything]

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "expression": (str, int, float, bool),
}


def _type_ok(value: Any, types: tuple[str, ...]) -> bool:
    for t in types:
        if t in ("integer", "number") and isinstance(value, bool):
            continue
        if isinstance(value, _PY_TYPES[t]):
            return True
    return False


def _loc(origin: str, lines: Mapping[KeyPath, int], path: KeyPath) -> str:
    line = None
    for cut in range(len(path), 0, -1):
        line = lines.get(path[:cut])
        if line is not None:
            break
    head = f"{origin}:{line}" if line is not None else origin
    return f"{head}: {'.'.join(path)}" if path else head


def validate(data: Any, schema: Node, origin: str, lines: Mapping[KeyPath, int],
             path: KeyPath = ()) -> list[str]:
    """Return one message per problem, each with file, line and key path."""
    errors: list[str] = []
    if isinstance(schema, Anything):
        return errors
    if isinstance(schema, AnyOf):
        for option in schema.options:
            if not validate(data, option, origin, lines, path):
                return errors
        # Report against the option closest to what was written, for a useful message.
        best = max(schema.options, key=lambda o: _closeness(data, o))
        return validate(data, best, origin, lines, path)
    if isinstance(schema, Scalar):
        if not _type_ok(data, schema.types):
            want = " or ".join(schema.types)
            errors.append(f"{_loc(origin, lines, path)}: expected {want}, "
                          f"got {_describe(data)}")
        elif schema.enum and data not in schema.enum:
            allowed = ", ".join(str(e) for e in schema.enum)
            errors.append(f"{_loc(origin, lines, path)}: '{data}' is not one of: {allowed}"
                          f"{did_you_mean(str(data), [str(e) for e in schema.enum])}")
        return errors
    if isinstance(schema, Arr):
        if not isinstance(data, list):
            errors.append(f"{_loc(origin, lines, path)}: expected a list, got {_describe(data)}")
            return errors
        if len(data) < schema.min_items:
            errors.append(f"{_loc(origin, lines, path)}: needs at least {schema.min_items} "
                          "item(s)")
        for i, item in enumerate(data):
            errors += validate(item, schema.item, origin, lines, (*path, str(i)))
        return errors
    # Obj
    if not isinstance(data, dict):
        errors.append(f"{_loc(origin, lines, path)}: expected a mapping, got {_describe(data)}")
        return errors
    for key, (_sub, required) in schema.fields.items():
        if required and key not in data:
            errors.append(f"{_loc(origin, lines, path)}: missing required key '{key}'")
    for key, value in data.items():
        if key in schema.fields:
            errors += validate(value, schema.fields[key][0], origin, lines, (*path, key))
        elif schema.extra is not None:
            errors += validate(value, schema.extra, origin, lines, (*path, key))
        else:
            allowed = ", ".join(schema.fields)
            hint = ""
            if value is None and not key.isidentifier():
                # `{count: min(a, b)}` parses as keys 'count: min(a' and ' b)': say why.
                hint = ("; a comma inside {...} splits the value: quote expressions that "
                        "contain commas")
            errors.append(f"{_loc(origin, lines, (*path, key))}: unknown key '{key}'"
                          f"{did_you_mean(key, schema.fields)}; allowed: {allowed}{hint}")
    return errors


def _closeness(data: Any, schema: Node) -> int:
    """How well a value fits an option's shape: mappings score by the keys they share."""
    if isinstance(schema, Obj):
        return 1 + sum(k in schema.fields for k in data) if isinstance(data, dict) else 0
    if isinstance(schema, Arr):
        return 1 if isinstance(data, list) else 0
    if isinstance(schema, Scalar):
        return 0 if isinstance(data, (dict, list)) else 1
    return 1


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {value!r}"


def to_json_schema(schema: Node) -> dict[str, Any]:
    """Render as JSON Schema (draft 2020-12 subset) for editors."""
    out: dict[str, Any]
    if isinstance(schema, Anything):
        out = {}
    elif isinstance(schema, AnyOf):
        out = {"anyOf": [to_json_schema(o) for o in schema.options]}
    elif isinstance(schema, Scalar):
        types: list[str] = []
        for t in schema.types:
            types += ["string", "number", "boolean"] if t == "expression" else [t]
        out = {"type": types[0] if len(types) == 1 else types}
        if schema.enum:
            out["enum"] = list(schema.enum)
    elif isinstance(schema, Arr):
        out = {"type": "array", "items": to_json_schema(schema.item)}
        if schema.min_items:
            out["minItems"] = schema.min_items
    else:
        out = {"type": "object"}
        if schema.fields:
            out["properties"] = {k: to_json_schema(v[0]) for k, v in schema.fields.items()}
            required = [k for k, v in schema.fields.items() if v[1]]
            if required:
                out["required"] = required
        out["additionalProperties"] = (to_json_schema(schema.extra)
                                       if schema.extra is not None else False)
    if schema.doc:
        out["description"] = schema.doc
    return out
