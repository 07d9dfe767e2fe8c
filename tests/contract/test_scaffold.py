"""``loop-contract init`` output: commented, and valid as written, whatever the checklist says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopcontract.contract.model import StopWhen, load_contract
from pytest_loopcontract.contract.scaffold import parse_checklist, render_contract, slugify
from pytest_loopcontract.contract.schema import validate_document

ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

CHECKLIST = """\
# Release plan

Some prose with - [ ] inline brackets that is not a list item.

- [ ] Parse the "config" file: keys, values # and comments
  - [x] Nested: done already
    * [ ] deeper, with a back\\slash
+ [X] plus bullet
1. [ ] numbered item
2) [ ] other numbering
- [ ]
- [] not a checkbox
- plain item

```markdown
- [ ] example inside a code block
```
~~~
- [ ] tilde fence too
~~~
"""


def dod_of(text: str) -> list[dict[str, object]]:
    items: list[dict[str, object]] = validate_document(text.encode(), "loopcontract.yml")["dod"]
    return items


def test_parse_checklist_takes_task_items_only() -> None:
    assert parse_checklist(CHECKLIST) == [
        'Parse the "config" file: keys, values # and comments',
        "Nested: done already",
        "deeper, with a back\\slash",
        "plus bullet",
        "numbered item",
        "other numbering",
    ]


def test_parse_checklist_of_prose_is_empty() -> None:
    assert parse_checklist("just text\n\n- a list\n") == []


def test_plain_scaffold_is_valid_and_commented(tmp_path: Path) -> None:
    text = render_contract("demo", goal="Make parsing robust")
    path = tmp_path / "loopcontract.yml"
    path.write_text(text, "utf-8")
    contract = load_contract(path)
    assert (contract.id, contract.goal, contract.mode, contract.dod) == (
        "demo",
        "Make parsing robust",
        "fix",
        (),
    )
    assert [gate.kind for gate in contract.hard_gates] == ["acceptance", "pass_to_pass"]
    assert contract.budget.iterations == 10
    assert contract.stop_when == StopWhen(no_progress=3)
    assert text.startswith("# loopcontract.yml")
    assert '@pytest.mark.dod("<item id>")' in text


def test_checklist_items_become_dod_items_that_round_trip() -> None:
    dod = dod_of(render_contract("release-1.2", checklist=CHECKLIST))
    assert [item["text"] for item in dod] == parse_checklist(CHECKLIST)
    assert [item["id"] for item in dod] == [
        "parse-the-config-file-keys-values-and",
        "nested-done-already",
        "deeper-with-a-back-slash",
        "plus-bullet",
        "numbered-item",
        "other-numbering",
    ]
    assert all(item["tests"] == [] for item in dod)


def test_each_item_names_its_marker() -> None:
    text = render_contract("x", checklist="- [ ] Ship it\n")
    assert '@pytest.mark.dod("ship-it")' in text


@pytest.mark.parametrize(
    ("texts", "ids"),
    [
        (["Same", "same", "SAME!"], ["same", "same-2", "same-3"]),
        (["日本語", "🙂"], ["item-1", "item-2"]),
        (["Café crème brûlée"], ["cafe-creme-brulee"]),
        (["yes", "123", "1.0", "null"], ["yes", "123", "1-0", "null"]),
        (["a" * 50, "a" * 50], ["a" * 40, "a" * 38 + "-2"]),
    ],
)
def test_item_ids_are_unique_ascii_and_short(texts: list[str], ids: list[str]) -> None:
    checklist = "".join(f"- [ ] {text}\n" for text in texts)
    dod = dod_of(render_contract("x", checklist=checklist))
    assert [item["id"] for item in dod] == ids
    assert [item["text"] for item in dod] == texts


def test_slugify_cuts_at_a_word_boundary() -> None:
    slug = slugify("the quick brown fox jumps over the lazy dog again and again")
    assert slug == "the-quick-brown-fox-jumps-over-the-lazy"
    assert len(slug) <= 40


def test_goal_with_yaml_syntax_round_trips() -> None:
    goal = "Fix: \"quoted\" 'single' # not a comment, {braces} [brackets] & *star >gt |pipe\t\\"
    document = validate_document(render_contract("x", goal=goal).encode(), "c.yml")
    assert document["goal"] == goal


def test_invalid_contract_id_is_refused_with_a_suggestion() -> None:
    with pytest.raises(ValueError, match="'my-project'"):
        render_contract("My Project")


def test_checklist_without_items_is_refused() -> None:
    with pytest.raises(ValueError, match="no task-list items"):
        render_contract("x", checklist="# Plan\n\nnothing to tick\n")


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_goal_round_trips(goal: str) -> None:
    document = validate_document(render_contract("x", goal=goal).encode(), "c.yml")
    assert document["goal"] == goal


def _one_line(text: str) -> bool:
    return text == text.strip() and len(text.splitlines()) == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1).filter(_one_line), min_size=1, max_size=8))
def test_any_checklist_round_trips(texts: list[str]) -> None:
    checklist = "".join(f"- [ ] {text}\n" for text in texts)
    assert parse_checklist(checklist) == texts
    rendered = render_contract("x", checklist=checklist)
    dod = dod_of(rendered)
    assert [item["text"] for item in dod] == texts
    ids = [str(item["id"]) for item in dod]
    assert len(set(ids)) == len(ids)
    assert all(ID.fullmatch(item_id) and len(item_id) <= 40 for item_id in ids)
