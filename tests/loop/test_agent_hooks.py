"""The git pre-push hook and its pre-commit flavour, end to end.

Real repositories, a local bare repository as the remote, real ``git push`` runs that execute
the installed hook, and the real command line in subprocesses (the way git and Claude Code
call it). Nothing under test is replaced.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from pytest_loopcontract.loop.agent_hooks import HOOK_MARKER
from testing.hooks import (
    STATE,
    add_remote,
    checkpoint_ids,
    commit_all,
    install_pre_push,
    kinds,
    push,
    remote_heads,
    resolve,
    run_hook,
    said,
)
from testing.repos import (
    EXAMPLE,
    ROOT,
    assert_valid_verdict,
    git,
    init_repo,
    run_cli,
)

# Split so that this file is not itself a secret to a scanner; the pattern is AKIA + 16.
AWS_KEY = "AKIA" + "QZ7XW3KD5RJ2MB4T"


def add_key(repo: Path) -> None:
    """An AWS-looking key on a line that runs on import (so coverage stays complete)."""
    path = repo / "src/textkit/slug.py"
    path.write_text(path.read_text("utf-8") + f'\n_DEPLOY_KEY = "{AWS_KEY}"\n', "utf-8")


@pytest.fixture
def pushable(baselined_repo: Path, tmp_path: Path) -> Path:
    """A baselined example repository with a bare remote and the pre-push hook installed."""
    add_remote(baselined_repo, tmp_path)
    install_pre_push(baselined_repo)
    return baselined_repo


def set_push(repo: Path, block: str) -> None:
    """Give the contract a ``push:`` block, commit it on main and adopt it again."""
    contract = repo / "loopcontract.yml"
    contract.write_text(contract.read_text("utf-8") + "\n" + block, "utf-8")
    commit_all(repo, "push settings")
    result = run_cli(repo, "baseline")
    assert result.returncode == 0, result.stdout + result.stderr


# --------------------------------------------------------------------------- pre-push: install


def test_install_pre_push_uses_this_python_and_is_idempotent(example_repo: Path) -> None:
    hook = install_pre_push(example_repo)
    text = hook.read_text("utf-8")
    assert text.startswith("#!/bin/sh\n")
    assert os.access(hook, os.X_OK)
    assert HOOK_MARKER in text
    # the hook runs the interpreter that installed it (this virtualenv), not whatever is on PATH
    (exec_line,) = [line for line in text.splitlines() if line.strip().startswith("exec ")]
    argv = shlex.split(exec_line)
    assert argv[1] == sys.executable
    assert Path(argv[1]).is_absolute() and os.access(argv[1], os.X_OK)
    assert argv[2:] == ["-m", "pytest_loopcontract", "hook", "run", "pre-push", "$@"]

    again = install_pre_push(example_repo)
    assert again == hook
    assert hook.read_text("utf-8") == text
    assert text.count(HOOK_MARKER) == 1
    assert not list(hook.parent.glob("pre-push.before-loop-contract*"))


def test_foreign_pre_push_hook_is_kept_chained_and_runs_first(
    baselined_repo: Path, tmp_path: Path, candidates: ModuleType
) -> None:
    repo = baselined_repo
    add_remote(repo, tmp_path)
    hooks = repo / ".git" / "hooks"
    log = tmp_path / "foreign.log"
    veto = tmp_path / "foreign-says-no"
    foreign = (
        "#!/bin/sh\n"
        f'echo "args: $*" >> "{log}"\n'
        f'cat >> "{log}"\n'
        f'if [ -e "{veto}" ]; then echo "foreign hook says no" >&2; exit 3; fi\n'
    )
    (hooks / "pre-push").write_text(foreign, "utf-8")
    (hooks / "pre-push").chmod(0o755)

    hook = install_pre_push(repo)
    install_pre_push(repo)  # twice: no second chain, no duplicate
    chained = hooks / "pre-push.before-loop-contract"
    assert chained.read_text("utf-8") == foreign
    assert hook.read_text("utf-8").count(HOOK_MARKER) == 1
    assert sorted(p.name for p in hooks.glob("pre-push*") if p.suffix != ".sample") == [
        "pre-push",
        "pre-push.before-loop-contract",
    ]

    git(repo, "checkout", "-q", "-b", "feature")
    candidates.honest(repo)
    add_key(repo)
    sha = commit_all(repo, "fix slugify, with a key")

    veto.touch()
    refused = push(repo, "origin", "feature")
    assert refused.returncode != 0
    assert "foreign hook says no" in said(refused)
    assert "loop-contract" not in said(refused)  # it runs first; its failure ends the push
    assert not kinds(repo, "checkpoint_raised")
    seen = log.read_text("utf-8")
    assert "args: origin " in seen and str(tmp_path / "remote.git") in seen
    assert f"refs/heads/feature {sha} refs/heads/feature {'0' * 40}" in seen

    veto.unlink()
    blocked = push(repo, "origin", "feature")
    assert blocked.returncode != 0
    assert log.read_text("utf-8").count("args: origin ") == 2  # the foreign hook ran again
    assert checkpoint_ids(said(blocked)), said(blocked)  # and then ours blocked the secret
    assert "feature" not in remote_heads(repo)


# --------------------------------------------------------------------------- pre-push: pushes


def test_secret_push_blocked_until_a_person_clears_it(
    pushable: Path, candidates: ModuleType
) -> None:
    repo = pushable
    git(repo, "config", "user.name", "Ada Lovelace")  # named by the printed command
    git(repo, "checkout", "-q", "-b", "feature")
    candidates.honest(repo)  # the gates pass, so only the key holds the push back
    add_key(repo)
    sha = commit_all(repo, "fix slugify, with a deploy key")

    first = push(repo, "origin", "feature")
    out = said(first)
    assert first.returncode != 0, out
    assert "aws access key id" in out and "src/textkit/slug.py" in out
    assert AWS_KEY not in out  # shown redacted
    (cid,) = checkpoint_ids(out)
    assert f'loop-contract checkpoint resolve {cid} --by "Ada Lovelace"' in out  # runnable
    assert "feature" not in remote_heads(repo)

    again = push(repo, "origin", "feature")  # asking again finds the same pending request
    assert again.returncode != 0
    assert checkpoint_ids(said(again)) == [cid]

    resolve(repo, cid, by="alice")
    # no virtualenv on PATH: the hook finds its interpreter by the path it was installed with
    cleared = push(repo, "origin", "feature", env={"PATH": "/usr/bin:/bin"})
    assert cleared.returncode == 0, said(cleared)
    assert remote_heads(repo)["feature"] == sha
    assert "gates not required for feature" in cleared.stderr  # a work-in-progress branch


def test_secret_push_with_gates_always_is_verified_once_cleared(
    pushable: Path, candidates: ModuleType
) -> None:
    repo = pushable
    set_push(repo, "push:\n  gates: always\n")
    git(repo, "checkout", "-q", "-b", "feature")
    candidates.honest(repo)
    add_key(repo)
    sha = commit_all(repo, "fix slugify, with a deploy key")
    (cid,) = checkpoint_ids(said(push(repo, "origin", "feature")))
    resolve(repo, cid, by="alice")
    cleared = push(repo, "origin", "feature")
    assert cleared.returncode == 0, said(cleared)
    verdict = json.loads((repo / STATE / "pre-push-verdict.json").read_text("utf-8"))
    assert_valid_verdict(verdict)
    assert verdict["environment"]["commit"] == sha


def test_push_whose_gates_fail_is_blocked_with_the_verdict_reasons(pushable: Path) -> None:
    repo = pushable
    set_push(repo, "push:\n  gates: always\n")
    git(repo, "checkout", "-q", "-b", "feature")
    slug = repo / "src/textkit/slug.py"
    slug.write_text(slug.read_text("utf-8") + "\n# transliteration: still to do\n", "utf-8")
    commit_all(repo, "not a fix")

    result = push(repo, "origin", "feature")
    out = said(result)
    assert result.returncode != 0, out
    assert "the contract is not met" in out
    assert not checkpoint_ids(out)  # nothing needs a person: the gates alone block it
    verdict = json.loads((repo / STATE / "pre-push-verdict.json").read_text("utf-8"))
    assert_valid_verdict(verdict)
    assert verdict["verdict"] == "fail"
    codes = [r["code"] for r in verdict["reasons"]]
    assert "hard_gate_failed" in codes
    for reason in verdict["reasons"]:
        assert f"{reason['code']}: {reason['message']}" in out
    assert "feature" not in remote_heads(repo)


def test_push_of_a_cleared_secret_still_needs_the_gates(
    pushable: Path, candidates: ModuleType
) -> None:
    repo = pushable
    set_push(repo, "push:\n  gates: always\n")
    git(repo, "checkout", "-q", "-b", "feature")
    add_key(repo)  # no fix: the acceptance tests still fail
    commit_all(repo, "a key and no fix")
    first = push(repo, "origin", "feature")
    (cid,) = checkpoint_ids(said(first))
    resolve(repo, cid)
    gated = push(repo, "origin", "feature")
    assert gated.returncode != 0
    assert "the contract is not met" in said(gated)
    assert "hard_gate_failed" in said(gated)
    assert "feature" not in remote_heads(repo)


def test_push_to_main_is_a_protected_branch_checkpoint(
    pushable: Path, candidates: ModuleType
) -> None:
    repo = pushable
    candidates.honest(repo)
    sha = commit_all(repo, "fix slugify on main")
    before = remote_heads(repo)["main"]

    blocked = push(repo, "origin", "main")
    out = said(blocked)
    assert blocked.returncode != 0, out
    assert "protected branch main" in out
    (cid,) = checkpoint_ids(out)
    assert "checkpoint resolve" in out
    assert remote_heads(repo)["main"] == before

    resolve(repo, cid, by="carol")
    allowed = push(repo, "origin", "main")
    assert allowed.returncode == 0, said(allowed)
    assert remote_heads(repo)["main"] == sha


def test_force_push_is_flagged(pushable: Path, candidates: ModuleType) -> None:
    repo = pushable
    git(repo, "checkout", "-q", "-b", "feature")
    candidates.honest(repo)
    commit_all(repo, "fix slugify")
    first = push(repo, "origin", "feature")
    assert first.returncode == 0, said(first)

    git(repo, "commit", "-q", "--amend", "-m", "fix slugify (reworded)")
    rewritten = git(repo, "rev-parse", "HEAD").strip()
    forced = push(repo, "--force", "origin", "feature")
    out = said(forced)
    assert forced.returncode != 0, out
    assert "rewrites the history of refs/heads/feature" in out
    (cid,) = checkpoint_ids(out)
    assert remote_heads(repo)["feature"] != rewritten

    resolve(repo, cid)
    allowed = push(repo, "--force", "origin", "feature")
    assert allowed.returncode == 0, said(allowed)
    assert remote_heads(repo)["feature"] == rewritten


def test_force_push_over_a_remote_commit_this_clone_never_saw_is_flagged(
    pushable: Path, tmp_path: Path, candidates: ModuleType
) -> None:
    """Someone else pushed; we never fetched it. Forcing over it destroys their work."""
    repo = pushable
    git(repo, "checkout", "-q", "-b", "feature")
    candidates.honest(repo)
    commit_all(repo, "fix slugify")
    assert push(repo, "origin", "feature").returncode == 0

    other = tmp_path / "colleague"
    git(tmp_path, "clone", "-q", "-b", "feature", str(tmp_path / "remote.git"), str(other))
    (other / "src/textkit/notes.txt").write_text("colleague's work\n", "utf-8")
    theirs = commit_all(other, "colleague's commit")
    git(other, "push", "-q", "origin", "feature")  # no hook in that clone

    slug = repo / "src/textkit/slug.py"
    slug.write_text(slug.read_text("utf-8").replace("URL slugs.", "URL slugs, v2."), "utf-8")
    commit_all(repo, "our next commit")
    forced = push(repo, "--force", "origin", "feature")
    out = said(forced)
    assert forced.returncode != 0, out
    assert "rewrites the history of refs/heads/feature" in out
    assert remote_heads(repo)["feature"] == theirs


def test_deleting_a_remote_branch_is_flagged(pushable: Path, candidates: ModuleType) -> None:
    repo = pushable
    git(repo, "checkout", "-q", "-b", "feature")
    candidates.honest(repo)
    commit_all(repo, "fix slugify")
    assert push(repo, "origin", "feature").returncode == 0

    deleting = push(repo, "origin", "--delete", "feature")
    out = said(deleting)
    assert deleting.returncode != 0, out
    assert "deletes remote refs/heads/feature" in out
    (cid,) = checkpoint_ids(out)
    assert "feature" in remote_heads(repo)

    resolve(repo, cid)
    deleted = push(repo, "origin", "--delete", "feature")
    assert deleted.returncode == 0, said(deleted)
    assert "feature" not in remote_heads(repo)


def test_secret_added_and_removed_inside_the_pushed_commits_is_flagged(
    pushable: Path, candidates: ModuleType
) -> None:
    """The net diff is clean, but the pushed history carries the key to the remote."""
    repo = pushable
    git(repo, "checkout", "-q", "-b", "feature")
    add_key(repo)
    commit_all(repo, "add a key")
    candidates.honest(repo)  # rewrites slug.py: the key is gone again
    commit_all(repo, "fix slugify (and drop the key)")
    assert AWS_KEY not in (repo / "src/textkit/slug.py").read_text("utf-8")

    result = push(repo, "origin", "feature")
    out = said(result)
    assert result.returncode != 0, out
    assert "aws access key id" in out
    assert checkpoint_ids(out)
    assert "feature" not in remote_heads(repo)


def test_first_push_of_a_history_scans_every_commit(example_repo: Path, tmp_path: Path) -> None:
    """No baseline (no gates), an empty remote: the whole history is what gets pushed."""
    repo = example_repo
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    install_pre_push(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    add_key(repo)
    commit_all(repo, "add a key")
    (repo / "NOTES.md").write_text("notes\n", "utf-8")
    commit_all(repo, "notes")

    result = push(repo, "origin", "feature")
    out = said(result)
    assert result.returncode != 0, out
    assert "aws access key id" in out
    assert not remote_heads(repo)


def test_commits_already_on_one_remote_are_checked_again_for_another(
    pushable: Path, tmp_path: Path, candidates: ModuleType
) -> None:
    """Cleared for the private origin is not cleared for a public mirror."""
    repo = pushable
    git(repo, "checkout", "-q", "-b", "feature")
    candidates.honest(repo)
    add_key(repo)
    commit_all(repo, "fix slugify, with a key")
    (cid,) = checkpoint_ids(said(push(repo, "origin", "feature")))
    resolve(repo, cid)
    assert push(repo, "origin", "feature").returncode == 0

    mirror = tmp_path / "mirror.git"
    git(tmp_path, "init", "-q", "--bare", str(mirror))
    git(repo, "remote", "add", "mirror", str(mirror))
    to_mirror = push(repo, "mirror", "feature")
    out = said(to_mirror)
    assert to_mirror.returncode != 0, out
    assert "aws access key id" in out
    assert checkpoint_ids(out) == [f"{cid}.2"]  # a new decision, not the one already spent
    assert not git(repo, "ls-remote", "--heads", "mirror").strip()


def test_hook_paths_are_quoted_for_the_shell(tmp_path: Path) -> None:
    """A repository under a path with a space, a quote and a dollar sign still runs both the
    chained hook and ours."""
    repo = tmp_path / "it's $HOME dir"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", STATE))
    init_repo(repo)
    add_remote(repo, tmp_path)
    log = tmp_path / "foreign.log"
    foreign = repo / ".git" / "hooks" / "pre-push"
    foreign.write_text(f'#!/bin/sh\necho ran >> "{log}"\n', "utf-8")
    foreign.chmod(0o755)
    install_pre_push(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    add_key(repo)
    commit_all(repo, "a key")
    result = push(repo, "origin", "feature")
    assert result.returncode != 0
    assert log.read_text("utf-8") == "ran\n"
    assert "aws access key id" in said(result)


def test_clean_push_without_a_baseline_goes_through(example_repo: Path, tmp_path: Path) -> None:
    repo = example_repo
    add_remote(repo, tmp_path)
    install_pre_push(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "NOTES.md").write_text("notes\n", "utf-8")
    sha = commit_all(repo, "notes")
    result = push(repo, "origin", "feature")
    assert result.returncode == 0, said(result)
    assert remote_heads(repo)["feature"] == sha


# --------------------------------------------------------------------------- pre-commit


def test_pre_commit_style_run_reads_the_pushed_range_from_the_environment(
    pushable: Path, candidates: ModuleType
) -> None:
    repo = pushable
    base = git(repo, "rev-parse", "main").strip()
    git(repo, "checkout", "-q", "-b", "feature")
    candidates.honest(repo)
    add_key(repo)
    sha = commit_all(repo, "fix slugify, with a key")
    env = {
        "PRE_COMMIT_FROM_REF": base,
        "PRE_COMMIT_TO_REF": sha,
        "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/feature",
    }

    blocked = run_hook(repo, "pre-push", "", env)  # pre-commit leaves stdin empty
    assert blocked.returncode == 1, said(blocked)
    assert "aws access key id" in said(blocked)
    (cid,) = checkpoint_ids(said(blocked))
    assert f"loop-contract checkpoint resolve {cid}" in said(blocked)

    # the git hook asks the very same question (same id) for the same push
    via_git = push(repo, "origin", "feature")
    assert via_git.returncode != 0
    assert checkpoint_ids(said(via_git)) == [cid]

    resolve(repo, cid)
    allowed = run_hook(repo, "pre-push", "", env)
    assert allowed.returncode == 0, said(allowed)

    to_main = run_hook(repo, "pre-push", "", {**env, "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/main"})
    assert to_main.returncode == 1
    assert "protected branch main" in said(to_main)

    nothing = run_hook(repo, "pre-push", "")  # no stdin, no variables: nothing is pushed
    assert nothing.returncode == 0, said(nothing)
    assert said(nothing) == ""


def test_pre_commit_style_run_of_a_first_push_checks_the_whole_history(
    example_repo: Path,
) -> None:
    """For a push that includes the root commit pre-commit sets no FROM/TO refs, only the
    branches ("all files" mode); the hook must still check what is pushed."""
    repo = example_repo
    git(repo, "checkout", "-q", "-b", "feature")
    add_key(repo)
    commit_all(repo, "add a key")
    env = {
        "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/feature",
        "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/feature",
        "PRE_COMMIT_REMOTE_NAME": "origin",
        "PRE_COMMIT_REMOTE_URL": "/nowhere.git",
    }
    result = run_hook(repo, "pre-push", "", env)
    assert result.returncode == 1, said(result)
    assert "aws access key id" in said(result)


def test_pre_commit_hooks_yaml_offers_the_pre_push_and_check_hooks(
    example_repo: Path,
) -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    assert isinstance(hooks, list)
    by_id = {h["id"]: h for h in hooks}
    assert set(by_id) == {"loop-contract-pre-push", "loop-contract-check"}
    for hook in hooks:
        assert {"id", "name", "entry", "language"} <= set(hook)
        assert hook["language"] == "python"
    pre_push = by_id["loop-contract-pre-push"]
    assert pre_push["entry"] == "loop-contract hook run pre-push"
    assert pre_push["stages"] == ["pre-push"]
    assert pre_push["pass_filenames"] is False
    assert pre_push["always_run"] is True
    check = by_id["loop-contract-check"]
    assert check["entry"] == "loop-contract check"
    assert check["pass_filenames"] is False
    assert re.search(check["files"], "loopcontract.yml")
    assert not re.search(check["files"], "docs/loopcontract.yml.bak")

    # the entries are real commands of this package (pre-commit runs them from the repo root)
    for hook in hooks:
        words = hook["entry"].split()
        assert words[0] == "loop-contract"
        result = run_cli(example_repo, *words[1:], "--help")
        assert result.returncode == 0, result.stderr
    checked = run_cli(example_repo, "check")
    assert checked.returncode == 0, checked.stderr


# --------------------------------------------------------------------------- Claude Code: install


# --------------------------------------------------------------------------- pre-push: policy


def _not_a_fix(repo: Path) -> str:
    slug = repo / "src/textkit/slug.py"
    slug.write_text(slug.read_text("utf-8") + "\n# transliteration: still to do\n", "utf-8")
    return commit_all(repo, "work in progress")


def test_work_in_progress_push_skips_the_gates_and_says_each_phase(pushable: Path) -> None:
    repo = pushable
    git(repo, "checkout", "-q", "-b", "wip/unicode")
    sha = _not_a_fix(repo)  # the contract is not met, and need not be on this branch
    result = push(repo, "origin", "wip/unicode")
    assert result.returncode == 0, said(result)
    assert remote_heads(repo)["wip/unicode"] == sha
    phases = [line for line in result.stderr.splitlines() if "loop-contract pre-push:" in line]
    assert phases[0].endswith(
        "refs/heads/wip/unicode -> refs/heads/wip/unicode: scanning the pushed commits"
    )
    assert "gates not required for wip/unicode" in phases[1]
    assert "main, master, release/*, production" in phases[1]
    assert phases[-1].endswith("push allowed")
    assert not (repo / STATE / "pre-push-verdict.json").exists()  # no tests were run


def test_push_to_a_configured_protected_branch_needs_a_person_and_the_gates(
    pushable: Path,
) -> None:
    repo = pushable
    set_push(repo, 'push:\n  protected: [main, "release/*"]\n')
    git(repo, "checkout", "-q", "-b", "release/1.0")
    _not_a_fix(repo)
    first = push(repo, "origin", "release/1.0")
    assert first.returncode != 0
    assert "protected branch release/1.0" in said(first)
    (cid,) = checkpoint_ids(said(first))
    resolve(repo, cid, by="dana")
    gated = push(repo, "origin", "release/1.0")
    assert gated.returncode != 0, said(gated)
    assert "verifying" in gated.stderr and "(runs the tests)" in gated.stderr
    assert re.search(r"loop-contract pre-push: verdict fail \(exit 20\) in \d+\.\ds", gated.stderr)
    assert "the contract is not met" in gated.stderr
    assert "loop-contract pre-push: push blocked" in gated.stderr.splitlines()
    assert "release/1.0" not in remote_heads(repo)

    # a branch the contract does not protect is work in progress, even one called production
    git(repo, "checkout", "-q", "-b", "production")
    assert push(repo, "origin", "production").returncode == 0


def test_a_protected_push_clearance_lasts_until_one_push_goes_through(
    pushable: Path, candidates: ModuleType
) -> None:
    """Where the user started: a person clears the agent's push to main, the gates then block
    it (not a fix yet), the agent fixes it and pushes again. That fixed push needs no second
    approval: the clearance is for the branch until a push to it goes through. The push after
    that asks again."""
    repo = pushable
    set_push(repo, "push:\n  protected: [main]\n")
    _not_a_fix(repo)
    (cid,) = checkpoint_ids(said(push(repo, "origin", "main")))
    resolve(repo, cid, by="dana")
    gated = push(repo, "origin", "main")
    assert gated.returncode != 0 and "the contract is not met" in gated.stderr, said(gated)
    candidates.honest(repo)
    commit_all(repo, "the fix")
    fixed = push(repo, "origin", "main")
    assert fixed.returncode == 0, said(fixed)
    assert "push allowed" in fixed.stderr
    (repo / "NOTES.md").write_text("one more change\n", "utf-8")
    commit_all(repo, "notes")
    again = push(repo, "origin", "main")
    assert again.returncode != 0 and "protected branch main" in said(again)
    assert checkpoint_ids(said(again)) == [f"{cid}.2"]


def test_force_push_and_deletion_of_a_wip_branch_are_still_checked(
    pushable: Path,
) -> None:
    repo = pushable
    git(repo, "checkout", "-q", "-b", "wip")
    _not_a_fix(repo)
    assert push(repo, "origin", "wip").returncode == 0
    git(repo, "commit", "-q", "--amend", "-m", "rewritten")
    forced = push(repo, "--force", "origin", "wip")
    assert forced.returncode != 0 and "rewrites the history" in said(forced)
    deleting = push(repo, "origin", "--delete", "wip")
    assert deleting.returncode != 0 and "deletes remote" in said(deleting)
