"""The analytical pipeline model of one operator on one chip.

Contract: :class:`~ascend_tune.model.engine.ShapeModel` takes an operator spec, a hardware
profile and one shape, and maps configurations (index genomes into the spec's parameter grids)
to predicted latency in microseconds, busy time per pipe, the bounding pipe and validity, all
vectorised over rows. ``inf`` marks a configuration that breaks a constraint; nothing here
searches, reads results files or prints.

- ``engine``: the shape model (space, checks, overflow proofs, evaluation of a batch).
- ``pipeline``: a batch's cost across sides, loops and stages: double buffering, overlap,
  cores, the bounding pipe.
- ``costs``: the cost of one stage (transfers with shared GM bandwidth, Mmad, vector
  instructions, launch overhead), pure formulas with their sources in docs/model.md.
- ``roofline``: ceilings and work, shared by the engine's efficiency and the report.
- ``dispatch``: the model as one function of (shape, configuration, core counts) for run-time
  selection, equal to the engine for valid configurations; ``dispatch_cpp`` renders it in C++.
- ``diagnose``: one line naming what bounds a configuration and the parameter that moves it.
- ``fastpaths``: the same model for a few rows at a time (generated Python) and the
  feasibility checks as tables; bit for bit the engine's answers.
"""
