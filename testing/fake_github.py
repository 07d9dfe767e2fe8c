"""A fake GitHub REST API on 127.0.0.1, for tests that drive real PyGithub over real HTTP.

Why a server and not mocks: the action's modules talk to GitHub through PyGithub, urllib3
retries and Link-header pagination. Only a real socket exercises those layers, so the fake is a
``ThreadingHTTPServer`` holding in-memory state, answering with JSON cut from the *recorded*
responses in ``tests/data/github`` (URLs rewritten to this server), and it can inject
the faults GitHub produces (502s, secondary rate limits with ``Retry-After``, 404s).

Usage::

    with FakeGitHub() as gh:                       # starts on 127.0.0.1:<free port>
        gh.add_repo("octo", "demo")                # first repo = default for the helpers
        gh.add_pull(7, "loop-contract/c1/alice", "a" * 40, "alice")
        g = make_github("any-token", base_url=gh.base_url)
        repo = g.get_repo("octo/demo")
        ...
        assert ("POST", "/repos/octo/demo/issues/7/comments") in gh.requests

Constructor: ``FakeGitHub(*, bot_login="github-actions[bot]", data_dir=GITHUB_DATA)``.
Any ``Authorization`` header authenticates; the token maps to ``bot_login`` (a user of type
"Bot") unless ``add_token(token, login)`` maps it to someone else. No header -> 401.

State helpers (``repo="owner/name"`` keyword on each; default: the first repo added):

* ``add_repo(owner, name, default_branch="main") -> None`` (creates an empty initial commit on
  the default branch), ``add_user(login, type="User")``, ``add_token(token, login)``,
  ``set_permission(login, "admin"|"maintain"|"write"|"triage"|"read"|"none")``.
* ``add_pull(number, head_ref, head_sha, author, *, base_ref="main", fork=False, labels=(),
  state="open", title=None, base_sha=None) -> None`` (``base_sha``: the base commit the API
  reports; default the base branch's head, in the attached repository when there is one);
  ``set_pull_head(number, head_sha)``;
  ``set_pull_state(number, state)``; ``attach_git(bare_repo)``: pull request heads follow
  that repository's branches (a ``git push`` there is a push to GitHub);
  ``pull_state(number)``, ``pull_numbers()``.
* ``add_review(pr, user, state, commit_id, submitted_at=None) -> int`` (``state`` in
  APPROVED|CHANGES_REQUESTED|COMMENTED|DISMISSED, served upper case like REST);
  ``dismiss_review(pr, review_id)``.
* ``add_comment(pr, user, body) -> int`` (a comment by anyone, e.g. a forged marker),
  ``delete_comment(id)`` (a person deleting it), ``comments(pr) -> list[FakeComment]`` (in
  creation order; ``FakeComment(id, issue, user, body)``).
* ``check_runs(sha) -> list[FakeCheckRun]`` in creation order (``testing.fake_checks``: name,
  status, conclusion, title, summary, annotations as sent, ``requests`` that touched it).
* ``statuses(sha) -> list[FakeStatus]`` in creation order (``FakeStatus(id, sha, state,
  context, description, target_url, creator)``); ``latest_status(sha, context)``.
* git data: ``commit_files(branch, files, message="seed", *, author=None) -> str`` commits
  files on a branch (created if missing, orphan) as a ``git push`` would: unsigned, and linked
  by the API to ``author`` (the login whose address the commit text names, forged or not);
  ``branch_sha(branch) -> str | None``; ``branch_files(branch) -> dict[str, bytes]`` (every
  file on the branch, paths with "/"); ``protect_branch(branch)``;
  ``require_status(branch, context, integration_id)`` (a ruleset, ``GET rules/branches/<b>``).
  Commits made through the API (contents PUT, git commits POST without an ``author``) are
  GitHub's: authored by the token's login, committed by ``web-flow``,
  ``verification.verified`` with reason ``valid``.
* ``add_commit_at(sha, files, *, base=None)``: a candidate's head commit (any SHA) readable
  through the contents API; ``set_pull_files(number, {path: patch})``.
* artifacts: ``add_workflow_run(run_id, *, head_sha, head_branch, event="pull_request",
  conclusion="success", head_owner=None, path=".github/workflows/loop-contract-verify.yml",
  name="loop-contract verify") -> None``; ``add_artifact(run_id, name, files,
  *, expired=False) -> int`` (``files: dict[str, bytes]`` zipped); ``add_artifact_zip(run_id,
  name, data) -> int`` (raw bytes, for hostile zips). ``artifact_redirect`` (default True):
  the ``/zip`` endpoint answers 302 to an unauthenticated download URL on this server; False
  serves the zip directly.
* events: ``workflow_run_event(run_id, *, pull_requests=None) -> dict``: the recorded
  ``workflow_run`` completed payload with this repo, run and head filled in (fork runs have an
  empty ``pull_requests``), validated against the recorded schema.

Runs GitHub would start: ``started`` (``list[StartedRun]``) holds each workflow run that
something done through the API would start, ``suppressed`` what GitHub's rule against
recursive runs stops: an event caused by ``GITHUB_TOKEN`` (the bot's token) starts no run,
except ``workflow_dispatch`` (``POST actions/workflows/<file>/dispatches``, which needs the
file to declare the trigger: 422 otherwise, 422 "No ref found for: <ref>"). A dispatch queues
a run in ``actions/runs`` (its ``display_title`` the workflow's ``run-name`` with
``${{ inputs.X }}`` filled in) until ``finish_run(run_id, conclusion)``. A pull request
opened through the API is a ``pull_request`` run (``action="opened"``). act cannot model this
rule, so tests that chain workflows under act run what ``started`` holds, nothing else.

Observation and faults:

* ``requests``: ``list[tuple[method, path]]`` of every request received (path unquoted,
  without the query string), including the failed ones. ``exchanges``:
  ``list[Exchange(method, path, query, status)]`` with the status answered.
  ``unknown``: requests that matched no endpoint (answered 404 like GitHub, also logged).
  ``count(method, path_regex) -> int`` counts ``requests`` entries (``re.search`` on the path).
* ``fail_next(method, path_regex, status, headers=None, body=None, times=1, *, landed=False)``:
  the next ``times`` requests matching (``re.search`` on the unquoted path) get ``status``
  (default bodies: 502 ``{"message": "Server Error"}``, 403 a secondary rate limit message,
  404 "Not Found"). ``landed=True``: the request takes effect first and the client still sees
  the fault (a POST whose answer was lost). A fault with a ``Retry-After`` header keeps
  answering the same fault to matching requests until that many seconds have passed (GitHub
  does the same), so a client that does not wait is seen failing repeatedly.
* ``before_next(method, path_regex, callback)``: run ``callback()`` (outside the server lock,
  so it may itself call the server) when the next matching request arrives, before it is
  handled: the way to stage a deterministic race.

Endpoints: repos; branches/{b}; rules/branches/{b}; commits (list: ``sha``, ``path``, newest
first); pulls (list with state/head/base, paginated; create; edit),
pull, pull files (paginated; ``set_pull_files``), commit pulls, commit; ``GET /user`` (403
"Resource not accessible by integration" for the bot's installation token, like GitHub); issue;
issue comments (list paginated, create, get, edit, delete); statuses
(create, list, combined); check runs (create, get, update: 50 annotations per request);
reviews (paginated); collaborator permission; users; git
refs/commits/trees/blobs; contents (GET, and PUT create/update: 409 on a stale ``sha``, 404
"Branch ... not found"); actions workflows (get; dispatches), runs (list: ``head_sha``,
``status``; get), run artifacts, artifact, artifact zip. Pagination:
``per_page`` (default 30, max 100) and ``page``, with a ``Link`` header
(next/last/first/prev). Unknown endpoint: 404 ``{"message": "Not Found", ...}``.

404s carry GitHub's own wording, which differs per endpoint (``{"message", "documentation_url",
"status": "404"}``): contents at a ref that does not exist, "No commit found for the ref <ref>"
(PyGithub 2.x raises a plain ``GithubException`` for it, not ``UnknownObjectException``); a
missing file or git ref, "Not Found"; ``GET branches/<b>``, "Branch not found"; a contents PUT
on a missing branch, "Branch <b> not found"; ``GET commits/<sha>`` of an unknown commit, 422
"No commit found for SHA: <sha>".

Module helpers: ``validate_event(kind, payload)`` validates a webhook payload against the
recorded schema (``kind`` "workflow_run/completed", "pull_request/opened", ... or just the
event name when ``payload["action"]`` says the action) resolving ``$ref`` into ``common/``;
``load_webhook(relpath) -> dict`` reads a recorded payload; ``SECONDARY_RATE_LIMIT``.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import io
import json
import logging
import re
import subprocess
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import jsonschema
import referencing
import referencing.jsonschema
import yaml

from testing.fake_checks import FakeCheckRun, apply_update, check_run_json, check_run_problem
from testing.github_data import DATA, require

__all__ = [
    "GITHUB_DATA",
    "SECONDARY_RATE_LIMIT",
    "Exchange",
    "FakeComment",
    "FakeGitHub",
    "FakeStatus",
    "StartedRun",
    "load_webhook",
    "validate_event",
]

log = logging.getLogger("loopcontract.fake_github")

GITHUB_DATA = DATA
REAL_API = "https://api.github.com"
CHECK_RUN_REPLAY = "CheckRun.testCreateCheckRunCompleted.txt"
SECONDARY_RATE_LIMIT = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)
_DOCS = "https://docs.github.com/rest"
_PERMISSION_LEVEL = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}
_REVIEW_STATES = ("APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING")
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


# --------------------------------------------------------------------------- recorded data


@cache
def _read_json(data_dir: Path, relpath: str) -> Any:
    return json.loads((data_dir / relpath).read_text("utf-8"))


def _replay_bodies(data_dir: Path, name: str) -> list[Any]:
    """Response bodies of a PyGithub replay file (records of 10 lines, blank-line separated)."""
    lines = (data_dir / "pygithub-replay" / name).read_text("utf-8").split("\n")
    bodies = []
    for start in range(0, len(lines) - 9, 11):
        raw = lines[start + 9]
        if raw.strip():
            bodies.append(json.loads(raw))
    return bodies


@dataclass(frozen=True)
class _Templates:
    user: dict[str, Any]
    repo: dict[str, Any]
    pull: dict[str, Any]
    label: dict[str, Any]
    issue: dict[str, Any]
    comment: dict[str, Any]
    status: dict[str, Any]
    review: dict[str, Any]
    permission: dict[str, Any]
    workflow_run: dict[str, Any]


@cache
def _templates(data_dir: Path) -> _Templates:
    status_fixture = _read_json(data_dir, "api-fixtures/create-status.json")
    repo_fixture = _read_json(data_dir, "api-fixtures/get-repository.json")
    opened = _read_json(data_dir, "webhooks/pull_request/opened.payload.json")
    commented = _read_json(data_dir, "webhooks/issue_comment/created.payload.json")
    run = _read_json(data_dir, "webhooks/workflow_run/completed.payload.json")
    reviews = _replay_bodies(data_dir, "PullRequestReview.testAttributes.txt")[0]
    permission = _replay_bodies(data_dir, "Repository.testCollaboratorPermission.txt")[0]
    status = status_fixture[0]["response"]
    return _Templates(
        user=status["creator"],
        repo=repo_fixture[0]["response"],
        pull=opened["pull_request"],
        label=opened["pull_request"]["labels"][0],
        issue=commented["issue"],
        comment=commented["comment"],
        status=status,
        review=reviews[0],
        permission=permission,
        workflow_run=run["workflow_run"],
    )


def load_webhook(relpath: str, data_dir: Path = GITHUB_DATA) -> dict[str, Any]:
    """A deep copy of a recorded webhook payload, e.g. ``"workflow_run/completed.payload.json"``."""
    return copy.deepcopy(_read_json(require(data_dir), f"webhooks/{relpath}"))


@cache
def _schema_registry(data_dir: Path) -> referencing.Registry[Any]:
    resources = []
    for path in sorted((data_dir / "webhook-schemas").rglob("*.schema.json")):
        contents = json.loads(path.read_text("utf-8"))
        resource = referencing.jsonschema.DRAFT7.create_resource(contents)
        resources.append((contents["$id"], resource))
    return referencing.Registry().with_resources(resources)


def validate_event(kind: str, payload: Mapping[str, Any], data_dir: Path = GITHUB_DATA) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``payload`` matches the recorded schema.

    ``kind``: "workflow_run/completed", "pull_request.opened", or "workflow_run" (the action is
    then read from ``payload["action"]``)."""
    event, _, action = kind.replace(".", "/").partition("/")
    action = action or str(payload.get("action", ""))
    require(data_dir)
    path = data_dir / "webhook-schemas" / event / f"{action}.schema.json"
    schema = json.loads(path.read_text("utf-8"))
    validator = jsonschema.Draft7Validator(schema, registry=_schema_registry(data_dir))
    validator.validate(dict(payload))


def _rewrite(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_rewrite(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _rewrite(v, old, new) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- state records


@dataclass(frozen=True)
class Exchange:
    method: str
    path: str
    query: str
    status: int


@dataclass(frozen=True)
class FakeComment:
    id: int
    issue: int
    user: str
    body: str


@dataclass(frozen=True)
class FakeStatus:
    id: int
    sha: str
    state: str
    context: str
    description: str | None
    target_url: str | None
    creator: str


@dataclass(frozen=True)
class StartedRun:
    """A workflow run GitHub would start for something done through this API: ``event``
    (``workflow_dispatch``, ``pull_request``), the workflow file for a dispatch (None: every
    workflow on that event), the ref, the inputs, the login that caused it and, for a pull
    request, its number and ``action``."""

    event: str
    workflow: str | None
    ref: str
    inputs: Mapping[str, str]
    actor: str
    pr: int | None = None
    action: str = ""
    run_id: int | None = None  # a dispatch's run, queued in ``actions/runs`` until finished


@dataclass
class _Pull:
    number: int
    head_ref: str
    head_sha: str
    author: str
    base_ref: str
    fork: bool
    labels: list[str]
    state: str
    title: str
    created_at: str
    body: str | None = None
    base_sha: str | None = None  # None: the base branch's head


@dataclass
class _Review:
    id: int
    user: str
    state: str
    commit_id: str
    submitted_at: str


@dataclass
class _Comment:
    id: int
    issue: int
    user: str
    body: str
    created_at: str
    updated_at: str


@dataclass
class _Run:
    id: int
    head_sha: str
    head_branch: str
    event: str
    conclusion: str
    head_owner: str | None
    path: str = ".github/workflows/loop-contract-verify.yml"
    name: str = "loop-contract verify"
    status: str = "completed"
    display_title: str = ""


@dataclass
class _Artifact:
    id: int
    run_id: int
    name: str
    data: bytes
    expired: bool


@dataclass
class _Repo:
    id: int
    owner: str
    name: str
    default_branch: str
    pulls: dict[int, _Pull] = field(default_factory=dict)
    reviews: dict[int, list[_Review]] = field(default_factory=dict)
    comments: dict[int, _Comment] = field(default_factory=dict)
    statuses: list[FakeStatus] = field(default_factory=list)
    permissions: dict[str, str] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    trees: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    commits: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[int, _Run] = field(default_factory=dict)
    artifacts: dict[int, _Artifact] = field(default_factory=dict)
    pull_files: dict[int, dict[str, str | None]] = field(default_factory=dict)
    check_runs: dict[int, FakeCheckRun] = field(default_factory=dict)
    protected: set[str] = field(default_factory=set)
    rules: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    headers: dict[str, str]
    body: Any
    times: int
    landed: bool


@dataclass
class _Hold:
    method: str
    pattern: re.Pattern[str]
    until: float
    fault: _Fault


@dataclass
class _Response:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class _NotFound(Exception):
    """A 404; ``message`` is GitHub's wording for that endpoint (it varies, see the docstring)."""

    def __init__(self, message: str = "Not Found") -> None:
        super().__init__(message)
        self.message = message


def _not_found(message: str = "Not Found") -> dict[str, Any]:
    """GitHub's 404 body: the message, the docs link and the status as a string."""
    return {"message": message, "documentation_url": _DOCS, "status": "404"}


class _Unprocessable(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _default_fault_body(status: int) -> Any:
    if status == 403:
        return {"message": SECONDARY_RATE_LIMIT, "documentation_url": _DOCS}
    if status == 404:
        return _not_found()
    if status >= 500:
        return {"message": "Server Error"}
    return {"message": f"fault {status}"}


def _run_name(template: str, inputs: Mapping[str, str]) -> str:
    """A workflow's ``run-name`` with its ``${{ inputs.X || ... }}`` expressions filled in
    (the only expressions the fake evaluates); other expressions become empty."""

    def fill(match: re.Match[str]) -> str:
        found = re.match(r"\s*inputs\.(\w+)", match.group(1))
        return inputs.get(found.group(1), "") if found else ""

    return re.sub(r"\$\{\{(.*?)\}\}", fill, template)


def _blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _object_sha(kind: str, value: Any) -> str:
    return hashlib.sha1(
        f"{kind}\0".encode() + json.dumps(value, sort_keys=True).encode()
    ).hexdigest()


# --------------------------------------------------------------------------- the server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, each keep-alive request would
    # wait for the client's delayed ACK (~40-200 ms).
    disable_nagle_algorithm = True
    server: _Server

    def do_GET(self) -> None:
        self.server.fake._serve(self)

    do_POST = do_PATCH = do_DELETE = do_PUT = do_HEAD = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("fake github: " + format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGitHub


class FakeGitHub:
    """In-memory GitHub over real HTTP; see the module docstring for the API."""

    def __init__(
        self, *, bot_login: str = "github-actions[bot]", data_dir: Path = GITHUB_DATA
    ) -> None:
        self._data_dir = require(data_dir)
        self._t = _templates(data_dir)
        self._check_template = _replay_bodies(self._data_dir, CHECK_RUN_REPLAY)[0]
        self._lock = threading.RLock()
        self._clock = 0
        self._next_id = 1000
        self._repos: dict[str, _Repo] = {}
        self._default_repo: str | None = None
        self._users: dict[str, tuple[int, str]] = {}
        self._tokens: dict[str, str] = {}
        self._faults: list[_Fault] = []
        self._holds: list[_Hold] = []
        self._hooks: list[tuple[str, re.Pattern[str], Callable[[], None]]] = []
        self.bot_login = bot_login
        self.artifact_redirect = True
        self.requests: list[tuple[str, str]] = []
        self.exchanges: list[Exchange] = []
        self.unknown: list[tuple[str, str]] = []
        self.started: list[StartedRun] = []
        self.suppressed: list[StartedRun] = []
        # A bare repository standing in for GitHub's git side (``attach_git``): the branches
        # pushed there are the heads of this repository's pull requests.
        self.git_dir: Path | None = None
        self.add_user(bot_login, type="Bot")
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeGitHub:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="fake-github",
                daemon=True,
            )
            self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- helpers: ids, time

    def _id(self) -> int:
        with self._lock:
            self._next_id += 1
            return self._next_id

    def _now(self) -> str:
        with self._lock:
            self._clock += 1
            seconds = self._clock
        return f"2026-01-01T{seconds // 3600 % 24:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z"

    def _repo(self, repo: str | None) -> _Repo:
        key = repo or self._default_repo
        if key is None or key not in self._repos:
            raise KeyError(f"no repo {key!r}: call add_repo first")
        return self._repos[key]

    # ---------------------------------------------------------------- state helpers

    def add_user(self, login: str, type: str = "User") -> None:
        with self._lock:
            if login in self._users:
                self._users[login] = (self._users[login][0], type)
            else:
                self._users[login] = (self._id(), type)

    def _ensure_user(self, login: str) -> None:
        with self._lock:
            if login not in self._users:
                bot = login.endswith("[bot]")
                self.add_user(login, type="Bot" if bot else "User")

    def add_token(self, token: str, login: str) -> None:
        self._ensure_user(login)
        with self._lock:
            self._tokens[token] = login

    def add_repo(self, owner: str, name: str, default_branch: str = "main") -> None:
        self._ensure_user(owner)
        with self._lock:
            full = f"{owner}/{name}"
            r = _Repo(id=self._id(), owner=owner, name=name, default_branch=default_branch)
            self._repos[full] = r
            if self._default_repo is None:
                self._default_repo = full
            r.trees[_EMPTY_TREE] = []
            sha = self._store_commit(r, _EMPTY_TREE, [], "initial commit")
            r.refs[f"refs/heads/{default_branch}"] = sha

    def set_permission(self, login: str, permission: str, *, repo: str | None = None) -> None:
        if permission not in _PERMISSION_LEVEL:
            raise ValueError(f"unknown permission {permission!r}")
        self._ensure_user(login)
        with self._lock:
            self._repo(repo).permissions[login] = permission

    def add_pull(
        self,
        number: int,
        head_ref: str,
        head_sha: str,
        author: str,
        *,
        base_ref: str = "main",
        fork: bool = False,
        labels: Iterable[str] = (),
        state: str = "open",
        title: str | None = None,
        repo: str | None = None,
        base_sha: str | None = None,
    ) -> None:
        self._ensure_user(author)
        with self._lock:
            r = self._repo(repo)
            r.pulls[number] = _Pull(
                number=number,
                head_ref=head_ref,
                head_sha=head_sha,
                author=author,
                base_ref=base_ref,
                fork=fork,
                labels=list(labels),
                state=state,
                title=title or f"Candidate {head_ref}",
                created_at=self._now(),
                base_sha=base_sha,
            )

    def attach_git(self, git_dir: Path) -> None:
        """Pull requests (new and listed) take their head from ``git_dir``'s branches."""
        self.git_dir = Path(git_dir)

    def pull_state(self, number: int, *, repo: str | None = None) -> dict[str, Any]:
        """A pull request as the fake holds it: head_ref, head_sha, author, state, body."""
        with self._lock:
            r = self._repo(repo)
            p = r.pulls[number]
            head = self._pushed_head(p.head_ref) if not p.fork else None
            return {
                "head_ref": p.head_ref,
                "head_sha": head or p.head_sha,
                "author": p.author,
                "state": p.state,
                "body": p.body,
                "title": p.title,
            }

    def pull_numbers(self, *, repo: str | None = None) -> list[int]:
        with self._lock:
            return sorted(self._repo(repo).pulls)

    def set_pull_head(self, number: int, head_sha: str, *, repo: str | None = None) -> None:
        with self._lock:
            self._repo(repo).pulls[number].head_sha = head_sha

    def set_pull_state(self, number: int, state: str, *, repo: str | None = None) -> None:
        with self._lock:
            self._repo(repo).pulls[number].state = state

    def add_review(
        self,
        pr: int,
        user: str,
        state: str,
        commit_id: str,
        submitted_at: str | None = None,
        *,
        repo: str | None = None,
    ) -> int:
        if state.upper() not in _REVIEW_STATES:
            raise ValueError(f"unknown review state {state!r}")
        self._ensure_user(user)
        with self._lock:
            review = _Review(
                id=self._id(),
                user=user,
                state=state.upper(),
                commit_id=commit_id,
                submitted_at=submitted_at or self._now(),
            )
            self._repo(repo).reviews.setdefault(pr, []).append(review)
            return review.id

    def dismiss_review(self, pr: int, review_id: int, *, repo: str | None = None) -> None:
        with self._lock:
            for review in self._repo(repo).reviews.get(pr, []):
                if review.id == review_id:
                    review.state = "DISMISSED"

    def add_comment(self, pr: int, user: str, body: str, *, repo: str | None = None) -> int:
        self._ensure_user(user)
        with self._lock:
            now = self._now()
            c = _Comment(
                id=self._id(), issue=pr, user=user, body=body, created_at=now, updated_at=now
            )
            self._repo(repo).comments[c.id] = c
            return c.id

    def delete_comment(self, id: int, *, repo: str | None = None) -> None:
        with self._lock:
            del self._repo(repo).comments[id]

    def comments(self, pr: int, *, repo: str | None = None) -> list[FakeComment]:
        with self._lock:
            return [
                FakeComment(c.id, c.issue, c.user, c.body)
                for c in sorted(self._repo(repo).comments.values(), key=lambda c: c.id)
                if c.issue == pr
            ]

    def statuses(self, sha: str, *, repo: str | None = None) -> list[FakeStatus]:
        with self._lock:
            return [s for s in self._repo(repo).statuses if s.sha == sha]

    def latest_status(
        self, sha: str, context: str, *, repo: str | None = None
    ) -> FakeStatus | None:
        matching = [s for s in self.statuses(sha, repo=repo) if s.context == context]
        return matching[-1] if matching else None

    def check_runs(self, sha: str, *, repo: str | None = None) -> list[FakeCheckRun]:
        """The check runs on ``sha``, in creation order."""
        with self._lock:
            return [c for c in self._repo(repo).check_runs.values() if c.head_sha == sha]

    def add_workflow_run(
        self,
        run_id: int,
        *,
        head_sha: str,
        head_branch: str,
        event: str = "pull_request",
        conclusion: str = "success",
        head_owner: str | None = None,
        path: str = ".github/workflows/loop-contract-verify.yml",
        name: str = "loop-contract verify",
        repo: str | None = None,
        status: str = "completed",
    ) -> None:
        """A workflow run; ``path`` is the workflow file that ran (GitHub's
        ``workflow_run.path``), ``name`` its ``name:``, which any workflow can copy;
        ``status`` ``queued`` or ``in_progress`` for a run that has not finished."""
        with self._lock:
            self._repo(repo).runs[run_id] = _Run(
                run_id, head_sha, head_branch, event, conclusion, head_owner, path, name, status
            )

    def add_commit_at(
        self,
        sha: str,
        files: Mapping[str, bytes],
        *,
        base: str | None = None,
        repo: str | None = None,
    ) -> None:
        """Make commit ``sha`` (a candidate's real head, from a local git repository) readable
        through the contents API: the files of branch ``base`` (default: the default branch)
        with ``files`` on top."""
        with self._lock:
            r = self._repo(repo)
            parent = r.refs.get(f"refs/heads/{base or r.default_branch}")
            flat = self._flatten(r, r.commits[parent]["tree"]) if parent else {}
            for path, content in files.items():
                r.blobs[_blob_sha(content)] = content
                flat[path] = ("100644", _blob_sha(content))
            tree = self._store_tree(r, flat)
            r.commits[sha] = {
                "tree": tree,
                "parents": [parent] if parent else [],
                "message": "candidate",
                "author": {"name": "fake", "email": "fake@example.invalid", "date": self._now()},
                "committer": {"name": "fake", "email": "fake@example.invalid", "date": self._now()},
            }

    def set_pull_files(
        self, number: int, files: Mapping[str, str | None], *, repo: str | None = None
    ) -> None:
        """What ``GET /pulls/{n}/files`` lists: ``path -> patch`` (the unified-diff hunks GitHub
        puts in ``patch``; None for a file GitHub gives no patch for, e.g. a binary one).
        ``"old -> new"`` as the path records a rename."""
        with self._lock:
            self._repo(repo).pull_files[number] = dict(files)

    def add_artifact_zip(
        self,
        run_id: int,
        name: str,
        data: bytes,
        *,
        expired: bool = False,
        repo: str | None = None,
    ) -> int:
        with self._lock:
            r = self._repo(repo)
            if run_id not in r.runs:
                r.runs[run_id] = _Run(run_id, "0" * 40, "main", "pull_request", "success", None)
            a = _Artifact(id=self._id(), run_id=run_id, name=name, data=data, expired=expired)
            r.artifacts[a.id] = a
            return a.id

    def add_artifact(
        self,
        run_id: int,
        name: str,
        files: Mapping[str, bytes],
        *,
        expired: bool = False,
        repo: str | None = None,
    ) -> int:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for path, content in files.items():
                zf.writestr(path, content)
        return self.add_artifact_zip(run_id, name, buffer.getvalue(), expired=expired, repo=repo)

    # ---------------------------------------------------------------- git helpers

    def _store_commit(
        self,
        r: _Repo,
        tree: str,
        parents: list[str],
        message: str,
        author: Mapping[str, Any] | None = None,
        *,
        linked: str | None = None,
        signed: bool = False,
    ) -> str:
        """Store a commit. ``linked``: the GitHub user the API names as its author (GitHub
        links a commit to the user whose address its text carries); ``signed``: GitHub made
        and signed it (a commit created through the API by the token's own identity)."""
        now = self._now()
        who = dict(author or {"name": "fake", "email": "fake@example.invalid"})
        who.setdefault("date", now)
        body = {
            "tree": tree,
            "parents": list(parents),
            "message": message,
            "author": who,
            "committer": dict(who),
            "linked": linked,
            "signed": signed,
        }
        sha = _object_sha("commit", {**body, "n": self._id()})
        r.commits[sha] = body
        return sha

    def _api_commit(self, r: _Repo, tree: str, parents: list[str], message: str, login: str) -> str:
        """A commit GitHub makes for ``login`` through the API: author and committer are that
        identity, and GitHub signs it (``verification.verified``, reason ``valid``)."""
        self._ensure_user(login)
        email = f"{self._users[login][0]}+{login}@users.noreply.github.com"
        who = {"name": login, "email": email}
        return self._store_commit(r, tree, parents, message, who, linked=login, signed=True)

    def _store_tree(self, r: _Repo, files: Mapping[str, tuple[str, str]]) -> str:
        """A nested tree from ``path -> (mode, blob sha)``; returns the root tree sha."""
        children: dict[str, dict[str, tuple[str, str]]] = {}
        entries: list[dict[str, str]] = []
        for path, (mode, sha) in files.items():
            head, sep, rest = path.partition("/")
            if sep:
                children.setdefault(head, {})[rest] = (mode, sha)
            else:
                entries.append({"path": head, "mode": mode, "type": "blob", "sha": sha})
        for name, sub in children.items():
            entries.append(
                {"path": name, "mode": "040000", "type": "tree", "sha": self._store_tree(r, sub)}
            )
        entries.sort(key=lambda e: e["path"])
        sha = _object_sha("tree", entries)
        r.trees[sha] = entries
        return sha

    def _flatten(self, r: _Repo, tree_sha: str, prefix: str = "") -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for e in r.trees[tree_sha]:
            path = prefix + e["path"]
            if e["type"] == "tree":
                out.update(self._flatten(r, e["sha"], path + "/"))
            else:
                out[path] = (e["mode"], e["sha"])
        return out

    def commit_files(
        self,
        branch: str,
        files: Mapping[str, bytes],
        message: str = "seed",
        *,
        repo: str | None = None,
        author: str | None = None,
    ) -> str:
        """Commit ``files`` on top of ``branch`` (created as an orphan when missing), as a
        ``git push`` would: unsigned. ``author``: the login whose address the commit's text
        names, which the API then reports as its author (anyone can write any address)."""
        with self._lock:
            r = self._repo(repo)
            parent = r.refs.get(f"refs/heads/{branch}")
            flat = self._flatten(r, r.commits[parent]["tree"]) if parent else {}
            for path, content in files.items():
                r.blobs[_blob_sha(content)] = content
                flat[path] = ("100644", _blob_sha(content))
            tree = self._store_tree(r, flat)
            sha = self._store_commit(r, tree, [parent] if parent else [], message, linked=author)
            r.refs[f"refs/heads/{branch}"] = sha
            return sha

    def protect_branch(self, branch: str, *, repo: str | None = None) -> None:
        """Mark ``branch`` protected (``GET branches/<b>`` then says ``protected: true``)."""
        with self._lock:
            self._repo(repo).protected.add(branch)

    def require_status(
        self, branch: str, context: str, integration_id: int | None, *, repo: str | None = None
    ) -> None:
        """A repository ruleset on ``branch`` requiring ``context`` from the app
        ``integration_id`` (None: from any source), as ``GET rules/branches/<b>`` lists it."""
        with self._lock:
            r = self._repo(repo)
            check: dict[str, Any] = {"context": context}
            if integration_id is not None:
                check["integration_id"] = integration_id
            r.rules.setdefault(branch, []).append(
                {
                    "type": "required_status_checks",
                    "parameters": {
                        "strict_required_status_checks_policy": False,
                        "do_not_enforce_on_create": False,
                        "required_status_checks": [check],
                    },
                    "ruleset_source_type": "Repository",
                    "ruleset_source": r.full_name,
                    "ruleset_id": self._id(),
                }
            )

    def branch_sha(self, branch: str, *, repo: str | None = None) -> str | None:
        with self._lock:
            return self._repo(repo).refs.get(f"refs/heads/{branch}")

    def branch_files(self, branch: str, *, repo: str | None = None) -> dict[str, bytes]:
        with self._lock:
            r = self._repo(repo)
            sha = r.refs.get(f"refs/heads/{branch}")
            if sha is None:
                return {}
            flat = self._flatten(r, r.commits[sha]["tree"])
            return {path: r.blobs[blob] for path, (_, blob) in sorted(flat.items())}

    def _is_ancestor(self, r: _Repo, old: str, new: str) -> bool:
        seen: set[str] = set()
        todo = [new]
        while todo:
            sha = todo.pop()
            if sha == old:
                return True
            if sha in seen or sha not in r.commits:
                continue
            seen.add(sha)
            todo.extend(r.commits[sha]["parents"])
        return False

    # ---------------------------------------------------------------- events

    def workflow_run_event(
        self, run_id: int, *, pull_requests: list[int] | None = None, repo: str | None = None
    ) -> dict[str, Any]:
        """The recorded ``workflow_run`` completed payload for run ``run_id`` of this repo.

        ``pull_requests``: PR numbers listed in ``workflow_run.pull_requests`` (default: none,
        which is what GitHub sends for a fork's pull request)."""
        payload = load_webhook("workflow_run/completed.payload.json", self._data_dir)
        with self._lock:
            r = self._repo(repo)
            run = r.runs[run_id]
            wr = payload["workflow_run"]
            old_full = payload["repository"]["full_name"]
            old_owner = payload["repository"]["owner"]["login"]
            head_owner = run.head_owner or r.owner
            head = _rewrite(wr["head_repository"], old_full, f"{head_owner}/{r.name}")
            head["owner"] = _rewrite(head["owner"], old_owner, head_owner)
            head.update(
                id=r.id if head_owner == r.owner else r.id + 500_000,
                name=r.name,
                fork=head_owner != r.owner,
            )
            wr["head_repository"] = head
            for holder in (payload, wr):
                holder["repository"]["owner"] = _rewrite(
                    holder["repository"]["owner"], old_owner, r.owner
                )
                holder["repository"].update(id=r.id, name=r.name)
            wr.update(
                id=run.id,
                path=run.path,
                name=run.name,
                head_sha=run.head_sha,
                head_branch=run.head_branch,
                event=run.event,
                conclusion=run.conclusion,
                pull_requests=[self._run_pr_json(r, r.pulls[n]) for n in pull_requests or []],
            )
            wr["head_commit"].update(id=run.head_sha, tree_id=_EMPTY_TREE)
            payload = _rewrite(payload, f"actions/runs/{289782451}", f"actions/runs/{run.id}")
            payload = _rewrite(payload, old_full, r.full_name)
        rewritten: dict[str, Any] = _rewrite(payload, REAL_API, self.base_url)
        validate_event("workflow_run/completed", rewritten, self._data_dir)
        return rewritten

    # ---------------------------------------------------------------- fault injection

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
        times: int = 1,
        *,
        landed: bool = False,
    ) -> None:
        with self._lock:
            self._faults.append(
                _Fault(
                    method=method.upper(),
                    pattern=re.compile(path_regex),
                    status=status,
                    headers=dict(headers or {}),
                    body=_default_fault_body(status) if body is None else body,
                    times=times,
                    landed=landed,
                )
            )

    def before_next(self, method: str, path_regex: str, callback: Callable[[], None]) -> None:
        with self._lock:
            self._hooks.append((method.upper(), re.compile(path_regex), callback))

    def count(self, method: str, path_regex: str = "") -> int:
        pattern = re.compile(path_regex)
        with self._lock:
            return sum(1 for m, p in self.requests if m == method.upper() and pattern.search(p))

    # ---------------------------------------------------------------- JSON shapes

    def _user_json(self, login: str) -> dict[str, Any]:
        self._ensure_user(login)
        uid, kind = self._users[login]
        out: dict[str, Any] = _rewrite(self._t.user, "octokit-fixture-user-a", login)
        out.update(
            id=uid,
            node_id=base64.b64encode(f"04:User{uid}".encode()).decode(),
            avatar_url=f"https://avatars.githubusercontent.com/u/{uid}?v=4",
            type=kind,
        )
        return out

    def _repo_json(self, r: _Repo, *, override_owner: str | None = None) -> dict[str, Any]:
        owner = override_owner or r.owner
        full = f"{owner}/{r.name}"
        out: dict[str, Any] = _rewrite(self._t.repo, "octokit-fixture-org/hello-world", full)
        out.pop("organization", None)
        out.update(
            id=r.id if owner == r.owner else r.id + 500_000,
            name=r.name,
            full_name=full,
            owner=self._user_json(owner),
            default_branch=r.default_branch,
            fork=owner != r.owner,
            html_url=f"https://github.com/{full}",
        )
        return out

    def _base_sha(self, r: _Repo, branch: str) -> str:
        """The base branch's commit where a push lands (the attached repository), else the
        API's own branch."""
        return self._pushed_head(branch) or r.refs.get(f"refs/heads/{branch}", "0" * 40)

    def _run_pr_json(self, r: _Repo, p: _Pull) -> dict[str, Any]:
        ref = {"id": r.id, "url": f"{REAL_API}/repos/{r.full_name}", "name": r.name}
        base_sha = p.base_sha or self._base_sha(r, p.base_ref)
        return {
            "url": f"{REAL_API}/repos/{r.full_name}/pulls/{p.number}",
            "id": 100_000 + p.number,
            "number": p.number,
            "head": {"ref": p.head_ref, "sha": p.head_sha, "repo": ref},
            "base": {"ref": p.base_ref, "sha": base_sha, "repo": ref},
        }

    def _label_json(self, r: _Repo, name: str) -> dict[str, Any]:
        out = copy.deepcopy(self._t.label)
        out.update(
            id=int(hashlib.sha1(name.encode()).hexdigest()[:8], 16),
            name=name,
            url=f"{REAL_API}/repos/{r.full_name}/labels/{name}",
            default=False,
        )
        return out

    def _pull_json(self, r: _Repo, p: _Pull) -> dict[str, Any]:
        api = f"{REAL_API}/repos/{r.full_name}"
        html = f"https://github.com/{r.full_name}/pull/{p.number}"
        head_owner = p.author if p.fork else r.owner
        if not p.fork:
            p.head_sha = self._pushed_head(p.head_ref) or p.head_sha
        out = copy.deepcopy(self._t.pull)
        head_repo = self._repo_json(r, override_owner=head_owner) if p.fork else self._repo_json(r)
        out.update(
            url=f"{api}/pulls/{p.number}",
            id=100_000 + p.number,
            node_id=base64.b64encode(f"11:PullRequest{p.number}".encode()).decode(),
            html_url=html,
            diff_url=f"{html}.diff",
            patch_url=f"{html}.patch",
            issue_url=f"{api}/issues/{p.number}",
            number=p.number,
            state="open" if p.state == "open" else "closed",
            title=p.title,
            user=self._user_json(p.author),
            body=p.body,
            created_at=p.created_at,
            updated_at=p.created_at,
            closed_at=None if p.state == "open" else p.created_at,
            merged_at=p.created_at if p.state == "merged" else None,
            merged=p.state == "merged",
            assignees=[],
            requested_reviewers=[],
            labels=[self._label_json(r, name) for name in p.labels],
            commits_url=f"{api}/pulls/{p.number}/commits",
            review_comments_url=f"{api}/pulls/{p.number}/comments",
            review_comment_url=f"{api}/pulls/comments{{/number}}",
            comments_url=f"{api}/issues/{p.number}/comments",
            statuses_url=f"{api}/statuses/{p.head_sha}",
            author_association="CONTRIBUTOR",
            head={
                "label": f"{head_owner}:{p.head_ref}",
                "ref": p.head_ref,
                "sha": p.head_sha,
                "user": self._user_json(head_owner),
                "repo": head_repo,
            },
            base={
                "label": f"{r.owner}:{p.base_ref}",
                "ref": p.base_ref,
                "sha": p.base_sha or self._base_sha(r, p.base_ref),
                "user": self._user_json(r.owner),
                "repo": self._repo_json(r),
            },
            _links={
                "self": {"href": f"{api}/pulls/{p.number}"},
                "html": {"href": html},
                "issue": {"href": f"{api}/issues/{p.number}"},
                "comments": {"href": f"{api}/issues/{p.number}/comments"},
                "review_comments": {"href": f"{api}/pulls/{p.number}/comments"},
                "review_comment": {"href": f"{api}/pulls/comments{{/number}}"},
                "commits": {"href": f"{api}/pulls/{p.number}/commits"},
                "statuses": {"href": f"{api}/statuses/{p.head_sha}"},
            },
        )
        return out

    def _issue_json(self, r: _Repo, p: _Pull) -> dict[str, Any]:
        api = f"{REAL_API}/repos/{r.full_name}"
        html = f"https://github.com/{r.full_name}/pull/{p.number}"
        out = copy.deepcopy(self._t.issue)
        out.update(
            url=f"{api}/issues/{p.number}",
            repository_url=api,
            labels_url=f"{api}/issues/{p.number}/labels{{/name}}",
            comments_url=f"{api}/issues/{p.number}/comments",
            events_url=f"{api}/issues/{p.number}/events",
            html_url=html,
            id=200_000 + p.number,
            number=p.number,
            title=p.title,
            user=self._user_json(p.author),
            labels=[self._label_json(r, name) for name in p.labels],
            state="open" if p.state == "open" else "closed",
            assignee=None,
            assignees=[],
            milestone=None,
            comments=sum(1 for c in r.comments.values() if c.issue == p.number),
            pull_request={
                "url": f"{api}/pulls/{p.number}",
                "html_url": html,
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
            },
            body=None,
        )
        return out

    def _comment_json(self, r: _Repo, c: _Comment) -> dict[str, Any]:
        api = f"{REAL_API}/repos/{r.full_name}"
        out = copy.deepcopy(self._t.comment)
        out.update(
            url=f"{api}/issues/comments/{c.id}",
            html_url=f"https://github.com/{r.full_name}/pull/{c.issue}#issuecomment-{c.id}",
            issue_url=f"{api}/issues/{c.issue}",
            id=c.id,
            node_id=base64.b64encode(f"12:IssueComment{c.id}".encode()).decode(),
            user=self._user_json(c.user),
            created_at=c.created_at,
            updated_at=c.updated_at,
            author_association="NONE",
            body=c.body,
        )
        out["reactions"]["url"] = f"{api}/issues/comments/{c.id}/reactions"
        return out

    def _status_json(self, r: _Repo, s: FakeStatus) -> dict[str, Any]:
        out = copy.deepcopy(self._t.status)
        out.update(
            url=f"{REAL_API}/repos/{r.full_name}/statuses/{s.sha}",
            id=s.id,
            state=s.state,
            description=s.description,
            target_url=s.target_url,
            context=s.context,
            creator=self._user_json(s.creator),
        )
        return out

    def _review_json(self, r: _Repo, pr: int, v: _Review) -> dict[str, Any]:
        api = f"{REAL_API}/repos/{r.full_name}"
        html = f"https://github.com/{r.full_name}/pull/{pr}#pullrequestreview-{v.id}"
        out = copy.deepcopy(self._t.review)
        out.update(
            id=v.id,
            user=self._user_json(v.user),
            body="",
            state=v.state,
            html_url=html,
            pull_request_url=f"{api}/pulls/{pr}",
            _links={"html": {"href": html}, "pull_request": {"href": f"{api}/pulls/{pr}"}},
            submitted_at=v.submitted_at,
            commit_id=v.commit_id,
        )
        return out

    def _ref_json(self, r: _Repo, ref: str, sha: str) -> dict[str, Any]:
        api = f"{REAL_API}/repos/{r.full_name}"
        return {
            "ref": ref,
            "node_id": base64.b64encode(f"03:Ref{ref}".encode()).decode(),
            "url": f"{api}/git/{ref}",
            "object": {"sha": sha, "type": "commit", "url": f"{api}/git/commits/{sha}"},
        }

    def _git_commit_json(self, r: _Repo, sha: str) -> dict[str, Any]:
        api = f"{REAL_API}/repos/{r.full_name}"
        c = r.commits[sha]
        return {
            "sha": sha,
            "node_id": base64.b64encode(f"06:Commit{sha}".encode()).decode(),
            "url": f"{api}/git/commits/{sha}",
            "html_url": f"https://github.com/{r.full_name}/commit/{sha}",
            "author": c["author"],
            "committer": c["committer"],
            "tree": {"sha": c["tree"], "url": f"{api}/git/trees/{c['tree']}"},
            "message": c["message"],
            "parents": [
                {
                    "sha": p,
                    "url": f"{api}/git/commits/{p}",
                    "html_url": f"https://github.com/{r.full_name}/commit/{p}",
                }
                for p in c["parents"]
            ],
            "verification": self._verification_json(c),
        }

    @staticmethod
    def _verification_json(c: Mapping[str, Any]) -> dict[str, Any]:
        if c.get("signed"):
            return {
                "verified": True,
                "reason": "valid",
                "signature": "-----BEGIN PGP SIGNATURE-----\n(fake)\n-----END PGP SIGNATURE-----\n",
                "payload": f"tree {c['tree']}\n",
                "verified_at": c["committer"].get("date"),
            }
        return {"verified": False, "reason": "unsigned", "signature": None, "payload": None}

    def _commit_json(self, r: _Repo, sha: str) -> dict[str, Any]:
        """``GET commits/<sha>``'s shape: the git commit, and the GitHub users the API links
        it to (GitHub's own ``web-flow`` commits what it signs)."""
        api = f"{REAL_API}/repos/{r.full_name}"
        c = r.commits[sha]
        linked = c.get("linked")
        return {
            "sha": sha,
            "node_id": base64.b64encode(f"06:Commit{sha}".encode()).decode(),
            "url": f"{api}/commits/{sha}",
            "html_url": f"https://github.com/{r.full_name}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "commit": self._git_commit_json(r, sha),
            "author": self._user_json(linked) if linked else None,
            "committer": self._user_json("web-flow") if c.get("signed") else None,
            "parents": [{"sha": p, "url": f"{api}/commits/{p}"} for p in c["parents"]],
        }

    def _tree_json(self, r: _Repo, sha: str, recursive: bool) -> dict[str, Any]:
        api = f"{REAL_API}/repos/{r.full_name}"

        def entries(tree: str, prefix: str) -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = []
            for e in r.trees[tree]:
                item: dict[str, Any] = {**e, "path": prefix + e["path"]}
                if e["type"] == "blob":
                    item["size"] = len(r.blobs[e["sha"]])
                    item["url"] = f"{api}/git/blobs/{e['sha']}"
                else:
                    item["url"] = f"{api}/git/trees/{e['sha']}"
                out.append(item)
                if recursive and e["type"] == "tree":
                    out.extend(entries(e["sha"], item["path"] + "/"))
            return out

        return {
            "sha": sha,
            "url": f"{api}/git/trees/{sha}",
            "tree": entries(sha, ""),
            "truncated": False,
        }

    def _blob_json(self, r: _Repo, sha: str) -> dict[str, Any]:
        data = r.blobs[sha]
        return {
            "sha": sha,
            "node_id": base64.b64encode(f"04:Blob{sha}".encode()).decode(),
            "size": len(data),
            "url": f"{REAL_API}/repos/{r.full_name}/git/blobs/{sha}",
            "content": base64.encodebytes(data).decode(),
            "encoding": "base64",
        }

    def _run_json(self, r: _Repo, run: _Run) -> dict[str, Any]:
        old = "octo-org/octo-repo"
        runs = f"{r.full_name}/actions/runs/{run.id}"
        out: dict[str, Any] = _rewrite(self._t.workflow_run, f"{old}/actions/runs/289782451", runs)
        out = _rewrite(out, old, r.full_name)
        out.update(
            id=run.id,
            path=run.path,
            name=run.name,
            head_sha=run.head_sha,
            head_branch=run.head_branch,
            event=run.event,
            conclusion=run.conclusion if run.status == "completed" else None,
            status=run.status,
            display_title=run.display_title or run.name,
            pull_requests=[],
            repository=self._repo_json(r),
            head_repository=self._repo_json(r, override_owner=run.head_owner or r.owner),
        )
        return out

    def _artifact_json(self, r: _Repo, a: _Artifact) -> dict[str, Any]:
        api = f"{REAL_API}/repos/{r.full_name}"
        run = r.runs[a.run_id]
        return {
            "id": a.id,
            "node_id": base64.b64encode(f"08:Artifact{a.id}".encode()).decode(),
            "name": a.name,
            "size_in_bytes": len(a.data),
            "url": f"{api}/actions/artifacts/{a.id}",
            "archive_download_url": f"{api}/actions/artifacts/{a.id}/zip",
            "expired": a.expired,
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-04-01T00:00:00Z",
            "digest": "sha256:" + hashlib.sha256(a.data).hexdigest(),
            "workflow_run": {
                "id": run.id,
                "repository_id": r.id,
                "head_repository_id": r.id,
                "head_branch": run.head_branch,
                "head_sha": run.head_sha,
            },
        }

    # ---------------------------------------------------------------- request handling

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        method = h.command.upper()
        split = urlsplit(h.path)
        path = unquote(split.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        with self._lock:
            self.requests.append((method, path))
            hooks = [x for x in self._hooks if x[0] == method and x[1].search(path)]
            for hook in hooks[:1]:
                self._hooks.remove(hook)
        for _, _, callback in hooks[:1]:
            callback()
        try:
            response = self._respond(h, method, path, split.query, raw)
        except Exception:
            log.exception("fake github: handler failed for %s %s", method, path)
            response = _Response(500, {"message": "fake server error"})
        with self._lock:
            self.exchanges.append(Exchange(method, path, split.query, response.status))
        self._write(h, method, response)

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        with self._lock:
            now = time.monotonic()
            self._holds = [x for x in self._holds if x.until > now]
            for hold in self._holds:
                if hold.method == method and hold.pattern.search(path):
                    return hold.fault
            for fault in self._faults:
                if fault.method == method and fault.pattern.search(path):
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                    retry_after = fault.headers.get("Retry-After")
                    if retry_after is not None:
                        until = now + float(retry_after)
                        self._holds.append(_Hold(method, fault.pattern, until, fault))
                    return fault
        return None

    def _respond(
        self, h: BaseHTTPRequestHandler, method: str, path: str, query: str, raw: bytes
    ) -> _Response:
        if path.startswith("/_fake/download/"):
            return self._download(path)
        fault = self._take_fault(method, path)
        if fault is not None and not fault.landed:
            return _Response(fault.status, fault.body, dict(fault.headers))
        auth = h.headers.get("Authorization")
        if not auth:
            return _Response(
                401, {"message": "Requires authentication", "documentation_url": _DOCS}
            )
        token = auth.split(None, 1)[-1]
        with self._lock:
            login = self._tokens.get(token, self.bot_login)
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            return _Response(400, {"message": "Problems parsing JSON", "documentation_url": _DOCS})
        params = {k: v[-1] for k, v in parse_qs(query).items()}
        response = self._route(method, path, params, body, login)
        if fault is not None:
            return _Response(fault.status, fault.body, dict(fault.headers))
        return response

    def _write(self, h: BaseHTTPRequestHandler, method: str, response: _Response) -> None:
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "4999",
            "X-RateLimit-Reset": str(2_000_000_000),
            "X-RateLimit-Resource": "core",
            "X-GitHub-Media-Type": "github.v3; format=json",
            **response.headers,
        }
        if isinstance(response.body, bytes):
            payload = response.body
        elif response.body is None:
            payload = b""
        else:
            payload = json.dumps(_rewrite(response.body, REAL_API, self.base_url)).encode()
        if "Link" in headers:
            headers["Link"] = headers["Link"].replace(REAL_API, self.base_url)
        if "Location" in headers:
            headers["Location"] = headers["Location"].replace(REAL_API, self.base_url)
        h.send_response(response.status)
        for key, value in headers.items():
            h.send_header(key, value)
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        if method != "HEAD" and payload:
            h.wfile.write(payload)

    def _download(self, path: str) -> _Response:
        match = re.fullmatch(r"/_fake/download/([^/]+/[^/]+)/(\d+)\.zip", path)
        with self._lock:
            if match and match[1] in self._repos:
                artifact = self._repos[match[1]].artifacts.get(int(match[2]))
                if artifact is not None:
                    return _Response(200, artifact.data, {"Content-Type": "application/zip"})
        return _Response(404, _not_found())

    # ---------------------------------------------------------------- routing

    _ROUTES: tuple[tuple[str, str, str], ...] = (
        ("GET", r"/user", "_get_me"),
        ("GET", r"/users/(?P<user>[^/]+)", "_get_user"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)", "_get_repo"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls", "_list_pulls"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)", "_get_pull"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls", "_create_pull"),
        ("PATCH", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)", "_edit_pull"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/reviews", "_list_reviews"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/files", "_list_pull_files"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)", "_get_issue"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/comments", "_list_comments"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/comments", "_create_comment"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<id>\d+)", "_get_comment"),
        ("PATCH", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<id>\d+)", "_edit_comment"),
        ("DELETE", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<id>\d+)", "_del_comment"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits", "_list_commits"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[^/]+)", "_get_commit"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[^/]+)/pulls", "_commit_pulls"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[^/]+)/statuses", "_list_statuses"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/statuses/(?P<sha>[^/]+)", "_list_statuses"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[^/]+)/status", "_combined_status"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/statuses/(?P<sha>[^/]+)", "_create_status"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/check-runs", "_create_check_run"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/check-runs/(?P<id>\d+)", "_get_check_run"),
        ("PATCH", r"/repos/(?P<repo>[^/]+/[^/]+)/check-runs/(?P<id>\d+)", "_edit_check_run"),
        (
            "GET",
            r"/repos/(?P<repo>[^/]+/[^/]+)/collaborators/(?P<user>[^/]+)/permission",
            "_permission",
        ),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/git/refs?/(?P<ref>.+)", "_get_ref"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/git/refs", "_create_ref"),
        ("PATCH", r"/repos/(?P<repo>[^/]+/[^/]+)/git/refs/(?P<ref>.+)", "_update_ref"),
        ("DELETE", r"/repos/(?P<repo>[^/]+/[^/]+)/git/refs/(?P<ref>.+)", "_delete_ref"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/git/commits/(?P<sha>[0-9a-f]+)", "_get_gcommit"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/git/commits", "_create_gcommit"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/git/trees/(?P<sha>[^/]+)", "_get_tree"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/git/trees", "_create_tree"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/git/blobs/(?P<sha>[0-9a-f]+)", "_get_blob"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/git/blobs", "_create_blob"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/contents/?(?P<path>.*)", "_get_contents"),
        ("PUT", r"/repos/(?P<repo>[^/]+/[^/]+)/contents/(?P<path>.+)", "_put_contents"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/branches/(?P<branch>.+)", "_get_branch"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/rules/branches/(?P<branch>.+)", "_branch_rules"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/workflows/(?P<id>[^/]+)", "_get_workflow"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/workflows/(?P<id>[^/]+)/runs", "_list_runs"),
        (
            "POST",
            r"/repos/(?P<repo>[^/]+/[^/]+)/actions/workflows/(?P<id>[^/]+)/dispatches",
            "_dispatch_workflow",
        ),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs", "_list_runs"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs/(?P<id>\d+)", "_get_run"),
        (
            "GET",
            r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs/(?P<id>\d+)/artifacts",
            "_run_artifacts",
        ),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/artifacts/(?P<id>\d+)", "_get_artifact"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/artifacts/(?P<id>\d+)/zip", "_artifact_zip"),
    )

    def _route(
        self, method: str, path: str, params: dict[str, str], body: Any, login: str
    ) -> _Response:
        for route_method, pattern, name in self._ROUTES:
            if route_method != method:
                continue
            match = re.fullmatch(pattern, path)
            if match is None:
                continue
            args = match.groupdict()
            handler: Callable[..., _Response] = getattr(self, name)
            try:
                with self._lock:
                    if "repo" in args:
                        if args["repo"] not in self._repos:
                            raise _NotFound
                        args["repo"] = self._repos[args["repo"]]
                    return handler(params=params, body=body, login=login, **args)
            except _NotFound as exc:
                return _Response(404, _not_found(exc.message))
            except KeyError:
                return _Response(404, _not_found())
            except _Unprocessable as exc:
                return _Response(422, {"message": exc.message, "documentation_url": _DOCS})
        log.warning("fake github: no endpoint for %s %s", method, path)
        with self._lock:
            self.unknown.append((method, path))
        return _Response(404, _not_found())

    def _paginate(self, path: str, params: dict[str, str], items: list[Any]) -> _Response:
        per_page = max(1, min(100, int(params.get("per_page", 30))))
        page = max(1, int(params.get("page", 1)))
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        rest = "&".join(f"{k}={v}" for k, v in params.items() if k not in ("page", "per_page"))

        def link(n: int, rel: str) -> str:
            query = f"{rest}&" if rest else ""
            return f'<{REAL_API}{path}?{query}per_page={per_page}&page={n}>; rel="{rel}"'

        links = []
        if page > 1:
            links.append(link(page - 1, "prev"))
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links.append(link(1, "first"))
        headers = {"Link": ", ".join(links)} if links else {}
        return _Response(200, chunk, headers)

    # users, repos ------------------------------------------------------------

    def _get_user(self, *, user: str, **_: Any) -> _Response:
        if user not in self._users:
            raise _NotFound
        return _Response(200, self._user_json(user))

    def _get_me(self, *, login: str, **_: Any) -> _Response:
        # An installation token (GITHUB_TOKEN) may not read /user: GitHub answers 403.
        if login == self.bot_login:
            return _Response(
                403, {"message": "Resource not accessible by integration", "status": "403"}
            )
        return _Response(200, self._user_json(login))

    def _get_repo(self, *, repo: _Repo, **_: Any) -> _Response:
        return _Response(200, self._repo_json(repo))

    def _permission(self, *, repo: _Repo, user: str, **_: Any) -> _Response:
        if user not in self._users:
            raise _NotFound
        role = repo.permissions.get(user, "none")
        out = copy.deepcopy(self._t.permission)
        out.update(permission=_PERMISSION_LEVEL[role], role_name=role, user=self._user_json(user))
        return _Response(200, out)

    # pulls -------------------------------------------------------------------

    def _list_pulls(self, *, repo: _Repo, params: dict[str, str], **_: Any) -> _Response:
        state = params.get("state", "open")
        pulls = sorted(repo.pulls.values(), key=lambda p: p.number, reverse=True)
        if state != "all":
            pulls = [p for p in pulls if (p.state == "open") == (state == "open")]
        if "head" in params:
            pulls = [
                p
                for p in pulls
                if f"{p.author if p.fork else repo.owner}:{p.head_ref}" == params["head"]
            ]
        if "base" in params:
            pulls = [p for p in pulls if p.base_ref == params["base"]]
        items = [self._pull_json(repo, p) for p in pulls]
        return self._paginate(f"/repos/{repo.full_name}/pulls", params, items)

    def _get_pull(self, *, repo: _Repo, n: str, **_: Any) -> _Response:
        return _Response(200, self._pull_json(repo, repo.pulls[int(n)]))

    def _create_pull(self, *, repo: _Repo, body: Any, login: str, **_: Any) -> _Response:
        # As GitHub: the head must be a pushed branch, one open pull request per head and
        # base; the number is the repository's next issue number.
        head = str(body.get("head") or "")
        branch = head.split(":", 1)[1] if ":" in head else head
        sha = self._pushed_head(branch) or repo.refs.get(f"refs/heads/{branch}")
        if not branch or sha is None or not body.get("title"):
            raise _Unprocessable("Validation Failed")
        base = str(body.get("base") or repo.default_branch)
        for p in repo.pulls.values():
            if p.head_ref == branch and p.base_ref == base and p.state == "open" and not p.fork:
                raise _Unprocessable(f"A pull request already exists for {repo.owner}:{branch}.")
        number = max([0, *repo.pulls]) + 1
        self._ensure_user(login)
        pull = _Pull(number, branch, sha, login, base, False, [], "open", str(body["title"]),
                     self._now(), body.get("body"))  # fmt: skip
        repo.pulls[number] = pull
        self._caused(StartedRun("pull_request", None, branch, {}, login, number, "opened"))
        out = self._pull_json(repo, pull)
        return _Response(201, out, {"Location": out["url"]})

    def _edit_pull(self, *, repo: _Repo, n: str, body: Any, **_: Any) -> _Response:
        pull = repo.pulls[int(n)]
        pull.title = str(body.get("title") or pull.title)
        pull.body = body.get("body", pull.body)
        if body.get("state") in ("open", "closed"):
            pull.state = body["state"]
        return _Response(200, self._pull_json(repo, pull))

    def _caused(self, run: StartedRun) -> None:
        """GitHub's rule against recursive runs: an event caused by ``GITHUB_TOKEN`` (the
        bot's token here) starts no workflow run, except ``workflow_dispatch`` and
        ``repository_dispatch``. What it would start goes to ``started``, the rest to
        ``suppressed``."""
        if run.actor == self.bot_login and run.event not in ("workflow_dispatch",):
            self.suppressed.append(run)
        else:
            self.started.append(run)

    def _workflow_file(self, repo: _Repo, name: str, ref: str) -> tuple[str, bytes] | None:
        """The workflow ``name`` (a file name or ``.github/workflows/<file>``) at ``ref``."""
        sha = repo.refs.get(f"refs/heads/{ref}")
        if sha is None:
            return None
        path = name if name.startswith(".github/") else f".github/workflows/{name}"
        entry = self._flatten(repo, repo.commits[sha]["tree"]).get(path)
        return (path, repo.blobs[entry[1]]) if entry is not None else None

    def _workflow_json(self, repo: _Repo, path: str) -> dict[str, Any]:
        api = f"{REAL_API}/repos/{repo.full_name}"
        wid = int(hashlib.sha256(path.encode()).hexdigest()[:6], 16)
        return {
            "id": wid,
            "node_id": base64.b64encode(f"08:Workflow{wid}".encode()).decode(),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "state": "active",
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "url": f"{api}/actions/workflows/{path.rsplit('/', 1)[-1]}",
            "html_url": f"https://github.com/{repo.full_name}/blob/{repo.default_branch}/{path}",
            "badge_url": f"https://github.com/{repo.full_name}/workflows/x/badge.svg",
        }

    def _get_workflow(self, *, repo: _Repo, id: str, **_: Any) -> _Response:
        found = self._workflow_file(repo, id, repo.default_branch)
        if found is None:
            raise _NotFound
        return _Response(200, self._workflow_json(repo, found[0]))

    def _dispatch_workflow(
        self, *, repo: _Repo, id: str, body: Any, login: str, **_: Any
    ) -> _Response:
        ref = str(body.get("ref") or "").removeprefix("refs/heads/")
        if f"refs/heads/{ref}" not in repo.refs:
            raise _Unprocessable(f"No ref found for: {ref}")
        found = self._workflow_file(repo, id, ref)
        if found is None:
            raise _NotFound
        document = yaml.safe_load(found[1])
        triggers = document.get(True) or {}  # YAML 1.1 reads `on:` as True
        if "workflow_dispatch" not in triggers:
            raise _Unprocessable("Workflow does not have 'workflow_dispatch' trigger")
        inputs = {str(k): str(v) for k, v in (body.get("inputs") or {}).items()}
        run_id = self._id()
        head = self._pushed_head(ref) or repo.refs[f"refs/heads/{ref}"]
        title = _run_name(str(document.get("run-name") or document.get("name") or ""), inputs)
        repo.runs[run_id] = _Run(
            run_id, head, ref, "workflow_dispatch", "", None, found[0],
            str(document.get("name") or found[0]), "queued", title,
        )  # fmt: skip
        self._caused(StartedRun("workflow_dispatch", found[0], ref, inputs, login, run_id=run_id))
        return _Response(204)

    def finish_run(
        self, run_id: int, conclusion: str = "success", *, repo: str | None = None
    ) -> None:
        """Mark a run (a dispatched one, say) completed with ``conclusion``."""
        with self._lock:
            run = self._repo(repo).runs[run_id]
            run.status, run.conclusion = "completed", conclusion

    def _pushed_head(self, branch: str) -> str | None:
        """The branch's commit in the attached git repository (what a ``git push`` to GitHub
        updates), or None without one."""
        if self.git_dir is None:
            return None
        proc = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "rev-parse", "-q", "--verify",
             f"refs/heads/{branch}^{{commit}}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return proc.stdout.strip() or None

    def _commit_pulls(
        self, *, repo: _Repo, sha: str, params: dict[str, str], **_: Any
    ) -> _Response:
        # Like GitHub for a commit not on the default branch: the pulls whose head it is. Fork
        # pulls are included only when their head commit is known to the base repository, which
        # GitHub does not promise; callers must be ready to fall back to listing pulls.
        pulls = [p for p in repo.pulls.values() if p.head_sha == sha and not p.fork]
        items = [self._pull_json(repo, p) for p in sorted(pulls, key=lambda p: p.number)]
        return self._paginate(f"/repos/{repo.full_name}/commits/{sha}/pulls", params, items)

    def _list_reviews(self, *, repo: _Repo, n: str, params: dict[str, str], **_: Any) -> _Response:
        if int(n) not in repo.pulls:
            raise _NotFound
        items = [self._review_json(repo, int(n), v) for v in repo.reviews.get(int(n), [])]
        return self._paginate(f"/repos/{repo.full_name}/pulls/{n}/reviews", params, items)

    def _list_pull_files(
        self, *, repo: _Repo, n: str, params: dict[str, str], **_: Any
    ) -> _Response:
        pull = repo.pulls[int(n)]
        api = f"{REAL_API}/repos/{repo.full_name}"
        items = []
        for key, patch in sorted(repo.pull_files.get(int(n), {}).items()):
            old, arrow, name = key.partition(" -> ")
            name = name if arrow else old
            lines = (patch or "").splitlines()
            item: dict[str, Any] = {
                "sha": _blob_sha((patch or name).encode()),
                "filename": name,
                "status": "renamed" if arrow else "modified",
                "additions": sum(line.startswith("+") for line in lines),
                "deletions": sum(line.startswith("-") for line in lines),
                "changes": sum(line[:1] in "+-" for line in lines if line),
                "blob_url": f"https://github.com/{repo.full_name}/blob/{pull.head_sha}/{name}",
                "raw_url": f"https://github.com/{repo.full_name}/raw/{pull.head_sha}/{name}",
                "contents_url": f"{api}/contents/{name}?ref={pull.head_sha}",
            }
            if patch is not None:
                item["patch"] = patch
            if arrow:
                item["previous_filename"] = old
            items.append(item)
        return self._paginate(f"/repos/{repo.full_name}/pulls/{n}/files", params, items)

    def _get_issue(self, *, repo: _Repo, n: str, **_: Any) -> _Response:
        return _Response(200, self._issue_json(repo, repo.pulls[int(n)]))

    # comments ----------------------------------------------------------------

    def _list_comments(self, *, repo: _Repo, n: str, params: dict[str, str], **_: Any) -> _Response:
        if int(n) not in repo.pulls:
            raise _NotFound
        comments = sorted(
            (c for c in repo.comments.values() if c.issue == int(n)), key=lambda c: c.id
        )
        items = [self._comment_json(repo, c) for c in comments]
        return self._paginate(f"/repos/{repo.full_name}/issues/{n}/comments", params, items)

    def _create_comment(self, *, repo: _Repo, n: str, body: Any, login: str, **_: Any) -> _Response:
        if int(n) not in repo.pulls:
            raise _NotFound
        text = body.get("body") if isinstance(body, dict) else None
        if not isinstance(text, str) or not text:
            raise _Unprocessable("Validation Failed: body is missing")
        if len(text) > 65536:
            raise _Unprocessable(
                "Validation Failed: body is too long (maximum is 65536 characters)"
            )
        comment_id = self.add_comment(int(n), login, text, repo=repo.full_name)
        out = self._comment_json(repo, repo.comments[comment_id])
        return _Response(201, out, {"Location": out["url"]})

    def _get_comment(self, *, repo: _Repo, id: str, **_: Any) -> _Response:
        return _Response(200, self._comment_json(repo, repo.comments[int(id)]))

    def _edit_comment(self, *, repo: _Repo, id: str, body: Any, login: str, **_: Any) -> _Response:
        c = repo.comments[int(id)]
        text = body.get("body") if isinstance(body, dict) else None
        if not isinstance(text, str) or not text:
            raise _Unprocessable("Validation Failed: body is missing")
        if len(text) > 65536:
            raise _Unprocessable(
                "Validation Failed: body is too long (maximum is 65536 characters)"
            )
        if c.user != login:
            return _Response(
                403,
                {"message": "Resource not accessible by integration", "documentation_url": _DOCS},
            )
        c.body = text
        c.updated_at = self._now()
        return _Response(200, self._comment_json(repo, c))

    def _del_comment(self, *, repo: _Repo, id: str, **_: Any) -> _Response:
        del repo.comments[int(id)]
        return _Response(204)

    # statuses ----------------------------------------------------------------

    def _known_sha(self, repo: _Repo, sha: str) -> bool:
        return sha in repo.commits or any(p.head_sha == sha for p in repo.pulls.values())

    def _list_commits(self, *, repo: _Repo, params: dict[str, str], **_: Any) -> _Response:
        """``GET commits?sha=&path=``: newest first, following first parents, only the
        commits that changed ``path`` when it is given."""
        start = params.get("sha") or repo.default_branch
        sha: str | None = repo.refs.get(f"refs/heads/{start}") or start
        if sha not in repo.commits:
            raise _NotFound
        path = params.get("path", "").strip("/")
        items = []
        while sha is not None and sha in repo.commits:
            parents = repo.commits[sha]["parents"]
            parent = parents[0] if parents else None
            if not path or self._file_at(repo, sha, path) != self._file_at(repo, parent, path):
                items.append(self._commit_json(repo, sha))
            sha = parent
        return self._paginate(f"/repos/{repo.full_name}/commits", params, items)

    def _file_at(self, r: _Repo, sha: str | None, path: str) -> tuple[str, str] | None:
        if sha is None:
            return None
        return self._flatten(r, r.commits[sha]["tree"]).get(path)

    def _get_commit(self, *, repo: _Repo, sha: str, **_: Any) -> _Response:
        if not self._known_sha(repo, sha):
            raise _Unprocessable(f"No commit found for SHA: {sha}")
        stats = {"total": 0, "additions": 0, "deletions": 0}
        if sha in repo.commits:
            return _Response(200, {**self._commit_json(repo, sha), "files": [], "stats": stats})
        api = f"{REAL_API}/repos/{repo.full_name}"
        git = {"message": "", "tree": {"sha": _EMPTY_TREE}, "url": f"{api}/git/commits/{sha}"}
        return _Response(
            200,
            {
                "sha": sha,
                "node_id": base64.b64encode(f"06:Commit{sha}".encode()).decode(),
                "url": f"{api}/commits/{sha}",
                "html_url": f"https://github.com/{repo.full_name}/commit/{sha}",
                "comments_url": f"{api}/commits/{sha}/comments",
                "commit": git,
                "author": None,
                "committer": None,
                "parents": [],
                "files": [],
                "stats": stats,
            },
        )

    def _create_status(
        self, *, repo: _Repo, sha: str, body: Any, login: str, **_: Any
    ) -> _Response:
        state = body.get("state") if isinstance(body, dict) else None
        if state not in ("error", "failure", "pending", "success"):
            raise _Unprocessable("Validation Failed: state is not included in the list")
        description = body.get("description")
        if description is not None and len(description) > 140:
            raise _Unprocessable("Validation Failed: description is too long (maximum is 140)")
        if not self._known_sha(repo, sha):
            raise _Unprocessable(f"No commit found for SHA: {sha}")
        status = FakeStatus(
            id=self._id(),
            sha=sha,
            state=state,
            context=body.get("context") or "default",
            description=description,
            target_url=body.get("target_url"),
            creator=login,
        )
        repo.statuses.append(status)
        out = self._status_json(repo, status)
        return _Response(201, out, {"Location": out["url"]})

    # check runs --------------------------------------------------------------

    def _check_json(self, repo: _Repo, run: FakeCheckRun) -> dict[str, Any]:
        api = f"{REAL_API}/repos/{repo.full_name}"
        html = f"https://github.com/{repo.full_name}"
        return check_run_json(self._check_template, api, html, run)

    def _create_check_run(self, *, repo: _Repo, body: Any, **_: Any) -> _Response:
        problem = check_run_problem(body, create=True)
        if problem is not None:
            raise _Unprocessable(f"Validation Failed: {problem}")
        if not self._known_sha(repo, str(body["head_sha"])):
            raise _Unprocessable(f"No commit found for SHA: {body['head_sha']}")
        now = self._now()
        run = FakeCheckRun(
            id=self._id(),
            name=str(body["name"]),
            head_sha=str(body["head_sha"]),
            status=str(body.get("status") or "queued"),
            conclusion=None,
            started_at=str(body.get("started_at") or now),
        )
        apply_update(run, body, now)
        repo.check_runs[run.id] = run
        out = self._check_json(repo, run)
        return _Response(201, out, {"Location": out["url"]})

    def _get_check_run(self, *, repo: _Repo, id: str, **_: Any) -> _Response:
        return _Response(200, self._check_json(repo, repo.check_runs[int(id)]))

    def _edit_check_run(self, *, repo: _Repo, id: str, body: Any, **_: Any) -> _Response:
        run = repo.check_runs[int(id)]
        problem = check_run_problem(body, create=False)
        if problem is not None:
            raise _Unprocessable(f"Validation Failed: {problem}")
        apply_update(run, body, self._now())
        run.requests += 1
        return _Response(200, self._check_json(repo, run))

    def _list_statuses(
        self, *, repo: _Repo, sha: str, params: dict[str, str], **_: Any
    ) -> _Response:
        items = [self._status_json(repo, s) for s in reversed(repo.statuses) if s.sha == sha]
        return self._paginate(f"/repos/{repo.full_name}/commits/{sha}/statuses", params, items)

    def _combined_status(self, *, repo: _Repo, sha: str, **_: Any) -> _Response:
        latest: dict[str, FakeStatus] = {}
        for s in repo.statuses:
            if s.sha == sha:
                latest[s.context] = s
        states = {s.state for s in latest.values()}
        overall = (
            "failure"
            if states & {"failure", "error"}
            else "pending"
            if "pending" in states or not states
            else "success"
        )
        return _Response(
            200,
            {
                "state": overall,
                "statuses": [self._status_json(repo, s) for s in latest.values()],
                "sha": sha,
                "total_count": len(latest),
                "repository": self._repo_json(repo),
                "commit_url": f"{REAL_API}/repos/{repo.full_name}/commits/{sha}",
                "url": f"{REAL_API}/repos/{repo.full_name}/commits/{sha}/status",
            },
        )

    # git data ----------------------------------------------------------------

    def _get_ref(self, *, repo: _Repo, ref: str, **_: Any) -> _Response:
        full = f"refs/{ref}"
        return _Response(200, self._ref_json(repo, full, repo.refs[full]))

    def _create_ref(self, *, repo: _Repo, body: Any, **_: Any) -> _Response:
        ref, sha = body.get("ref"), body.get("sha")
        if not isinstance(ref, str) or not ref.startswith("refs/") or ref.count("/") < 2:
            raise _Unprocessable("Reference name is invalid")
        if sha not in repo.commits:
            raise _Unprocessable("Object does not exist")
        if ref in repo.refs:
            raise _Unprocessable("Reference already exists")
        repo.refs[ref] = sha
        out = self._ref_json(repo, ref, sha)
        return _Response(201, out, {"Location": out["url"]})

    def _update_ref(self, *, repo: _Repo, ref: str, body: Any, **_: Any) -> _Response:
        full = f"refs/{ref}"
        old = repo.refs[full]
        sha = body.get("sha")
        if sha not in repo.commits:
            raise _Unprocessable("Object does not exist")
        if not body.get("force") and not self._is_ancestor(repo, old, sha):
            raise _Unprocessable("Update is not a fast forward")
        repo.refs[full] = sha
        return _Response(200, self._ref_json(repo, full, sha))

    def _delete_ref(self, *, repo: _Repo, ref: str, **_: Any) -> _Response:
        del repo.refs[f"refs/{ref}"]
        return _Response(204)

    def _get_gcommit(self, *, repo: _Repo, sha: str, **_: Any) -> _Response:
        if sha not in repo.commits:
            raise _NotFound
        return _Response(200, self._git_commit_json(repo, sha))

    def _create_gcommit(self, *, repo: _Repo, body: Any, login: str, **_: Any) -> _Response:
        tree, parents = body.get("tree"), body.get("parents", [])
        if tree not in repo.trees or any(p not in repo.commits for p in parents):
            raise _Unprocessable("Tree SHA does not exist")
        message = str(body.get("message", ""))
        if body.get("author"):
            # Author information of the caller's choosing: GitHub does not sign it.
            sha = self._store_commit(repo, tree, list(parents), message, body.get("author"))
        else:
            sha = self._api_commit(repo, tree, list(parents), message, login)
        out = self._git_commit_json(repo, sha)
        return _Response(201, out, {"Location": out["url"]})

    def _get_tree(self, *, repo: _Repo, sha: str, params: dict[str, str], **_: Any) -> _Response:
        if sha not in repo.trees:
            commit = repo.commits.get(sha) or repo.commits.get(
                repo.refs.get(f"refs/heads/{sha}", "")
            )
            if commit is None:
                raise _NotFound
            sha = commit["tree"]
        recursive = params.get("recursive", "") not in ("", "0", "false")
        return _Response(200, self._tree_json(repo, sha, recursive))

    def _create_tree(self, *, repo: _Repo, body: Any, **_: Any) -> _Response:
        base = body.get("base_tree")
        if base is not None and base not in repo.trees:
            raise _Unprocessable("base_tree is not a valid tree")
        flat = self._flatten(repo, base) if base else {}
        for entry in body.get("tree", []):
            path = entry.get("path")
            if not isinstance(path, str) or not path or path.startswith("/") or "//" in path:
                raise _Unprocessable("tree.path is invalid")
            if entry.get("type", "blob") != "blob":
                raise _Unprocessable("only blob entries are supported by the fake")
            if "content" in entry:
                data = str(entry["content"]).encode()
                repo.blobs[_blob_sha(data)] = data
                flat[path] = (entry.get("mode", "100644"), _blob_sha(data))
            elif entry.get("sha") is None:
                flat.pop(path, None)
            elif entry["sha"] in repo.blobs:
                flat[path] = (entry.get("mode", "100644"), entry["sha"])
            else:
                raise _Unprocessable("tree.sha is not a valid blob")
        sha = self._store_tree(repo, flat) if flat else _EMPTY_TREE
        out = self._tree_json(repo, sha, False)
        return _Response(201, out, {"Location": out["url"]})

    def _get_blob(self, *, repo: _Repo, sha: str, **_: Any) -> _Response:
        if sha not in repo.blobs:
            raise _NotFound
        return _Response(200, self._blob_json(repo, sha))

    def _create_blob(self, *, repo: _Repo, body: Any, **_: Any) -> _Response:
        content, encoding = body.get("content"), body.get("encoding", "utf-8")
        if not isinstance(content, str):
            raise _Unprocessable("content is missing")
        data = base64.b64decode(content) if encoding == "base64" else content.encode()
        sha = _blob_sha(data)
        repo.blobs[sha] = data
        url = f"{REAL_API}/repos/{repo.full_name}/git/blobs/{sha}"
        return _Response(201, {"sha": sha, "url": url}, {"Location": url})

    def _get_contents(
        self, *, repo: _Repo, path: str, params: dict[str, str], **_: Any
    ) -> _Response:
        ref = params.get("ref") or repo.default_branch
        commit = repo.refs.get(f"refs/heads/{ref}") or repo.refs.get(f"refs/{ref}") or ref
        if commit not in repo.commits:
            raise _NotFound(f"No commit found for the ref {ref}")  # GitHub's words, not "Not Found"
        api = f"{REAL_API}/repos/{repo.full_name}"
        path = path.strip("/")
        flat = self._flatten(repo, repo.commits[commit]["tree"])

        def entry(p: str, kind: str, sha: str) -> dict[str, Any]:
            item: dict[str, Any] = {
                "type": kind,
                "name": p.rsplit("/", 1)[-1],
                "path": p,
                "sha": sha,
                "size": len(repo.blobs[sha]) if kind == "file" else 0,
                "url": f"{api}/contents/{p}?ref={ref}",
                "html_url": f"https://github.com/{repo.full_name}/blob/{ref}/{p}",
                "git_url": f"{api}/git/{'blobs' if kind == 'file' else 'trees'}/{sha}",
                "download_url": None,
            }
            item["_links"] = {"self": item["url"], "git": item["git_url"], "html": item["html_url"]}
            return item

        if path in flat:
            sha = flat[path][1]
            item = entry(path, "file", sha)
            data = repo.blobs[sha]
            if len(data) > 1024 * 1024:
                item.update(content="", encoding="none")
            else:
                item.update(content=base64.encodebytes(data).decode(), encoding="base64")
            return _Response(200, item)
        prefix = f"{path}/" if path else ""
        children: dict[str, dict[str, Any]] = {}
        for p, (_mode, blob) in flat.items():
            if p.startswith(prefix):
                name, sep, _rest = p[len(prefix) :].partition("/")
                full = prefix + name
                children[full] = entry(full, "dir" if sep else "file", blob)
        if not children:
            raise _NotFound
        return _Response(200, [children[k] for k in sorted(children)])

    def _put_contents(
        self, *, repo: _Repo, path: str, body: Any, login: str, **_: Any
    ) -> _Response:
        branch = body.get("branch") or repo.default_branch
        head = repo.refs.get(f"refs/heads/{branch}")
        if head is None:
            return _Response(404, _not_found(f"Branch {branch} not found"))
        content = body.get("content")
        if not isinstance(content, str) or not isinstance(body.get("message"), str):
            raise _Unprocessable("Invalid request: content and message are required")
        path = path.strip("/")
        flat = self._flatten(repo, repo.commits[head]["tree"])
        current = flat.get(path)
        if current is not None and body.get("sha") is None:
            raise _Unprocessable('Invalid request. "sha" was not supplied.')
        if current is not None and body.get("sha") != current[1]:
            return _Response(
                409,
                {"message": f"{path} does not match {body.get('sha')}", "documentation_url": _DOCS},
            )
        data = base64.b64decode(content)
        repo.blobs[_blob_sha(data)] = data
        flat[path] = ("100644", _blob_sha(data))
        tree = self._store_tree(repo, flat)
        sha = self._api_commit(repo, tree, [head], body["message"], login)
        repo.refs[f"refs/heads/{branch}"] = sha
        api = f"{REAL_API}/repos/{repo.full_name}"
        item = {
            "type": "file",
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "sha": _blob_sha(data),
            "size": len(data),
            "url": f"{api}/contents/{path}?ref={branch}",
            "html_url": f"https://github.com/{repo.full_name}/blob/{branch}/{path}",
            "git_url": f"{api}/git/blobs/{_blob_sha(data)}",
            "download_url": None,
        }
        out = {"content": item, "commit": self._git_commit_json(repo, sha)}
        return _Response(200 if current is not None else 201, out)

    def _get_branch(self, *, repo: _Repo, branch: str, **_: Any) -> _Response:
        sha = repo.refs.get(f"refs/heads/{branch}")
        if sha is None:
            return _Response(404, _not_found("Branch not found"))
        api = f"{REAL_API}/repos/{repo.full_name}"
        return _Response(
            200,
            {
                "name": branch,
                "commit": {
                    "sha": sha,
                    "node_id": base64.b64encode(f"06:Commit{sha}".encode()).decode(),
                    "commit": self._git_commit_json(repo, sha),
                    "url": f"{api}/commits/{sha}",
                    "html_url": f"https://github.com/{repo.full_name}/commit/{sha}",
                    "author": None,
                    "committer": None,
                    "parents": [
                        {"sha": p, "url": f"{api}/commits/{p}"}
                        for p in repo.commits[sha]["parents"]
                    ],
                },
                "_links": {
                    "self": f"{api}/branches/{branch}",
                    "html": f"https://github.com/{repo.full_name}/tree/{branch}",
                },
                "protected": branch in repo.protected,
            },
        )

    def _branch_rules(
        self, *, repo: _Repo, branch: str, params: dict[str, str], **_: Any
    ) -> _Response:
        items = copy.deepcopy(repo.rules.get(branch, []))
        return self._paginate(f"/repos/{repo.full_name}/rules/branches/{branch}", params, items)

    # actions -----------------------------------------------------------------

    def _get_run(self, *, repo: _Repo, id: str, **_: Any) -> _Response:
        return _Response(200, self._run_json(repo, repo.runs[int(id)]))

    def _list_runs(
        self, *, repo: _Repo, params: dict[str, str], id: str | None = None, **_: Any
    ) -> _Response:
        """``GET actions/runs`` (or one workflow's, ``actions/workflows/<file>/runs``), newest
        first, filtered by ``head_sha`` and ``status``."""
        runs = sorted(repo.runs.values(), key=lambda run: -run.id)
        if id is not None:
            runs = [run for run in runs if run.path.rsplit("/", 1)[-1] == id]
        if "head_sha" in params:
            runs = [run for run in runs if run.head_sha == params["head_sha"]]
        if "status" in params:
            runs = [run for run in runs if params["status"] in (run.status, run.conclusion)]
        items = [self._run_json(repo, run) for run in runs]
        page = self._paginate(f"/repos/{repo.full_name}/actions/runs", params, items)
        page.body = {"total_count": len(items), "workflow_runs": page.body}
        return page

    def _run_artifacts(
        self, *, repo: _Repo, id: str, params: dict[str, str], **_: Any
    ) -> _Response:
        if int(id) not in repo.runs:
            raise _NotFound
        items = [
            self._artifact_json(repo, a)
            for a in sorted(repo.artifacts.values(), key=lambda a: a.id)
            if a.run_id == int(id)
        ]
        page = self._paginate(f"/repos/{repo.full_name}/actions/runs/{id}/artifacts", params, items)
        page.body = {"total_count": len(items), "artifacts": page.body}
        return page

    def _get_artifact(self, *, repo: _Repo, id: str, **_: Any) -> _Response:
        return _Response(200, self._artifact_json(repo, repo.artifacts[int(id)]))

    def _artifact_zip(self, *, repo: _Repo, id: str, **_: Any) -> _Response:
        artifact = repo.artifacts[int(id)]
        if artifact.expired:
            return _Response(410, {"message": "Artifact has expired", "documentation_url": _DOCS})
        if not self.artifact_redirect:
            return _Response(200, artifact.data, {"Content-Type": "application/zip"})
        location = f"{self.base_url}/_fake/download/{repo.full_name}/{artifact.id}.zip"
        return _Response(302, None, {"Location": location})
