"""Operator specs: the YAML that describes one kernel, and what it compiles to.

The contract:

- **Spec language -> OperatorSpec.** A spec (``operator_specs/*.yaml`` or any file, optionally
  ``NAME:VARIANT``) is checked against :data:`SPEC_SCHEMA` and compiled section by section into
  a frozen :class:`OperatorSpec`; every expression is checked against the names visible at its
  place (``hw.*``, ``sizeof.*``, shape variables, parameters, derived values), and an error
  names the file, line and key path. :func:`meaning_sha256` hashes what a spec means, not its
  bytes. The language is documented in ``docs/spec_reference.md``.
- **Shapes** (:mod:`ascend_tune.spec.shapes`): checking one shape against a spec's variables
  and ranges, its text key, ``K=V,...`` assignments and shape files (YAML, JSON, CSV).
- **Launch checks** (:mod:`ascend_tune.spec.launch`): what every configuration must pass
  besides the spec's constraints (core counts, block dim, tiling fields within their C types),
  the same list for the search, the run-time selection and the emitted C++.
- **Checking files** (:mod:`ascend_tune.spec.checking`): ``ascend-tune check`` classifies YAML
  files as spec or hardware profile and lists their problems;
  :mod:`ascend_tune.spec.schema_files` generates the JSON Schemas shipped for editors.

Modules: :mod:`~ascend_tune.spec.format` (the file format: schema, allowed keys, C++ name
rules), :mod:`~ascend_tune.spec.model` (the frozen :class:`OperatorSpec` and its parts),
:mod:`~ascend_tune.spec.compile` (YAML text to :class:`OperatorSpec`, one step per section, with
:mod:`~ascend_tune.spec.compile_context`, :mod:`~ascend_tune.spec.compile_pipeline` and
:mod:`~ascend_tune.spec.compile_kernel`), :mod:`~ascend_tune.spec.library` (the built-in specs
and ``NAME:VARIANT`` references). This package re-exports the names of ``format``, ``model``,
``compile`` and ``library`` that callers use; import shapes, launch checks and file checking
from their modules (they import this package, not the other way round).
"""

from __future__ import annotations

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
    "end_pipes",
    "evaluate_baseline",
    "hw_symbols",
    "load_spec",
    "load_spec_text",
    "meaning_sha256",
    "needed_derived",
    "round_half_up",
    "snake_case",
    "spec_paths",
    "split_variant",
]

