"""A tiny contest project for the orchestrator's end-to-end tests: real git, real seat and
judge programs (small Python scripts run as subprocesses), real verification.

Seat behaviours (``seat.py BEHAVIOUR PROMPT_FILE WORKDIR``):
good, good2 (a different correct fix), same (byte-identical to good), slow-ok (correct but
records a metric over the measured gate), wrong (fails acceptance), tamper (edits the test),
retry (wrong on attempt 1, correct once the prompt says "Attempt 2"), hang, refuse, spam
(50 MB of output, then correct), crash (exit 3), vanish (deletes its worktree), outside
(writes into the repository root), lesson (slow unless the prompt carries a lesson about
metric.calls), flag (a correct fix, and a report that flags the task as impossible), sly
(returns an object whose ``==`` answers yes and no in turn: a cheat from inside the code).

Judge behaviours (``judge.py BEHAVIOUR PACKET_FILE``): fair (scores from the gates), fair-paid
(fair, and reports 7 tokens and $0.01), prose
(never JSON), prose-once (prose, then valid on the repair request), wild (scores of 11 and -1
for some cells, an unknown label), low (scores everything 1), prefers-sum (fair, and 9 rather
than 8 for a diff that adds with ``sum``: distinct scores, so no tie-break decides).
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml

from testing.repos import init_repo

GOOD_CALC = "CALLS = 0\n\ndef add(a, b):\n    global CALLS\n    CALLS += 1\n    return a + b\n"
"""A correct calc.py (the scripted seats' ``good``)."""

SEAT = r"""
import json, os, pathlib, sys, time
behaviour, prompt_file, workdir = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
prompt = pathlib.Path(prompt_file).read_text()
calc = workdir / "calc.py"
GOOD = "CALLS = 0\n\ndef add(a, b):\n    global CALLS\n    CALLS += 1\n    return a + b\n"
GOOD2 = GOOD.replace("CALLS += 1", "CALLS = CALLS + 1").replace("a + b", "sum((a, b))")
SLOW = GOOD.replace("CALLS += 1", "for _ in range(9):\n        CALLS += 1")
WRONG = "CALLS = 0\n\ndef add(a, b):\n    return a - b\n"
report = os.environ.get("LOOP_CONTRACT_REPORT")
def say(tokens):
    pathlib.Path(report).write_text(json.dumps({"tokens": tokens, "cost_usd": tokens / 1e5}))
if behaviour in ("good", "same"):
    calc.write_text(GOOD); say(100)
elif behaviour == "good2":
    calc.write_text(GOOD2); say(120)
elif behaviour == "slow-ok":
    calc.write_text(SLOW); say(90)
elif behaviour == "wrong":
    calc.write_text(WRONG); say(50)
elif behaviour == "tamper":
    calc.write_text(WRONG)
    (workdir / "tests" / "test_calc.py").write_text("def test_add():\n    assert True\n")
elif behaviour == "retry":
    calc.write_text(GOOD if "Attempt 2" in prompt else WRONG)
elif behaviour == "lesson":
    calc.write_text(GOOD if "keep metric.calls" in prompt else SLOW)
elif behaviour == "hang":
    time.sleep(600)
elif behaviour == "refuse":
    pathlib.Path(report).write_text(json.dumps({"refused": True, "reason": "policy"}))
    sys.exit(1)
elif behaviour == "flag":
    calc.write_text(GOOD)
    pathlib.Path(report).write_text(json.dumps({
        "flag": "test_add asserts add(2, 3) == 5 and then that it is not; no code does both",
        "tokens": 80}))
elif behaviour == "sly":
    calc.write_text(
        "CALLS = 0\n\nclass Answer:\n    seen = 0\n\n    def __eq__(self, other):\n"
        "        Answer.seen += 1\n        return Answer.seen % 2 == 1\n\n"
        "def add(a, b):\n    return Answer()\n")
elif behaviour == "spam":
    chunk = "x" * 65536 + "\n"
    for _ in range(800):
        sys.stdout.write(chunk)
    calc.write_text(GOOD)
elif behaviour == "crash":
    sys.exit(3)
elif behaviour == "vanish":
    import shutil
    shutil.rmtree(workdir, ignore_errors=True)  # in its sandbox the folder itself is a mount
elif behaviour == "snoop":
    import subprocess
    calc.write_text(GOOD)
    repo = os.environ["LOOP_CONTRACT_TEST_REPO"]
    found = {
        "commits": subprocess.run(["git", "log", "--all", "--format=%H"], cwd=workdir,
                                  capture_output=True, text=True).stdout.split(),
        "refs": subprocess.run(["git", "for-each-ref", "--format=%(refname)"], cwd=workdir,
                               capture_output=True, text=True).stdout.split(),
        "siblings": sorted(p.name for p in workdir.parent.iterdir() if p != workdir),
        "state": sorted(str(p.relative_to(repo)) for p in pathlib.Path(repo).rglob("*")
                        if p.is_file()),
        "repo": os.path.exists(os.path.join(repo, "calc.py")),
    }
    window = pathlib.Path(os.environ["LOOP_CONTRACT_SANDBOX_WRITABLE"])
    (window / f"found-{workdir.name}.json").write_text(json.dumps(found))
elif behaviour == "outside":
    calc.write_text(GOOD)
    root = pathlib.Path(os.environ["LOOP_CONTRACT_TEST_REPO"])  # where the test says it is
    (root / "stray.txt").write_text("written outside the worktree\n")
"""

JUDGE = r"""
import json, pathlib, sys
behaviour, packet_file = sys.argv[1], sys.argv[2]
packet = json.loads(pathlib.Path(packet_file).read_text())
if behaviour == "prose" or (behaviour == "prose-once" and not packet.get("repair")):
    print("I think candidate A is quite good overall.")
    sys.exit(0)
scores = []
for i, cand in enumerate(packet["candidates"]):
    ok = all(g["status"] == "pass" for g in cand["gates"]["hard"] + cand["gates"]["measured"])
    for row in packet["rows"]:
        score = 8 if ok else 3
        if behaviour == "prefers-sum" and ok and "sum((a, b))" in cand["diff"]:
            score = 9
        if behaviour == "low":
            score = 1
        if behaviour == "wild" and i == 0 and row == "evidence":
            score = 11
        if behaviour == "wild" and i == 0 and row == "completeness":
            score = -1
        scores.append({"candidate": cand["label"], "row": row, "score": score,
                       "confidence": 0.8, "evidence": "tests/test_calc.py::test_add",
                       "rationale": "gates " + ("green" if ok else "red")})
if behaviour == "wild":
    scores.append({"candidate": "ZZ", "row": "evidence", "score": 5, "confidence": 0.5,
                   "evidence": "x", "rationale": "no such label"})
if behaviour == "fair-paid":
    import os
    report = pathlib.Path(os.environ["LOOP_CONTRACT_REPORT"])
    report.write_text(json.dumps({"tokens": 7, "cost_usd": 0.01}))
print(json.dumps({"scores": scores}))
"""


def make_project(
    tmp_path: Path,
    seats: list[tuple[str, str, str, str | None]],
    *,
    measured: bool = False,
    attempts: int = 2,
    extra: dict[str, Any] | None = None,
) -> Path:
    """A git repository with calc.py (unimplemented), its tests and a contract.

    ``seats``: (name, family, seat behaviour, judge behaviour or None).
    """
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "seat.py").write_text(SEAT, "utf-8")
    (tools / "judge.py").write_text(JUDGE, "utf-8")
    (root / "calc.py").write_text(
        "CALLS = 0\n\n\ndef add(a, b):\n    raise NotImplementedError\n", "utf-8"
    )
    (root / "tests" / "test_calc.py").write_text(
        textwrap.dedent(
            """
            import calc


            def test_add(loop_metric):
                before = calc.CALLS
                assert calc.add(2, 3) == 5
                loop_metric("calls", calc.CALLS - before)
            """
        ),
        "utf-8",
    )
    (root / "tests" / "test_other.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\ntestpaths = tests\n", "utf-8")
    contract: dict[str, Any] = {
        "version": 1,
        "id": "calc",
        "goal": "Implement calc.add.",
        "mode": "fix",
        "dod": [{"id": "add", "text": "add adds", "tests": ["tests/test_calc.py::test_add"]}],
        "gates": {
            "hard": [
                {"id": "acceptance", "kind": "acceptance"},
                {"id": "no-regressions", "kind": "pass_to_pass"},
            ]
        },
        "boundaries": {"allow": ["calc.py"]},
        "judged": {"min_score": 6, "spread_threshold": 4, "dissent_threshold": 4},
        "bracket": {"cut": 1, "final": 2},
        "contest": {
            "domain": "python.calc",
            "tags": ["arith"],
            "attempts": attempts,
            "parallel": 3,
        },
        "seats": [],
    }
    if measured:
        contract["gates"]["measured"] = [
            {
                "id": "few-calls",
                "metric": "metric.calls",
                "aggregate": "max",
                "op": "<=",
                "threshold": 2,
                "unit": "calls",
            }
        ]
    for name, family, behaviour, judge in seats:
        seat: dict[str, Any] = {
            "name": name,
            "family": family,
            "scripted": True,
            "timeout": 20,
            "generate": [
                sys.executable,
                str(tools / "seat.py"),
                behaviour,
                "{prompt_file}",
                "{workdir}",
            ],
        }
        if behaviour == "missing":
            seat["generate"] = ["no-such-agent-binary-xyz", "{prompt_file}"]
        if behaviour == "hang":
            seat["timeout"] = 2
        if judge:
            seat["judge"] = [sys.executable, str(tools / "judge.py"), judge, "{packet_file}"]
        contract["seats"].append(seat)
    contract.update(extra or {})
    (root / "loopcontract.yml").write_text(yaml.safe_dump(contract, sort_keys=False), "utf-8")
    init_repo(root)
    return root


def read_json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))
