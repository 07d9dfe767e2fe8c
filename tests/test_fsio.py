"""fsio: durable writes, the strict JSON reader every untrusted document goes through, UTC time."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_loopcontract.fsio import (
    StrictJSONError,
    canonical_json,
    loads_strict,
    parse_utc,
    sync_file,
    utc_now,
    utc_stamp,
    write_all,
    write_json_atomic,
)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"a": NaN}', "NaN is not JSON"),
        ('{"a": -Infinity}', "-Infinity is not JSON"),
        ('{"a": 1e999}', "1e999 is out of range"),
        ('{"a": 1, "b": {"k": 1, "k": 2}}', "duplicate key 'k'"),
    ],
)
def test_strict_json_refuses_what_readers_disagree_on(text: str, why: str) -> None:
    json.loads(text)  # the default reader takes every one of these
    with pytest.raises(StrictJSONError, match=re.escape(why)):
        loads_strict(text)


def test_strict_json_reads_plain_json_and_reports_bad_syntax_as_value_error() -> None:
    assert loads_strict(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    with pytest.raises(ValueError) as caught:
        loads_strict("{not json")
    assert not isinstance(caught.value, StrictJSONError)


def test_canonical_json_is_one_spelling() -> None:
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"\\u00e9","b":1}'
    with pytest.raises(ValueError):
        canonical_json({"a": float("nan")})


def test_atomic_write_leaves_the_old_file_when_the_writer_is_killed(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    write_json_atomic(target, {"v": "old"})
    child = textwrap.dedent(
        """
        import os, sys
        import pytest_loopcontract.fsio as fsio
        real = os.replace
        def die(*args):  # killed between writing the temporary file and the rename
            os._exit(9)
        fsio.os.replace = die
        fsio.write_json_atomic(sys.argv[1], {"v": "new" * 1000})
        """
    )
    done = subprocess.run([sys.executable, "-c", child, str(target)], check=False)
    assert done.returncode == 9
    assert json.loads(target.read_text()) == {"v": "old"}


def test_a_write_left_to_sync_later_is_in_place_for_a_process_that_dies_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "doc.json"
    write_json_atomic(target, {"v": "old"})
    child = "import os, sys, pytest_loopcontract.fsio as f\n"
    child += "f.write_json_atomic(sys.argv[1], {'v': 'new'}, sync=False)\nos._exit(9)\n"
    done = subprocess.run([sys.executable, "-c", child, str(target)], check=False)
    assert done.returncode == 9
    assert json.loads(target.read_text()) == {"v": "new"}
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    sync_file(target)
    assert len(synced) == 2  # the file's data, then the folder's entry
    with pytest.raises(FileNotFoundError):
        sync_file(tmp_path / "missing.json")


def test_write_all_appends_every_byte(tmp_path: Path) -> None:
    path = tmp_path / "log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        write_all(fd, b"a" * 300_000, fsync=True)
        write_all(fd, b"b\n")
    finally:
        os.close(fd)
    assert path.read_bytes() == b"a" * 300_000 + b"b\n"


def test_utc_spellings_round_trip() -> None:
    assert utc_stamp(0) == "1970-01-01T00:00:00.000000Z"
    assert parse_utc(utc_stamp(1234.5)) == 1234.5
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", utc_now())
    assert parse_utc("2026-12-01T00:00:00") == parse_utc("2026-12-01T00:00:00+00:00")


def test_finite_json_turns_every_non_finite_float_into_null() -> None:
    """``status --json`` folds an edited history (``1e400`` is infinity) into strict JSON."""
    from pytest_loopcontract.fsio import finite_json

    value = {"a": float("inf"), "b": [1.5, float("nan"), {"c": -float("inf")}], "d": (2,)}
    assert finite_json(value) == {"a": None, "b": [1.5, None, {"c": None}], "d": [2]}
    json.dumps(finite_json(value), allow_nan=False)
