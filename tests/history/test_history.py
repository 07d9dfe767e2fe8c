"""The hash-chained history against real files, threads, processes and SIGKILL."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_loopcontract.chain import ZERO_HASH, digest
from pytest_loopcontract.history import History
from pytest_loopcontract.history.records import TORN_EVENT, parse_line, scan
from pytest_loopcontract.statedir import StateDir

PY = sys.executable


def lines_of(state: Path) -> list[bytes]:
    return StateDir(state).history.read_bytes().split(b"\n")[:-1]


def write_lines(state: Path, lines: list[bytes]) -> None:
    StateDir(state).history.write_bytes(b"".join(line + b"\n" for line in lines))


def filled(tmp_path: Path, n: int = 5) -> tuple[History, Path]:
    state = tmp_path / ".loop-contract"
    history = History(state)
    for i in range(n):
        history.append("tick", {"i": i})
    return history, state


def assert_contiguous(history: History) -> None:
    found = history.read()
    assert found.chain_breaks == []
    assert [r.seq for r in found.records] == list(range(1, len(found.records) + 1))


# --------------------------------------------------------------------------- basics


def test_first_append_creates_the_state_folder_and_starts_the_chain(tmp_path: Path) -> None:
    state = tmp_path / "deep" / ".loop-contract"
    history = History(state)
    assert history.read().records == []
    assert not state.exists(), "reading must not create the folder"

    record = history.append("loop_started", {"contract_id": "c1"})

    assert (state / ".gitignore").read_text().splitlines()[-1] == "*"
    assert record.seq == 1 and record.prev == ZERO_HASH
    raw = lines_of(state)[0]
    assert json.loads(raw)["data"] == {"contract_id": "c1"}
    assert record.digest == digest(raw)


def test_each_line_carries_the_hash_of_the_previous_line(tmp_path: Path) -> None:
    history, state = filled(tmp_path, 4)
    raws = lines_of(state)
    found = history.read()
    assert [r.line for r in found.records] == [1, 2, 3, 4]
    assert found.records[0].prev == ZERO_HASH
    for before, record in zip(raws, found.records[1:], strict=False):
        assert record.prev == digest(before)
    assert history.verify() == []
    assert history.last() is not None and history.last().seq == 4  # type: ignore[union-attr]


def test_records_are_compact_json_lines_with_the_agreed_keys(tmp_path: Path) -> None:
    _, state = filled(tmp_path, 1)
    obj = json.loads(lines_of(state)[0])
    assert set(obj) == {"seq", "ts", "mono", "boot", "kind", "data", "prev"}
    assert obj["ts"].endswith("Z")
    assert b" " not in lines_of(state)[0]


@pytest.mark.parametrize("data", [{"x": float("nan")}, {"x": float("inf")}, {"x": object()}])
def test_a_record_that_is_not_plain_json_is_refused_and_nothing_is_written(
    tmp_path: Path, data: dict[str, object]
) -> None:
    history, state = filled(tmp_path, 2)
    before = StateDir(state).history.read_bytes()
    with pytest.raises(ValueError, match="not plain JSON"):
        history.append("tick", data)
    assert StateDir(state).history.read_bytes() == before
    assert history.append("tick", {}).seq == 3


def test_a_failed_write_leaves_no_half_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history, state = filled(tmp_path, 2)
    before = StateDir(state).history.read_bytes()

    def no_space(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError, match="No space"):
        history.append("tick", {"i": 99})
    monkeypatch.undo()
    assert StateDir(state).history.read_bytes() == before
    assert history.append("tick", {}).seq == 3
    assert_contiguous(history)


def test_last_and_tail_read_only_the_end_even_for_long_lines(tmp_path: Path) -> None:
    history, state = filled(tmp_path, 3)
    big = history.append("tick", {"blob": "y" * 100_000})
    last, torn = history.tail()
    assert torn is None
    assert last is not None and last.seq == big.seq == 4 and last.digest == big.digest
    with open(StateDir(state).history, "ab") as fh:
        fh.write(b'{"seq":5,"ts":"' + b"z" * 70_000)
    last, torn = history.tail()
    assert last is not None and last.seq == 4
    assert torn is not None and torn.line == 5 and len(torn.data) > 70_000


# --------------------------------------------------------------------------- torn tails


def test_an_unterminated_last_line_is_reported_then_set_aside_on_append(tmp_path: Path) -> None:
    history, state = filled(tmp_path, 3)
    fragment = b'{"seq":4,"ts":"2026-01-01T00:00:00.000000Z","kind":"ti'
    with open(StateDir(state).history, "ab") as fh:
        fh.write(fragment)

    found = history.read()
    assert [r.seq for r in found.records] == [1, 2, 3]
    assert found.chain_breaks == []
    assert found.torn is not None
    assert (found.torn.line, found.torn.data) == (4, fragment)
    assert "torn last line 4" in found.torn.message

    record = history.append("tick", {"i": 3})

    side = state / "history.torn.4"
    assert side.read_bytes() == fragment
    found = history.read()
    assert found.torn is None and found.chain_breaks == []
    kinds = [(r.seq, r.kind) for r in found.records]
    assert kinds[-2:] == [(4, TORN_EVENT), (5, "tick")]
    repair = found.records[-2].data
    assert repair["line"] == 4 and repair["file"] == "history.torn.4"
    assert repair["bytes"] == len(fragment)
    assert record.seq == 5
    assert history.repairs and history.repairs[0][1] == side


def test_a_terminated_but_unparsable_last_line_is_torn_too(tmp_path: Path) -> None:
    history, state = filled(tmp_path, 3)
    with open(StateDir(state).history, "ab") as fh:
        fh.write(b"\x00\x00\x00garbage\n")
    found = history.read()
    assert found.torn is not None and found.torn.line == 4
    assert "not a record" in found.torn.reason
    assert found.chain_breaks == []
    history.append("tick", {})
    assert (state / "history.torn.4").read_bytes() == b"\x00\x00\x00garbage\n"
    assert_contiguous(history)


def test_a_torn_tail_is_repaired_inside_a_transaction_too(tmp_path: Path) -> None:
    history, state = filled(tmp_path, 2)
    with open(StateDir(state).history, "ab") as fh:
        fh.write(b'{"seq":3,')
    with history.transaction() as txn:
        assert txn.read.torn is not None
        record = txn.append("tick", {})
        assert txn.repaired is not None and txn.repaired.line == 3
        assert [r.kind for r in txn.records][-2:] == [TORN_EVENT, "tick"]
        assert txn.records[-1].line == 4 and record.line == 4
    assert_contiguous(history)


def test_a_file_that_is_only_a_fragment(tmp_path: Path) -> None:
    state = tmp_path / "s"
    state.mkdir()
    StateDir(state).history.write_bytes(b'{"seq":1,"ts')
    history = History(state)
    found = history.read()
    assert found.records == [] and found.torn is not None and found.torn.line == 1
    record = history.append("tick", {})
    assert record.seq == 2 and record.kind == "tick"
    assert (state / "history.torn.1").read_bytes() == b'{"seq":1,"ts'
    assert_contiguous(history)


def test_a_second_tear_at_the_same_line_gets_its_own_side_file(tmp_path: Path) -> None:
    history, state = filled(tmp_path, 2)
    (state / "history.torn.3").write_bytes(b"an older one")
    with open(StateDir(state).history, "ab") as fh:
        fh.write(b"{")
    history.append("tick", {})
    assert (state / "history.torn.3").read_bytes() == b"an older one"
    assert (state / "history.torn.3.1").read_bytes() == b"{"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    payloads=st.lists(
        st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=20), max_size=3),
        min_size=1,
        max_size=8,
    ),
    cut=st.floats(min_value=0, max_value=1),
)
def test_any_truncation_reads_as_a_prefix_plus_at_most_one_torn_line(
    tmp_path_factory: pytest.TempPathFactory, payloads: list[dict[str, object]], cut: float
) -> None:
    state = tmp_path_factory.mktemp("h")
    history = History(state, fsync=False)
    for payload in payloads:
        history.append("tick", payload)
    blob = StateDir(state).history.read_bytes()
    kept = blob[: int(len(blob) * cut)]
    StateDir(state).history.write_bytes(kept)

    found = scan(kept)
    complete = kept.count(b"\n")
    assert found.chain_breaks == []
    assert [r.data for r in found.records] == payloads[: len(found.records)]
    assert len(found.records) == complete
    assert (found.torn is not None) == (not kept.endswith(b"\n") and kept != b"")

    history.append("tick", {"after": True})
    assert_contiguous(history)
    assert history.read().records[-1].data == {"after": True}


junk = st.sampled_from([b"", b"garbage", b"{}", b'{"seq":1}', b"\x00\x00", b"[1,2]"])


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(0, 6),
    middle=st.lists(st.tuples(st.integers(0, 6), junk), max_size=2),
    trailing=st.lists(junk, max_size=2),
    fragment=st.binary(max_size=30).filter(lambda b: b"\n" not in b),
    chunk=st.sampled_from([1, 7, 64, 4096]),
)
def test_the_tail_reader_agrees_with_the_full_scan(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    n: int,
    middle: list[tuple[int, bytes]],
    trailing: list[bytes],
    fragment: bytes,
    chunk: int,
) -> None:
    """Appending reads only the end of the file; it must reach the same answer as reading all
    of it, whatever junk sits there, and whatever the read-back chunk size."""
    import pytest_loopcontract.history as module

    monkeypatch.setattr(module, "_TAIL_CHUNK", chunk)
    state = tmp_path_factory.mktemp("t")
    history = History(state, fsync=False)
    for i in range(n):
        history.append("tick", {"i": i})
    raws = lines_of(state) if n else []
    for at, bad in middle:
        raws.insert(min(at, len(raws)), bad)
    raws.extend(trailing)
    StateDir(state).history.write_bytes(b"".join(r + b"\n" for r in raws) + fragment)

    full = history.read()
    last, torn = history.tail()
    want_last = full.records[-1] if full.records else None
    assert (last and (last.seq, last.digest)) == (want_last and (want_last.seq, want_last.digest))
    got_torn = torn and (torn.line, torn.offset, torn.data)
    assert got_torn == (full.torn and (full.torn.line, full.torn.offset, full.torn.data))
    with history.transaction() as txn:
        expect = (txn.read.last_seq + 1, txn.read.tail_hash)
    record = history.append("tick", {"end": True})
    if full.torn is None:
        assert (record.seq, record.prev) == expect
    after = history.read()
    assert after.torn is None
    assert [b.line for b in after.chain_breaks] == [b.line for b in full.chain_breaks]


json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
odd_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    seq=st.integers(-2, 10**20),
    ts=odd_text,
    mono=st.none() | st.integers(-5, 5) | st.floats(allow_nan=False),
    boot=odd_text,
    kind=odd_text,
    data=json_value,
    prev=st.sampled_from(["a" * 64, "A" * 64, "0" * 63, "\\u0030" + "0" * 63]) | odd_text,
    ascii_only=st.booleans(),
    layout=st.sampled_from(["canonical", "spaced", "reordered", "extra"]),
)
def test_the_fast_line_parser_agrees_with_plain_json(
    seq: int,
    ts: str,
    mono: float | None,
    boot: str,
    kind: str,
    data: object,
    prev: str,
    ascii_only: bool,
    layout: str,
) -> None:
    """Lines of the shape this module writes take a faster parser; every line, of that shape
    or not, must come out exactly as the general JSON path reads it."""
    obj: dict[str, object] = {
        "seq": seq,
        "ts": ts,
        "mono": mono,
        "boot": boot,
        "kind": kind,
        "data": data,
        "prev": prev,
    }
    if layout == "reordered":
        obj = dict(reversed(list(obj.items())))
    elif layout == "extra":
        obj["more"] = 1
    separators = (", ", ": ") if layout == "spaced" else (",", ":")
    raw = json.dumps(obj, separators=separators, ensure_ascii=ascii_only).encode("utf-8")
    if b"\n" in raw:
        return
    expected = parse_line(raw, 1)
    found = scan(raw + b"\n")
    if isinstance(expected, str):
        assert found.records == [] and found.torn is not None
    else:
        assert found.records == [expected]
        assert [type(v) for v in found.records[0]] == [type(v) for v in expected]


# --------------------------------------------------------------------------- chain breaks


def test_an_edited_middle_line_is_named_by_its_line_number(tmp_path: Path) -> None:
    history, state = filled(tmp_path, 6)
    raws = lines_of(state)
    obj = json.loads(raws[2])
    obj["data"]["i"] = 1000  # still valid JSON, still a record
    raws[2] = json.dumps(obj, separators=(",", ":")).encode()
    write_lines(state, raws)

    breaks = history.verify()
    assert [(b.line, b.kind) for b in breaks] == [(3, "edited")]
    assert "line 3 (seq 3) was changed" in breaks[0].message
    assert [r.seq for r in history.read().records] == [1, 2, 3, 4, 5, 6]


def test_a_middle_line_that_is_no_longer_json_is_named(tmp_path: Path) -> None:
    history, state = filled(tmp_path, 5)
    raws = lines_of(state)
    raws[1] = raws[1][:-7]
    write_lines(state, raws)
    breaks = history.verify()
    assert [(b.line, b.kind) for b in breaks] == [(2, "unparsable")]
    assert history.read().torn is None


def test_a_removed_line_is_named(tmp_path: Path) -> None:
    history, state = filled(tmp_path, 5)
    raws = lines_of(state)
    del raws[2]
    write_lines(state, raws)
    breaks = history.verify()
    assert [(b.line, b.kind) for b in breaks] == [(3, "removed")]
    assert "seq jumps from 2 to 4" in breaks[0].message


def test_a_duplicated_line_and_a_cut_head_are_named(tmp_path: Path) -> None:
    history, state = filled(tmp_path, 4)
    raws = lines_of(state)
    write_lines(state, [*raws[:3], raws[2], raws[3]])
    assert history.verify()[0].line == 4 and history.verify()[0].kind == "reordered"
    write_lines(state, raws[1:])
    assert [(b.line, b.kind) for b in history.verify()] == [(1, "start")]


def test_appending_after_a_break_keeps_reading_and_keeps_the_break(tmp_path: Path) -> None:
    history, state = filled(tmp_path, 4)
    raws = lines_of(state)
    raws[1] = b"not json at all"
    write_lines(state, raws)
    record = history.append("tick", {})
    assert record.seq == 5
    breaks = history.verify()
    assert [(b.line, b.kind) for b in breaks] == [(2, "unparsable")]


# --------------------------------------------------------------------------- clocks


def test_a_clock_that_jumps_back_is_accepted_and_reported(tmp_path: Path) -> None:
    times = iter([1_800_000_000.0, 1_800_000_060.0, 1_799_996_400.0, 1_799_996_401.0])
    monos = iter([10.0, 70.0, 71.0, 72.0])
    history = History(tmp_path / "s", clock=lambda: next(times), monotonic=lambda: next(monos))
    for i in range(4):
        history.append("tick", {"i": i})

    found = history.read()
    assert found.chain_breaks == []
    assert [r.seq for r in found.records] == [1, 2, 3, 4]
    assert [(j.line, j.seq) for j in found.clock_jumps] == [(3, 3)]
    jump = found.clock_jumps[0]
    assert jump.seconds == pytest.approx(3660.0)
    assert "clock went back 3660.000 s" in jump.message
    assert found.records[2].instant().mono == 71.0


# --------------------------------------------------------------------------- concurrency


def test_transaction_sees_all_records_and_refuses_nested_append(tmp_path: Path) -> None:
    history, _ = filled(tmp_path, 3)
    with history.transaction() as txn:
        assert [r.seq for r in txn.records] == [1, 2, 3]
        txn.append("tick", {"i": 3})
        assert txn.last is not None and txn.last.seq == 4
        with pytest.raises(RuntimeError, match="already holds the history lock"):
            history.append("tick", {})
    assert_contiguous(history)


def test_threads_interleave_whole_records(tmp_path: Path) -> None:
    history = History(tmp_path / "s", fsync=False)

    def work(n: int) -> None:
        for i in range(40):
            History(tmp_path / "s", fsync=False).append("tick", {"t": n, "i": i})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    found = history.read()
    assert len(found.records) == 320
    assert_contiguous(history)
    for n in range(8):
        assert [r.data["i"] for r in found.records if r.data["t"] == n] == list(range(40))


WRITER = textwrap.dedent(
    """
    import sys
    from pytest_loopcontract.history import History
    history = History(sys.argv[1], fsync=sys.argv[3] == "1")
    print("ready", flush=True)
    n = int(sys.argv[2])
    i = 0
    while n < 0 or i < n:
        record = history.append("tick", {"i": i, "pad": "x" * (i % 64)})
        sys.stdout.write(f"{record.seq}\\n")
        sys.stdout.flush()
        i += 1
    """
)


def test_processes_interleave_whole_records(tmp_path: Path) -> None:
    state = tmp_path / "s"
    procs = [
        subprocess.Popen([PY, "-c", WRITER, str(state), "60", "0"], stdout=subprocess.PIPE)
        for _ in range(4)
    ]
    acked: list[int] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        acked.extend(int(x) for x in out.split()[1:])
    assert sorted(acked) == list(range(1, 241))
    assert_contiguous(History(state))


# --------------------------------------------------------------------------- the kill test


def _tear(path: Path, rng: random.Random) -> bytes:
    """What a power cut can leave: a prefix of a record, no newline."""
    line = b'{"seq":999,"ts":"2026-01-01T00:00:00.000000Z","kind":"tick","data":{"i":1}}'
    fragment = line[: rng.randrange(1, len(line))]
    with open(path, "ab") as fh:
        fh.write(fragment)
    return fragment


def test_kill_writers_at_random_points(tmp_path: Path) -> None:
    """SIGKILL a writer 200+ times: the history always reads, the chain always verifies, seqs
    stay contiguous, every acknowledged record is there and at most the one in flight is lost.
    Every eighth round also tears the tail by hand (a power cut) before the next writer."""
    state = tmp_path / ".loop-contract"
    path = StateDir(state).history
    history = History(state)
    rng = random.Random(20261129)
    rounds = 200
    hand_tears: list[bytes] = []
    acked_max = 0
    for round_no in range(rounds):
        proc = subprocess.Popen(
            [PY, "-c", WRITER, str(state), "-1", "1"], stdout=subprocess.PIPE, bufsize=0
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.03))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        acked = [int(x) for x in proc.stdout.read().split()]
        proc.stdout.close()
        acked_max = max([acked_max, *acked])

        found = history.read()  # must never raise
        assert found.chain_breaks == [], (round_no, found.chain_breaks)
        seqs = [r.seq for r in found.records]
        assert seqs == list(range(1, len(seqs) + 1)), round_no
        assert found.last_seq >= acked_max, "an acknowledged record was lost"
        in_flight = [r for r in found.records if r.seq > acked_max and r.kind == "tick"]
        assert len(in_flight) <= 1, "more than the record in flight"
        assert all(r.kind in ("tick", TORN_EVENT) for r in found.records)
        if found.torn is None and round_no % 8 == 7:
            hand_tears.append(_tear(path, rng))
        acked_max = max(acked_max, found.last_seq)

    final = history.append("tick", {"final": True})
    found = history.read()
    assert found.torn is None and found.chain_breaks == []
    assert final.seq == found.last_seq
    repairs = [r for r in found.records if r.kind == TORN_EVENT]
    assert len(repairs) >= len(hand_tears) > 0
    set_aside = {(state / r.data["file"]).read_bytes() for r in repairs}
    assert set(hand_tears) <= set_aside, "a torn tail was cut without its record"
    # A side file no record names can only be a copy left by a kill before the cut.
    assert {p.read_bytes() for p in state.glob("history.torn.*")} == set_aside


# --------------------------------------------------------------------------- helpers


def test_read_of_a_missing_folder_is_empty_and_creates_nothing(tmp_path: Path) -> None:
    history = History(tmp_path / "nope")
    found = history.read()
    assert found.records == [] and not found.exists
    assert history.last() is None and history.verify() == []
    assert not (tmp_path / "nope").exists()
