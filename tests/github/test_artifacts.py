"""The verify artifacts as the privileged publish job sees them: untrusted files on disk.

Each test builds a real folder (files, links, FIFOs, sparse oversized files) the way a hostile
verify run could upload it, and checks that the reader refuses it with a sentence that says
why, without following a link, reading past a limit, hanging, or letting one candidate's
problem touch another's.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_loopcontract.github.artifacts import (
    DIFF_FILE,
    MAX_CANDIDATES,
    MAX_DIFF_BYTES,
    MAX_META_BYTES,
    MAX_VERDICT_BYTES,
    META_FILE,
    VERDICT_FILE,
    ArtifactCheck,
    candidate_dirname,
    check_artifacts,
    verdict_problems,
    write_artifact,
)
from pytest_loopcontract.verdict import validate_verdict
from testing.verdicts import failing_record, passing_verdict

SHA_A = "a" * 40
SHA_B = "b" * 40
SHA_C = "c" * 40
DIFF = "diff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-a\n+b\n"


def verdict(commit: str = SHA_A, **overrides: Any) -> dict[str, Any]:
    """A schema-valid passing isolated verdict measured on ``commit``."""
    return passing_verdict(commit=commit, **overrides)


def artifact(
    root: Path,
    pr: int,
    sha: str = SHA_A,
    *,
    doc: Any = None,
    diff: bytes = DIFF.encode(),
    meta: Any = None,
) -> Path:
    """Lay out ``root/candidate-<pr>`` by hand (no validation), as a hostile run could."""
    folder = root / candidate_dirname(pr)
    folder.mkdir(parents=True, exist_ok=True)
    body = verdict(sha) if doc is None else doc
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    (folder / VERDICT_FILE).write_bytes(raw)
    (folder / DIFF_FILE).write_bytes(diff)
    meta_doc = {"pr": pr, "head_sha": sha} if meta is None else meta
    raw_meta = meta_doc if isinstance(meta_doc, bytes) else json.dumps(meta_doc).encode()
    (folder / META_FILE).write_bytes(raw_meta)
    return folder


def only(checks: dict[int, ArtifactCheck], pr: int) -> ArtifactCheck:
    assert set(checks) >= {pr}
    return checks[pr]


def rejected(check: ArtifactCheck, *needles: str) -> str:
    """Assert the check was refused, with every needle in its problems; the joined text."""
    assert not check.ok
    assert check.verdict is None and check.diff is None
    text = " | ".join(check.problems)
    for needle in needles:
        assert needle in text, text
    return text


def test_the_fixture_verdict_is_schema_valid() -> None:
    assert validate_verdict(verdict()) == []


# --------------------------------------------------------------------------- the good path


def test_written_artifact_reads_back_whole(tmp_path: Path) -> None:
    doc = verdict(SHA_A)
    target = write_artifact(tmp_path, pr=7, head_sha=SHA_A, verdict=doc, diff=DIFF)
    assert target == tmp_path / "candidate-7"
    assert sorted(p.name for p in target.iterdir()) == [DIFF_FILE, META_FILE, VERDICT_FILE]
    assert json.loads((target / META_FILE).read_text()) == {"pr": 7, "head_sha": SHA_A}

    check = only(check_artifacts(tmp_path, expected={7: SHA_A}), 7)
    assert check.ok and check.problems == []
    assert check.verdict == doc
    assert check.diff == DIFF


def test_every_expected_candidate_gets_exactly_one_entry(tmp_path: Path) -> None:
    write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=verdict(SHA_A), diff="")
    write_artifact(tmp_path, pr=2, head_sha=SHA_B, verdict=verdict(SHA_B), diff=DIFF)
    checks = check_artifacts(tmp_path, expected={1: SHA_A, 2: SHA_B, 3: SHA_C})
    assert sorted(checks) == [1, 2, 3]
    assert checks[1].ok and checks[1].diff == ""
    assert checks[2].ok
    rejected(checks[3], "candidate-3/ is missing")


def test_upper_case_sha_from_the_caller_is_normalised(tmp_path: Path) -> None:
    write_artifact(tmp_path, pr=4, head_sha=SHA_A, verdict=verdict(SHA_A), diff=DIFF)
    assert check_artifacts(tmp_path, expected={4: SHA_A.upper()})[4].ok


def test_a_bad_candidate_does_not_affect_a_good_one(tmp_path: Path) -> None:
    write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=verdict(SHA_A), diff=DIFF)
    artifact(tmp_path, 2, SHA_B, doc=b"{not json")
    checks = check_artifacts(tmp_path, expected={1: SHA_A, 2: SHA_B})
    assert checks[1].ok
    rejected(checks[2], "candidate-2/verdict.json is not JSON")


def test_invalid_utf8_in_the_diff_is_replaced_not_fatal(tmp_path: Path) -> None:
    artifact(tmp_path, 5, diff=b"+caf\xe9\n")
    check = check_artifacts(tmp_path, expected={5: SHA_A})[5]
    assert check.ok and check.diff == "+caf\ufffd\n"


# --------------------------------------------------------------------------- the folder itself


def test_no_artifact_folder_rejects_every_candidate(tmp_path: Path) -> None:
    checks = check_artifacts(tmp_path / "nothing", expected={1: SHA_A, 2: SHA_B})
    for pr in (1, 2):
        rejected(checks[pr], "no artifacts were downloaded", "does not exist")


def test_artifact_folder_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write_artifact(real, pr=1, head_sha=SHA_A, verdict=verdict(SHA_A), diff=DIFF)
    (tmp_path / "link").symlink_to(real)
    check = check_artifacts(tmp_path / "link", expected={1: SHA_A})[1]
    rejected(check, "artifact folder", "is a symbolic link")


def test_artifact_folder_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    rejected(check_artifacts(tmp_path / "file", expected={1: SHA_A})[1], "is not a folder")


def test_more_than_the_candidate_limit_of_entries_reads_nothing(tmp_path: Path) -> None:
    write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=verdict(SHA_A), diff=DIFF)
    for n in range(2, MAX_CANDIDATES + 2):
        (tmp_path / candidate_dirname(n)).mkdir()
    assert len(list(tmp_path.iterdir())) == MAX_CANDIDATES + 1
    text = rejected(check_artifacts(tmp_path, expected={1: SHA_A})[1], "too many candidates")
    assert f"more than {MAX_CANDIDATES} entries" in text


def test_exactly_the_candidate_limit_of_entries_is_read(tmp_path: Path) -> None:
    write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=verdict(SHA_A), diff=DIFF)
    for n in range(2, MAX_CANDIDATES + 1):
        (tmp_path / candidate_dirname(n)).mkdir()
    assert len(list(tmp_path.iterdir())) == MAX_CANDIDATES
    assert check_artifacts(tmp_path, expected={1: SHA_A})[1].ok


def test_a_contest_over_the_candidate_limit_is_refused(tmp_path: Path) -> None:
    expected = {n: SHA_A for n in range(1, MAX_CANDIDATES + 2)}
    checks = check_artifacts(tmp_path, expected=expected)
    assert len(checks) == MAX_CANDIDATES + 1
    rejected(checks[1], f"more than the limit of {MAX_CANDIDATES}")


def test_entries_of_no_candidate_are_logged_and_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=verdict(SHA_A), diff=DIFF)
    artifact(tmp_path, 99, SHA_B)  # a pull request that is not (or no longer) a candidate
    (tmp_path / "evil\x1b[2J.txt").write_text("x")
    with caplog.at_level(logging.WARNING, logger="loopcontract.github"):
        checks = check_artifacts(tmp_path, expected={1: SHA_A})
    assert list(checks) == [1] and checks[1].ok
    logged = caplog.text
    assert "'candidate-99'" in logged
    assert "\\x1b" in logged and "\x1b" not in logged  # the name is quoted inert


@pytest.mark.parametrize("sha", ["a" * 39, "g" * 40, "", 7])
def test_expected_head_shas_must_be_full_hex(tmp_path: Path, sha: Any) -> None:
    with pytest.raises(ValueError, match="40 hex digits"):
        check_artifacts(tmp_path, expected={1: sha})


@pytest.mark.parametrize("pr", [0, -3, True, "7"])
def test_expected_pull_request_numbers_must_be_positive_ints(tmp_path: Path, pr: Any) -> None:
    with pytest.raises(ValueError, match="positive int"):
        check_artifacts(tmp_path, expected={pr: SHA_A})


# --------------------------------------------------------------------------- links and file types


def test_candidate_folder_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    good = write_artifact(elsewhere, pr=3, head_sha=SHA_A, verdict=verdict(SHA_A), diff=DIFF)
    root = tmp_path / "root"
    root.mkdir()
    (root / "candidate-3").symlink_to(good)
    rejected(check_artifacts(root, expected={3: SHA_A})[3], "candidate-3/ is a symbolic link")


def test_candidate_entry_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "candidate-3").write_text("{}")
    rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "candidate-3/ is not a folder")


@pytest.mark.parametrize("name", [VERDICT_FILE, DIFF_FILE, META_FILE])
def test_a_linked_file_is_never_followed(tmp_path: Path, name: str) -> None:
    folder = artifact(tmp_path / "art", 3)
    target = tmp_path / "outside"
    target.write_bytes((folder / name).read_bytes())  # same content: only the link is wrong
    (folder / name).unlink()
    (folder / name).symlink_to(target)
    check = check_artifacts(tmp_path / "art", expected={3: SHA_A})[3]
    rejected(check, f"candidate-3/{name} is a symbolic link")


def test_a_link_to_a_secret_is_refused_without_reading_it(tmp_path: Path) -> None:
    folder = artifact(tmp_path, 3)
    (folder / VERDICT_FILE).unlink()
    secret = tmp_path.parent / f"{tmp_path.name}-secret.json"
    secret.write_text(json.dumps(verdict(SHA_A) | {"nonce": "SECRET-VALUE"}))
    (folder / VERDICT_FILE).symlink_to(secret)
    text = rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "symbolic link")
    assert "SECRET" not in text


@pytest.mark.parametrize("name", [VERDICT_FILE, DIFF_FILE, META_FILE])
def test_a_missing_file_is_named(tmp_path: Path, name: str) -> None:
    folder = artifact(tmp_path, 3)
    (folder / name).unlink()
    rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], f"candidate-3/{name} is missing")


def test_a_folder_in_place_of_a_file_is_refused(tmp_path: Path) -> None:
    folder = artifact(tmp_path, 3)
    (folder / VERDICT_FILE).unlink()
    (folder / VERDICT_FILE).mkdir()
    text = rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "not a regular file")
    assert "candidate-3/verdict.json" in text


def test_a_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    folder = artifact(tmp_path, 3)
    (folder / DIFF_FILE).unlink()
    os.mkfifo(folder / DIFF_FILE)
    rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "diff.patch is not a regular file")


def test_an_extra_file_is_refused_by_name(tmp_path: Path) -> None:
    folder = artifact(tmp_path, 3)
    (folder / "verdict.json.orig").write_text("{}")
    (folder / "sub").mkdir()
    text = rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "unexpected entry")
    assert "'verdict.json.orig'" in text and "'sub'" in text


def test_a_flood_of_extra_files_is_summarised(tmp_path: Path) -> None:
    folder = artifact(tmp_path, 3)
    for n in range(50):
        (folder / f"junk-{n}").write_text("")
    check = check_artifacts(tmp_path, expected={3: SHA_A})[3]
    text = rejected(check, "more unexpected entries than are listed here")
    assert len(check.problems) <= 10
    assert len(text) < 2000


# --------------------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    ("name", "limit"),
    [(VERDICT_FILE, MAX_VERDICT_BYTES), (DIFF_FILE, MAX_DIFF_BYTES), (META_FILE, MAX_META_BYTES)],
)
def test_a_file_one_byte_over_its_limit_is_oversized(tmp_path: Path, name: str, limit: int) -> None:
    folder = artifact(tmp_path, 3)
    with (folder / name).open("r+b") as fh:
        fh.truncate(limit + 1)  # sparse: the size is real, the disk use is not
    text = rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "oversized")
    assert f"candidate-3/{name} is oversized: {limit + 1} bytes, the limit is {limit}" in text


def test_a_diff_exactly_at_its_limit_is_accepted(tmp_path: Path) -> None:
    body = b"+" + b"x" * (MAX_DIFF_BYTES - 2) + b"\n"
    artifact(tmp_path, 3, diff=body)
    check = check_artifacts(tmp_path, expected={3: SHA_A})[3]
    assert check.ok and check.diff is not None and len(check.diff) == MAX_DIFF_BYTES


def test_a_huge_sparse_verdict_is_refused_from_its_size_alone(tmp_path: Path) -> None:
    folder = artifact(tmp_path, 3)
    with (folder / VERDICT_FILE).open("r+b") as fh:
        fh.truncate(64 * 1024**3)  # 64 GiB: reading it would exhaust memory
    rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "oversized: 68719476736 bytes")


# --------------------------------------------------------------------------- JSON and schema


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b"", "is not JSON"),
        (b"{not json", "is not JSON"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b'{"a": NaN}', "NaN is not JSON"),
        (b'{"a": Infinity}', "Infinity is not JSON"),
        (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"[]", "schema-invalid: not a JSON object"),
        (b'"pass"', "schema-invalid: not a JSON object"),
        (b"{}", "schema-invalid"),
    ],
)
def test_a_verdict_that_is_not_an_acceptable_json_object(
    tmp_path: Path, raw: bytes, needle: str
) -> None:
    artifact(tmp_path, 3, doc=raw)
    text = rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], needle)
    assert "candidate-3/verdict.json" in text


def test_schema_errors_are_named_and_capped(tmp_path: Path) -> None:
    doc = verdict(SHA_A)
    for key in ("nonce", "tests", "summary", "loop", "timing"):
        del doc[key]
    artifact(tmp_path, 3, doc=doc)
    text = rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "schema-invalid")
    assert "'nonce' is a required property" in text
    assert "(and 2 more)" in text


def test_a_schema_error_quoting_a_huge_value_stays_short(tmp_path: Path) -> None:
    artifact(tmp_path, 3, doc=verdict(SHA_A, verdict="X" * 500_000))
    check = check_artifacts(tmp_path, expected={3: SHA_A})[3]
    rejected(check, "schema-invalid")
    assert sum(map(len, check.problems)) < 2000


def test_an_in_process_verdict_cannot_enter_a_contest(tmp_path: Path) -> None:
    artifact(tmp_path, 3, doc=verdict(SHA_A, trust="in-process"))
    rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "trust 'in-process'", "isolated")


def test_a_verdict_measured_on_another_commit_is_refused(tmp_path: Path) -> None:
    artifact(tmp_path, 3, SHA_A, doc=verdict(SHA_B))
    text = rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "measured commit")
    assert SHA_B in text and SHA_A in text


def test_a_verdict_without_a_commit_is_refused(tmp_path: Path) -> None:
    doc = verdict(SHA_A)
    doc["environment"]["commit"] = None
    artifact(tmp_path, 3, doc=doc)
    rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "measured commit 'None'")


def test_a_verdict_of_a_modified_work_tree_is_refused(tmp_path: Path) -> None:
    doc = verdict(SHA_A)
    doc["environment"]["dirty"] = True
    artifact(tmp_path, 3, doc=doc)
    rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "modified work tree")


# --------------------------------------------------------------------------- meta.json claims


def test_meta_claiming_another_head_sha_is_refused(tmp_path: Path) -> None:
    # The whole artifact is consistent for SHA_B; the API says the head is SHA_A (a push
    # after the run, or a forged artifact): it must not stand for the current head.
    artifact(tmp_path, 3, SHA_B)
    text = rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "claims head SHA")
    assert f"claims head SHA {SHA_B}, but the API says the head of #3 is {SHA_A}" in text


def test_meta_claiming_another_pull_request_is_refused(tmp_path: Path) -> None:
    artifact(tmp_path, 3, meta={"pr": 4, "head_sha": SHA_A})
    rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "claims pull request #4, not #3")


@pytest.mark.parametrize(
    "meta",
    [
        {"pr": 3},
        {"pr": 3, "head_sha": SHA_A, "trusted": True},
        {"pr": "3", "head_sha": SHA_A},
        {"pr": True, "head_sha": SHA_A},
        {"pr": 3, "head_sha": SHA_A.upper()},
        {"pr": 3, "head_sha": SHA_A[:12]},
        [3, SHA_A],
    ],
)
def test_meta_of_the_wrong_shape_is_schema_invalid(tmp_path: Path, meta: Any) -> None:
    artifact(tmp_path, 3, meta=meta)
    rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "meta.json is schema-invalid")


def test_meta_that_is_not_json_is_refused(tmp_path: Path) -> None:
    artifact(tmp_path, 3, meta=b"pr=3")
    rejected(check_artifacts(tmp_path, expected={3: SHA_A})[3], "meta.json is not JSON")


def test_all_problems_of_one_artifact_are_reported_together(tmp_path: Path) -> None:
    folder = artifact(tmp_path, 3, SHA_B, doc=verdict(SHA_B, trust="in-process"))
    (folder / DIFF_FILE).unlink()
    (folder / "extra").write_text("")
    check = check_artifacts(tmp_path, expected={3: SHA_A})[3]
    rejected(check, "unexpected entry", "diff.patch is missing", "claims head SHA", "in-process")


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=512), meta=st.binary(max_size=256))
def test_arbitrary_bytes_never_crash_the_reader(tmp_path: Path, raw: bytes, meta: bytes) -> None:
    root = tmp_path / "fuzz"
    artifact(root, 3, doc=raw, meta=meta)
    check = check_artifacts(root, expected={3: SHA_A})[3]
    assert not check.ok and check.problems
    assert all(isinstance(p, str) and p for p in check.problems)


# --------------------------------------------------------------------------- write_artifact


def test_write_refuses_what_the_reader_would_refuse(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="schema-invalid"):
        write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict={"verdict": "pass"}, diff="")
    with pytest.raises(ValueError, match="measured commit"):
        write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=verdict(SHA_B), diff="")
    with pytest.raises(ValueError, match="isolated"):
        doc = verdict(SHA_A, trust="in-process")
        write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=doc, diff="")
    assert not (tmp_path / "candidate-1").exists()


@pytest.mark.parametrize(("pr", "sha"), [(0, SHA_A), (True, SHA_A), (1, "abc"), (1, SHA_A.upper())])
def test_write_refuses_a_bad_number_or_sha(tmp_path: Path, pr: Any, sha: str) -> None:
    with pytest.raises(ValueError):
        write_artifact(tmp_path, pr=pr, head_sha=sha, verdict=verdict(sha), diff="")


def test_write_refuses_an_oversized_verdict(tmp_path: Path) -> None:
    doc = verdict(SHA_A)
    failing_record(doc)["message"] = "x" * MAX_VERDICT_BYTES
    with pytest.raises(ValueError, match="limit is"):
        write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=doc, diff="")


def test_write_refuses_a_folder_holding_other_entries(tmp_path: Path) -> None:
    (tmp_path / "candidate-1").mkdir()
    (tmp_path / "candidate-1" / "stale.txt").write_text("")
    with pytest.raises(ValueError, match="other entries"):
        write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=verdict(SHA_A), diff="")


def test_write_overwrites_its_own_previous_artifact(tmp_path: Path) -> None:
    write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=verdict(SHA_A), diff="old")
    write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=verdict(SHA_A), diff="new")
    assert check_artifacts(tmp_path, expected={1: SHA_A})[1].diff == "new"


def test_a_long_diff_is_cut_on_a_character_boundary_and_still_accepted(tmp_path: Path) -> None:
    diff = "+" + "é" * MAX_DIFF_BYTES  # two bytes per character: about twice the limit
    target = write_artifact(tmp_path, pr=1, head_sha=SHA_A, verdict=verdict(SHA_A), diff=diff)
    raw = (target / DIFF_FILE).read_bytes()
    assert len(raw) <= MAX_DIFF_BYTES
    text = raw.decode("utf-8")  # strict: no character was split
    assert text.endswith(f"diff cut at {MAX_DIFF_BYTES} bytes of {len(diff.encode())}\n")
    check = check_artifacts(tmp_path, expected={1: SHA_A})[1]
    assert check.ok and check.diff == text


def test_verdict_problems_does_not_mutate_its_input() -> None:
    doc = verdict(SHA_A)
    before = copy.deepcopy(doc)
    assert verdict_problems(doc, SHA_A) == []
    assert doc == before
