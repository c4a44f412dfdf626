"""What each emitted tiling field means: the comment above it in the header (its value's
derivation), and the warning ``emit`` gives when a field carries the name of a common AscendC
sample's field (AddCustom, LeakyReluCustom: totalLength, tileNum, blockLength, tileLength) but
not the sample's derivation, so that a kernel written like the sample would misread it.

A spec says what it means with ``meaning:`` on the field: ``own`` (a different meaning on
purpose, no warning; the comment says so) or ``sample`` (checked like an unmarked field). The
sample's derivations (shared/reference/cann_integration.md section 4, ascendc_tiling.md 6.1):
``totalLength`` is input 0's element count, the kernel computes ``blockLength = totalLength /
GetBlockNum()`` and ``tileLength = blockLength / tileNum / BUFFER_NUM``, exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ascend_tune.emit.bundle import Bundle
from ascend_tune.emit.selection import derive, runtime_env
from ascend_tune.expr import scalar_value
from ascend_tune.spec import Field, OperatorSpec, needed_derived
from ascend_tune.spec.shapes import shape_key

SAMPLE_FIELDS = {
    "totalLength": "the element count of input 0",
    "blockLength": "totalLength / GetBlockNum(), exactly",
    "tileNum": "tiles per core before the double-buffer split: tileLength = blockLength / "
               "tileNum / BUFFER_NUM, exactly",
    "tileLength": "blockLength / tileNum / BUFFER_NUM, exactly",
}
# Entries of a results file the derivations are compared on (the first ones, in file order).
ENTRIES_COMPARED = 64
COMMENT_CHARS = 110


def _text(text: str) -> str:
    """Input text in a C++ line comment: printable ASCII, no line breaks, bounded."""
    out = "".join(ch if " " <= ch <= "~" else "?" for ch in text).replace("\\", "/")
    while "??" in out:  # no trigraph (??/ would splice the next line into the comment)
        out = out.replace("??", "?")
    return out[:COMMENT_CHARS]


def field_comment(spec: OperatorSpec, f: Field) -> list[str]:
    """The comment lines above one emitted field: its doc, its value, the derived values that
    value reads (in derive order), and whether a sample-named field means the sample's."""
    lines = [f"{f.name}: {f.doc}"] if f.doc else []
    text = f.value.source
    source = spec.shape_from.get(text)
    kind = (f" (shape variable, from {source})" if source is not None else
            " (tuned parameter)" if text in spec.params else
            " (attribute)" if any(a.name == text for a in spec.attrs) else "")
    lines.append(f"{f.name} = {text}{kind}")
    lines += [f"  {n} = {e.source}" for n, e in needed_derived(spec, [f.value])[-6:]]
    if f.name in SAMPLE_FIELDS and f.meaning == "own":
        lines.append(f"  not the AscendC sample's {f.name} ({SAMPLE_FIELDS[f.name]})")
    elif f.name in SAMPLE_FIELDS and f.meaning == "sample":
        lines.append(f"  the AscendC sample's {f.name}: {SAMPLE_FIELDS[f.name]}")
    if set(f.value.names) & spec.attr_names:
        lines.append("  from the operator's attributes (read by the TilingFunc)")
    return ["// " + _text(line) for line in lines]


def _buffer_num(local: Mapping[str, Any], spec: OperatorSpec) -> int:
    for name in ("BUFFER_NUM", "bufferNum"):
        if name in local:
            return int(local[name])
    consts = dict(spec.kernel_constants)
    return int(scalar_value(consts["BUFFER_NUM"].evaluate({}))) if "BUFFER_NUM" in consts else 2


def _sample_values(spec: OperatorSpec, local: Mapping[str, Any], shape: Mapping[str, int],
                   fields: Mapping[str, int | float]) -> dict[str, float | None]:
    """What each sample field would hold on this shape and launch (None: not known)."""
    total = next((shape[v] for v, src in spec.shape_from.items()
                  if src.input == 0 and src.kind == "size"), None)
    cores = int(scalar_value(spec.block_dim.evaluate(local)))
    block = total / cores if total is not None and cores else None
    bufs = _buffer_num(local, spec)
    tiles = fields.get("tileNum")
    tile = block / tiles / bufs if block is not None and tiles else None
    if "tileLength" in fields:  # the count the sample's division by tileLength gives
        tile_count = block / fields["tileLength"] / bufs if (
            block is not None and fields["tileLength"]) else None
    else:  # the sample divides its block by tileNum * BUFFER_NUM exactly
        tile_count = tiles if block is not None and tiles and _exact(
            block / tiles / bufs) is not None else None
    return {"totalLength": total, "blockLength": block, "tileLength": tile,
            "tileNum": tile_count}


def _exact(x: float | None) -> float | None:
    return x if x is not None and float(x).is_integer() else None


def sample_warnings(bundle: Bundle) -> list[str]:
    """One line per field named like a sample's whose values differ from the sample's
    derivation on a tuned entry (fields marked ``meaning: own`` excepted)."""
    spec, hw = bundle.spec, bundle.hw
    named = [f for f in spec.tiling_fields if f.name in SAMPLE_FIELDS and f.meaning != "own"]
    if not named:
        return []
    env = runtime_env(spec, hw, int(hw["cube_cores"]), int(hw["vector_cores"]))
    found: dict[str, str] = {}
    for shape, best in list(bundle.shapes)[:ENTRIES_COMPARED]:
        local = derive(spec, env, shape, best)
        if local is None:
            continue
        fields = {f.name: scalar_value(f.value.evaluate(local)) for f in spec.tiling_fields}
        sample = _sample_values(spec, local, shape, fields)
        for f in named:
            want = _exact(sample[f.name])
            if f.name in found or (want is not None and fields[f.name] == want):
                continue
            shown = "no exact division" if want is None else f"{want:g}"
            found[f.name] = (
                f"{spec.name}: tiling field {f.name} has the name of the AscendC sample's "
                f"({SAMPLE_FIELDS[f.name]}) but not its derivation: {f.name} = "
                f"{f.value.source} is {fields[f.name]:g} at {shape_key(shape)}, where the "
                f"sample's is {shown}; a kernel written like the sample misreads it (declare "
                f"'meaning: own' on the field if that is intended)")
    return [found[f.name] for f in named if f.name in found]
