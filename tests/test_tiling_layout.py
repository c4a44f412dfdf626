"""Host serialisation and kernel read-back agree for every built-in operator.

One program per side, as in a real build: the host fills the macro-style TilingData class and
serialises it (SaveToBuffer); the kernel side copies sizeof / 8 uint64 words of those bytes into
the struct-style header (what the build's replay does) and reads every field back. Each field
must come back as the Python side computes it, the data size must equal sizeof(struct) and the
emitter's layout, and both must be multiples of 8.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ascend_tune.emit import render as emit
from ascend_tune.emit.selection import NONE, field_value
from ascend_tune.hardware import HardwareProfile
from ascend_tune.results import format as results
from ascend_tune.spec import OperatorSpec, spec_paths
from ascend_tune.spec.launch import tiling_fields
from tests.conftest import STUB, needs_gxx

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = ((20, 40), (24, 48), (8, 16))


def _bundles() -> list[emit.Bundle]:
    out = []
    for path in spec_paths():
        doc = results.read_all(ROOT / "examples" / path.stem / "results.json")
        out.append(emit.load_bundle(doc, path.stem))
    return out


def _cases(spec: OperatorSpec, doc: dict[str, Any]) -> list[tuple[dict[str, int], int, int]]:
    shapes = [s["shape"] for s in doc["shapes"][:3]]
    return [(s, aic, aiv) for s in shapes for aic, aiv in PLATFORMS]


def _host_program(bundles: list[emit.Bundle]) -> str:
    parts = ["#include <cstdio>", "#include <vector>"]
    parts += [f'#include "{b.spec.snake_name}_tiling_select.h"' for b in bundles]
    parts.append("int main() {")
    parts.append("    char op[64]; long long raw[8], aic, aiv;")
    parts.append('    while (std::scanf("%63s", op) == 1) {')
    for b in bundles:
        spec = b.spec
        ns = f"optiling::{spec.snake_name}_tiling"
        n = len(spec.shape_vars)
        reads = " ".join(f'std::scanf("%lld", &raw[{i}]);' for i in range(n))
        assign = " ".join(f"shape.{v} = raw[{i}];" for i, v in enumerate(spec.shape_vars))
        parts.append(f'        if (std::string(op) == "{spec.name}") {{')
        parts.append(f'            {reads} std::scanf("%lld %lld", &aic, &aiv);')
        parts.append(f"            {ns}::Shape shape = {ns}::Shape(); {assign}")
        parts.append(f"            {ns}::Values values = {ns}::Values();")
        parts.append(f"            if ({ns}::Select(shape, aic, aiv, values).source == "
                     f"{ns}::kNone) {{ std::printf(\"none\\n\"); continue; }}")
        parts.append(f"            optiling::{spec.tiling_struct} tiling;")
        if spec.attrs:  # the attribute values the results file records, as ReadAttrs reads them
            parts.append(f"            {ns}::Attrs attrs = {ns}::Attrs();")
            parts += [f"            attrs.{a} = {float(v)!r};" for a, v in spec.attr_values.items()]
            parts.append(f"            {ns}::FillTiling(values, attrs, tiling);")
        else:
            parts.append(f"            {ns}::FillTiling(values, tiling);")
        parts.append("            std::vector<unsigned char> buf(tiling.GetDataSize());")
        parts.append("            tiling.SaveToBuffer(buf.data(), buf.size());")
        parts.append('            std::printf("%zu", buf.size());')
        parts.append('            for (size_t i = 0; i < buf.size(); ++i) std::printf(" %u", '
                     "buf[i]);")
        parts.append('            std::printf("\\n");')
        parts.append("        }")
    parts += ["    }", "    return 0;", "}"]
    return "\n".join(parts) + "\n"


def _kernel_program(bundles: list[emit.Bundle]) -> str:
    parts = ["#include <cstdint>", "#include <cstdio>", "#include <cstring>", "#include <string>"]
    parts += [f'#include "{b.spec.snake_name}_tiling.h"' for b in bundles]
    parts.append("int main() {")
    parts.append("    char op[64]; size_t size;")
    parts.append('    while (std::scanf("%63s %zu", op, &size) == 2) {')
    parts.append("        uint64_t words[1024] = {};")
    parts.append("        unsigned char* bytes = reinterpret_cast<unsigned char*>(words);")
    parts.append('        for (size_t i = 0; i < size; ++i) { unsigned v; std::scanf("%u", &v); '
                 "bytes[i] = static_cast<unsigned char>(v); }")
    for b in bundles:
        struct = b.spec.tiling_struct
        parts.append(f'        if (std::string(op) == "{b.spec.name}") {{')
        parts.append(f"            {struct} td;")
        # The replay: sizeof(T) / 8 whole uint64 words, nothing more.
        parts.append(f"            std::memcpy(&td, words, sizeof({struct}) / 8 * 8);")
        parts.append(f'            std::printf("%zu", sizeof({struct}));')
        for path, _ctype, _value in tiling_fields(b.spec):
            parts.append(f'            std::printf(" %.17g", static_cast<double>(td.{path}));')
        parts.append('            std::printf("\\n");')
        parts.append("        }")
    parts += ["    }", "    return 0;", "}"]
    return "\n".join(parts) + "\n"


@needs_gxx
def test_host_serialisation_reads_back_in_the_kernel_struct(tmp_path: Path,
                                                           hw: HardwareProfile) -> None:
    bundles = _bundles()
    for style in ("macro", "struct"):
        for b in bundles:
            emit.write(tmp_path / style, emit.render(b, style))
    host_src, kernel_src = tmp_path / "host.cpp", tmp_path / "kernel.cpp"
    host_src.write_text(_host_program(bundles))
    kernel_src.write_text(_kernel_program(bundles))
    # -O0: this test is about bytes and layout; the optimiser-dependent warnings (-O1) are
    # test_emit.py's and test_dispatch.py's drivers' to catch. (-O1 took 17 s here, -O0 12 s.)
    flags = ["g++", "-std=c++11", "-O0", "-Wall", "-Wextra", "-Werror", f"-I{STUB}"]
    for src, include in ((host_src, tmp_path / "macro/op_host"),
                         (kernel_src, tmp_path / "struct/op_kernel")):
        proc = subprocess.run([*flags, f"-I{include}", str(src), "-o", str(src.with_suffix(""))],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[:3000]
    cases = []
    for b in bundles:
        doc = json.loads(json.dumps(b.doc))
        cases += [(b, shape, aic, aiv) for shape, aic, aiv in _cases(b.spec, doc)]
    host_in = "".join(f"{b.spec.name} {' '.join(map(str, s.values()))} {aic} {aiv}\n"
                      for b, s, aic, aiv in cases)
    host_out = subprocess.run([str(tmp_path / "host")], input=host_in, capture_output=True,
                              text=True, check=True).stdout.splitlines()
    assert len(host_out) == len(cases)
    kernel_in = "".join(f"{b.spec.name} {line}\n" for (b, *_), line in zip(cases, host_out,
                                                                           strict=True)
                        if line != "none")
    kernel_out = iter(subprocess.run([str(tmp_path / "kernel")], input=kernel_in,
                                     capture_output=True, text=True, check=True)
                      .stdout.splitlines())
    checked = 0
    for (b, shape, aic, aiv), host_line in zip(cases, host_out, strict=True):
        spec = b.spec
        sel = b.select(shape, aic, aiv)
        if host_line == "none":
            assert sel.source == NONE, (spec.name, shape)
            continue
        data_size = int(host_line.split()[0])
        sizeof, *values = next(kernel_out).split()
        assert data_size == int(sizeof) == emit.layout(spec)[1], spec.name
        assert data_size % 8 == 0
        expected = [float(field_value(ctype, value.evaluate(sel.env)))
                    for _path, ctype, value in tiling_fields(spec)]
        assert [float(v) for v in values] == pytest.approx(expected, rel=0, abs=0), (
            spec.name, shape, aic, aiv)
        checked += 1
    assert checked >= 3 * len(bundles)
