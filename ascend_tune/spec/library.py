"""The built-in operator specs, and spec references: a name (``add``) or a file, either with
``:variant``."""

from __future__ import annotations

from pathlib import Path

from ascend_tune.base import resources
from ascend_tune.base.errors import SpecError, did_you_mean
from ascend_tune.base.yamlio import read_text
from ascend_tune.spec.compile import load_spec_text
from ascend_tune.spec.model import OperatorSpec


def split_variant(ref: str) -> tuple[str, str | None]:
    """``add:float32`` -> (``add``, ``float32``); a plain name or path has no variant."""
    head, sep, tail = ref.rpartition(":")
    if sep and head and tail and "/" not in tail and "\\" not in tail:
        return head, tail
    return ref, None


def load_spec(ref: str | Path) -> OperatorSpec:
    """Load a built-in spec by name (``add``), a spec file, either with ``:variant``."""
    name, variant = split_variant(str(ref))
    path = resources.resolve("operator_specs", name)
    if not path.exists():
        known = resources.builtin_names("operator_specs")
        raise SpecError(f"operator spec '{ref}' not found{did_you_mean(str(ref), known)}; "
                        f"built-in: {', '.join(known)}")
    return load_spec_text(read_text(path, "operator spec"), str(path), variant)


def spec_paths() -> list[Path]:
    return sorted(resources.data_dir("operator_specs").glob("*.yaml"))


def shadowing_file(ref: str | Path, spec: OperatorSpec) -> Path | None:
    """``operator_specs/NAME.yaml`` of the working folder when ``ref`` is the bare name of a
    built-in that resolved to the installed copy and that file differs from it: after
    ``pip install .`` in a clone, editing the clone's spec changes nothing until it is passed
    as a path, and the user should be told so."""
    name, _variant = split_variant(str(ref))
    if Path(name).suffix or "/" in name or "\\" in name:
        return None  # a path: what was given is what was used
    local = Path("operator_specs") / f"{name}.yaml"
    try:
        if not local.is_file() or local.resolve() == Path(spec.origin).resolve():
            return None
        return local if local.read_text(encoding="utf-8") != spec.source_text else None
    except (OSError, UnicodeDecodeError):
        return None
