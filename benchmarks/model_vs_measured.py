"""The model's predictions next to published measured kernel times.

    python benchmarks/model_vs_measured.py [--markdown] [--rows]

Data: ``../shared/data/measurements/public_timings.csv`` (353 rows, notes in PUBLIC_TIMINGS.md;
copied to ``benchmarks/data/public_timings.csv`` when the shared copy is absent) and
``benchmarks/data/catlass_public.csv`` (18 CATLASS points, manifests beside it). Every
prediction uses the shipped profiles as they are; nothing is fitted here (the leaves fitted on
dev rows come from ``benchmarks/fit_profiles.py`` and name their rows).

Held-out split, fixed by source before any error was looked at or any leaf fitted:

* **held out** -- rows no constant of the model was set or checked against: the CATLASS msKPP
  autotune tiling sweeps on 910B4 (catlass examples/autotune @30f3b93d: 00_basic_matmul,
  06_optimized_matmul -- predicted with ``layouts: {b: column_major}`` and the AIV padding
  prologue it ran with, ``data/catlass_padding_prologue.yaml``, priced by the profile's
  sourced transfer leaves only --, 08_grouped_matmul),
  the asc-devkit standalone GELU rows (matmul_gelu_high_performance, gelu_high_performance),
  the asc-devkit quant_group_matmul rows and the asc-devkit matmul_high_performance A2 tuning
  steps (added after the fit; nothing was set or checked against them).
* **dev** -- rows that earlier work calibrated or validated against, or that this change
  inspected or fitted: ``catlass_public.csv`` (the project's previous validation set; its
  quant_matmul rows fit ``cube_kernel_floor_us``), the asc-devkit add_high_performance tuning
  steps and the asc-devkit data_copy rows (``nd2nz_row_cycles`` was derived from two of them).

Per group (operator, chip): MAPE, max |error|, bias (mean signed error); per tiling sweep (one
shape, several measured tilings): Spearman rank correlation and regret = measured time of the
model's pick / measured best. Rows the built-in specs cannot describe are counted by reason.
"""

from __future__ import annotations

import argparse
import csv
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import measured_vector_ops as vector_ops  # benchmarks/, beside this script
import numpy as np

from ascend_tune.calibrate import fit as cal
from ascend_tune.calibrate.measurements import load_manifest, read_files
from ascend_tune.hardware import HardwareProfile, load_profile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import OperatorSpec, load_spec, load_spec_text

DATA = Path(__file__).resolve().parent / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "measurements"
PUBLIC = next((p for p in (SHARED / "public_timings.csv", DATA / "public_timings.csv")
               if p.exists()), SHARED / "public_timings.csv")
# CATLASS kernels launch on the AIC only (one block per AIC): the cube_only variant.
CATLASS_GROUPS = [("matmul fp16 (catlass_public)", "matmul:cube_only", "ascend910b2",
                   "catlass_fp16.manifest.yaml")]
# CATLASS 12/44 quant_matmul (its L1 <128,256,512>, L0 <128,256,128>, every AIC): the
# quant_matmul spec with its AIV dequant epilogue; the epilogue's pass rows take the model's
# best. The full-load-A variant keeps A resident in L1, which the spec does not describe.
QUANT_CONFIG = {"m1": 128, "n1": 256, "k1": 512, "k0": 128}
# CATLASS 00/06 as the matmul spec sees them (as catlass_fp16.manifest.yaml): ping-pong L1 and
# L0A/L0B, L0C single, the model's best core grid.
CATLASS_FIXED = {"dbL1": 2, "dbL0A": 2, "dbL0B": 2, "dbL0C": 1, "iterateOrder": 0, "kDim": 1}


@dataclass
class Point:
    split: str  # "held-out" or "dev"
    group: str  # operator and chip
    sweep: str | None  # rows of one shape differing only in tiling
    label: str
    measured: float
    predicted: float


@dataclass
class Report:
    points: list[Point] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


def _predict(spec: OperatorSpec, hw: HardwareProfile, shape: Mapping[str, int],
             config: Mapping[str, int], free: Sequence[str] = ()) -> float:
    """Predicted time of ``config``; parameters in ``free`` take the model's best value."""
    model = ShapeModel(spec, hw, shape)
    base = {**model.baseline_values(), **config}
    combos = [base]
    for p in free:
        grid = model.grids[spec.params.index(p)]
        combos = [{**c, p: int(v)} for c in combos for v in grid]
    values = np.array([[c[p] for p in spec.params] for c in combos], dtype=np.int64)
    ev = model.evaluate(values)
    if not ev.valid.any():
        raise ValueError(model.constraint_names[int(ev.failed[0])])
    return float(ev.latency_us[ev.valid].min())


def _catlass_sweeps(rows: list[dict[str, str]], report: Report) -> None:
    """CATLASS 00_basic_matmul and 06_optimized_matmul on 910B4 as the catlass_matmul spec
    describes them: m1 x n1 tiles dealt round-robin over the AICs, the examples' swizzle
    <3, 0>, BasicMatmul's serial tiles and OptimizedMatmul's preload (variant preload), 06
    with B column-major; both mix binaries, 00's AIV body empty, 06's the padding prologue.
    The rows launch 20 AIC (AIC_CORE_NUM); a shape with fewer tiles takes one core per tile
    (cores without a tile return at once)."""
    hw = load_profile("ascend910b4")
    # All three sweeps ran as mix binaries (jit_build.sh --cce-aicore-arch=dav-c220), 00's and
    # 08's AIV bodies empty; 06_optimized_matmul stores B column-major, and its sweep ran with A
    # and B padded on the AIVs first (data/catlass_padding_prologue.yaml): that prologue is
    # its vector side.
    basic = load_spec_text(mix_binary(load_spec("catlass_matmul").source_text, EMPTY_AIV),
                           "catlass_matmul (mix binary, empty AIV body)")
    text = load_spec("catlass_matmul:preload").source_text.replace(
        "\ndtypes:", "\nlayouts: {b: column_major}\ndtypes:", 1)
    prologue = "".join(line for line in
                       (DATA / "catlass_padding_prologue.yaml").read_text().splitlines(True)
                       if not line.startswith("#"))
    optimized = load_spec_text(mix_binary(text, prologue),
                               "catlass_matmul (B column-major, AIV padding prologue)",
                               "preload")
    tile = re.compile(r"L1TileShape=<(\d+),(\d+),(\d+)>; L0TileShape=<(\d+),(\d+),(\d+)>")
    for r in rows:
        kernel = r["kernel"]
        if "08_grouped_matmul" in kernel:
            continue  # _grouped_sweep
        sweep = "00_basic_matmul" if "00_basic" in kernel else "06_optimized_matmul"
        spec = basic if sweep == "00_basic_matmul" else optimized
        m1, n1, k1, m0, n0, k0 = (int(v) for v in tile.search(r["tiling"]).groups())  # type: ignore[union-attr]
        shape = {"M": int(r["M"]), "N": int(r["N"]), "K": int(r["K"])}
        if (m0, n0) != (m1, n1):
            report.skipped["CATLASS L0 tile smaller than the L1 tile in M or N"] += 1
            continue
        m_tiles, n_tiles = -(-shape["M"] // m1), -(-shape["N"] // n1)
        # <3, 0> on fewer than 3 tile rows walks as <m_tiles, 0> (the spec keeps only that).
        config = {"m1": m1, "n1": n1, "k1": k1, "k0": k0, "swizzleOffset": min(3, m_tiles),
                  "swizzleDirection": 0,
                  "blockDim": min(int(r["block_dim"].split()[0]), m_tiles * n_tiles)}
        try:
            pred = _predict(spec, hw, shape, config)
        except ValueError as e:
            report.skipped[f"CATLASS tiling breaks spec constraint {e}"] += 1
            continue
        report.points.append(Point("held-out", "matmul fp16 / 910B4", f"catlass {sweep}",
                                   f"L1 <{m1},{n1},{k1}> L0 <{m0},{n0},{k0}>",
                                   float(r["time_us"]), pred))


# The AIV side of a mix binary whose AIV body is empty (CATLASS 00 and 08 at 9aa69a28): the
# kernel pays the MIX launch (mix_extra_us), its AIVs nothing else.
EMPTY_AIV = """vector:
  cores: 2 * blockDim
  body:
    - {stage: empty_aiv_body, pipe: scalar, cycles: 0}
"""


def mix_binary(text: str, vector_side: str) -> str:
    """A cube-only spec's text as a mix kernel with ``vector_side`` (YAML of pipeline.vector
    and any pipeline keys beside it, unindented) as its AIV side."""
    side = "".join("  " + line if line.strip() else line
                   for line in vector_side.splitlines(True))
    for old, new in (("\ncore: cube\n", "\ncore: mix\n"),
                     ("\npipeline:\n", "\npipeline:\n" + side),
                     ("\nkernel: {mode: aic_only}", "\nkernel: {mode: mix}")):
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


# CATLASS 08_grouped_matmul's groups as the script ran them (group_list [128, 256, 512, 515,
# 568, 579, 678, 1024] cumulative; catlass_kernels.md section 2).
GROUPS_08 = (128, 128, 256, 3, 53, 11, 99, 346)


def grouped_spec_with_groups(groups: int) -> OperatorSpec:
    """grouped_matmul with each group's rows as shape variables M0.. (B column-major, as 08
    passes it): the scheduler's stream of every group's m1 x n1 tiles (a group of 3 rows still
    costs a whole m-tile row, clipped to 16 rows), each m-tile reading its group's own K x n1
    panel of B, a tile's rows the mean over the stream; the largest group bounds m1."""
    text = load_spec("grouped_matmul").source_text
    names = [f"M{g}" for g in range(groups)]
    edits = (
        ("\ndtypes:", "\nlayouts: {b: column_major}\ndtypes:"),
        ("\nparams:", "".join(f"\n  {n}: {{min: 1, max: 16777216, doc: rows of group {g}}}"
                               for g, n in enumerate(names)) + "\nparams:"),
        ("\n  groupM: ceil_div(M, G)\n", f"\n  groupM: max({', '.join(names)})\n"),
        ("\n  mTiles: ceil_div(groupM, m1)\n",
         f"\n  mTiles: {' + '.join(f'ceil_div({n}, m1)' for n in names)}\n"),
        ("\n  tiles: G * mTiles * nTiles\n", "\n  tiles: mTiles * nTiles\n"),
        ("\n  tileM: min(m1, align_up(groupM, 16))\n",
         "\n  tileM: min(m1, align_up(ceil_div(M, mTiles), 16))\n"))
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    return load_spec_text(mix_binary(text, EMPTY_AIV),
                          "grouped_matmul (B column-major, the groups' own rows, mix binary)")


def _grouped_sweep(rows: list[dict[str, str]], report: Report) -> None:
    """CATLASS 08_grouped_matmul on 910B4: 8 uneven groups (GROUPS_08) over M = 1024, N = 768,
    K = 512, B column-major per group (:func:`grouped_spec_with_groups`)."""
    hw = load_profile("ascend910b4")
    spec = grouped_spec_with_groups(len(GROUPS_08))
    tile = re.compile(r"L1TileShape=<(\d+),(\d+),(\d+)>; L0TileShape=<(\d+),(\d+),(\d+)>")
    for r in rows:
        if "08_grouped_matmul" not in r["kernel"]:
            continue
        m1, n1, k1, _m0, _n0, k0 = (int(v) for v in tile.search(r["tiling"]).groups())  # type: ignore[union-attr]
        shape = {"M": sum(GROUPS_08), "K": 512, "G": len(GROUPS_08), "N": 768,
                 **{f"M{g}": m for g, m in enumerate(GROUPS_08)}}
        config = {"m1": m1, "n1": n1, "k1": k1, "k0": k0, "blockDim": 20}
        try:
            pred = _predict(spec, hw, shape, config)
        except ValueError as e:
            report.skipped[f"CATLASS grouped tiling breaks spec constraint {e}"] += 1
            continue
        report.points.append(Point("held-out", "grouped matmul fp16 / 910B4",
                                   "catlass 08_grouped_matmul",
                                   f"L1 <{m1},{n1},{k1}> L0 k {k0}", float(r["time_us"]), pred))


def _quant_group(rows: list[dict[str, str]], report: Report) -> None:
    """asc-devkit quant_group_matmul on A2 (910B1, 24 AIC): 8 groups x 1024 rows, N = 8192,
    K = 1024, BASE_M 128, BASE_N 256, BASE_K 128 (L1 depth not stated: 4 K steps, 512). Only
    the __mix__(1,2) PIPELINE_DEPTH=4 scenario is the structure the spec describes (two AIVs
    per AIC, the AIC running ahead of the epilogue); 1:1 and depth 1 are other kernels."""
    spec, hw = load_spec("quant_matmul"), load_profile("ascend910b1")
    for r in rows:
        if "950" in r["chip"]:
            report.skipped["quant group matmul on 950 (ascend950pr has 28 AIC, the sample 32)"] += 1
            continue
        if "PIPELINE_DEPTH=4" not in r["kernel"]:
            report.skipped["quant group matmul mix 1:1 or pipeline depth 1 (spec: 1:2, "
                           "AIC ahead of the epilogue)"] += 1
            continue
        shape = {"M": 8192, "K": 1024, "G": 8, "N": 8192}
        config = {"m1": 128, "n1": 256, "k1": 512, "k0": 128, "blockDim": 24}
        pred = _predict(spec, hw, shape, config, ("epiRows",))
        # The sample's epilogue also applies FasterGelu, which the spec's does not.
        report.points.append(Point("held-out", "quant group matmul int8 (+GELU) / 910B1", None,
                                   r["kernel"][:60], float(r["time_us"]), pred))


# asc-devkit matmul_high_performance on 910B1 (8192^3 fp16, the Matmul API launched one block
# per AIC): each case's tiling as its README states it. Case 4's depthB1 is not stated (taken
# as depthA1's split); cases 0-3 use the Norm template (one baseK per L1 load).
MATMUL_STEPS = {
    "Case 0": {"baseM": 64, "baseN": 64, "baseK": 64, "mDim": 1, "nDim": 1, "stepKa": 1,
               "stepKb": 1},
    "Case 1": {"baseM": 128, "baseN": 256, "baseK": 64, "mDim": 1, "nDim": 1, "stepKa": 1,
               "stepKb": 1},
    "Case 2": {"baseM": 128, "baseN": 256, "baseK": 64, "mDim": 2, "nDim": 12, "stepKa": 1,
               "stepKb": 1},
    "Case 3": {"baseM": 128, "baseN": 256, "baseK": 64, "mDim": 4, "nDim": 6, "stepKa": 1,
               "stepKb": 1},
    "Case 4": {"baseM": 128, "baseN": 256, "baseK": 64, "mDim": 4, "nDim": 6, "stepKa": 2,
               "stepKb": 2},
    "Case 5": {"baseM": 128, "baseN": 256, "baseK": 64, "mDim": 4, "nDim": 6, "stepKa": 8,
               "stepKb": 4},
}


# The same steps on 950PR (32 AIC: the 950PR_9589 part), tiling from the sample's matmul.asc
# constants for NPU_ARCH 3510 as the CSV's tiling column records them: base 256x256x64 from
# case 1 on, singleM/singleN 4096/512 (case 2) and 2048/1024 (cases 3-5), MDL depthA1 =
# depthB1 = 8 with stepKa = 4 in case 5 (case 4's MDL depths not stated: as on 910B1).
MATMUL_STEPS_950 = {
    "Case 0": MATMUL_STEPS["Case 0"],
    "Case 1": {"baseM": 256, "baseN": 256, "baseK": 64, "mDim": 1, "nDim": 1, "stepKa": 1,
               "stepKb": 1},
    "Case 2": {"baseM": 256, "baseN": 256, "baseK": 64, "mDim": 2, "nDim": 16, "stepKa": 1,
               "stepKb": 1},
    "Case 3": {"baseM": 256, "baseN": 256, "baseK": 64, "mDim": 4, "nDim": 8, "stepKa": 1,
               "stepKb": 1},
    "Case 4": {"baseM": 256, "baseN": 256, "baseK": 64, "mDim": 4, "nDim": 8, "stepKa": 2,
               "stepKb": 2},
    "Case 5": {"baseM": 256, "baseN": 256, "baseK": 64, "mDim": 4, "nDim": 8, "stepKa": 4,
               "stepKb": 4},
}


def _matmul_steps(rows: list[dict[str, str]], report: Report) -> None:
    """asc-devkit matmul_high_performance A2 tuning steps, held out (added after the fit; no
    leaf was set or checked against them). Cases 6-8 add an L2 split, constant tiling and
    UnitFlag, which the spec does not describe."""
    spec, hw = load_spec("matmul:cube_only"), load_profile("ascend910b1")
    shape = {"M": 8192, "N": 8192, "K": 8192}
    for r in rows:
        case = re.search(r"Case \d", r["kernel"])
        on_950 = "950" in r["chip"]
        steps = (MATMUL_STEPS_950 if on_950 else MATMUL_STEPS).get(case.group(0)) if case \
            else None
        if steps is None:
            report.skipped["matmul_high_performance L2 split / constant tiling / UnitFlag "
                           "(not in the spec)"] += 1
            continue
        config = {"stepM": 1, "stepN": 1, "dbL1": 2, "dbL0A": 2, "dbL0B": 2, "dbL0C": 1,
                  "iterateOrder": 0, "kDim": 1, **steps}
        if on_950:
            pred = _predict(spec, load_profile("ascend950pr_9589"), shape, config)
            report.points.append(Point(
                "held-out", "matmul fp16 8192^3 / 950PR_9589 (asc-devkit steps)",
                "asc-devkit matmul_high_performance / 950PR_9589", r["kernel"][:40],
                float(r["time_us"]), pred))
            continue
        pred = _predict(spec, hw, shape, config)
        report.points.append(Point("held-out", "matmul fp16 8192^3 / 910B1 (asc-devkit steps)",
                                   "asc-devkit matmul_high_performance / 910B1",
                                   r["kernel"][:40], float(r["time_us"]), pred))


def _data_copy(rows: list[dict[str, str]], report: Report) -> None:
    """asc-devkit data_copy through benchmarks/data/data_copy*.yaml: GM->UB on every AIV and
    GM->L1 ND2NZ on every AIC, on A2 (the 910B2 profile: 48 AIV / 24 AIC at 1800 MHz) and 950PR
    (the 950PR_9589 profile: 64 / 32 at 1650 MHz)."""
    specs = {"ub": load_spec(str(DATA / "data_copy.yaml")),
             "l1": load_spec(str(DATA / "data_copy_l1.yaml"))}
    for r in rows:
        kernel, cores = r["kernel"], int(re.match(r"\d+", r["block_dim"]).group(0))  # type: ignore[union-attr]
        on_950 = "950" in r["chip"]
        # 950: 64 AIV / 32 AIC launched, the 950PR_9589 part.
        hw = load_profile("ascend950pr_9589" if on_950 else "ascend910b2")
        if "order" in kernel:
            report.skipped["data_copy same-address conflicts (address order not modelled)"] += 1
            continue
        side = "ub" if cores == int(hw["vector_cores"]) else "l1"
        tensor = re.search(r"Tensor=\[(\d+),(\d+)\]", r["shape"])
        tile = re.search(r"Tile=\[(\d+),(\d+)\]", r["tiling"])
        hit = re.search(r"L2 hit ([\d.]+)%", kernel)
        assert tensor is not None and tile is not None, kernel
        shape = {"R": int(tensor.group(1)), "C": int(tensor.group(2)),
                 "passes": 4 if "4x" in kernel else 1,
                 "l2HitPermille": round(float(hit.group(1)) * 10) if hit else 0}
        config = {"tileRows": int(tile.group(1)), "tileCols": int(tile.group(2)),
                  "blockDim": cores}
        pred = _predict(specs[side], hw, shape, config, ("bufferNum",))
        path = (f"GM->UB {int(hw['vector_cores'])} AIV" if side == "ub"
                else f"GM->L1 ND2NZ {int(hw['cube_cores'])} AIC")
        part = "950PR (950PR_9589 profile)" if on_950 else "A2 (910B2 profile)"
        report.points.append(Point("dev", f"data_copy {path} / {part}",
                                   f"asc-devkit data_copy {path}", kernel[10:60],
                                   float(r["time_us"]), pred))


def _part_950(vector_cores: int) -> str:
    """The 950PR part a sample ran on, by the AIV it launches: 950PR_9579 has 56, 950PR_9589
    64 (ascend_hardware.md section 8, S2)."""
    return "ascend950pr_9589" if vector_cores > 56 else "ascend950pr"


def _add_steps(rows: list[dict[str, str]], report: Report) -> None:
    spec = load_spec("add")
    shape = {"totalLength": 8192 * 8192}
    for r in rows:
        kernel, tiling = r["kernel"], r["tiling"]
        if "Case 0" in kernel:
            report.skipped["scalar (non-vector) kernel"] += 1
            continue
        cores = int(r["block_dim"])
        if "950" in r["chip"]:
            hw_name, chip = _part_950(cores), "950PR"
        else:
            hw_name, chip = "ascend910b2", "A2 (910B2 profile, 48 AIV)"
        hw = load_profile(hw_name)
        if cores > int(hw["vector_cores"]):
            report.skipped[f"{hw_name} profile has {int(hw['vector_cores'])} AIV, "
                           f"the sample launches {cores}"] += 1
            continue
        length = int(re.search(r"dataCopyLen=(\d+)", tiling).group(1))  # type: ignore[union-attr]
        double = ("Double buffer" in kernel or "Case 5" in kernel or "Case 6" in kernel)
        config = {"blockDim": cores, "tileLength": length, "bufferNum": 2 if double else 1}
        try:
            pred = _predict(spec, hw, shape, config)
        except ValueError as e:
            report.skipped[f"Add step breaks spec constraint {e}"] += 1
            continue
        label = re.sub(r"^add_high_performance ", "", kernel)
        report.points.append(Point("dev", f"add fp16 / {chip}", f"asc-devkit add / {chip}",
                                   label[:60], float(r["time_us"]), pred))


def _gelu(rows: list[dict[str, str]], report: Report) -> None:
    spec = load_spec("gelu:float32")
    shape = {"totalLength": 8192 * 8192}
    for r in rows:
        cores = int(re.match(r"\d+", r["block_dim"]).group(0))  # type: ignore[union-attr]
        hw_name = _part_950(cores) if "950" in r["chip"] else "ascend910b2"
        hw = load_profile(hw_name)
        if cores > int(hw["vector_cores"]):
            report.skipped[f"{hw_name} profile has {int(hw['vector_cores'])} AIV, "
                           f"the sample launches {cores}"] += 1
            continue
        # Tiling beyond the core count is not stated: tile and buffering take the model's best.
        pred = _predict(spec, hw, shape, {"blockDim": cores}, ("tileLength", "bufferNum"))
        report.points.append(Point("held-out", f"gelu fp32 / {hw_name}", None,
                                   r["kernel"][:60], float(r["time_us"]), pred))


def _catlass_quant(report: Report) -> None:
    spec, hw = load_spec("quant_matmul"), load_profile("ascend910b1")
    with (DATA / "catlass_public.csv").open(newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    for r in rows:
        if r["kernel"] == "quant_matmul_full_load_a":
            report.skipped["CATLASS quant matmul with A resident in L1 (full-load-A)"] += 1
            continue
        if r["kernel"] != "quant_matmul":
            continue
        shape = {"M": int(r["M"]), "K": int(r["K"]), "G": 1, "N": int(r["N"])}
        cores = int(hw["cube_cores"])
        pred = _predict(spec, hw, shape, {**QUANT_CONFIG, "blockDim": cores}, ("epiRows",))
        report.points.append(Point("dev", "quant matmul int8 (catlass_public) / ascend910b1", None,
                                   ",".join(f"{k}={v}" for k, v in shape.items()),
                                   float(r["time_us"]), pred))


def _catlass_public(report: Report) -> None:
    _catlass_quant(report)
    for title, spec_ref, hw_ref, manifest in CATLASS_GROUPS:
        spec, hw = load_spec(spec_ref), load_profile(hw_ref)
        rows = read_files([DATA / "catlass_public.csv"], spec, load_manifest(DATA / manifest)).rows
        pred = cal.predict(spec, hw, rows).time_us
        for row, p in zip(rows, pred, strict=True):
            label = ",".join(f"{k}={v}" for k, v in row.shape.items())
            report.points.append(Point("dev", f"{title} / {hw_ref}", None, label,
                                       row.time_us, float(p)))


def collect() -> Report:
    report = Report()
    with PUBLIC.open(newline="") as f:
        rows = list(csv.DictReader(f))
    used: set[int] = set()
    catlass = [i for i, r in enumerate(rows) if "examples/autotune" in r["source"]]
    add = [i for i, r in enumerate(rows) if "add_high_performance" in r["kernel"]]
    gelu = [i for i, r in enumerate(rows) if (r["op"] == "gelu" and "asc-devkit" in r["source"]
            and "standalone" in r["kernel"]) or "gelu_high_performance Case" in r["kernel"]]
    quant_group = [i for i, r in enumerate(rows) if "quant_group_matmul_custom" in r["kernel"]]
    data_copy = [i for i, r in enumerate(rows) if r["kernel"].startswith("data_copy ")]
    mm_steps = [i for i, r in enumerate(rows) if r["kernel"].startswith("matmul_high_performance")]
    _catlass_sweeps([rows[i] for i in catlass], report)
    _grouped_sweep([rows[i] for i in catlass], report)
    _quant_group([rows[i] for i in quant_group], report)
    _data_copy([rows[i] for i in data_copy], report)
    _matmul_steps([rows[i] for i in mm_steps], report)
    _add_steps([rows[i] for i in add], report)
    _gelu([rows[i] for i in gelu], report)
    floor_mod, bmul = vector_ops.floor_mod_rows(rows), vector_ops.broadcast_mul_rows(rows)
    vector_ops.floor_mod([rows[i] for i in floor_mod], report, Point, _predict)
    vector_ops.broadcast_mul([rows[i] for i in bmul], report, Point, _predict)
    used |= (set(catlass) | set(add) | set(gelu) | set(quant_group) | set(data_copy)
             | set(mm_steps) | set(floor_mod) | set(bmul))
    for i, r in enumerate(rows):
        if i not in used:
            report.skipped[_why_not(r)] += 1
    _catlass_public(report)
    return report


def _why_not(r: Mapping[str, str]) -> str:
    op, source, meaning = r["op"], r["source"], r["time_meaning"].lower()
    if "wall" in meaning or "event" in meaning or "ascend-rs" in source:
        return "host wall / event time (launch and sync included), not a kernel time"
    if op.startswith("flash_attention"):
        return "flash attention: tiling not stated or a fused-infer op (spec needs a manifest)"
    if "mx" in op.lower() or "MX" in r["kernel"] or "mxfp" in r["kernel"].lower():
        return "MX fp4 / fp8 / a8w4 matmul (dtypes no profile or spec has)"
    if op.startswith("dynamic_quant") or op.startswith("quant ("):
        return ("DynamicQuant / TurboQuant vector kernels (no spec: per-token reduce + "
                "quantise; DynamicQuant sets the launch leaves)")
    if op == "matmul" or op.startswith("matmul") or op.startswith("conv2d"):
        return "matmul / conv: per-case tiling needs a manifest (not written in this change)"
    if op.startswith("data_movement") or op.startswith("layout"):
        return "pure data movement (no copy spec)"
    if op.startswith("elementwise_div (int64)"):
        return "int64 divide (no int64 dtype in the spec language, no 8-byte vector rate)"
    if op.startswith("topk"):
        return "topk: no sort instruction class (Sort32 / MrgSort) and no A3 profile"
    if op.startswith("elementwise_add"):
        return "add with no block dim / shape stated, or SIMT (another programming model)"
    return f"no built-in spec for '{op.split(' (')[0]}'"


def _errors(points: Sequence[Point]) -> tuple[float, float, float]:
    e = np.array([(p.predicted - p.measured) / p.measured for p in points])
    return float(np.mean(np.abs(e))), float(np.max(np.abs(e))), float(np.mean(e))


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra = np.argsort(np.argsort(a, kind="stable"), kind="stable").astype(float)
    rb = np.argsort(np.argsort(b, kind="stable"), kind="stable").astype(float)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def tables(report: Report) -> tuple[list[list[Any]], list[list[Any]]]:
    groups, sweeps = [], []
    for split in ("held-out", "dev"):
        pts = [p for p in report.points if p.split == split]
        for g in dict.fromkeys(p.group for p in pts):
            sel = [p for p in pts if p.group == g]
            groups.append([split, g, len(sel), *_errors(sel)])
        if pts:
            groups.append([split, "all", len(pts), *_errors(pts)])
        for s in dict.fromkeys(p.sweep for p in pts if p.sweep is not None):
            sel = [p for p in pts if p.sweep == s]
            meas = np.array([p.measured for p in sel])
            pred = np.array([p.predicted for p in sel])
            regret = float(meas[int(np.argmin(pred))] / meas.min())
            sweeps.append([split, s, len(sel), _spearman(pred, meas), regret])
    return groups, sweeps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--rows", action="store_true", help="print every compared row")
    args = ap.parse_args()
    report = collect()
    groups, sweeps = tables(report)
    if args.rows:
        for p in report.points:
            print(f"{p.split:<8} {p.group:<40} {p.label:<60} {p.measured:>10.2f} "
                  f"{p.predicted:>10.2f} {(p.predicted - p.measured) / p.measured:>+8.1%}")
        print()
    if args.markdown:
        print("| split | operator / chip | rows | MAPE | max error | bias |\n"
              "|---|---|---:|---:|---:|---:|")
        for s, g, n, mape, mx, bias in groups:
            print(f"| {s} | {g} | {n} | {mape:.1%} | {mx:.1%} | {bias:+.1%} |")
        print("\n| split | tiling sweep | configs | Spearman | regret (pick / best) |\n"
              "|---|---|---:|---:|---:|")
        for s, name, n, rho, regret in sweeps:
            print(f"| {s} | {name} | {n} | {rho:.2f} | {regret:.3f}x |")
        print("\n| rows not compared | count |\n|---|---:|")
        for why, n in report.skipped.most_common():
            print(f"| {why} | {n} |")
        return
    print(f"{'split':<8} {'operator / chip':<44} {'rows':>4} {'MAPE':>7} {'max':>7} {'bias':>7}")
    for s, g, n, mape, mx, bias in groups:
        print(f"{s:<8} {g:<44} {n:>4} {mape:>7.1%} {mx:>7.1%} {bias:>+7.1%}")
    print(f"\n{'split':<8} {'tiling sweep':<44} {'n':>4} {'Spearman':>9} {'regret':>8}")
    for s, name, n, rho, regret in sweeps:
        print(f"{s:<8} {name:<44} {n:>4} {rho:>9.2f} {regret:>7.3f}x")
    print("\nrows not compared:")
    for why, n in report.skipped.most_common():
        print(f"  {n:>4}  {why}")


if __name__ == "__main__":
    main()
