"""A stale baseline (exit 27) told apart from an agent's contract edit (exit 25).

Real repositories, the real CLI: a baseline taken on ``main``, then a branch switch, an
uncommitted edit, a commit on top of the baseline, and a history rewrite that hides the edit.
"""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.contract.model import parse_contract
from pytest_loopcontract.loop.stops import post_turn_stop
from testing.repos import git
from testing.verifier_project import (
    FIXED,
    baseline_ok,
    contract,
    finding_codes,
    make_repo,
    reason_codes,
    verify_json,
)

# A looser contract: the acceptance test is gone, only a test that already passes remains.
LOOSER = contract(tests=("tests/test_core.py::test_double",))


def _diverged(tmp_path: Path) -> Path:
    """``feature`` (a person's new contract) branches off the first commit; ``main`` moves on
    and the baseline is taken on main's head, which is no ancestor of ``feature``."""
    repo = make_repo(tmp_path / "mini")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "loopcontract.yml").write_text(contract().replace("by three", "by 3"), "utf-8")
    git(repo, "commit", "-q", "-am", "a person's new contract")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("main moved on\n", "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main moves on")
    baseline_ok(repo)
    return repo


def test_branch_switch_to_another_contract_is_a_stale_baseline(tmp_path: Path) -> None:
    repo = _diverged(tmp_path)
    git(repo, "checkout", "-q", "feature")
    code, verdict = verify_json(repo)
    assert code == 27
    assert verdict["verdict"] == "error"
    assert reason_codes(verdict) == {"baseline_stale"}
    assert not verdict["tamper"]["detected"]
    message = verdict["reasons"][0]["message"]
    assert "loop-contract baseline" in message and "loopcontract.yml" in message


def test_uncommitted_contract_edit_after_the_switch_is_still_tampering(tmp_path: Path) -> None:
    repo = _diverged(tmp_path)
    git(repo, "checkout", "-q", "feature")
    (repo / "loopcontract.yml").write_text(LOOSER, "utf-8")
    code, verdict = verify_json(repo)
    assert code == 25
    assert "contract_modified" in finding_codes(verdict)


def test_contract_committed_on_top_of_the_baseline_is_still_tampering(tmp_path: Path) -> None:
    """The agent commits its looser contract: the change is in the candidate's commits."""
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    (repo / "loopcontract.yml").write_text(LOOSER, "utf-8")
    git(repo, "commit", "-q", "-am", "agent: done")
    code, verdict = verify_json(repo)
    assert code == 25
    assert verdict["verdict"] == "fail"
    assert "contract_modified" in finding_codes(verdict)
    code, verdict = verify_json(repo, "--candidate", "HEAD")
    assert code == 25


def test_history_rewritten_to_hide_the_edit_is_never_a_pass(tmp_path: Path) -> None:
    """The cheat that beats the ancestor rule: the agent rebuilds its work on a root commit
    of its own, so the baseline's commit is no ancestor. It gets an error, never a pass, and
    the loop stops for a person."""
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    git(repo, "checkout", "-q", "--orphan", "rewritten")
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    (repo / "loopcontract.yml").write_text(LOOSER, "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "agent: done")
    code, verdict = verify_json(repo)
    assert code == 27
    assert verdict["verdict"] == "error"
    assert not verdict["dod"] and not verdict["summary"]["total"]  # nothing was judged
    stop = post_turn_stop(verdict, [], parse_contract(LOOSER.encode(), Path("loopcontract.yml")))
    assert stop is not None and stop.exit_code == 27 and stop.decision == "stop"


def test_same_contract_on_a_diverged_branch_is_judged_as_usual(tmp_path: Path) -> None:
    """The honest look-alike: another history, but the contract is the pinned one."""
    repo = make_repo(tmp_path / "mini")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    git(repo, "commit", "-q", "-am", "fix on a branch")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("main moved on\n", "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main moves on")
    baseline_ok(repo)
    git(repo, "checkout", "-q", "feature")
    code, verdict = verify_json(repo)
    assert "baseline_stale" not in reason_codes(verdict)
    assert code == 0, verdict["reasons"]
