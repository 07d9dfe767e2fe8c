"""Every cheat in examples/candidates.py, applied to a project whose honest fix passes, must
give a verdict that is not ``pass`` under the isolated launcher, with a finding that names it."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from testing.repos import assert_valid_verdict, git, run_cli

# candidate -> (a finding code that must be present, path it must name or "")
EXPECTED = {
    "assert-true": ("protected_path_modified", "tests/test_slug.py"),
    "delete-test-file": ("protected_path_deleted", "tests/test_slug.py"),
    "skip-marker": ("protected_path_modified", "tests/test_slug.py"),
    "conftest-drops-test": ("protected_path_added", "conftest.py"),
    "conftest-rewrites-reports": ("protected_path_added", "tests/conftest.py"),
    "addopts-no-plugin": ("protected_path_modified", "pyproject.toml"),
    "addopts-deselect": ("protected_path_modified", "pyproject.toml"),
    "testpaths-moved": ("protected_path_modified", "pyproject.toml"),
    "contract-loosened": ("contract_modified", "loopcontract.yml"),
    "hard-exit": ("harness_manipulation", "src/textkit/__init__.py"),
}


def test_honest_fix_passes(baselined_repo: Path, candidates: ModuleType) -> None:
    candidates.CANDIDATES["honest-fix"](baselined_repo)
    result = run_cli(baselined_repo, "verify", "--json")
    verdict = result.json()
    assert_valid_verdict(verdict)
    assert verdict["verdict"] == "pass", verdict["reasons"]
    assert result.returncode == 0
    assert verdict["trust"] == "isolated"
    assert not verdict["tamper"]["detected"]
    assert [d["status"] for d in verdict["dod"]] == ["done"]
    # the marker-tied parametrized tests count toward the item
    nodeids = {t["nodeid"] for t in verdict["dod"][0]["tests"]}
    assert "tests/test_slug.py::test_special_letters[Stra\\xdfe-strasse]" in nodeids or any(
        "test_special_letters" in n for n in nodeids
    )


def test_unfixed_candidate_fails_without_tamper(baselined_repo: Path) -> None:
    result = run_cli(baselined_repo, "verify", "--json")
    verdict = result.json()
    assert_valid_verdict(verdict)
    assert verdict["verdict"] == "fail"
    assert result.returncode == 20
    assert not verdict["tamper"]["detected"]
    assert {r["code"] for r in verdict["reasons"]} >= {"hard_gate_failed"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cheat_is_caught(name: str, baselined_repo: Path, candidates: ModuleType) -> None:
    candidates.CANDIDATES[name](baselined_repo)
    result = run_cli(baselined_repo, "verify", "--json")
    verdict = result.json()
    assert_valid_verdict(verdict)
    assert verdict["verdict"] != "pass"
    assert result.returncode == 25
    code, path = EXPECTED[name]
    found = [(f["code"], f.get("path", "")) for f in verdict["tamper"]["findings"]]
    assert (code, path) in found, found


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cheat_on_top_of_honest_fix_is_still_flagged(
    name: str, baselined_repo: Path, candidates: ModuleType
) -> None:
    """Tampering is a finding even when the code is right: the referee was touched."""
    if name == "hard-exit":
        pytest.skip("hard-exit already includes the honest fix")
    candidates.CANDIDATES["honest-fix"](baselined_repo)
    candidates.CANDIDATES[name](baselined_repo)
    result = run_cli(baselined_repo, "verify", "--json")
    verdict = result.json()
    assert_valid_verdict(verdict)
    assert verdict["verdict"] == "fail"
    assert verdict["tamper"]["detected"]


def test_committed_cheat_is_verified_by_ref(baselined_repo: Path, candidates: ModuleType) -> None:
    candidates.CANDIDATES["conftest-rewrites-reports"](baselined_repo)
    git(baselined_repo, "checkout", "-q", "-b", "candidate")
    git(baselined_repo, "add", "-A")
    git(baselined_repo, "commit", "-q", "-m", "all green, promise")
    git(baselined_repo, "checkout", "-q", "main")
    result = run_cli(baselined_repo, "verify", "--candidate", "candidate", "--json")
    verdict = result.json()
    assert verdict["verdict"] == "fail"
    assert "protected_path_added" in {f["code"] for f in verdict["tamper"]["findings"]}
