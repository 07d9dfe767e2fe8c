"""``loop-contract github dispatch``: who may start a contest, and the matrix of its seats.

Runs in the plan job of the dispatch workflow (``workflow_dispatch``, or an ``issue_comment``
whose body starts with ``/contest``), on the default branch, with a read-only token.

Why it is built this way:

* **Permission comes from the API, never from the event.** A comment's
  ``author_association`` is what the payload says; the collaborator-permission endpoint is
  what the repository says now. Only ``admin``, ``maintain`` or ``write`` starts a contest
  (the same levels whose approval counts at the human gate); anyone else gets an empty matrix.
* **Only checked values reach a matrix.** A seat name becomes a job name, a branch name and an
  artifact name, so it must match the contract's id pattern; a secret name must look like an
  environment variable. The contract path must be a plain relative ``.yml``/``.yaml`` path.
* **What the seats are told is computed here, once,** from the data branch: the lessons, a
  person's rejection of the last winner, and each seat's own failed gates from its last
  verification. The seat jobs have no token, so they could not read it themselves.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from github.GithubException import GithubException
from github.Repository import Repository

from pytest_loopcontract.contest.lessons.model import Lesson
from pytest_loopcontract.contest.lessons.prompt import prompt_block
from pytest_loopcontract.contest.lessons.ranking import rank_lessons
from pytest_loopcontract.contest.panel import lesson_scope
from pytest_loopcontract.contest.prompting import retry_notes
from pytest_loopcontract.contest.seat_model import seats_from_contract
from pytest_loopcontract.contest.worktrees import BRANCH_PREFIX
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.github.contest_state import DATA_BRANCH, read_trusted_state
from pytest_loopcontract.github.decide import LESSONS_PATH
from pytest_loopcontract.github.events import is_valid_id
from pytest_loopcontract.github.records import record_writer
from pytest_loopcontract.github.review_gate import COUNTING_PERMISSIONS
from pytest_loopcontract.github.state_branch import read_file

__all__ = [
    "COMMAND",
    "DispatchError",
    "Trigger",
    "contract_path_problem",
    "dispatch_context",
    "last_round",
    "may_dispatch",
    "parse_round",
    "round_marker",
    "seat_matrix",
    "trigger_of",
]

log = logging.getLogger("loopcontract.github")

COMMAND = "/contest"
_SECRET = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")
_PATH = re.compile(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*\.ya?ml")
_MARKER = re.compile(r"<!-- loop-contract:dispatch (\{[^<>]*\}) -->")


class DispatchError(LoopContractError):
    """The dispatch cannot start: a malformed path or seat in the contract or the event."""


@dataclass(frozen=True)
class Trigger:
    """Who asked for a contest, and for which contract file."""

    login: str
    contract: str


def contract_path_problem(path: str) -> str | None:
    """Why ``path`` is not a contract path a workflow may pass on, or None."""
    if not _PATH.fullmatch(path) or any(part in (".", "..") for part in path.split("/")):
        return (
            f"contract path {path!r} must be a relative path of plain names ending in "
            ".yml or .yaml (no '..', no spaces)"
        )
    return None


def trigger_of(
    event_name: str, event: Mapping[str, Any], default_contract: str = "loopcontract.yml"
) -> Trigger | None:
    """The requester and contract path of a dispatch event, or None when the event does not
    ask for a contest (another comment, a comment on a pull request, an edited comment).

    ``workflow_dispatch``: the sender, and the ``contract`` input; run on another branch than
    the default one, a :class:`DispatchError`. ``issue_comment``: the comment's author, and
    the word after ``/contest`` (default ``default_contract``)."""
    if event_name == "workflow_dispatch":
        default = str((event.get("repository") or {}).get("default_branch") or "")
        if default and event.get("ref") != f"refs/heads/{default}":
            raise DispatchError(
                f"the dispatch ran on {event.get('ref')}: the contract is read from the default "
                f"branch, so run the workflow on {default}"
            )
        inputs = event.get("inputs") or {}
        contract = str(inputs.get("contract") or default_contract).strip()
        login = str((event.get("sender") or {}).get("login") or "")
        return Trigger(login, contract) if login else None
    if event_name != "issue_comment" or event.get("action") != "created":
        return None
    issue = event.get("issue") or {}
    if issue.get("pull_request"):
        return None  # a pull request's conversation: contests start from issues only
    comment = event.get("comment") or {}
    words = str(comment.get("body") or "").split()
    if not words or words[0] != COMMAND:
        return None
    login = str((comment.get("user") or {}).get("login") or "")
    contract = words[1] if len(words) > 1 else default_contract
    return Trigger(login, contract) if login else None


def may_dispatch(repo: Repository, login: str) -> tuple[bool, str]:
    """Whether ``login`` may start a contest (write, maintain or admin, read from the API),
    and the permission level that was found."""
    try:
        level = repo.get_collaborator_permission(login)
    except GithubException as exc:
        if exc.status != 404:
            raise
        level = "none"
    return level in COUNTING_PERMISSIONS, level


def seat_matrix(contract: Contract) -> list[dict[str, str]]:
    """One matrix entry ``{"name", "secret"}`` per seat that has a generate command, its own
    or its preset's (``agent: claude-code`` writes no ``generate``).

    A seat name outside the id pattern, or a secret name that is not an environment
    variable name, is refused (:class:`DispatchError`) before it reaches a workflow."""
    rows = []
    for raw in contract.seats:
        name = raw.get("name")
        if not is_valid_id(name):
            raise DispatchError(f"seat name {name!r} does not match the contract id pattern")
        secret = raw.get("secret") or ""
        if secret and not (isinstance(secret, str) and _SECRET.fullmatch(secret)):
            raise DispatchError(f"seat {name}: secret {secret!r} is not a variable name")
        rows.append({"name": str(name), "secret": str(secret)})
    generating = {seat.name for seat in seats_from_contract(contract) if seat.generate}
    return [row for row in rows if row["name"] in generating]


def round_marker(seat: str, round_no: int, run_id: str) -> str:
    """The hidden line of a dispatched pull request's body that says what produced it."""
    data = json.dumps({"seat": seat, "round": round_no, "run": run_id}, sort_keys=True)
    return f"<!-- loop-contract:dispatch {data} -->"


def parse_round(body: str | None) -> int:
    """The round a dispatched pull request's body names (0 when it names none)."""
    match = _MARKER.search(body or "")
    if match is None:
        return 0
    try:
        value = json.loads(match.group(1)).get("round")
    except (ValueError, AttributeError):
        return 0
    return value if isinstance(value, int) and value > 0 else 0


def last_round(repo: Repository, contract_id: str) -> int:
    """The highest round the contest's open dispatched pull requests name (0: none yet).

    Only pull requests from this repository on ``loop-contract/<id>/...`` count: a fork
    chooses its own branch name and body."""
    prefix = f"{BRANCH_PREFIX}/{contract_id}/"
    found = 0
    for pull in repo.get_pulls(state="open"):
        head_repo = pull.head.repo
        if head_repo is None or head_repo.full_name != repo.full_name:
            continue
        if pull.head.ref.startswith(prefix):
            found = max(found, parse_round(pull.body))
    return found


def _lessons_text(repo: Repository, contract: Contract, bot_login: str) -> str:
    """The lessons block of the seats' prompt; none when the action did not write the
    lessons file (a seat's prompt is no place for text anyone with push access wrote)."""
    cap = contract.contest.lesson_chars
    raw = read_file(repo, LESSONS_PATH)
    if not raw or cap <= 0:
        return ""
    problem = record_writer(repo, LESSONS_PATH, branch=DATA_BRANCH).problem(bot_login)
    if problem is not None:
        log.warning("the lessons are left out of the prompt: %s", problem)
        return ""
    lessons = []
    for line in raw.splitlines():
        try:
            lessons.append(Lesson.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue  # a hand-edited line is not a lesson
    domain, tags = lesson_scope(contract)
    return prompt_block(rank_lessons(lessons, domain=domain, tags=tags), cap_chars=cap).text


def _rejection(state: Mapping[str, Any] | None) -> str | None:
    decision = ((state or {}).get("result") or {}).get("decision") or {}
    if decision.get("decision") != "reject":
        return None
    return str(decision.get("reason") or "rejected at the human gate")


def _retry(state: Mapping[str, Any] | None, seats: Sequence[str]) -> dict[str, list[str]]:
    """Each seat's failed gates from its last trusted verification (verifier fields only)."""
    pulls = (state or {}).get("pulls") or {}
    verified = (state or {}).get("verified") or {}
    out: dict[str, list[str]] = {}
    for seat in seats:
        number = (pulls.get(seat) or {}).get("pr")
        verdict = (verified.get(str(number)) or {}).get("verdict")
        if isinstance(verdict, dict) and verdict.get("verdict") != "pass":
            out[seat] = retry_notes(verdict)
    return out


def dispatch_context(
    repo: Repository,
    contract: Contract,
    seats: Sequence[str],
    run_id: str,
    *,
    bot_login: str = "github-actions[bot]",
) -> dict[str, Any]:
    """What every seat job of this dispatch is told: the round, the lessons, a rejection and
    each seat's own retry notes, all from the data branch (what the action wrote there) and
    the open pull requests."""
    state = read_trusted_state(repo, contract.id, bot_login=bot_login).document
    return {
        "round": last_round(repo, contract.id) + 1,
        "run": run_id,
        "lessons": _lessons_text(repo, contract, bot_login),
        "rejection": _rejection(state),
        "retry": _retry(state, seats),
    }
