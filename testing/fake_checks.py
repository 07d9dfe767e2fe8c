"""Check runs for the fake GitHub server: what GitHub keeps of one, what it refuses, and the
response bodies, built from PyGithub's recorded exchanges with the real API
(tests/data/github/pygithub-replay/CheckRun.*).

What GitHub does and this copies (REST docs, "Create a check run" / "Update a check run"):
``name`` and ``head_sha`` are required on create; ``status`` is queued | in_progress |
completed and a completed run needs a ``conclusion``; ``output`` needs ``title`` and
``summary`` (each at most 65,535 characters); at most 50 ``annotations`` per request, each
with ``path``, ``start_line``, ``end_line``, ``annotation_level`` (notice | warning |
failure) and ``message``; an update *appends* its annotations to the run's. The response
carries ``output.annotations_count`` and ``annotations_url``, never the annotations.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FakeCheckRun", "apply_update", "check_run_json", "check_run_problem"]

_STATUSES = ("queued", "in_progress", "completed")
_CONCLUSIONS = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
)
_LEVELS = ("notice", "warning", "failure")
_ANNOTATION_KEYS = ("path", "start_line", "end_line", "annotation_level", "message")
TEXT_LIMIT = 65_535
PER_REQUEST = 50


@dataclass
class FakeCheckRun:
    """One check run as the server keeps it; ``annotations`` in the order they were sent,
    ``requests`` the number of create/update requests that touched it."""

    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    title: str = ""
    summary: str = ""
    text: str = ""
    annotations: list[dict[str, Any]] = field(default_factory=list)
    started_at: str = ""
    completed_at: str | None = None
    requests: int = 1


def _output_problem(output: Any) -> str | None:
    if not isinstance(output, Mapping):
        return "output must be an object"
    for key in ("title", "summary"):
        if not isinstance(output.get(key), str) or not output.get(key):
            return f"output.{key} wasn't supplied"
    for key in ("summary", "text"):
        if len(str(output.get(key) or "")) > TEXT_LIMIT:
            return f"output.{key} is too long (maximum is {TEXT_LIMIT} characters)"
    annotations = output.get("annotations") or []
    if not isinstance(annotations, list):
        return "output.annotations must be an array"
    if len(annotations) > PER_REQUEST:
        return f"only {PER_REQUEST} annotations may be sent per request"
    for item in annotations:
        if not isinstance(item, Mapping) or any(k not in item for k in _ANNOTATION_KEYS):
            return f"an annotation needs {', '.join(_ANNOTATION_KEYS)}"
        if item["annotation_level"] not in _LEVELS:
            return "annotation_level is not included in the list"
        if not isinstance(item["start_line"], int) or item["start_line"] < 1:
            return "start_line must be a positive integer"
    return None


def check_run_problem(body: Any, *, create: bool) -> str | None:
    """Why GitHub would answer 422 to this create/update body, or None."""
    if not isinstance(body, Mapping):
        return "Problems parsing JSON"
    if create and (not body.get("name") or not body.get("head_sha")):
        return "name and head_sha are required"
    status = body.get("status")
    if status is not None and status not in _STATUSES:
        return "status is not included in the list"
    conclusion = body.get("conclusion")
    if conclusion is not None and conclusion not in _CONCLUSIONS:
        return "conclusion is not included in the list"
    if create and status == "completed" and conclusion is None:
        return "conclusion wasn't supplied"
    if "output" in body:
        return _output_problem(body["output"])
    return None


def apply_update(run: FakeCheckRun, body: Mapping[str, Any], now: str) -> None:
    """What an update (or the create itself) changes; annotations are appended."""
    if body.get("name"):
        run.name = str(body["name"])
    if body.get("conclusion") is not None:
        run.conclusion = str(body["conclusion"])
        run.status = "completed"  # GitHub: a conclusion completes the run
    elif body.get("status") is not None:
        run.status = str(body["status"])
    if run.status == "completed" and run.completed_at is None:
        run.completed_at = str(body.get("completed_at") or now)
    output = body.get("output")
    if isinstance(output, Mapping):
        run.title = str(output.get("title") or run.title)
        run.summary = str(output.get("summary") or run.summary)
        run.text = str(output.get("text") or run.text)
        run.annotations.extend(dict(a) for a in output.get("annotations") or [])


def check_run_json(
    template: Mapping[str, Any], api: str, html: str, run: FakeCheckRun
) -> dict[str, Any]:
    """The response body for ``run``: the recorded one with this run's fields in it.
    ``api`` is the repository's API URL, ``html`` its web URL."""
    out = copy.deepcopy(dict(template))
    url = f"{api}/check-runs/{run.id}"
    out.update(
        id=run.id,
        name=run.name,
        head_sha=run.head_sha,
        status=run.status,
        conclusion=run.conclusion,
        started_at=run.started_at,
        completed_at=run.completed_at,
        url=url,
        html_url=f"{html}/runs/{run.id}",
        details_url=html,
        external_id="",
        pull_requests=[],
    )
    out["output"] = {
        "title": run.title or None,
        "summary": run.summary or None,
        "text": run.text or None,
        "annotations_count": len(run.annotations),
        "annotations_url": f"{url}/annotations",
    }
    return out
