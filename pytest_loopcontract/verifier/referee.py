"""Which files are the referee: the test files, their helpers and data, pinned at baseline.

Pinned files get their baseline bytes back in every verify run, so pinning too little lets a
candidate edit its judge, and pinning too much reverts its fix. The referee is the contract,
every collected test file, the acceptance tests' files, and the folders that hold them; the
modules doctests live in are the code under test and are never pinned for their doctests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath

from pytest_loopcontract.contract.model import Contract

__all__ = ["referee_files", "referee_paths"]

_TEST_FOLDER = re.compile(r"^(tests?|testing|[\w.-]*_tests?|tests?_[\w.-]*)$")


def _test_folder(path: str) -> str | None:
    """The top-most folder named like a test folder (``tests``, ``test``, ``testing``,
    ``unit_tests``...) on the way to ``path``, or None when there is none."""
    parts = PurePosixPath(path).parts[:-1]
    for index, part in enumerate(parts):
        if _TEST_FOLDER.match(part):
            return "/".join(parts[: index + 1])
    return None


def referee_files(
    files: Mapping[str, object], test_files: Iterable[str], imported: Iterable[str]
) -> set[str]:
    """The whole referee, beyond the collected test files: every file under the folders that
    hold them (helpers like ``test/common.py``, fixtures, data and golden files), and every
    module the baseline run imported from a test-named folder elsewhere (a ``testing/``
    package). A test file beside the code (``pkg/test_core.py``) pins only itself: its folder
    is the code under change."""
    folders = {f for f in map(_test_folder, [*test_files, *imported]) if f is not None}
    if not folders:
        return set()
    prefixes = tuple(f + "/" for f in sorted(folders))
    return {path for path in files if path.startswith(prefixes)}


def _test_files(nodeids: Sequence[str], files: Mapping[str, object]) -> set[str]:
    out = set()
    for nodeid in nodeids:
        file_part = nodeid.split("::", 1)[0]
        if file_part in files:
            out.add(file_part)
    return out


def referee_paths(
    contract_relpath: str,
    contract: Contract,
    files: Mapping[str, object],
    outcomes: Mapping[str, str],
    doctests: Iterable[str],
    imported: Iterable[str],
) -> set[str]:
    """The paths of ``files`` the baseline pins explicitly, whatever the protect patterns say.

    Doctest items live in the code under test: pinning their modules would revert fixes."""
    doctest_ids = set(doctests)
    tests = [n for n in outcomes if n not in doctest_ids]
    explicit = {contract_relpath} | _test_files(tests, files)
    doctest_only = {n.split("::", 1)[0] for n in doctest_ids} - {n.split("::", 1)[0] for n in tests}
    explicit |= (
        {s.split("::", 1)[0] for s in contract.acceptance_selectors()} & set(files)
    ) - doctest_only
    explicit |= referee_files(files, explicit, imported) - doctest_only
    return explicit & set(files)
