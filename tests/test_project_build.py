"""Every built-in operator emitted into ONE msOpGen-style project and built the way CANN builds
op_host: every ``op_host/*.cpp`` into one shared library (aux_source_directory), with
``-fvisibility=hidden -D_GLIBCXX_USE_CXX11_ABI=0`` as C++11 (what CANN uses) and again as
C++17, against the strict stand-ins in tests/cann_stub. A small driver linked against the
library lists what registered at load time (a tiling-struct conflict, an unpadded TilingData
or a duplicate op aborts there) and calls every op's registered TilingFunc, InferShape and
InferDataType; the results are compared with the Python selection, and the tiling bytes are
decoded the way CANN's replay generator reads the header (one macro per line, pack(1))."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ascend_tune.emit import render as emit
from ascend_tune.emit.render import Bundle
from ascend_tune.emit.selection import BASELINE, EXACT, NEAREST, NONE, Selection, field_value
from ascend_tune.emit.styles import STYLES
from ascend_tune.spec import OperatorSpec, spec_paths
from tests.conftest import ROOT, STUB, needs_gxx, slow

FLAGS = ["-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-D_GLIBCXX_USE_CXX11_ABI=0",
         "-fPIC", f"-I{STUB}"]
# The project as emitted by default (macro style) under C++11 and C++17; struct style under
# C++11 only, to keep the module under a minute on two cores.
BUILDS = [("macro", "c++11"), ("macro", "c++17"), ("struct", "c++11")]
GRAPH_FAILED = 0xFFFFFFFF
LIB_API_WORKSPACE = 16 * 1024 * 1024  # PlatformAscendC::GetLibApiWorkSpaceSize on 910B
PLATFORMS = [(20, 40, LIB_API_WORKSPACE), (24, 48, 12_345_600)]  # AIC, AIV, lib workspace
# ge::DataType values (CANN graph/types.h), independent of the emitter's table.
GE_DTYPE = {"float16": 1, "bfloat16": 27, "float32": 0, "hf32": 0, "int8": 2, "int32": 3}
# The tests of each module fixture run on one xdist worker (pytest runs with --dist=loadgroup),
# so each project is compiled once per session.
# The whole project, built three ways: the second test tier (tests/conftest.py).
pytestmark = slow
ONE_BUILD = pytest.mark.xdist_group("project_build")
ONE_BROKEN = pytest.mark.xdist_group("project_broken")
CTYPES = {"int8_t": "b", "uint8_t": "B", "int16_t": "h", "uint16_t": "H", "int32_t": "i",
          "uint32_t": "I", "int64_t": "q", "uint64_t": "Q", "float": "f"}

DRIVER = r"""
#include <cstdio>
#include <string>
#include <vector>
#include "register/op_def_registry.h"
#include "register/tilingdata_base.h"

static void PrintParams(const char* tag, const std::vector<ops::OpParamDef>& params) {
    std::printf(" %s", tag);
    for (size_t i = 0; i < params.size(); ++i) {
        std::printf(" %s:%d:%zu", params[i].GetParamName().c_str(),
                    static_cast<int>(params[i].GetDataTypes()[0]), params[i].GetDataTypes().size());
    }
}

int main() {
    const std::vector<ops::StubOpEntry>& ops = ops::StubOpRegistry::Instance().Ops();
    for (size_t i = 0; i < ops.size(); ++i) {
        const ops::OpDef& def = ops[i].def;
        std::printf("OP %s %d %d %d", ops[i].name.c_str(), def.GetAICore().GetTiling() != nullptr,
                    def.GetInferShape() != nullptr, def.GetInferDataType() != nullptr);
        for (size_t c = 0; c < def.GetAICore().GetConfigs().size(); ++c) {
            std::printf(" %s", def.GetAICore().GetConfigs()[c].c_str());
        }
        PrintParams("|in", def.GetInputs());
        PrintParams("|out", def.GetOutputs());
        std::printf("\n");
    }
    const std::vector<optiling::StubTilingClass>& classes =
        optiling::StubTilingRegistry::Instance().Classes();
    for (size_t i = 0; i < classes.size(); ++i) {
        std::printf("TILING %s %s %zu\n", classes[i].opType.c_str(), classes[i].className.c_str(),
                    classes[i].dataSize);
    }
    // One case per line: op aic aiv libWorkspace inputCount {rank dims...}...
    char name[256];
    unsigned aic, aiv, libws;
    size_t count;
    while (std::scanf("%255s %u %u %u %zu", name, &aic, &aiv, &libws, &count) == 5) {
        const ops::OpDef* def = ops::StubOpRegistry::Instance().Find(name);
        if (def == nullptr || def->GetInputs().size() != count) {
            std::printf("BADCASE %s\n", name);
            return 1;
        }
        gert::TilingContext tc;
        gert::InferShapeContext sc;
        gert::InferDataTypeContext dc;
        for (size_t i = 0; i < count; ++i) {
            size_t rank;
            if (std::scanf("%zu", &rank) != 1) return 2;
            gert::StorageShape storage;
            gert::Shape plain;
            for (size_t d = 0; d < rank; ++d) {
                long long v;
                if (std::scanf("%lld", &v) != 1) return 2;
                storage.MutableOriginShape().AppendDim(v);
                storage.MutableStorageShape().AppendDim(v);
                plain.AppendDim(v);
            }
            gert::CompileTimeTensorDesc desc;
            desc.dataType = def->GetInputs()[i].GetDataTypes()[0];
            desc.format = def->GetInputs()[i].GetFormats()[0];
            tc.inputs.push_back(storage);
            tc.inputDescs.push_back(desc);
            sc.inputs.push_back(plain);
            dc.inputs.push_back(desc.dataType);
        }
        // Each OPTIONAL attribute at its OpDef default, as the runtime passes one not set.
        for (size_t a = 0; a < def->GetAttrs().size(); ++a) {
            const ops::OpAttrDef& attr = def->GetAttrs()[a];
            if (attr.GetKind() == "float") {
                tc.attrs.SetFloat(a, static_cast<float>(attr.GetValue()));
            } else if (attr.GetKind() == "int") {
                tc.attrs.SetInt(a, static_cast<int64_t>(attr.GetValue()));
            } else {
                tc.attrs.SetBool(a, attr.GetValue() != 0.0);
            }
        }
        tc.platform.aicCoreNum = aic;
        tc.platform.aivCoreNum = aiv;
        tc.platform.libApiWorkSpaceSize = libws;
        const ge::graphStatus status = def->GetAICore().GetTiling()(&tc);
        const size_t size = tc.GetRawTilingData()->GetDataSize();
        std::printf("CASE %s %u %u %llu %zu %lld %zu ", name, status, tc.GetBlockDim(),
                    static_cast<unsigned long long>(tc.GetTilingKey()), tc.GetWorkspaceNum(),
                    tc.GetWorkspaceNum() > 0 ? static_cast<long long>(tc.workspaceSizes[0]) : -1LL,
                    size);
        const unsigned char* bytes =
            static_cast<const unsigned char*>(tc.GetRawTilingData()->GetData());
        for (size_t b = 0; b < size; ++b) std::printf("%02x", bytes[b]);
        std::printf("-\n");
        sc.outputs.resize(def->GetOutputs().size());
        dc.outputs.assign(def->GetOutputs().size(), ge::DT_UNDEFINED);
        std::printf("INFER %u %u", def->GetInferShape()(&sc), def->GetInferDataType()(&dc));
        for (size_t o = 0; o < sc.outputs.size(); ++o) {
            std::printf(" %d", static_cast<int>(dc.outputs[o]));
            for (size_t d = 0; d < sc.outputs[o].GetDimNum(); ++d) {
                std::printf(",%lld", static_cast<long long>(sc.outputs[o].GetDim(d)));
            }
        }
        std::printf("\n");
    }
    return 0;
}
"""


@dataclass(frozen=True)
class Case:
    bundle: Bundle
    shape: dict[str, int]
    inputs: list[list[int]]
    platform: tuple[int, int, int]

    def line(self) -> str:
        dims = " ".join(f"{len(d)} {' '.join(map(str, d))}" for d in self.inputs)
        aic, aiv, libws = self.platform
        return f"{self.bundle.spec.name} {aic} {aiv} {libws} {len(self.inputs)} {dims}"


@dataclass(frozen=True)
class Build:
    registry: list[str]  # OP and TILING lines
    cases: list[tuple[Case, str, str]]  # case, CASE line, INFER line


def _bundles() -> list[Bundle]:
    out = []
    for path in spec_paths():
        results = ROOT / "examples" / path.stem / "results.json"
        assert results.exists(), f"spec {path.name} has no {results}"
        out.append(emit.load_bundle(json.loads(results.read_text()), str(results)))
    return out


def _inputs(spec: OperatorSpec, shape: dict[str, int]) -> list[list[int]]:
    """Input shapes whose dims produce ``shape`` through the spec's ``from:`` mapping; inputs
    the mapping does not mention take input 0's shape."""
    wanted: dict[int, dict[str, int]] = {}
    for var, source in spec.shape_from.items():
        what = source.kind if source.dim is None else str(source.dim)
        wanted.setdefault(source.input, {})[what] = shape[var]
    shapes: dict[int, list[int]] = {}
    for i, want in wanted.items():
        if set(want) == {"size"}:
            shapes[i] = [want["size"]]
        elif set(want) <= {"rows", "last"}:
            shapes[i] = [want.get("rows", 1), want.get("last", 1)]
        else:
            assert all(k.isdigit() for k in want), (spec.name, want)
            shapes[i] = [want.get(str(d), 1) for d in range(max(map(int, want)) + 1)]
    assert 0 in shapes, spec.name
    return [shapes.get(i, shapes[0]) for i in range(len(spec.io_inputs))]


def _untuned(spec: OperatorSpec, shape: dict[str, int], scale: float) -> dict[str, int]:
    out = {}
    for v, n in shape.items():
        lo, hi = spec.shape_min[v], spec.shape_max.get(v)
        m = max(lo, int(n * scale) + 1)
        m = min(m, hi) if hi is not None else m
        step = spec.shape_multiple.get(v, 1)  # a shape the kernel accepts
        out[v] = max(lo, m // step * step)
    return out


def _cases(bundles: Sequence[Bundle]) -> list[Case]:
    cases = []
    for b in bundles:
        tuned = [shape for shape, _ in b.shapes]
        shapes = [*tuned, _untuned(b.spec, tuned[0], 1.7), _untuned(b.spec, tuned[-1], 0.37)]
        for platform in PLATFORMS:
            for shape in shapes if platform == PLATFORMS[0] else shapes[:2] + shapes[-1:]:
                cases.append(Case(b, shape, _inputs(b.spec, shape), platform))
    return cases


def _run_all(commands: Sequence[Sequence[str]]) -> None:
    def run(cmd: Sequence[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(cmd), capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        procs = list(pool.map(run, commands))
    for cmd, proc in zip(commands, procs, strict=True):
        assert proc.returncode == 0, (" ".join(cmd), proc.stderr[:4000])


def _parse(out: str, cases: Sequence[Case]) -> Build:
    lines = out.splitlines()
    registry = [s for s in lines if s.startswith(("OP ", "TILING "))]
    results = [s for s in lines if s.startswith("CASE ")]
    infers = [s for s in lines if s.startswith("INFER ")]
    assert len(results) == len(infers) == len(cases), out[-2000:]
    return Build(registry, list(zip(cases, results, infers, strict=True)))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Bundle], dict[str, Path]]:
    """One project folder per style with every operator's emitted files."""
    bundles = _bundles()
    roots = {}
    for style in STYLES:
        root = tmp_path_factory.mktemp(f"project_{style}")
        for b in bundles:
            files = emit.render(b, style, op_host=True)
            clash = set(files) & {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
            assert not clash, f"{b.spec.name} overwrites {sorted(clash)}"
            emit.write(root, files)
        roots[style] = root
    return bundles, roots


# Pre-parsed once per standard for the project's translation units (half of an op_host
# file's compile time is parsing these). No header with a load-time registration
# (tiling/tiling_api.h registers TCubeTiling): including it in every file would change what
# registers. Each emitted file compiling on its own, without anything pre-included, is
# tests/test_operator_library.py's check (both styles, C++11 and C++17).
PRECOMPILED = ["<algorithm>", "<cmath>", "<cstddef>", "<cstdint>", "<cstdio>", "<cstdlib>",
               "<cstring>", "<limits>", "<map>", "<mutex>", "<string>", "<utility>", "<vector>",
               '"register/tilingdata_base.h"', '"register/op_def_registry.h"',
               '"tiling/platform/platform_ascendc.h"']


def _precompiled(out_dir: Path, stds: Sequence[str]) -> dict[str, list[str]]:
    """std -> the g++ flags that pre-include the precompiled header built for it (with the
    project's flags; -Winvalid-pch with -Werror fails the build if g++ cannot use it)."""
    cmds, flags = [], {}
    for std in stds:
        folder = out_dir / f"pch_{std}"
        folder.mkdir()
        header = folder / "stand_ins.h"
        header.write_text("".join(f"#include {h}\n" for h in PRECOMPILED))
        cmds.append(["g++", f"-std={std}", *FLAGS, "-x", "c++-header", str(header),
                     "-o", f"{header}.gch"])
        flags[std] = ["-include", str(header), "-Winvalid-pch"]
    _run_all(cmds)
    return flags


@pytest.fixture(scope="module")
def builds(project: tuple[list[Bundle], dict[str, Path]],
           tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Build]:
    """Compile every (style, standard) library and its driver in one parallel batch, then run
    each driver once over all cases."""
    bundles, roots = project
    out_dir = tmp_path_factory.mktemp("build")
    driver = out_dir / "driver.cpp"
    driver.write_text(DRIVER)
    objects: dict[tuple[str, str], list[Path]] = {}
    compile_cmds: list[list[str]] = []
    pch = _precompiled(out_dir, sorted({std for _, std in BUILDS}))
    for style, std in BUILDS:
        host = roots[style] / "op_host"
        sources = sorted(host.glob("*.cpp"))
        assert len(sources) == len(bundles), sources
        objs = []
        for src in sources:
            obj = out_dir / f"{style}_{std}_{src.stem}.o"
            compile_cmds.append(["g++", f"-std={std}", *FLAGS, *pch[std], f"-I{host}", "-c",
                                 str(src), "-o", str(obj)])
            objs.append(obj)
        objects[(style, std)] = objs
    for std in sorted({std for _, std in BUILDS}):
        compile_cmds.append(["g++", f"-std={std}", *FLAGS, "-c", str(driver),
                             "-o", str(out_dir / f"driver_{std}.o")])
    _run_all(compile_cmds)
    link_cmds = []
    for style, std in BUILDS:
        lib = out_dir / f"libcust_opmaster_{style}_{std}.so"
        link_cmds.append(["g++", "-shared", "-o", str(lib), *map(str, objects[(style, std)])])
    _run_all(link_cmds)
    exe_cmds = []
    for style, std in BUILDS:
        lib = out_dir / f"libcust_opmaster_{style}_{std}.so"
        # --no-as-needed: the driver resolves every symbol itself, yet the library must load.
        exe_cmds.append(["g++", str(out_dir / f"driver_{std}.o"), "-Wl,--no-as-needed",
                         str(lib), f"-Wl,-rpath,{out_dir}", "-o",
                         str(out_dir / f"driver_{style}_{std}")])
    _run_all(exe_cmds)
    cases = _cases(bundles)
    stdin = "\n".join(c.line() for c in cases) + "\n"
    out = {}
    for style, std in BUILDS:
        proc = subprocess.run([str(out_dir / f"driver_{style}_{std}")], input=stdin,
                              capture_output=True, text=True)
        assert proc.returncode == 0, (style, std, proc.returncode, proc.stderr[-3000:],
                                      proc.stdout[-2000:])
        out[(style, std)] = _parse(proc.stdout, cases)
    return out


@pytest.fixture(scope="module")
def selections(builds: dict[tuple[str, str], Build]) -> list[Selection]:
    """What ``selection.select`` picks for each case, in case order: every build runs the same
    cases, so the Python side (with its run-time descent) is computed once, not per build."""
    return [case.bundle.select(case.shape, case.platform[0], case.platform[1])
            for case, _, _ in builds[BUILDS[0]].cases]


def _parse_tiling_header(text: str) -> dict[str, list[tuple[str, str, str]]]:
    """Classes -> (kind, type, name) in order, read the way CANN's line-oriented generators
    (tiling_data_def_build.py, gen_kernel_tiling_data_def.py) read a header: each stripped
    line starts with the macro, arguments from a greedy ``\\((.*)\\)``, split on ','."""
    classes: dict[str, list[tuple[str, str, str]]] = {}
    current: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        m = re.search(r"\((.*)\)", line)
        args = [a.strip() for a in m.group(1).split(",")] if m else []
        if line.startswith("BEGIN_TILING_DATA_DEF"):
            current = args[0]
            classes[current] = []
        elif line.startswith("END_TILING_DATA_DEF"):
            current = None
        elif line.startswith("TILING_DATA_FIELD_DEF_STRUCT"):
            assert current is not None and len(args) == 2, line
            classes[current].append(("struct", args[0], args[1]))
        elif line.startswith("TILING_DATA_FIELD_DEF_ARR"):
            raise AssertionError(f"unexpected array field: {line}")
        elif line.startswith("TILING_DATA_FIELD_DEF"):
            assert current is not None and len(args) == 2 and args[0] in CTYPES, line
            classes[current].append(("scalar", args[0], args[1]))
    return classes


LIBRARY = _parse_tiling_header((STUB / "tiling" / "tiling_api.h").read_text())


def _layout(fields: list[tuple[str, str, str]], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(path, C type) in byte order under #pragma pack(1), nested classes expanded."""
    for kind, ctype, name in fields:
        if kind == "struct":
            yield from _layout(LIBRARY[ctype], f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", ctype


def _decode(fields: list[tuple[str, str, str]], data: bytes) -> dict[str, int | float]:
    values: dict[str, int | float] = {}
    offset = 0
    for path, ctype in _layout(fields):
        size = struct.calcsize(CTYPES[ctype])
        (values[path],) = struct.unpack_from("<" + CTYPES[ctype], data, offset)
        offset += size
    assert offset == len(data), f"layout is {offset} bytes, the host wrote {len(data)}"
    return values


def _expected_fields(spec: OperatorSpec, env: dict[str, Any]) -> dict[str, int | float]:
    out = {f.name: field_value(f.ctype, f.value.evaluate(env)) for f in spec.tiling_fields}
    for n in spec.tiling_nested:
        for f in n.fields:
            out[f"{n.name}.{f.name}"] = field_value(f.ctype, f.value.evaluate(env))
    return out


@needs_gxx
@ONE_BUILD
@pytest.mark.parametrize("build", BUILDS, ids=[f"{s}-{c}" for s, c in BUILDS])
def test_every_op_registers_once_without_conflict(
        build: tuple[str, str], builds: dict[tuple[str, str], Build],
        project: tuple[list[Bundle], dict[str, Path]]) -> None:
    """Loading the one library registers each operator's OpDef exactly once, with its tiling
    and infer functions, SoC config, and the spec's inputs/outputs and ge dtypes; macro style
    also registers each TilingData class once, under a name of its own, padded to 8 bytes."""
    bundles, _ = project
    registry = builds[build].registry
    ops = [s.split() for s in registry if s.startswith("OP ")]
    assert sorted(o[1] for o in ops) == sorted(b.spec.name for b in bundles)
    for b in bundles:
        spec = b.spec
        line = next(s for s in registry if s.startswith(f"OP {spec.name} "))
        head, ins, outs = line.split("|")
        flags = head.split()[2:]
        assert flags[:3] == ["1", "1", "1"], line
        assert flags[3:] and all(re.fullmatch(r"ascend[0-9a-z_]+", s) for s in flags[3:]), line
        assert ins.split()[1:] == [f"{n}:{GE_DTYPE[spec.dtypes[n]]}:1" for n in spec.io_inputs]
        assert outs.split()[1:] == [f"{o.name}:{GE_DTYPE[spec.dtypes[o.name]]}:1"
                                    for o in spec.io_outputs]
    tiling = {t[1]: (t[2], int(t[3])) for t in (s.split() for s in registry
                                                 if s.startswith("TILING "))}
    if build[0] == "struct":
        assert set(tiling) <= {"TCubeTilingOpApi"}
        return
    for b in bundles:
        cls, size = tiling[b.spec.name]
        assert cls == b.spec.tiling_struct
        assert size % 8 == 0, (cls, size)
    names = [tiling[b.spec.name][0] for b in bundles]
    assert len(set(names)) == len(names), names
    if any(b.spec.tiling_nested for b in bundles):
        assert tiling["TCubeTilingOpApi"] == ("TCubeTiling", 200)


@needs_gxx
@ONE_BUILD
@pytest.mark.parametrize("build", BUILDS, ids=[f"{s}-{c}" for s, c in BUILDS])
def test_registered_tiling_functions_agree_with_python(
        build: tuple[str, str], builds: dict[tuple[str, str], Build],
        project: tuple[list[Bundle], dict[str, Path]], selections: list[Selection]) -> None:
    """Each op's registered TilingFunc, called with input shapes built from the spec's
    ``from:`` mapping on two platforms: status, block dim and tiling key as
    ``selection.select`` predicts, one workspace entry (user bytes plus the platform's
    library workspace for lib_api kernels), every tiling byte as the spec's field values
    (unset TCubeTiling fields and padding zero) in the layout the header declares, a size
    that is a multiple of 8 and equal in both styles; InferShape / InferDataType give the
    spec's output shapes and dtypes."""
    _, roots = project
    headers: dict[str, list[tuple[str, str, str]]] = {}
    for header in (roots["macro"] / "op_host").glob("*_tiling.h"):
        headers.update(_parse_tiling_header(header.read_text()))
    sizes: dict[str, set[int]] = {}
    sources: set[int] = set()
    assert all(a is b for (a, _, _), (b, _, _) in zip(builds[build].cases, builds[BUILDS[0]].cases,
                                                      strict=True))
    for (case, result, infer), sel in zip(builds[build].cases, selections, strict=True):
        spec = case.bundle.spec
        libws = case.platform[2]
        _, _, status, block_dim, key, ws_num, ws0, size, data = result.split()
        where = (spec.name, case.shape, case.platform, result[:160])
        sources.add(sel.source)
        if sel.source == NONE:
            assert int(status) == GRAPH_FAILED, where
            continue
        assert int(status) == 0, where
        assert int(block_dim) == int(spec.block_dim.evaluate(sel.env)), where
        expected_key = int(spec.tiling_key.evaluate(sel.env)) if spec.tiling_key else 0
        assert int(key) == expected_key, where
        user = int(spec.workspace_bytes.evaluate(sel.env)) if spec.workspace_bytes else 0
        system = libws if spec.system_workspace == "lib_api" else 0
        assert (int(ws_num), int(ws0)) == (1, user + system), where
        assert int(size) % 8 == 0 and int(size) > 0, where
        sizes.setdefault(spec.name, set()).add(int(size))
        decoded = _decode(headers[spec.tiling_struct], bytes.fromhex(data.rstrip("-")))
        expected = _expected_fields(spec, sel.env)
        for path, value in decoded.items():
            want = expected.get(path, 0)
            assert value == want or (isinstance(want, float) and
                                     abs(value - want) <= 1e-6 * abs(want)), (path, value, want,
                                                                              where)
        assert set(expected) <= set(decoded), (set(expected) - set(decoded), where)
        shape_status, type_status, *outs = infer.split()[1:]
        assert (int(shape_status), int(type_status)) == (0, 0), (infer, where)
        by_name = dict(zip(spec.io_inputs, case.inputs, strict=True))
        for o, text in zip(spec.io_outputs, outs, strict=True):
            dtype, *dims = text.split(",")
            assert int(dtype) == GE_DTYPE[spec.dtypes[o.name]], (o.name, infer, where)
            want_dims = (by_name[o.like] if o.like is not None
                         else [by_name[t][d] for t, d in o.dims])
            assert [int(d) for d in dims] == want_dims, (o.name, infer, where)
    assert {EXACT, NEAREST, BASELINE} <= sources, "cases cover the tuned table and both fallbacks"
    assert all(len(s) == 1 for s in sizes.values()), sizes
    for name, s in sizes.items():
        other = builds[("struct" if build[0] == "macro" else "macro", "c++11")]
        assert {int(r.split()[7]) for c, r, _ in other.cases if c.bundle.spec.name == name
                and r.split()[2] == "0"} == s, name


# Hand-written host files in the shape msOpGen projects use, each broken one way.
_TILING_HOST = """#include "register/tilingdata_base.h"
#include "register/op_def_registry.h"
namespace optiling {{
BEGIN_TILING_DATA_DEF({cls})
{fields}
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS({tiling_op}, {cls})
static ge::graphStatus TilingFunc(gert::TilingContext* context) {{
    {cls} tiling;
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(),
                        context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    return ge::GRAPH_SUCCESS;
}}
}}  // namespace optiling
namespace ops {{
class {op} : public OpDef {{
public:
    explicit {op}(const char* name) : OpDef(name) {{
        this->Input("x").ParamType(REQUIRED).DataType({{ge::DT_FLOAT16}}).Format({{ge::FORMAT_ND}});
        this->Output("y").ParamType(REQUIRED).DataType({{ge::DT_FLOAT16}}).Format({{ge::FORMAT_ND}});
        this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
    }}
}};
OP_ADD({op});
}}  // namespace ops
"""
_U32 = "TILING_DATA_FIELD_DEF(uint32_t, {});"
_TWO = [_U32.format("a"), _U32.format("b")]
BROKEN: dict[str, tuple[list[tuple[str, str, str, list[str]]], str]] = {
    # (OpDef type, tiling op type, TilingData class, fields) per host file; the message.
    "shared_class_name": (
        [("OpA", "OpA", "SharedTilingData", _TWO),
         ("OpB", "OpB", "SharedTilingData", ["TILING_DATA_FIELD_DEF(uint64_t, c);"])],
        "tiling struct [SharedTilingData] is conflict"),
    "twelve_bytes": (
        [("OpC", "OpC", "OpCTilingData", [_U32.format(f) for f in "abc"])],
        "tiling data class [OpCTilingData] of op [OpC] is 12 bytes, not a multiple of 8"),
    "misaligned_field": (
        [("OpD", "OpD", "OpDTilingData",
          [_U32.format("a"), "TILING_DATA_FIELD_DEF(uint64_t, b);", _U32.format("c")])],
        "tiling data class [OpDTilingData]: field b (uint64_t) at offset 4 is not aligned to 8"),
    "tiling_op_twice": (
        [("OpE", "OpE", "OpETilingData", _TWO), ("OpF", "OpE", "OpFTilingData", _TWO)],
        "op type [OpE] registered twice"),
    "op_added_twice": (
        [("OpG", "OpG", "OpGTilingData", _TWO), ("OpG", "OpH", "OpHTilingData", _TWO)],
        "OP_ADD(OpG) twice"),
}


BAD_FIELD_TYPES = ["bool", "int", "size_t", "double", "std::uint32_t"]


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every broken project compiled in one parallel batch: case -> the process that loaded
    its library (or, for a bad field type, the compiler)."""
    root = tmp_path_factory.mktemp("broken")
    main = root / "main.cpp"
    main.write_text("int main() { return 0; }\n")
    compile_cmds, link_cmds = [], []
    for name, (ops, _) in BROKEN.items():
        objects = []
        for i, (op, tiling_op, cls, fields) in enumerate(ops):
            src = root / f"{name}_{i}.cpp"
            src.write_text(_TILING_HOST.format(op=op, tiling_op=tiling_op, cls=cls,
                                               fields="\n".join(fields)))
            objects.append(str(root / f"{name}_{i}.o"))
            compile_cmds.append(["g++", "-std=c++11", *FLAGS, "-c", str(src), "-o", objects[-1]])
        lib = root / f"lib{name}.so"
        link_cmds += [["g++", "-shared", "-o", str(lib), *objects],
                      ["g++", str(main), "-Wl,--no-as-needed", str(lib), f"-Wl,-rpath,{root}",
                       "-o", str(root / name)]]
    _run_all(compile_cmds)
    for cmd in link_cmds:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[:3000]
    out = {name: subprocess.run([str(root / name)], capture_output=True, text=True)
           for name in BROKEN}
    syntax = []
    for i, ctype in enumerate(BAD_FIELD_TYPES):
        src = root / f"field_{i}.cpp"
        src.write_text('#include <cstddef>\n#include "register/tilingdata_base.h"\n'
                       "namespace optiling {\nBEGIN_TILING_DATA_DEF(BadTilingData)\n"
                       f"TILING_DATA_FIELD_DEF({ctype}, flag);\nEND_TILING_DATA_DEF;\n}}\n")
        syntax.append(["g++", "-std=c++11", *FLAGS, "-fsyntax-only", str(src)])
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        procs = pool.map(lambda c: subprocess.run(c, capture_output=True, text=True), syntax)
        out.update(zip(BAD_FIELD_TYPES, procs, strict=True))
    return out


@needs_gxx
@ONE_BROKEN
@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_projects_abort_at_load(
        name: str, broken: dict[str, subprocess.CompletedProcess[str]]) -> None:
    """The stand-ins reject, when the library loads, what CANN would mis-handle: two classes of
    one name (ODR violation, metadef's "tiling struct [...] is conflict"), a TilingData whose
    size is not a multiple of 8 (the replay build drops the tail), a field old and new metadef
    would place differently, one op type given two TilingData classes, and one op defined
    twice."""
    proc = broken[name]
    assert proc.returncode != 0
    assert f"CANN stub: {BROKEN[name][1]}" in proc.stderr, proc.stderr


@needs_gxx
@ONE_BROKEN
@pytest.mark.parametrize("ctype", BAD_FIELD_TYPES)
def test_field_types_the_kernel_generator_rejects_do_not_compile(
        ctype: str, broken: dict[str, subprocess.CompletedProcess[str]]) -> None:
    proc = broken[ctype]
    assert proc.returncode != 0
    assert f"TILING_DATA_FIELD_DEF({ctype}, flag): the type must be" in proc.stderr
