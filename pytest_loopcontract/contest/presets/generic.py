"""The generic preset: any agent CLI, with the contract's own argv.

It knows no output format, so tokens, cost and a refusal come only from the seat's report
file (``$LOOP_CONTRACT_REPORT``, the seat protocol every seat has); what it adds over a plain
seat is telling an authentication failure and a rate limit apart in a failed run's stderr
(HTTP 401/403 and 429 and the vendors' error words, see :mod:`.signals`).
"""

from __future__ import annotations

from pytest_loopcontract.contest.presets.model import Output, Preset, Reading
from pytest_loopcontract.contest.presets.signals import stderr_reading

__all__ = ["PRESET", "read"]


def read(output: Output) -> Reading:
    """Only a failed run's stderr is read; a good run is left to the report file."""
    return stderr_reading(output, "the agent")


PRESET = Preset(
    name="generic",
    family=None,
    generate=None,
    judge=None,
    source="no output format: the report file, and a failed run's stderr",
    read=read,
)
