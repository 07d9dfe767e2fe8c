"""Contest names from branches and labels (strict, hostile input) and event files."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_loopcontract.github.events import (
    MAX_EVENT_BYTES,
    ContestRef,
    contest_of_branch,
    contest_of_labels,
    contest_of_pull,
    is_valid_id,
    label_names,
    load_event,
)
from testing.fake_github import GITHUB_DATA, load_webhook, validate_event


@pytest.mark.parametrize(
    ("branch", "expected"),
    [
        ("loop-contract/c1/alice", ContestRef("c1", "alice")),
        ("loop-contract/calc.v2/seat_3", ContestRef("calc.v2", "seat_3")),
        ("loop-contract/A-b/Z9", ContestRef("A-b", "Z9")),
    ],
)
def test_contest_branches(branch: str, expected: ContestRef) -> None:
    assert contest_of_branch(branch) == expected


HOSTILE_BRANCHES = [
    "",
    "main",
    "loop-contract",
    "loop-contract/",
    "loop-contract/c1",
    "loop-contract/c1/",
    "loop-contract//alice",
    "loop-contract/c1/alice/extra",
    "loop-contract/../alice",
    "loop-contract/c1/..",
    "loop-contract/c1/.hidden",
    "loop-contract/-c1/alice",
    "loop-contract/c1/_alice",
    "loop-contract/c1/alice\n",
    "loop-contract/c1/ali ce",
    "loop-contract/c1/alice;rm -rf ~",
    "loop-contract/$(id)/alice",
    "loop-contract/c1/`id`",
    "loop-contract/c1/<!--x-->",
    "loop-contract/c1/@admin",
    "loop-contract/c1/al\u0456ce",  # Cyrillic i
    "loop-contract/c1/alice\u202e",  # right-to-left override
    "loop-contract/c1/\uff41lice",  # fullwidth a
    "Loop-Contract/c1/alice",
    "refs/heads/loop-contract/c1/alice",
    "loop-contract/c1/" + "a" * 101,
    "loop-contract\\c1\\alice",
]


@pytest.mark.parametrize("branch", HOSTILE_BRANCHES)
def test_hostile_branch_names_are_not_candidates(branch: str) -> None:
    assert contest_of_branch(branch) is None


@pytest.mark.parametrize("value", [None, 7, b"loop-contract/c1/alice", ["loop-contract/c1/a"]])
def test_non_strings_are_not_branches(value: object) -> None:
    assert contest_of_branch(value) is None


def test_id_rules() -> None:
    assert is_valid_id("a" * 100)
    assert not is_valid_id("a" * 101)
    assert not is_valid_id("dependabot[bot]")
    assert not is_valid_id("a\n")


def test_label_names_accept_strings_dicts_and_objects() -> None:
    labels = ["a", {"name": "b"}, SimpleNamespace(name="c"), {"nope": 1}, 5]
    assert label_names(labels) == ["a", "b", "c"]


def test_contest_of_labels() -> None:
    assert contest_of_labels(["bug", "loop-contract:c1"], "alice") == ContestRef("c1", "alice")
    assert contest_of_labels(["bug"], "alice") is None
    # two different contests: ambiguous
    assert contest_of_labels(["loop-contract:c1", "loop-contract:c2"], "alice") is None
    assert contest_of_labels(["loop-contract:c1", {"name": "loop-contract:c1"}], "a") == (
        ContestRef("c1", "a")
    )
    assert contest_of_labels(["loop-contract:../x"], "alice") is None
    assert contest_of_labels(["loop-contract:c1"], "dependabot[bot]") is None
    assert contest_of_labels(["loop-contract:c1"], None) is None


def test_recorded_labeled_payload_has_no_contest() -> None:
    payload = load_webhook("pull_request/labeled.payload.json")
    pr = payload["pull_request"]
    assert contest_of_labels(pr["labels"], pr["user"]["login"]) is None
    pr["labels"].append({**pr["labels"][0], "name": "loop-contract:calc"})
    assert contest_of_labels(pr["labels"], pr["user"]["login"]) == ContestRef(
        "calc", pr["user"]["login"]
    )


def test_contest_of_pull() -> None:
    assert contest_of_pull("loop-contract/c1/alice", [], "bob") == ContestRef("c1", "alice")
    assert contest_of_pull("feature", ["loop-contract:c1"], "bob") == ContestRef("c1", "bob")
    assert contest_of_pull("feature", [], "bob") is None
    # asked about one contest
    assert contest_of_pull("loop-contract/c1/alice", [], "bob", "c1") == ContestRef("c1", "alice")
    assert contest_of_pull("loop-contract/c1/alice", [], "bob", "c2") is None
    assert contest_of_pull("feature", ["loop-contract:c2"], "bob", "c2") == ContestRef("c2", "bob")
    assert contest_of_pull("loop-contract/c1/alice", ["loop-contract:c2"], "bob", "c2") == (
        ContestRef("c2", "alice")
    )
    assert contest_of_pull("feature", ["loop-contract:c2"], "x[bot]", "c2") is None
    with pytest.raises(ValueError):
        contest_of_pull("feature", [], "bob", "../c2")


def test_load_event_reads_the_recorded_payloads(tmp_path: Path) -> None:
    for path in sorted((GITHUB_DATA / "webhooks").rglob("*.json")):
        assert isinstance(load_event(path), dict)
    source = GITHUB_DATA / "webhooks/workflow_run/completed.payload.json"
    event = load_event(source)
    validate_event("workflow_run", event)


@pytest.mark.parametrize("text", ["[1, 2]", "not json", '"string"'])
def test_load_event_rejects_non_objects(tmp_path: Path, text: str) -> None:
    path = tmp_path / "event.json"
    path.write_text(text)
    with pytest.raises(ValueError):
        load_event(path)


def test_load_event_rejects_oversized_files(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    with path.open("wb") as f:
        f.write(json.dumps({"a": 1}).encode())
        f.truncate(MAX_EVENT_BYTES + 1)
    with pytest.raises(ValueError, match="bytes"):
        load_event(path)
