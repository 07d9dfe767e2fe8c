"""``amend --list`` and ``amend --remove N``: real repository, real CLI, the real verifier
deciding that a removal re-pinned under a name is not tampering (and a hand edit still is)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_loopcontract.history import History
from pytest_loopcontract.loop.amendments import without_item
from testing.loop_project import STATE, make_repo
from testing.repos import run_cli

EMPTY_TEST = "tests/test_slug.py::test_empty_text_gives_empty_slug"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


def add(repo: Path, text: str) -> None:
    result = run_cli(repo, "amend", "--add", text, "--tests", EMPTY_TEST, "--by", "carol")
    assert result.returncode == 0, result.stderr


def test_list_then_remove_an_amendment_and_verify_sees_no_tampering(repo: Path) -> None:
    assert run_cli(repo, "amend", "--list").stdout.strip() == "no amendments"
    add(repo, "Empty input stays empty")
    add(repo, "Second thoughts")
    listed = run_cli(repo, "amend", "--list", "--json").json()
    assert [(a["n"], a["item"], a["by"]) for a in listed] == [
        (1, "empty-input-stays-empty", "carol"),
        (2, "second-thoughts", "carol"),
    ]
    removed = run_cli(repo, "amend", "--remove", "1", "--by", "dave")
    assert removed.returncode == 0, removed.stderr
    assert "removed amendment 1 (DoD item 'empty-input-stays-empty')" in removed.stdout
    dod = yaml.safe_load((repo / "loopcontract.yml").read_text())["dod"]
    assert [d["id"] for d in dod] == ["unicode", "second-thoughts"]
    text = run_cli(repo, "amend", "--list").stdout
    assert "1. empty-input-stays-empty: Empty input stays empty" in text
    assert "(removed by dave)" in text
    assert "2. second-thoughts" in text and text.count("removed by") == 1
    [record] = [r.data for r in History(repo / STATE).read().records if r.kind == "amend_removed"]
    assert record["by"] == "dave" and record["n"] == 1 and record["contract_sha256"]
    assert run_cli(repo, "check").returncode == 0
    verdict = run_cli(repo, "verify", "--json").json()
    assert not verdict["tamper"]["detected"], verdict["tamper"]
    assert [d["id"] for d in verdict["dod"]] == ["unicode", "second-thoughts"]
    status = run_cli(repo, "status", "--json").json()
    assert [i["id"] for i in status["items"]] == ["unicode", "second-thoughts"]


def test_removals_that_cannot_be_made_are_refused_with_the_fix(repo: Path) -> None:
    add(repo, "Empty input stays empty")
    nameless = run_cli(repo, "amend", "--remove", "1")
    assert nameless.returncode == 2 and "--by NAME" in nameless.stderr
    unknown = run_cli(repo, "amend", "--remove", "5", "--by", "dave")
    assert unknown.returncode == 2 and "there are 1" in unknown.stderr
    assert run_cli(repo, "amend", "--remove", "1", "--by", "dave").returncode == 0
    twice = run_cli(repo, "amend", "--remove", "1", "--by", "dave")
    assert twice.returncode == 2 and "already removed by dave" in twice.stderr
    contract = repo / "loopcontract.yml"
    contract.write_text(contract.read_text() + "# a hand edit\n", "utf-8")
    add_again = run_cli(repo, "amend", "--add", "x", "--by", "carol")
    assert add_again.returncode == 2 and "differs from its pin" in add_again.stderr
    for result in (nameless, unknown, twice, add_again):
        assert "Traceback" not in result.stderr


def test_without_item_removes_exactly_the_entry() -> None:
    a = "  - id: a\n    text: A\n    tests:\n    - t\n"
    text = "id: x\ndod:\n" + a + "  - id: b\n    text: B\nbudget: {}\n"
    assert without_item(text, "a") == "id: x\ndod:\n  - id: b\n    text: B\nbudget: {}\n"
    assert without_item(text, "b") == "id: x\ndod:\n" + a + "budget: {}\n"
    only = "dod:\n- id: a\n  text: A\nbudget: {}\n"
    assert without_item(only, "a") == "dod: []\nbudget: {}\n"
    assert without_item(text, "zzz") is None
