"""Several chips in one operator package: one results file per hardware profile, one host
selection file whose tables are keyed by the platform the kernel runs on.

An msOpGen package lists several SoCs (``AddConfig`` per SoC); a chip's best tiling differs
with its core counts and rates. ``emit`` takes one results file per profile of the same
operator and renders each profile's tables and model into its own namespace; at run time the
platform's SoC version and core counts pick a profile (an exact match first, else the same SoC
with the nearest core counts, else the nearest core counts: :func:`pick`), whose candidates are
then ranked with the platform's own core counts. 910B3 and 910B4 report the same SoC version
and core counts (20/40) through ``PlatformAscendC``; their HBM capacity
(``GetCoreMemSize(HBM)``: 64 and 32 GiB, the ini's memory_size) tells them apart. 910B1 and
910B2 (24/48 cores, 64 GiB) differ only in clock, which the platform API does not report: of
two such profiles the first given wins. A chip nobody tuned for gets the nearest profile,
re-ranked by the model with its own core counts. The TilingData header and kernel constants
must be the same for every profile (one kernel binary reads them).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_tune.base import cann
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.emit.bundle import Bundle
from ascend_tune.emit.selection import Selection

# SoC families the platform API names (platform_ascendc::SocVersion) that a profile maps to.
SOC_VERSIONS = {"ascend910": "ASCEND910", "ascend910b": "ASCEND910B",
                "ascend310p": "ASCEND310P", "ascend310b": "ASCEND310B"}
_PROFILE_LINE = re.compile(r"^// Operator .*, profile (.*) \(sha256 [0-9a-f]+\)\.$", re.MULTILINE)


def soc_version(bundle: Bundle) -> str | None:
    """The ``SocVersion`` enumerator of a profile's chip, None if unknown (matched by cores)."""
    return SOC_VERSIONS.get(cann.PROFILE_SOCS.get(bundle.hw.name, ""))


def cores(bundle: Bundle) -> tuple[int, int]:
    return int(bundle.hw["cube_cores"]), int(bundle.hw["vector_cores"])


def hbm_bytes(bundle: Bundle) -> int:
    """The profile's HBM capacity, 0 where not known (older results files lack the leaf)."""
    value = bundle.hw.env().get("hw.hbm_bytes", 0)
    return int(value) if isinstance(value, int) and value > 0 else 0


def pick(bundles: Sequence[Bundle], soc: str | None, aic: int, aiv: int,
         hbm: int | None = None) -> int:
    """The profile the emitted ``PickProfile`` chooses for a platform (same scoring); ``hbm``:
    the platform's HBM capacity in bytes (``GetCoreMemSize(HBM)``), None for unknown."""
    best, best_score = 0, 0
    for i, b in enumerate(bundles):
        p_aic, p_aiv = cores(b)
        own = soc_version(b)
        own_hbm = hbm_bytes(b)
        score = (0 if own is not None and own == soc else 1 << 40) + (
            abs(p_aic - aic) + abs(p_aiv - aiv)) * 1024 + (
            0 if own_hbm != 0 and own_hbm == hbm else 1)
        if i == 0 or score < best_score:
            best, best_score = i, score
    return best


def select(bundles: Sequence[Bundle], shape: Mapping[str, int], soc: str | None,
           aic: int, aiv: int, hbm: int | None = None) -> tuple[int, Selection]:
    """The profile the platform picks and what its tables choose for ``shape``."""
    i = pick(bundles, soc, aic, aiv, hbm)
    return i, bundles[i].select(shape, aic, aiv)


def check_same_operator(bundles: Sequence[Bundle]) -> None:
    first = bundles[0]
    names: set[str] = set()
    for b in bundles:
        if (b.spec.sha256, b.spec.variant) != (first.spec.sha256, first.spec.variant):
            raise AscendTuneError(f"results files tune different operators or specs "
                                  f"({first.spec.display_name} and {b.spec.display_name}); emit "
                                  "one operator's results files together")
        if b.hw.name in names:
            raise AscendTuneError(f"two results files are for profile {b.hw.name}; give one "
                                  "per profile")
        names.add(b.hw.name)


def arch_sections(bundles: Sequence[Bundle], constants: Sequence[str],
                  contexts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The kernel constants file's sections when profiles of different NpuArch need different
    constants (a UB size in a 910B and 310P package): an msOpGen package builds the kernel
    once per SoC, and ``__NPU_ARCH__`` (2201, 2002, 3510: ascend_hardware.md section 0.1, S12)
    tells the build which section it is. The first profile's architecture is the ``#else``
    (also what code without ``__NPU_ARCH__``, such as the host, sees). Empty when every
    profile's file is the same; profiles of one architecture must agree (one binary each)."""
    if all(text == constants[0] for text in constants):
        return []
    by_arch: dict[int, list[int]] = {}
    for i, b in enumerate(bundles):
        by_arch.setdefault(int(b.hw["arch"]), []).append(i)
    for members in by_arch.values():
        for i in members[1:]:
            if constants[i] != constants[members[0]]:
                raise AscendTuneError(
                    f"op_kernel/{bundles[0].spec.snake_name}_tuned_constants.h differs between "
                    f"profiles {bundles[members[0]].hw.name} and {bundles[i].hw.name} of one "
                    f"architecture ({int(bundles[i].hw['arch'])}: kernel constants or tuned "
                    "shapes that depend on the chip); one kernel binary cannot serve both: emit "
                    "them into separate projects")
    order = [*(a for a in by_arch if a != int(bundles[0].hw["arch"])), int(bundles[0].hw["arch"])]
    sections = []
    for n, a in enumerate(order):
        ctx = contexts[by_arch[a][0]]
        cond = f"defined(__NPU_ARCH__) && __NPU_ARCH__ == {a}"
        directive = "#else" if n == len(order) - 1 else ("#if " if n == 0 else "#elif ") + cond
        sections.append({"directive": directive, "arch": a,
                         "names": ", ".join(re.sub(r"[^ -~]", "?", bundles[i].hw.name)[:40]
                                            for i in by_arch[a]),
                         "constants": ctx["kernel_constants"], "count": len(ctx["tuned"])})
    return sections


def namespace(i: int, bundle: Bundle) -> str:
    return f"profile{i}_" + re.sub(r"[^A-Za-z0-9_]", "_", bundle.hw.name)[:40]


def merged_banner(bundles: Sequence[Bundle]) -> dict[str, str]:
    """Banner values naming every profile (names sanitised for a C++ comment)."""
    names = ", ".join(re.sub(r"[^ -~]", "?", b.hw.name)[:40] for b in bundles)
    hw_sha = hashlib.sha256("".join(b.hw.sha256 for b in bundles).encode()).hexdigest()
    digest = hashlib.sha256("".join(b.digest for b in bundles).encode()).hexdigest()
    return {"hw_name": names, "hw_sha": hw_sha[:16], "digest": digest}


def project_profiles(out_dir: Path, snake: str) -> list[str] | None:
    """The profiles the project's selection file was emitted for (None: no such file)."""
    path = out_dir / "op_host" / f"{snake}_tiling_select.h"
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:2000]
    except OSError:
        return None
    m = _PROFILE_LINE.search(head)
    return [n.strip() for n in m.group(1).split(",")] if m else []


def check_replacing(out_dir: Path, bundles: Sequence[Bundle], replace: bool) -> None:
    """Refuse to overwrite a selection file tuned for profiles these results do not cover."""
    held = project_profiles(out_dir, bundles[0].spec.snake_name)
    if not held or replace:
        return
    ours = {b.hw.name for b in bundles}
    lost = [n for n in held if n not in ours]
    if lost:
        raise AscendTuneError(
            f"{out_dir}: the selection code there was emitted for {', '.join(held)}; these "
            f"results cover {', '.join(sorted(ours))} and would drop {', '.join(lost)}. Emit "
            "every profile's results file together (ascend-tune emit a.json b.json -o DIR), "
            "or pass --replace")
