"""One exception family for everything a user can get wrong.

The CLI turns these into a single line on stderr and exit code 2; nothing else in the
package prints or exits.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class AscendTuneError(Exception):
    """Bad input: a spec, profile, shape, results file or option the user supplied."""


class ExprError(AscendTuneError):
    """An expression that does not parse, names something unknown, or is not allowed."""


class SpecError(AscendTuneError):
    """An operator spec that is malformed."""


class ProfileError(AscendTuneError):
    """A hardware profile that is malformed."""


class NoValidConfigError(AscendTuneError):
    """A shape for which no configuration satisfies the constraints."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ' (did you mean X?)' when a close match exists, else ''."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""

