"""Publishing matchers: npm, PyPI, crates.io, RubyGems, container registries, GitHub releases.

Each reads the tool's own command line (its options that take a value are skipped), so
``npm --registry X publish`` counts and ``npm run publish-docs`` does not. ``--dry-run``
publishes nothing and needs nobody.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_loopcontract.checkpoints.model import (
    Command,
    CommandMatcher,
    Hit,
    ScanContext,
    single_hit,
)
from pytest_loopcontract.checkpoints.shell.programs import operands
from pytest_loopcontract.checkpoints.shell.vocabulary import word_set

__all__ = [
    "docker_push",
    "gh_release",
    "publish_cargo",
    "publish_gem",
    "publish_npm",
    "publish_pypi",
    "unless_dry_run",
]


_NPM_VALUE = word_set(
    "--registry -w --workspace --prefix -C --dir --filter --cwd --userconfig --otp --tag "
    "--access -F"
)


def unless_dry_run(matcher: CommandMatcher) -> CommandMatcher:
    """A publish with ``--dry-run`` uploads nothing, so it needs nobody."""

    def check(cmd: Command, ctx: ScanContext) -> Iterable[Hit]:
        """The matcher's hits, or none when the command says --dry-run."""
        return () if "--dry-run" in cmd.argv else matcher(cmd, ctx)

    return check


def publish_npm(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """``npm publish`` and its twins (yarn, pnpm, bun, lerna, changeset)."""
    ops = operands(cmd.argv, _NPM_VALUE)
    name = cmd.program
    if ops[:1] == ["publish"] or (name == "yarn" and ops[:2] == ["npm", "publish"]):
        return single_hit(cmd.text, f"{name} publish")
    return ()


_PYPI_TOOLS = {
    "twine": ("upload", "register"),
    "uv": ("publish",),
    "poetry": ("publish",),
    "flit": ("publish",),
    "hatch": ("publish",),
    "pdm": ("publish",),
    "maturin": ("publish", "upload"),
}


def publish_pypi(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """An upload to PyPI: twine, uv, poetry, flit, hatch, pdm, maturin, setup.py upload."""
    argv = cmd.argv
    if argv[0] == "python":
        if len(argv) > 2 and argv[1].endswith("setup.py") and "upload" in argv[2:]:
            return single_hit(cmd.text, "setup.py upload")
        return ()
    ops = operands(argv, frozenset({"-r", "--repository", "--repository-url", "-u", "-p"}))
    if ops and ops[0] in _PYPI_TOOLS.get(argv[0], ()):
        return single_hit(cmd.text, f"{argv[0]} {ops[0]}")
    return ()


def publish_cargo(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """``cargo publish`` (a toolchain ``+nightly`` before it is skipped)."""
    ops = [
        o
        for o in operands(cmd.argv, frozenset({"--manifest-path", "-Z", "--config", "-C"}))
        if not o.startswith("+")
    ]
    return single_hit(cmd.text, "cargo publish") if ops[:1] == ["publish"] else ()


def publish_gem(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """``gem push`` and ``rake release``."""
    ops = operands(cmd.argv, frozenset({"-k", "--key", "--host"}))
    if cmd.program == "gem" and ops[:1] == ["push"]:
        return single_hit(cmd.text, "gem push")
    if cmd.program == "rake" and any(o == "release" or o.startswith("release[") for o in ops):
        return single_hit(cmd.text, "rake release")
    return ()


_DOCKER_VALUE = word_set(
    "--context -c -H --host --config -l --log-level --tlscacert --tlscert --tlskey -t --tag -f "
    "--file --platform --build-arg --target --network --output -o --cache-from --cache-to "
    "--secret"
)


def docker_push(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """An image pushed to a registry: push, build --push, skopeo copy to docker://."""
    argv = cmd.argv
    ops = operands(argv, _DOCKER_VALUE)
    if argv[0] == "skopeo":
        if ops[:1] == ["copy"] and any(o.startswith("docker://") for o in ops[2:]):
            return single_hit(cmd.text, "skopeo copy to a registry")
        return ()
    if ops[:1] == ["push"] or ops[:2] in (
        ["image", "push"],
        ["manifest", "push"],
        ["compose", "push"],
    ):
        return single_hit(cmd.text, f"{argv[0]} push")
    builds = ops[:1] == ["build"] or ops[:2] in (
        ["buildx", "build"],
        ["buildx", "bake"],
        ["image", "build"],
    )
    if builds and ("--push" in argv or any("type=registry" in a for a in argv)):
        return single_hit(cmd.text, f"{argv[0]} build --push")
    return ()


def gh_release(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """Creating, uploading to, editing or deleting a GitHub release."""
    ops = operands(cmd.argv, frozenset({"-R", "--repo"}))
    if ops[:1] == ["release"] and ops[1:2] and ops[1] in ("create", "upload", "edit", "delete"):
        return single_hit(cmd.text, f"gh release {ops[1]}")
    return ()
