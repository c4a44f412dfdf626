"""Run-time dispatch on shapes nobody tuned: the shape-generic model equals the engine bit for
bit, its C++ equals the Python, the selection ranks candidates by it and never does worse than
the fallback, the fallback walk finds a valid configuration where the baseline breaks, and
the compiled selection code of every built-in spec chooses what the Python side chooses."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune.emit import profiles as emit_profiles
from ascend_tune.emit import render as emit
from ascend_tune.emit.selection import (
    BASELINE,
    EXACT,
    MODEL,
    NONE,
    REFINED,
    WALK,
    derive,
    runtime_env,
)
from ascend_tune.emit.selection import select as select_config
from ascend_tune.emit.walk import walk
from ascend_tune.expr import CPP_RUNTIME
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.dispatch import dispatch_model
from ascend_tune.model.dispatch_cpp import CPP_DISPATCH_RUNTIME
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results
from ascend_tune.spec import OperatorSpec, evaluate_baseline, load_spec
from ascend_tune.tune.shape import TuneSettings, tune_shape
from tests.conftest import ROOT, STUB, needs_gxx, slow_unless
from tests.test_emit import _driver, _python_line
from tests.test_model_fastpaths import PITCH_SHAPES

EXAMPLES = sorted(p.parent.name for p in (ROOT / "examples").glob("*/results.json"))


def _example(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "examples" / name / "results.json").read_text())  # type: ignore[no-any-return]


def _unseen(spec: OperatorSpec, tuned: list[dict[str, int]], rng: np.random.Generator,
            n: int) -> list[dict[str, int]]:
    """Shapes near the tuned family: each variable drawn log-uniformly from 1 (or its
    minimum) to twice the largest tuned value (capped by its maximum), at the nearest multiple
    the kernel accepts (shape.V.multiple_of)."""
    out = []
    for _ in range(n):
        shape = {}
        for v in spec.shape_vars:
            lo = max(1, spec.shape_min[v])
            hi = 2 * max(s[v] for s in tuned)
            if spec.shape_max.get(v) is not None:
                hi = min(hi, spec.shape_max[v])
            x = round(math.exp(rng.uniform(math.log(lo), math.log(max(hi, lo)))))
            m = spec.shape_multiple.get(v, 1)  # only shapes the kernel accepts
            shape[v] = min(max(lo, (x + m // 2) // m * m), hi // m * m)
        out.append(shape)
    return out


def _pitch_shapes(name: str) -> list[dict[str, int]]:
    return [PITCH_SHAPES[name]] if name in PITCH_SHAPES else []


@pytest.fixture(scope="module")
def bundles() -> dict[str, emit.Bundle]:
    out = {}
    for name in EXAMPLES:
        doc = _example(name)
        out[name] = emit.load_bundle(doc, f"examples/{name}/results.json")
    return out


@pytest.mark.parametrize("name", EXAMPLES)
def test_dispatch_model_is_the_engine_on_unseen_shapes(name: str,
                                                       bundles: dict[str, emit.Bundle]) -> None:
    b = bundles[name]
    spec, hw = b.spec, b.hw
    model = dispatch_model(spec, hw)
    rng = np.random.default_rng(5)
    checked = 0
    # Plus a shape with misaligned operand pitches beyond the ND2NZ field (65 535 elements).
    for shape in _unseen(spec, [s for s, _ in b.shapes], rng, 3) + _pitch_shapes(name):
        engine = ShapeModel(spec, hw, shape)
        genomes = rng.integers(0, engine.sizes, size=(400, engine.sizes.size))
        # Random configurations, the tuned ones and the selected one (valid where random ones
        # rarely are).
        picked = b.select(shape).config
        values = np.vstack([engine.values(genomes),
                            np.array([[c[p] for p in spec.params]
                                      for c in [*b.candidates(), picked]])])
        ev = engine.evaluate(values)
        for row, ok, want in zip(values, ev.valid, ev.latency_us, strict=True):
            if ok and np.isfinite(want):
                got = model.latency_us([shape[v] for v in spec.shape_vars],
                                       [int(x) for x in row], int(hw["cube_cores"]),
                                       int(hw["vector_cores"]))
                assert got == want, (shape, row)
                checked += 1
    assert checked > 0


@needs_gxx
def test_dispatch_model_in_cpp_returns_the_python_bits(tmp_path: Path,
                                                       bundles: dict[str, emit.Bundle]) -> None:
    rng = np.random.default_rng(8)
    for name, b in bundles.items():
        spec, hw = b.spec, b.hw
        model = dispatch_model(spec, hw)
        rows = []
        for shape in _unseen(spec, [s for s, _ in b.shapes], rng, 4) + _pitch_shapes(name):
            engine = ShapeModel(spec, hw, shape)
            genomes = rng.integers(0, engine.sizes, size=(300, engine.sizes.size))
            for row in engine.values(genomes)[:60]:
                config = [int(x) for x in row]
                for aic, aiv in ((20, 40), (8, 7)):
                    rows.append(([shape[v] for v in spec.shape_vars], config, aic, aiv))
        source = (CPP_RUNTIME + CPP_DISPATCH_RUNTIME + "using namespace ascend_tune_rt;\n"
                  + model.cpp("PredictUs") + _PREDICT_MAIN)
        cpp = tmp_path / f"{name}.cpp"
        cpp.write_text(source)
        exe = tmp_path / name
        proc = subprocess.run(["g++", "-std=c++11", "-O2", "-Wall", "-Wextra", "-Werror",
                               str(cpp), "-o", str(exe)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[:3000]
        stdin = f"{len(spec.shape_vars)} {len(spec.params)}\n" + "".join(
            " ".join(map(str, [*s, *c, aic, aiv])) + "\n" for s, c, aic, aiv in rows)
        out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True,
                             check=True).stdout.split()
        assert len(out) == len(rows)
        for (s, c, aic, aiv), text in zip(rows, out, strict=True):
            want = model.latency_us(s, c, aic, aiv)
            got = float.fromhex(text)
            assert got == want or (math.isnan(got) and math.isnan(want)), (name, s, c, aic)


_PREDICT_MAIN = r"""
#include <cstdio>
int main() {
    int ns, np_;
    if (std::scanf("%d %d", &ns, &np_) != 2) return 1;
    int64_t shape[16], config[64];
    long long x, aic, aiv;
    while (true) {
        for (int i = 0; i < ns; ++i) { if (std::scanf("%lld", &x) != 1) return 0; shape[i] = x; }
        for (int i = 0; i < np_; ++i) { if (std::scanf("%lld", &x) != 1) return 0; config[i] = x; }
        if (std::scanf("%lld %lld", &aic, &aiv) != 2) return 0;
        std::printf("%a\n", PredictUs(shape, config, aic, aiv));
    }
}
"""


def test_selection_is_the_fastest_valid_candidate_by_the_model(
        bundles: dict[str, emit.Bundle]) -> None:
    rng = np.random.default_rng(3)
    refined = 0
    for name, b in bundles.items():
        spec, hw = b.spec, b.hw
        aic, aiv = int(hw["cube_cores"]), int(hw["vector_cores"])
        env = runtime_env(spec, hw, aic, aiv)
        for shape in _unseen(spec, [s for s, _ in b.shapes], rng, 6):
            sel = b.select(shape)
            if sel.source in (EXACT, NONE, WALK):
                continue
            engine = ShapeModel(spec, hw, shape)
            options = [*b.candidates(), evaluate_baseline(spec, {**env, **shape})]
            values = np.array([[c[p] for p in spec.params] for c in options], dtype=np.int64)
            lat = engine.evaluate(values).latency_us
            times = [float(t) if derive(spec, env, shape, c) is not None else math.inf
                     for c, t in zip(options, lat, strict=True)]
            start = options[sel.index] if sel.index >= 0 else options[-1]
            # The table's fastest valid entry (ties to the earlier) is the pick, or where the
            # descent started from.
            assert times[options.index(start)] == min(times), (name, shape)
            assert start == options[times.index(min(times))], (name, shape)
            if sel.source == REFINED:
                assert sel.latency_us < min(times), (name, shape)
                assert derive(spec, env, shape, sel.config) is not None
                again = ShapeModel(spec, hw, shape).evaluate(
                    np.array([[sel.config[p] for p in spec.params]], dtype=np.int64))
                assert float(again.latency_us[0]) == sel.latency_us
                refined += 1
            else:
                assert sel.latency_us == min(times) and sel.config == start, (name, shape)
            base = times[-1]
            assert sel.latency_us <= base, "never slower than the fallback"
    assert refined > 0, "the descent improved no pick on 78 unseen shapes"


def _broken_matmul(tmp_path: Path) -> OperatorSpec:
    """matmul with the old baseline's nDim=40, which leaves cores empty on small N (the
    built-in baseline is valid on every shape now: tests/test_baseline_domain.py)."""
    from tests.test_baseline_domain import _broken_matmul as broken

    return load_spec(broken(tmp_path))


def test_the_walk_finds_a_configuration_where_the_baseline_breaks(
        hw: HardwareProfile, tmp_path: Path) -> None:
    spec = _broken_matmul(tmp_path)
    env = runtime_env(spec, hw, 20, 40)
    for shape in ({"M": 1, "N": 14336, "K": 4096}, {"M": 131, "N": 2048, "K": 7168},
                  {"M": 26, "N": 1000, "K": 4096}):
        base = evaluate_baseline(spec, {**env, **shape})
        assert derive(spec, env, shape, base) is None, "the baseline breaks here"
        # Nothing tuned at all: the walk is the only way to a valid launch.
        sel = select_config(spec, hw, [], [], shape, 20, 40)
        assert sel.source in (WALK, REFINED)
        assert sel.index == -1
        assert derive(spec, env, shape, sel.config) is not None
        model = dispatch_model(spec, hw)
        values = [shape[v] for v in spec.shape_vars]
        walked = walk(spec, env, shape, base,
                      lambda c, m=model, v=values: m.latency_us(v, c, 20, 40))
        assert walked is not None
        walked_us = model.latency_us(values, [walked[p] for p in spec.params], 20, 40)
        if sel.source == WALK:
            assert sel.config == walked and sel.latency_us == walked_us
        else:  # the descent started from the walk's configuration and improved it
            assert sel.latency_us < walked_us
        # The built-in baseline is valid there.
        builtin = load_spec("matmul")
        assert derive(builtin, env, shape, evaluate_baseline(builtin, {**env, **shape}))
    # A shape with no valid configuration anywhere gets none (blockDim cannot be 0 cores).
    add = load_spec("add")
    assert select_config(add, hw, [], [], {"totalLength": 1 << 20}, 0, 0).source == NONE


def _topk_doc(spec: OperatorSpec, hw: HardwareProfile,
              shapes: list[dict[str, int]]) -> dict[str, Any]:
    doc: dict[str, Any] = {**results.header(spec.name, spec.sha256, spec.source_text, hw.name,
                                            hw.sha256, hw.data, "auto", 0, 300, top_k=4),
                           "shapes": [tune_shape(spec, hw, s, TuneSettings("auto", 300, 0, 4))
                                      for s in shapes]}
    return json.loads(results.to_text(doc))  # type: ignore[no-any-return]


@needs_gxx
@pytest.mark.parametrize("name", [pytest.param(n, marks=slow_unless(n, {"add", "matmul"}))
                                  for n in EXAMPLES])
def test_compiled_selection_matches_python_on_unseen_shapes(
        name: str, tmp_path: Path, bundles: dict[str, emit.Bundle]) -> None:
    b = bundles[name]
    spec = b.spec
    if name in ("matmul", "rmsnorm"):  # runners-up in the candidate table too
        tuned = [s for s, _ in b.shapes][:3]
        if name == "matmul":  # and a baseline that breaks, so the walk runs in C++ too
            spec = _broken_matmul(tmp_path)
        b = emit.load_bundle(_topk_doc(spec, b.hw, tuned), "topk.json")
        assert len(b.candidates()) > len(b.shapes)
    files = emit.render(b, "macro")
    emit.write(tmp_path, files)
    driver = tmp_path / "op_host" / "driver.cpp"
    driver.write_text(_driver(spec, "macro"))
    exe = tmp_path / "driver"
    proc = subprocess.run(["g++", "-std=c++11", "-Wall", "-Wextra", "-Werror", "-O1",
                           f"-I{STUB}", f"-I{driver.parent}", str(driver), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:3000]
    rng = np.random.default_rng(17)
    platforms = [(20, 40), (24, 48), (8, 16), (1, 2), (30, 60)]
    cases = [(s, (20, 40)) for s, _ in b.shapes]
    cases += [(s, platforms[i % len(platforms)])
              for i, s in enumerate(_unseen(spec, [s for s, _ in b.shapes], rng, 40))]
    if name == "matmul":  # the baseline breaks here, and on a 3-core part every candidate does
        cases += [(s, c) for s in ({"M": 1, "N": 14336, "K": 4096},
                                   {"M": 131, "N": 2048, "K": 7168})
                  for c in ((20, 40), (3, 6))]
    if name == "batch_matmul":  # batches nobody tuned: 3 of these 6 take the joint split move
        cases += [(s, c) for s in ({"B": 41, "M": 1024, "N": 1024, "K": 1024},
                                   {"B": 115, "M": 1, "N": 4096, "K": 128},
                                   {"B": 257, "M": 2048, "N": 2048, "K": 128})
                  for c in ((20, 40), (24, 48))]
    stdin = "".join(" ".join(str(x) for x in (*s.values(), *c)) + "\n" for s, c in cases)
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == len(cases)
    sources = set()
    for (shape, cores), cpp_line in zip(cases, lines, strict=True):
        py_line = _python_line(b, shape, cores)
        assert [float(x) for x in cpp_line.split()] == [float(x) for x in py_line.split()], (
            shape, cores, cpp_line, py_line)
        sources.add(int(cpp_line.split()[0]))
    assert EXACT in sources and (sources & {MODEL, BASELINE, WALK, REFINED})
    if name == "matmul":
        assert sources & {WALK, REFINED}, sources


@needs_gxx
@pytest.mark.parametrize("budget", [0, 9, 61])
def test_the_compiled_descent_stops_where_python_stops(
        budget: int, tmp_path: Path, bundles: dict[str, emit.Bundle]) -> None:
    """-DASCEND_TUNE_REFINE_EVALS=<budget> against select(refine_evals=budget): the budget
    runs out inside the single-parameter sweep (9), inside the pair moves (61 on layernorm's
    4 parameters: 39 + 10 + 8 + 1 = 58 single moves first) or turns the descent off (0)."""
    b = bundles["layernorm"]
    emit.write(tmp_path, emit.render(b, "macro"))
    driver = tmp_path / "op_host" / "driver.cpp"
    driver.write_text(_driver(b.spec, "macro"))
    exe = tmp_path / "driver"
    proc = subprocess.run(["g++", "-std=c++11", "-O1", f"-DASCEND_TUNE_REFINE_EVALS={budget}",
                           f"-I{STUB}", f"-I{driver.parent}", str(driver), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:3000]
    cases = [({"rows": 188, "cols": 7168}, (20, 40)), ({"rows": 427, "cols": 5120}, (20, 40)),
             ({"rows": 11, "cols": 7168}, (8, 16)), ({"rows": 3000, "cols": 100}, (20, 40))]
    stdin = "".join(" ".join(str(x) for x in (*s.values(), *c)) + "\n" for s, c in cases)
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    sources = set()
    for (shape, cores), cpp_line in zip(cases, lines, strict=True):
        py_line = _python_line(b, shape, cores, budget)
        assert [float(x) for x in cpp_line.split()] == [float(x) for x in py_line.split()], (
            shape, cores, cpp_line, py_line)
        sources.add(int(cpp_line.split()[0]))
    if budget == 0:
        assert REFINED not in sources
    if budget == 61:  # rows=427 improves within its single moves (colFactor 4096 -> 8192)
        assert REFINED in sources


def test_api_select_is_the_emitted_rule(tmp_path: Path, bundles: dict[str, emit.Bundle]) -> None:
    from ascend_tune import api
    from ascend_tune.base.errors import AscendTuneError

    b = bundles["matmul"]
    path = tmp_path / "mm.json"
    path.write_text(json.dumps(b.doc))
    for shape, cores in (({"M": 77, "N": 4096, "K": 4096}, (24, 48)),
                         ({"M": 1, "N": 14336, "K": 4096}, (20, 40)),
                         (dict(b.shapes[0][0]), (20, 40))):
        pick = api.select(path, shape, aic=cores[0], aiv=cores[1])
        sel = b.select(shape, *cores)
        assert pick.config == sel.config and pick.index == sel.index
        assert pick.source == ("exact", "model", "baseline", "none", "walk", "refined")[sel.source]
        assert pick.derived["blockDim"] == sel.env["blockDim"]
    exact = api.select(b.doc, dict(b.shapes[0][0]))
    assert exact.source == "exact"
    # The exact tuned shape's winner has the model's time on this chip, as any pick has.
    model = dispatch_model(b.spec, b.hw)
    values = [int(b.shapes[0][0][v]) for v in b.spec.shape_vars]
    cores = emit_profiles.cores(b)
    assert math.isfinite(exact.latency_us) and exact.latency_us == model.latency_us(
        values, [exact.config[p] for p in b.spec.params], *cores)
    with pytest.raises(AscendTuneError, match="aic must be a core count"):
        api.select(b.doc, {"M": 8, "N": 8, "K": 8}, aic=0)
    with pytest.raises(AscendTuneError, match="shape"):
        api.select(b.doc, {"M": 8, "N": 8})


_MULTI_DRIVER = r"""
#include <cstdio>
#include "{select}"
using namespace optiling::{ns};
int main() {{
    long long raw[{nshape} + 4];
    while (true) {{
        for (int i = 0; i < {nshape} + 4; ++i) if (std::scanf("%lld", &raw[i]) != 1) return 0;
        Shape shape{{}};
{assign}
        const int32_t picked = PickProfile(
            static_cast<platform_ascendc::SocVersion>(raw[{nshape} + 2]), raw[{nshape}],
            raw[{nshape} + 1], static_cast<uint64_t>(raw[{nshape} + 3]));
        std::printf("%d ", picked);
        switch (picked) {{
{cases}
        }}
        std::printf("\n");
    }}
}}
"""


@needs_gxx
def test_one_package_for_several_chips_selects_as_each_chip_would(
        tmp_path: Path, hw: HardwareProfile) -> None:
    """910B1-B4 and 310P3 tuned separately: the merged selection code gives each platform
    the profile it should pick and that profile's own choice; a chip nobody tuned for gets the
    nearest profile re-ranked with its own core counts."""
    from ascend_tune import api
    from ascend_tune.emit import profiles

    spec = load_spec("rmsnorm")
    names = ["ascend910b3", "ascend910b1", "ascend910b2", "ascend910b4"]
    shapes = [{"rows": r, "cols": 4096} for r in (1, 64, 4096)]
    bundles = []
    for name in names:
        profile = api.load_profile(name)
        doc = {**results.header(spec.name, spec.sha256, spec.source_text, profile.name,
                                profile.sha256, profile.data, "auto", 0, 300),
               "shapes": [tune_shape(spec, profile, s, TuneSettings("auto", 300, 0))
                          for s in shapes]}
        path = tmp_path / f"{name}.json"
        path.write_text(results.to_text(doc))
        bundles.append(emit.load_bundle(json.loads(path.read_text()), name))
    files = emit.render_all(bundles, "macro")
    emit.write(tmp_path / "proj", files)
    op_host = tmp_path / "proj" / "op_host"
    case_lines = []
    for i, b in enumerate(bundles):
        ns = profiles.namespace(i, b)
        prints = "\n".join(
            f'                std::printf(" %.17g", static_cast<double>(tiling.get_{f.name}()));'
            for f in spec.tiling_fields)
        case_lines.append(f"""            case {i}: {{
                Values_{i} values{{}};
                const {ns}::Selection sel = {ns}::Select(shape, raw[{len(spec.shape_vars)}],
                                                       raw[{len(spec.shape_vars)} + 1], values);
                std::printf("%d %d", static_cast<int>(sel.source), sel.index);
                if (sel.source != {ns}::kNone) {{
                    optiling::{spec.tiling_struct} tiling;
                    {ns}::FillTiling(values, tiling);
{prints}
                    std::printf(" %lld %llu", static_cast<long long>({ns}::BlockDim(values)),
                                static_cast<unsigned long long>({ns}::TilingKey(values)));
                }}
                break;
            }}""".replace(f"Values_{i}", f"{ns}::Values"))
    assign = "\n".join(f"        shape.{v} = raw[{i}];" for i, v in enumerate(spec.shape_vars))
    driver = op_host / "driver.cpp"
    driver.write_text(_MULTI_DRIVER.format(
        select=f"{spec.snake_name}_tiling_select.h", ns=f"{spec.snake_name}_tiling",
        nshape=len(spec.shape_vars), assign=assign, cases="\n".join(case_lines)))
    exe = tmp_path / "driver"
    proc = subprocess.run(["g++", "-std=c++11", "-Wall", "-Wextra", "-Werror", "-O1",
                           f"-I{STUB}", f"-I{op_host}", str(driver), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:3000]
    socs = {"ASCEND910B": 1, "ASCEND310P": 2}
    # Each tuned chip's own platform, then chips nobody tuned for (a 910B part with 22 / 44
    # cores, a 16-core partition).
    gib = 1 << 30
    platforms = [(20, 40, "ASCEND910B", 64 * gib), (20, 40, "ASCEND910B", 32 * gib),
                 (24, 48, "ASCEND910B", 64 * gib), (22, 44, "ASCEND910B", 64 * gib),
                 (16, 32, "ASCEND910B", 0), (8, 16, "ASCEND310P", 8 * gib)]
    rng = np.random.default_rng(2)
    cases = [({"rows": int(r), "cols": int(c)}, p) for p in platforms
             for r, c in zip(rng.integers(1, 9000, 6), rng.choice([1024, 4096, 5120], 6),
                             strict=True)]
    stdin = "".join(f"{s['rows']} {s['cols']} {a} {v} {socs[soc]} {h}\n"
                    for s, (a, v, soc, h) in cases)
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, check=True)
    for (shape, (aic, aiv, soc, hbm)), line in zip(cases, out.stdout.strip().splitlines(),
                                                    strict=True):
        picked, sel = profiles.select(bundles, shape, soc, aic, aiv, hbm)
        assert int(line.split()[0]) == picked, (shape, aic, soc)
        want = _python_line(bundles[picked], shape, (aic, aiv))
        assert [float(x) for x in line.split()[1:]] == [float(x) for x in want.split()]
        # The API says the same.
        assert api.select([b.doc for b in bundles], shape, aic=aic, aiv=aiv, soc=soc.lower(),
                          hbm_bytes=hbm).config == sel.config
    # Each tuned chip's platform picks its own profile: B3 (64 GiB) and B4 (32 GiB) report the
    # same SoC and cores, their HBM tells them apart; B1 and B2 differ only in clock, which
    # the platform does not report: the first given, B1, serves both.
    assert [profiles.pick(bundles, "ASCEND910B", a, v, h) for a, v, h in (
        (20, 40, 64 * gib), (20, 40, 32 * gib), (24, 48, 64 * gib))] == [0, 3, 1]
    assert profiles.pick(bundles, "ASCEND910B", 20, 40) == 0  # HBM unknown: the first


def _one_shape_bundle(spec: OperatorSpec, profile: HardwareProfile, shape: dict[str, int]
                      ) -> emit.Bundle:
    doc = {**results.header(spec.name, spec.sha256, spec.source_text, profile.name,
                            profile.sha256, profile.data, "auto", 0, 100),
           "shapes": [tune_shape(spec, profile, shape, TuneSettings("auto", 100, 0))]}
    return emit.load_bundle(json.loads(results.to_text(doc)), profile.name)


@needs_gxx
def test_kernel_constants_per_architecture_in_one_package(tmp_path: Path) -> None:
    """add on 910B3 (UB 192 KiB) and 310P3 (256 KiB): the kernel is built once per SoC, and
    __NPU_ARCH__ picks the section; two profiles of one architecture must still agree."""
    from ascend_tune import api
    from ascend_tune.base.errors import AscendTuneError

    spec = load_spec("add")
    shape = {"totalLength": 4096}
    b3, p3 = (_one_shape_bundle(spec, api.load_profile(n), shape)
              for n in ("ascend910b3", "ascend310p3"))
    files = emit.render_all([b3, p3], "macro")
    rel = "op_kernel/add_custom_tuned_constants.h"
    assert "#if defined(__NPU_ARCH__) && __NPU_ARCH__ == 2002  // NpuArch 2002: ascend310p3" \
        in files[rel]
    emit.write(tmp_path, files)
    main = tmp_path / "main.cpp"
    main.write_text('#include <cstdio>\n#include "add_custom_tuned_constants.h"\n'
                    'int main() { std::printf("%lld", static_cast<long long>('
                    "add_custom_tuned::UB_BYTES)); }\n")
    got = {}
    for arch in (None, 2201, 2002):
        exe = tmp_path / f"c{arch}"
        flags = [f"-D__NPU_ARCH__={arch}"] if arch else []
        subprocess.run(["g++", "-std=c++11", *flags, f"-I{tmp_path / 'op_kernel'}", str(main),
                        "-o", str(exe)], check=True)
        got[arch] = int(subprocess.run([str(exe)], capture_output=True, text=True,
                                       check=True).stdout)
    # The host (no __NPU_ARCH__) and 2201 see the first profile's; 2002 the 310P3's.
    assert got == {None: int(b3.hw["ub_bytes"]), 2201: int(b3.hw["ub_bytes"]),
                   2002: int(p3.hw["ub_bytes"])} and got[2002] != got[2201]
    # A profile of the same architecture with another UB cannot share the kernel binary.
    other = tmp_path / "b3_big_ub.yaml"
    other.write_text("name: b3_big_ub\nbase: ascend910b3\nmemory:\n"
                     "  ub_bytes: {value: 262144, source: test, confidence: low}\n")
    big = _one_shape_bundle(spec, api.load_profile(str(other)), shape)
    with pytest.raises(AscendTuneError, match="of one architecture \\(2201"):
        emit.render_all([b3, p3, big], "macro")


def test_a_candidate_whose_split_does_not_fit_the_batch_competes_re_split(
        bundles: dict[str, emit.Bundle], monkeypatch: pytest.MonkeyPatch) -> None:
    """B=41 on 40 issuers: the candidate tuned with the fastest tiles has a core split that
    does not fit here (invalid), and no descent from the valid ones reaches it (baseN,
    baseK, stepKb, dbL1, dbL0C and the split all differ). Re-split, it is the shape's
    optimum by the search (395 us, against 512 us without the re-split)."""
    from ascend_tune.emit import refine, selection

    b = bundles["batch_matmul"]
    spec, hw = b.spec, b.hw
    shape = {"B": 41, "M": 1024, "N": 1024, "K": 1024}
    sel = b.select(shape)
    assert sel.source == MODEL
    start = b.candidates()[sel.index]
    env = runtime_env(spec, hw, int(hw["cube_cores"]), int(hw["vector_cores"]))
    assert derive(spec, env, shape, start) is None  # the candidate as tuned fails here
    group = (refine.split_group(spec) or ((), ""))[0]
    assert any(sel.config[spec.params[g]] != start[spec.params[g]] for g in group)
    assert all(sel.config[p] == start[p] for j, p in enumerate(spec.params) if j not in group)
    assert sel.latency_us < 400.0
    monkeypatch.setattr(selection, "RESPLIT_EVALS", 0)
    assert b.select(shape).latency_us > 500.0
