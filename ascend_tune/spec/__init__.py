"""Operator specs: the YAML that describes one kernel, and what it compiles to.

- :mod:`~ascend_tune.spec.format`: the file format (schema, allowed keys, C++ name rules).
- :mod:`~ascend_tune.spec.model`: the frozen :class:`OperatorSpec` and its parts.
- :mod:`~ascend_tune.spec.compile`: YAML text to :class:`OperatorSpec`, one step per section.
- :mod:`~ascend_tune.spec.library`: the built-in specs and ``NAME:VARIANT`` references.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ascend_tune.base.vocabulary import DTYPE_BYTES, PIPES
from ascend_tune.spec.compile import hw_symbols, load_spec_text, meaning_sha256
from ascend_tune.spec.format import (
    CPP_IDENT,
    CPP_KEYWORDS,
    FIELD_TYPES,
    MAX_DOMAIN_VALUES,
    SPEC_SCHEMA,
)
from ascend_tune.spec.library import load_spec, spec_paths, split_variant
from ascend_tune.spec.model import (
    Domain,
    Field,
    Loop,
    Nested,
    OperatorSpec,
    OutputDef,
    ShapeSource,
    Side,
    Stage,
    end_pipes,
    evaluate_baseline,
    needed_derived,
    round_half_up,
    snake_case,
)

if TYPE_CHECKING:
    from ascend_tune.spec.shapes import check_shape, parse_assignments, shape_key

__all__ = [
    "CPP_IDENT",
    "CPP_KEYWORDS",
    "DTYPE_BYTES",
    "FIELD_TYPES",
    "MAX_DOMAIN_VALUES",
    "PIPES",
    "SPEC_SCHEMA",
    "Domain",
    "Field",
    "Loop",
    "Nested",
    "OperatorSpec",
    "OutputDef",
    "ShapeSource",
    "Side",
    "Stage",
    "check_shape",
    "end_pipes",
    "evaluate_baseline",
    "hw_symbols",
    "load_spec",
    "load_spec_text",
    "meaning_sha256",
    "needed_derived",
    "parse_assignments",
    "round_half_up",
    "shape_key",
    "snake_case",
    "spec_paths",
    "split_variant",
]

# Shape helpers that used to live here; they are in ascend_tune.spec.shapes now (which imports this
# package, so they are fetched on first use rather than at import).
_MOVED_TO_SHAPES = ("check_shape", "parse_assignments", "shape_key")


def __getattr__(name: str) -> Any:
    if name in _MOVED_TO_SHAPES:
        from ascend_tune.spec import shapes

        return getattr(shapes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
