"""`ascend-tune check`: classify YAML files as spec or profile and list their problems.

A spec is checked as it loads (schema, names, expressions), then with each of its variants,
and then its baseline is checked over a sample of its shape domain
(:mod:`.baseline_check`): a baseline that breaks a check on a shape that has a valid
configuration is a problem; sampled shapes with no valid configuration at all are a note.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.yamlio import load_yaml
from ascend_tune.hardware import HardwareProfile, load_profile
from ascend_tune.spec import OperatorSpec, load_spec
from ascend_tune.spec import baseline_check as _baseline

# The profile whose hw.* values the baseline check evaluates with (core counts replaced by
# each of baseline_check.CORE_COUNTS).
BASELINE_PROFILE = "ascend910b3"


@dataclass
class CheckReport:
    """What ``check`` found: problems (exit 2 if any) and notes (information only)."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_files(paths: Sequence[Path]) -> list[str]:
    """One message per problem found in any file, plus clashes between the specs: they may
    all land in one operator project, where two TilingData classes with one name are an ODR
    violation (one operator serialises with the other's layout)."""
    return check_report(paths).problems


def check_report(paths: Sequence[Path]) -> CheckReport:
    """:func:`check_files` with the notes: one line per spec (and variant) whose sampled shape
    domain holds shapes with no valid configuration at all."""
    report = CheckReport()
    owners: dict[str, tuple[str, Path]] = {}
    for path in paths:
        spec = _check_file(path, report)
        if spec is None:
            continue
        owner = owners.setdefault(spec.tiling_struct, (spec.name, path))
        if owner[0] != spec.name:
            report.problems.append(
                f"{path}: tiling struct {spec.tiling_struct} of {spec.name} is already the "
                f"tiling struct of {owner[0]} ({owner[1]}); two operators in one project "
                "need distinct names")
    return report


def check_file(path: Path) -> list[str]:
    """One message per problem found (empty when the file is valid)."""
    report = CheckReport()
    _check_file(path, report)
    return report.problems


@functools.lru_cache(maxsize=1)
def _profile() -> HardwareProfile:
    return load_profile(BASELINE_PROFILE)


def _check_file(path: Path, report: CheckReport) -> OperatorSpec | None:
    if path.is_dir():
        report.problems.append(f"{path}: is a folder; give YAML files (e.g. {path}/*.yaml)")
        return None
    try:
        data, _ = load_yaml(path, "file")
    except AscendTuneError as exc:
        report.problems.append(str(exc))
        return None
    try:
        if isinstance(data, dict) and "operator" in data:
            spec = load_spec(str(path))
        elif isinstance(data, dict) and ("chip" in data or "base" in data):
            load_profile(str(path))
            return None
        else:
            report.problems.append(f"{path}: neither an operator spec (has 'operator') nor a "
                                   "hardware profile (has 'chip' or 'base')")
            return None
    except AscendTuneError as exc:
        report.problems.append(str(exc))
        return None
    _check_variants(path, data, spec, report)
    return spec


def _check_variants(path: Path, data: dict[str, Any], spec: OperatorSpec,
                    report: CheckReport) -> None:
    """Each variant loads, and the baseline of the spec and of each variant holds on the
    sampled shape domain. A message that several of them share is one line naming them."""
    found: dict[tuple[bool, str], list[str | None]] = {}
    for variant in _baseline.iter_variants(data):
        try:
            one = spec if variant is None else load_spec(f"{path}:{variant}")
            problems, notes = _baseline.messages(_baseline.check_baseline(one, _profile()))
            problems = [p + fix_multiple(one) for p in problems]
        except AscendTuneError as exc:
            report.problems.append(str(exc))
            continue
        except KeyError as exc:  # a shape without max, or a hw.* value the profile lacks
            name = exc.args[0]
            if name in spec.shape_vars:
                why = (f"shape variable {name} has no max, so the baseline check cannot sample "
                       f"its domain: give it one (shape: {name}: {{min: ..., max: ...}})")
            else:
                why = (f"the baseline check needs {name}, which the {BASELINE_PROFILE} "
                       "profile does not give")
            report.problems.append(f"{_origin(path, [variant])}: {why}")
            continue
        for key in [(True, p) for p in problems] + [(False, n) for n in notes]:
            found.setdefault(key, []).append(variant)
    for (problem, text), variants in found.items():
        line = f"{_origin(path, variants)}: {text}"
        (report.problems if problem else report.notes).append(line)


def _origin(path: Path, variants: Sequence[str | None]) -> str:
    """The file, and which of its variants a message is about (None: the spec itself)."""
    named = [v for v in variants if v is not None]
    if not named:
        return str(path)
    listed = f"variant{'s' if len(named) > 1 else ''} {', '.join(named)}"
    return f"{path} (and {listed})" if None in variants else f"{path} ({listed})"


_REFUSALS: dict[tuple[str, str | None, str, str], str | None] = {}


def refusal(spec: OperatorSpec) -> str | None:
    """The first problem ``check`` reports about this spec's baseline, as ``check`` words it
    (None when it has none): what ``search`` and ``emit`` refuse, or with ``--force`` warn
    about. A baseline that breaks on a value (a 64-bit overflow, a value that is no integer)
    or that the check cannot evaluate is left to the commands' own errors, which name the
    value and the shape."""
    key = (spec.sha256, spec.variant, spec.origin, spec.source_text)
    if key not in _REFUSALS:
        message = None
        try:
            report = _baseline.check_baseline(spec, _profile())
            problems, _notes = _baseline.messages(report)
            if problems and report.broken is not None and "(" not in report.broken.check:
                message = f"{spec.origin}: {problems[0]}{fix_multiple(spec)}"
        except KeyError:  # a hw.* value the profile does not give, a shape without max
            pass
        _REFUSALS[key] = message
    return _REFUSALS[key]


# Multiples tried for a one-variable spec whose baseline breaks: 2, 4, ... 65536.
FIX_MULTIPLES = tuple(1 << k for k in range(1, 17))


def fix_multiple(spec: OperatorSpec) -> str:
    """For a spec with one shape variable: the smallest power-of-two ``multiple_of`` on
    whose sampled shapes the baseline holds on every checked core count ("" when none does,
    or the spec has several shape variables)."""
    if len(spec.shape_vars) != 1 or spec.shape_multiple:
        return ""
    v = spec.shape_vars[0]
    sample = _baseline.sample_shapes(spec)
    envs = [_baseline.runtime_env(spec, _profile(), aic, aiv)
            for aic, aiv in _baseline.CORE_COUNTS]
    for m in FIX_MULTIPLES:
        shapes = [{v: x} for x in sorted({-(-s[v] // m) * m for s in sample})
                  if x <= spec.shape_max.get(v, x) and x >= spec.shape_min[v]]
        if shapes and all(failed is None for env in envs for failed, _ in
                          _baseline.baseline_first_failures(spec, env, shapes)):
            return (f"; the baseline holds on every sampled multiple of {m}: "
                    f"'multiple_of: {m}' on shape.{v} would do, if the kernel needs it")
    return ""
