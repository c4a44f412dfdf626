"""The floor every other package stands on: nothing here imports anything else of ours.

- ``errors``: the one exception family (:class:`~ascend_tune.base.errors.AscendTuneError` and
  its kinds); every user mistake becomes one of them with a one-line message.
- ``vocabulary``: the chip's names (dtypes, pipes, transfer paths, stage kinds, msprof columns).
- ``yamlio``: the only place untrusted bytes become YAML, JSON or CSV (size limits, duplicate
  keys, alias bombs, line numbers).
- ``schema``: the declarative key schema the loaders check and the JSON Schemas are made from.
- ``resources``: where the built-in specs, profiles and templates live (source tree or wheel).
- ``cann``: CANN facts the emitted code depends on, each with its public source.
- ``executors``: where independent tasks run (local processes or a Ray cluster).
"""
