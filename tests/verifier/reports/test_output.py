"""``loop-contract verify --junit-xml/--sarif`` end to end: a real repository, a real baseline,
a real sandboxed run; the reports written by the launcher, valid, 0644, and not the
candidate's."""

from __future__ import annotations

import json
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

from testing.report_schemas import junit_errors, sarif_errors
from testing.verifier_project import FIXED, baseline_ok, cli, make_repo, no_traceback

SECRET_LINE = 'AWS_KEY = "AKIAQWERTYUIOPASDFGH"\n'


def _reports(tmp_path: Path) -> tuple[Path, Path]:
    out = tmp_path / "out"
    return out / "junit.xml", out / "findings.sarif"


def test_verify_writes_both_reports_from_the_verdict(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(FIXED + "\n\n" + SECRET_LINE, "utf-8")
    tests = repo / "tests/test_core.py"
    tests.write_text(tests.read_text("utf-8") + "\n\ndef test_extra():\n    pass\n", "utf-8")
    junit, sarif = _reports(tmp_path)
    result = cli(repo, "verify", "--junit-xml", str(junit), "--sarif", str(sarif))
    no_traceback(result)
    assert result.returncode == 25, result.stdout + result.stderr
    assert f"report written to {junit}" in result.stdout
    verdict = json.loads((repo / ".loop-contract/verdict.json").read_text("utf-8"))

    xml = junit.read_bytes()
    assert junit_errors(xml) == []
    root = ET.fromstring(xml)
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["loopcontract.verdict"] == verdict["verdict"] == "fail"
    assert props["loopcontract.exit_code"] == "25"
    assert props["loopcontract.contract_sha256"] == verdict["contract"]["sha256"]
    names = {
        c.get("name") for c in root.iter("testcase") if c.get("classname") == "tests.test_core"
    }
    assert names == {"test_double", "test_triple"}  # the pinned tests ran, not the edited file

    log = json.loads(sarif.read_text("utf-8"))
    assert sarif_errors(log) == []
    (run,) = log["runs"]
    places = {
        (
            r["ruleId"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"].get("region", {}).get("startLine"),
        )
        for r in run["results"]
    }
    secret_line = (FIXED + "\n\n").count("\n") + 1
    assert ("checkpoint/secret-in-diff", "src/mini/core.py", secret_line) in places
    assert ("tamper/protected_path_modified", "tests/test_core.py", None) in places
    assert run["properties"]["verdict"] == "fail"
    for path in (junit, sarif):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644


FORGE = """\
import pathlib


def test_forge():
    for path, text in {paths!r}.items():
        try:
            pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
            pathlib.Path(path).write_text(text)
        except OSError:
            pass  # the sandbox does not show the destination: the forgery cannot even land
"""


def test_a_candidate_writing_the_report_paths_does_not_decide_them(tmp_path: Path) -> None:
    """The cheat: an all-green JUnit file and an empty SARIF log where the reports will go,
    put there before the run and written again by the candidate's tests during it (the
    sandbox does not show the destination, so that attempt fails). The launcher writes its
    own after the run."""
    junit, sarif = _reports(tmp_path)
    green = (
        '<testsuites><testsuite name="t" tests="1"><testcase name="ok"/></testsuite></testsuites>'
    )
    forged = {str(junit): green, str(sarif): '{"version": "2.1.0", "runs": []}'}
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "tests/test_forge.py").write_text(FORGE.format(paths=forged), "utf-8")
    # the agent, outside any sandbox, may also have put them there before the run
    for path, text in forged.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, "utf-8")
    result = cli(repo, "verify", "--junit-xml", str(junit), "--sarif", str(sarif))
    no_traceback(result)
    assert result.returncode == 20, result.stdout + result.stderr
    root = ET.fromstring(junit.read_bytes())
    failed = [c for c in root.iter("testcase") if c.find("failure") is not None]
    assert "test_triple" in {c.get("name") for c in failed}
    assert json.loads(sarif.read_text("utf-8"))["runs"][0]["properties"]["verdict"] == "fail"


def test_a_folder_as_report_path_is_refused_before_the_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    (tmp_path / "out").mkdir()
    result = cli(repo, "verify", "--sarif", str(tmp_path / "out"))
    no_traceback(result)
    assert result.returncode == 2
    assert "it is a folder; name a file" in result.stderr
    assert not (repo / ".loop-contract/verdict.json").exists()
