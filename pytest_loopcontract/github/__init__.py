"""The GitHub side of the contest: the action's logic, one concern per module.

``client`` builds the PyGithub client (retries, write spacing); ``events`` parses payloads,
branches and labels (pure); ``pulls`` finds candidate pull requests; ``comments`` keeps one
sticky comment per pull request; ``statuses`` sets ``loop-contract/winner``; ``state_branch``
keeps reviewable state files on the ``loop-contract-data`` branch. Nothing is imported here,
so importing one module does not pull in the others.
"""

from __future__ import annotations

__all__: list[str] = []
