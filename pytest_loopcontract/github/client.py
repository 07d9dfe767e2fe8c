"""One place that builds the PyGithub client, so every mode talks to GitHub the same way.

Why it is built this way:

* **Retries belong in the transport.** PyGithub's :class:`github.GithubRetry` (a urllib3
  ``Retry``) already knows GitHub's rate-limit answers: a 403 or 429 with ``Retry-After`` is
  retried after that many seconds, a 403 whose message names a secondary rate limit is retried
  after a wait, 5xx answers are retried with backoff. We reuse it instead of writing a loop.
* **A POST is not idempotent.** A 5xx or a lost answer to ``POST .../comments`` may mean the
  comment landed, so the transport never repeats a POST after such an answer: the caller
  re-reads and decides (see :mod:`.comments`). A POST is retried only on answers that say it
  was *not* processed: a rate limit (403 with a rate-limit message or ``Retry-After``, 429).
  GETs, PUTs, PATCHes and DELETEs repeat safely and are retried on 5xx and rate limits alike.
* **Exhausted retries surface as GitHub errors** (``raise_on_status=False``): the caller gets
  PyGithub's :class:`github.GithubException` with the last status, not a urllib3 error.
* **Writes are spaced** (``LOOP_CONTRACT_WRITE_SPACING`` seconds, default 1.0), which is what
  GitHub asks of integrations to stay clear of secondary rate limits.
"""

from __future__ import annotations

import inspect
import logging
import os
from typing import Any

import github
from github import Auth, Github, GithubRetry
from urllib3.util.retry import Retry

__all__ = [
    "API_URL_ENV",
    "DEFAULT_API_URL",
    "WRITE_SPACING_ENV",
    "ContestRetry",
    "make_github",
    "make_retry",
    "resolve_write_spacing",
]

log = logging.getLogger("loopcontract.github")

DEFAULT_API_URL = "https://api.github.com"
API_URL_ENV = "GITHUB_API_URL"
WRITE_SPACING_ENV = "LOOP_CONTRACT_WRITE_SPACING"
DEFAULT_WRITE_SPACING = 1.0
PER_PAGE = 100
MAX_RETRY_AFTER = 600
# Methods that may be repeated after any failure: the same request twice has one effect.
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH", "TRACE"})
# Answers that say the request was refused before it was processed.
_NOT_PROCESSED = frozenset({403, 429})
_RETRY_STATUSES = [*range(500, 600), 429]


class ContestRetry(GithubRetry):
    """``GithubRetry`` that repeats a POST only after a rate-limit refusal, never after a 5xx."""

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if method.upper() not in _IDEMPOTENT:
            return status_code in _NOT_PROCESSED
        return bool(super().is_retry(method, status_code, has_retry_after))


def make_retry(retries: int = 3) -> ContestRetry:
    """The transport retry policy: ``retries`` attempts, backoff 0s, 1s, 2s, ... on 5xx,
    ``Retry-After`` honoured (capped at 10 minutes), secondary rate limits without that header
    waited out for 60s."""
    options: dict[str, Any] = {
        "total": retries,
        "backoff_factor": 0.5,
        "status_forcelist": list(_RETRY_STATUSES),
        "allowed_methods": _IDEMPOTENT,
        "raise_on_status": False,
        "respect_retry_after_header": True,
    }
    if "retry_after_max" in inspect.signature(Retry.__init__).parameters:  # urllib3 >= 2.5
        options["retry_after_max"] = MAX_RETRY_AFTER
    return ContestRetry(**options)


def resolve_write_spacing(value: float | None = None) -> float:
    """``value`` if given, else ``$LOOP_CONTRACT_WRITE_SPACING`` (>= 0), else 1.0."""
    if value is not None:
        return value
    raw = os.environ.get(WRITE_SPACING_ENV, "").strip()
    if not raw:
        return DEFAULT_WRITE_SPACING
    try:
        spacing = float(raw)
    except ValueError:
        log.warning("ignoring %s=%r: not a number", WRITE_SPACING_ENV, raw)
        return DEFAULT_WRITE_SPACING
    return max(0.0, spacing)


def make_github(
    token: str,
    *,
    base_url: str | None = None,
    retries: int = 3,
    write_spacing: float | None = None,
    lazy: bool = False,
) -> Github:
    """A PyGithub client authenticated with ``token``.

    ``base_url``: the argument, else ``$GITHUB_API_URL`` (set on GitHub Enterprise runners),
    else api.github.com. ``write_spacing``: seconds between write requests, default
    ``$LOOP_CONTRACT_WRITE_SPACING`` or 1.0 (tests pass 0). ``lazy``: objects are fetched
    only when an attribute needs it (``get_repo(...)`` then costs no request); PyGithub
    deprecates ``get_repo(..., lazy=True)`` in favour of this."""
    if not token:
        raise ValueError("a GitHub token is required")
    url = (base_url or os.environ.get(API_URL_ENV) or DEFAULT_API_URL).rstrip("/")
    kwargs: dict[str, Any] = {
        "auth": Auth.Token(token),
        "base_url": url,
        "retry": make_retry(retries),
        "per_page": PER_PAGE,
        "seconds_between_requests": 0,
        "seconds_between_writes": resolve_write_spacing(write_spacing),
        "user_agent": f"pytest-loopcontract (PyGithub/{_pygithub_version()})",
        "lazy": lazy,
    }
    return Github(**kwargs)


def _pygithub_version() -> str:
    try:
        from importlib.metadata import version

        return version("PyGithub")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        return getattr(github, "__version__", "unknown")
