"""Harness integrity: the files that govern the agent are recorded when installed or adopted,
and a change, removal or addition raises a checkpoint that names the file, until a person
restores it or accepts it. Real repositories, real hook installs, the real loop."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pytest_loopcontract.history import History
from pytest_loopcontract.verifier.harness import compare, harness_checkpoints
from testing.hooks import STATE, checkpoint_ids, kinds, resolve
from testing.repos import git, run_cli

NAME = "Ada Lovelace"  # the repository's git user, named by the printed resolve command


def _install(repo: Path, *targets: str) -> None:
    for target in targets:
        result = run_cli(repo, "hook", "install", target)
        assert result.returncode == 0, result.stdout + result.stderr


def _reasons(repo: Path) -> list[tuple[str, str]]:
    return [(r.code, r.message) for r in harness_checkpoints(repo, History(repo / STATE))]


def test_nothing_recorded_nothing_to_check(example_repo: Path) -> None:
    (example_repo / ".pre-commit-config.yaml").write_text("repos: []\n", "utf-8")
    assert _reasons(example_repo) == []


def test_installed_files_unchanged_raise_nothing(example_repo: Path) -> None:
    _install(example_repo, "claude-code", "pre-push")
    assert _reasons(example_repo) == []
    record = json.loads((example_repo / STATE / "harness.json").read_text("utf-8"))
    assert {".claude/settings.json", ".git/hooks/pre-push"} <= set(record["files"])


def test_a_changed_settings_file_waits_for_a_person_then_stands_accepted(
    example_repo: Path,
) -> None:
    repo = example_repo
    git(repo, "config", "user.name", NAME)
    _install(repo, "claude-code")
    settings = repo / ".claude" / "settings.json"
    original = settings.read_bytes()
    settings.write_text('{"hooks": {}}\n', "utf-8")  # the agent drops its own guard rails

    ((code, message),) = _reasons(repo)
    assert code == "checkpoint_pending"
    assert ".claude/settings.json was changed" in message
    (cid,) = checkpoint_ids(message)
    assert f'checkpoint resolve {cid} --by "{NAME}"' in message  # runnable as printed
    assert _reasons(repo) == [(code, message)]  # asking again is the same request

    resolve(repo, cid, "alice")  # a person accepts these bytes
    assert _reasons(repo) == []
    assert _reasons(repo) == []  # the acceptance stands for them (not single-use)

    settings.write_text('{"hooks": {"Stop": []}}\n', "utf-8")  # a later change asks again
    ((code, again),) = _reasons(repo)
    assert code == "checkpoint_pending" and checkpoint_ids(again) != [cid]

    settings.write_bytes(original)  # restored: nothing to ask
    assert _reasons(repo) == []


def test_a_pending_checkpoint_goes_when_its_file_is_restored(example_repo: Path) -> None:
    """Issue 34, point 2: a request nobody decided is withdrawn once the file no longer
    drifts (changed again: the new bytes are asked about instead; restored: nothing waits)."""
    repo = example_repo
    _install(repo, "claude-code")
    settings = repo / ".claude" / "settings.json"
    original = settings.read_bytes()
    settings.write_text('{"hooks": {}}\n', "utf-8")
    ((_, message),) = _reasons(repo)
    (cid,) = checkpoint_ids(message)

    settings.write_text('{"hooks": {"Stop": []}}\n', "utf-8")
    ((_, again),) = _reasons(repo)
    (new,) = checkpoint_ids(again)
    assert new != cid
    settings.write_bytes(original)
    assert _reasons(repo) == []
    assert [(r.data["id"], r.data["why"]) for r in kinds(repo, "checkpoint_withdrawn")] == [
        (cid, f".claude/settings.json changed again; it waits as {new}"),
        (new, ".claude/settings.json is back to its recorded bytes"),
    ]
    assert run_cli(repo, "checkpoint", "list", "--json").json() == []
    assert _reasons(repo) == [] and len(kinds(repo, "checkpoint_withdrawn")) == 2


def test_a_removed_or_disabled_git_hook_is_named(example_repo: Path) -> None:
    repo = example_repo
    _install(repo, "pre-push")
    hook = repo / ".git" / "hooks" / "pre-push"
    hook.chmod(0o644)  # git skips a hook that is not executable: that is a change too
    ((code, message),) = _reasons(repo)
    assert code == "checkpoint_pending" and ".git/hooks/pre-push was changed" in message
    hook.unlink()
    ((_, removed),) = _reasons(repo)
    assert ".git/hooks/pre-push was removed" in removed


def test_a_chained_hook_and_local_settings_are_governed_too(example_repo: Path) -> None:
    repo = example_repo
    hooks = repo / ".git" / "hooks"
    (hooks / "pre-push").write_text("#!/bin/sh\nexit 0\n", "utf-8")
    (hooks / "pre-push").chmod(0o755)
    _install(repo, "pre-push")  # the user's hook is kept and chained first
    assert _reasons(repo) == []
    (hooks / "pre-push.before-loop-contract").write_text("#!/bin/sh\nexit 0 # edited\n", "utf-8")
    (found,) = _reasons(repo)
    assert "pre-push.before-loop-contract was changed" in found[1]

    result = run_cli(repo, "baseline")  # adopting records what is there now
    assert result.returncode == 0, result.stdout + result.stderr
    assert _reasons(repo) == []
    local = repo / ".claude" / "settings.local.json"
    local.parent.mkdir(exist_ok=True)
    local.write_text('{"disableAllHooks": true}\n', "utf-8")  # absent when adopted
    (added,) = _reasons(repo)
    assert ".claude/settings.local.json was added" in added[1]


def test_a_denied_change_fails_until_restored(example_repo: Path) -> None:
    repo = example_repo
    _install(repo, "pre-push")
    hook = repo / ".git" / "hooks" / "pre-push"
    original = hook.read_bytes()
    hook.write_text("#!/bin/sh\nexit 0\n", "utf-8")
    ((_, message),) = _reasons(repo)
    (cid,) = checkpoint_ids(message)
    resolve(repo, cid, "bob", "--deny")
    ((code, denied),) = _reasons(repo)
    assert code == "checkpoint_denied" and "restore the file" in denied
    hook.write_bytes(original)
    assert _reasons(repo) == []


def test_reinstalling_does_not_launder_a_change_made_in_between(example_repo: Path) -> None:
    repo = example_repo
    _install(repo, "claude-code")
    settings = repo / ".claude" / "settings.json"
    document = json.loads(settings.read_text("utf-8"))
    document["disableAllHooks"] = True
    settings.write_text(json.dumps(document), "utf-8")
    _install(repo, "claude-code")  # the agent reinstalls to get a fresh digest recorded
    ((code, message),) = _reasons(repo)
    assert code == "checkpoint_pending" and ".claude/settings.json" in message


def test_a_damaged_record_is_a_finding_not_a_pass(example_repo: Path) -> None:
    _install(example_repo, "pre-push")
    (example_repo / STATE / "harness.json").write_text("{torn", "utf-8")
    ((code, message),) = _reasons(example_repo)
    assert code == "checkpoint_pending" and "harness.json cannot be read" in message


def test_compare_is_pure_and_exact() -> None:
    recorded = {"a": {"sha256": "1", "by": "x"}, "b": {"sha256": None}, "c": {"sha256": "3"}}
    changes = compare(recorded, {"a": "1", "b": "2", "c": None})
    assert [(c.name, c.change) for c in changes] == [("b", "added"), ("c", "removed")]
    assert compare(recorded, {"a": "1", "b": None, "c": "3"}) == []


def test_the_loop_stops_before_a_turn_when_the_agent_removed_a_hook(
    baselined_repo: Path, tmp_path: Path
) -> None:
    repo = baselined_repo
    _install(repo, "pre-push")
    turns = tmp_path / "turns.log"
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import os, sys\n"
        "sys.stdin.read()\n"
        f"open({str(turns)!r}, 'a').write('turn\\n')\n"
        "hook = os.path.join('.git', 'hooks', 'pre-push')\n"
        "if os.path.exists(hook):\n"
        "    os.remove(hook)\n",
        "utf-8",
    )
    result = run_cli(repo, "loop", "--", sys.executable, str(agent))
    assert result.returncode == 24, result.stdout + result.stderr
    assert turns.read_text("utf-8").count("turn") == 1  # no second turn without a person
    assert ".git/hooks/pre-push was removed" in result.stdout
    (raised,) = [r for r in kinds(repo, "checkpoint_raised") if r.data["kind"] == "harness"]
    assert raised.data["subject"].startswith("harness:.git/hooks/pre-push:")
    (stopped,) = kinds(repo, "stop")
    assert stopped.data["decision"] == "await_human"
    assert raised.data["id"] in stopped.data["message"]

    # a person accepts the removal: the loop goes on with its turns
    os.remove(turns)
    resolve(repo, raised.data["id"], "carol")
    resumed = run_cli(repo, "loop", "--resume")
    assert resumed.returncode in (22, 23), resumed.stdout + resumed.stderr
    assert turns.read_text("utf-8").count("turn") >= 2


def test_verify_waits_for_a_person_when_a_governing_file_drifted(example_repo: Path) -> None:
    """The verifier checks the harness at every run: a pre-push hook the agent disabled
    (exec bit off: git skips it silently) turns the verdict into a checkpoint naming it."""
    repo = example_repo
    _install(repo, "pre-push")
    assert run_cli(repo, "baseline").returncode == 0
    before = run_cli(repo, "verify", "--json")
    assert not any("harness file" in r["message"] for r in before.json()["reasons"])
    hook = repo / ".git" / "hooks" / "pre-push"
    hook.chmod(hook.stat().st_mode & ~0o111)
    after = run_cli(repo, "verify", "--json")
    assert after.returncode == 24, after.stdout
    (reason,) = [r for r in after.json()["reasons"] if "harness file" in r["message"]]
    assert reason["code"] == "checkpoint_pending"
    assert ".git/hooks/pre-push was changed" in reason["message"]
