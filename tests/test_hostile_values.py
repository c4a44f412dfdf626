"""Hostile values: profile numbers, integers beyond 64 bits, boolean typing.

Every bad input gets exit 2, exactly one stderr line without a traceback, naming the file and
the profile leaf or spec key, and no output file. The corpus is tests/data/hostile/values/.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ascend_tune.base.errors import ExprError
from ascend_tune.expr import CPP_RUNTIME, INT64_MAX, INT64_MIN, Kind, parse
from tests.conftest import needs_gxx
from tests.test_cli import cli, one_line_error

HOSTILE = Path(__file__).resolve().parent / "data" / "hostile" / "values"
SHAPE = "totalLength=65536"


def _refused(proc: subprocess.CompletedProcess[str], *contains: str) -> str:
    one_line_error(proc, contains[0])
    line = proc.stderr.strip()
    for text in contains[1:]:
        assert text in line, line
    return line


def _no_output(out: Path) -> None:
    """Nothing written: not the results file, not a header-only file, no temporary file."""
    assert sorted(p.name for p in out.parent.iterdir()) == []


# ---- profile values: `check` and `search` both refuse, naming the file and the leaf ---------

PROFILE_CASES = [
    ("profile_nan_clock.yaml", "chip.clock_mhz"),
    ("profile_inf_clock.yaml", "chip.clock_mhz"),
    ("profile_huge_clock.yaml", "chip.clock_mhz"),
    ("profile_nan_bandwidth.yaml", "memory.hbm_bandwidth_gbps"),
    ("profile_inf_bandwidth.yaml", "memory.l2_bandwidth_gbps"),
    ("profile_zero_bandwidth.yaml", "memory.hbm_bandwidth_gbps"),
    ("profile_fractional_k0.yaml", "cube.k0.float16"),
    ("profile_zero_k0.yaml", "cube.k0.float16"),
    ("profile_negative_latency.yaml", "transfers.gm_to_ub.latency_cycles"),
    ("profile_nan_latency.yaml", "transfers.ub_to_gm.latency_cycles"),
    ("profile_huge_cores.yaml", "chip.vector_cores"),
    ("profile_zero_cores.yaml", "chip.cube_cores"),
    ("profile_huge_bytes.yaml", "memory.ub_bytes"),
    ("profile_negative_bytes.yaml", "memory.l1_bytes"),
    ("profile_efficiency_above_one.yaml", "memory.gm_unaligned_efficiency"),
    ("profile_curve_zero_bandwidth.yaml", "transfers.gm_to_ub.bandwidth_curve"),
    ("profile_curve_nan_bandwidth.yaml", "transfers.gm_to_l1.bandwidth_curve"),
    ("profile_curve_negative_size.yaml", "transfers.ub_to_gm.bandwidth_curve"),
    ("profile_curve_decreasing.yaml", "transfers.ub_to_gm.bandwidth_curve"),
    ("profile_vector_cycles_nan.yaml", "vector.cycles_per_repeat.value.binary.2"),
    ("profile_negative_issue.yaml", "vector.issue_cycles"),
    ("profile_cycles_per_fractal_inf.yaml", "cube.cycles_per_fractal"),
]
CYCLE_CASES = [
    ("cycle/self_cycle.yaml", "base: profiles form a cycle"),
    ("cycle/cycle_a.yaml", "base: profiles form a cycle"),
]


@pytest.mark.parametrize(("name", "leaf"), PROFILE_CASES + CYCLE_CASES)
def test_check_refuses_bad_profile_value(name: str, leaf: str) -> None:
    proc = cli("check", str(HOSTILE / name))
    path = HOSTILE / name
    line = _refused(proc, leaf)
    assert path.name in line or name.startswith("cycle/"), line


@pytest.mark.parametrize(("name", "leaf"), PROFILE_CASES + CYCLE_CASES)
def test_search_refuses_bad_profile_value(name: str, leaf: str, tmp_path: Path) -> None:
    out = tmp_path / "out" / "r.json"
    out.parent.mkdir()
    proc = cli("search", "add", "--hw", str(HOSTILE / name), "--shape", SHAPE, "-o", str(out))
    line = _refused(proc, leaf)
    assert (HOSTILE / name).name in line or name.startswith("cycle/"), line
    assert "no valid configuration" not in line
    assert not out.exists()


def test_profile_values_cover_every_scalar_leaf() -> None:
    from ascend_tune.hardware import LIMITS, SCALARS

    assert {k for keys in SCALARS.values() for k in keys} == set(LIMITS)


def test_embedded_profile_nan_is_refused() -> None:
    """A results file is JSON: nan and huge numbers arrive without YAML's help."""
    from ascend_tune.base.errors import ProfileError
    from ascend_tune.hardware import load_profile, load_profile_data

    data = load_profile("ascend910b3").data
    for section, key, bad in (("memory", "hbm_bandwidth_gbps", float("nan")),
                              ("chip", "clock_mhz", float("inf")),
                              ("chip", "vector_cores", 10**23),
                              ("transfers", "gm_to_ub", None)):
        copy = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
        if key == "gm_to_ub":
            copy["transfers"] = dict(copy["transfers"])
            copy["transfers"]["gm_to_ub"] = {**copy["transfers"]["gm_to_ub"],
                                             "latency_cycles": {"value": -1, "source": "x",
                                                                "confidence": "low"}}
            want = "transfers.gm_to_ub.latency_cycles"
        else:
            copy[section] = {**copy[section], key: {**copy[section][key], "value": bad}}
            want = f"{section}.{key}"
        with pytest.raises(ProfileError, match=want.replace(".", r"\.")):
            load_profile_data(copy, "r.json (embedded profile)")


def test_base_chain_depth_is_limited(tmp_path: Path) -> None:
    for i in range(40):
        (tmp_path / f"p{i}.yaml").write_text(f"name: p{i}\nbase: p{i + 1}.yaml\n")
    (tmp_path / "p40.yaml").write_text("name: p40\nbase: ascend910b3\n")
    proc = cli("check", str(tmp_path / "p0.yaml"))
    _refused(proc, "levels of base profiles")


# ---- integers: shapes, literals, domain bounds and baselines against int64 ------------------

SPEC_LOAD_CASES = [
    ("spec_min_above_max.yaml", "shape.totalLength.max"),
    ("spec_min_zero_extent.yaml", "shape.totalLength.min"),
    ("spec_max_beyond_int64.yaml", "shape.totalLength.max"),
    ("spec_huge_literal_domain.yaml", "params.bufferNum.values.1"),
    ("spec_huge_literal_expr.yaml", "baseline.bufferNum"),
    ("spec_huge_literal_constant.yaml", "kernel_constants.MAX_TILE_ELEMS"),
]


@pytest.mark.parametrize(("name", "key"), SPEC_LOAD_CASES)
def test_check_refuses_bad_spec_integer(name: str, key: str) -> None:
    line = _refused(cli("check", str(HOSTILE / name)), key)
    assert name in line


SPEC_RUN_CASES = [
    # (spec, shape, key named, text)
    ("spec_float_domain_bound.yaml", SHAPE, "params.tileLength",
     "does not fit a 64-bit integer"),
    ("spec_baseline_1e300.yaml", SHAPE, "baseline.bufferNum", "does not fit a 64-bit integer"),
    ("spec_range_overflow.yaml", SHAPE, "params.blockDim.range.1", "integer overflow"),
    ("spec_derive_overflow.yaml", SHAPE, "derive.alignedLength", "integer overflow"),
    ("spec_no_shape_max.yaml", f"totalLength={INT64_MAX}", "totalLength", "integer overflow"),
    ("spec_no_shape_max.yaml", f"totalLength={INT64_MAX + 1}", "totalLength",
     "does not fit a 64-bit integer"),
    ("spec_no_shape_max.yaml", f"totalLength={10**30}", "totalLength",
     "does not fit a 64-bit integer"),
    ("add", f"totalLength={2**63}", "totalLength", "does not fit a 64-bit integer"),
    ("add", f"totalLength={INT64_MAX}", "totalLength", "out of range"),
]


@pytest.mark.parametrize(("spec", "shape", "key", "text"), SPEC_RUN_CASES)
def test_search_refuses_integer_beyond_int64(spec: str, shape: str, key: str, text: str,
                                             tmp_path: Path) -> None:
    ref = str(HOSTILE / spec) if spec.endswith(".yaml") else spec
    out = tmp_path / "out" / "r.json"
    out.parent.mkdir()
    proc = cli("search", ref, "--hw", "ascend910b3", "--shape", shape, "-o", str(out))
    line = _refused(proc, key, text)
    assert "no valid configuration" not in line
    if spec.endswith(".yaml") and "--shape" not in line:
        assert spec in line
    _no_output(out)


@pytest.mark.parametrize("spec", ["spec_huge_literal_domain.yaml",
                                  "spec_huge_literal_expr.yaml"])
def test_search_refuses_huge_literal_before_tuning(spec: str, tmp_path: Path) -> None:
    out = tmp_path / "out" / "r.json"
    out.parent.mkdir()
    proc = cli("search", str(HOSTILE / spec), "--hw", "ascend910b3", "--shape", SHAPE,
               "-o", str(out))
    _refused(proc, spec, "out of range")
    assert not out.exists()


def test_shape_file_with_huge_value(tmp_path: Path) -> None:
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text(f"- {{totalLength: {10**30}}}\n")
    out = tmp_path / "out" / "r.json"
    out.parent.mkdir()
    proc = cli("search", str(HOSTILE / "spec_no_shape_max.yaml"), "--hw", "ascend910b3",
               "--shapes", str(shapes), "-o", str(out))
    line = _refused(proc, "shapes.yaml", "totalLength")
    assert "64-bit" in line or "int64" in line, line
    assert not out.exists()



def test_check_names_a_shape_without_max() -> None:
    # The baseline check samples each shape variable up to its max: one missing is the spec's
    # gap, not the profile's.
    proc = cli("check", str(HOSTILE / "spec_no_shape_max.yaml"))
    assert proc.returncode == 2
    first = proc.stderr.splitlines()[0]
    assert "shape variable totalLength has no max" in first, proc.stderr
    assert "profile" not in first, first

@pytest.mark.parametrize("seed", ["-1", str(2**64)])
def test_bad_seed(seed: str) -> None:
    proc = cli("search", "add", "--hw", "ascend910b3", "--shape", SHAPE, "--seed", seed)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "--seed" in proc.stderr


# ---- the overflow check itself ----------------------------------------------------------------

SYMS = {"a": Kind.INT, "b": Kind.INT, "x": Kind.FLOAT, "c": Kind.BOOL}


@pytest.mark.parametrize(("src", "env"), [
    ("a * b", {"a": np.array([1, 2**32]), "b": np.array([3, 2**31])}),
    ("a + b", {"a": INT64_MAX, "b": 1}),
    ("a - b", {"a": np.array([0, INT64_MIN + 1]), "b": np.array([0, 2])}),
    ("-a", {"a": np.array([INT64_MIN])}),
    ("abs(a)", {"a": np.array([5, INT64_MIN])}),
    ("a // b", {"a": np.array([INT64_MIN]), "b": np.array([-1])}),
    ("a % b", {"a": np.array([INT64_MIN]), "b": -1}),
    ("ceil_div(a, b)", {"a": INT64_MIN, "b": 3}),
    ("align_up(a, b)", {"a": np.array([INT64_MAX - 5]), "b": 16}),
    ("a ** 3", {"a": np.array([2, 2**21])}),
    ("pow2_ceil(a)", {"a": np.array([2**62 + 1])}),
    ("floor(x)", {"x": np.array([1.0, 1e300])}),
    ("ceil(x)", {"x": float("nan")}),
    ("a * 2", {"a": 2**64}),
    ("(a * b) // b", {"a": np.array([2**40]), "b": np.array([2**30])}),
])
def test_overflow_is_an_error_naming_the_expression(src: str, env: dict[str, object]) -> None:
    e = parse(src, SYMS, "spec.yaml:3: derive.big")
    with pytest.raises(ExprError, match=r"spec\.yaml:3: derive\.big: integer overflow") as info:
        e.evaluate(env)
    assert src in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("src", "env", "want"), [
    # Exactly at the limits: no error.
    ("a + b", {"a": INT64_MAX - 1, "b": 1}, INT64_MAX),
    ("a * b", {"a": np.array([-(2**62)]), "b": 2}, [INT64_MIN]),
    ("a * b", {"a": np.array([3037000499]), "b": np.array([3037000499])}, [3037000499**2]),
    ("pow2_floor(a)", {"a": np.array([INT64_MAX])}, [2**62]),
    ("pow2_ceil(a)", {"a": np.array([2**62])}, [2**62]),
    # Only the branch C++ evaluates counts.
    ("where(b == 0, 0, a * b)", {"a": np.array([2**62, 5]), "b": np.array([0, 3])}, [0, 15]),
    ("b != 0 and a * b > 0", {"a": np.array([2**62, 5]), "b": np.array([0, 3])},
     [False, True]),
    ("b == 0 or a * b > 0", {"a": np.array([2**62, 5]), "b": np.array([0, 3])},
     [True, True]),
])
def test_no_false_overflow(src: str, env: dict[str, object], want: object) -> None:
    got = parse(src, SYMS).evaluate(env)
    assert np.asarray(got).tolist() == want


def test_results_keep_their_values_and_the_fast_path_is_used() -> None:
    e = parse("align_up(a, 16) * b", SYMS)
    env = {"a": np.arange(1000), "b": 3}
    first = e.evaluate(env)
    assert first.tolist() == [(-(-v // 16) * 16) * 3 for v in range(1000)]
    with pytest.raises(ValueError):
        first[0] = 1  # results are read-only: a remembered range cannot go stale
    derived = parse("a * 2**40", SYMS)
    assert derived.evaluate({"a": first}).tolist() == [v * 2**40 for v in first.tolist()]


def test_mutated_input_is_rechecked() -> None:
    e = parse("a * 4", SYMS)
    arr = np.array([1, 2, 3])
    assert e.evaluate({"a": arr}).tolist() == [4, 8, 12]
    arr[1] = 2**62
    with pytest.raises(ExprError, match="integer overflow"):
        e.evaluate({"a": arr})


def test_integer_literal_range() -> None:
    for source in (2**62, "4611686018427387904", -(2**62)):
        with pytest.raises(ExprError, match="out of range"):
            parse(source, SYMS, "f.yaml: k")
    assert parse(2**62 - 1, SYMS).evaluate({}) == 2**62 - 1
    assert parse(-(2**62 - 1), SYMS).evaluate({}) == -(2**62 - 1)


# ---- expression typing: numpy and C++ agree on random well-typed expressions ------------------

FUZZ_SYMBOLS = {"a": Kind.INT, "b": Kind.INT, "x": Kind.FLOAT, "y": Kind.FLOAT,
                "p": Kind.BOOL, "q": Kind.BOOL}
_DTYPE_KIND = {Kind.INT: "i", Kind.FLOAT: "f", Kind.BOOL: "b"}


class _ExprGen:
    """Random well-typed expressions of a requested kind (booleans appear wherever a number
    is allowed, to exercise their promotion to 0/1)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def num(self, depth: int) -> str:
        return self.gen(self.rng.choice([Kind.INT, Kind.INT, Kind.FLOAT, Kind.BOOL]), depth)

    def integral(self, depth: int) -> str:
        return self.gen(self.rng.choice([Kind.INT, Kind.INT, Kind.BOOL]), depth)

    def gen(self, kind: Kind, depth: int) -> str:
        r = self.rng
        if depth <= 0 or r.random() < 0.2:
            return self.leaf(kind)
        d = depth - 1
        if kind is Kind.BOOL:
            choice = r.randrange(8)
            if choice == 0:
                return f"({self.num(d)} {r.choice(['<', '<=', '>', '>=', '==', '!='])} "\
                       f"{self.num(d)})"
            if choice == 1:
                return f"(not {self.gen(Kind.BOOL, d)})"
            if choice == 2:
                return f"({self.gen(Kind.BOOL, d)} {r.choice(['and', 'or'])} {self.num(d)})"
            if choice == 3:
                return f"is_pow2({self.integral(d)})"
            if choice == 4:
                return f"where({self.num(d)}, {self.gen(Kind.BOOL, d)}, {self.gen(Kind.BOOL, d)})"
            if choice == 5:
                return f"({self.num(d)} < {self.num(d)} <= {self.num(d)})"
            return self.leaf(kind)
        if kind is Kind.INT:
            choice = r.randrange(14)
            if choice < 3:
                op = r.choice(["+", "-", "*", "//", "%"])
                return f"({self.integral(d)} {op} {self.integral(d)})"
            if choice == 3:
                return f"({r.choice(['-', '+'])}{self.integral(d)})"
            if choice == 4:
                fn = r.choice(["ceil_div", "align_up", "align_down"])
                return f"{fn}({self.integral(d)}, {self.integral(d)})"
            if choice == 5:
                fn = r.choice(["min", "max"])
                args = ", ".join(self.integral(d) for _ in range(r.randint(2, 3)))
                return f"{fn}({args})"
            if choice == 6:
                return f"clamp({self.integral(d)}, {self.integral(d)}, {self.integral(d)})"
            if choice == 7:
                return f"abs({self.integral(d)})"
            if choice == 8:
                return f"{r.choice(['floor', 'ceil'])}({self.num(d)})"
            if choice == 9:
                return f"{r.choice(['pow2_ceil', 'pow2_floor'])}({self.integral(d)})"
            if choice == 10:
                return f"({self.leaf(r.choice([Kind.INT, Kind.BOOL]))} ** {r.randint(0, 3)})"
            if choice == 11:
                other = r.choice([Kind.INT, Kind.BOOL])
                return f"where({self.num(d)}, {self.gen(Kind.INT, d)}, {self.gen(other, d)})"
            return self.leaf(kind)
        choice = r.randrange(9)
        if choice < 2:
            op = r.choice(["+", "-", "*", "//", "%"])
            left, right = self.gen(Kind.FLOAT, d), self.num(d)
            return f"({left} {op} {right})" if r.random() < 0.5 else f"({right} {op} {left})"
        if choice == 2:
            return f"({self.num(d)} / {self.num(d)})"
        if choice == 3:
            return f"log2({self.num(d)})"
        if choice == 4:
            return f"where({self.num(d)}, {self.gen(Kind.FLOAT, d)}, {self.num(d)})"
        if choice == 5:
            return f"{r.choice(['min', 'max'])}({self.gen(Kind.FLOAT, d)}, {self.num(d)})"
        if choice == 6:
            return f"abs({self.gen(Kind.FLOAT, d)})"
        if choice == 7:
            return f"(-{self.gen(Kind.FLOAT, d)})"
        return self.leaf(kind)

    def leaf(self, kind: Kind) -> str:
        r = self.rng
        if kind is Kind.BOOL:
            return r.choice(["p", "q", "True", "False"])
        if kind is Kind.INT:
            return r.choice(["a", "b", "a", "b", str(r.randint(-9, 40))])
        return r.choice(["x", "y", "x", repr(r.choice([0.5, 2.25, -1.75, 3.0, 0.1]))])


FUZZ_ROWS = 48


def _fuzz_env() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {"a": rng.integers(-40, 70, FUZZ_ROWS), "b": rng.integers(-9, 20, FUZZ_ROWS),
            "x": rng.uniform(-6, 6, FUZZ_ROWS).round(3),
            "y": rng.choice([0.0, 0.5, -2.0, 3.75, 1e-3], FUZZ_ROWS),
            "p": rng.random(FUZZ_ROWS) < 0.5, "q": rng.random(FUZZ_ROWS) < 0.3}


def _fuzz_cases(count: int = 400) -> list[tuple[str, Kind, np.ndarray]]:
    """(source, static kind, numpy values per row) of random expressions numpy evaluates
    without an overflow error; asserts that each one's dtype is its static kind."""
    gen = _ExprGen(random.Random(20240607))
    env = _fuzz_env()
    cases = []
    while len(cases) < count:
        kind = gen.rng.choice([Kind.INT, Kind.FLOAT, Kind.BOOL])
        src = gen.gen(kind, gen.rng.randint(1, 4))
        e = parse(src, FUZZ_SYMBOLS)
        try:
            value = np.broadcast_to(np.asarray(e.evaluate(env)), (FUZZ_ROWS,))
        except ExprError as exc:
            assert "integer overflow" in str(exc), (src, exc)
            continue
        assert value.dtype.kind == _DTYPE_KIND[e.kind], (src, e.kind, value.dtype)
        cases.append((src, e.kind, value))
    return cases


def test_fuzz_numpy_types_match_static_kinds() -> None:
    cases = _fuzz_cases()
    assert {k for _, k, _ in cases} == {Kind.INT, Kind.FLOAT, Kind.BOOL}


@pytest.mark.parametrize("src", [
    "-where(p, True, False)", "ceil_div(where(p, True, False), 2)",
    "align_up(+p, 4)", "-(+q)", "abs(p)", "min(p, q)", "where(p, True, 3)",
    "where(p, q, x)", "pow2_ceil(p)", "p ** 2", "floor(p)", "+p - -q",
])
def test_booleans_promote_to_int_consistently(src: str) -> None:
    e = parse(src, FUZZ_SYMBOLS)
    env = _fuzz_env()
    value = np.asarray(e.evaluate(env))
    assert value.dtype.kind == _DTYPE_KIND[e.kind], (src, e.kind, value.dtype)
    assert e.kind is not Kind.BOOL


def test_where_of_two_booleans_is_boolean() -> None:
    e = parse("where(p, True, False)", FUZZ_SYMBOLS)
    assert e.kind is Kind.BOOL
    assert np.asarray(e.evaluate(_fuzz_env())).dtype == np.bool_


@needs_gxx
def test_fuzz_numpy_and_cpp_agree(tmp_path: Path) -> None:
    """Random expressions evaluated by numpy and, through Expr.to_cpp and CPP_RUNTIME, by
    g++: same static type (overload chosen) and same value on every row."""
    cases = _fuzz_cases()
    env = _fuzz_env()

    def arr(ctype: str, name: str, values: np.ndarray) -> str:
        items = ", ".join(("true" if v else "false") if ctype == "bool" else
                          (repr(float(v)) if ctype == "double" else f"INT64_C({int(v)})")
                          for v in values)
        return f"static const {ctype} {name.upper()}[{FUZZ_ROWS}] = {{{items}}};"

    lines = [CPP_RUNTIME, "#include <cstdio>", "using namespace ascend_tune_rt;",
             'static void out(bool v) { std::printf("b %d\\n", v ? 1 : 0); }',
             'static void out(int64_t v) { std::printf("i %lld\\n", static_cast<long long>(v)); }',
             'static void out(double v) { std::printf("f %.17g\\n", v); }',
             arr("int64_t", "a", env["a"]), arr("int64_t", "b", env["b"]),
             arr("double", "x", env["x"]), arr("double", "y", env["y"]),
             arr("bool", "p", env["p"]), arr("bool", "q", env["q"]),
             "int main() {"]
    for src, _kind, _value in cases:
        cpp = parse(src, FUZZ_SYMBOLS).to_cpp(lambda n: n)
        lines.append(f"  for (int r = 0; r < {FUZZ_ROWS}; ++r) {{ const int64_t a = A[r], "
                     "b = B[r]; const double x = X[r], y = Y[r]; const bool p = P[r], "
                     f"q = Q[r]; (void)a; (void)b; (void)x; (void)y; (void)p; (void)q; "
                     f"out({cpp}); }}")
    lines.append("  return 0;\n}\n")
    src_path = tmp_path / "fuzz.cpp"
    src_path.write_text("\n".join(lines))
    exe = tmp_path / "fuzz"
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-ffp-contract=off", str(src_path),
                            "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[:3000]
    run = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    rows = run.stdout.split("\n")
    for i, (src, kind, value) in enumerate(cases):
        got = rows[i * FUZZ_ROWS:(i + 1) * FUZZ_ROWS]
        tags = {line.split()[0] for line in got}
        assert tags == {_DTYPE_KIND[kind]}, (src, kind, tags)
        for r, line in enumerate(got):
            text = line.split()[1]
            want = value[r]
            if kind is Kind.FLOAT:
                assert float(text) == float(want), (src, r, text, repr(float(want)))
            else:
                assert int(text) == int(want), (src, r, text, want)
