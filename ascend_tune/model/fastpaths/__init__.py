"""The model and its checks for the few rows a local search asks about, without numpy's
per-call cost.

Contract: every answer is bit for bit what :class:`~ascend_tune.model.engine.ShapeModel`
gives for the same configuration (held by tests/test_row_kernel.py, test_row_memo.py and
test_model_fastpaths.py). They are used only where the shape's space is proven free of int64
overflow; a row whose Python arithmetic raises goes back to the engine.

- ``kernel``: one shape's model and checks generated as straight-line Python over floats.
- ``memo``: the kernel's few-parameter statement groups computed once per combination.
- ``tables``: each feasibility check tabled over the few genes it reads.
"""
