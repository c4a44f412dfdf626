"""Conformance suites for the extension points: every registered expression function, emit
style, measurement reader and search strategy is held to the same checks, so adding one to its
registry is enough to have it tested (and a new one that breaks a rule fails here)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune.base.errors import AscendTuneError, ExprError
from ascend_tune.calibrate import measurements
from ascend_tune.emit import render as emit
from ascend_tune.emit.styles import STYLES, emit_style
from ascend_tune.expr import CPP_RUNTIME, FUNCTIONS, Kind, parse
from ascend_tune.hardware import HardwareProfile
from ascend_tune.results import format as results
from ascend_tune.search.problem import run
from ascend_tune.search.strategies import STRATEGIES, Problem
from ascend_tune.spec import OperatorSpec
from ascend_tune.tune.shape import TuneSettings, tune_shape
from tests.conftest import DATA, needs_gxx

INTS = ("a", "b", "c", "d", "e", "f", "g", "h")
SYMS = {**dict.fromkeys(INTS, Kind.INT), "x": Kind.FLOAT, "y": Kind.FLOAT, "p": Kind.BOOL}


def _calls(name: str) -> list[str]:
    """Calls of one function at its smallest and largest arity, with integer arguments and
    (where allowed) float and boolean ones, so every kind rule is exercised."""
    fn = FUNCTIONS[name]
    out = []
    for n in sorted({fn.min_args, fn.max_args}):
        ints = list(INTS[:n])
        if fn.condition:
            out += [f"{name}(a > b, c, d)", f"{name}(p, x, c)", f"{name}(a < 0, p, b > c)"]
            continue
        out.append(f"{name}({', '.join(ints)})")
        if not fn.int_args:
            out.append(f"{name}({', '.join(['x', *ints[1:]])})")
        out.append(f"{name}({', '.join(['p', *ints[1:]])})")
    return out


CALLS = [(name, src) for name in sorted(FUNCTIONS) for src in _calls(name)]


def _env(n: int = 400) -> dict[str, Any]:
    rng = np.random.default_rng(11)
    env: dict[str, Any] = {v: rng.integers(-40, 300, n) for v in INTS}
    env["b"] = rng.integers(-9, 17, n)  # divisors and alignments near zero, both signs
    env["x"] = rng.uniform(-5, 40, n).round(3)
    env["y"] = rng.uniform(0.5, 4, n).round(3)
    env["p"] = rng.integers(0, 2, n).astype(bool)
    return env


def test_every_function_is_documented_and_rejects_wrong_arity() -> None:
    for name, fn in FUNCTIONS.items():
        assert fn.name == name and fn.doc, name
        assert 1 <= fn.min_args <= fn.max_args, name
        with pytest.raises(ExprError, match=f"'{name}' takes"):
            parse(f"{name}({', '.join(['a'] * (fn.max_args + 1))})", SYMS)
        if fn.int_args:
            with pytest.raises(ExprError, match="needs integer arguments"):
                parse(f"{name}({', '.join(['x'] * fn.min_args)})", SYMS)


@pytest.mark.parametrize(("name", "src"), CALLS)
def test_function_spans_bound_every_value_and_checked_agrees(name: str, src: str) -> None:
    e = parse(src, SYMS)
    env = _env()
    value = np.broadcast_to(np.asarray(e.evaluate(env)), (400,))
    leaves = {k: (v.min().item(), v.max().item()) if v.dtype != bool else (0, 1)
              for k, v in env.items() if k in e.names}
    lo, hi = e.root.span(leaves)
    assert lo <= value.min() and value.max() <= hi, (src, (lo, hi), value.min(), value.max())
    checked, bad = e.root.checked(env)
    assert not np.any(bad), src  # small inputs never leave int64
    np.testing.assert_array_equal(np.broadcast_to(np.asarray(checked), (400,)), value, src)
    kind_of = {Kind.INT: "iu", Kind.FLOAT: "f", Kind.BOOL: "b"}[e.kind]
    assert value.dtype.kind in kind_of, (src, e.kind, value.dtype)


@needs_gxx
def test_every_function_means_the_same_in_cpp(tmp_path: Path) -> None:
    """The emitted C++ (through CPP_RUNTIME) computes what numpy computed, row by row."""
    env = _env()
    parsed = [parse(src, SYMS) for _name, src in CALLS]
    lines = [f'  std::printf("%.17g ", static_cast<double>({e.to_cpp(str)}));' for e in parsed]
    program = (CPP_RUNTIME + "#include <cstdio>\nusing namespace ascend_tune_rt;\nint main() {\n"
               f"  long long {', '.join('r' + v for v in INTS)}; double x, y; int rp;\n"
               f"  while (std::scanf(\"{' '.join(['%lld'] * len(INTS))} %lf %lf %d\", "
               f"{', '.join('&r' + v for v in INTS)}, &x, &y, &rp) == {len(INTS) + 3}) {{\n"
               f"  const int64_t {', '.join(f'{v} = r{v}' for v in INTS)}; const bool p = rp;\n"
               f"  (void)p; (void)x; (void)y; {'; '.join(f'(void){v}' for v in INTS)};\n"
               + "\n".join(lines) + '\n  std::printf("\\n");\n  }\n}\n')
    src = tmp_path / "functions.cpp"
    src.write_text(program)
    exe = tmp_path / "functions"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-O1", str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    rows = [" ".join([*(str(env[v][i]) for v in INTS), repr(float(env["x"][i])),
                      repr(float(env["y"][i])), str(int(env["p"][i]))]) for i in range(400)]
    out = subprocess.run([str(exe)], input="\n".join(rows), capture_output=True, text=True,
                         check=True)
    got = np.array([list(map(float, line.split())) for line in out.stdout.splitlines()])
    for j, ((_name, source), e) in enumerate(zip(CALLS, parsed, strict=True)):
        want = np.broadcast_to(np.asarray(e.evaluate(env), dtype=np.float64), (400,))
        np.testing.assert_allclose(got[:, j], want, rtol=1e-12, atol=1e-12, err_msg=source)


# ---- emit styles ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def add_doc(hw: HardwareProfile, add_spec: OperatorSpec) -> dict[str, Any]:
    doc: dict[str, Any] = {**results.header(add_spec.name, add_spec.sha256, add_spec.source_text,
                                            hw.name, hw.sha256, hw.data, "auto", 0, 100),
                           "shapes": [tune_shape(add_spec, hw, {"totalLength": n},
                                                 TuneSettings("auto", 100, 0))
                                      for n in (4096, 1 << 20)]}
    return json.loads(results.to_text(doc))  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", sorted(STYLES))
def test_every_emit_style_writes_one_header_that_the_host_file_finds(
        name: str, add_doc: dict[str, Any]) -> None:
    style = emit_style(name)
    assert style.doc and style.folder in ("op_host", "op_kernel")
    files = emit.render(emit.load_bundle(add_doc, "r.json"), name, op_host=True)
    header = style.header_path("add_custom")
    assert header in files
    assert sum(rel.endswith("_tiling.h") for rel in files) == 1, sorted(files)
    assert "AddCustomTilingData" in files[header]
    # The host side includes the header by a path that resolves to the file emit wrote.
    include = f'#include "{style.include_from_host("add_custom")}"'
    assert include in files["op_host/add_custom.cpp"] or include in files[
        "op_host/add_custom_tiling_select.h"]
    resolved = (Path("/p/op_host") / style.include_from_host("add_custom")).resolve()
    assert resolved == Path("/p") / header


def test_an_unknown_style_is_refused_with_the_choices() -> None:
    with pytest.raises(AscendTuneError, match="--style 'cpp' is not one of: macro, struct"):
        emit_style("cpp")


# ---- measurement readers ----------------------------------------------------------------------

M = DATA / "measurements"
# One sample file per registered reader (a new reader must bring one).
READER_SAMPLES = {"pipe_utilization": M / "PipeUtilization.csv",
                  "summary": M / "op_summary_block_dim.csv"}


def test_every_reader_has_a_sample() -> None:
    assert {r.name for r in measurements.READERS} == set(READER_SAMPLES)


@pytest.mark.parametrize("reader", measurements.READERS, ids=lambda r: r.name)
def test_every_reader_claims_its_sample_and_reads_rows_that_fit_the_spec(
        reader: measurements.Reader, matmul_spec: OperatorSpec, tmp_path: Path) -> None:
    sample = READER_SAMPLES[reader.name]
    header_line = sample.read_text().splitlines()[0]
    header = {h.replace(" ", "").lower(): h for h in header_line.split(",")}
    first = next(r for r in measurements.READERS if r.matches(header))
    assert first is reader, f"{first.name} takes {sample.name} before {reader.name}"
    report = measurements.read_files([sample], matmul_spec,
                                     measurements.load_manifest(M / "manifest.yaml"))
    assert report.rows, report.skipped
    for row in report.rows:
        assert row.time_us > 0 and row.origin.startswith(str(sample))
        assert set(row.shape) == set(matmul_spec.shape_vars)
        assert set(row.config) <= set(matmul_spec.params)  # the rest: baseline or free
    # A record it cannot use is skipped with file:line and the reason, never raised.
    broken = tmp_path / sample.name
    lines = sample.read_text().splitlines()
    broken.write_text("\n".join([lines[0], *(",".join(["x"] * len(lines[1].split(",")))
                                             for _ in range(2))]) + "\n")
    report = measurements.read_files([broken], matmul_spec,
                                     measurements.load_manifest(M / "manifest.yaml"))
    assert not report.rows and report.skipped
    assert all(s.startswith(str(broken)) for s in report.skipped)


# ---- search strategies ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_declares_its_name_and_flags(name: str) -> None:
    # The Strategy protocol's class attributes, set in the strategy's own class body (run()
    # and tune.shape read them; none is inherited or left to a default).
    cls = STRATEGIES[name]
    own = vars(cls)
    assert own.get("name") == name
    for flag in ("uses_budget", "builds_valid"):
        assert isinstance(own.get(flag), bool), f"{cls.__name__} does not declare {flag}"


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_finds_the_optimum_of_a_small_space_within_the_budget(name: str) -> None:
    sizes = np.array([6, 5, 4])

    def objective(g: np.ndarray) -> np.ndarray:
        lat = 1.0 + np.abs(g[:, 0] - 4) + 2.0 * np.abs(g[:, 1] - 1) + 0.5 * g[:, 2]
        return np.where(g[:, 0] == 5, np.inf, lat)  # one slice is invalid

    problem = Problem(sizes, objective, baseline=np.array([0, 0, 0]))
    result = run(STRATEGIES[name](), problem, 120, np.random.default_rng(3))
    assert result.genome.tolist() == [4, 1, 0]
    assert result.latency_us == 1.0
    if STRATEGIES[name].uses_budget:
        assert result.evaluations <= 120
    assert result.history and result.history[-1][1] == result.latency_us
    assert [lat for _n, lat in result.history] == sorted(
        (lat for _n, lat in result.history), reverse=True)
