"""Records on the data branch prove who wrote them, and the set-up that protects them is checked.

Why it is built this way:

* **The API says who wrote a record, never the commit's text.** Publish and the gate act on
  what they read back from ``loop-contract-data`` (verdicts, the proposed winner, lessons), and
  anyone who can push to that branch could write any of it. A record counts only when the
  newest commit that changed its file is one GitHub made and signed for the action's own login:
  the API links the commit's author to that login *and* reports ``verification.verified`` with
  the reason ``valid``. A pushed commit that names the bot's address in its text is linked to
  the bot but unsigned; a commit someone made through the web or their own token is signed but
  linked to them. Either way the record is not the action's, and it is ignored.
* **One check per read covers the history.** The action carries forward only records it
  trusted, so if the newest writer is the action, everything in the file came through a run of
  the action. A forged commit followed by a real publish is therefore harmless too: that
  publish refused the forged records and wrote the file without them.
* **Records are also checked again for what they say** (contract digest, isolation, protected
  paths, the head the API reports): :mod:`.verification` does that as if they had just
  arrived, since the action that wrote them may have been an older release with laxer rules.
* **What the action can see of the set-up, it reports.** The data branch should be protected
  (only the action may push), and ``loop-contract/winner`` should be required from the GitHub
  Actions app (so no other app or token can set it). The action reads both where its token may
  (the branch's ``protected`` flag, the rules that apply to the default branch) and writes a
  warning to the job summary for each one missing; it never fails a run on them.

Requests: one commit list (first page) per record file read, and three for the set-up (the
data branch, the default branch's rules, the default branch).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from github.GithubException import GithubException
from github.Repository import Repository

from pytest_loopcontract.github.not_found import is_missing

__all__ = [
    "ACTIONS_APP_ID",
    "WINNER_CONTEXT",
    "RecordWriter",
    "record_writer",
    "setup_warnings",
]

log = logging.getLogger("loopcontract.github")

ACTIONS_APP_ID = 15368
"""The GitHub Actions app: the source of every status a workflow's ``GITHUB_TOKEN`` sets."""
WINNER_CONTEXT = "loop-contract/winner"


@dataclass(frozen=True)
class RecordWriter:
    """Who last changed a file on the data branch, as the API reports it."""

    path: str
    commit: str | None  # None: no commit changed the file (it does not exist)
    author: str | None  # the GitHub login the API links the commit's author to
    verified: bool
    reason: str  # GitHub's verification reason: valid, unsigned, unknown_key, ...

    def problem(self, bot_login: str) -> str | None:
        """Why the file is not the action's record, or None when it is (or does not exist)."""
        if self.commit is None:
            return None
        if self.author is None or self.author.casefold() != bot_login.casefold():
            who = self.author or "no GitHub user"
            return (
                f"{self.path} was last changed by {who} (commit {self.commit[:12]}), not by the "
                f"action ({bot_login})"
            )
        if not (self.verified and self.reason == "valid"):
            return (
                f"{self.path} was last changed by commit {self.commit[:12]}, which names "
                f"{bot_login} but carries no signature of GitHub's ({self.reason}): it was "
                "pushed, not made by the action"
            )
        return None


def record_writer(repo: Repository, path: str, *, branch: str) -> RecordWriter:
    """The newest commit on ``branch`` that changed ``path``, read through the API."""
    try:
        newest = next(iter(repo.get_commits(sha=branch, path=path)), None)
    except GithubException as exc:
        if not is_missing(exc) and exc.status != 409:  # 409: the repository is empty
            raise
        newest = None
    if newest is None:
        return RecordWriter(path, None, None, False, "")
    verification = newest.commit.raw_data.get("verification")
    checked: Mapping[str, Any] = verification if isinstance(verification, Mapping) else {}
    author = newest.author.login if newest.author is not None else None
    return RecordWriter(
        path,
        newest.sha,
        author,
        checked.get("verified") is True,
        str(checked.get("reason") or "unsigned"),
    )


def setup_warnings(repo: Repository, *, data_branch: str) -> list[str]:
    """What the action can see missing from the set-up the README asks for, one line each."""
    warnings = []
    try:
        if not repo.get_branch(data_branch).protected:
            warnings.append(
                f"the branch {data_branch} is not protected: anyone who can push to it can "
                "rewrite the contest's records (the action then ignores them, and the "
                "candidates are verified again). Protect it so only GitHub Actions may push."
            )
    except GithubException as exc:
        if not is_missing(exc):
            raise
    if not _winner_required_from_actions(repo):
        warnings.append(
            f"{WINNER_CONTEXT} is not a required status check of {repo.default_branch} pinned to "
            "the GitHub Actions app: a merge does not wait for the gate, or another app could "
            "set the status. Require it in a ruleset or branch protection, source GitHub Actions."
        )
    return warnings


def _winner_required_from_actions(repo: Repository) -> bool:
    """Whether a rule on the default branch requires the winner status from GitHub Actions.

    Rulesets are readable with the action's token (``GET rules/branches/<b>``); a classic
    branch protection shows in ``GET branches/<b>`` under ``protection``."""
    branch = repo.default_branch
    try:
        _, rules = repo.requester.requestJsonAndCheck(  # PyGithub has no call for rules
            "GET", f"{repo.url}/rules/branches/{branch}"
        )
        protection = repo.get_branch(branch).raw_data.get("protection")
    except GithubException as exc:
        if exc.status not in (403, 404):
            raise
        log.info("cannot read the rules of %s (%s): set-up not checked", branch, exc.status)
        return True  # unknown is not reported as missing
    required: list[Any] = []
    for rule in rules if isinstance(rules, list) else []:
        if isinstance(rule, Mapping) and rule.get("type") == "required_status_checks":
            required += (rule.get("parameters") or {}).get("required_status_checks") or []
    if isinstance(protection, Mapping):
        checks = (protection.get("required_status_checks") or {}).get("checks") or []
        required += [
            {"context": check.get("context"), "integration_id": check.get("app_id")}
            for check in checks
            if isinstance(check, Mapping)
        ]
    return any(
        isinstance(check, Mapping)
        and check.get("context") == WINNER_CONTEXT
        and check.get("integration_id") == ACTIONS_APP_ID
        for check in required
    )
