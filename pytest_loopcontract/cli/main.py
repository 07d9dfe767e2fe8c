"""``loop-contract``: argument parsing and printing only; the work happens in the modules."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_loopcontract import __version__
from pytest_loopcontract.contract.model import DEFAULT_CONTRACT_NAME, ContractError
from pytest_loopcontract.verdict import EXIT_BASELINE, EXIT_CONTRACT_INVALID, render_checklist

__all__ = ["main"]

EXIT_USAGE = 2


PYTHON_HELP = (
    "the interpreter the tests run with (default: pytest.python of the contract, else the "
    "repository's .venv, else the active virtual environment, else this one)"
)


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _err(message: str) -> None:
    sys.stderr.write(f"loop-contract: {message}\n")


def cmd_init(args: argparse.Namespace) -> int:
    from pytest_loopcontract.contract.scaffold import render_contract, slugify

    target = Path(args.contract)
    if target.exists() and not args.force:
        _err(f"{target} already exists (use --force to overwrite)")
        return EXIT_USAGE
    checklist = None
    if args.from_checklist:
        try:
            checklist = Path(args.from_checklist).read_text("utf-8")
        except OSError as exc:
            _err(f"cannot read {args.from_checklist}: {exc.strerror}")
            return EXIT_USAGE
    contract_id = args.id or slugify(target.resolve().parent.name) or "contract"
    try:
        text = render_contract(contract_id, goal=args.goal or "", checklist=checklist)
    except ValueError as exc:
        _err(str(exc))
        return EXIT_USAGE
    from pytest_loopcontract.verdict import write_text_atomic

    write_text_atomic(target, text)
    print(f"wrote {target}; next: edit it, then 'loop-contract check' and 'loop-contract baseline'")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from pytest_loopcontract.contract.model import load_contract

    try:
        contract = load_contract(args.contract)
    except ContractError as exc:
        if args.json:
            _print_json(
                {
                    "valid": False,
                    "error": {
                        "file": exc.file,
                        "line": exc.line,
                        "column": exc.column,
                        "field": exc.field_path,
                        "message": exc.message,
                    },
                }
            )
        else:
            _err(str(exc))
        return EXIT_CONTRACT_INVALID
    if args.json:
        _print_json(
            {
                "valid": True,
                "id": contract.id,
                "mode": contract.mode,
                "sha256": contract.sha256,
                "dod": [d.id for d in contract.dod],
            }
        )
    else:
        print(
            f"{args.contract}: valid (id {contract.id}, mode {contract.mode}, "
            f"{len(contract.dod)} DoD items, {len(contract.hard_gates)} hard and "
            f"{len(contract.measured_gates)} measured gates)"
        )
    return 0


def _repo_and_contract(contract: str) -> tuple[Path, str]:
    from pytest_loopcontract.verifier.workspace import find_repo

    root = find_repo(Path.cwd())
    path = Path(contract).resolve()
    try:
        rel = path.relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ContractError("the contract must live inside the repository", file=contract) from None
    return root, rel


def cmd_baseline(args: argparse.Namespace) -> int:
    from pytest_loopcontract.verifier.baseline import BaselineRefused, baseline_path, take_baseline

    root, rel = _repo_and_contract(args.contract)
    try:
        record = take_baseline(root, rel, args.base, python=args.python)
    except BaselineRefused as exc:
        if args.json:
            _print_json({"ok": False, "reason": str(exc)})
        else:
            _err(f"baseline refused: {exc}")
        return EXIT_BASELINE
    summary = {
        "ok": True,
        "commit": record.commit,
        "mode": record.mode,
        "fail_to_pass": record.fail_to_pass,
        "pass_to_pass": len(record.pass_to_pass),
        "pins": len(record.pins),
        "plugins": record.plugins,
        "path": str(baseline_path(root)),
    }
    if args.json:
        _print_json(summary)
    else:
        print(
            f"baseline at {record.commit[:12]} ({record.mode} mode): "
            f"{len(record.fail_to_pass)} fail-to-pass, {len(record.pass_to_pass)} pass-to-pass, "
            f"{len(record.pins)} pinned paths, plugins: {', '.join(record.plugins) or 'none'}"
        )
        for nodeid in record.fail_to_pass:
            print(f"  must go green: {nodeid}")
        print(f"recorded in {baseline_path(root)}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from pytest_loopcontract.verifier.verify import verify
    from pytest_loopcontract.verifier.workspace import find_repo

    root = find_repo(Path.cwd())
    outcome = verify(
        root,
        candidate_ref=args.candidate,
        verdict_path=Path(args.verdict).resolve() if args.verdict else None,
        keep_scratch=args.keep_scratch,
        python=args.python,
    )
    if args.json:
        _print_json(outcome.verdict)
    else:
        for line in render_checklist(outcome.verdict):
            print(line)
        print(f"  verdict written to {outcome.verdict_path}")
    return int(outcome.verdict["exit_code"])


def _root() -> Path:
    from pytest_loopcontract.verifier.workspace import find_repo

    return find_repo(Path.cwd())


def _adopted(root: Path) -> Any:
    """The pinned contract of the baseline in ``root``."""
    from pytest_loopcontract.verifier.baseline import load_baseline
    from pytest_loopcontract.verifier.verify import pinned_contract

    return pinned_contract(root, load_baseline(root))


def _history(root: Path) -> Any:
    from pytest_loopcontract.loop.history import History
    from pytest_loopcontract.verifier.workspace import STATE_DIR

    return History(root / STATE_DIR)


def cmd_loop(args: argparse.Namespace) -> int:
    from pytest_loopcontract.loop.run import LoopError, run_loop
    from pytest_loopcontract.loop.state import LockHeld

    command = list(args.agent or [])
    if command and command[0] == "--":
        command = command[1:]
    try:
        return run_loop(
            _root(), command or None, resume=args.resume, turn_timeout=args.turn_timeout
        )
    except (LoopError, LockHeld) as exc:
        _err(str(exc))
        return EXIT_USAGE


def _spend_caps(root: Path, history: Any) -> Any:
    """The running loop's caps; before any loop, the adopted contract's budget."""
    from pytest_loopcontract.loop.budget import Caps
    from pytest_loopcontract.loop.state import reduce
    from pytest_loopcontract.verifier.baseline import baseline_path

    caps = Caps.from_state(reduce(history.read().records))
    if (caps.tokens is None and caps.usd is None) and baseline_path(root).exists():
        budget = _adopted(root).budget
        caps = Caps(tokens=budget.tokens, usd=budget.usd)
    return caps


def cmd_spend(args: argparse.Namespace) -> int:
    from pytest_loopcontract.loop.budget import parse_spend, record_spend

    try:
        spend = parse_spend(args.tokens, args.usd)
    except ValueError as exc:
        _err(str(exc))
        return EXIT_USAGE
    root = _root()
    history = _history(root)
    try:
        result = record_spend(history, spend, args.seat, _spend_caps(root, history))
    except ValueError as exc:
        _err(str(exc))
        return EXIT_USAGE
    summary = {
        "tokens": result.spent_total.tokens,
        "usd": result.spent_total.usd,
        "tripped": result.tripped,
        "newly_tripped": result.newly_tripped,
    }
    if args.json:
        _print_json(summary)
    else:
        print(
            f"spent so far: {result.spent_total.tokens} tokens, ${result.spent_total.usd:.4f}"
            + (f"; budget tripped: {', '.join(result.tripped)}" if result.tripped else "")
        )
    return result.exit_code


def cmd_checkpoint(args: argparse.Namespace) -> int:
    from pytest_loopcontract.checkpoints import clearance
    from pytest_loopcontract.loop.agent_hooks import check_command
    from pytest_loopcontract.loop.state import reduce
    from pytest_loopcontract.verdict import EXIT_AWAIT_HUMAN

    root = _root()
    if args.action == "check":
        command = list(args.cmd or [])
        if command and command[0] == "--":
            command = command[1:]
        if not command:
            _err("usage: loop-contract checkpoint check -- COMMAND...")
            return EXIT_USAGE
        matches, request = check_command(root, command if len(command) > 1 else command[0])
        if args.json:
            _print_json(
                {
                    "status": request.status if request else "clear",
                    "id": request.id if request else None,
                    "matches": [
                        {"pattern_id": m.pattern_id, "message": m.message, "evidence": m.evidence}
                        for m in matches
                    ],
                }
            )
        elif request is None:
            print("clear: no checkpoint matches")
        else:
            for match in matches:
                print(f"  {match.pattern_id}: {match.message} ({match.evidence})")
            print(
                f"{request.status}: {request.id}"
                + (
                    ""
                    if request.status != "pending"
                    else f" - a person clears it: loop-contract checkpoint resolve {request.id} "
                    "--by NAME"
                )
            )
        return 0 if request is None or request.status == "cleared" else EXIT_AWAIT_HUMAN
    history = _history(root)
    if args.action == "list":
        records = history.read().records
        state = reduce(records)
        entries = [
            cp for cp in state["checkpoints"].values() if args.all or cp.get("status") == "pending"
        ]
        if args.json:
            _print_json(entries)
        else:
            if not entries:
                print("no pending checkpoints")
            for cp in entries:
                by = f" by {cp['by']}" if cp.get("by") else ""
                print(
                    f"{cp['id']} [{cp.get('status')}{by}] {cp.get('kind')}: "
                    f"{cp.get('message')} :: {cp.get('subject')}"
                )
        return 0
    try:
        record = clearance.resolve(
            history, args.id, by=args.by or "", deny=args.deny, note=args.note or ""
        )
    except clearance.ClearanceError as exc:
        _err(str(exc))
        return EXIT_USAGE
    done = "approved" if record.data["decision"] == "approve" else "denied"
    print(f"{args.id} {done} by {record.data['by']}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    import json as _json

    from pytest_loopcontract.loop.budget import elapsed_seconds, now_instant, start_instant
    from pytest_loopcontract.loop.state import lock_holder, reduce
    from pytest_loopcontract.loop.status import render_status, status_document
    from pytest_loopcontract.verifier.workspace import STATE_DIR

    root = _root()
    contract = _adopted(root)
    read = _history(root).read()
    state = reduce(read.records)
    verdict = None
    with contextlib.suppress(OSError, ValueError):
        verdict = _json.loads((root / STATE_DIR / "verdict.json").read_text("utf-8"))
    start = start_instant(state)
    minutes = elapsed_seconds(start, now_instant()) / 60 if start else 0.0
    doc = status_document(contract, state, verdict, minutes)
    doc["history"] = {"records": len(read.records), "problems": read.messages()}
    holder = lock_holder(root / STATE_DIR)
    doc["loop"]["lock_holder"] = holder
    if doc["loop"].get("status") == "running" and holder is None:
        # recorded as running, but no process holds the loop: it was killed or interrupted
        doc["loop"]["status"] = "interrupted"
    if args.json:
        _print_json(doc)
    else:
        for line in render_status(doc):
            print(line)
        for problem in read.messages():
            print(f"history: {problem}")
    return 0


def cmd_next(args: argparse.Namespace) -> int:
    from pytest_loopcontract.loop.items import claim_next

    root = _root()
    item = claim_next(root, _adopted(root))
    if args.json:
        _print_json(item)
    elif item is None:
        print("every DoD item is done")
    else:
        print(f"next: {item['id']}: {item['text']}")
        for test in item["tests"]:
            print(f"  must pass: {test}")
        print(f"  (tests marked {item['marker']} count too); then: loop-contract done {item['id']}")
    return 0


def cmd_done(args: argparse.Namespace) -> int:
    from pytest_loopcontract.loop.items import ItemError, mark_done
    from pytest_loopcontract.verdict import EXIT_NOT_MET

    root = _root()
    try:
        result = mark_done(root, _adopted(root), args.item)
    except ItemError as exc:
        _err(str(exc))
        return EXIT_USAGE
    if args.json:
        _print_json(
            {
                "item": result.item,
                "done": result.done,
                "failing": result.failing,
                "hook_exit": result.hook_exit,
            }
        )
    elif result.done and result.hook_exit not in (None, 0):
        print(
            f"{result.item}: tests pass, but on_item_done exited {result.hook_exit}; "
            "the item stays open until its hook succeeds"
        )
    elif result.done:
        hook = "" if result.hook_exit is None else " (on_item_done exited 0)"
        print(f"{result.item}: done, shown by an isolated verification{hook}")
    else:
        print(f"{result.item}: NOT done - the verifier says so, whatever the agent says:")
        for test in result.failing:
            print(f"  {test['outcome']}: {test['nodeid']}")
    return 0 if result.done and result.hook_exit in (None, 0) else EXIT_NOT_MET


def cmd_amend(args: argparse.Namespace) -> int:
    from pytest_loopcontract.loop.items import ItemError, amend

    root, rel = _repo_and_contract(args.contract)
    try:
        item = amend(root, rel, text=args.add, tests=list(args.tests or []), by=args.by or "")
    except ItemError as exc:
        _err(str(exc))
        return EXIT_USAGE
    print(f"added DoD item {item!r}; contract re-pinned by {args.by}")
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    from pytest_loopcontract.loop import agent_hooks
    from pytest_loopcontract.verifier.workspace import WorkspaceError

    root = _root()
    if args.action == "install":
        try:
            if args.target == "pre-push":
                path = agent_hooks.install_pre_push(root)
            else:
                path = agent_hooks.install_claude_code(root)
        except (OSError, ValueError) as exc:
            _err(str(exc))
            return EXIT_USAGE
        print(f"installed {args.target} hook: {path}")
        return 0
    stdin_text = "" if sys.stdin.isatty() else sys.stdin.read()
    try:
        return agent_hooks.run_hook(args.target, root, stdin_text, list(args.rest or []))
    except (ContractError, WorkspaceError) as exc:
        # Exit 1, never 2: for Claude Code, 2 means "block", and a broken setup must not
        # trap the agent; for git, any non-zero still refuses the push.
        _err(f"hook {args.target}: {exc}")
        return 1


DEFAULT_LEDGER = ".loop-contract/ledger.sqlite"
DEFAULT_CERT_KEY = ".loop-contract/cert.key"


def cmd_ledger(args: argparse.Namespace) -> int:
    from pytest_loopcontract.contest.ledger import verify_file
    from pytest_loopcontract.verdict import EXIT_TAMPER

    path = Path(args.ledger)
    if not path.exists():
        _err(f"no ledger at {path} (a contest run creates it)")
        return EXIT_USAGE
    result = verify_file(path)
    if args.json:
        _print_json(
            {
                "ok": result.ok,
                "rows_checked": result.rows_checked,
                "first_bad_seq": result.first_bad_seq,
                "reason": result.reason,
                "head": result.head,
                "warnings": list(result.warnings),
            }
        )
    elif result.ok:
        print(f"{path}: {result.rows_checked} rows seal; head {result.head}")
    else:
        where = f"row {result.first_bad_seq}" if result.first_bad_seq is not None else "file"
        print(f"{path}: BROKEN at {where}: {result.reason}")
    if not args.json:
        for warning in result.warnings:
            print(f"  warning: {warning}")
    return 0 if result.ok else EXIT_TAMPER


def cmd_cert(args: argparse.Namespace) -> int:
    from pytest_loopcontract.contest import certificate
    from pytest_loopcontract.contest.ledger import Ledger, LedgerError
    from pytest_loopcontract.verdict import EXIT_TAMPER

    key_path = Path(args.key)
    if not key_path.exists():
        # never create a key here: a fresh key would make every real certificate look forged
        _err(f"no certificate key at {key_path}; pass --key PATH")
        return EXIT_USAGE
    try:
        key = certificate.load_or_create_key(key_path)
    except certificate.KeyFileError as exc:
        _err(str(exc))
        return EXIT_USAGE
    ledger = None
    if args.ledger:
        try:
            ledger = Ledger(args.ledger, create=False)
        except LedgerError as exc:
            _err(str(exc))
            return EXIT_USAGE
    try:
        check = certificate.verify(args.token.strip(), key, ledger=ledger)
    finally:
        if ledger is not None:
            ledger.close()
    if args.json:
        _print_json(
            {
                "valid": check.valid,
                "code": check.code,
                "reason": check.reason,
                "payload": check.payload,
            }
        )
    else:
        print(check.reason)
    return 0 if check.valid else EXIT_TAMPER


def cmd_contest(args: argparse.Namespace) -> int:
    from pytest_loopcontract.contest.errors import ContestError
    from pytest_loopcontract.contest.ledger import LedgerError, RunBusy
    from pytest_loopcontract.contest.orchestrate import run_contest
    from pytest_loopcontract.contest.report.markdown import render_markdown
    from pytest_loopcontract.contest.report.terminal import render_terminal
    from pytest_loopcontract.contest.results import contest_exit_code

    root = _root()
    rel = _repo_and_contract(args.contract)[1] if Path(args.contract).exists() else None
    try:
        result = run_contest(
            root,
            contract_path=rel,
            emit=None if args.quiet else (lambda line: _err(line)),
            parallel=args.parallel,
        )
    except RunBusy as exc:
        _err(str(exc))
        return EXIT_USAGE
    except (ContestError, LedgerError) as exc:
        _err(str(exc))
        return getattr(exc, "exit_code", EXIT_USAGE)
    from pytest_loopcontract.contest.paths import ContestPaths
    from pytest_loopcontract.verdict import write_text_atomic

    run_dir = ContestPaths(root).run_dir(result["run_id"])
    write_text_atomic(run_dir / "report.md", render_markdown(result))
    if args.json:
        _print_json(result)
    else:
        print(render_terminal(result))
        print(f"run folder: {run_dir}")
    return contest_exit_code(result)


def cmd_gate(args: argparse.Namespace) -> int:
    from pytest_loopcontract.contest.errors import ContestError
    from pytest_loopcontract.contest.gate import GateError, decide
    from pytest_loopcontract.contest.ledger import LedgerError

    try:
        result = decide(
            _root(),
            args.target,
            args.decision,
            by=args.by,
            reason=args.reason,
            seat=args.seat,
            run_id=args.run,
        )
    except (GateError, ContestError, LedgerError) as exc:
        _err(f"gate: {exc}")
        return 1
    decision = result["decision"]
    if args.json:
        _print_json(decision | {"status": result["status"], "certificate": result["certificate"]})
    elif decision["seat"]:
        print(
            f"{decision['decision']}d by {decision['by']}: {decision['seat']} merged into "
            f"{result['base']['branch']} (run {result['run_id']})"
        )
        print(f"certificate: {result['certificate']}")
    else:
        print(
            f"rejected by {decision['by']}: {decision['reason']} - the next "
            "`loop-contract contest run` carries the reason in every prompt"
        )
    return 0


def cmd_lessons(args: argparse.Namespace) -> int:
    from pytest_loopcontract.contest.lesson_store import LessonStore
    from pytest_loopcontract.contest.lessons.prompt import prompt_block
    from pytest_loopcontract.contest.orchestrate import DEFAULT_LESSON_CHARS
    from pytest_loopcontract.contest.panel import lesson_scope
    from pytest_loopcontract.contest.paths import ContestPaths

    root = _root()
    settings: dict[str, Any] = {}
    domain, tags = args.domain, tuple(args.tags or ())
    if domain is None:
        contract = _adopted(root)
        settings = dict(contract.contest)
        domain, contract_tags = lesson_scope(contract)
        tags = tags if args.tags is not None else contract_tags
    chars = (
        args.chars
        if args.chars is not None
        else int(settings.get("lesson_chars", DEFAULT_LESSON_CHARS))
    )
    path = ContestPaths(root).lessons
    ranked = []
    if path.exists():
        with LessonStore(path) as store:
            ranked = store.lookup(domain, tags)
    if args.format == "json":
        _print_json([lesson.to_json() for lesson in ranked])
    elif args.format == "prompt":
        text = prompt_block(ranked, cap_chars=chars).text
        sys.stdout.write(text if not text or text.endswith("\n") else text + "\n")
    else:
        if not ranked:
            print(f"no lessons for {domain}")
        for lesson in ranked:
            print(f"[{lesson.domain}] {lesson.rule}")
            print(f"    evidence: {lesson.evidence}  (gate {lesson.gate}, seen {lesson.seen}x)")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from pytest_loopcontract.contest.errors import ContestError
    from pytest_loopcontract.contest.report.html import write_html
    from pytest_loopcontract.contest.report.markdown import render_markdown
    from pytest_loopcontract.contest.report.terminal import render_terminal
    from pytest_loopcontract.contest.results import latest_result
    from pytest_loopcontract.verdict import write_text_atomic

    try:
        _, result = latest_result(_root(), args.run)
    except ContestError as exc:
        _err(str(exc))
        return EXIT_USAGE
    if args.html:
        write_html(Path(args.html), result)
    if args.markdown:
        write_text_atomic(Path(args.markdown), render_markdown(result))
    if args.json:
        _print_json(result)
    elif not (args.html or args.markdown):
        print(render_terminal(result))
    else:
        for kind, target in (("html", args.html), ("markdown", args.markdown)):
            if target:
                print(f"{kind} report written to {target}")
    return 0


def cmd_github(args: argparse.Namespace) -> int:
    """The modes the GitHub Action calls; configuration comes from the Actions environment."""
    import logging

    from pytest_loopcontract.contract.model import load_contract
    from pytest_loopcontract.github.actions_env import ActionsEnv, ActionsEnvError

    logging.basicConfig(level=logging.INFO, format="loop-contract: %(message)s", stream=sys.stderr)
    if args.mode == "verify":
        from pytest_loopcontract.github.verify_pr import verify_pull_request

        root = _root()
        out = Path(args.out).resolve()
        verdict = verify_pull_request(
            root,
            contract_path=_repo_and_contract(args.contract)[1],
            pr=args.pr,
            base_sha=args.base_sha,
            head_sha=args.head_sha,
            out=out,
            scratch=out.parent,
        )
        print(f"verdict for #{args.pr}: {verdict['verdict']} (exit {verdict['exit_code']})")
        return 0
    try:
        env = ActionsEnv.from_environ()
    except ActionsEnvError as exc:
        _err(str(exc))
        return EXIT_USAGE
    from pytest_loopcontract.github.client import make_github

    contract = load_contract(args.contract)
    repo = make_github(env.token, base_url=env.api_url, lazy=True).get_repo(env.repository)
    if args.mode == "plan":
        from pytest_loopcontract.github.plan import plan

        number = (env.event().get("pull_request") or {}).get("number")
        rows = plan(repo, contract.id, only_pr=number if isinstance(number, int) else None)
        env.set_output("candidates", json.dumps(rows))
        env.set_output("count", str(len(rows)))
        print(json.dumps(rows))
        return 0
    if args.mode == "publish":
        import tempfile

        from pytest_loopcontract.github.publish import publish
        from pytest_loopcontract.github.trust import VerifyRun

        run = VerifyRun.from_event(env.event())
        if run is None:
            # Without the workflow_run event there is no run to check, and artifacts must
            # never be taken on trust: refuse instead of publishing them.
            _err("github publish needs the workflow_run event of a verify run")
            return EXIT_USAGE
        with tempfile.TemporaryDirectory(prefix="loopcontract-publish-") as work:
            outcome = publish(
                repo,
                contract=contract,
                artifacts=Path(args.artifacts),
                workdir=Path(work),
                bot_login=env.bot_login,
                run_id=env.run_id,
                run=run,
            )
        env.add_summary(outcome.summary)
        env.set_output("winner", str(outcome.result.get("winner") or ""))
        env.set_output("status", str(outcome.result["status"]))
        for pr, action in sorted(outcome.comments.items()):
            print(f"#{pr}: comment {action}")
        for line in outcome.statuses:
            print(line)
        print(f"status: {outcome.result['status']}; winner: {outcome.result.get('winner')}")
        return 0
    from pytest_loopcontract.github.decide import gate

    event = env.event()
    number = (event.get("pull_request") or {}).get("number") if args.pr is None else args.pr
    from pytest_loopcontract.github.participants import contract_logins

    result = gate(
        repo,
        contract_id=contract.id,
        bot_login=env.bot_login,
        seat_logins=contract_logins(contract),
        pr_number=int(number) if isinstance(number, int) else None,
    )
    env.set_output("decision", result.decision)
    print(f"gate: {result.decision} ({result.reason})" + (f" by {result.by}" if result.by else ""))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loop-contract",
        description="External verifier for coding agents: a contract says what done means.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "--contract",
            "-c",
            default=DEFAULT_CONTRACT_NAME,
            help=f"contract file (default: {DEFAULT_CONTRACT_NAME})",
        )
        p.add_argument("--json", action="store_true", help="machine-readable output")
        return p

    p = add("init", "scaffold a contract (optionally from a markdown checklist)")
    p.add_argument(
        "--from",
        dest="from_checklist",
        metavar="CHECKLIST.md",
        help="turn '- [ ] item' lines into DoD items",
    )
    p.add_argument("--id", help="contract id (default: the folder name)")
    p.add_argument("--goal", help="one-line goal")
    p.add_argument("--force", action="store_true", help="overwrite an existing contract")
    p.set_defaults(func=cmd_init)

    p = add("check", "validate a contract")
    p.set_defaults(func=cmd_check)

    p = add("baseline", "run the suite on the base commit; record fail-to-pass, pass-to-pass, pins")
    p.add_argument("--base", metavar="REF", help="base commit (default: HEAD, tree must be clean)")
    p.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    p.set_defaults(func=cmd_baseline)

    p = add("verify", "verify the working tree in an isolated scratch copy; write the verdict")
    p.add_argument("--candidate", metavar="REF", help="verify a commit instead of the work tree")
    p.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    p.add_argument(
        "--verdict", metavar="PATH", help="verdict path (default .loop-contract/verdict.json)"
    )
    p.add_argument(
        "--keep-scratch", action="store_true", help="keep the scratch copy for debugging"
    )
    p.set_defaults(func=cmd_verify)

    p = add("loop", "run an agent in a governed loop: turn, verify, decide, repeat")
    p.add_argument("--resume", action="store_true", help="continue the recorded loop")
    p.add_argument("--turn-timeout", type=float, help="seconds per agent turn")
    p.add_argument(
        "agent",
        nargs=argparse.REMAINDER,
        help="-- AGENT ARGS... ({prompt} / {prompt_file} placeholders, else stdin)",
    )
    p.set_defaults(func=cmd_loop)

    p = add("spend", "report tokens and dollars spent (trips the budget caps)")
    p.add_argument("--tokens", default=None, help="tokens used by the call")
    p.add_argument("--usd", default=None, help="dollars spent by the call")
    p.add_argument("--seat", help="which seat (agent) spent it")
    p.set_defaults(func=cmd_spend)

    p = add("checkpoint", "dangerous actions that wait for a named person")
    cp = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = cp.add_parser("check", help="exit 0 if the command is clear, 24 with a pending id if not")
    c.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    c.add_argument("cmd", nargs=argparse.REMAINDER, help="-- COMMAND...")
    c = cp.add_parser("list", help="pending checkpoints (--all: every one)")
    c.add_argument("--all", action="store_true")
    c.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    c = cp.add_parser("resolve", help="approve (or --deny) a checkpoint, by name")
    c.add_argument("id")
    c.add_argument("--by", required=True, metavar="NAME")
    c.add_argument("--deny", action="store_true")
    c.add_argument("--note")
    p.set_defaults(func=cmd_checkpoint)

    p = add("status", "goal, items, iterations, budgets, pending checkpoints, last verdict")
    p.set_defaults(func=cmd_status)

    p = add("next", "claim the next DoD item that is not done")
    p.set_defaults(func=cmd_next)

    p = add("done", "mark an item done - only if an isolated verification shows it passing")
    p.add_argument("item")
    p.set_defaults(func=cmd_done)

    p = add("amend", "a person adds a DoD criterion mid-loop (re-pins the contract)")
    p.add_argument("--add", required=True, metavar="TEXT")
    p.add_argument("--tests", nargs="*", metavar="SELECTOR", default=[])
    p.add_argument("--by", required=True, metavar="NAME")
    p.set_defaults(func=cmd_amend)

    p = add("ledger", "check the contest ledger's hash chain")
    lp = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    lv = lp.add_parser("verify", help="name the first row that does not seal (exit 25)")
    lv.add_argument("--ledger", default=DEFAULT_LEDGER, metavar="PATH")
    lv.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    p.set_defaults(func=cmd_ledger)

    p = add("cert", "check a run certificate")
    cpp = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    cv = cpp.add_parser("verify", help="VALID or the first mismatch (exit 25)")
    cv.add_argument("token")
    cv.add_argument("--key", default=DEFAULT_CERT_KEY, metavar="PATH")
    cv.add_argument("--ledger", metavar="PATH", help="also check the ledger still backs it")
    cv.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    p.set_defaults(func=cmd_cert)

    p = add("contest", "run a contest: every seat, the gates, blind peer judging, the bracket")
    cp2 = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    cr = cp2.add_parser("run", help="one task to every seat; ends waiting at the human gate")
    cr.add_argument("--parallel", type=int, metavar="N", help="seats working at once")
    cr.add_argument("--quiet", action="store_true", help="no live progress on stderr")
    cr.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    p.set_defaults(func=cmd_contest)

    p = add("gate", "the human gate: approve, reject or waive a contest's outcome, once")
    p.add_argument("target", metavar="CONTRACT", help="contract id or contract file")
    p.add_argument("decision", choices=["approve", "reject", "waive"])
    p.add_argument("--by", required=True, metavar="NAME", help="who decides (recorded)")
    p.add_argument("--reason", help="why (required for reject)")
    p.add_argument("--seat", help="which candidate (waive with several measured failures)")
    p.add_argument("--run", metavar="RUN_ID", help="a run other than the newest")
    p.set_defaults(func=cmd_gate)

    p = add("lessons", "lessons from earlier contests, ranked for this contract's domain")
    p.add_argument("--format", choices=["text", "prompt", "json"], default="text")
    p.add_argument("--domain", help="dotted domain (default: the contract's contest.domain)")
    p.add_argument("--tags", nargs="*", help="tags (default: the contract's contest.tags)")
    p.add_argument("--chars", type=int, help="character cap of the prompt block")
    p.set_defaults(func=cmd_lessons)

    p = add("report", "the report of a contest run: terminal, --markdown FILE, --html FILE")
    p.add_argument("--run", metavar="RUN_ID", help="a run other than the newest")
    p.add_argument("--html", metavar="FILE", help="write one self-contained HTML page")
    p.add_argument("--markdown", metavar="FILE", help="write the markdown report")
    p.set_defaults(func=cmd_report)

    p = add("github", "what the GitHub Action calls: plan | verify | publish | gate")
    p.add_argument("mode", choices=["plan", "verify", "publish", "gate"])
    p.add_argument("--pr", type=int, help="pull request number (verify, gate)")
    p.add_argument("--base-sha", help="verify: the pull request's base commit")
    p.add_argument("--head-sha", help="verify: the pull request's head commit")
    p.add_argument("--out", default="loop-contract-artifact", help="verify: artifact folder")
    p.add_argument("--artifacts", default="artifacts", help="publish: downloaded artifacts")
    p.set_defaults(func=cmd_github)

    p = add("hook", "install or run git / agent-CLI hooks")
    hp = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    h = hp.add_parser("install", help="install a hook: pre-push | claude-code")
    h.add_argument("target", choices=["pre-push", "claude-code"])
    h = hp.add_parser("run", help="(called by the hooks) run one hook event")
    h.add_argument("target", choices=["pre-push", "claude-pre-tool-use", "claude-stop"])
    h.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_hook)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from pytest_loopcontract.verifier.workspace import WorkspaceError

    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except ContractError as exc:
        _err(f"contract invalid: {exc}")
        return EXIT_CONTRACT_INVALID
    except WorkspaceError as exc:
        _err(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    return code
