"""The TilingData of one configuration as the bytes the host writes for the kernel.

Same layout as the emitted headers (``emit.layout``: nested API structs with every member in
order, then scalars widest first, then padding to a multiple of 8 bytes), each value stored as
its C type stores it (``selection.field_value``: the emitted ``static_cast``), little-endian
as on every Ascend host and device. A measurement harness can hand these bytes to a kernel
launch instead of rebuilding them from the headers; tests/test_hil.py checks them against the
emitted host code's ``SaveToBuffer``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from ascend_tune.base import cann
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.emit.render import layout
from ascend_tune.emit.selection import field_value
from ascend_tune.spec import OperatorSpec

_FORMATS = {"int8_t": "b", "uint8_t": "B", "int16_t": "h", "uint16_t": "H", "int32_t": "i",
            "uint32_t": "I", "int64_t": "q", "uint64_t": "Q", "float": "f"}


def pack(spec: OperatorSpec, tiling: Mapping[str, Any]) -> bytes:
    """``tiling`` (a results entry's or candidate's ``tiling``: field -> value, a nested
    struct as a mapping of its fields) packed in the emitted layout. Members of a nested API
    struct the spec does not set are 0, as in the emitted code."""
    slots, size = layout(spec)
    out = bytearray()
    for slot in slots:
        if slot.nested is not None:
            names, ctype = cann.NESTED_TYPES[slot.nested.ctype]
            given = tiling.get(slot.name)
            if not isinstance(given, Mapping):
                raise AscendTuneError(f"tiling: '{slot.name}' must map the fields of "
                                      f"{slot.nested.ctype}")
            for name in names:
                out += _packed(ctype, given.get(name, 0), f"{slot.name}.{name}")
        elif slot.expr is None:  # padding
            out += bytes(cann.field_bytes(slot.ctype))
        else:
            if slot.name not in tiling:
                raise AscendTuneError(f"tiling: field '{slot.name}' is missing")
            out += _packed(slot.ctype, tiling[slot.name], slot.name)
    if len(out) != size:  # layout() aligns every member naturally: no holes to fill
        raise AssertionError(f"{spec.name}: packed {len(out)} bytes, layout says {size}")
    return bytes(out)


def _packed(ctype: str, value: Any, name: str) -> bytes:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AscendTuneError(f"tiling: {name} must be a number, got {value!r:.40}")
    return struct.pack("<" + _FORMATS[ctype], field_value(ctype, value))
