"""``loop-contract status --serve [--port P]``: the live, read-only status page."""

from __future__ import annotations

from pytest_loopcontract.cli.commands.status import collect_status
from pytest_loopcontract.cli.repo import adopted_contract, repo_root
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.loop.status.server import make_server

__all__ = ["serve"]


def serve(*, host: str = "127.0.0.1", port: int = 8765) -> int:
    """Serve until Ctrl-C; every request reads the history afresh."""
    root = repo_root()
    adopted_contract(root)  # no baseline: say so now, not on every request
    try:
        server = make_server(lambda: collect_status(root), host, port)
    except OSError as exc:
        raise CommandError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} "
            "(try another --port, or --port 0 for any free port)"
        ) from None
    bound_host, bound_port = str(server.server_address[0]), int(server.server_address[1])
    url = f"http://{bound_host}:{bound_port}/"
    print(f"serving the status of {root} on {url} (read-only; Ctrl-C ends)", flush=True)
    try:
        server.serve_forever(poll_interval=0.25)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
