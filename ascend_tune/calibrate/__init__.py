"""Measurements and calibration: the model held against measured kernels, and a profile
fitted to them.

Contract: measured rows are read from untrusted files (msprof, msprof op, torch_npu, plain
CSV; the ``measurements.READERS`` registry), matched to spec shapes and configurations, and
split into fit and held-out rows before any fitting; a fit scales groups of profile leaves
(``coefficients``) that the rows can determine (``identifiability``) by least squares
(``solver``), and is judged on the held-out rows first. High-confidence leaves are left alone
unless asked. Nothing here searches or emits.

- ``measurements``, ``rows``: reading and matching rows; ``row_model``: the model over rows.
- ``split``, ``coefficients``, ``identifiability``, ``solver``, ``fit``: the calibration.
- ``validation``: the model's error, in sample and held out.
"""
