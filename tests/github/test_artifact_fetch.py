"""Publish fetches a verify run's artifacts itself: listed and size-checked before any download
(issue 32, point 4). Real PyGithub and requests over HTTP against the fake GitHub, whose
artifact download answers with a redirect to storage as GitHub's does."""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path

from pytest_loopcontract.github.artifact_fetch import MAX_ARTIFACT_BYTES, fetch_run_artifacts
from pytest_loopcontract.github.client import make_github
from testing.fake_github import FakeGitHub

GOOD = {"verdict.json": b"{}", "diff.patch": b"+x\n", "meta.json": b"{}"}


def zipped(entries: dict[str, bytes], *, link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        if link is not None:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_only_candidate_artifacts_within_the_limits_are_downloaded(tmp_path: Path) -> None:
    with FakeGitHub() as gh:
        gh.add_repo("octo", "calc")
        gh.add_workflow_run(77, head_sha="a" * 40, head_branch="loop-contract/calc/good")
        ids = {
            "good": gh.add_artifact(77, "candidate-11", GOOD),
            "other": gh.add_artifact(77, "coverage-report", {"x": b"y"}),
            "huge": gh.add_artifact_zip(77, "candidate-12", b"P" * (MAX_ARTIFACT_BYTES + 1)),
            "expired": gh.add_artifact(77, "candidate-13", GOOD, expired=True),
            "escape": gh.add_artifact_zip(77, "candidate-14", zipped({"../../x": b"x"})),
            "extra": gh.add_artifact_zip(77, "candidate-15", zipped({**GOOD, "run.sh": b"x"})),
            "link": gh.add_artifact_zip(77, "candidate-16", zipped({}, link="verdict.json")),
            "bomb": gh.add_artifact_zip(
                77, "candidate-17", zipped({"verdict.json": b"0" * (3 * 1024 * 1024)})
            ),
            "junk": gh.add_artifact_zip(77, "candidate-18", b"not a zip"),
        }
        repo = make_github("t", base_url=gh.base_url, lazy=True).get_repo("octo/calc")
        fetched = fetch_run_artifacts(repo, 77, tmp_path / "artifacts", token="t")
        downloads = {int(p.split("/")[-2]) for m, p in gh.requests if p.endswith("/zip")}
    assert fetched.taken == [11]
    assert sorted(p.name for p in (tmp_path / "artifacts").iterdir()) == ["candidate-11"]
    got = {p.name: p.read_bytes() for p in (tmp_path / "artifacts" / "candidate-11").iterdir()}
    assert got == GOOD
    # the listing alone refused these: not one byte of them was downloaded
    assert downloads.isdisjoint({ids["other"], ids["huge"], ids["expired"]})
    reasons = "\n".join(fetched.refused)
    assert "'coverage-report': not a candidate artifact" in reasons
    assert f"'candidate-12': {MAX_ARTIFACT_BYTES + 1} bytes, more than the limit" in reasons
    assert "'candidate-13': expired" in reasons
    assert "'candidate-14': unexpected entry '../../x'" in reasons
    assert "'candidate-15': unexpected entry 'run.sh'" in reasons
    assert "'candidate-16': verdict.json is not a regular file" in reasons
    assert "'candidate-17': verdict.json is larger than" in reasons
    assert "'candidate-18': not a zip archive" in reasons
    assert not (tmp_path / "x").exists()
