"""The results file: what a search found, and the search's cache.

Contract: a results file is versioned JSON, one shape entry per line, keyed by what the spec
and profile mean (not their bytes), with the spec and profile embedded so ``emit`` and
``report`` need nothing else. Reading validates every field of the untrusted file; writing is
atomic and by one writer at a time. This package knows nothing of the model or the search.

- ``format``: the document's layout, reading and validation, atomic writes.
- ``store``: the writer during a search (journal, merges, locks, a killed run's leftovers).
"""
