"""Stand-in for CANN's cmake/util/tiling_data_def_build.py: read an op_host tiling header line
by line the way it does (each stripped line starts with a macro name, the arguments from a
greedy ``\\((.*)\\)`` split on ','), write the kernel-side struct (``#pragma pack(1)``) as
``<OUT_DIR>/<header stem>_data.h``, rewritten only when its text changes. A line it cannot
read (a macro split over lines, a second parenthesis, a type the kernel build does not know,
a field outside a BEGIN/END pair) fails with the line."""

import re
import sys
from pathlib import Path

TYPES = {"int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
         "uint64_t", "float"}


def main(header: Path, out_dir: Path) -> int:
    classes: dict[str, list[str]] = {}
    current = None
    for number, raw in enumerate(header.read_text().splitlines(), 1):
        line = raw.strip()
        where = f"{header}:{number}: "
        m = re.search(r"\((.*)\)", line)
        args = [a.strip() for a in m.group(1).split(",")] if m else []
        if line.startswith("BEGIN_TILING_DATA_DEF"):
            if current is not None or len(args) != 1 or not args[0].isidentifier():
                sys.exit(where + "cannot read " + line)
            current = args[0]
            classes[current] = []
        elif line.startswith("END_TILING_DATA_DEF"):
            if current is None or line != "END_TILING_DATA_DEF;":
                sys.exit(where + "cannot read " + line)
            current = None
        elif line.startswith("TILING_DATA_FIELD_DEF_STRUCT"):
            if current is None or len(args) != 2:
                sys.exit(where + "cannot read " + line)
            classes[current].append(f"    {args[0]} {args[1]};")
        elif line.startswith("TILING_DATA_FIELD_DEF_ARR"):
            if current is None or len(args) != 3 or args[0] not in TYPES:
                sys.exit(where + "cannot read " + line)
            classes[current].append(f"    {args[0]} {args[2]}[{args[1]}];")
        elif line.startswith("TILING_DATA_FIELD_DEF"):
            if (current is None or len(args) != 2 or args[0] not in TYPES
                    or not args[1].isidentifier() or line.count("(") != 1):
                sys.exit(where + "cannot read " + line)
            classes[current].append(f"    {args[0]} {args[1]};")
        elif current is not None and line and not line.startswith("//"):
            sys.exit(where + "unexpected line inside " + current + ": " + line)
    if current is not None or not classes:
        sys.exit(f"{header}: no complete BEGIN_TILING_DATA_DEF ... END_TILING_DATA_DEF")
    text = "#pragma once\n#include <cstdint>\n#pragma pack(1)\n"
    for name, fields in classes.items():
        text += f"struct {name} {{\n" + "\n".join(fields) + "\n};\n"
    text += "#pragma pack()\n"
    out = out_dir / f"{header.stem}_data.h"
    if not out.exists() or out.read_text() != text:
        out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
