"""Webhook event variants for tests, built from GitHub's recorded examples and schema-checked.

Why: the action must behave on the payloads GitHub really sends, including the awkward ones (a
pull request from a fork, an approval on an old commit, a dismissed review, a ``workflow_run``
whose ``pull_requests`` is empty). Hand-written dictionaries drift from the real shape, so every
builder here starts from a recorded octokit/webhooks example, changes only the fields a test is
about, and validates the result against the matching draft-07 schema (the ``common/`` ``$ref``
targets are resolved with :mod:`referencing`). A builder that produced an event GitHub could not
send fails loudly instead of making a test pass for the wrong reason.

The recorded data lives in ``tests/data/github`` (see :mod:`github_data`); :data:`AVAILABLE`
says whether it is complete, and the builders call :func:`github_data.require`, which skips
without it (and fails under ``LOOP_CONTRACT_REQUIRE_TOOLS=1``).
"""

from __future__ import annotations

import copy
import functools
import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from testing.github_data import DATA, missing, require

__all__ = [
    "AVAILABLE",
    "DATA",
    "RECORDED_HEAD_SHA",
    "load_payload",
    "pull_request_event",
    "review_event",
    "user_object",
    "validate_event",
    "workflow_run_event",
]


AVAILABLE = not missing(DATA)
#: The head SHA every recorded pull-request payload carries.
RECORDED_HEAD_SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"

# Payload keys of events whose action has no schema in the recorded set, each validated against
# the common schema GitHub's other actions of the same event use for it.
_PART_SCHEMAS = {
    "pull_request": "common/pull-request.schema.json",
    "repository": "common/repository.schema.json",
    "sender": "common/user.schema.json",
    "label": "common/label.schema.json",
    "installation": "common/installation-lite.schema.json",
    "organization": "common/organization.schema.json",
}


# ---------------------------------------------------------------------------- validation


@functools.cache
def _registry() -> Registry[Any]:
    require()
    resources = []
    for path in sorted((DATA / "webhook-schemas" / "common").glob("*.schema.json")):
        contents = json.loads(path.read_text("utf-8"))
        # The $ids are relative ("common/user.schema.json") and so are the $refs, which resolve
        # against the referring schema's $id: "user.schema.json" inside common/x -> common/user.
        resources.append(
            (contents["$id"], Resource.from_contents(contents, default_specification=DRAFT7))
        )
    return Registry().with_resources(resources)


@functools.cache
def _validator(kind: str) -> jsonschema.Draft7Validator | None:
    event, _, action = kind.partition(".")
    path = DATA / "webhook-schemas" / event / f"{action}.schema.json"
    if not path.is_file():
        return None
    schema = json.loads(path.read_text("utf-8"))
    return jsonschema.Draft7Validator(schema, registry=_registry())


@functools.cache
def _part_validator(ref: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator({"$ref": ref}, registry=_registry())


def validate_event(kind: str, payload: Mapping[str, Any]) -> None:
    """Raise :class:`jsonschema.ValidationError` unless ``payload`` fits the event's schema.

    ``kind`` is ``"<event>.<action>"`` (``"pull_request_review.submitted"``) or just the event
    name, in which case the action is read from the payload. For an action without a schema in
    the recorded set (``pull_request.labeled``, ``pull_request.reopened``) each top-level key is
    validated against the common schema used for it elsewhere, and unknown keys are refused.
    """
    if "." not in kind:
        kind = f"{kind}.{payload['action']}"
    validator = _validator(kind)
    if validator is not None:
        error = jsonschema.exceptions.best_match(validator.iter_errors(payload))
        if error is not None:
            raise error
        return
    event, _, action = kind.partition(".")
    if payload.get("action") != action:
        raise jsonschema.ValidationError(f"action is {payload.get('action')!r}, not {action!r}")
    for key, value in payload.items():
        if key == "action":
            continue
        if key == "number" and event == "pull_request":
            if not isinstance(value, int):
                raise jsonschema.ValidationError(f"number is not an integer: {value!r}")
            continue
        if key not in _PART_SCHEMAS:
            raise jsonschema.ValidationError(f"unexpected key {key!r} in a {kind} payload")
        part = _part_validator(_PART_SCHEMAS[key])
        error = jsonschema.exceptions.best_match(part.iter_errors(value))
        if error is not None:
            raise error


# ---------------------------------------------------------------------------- pieces


def load_payload(event: str, name: str) -> dict[str, Any]:
    """A fresh copy of a recorded payload, e.g. ``load_payload("pull_request", "opened")``."""
    folder = require() / "webhooks" / event
    path = folder / name if name.endswith(".json") else folder / f"{name}.payload.json"
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def _stable_id(text: str) -> int:
    return zlib.crc32(text.encode("utf-8")) or 1


def _replace_strings(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_replace_strings(item, old, new) for item in value]
    if isinstance(value, dict):
        return {key: _replace_strings(item, old, new) for key, item in value.items()}
    return value


def user_object(login: str, user_type: str | None = None) -> dict[str, Any]:
    """A webhook ``user`` object for ``login`` (type ``Bot`` for a ``[bot]`` login by default)."""
    template = load_payload("pull_request_review", "submitted")["sender"]
    user: dict[str, Any] = _replace_strings(template, "Codertocat", login)
    user["id"] = _stable_id(login)
    user["node_id"] = f"U_{user['id']}"
    user["type"] = user_type or ("Bot" if login.endswith("[bot]") else "User")
    return user


def _renamed_repo(repo: Mapping[str, Any], full_name: str, *, fork: bool) -> dict[str, Any]:
    """``repo`` (a webhook repository object) moved to ``full_name``."""
    owner, _, name = full_name.partition("/")
    renamed: dict[str, Any] = _replace_strings(dict(repo), repo["full_name"], full_name)
    renamed["name"] = name
    renamed["full_name"] = full_name
    renamed["id"] = _stable_id(full_name)
    renamed["node_id"] = f"R_{renamed['id']}"
    renamed["fork"] = fork
    renamed["owner"] = {**user_object(owner), **{"type": repo["owner"].get("type", "User")}}
    return renamed


def _point_head(
    pull: dict[str, Any],
    *,
    author: str,
    head_ref: str | None,
    head_sha: str | None,
    fork: bool,
) -> None:
    """Set the pull request's author and head; for ``fork``, the head lives in the author's fork."""
    pull["user"] = user_object(author)
    head = pull["head"]
    if head_ref is not None:
        head["ref"] = head_ref
    if head_sha is not None:
        head["sha"] = head_sha
    base_repo = pull["base"]["repo"]
    if fork:
        fork_name = f"{author}/{base_repo['name']}"
        if fork_name.casefold() == str(base_repo["full_name"]).casefold():
            raise ValueError(f"{author} owns {fork_name}: a fork needs another author")
        head["repo"] = _renamed_repo(base_repo, fork_name, fork=True)
        head["user"] = user_object(author)
        head["label"] = f"{author}:{head['ref']}"
    else:
        head["repo"] = copy.deepcopy(base_repo)
        head["user"] = copy.deepcopy(base_repo["owner"])
        head["label"] = f"{base_repo['owner']['login']}:{head['ref']}"


def _label(name: str) -> dict[str, Any]:
    template = load_payload("pull_request", "labeled")["label"]
    label: dict[str, Any] = dict(template)
    label["name"] = name
    label["id"] = _stable_id(f"label:{name}")
    label["node_id"] = f"LA_{label['id']}"
    label["url"] = template["url"].rsplit("/", 1)[0] + "/" + name.replace(":", "%3A")
    label["default"] = False
    label["description"] = None
    return label


# ---------------------------------------------------------------------------- builders


def review_event(
    state: str,
    *,
    reviewer: str,
    commit_id: str,
    author: str,
    fork: bool = False,
    dismissed: bool = False,
    review_id: int = 237895671,
    submitted_at: str = "2019-05-15T15:20:38Z",
    reviewer_type: str | None = None,
    head_sha: str | None = None,
    number: int = 2,
) -> dict[str, Any]:
    """A ``pull_request_review`` event: ``reviewer`` reviewed ``author``'s pull request.

    ``state`` is ``approved`` / ``changes_requested`` / ``commented`` (either case). With
    ``dismissed`` the event is the ``dismissed`` action and the review's state is
    ``dismissed`` (GitHub keeps no record of what it was). ``head_sha`` is the payload's
    ``pull_request.head.sha`` (defaults to ``commit_id``); tests use a different one to show
    that nothing trusts the payload. ``fork`` moves the head to ``<author>/<repo>``.
    """
    action = "dismissed" if dismissed else "submitted"
    event = load_payload("pull_request_review", action)
    review = event["review"]
    review["id"] = review_id
    review["node_id"] = f"PRR_{review_id}"
    review["user"] = user_object(reviewer, reviewer_type)
    review["state"] = "dismissed" if dismissed else state.lower()
    review["commit_id"] = commit_id
    review["submitted_at"] = submitted_at
    review["author_association"] = "NONE" if fork else review["author_association"]
    for key in ("html_url",):
        review[key] = review[key].replace("237895671", str(review_id))
    review["_links"]["html"]["href"] = review["html_url"]
    pull = event["pull_request"]
    pull["number"] = number
    _point_head(pull, author=author, head_ref=None, head_sha=head_sha or commit_id, fork=fork)
    event["sender"] = user_object(reviewer, reviewer_type)
    validate_event(f"pull_request_review.{action}", event)
    return event


def pull_request_event(
    action: str,
    *,
    head_ref: str,
    head_sha: str,
    fork: bool = False,
    labels: Iterable[str] = (),
    author: str = "Codertocat",
    number: int = 2,
) -> dict[str, Any]:
    """A ``pull_request`` event (``opened``, ``synchronize``, ``labeled``, ``closed``...).

    ``labels`` replace the pull request's labels; for ``labeled`` the last one is also the
    event's ``label``. ``fork`` moves the head branch to the author's fork.
    """
    event = load_payload("pull_request", action)
    event["number"] = number
    pull = event["pull_request"]
    pull["number"] = number
    _point_head(pull, author=author, head_ref=head_ref, head_sha=head_sha, fork=fork)
    names = list(labels)
    pull["labels"] = [_label(name) for name in names]
    if action == "labeled":
        if not names:
            raise ValueError("a labeled event needs at least one label")
        event["label"] = _label(names[-1])
    if action == "synchronize":
        event["after"] = head_sha
    if fork:
        pull["author_association"] = "CONTRIBUTOR"
    event["sender"] = user_object(author)
    validate_event(f"pull_request.{action}", event)
    return event


def workflow_run_event(
    *,
    head_sha: str,
    head_branch: str,
    pull_requests: Sequence[int | Mapping[str, Any]] | None,
    event: str = "pull_request",
    conclusion: str = "success",
    head_repository: str | None = None,
) -> dict[str, Any]:
    """A ``workflow_run.completed`` event for a run on ``head_sha`` of ``head_branch``.

    ``pull_requests`` entries are PR numbers (an entry is made from the recorded one, pointing
    at this head) or mappings merged over it; ``None`` gives ``[]``, which is what GitHub sends
    for a pull request from a fork. ``head_repository`` (``owner/name``) makes the run's head
    repository a fork of that name.
    """
    payload = load_payload("workflow_run", "completed.with-pull-requests")
    run = payload["workflow_run"]
    template = run["pull_requests"][0]
    entries: list[dict[str, Any]] = []
    for item in pull_requests or ():
        entry = copy.deepcopy(template)
        if isinstance(item, int):
            entry["number"] = item
            entry["id"] = _stable_id(f"pr:{item}")
            entry["url"] = template["url"].rsplit("/", 1)[0] + f"/{item}"
            entry["head"]["ref"] = head_branch
            entry["head"]["sha"] = head_sha
        else:
            entry.update(copy.deepcopy(dict(item)))
        entries.append(entry)
    run["pull_requests"] = entries
    run["head_sha"] = head_sha
    run["head_branch"] = head_branch
    run["event"] = event
    run["conclusion"] = conclusion
    run["head_commit"]["id"] = head_sha
    if head_repository is not None:
        run["head_repository"] = _renamed_repo(run["head_repository"], head_repository, fork=True)
    validate_event("workflow_run.completed", payload)
    return payload
