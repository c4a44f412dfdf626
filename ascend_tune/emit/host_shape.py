"""How the emitted host file reads each shape variable from the operator's inputs (the spec's
``from: inputN.size | rows | last | dimD``)."""

from __future__ import annotations

from ascend_tune.spec import OperatorSpec


def shape_from(spec: OperatorSpec) -> list[dict[str, str]] | None:
    """Per shape variable, the input to read and the C++ statements that read it (a missing
    dimension fails the TilingFunc rather than reading as 0)."""
    out = []
    pad = " " * 8
    for v in spec.shape_vars:
        src = spec.shape_from.get(v)
        if src is None:
            return None
        target = f"{pad}shape.{v} = "
        if src.kind == "size":
            read = f"{target}static_cast<int64_t>(dims.GetShapeSize());"
        else:
            rank = src.dim + 1 if src.dim is not None else 1
            read = f"{pad}if (dims.GetDimNum() < {rank}) return ge::GRAPH_FAILED;\n"
            if src.kind == "last":
                read += f"{target}static_cast<int64_t>(dims.GetDim(dims.GetDimNum() - 1));"
            elif src.kind == "rows":
                read += (f"{pad}const int64_t last = static_cast<int64_t>("
                         f"dims.GetDim(dims.GetDimNum() - 1));\n"
                         f"{target}last == 0 ? 0 : "
                         "static_cast<int64_t>(dims.GetShapeSize()) / last;")
            else:
                read += f"{target}static_cast<int64_t>(dims.GetDim({src.dim}));"
        out.append({"input": str(src.input), "read": read})
    return out
