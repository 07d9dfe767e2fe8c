"""``loop-contract``: parse the command line, hand plain arguments to one command, map errors.

The console script (:func:`pytest_loopcontract.launcher.main`) calls :func:`main` once the
process is clean. Each ``_run_*`` below imports its command when it runs, not at start-up:
the commands between them pull in the verifier, the contest and PyGithub, and a hook that
git or an agent CLI calls on every push or tool use should load only what it needs.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Sequence

from pytest_loopcontract.cli.error_handler import run_command
from pytest_loopcontract.cli.parser import build_parser

__all__ = ["main"]

Namespace = argparse.Namespace


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``loop-contract`` command line; its exit code (argparse exits 2 on bad usage)."""
    args = build_parser().parse_args(argv)
    run = _COMMANDS[args.command]
    return run_command(lambda: run(args))


def _run_init(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.init import init

    return init(
        a.contract, from_checklist=a.from_checklist, contract_id=a.id, goal=a.goal, force=a.force
    )


def _run_check(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.check import check

    return check(a.contract, as_json=a.json)


def _stoppable(command: Callable[[Namespace], int]) -> Callable[[Namespace], int]:
    """Ctrl-C and SIGTERM (a CI cancel, ``timeout``) stop a command that runs the suite at
    once: the sandbox ends and the scratch folders go before the exit (130 / 143). Taken
    before the command's imports, which are most of a short run's time."""

    @functools.wraps(command)
    def stoppable(a: Namespace) -> int:
        from pytest_loopcontract.processes import stopping_on_signals

        with stopping_on_signals():
            return command(a)

    return stoppable


@_stoppable
def _run_baseline(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.baseline import baseline

    return baseline(a.contract, base=a.base, python=a.python, as_json=a.json, quiet=a.quiet)


@_stoppable
def _run_verify(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.verify import verify

    return verify(
        candidate=a.candidate,
        verdict=a.verdict,
        keep_scratch=a.keep_scratch,
        python=a.python,
        as_json=a.json,
        junit_xml=a.junit_xml,
        sarif=a.sarif,
        quiet=a.quiet,
    )


def _run_loop(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.loop import loop

    return loop(a.agent or [], resume=a.resume, turn_timeout=a.turn_timeout, poll=a.poll)


def _run_spend(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.spend import spend

    return spend(tokens=a.tokens, usd=a.usd, seat=a.seat, as_json=a.json)


def _run_checkpoint(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands import checkpoint

    if a.action == "check":
        return checkpoint.check(a.cmd or [], as_json=a.json)
    if a.action == "list":
        return checkpoint.list_checkpoints(show_all=a.all, as_json=a.json)
    return checkpoint.resolve(a.id, by=a.by or "", deny=a.deny, note=a.note or "")


def _run_status(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.status import status

    if a.serve:
        from pytest_loopcontract.cli.commands.status_serve import serve

        return serve(host=a.host, port=a.port)
    return status(as_json=a.json)


def _run_next(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.next import next_item

    return next_item(as_json=a.json)


def _run_done(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.done import done

    return done(a.item, as_json=a.json, quiet=a.quiet)


def _run_amend(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands import amend

    if a.list:
        return amend.list_amendments(as_json=a.json)
    if a.remove is not None:
        return amend.remove(a.contract, a.remove, by=a.by or "")
    return amend.amend(a.contract, text=a.add, tests=a.tests or [], by=a.by or "")


def _run_wait(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.wait import wait

    return wait(
        pid=a.pid, seconds=a.seconds, until_exit=a.until_exit, reason=a.reason, as_json=a.json
    )


def _run_unwait(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.unwait import unwait

    return unwait(a.id, by=a.by)


def _run_pause(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.pause import pause

    return pause(by=a.by, reason=a.reason)


def _run_resume(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.resume import resume

    return resume(by=a.by)


def _run_clear(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.clear import clear

    return clear(by=a.by, reason=a.reason)


def _run_hook(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands import hook

    if a.action == "install":
        return hook.install(a.target)
    return hook.run(a.target, a.rest or [])


def _run_ledger(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.ledger import verify

    return verify(a.ledger, as_json=a.json)


def _run_cert(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.cert import verify

    return verify(a.token, key=a.key, ledger=a.ledger, as_json=a.json)


def _run_contest(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.contest import run

    return run(a.contract, parallel=a.parallel, quiet=a.quiet, as_json=a.json)


def _run_gate(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.gate import gate

    return gate(
        a.target, a.decision, by=a.by, reason=a.reason, seat=a.seat, run_id=a.run, as_json=a.json
    )


def _run_lessons(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.lessons import lessons

    return lessons(fmt=a.format, domain=a.domain, tags=a.tags, chars=a.chars)


def _run_report(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.report import report

    return report(run_id=a.run, html=a.html, markdown=a.markdown, as_json=a.json)


def _run_github(a: Namespace) -> int:
    from pytest_loopcontract.github.dependency import require_github_extra

    require_github_extra()  # PyGithub is the `github` extra: say so rather than a traceback
    from pytest_loopcontract.cli.commands.github import github

    if a.mode in ("dispatch", "seat", "propose"):
        from pytest_loopcontract.cli.commands.github_dispatch import github_dispatch

        folder = a.out if a.mode == "seat" else a.artifacts
        return github_dispatch(
            a.mode, contract=a.contract, seat=a.seat, base_sha=a.base_sha, folder=folder
        )
    return github(
        a.mode,
        contract=a.contract,
        pr=a.pr,
        base_sha=a.base_sha,
        head_sha=a.head_sha,
        out=a.out,
        artifacts=a.artifacts,
        sarif=a.sarif,
    )


def _run_flag(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.flag import flag

    return flag(a.reason, evidence=a.evidence, as_json=a.json)


def _run_probe(a: Namespace) -> int:
    from pytest_loopcontract.cli.commands.probe import probe

    return probe(a.contract, a.seat, as_json=a.json)


_COMMANDS: dict[str, Callable[[Namespace], int]] = {
    "init": _run_init,
    "check": _run_check,
    "baseline": _run_baseline,
    "verify": _run_verify,
    "loop": _run_loop,
    "spend": _run_spend,
    "checkpoint": _run_checkpoint,
    "status": _run_status,
    "next": _run_next,
    "done": _run_done,
    "amend": _run_amend,
    "flag": _run_flag,
    "wait": _run_wait,
    "unwait": _run_unwait,
    "pause": _run_pause,
    "resume": _run_resume,
    "clear": _run_clear,
    "hook": _run_hook,
    "ledger": _run_ledger,
    "cert": _run_cert,
    "contest": _run_contest,
    "probe": _run_probe,
    "gate": _run_gate,
    "lessons": _run_lessons,
    "report": _run_report,
    "github": _run_github,
}
