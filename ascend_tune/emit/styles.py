"""The registry of emit styles: how the TilingData is declared and where its header goes.

Kept apart from :mod:`ascend_tune.emit.render` (which imports jinja2 and the model) so the command
line can list the styles without loading the emitter. tests/test_registries.py holds every
registered style to the same checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from ascend_tune.base.errors import AscendTuneError


@dataclass(frozen=True)
class EmitStyle:
    """One way to declare the TilingData: where its header goes and which template writes it.
    The selection header and the kernel constants are the same for every style; a style only
    changes the TilingData header and how the host side fills it (``style`` in templates)."""

    name: str
    doc: str
    folder: str  # op_host or op_kernel: who includes the TilingData header

    @property
    def template(self) -> str:
        return f"tiling_{self.name}.h.j2"

    def header_path(self, snake: str) -> str:
        return f"{self.folder}/{snake}_tiling.h"

    def include_from_host(self, snake: str) -> str:
        """The TilingData header as op_host files include it."""
        return f"{snake}_tiling.h" if self.folder == "op_host" else f"../{self.header_path(snake)}"


STYLES: dict[str, EmitStyle] = {s.name: s for s in (
    EmitStyle("macro", "CANN 8.x BEGIN_TILING_DATA_DEF / TILING_DATA_FIELD_DEF in op_host",
              "op_host"),
    EmitStyle("struct", "a plain standard-layout struct in op_kernel, shared by host and kernel",
              "op_kernel"),
)}


def emit_style(name: str) -> EmitStyle:
    style = STYLES.get(name)
    if style is None:
        raise AscendTuneError(f"--style '{name}' is not one of: {', '.join(STYLES)}")
    return style
