"""The emitted code of operator attributes (spec ``attrs:``): the OpDef declarations
(``this->Attr("negative_slope").AttrType(OPTIONAL).Float(0.0)``), and ``ReadAttrs``, which
reads each one from the tiling context as a CANN host does
(``context->GetAttrs()->GetAttrPointer<float>(index)``, index = declaration order), refuses a
missing one or one outside its bounds, computes the derived values built on them and checks
the tiling fields they feed against their C types; ``FillTiling`` then writes those fields.
"""

from __future__ import annotations

from typing import Any

from ascend_tune.base import cann
from ascend_tune.emit.cpp_text import _bound, _ctype, _literal, cpp, cpp_member
from ascend_tune.spec import Field, OperatorSpec

# attribute type -> (C++ type held, GetAttrPointer type, OpDef setter)
ATTR_CPP = {"float": ("float", "float", "Float"), "int": ("int64_t", "int64_t", "Int"),
            "bool": ("bool", "bool", "Bool")}


def field_cpp(spec: OperatorSpec, f: Field) -> str:
    """A field's value in FillTiling: attribute fields read the locals ReadAttrs computed."""
    return cpp(f.value) if set(f.value.names) & spec.attr_names else cpp_member(f.value)


def _default(kind: str, value: Any) -> str:
    if kind == "bool":
        return "true" if value else "false"
    return _literal(float(value)) if kind == "float" else str(int(value))


def context(spec: OperatorSpec) -> dict[str, Any]:
    attrs = []
    for i, a in enumerate(spec.attrs):
        held, read, setter = ATTR_CPP[a.type]
        attrs.append({"name": a.name, "index": i, "type": held, "read": read,
                      "cpp": f"v_{a.name}",
                      "opdef": f'this->Attr("{a.name}").AttrType(OPTIONAL).{setter}('
                               f"{_default(a.type, a.default)});",
                      "lo": None if a.lo is None else _bound(float(a.lo)),
                      "hi": None if a.hi is None else _bound(float(a.hi))})
    derived = [{"name": n, "cpp": f"v_{n}", "type": _ctype(e.kind), "expr": cpp(e)}
               for n, e in spec.derive if n in spec.attr_names and n not in
               {a.name for a in spec.attrs}]
    checks = []
    for f in spec.tiling_fields:
        if set(f.value.names) & spec.attr_names:
            lo, hi = cann.field_range(f.ctype)
            checks.append({"name": f"{f.name}_fits_{f.ctype}", "expr": cpp(f.value),
                           "lo": _bound(lo), "hi": _bound(hi)})
    return {"attrs": attrs, "attr_derived": derived, "attr_checks": checks}
