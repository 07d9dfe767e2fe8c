"""What a GitHub Actions job hands a step: the repository, the event, outputs and the summary.

Every mode reads the same environment variables, and writes outputs
and the job summary the same careful way (a multi-line value through a random delimiter, a
summary capped under GitHub's 1 MiB limit), so none of them formats ``$GITHUB_OUTPUT`` by hand.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.errors import LoopContractError

__all__ = ["SUMMARY_LIMIT", "ActionsEnv", "ActionsEnvError"]

SUMMARY_LIMIT = 1024 * 1024 - 1024
"""GitHub refuses a job summary over 1 MiB; keep a margin for what other steps append."""


class ActionsEnvError(LoopContractError):
    """A variable the mode needs is missing or malformed."""


@dataclass(frozen=True)
class ActionsEnv:
    repository: str
    token: str
    event_name: str
    event_path: Path | None
    api_url: str | None
    output_path: Path | None
    summary_path: Path | None
    run_id: str
    bot_login: str

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> ActionsEnv:
        env = os.environ if environ is None else environ
        repository = env.get("GITHUB_REPOSITORY", "")
        if repository.count("/") != 1:
            raise ActionsEnvError("GITHUB_REPOSITORY must be OWNER/NAME (set by Actions)")
        token = env.get("LOOP_CONTRACT_TOKEN") or env.get("GITHUB_TOKEN") or ""
        if not token:
            raise ActionsEnvError("no token: pass the action's `token` input (LOOP_CONTRACT_TOKEN)")
        event = env.get("GITHUB_EVENT_PATH")
        output = env.get("GITHUB_OUTPUT")
        summary = env.get("GITHUB_STEP_SUMMARY")
        return cls(
            repository=repository,
            token=token,
            event_name=env.get("GITHUB_EVENT_NAME", ""),
            event_path=Path(event) if event else None,
            api_url=env.get("GITHUB_API_URL") or None,
            output_path=Path(output) if output else None,
            summary_path=Path(summary) if summary else None,
            run_id=env.get("GITHUB_RUN_ID", "local"),
            bot_login=env.get("LOOP_CONTRACT_BOT_LOGIN") or "github-actions[bot]",
        )

    def event(self) -> dict[str, Any]:
        if self.event_path is None:
            return {}
        try:
            document = json.loads(self.event_path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise ActionsEnvError(f"cannot read the event file {self.event_path}: {exc}") from None
        return document if isinstance(document, dict) else {}

    def set_output(self, name: str, value: str) -> None:
        """Append ``name`` to ``$GITHUB_OUTPUT`` with a delimiter no value can contain."""
        if self.output_path is None:
            return
        delimiter = f"loop_contract_{secrets.token_hex(16)}"
        with self.output_path.open("a", encoding="utf-8") as fh:
            fh.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")

    def add_summary(self, markdown: str) -> None:
        """Append to the job summary, cut to stay under GitHub's limit."""
        if self.summary_path is None:
            return
        used = self.summary_path.stat().st_size if self.summary_path.exists() else 0
        room = max(0, SUMMARY_LIMIT - used)
        data = markdown.encode("utf-8")
        if len(data) > room:
            note = b"\n\n_(the report was cut to fit the job summary)_\n"
            data = data[: max(0, room - len(note))].decode("utf-8", "ignore").encode() + note
        with self.summary_path.open("ab") as fh:
            fh.write(data + b"\n")
