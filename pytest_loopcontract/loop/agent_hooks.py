"""Hooks that put the verifier and the checkpoints in front of git and of agent CLIs.

* ``pre-push`` (git, or pre-commit's ``pre-push`` stage): checkpoint scan of the commits being
  pushed, protected-branch and force pushes, and the contract's gates on the pushed commit.
* The agent CLIs' hooks live in :mod:`cli_hooks` (install, fail-closed runner) and
  :mod:`cli_events` (what they decide); :func:`check_command` is shared with them.

Installers merge into what is there and never overwrite a user's own hook or settings.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.checkpoints import clearance
from pytest_loopcontract.checkpoints.gate import contract_patterns
from pytest_loopcontract.checkpoints.model import Match
from pytest_loopcontract.checkpoints.patterns import patterns_from_contract
from pytest_loopcontract.checkpoints.scan import scan_command, scan_diff
from pytest_loopcontract.contract.model import DEFAULT_PROTECTED_BRANCHES, Contract, PushSettings
from pytest_loopcontract.history import History
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier import harness
from pytest_loopcontract.verifier.baseline.record import load_baseline
from pytest_loopcontract.workspace import WorkspaceError, git, resolve_commit

__all__ = [
    "check_command",
    "install_pre_push",
    "pre_push",
    "run_hook",
]

HOOK_MARKER = "# installed by loop-contract"
ZERO_SHA = "0" * 40


# --------------------------------------------------------------------------- command check


def check_command(
    root: Path, command: str | Sequence[str]
) -> tuple[list[Match], clearance.Clearance | None]:
    """Scan one command; when it matches, ask for (single-use) clearance in the history.

    The pinned contract's patterns and protected branches (``push.protected``) when a baseline
    exists, the defaults otherwise: ``git push origin production`` is a protected push here
    exactly when it is one for the pre-push hook."""
    from pytest_loopcontract.verifier.verify import pinned_contract

    contract = None
    if StateDir.of(root).baseline.exists():
        contract = pinned_contract(root, load_baseline(root))
    patterns = contract_patterns(contract) if contract else patterns_from_contract({})
    protected = contract.push.protected if contract else DEFAULT_PROTECTED_BRANCHES
    matches = scan_command(command, patterns, workspace=root, protected_branches=protected)
    if not matches:
        return [], None
    subject = command if isinstance(command, str) else shlex.join(command)
    return matches, clearance.request(
        History(StateDir.of(root).folder), subject, matches, kind="command"
    )


# --------------------------------------------------------------------------- git pre-push


@dataclass(frozen=True)
class _PushMatch:
    """A checkpoint finding that is about the push itself, not its content."""

    pattern_id: str
    message: str
    evidence: str
    kind: str = "command"
    path: str = ""
    line: int | None = None
    always: bool = True


def _branch(ref: str) -> str:
    return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref


def _protected(ref: str, protected: Sequence[str]) -> bool:
    from pytest_loopcontract.workspace import match_glob

    return any(match_glob(_branch(ref), p) for p in protected)


def _pushed_patch(root: Path, local_sha: str, remote_sha: str, remote: str | None) -> str:
    """The diff of every commit being pushed, one after the other.

    A commit is being pushed when no remote-tracking branch of ``remote`` (of any remote when
    it is not named) and not the remote tip, when it is known here, has it yet; what another
    remote has is not on this one. Each commit is diffed against its first parent (a root commit
    against the empty tree), so a secret added in one pushed commit and removed in the next is
    still seen: the remote receives both. Plumbing only, so the user's diff settings
    (prefixes, external diff tools, colour) cannot change what is scanned.
    """
    exclude = [f"--remotes={remote}" if remote else "--remotes"]
    if remote_sha != ZERO_SHA and _known(root, remote_sha):
        exclude.append(remote_sha)
    commits = git(root, "rev-list", "--reverse", local_sha, "--not", *exclude)
    if not commits.strip():
        return ""
    return git(
        root,
        "diff-tree",
        "--stdin",
        "-r",
        "-p",
        "-U0",
        "--root",
        "--no-renames",
        "--no-color",
        "--no-ext-diff",
        "--diff-merges=first-parent",
        input_bytes=commits,
    ).decode("utf-8", "replace")


def _known(root: Path, sha: str) -> bool:
    try:
        resolve_commit(root, sha)
    except WorkspaceError:
        return False
    return True


def _contract_here(root: Path) -> Contract | None:
    """The pinned contract when a baseline exists, else the committed contract file if it
    reads, else None (the defaults apply)."""
    from pytest_loopcontract.contract.model import DEFAULT_CONTRACT_NAME, load_contract
    from pytest_loopcontract.errors import ContractError
    from pytest_loopcontract.verifier.verify import pinned_contract

    if StateDir.of(root).baseline.exists():
        return pinned_contract(root, load_baseline(root))
    try:
        return load_contract(root / DEFAULT_CONTRACT_NAME)
    except ContractError:
        return None


def _push_findings(
    root: Path,
    update: tuple[str, str, str, str],
    patterns: Any,
    protected: Sequence[str],
    remote: str | None,
) -> list[Any]:
    """What about this ref update needs a person: a deletion, a rewrite, a protected branch,
    and checkpoint content (secrets, credential files...) in any pushed commit."""
    _, local_sha, remote_ref, remote_sha = update
    if local_sha == ZERO_SHA:
        return [_PushMatch("git-delete-branch", f"deletes remote {remote_ref}", remote_ref)]
    matches: list[Any] = []
    if remote_sha != ZERO_SHA and _not_ancestor(root, remote_sha, local_sha):
        matches.append(
            _PushMatch("git-force-push", f"rewrites the history of {remote_ref}", remote_ref)
        )
    if _protected(remote_ref, protected):
        matches.append(
            _PushMatch(
                "git-push-protected",
                f"pushes to protected branch {_branch(remote_ref)}",
                remote_ref,
            )
        )
    matches.extend(scan_diff(_pushed_patch(root, local_sha, remote_sha, remote), patterns))
    return matches


def pre_push(
    root: Path,
    updates: Iterable[tuple[str, str, str, str]],
    *,
    run_gates: bool = True,
    say: Callable[[str], None] = print,
    remote: str | None = None,
) -> int:
    """Check each ``(local_ref, local_sha, remote_ref, remote_sha)``; 0 allows the push.

    Every update is scanned (secrets and other checkpoint content in the pushed commits, force
    pushes, deletions, protected branches); the contract's gates run only for pushes to a
    protected branch unless the contract says ``push: {gates: always}``. ``remote`` is the
    remote's name (git's first hook argument): commits its tracking branches already have are
    not scanned again. One line per phase goes to ``say`` (stderr in the hook).
    """
    updates = list(updates)
    if not updates:
        return 0  # nothing is pushed (a tag-less no-op push): nothing to say
    history = History(StateDir.of(root).folder)
    contract = _contract_here(root)
    patterns = contract_patterns(contract) if contract else patterns_from_contract({})
    push = contract.push if contract else PushSettings()
    blocked = False
    for update in updates:
        local_ref, local_sha, remote_ref, remote_sha = update
        if local_sha != ZERO_SHA:
            local_sha = resolve_commit(root, local_sha)  # pre-commit may give a branch name
        say(f"loop-contract pre-push: {local_ref} -> {remote_ref}: scanning the pushed commits")
        matches = _push_findings(
            root, (local_ref, local_sha, remote_ref, remote_sha), patterns, push.protected, remote
        )
        cleared = _clearances(root, history, say, remote_ref, local_sha, local_ref, matches)
        if cleared is None:
            blocked = True
            continue
        if (
            run_gates
            and local_sha != ZERO_SHA
            and _gates_needed(say, root, contract, push, remote_ref)
        ):
            assert contract is not None  # _gates_needed says no without one
            if _run_gates(root, history, contract, local_ref, local_sha, say):
                blocked = True
                continue  # the clearances stay unspent: they are for the fixed push
        for subject, approval in cleared:
            clearance.spend(history, approval, subject)
    say(f"loop-contract pre-push: {'push blocked' if blocked else 'push allowed'}")
    return 1 if blocked else 0


def _clearances(
    root: Path,
    history: History,
    say: Callable[[str], None],
    remote_ref: str,
    local_sha: str,
    local_ref: str,
    matches: Sequence[Any],
) -> list[tuple[str, clearance.Clearance]] | None:
    """The approvals this update needs, unspent; None (and why, said) when one is missing.

    A push to a protected branch is cleared for that branch until one push to it goes
    through, whatever its commits (the agent's fixed push after failing gates needs no second
    approval); everything else a push shows (secrets in its commits, a force push, a
    deletion) is cleared for exactly those commits."""
    protected = [m for m in matches if m.pattern_id == "git-push-protected"]
    content = [m for m in matches if m.pattern_id != "git-push-protected"]
    wanted = [(f"push:{remote_ref}:{local_sha}", content), (f"push:{remote_ref}", protected)]
    cleared: list[tuple[str, clearance.Clearance]] = []
    missing = False
    for subject, found in wanted:
        if not found:
            continue
        request = clearance.request(history, subject, found, kind="push", spend_now=False)
        if request.status == "cleared":
            cleared.append((subject, request))
        else:
            missing = True
            _say_blocked(root, say, local_ref, remote_ref, found, request)
    return None if missing else cleared


def _say_blocked(
    root: Path,
    say: Callable[[str], None],
    local_ref: str,
    remote_ref: str,
    matches: Sequence[Any],
    request: clearance.Clearance,
) -> None:
    say(f"loop-contract: push of {local_ref} to {remote_ref} blocked ({request.id}):")
    for match in matches:
        say(f"  - {match.message}" + (f" [{match.path}]" if match.path else ""))
    if request.status == "denied":
        say(f"  {request.message}")
    else:
        command = clearance.resolve_command(request.id, clearance.person_name(root))
        say(f"  a person clears it with: {command}   (then push again)")


def _gates_needed(
    say: Callable[[str], None],
    root: Path,
    contract: Contract | None,
    push: PushSettings,
    remote_ref: str,
) -> bool:
    """Whether this update must meet the contract; says why not when it need not."""
    branch = _branch(remote_ref)
    if contract is None or not StateDir.of(root).baseline.exists():
        say("loop-contract pre-push: gates skipped: no baseline ('loop-contract baseline')")
        return False
    if push.gates != "always" and not _protected(remote_ref, push.protected):
        protected = ", ".join(push.protected) or "none"
        say(
            f"loop-contract pre-push: gates not required for {branch} (protected branches: "
            f"{protected}; 'push: {{gates: always}}' in the contract requires them everywhere)"
        )
        return False
    return True


def _run_gates(
    root: Path,
    history: History,
    contract: Contract,
    local_ref: str,
    local_sha: str,
    say: Callable[[str], None],
) -> bool:
    """Verify the pushed commit; True when the push must be blocked."""
    from pytest_loopcontract.verifier.verify import verify

    say(
        f"loop-contract pre-push: verifying {local_sha[:12]} against the contract "
        f"{contract.id} (runs the tests)..."
    )
    started = time.monotonic()
    outcome = verify(
        root,
        candidate_ref=local_sha,
        history=history,
        verdict_path=StateDir.of(root).pre_push_verdict,
    )
    verdict = outcome.verdict
    say(
        f"loop-contract pre-push: verdict {verdict['verdict']} (exit {verdict['exit_code']}) "
        f"in {time.monotonic() - started:.1f}s"
    )
    # The verifier also asks a person about checkpoint content in the candidate's diff. For a
    # push that question was just asked above, about every pushed commit (which sees more than
    # the verifier's net diff), so a request still pending there is not asked a second time
    # under another id. A denial, and everything else, blocks.
    reasons = [r for r in verdict["reasons"] if r["code"] != "checkpoint_pending"]
    if verdict["verdict"] == "pass" or not reasons:
        return False
    say(f"loop-contract: push of {local_ref} blocked: the contract is not met")
    for reason in reasons[:10]:
        say(f"  - {reason['code']}: {reason['message']}")
    return True


def _not_ancestor(root: Path, older: str, newer: str) -> bool:
    import subprocess

    proc = subprocess.run(
        ["git", "merge-base", "--is-ancestor", older, newer],
        cwd=root,
        capture_output=True,
        check=False,
    )
    # 1: not an ancestor. 128: the remote tip is not here at all (someone else pushed it and
    # it was never fetched); overwriting it rewrites history just the same.
    return proc.returncode != 0


def read_push_updates(stdin_text: str, env: Mapping[str, str]) -> list[tuple[str, str, str, str]]:
    """git gives the updates on stdin; pre-commit gives one in PRE_COMMIT_* variables."""
    updates = []
    for line in stdin_text.splitlines():
        parts = line.split()
        if len(parts) == 4:
            updates.append((parts[0], parts[1], parts[2], parts[3]))
    if not updates and env.get("PRE_COMMIT_TO_REF"):
        remote_branch = env.get("PRE_COMMIT_REMOTE_BRANCH", "")
        updates.append(
            (
                env.get("PRE_COMMIT_LOCAL_BRANCH", "HEAD"),
                env["PRE_COMMIT_TO_REF"],
                remote_branch,
                env.get("PRE_COMMIT_FROM_REF") or ZERO_SHA,
            )
        )
    elif not updates and env.get("PRE_COMMIT_LOCAL_BRANCH") and env.get("PRE_COMMIT_REMOTE_BRANCH"):
        # pre-commit's "all files" push (the pushed commits reach a root commit): it names the
        # branches but sets no FROM/TO refs. The local branch stands for its commit.
        local = env["PRE_COMMIT_LOCAL_BRANCH"]
        updates.append((local, local, env["PRE_COMMIT_REMOTE_BRANCH"], ZERO_SHA))
    return updates


def install_pre_push(root: Path) -> Path:
    """Write ``.git/hooks/pre-push``; an existing foreign hook is kept and chained first."""
    hooks_dir = Path(git(root, "rev-parse", "--git-path", "hooks").decode().strip())
    if not hooks_dir.is_absolute():
        hooks_dir = root / hooks_dir
    hooks_dir.mkdir(parents=True, exist_ok=True)
    hook = hooks_dir / "pre-push"
    chained = hooks_dir / "pre-push.before-loop-contract"
    names = harness.names_of(root, [hook, chained])
    digests_before = harness.current(root, names)
    if hook.exists() and HOOK_MARKER not in hook.read_text("utf-8", "replace"):
        if chained.exists():
            raise FileExistsError(f"{chained} exists already; merge the hooks by hand")
        hook.rename(chained)
    # Quoted for sh: a path with a space, quote or "$" must not break (or inject into) the hook.
    python, before = shlex.quote(sys.executable), shlex.quote(str(chained))
    hook.write_text(
        "#!/bin/sh\n"
        f"{HOOK_MARKER}: checkpoints and contract gates before anything leaves this machine\n"
        "input=$(cat)\n"
        f"if [ -x {before} ]; then\n"
        f'  printf "%s\\n" "$input" | {before} "$@" || exit $?\n'
        "fi\n"
        f'printf "%s\\n" "$input" |\n'
        f'  exec {python} -m pytest_loopcontract hook run pre-push "$@"\n',
        "utf-8",
    )
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    harness.record(root, names, by="hook install pre-push", before=digests_before)
    return hook


def _to_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")


def run_hook(event: str, root: Path, stdin_text: str, args: Sequence[str]) -> int:
    """Entry point of ``loop-contract hook run pre-push`` (Claude Code's events are
    :func:`cli_hooks.run_cli_hook`, which fails closed)."""
    if event == "pre-push":
        return pre_push(
            root,
            read_push_updates(stdin_text, os.environ),
            say=_to_stderr,
            remote=args[0] if args else os.environ.get("PRE_COMMIT_REMOTE_NAME"),
        )
    sys.stderr.write(f"loop-contract: unknown hook event {event!r}\n")
    return 2
