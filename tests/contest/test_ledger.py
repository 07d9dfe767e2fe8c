"""The contest ledger: chain, hand edits, queries, concurrency and the run lock, on real files."""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopcontract.chain import ZERO_HASH
from pytest_loopcontract.contest.ledger import Ledger, verify_file
from pytest_loopcontract.contest.ledger.queries import NOT_REPORTED, Agreement, Totals, WinRate
from pytest_loopcontract.contest.ledger.rows import Entry, LedgerError, row_hash
from pytest_loopcontract.contest.run_lock import RunBusy
from pytest_loopcontract.fsio import canonical_json

CID = "slugify"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "ledger.sqlite"


@pytest.fixture
def ledger(path: Path) -> Iterator[Ledger]:
    with Ledger(path) as opened:
        yield opened


def fill(ledger: Ledger, n: int, run_id: str = "r1") -> None:
    """``n`` plain dispatch rows, one transaction each (the way a contest writes)."""
    for i in range(n):
        ledger.append(
            "dispatch",
            run_id=run_id,
            contract_id=CID,
            seat=f"seat{i % 3}",
            family="vendor",
            payload={"role": "candidate", "attempt": i + 1},
            tokens=100 + i,
            cost_usd=0.01 * (i + 1),
        )


def hand_edit(path: Path, *statements: str) -> None:
    """What someone with the sqlite3 shell does: drop the seat belt, then change rows."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("DROP TRIGGER IF EXISTS rows_append_only_update")
        db.execute("DROP TRIGGER IF EXISTS rows_append_only_delete")
        for sql in statements:
            db.execute(sql)
    finally:
        db.close()


def run_py(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- chain ------------------------------------------------------------------------------------


def test_append_seals_rows_and_verify_walks_them(ledger: Ledger) -> None:
    first = ledger.append(
        "run_started",
        run_id="r1",
        contract_id=CID,
        payload={"contract": {"id": CID, "sha256": "a" * 64}, "seats": []},
    )
    assert (first.seq, first.prev_hash) == (1, ZERO_HASH)
    fill(ledger, 4)
    rows = list(ledger.rows())
    assert [r.seq for r in rows] == [1, 2, 3, 4, 5]
    assert rows[0] == first
    for before, after in itertools.pairwise(rows):
        assert after.prev_hash == before.row_hash
    result = ledger.verify()
    assert result.ok and result.first_bad_seq is None
    assert result.rows_checked == 5
    assert result.head == rows[-1].row_hash == ledger.head()[1]
    assert ledger.head() == (5, rows[-1].row_hash)
    assert ledger.count() == 5
    assert rows[1].data == {"attempt": 1, "role": "candidate"}
    assert rows[1].payload == '{"attempt":1,"role":"candidate"}'


def test_empty_ledger_verifies(ledger: Ledger) -> None:
    result = ledger.verify()
    assert result.ok and result.rows_checked == 0 and result.head == ZERO_HASH
    assert ledger.head() == (0, ZERO_HASH)


def test_row_hash_is_sha256_of_prev_and_canonical_json(ledger: Ledger) -> None:
    row = ledger.append(
        "outcome",
        run_id="r1",
        contract_id=CID,
        seat="claude",
        family="anthropic",
        payload={"verdict": "pass", "exit_code": 0},
        tokens=7,
        cost_usd=1,
    )
    assert row.cost_usd == 1.0 and isinstance(row.cost_usd, float)
    columns = [row.seq, row.run_id, row.kind, row.contract_id, row.seat, row.family]
    columns += [row.payload, row.tokens, row.cost_usd, row.created_at]
    expected = hashlib.sha256((row.prev_hash + canonical_json(columns)).encode()).hexdigest()
    assert row.row_hash == expected


texts = st.text(min_size=1, max_size=30)
floats = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(
    seq=st.integers(1, 2**62),
    run=texts,
    seat=st.none() | texts,
    payload=st.dictionaries(texts, st.integers() | texts | floats, max_size=4),
    tokens=st.none() | st.integers(0, 2**63 - 1),
    cost=st.none() | floats,
)
def test_row_hash_matches_json_dumps_for_any_values(
    seq: int,
    run: str,
    seat: str | None,
    payload: dict[str, Any],
    tokens: int | None,
    cost: float | None,
) -> None:
    text = canonical_json(payload)
    columns: list[Any] = [seq, run, "score", "c", seat, None, text, tokens, cost, "2026-01-01Z"]
    prev = "f" * 64
    expected = hashlib.sha256((prev + canonical_json(columns)).encode()).hexdigest()
    assert row_hash(prev, *columns) == expected


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(texts, st.none() | texts, st.dictionaries(texts, texts, max_size=3)),
        min_size=1,
        max_size=8,
    )
)
def test_verify_agrees_with_append_on_awkward_text(
    entries: list[tuple[str, str | None, dict[str, str]]],
) -> None:
    """Quotes, backslashes, control characters and non-ASCII survive the round trip."""
    with tempfile.TemporaryDirectory() as folder, Ledger(Path(folder) / "l.sqlite") as ledger:
        for run, family, payload in entries:
            ledger.append(
                "run_started", run_id=run, contract_id='c"\\\n', family=family, payload=payload
            )
        assert ledger.verify().ok


def test_wal_mode_and_normal_sync(ledger: Ledger, path: Path) -> None:
    assert ledger.settings() == {"journal_mode": "wal", "synchronous": "normal"}
    fill(ledger, 1)
    other = sqlite3.connect(path)
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        other.close()


def test_triggers_make_accidental_edits_fail(ledger: Ledger, path: Path) -> None:
    fill(ledger, 2)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute("UPDATE rows SET payload = '{}' WHERE seq = 1")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute("DELETE FROM rows WHERE seq = 2")
    finally:
        db.close()
    assert ledger.verify().ok


# -- hand edits -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statements", "bad_seq", "words"),
    [
        (
            ['UPDATE rows SET payload = \'{"attempt":1,"role":"judge"}\' WHERE seq = 3'],
            3,
            "contents do not match",
        ),
        (["UPDATE rows SET cost_usd = 0 WHERE seq = 4"], 4, "contents do not match"),
        (["UPDATE rows SET created_at = '1999-01-01' WHERE seq = 5"], 5, "contents"),
        (["DELETE FROM rows WHERE seq = 3"], 4, "row 3 is missing"),
        (["DELETE FROM rows WHERE seq IN (3, 4, 5)"], 6, "rows 3..5 are missing"),
        (["DELETE FROM rows WHERE seq = 1"], 2, "row 1 is missing"),
        (
            [
                "UPDATE rows SET seq = -3 WHERE seq = 3",
                "UPDATE rows SET seq = 3 WHERE seq = 4",
                "UPDATE rows SET seq = 4 WHERE seq = -3",
            ],
            3,
            "prev_hash does not link to row 2",
        ),
        (["UPDATE rows SET prev_hash = row_hash WHERE seq = 1"], 1, "start of the chain"),
        (["UPDATE rows SET seq = -1 WHERE seq = 4"], -1, "out of place (expected 1"),
        (["UPDATE rows SET tokens = 'lots' WHERE seq = 2"], 2, "wrong type"),
        (["UPDATE rows SET cost_usd = 'free' WHERE seq = 6"], 6, "wrong type"),
        (["UPDATE rows SET payload = x'7b7d' WHERE seq = 2"], 2, "wrong type"),
        (["UPDATE rows SET run_id = x'7231' WHERE seq = 5"], 5, "wrong type"),
        (["UPDATE rows SET seat = NULL WHERE seq = 5"], 5, "contents do not match"),
        (["UPDATE rows SET seat = CAST(x'ff' AS TEXT) WHERE seq = 4"], 4, "cannot be read"),
        (
            [
                "INSERT INTO rows VALUES (7, 'r1', 'decision', 'slugify', 'seat0', 'vendor', "
                "'{}', NULL, NULL, 'now', (SELECT row_hash FROM rows WHERE seq = 6), 'beef')"
            ],
            7,
            "contents do not match",
        ),
    ],
)
def test_hand_edits_are_named_by_the_first_row_that_does_not_seal(
    ledger: Ledger, path: Path, statements: list[str], bad_seq: int, words: str
) -> None:
    fill(ledger, 6)
    before = [r.row_hash for r in ledger.rows()]
    hand_edit(path, *statements)
    result = ledger.verify()
    assert not result.ok
    assert result.first_bad_seq == bad_seq, result.reason
    assert words in result.reason
    assert result.reason.startswith(f"row {bad_seq} does not seal")
    # Everything before the bad row (or before the gap) sealed, and the head says where.
    assert result.rows_checked <= max(bad_seq - 1, 0)
    assert result.head == (before[result.rows_checked - 1] if result.rows_checked else ZERO_HASH)
    assert result.warnings  # the dropped triggers are reported too
    # The CLI path (a fresh, read-only-minded open) says the same and does not raise.
    again = verify_file(path)
    assert (again.ok, again.first_bad_seq) == (False, bad_seq)


def test_tampering_that_keeps_the_value_is_not_a_change(ledger: Ledger, path: Path) -> None:
    """SQLite's column affinity turns '101' back into 101: the stored value is unchanged."""
    fill(ledger, 3)
    hand_edit(path, "UPDATE rows SET tokens = '101' WHERE seq = 2")
    assert ledger.verify().ok


def test_dropped_triggers_warn_and_are_restored_on_open(ledger: Ledger, path: Path) -> None:
    fill(ledger, 3)
    hand_edit(path)
    result = verify_file(path)
    assert result.ok
    assert any("triggers are missing" in w for w in result.warnings)
    assert "warning: append-only triggers are missing" in str(result)
    with Ledger(path) as reopened:
        assert any("were restored" in n for n in reopened.notices)
        assert reopened.verify().warnings == ()


def test_appends_after_a_hand_edit_still_name_the_edit(ledger: Ledger, path: Path) -> None:
    fill(ledger, 4)
    hand_edit(path, "UPDATE rows SET tokens = 1 WHERE seq = 2")
    fill(ledger, 2)
    result = ledger.verify()
    assert result.first_bad_seq == 2 and result.rows_checked == 1


def test_files_that_are_not_ledgers_give_clear_errors(tmp_path: Path) -> None:
    garbage = tmp_path / "ledger.sqlite"
    garbage.write_bytes(b"this is not a database, someone overwrote it\n" * 100)
    with pytest.raises(LedgerError, match="not a usable SQLite ledger"):
        Ledger(garbage)
    result = verify_file(garbage)
    assert not result.ok and "not a usable SQLite ledger" in result.reason
    missing = verify_file(tmp_path / "nope.sqlite")
    assert not missing.ok and "no ledger at" in missing.reason
    assert not (tmp_path / "nope.sqlite").exists()

    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE rows (seq INTEGER PRIMARY KEY, note TEXT)")
    db.commit()
    db.close()
    with pytest.raises(LedgerError, match="lacks columns"):
        Ledger(other)
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    assert "has no ledger table" in verify_file(empty).reason


def test_dropped_table_is_reported_not_raised(ledger: Ledger, path: Path) -> None:
    fill(ledger, 2)
    hand_edit(path, "DROP TABLE rows")
    result = ledger.verify()
    assert not result.ok and "cannot read the ledger" in result.reason


def test_newer_schema_is_refused(ledger: Ledger, path: Path) -> None:
    hand_edit(path, "PRAGMA user_version = 99")
    with pytest.raises(LedgerError, match="newer loop-contract"):
        Ledger(path)


# -- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "extra", "words"),
    [
        ("coffee", {"payload": {}}, "unknown row kind"),
        ("dispatch", {"payload": {"role": "boss"}, "seat": "a", "family": "f"}, "'role'"),
        ("dispatch", {"payload": {"role": "judge"}}, "needs both seat and family"),
        ("outcome", {"payload": {"verdict": "meh"}, "seat": "a", "family": "f"}, "'verdict'"),
        (
            "score",
            {
                "payload": {"target": "b", "validity": -1, "call": "pass"},
                "seat": "a",
                "family": "f",
            },
            "'validity'",
        ),
        (
            "score",
            {"payload": {"target": "b", "validity": 1, "call": "?"}, "seat": "a", "family": "f"},
            "'call'",
        ),
        ("decision", {"payload": {"winner": "a", "outcomes": {"a": "win"}}}, "'outcomes'"),
        (
            "decision",
            {"payload": {"winner": "a", "outcomes": {}}, "seat": "b"},
            "must be the winner",
        ),
        ("event", {"payload": {"event": "party"}}, "'event'"),
        ("run_started", {"payload": {"when": object()}}, "not plain JSON"),
        ("run_started", {"payload": {"x": math.nan}}, "not plain JSON"),
        ("run_started", {"payload": {}, "tokens": -1}, "tokens"),
        ("run_started", {"payload": {}, "tokens": True}, "tokens"),
        ("run_started", {"payload": {}, "cost_usd": math.inf}, "cost_usd"),
        ("run_started", {"payload": {}, "cost_usd": "1.0"}, "cost_usd"),
        ("run_started", {"payload": {}, "seat": ""}, "seat"),
        ("run_started", {"payload": {}, "family": "\ud800"}, "not valid Unicode"),
    ],
)
def test_bad_entries_are_refused_and_nothing_is_written(
    ledger: Ledger, kind: str, extra: dict[str, Any], words: str
) -> None:
    with pytest.raises(LedgerError, match=words):
        ledger.append(kind, run_id="r1", contract_id=CID, **extra)
    assert ledger.count() == 0


def test_append_many_is_all_or_nothing(ledger: Ledger) -> None:
    good = Entry("run_started", "r1", CID, {})
    bad = Entry("event", "r1", CID, {"event": "nope"})
    with pytest.raises(LedgerError):
        ledger.append_many([good, bad])
    assert ledger.count() == 0
    rows = ledger.append_many([good, good])
    assert [r.seq for r in rows] == [1, 2] and ledger.verify().ok


def test_decision_seat_is_filled_from_the_winner(ledger: Ledger) -> None:
    row = ledger.append(
        "decision",
        run_id="r1",
        contract_id=CID,
        family="anthropic",
        payload={"winner": "claude", "outcomes": {"claude": "pass"}},
    )
    assert row.seat == "claude"


def test_record_event(ledger: Ledger) -> None:
    row = ledger.record_event(
        "budget_exhausted",
        run_id="r1",
        contract_id=CID,
        details={"budget": "usd", "limit": 5, "spent": 5.2},
    )
    assert row.kind == "event"
    assert row.data == {"event": "budget_exhausted", "budget": "usd", "limit": 5, "spent": 5.2}
    assert [r.seq for r in ledger.rows(kind="event")] == [1]


# -- queries ----------------------------------------------------------------------------------


def dispatch(
    ledger: Ledger,
    run_id: str,
    seat: str,
    *,
    tokens: int | None,
    cost: float | None,
    role: str = "candidate",
    family: str = "vendor",
) -> None:
    ledger.append(
        "dispatch",
        run_id=run_id,
        contract_id=CID,
        seat=seat,
        family=family,
        payload={"role": role, "attempt": 1},
        tokens=tokens,
        cost_usd=cost,
    )


def test_totals_sum_only_what_was_reported(ledger: Ledger) -> None:
    dispatch(ledger, "r1", "a", tokens=100, cost=0.1)
    dispatch(ledger, "r1", "b", tokens=250, cost=0.2)
    dispatch(ledger, "r2", "a", tokens=None, cost=0.5)
    dispatch(ledger, "r2", "b", tokens=40, cost=None)
    assert ledger.totals("r1") == Totals(tokens=350, cost_usd=math.fsum([0.1, 0.2]), dispatches=2)
    r2 = ledger.totals("r2")
    assert (r2.tokens, r2.cost_usd, r2.dispatches) == (None, None, 2)
    assert r2.as_payload() == {"tokens": NOT_REPORTED, "cost_usd": NOT_REPORTED}
    # A run with no dispatch at all (pull-request seats) did not report anything either.
    assert ledger.totals("r3") == Totals(None, None, 0)
    # Only one side unreported: the other side still sums.
    dispatch(ledger, "r4", "a", tokens=None, cost=1.0)
    dispatch(ledger, "r4", "b", tokens=None, cost=2.0)
    assert ledger.totals("r4").as_payload() == {"tokens": NOT_REPORTED, "cost_usd": 3.0}
    # upto_seq: the totals as of an earlier point in the chain.
    assert ledger.totals("r1", upto_seq=1) == Totals(100, 0.1, 1)


def score(
    ledger: Ledger, run_id: str, judge: str, family: str, target: str, validity: float, call: str
) -> None:
    ledger.append(
        "score",
        run_id=run_id,
        contract_id=CID,
        seat=judge,
        family=family,
        payload={"target": target, "validity": validity, "call": call},
    )


def decide(
    ledger: Ledger, run_id: str, winner: str | None, family: str | None, **outcomes: str
) -> None:
    ledger.append(
        "decision",
        run_id=run_id,
        contract_id=CID,
        seat=winner,
        family=family,
        payload={"winner": winner, "outcomes": outcomes},
    )


def outcome(ledger: Ledger, run_id: str, seat: str, family: str, verdict: str = "pass") -> None:
    ledger.append(
        "outcome",
        run_id=run_id,
        contract_id=CID,
        seat=seat,
        family=family,
        payload={"verdict": verdict, "exit_code": 0 if verdict == "pass" else 20},
    )


def test_win_rate_by_seat_and_family(ledger: Ledger) -> None:
    for run in ("r1", "r2", "r3"):
        outcome(ledger, run, "claude", "anthropic")
        outcome(ledger, run, "codex", "openai", "fail" if run == "r2" else "pass")
    outcome(ledger, "r3", "opus", "anthropic")
    outcome(ledger, "r4", "claude", "anthropic")  # undecided: does not count
    decide(ledger, "r1", "claude", "anthropic", claude="pass", codex="fail")
    decide(ledger, "r2", "claude", "anthropic", claude="pass", codex="fail")
    decide(ledger, "r3", "codex", "openai", claude="fail", codex="pass", opus="fail")
    assert ledger.win_rate(seat="claude") == WinRate(wins=2, runs=3)
    assert ledger.win_rate(seat="codex") == WinRate(wins=1, runs=3)
    assert ledger.win_rate(seat="opus").rate == 0.0
    assert ledger.win_rate(family="anthropic") == WinRate(wins=2, runs=3)
    assert ledger.win_rate(seat="nobody").rate is None
    # A later decision (a human gate overturning the bracket) replaces the earlier one.
    decide(ledger, "r2", None, None, claude="fail", codex="fail")
    assert ledger.win_rate(seat="claude") == WinRate(wins=1, runs=3)
    with pytest.raises(LedgerError, match="exactly one"):
        ledger.win_rate()


def test_family_agreement_for_calibration(ledger: Ledger) -> None:
    score(ledger, "r1", "gpt", "openai", "claude", 3, "pass")  # agrees
    score(ledger, "r1", "gpt", "openai", "gemini", 3, "pass")  # disagrees
    score(ledger, "r1", "opus", "anthropic", "gemini", 1, "fail")  # other family
    score(ledger, "r1", "gpt", "openai", "stranger", 1, "fail")  # not in the decision
    score(ledger, "r2", "gpt", "openai", "claude", 1, "fail")  # undecided run
    decide(ledger, "r1", "claude", "anthropic", claude="pass", gemini="fail")
    assert ledger.family_agreement("openai") == Agreement(agree=1, total=2)
    assert ledger.family_agreement("anthropic") == (1, 1)
    assert ledger.family_agreement("google").rate is None


# -- concurrency ------------------------------------------------------------------------------

WRITER = """
import sys
from pytest_loopcontract.contest.ledger import Ledger
path, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Ledger(path) as ledger:
    for i in range(n):
        ledger.append("dispatch", run_id=name, contract_id="c", seat=name, family="f",
                      payload={"role": "candidate", "attempt": i}, tokens=i, cost_usd=0.001)
"""


def test_processes_appending_at_once_keep_one_chain(ledger: Ledger, path: Path) -> None:
    fill(ledger, 1)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), f"w{k}", "150"],
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(3)
    ]
    # A reader verifying while they write sees a consistent snapshot every time.
    while any(proc.poll() is None for proc in writers):
        snapshot = ledger.verify()
        assert snapshot.ok, snapshot.reason
    for proc in writers:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    result = ledger.verify()
    assert result.ok and result.rows_checked == 451
    for k in range(3):
        attempts = [r.data["attempt"] for r in ledger.rows(run_id=f"w{k}")]
        assert attempts == list(range(150))


# -- run lock ---------------------------------------------------------------------------------

HOLDER = """
import sys
from pytest_loopcontract.contest.ledger import Ledger
with Ledger(sys.argv[1]) as ledger, ledger.acquire_run(sys.argv[2], sys.argv[3]):
    print("locked", flush=True)
    sys.stdin.readline()
"""


def start_holder(path: Path, contract_id: str, run_id: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), contract_id, run_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_run_lock_refuses_a_second_run_and_names_the_holder(ledger: Ledger, path: Path) -> None:
    holder = start_holder(path, CID, "run-A")
    try:
        with pytest.raises(RunBusy) as caught:
            ledger.acquire_run(CID, "run-B")
        busy = caught.value
        assert busy.holder is not None
        assert (busy.holder.run_id, busy.holder.pid) == ("run-A", holder.pid)
        assert "'run-A'" in str(busy) and f"pid {holder.pid}" in str(busy)
        assert f"contract {CID!r} is already being run" in str(busy)
        assert ledger.run_holder(CID) == busy.holder
        # Another contract is not blocked.
        with ledger.acquire_run("other-contract", "run-C") as lock:
            assert lock.held
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.communicate(timeout=30)
    assert ledger.run_holder(CID) is None
    with ledger.acquire_run(CID, "run-B") as lock:
        assert lock.recovered is None  # released cleanly: nothing to recover from
        assert ledger.run_holder(CID) == lock.holder
    assert not lock.held


def test_run_lock_recovers_from_a_dead_holder(ledger: Ledger, path: Path) -> None:
    holder = start_holder(path, CID, "run-dead")
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=30)  # reaps it and closes the pipes
    assert ledger.run_holder(CID) is None
    with ledger.acquire_run(CID, "run-next") as lock:
        assert lock.recovered is not None
        assert (lock.recovered.run_id, lock.recovered.pid) == ("run-dead", holder.pid)
        assert lock.recovered.alive() is False
        assert lock.holder.pid == os.getpid()


def test_run_lock_refuses_a_second_holder_in_the_same_process(ledger: Ledger) -> None:
    with ledger.acquire_run("weird/id: ünïcode", "r1"), pytest.raises(RunBusy, match="'r1'"):
        ledger.acquire_run("weird/id: ünïcode", "r2")
    with ledger.acquire_run("weird/id: ünïcode", "r2") as lock:
        assert lock.path.parent == ledger.lock_dir()
        assert lock.path.name.endswith(".lock") and "/" not in lock.path.name
