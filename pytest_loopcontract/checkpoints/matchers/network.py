"""Network matchers: calls to payment APIs, and downloaded code run without a look.

``curl URL | sh`` and ``sh -c "$(curl URL)"`` match; ``curl -o x.sh URL && sh x.sh`` is not
``curl | sh`` (the file is there to be read). Search tools, printers and ``git`` only mention
a payment host, so they never match ``payment-api``.
"""

from __future__ import annotations

import re

from pytest_loopcontract.checkpoints.model import Command, Hit, ScanContext, single_hit
from pytest_loopcontract.checkpoints.shell.vocabulary import PRINTERS, SEARCHERS, SHELLS, word_set

__all__ = ["PAYMENT_HINTS", "curl_pipe_shell", "payment_api"]

_FETCHERS = word_set("curl wget fetch http https xh xhs curlie aria2c lwp-request")
_RUNS_CODE = SHELLS | word_set(
    "python perl ruby node nodejs php bun deno source . eval osascript pwsh powershell lua"
)


_TEXT_ONLY = SEARCHERS | PRINTERS | {"git"}


PAYMENT_HINTS = ("stripe", "paypal", "braintree", "squareup", "adyen")
_PAYMENT_HOST_RE = re.compile(
    r"(?i)\b(?:api|files|connect|uploads)\.stripe\.com\b|\bapi(?:-m)?(?:\.sandbox)?\.paypal\.com\b"
    r"|\b(?:api|payments)(?:\.sandbox)?\.braintreegateway\.com\b"
    r"|\b(?:[\w-]+\.)*squareup(?:sandbox)?\.com\b|\b(?:[\w-]+\.)+adyen\.com\b"
)


def payment_api(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """The stripe CLI, or a payment provider's API host named by a command that may call it."""
    if cmd.program == "stripe":
        return single_hit(cmd.text, "stripe CLI")
    if cmd.program in _TEXT_ONLY:
        return ()
    m = _PAYMENT_HOST_RE.search(cmd.blob)
    return single_hit(cmd.text, m.group().lower()) if m else ()


def curl_pipe_shell(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """Downloaded content piped or substituted into something that runs code."""
    if not cmd.upstream and not cmd.substitutions:
        return ()
    name = cmd.program
    piped = any(a and a[0] in _FETCHERS for a in cmd.upstream)
    substituted = any(a and a[0] in _FETCHERS for a in cmd.substitutions)
    if name in _RUNS_CODE and (piped or substituted):
        how = "piped into" if piped else "substituted into"
        return single_hit(cmd.text, f"downloaded content {how} {name}")
    if substituted and name.startswith(("$(", "<(")):
        return single_hit(cmd.text, "downloaded content run as a command")
    return ()
