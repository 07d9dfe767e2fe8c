"""Hidden acceptance tests (``dod[].hidden``) through real ``loop-contract baseline``/``verify``.

A candidate that fits only the visible test passes a contract without hidden tests and fails
one with them; an honest fix passes both. The hidden file's text never reaches the repository,
``baseline.json``, the verdict, the next turn's prompt or a judge packet. Bad input (a missing
path or ref, a path inside the repository, a hidden file changed after the baseline) is a
clear error with its line in the contract, never a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contest.packets import CandidateView, JudgeBrief, build_packet
from pytest_loopcontract.contest.panel import task_of
from pytest_loopcontract.contest.prompting import retry_notes
from pytest_loopcontract.contest.standing import gate_summary
from pytest_loopcontract.contract.model import load_contract
from pytest_loopcontract.loop.prompt import build_prompt
from pytest_loopcontract.verdict_outcomes import verdict_records
from pytest_loopcontract.verifier.hidden import WITHHELD, HiddenFile, scrub_quotes
from pytest_loopcontract.verifier.snapshot import snapshot_worktree
from pytest_loopcontract.workspace import diff_text
from testing import reward_project
from testing.repos import git, run_cli
from testing.reward_project import CONTRACT, HONEST, baseline, reset, verify

VISIBLE = "from calc.core import add\n\n\ndef test_add():\n    assert add(20, 22) == 42\n"
# A marker no visible file holds: finding it anywhere outside the hidden place is a leak.
SECRET = "SECRET_MARKER_7f3a"
HIDDEN = f"""\
from calc.core import add


def test_add_more():
    # {SECRET}
    assert add(3, 4) == 7
    assert add(-5, 105) == 100
"""

# Fits the visible test only: no branch on its input, so no reward rule sees it, and the
# visible test's twins (43, a fresh object, a raise) fail, so the outcome checks see nothing either.
VISIBLE_ONLY = "def add(a, b):\n    return 42\n"


def make_project(root: Path, hidden_block: str) -> Path:
    """The calc project with only the visible test, its DoD item extended by ``hidden_block``;
    no baseline yet."""
    return reward_project.make_project(root, hidden_block, VISIBLE, take_baseline=False)


def hidden_file(folder: Path, text: str = HIDDEN, name: str = "test_hidden_add.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, "utf-8")
    return path


def dod_tests(verdict: dict[str, Any]) -> dict[str, str]:
    return {
        n: o
        for item in verdict["dod"]
        for n, o in ((t["nodeid"], t["outcome"]) for t in item["tests"])
    }


def repository_text(root: Path) -> str:
    """Every file under the repository (work tree, state folder, git objects unpacked)."""
    parts = []
    for path in root.rglob("*"):
        if path.is_file() and ".git" not in path.relative_to(root).parts:
            parts.append(path.read_bytes().decode("utf-8", "replace"))
    objects = git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    for oid in objects.split():
        if git(root, "cat-file", "-t", oid).strip() == "blob":
            parts.append(git(root, "cat-file", "-p", oid))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def hidden_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hidden")
    source = hidden_file(base / "outside")
    root = make_project(base / "repo", f"    hidden: [{json.dumps(str(source))}]\n")
    baseline(root)
    return root


@pytest.fixture
def repo(hidden_project: Path) -> Iterator[Path]:
    yield hidden_project
    reset(hidden_project)


HIDDEN_ID = "tests/test_hidden_add.py::test_add_more"


def test_without_hidden_tests_the_visible_only_fix_passes(tmp_path: Path) -> None:
    """The cheat the hidden test exists for: nothing else catches it."""
    root = make_project(tmp_path / "repo", "")
    baseline(root)
    (root / "src/calc/core.py").write_text(VISIBLE_ONLY, "utf-8")
    code, verdict = verify(root)
    assert code == 0, verdict["reasons"]


def test_visible_only_fix_fails_the_hidden_test(repo: Path) -> None:
    (repo / "src/calc/core.py").write_text(VISIBLE_ONLY, "utf-8")
    code, verdict = verify(repo)
    assert code == 20, verdict["reasons"]
    assert dod_tests(verdict) == {"tests/test_core.py::test_add": "passed", HIDDEN_ID: "failed"}
    (entry,) = [t for t in verdict_records(verdict) if t["nodeid"] == HIDDEN_ID]
    assert entry["hidden"] is True and "withheld" in entry["message"]
    assert HIDDEN_ID in verdict["baseline"]["fail_to_pass"]
    text = json.dumps(verdict)
    assert SECRET not in text and "add(3, 4)" not in text and "add(-5, 105)" not in text
    assert SECRET not in repository_text(repo)

    contract = load_contract(repo / "loopcontract.yml")
    prompt = build_prompt(contract, iteration=2, verdict=verdict)
    assert SECRET not in prompt and "test_hidden_add" not in prompt and "add(3, 4)" not in prompt
    assert "and 1 hidden acceptance test\n" in prompt
    assert not [n for n in retry_notes(verdict) if "test_hidden_add" in n]

    tree = snapshot_worktree(repo)
    view = CandidateView(
        seat="alpha",
        family="vendor-a",
        diff=diff_text(repo, git(repo, "rev-parse", "HEAD^{tree}").strip(), tree, context=3),
        gates=gate_summary(verdict),
        tests=dict(verdict["summary"]),
    )
    packet, _ = build_packet(
        JudgeBrief(
            run_id="r1",
            judge_seat="beta",
            judge_family="vendor-b",
            task=task_of(contract),
            candidates=[view],
        )
    )
    assert SECRET not in json.dumps(packet) and "add(3, 4)" not in json.dumps(packet)


def test_planting_a_passing_file_at_the_hidden_place_gains_nothing(repo: Path) -> None:
    """A candidate that guesses where the hidden test goes and puts a trivial one there: the
    verifier's copy replaces it for the run."""
    (repo / "src/calc/core.py").write_text(VISIBLE_ONLY, "utf-8")
    (repo / "tests/test_hidden_add.py").write_text("def test_add_more():\n    pass\n", "utf-8")
    code, verdict = verify(repo)
    assert code in (20, 25), verdict["reasons"]
    assert dod_tests(verdict)[HIDDEN_ID] == "failed"


def test_honest_fix_passes_with_the_hidden_test_counted(repo: Path) -> None:
    (repo / "src/calc/core.py").write_text(HONEST, "utf-8")
    code, verdict = verify(repo)
    assert code == 0, verdict["reasons"]
    assert dod_tests(verdict) == {"tests/test_core.py::test_add": "passed", HIDDEN_ID: "passed"}
    twins = {c["id"]: c for c in verdict["tamper"]["checks"]}["twins"]
    assert twins["status"] == "ran" and HIDDEN_ID in twins["tests"], twins
    assert not (repo / "tests/test_hidden_add.py").exists()
    record = json.loads((repo / ".loop-contract/baseline.json").read_text("utf-8"))
    (kept,) = record["extra"]["hidden"]
    assert kept["nodeids"] == [HIDDEN_ID] and len(kept["sha256"]) == 64
    assert SECRET not in json.dumps(record)


def test_a_hidden_file_changed_after_the_baseline_is_refused(tmp_path: Path) -> None:
    source = hidden_file(tmp_path / "outside")
    root = make_project(tmp_path / "repo", f"    hidden: [{json.dumps(str(source))}]\n")
    baseline(root)
    (root / "src/calc/core.py").write_text(HONEST, "utf-8")
    source.write_text(HIDDEN.replace("== 7", "== 8"), "utf-8")
    result = run_cli(root, "verify")
    assert result.returncode == 27, result.stdout + result.stderr
    assert "changed since the baseline" in result.stderr and "Traceback" not in result.stderr
    source.unlink()
    result = run_cli(root, "verify")
    assert result.returncode == 26, result.stdout + result.stderr
    assert re.search(
        r"loopcontract\.yml:9:\d+: dod\[0\]\.hidden\[0\]: hidden test file", result.stderr
    )
    assert "Traceback" not in result.stderr


def _hidden_ref(root: Path, text: str) -> str:
    """A ref holding tests/test_hidden_add.py that no branch reaches."""
    blob = run_git_input(root, ["hash-object", "-w", "--stdin"], text)
    tests = run_git_input(root, ["mktree"], f"100644 blob {blob}\ttest_hidden_add.py\n")
    tree = run_git_input(root, ["mktree"], f"040000 tree {tests}\ttests\n")
    git(root, "update-ref", "refs/hidden/acceptance", tree)
    return "refs/hidden/acceptance:tests/test_hidden_add.py"


def run_git_input(root: Path, args: list[str], text: str) -> str:
    import subprocess

    proc = subprocess.run(["git", *args], cwd=root, input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_git_ref_the_work_tree_does_not_hold(tmp_path: Path) -> None:
    root = make_project(tmp_path / "repo", "")
    spec = _hidden_ref(root, HIDDEN)
    (root / "loopcontract.yml").write_text(
        CONTRACT.format(extra=f"    hidden: [{spec}]\n"), "utf-8"
    )
    git(root, "commit", "-qam", "hidden test by ref")
    baseline(root)
    (root / "src/calc/core.py").write_text(VISIBLE_ONLY, "utf-8")
    code, verdict = verify(root)
    assert code == 20 and dod_tests(verdict)[HIDDEN_ID] == "failed", verdict["reasons"]
    (root / "src/calc/core.py").write_text(HONEST, "utf-8")
    code, verdict = verify(root)
    assert code == 0 and dod_tests(verdict)[HIDDEN_ID] == "passed", verdict["reasons"]
    assert not (root / "tests/test_hidden_add.py").exists()


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ('["/nonexistent/place/test_hidden_add.py"]', "does not exist"),
        ("[refs/hidden/nothing:tests/test_h.py]", "does not exist in this repository"),
        ("[HEAD:tests/test_missing.py]", "holds no file"),
        ("[../repo/tests/test_inside.py]", "inside the repository"),
        ("[HEAD:tests/test_core.py]", "already holds"),
        ("[{from: HEAD:tests/test_core.py, to: tests/test_copy.py}]", "committed in the tree"),
    ],
)
def test_bad_hidden_entries_are_contract_errors_at_their_line(
    tmp_path: Path, entry: str, words: str
) -> None:
    root = make_project(tmp_path / "repo", f"    hidden: {entry}\n")
    (root / "tests/test_inside.py").write_text("def test_x():\n    assert False\n", "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "inside")
    result = run_cli(root, "baseline")
    assert result.returncode == 26, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert re.search(r"loopcontract\.yml:9:\d+: dod\[0\]\.hidden\[0\]: ", result.stderr), (
        result.stderr
    )
    assert words in result.stderr


def test_a_hidden_file_the_suite_does_not_collect_is_refused(tmp_path: Path) -> None:
    source = hidden_file(tmp_path / "outside")
    block = f"    hidden: [{{from: {json.dumps(str(source))}, to: docs/test_hidden_add.py}}]\n"
    root = make_project(tmp_path / "repo", block)
    result = run_cli(root, "baseline")
    assert result.returncode == 27, result.stdout + result.stderr
    assert "gave no test" in result.stderr and SECRET not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("[{from: /x/test_a.py, to: ../test_a.py}]", "inside the tree"),
        ("[/x/test_a.txt]", "must be a Python test file"),
        ("[/x/test_a.py, /y/test_a.py]", "two hidden tests go to 'tests/test_a.py'"),
        ("[{to: tests/test_a.py}]", "missing required key 'from'"),
        ("[7]", "expected a hidden test"),
    ],
)
def test_check_rejects_malformed_hidden_entries(tmp_path: Path, entry: str, words: str) -> None:
    root = make_project(tmp_path / "repo", f"    hidden: {entry}\n")
    result = run_cli(root, "check")
    assert result.returncode == 26, result.stdout + result.stderr
    assert "loopcontract.yml:9:" in result.stdout + result.stderr
    assert words in result.stdout + result.stderr


def test_prompt_names_no_hidden_test_even_in_a_finding(tmp_path: Path) -> None:
    """A reason that names a hidden test (a vacuous-pass finding on it) reaches the prompt
    without the name; the visible failing test is still named."""
    (tmp_path / "loopcontract.yml").write_text(
        CONTRACT.format(extra="    hidden: [/outside/test_hidden_add.py]\n"), "utf-8"
    )
    contract = load_contract(tmp_path / "loopcontract.yml")
    verdict = {
        "verdict": "fail",
        "dod": [
            {
                "id": "add",
                "status": "failed",
                "tests": [
                    {"nodeid": "tests/test_core.py::test_add", "outcome": "failed"},
                    {"nodeid": HIDDEN_ID, "outcome": "failed"},
                ],
            }
        ],
        "reasons": [
            {"code": "tamper_detected", "message": f"vacuous_pass: {HIDDEN_ID} still passes"}
        ],
        "tests": {
            "records": [
                {"nodeid": HIDDEN_ID, "outcome": "failed", "hidden": True, "message": "x"},
                {"nodeid": "tests/test_core.py::test_add", "outcome": "failed", "message": "boom"},
            ]
        },
    }
    prompt = build_prompt(contract, iteration=2, verdict=verdict)
    assert "test_hidden_add" not in prompt and "test_add_more" not in prompt
    assert "failed: tests/test_core.py::test_add" in prompt and "boom" in prompt
    assert "[hidden test] still passes" in prompt


def test_a_collection_error_quoting_the_hidden_file_is_scrubbed(repo: Path) -> None:
    """A candidate that removes the function the hidden test imports: pytest's collection
    error quotes the hidden file's lines; the verdict carries none of them."""
    (repo / "src/calc/core.py").write_text("def plus(a, b):\n    return a + b\n", "utf-8")
    code, verdict = verify(repo)
    assert code != 0
    text = json.dumps(verdict, ensure_ascii=False)
    assert SECRET not in text and "assert add(-5, 105) == 100" not in text
    hidden = [t for t in verdict_records(verdict) if t.get("hidden")]
    assert hidden and all(t.get("message") in (None, WITHHELD) for t in hidden), hidden


def test_scrub_quotes_replaces_hidden_lines_in_every_message() -> None:
    """Defence in depth for text the verifier does not attribute to a hidden test (an abnormal
    run's output tail in a reason): any line of a hidden file is replaced wherever it appears."""
    secret = HiddenFile(
        "add", ("dod", 0, "hidden", 0), "/x/test_h.py", "tests/test_h.py", HIDDEN.encode()
    )
    document = {
        "reasons": [{"code": "pytest_internal_error", "message": f"INTERNALERROR | # {SECRET}"}],
        "tests": [{"nodeid": "tests/test_core.py::test_add", "message": "assert add(3, 4) == 7"}],
        "summary": {"passed": 1},
    }
    scrub_quotes(document, [secret])
    assert SECRET not in json.dumps(document) and "assert add(3, 4) == 7" not in json.dumps(
        document
    )
    assert document["tests"][0]["nodeid"] == "tests/test_core.py::test_add"
    assert document["summary"] == {"passed": 1}
