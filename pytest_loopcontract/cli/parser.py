"""The ``loop-contract`` argument parser, one small function per sub-command.

Every sub-command gets ``--contract/-c`` and ``--json``; the parsed namespace names the
sub-command in ``command`` (and its action in ``action`` where it has several), which is all
:mod:`pytest_loopcontract.cli.main` needs to dispatch. Nothing here imports a command: asking
for ``--help`` must not load the verifier.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeAlias

from pytest_loopcontract.contract.model import DEFAULT_CONTRACT_NAME
from pytest_loopcontract.statedir import StateDir

__all__ = ["DEFAULT_CERT_KEY", "DEFAULT_LEDGER", "build_parser"]

DEFAULT_LEDGER = str(StateDir.of(".").ledger)
DEFAULT_CERT_KEY = str(StateDir.of(".").cert_key)
PYTHON_HELP = (
    "the interpreter the tests run with (default: pytest.python of the contract, else the "
    "repository's .venv, else the active virtual environment, else this one)"
)

# what ``add_subparsers`` returns; private in typeshed, hence the alias
SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class _Version(argparse.Action):
    """``--version``, reading the installed metadata only when asked: ``importlib.metadata``
    costs every command a few hundredths of a second at start-up otherwise."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kw: object) -> None:
        import pytest_loopcontract

        print(f"{parser.prog} {pytest_loopcontract.__version__}")  # stdout, as argparse's own
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: global options and every sub-command, in ``--help`` order."""
    parser = argparse.ArgumentParser(
        prog="loop-contract",
        description="External verifier for coding agents: a contract says what done means.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in _SUB_COMMANDS:
        add(sub)
    return parser


def _command(sub: SubParsers, name: str, help_text: str) -> argparse.ArgumentParser:
    """A sub-command parser with the options every sub-command takes."""
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.add_argument(
        "--contract",
        "-c",
        default=DEFAULT_CONTRACT_NAME,
        help=f"contract file (default: {DEFAULT_CONTRACT_NAME})",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def _by_login(p: argparse.ArgumentParser) -> None:
    """``--by`` of the loop's control commands: the name their record carries (``loop.wait``)."""
    p.add_argument("--by", metavar="NAME", help="who (default: the login name)")


def _actions(p: argparse.ArgumentParser) -> SubParsers:
    return p.add_subparsers(dest="action", required=True, metavar="ACTION")


def _json_here(p: argparse.ArgumentParser) -> None:
    """``--json`` after the action too; SUPPRESS keeps the value given before it."""
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS)


def _quiet(p: argparse.ArgumentParser) -> None:
    """``-q``: no live progress (phases, test count) on stderr; the result is printed as ever."""
    p.add_argument("-q", "--quiet", action="store_true", help="no live progress on stderr")


def _suite_run(p: argparse.ArgumentParser) -> None:
    """The options of a command that runs the suite itself (``baseline``, ``verify``): the
    interpreter it runs under, and ``-q``."""
    p.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    _quiet(p)


def _init(sub: SubParsers) -> None:
    p = _command(sub, "init", "scaffold a contract (optionally from a markdown checklist)")
    p.add_argument(
        "--from",
        dest="from_checklist",
        metavar="CHECKLIST.md",
        help="turn '- [ ] item' lines into DoD items",
    )
    p.add_argument("--id", help="contract id (default: the folder name)")
    p.add_argument("--goal", help="one-line goal")
    p.add_argument("--force", action="store_true", help="overwrite an existing contract")


def _check(sub: SubParsers) -> None:
    _command(sub, "check", "validate a contract")


def _baseline(sub: SubParsers) -> None:
    p = _command(
        sub, "baseline", "run the suite on the base commit; record fail-to-pass, pass-to-pass, pins"
    )
    p.add_argument("--base", metavar="REF", help="base commit (default: HEAD, tree must be clean)")
    _suite_run(p)


def _verify(sub: SubParsers) -> None:
    p = _command(
        sub, "verify", "verify the working tree in an isolated scratch copy; write the verdict"
    )
    p.add_argument("--candidate", metavar="REF", help="verify a commit instead of the work tree")
    _suite_run(p)
    p.add_argument(
        "--verdict", metavar="PATH", help="verdict path (default .loop-contract/verdict.json)"
    )
    p.add_argument(
        "--keep-scratch", action="store_true", help="keep the scratch copy for debugging"
    )
    p.add_argument(
        "--junit-xml", metavar="PATH", help="also write the verdict as JUnit XML (CI test reports)"
    )
    p.add_argument(
        "--sarif", metavar="PATH", help="also write the findings as SARIF 2.1.0 (code scanning)"
    )


def _loop(sub: SubParsers) -> None:
    p = _command(sub, "loop", "run an agent in a governed loop: turn, verify, decide, repeat")
    p.add_argument("--resume", action="store_true", help="continue the recorded loop")
    p.add_argument("--turn-timeout", type=float, help="seconds per agent turn")
    p.add_argument(
        "--poll",
        type=float,
        metavar="S",
        help="while parked or paused, look again every S seconds (default 2)",
    )
    p.add_argument(
        "agent",
        nargs=argparse.REMAINDER,
        help="-- AGENT ARGS... ({prompt} / {prompt_file} placeholders, else stdin)",
    )


def _spend(sub: SubParsers) -> None:
    p = _command(sub, "spend", "report tokens and dollars spent (trips the budget caps)")
    p.add_argument("--tokens", default=None, help="tokens used by the call")
    p.add_argument("--usd", default=None, help="dollars spent by the call")
    p.add_argument("--seat", help="which seat (agent) spent it")


def _checkpoint(sub: SubParsers) -> None:
    actions = _actions(
        _command(sub, "checkpoint", "dangerous actions that wait for a named person")
    )
    c = actions.add_parser(
        "check", help="exit 0 if the command is clear, 24 with a pending id if not"
    )
    _json_here(c)
    c.add_argument("cmd", nargs=argparse.REMAINDER, help="-- COMMAND...")
    c = actions.add_parser("list", help="pending checkpoints (--all: every one)")
    c.add_argument("--all", action="store_true")
    _json_here(c)
    c = actions.add_parser("resolve", help="approve (or --deny) a checkpoint, by name")
    c.add_argument("id")
    c.add_argument("--by", required=True, metavar="NAME")
    c.add_argument("--deny", action="store_true")
    c.add_argument("--note")


def _status(sub: SubParsers) -> None:
    p = _command(
        sub, "status", "goal, items, iterations, budgets, pending checkpoints, last verdict"
    )
    p.add_argument(
        "--serve", action="store_true", help="serve a live, read-only page and /status.json"
    )
    p.add_argument("--port", type=int, default=8765, help="port for --serve (default 8765)")
    p.add_argument(
        "--host", default="127.0.0.1", help="address for --serve (default 127.0.0.1: this machine)"
    )


def _wait(sub: SubParsers) -> None:
    p = _command(sub, "wait", "park the loop on background work: no turn until it is over")
    p.add_argument("--pid", type=int, metavar="N", help="until process N exits")
    p.add_argument(
        "--seconds",
        type=float,
        metavar="S",
        help="for S seconds (with --pid, --until-exit: at most)",
    )
    p.add_argument("--reason", metavar="TEXT", help="why (shown by status and the loop)")
    p.add_argument(
        "--until-exit",
        nargs=argparse.REMAINDER,
        metavar="CMD",
        help="until CMD... exits 0 (checked between turns; give it last)",
    )


def _unwait(sub: SubParsers) -> None:
    p = _command(sub, "unwait", "drop a barrier (all of them without an id)")
    p.add_argument("id", nargs="?", help="barrier id (wN), as 'status' shows it")
    _by_login(p)


def _control(sub: SubParsers, name: str, help_text: str, *, reason: bool) -> None:
    """A loop control command: its record names who (``--by``) and, where it takes one, why."""
    p = _command(sub, name, help_text)
    _by_login(p)
    if reason:
        p.add_argument("--reason", metavar="TEXT")


def _pause(sub: SubParsers) -> None:
    help_text = "no new agent turn until 'resume' (takes effect between turns)"
    _control(sub, "pause", help_text, reason=True)


def _resume(sub: SubParsers) -> None:
    help_text = "lift a pause ('loop --resume' restarts a stopped loop)"
    _control(sub, "resume", help_text, reason=False)


def _clear(sub: SubParsers) -> None:
    help_text = "end the loop before its next turn; drops barriers and a pause"
    _control(sub, "clear", help_text, reason=True)


def _next(sub: SubParsers) -> None:
    _command(sub, "next", "claim the next DoD item that is not done")


def _done(sub: SubParsers) -> None:
    p = _command(
        sub, "done", "mark an item done - only if an isolated verification shows it passing"
    )
    p.add_argument("item")
    _quiet(p)


def _amend(sub: SubParsers) -> None:
    p = _command(
        sub, "amend", "a person adds, lists or removes DoD criteria mid-loop (re-pins the contract)"
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--add", metavar="TEXT", help="add a criterion (with --tests, --by)")
    which.add_argument("--list", action="store_true", help="the amendments, numbered")
    which.add_argument(
        "--remove", type=int, metavar="N", help="remove amendment N (as --list numbers it)"
    )
    p.add_argument("--tests", nargs="*", metavar="SELECTOR", default=[])
    p.add_argument("--by", metavar="NAME", help="who amends (required for --add and --remove)")


def _flag(sub: SubParsers) -> None:
    p = _command(
        sub,
        "flag",
        "the agent says the task cannot be done as specified: a checkpoint for a person (exit 24)",
    )
    p.add_argument("--reason", required=True, metavar="TEXT", help="why (the tests contradict "
                   "the goal, a permission is missing, ...)")  # fmt: skip
    p.add_argument(
        "--evidence", action="append", default=[], metavar="TEXT",
        help="a test id, a line, a command's output (repeatable)",
    )  # fmt: skip


def _ledger(sub: SubParsers) -> None:
    actions = _actions(_command(sub, "ledger", "check the contest ledger's hash chain"))
    v = actions.add_parser("verify", help="name the first row that does not seal (exit 25)")
    v.add_argument("--ledger", default=DEFAULT_LEDGER, metavar="PATH")
    _json_here(v)


def _cert(sub: SubParsers) -> None:
    actions = _actions(_command(sub, "cert", "check a run certificate"))
    v = actions.add_parser("verify", help="VALID or the first mismatch (exit 25)")
    v.add_argument("token")
    v.add_argument("--key", default=DEFAULT_CERT_KEY, metavar="PATH")
    v.add_argument("--ledger", metavar="PATH", help="also check the ledger still backs it")
    _json_here(v)


def _contest(sub: SubParsers) -> None:
    p = _command(
        sub, "contest", "run a contest: every seat, the gates, blind peer judging, the bracket"
    )
    r = _actions(p).add_parser("run", help="one task to every seat; ends waiting at the human gate")
    r.add_argument("--parallel", type=int, metavar="N", help="seats working at once")
    r.add_argument("--quiet", action="store_true", help="no live progress on stderr")
    _json_here(r)


def _probe(sub: SubParsers) -> None:
    p = _command(
        sub, "probe", "run seats on an impossible variant: did each cheat, flag, or fail honestly?"
    )
    p.add_argument("--seat", action="append", default=[], metavar="NAME",
                   help="a seat to probe (repeatable; default: every seat)")  # fmt: skip


def _gate(sub: SubParsers) -> None:
    p = _command(sub, "gate", "the human gate: approve, reject or waive a contest's outcome, once")
    p.add_argument("target", metavar="CONTRACT", help="contract id or contract file")
    p.add_argument("decision", choices=["approve", "reject", "waive"])
    p.add_argument("--by", required=True, metavar="NAME", help="who decides (recorded)")
    p.add_argument("--reason", help="why (required for reject)")
    p.add_argument("--seat", help="which candidate (waive with several measured failures)")
    p.add_argument("--run", metavar="RUN_ID", help="a run other than the newest")


def _lessons(sub: SubParsers) -> None:
    p = _command(sub, "lessons", "lessons from earlier contests, ranked for this contract's domain")
    p.add_argument("--format", choices=["text", "prompt", "json"], default="text")
    p.add_argument("--domain", help="dotted domain (default: the contract's contest.domain)")
    p.add_argument("--tags", nargs="*", help="tags (default: the contract's contest.tags)")
    p.add_argument("--chars", type=int, help="character cap of the prompt block")


def _report(sub: SubParsers) -> None:
    p = _command(
        sub, "report", "the report of a contest run: terminal, --markdown FILE, --html FILE"
    )
    p.add_argument("--run", metavar="RUN_ID", help="a run other than the newest")
    p.add_argument("--html", metavar="FILE", help="write one self-contained HTML page")
    p.add_argument("--markdown", metavar="FILE", help="write the markdown report")


# The dispatch workflow's modes (cli/commands/github_dispatch.py); named here so that parsing
# imports no command.
_DISPATCH_MODES = ("dispatch", "seat", "propose")


def _github(sub: SubParsers) -> None:
    p = _command(sub, "github", "what the GitHub Action calls: plan | verify | publish | gate")
    p.add_argument("mode", choices=["plan", "verify", "publish", "gate", *_DISPATCH_MODES])
    p.add_argument("--seat", help="seat, propose: the seat's name (a dispatch matrix entry)")
    p.add_argument("--pr", type=int, help="pull request number (verify, gate)")
    p.add_argument("--base-sha", help="verify: the PR's base commit; seat, propose: dispatch's")
    p.add_argument("--head-sha", help="verify: the pull request's head commit")
    p.add_argument("--out", default="loop-contract-artifact", help="verify, seat: artifact folder")
    p.add_argument("--artifacts", default="artifacts", help="publish, propose: downloaded ones")
    p.add_argument("--sarif", metavar="PATH", help="publish: the run's findings as SARIF")


def _hook(sub: SubParsers) -> None:
    from pytest_loopcontract.loop.cli_hooks import DIALECTS, EVENTS

    actions = _actions(_command(sub, "hook", "install or run git / agent-CLI hooks"))
    h = actions.add_parser("install", help="install a hook: pre-push | " + " | ".join(DIALECTS))
    h.add_argument("target", choices=["pre-push", *DIALECTS])
    h = actions.add_parser("run", help="(called by the hooks) run one hook event")
    h.add_argument("target", choices=["pre-push", *EVENTS])
    h.add_argument("rest", nargs=argparse.REMAINDER)


_SUB_COMMANDS: tuple[Callable[[SubParsers], None], ...] = (
    _init,
    _check,
    _baseline,
    _verify,
    _loop,
    _spend,
    _checkpoint,
    _status,
    _next,
    _done,
    _amend,
    _flag,
    _wait,
    _unwait,
    _pause,
    _resume,
    _clear,
    _ledger,
    _cert,
    _contest,
    _probe,
    _gate,
    _lessons,
    _report,
    _github,
    _hook,
)
