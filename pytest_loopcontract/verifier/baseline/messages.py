"""What a refused baseline says: the cause in the run's own words, and the fix when known.

The baseline is the first thing a new user runs, so its refusals name what to change (the
test interpreter, the contract's ``pytest.pythonpath``, an import inside the test) rather than
only what went wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["broken_run_message", "collect_error_hint", "outside_import_message"]


def broken_run_message(run: Any, python: str) -> str:
    """Why the baseline run produced nothing usable, with the fix when the cause is known."""
    why = "timed out" if run.timed_out else f"pytest exited {run.exit_code}"
    tail = run.output_tail[-2000:]
    if "No module named pytest" in tail:
        return (
            f"pytest is not installed in the test interpreter {python}: install it there "
            f"('{python} -m pip install pytest'), or choose another with --python or "
            "pytest.python in the contract"
        )
    return f"the baseline run is broken ({why}; {run.results_error or 'see output'}):\n{tail}"


def outside_import_message(shadow: Mapping[str, str], isolation: str) -> str:
    if isolation == "sandbox":
        fix = "put the source folder in the contract's pytest.pythonpath (for example [src])"
    else:
        fix = (
            "an editable install points at the repository's working tree, which process "
            "isolation cannot replace with the scratch copy: install bubblewrap so that verify "
            "runs in the sandbox, or put the source folder in the contract's pytest.pythonpath"
        )
    return (
        f"the baseline run imported {shadow['module']!r} from {shadow['imported']}, not from "
        f"the tree under test ({shadow['local']}), so it would measure another copy: {fix}"
    )


def collect_error_hint(errors: Sequence[Mapping[str, str]], nodeids: Sequence[str]) -> str:
    """The collection error behind tests that did not run, in its own words."""
    files = {n.split("::", 1)[0] for n in nodeids}
    for error in errors:
        where = error.get("nodeid", "")
        if not files or where in files or not where:
            last = [ln for ln in error.get("message", "").splitlines() if ln.strip()][-1:]
            said = last[0].strip() if last else "no message"
            if "cannot import name" in said:
                why = (
                    "the test imports a name the fix has yet to add; acceptance tests must "
                    "be collectable at baseline, so import it inside the test function"
                )
            else:
                why = (
                    "the code under test or a test dependency does not import at baseline: "
                    "check pytest.python and pytest.pythonpath in the contract"
                )
            return f"; collecting {where or 'the session'} failed: {said} ({why})"
    return ""
