"""Hardware in the loop: measure the model's top candidates on NPUs and let the device pick.

* ``command``: the user's measuring command: placeholders, running it (timeout, retries,
  repeats, median) and reading the time from its output or from an msprof CSV;
* ``candidates``: a results entry's candidates: what is left to measure, recording a
  measurement, the measured winner becoming the entry's winner, measurement rows for
  `calibrate` and `validate`;
* ``run``: measuring a results file: jobs per (shape, candidate), an executor, the results
  store (resumable), Ctrl-C and SIGTERM.
"""
