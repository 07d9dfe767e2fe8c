"""The contract's test selectors that name no collected test, each with the closest real ids.

A misspelled node id (``tests/test_calc.py::test_ad`` for ``test_add``) is valid YAML and a
valid selector, so neither the schema nor the readiness rules can see it; only a collection
can. ``loop-contract check`` collects the working tree (:func:`collect_tree`, the verifier's
own confined run with ``--collect-only``) and ``loop-contract baseline`` uses the ids of its
run; both refuse such a selector as a contract error (exit 26) at its line in the contract,
with up to three close ids (:func:`difflib.get_close_matches` over the collected ids and their
file, class and function prefixes).

The selectors checked are the ones the contract names itself: ``dod[].tests`` and the
``tests`` of ``kind: tests`` hard gates. A selector whose file failed to collect is left to the
collection error's own message; a glob is named without suggestions.
"""

from __future__ import annotations

import difflib
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pytest_loopcontract.contract.wording import render
from pytest_loopcontract.errors import ContractError, LoopContractError
from pytest_loopcontract.verifier.gates import selector_matches

if TYPE_CHECKING:
    from pytest_loopcontract.contract.model import Contract

__all__ = [
    "Collection",
    "Unmatched",
    "UnmatchedSelectors",
    "collect_tree",
    "named_selectors",
    "unmatched_selectors",
]

FieldPath = tuple[str | int, ...]
SUGGESTIONS = 3
CUTOFF = 0.6  # difflib's default: below it, a guess misleads more than it helps
NEAR_TIE = 0.04  # a suggestion this much less similar than the best one is left out
_PARAMS = re.compile(r"\[.*\]$")


class Unmatched(NamedTuple):
    """A selector of the contract that matched no collected test."""

    selector: str
    path: FieldPath  # where the contract names it: ("dod", 0, "tests", 1)
    suggestions: tuple[str, ...]

    @property
    def field(self) -> str:
        return render(self.path)

    def message(self, none_collected: bool = False) -> str:
        said = f"{self.selector!r} matches no collected test"
        if none_collected:
            return said + " (pytest collected no test at all)"
        if self.suggestions:
            said += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        return said


class UnmatchedSelectors(ContractError):
    """Selectors that name no collected test: a contract error (exit 26) at the first one's
    line; every one is listed, each on its own line with its place."""

    def __init__(self, located: Sequence[ContractError], unmatched: Sequence[Unmatched]) -> None:
        first = located[0]
        rest = "".join("\n" + str(e) for e in located[1:])
        super().__init__(
            first.message + rest,
            file=first.file,
            line=first.line,
            column=first.column,
            field_path=first.field_path,
        )
        self.located = tuple(located)
        self.unmatched = tuple(unmatched)

    @classmethod
    def at(
        cls,
        data: bytes,
        filename: str,
        unmatched: Sequence[Unmatched],
        none_collected: bool = False,
    ) -> UnmatchedSelectors:
        """The error for ``unmatched`` (not empty), placed in the contract's bytes ``data``."""
        # the schema module loads jsonschema (about 45 ms): only a refused baseline needs it
        from pytest_loopcontract.contract.schema import error_at

        located = [error_at(data, filename, u.path, u.message(none_collected)) for u in unmatched]
        return cls(located, unmatched)

    def entries(self) -> list[dict[str, Any]]:
        """Each selector with its place and suggestions (``check --json``)."""
        return [
            {
                "selector": u.selector,
                "field": u.field,
                "line": e.line,
                "column": e.column,
                "suggestions": list(u.suggestions),
            }
            for u, e in zip(self.unmatched, self.located, strict=True)
        ]


def named_selectors(contract: Contract) -> Iterator[tuple[FieldPath, str]]:
    """(field path, selector) for each test selector the contract names, in file order."""
    raw = contract.raw
    for i, item in enumerate(raw.get("dod") or ()):
        if isinstance(item, Mapping):
            yield from _listed(("dod", i, "tests"), item.get("tests"))
    gates = raw.get("gates")
    hard = gates.get("hard") if isinstance(gates, Mapping) else None
    for i, gate in enumerate(hard or ()):
        if isinstance(gate, Mapping) and gate.get("kind") == "tests":
            yield from _listed(("gates", "hard", i, "tests"), gate.get("tests"))


def _listed(path: FieldPath, value: Any) -> Iterator[tuple[FieldPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        for j, selector in enumerate(value):
            yield (*path, j), str(selector)


def unmatched_selectors(
    contract: Contract,
    nodeids: Iterable[str],
    collect_errors: Sequence[Mapping[str, str]] = (),
    absent: Iterable[str] = (),
) -> list[Unmatched]:
    """The contract's selectors that match none of ``nodeids``, with the closest ids.

    A selector whose file is named by a collection error (or any selector, when the error is
    the session's) is left out: that error says why it matched nothing. So is one inside an
    ``absent`` file (a hidden test's destination, which only the verifier's scratch holds)."""
    ids = [n for n in nodeids if n]
    errored = [str(e.get("nodeid", "")) for e in collect_errors]
    if "" in errored:
        return []
    skipped = [*errored, *absent]
    candidates: list[str] | None = None
    out = []
    for path, selector in named_selectors(contract):
        if any(selector_matches(selector, n) for n in ids):
            continue
        if any(selector == p or selector_matches(p, selector) for p in skipped):
            continue
        if candidates is None:
            candidates = _candidates(ids)
        out.append(Unmatched(selector, path, _closest(selector, candidates)))
    return out


def _candidates(ids: Sequence[str]) -> list[str]:
    """The ids, and the prefixes a selector may name: file, class, function (unparametrized)."""
    seen: dict[str, None] = {}
    for nodeid in ids:
        parts = nodeid.split("::")
        for end in range(1, len(parts)):
            seen.setdefault("::".join(parts[:end]), None)
        bare = _PARAMS.sub("", nodeid)
        if bare != nodeid:
            seen.setdefault(bare, None)
        seen.setdefault(nodeid, None)
    return list(seen)


def _closest(selector: str, candidates: Sequence[str]) -> tuple[str, ...]:
    """The closest id and up to two more about as close (a near-tie), best first; none for a
    glob. Ids of one file are all alike in their long common prefix, so a looser list would
    name every test beside the one meant."""
    if "*" in selector or "?" in selector:
        return ()
    found = difflib.get_close_matches(selector, candidates, n=SUGGESTIONS, cutoff=CUTOFF)
    if not found:
        return ()
    ratios = [difflib.SequenceMatcher(None, selector, c).ratio() for c in found]
    return tuple(c for c, r in zip(found, ratios, strict=True) if r >= ratios[0] - NEAR_TIE)


class Collection(NamedTuple):
    """What a ``--collect-only`` run of a tree found; ``problem`` says why it found nothing
    usable (empty when it ran)."""

    nodeids: tuple[str, ...]
    errors: tuple[Mapping[str, str], ...]
    problem: str = ""


def collect_tree(tree: Path, contract: Contract, python: str | None = None) -> Collection:
    """Collect ``tree``'s tests as the baseline does (the contract's interpreter, arguments
    and confinement; the verifier's collector in the child; nothing written to the tree)."""
    from pytest_loopcontract.verifier.runner import prepare_run, run_pytest

    try:
        setup = prepare_run(tree, contract, python=python)
    except LoopContractError as exc:
        return Collection((), (), str(exc))
    run = run_pytest(
        tree,
        nonce=secrets.token_hex(16),
        autoload=True,
        extra_args=[*contract.pytest.args, "--collect-only", "-q"],
        timeout=contract.pytest.timeout,
        testenv=setup.testenv,
        confinement=setup.confinement,
        egress=contract.egress_allow,
    )
    results = run.results
    if results is None or run.exit_code not in (0, 1, 5):  # 5: no tests collected
        why = "timed out" if run.timed_out else f"pytest exited {run.exit_code}"
        tail = run.output_tail.strip().splitlines()[-1:]
        return Collection((), (), f"{why}: {run.results_error or (tail[0] if tail else '')}")
    return Collection(tuple(results.collected), tuple(results.collect_errors))
