"""Tuning: where the model, the search and the results file meet.

Contract: :func:`~ascend_tune.tune.shape.tune_shape` tunes one shape (build the search space
from the model, run a strategy, describe the winner and its runners-up as a results entry; no
I/O); :func:`~ascend_tune.tune.run.run_search` tunes a shape list (worker processes, the
results file as a cache, Ctrl-C and SIGTERM, per-shape failures); ``explain`` reports on one
configuration. Results do not depend on ``--jobs``.
"""
