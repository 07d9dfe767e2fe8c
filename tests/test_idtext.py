"""idtext.py: node ids shown as the text they are, matched as pytest wrote them."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_loopcontract.contest.report.html import render_html
from pytest_loopcontract.contest.report.markdown import render_markdown
from pytest_loopcontract.contest.report.terminal import render_terminal
from pytest_loopcontract.idtext import readable_ids, readable_nodeid
from testing.contest_fixtures import sample_result
from testing.verifier_project import FIXED, cli, make_repo, no_traceback

ESCAPED = "tests/test_town.py::test_town[\\xc6r\\xf8sk\\xf8bing]"  # what pytest's node id is
READABLE = "tests/test_town.py::test_town[Ærøskøbing]"

TOWN_TESTS = """\
import pytest

from mini.core import triple


@pytest.mark.parametrize("town", ["Ærøskøbing"])
def test_town(town):
    assert triple(len(town)) == 30
"""


def test_escaped_parameters_come_back_as_their_characters() -> None:
    assert readable_nodeid(ESCAPED) == READABLE
    assert readable_nodeid("t.py::test[\\u4e2d\\U0001f600]") == "t.py::test[中😀]"
    assert readable_nodeid(READABLE) == READABLE
    assert readable_nodeid("t.py::test_plain") == "t.py::test_plain"


def test_what_could_mislead_or_move_the_cursor_stays_escaped() -> None:
    # control characters, C1 controls, bidi overrides, zero-width space, a lone surrogate
    for code in ("\\x1b", "\\x07", "\\x9b", "\\u202e", "\\u200b", "\\ud800", "\\x0a"):
        nodeid = f"t.py::test[a{code}b]"
        assert readable_nodeid(nodeid) == nodeid, code
    # an escaped backslash followed by "xc6" is five characters of text, not an escape
    assert readable_nodeid("t.py::test[\\\\xc6]") == "t.py::test[\\\\xc6]"
    # only the parameters: a path is never escaped by pytest, so it is left alone
    assert readable_nodeid("dir\\xc6/t.py::test[\\xc6]") == "dir\\xc6/t.py::test[Æ]"


def test_ids_inside_a_message_are_made_readable_and_other_text_is_not() -> None:
    message = f"1 failed: {ESCAPED}; assert b'\\xc6' == b''"
    assert readable_ids(message) == f"1 failed: {READABLE}; assert b'\\xc6' == b''"


def test_the_contest_reports_show_readable_ids() -> None:
    doc = sample_result()
    doc["candidates"][0]["reasons"] = [
        {"code": "hard_gate_failed", "message": f"acceptance test failed: {ESCAPED}"}
    ]
    for page in (render_html(doc), render_markdown(doc), render_terminal(doc)):
        assert "Ærøskøbing" in page
        assert "\\xc6" not in page


def test_baseline_and_verify_print_the_id_readable_and_match_it_exactly(tmp_path: Path) -> None:
    """A real parametrized test with id ``Ærøskøbing``, tied to the DoD item by a glob."""
    contract = (
        "version: 1\nid: mini\ngoal: triple() multiplies by three.\nmode: fix\ndod:\n"
        "  - id: town\n    text: a town's name, tripled.\n    tests:\n"
        "      - tests/test_town.py::*\n"
    )
    repo = make_repo(
        tmp_path / "mini", **{"tests/test_town.py": TOWN_TESTS, "loopcontract.yml": contract}
    )
    taken = cli(repo, "baseline", "-q")
    no_traceback(taken)
    assert taken.returncode == 0, taken.stderr
    assert f"must go green: {READABLE}" in taken.stdout
    record = json.loads((repo / ".loop-contract/baseline.json").read_text("utf-8"))
    assert record["fail_to_pass"] == [ESCAPED]  # stored exactly as pytest names it

    failing = cli(repo, "verify", "-q")
    assert failing.returncode == 20, failing.stdout
    assert f"failed: {READABLE}" in failing.stdout
    assert "\\xc6" not in failing.stdout

    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    passing = cli(repo, "verify", "-q", "--json")
    assert passing.returncode == 0, passing.stdout
    verdict = passing.json()
    ids = [t["nodeid"] for item in verdict["dod"] for t in item["tests"]]
    assert ids == [ESCAPED]  # matched and recorded exactly as pytest names it
