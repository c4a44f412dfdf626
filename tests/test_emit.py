from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune.emit import render as emit
from ascend_tune.emit.refine import MAX_EVALS
from ascend_tune.emit.selection import BASELINE, EXACT, NONE, field_value
from ascend_tune.emit.styles import STYLES
from ascend_tune.hardware import HardwareProfile
from ascend_tune.results import format as results
from ascend_tune.spec import OperatorSpec
from ascend_tune.tune.shape import TuneSettings, tune_shape
from tests.conftest import STUB, needs_gxx

GOLDEN = Path(__file__).resolve().parent / "golden"
TUNED = {"add": [{"totalLength": n} for n in (1000, 65536, 1 << 20, 12_345_679)],
         "matmul": [{"M": m, "N": n, "K": k} for m, n, k in
                    ((128, 16384, 1024), (512, 4096, 1024), (2048, 4096, 4000), (96, 200, 64))]}


def _doc(spec: OperatorSpec, hw: HardwareProfile, which: str) -> dict[str, Any]:
    doc: dict[str, Any] = {**results.header(spec.name, spec.sha256, spec.source_text, hw.name,
                                            hw.sha256, hw.data, "auto", 0, 300), "shapes": []}
    for shape in TUNED[which]:
        doc["shapes"].append(tune_shape(spec, hw, shape, TuneSettings("auto", 300, 0)))
    return json.loads(results.to_text(doc))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def docs(hw: HardwareProfile, add_spec: OperatorSpec, matmul_spec: OperatorSpec
         ) -> dict[str, dict[str, Any]]:
    return {"add": _doc(add_spec, hw, "add"), "matmul": _doc(matmul_spec, hw, "matmul")}


@pytest.mark.parametrize("which", ["add", "matmul"])
@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.xdist_group("emit_docs")
def test_golden_files(which: str, style: str, docs: dict[str, dict[str, Any]],
                      update_golden: bool) -> None:
    bundle = emit.load_bundle(docs[which], "results.json")
    files = emit.render(bundle, style, op_host=True)
    folder = GOLDEN / f"{which}_{style}"
    if update_golden:
        emit.write(folder, files)
    for rel, text in files.items():
        expected = folder / rel
        assert expected.exists(), f"missing golden {expected}; run pytest --update-golden"
        assert expected.read_text() == text, f"{expected} differs; run pytest --update-golden"
    assert emit.render(bundle, style, op_host=True) == files, "deterministic"


@pytest.mark.xdist_group("emit_docs")
def test_check_reports_stale_and_missing(tmp_path: Path, docs: dict[str, dict[str, Any]]) -> None:
    bundle = emit.load_bundle(docs["add"], "results.json")
    files = emit.render(bundle, "macro", False)
    assert len(emit.check(tmp_path, files)) == len(files)
    assert emit.write(tmp_path, files)
    assert emit.check(tmp_path, files) == []
    assert emit.write(tmp_path, files) == [], "unchanged files are not rewritten"
    header = tmp_path / "op_host/add_custom_tiling.h"
    header.write_text(header.read_text().replace("FIELD_DEF(uint32_t, tileNum)",
                                                 "FIELD_DEF(uint32_t, tileCount)"))
    reports = emit.check(tmp_path, files)
    assert len(reports) == 1 and reports[0].startswith(f"stale: {header}")
    assert "+TILING_DATA_FIELD_DEF(uint32_t, tileNum);" in reports[0]


DRIVER = r"""
#include <cstdio>
#include "{select}"
using namespace optiling::{ns};
int main() {{
    long long raw[{nshape} + 2];
    while (true) {{
        for (int i = 0; i < {nshape} + 2; ++i) if (std::scanf("%lld", &raw[i]) != 1) return 0;
        Shape shape{{}};
{assign}
        Values values{{}};
        const Selection sel = Select(shape, raw[{nshape}], raw[{nshape} + 1], values);
        std::printf("%d %d", static_cast<int>(sel.source), sel.index);
        if (sel.source != kNone) {{
            {struct} tiling;
{fill}
{prints}
            std::printf(" %lld %llu", static_cast<long long>(BlockDim(values)),
                        static_cast<unsigned long long>(TilingKey(values)));
        }}
        std::printf("\n");
    }}
}}
"""


def _driver(spec: OperatorSpec, style: str) -> str:
    assign = "\n".join(f"        shape.{v} = raw[{i}];" for i, v in enumerate(spec.shape_vars))
    prints = []
    get = (lambda f: f"get_{f}()") if style == "macro" else (lambda f: f)
    for f in spec.tiling_fields:
        prints.append(f"            std::printf(\" %.17g\", "
                      f"static_cast<double>(tiling.{get(f.name)}));")
    for n in spec.tiling_nested:
        for f in n.fields:
            prints.append(f"            std::printf(\" %.17g\", "
                          f"static_cast<double>(tiling.{n.name}.{get(f.name)}));")
    struct = spec.tiling_struct if style == "struct" else f"optiling::{spec.tiling_struct}"
    if spec.attrs:  # the attribute values the results file records, as ReadAttrs reads them
        fill = "\n".join(["            Attrs attrs = Attrs();",
                          *(f"            attrs.{a} = {float(v)!r};"
                            for a, v in spec.attr_values.items()),
                          "            FillTiling(values, attrs, tiling);"])
    else:
        fill = "            FillTiling(values, tiling);"
    return DRIVER.format(select=f"{spec.snake_name}_tiling_select.h",
                         ns=f"{spec.snake_name}_tiling",
                         nshape=len(spec.shape_vars), assign=assign, prints="\n".join(prints),
                         struct=struct, fill=fill)


def _python_line(bundle: emit.Bundle, shape: dict[str, int], cores: tuple[int, int],
                 refine_evals: int = MAX_EVALS) -> str:
    spec = bundle.spec
    sel = bundle.select(shape, *cores, refine_evals)
    parts = [str(sel.source), str(sel.index)]
    if sel.source != NONE:
        for f in spec.tiling_fields:
            parts.append(repr(float(field_value(f.ctype, f.value.evaluate(sel.env)))))
        for n in spec.tiling_nested:
            for f in n.fields:
                parts.append(repr(float(field_value(f.ctype, f.value.evaluate(sel.env)))))
        parts.append(str(int(spec.block_dim.evaluate(sel.env))))
        key = spec.tiling_key.evaluate(sel.env) if spec.tiling_key is not None else 0
        parts.append(str(int(key)))
    return " ".join(parts)


Cases = list[tuple[dict[str, int], tuple[int, int]]]


@pytest.fixture(scope="module")
def expected(docs: dict[str, dict[str, Any]]) -> dict[str, tuple[Cases, list[str]]]:
    """Filled by :func:`_expected_lines`, once per document for both styles."""
    return {}


def _expected_lines(which: str, docs: dict[str, dict[str, Any]],
                    memo: dict[str, tuple[Cases, list[str]]]) -> tuple[Cases, list[str]]:
    """The tuned shapes and 120 seeded random ones with platforms, and what the Python side
    selects for each. Computed once per document: both styles' C++ must print the same lines
    (the Python selection, with its run-time descent, is most of the test's time)."""
    if which not in memo:
        doc = docs[which]
        bundle = emit.load_bundle(doc, "results.json")
        rng = np.random.default_rng(11)
        # (AIC, AIV) pairs: the profile's, other 910B parts, 310P (coupled), a small partition.
        platforms = [(20, 40), (24, 48), (8, 7), (4, 8), (1, 2)]
        cases: Cases = [(s["shape"], (20, 40)) for s in doc["shapes"]]
        for _ in range(120):
            shape = {v: int(np.exp(rng.uniform(0, np.log(1 << (22 if which == "add" else 13)))))
                     for v in bundle.spec.shape_vars}
            cases.append((shape, platforms[int(rng.integers(len(platforms)))]))
        memo[which] = cases, [_python_line(bundle, shape, cores) for shape, cores in cases]
    return memo[which]


@needs_gxx
@pytest.mark.parametrize("which", ["add", "matmul"])
@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.xdist_group("emit_docs")
def test_emitted_code_compiles_and_selects_like_python(
        which: str, style: str, tmp_path: Path, docs: dict[str, dict[str, Any]],
        expected: dict[str, tuple[Cases, list[str]]]) -> None:
    doc = docs[which]
    bundle = emit.load_bundle(doc, "results.json")
    spec = bundle.spec
    files = emit.render(bundle, style, op_host=True)
    emit.write(tmp_path, files)
    for rel in files:
        path = tmp_path / rel
        for std in ("c++11", "c++17"):
            flags = ["g++", f"-std={std}", "-Wall", "-Wextra", "-Werror", f"-I{STUB}",
                     f"-I{path.parent}"]
            proc = subprocess.run([*flags, "-fsyntax-only", "-x", "c++", str(path)],
                                  capture_output=True, text=True)
            assert proc.returncode == 0, (rel, std, proc.stderr[:3000])
    driver = tmp_path / "op_host" / "driver.cpp"
    driver.write_text(_driver(spec, style))
    exe = tmp_path / "driver"
    proc = subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-O1", f"-I{STUB}",
                           f"-I{driver.parent}", str(driver), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:3000]
    cases, py_lines = _expected_lines(which, docs, expected)
    stdin = "\n".join(" ".join(str(x) for x in (*s.values(), *c)) for s, c in cases) + "\n"
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, check=True)
    cpp_lines = out.stdout.strip().splitlines()
    assert len(cpp_lines) == len(cases)
    sources = []
    for (shape, cores), cpp_line, py_line in zip(cases, cpp_lines, py_lines, strict=True):
        assert cpp_line.split() == py_line.split() or [
            float(x) for x in cpp_line.split()] == [float(x) for x in py_line.split()], (
            shape, cores, cpp_line, py_line)
        sources.append(int(cpp_line.split()[0]))
    assert sources[: len(doc["shapes"])] == [EXACT] * len(doc["shapes"])
    assert {1, BASELINE} & set(sources), "untuned shapes exercise nearest or baseline"


TILING_FUNC_DRIVER = r"""
#include <cstdio>
#include "matmul_custom_tiling_select.h"
int main() {{
    long long m, n, k, aic, aiv;
    while (std::scanf("%lld %lld %lld %lld %lld", &m, &n, &k, &aic, &aiv) == 5) {{
        gert::TilingContext ctx;
        ctx.inputs.push_back(gert::StorageShape({{m, k}}, {{m, k}}));
        ctx.inputs.push_back(gert::StorageShape({{k, n}}, {{k, n}}));
        ctx.platform.aicCoreNum = static_cast<uint32_t>(aic);
        ctx.platform.aivCoreNum = static_cast<uint32_t>(aiv);
        const ge::graphStatus status = optiling::matmul_custom_tiling::TilingFunc(&ctx);
        std::printf("%u %u %llu %zu %zu\n", status, ctx.GetBlockDim(),
                    static_cast<unsigned long long>(ctx.GetTilingKey()), ctx.raw.size,
                    ctx.GetWorkspaceSizes(1)[0]);
    }}
}}
"""


@needs_gxx
@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.xdist_group("emit_docs")
def test_generated_tiling_func_fills_the_context(style: str, tmp_path: Path,
                                                 docs: dict[str, dict[str, Any]],
                                                 hw: HardwareProfile) -> None:
    """The TilingFunc reads shapes from the context's inputs, queries both core counts, and
    sets block dim (AIC units: the Matmul spec runs MIX), tiling key, tiling data and the
    library workspace as the Python side predicts."""
    doc = docs["matmul"]
    bundle = emit.load_bundle(doc, "results.json")
    spec = bundle.spec
    assert spec.kernel_mode == "mix" and spec.system_workspace == "lib_api"
    emit.write(tmp_path, emit.render(bundle, style, op_host=True))
    host = tmp_path / "op_host"
    (host / "main.cpp").write_text(TILING_FUNC_DRIVER.format())
    exe = tmp_path / "tiling"
    proc = subprocess.run(["g++", "-std=c++11", "-Wall", "-Wextra", "-Werror", f"-I{STUB}",
                           f"-I{host}", str(host / "main.cpp"), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:3000]
    cases = [(s["shape"]["M"], s["shape"]["N"], s["shape"]["K"], 20, 40) for s in doc["shapes"]]
    cases += [(300, 5000, 700, 20, 40), (4096, 4096, 4096, 24, 48), (16, 16, 16, 8, 16)]
    # Twice over: the second pass is served by the per-shape cache and must be the same.
    cases += cases
    stdin = "\n".join(" ".join(map(str, c)) for c in cases) + "\n"
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, check=True)
    bundle = emit.load_bundle(doc, "results.json")
    for (m, n, k, aic, aiv), line in zip(cases, out.stdout.strip().splitlines(), strict=True):
        status, block_dim, key, size, workspace = line.split()
        sel = bundle.select({"M": m, "N": n, "K": k}, aic, aiv)
        assert sel.source != NONE
        assert int(status) == 0
        used = int(sel.env["usedCoreNum"])
        assert used <= aiv and int(block_dim) == -(-used // 2) <= aic
        assert int(key) == 0  # the matmul spec declares no tiling key
        assert int(size) == 216, "TCubeTiling (200 B) + M, N, K + 4 B padding"
        assert int(workspace) == 16 * 1024 * 1024, "user 0 + the stub's GetLibApiWorkSpaceSize"
