"""The API of the build integration (docs/build.md): where the CMake package is, and the
check that results files were tuned from a spec as it is now (``emit --spec``, the CMake
function's ``SPEC``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ascend_tune.api.paths import PathLike, _list
from ascend_tune.base import resources
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.results.format import read_head
from ascend_tune.spec import load_spec


def cmake_dir() -> Path:
    """The folder of ``AscendTuneConfig.cmake`` (``find_package(AscendTune CONFIG)`` with it
    on ``CMAKE_PREFIX_PATH``, or ``include()`` it)."""
    folder = resources.data_dir("cmake")
    if not (folder / "AscendTuneConfig.cmake").is_file():
        raise AscendTuneError(f"{folder}: AscendTuneConfig.cmake is missing from this "
                              "installation of ascend-tune; reinstall it")
    return folder


def check_results_spec(results_paths: PathLike | Sequence[PathLike],
                       spec_path: PathLike) -> None:
    """Raise unless every results file was tuned from ``spec_path`` as the file reads now (the
    same meaning: comments and docs may differ), naming the first that was not."""
    spec_path = Path(spec_path)
    for path in _list(results_paths):
        doc = read_head(path)  # the spec is in the header: the entries are not read
        part = doc.get("spec") if isinstance(doc, dict) else None
        if not isinstance(part, dict) or not isinstance(part.get("sha256"), str):
            raise AscendTuneError(f"{path}: results file lacks the embedded spec; rerun "
                                  "`ascend-tune search`")
        variant = part.get("variant")
        ref = f"{spec_path}:{variant}" if isinstance(variant, str) and variant else spec_path
        spec = load_spec(ref)
        if part.get("name") != spec.name:
            raise AscendTuneError(f"{path} holds tilings of operator {part.get('name')!r:.60}, "
                                  f"not {spec.name} of {spec_path}")
        if spec.sha256 != part["sha256"]:
            raise AscendTuneError(
                f"{path} was tuned from another version of {spec_path} (spec sha256 "
                f"{part['sha256'][:16]}, the file now {spec.sha256[:16]}): rerun `ascend-tune "
                f"search {spec_path} ... -o {path}`")
