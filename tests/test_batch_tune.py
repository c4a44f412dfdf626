"""Shapes tuned in batches (ascend_tune/tune/batch.py) write the bytes the per-shape search
writes: every built-in spec whose space the batch takes, on two chips and two budgets, over
shapes at the edges (tiny, unaligned, the largest a uint32 field holds); and a search run
through the driver (batches, a shape left to the per-shape search, an interrupt mid-run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.hardware import load_profile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results
from ascend_tune.spec import load_spec
from ascend_tune.spec.library import spec_paths
from ascend_tune.spec.shapes import shape_key
from ascend_tune.tune import batch, run
from ascend_tune.tune.shape import Seeds, TuneSettings, tune_shape

ONE_VARIABLE_VALUES = [1, 2, 3, 7, 15, 16, 17, 31, 64, 100, 255, 1000, 4096, 4097, 65536,
                       100_003, 2**20 + 3, 12_345_678, 2**31 - 1]


def _shapes(spec_name: str) -> list[dict[str, int]]:
    spec = load_spec(spec_name)
    rng = np.random.default_rng(7)
    if len(spec.shape_vars) == 1:
        return [{spec.shape_vars[0]: v} for v in ONE_VARIABLE_VALUES]
    return [{v: int(rng.choice(ONE_VARIABLE_VALUES[:14])) for v in spec.shape_vars}
            for _ in range(12)]


def _reference(spec, hw, shape, settings):  # type: ignore[no-untyped-def]
    try:
        return tune_shape(spec, hw, shape, settings)
    except AscendTuneError as exc:  # no valid configuration: the batch leaves these alone
        return str(exc)


BATCHED = [(name, chip, budget) for name in sorted(p.stem for p in spec_paths())
           for chip in ("ascend910b3", "ascend310p3") for budget in (50, 2000)]


@pytest.mark.parametrize(("name", "chip", "budget"), BATCHED)
def test_batch_writes_the_per_shape_bytes(name: str, chip: str, budget: int) -> None:
    spec, hw = load_spec(name), load_profile(chip)
    settings = TuneSettings("auto", budget, 0)
    shapes = _shapes(name)
    model = ShapeModel(spec, hw, shapes[0])
    if not batch.batchable(spec, settings, model):
        # Spaces that depend on the shape or that auto does not score whole: never batched.
        names = {n for d in spec.domains.values() for e in d.exprs for n in e.names}
        assert set(spec.shape_vars) & names or model.space_size > min(
            batch.MAX_BATCH_SPACE, batch.exact_limit(budget))
        return
    got = batch.tune_batch(model, shapes, settings)
    answered = 0
    for shape, entry in zip(shapes, got, strict=True):
        ref = _reference(spec, hw, shape, settings)
        if entry is None:
            continue  # left to the per-shape search: whatever it says stands
        answered += 1
        assert results.entry_line(entry) == results.entry_line(ref), shape
    if name in ("add", "mul", "cast", "gelu", "swiglu", "floor_mod", "softmax"):
        assert answered == len(shapes)


def test_batchable_only_where_nothing_depends_on_being_batched() -> None:
    spec, hw = load_spec("add"), load_profile("ascend910b3")
    model = ShapeModel(spec, hw, {"totalLength": 4096})
    assert batch.batchable(spec, TuneSettings("auto", 50, 0), model)
    # A random stream, an explicit strategy (its own enumeration order) or candidates kept:
    # per shape.
    assert not batch.batchable(spec, TuneSettings("ga", 50, 0), model)
    assert not batch.batchable(spec, TuneSettings("exhaustive", 50, 0), model)
    assert not batch.batchable(spec, TuneSettings("auto", 50, 0, top_k=4), model)
    # auto would run the GA at this budget (the exact search is dearer than 1 evaluation).
    assert not batch.batchable(spec, TuneSettings("auto", 1, 0), model)
    matmul = load_spec("matmul")
    mm = ShapeModel(matmul, hw, {"M": 64, "N": 64, "K": 64})
    assert not batch.batchable(matmul, TuneSettings("auto", 50, 0), mm)  # domains read M, N, K


def _head(spec, hw, budget):  # type: ignore[no-untyped-def]
    return results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                          hw.data, "auto", 0, budget)


def test_driver_batches_and_per_shape_give_one_file(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    spec, hw = load_spec("add"), load_profile("ascend910b3")
    settings = TuneSettings("auto", 50, 0)
    shapes = [{"totalLength": 3 + 997 * i} for i in range(60)]
    head = _head(spec, hw, 50)
    monkeypatch.setattr(batch, "BATCH_CELLS", 640 * 7)  # batches of 7: a short last one
    run.run_search(spec, hw, shapes, settings, head, output=tmp_path / "batched.json")
    monkeypatch.setattr(batch, "MAX_BATCH_SPACE", 0)  # nothing batchable: per shape
    run.run_search(spec, hw, shapes, settings, head, output=tmp_path / "single.json")
    assert (tmp_path / "batched.json").read_bytes() == (tmp_path / "single.json").read_bytes()


def test_a_shape_the_batch_leaves_is_tuned_alone(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    spec, hw = load_spec("add"), load_profile("ascend910b3")
    settings = TuneSettings("auto", 50, 0)
    shapes = [{"totalLength": 100 + 31 * i} for i in range(9)]
    real = batch.tune_batch
    left: list[str] = []

    def leave_the_third(model, group, settings):  # type: ignore[no-untyped-def]
        out = real(model, group, settings)
        out[2] = None
        left.append(json.dumps(group[2]))
        return out

    monkeypatch.setattr(batch, "tune_batch", leave_the_third)
    outcome = run.run_search(spec, hw, shapes, settings, _head(spec, hw, 50))
    assert left
    assert [results.entry_line(e) for e in outcome.entries()] == sorted(
        (results.entry_line(tune_shape(spec, hw, s, settings)) for s in shapes),
        key=lambda line: results.sort_key(json.loads(line)))


def test_interrupted_batched_run_keeps_what_it_tuned_and_no_temp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, hw = load_spec("add"), load_profile("ascend910b3")
    settings = TuneSettings("auto", 50, 0)
    shapes = [{"totalLength": 64 + 13 * i} for i in range(40)]
    monkeypatch.setattr(batch, "BATCH_CELLS", 640 * 8)  # batches of 8
    real = batch.tune_batch
    calls = [0]

    def interrupted_third(model, group, settings):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        return real(model, group, settings)

    monkeypatch.setattr(batch, "tune_batch", interrupted_third)
    out = tmp_path / "r.json"
    outcome = run.run_search(spec, hw, shapes, settings, _head(spec, hw, 50), output=out)
    assert outcome.interrupted and outcome.saved == 16
    kept = [e["shape"] for e in outcome.entries()]
    assert kept == shapes[:16]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no journal, temp, lock
    # The next run tunes only what is missing, and the file is the one an uninterrupted
    # run writes.
    monkeypatch.setattr(batch, "tune_batch", real)
    run.run_search(spec, hw, shapes, settings, _head(spec, hw, 50), output=out)
    run.run_search(spec, hw, shapes, settings, _head(spec, hw, 50), output=tmp_path / "w.json")
    assert out.read_bytes() == (tmp_path / "w.json").read_bytes()


def test_progress_bar_changes_neither_stdout_nor_the_results(tmp_path: Path) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("totalLength\n" + "".join(f"{100 + 37 * i}\n" for i in range(30)))
    env = {**os.environ, "ASCEND_TUNE_DB": "off", "COLUMNS": "120"}
    runs = {}
    for flag in ([], ["--progress"]):
        out = tmp_path / f"r{len(flag)}.json"
        runs[len(flag)] = subprocess.run(
            [sys.executable, "-m", "ascend_tune", "search", "add", "--hw", "ascend910b3",
             "--shapes", str(shapes), "--budget", "50", "-o", str(out), *flag],
            capture_output=True, text=True, env=env, check=True)
    assert runs[0].stdout == runs[1].stdout
    assert (tmp_path / "r0.json").read_bytes() == (tmp_path / "r1.json").read_bytes()
    # Without a terminal: a line per shape; with --progress: the bar (drawn with control
    # codes, shapes done of the total), no per-shape lines.
    assert runs[0].stderr.count("\n") >= 30 and "[30/30]" in runs[0].stderr
    assert "[30/30]" not in runs[1].stderr and "30/30" in runs[1].stderr
    assert "\x1b[" in runs[1].stderr


def test_batches_on_worker_processes_give_the_same_file(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    spec, hw = load_spec("add"), load_profile("ascend910b3")
    settings = TuneSettings("auto", 50, 0)
    shapes = [{"totalLength": 5 + 1013 * i} for i in range(40)]
    head = _head(spec, hw, 50)
    monkeypatch.setattr(batch, "BATCH_CELLS", 640 * 9)  # 5 batches, one task each
    run.run_search(spec, hw, shapes, settings, head, jobs=2, output=tmp_path / "two.json")
    run.run_search(spec, hw, shapes, settings, head, output=tmp_path / "one.json")
    assert (tmp_path / "two.json").read_bytes() == (tmp_path / "one.json").read_bytes()


def test_seeded_shapes_in_a_batch_get_what_tune_shape_gives_them(tmp_path: Path) -> None:
    # The tuning database's seeds (its nearest recorded shapes' winners): the exhaustive
    # search a batch stands for starts from none, so the entries are tune_shape's with seeds.
    spec, hw = load_spec("add"), load_profile("ascend910b3")
    settings = TuneSettings("auto", 50, 0)
    shapes = [{"totalLength": 77 + 4099 * i} for i in range(12)]
    seeds = Seeds(configs=((("blockDim", 8), ("tileLength", 1024), ("bufferNum", 2)),),
                  shapes=("totalLength=4096",))

    def seeds_for(todo):  # type: ignore[no-untyped-def]
        return {shape_key(s): seeds for s in todo}

    outcome = run.run_search(spec, hw, shapes, settings, _head(spec, hw, 50),
                             seeds_for=seeds_for)
    assert [results.entry_line(e) for e in outcome.entries()] == [
        results.entry_line(tune_shape(spec, hw, s, settings, seeds)) for s in shapes]
