"""The golden files (tests/golden) against expectations written here by hand.

test_emit.py compares emitted files with the goldens, and ``--update-golden`` rewrites them
from the same code: a bug that reaches the goldens would pass from then on. These tests read
the goldens only and check them against what is known without the code: the 910B3 data sheet
(UB 192 KiB, L1 512 KiB, L0A/L0B 64 KiB, L0C 128 KiB, 20 AIC, 40 AIV, 32 B blocks), the specs'
TilingData field lists, the tuned shapes of test_emit.py, the spec constraints written out in
plain Python, and the documented selection rule.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
STYLES = ("macro", "struct")
ADD_FIELDS = ["totalLength", "blockLength", "tileNum", "tileLength", "lastTileLength",
              "lastBlockLength", "lastBlockTileNum", "lastBlockLastTileLength"]
ADD_SHAPES = [1000, 65536, 1 << 20, 12_345_679]
MATMUL_SHAPES = [(96, 200, 64), (128, 16384, 1024), (512, 4096, 1024), (2048, 4096, 4000)]
MATMUL_PARAMS = ["baseM", "baseN", "baseK", "stepM", "stepN", "stepKa", "stepKb", "dbL1",
                 "dbL0A", "dbL0B", "dbL0C", "iterateOrder", "mDim", "nDim", "kDim"]


def _read(which: str, style: str, rel: str) -> str:
    return (GOLDEN / f"{which}_{style}" / rel).read_text()


def _table(text: str, name: str) -> list[list[int]]:
    body = re.search(rf"{name}\[[^\]]*\]\[\d+\] = \{{\n(.*?)\n\}};", text, re.S)
    assert body is not None, name
    return [[int(v) for v in re.findall(r"INT64_C\((-?\d+)\)", line)]
            for line in body.group(1).splitlines()]


def test_every_golden_file_is_checked_here() -> None:
    checked = {f"{w}_{s}/{rel}" for w in ("add", "matmul") for s in STYLES
               for rel in _FILES[(w, s)]}
    on_disk = {str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*") if p.is_file()}
    assert on_disk == checked


_FILES = {
    ("add", "macro"): ["op_host/add_custom.cpp", "op_host/add_custom_tiling.h",
                       "op_host/add_custom_tiling_select.h",
                       "op_kernel/add_custom_tuned_constants.h"],
    ("add", "struct"): ["op_host/add_custom.cpp", "op_kernel/add_custom_tiling.h",
                        "op_host/add_custom_tiling_select.h",
                        "op_kernel/add_custom_tuned_constants.h"],
    ("matmul", "macro"): ["op_host/matmul_custom.cpp", "op_host/matmul_custom_tiling.h",
                          "op_host/matmul_custom_tiling_select.h",
                          "op_kernel/matmul_custom_tuned_constants.h"],
    ("matmul", "struct"): ["op_host/matmul_custom.cpp", "op_kernel/matmul_custom_tiling.h",
                           "op_host/matmul_custom_tiling_select.h",
                           "op_kernel/matmul_custom_tuned_constants.h"],
}


@pytest.mark.parametrize("style", STYLES)
def test_tuned_constants(style: str) -> None:
    add = _read("add", style, "op_kernel/add_custom_tuned_constants.h")
    assert "#define ADD_CUSTOM_KERNEL_TYPE KERNEL_TYPE_AIV_ONLY" in add
    for line in ("UB_BYTES = INT64_C(196608)", "BLOCK_BYTES = INT64_C(32)",
                 "MAX_TILE_ELEMS = INT64_C(32768)", "TUNED_SHAPE_COUNT = 4"):
        assert f"constexpr int64_t {line};" in add
    mm = _read("matmul", style, "op_kernel/matmul_custom_tuned_constants.h")
    assert "#define MATMUL_CUSTOM_KERNEL_TYPE KERNEL_TYPE_MIX_AIC_1_2" in mm
    for line in ("L1_BYTES = INT64_C(524288)", "L0C_BYTES = INT64_C(131072)",
                 "K0 = INT64_C(16)", "TUNED_SHAPE_COUNT = 4"):
        assert f"constexpr int64_t {line};" in mm


def test_tiling_data_declarations() -> None:
    macro = _read("add", "macro", "op_host/add_custom_tiling.h")
    assert re.findall(r"TILING_DATA_FIELD_DEF\(uint32_t, (\w+)\);", macro) == ADD_FIELDS
    assert "REGISTER_TILING_DATA_CLASS(AddCustom, AddCustomTilingData)" in macro
    struct = _read("add", "struct", "op_kernel/add_custom_tiling.h")
    assert re.findall(r"    uint32_t (\w+) = 0;", struct) == ADD_FIELDS
    # Eight uint32_t fields: 32 bytes.
    assert "static_assert(sizeof(AddCustomTilingData) == 32," in struct
    macro = _read("matmul", "macro", "op_host/matmul_custom_tiling.h")
    assert "TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cubeTilingData);" in macro
    assert re.findall(r"TILING_DATA_FIELD_DEF\(uint32_t, (\w+)\);", macro) == [
        "M", "N", "K", "tilingPad0"]
    struct = _read("matmul", "struct", "op_kernel/matmul_custom_tiling.h")
    # TCubeTiling is 50 int32 fields (200 bytes), then M, N, K and a pad to 8 bytes: 216.
    assert "static_assert(sizeof(MatmulCustomTilingData) == 216," in struct


@pytest.mark.parametrize("style", STYLES)
def test_op_host_definitions(style: str) -> None:
    add = _read("add", style, "op_host/add_custom.cpp")
    opdef = re.findall(r'this->(Input|Output)\("(\w+)"\).*DataType\(\{ge::(\w+)\}\)', add)
    assert opdef == [("Input", "x", "DT_FLOAT16"), ("Input", "y", "DT_FLOAT16"),
                     ("Output", "z", "DT_FLOAT16")]
    assert 'AddConfig("ascend910b")' in add and "OP_ADD(AddCustom);" in add
    mm = _read("matmul", style, "op_host/matmul_custom.cpp")
    opdef = re.findall(r'this->(Input|Output)\("(\w+)"\).*DataType\(\{ge::(\w+)\}\)', mm)
    assert opdef == [("Input", "a", "DT_FLOAT16"), ("Input", "b", "DT_FLOAT16"),
                     ("Output", "c", "DT_FLOAT16")]
    assert "OP_ADD(MatmulCustom);" in mm


def _align_up(x: int, a: int) -> int:
    return -(-x // a) * a


def _add_valid(total: int, block_dim: int, tile: int, buffers: int) -> bool:
    """operator_specs/add.yaml's constraints and launch limit, written out for float16."""
    block = _align_up(-(-_align_up(total, 16) // block_dim), 16)
    return (3 * buffers * tile * 2 <= 196608 and (block_dim - 1) * block < total
            and (tile < 2 * block or tile == 256) and 1 <= block_dim <= 40)


@pytest.mark.parametrize("style", STYLES)
def test_add_selection_tables(style: str) -> None:
    text = _read("add", style, "op_host/add_custom_tiling_select.h")
    assert "const int32_t kTunedCount = 4;" in text
    shapes = _table(text, "kTunedShapes")
    assert shapes == [[n] for n in ADD_SHAPES]
    configs = _table(text, "kTunedConfigs")
    assert len(configs) == 4
    for (total,), (block_dim, tile, buffers) in zip(shapes, configs, strict=True):
        assert _add_valid(total, block_dim, tile, buffers), (total, block_dim, tile, buffers)
        assert tile & (tile - 1) == 0 and 256 <= tile <= 32768 and buffers in (1, 2)
    # The winners lead the candidate table, in the same order.
    assert _table(text, "kCandidates")[:4] == configs
    # An AIV-only kernel checks its cores against the AIV count, and a tie keeps the first.
    assert re.search(r"if \(!CoresWithin\(.*, v\.aivNum\)\) return false;  "
                     r"// block_dim_within_chip", text)
    assert "if (best == -2 || us < bestUs) {" in text


@pytest.mark.parametrize("style", STYLES)
def test_matmul_selection_tables(style: str) -> None:
    text = _read("matmul", style, "op_host/matmul_custom_tiling_select.h")
    assert re.findall(r"    int64_t (\w+);", text.split("struct Config {", 1)[1].split(
        "};", 1)[0]) == MATMUL_PARAMS
    shapes = _table(text, "kTunedShapes")
    assert [tuple(s) for s in shapes] == MATMUL_SHAPES
    configs = _table(text, "kTunedConfigs")
    for (m, n, k), row in zip(shapes, configs, strict=True):
        c = dict(zip(MATMUL_PARAMS, row, strict=True))
        # Fractal-aligned base blocks; L0A / L0B 64 KiB, L0C 128 KiB (fp32 accumulators), L1
        # 512 KiB for the A and B panels, all in float16 with their double buffers.
        assert c["baseM"] % 16 == 0 and c["baseN"] % 16 == 0 and c["baseK"] % 16 == 0
        assert c["baseM"] * c["baseK"] * 2 * c["dbL0A"] <= 65536
        assert c["baseK"] * c["baseN"] * 2 * c["dbL0B"] <= 65536
        assert c["baseM"] * c["baseN"] * 4 * c["dbL0C"] <= 131072
        panels = (c["stepM"] * c["baseM"] * c["stepKa"] * c["baseK"]
                  + c["stepN"] * c["baseN"] * c["stepKb"] * c["baseK"])
        assert panels * 2 * c["dbL1"] <= 524288
        # MIX: each block is one AIC with two AIVs; the split counts AIVs (40), blocks AICs.
        used = c["mDim"] * c["nDim"] * c["kDim"]
        assert used <= 40 and math.ceil(used / 2) <= 20
        # No more cores along M or N than there are base blocks to give them.
        assert c["mDim"] <= -(-m // c["baseM"]) and c["nDim"] <= -(-n // c["baseN"]), (m, n)
        assert k > 0
    assert "if (best == -2 || us < bestUs) {" in text
