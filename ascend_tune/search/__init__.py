"""The search: proposing configurations inside the valid set and keeping the best.

Contract: the search sees a model only through :class:`~ascend_tune.search.space.SearchableModel`
(the spec, the shape's environment, the parameter grids, the launch rules, whether the space is
proven free of int64 overflow) to enumerate or sample the valid set, and a strategy sees only a
:class:`~ascend_tune.search.problem.Problem`: the size of each gene's domain, the baseline genome
and a memoised, budgeted objective (index genomes in, latencies out, ``inf`` where invalid).
Every configuration looked at counts against the budget; results depend only on the inputs and
the seed.

- ``space``: the valid set enumerated with pruning, ``CheckSet`` (which rows pass which checks);
  ``order``: the order parameters are assigned in.
- ``problem``: ``Problem``, the ``Strategy`` protocol (``uses_budget``, ``builds_valid``), ``run``.
- ``construct``, ``moves``: valid-by-construction proposals and repairs, the local moves and
  the descent both ``ga`` and ``ils`` use.
- ``strategies``: the registry ``STRATEGIES`` (ils, ga, exhaustive, random) and ``auto``'s rule.
"""
