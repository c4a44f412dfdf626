"""A results file as emit takes it: the embedded spec and profile rebuilt, every tuned
configuration (winners and the runners-up a ``--top-k`` search kept) re-checked on its own shape,
so nothing from the untrusted file reaches C++ unless it is an integer configuration that passes
the spec's constraints and launch checks. Also the run-time selection over that table.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError, did_you_mean
from ascend_tune.emit.refine import MAX_EVALS
from ascend_tune.emit.selection import Selection, candidate_table, first_failure, runtime_env
from ascend_tune.emit.selection import select as select_config
from ascend_tune.hardware import HardwareProfile, load_profile_data
from ascend_tune.spec import OperatorSpec, compile_attrs, launch, load_spec_text
from ascend_tune.spec.shapes import check_shape, shape_key

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True)
class Bundle:
    spec: OperatorSpec
    hw: HardwareProfile
    doc: Mapping[str, Any]
    digest: str
    shapes: tuple[tuple[dict[str, int], dict[str, int]], ...]  # (shape, best), checked
    # The runners-up a --top-k search kept, each checked on its own shape, in file order.
    runners_up: tuple[dict[str, int], ...] = ()

    @functools.cached_property
    def _sorted(self) -> tuple[tuple[dict[str, int], dict[str, int]], ...]:
        # Sorted once per bundle: select() runs per shape (range searches, benchmarks).
        return tuple(sorted(self.shapes, key=lambda s: tuple(s[0].values())))

    def sorted_shapes(self) -> list[tuple[dict[str, int], dict[str, int]]]:
        """The tuned table in the emitted order (by shape values)."""
        return list(self._sorted)

    def candidates(self) -> list[dict[str, int]]:
        """The emitted candidate table: winners in table order, then the runners-up."""
        return candidate_table([b for _s, b in self.sorted_shapes()], self.runners_up,
                               self.spec.params)

    def select(self, shape: Mapping[str, int], aic: int | None = None,
               aiv: int | None = None, refine_evals: int = MAX_EVALS) -> Selection:
        """What the emitted selection code chooses for ``shape`` on a chip with ``aic`` /
        ``aiv`` cores (default: the profile's), compiled with ASCEND_TUNE_REFINE_EVALS =
        ``refine_evals``."""
        table = self._sorted
        return select_config(self.spec, self.hw, [list(s.values()) for s, _b in table],
                             [b for _s, b in table], shape,
                             int(self.hw["cube_cores"]) if aic is None else aic,
                             int(self.hw["vector_cores"]) if aiv is None else aiv,
                             self.runners_up, refine_evals)

    def selected(self, shape: Mapping[str, int], aic: int | None = None,
                 aiv: int | None = None, refine_evals: int = MAX_EVALS) -> Selected:
        """:meth:`select` as the API returns it (core counts checked: untrusted input)."""
        for name, cores in (("aic", aic), ("aiv", aiv)):
            if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int)
                                      or not 1 <= cores <= 4096):
                raise AscendTuneError(f"{name} must be a core count from 1 to 4096, "
                                      f"got {cores!r:.40}")
        if (isinstance(refine_evals, bool) or not isinstance(refine_evals, int)
                or not 0 <= refine_evals <= MAX_REFINE_EVALS):
            raise AscendTuneError(f"refine_evals must be an integer from 0 to "
                                  f"{MAX_REFINE_EVALS}, got {refine_evals!r:.40}")
        sel = self.select(shape, aic, aiv, refine_evals)
        derived = {n: sel.env[n] for n, _e in self.spec.derive if n in sel.env}
        return Selected(_SOURCES[sel.source], sel.config, derived, sel.latency_us, sel.index)


@dataclass(frozen=True)
class Selected:
    """What the emitted ``TilingFunc`` chooses for one shape on one chip."""

    source: str  # exact | model | baseline | walk | refined | none (no valid configuration)
    config: dict[str, int]  # the parameters (the baseline's when source is none)
    derived: dict[str, Any]  # every derived value for this shape (the TilingData inputs)
    latency_us: float  # the model's time for the pick on this chip (inf for none)
    index: int  # row of the tuned table (exact) or candidate table (model, and refined when
    # the descent started from a candidate); else -1


# The API's bound on refine_evals (a descent of a million configurations is a second of C++).
MAX_REFINE_EVALS = 1_000_000

_SOURCES = ("exact", "model", "baseline", "none", "walk", "refined")


def load_bundle(doc: Mapping[str, Any], origin: str) -> Bundle:
    """Rebuild spec and profile from a results file and re-check every tuned entry: a results
    file is an input like any other, so nothing in it reaches C++ unless it is an integer
    configuration that passes the spec's constraints and launch checks on its shape."""
    try:
        spec = load_spec_text(doc["spec"]["text"], f"{origin} (embedded spec)",
                              doc["spec"].get("variant"))
        spec = compile_attrs.recorded(spec, doc["spec"].get("attrs"), origin)
        hw = load_profile_data(doc["hw"]["data"], f"{origin} (embedded profile)")
    except (KeyError, TypeError, AttributeError):
        raise AscendTuneError(f"{origin}: results file lacks the embedded spec or profile; "
                              "rerun `ascend-tune search`") from None
    entries = doc.get("shapes")
    if not isinstance(entries, list) or not entries:
        raise AscendTuneError(f"{origin}: results file holds no tuned shape")
    env = runtime_env(spec, hw, int(hw["cube_cores"]), int(hw["vector_cores"]))
    checked = []
    runners_up: list[dict[str, int]] = []
    seen: set[tuple[int, ...]] = set()
    bounds = [(max(spec.shape_min[v], _INT64_MIN), min(spec.shape_max.get(v, _INT64_MAX),
                                                      _INT64_MAX)) for v in spec.shape_vars]
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("shape"), Mapping):
            raise AscendTuneError(f"{origin}: shapes[{i}]: expected a mapping with 'shape' and "
                                  "'best'")
        # The checked copies name what is wrong; the plain tests pass what a search wrote
        # (the same values, ~3x faster over a 178 000-shape file).
        raw: Any = entry["shape"]
        shape = (dict(raw) if _plain_shape(spec, bounds, raw) else
                 check_shape(spec, raw, f"{origin}: shapes[{i}]"))
        key = tuple(shape.values())
        if key in seen:
            raise AscendTuneError(f"{origin}: shapes[{i}]: shape {shape_key(shape)} is listed "
                                  "twice")
        seen.add(key)
        raw = entry.get("best")
        best = (dict(raw) if _plain_config(spec, raw) else
                _checked_config(spec, raw, f"{origin}: shapes[{i}] ({shape_key(shape)})"))
        checked.append((shape, best))
        if entry.get("candidates") is not None:
            runners_up += _runners_up(spec, env, shape, entry["candidates"],
                                      f"{origin}: shapes[{i}] ({shape_key(shape)})", hw.name)
    failed_at = _first_invalid(spec, env, checked)
    if failed_at is not None:
        i, failed = failed_at
        raise AscendTuneError(f"{origin}: shapes[{i}] ({shape_key(checked[i][0])}): the tuned "
                              f"configuration fails '{failed}' on {hw.name}; the results file "
                              "is stale or was edited: rerun `ascend-tune search`")
    return Bundle(spec, hw, doc, digest(doc["spec"], doc["hw"], checked, runners_up),
                  tuple(checked), tuple(runners_up))


# What emit reads of each entry (results.read_all keeps only these of a large file).
ENTRY_FIELDS = ("shape", "best", "candidates")


def digest(spec_part: Any, hw_part: Any, table: Sequence[tuple[dict[str, int], dict[str, int]]],
           runners_up: Sequence[Mapping[str, int]]) -> str:
    """sha256 of what the emitted files are made from: the embedded spec and profile as the
    results file holds them, the checked winners by shape (the emitted order) and the
    runners-up in file order. The rest of an entry (predicted times, search history) does not
    reach C++; hashing the whole document took ~6 s of a 178 000-shape emit."""
    tuned = sorted(table, key=lambda s: tuple(s[0].values()))
    canonical = json.dumps({"spec": spec_part, "hw": hw_part, "tuned": tuned,
                            "runners_up": runners_up}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


_BATCH = 8192  # entries checked at once: arrays of this length per name, a few MB at most


def _first_invalid(spec: OperatorSpec, env: Mapping[str, Any],
                   table: Sequence[tuple[dict[str, int], dict[str, int]]]
                   ) -> tuple[int, str] | None:
    """The first winner that fails a check on its shape, and the check: ``first_failure``
    over every entry at once (the expressions evaluate arrays, as the search scores a batch
    of configurations), then that entry again on its own for the exact name. A 178 000-shape
    file is checked in seconds instead of minutes."""
    names = [*spec.shape_vars, *spec.params]
    for start in range(0, len(table), _BATCH):
        chunk = table[start:start + _BATCH]
        local: dict[str, Any] = dict(env)
        for name in names:
            side = 1 if name in spec.params else 0  # (shape | best)[name]: best's wins
            local[name] = np.fromiter((row[side][name] for row in chunk), dtype=np.int64,
                                      count=len(chunk))
        ok = np.ones(len(chunk), dtype=bool)
        with np.errstate(all="ignore"):
            for name, e in spec.derive:
                local[name] = e.evaluate(local)
            for _name, e in spec.constraints:
                ok &= np.broadcast_to(np.asarray(e.evaluate(local), dtype=bool), ok.shape)
            cores = {"cube": env["hw.cube_cores"], "vector": env["hw.vector_cores"]}
            for passed in launch.evaluate(spec, local, cores):
                ok &= np.broadcast_to(np.asarray(passed, dtype=bool), ok.shape)
        for j in np.flatnonzero(~ok):
            shape, best = chunk[int(j)]
            _local, failed = first_failure(spec, env, shape, best)
            if failed is not None:
                return start + int(j), failed
    return None


def _runners_up(spec: OperatorSpec, env: Mapping[str, Any], shape: Mapping[str, int],
                candidates: Any, where: str, hw_name: str) -> list[dict[str, int]]:
    """An entry's ``candidates`` after its winner, each a checked integer configuration that
    is valid on its shape (they reach C++ as the dispatch table's rows)."""
    if candidates is None:
        return []
    if not isinstance(candidates, list):
        raise AscendTuneError(f"{where}: 'candidates' must be a list")
    out = []
    for j, cand in enumerate(candidates[1:], start=1):
        at = f"{where}: candidates[{j}]"
        if not isinstance(cand, Mapping):
            raise AscendTuneError(f"{at}: expected a mapping with 'config'")
        if cand.get("probe") is True:
            # A measurement probe (`ascend-tune probe`): chosen to calibrate the model, not to
            # run; one that measured fastest is the entry's winner and ships as that.
            continue
        config = _checked_config(spec, cand.get("config"), at, "config")
        _local, failed = first_failure(spec, env, shape, config)
        if failed is not None:
            raise AscendTuneError(f"{at}: the configuration fails '{failed}' on {hw_name}; "
                                  "the results file is stale or was edited")
        out.append(config)
    return out


def _plain_config(spec: OperatorSpec, best: Any) -> bool:
    """``best`` maps exactly the spec's parameters, in its order, to 64-bit integers (what a
    search writes): the fast test of the many entries of a large file."""
    return (isinstance(best, dict) and tuple(best) == spec.params
            and all(type(v) is int and _INT64_MIN <= v <= _INT64_MAX for v in best.values()))


def _plain_shape(spec: OperatorSpec, bounds: Sequence[tuple[int, int]], shape: Any) -> bool:
    """``shape`` maps exactly the spec's shape variables, in its order, to integers within
    their ranges (``bounds``): what ``check_shape`` accepts unchanged."""
    return (type(shape) is dict and tuple(shape) == spec.shape_vars
            and all(type(v) is int and lo <= v <= hi
                    for v, (lo, hi) in zip(shape.values(), bounds, strict=True))
            and all(shape[v] % m == 0 for v, m in spec.shape_multiple.items()))


def _checked_config(spec: OperatorSpec, best: Any, where: str, field: str = "best"
                    ) -> dict[str, int]:
    if not isinstance(best, Mapping):
        raise AscendTuneError(f"{where}: '{field}' must map each parameter to an integer")
    unknown = [k for k in best if k not in spec.params]
    if unknown:
        raise AscendTuneError(f"{where}: '{field}' has unknown parameter '{unknown[0]}'"
                              f"{did_you_mean(str(unknown[0]), spec.params)}")
    out = {}
    for p in spec.params:
        value = best.get(p)
        if isinstance(value, bool) or not isinstance(value, int):
            raise AscendTuneError(f"{where}: {field}.{p} must be an integer, got {value!r:.40}")
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise AscendTuneError(f"{where}: {field}.{p} = {value} does not fit a 64-bit integer")
        out[p] = value
    return out
