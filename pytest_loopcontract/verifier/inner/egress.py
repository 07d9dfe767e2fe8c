"""Egress control for the test run: connect only to allowed hosts, record every attempt.

Implemented with an audit hook (PEP 578) on ``socket.getaddrinfo``, ``socket.connect`` and
``socket.sendto``. Audit events fire inside the C socket functions, so a test or candidate
that monkeypatches ``socket.socket`` still passes through here. Audit hooks cannot be removed,
so the hook is installed once per process and consults a swappable policy.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EgressPolicy", "install", "uninstall"]

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


@dataclass
class EgressPolicy:
    """Allowed host names (and the addresses they resolved to) plus the attempts seen."""

    allow: frozenset[str]
    allowed_addresses: set[str] = field(default_factory=set)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take_attempts(self) -> list[dict[str, Any]]:
        with self.lock:
            taken, self.attempts = self.attempts, []
        return taken


_policy: EgressPolicy | None = None
_hook_installed = False
_local = threading.local()


def _is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _host_port(event: str, args: tuple[Any, ...]) -> tuple[str, Any] | None:
    """The remote host of an audited call, or None when it is not a network destination."""
    if event == "socket.getaddrinfo":
        host = args[0]
        if host is None:
            return None
        return (host.decode() if isinstance(host, bytes) else str(host)), args[1]
    address = args[1] if len(args) > 1 else None
    if isinstance(address, tuple) and address:
        return str(address[0]), address[1] if len(address) > 1 else None
    return None  # AF_UNIX paths and other local families


def _resolve_allowed(policy: EgressPolicy, host: str, port: Any) -> None:
    """Remember the addresses an allowed name resolves to, so the connect that follows passes."""
    _local.resolving = True
    try:
        infos = socket.getaddrinfo(host, port)
    except OSError:
        return
    finally:
        _local.resolving = False
    with policy.lock:
        policy.allowed_addresses.update(str(info[4][0]) for info in infos)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    policy = _policy
    if policy is None or event not in ("socket.getaddrinfo", "socket.connect", "socket.sendto"):
        return
    if getattr(_local, "resolving", False):
        return
    target = _host_port(event, args)
    if target is None:
        return
    host, port = target
    name = host.lower()
    allowed = _is_loopback(host) or name in policy.allow or host in policy.allowed_addresses
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    attempt = {
        "event": event,
        "host": host,
        "port": port if isinstance(port, (int, str)) or port is None else str(port),
        "allowed": allowed,
        "test": current.rsplit(" (", 1)[0],
    }
    with policy.lock:
        policy.attempts.append(attempt)
    if allowed and event == "socket.getaddrinfo" and name in policy.allow:
        _resolve_allowed(policy, host, port)
    if not allowed:
        raise PermissionError(f"loop-contract egress: connection to {host}:{port} is not allowed")


def install(allow: Iterable[str]) -> EgressPolicy:
    """Start enforcing ``allow`` in this process; returns the policy that records attempts."""
    global _policy, _hook_installed
    policy = EgressPolicy(allow=frozenset(h.lower() for h in allow))
    _policy = policy
    if not _hook_installed:
        sys.addaudithook(_audit)
        _hook_installed = True
    return policy


def uninstall() -> None:
    """Stop enforcing (the hook stays registered, inert, as audit hooks cannot be removed)."""
    global _policy
    _policy = None
