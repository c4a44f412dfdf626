"""Issue 50: a kernel as the public samples write it. Operator attributes (typed, default,
bounds; read by the emitted TilingFunc from the tiling context, declared in the OpDef, taken by
search / explain as ``--attr``, recorded in the results), the shapes a kernel accepts
(``multiple_of``; refused by every command and by the compiled TilingFunc), commands that agree
with ``check``, field comments and the sample-name warning, and vector stages named by their
AscendC call. The worked example is the built-in leaky_relu spec (the LeakyReluCustom sample)
with its sample-style kernel, built against the stand-in CANN headers and run."""

from __future__ import annotations

import json
import re
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ascend_tune.emit import render as emit
from ascend_tune.spec import load_spec, load_spec_text
from ascend_tune.spec.checking import check_files
from tests.cli_process import run
from tests.conftest import ROOT, STUB, needs_gxx

SPEC = ROOT / "operator_specs" / "leaky_relu.yaml"
EXAMPLE = ROOT / "examples" / "leaky_relu"
GRAPH_FAILED = 0xFFFFFFFF


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run(list(args), cwd=cwd)


def _variant(tmp_path: Path, old: str, new: str, name: str = "lr.yaml") -> Path:
    text = SPEC.read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


def _one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


# ---- attributes in the spec -----------------------------------------------------------------


def test_attributes_are_typed_with_default_and_bounds() -> None:
    spec = load_spec("leaky_relu")
    (attr,) = spec.attrs
    assert (attr.name, attr.type, attr.default, attr.lo, attr.hi) == (
        "negative_slope", "float", 0.0, -1000.0, 1000.0)
    assert spec.attr_values == {"negative_slope": 0.0}
    assert "negative_slope" in spec.attr_names


@pytest.mark.parametrize(("old", "new", "message"), [
    ("default: 0.0, min", "default: 2000.0, min",
     r"attrs\.negative_slope\.default: default: negative_slope=2000\.0 is above its maximum"),
    ("type: float, default: 0.0", "type: int, default: 0.5",
     r"attrs\.negative_slope\.default: default 0\.5 is not an int"),
    ("  cores_divide: totalLength % blockDim == 0",
     "  cores_divide: totalLength % blockDim == 0 and negative_slope < 1",
     r"constraints\.cores_divide: reads attribute negative_slope: attributes feed tiling "
     r"fields"),
    ("    negativeSlope: {type: float, value: negative_slope,",
     "    negativeSlope: {type: float, value: negative_slope * tileNum,",
     r"tiling field reads attribute negative_slope and tileNum"),
])
def test_a_bad_attribute_is_one_spec_error(tmp_path: Path, old: str, new: str,
                                           message: str) -> None:
    problems = check_files([_variant(tmp_path, old, new)])
    assert len(problems) == 1 and re.search(message, problems[0]), problems


@pytest.mark.parametrize(("value", "message"), [
    ("negative_slope=abc", r"--attr negative_slope=abc: not a float"),
    ("negative_slope=5000", r"--attr negative_slope=5000\.0 is above its maximum 1000\.0"),
    ("negative_slope=nan", r"--attr negative_slope=nan: not a finite float"),
    ("negativ_slope=0.2", r"has no attribute 'negativ_slope' \(did you mean 'negative_slope'"),
    ("negative_slope", r"--attr 'negative_slope': expected NAME=VALUE"),
])
def test_a_bad_attr_value_is_one_line_exit_2(value: str, message: str) -> None:
    for cmd in (["search", "leaky_relu", "--hw", "ascend910b3", "--shape", "totalLength=4096"],
                ["explain", "leaky_relu", "--hw", "ascend910b3", "--shape", "totalLength=4096"]):
        line = _one_line_error(_cli(*cmd, "--attr", value))
        assert re.search(message, line), line


def test_search_records_the_attributes_and_emit_declares_and_reads_them(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = _cli("search", "leaky_relu", "--hw", "ascend910b3", "--shape", "totalLength=8192",
                "--attr", "negative_slope=0.2", "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["spec"]["attrs"] == {"negative_slope": float(np.float32(0.2))}
    proc = _cli("emit", str(out), "-o", str(tmp_path / "op"), "--op-host", "-q")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    host = (tmp_path / "op/op_host/leaky_relu_custom.cpp").read_text()
    assert 'this->Attr("negative_slope").AttrType(OPTIONAL).Float(0.0);' in host
    select = (tmp_path / "op/op_host/leaky_relu_custom_tiling_select.h").read_text()
    assert "runtime->GetAttrPointer<float>(0);  // negative_slope" in select
    # A spec without attributes records none (older results files keep their bytes).
    plain = tmp_path / "add.json"
    assert _cli("search", "add", "--hw", "ascend910b3", "--shape", "totalLength=4096",
                "-o", str(plain), "-q").returncode == 0
    assert "attrs" not in json.loads(plain.read_text())["spec"]


def test_explain_takes_the_attribute() -> None:
    proc = _cli("explain", "leaky_relu", "--hw", "ascend910b3", "--shape", "totalLength=4096",
                "--attr", "negative_slope=0.5", "--json")
    assert proc.returncode == 0, proc.stderr


# ---- shapes the kernel accepts ----------------------------------------------------------------


def test_a_shape_the_kernel_does_not_accept_is_refused_by_every_command(tmp_path: Path) -> None:
    want = ("totalLength=5000 is not a multiple of 1024, which the LeakyReluCustom kernel "
            "needs (shape.totalLength.multiple_of); pad it to 4096 or 5120")
    for cmd in (["search", "leaky_relu", "--hw", "ascend910b3"],
                ["explain", "leaky_relu", "--hw", "ascend910b3"],
                ["explain", str(EXAMPLE / "results.json")]):
        line = _one_line_error(_cli(*cmd, "--shape", "totalLength=5000"))
        assert line.endswith(want), line
    doc = json.loads((EXAMPLE / "results.json").read_text())
    doc["shapes"][0]["shape"]["totalLength"] += 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    line = _one_line_error(_cli("emit", str(bad), "-o", str(tmp_path / "op")))
    assert "is not a multiple of 1024" in line, line


def test_shape_errors_come_before_the_accepted_shapes_message() -> None:
    line = _one_line_error(_cli("search", "leaky_relu", "--hw", "ascend910b3", "--shape",
                                "totalLength=99999999999999999999"))
    assert "does not fit a 64-bit integer" in line, line
    line = _one_line_error(_cli("search", "leaky_relu", "--hw", "ascend910b3", "--shape",
                                "totalLength=1000"))
    assert "out of range [1024, 1048576]" in line, line


def test_a_shape_range_picks_only_accepted_shapes(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = _cli("search", "leaky_relu", "--hw", "ascend910b3", "--shape-range",
                "totalLength=1024:1048576", "--max-shapes", "10", "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    shapes = [e["shape"]["totalLength"] for e in json.loads(out.read_text())["shapes"]]
    assert shapes and all(s % 1024 == 0 for s in shapes), shapes


def test_check_says_which_constraint_and_the_multiple_that_fixes_it(tmp_path: Path) -> None:
    path = _variant(tmp_path, "multiple_of: 1024, ", "")
    (problem,) = check_files([path])
    assert re.fullmatch(
        rf"{re.escape(str(path))}: baseline breaks '(cores_divide|tiles_divide|tile_aligned)' "
        r"at totalLength=\d+ on \d+ AIC / \d+ AIV \(a valid configuration exists there\); "
        r"\d+ of \d+ sampled shapes fail the baseline on those cores; to fix, make the baseline "
        r"pass '\1' there or state the shapes the kernel accepts \(shape.totalLength: min, "
        r"max, multiple_of\); the baseline holds on every sampled multiple of 1024: "
        r"'multiple_of: 1024' on shape.totalLength would do, if the kernel needs it", problem)
    # ... and with that multiple the spec passes (the built-in one).
    assert check_files([SPEC]) == []


# ---- commands agree ------------------------------------------------------------------------


def test_search_and_emit_refuse_what_check_refuses_or_warn_with_force(tmp_path: Path) -> None:
    path = _variant(tmp_path, "multiple_of: 1024, ", "")
    (problem,) = check_files([path])
    search = ["search", str(path), "--hw", "ascend910b3", "--shape", "totalLength=4096",
              "--shape", "totalLength=1056"]
    line = _one_line_error(_cli(*search, "-q"))
    assert line == f"error: {problem} (check refuses this spec; search --force goes on)"
    out = tmp_path / "r.json"
    proc = _cli(*search, "--force", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {problem}" in proc.stderr
    # The table names the constraint the baseline breaks.
    assert re.search(r"invalid \((cores_divide|tiles_divide|tile_aligned)\)", proc.stdout), (
        proc.stdout)
    line = _one_line_error(_cli("emit", str(out), "-o", str(tmp_path / "op")))
    assert line.startswith(f"error: {out} (embedded spec): baseline breaks "), line
    assert line.endswith("(check refuses this spec; emit --force goes on)"), line
    proc = _cli("emit", str(out), "-o", str(tmp_path / "op"), "--force", "-q")
    assert proc.returncode == 0 and "warning:" in proc.stderr, proc.stderr


def test_the_refusal_comes_after_shape_errors(tmp_path: Path) -> None:
    path = _variant(tmp_path, "multiple_of: 1024, ", "")
    line = _one_line_error(_cli("search", str(path), "--hw", "ascend910b3", "--shape",
                                "totalLength=2000000"))
    assert "out of range" in line, line


# ---- field meanings ---------------------------------------------------------------------------


def test_each_field_carries_its_derivation_and_built_ins_emit_no_warning(tmp_path: Path
                                                                          ) -> None:
    proc = _cli("emit", str(ROOT / "examples/add/results.json"), "-o", str(tmp_path / "a"),
                "-q")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    header = (tmp_path / "a/op_host/add_custom_tiling.h").read_text()
    block = header[header.index("BEGIN_TILING_DATA_DEF"):]
    assert ("// tileNum = tileNum\n//   alignedLength = align_up(totalLength, 32 // sizeof.x)\n"
            in block)
    assert "//   not the AscendC sample's tileNum (" in block


def test_a_sample_named_field_with_another_derivation_is_warned_about(tmp_path: Path) -> None:
    # tileNum here is three times the tiles per core: not the sample's.
    path = _variant(tmp_path, "    tileNum: {type: uint32_t, value: tileNum, meaning: sample,",
                    "    tileNum: {type: uint32_t, value: tileNum * 3,")
    out = tmp_path / "r.json"
    assert _cli("search", str(path), "--hw", "ascend910b3", "--shape", "totalLength=65536",
                "-o", str(out), "-q").returncode == 0
    proc = _cli("emit", str(out), "-o", str(tmp_path / "op"), "-q")
    assert proc.returncode == 0
    (line,) = proc.stderr.strip().splitlines()
    assert re.fullmatch(
        r"warning: LeakyReluCustom: tiling field tileNum has the name of the AscendC sample's "
        r"\(tiles per core before the double-buffer split: .*\) but not its derivation: "
        r"tileNum = tileNum \* 3 is \d+ at totalLength=65536, where the sample's is no exact "
        r"division; a kernel "
        r"written like the sample misreads it \(declare 'meaning: own' on the field if that "
        r"is intended\)", line), line
    own = _variant(tmp_path, "    tileNum: {type: uint32_t, value: tileNum, meaning: sample,",
                   "    tileNum: {type: uint32_t, value: tileNum * 3, meaning: own,", "own.yaml")
    assert _cli("search", str(own), "--hw", "ascend910b3", "--shape", "totalLength=65536",
                "-o", str(out), "-q", "--fresh").returncode == 0
    proc = _cli("emit", str(out), "-o", str(tmp_path / "op2"), "-q")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


# ---- vector calls ------------------------------------------------------------------------------


def test_a_vector_stage_named_by_its_call_is_costed_as_its_class(tmp_path: Path) -> None:
    spec = load_spec("leaky_relu")
    stages = [s for s in spec.sides[0].body[0].body if s.pipe == "vector"]  # type: ignore[union-attr]
    assert [(s.call, s.op) for s in stages] == [("Maxs", "unary"), ("Mins", "unary"),
                                                ("Muls", "unary"), ("Add", "binary")]
    same = load_spec_text(SPEC.read_text().replace("call: Maxs", "op: unary"), "x.yaml")
    assert same.sha256 != spec.sha256  # the text differs; the model does not:
    assert [s.op for s in same.sides[0].body[0].body if s.pipe == "vector"] == [  # type: ignore[union-attr]
        s.op for s in stages]
    (problem,) = check_files([_variant(tmp_path, "call: Mins", "call: Minss")])
    assert re.search(r"call: unknown AscendC vector call 'Minss' \(did you mean 'Mins'\?\); "
                     r"give op: CLASS", problem), problem
    (problem,) = check_files([_variant(tmp_path, "call: Mins", "call: Mins, op: exp", "b.yaml")])
    assert "op exp contradicts call Mins, whose class is unary" in problem


def test_the_spec_reference_lists_every_call_with_its_class_and_source() -> None:
    from ascend_tune.base.ascendc_calls import VECTOR_CALLS

    doc = (ROOT / "docs" / "spec_reference.md").read_text()
    for call in VECTOR_CALLS.values():
        assert re.search(rf"^\| `{call.name}` \| `{call.op}` \| ", doc, re.M), call.name


# ---- the sample-style kernel, built and run ----------------------------------------------------

DRIVER = r"""
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include "register/op_def_registry.h"
#include "leaky_relu_custom_tiling.h"
#include "leaky_relu_custom_tiling_select.h"

// argv: totalLength aiv attrMode slope  (attrMode 0: set, 1: none, 2: wrong type)
int main(int argc, char** argv) {
    if (argc != 5) return 3;
    gert::TilingContext tc;
    gert::StorageShape s;
    s.MutableStorageShape().AppendDim(std::atoll(argv[1]));
    s.MutableOriginShape().AppendDim(std::atoll(argv[1]));
    tc.inputs.push_back(s);
    tc.platform.aicCoreNum = static_cast<uint32_t>(std::atoi(argv[2])) / 2;
    tc.platform.aivCoreNum = static_cast<uint32_t>(std::atoi(argv[2]));
    const int mode = std::atoi(argv[3]);
    const float slope = std::strcmp(argv[4], "nan") == 0
        ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(std::atof(argv[4]));
    if (mode == 0) tc.attrs.SetFloat(0, slope);
    const ge::graphStatus status = optiling::leaky_relu_custom_tiling::TilingFunc(&tc);
    std::printf("%u %u ", status, tc.GetBlockDim());
    const unsigned char* b = static_cast<const unsigned char*>(tc.GetRawTilingData()->GetData());
    for (size_t i = 0; i < tc.GetRawTilingData()->GetDataSize(); ++i) std::printf("%02x", b[i]);
    std::printf("\n");
    return 0;
}
"""

KERNEL_MAIN = r"""
#include <cmath>
#include <cstdio>
#include <vector>
#include "kernel_operator.h"
extern "C" void leaky_relu_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling);

// argv: blockDim tilingHex
int main(int argc, char** argv) {
    if (argc != 3) return 3;
    const long blockDim = std::atol(argv[1]);
    std::vector<uint8_t> tiling;
    for (const char* p = argv[2]; p[0] && p[1]; p += 2) {
        unsigned v = 0;
        std::sscanf(p, "%2x", &v);
        tiling.push_back(static_cast<uint8_t>(v));
    }
    LeakyReluCustomTilingData t;
    std::memcpy(&t, tiling.data(), sizeof t);
    const uint32_t n = t.totalLength;
    std::vector<float> x(n), y(n, std::nanf(""));
    std::vector<uint8_t> writes(n, 0);
    for (uint32_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>(static_cast<int>(i % 37) - 18) / 4.0f;
    }
    ascend_tune_stub::RegisterGm("x", x.data(), n * sizeof(float), sizeof(float), nullptr);
    ascend_tune_stub::RegisterGm("y", y.data(), n * sizeof(float), sizeof(float), writes.data());
    for (long b = 0; b < blockDim; ++b) {
        ascend_tune_stub::SetBlock(b, blockDim);
        leaky_relu_custom(reinterpret_cast<GM_ADDR>(x.data()), reinterpret_cast<GM_ADDR>(y.data()),
                          nullptr, tiling.data());
    }
    for (uint32_t i = 0; i < n; ++i) {
        const float want = x[i] >= 0.0f ? x[i] : t.negativeSlope * x[i];
        if (writes[i] != 1 || std::fabs(y[i] - want) > 1e-6f) {
            std::printf("FAIL %u %g %g %u\n", i, y[i], want, writes[i]);
            return 1;
        }
    }
    std::printf("OK %u %g\n", n, t.negativeSlope);
    return 0;
}
"""


@needs_gxx
def test_the_sample_style_kernel_reads_what_the_emitted_tiling_func_writes(tmp_path: Path
                                                                           ) -> None:
    bundle = emit.load_bundle(json.loads((EXAMPLE / "results.json").read_text()), "results")
    macro = emit.render(bundle, "macro", op_host=True)
    struct_files = emit.render(bundle, "struct")
    emit.write(tmp_path / "macro", macro)
    emit.write(tmp_path / "struct", struct_files)
    host = tmp_path / "macro" / "op_host"
    (tmp_path / "driver.cpp").write_text(DRIVER)
    flags = ["-std=c++11", "-Wall", "-Wextra", "-Werror", f"-I{STUB}", f"-I{host}"]
    subprocess.run(["g++", *flags, str(tmp_path / "driver.cpp"),
                    str(host / "leaky_relu_custom.cpp"), "-o", str(tmp_path / "host")],
                   check=True, capture_output=True, text=True)
    (tmp_path / "kmain.cpp").write_text(KERNEL_MAIN)
    kernel = EXAMPLE / "LeakyReluCustom" / "op_kernel" / "leaky_relu_custom.cpp"
    kflags = ["-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{STUB}",
              "-include", str(tmp_path / "struct/op_kernel/leaky_relu_custom_tiling.h"),
              "-DASCEND_TUNE_KERNEL_TILING=LeakyReluCustomTilingData"]
    proc = subprocess.run(["g++", *kflags, str(tmp_path / "kmain.cpp"), str(kernel), "-o",
                           str(tmp_path / "kernel")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]

    def tiling(total: int, aiv: int = 40, mode: int = 0, slope: str = "0.25"
               ) -> tuple[int, int, bytes]:
        out = subprocess.run([str(tmp_path / "host"), str(total), str(aiv), str(mode), slope],
                             check=True, capture_output=True, text=True).stdout.split()
        return int(out[0]), int(out[1]), bytes.fromhex(out[2]) if len(out) > 2 else b""

    # Accepted shapes: tuned and untuned, two platforms; the kernel as the sample writes it
    # computes every element once and right from the fields the TilingFunc wrote.
    for total, aiv in ((4096, 40), (7168, 40), (1048576, 40), (3072, 40), (52224, 16),
                       (1024, 16)):
        status, block_dim, raw = tiling(total, aiv)
        assert status == 0 and 1 <= block_dim <= aiv, (total, status)
        fields = struct.unpack("<IIfI", raw)
        assert fields[0] == total and fields[2] == 0.25
        sel = bundle.select({"totalLength": total}, aiv // 2, aiv)
        assert (block_dim, fields[1]) == (sel.config["blockDim"], sel.config["tileNum"])
        proc = subprocess.run([str(tmp_path / "kernel"), str(block_dim), raw.hex()],
                              capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.startswith("OK"), (
            total, proc.stdout, proc.stderr[-2000:])
    # What Python refuses, the compiled TilingFunc refuses: shapes outside the accepted set,
    # an attribute outside its bounds, NaN, missing or of another type (the stand-in aborts
    # on a type mismatch, as a strict reading would).
    for total in (5000, 1023, 1048576 + 1024, 0):
        assert tiling(total)[0] == GRAPH_FAILED, total
        assert run(["explain", "leaky_relu", "--hw", "ascend910b3", "--shape",
                    f"totalLength={total}"]).returncode == 2, total
    for slope in ("5000", "-1000.5", "nan"):
        assert tiling(4096, slope=slope)[0] == GRAPH_FAILED, slope
    assert tiling(4096, mode=1)[0] == GRAPH_FAILED
    assert tiling(4096, slope="-1000")[0] == 0
