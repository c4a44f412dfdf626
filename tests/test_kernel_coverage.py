"""The example vector kernels, run on the host against the kernel_operator.h stand-in.

For every vector operator the hand-written kernel examples/<op>/<Op>/op_kernel/<op>.cpp is built
with the struct-style TilingData header that ``ascend-tune emit --style struct`` writes and a
harness (tests/cann_stub/kernel/coverage_harness.cpp) under AddressSanitizer and UBSan. Cases:
every tuned shape of examples/<op>/results.json, seeded random shapes (tiny, odd and large
lengths, random platform core counts) with the tiling the emitted selection picks
(``selection.select``; test_emit.py checks the emitted C++ picks the same), and a few fixed
configurations run through the same derivation so that every tiling key's code path runs.

Each GM tensor is a heap block of exactly its size and blocks 0..blockDim-1 run one after
another. A case passes when every output element was written exactly once, the output is
numerically right, and neither the stand-in (GM access outside a tensor or a core's declared
view, unaligned DataCopy, UB overflow, queue misuse, tiling key without a branch) nor a
sanitizer complained.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune.emit import render as emit
from ascend_tune.emit.selection import NONE, derive, field_value, runtime_env
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import OperatorSpec, load_spec_text
from tests.conftest import ROOT, STUB, needs_gxx, slow, slow_unless

pytestmark = needs_gxx

HARNESS = STUB / "kernel" / "coverage_harness.cpp"
SELFTEST = STUB / "kernel" / "stand_in_selftest.cpp"
CTYPE = {"float16": "half", "float32": "float", "bfloat16": "bfloat16_t", "int32": "int32_t"}
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
WARN = ["-Wall", "-Wextra", "-Werror"]
_CPUINFO = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
# Hardware float16 conversions where the CPU has them (libgcc's soft ones dominate the run).
F16C = ["-mf16c"] if " f16c" in _CPUINFO else []
ENV = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0", "UBSAN_OPTIONS": "print_stacktrace=1"}
CORE_COUNTS = (1, 8, 20, 24, 40, 48)
ODD_LENGTHS = (1, 15, 17, 1000, 12_345_679)
ODD_ROWS = ((1, 1), (1, 15), (3, 17), (17, 1000), (5, 70_001), (41, 4097), (2, 131_073))
# Fixed configurations (derived like any tuned one) so every tiling key's code path runs.
FORCED_ELEMENTWISE = (
    ({"totalLength": 4099}, {"blockDim": 5, "tileLength": 256, "bufferNum": 1}),
    ({"totalLength": 12_345}, {"blockDim": 3, "tileLength": 1024, "bufferNum": 2}),
)
FORCED_ROWS = tuple(
    ({"rows": r, "cols": c}, {"blockDim": d, "rowFactor": rf, "colFactor": cf, "bufferNum": b})
    for r, c, d, rf, cf, b in ((3, 70_001, 2, 1, 4096, 1),  # key 11
                               (7, 9000, 3, 1, 2048, 2),  # key 12, last core 1 row
                               (37, 333, 5, 4, 512, 1),  # key 1, tail passes
                               (100, 7, 7, 8, 256, 2)))  # key 2, 7 columns

BROADCAST_FORCED = (({"batch": 3, "seq": 7, "hidden": 101, "streams": 3},  # key 1
                     {"blockDim": 2, "tileLength": 256, "bufferNum": 1}),
                    ({"batch": 5, "seq": 2, "hidden": 1000, "streams": 4},  # key 2
                     {"blockDim": 7, "tileLength": 512, "bufferNum": 2}))


@dataclass(frozen=True)
class Target:
    folder: str  # examples/<folder>
    macro: str  # the harness's OP_<macro>
    rows: bool  # [rows, cols] family, else elementwise over totalLength
    variant: str | None = None  # spec variant run with the tuned table of the base results
    broadcast: bool = False  # broadcast_mul: batch, seq, hidden, streams


TARGETS = {
    "add": Target("add", "ADD", False),
    "mul": Target("mul", "MUL", False),
    "floor_mod": Target("floor_mod", "FLOOR_MOD", False),
    "gelu": Target("gelu", "GELU", False),
    "swiglu": Target("swiglu", "SWIGLU", False),
    "cast": Target("cast", "CAST", False),
    "cast:float16_to_float32": Target("cast", "CAST", False, "float16_to_float32"),
    "broadcast_mul": Target("broadcast_mul", "BROADCAST_MUL", False, broadcast=True),
    "softmax": Target("softmax", "SOFTMAX", True),
    "rmsnorm": Target("rmsnorm", "RMSNORM", True),
    "layernorm": Target("layernorm", "LAYERNORM", True),
}


@dataclass
class Case:
    ident: str
    shape: dict[str, int]
    cores: int
    block_dim: int
    key: int
    fields: list[int | float]
    seed: int

    def line(self) -> str:
        return " ".join(str(x) for x in (self.ident, self.block_dim, self.key, len(self.shape),
                                          *self.shape.values(), self.seed, len(self.fields),
                                          *(repr(f) for f in self.fields)))


@dataclass
class Build:
    name: str
    target: Target
    spec: OperatorSpec
    hw: HardwareProfile
    doc: dict[str, Any]
    exe: Path | None = None
    compile_error: str = ""
    warning_errors: dict[str, str] = field(default_factory=dict)
    bundle: emit.Bundle | None = None  # the results' bundle, loaded once

    def selection_bundle(self) -> emit.Bundle:
        if self.bundle is None:
            self.bundle = emit.load_bundle(self.doc, "results")
        return self.bundle


@dataclass
class Run:
    cases: list[Case]
    rc: int
    stdout: str
    stderr: str

    def outcomes(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for line in self.stdout.splitlines():
            kind, _, rest = line.partition(" ")
            ident, _, detail = rest.partition(" ")
            if kind == "BEGIN":
                out[ident] = "CRASH (see stderr)"
            elif kind in ("OK", "FAIL"):
                out[ident] = f"{kind} {detail}"
        return out

    def sizeof(self) -> int:
        first = self.stdout.splitlines()[0] if self.stdout else ""
        return int(first.split()[1]) if first.startswith("SIZEOF ") else -1


def _asan_problem(tmp: Path) -> str:
    src = tmp / "probe.cpp"
    src.write_text("#include <vector>\nint main() { std::vector<int> v(3); return v[1]; }\n")
    proc = subprocess.run(["g++", *SANITIZE, str(src), "-o", str(tmp / "probe")],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return f"g++ cannot build with -fsanitize=address,undefined: {proc.stderr[:300]}"
    run = subprocess.run([str(tmp / "probe")], capture_output=True, text=True, env=ENV)
    if run.returncode != 0:
        return f"AddressSanitizer binaries do not run here: {run.stderr[:300]}"
    return ""


def _tiling_include(spec: OperatorSpec) -> str:
    """kFieldCount and FillTiling(struct, values) in the spec's field order."""
    lines = [f"static const int kFieldCount = {len(spec.tiling_fields)};",
             f"static void FillTiling({spec.tiling_struct}& t, const double* v) {{"]
    for i, f in enumerate(spec.tiling_fields):
        lines.append(f"    t.{f.name} = static_cast<{f.ctype}>(v[{i}]);")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _build(name: str, work: Path) -> Build:
    target = TARGETS[name]
    results = ROOT / "examples" / target.folder / "results.json"
    doc = json.loads(results.read_text())
    bundle = emit.load_bundle(doc, str(results))
    spec = bundle.spec
    if target.variant is not None:
        spec = load_spec_text(doc["spec"]["text"], str(results), target.variant)
    build = Build(name, target, spec, bundle.hw, doc, bundle=bundle)
    folder = work / name.replace(":", "_")
    # What `ascend-tune emit --style struct` writes (the struct is the same for every variant).
    emit.write(folder, emit.render(bundle, "struct"))
    (folder / "coverage_tiling.inc").write_text(_tiling_include(spec))
    kernel = ROOT / "examples" / target.folder / spec.name / "op_kernel" / f"{spec.snake_name}.cpp"
    # What the AscendC build provides: the TilingData struct GET_TILING_DATA fills, and
    # DTYPE_<ARG> per tensor.
    common = [f"-I{STUB}", f"-I{folder}", f"-DASCEND_TUNE_KERNEL_TILING={spec.tiling_struct}",
              "-include", str(folder / "op_kernel" / f"{spec.snake_name}_tiling.h"),
              *(f"-DDTYPE_{arg.upper()}={CTYPE[dt]}" for arg, dt in spec.dtypes.items()
                if arg != "work"),
              f"-DOP_{target.macro}", f"-DKERNEL_ENTRY={spec.snake_name}",
              f"-DASCEND_TUNE_UB_BYTES={int(bundle.hw.env()['hw.ub_bytes'])}"]
    for std in ("c++11", "c++17"):
        proc = subprocess.run(["g++", f"-std={std}", *WARN, *common, "-fsyntax-only", str(kernel)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            build.warning_errors[std] = proc.stderr[:4000]
    # The kernel (and the stand-in code it instantiates) under the sanitizers; the harness's
    # own loops (fill, reference, checks) optimised and uninstrumented. The GM tensors still
    # come from the ASan allocator with redzones on both sides, since the link is sanitized.
    exe = folder / "coverage"
    steps = [["g++", "-std=c++17", "-Og", *F16C, *SANITIZE, *WARN, *common, "-c", str(kernel),
              "-o", str(folder / "kernel.o")],
             ["g++", "-std=c++17", "-O1", *F16C, *WARN, *common, "-c", str(HARNESS),
              "-o", str(folder / "harness.o")],
             ["g++", *SANITIZE, str(folder / "kernel.o"), str(folder / "harness.o"),
              "-o", str(exe)]]
    for step in steps:
        proc = subprocess.run(step, capture_output=True, text=True)
        if proc.returncode != 0:
            build.compile_error = proc.stderr[:4000]
            return build
    build.exe = exe
    return build


def _cores(cores: int) -> tuple[int, int]:
    """(AIC, AIV) of a platform with ``cores`` vector cores (two AIV per AIC, as on 910B)."""
    return max(1, cores // 2), cores


def _from_env(build: Build, ident: str, shape: Mapping[str, int], cores: int,
              env: Mapping[str, Any], seed: int) -> Case:
    spec = build.spec
    fields = [field_value(f.ctype, f.value.evaluate(env)) for f in spec.tiling_fields]
    key = int(spec.tiling_key.evaluate(env)) if spec.tiling_key is not None else 0
    return Case(ident, dict(shape), cores, int(spec.block_dim.evaluate(env)), key, fields, seed)


def _selected(build: Build, ident: str, shape: Mapping[str, int], cores: int,
              seed: int) -> Case | None:
    """The tiling the emitted selection picks on a platform with ``cores`` AIV cores."""
    sel = build.selection_bundle().select(shape, *_cores(cores))
    if sel.source == NONE:
        return None
    return _from_env(build, ident, shape, cores, sel.env, seed)


def _forced(build: Build, ident: str, shape: Mapping[str, int], config: Mapping[str, int],
            seed: int) -> Case | None:
    cores = int(build.hw.env()["hw.vector_cores"])
    env = derive(build.spec, runtime_env(build.spec, build.hw, *_cores(cores)), shape, config)
    return None if env is None else _from_env(build, ident, shape, cores, env, seed)


def _cases(build: Build) -> Iterator[Case | None]:
    """Tuned shapes on the tuned profile, fixed configurations, then random shapes."""
    vector_cores = int(build.hw.env()["hw.vector_cores"])
    for i, s in enumerate(build.doc["shapes"]):
        yield _selected(build, f"tuned{i}", s["shape"], vector_cores, 100 + i)
    if build.target.broadcast:
        yield from _broadcast_cases(build)
        return
    forced = FORCED_ROWS if build.target.rows else FORCED_ELEMENTWISE
    for i, (shape, config) in enumerate(forced):
        yield _forced(build, f"forced{i}", shape, config, 200 + i)
    rng = np.random.default_rng(20_240_611 + sum(map(ord, build.name)))
    if not build.target.rows:
        lengths = [*ODD_LENGTHS, *(int(np.exp(rng.uniform(0, np.log(1 << 21)))) for _ in range(24))]
        for i, n in enumerate(lengths):
            yield _selected(build, f"len{i}", {"totalLength": n}, int(rng.choice(CORE_COUNTS)),
                            300 + i)
        for i, cores in enumerate(CORE_COUNTS):  # every core count on one odd length
            yield _selected(build, f"cores{i}", {"totalLength": 100_003}, cores, 400 + i)
        return
    shapes = list(ODD_ROWS)
    while len(shapes) < len(ODD_ROWS) + 24:
        rows = int(np.exp(rng.uniform(0, np.log(5000))))
        cols = int(np.exp(rng.uniform(0, np.log(200_000))))
        if rows * cols <= 3_000_000:
            shapes.append((rows, cols))
    for i, (rows, cols) in enumerate(shapes):
        yield _selected(build, f"rc{i}", {"rows": rows, "cols": cols},
                        int(rng.choice(CORE_COUNTS)), 300 + i)


def _broadcast_cases(build: Build) -> Iterator[Case | None]:
    """broadcast_mul: fixed configurations (both tiling keys, rows split into several tiles
    with a short last one, a last core with fewer tiles), then random shapes."""
    for i, (shape, config) in enumerate(BROADCAST_FORCED):
        yield _forced(build, f"forced{i}", shape, config, 200 + i)
    rng = np.random.default_rng(20_240_611 + sum(map(ord, build.name)))
    for i in range(30):
        shape = {"batch": int(rng.integers(1, 9)), "seq": int(rng.integers(1, 65)),
                 "hidden": int(np.exp(rng.uniform(0, np.log(5000)))),
                 "streams": int(rng.integers(1, 9))}
        yield _selected(build, f"bm{i}", shape, int(rng.choice(CORE_COUNTS)), 300 + i)


def _run(build: Build, cases: Sequence[Case]) -> Run:
    assert build.exe is not None, build.compile_error
    stdin = "".join(c.line() + "\n" for c in cases)
    proc = subprocess.run([str(build.exe)], input=stdin, capture_output=True, text=True, env=ENV,
                          timeout=900)
    return Run(list(cases), proc.returncode, proc.stdout, proc.stderr)


class Results:
    """Each target built and run once, when a test first asks for it. The tests of one target
    carry the xdist group ``kernel_coverage_<target>`` (pytest runs with --dist=loadgroup): a
    target is compiled by one worker, and the targets are spread over the workers."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self._done: dict[str, tuple[Build, Run | None]] = {}

    def __getitem__(self, name: str) -> tuple[Build, Run | None]:
        if name not in self._done:
            build = _build(name, self.work)
            run = (None if build.exe is None else
                   _run(build, [c for c in _cases(build) if c is not None]))
            self._done[name] = (build, run)
        return self._done[name]


@pytest.fixture(scope="module")
def coverage(tmp_path_factory: pytest.TempPathFactory) -> Results:
    work = tmp_path_factory.mktemp("kernel_coverage")
    problem = _asan_problem(work)
    if problem:
        pytest.skip(problem)
    return Results(work)


def _target(name: str) -> pytest.MarkDecorator:
    return pytest.mark.xdist_group(f"kernel_coverage_{name.replace(':', '_')}")


# add (elementwise) and rmsnorm (row-wise) run in the first tier; the rest in the second.
TARGET_PARAMS = [pytest.param(n, marks=[_target(n), *slow_unless(n, {"add", "rmsnorm"})])
                 for n in TARGETS]


def _run_of(coverage: Results, name: str) -> tuple[Build, Run]:
    build, run = coverage[name]
    assert run is not None, build.compile_error
    return build, run


@pytest.mark.parametrize("name", TARGET_PARAMS)
def test_kernel_compiles_warning_free(name: str, coverage: Results) -> None:
    """-std=c++11 and c++17, -Wall -Wextra -Werror, against the stand-in."""
    build, _ = coverage[name]
    assert not build.warning_errors, "\n".join(f"-std={s}:\n{e}"
                                               for s, e in build.warning_errors.items())
    assert build.exe is not None, build.compile_error


@pytest.mark.parametrize("name", TARGET_PARAMS)
def test_tiling_struct_survives_get_tiling_data(name: str, coverage: Results) -> None:
    """GET_TILING_DATA copies sizeof / 8 uint64 words: a struct of another size loses its tail."""
    build, run = _run_of(coverage, name)
    size = run.sizeof()
    assert size > 0 and size % 8 == 0, (
        f"{build.spec.tiling_struct} is {size} bytes; GET_TILING_DATA copies {size // 8} "
        f"8-byte words and drops the last {size % 8} bytes")


@pytest.mark.parametrize("name", TARGET_PARAMS)
def test_every_output_element_written_once(name: str, coverage: Results) -> None:
    """Tuned, fixed and random shapes: exact coverage, right values, no sanitizer report."""
    build, run = _run_of(coverage, name)
    outcomes = run.outcomes()
    bad = []
    for case in run.cases:
        got = outcomes.get(case.ident, "NOT RUN (an earlier case crashed)")
        if not got.startswith("OK"):
            values = dict(zip((f.name for f in build.spec.tiling_fields), case.fields,
                              strict=True))
            bad.append(f"{case.ident} shape={case.shape} cores={case.cores} "
                       f"blockDim={case.block_dim} key={case.key} {values}: {got}")
    assert not bad, "\n".join(bad[:5]) + f"\n(exit {run.rc})\n" + run.stderr[-3000:]
    assert run.rc == 0, run.stderr[-3000:]
    tuned = sum(1 for c in run.cases if c.ident.startswith("tuned"))
    assert tuned == len(build.doc["shapes"]), "every tuned shape has a tiling"
    forced = (BROADCAST_FORCED if build.target.broadcast else
              FORCED_ROWS if build.target.rows else FORCED_ELEMENTWISE)
    assert sum(1 for c in run.cases if c.ident.startswith("forced")) == len(forced)
    keys = {c.key for c in run.cases}
    assert keys == ({1, 2, 11, 12} if build.target.rows else {1, 2}), keys
    assert len(run.cases) >= tuned + 30


@pytest.mark.parametrize("name", [n for n in TARGETS if ":" not in n])
def test_selection_finds_a_tiling_for_small_shapes(name: str) -> None:
    """Every small shape on the tuned profile gets a tiling (else the kernel never runs).

    Selected without the run-time descent (refine_evals=0): whether a shape gets a tiling is
    settled before the descent starts (select returns NONE before refining; the descent only
    moves a valid pick to a faster valid configuration), so the property is the same, at a
    fraction of the time (45 s of CPU for the 8 items with the descent)."""
    target = TARGETS[name]
    results = ROOT / "examples" / target.folder / "results.json"
    doc = json.loads(results.read_text())
    bundle = emit.load_bundle(doc, str(results))
    build = Build(name, target, bundle.spec, bundle.hw, doc, bundle=bundle)
    cores = int(bundle.hw.env()["hw.vector_cores"])
    if target.rows:
        shapes = [{"rows": r, "cols": c} for r in range(1, 50, 3)
                  for c in (1, 15, 17, 100, 333, 4097, 70_001)]
    elif target.broadcast:
        shapes = [{"batch": b, "seq": s, "hidden": d, "streams": n} for b in (1, 2, 7, 33)
                  for s in (1, 3, 64) for d in (1, 17, 4097) for n in (1, 4, 9)]
    else:
        shapes = [{"totalLength": n} for n in range(1, 513, 3)]
    missing = [s for s in shapes
               if build.selection_bundle().select(s, *_cores(cores), 0).source == NONE]
    assert not missing, f"{len(missing)} shapes without a tiling on {cores} cores: {missing[:8]}"


def _add_case(coverage: Results, **changes: int) -> tuple[Build, Case]:
    """An add case on 100003 elements over 8 cores with some tiling fields moved."""
    build, _ = _run_of(coverage, "add")
    case = _selected(build, "negative", {"totalLength": 100_003}, 8, seed=7)
    assert case is not None
    names = [f.name for f in build.spec.tiling_fields]
    for name, delta in changes.items():
        case.fields[names.index(name)] = int(case.fields[names.index(name)]) + delta
    return build, case


@_target("add")
def test_harness_catches_a_last_core_overrun(coverage: Results) -> None:
    """lastBlockLength and the last tile one element too long: the last core reads past x."""
    build, case = _add_case(coverage, lastBlockLength=1, lastBlockLastTileLength=1)
    run = _run(build, [case])
    assert run.rc != 0 and run.outcomes() == {"negative": "CRASH (see stderr)"}, run.stdout
    assert "reads GM bytes" in run.stderr and "'input0'" in run.stderr, run.stderr[-2000:]


@_target("add")
def test_harness_catches_an_element_left_unwritten(coverage: Results) -> None:
    """The last tile one element short: in bounds, but the last output is never written."""
    build, case = _add_case(coverage, lastBlockLastTileLength=-1)
    run = _run(build, [case])
    assert run.rc == 0, run.stderr[-2000:]
    assert run.outcomes()["negative"].startswith(
        "FAIL output element 100002 of 100003 written 0 times"), run.stdout


@_target("add")
def test_harness_catches_tiles_past_a_core_view(coverage: Results) -> None:
    """blockLength 16 short with the tiles unchanged: a full core's tiles run past the view
    it declared with SetGlobalBuffer (and into the next core's elements)."""
    build, case = _add_case(coverage, blockLength=-16)
    run = _run(build, [case])
    assert run.rc != 0, run.stdout
    assert "of a GlobalTensor declared with" in run.stderr, run.stderr[-2000:]


@pytest.fixture(scope="module")
def selftest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    exe = tmp_path_factory.mktemp("stand_in") / "selftest"
    proc = subprocess.run(["g++", "-std=c++11", *WARN, f"-I{STUB}", str(SELFTEST), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:4000]
    return exe


@pytest.mark.xdist_group("kernel_selftest")
@pytest.mark.parametrize(("scenario", "message"), [
    ("unaligned_data_copy", "15 elements = 30 bytes, not a multiple of 32"),
    ("queue_depth", "AllocTensor with 1 tensors outstanding on a TQue of depth 1"),
    ("queue_buffers", "AllocTensor with all 1 buffers of the TQue outstanding"),
    ("dequeue_empty", "DeQue from an empty TQue"),
    ("free_queued", "FreeTensor of a tensor still queued"),
    ("ub_overflow", "TPipe buffers take 196640 bytes, the UB has 196608"),
    ("view_overrun", "touches elements [0, 32) of a GlobalTensor declared with 16"),
    ("tensor_overrun", "reads GM bytes [96, 160) of tensor 'in', which has 128 bytes"),
    ("write_input", "writes input tensor 'in'"),
    ("use_after_free", "on a LocalTensor after FreeTensor"),
    ("unaligned_vector_operand", "UB operand at byte offset 12 is not 32-byte aligned"),
    ("vector_count_past_tensor", "Muls needs 40 elements, the UB tensor has 32"),
    ("tiling_words", None),
    ("pad_strides", None),
])
def test_stand_in_is_strict_where_hardware_is_silent(selftest: Path, scenario: str,
                                                     message: str | None) -> None:
    """The checks the coverage runs rely on fire (and DataCopyPad lays blocks out as AscendC)."""
    proc = subprocess.run([str(selftest), scenario], capture_output=True, text=True)
    if message is None:
        assert proc.returncode == 0 and proc.stdout.strip() == "PASS", proc.stdout + proc.stderr
    else:
        assert proc.returncode != 0 and "NOT CAUGHT" not in proc.stdout, proc.stdout
        assert "ascend-tune kernel stub:" in proc.stderr and message in proc.stderr, proc.stderr


@pytest.mark.parametrize(("name", "changes", "message"), [
    # split rows (key 11): the last column pass one column longer runs past the last row
    pytest.param("softmax", {"tailColFactor": 1}, "of a GlobalTensor declared with",
                 marks=[_target("softmax"), slow]),
    # one row too many on the last core: past the end of x
    pytest.param("rmsnorm", {"lastBlockRows": 1, "lastBlockTailRowFactor": 1}, "reads GM bytes",
                 marks=_target("rmsnorm")),
])
def test_harness_catches_row_overruns(coverage: Results, name: str, changes: dict[str, int],
                                      message: str) -> None:
    build, _ = _run_of(coverage, name)
    shape, config = FORCED_ROWS[0] if name == "softmax" else FORCED_ROWS[2]
    case = _forced(build, "negative", shape, config, seed=9)
    assert case is not None
    names = [f.name for f in build.spec.tiling_fields]
    for field_name, delta in changes.items():
        case.fields[names.index(field_name)] = int(case.fields[names.index(field_name)]) + delta
    run = _run(build, [case])
    assert run.rc != 0 and message in run.stderr, (run.stdout, run.stderr[-2000:])



@_target("rmsnorm")
def test_harness_catches_wrong_values(coverage: Results) -> None:
    """avgFactor doubled: every element is written once, in bounds, but the values are off."""
    build, _ = _run_of(coverage, "rmsnorm")
    shape, config = FORCED_ROWS[2]
    case = _forced(build, "negative", shape, config, seed=9)
    assert case is not None
    at = [f.name for f in build.spec.tiling_fields].index("avgFactor")
    case.fields[at] = 2 * float(case.fields[at])
    run = _run(build, [case])
    assert run.rc == 0, run.stderr[-2000:]
    assert run.outcomes()["negative"].startswith("FAIL output element 0 is"), run.stdout
