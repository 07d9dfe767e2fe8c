"""The route table on real files: demotions, held demotions, order, atomic writes, bad files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_loopcontract.contest.routes import RouteTable, RouteTableError
from testing.repos import ROOT as REPO_ROOT

ROOT = REPO_ROOT
DOMAIN = "python.numeric.rolling"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "routes.json"


def test_a_missing_file_is_an_empty_table(path: Path) -> None:
    table = RouteTable(path)
    assert table.to_json() == {}
    assert table.order(DOMAIN, ["alpha", "beta"]) == ["alpha", "beta"]
    assert not path.exists()


def test_demote_applies_and_persists(path: Path) -> None:
    table = RouteTable(path)
    entry = table.demote(DOMAIN, "alpha", run_id="run-1", held=False)
    assert entry == {"demotions": 1, "held": 0, "last_run": "run-1"}
    table.demote(DOMAIN, "alpha", run_id="run-2", held=False)
    assert json.loads(path.read_text("utf-8")) == {
        DOMAIN: {"alpha": {"demotions": 2, "held": 0, "last_run": "run-2"}}
    }
    assert path.read_text("utf-8").endswith("}\n")
    assert RouteTable(path).entry(DOMAIN, "alpha") == entry | {"demotions": 2, "last_run": "run-2"}
    assert sorted(p.name for p in path.parent.iterdir()) == ["routes.json"]  # no temp files


def test_a_held_demotion_is_recorded_but_not_applied(path: Path) -> None:
    table = RouteTable(path)
    table.demote(DOMAIN, "alpha", run_id="run-1", held=True)
    assert table.entry(DOMAIN, "alpha") == {"demotions": 0, "held": 1, "last_run": "run-1"}
    assert table.order(DOMAIN, ["alpha", "beta"]) == ["alpha", "beta"]
    table.demote(DOMAIN, "alpha", run_id="run-2", held=False)
    assert table.order(DOMAIN, ["alpha", "beta"]) == ["beta", "alpha"]


def test_order_is_fewest_demotions_first_then_the_given_order(path: Path) -> None:
    table = RouteTable(path)
    for seat, times in (("alpha", 2), ("beta", 1), ("delta", 1)):
        for n in range(times):
            table.demote(DOMAIN, seat, run_id=f"run-{n}", held=False)
    seats = ["alpha", "beta", "gamma", "delta", "epsilon"]
    assert table.order(DOMAIN, seats) == ["gamma", "epsilon", "beta", "delta", "alpha"]
    assert table.order(DOMAIN, list(reversed(seats))) == [
        "epsilon",
        "gamma",
        "delta",
        "beta",
        "alpha",
    ]
    # Another domain, its parent included, is unaffected.
    assert table.order("python.numeric", seats) == seats
    assert table.order("python.text", seats) == seats


def test_demote_rereads_the_file_first(path: Path) -> None:
    first = RouteTable(path)
    second = RouteTable(path)
    first.demote(DOMAIN, "alpha", run_id="run-1", held=False)
    second.demote(DOMAIN, "beta", run_id="run-2", held=False)
    assert set(RouteTable(path).to_json()[DOMAIN]) == {"alpha", "beta"}
    assert second.order(DOMAIN, ["alpha", "beta", "gamma"]) == ["gamma", "alpha", "beta"]


def test_concurrent_demotions_from_separate_processes_are_all_kept(path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from pytest_loopcontract.contest.routes import RouteTable

        for i in range(25):
            RouteTable(sys.argv[1]).demote(
                "python.numeric.rolling", "alpha", run_id=f"{sys.argv[2]}-{i}", held=i % 5 == 0
            )
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(path), f"p{n}"], cwd=ROOT)
        for n in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    entry = RouteTable(path).entry(DOMAIN, "alpha")
    assert entry is not None
    assert (entry["demotions"], entry["held"]) == (4 * 20, 4 * 5)


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe",
        b"[]",
        b'{"Not A Domain": {}}',
        b'{"python": []}',
        b'{"python": {"alpha": {"demotions": 1}}}',
        b'{"python": {"alpha": {"demotions": -1, "held": 0, "last_run": ""}}}',
        b'{"python": {"alpha": {"demotions": true, "held": 0, "last_run": ""}}}',
        b'{"python": {"alpha": {"demotions": 1, "held": 0, "last_run": 3}}}',
        b'{"python": {"-bad seat": {"demotions": 1, "held": 0, "last_run": ""}}}',
    ],
)
def test_a_malformed_file_is_named_and_never_overwritten(path: Path, content: bytes) -> None:
    table = RouteTable(path)  # opened while the file was good
    table.demote(DOMAIN, "alpha", run_id="run-0", held=False)
    path.write_bytes(content)
    with pytest.raises(RouteTableError, match=str(path)):
        RouteTable(path)
    with pytest.raises(RouteTableError, match=str(path)):
        table.demote(DOMAIN, "alpha", run_id="run-1", held=False)
    assert path.read_bytes() == content


def test_bad_arguments(path: Path) -> None:
    table = RouteTable(path)
    with pytest.raises(ValueError, match="domain"):
        table.demote("Not..Valid", "alpha", run_id="r", held=False)
    with pytest.raises(ValueError, match="seat"):
        table.demote(DOMAIN, "bad seat", run_id="r", held=False)
    with pytest.raises(ValueError, match="run id"):
        table.demote(DOMAIN, "alpha", run_id="", held=False)
    assert not path.exists()


def test_load_and_save_round_trip(path: Path) -> None:
    table = RouteTable(path)
    table.demote(DOMAIN, "alpha", run_id="run-1", held=False)
    text = path.read_text("utf-8")
    path.write_text(text, "utf-8")
    table.load().save()
    assert path.read_text("utf-8") == text
