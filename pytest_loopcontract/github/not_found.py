"""Is this GitHub error "it does not exist"? GitHub says so in more than one way.

The data branch does not exist before the first publish, and GitHub
answers a contents read at a ref that does not exist with 404 "No commit found for the ref
<ref>", a missing file or git ref with 404 "Not Found", ``GET branches/<b>`` with 404 "Branch
not found". PyGithub 2.x raises :class:`~github.GithubException.UnknownObjectException` only
when the message contains "not found" or "no object found", so the first wording arrives as a
plain :class:`~github.GithubException`; code that caught only the subclass crashed on the first
publish of a real repository. Here the status decides, never the wording: for a read, a 404 is
"absent", whatever the message says.
"""

from __future__ import annotations

from github.GithubException import GithubException

__all__ = ["is_missing"]


def is_missing(exc: BaseException) -> bool:
    """True when ``exc`` is GitHub answering 404 (any message) to a read."""
    return isinstance(exc, GithubException) and exc.status == 404
