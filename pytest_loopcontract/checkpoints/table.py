"""The table of built-in checkpoints: stable id, the sentence saying why a person is needed,
and the matcher that finds it (with the programs and hints that let a scan skip it cheaply).

Data only: the matchers live in :mod:`pytest_loopcontract.checkpoints.matchers` and
:mod:`pytest_loopcontract.checkpoints.secrets`; adding a checkpoint is a row here. Every id can
be named in a contract's ``checkpoints.disable``; ``env-file`` and ``credential-file`` appear as
both a command and a path pattern, and disabling the id disables both.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_loopcontract.checkpoints.matchers.deletion import rm_outside
from pytest_loopcontract.checkpoints.matchers.devices import DEVICE_HINTS, block_device
from pytest_loopcontract.checkpoints.matchers.exfil import NETWORK_CLIENTS, exfiltration
from pytest_loopcontract.checkpoints.matchers.files import (
    FILE_HINTS,
    credential_file,
    credential_path,
    env_file,
    env_path,
)
from pytest_loopcontract.checkpoints.matchers.git import (
    git_alias_push,
    git_force_push,
    git_push,
    git_push_protected,
)
from pytest_loopcontract.checkpoints.matchers.infra import (
    CLOUD_CLIS,
    IAC_TOOLS,
    KUBE_TOOLS,
    cloud_delete,
    gh_delete,
    infra_destroy,
    kube_delete,
)
from pytest_loopcontract.checkpoints.matchers.network import (
    PAYMENT_HINTS,
    curl_pipe_shell,
    payment_api,
)
from pytest_loopcontract.checkpoints.matchers.privilege import sudo
from pytest_loopcontract.checkpoints.matchers.publish import (
    docker_push,
    gh_release,
    publish_cargo,
    publish_gem,
    publish_npm,
    publish_pypi,
    unless_dry_run,
)
from pytest_loopcontract.checkpoints.matchers.sql import (
    SQL_HINTS,
    sql_delete,
    sql_drop,
    sql_truncate,
)
from pytest_loopcontract.checkpoints.model import CommandMatcher, Pattern
from pytest_loopcontract.checkpoints.secrets import secret_hits
from pytest_loopcontract.checkpoints.shell.vocabulary import ELEVATORS

__all__ = ["DEFAULTS"]

_PUBLISH_WHY = "publishing a release is public and cannot be taken back; a person must approve it"


def _command(
    pid: str,
    message: str,
    matcher: CommandMatcher,
    programs: Iterable[str] | None = None,
    hint: tuple[str, ...] = (),
) -> Pattern:
    """A command pattern row: ``programs`` None runs it for every program."""
    names = frozenset(programs) if programs is not None else None
    return Pattern(pid, "command", message, match_command=matcher, programs=names, hint=hint)


DEFAULTS: tuple[Pattern, ...] = (
    _command(
        "git-push",
        "Pushing publishes the agent's work to a shared remote; a person "
        "decides when that happens.",
        git_push,
        ["git"],
    ),
    _command(
        "git-force-push",
        "A force push, mirror push or remote branch deletion can destroy "
        "history others rely on; a person must approve each one.",
        git_force_push,
        ["git"],
    ),
    _command(
        "git-push-protected",
        "Protected branches reach everyone; only a person may push or merge into them.",
        git_push_protected,
        ["git", "gh"],
    ),
    _command(
        "git-alias-push",
        "A git alias that pushes hides a push behind another name; a person decides "
        "whether it should exist.",
        git_alias_push,
        ["git"],
    ),
    _command(
        "publish-npm",
        f"npm package: {_PUBLISH_WHY}.",
        unless_dry_run(publish_npm),
        ["npm", "yarn", "pnpm", "bun", "lerna", "changeset"],
    ),
    _command(
        "publish-pypi",
        f"Python package: {_PUBLISH_WHY}.",
        unless_dry_run(publish_pypi),
        ["twine", "uv", "poetry", "flit", "hatch", "pdm", "maturin", "python"],
    ),
    _command(
        "publish-cargo", f"Rust crate: {_PUBLISH_WHY}.", unless_dry_run(publish_cargo), ["cargo"]
    ),
    _command(
        "publish-gem", f"Ruby gem: {_PUBLISH_WHY}.", unless_dry_run(publish_gem), ["gem", "rake"]
    ),
    _command(
        "docker-push",
        f"Container image: {_PUBLISH_WHY}.",
        docker_push,
        ["docker", "podman", "nerdctl", "buildah", "skopeo"],
    ),
    _command("gh-release", f"GitHub release: {_PUBLISH_WHY}.", gh_release, ["gh"]),
    _command(
        "rm-rf-outside",
        "Recursive deletion outside the workspace, or of home or root, "
        "destroys data the agent does not own.",
        rm_outside,
        ["rm", "find"],
    ),
    _command(
        "sql-drop",
        "DROP destroys a table, database or schema irreversibly.",
        sql_drop,
        None,
        SQL_HINTS,
    ),
    _command(
        "sql-truncate",
        "TRUNCATE deletes every row of a table irreversibly.",
        sql_truncate,
        None,
        SQL_HINTS,
    ),
    _command(
        "sql-delete-no-where",
        "DELETE without a WHERE clause deletes every row of a table.",
        sql_delete,
        None,
        SQL_HINTS,
    ),
    _command(
        "env-file",
        "A .env file holds secrets: reading one leaks them into the agent's "
        "context and logs, writing one changes real configuration.",
        env_file,
        None,
        FILE_HINTS,
    ),
    _command(
        "credential-file",
        "Key and credential files grant access to other systems; only "
        "a person may read, copy or change them.",
        credential_file,
        None,
        FILE_HINTS,
    ),
    _command(
        "payment-api", "A payment API call can move real money.", payment_api, None, PAYMENT_HINTS
    ),
    _command(
        "curl-pipe-shell",
        "Running a script straight from the network executes code nobody has reviewed.",
        curl_pipe_shell,
    ),
    _command(
        "sudo",
        "Elevated privileges reach outside the sandbox the agent was given.",
        sudo,
        ELEVATORS,
    ),
    _command(
        "infra-destroy",
        "Destroying declared infrastructure deletes real servers, databases and networks; "
        "a person must approve it.",
        infra_destroy,
        IAC_TOOLS,
    ),
    _command(
        "kube-delete",
        "Deleting Kubernetes resources or Helm releases takes running services down; "
        "a person must approve it.",
        kube_delete,
        KUBE_TOOLS,
    ),
    _command(
        "cloud-delete",
        "A cloud CLI's delete, rm or terminate verb destroys resources and data in a real "
        "account; a person must approve it.",
        cloud_delete,
        CLOUD_CLIS,
    ),
    _command(
        "gh-delete",
        "Deleting a GitHub repository, or calling the GitHub API with DELETE, removes "
        "shared work; a person must approve it.",
        gh_delete,
        ["gh"],
    ),
    _command(
        "block-device",
        "Writing to a disk device, formatting or wiping one destroys everything on it.",
        block_device,
        None,
        DEVICE_HINTS,
    ),
    _command(
        "exfiltration",
        "The environment and credential files hold secrets; sending them to a network "
        "client leaks them beyond recall.",
        exfiltration,
        NETWORK_CLIENTS,
    ),
    Pattern(
        "secret-in-diff",
        "diff",
        "A secret in the diff is exposed once it is pushed; "
        "it must be removed and rotated, which takes a person.",
        match_text=secret_hits,
    ),
    Pattern(
        "env-file",
        "path",
        "A .env file holds secrets and must not enter the repository.",
        match_text=env_path,
    ),
    Pattern(
        "credential-file",
        "path",
        "Key and credential files must not enter the repository.",
        match_text=credential_path,
    ),
)
