"""Every built-in baseline is valid on its sampled shape domain wherever a valid configuration
exists (issue 25: the baseline is what emitted code falls back to), and ``ascend-tune check``
names the shape and the check where a baseline breaks."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from ascend_tune.base.errors import ExprError
from ascend_tune.emit.selection import first_failure, runtime_env
from ascend_tune.emit.walk import walk
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import OperatorSpec, evaluate_baseline, load_spec, load_spec_text, spec_paths
from ascend_tune.spec import baseline_check as bc
from ascend_tune.spec.checking import check_files, check_report
from tests.test_cli import cli

ROOT = Path(__file__).resolve().parent.parent
MATMUL = ROOT / "operator_specs" / "matmul.yaml"
NDIM = re.compile(r"^  nDim: ceil_div.*$", re.MULTILINE)


def _refs() -> list[str]:
    out = []
    for path in spec_paths():
        out.append(path.stem)
        out += [f"{path.stem}:{v}" for v in yaml.safe_load(path.read_text()).get("variants") or {}]
    return out


def _broken_matmul(tmp_path: Path, ndim: str = "40") -> Path:
    """matmul.yaml with the baseline's nDim replaced (40: a core left empty on small N)."""
    text = MATMUL.read_text()
    assert len(NDIM.findall(text)) == 1
    path = tmp_path / "matmul.yaml"
    path.write_text(NDIM.sub(f"  nDim: {ndim}", text))
    return path


def _first_failure(spec: OperatorSpec, env: dict[str, object], shape: dict[str, int]
                   ) -> tuple[str | None, dict[str, int] | None]:
    """The scalar reference: emit.selection's evaluate_baseline + first_failure."""
    try:
        base = evaluate_baseline(spec, {**env, **shape})
    except ExprError:
        return "overflow", None
    try:
        return first_failure(spec, env, shape, base)[1], base
    except ExprError:
        return "overflow", base


# ---- the regression test ---------------------------------------------------------------------


@pytest.mark.parametrize("ref", _refs())
def test_builtin_baseline_is_valid_wherever_a_configuration_is(ref: str,
                                                               hw: HardwareProfile) -> None:
    spec = load_spec(ref)
    report = bc.check_baseline(spec, hw, stop_at_first=False)
    problems, _ = bc.messages(report)
    assert report.broken is None, problems
    assert not report.undecided, [bc.shape_text(f.shape) for f in report.undecided[:5]]
    assert report.sampled >= 200
    # Every failing shape is accounted for as one with no valid configuration at all.
    assert sum(report.failing.values()) == len(report.no_valid)


@pytest.mark.parametrize(("ref", "shape"), [
    ("matmul", {"M": 1, "N": 14336, "K": 4096}),
    ("matmul", {"M": 131, "N": 2048, "K": 7168}),
    ("matmul", {"M": 26, "N": 11008, "K": 4096}),
    ("matmul:cube_only", {"M": 1, "N": 14336, "K": 4096}),
    ("matmul:int8", {"M": 7, "N": 77, "K": 200}),
    ("batch_matmul", {"B": 3, "M": 168, "N": 77, "K": 333}),
    ("batch_matmul", {"B": 1, "M": 2, "N": 14336, "K": 13}),
    ("grouped_matmul", {"M": 1, "K": 1, "G": 1, "N": 1}),
    ("quant_matmul", {"M": 5, "K": 40, "G": 2, "N": 7}),
    ("flash_attention", {"B": 1, "N": 8, "S1": 4096, "S2": 4096, "D": 392}),
])
def test_the_issue_shapes_take_the_baseline(ref: str, shape: dict[str, int],
                                            hw: HardwareProfile) -> None:
    spec = load_spec(ref)
    for aic, aiv in ((20, 40), (8, 16), (24, 48), (3, 6)):
        env = runtime_env(spec, hw, aic, aiv)
        assert _first_failure(spec, env, shape)[0] is None, (ref, shape, aic, aiv)


# ---- the check against the references it re-implements -----------------------------------


@pytest.mark.parametrize("ref", ["matmul", "batch_matmul", "flash_attention", "quant_matmul",
                                 "layernorm", "add"])
def test_vectorised_first_failure_is_the_selection_rule(ref: str, hw: HardwareProfile,
                                                        tmp_path: Path) -> None:
    """baseline_first_failures == evaluate_baseline + emit.selection.first_failure, shape by
    shape, on the built-in baseline and on the broken matmul one (many failures)."""
    specs = [load_spec(ref)]
    if ref == "matmul":
        specs.append(load_spec(_broken_matmul(tmp_path)))
    rng = np.random.default_rng(7)
    for spec in specs:
        sample = bc.sample_shapes(spec)
        picked = [sample[int(i)] for i in rng.choice(len(sample), min(150, len(sample)),
                                                     replace=False)]
        for aic, aiv in bc.CORE_COUNTS:
            env = runtime_env(spec, hw, aic, aiv)
            got = bc.baseline_first_failures(spec, env, picked)
            for shape, (failed, base) in zip(picked, got, strict=True):
                want, want_base = _first_failure(spec, env, shape)
                if want == "overflow":
                    assert failed is not None and "integer overflow" in failed, (shape, failed)
                else:
                    assert failed == want, (spec.display_name, shape, aic, failed, want)
                if want_base is not None and base is not None:
                    assert base == want_base, shape


def test_any_valid_agrees_with_the_fallback_walk(hw: HardwareProfile, tmp_path: Path) -> None:
    broken = load_spec(_broken_matmul(tmp_path))
    fa = load_spec("flash_attention")
    cases: list[tuple[OperatorSpec, dict[str, int]]] = [
        (broken, {"M": 1, "N": 1, "K": 1}), (broken, {"M": 131, "N": 300, "K": 7}),
        (broken, {"M": 4095, "N": 14336, "K": 77}),
        (fa, {"B": 1, "N": 1, "S1": 1, "S2": 1048576, "D": 512}),  # none: L1 too small
        (fa, {"B": 2, "N": 8, "S1": 4096, "S2": 4096, "D": 512}),
        (fa, {"B": 2, "N": 8, "S1": 4096, "S2": 64, "D": 512})]
    seen = set()
    for spec, shape in cases:
        for aic, aiv in bc.CORE_COUNTS:
            env = runtime_env(spec, hw, aic, aiv)
            base = evaluate_baseline(spec, {**env, **shape})
            found = walk(spec, env, shape, base, lambda c: 0.0)
            exists = bc.any_valid(spec, env, shape, base)
            assert exists == (found is not None), (spec.display_name, shape, aic)
            seen.add(exists)
    assert seen == {True, False}


def test_a_shape_whose_model_overflows_has_no_valid_configuration(hw: HardwareProfile) -> None:
    spec = load_spec("batch_matmul")
    env = bc.runtime_env(spec, hw, 20, 40)
    huge = {"B": 1 << 20, "M": 1 << 20, "N": 1 << 20, "K": 1 << 20}
    assert bc.any_valid(spec, env, huge) is False
    [(failed, _)] = bc.baseline_first_failures(spec, env, [huge])
    assert failed is not None and "integer overflow" in failed


# ---- the sample --------------------------------------------------------------------------


def test_the_sample_is_deterministic_bounded_and_covers_the_ends() -> None:
    for ref in ("matmul", "flash_attention", "softmax", "add"):
        spec = load_spec(ref)
        sample = bc.sample_shapes(spec)
        assert sample == bc.sample_shapes(spec)
        assert 200 <= len(sample) <= bc.MAX_SHAPES
        assert len({tuple(s.values()) for s in sample}) == len(sample)
        for v in spec.shape_vars:
            values = {s[v] for s in sample}
            lo, hi = spec.shape_min[v], spec.shape_max[v]
            assert min(values) == lo and max(values) == hi
            assert all(lo <= x <= hi for x in values)
        # Every corner of the domain is in (all minimums, all maximums, ...).
        assert {v: spec.shape_min[v] for v in spec.shape_vars} in sample
        assert {v: spec.shape_max[v] for v in spec.shape_vars} in sample
    assert bc.axis_values(1, 1 << 20)[:16] == list(range(1, 17))
    assert {3, 7, 131, 777} <= set(bc.axis_values(1, 1 << 20))
    assert bc.axis_values(16, 512)[0] == 16 and bc.axis_values(16, 512)[-1] == 512


# ---- what check says ----------------------------------------------------------------------


def test_check_names_the_shape_and_the_check_of_a_broken_baseline(hw: HardwareProfile,
                                                                   tmp_path: Path) -> None:
    path = _broken_matmul(tmp_path)
    problems = check_files([path])
    lines = [p for p in problems if p.startswith(f"{path}:") or p.startswith(f"{path} (")]
    assert lines == problems and problems
    first = problems[0]
    m = re.fullmatch(
        rf"{re.escape(str(path))} \(and variants ([a-z0-9_, ]+)\): baseline breaks "
        r"'([a-z_]+)' at (\S+) on (\d+) AIC / (\d+) AIV \(a valid configuration exists "
        r"there\); (\d+) of (\d+) sampled shapes fail the baseline on those cores; to fix, "
        r"make the baseline pass '\2' there or state the shapes the kernel accepts \(shape.M, "
        r"shape.N, shape.K: min, max, multiple_of\)", first)
    assert m, first
    assert "cube_only" not in m.group(1)  # overrides nDim: its own baseline holds
    assert m.group(2) == "no_empty_core" and m.group(3) == "M=1,N=1,K=1"
    assert (int(m.group(4)), int(m.group(5))) == (20, 40)
    assert 0 < int(m.group(6)) <= int(m.group(7)) <= bc.MAX_SHAPES
    # The named shape really breaks that check, and a valid configuration exists there.
    spec = load_spec(path)
    shape = dict(kv.split("=") for kv in m.group(3).split(","))
    values = {k: int(v) for k, v in shape.items()}
    env = runtime_env(spec, hw, 20, 40)
    assert _first_failure(spec, env, values)[0] == "no_empty_core"
    base = evaluate_baseline(spec, {**env, **values})
    assert walk(spec, env, values, base, lambda c: 0.0) is not None
    # The command line: exit 2 and the same line.
    proc = cli("check", str(path))
    assert proc.returncode == 2 and first in proc.stderr


def test_check_passes_the_fixed_specs_and_notes_shapes_without_configuration() -> None:
    report = check_report(spec_paths())
    assert report.problems == []
    notes = [n for n in report.notes if "flash_attention.yaml" in n]
    assert len(notes) == 1, report.notes
    assert re.search(r"\d+ of 4000 sampled shapes have no valid configuration at all "
                     r"\(\d+ on 20 AIC / 40 AIV, \d+ on 8 AIC / 16 AIV\), e\.g\. B=\d+,N=\d+,"
                     r"S1=\d+,S2=\d+,D=\d+ \(the baseline breaks '[a-z0-9_]+' there\)$",
                     notes[0]), notes[0]


def test_a_baseline_that_is_no_integer_is_named(hw: HardwareProfile) -> None:
    text = MATMUL.read_text()
    spec = load_spec_text(NDIM.sub("  nDim: N * 1e30", text), "inf.yaml")
    report = bc.check_baseline(spec, hw)
    assert report.broken is not None and report.broken.check == "baseline.nDim (no 64-bit integer)"


def test_a_baseline_broken_only_on_a_smaller_part_is_found_there(hw: HardwareProfile,
                                                                  tmp_path: Path) -> None:
    # Valid on 20 AIC / 40 AIV, but asks for more than 16 issuer cores on a smaller part.
    path = _broken_matmul(tmp_path, "ceil_div(N, align_up(ceil_div(N, max(1, min(ceil_div(N, "
                                    "256), 40 // mDim))), 16))")
    report = bc.check_baseline(load_spec(path), hw)
    assert report.broken is not None
    assert (report.broken.aic, report.broken.aiv) == (8, 16)
    assert report.failing[(20, 40)] == 0
    assert report.broken.check == "cores_fit"
