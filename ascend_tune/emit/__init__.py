"""Emitted code: a results file rendered into AscendC C++ for an msOpGen project.

Contract: from a results file alone (never the engine or the search) render the TilingData
header, the host selection code (which ranks candidates by the model's shape-generic form,
:mod:`ascend_tune.model.dispatch`, the only piece of the model emit may import), kernel
constants and optionally the whole host file, after re-checking every tuned configuration
against the embedded spec, so nothing from an input reaches C++ unchecked. The emitted selection
code chooses what :mod:`.selection` (its Python reference) chooses; tests compile and run it.
Output is deterministic and written only where it changed.

- ``render``: context, rendering, ``--check``, writing.
- ``styles``: the registry of TilingData styles (macro, struct).
- ``bundle``: a results file re-checked (winners and runners-up) and its selection.
- ``selection``: run-time selection in Python (candidates ranked by the model).
- ``walk``: the last-resort fallback walk, in Python and C++.
- ``blob``: a configuration's TilingData as the bytes the host writes.
"""
