"""Hidden acceptance tests: read from outside the repository, copied in only for the runs.

SWE-bench and ImpossibleBench grade with tests the agent never saw; this is that, for a
contract. The content is read by the launcher (from a file outside the work tree or from a git
ref the work tree does not hold), checked against the digest the baseline recorded, written
into the scratch tree just before pytest starts and removed from it right after. Nothing here
writes the content anywhere else: not into git's object store, not into ``baseline.json`` (which
keeps only the digest and the node ids), not into a verdict message.

What this protects against is an agent that cannot read the hidden location. An agent that
can read it (same user, same machine, the ref fetched into its clone) sees the tests, and the
verdict still names the hidden node ids and whether they passed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pytest_loopcontract.contract.hidden import HiddenTest
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.errors import ContractError
from pytest_loopcontract.workspace import WorkspaceError, git, read_blobs, sha256_bytes

if TYPE_CHECKING:
    from pytest_loopcontract.verifier.baseline.record import BaselineRecord

__all__ = [
    "WITHHELD",
    "HiddenFile",
    "baseline_problem",
    "check_not_in_tree",
    "hidden_record",
    "load_for_verify",
    "read_hidden",
    "remove_hidden",
    "scrub_quotes",
    "source_reader",
    "withhold_messages",
    "write_hidden",
]

WITHHELD = "(hidden acceptance test: its failure details are withheld)"


class HiddenFile(NamedTuple):
    """One hidden test as read now: where it came from, where it goes, its bytes."""

    item: str
    field: tuple[str | int, ...]
    source: str
    to: str
    data: bytes

    @property
    def sha256(self) -> str:
        return sha256_bytes(self.data)


def _entries(contract: Contract) -> Iterable[tuple[tuple[str | int, ...], str, HiddenTest]]:
    for i, item in enumerate(contract.dod):
        for j, test in enumerate(item.hidden):
            yield ("dod", i, "hidden", j), item.id, test


def _problem(
    contract: Contract, data: bytes | None, path: tuple[str | int, ...], why: str
) -> Exception:
    from pytest_loopcontract.contract.schema import error_at

    filename = str(contract.path)
    if data is None:
        return ContractError(why, file=filename, field_path=f"dod[{path[1]}].hidden[{path[3]}]")
    return error_at(data, filename, path, why)


def _read_path(root: Path, source: str) -> bytes:
    """A hidden file named by a path; raises ``ValueError`` with the reason in plain words."""
    expanded = os.path.expandvars(os.path.expanduser(source))
    if "$" in expanded:
        raise ValueError(f"{source!r} uses an environment variable that is not set")
    path = Path(expanded)
    if not path.is_absolute():
        path = root / path
    resolved = path.resolve()
    if resolved == root.resolve() or root.resolve() in resolved.parents:
        raise ValueError(
            f"{source!r} is inside the repository, where the agent can read it: keep hidden "
            "tests outside the work tree (a path elsewhere, or REF:PATH of a git ref)"
        )
    if resolved.is_dir():
        raise ValueError(f"{source!r} is a folder: list each hidden test file")
    try:
        return resolved.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"hidden test file {source!r} does not exist ({resolved})") from None
    except OSError as exc:
        raise ValueError(f"cannot read hidden test file {source!r}: {exc.strerror}") from None


def _read_ref(root: Path, source: str) -> bytes:
    """A hidden file named by ``REF:PATH`` in the repository's object store."""
    ref, _, inner = source.partition(":")
    try:
        git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{tree}}")
    except WorkspaceError:
        raise ValueError(
            f"the git ref {ref!r} does not exist in this repository (fetch it first, e.g. "
            f"'git fetch <remote> {ref}:{ref}')"
        ) from None
    try:
        kind = git(root, "cat-file", "-t", f"{ref}:{inner}").decode().strip()
    except WorkspaceError:
        raise ValueError(f"the git ref {ref!r} holds no file {inner!r}") from None
    if kind != "blob":
        raise ValueError(f"{inner!r} in the git ref {ref!r} is a {kind}, not a file")
    return git(root, "cat-file", "blob", f"{ref}:{inner}")


def read_hidden(
    root: Path, contract: Contract, contract_bytes: bytes | None = None
) -> list[HiddenFile]:
    """Every hidden test of the contract, read now; a missing or unreadable one is a
    :class:`ContractError` at its line in the contract."""
    out = []
    for field, item, test in _entries(contract):
        try:
            data = (
                _read_ref(root, test.source)
                if test.kind == "ref"
                else _read_path(root, test.source)
            )
        except ValueError as exc:
            raise _problem(contract, contract_bytes, field, str(exc)) from None
        out.append(HiddenFile(item, field, test.source, test.to, data))
    return out


def check_not_in_tree(
    root: Path,
    contract: Contract,
    contract_bytes: bytes | None,
    files: Mapping[str, Any],
    hidden: Sequence[HiddenFile],
) -> None:
    """A hidden test the base commit already holds (at its destination, or the same bytes
    anywhere) is not hidden from an agent that reads the tree: refuse it."""
    blobs = {entry.blob: path for path, entry in files.items()}
    for h in hidden:
        if h.to in files:
            why = f"the base commit already holds {h.to!r}: choose another 'to' for the hidden test"
            raise _problem(contract, contract_bytes, h.field, why)
        blob = git(root, "hash-object", "--stdin", input_bytes=h.data).decode().strip()
        if blob in blobs:
            why = (
                f"the hidden test {h.source!r} is committed in the tree as {blobs[blob]!r}, "
                "so the agent can read it: it is not hidden"
            )
            raise _problem(contract, contract_bytes, h.field, why)


def hidden_record(hidden: Sequence[HiddenFile], collected: Iterable[str]) -> list[dict[str, Any]]:
    """What ``baseline.json`` keeps of each hidden test: no content, only its digest."""
    ids = list(collected)
    return [
        {
            "item": h.item,
            "source": h.source,
            "to": h.to,
            "sha256": h.sha256,
            "nodeids": [n for n in ids if n.split("::", 1)[0] == h.to],
        }
        for h in hidden
    ]


def baseline_problem(hidden: Sequence[HiddenFile], outcomes: Mapping[str, str]) -> str:
    """Why the baseline cannot use a hidden test: pytest collected no test from it, or its
    file did not import. Empty when every hidden file gave tests. The reason is the outcome,
    never the test's text (``baseline.json`` and the terminal are not hidden places)."""
    for h in hidden:
        ids = [n for n in outcomes if n.split("::", 1)[0] == h.to]
        if not ids:
            return (
                f"the hidden test {h.source!r} (copied to {h.to}) gave no test: put it where the "
                "suite collects tests (dod[].hidden[].to) under a name pytest collects"
            )
        if outcomes.get(h.to) == "error":
            return (
                f"the hidden test {h.source!r} (copied to {h.to}) does not import at baseline: "
                "acceptance tests must be collectable there (import names the fix adds inside "
                "the test function)"
            )
    return ""


def load_for_verify(root: Path, contract: Contract, baseline: BaselineRecord) -> list[HiddenFile]:
    """The hidden tests for a verify run, each matching what the baseline recorded; a file
    that changed (or a baseline taken before it was listed) means the baseline is stale."""
    if not contract.hidden_tests():
        return []
    pin = baseline.pins.get(baseline.contract_path)
    contract_bytes = read_blobs(root, [pin.blob]).get(pin.blob) if pin else None
    hidden = read_hidden(root, contract, contract_bytes)
    recorded = baseline.extra.get("hidden")
    by_to = {
        str(r.get("to")): str(r.get("sha256"))
        for r in (recorded if isinstance(recorded, list) else [])
        if isinstance(r, dict)
    }
    for h in hidden:
        digest = by_to.get(h.to)
        if digest is None:
            raise WorkspaceError(
                f"the baseline has no record of the hidden test {h.source!r}: run "
                "'loop-contract baseline' again",
                exit_code=27,
            )
        if digest != h.sha256:
            raise WorkspaceError(
                f"the hidden test {h.source!r} changed since the baseline (its SHA-256 differs):"
                " run 'loop-contract baseline' again to adopt it",
                exit_code=27,
            )
    return hidden


def real_folders(scratch: Path, relpath: str) -> Path:
    """``scratch / relpath`` with every folder on the way a real folder (a symlinked folder
    the candidate left would send the hidden bytes outside the scratch tree)."""
    current = scratch
    parts = Path(relpath).parts
    for part in parts[:-1]:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            current.unlink()
        current.mkdir(exist_ok=True)
    return current / parts[-1]


def write_hidden(scratch: Path, hidden: Sequence[HiddenFile]) -> None:
    """Put the hidden tests into a scratch tree, over whatever the candidate left there."""
    for h in hidden:
        target = real_folders(scratch, h.to)
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        target.write_bytes(h.data)


def remove_hidden(scratch: Path, hidden: Sequence[HiddenFile]) -> None:
    """Take the hidden tests out of a scratch tree before it is kept or deleted later."""
    for h in hidden:
        target = scratch / h.to
        if target.is_file() and not target.is_symlink():
            target.unlink()


def source_reader(
    pinned: Callable[[str], bytes | None], hidden: Sequence[HiddenFile]
) -> Callable[[str], bytes | None]:
    """``pinned`` with the hidden tests' bytes on top (the vacuous-pass rewrite reads both)."""
    by_to = {h.to: h.data for h in hidden}

    def read(path: str) -> bytes | None:
        return by_to[path] if path in by_to else pinned(path)

    return read


def withhold_messages(
    tests: Iterable[dict[str, Any]], destinations: Iterable[str]
) -> Iterator[dict[str, Any]]:
    """The verdict's test rows, the hidden tests marked and their messages dropped: pytest's
    failure text quotes the test's source lines, which are what hiding them is for."""
    places = set(destinations)
    for test in tests:
        if places and str(test.get("nodeid", "")).split("::", 1)[0] in places:
            test["hidden"] = True
            if "message" in test:
                test["message"] = WITHHELD
        yield test


_QUOTED_LINE = 12  # shorter lines ("assert x", "import os") say nothing about a hidden test


def scrub_quotes(document: Any, hidden: Sequence[HiddenFile]) -> None:
    """Replace, in every ``message`` of a verdict, any line quoted from a hidden test: an
    abnormal run's output tail or a collection error can quote source lines of any file."""
    quoted = sorted(
        {
            stripped
            for h in hidden
            for line in h.data.decode("utf-8", "replace").splitlines()
            if len(stripped := line.strip()) >= _QUOTED_LINE
        },
        key=len,
        reverse=True,
    )
    if quoted:
        _scrub(document, quoted)


def _scrub(node: Any, quoted: Sequence[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _scrub(item, quoted)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "message" and isinstance(value, str):
                for line in quoted:
                    value = value.replace(line, "[hidden test line]")
                node[key] = value
            else:
                _scrub(value, quoted)
