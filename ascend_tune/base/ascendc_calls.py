"""AscendC vector API calls -> the model's vector instruction class, with where each class's
cost comes from. A vector stage may name the call its kernel makes (``call: Maxs``) instead
of the class (``op: unary``); an unknown call is an error naming it.

The classes' cycles per 256-byte repeat are the profile's ``vector.cycles_per_repeat``
(hw_profiles/*.yaml, each with its source). The sources named here are those of
shared/reference/performance_model.md and ascend_hardware.md: **S7** the asc-devkit "Vector
instruction theoretical performance" table for A2/A3 (binary ops VADD/VSUB/VMUL/VMAX/VMIN
128 B/cycle, scalar-operand and unary ops VADDS/VMULS/VMAXS/VABS/VRELU/VREC/VRSQRT/VCONV
about 256 B/cycle, VEXP/VLN and VSQRT 64/128, whole reductions VCADD/VCMAX ~36.5); **S5**
measured microbenchmarks (VDIV, VMLA/VMADD); **ATT** GE autofuse perf_param_v1.cpp per-API
costs (k x elements + b: Sigmoid, Tanh, Erf, Cast).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VectorCall:
    name: str
    op: str  # the vocabulary.VECTOR_CLASSES class it is costed as
    source: str  # where the class's cost for this call comes from


def _calls(op: str, source: str, *names: str) -> list[VectorCall]:
    return [VectorCall(n, op, source) for n in names]


VECTOR_CALLS: dict[str, VectorCall] = {c.name: c for c in (
    *_calls("binary", "S7 binary ops (VADD, VSUB, VMUL, VMAX, VMIN, VSEL, VCMP): 128 B/cycle; "
            "two sources pay the UB bank-conflict factor (S5)",
            "Add", "Sub", "Mul", "Max", "Min", "And", "Or", "Select", "Compare"),
    *_calls("unary", "S7 scalar-operand and unary ops (VADDS, VMULS, VMAXS, VABS, VRELU, VREC, "
            "VRSQRT, VECTORDUP, VCOPY): ~256 B/cycle",
            "Adds", "Muls", "Maxs", "Mins", "Abs", "Relu", "LeakyRelu", "Reciprocal", "Rsqrt",
            "Not", "Duplicate", "Copy"),
    *_calls("exp", "S7 VEXP, VLN (VSQRT has the same rate): 64 B/cycle fp16, 128 fp32",
            "Exp", "Ln", "Sqrt"),
    *_calls("div", "S5 measured VDIV: 62 / 64 B/cycle", "Div"),
    *_calls("reduce", "S7 whole reductions (VCADD, VCMAX): ~36.5 B/cycle",
            "ReduceSum", "ReduceMax", "ReduceMin", "WholeReduceSum", "WholeReduceMax",
            "WholeReduceMin", "BlockReduceSum", "BlockReduceMax", "BlockReduceMin"),
    *_calls("fma", "S5 measured VMLA / VMADD: 42.7 B/cycle", "MulAddDst", "Axpy", "FusedMulAdd"),
    *_calls("sigmoid", "ATT v1 Sigmoid: 0.101 / 0.126 cycles per element", "Sigmoid"),
    *_calls("tanh", "ATT v1 Tanh: 0.198 / 0.157 cycles per element", "Tanh"),
    *_calls("erf", "ATT v1 Erf: 0.70 / 0.60 cycles per element", "Erf"),
    *_calls("cast", "S7 VCONV; ATT v1 Cast f16->f32 0.0147, f32->f16 0.0087 cycles per element",
            "Cast"),
)}
