"""What makes the commands agree: the spec ``check`` refuses is refused by ``search`` and
``emit`` with the same message (or, with ``--force``, warned about), operator attribute values
(``--attr``), and the warnings ``emit`` gives about what the emitted fields mean."""

from __future__ import annotations

from collections.abc import Sequence

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.emit.bundle import Bundle
from ascend_tune.emit.meanings import sample_warnings
from ascend_tune.spec import OperatorSpec, compile_attrs
from ascend_tune.spec.checking import refusal


def with_attrs(spec: OperatorSpec, texts: Sequence[str]) -> OperatorSpec:
    """``spec`` with ``--attr NAME=VALUE`` values (the others at their defaults); a bad name
    or value raises one line."""
    return compile_attrs.with_attrs(spec, texts) if texts or spec.attrs else spec


def spec_refusal(spec: OperatorSpec) -> str | None:
    """What ``check`` says is wrong with the spec's baseline (its first problem), or None."""
    return refusal(spec)


def refuse(spec: OperatorSpec, force: bool, command: str) -> list[str]:
    """Raise ``check``'s message about ``spec`` unless ``force``; with it, the message as a
    warning to print (empty when check has nothing to say)."""
    message = refusal(spec)
    if message is None:
        return []
    if not force:
        raise AscendTuneError(f"{message} (check refuses this spec; {command} --force goes on)")
    return [message]


def emit_warnings(bundle: Bundle, force: bool) -> tuple[str, ...]:
    """``emit``'s refusal (raised unless ``force``) and its warnings: check's message when
    forced, then every field named like an AscendC sample's whose derivation differs."""
    return (*refuse(bundle.spec, force, "emit"), *sample_warnings(bundle))
