"""Judging packets: blind, redacted, per-judge label order, only the gate fields a judge needs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_loopcontract.contest.matrix_model import ROWS
from pytest_loopcontract.contest.packets import (
    CandidateView,
    JudgeBrief,
    build_packet,
    label_order,
    write_packet,
)
from testing.repos import git
from testing.secret_samples import GHP, NORMAL_DIFF, SK


def view(seat: str, family: str, diff: str = NORMAL_DIFF, **kw: Any) -> CandidateView:
    return CandidateView(seat=seat, family=family, diff=diff, **kw)


TASK = {
    "goal": "Make rolling_mean O(n)",
    "mode": "improve",
    "dod": [{"id": "fast", "text": "rolling_mean runs in linear time"}],
}


def packet_for(
    candidates: list[CandidateView],
    judge: str = "beta",
    family: str = "globex",
    identities: tuple[str, ...] = (),
    **kw: Any,
) -> tuple[dict[str, Any], dict[str, str]]:
    repair = kw.pop("repair", None)
    brief = JudgeBrief(
        run_id="run-1",
        judge_seat=judge,
        judge_family=family,
        task=TASK,
        candidates=candidates,
        identities=identities,
        **kw,
    )
    return build_packet(brief, repair)


# --------------------------------------------------------------------------------------------
# labels


def test_labels_beyond_26() -> None:
    seats = [f"s{i:02d}" for i in range(30)]
    labels = label_order("r", "j", seats)
    assert list(labels)[:3] == ["A", "B", "C"]
    assert list(labels)[25:] == ["Z", "AA", "AB", "AC", "AD"]
    assert sorted(labels.values()) == seats


def test_labels_differ_between_judges_and_repeat_for_one() -> None:
    seats = ["s1", "s2", "s3", "s4", "s5", "s6"]
    first = label_order("run-7", "judge-a", seats)
    assert first == label_order("run-7", "judge-a", list(reversed(seats)))
    assert first != label_order("run-7", "judge-b", seats)
    assert first != label_order("run-8", "judge-a", seats)


@given(
    run_id=st.text(max_size=20),
    judge=st.text(max_size=20),
    seats=st.lists(st.text(min_size=1, max_size=8), unique=True, max_size=40),
    data=st.data(),
)
def test_label_order_is_a_bijection_independent_of_input_order(
    run_id: str, judge: str, seats: list[str], data: st.DataObject
) -> None:
    labels = label_order(run_id, judge, seats)
    assert sorted(labels.values()) == sorted(seats)
    assert len(set(labels)) == len(labels) == len(seats)
    assert all(label.isalpha() and label.isupper() for label in labels)
    shuffled = data.draw(st.permutations(seats))
    assert label_order(run_id, judge, shuffled) == labels


# --------------------------------------------------------------------------------------------
# build_packet


def test_packet_shape() -> None:
    packet, labels = packet_for([view("alpha", "acme"), view("gamma", "initech")])
    assert packet["kind"] == "loop-contract.judge-packet"
    assert packet["version"] == 1
    assert packet["task"] == TASK
    assert packet["rows"] == list(ROWS)
    assert packet["repair"] is None
    assert "Score every candidate" in packet["instructions"]
    assert [c["label"] for c in packet["candidates"]] == list(labels) == ["A", "B"]
    assert set(labels.values()) == {"alpha", "gamma"}
    jsonschema.Draft202012Validator.check_schema(packet["reply_schema"])
    cell_props = packet["reply_schema"]["$defs"]["cell"]["properties"]
    assert cell_props["candidate"]["enum"] == ["A", "B"]
    json.dumps(packet)  # serialisable as is


def test_candidates_listed_in_label_order() -> None:
    views = [view(f"seat{i}", f"fam{i}", diff=f"+marker_{i}\n") for i in range(6)]
    packet, labels = packet_for(views)
    for entry in packet["candidates"]:
        seat = labels[entry["label"]]
        assert entry["diff"] == f"+marker_{seat[-1]}\n"


def test_own_family_and_own_seat_never_appear() -> None:
    views = [
        view("alpha", "acme", diff="+alpha_unique_change = 1\n"),
        view("beta", "initech", diff="+beta_own_change = 1\n"),  # the judge's seat
        view("delta", " GlobEx ", diff="+delta_same_vendor = 1\n"),  # the judge's family
        view("gamma", "initech", diff="+gamma_change = 1\n"),
    ]
    packet, labels = packet_for(views, judge="beta", family="globex")
    assert sorted(labels.values()) == ["alpha", "gamma"]
    assert sorted(labels) == ["A", "B"]
    text = json.dumps(packet)
    assert "delta_same_vendor" not in text and "beta_own_change" not in text
    assert "_unique_change" in text and "gamma_change" not in text  # seat names scrubbed
    assert "[candidate]_change" in text


def test_no_eligible_candidates_gives_no_labels() -> None:
    packet, labels = packet_for([view("delta", "globex")], judge="beta", family="globex")
    assert labels == {} and packet["candidates"] == []


def test_duplicate_seats_are_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        packet_for([view("alpha", "acme"), view("alpha", "acme")])


def test_unknown_rows_are_refused() -> None:
    with pytest.raises(ValueError, match="rows"):
        packet_for([view("alpha", "acme")], rows=("style",))


def test_gates_copy_only_the_judge_fields() -> None:
    gates = {
        "hard": [{"id": "acceptance", "status": "pass", "message": "path /secret/x", "tests": [1]}],
        "measured": [
            {
                "id": "coverage",
                "status": "fail",
                "metric": "coverage.percent",
                "observed": 71.5,
                "op": ">=",
                "threshold": 90,
                "unit": "%",
                "evidence": "/home/alpha/cov.json",
            }
        ],
        "tamper": ["protected_path_modified"],
    }
    tests = {"passed": 5, "failed": 0, "skipped": 1, "duration": 2.5, "Weird Key": 3}
    packet, _ = packet_for([view("alpha", "acme", gates=gates, tests=tests)])
    entry = packet["candidates"][0]
    assert entry["gates"] == {
        "hard": [{"id": "acceptance", "status": "pass"}],
        "measured": [
            {
                "id": "coverage",
                "status": "fail",
                "metric": "coverage.percent",
                "observed": 71.5,
                "op": ">=",
                "threshold": 90,
                "unit": "%",
            }
        ],
    }
    assert entry["tests"] == {"failed": 0, "passed": 5, "skipped": 1}


def test_diff_truncated_with_marker() -> None:
    diff = "".join(f"+line {i:05d}\n" for i in range(2000))
    packet, _ = packet_for([view("alpha", "acme", diff=diff)], max_diff_chars=1000)
    out = packet["candidates"][0]["diff"]
    assert out.startswith("+line 00000\n")
    body = out[: out.index("[... diff truncated")]
    assert len(body) <= 1000 and body.endswith("\n")
    assert out.endswith(f"the first {len(body)} of {len(diff)} characters shown]\n")


def test_huge_diff_is_cut_before_cleaning_and_stays_redacted() -> None:
    filler = "".join(f"+line {i:07d} by quokka\n" for i in range(200_000))
    diff = filler[:59_990] + f'+KEY = "{GHP}"\n' + filler[59_990:]
    packet, _ = packet_for([view("quokka", "acme", diff=diff)])
    out = packet["candidates"][0]["diff"]
    assert len(out) < 60_100
    assert GHP not in out and GHP[:12] not in out and "quokka" not in out
    assert out.endswith(f"of {len(diff)} characters shown]\n")


def test_giant_single_line_cut_through_a_token_leaks_nothing() -> None:
    # A redacted key block shrinks the text, so the token cut in half at the pre-cut would land
    # inside the limit; the guard keeps it out.
    key = "-----BEGIN RSA PRIVATE KEY-----" + "Q" * 20_000 + "-----END RSA PRIVATE KEY-----"
    for offset in range(0, 40, 3):
        head = "+x = '" + key + " "
        pad = "y" * (60_000 + 8192 - len(head) - 1 - offset)
        diff = head + pad + " " + GHP + "'"
        packet, _ = packet_for([view("alpha", "acme", diff=diff)])
        out = packet["candidates"][0]["diff"]
        assert "QQQQ" not in out and GHP[:8] not in out
        assert "diff truncated" in out and f"of {len(diff)} characters" in out


def test_short_diff_is_not_marked() -> None:
    packet, _ = packet_for([view("alpha", "acme", diff="+x = 1\n")], max_diff_chars=7)
    assert packet["candidates"][0]["diff"] == "+x = 1\n"


def test_repair_is_embedded_and_bounded() -> None:
    repair = {"error": "no JSON document found", "previous_reply": "x" * 5000}
    packet, _ = packet_for([view("alpha", "acme")], repair=repair)
    assert packet["repair"]["error"] == "no JSON document found"
    assert packet["repair"]["previous_reply"] == "x" * 2000


def test_packet_labels_same_with_and_without_repair() -> None:
    views = [view(f"seat{i}", f"fam{i}") for i in range(5)]
    _, plain = packet_for(views)
    _, repaired = packet_for(views, repair={"error": "e", "previous_reply": "p"})
    assert list(plain.items()) == list(repaired.items())


def test_packet_is_blind_and_redacted(tmp_path: Path) -> None:
    """A real git diff with the seats' names, families, branches, paths, emails and commit
    ids all over it; the serialized packet contains none of them, nor the secrets."""
    repo = tmp_path / "zephyr-repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "rolling.py").write_text("def rolling_mean(xs, w):\n    return []\n", "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()

    worktrees = {}
    seats = {"quokka": "acmecorp", "wombat": "globexinc", "numbat": "initechco"}
    for seat, family in seats.items():
        branch = f"loop-contract/rolling/{seat}"
        wt = tmp_path / f"wt-{seat}"
        git(repo, "worktree", "add", "-q", "-b", branch, str(wt), base)
        worktrees[seat] = wt
        (wt / "rolling.py").write_text(
            "# written by " + seat.upper() + f" of {family}, {seat}@{family}.example\n"
            f"# worktree {wt}, branch {branch}, repo {repo}\n"
            f"# base commit {base}\n"
            "def rolling_mean(xs, w):\n"
            f'    API_KEY = "{SK}"\n'
            f'    gh = "{GHP}"\n'
            "    return [sum(xs[max(0, i - w + 1) : i + 1]) / min(i + 1, w) "
            "for i in range(len(xs))]\n",
            "utf-8",
        )
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": seat,
            "GIT_AUTHOR_EMAIL": f"{seat}@{family}.example",
        }
        env |= {"GIT_COMMITTER_NAME": seat, "GIT_COMMITTER_EMAIL": f"{seat}@{family}.example"}
        subprocess.run(
            ["git", "commit", "-q", "-am", f"{seat} solves it\n\nSigned-off-by: {seat}"],
            cwd=wt,
            env=env,
            check=True,
        )
    commits = {s: git(worktrees[s], "rev-parse", "HEAD").strip() for s in seats}
    views = [
        view(
            seat,
            family,
            diff=git(repo, "format-patch", "--stdout", "--full-index", f"{base}..{commits[seat]}"),
            gates={"hard": [{"id": "acceptance", "status": "pass"}]},
            tests={"passed": 3, "failed": 0, "skipped": 0},
        )
        for seat, family in seats.items()
    ]
    identities = [
        str(repo),
        *(str(wt) for wt in worktrees.values()),
        *(f"loop-contract/rolling/{s}" for s in seats),
        *(f"{s}@{f}.example" for s, f in seats.items()),
    ]
    packet, labels = packet_for(
        views, judge="numbat", family="initechco", identities=tuple(identities)
    )
    assert sorted(labels.values()) == ["quokka", "wombat"]

    path = tmp_path / "packets" / "numbat.packet.json"
    write_packet(path, packet)
    text = path.read_text("utf-8")
    assert json.loads(text) == packet
    lowered = text.lower()
    forbidden = [
        *seats,
        *seats.values(),
        str(tmp_path).lower(),
        "zephyr-repo",
        "loop-contract/rolling",
        ".example",
        base,
        *commits.values(),
        *(c[:7] for c in commits.values()),
        SK,
        GHP,
        SK[3:20],
        GHP[4:20],
    ]
    for needle in forbidden:
        assert needle.lower() not in lowered, needle
    assert 'api_key = \\"[redacted]\\"' in lowered
    assert "rolling_mean" in text
    assert text.count("[REDACTED]") >= 4
    assert [p.name for p in path.parent.iterdir()] == ["numbat.packet.json"]  # no temp left


def test_write_packet_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    write_packet(path, {"kind": "x", "n": 1})
    write_packet(path, {"kind": "x", "n": 2, "text": "ünïcode"})
    assert json.loads(path.read_text("utf-8")) == {"kind": "x", "n": 2, "text": "ünïcode"}
    assert os.listdir(tmp_path) == ["p.json"]


def test_lone_surrogates_do_not_break_writing(tmp_path: Path) -> None:
    diff = b"+caf\xe9 = 1\n".decode("utf-8", "surrogateescape")
    packet, _ = packet_for([view("alpha", "acme", diff=diff)])
    write_packet(tmp_path / "p.json", packet)
    assert "caf" in (tmp_path / "p.json").read_text("utf-8")
