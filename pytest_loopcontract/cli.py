"""``loop-contract``: argument parsing and printing only; the work happens in the modules."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .contract import DEFAULT_CONTRACT_NAME, ContractError
from .verdict import EXIT_BASELINE, EXIT_CONTRACT_INVALID, render_checklist

__all__ = ["main"]

EXIT_USAGE = 2


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _err(message: str) -> None:
    sys.stderr.write(f"loop-contract: {message}\n")


def cmd_init(args: argparse.Namespace) -> int:
    from .scaffold import render_contract, slugify

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
    from .verdict import write_text_atomic

    write_text_atomic(target, text)
    print(f"wrote {target}; next: edit it, then 'loop-contract check' and 'loop-contract baseline'")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from .contract import load_contract

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
    from .workspace import find_repo

    root = find_repo(Path.cwd())
    path = Path(contract).resolve()
    try:
        rel = path.relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ContractError("the contract must live inside the repository", file=contract) from None
    return root, rel


def cmd_baseline(args: argparse.Namespace) -> int:
    from .baseline import BaselineRefused, baseline_path, take_baseline

    root, rel = _repo_and_contract(args.contract)
    try:
        record = take_baseline(root, rel, args.base)
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
    from .verify import verify
    from .workspace import find_repo

    root = find_repo(Path.cwd())
    outcome = verify(
        root,
        candidate_ref=args.candidate,
        verdict_path=Path(args.verdict).resolve() if args.verdict else None,
        keep_scratch=args.keep_scratch,
    )
    if args.json:
        _print_json(outcome.verdict)
    else:
        for line in render_checklist(outcome.verdict):
            print(line)
        print(f"  verdict written to {outcome.verdict_path}")
    return int(outcome.verdict["exit_code"])


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
    p.set_defaults(func=cmd_baseline)

    p = add("verify", "verify the working tree in an isolated scratch copy; write the verdict")
    p.add_argument("--candidate", metavar="REF", help="verify a commit instead of the work tree")
    p.add_argument(
        "--verdict", metavar="PATH", help="verdict path (default .loop-contract/verdict.json)"
    )
    p.add_argument(
        "--keep-scratch", action="store_true", help="keep the scratch copy for debugging"
    )
    p.set_defaults(func=cmd_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from .workspace import WorkspaceError

    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except ContractError as exc:
        _err(f"contract invalid: {exc}")
        return EXIT_CONTRACT_INVALID
    except WorkspaceError as exc:
        _err(str(exc))
        return EXIT_BASELINE if "baseline" in str(exc) else EXIT_USAGE
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    return code
