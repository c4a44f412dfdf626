"""Hardware profiles: every number the model uses, each with its source and confidence.

The contract:

- **A profile** is a YAML file (``hw_profiles/*.yaml`` for the built-ins, or any file passed as
  ``--hw FILE``) that describes one chip: core counts and clock, buffer sizes, GM/L2
  bandwidths, transfer latencies and bandwidth curves, cube and vector rates, launch costs. A
  loaded profile is a frozen :class:`HardwareProfile`; its scalar leaves are the ``hw.<key>``
  names spec expressions see.
- **Every number carries its source.** A leaf is ``{value, source, confidence}`` (``note``
  optional): ``source`` names where the number comes from (a key under ``sources:``, a
  measurement, a fit), ``confidence`` is high, med or low. ``hw show`` prints them all.
- **Inheritance.** ``base: NAME`` (a built-in name, or a path relative to the file) starts from
  another profile; the file's leaves replace the base's leaf by leaf, which is how the 910B
  variants share the 910B3 numbers. Cycles and chains deeper than 16 are refused. A complete
  profile older than a leaf (a user's file without ``base``, a results file's embedded copy)
  takes that leaf from ``ascend910b3`` with a note saying so.
- **Checked.** Structure against :data:`PROFILE_SCHEMA`, every value against its :data:`LIMITS`
  (finite, in a sane range); an error names the file, line and key path of the bad leaf, in the
  file that holds it.
- **The hash** (:attr:`HardwareProfile.sha256`) covers what the profile says about the chip:
  the name and every value of the merged profile. Sources, notes, confidence, description,
  format version and the calibration record leave it alone, so documenting a leaf keeps cached
  results and emitted banners unchanged.
- **Overriding a number**: write a file with ``name``, ``base: ascend910b3`` and only the leaf
  you change, e.g. ``memory: {hbm_bandwidth_gbps: {value: 1450, source: ..., confidence: high}}``,
  and pass it as ``--hw FILE``.

Modules: :mod:`~ascend_tune.hardware.leaves` (the leaves and schema),
:mod:`~ascend_tune.hardware.limits` (value bounds and validation),
:mod:`~ascend_tune.hardware.load` (reading, ``base:`` inheritance, building a profile),
:mod:`~ascend_tune.hardware.profile` (:class:`HardwareProfile`, derived rates, the hash),
:mod:`~ascend_tune.hardware.show` (``hw show`` / ``hw list`` documents).
This package imports only :mod:`ascend_tune.base` of ascend-tune.
"""

from __future__ import annotations

from ascend_tune.hardware.leaves import PROFILE_SCHEMA, SCALARS
from ascend_tune.hardware.limits import LIMITS
from ascend_tune.hardware.load import load_profile, load_profile_data, profile_paths
from ascend_tune.hardware.profile import HardwareProfile
from ascend_tune.hardware.show import builtin_summaries, show_document, sourced_leaves

__all__ = [
    "LIMITS",
    "PROFILE_SCHEMA",
    "SCALARS",
    "HardwareProfile",
    "builtin_summaries",
    "load_profile",
    "load_profile_data",
    "profile_paths",
    "show_document",
    "sourced_leaves",
]
