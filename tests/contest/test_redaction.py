"""Redaction: secrets become [REDACTED] and identities [candidate], [redacted] or [commit],
in any text a judge gets, while ordinary code and diffs come through untouched."""

from __future__ import annotations

import pytest

from pytest_loopcontract.contest.redaction import redact_secrets, scrub
from testing.secret_samples import GHP, NORMAL_DIFF, SK, SK_ANT

# --------------------------------------------------------------------------------------------
# redact_secrets


def test_redacts_provider_tokens_and_keeps_names() -> None:
    text = f'+API_KEY = "{SK}"\n+GH = "{GHP}"\n+claude = "{SK_ANT}"\n'
    out = redact_secrets(text)
    for secret in (SK, GHP, SK_ANT):
        assert secret not in out
        assert secret[8:20] not in out
    assert '+API_KEY = "[REDACTED]"' in out
    assert '+GH = "[REDACTED]"' in out


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("token: gho_" + "a1B2" * 9, "a1B2a1B2a1B2"),
        ("x = 'ghs_" + "Z9y8" * 9 + "'", "Z9y8Z9y8Z9y8"),
        ("ghu_" + "Q" * 36, "Q" * 20),
        ("ghr_" + "r1" * 18, "r1r1r1r1r1r1"),
        ("github_pat_" + "11ABCDEFG0" * 4, "11ABCDEFG011ABCDEFG0"),
        ("id = AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
        ("ASIAY34FZKBOKMUTVV7A in the log", "Y34FZKBOKMUTVV7A"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG",
        ),
        ("SLACK=xoxb-123456789012-abcdefABCDEF", "123456789012-abcdef"),
        ('maps = "AIzaSyA1234567890abcdefghijklmnopqrstu"', "SyA1234567890abcdef"),
        ("Authorization: Bearer abc.def.ghi", "abc.def.ghi"),
        ('{"Authorization": "token 0123456789abcdef"}', "0123456789abcdef"),
        ("curl -H 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx.sig'", "eyJhbGciOiJIUzI1NiJ9"),
        ('password = "hunter2"', "hunter2"),
        ('-old_password = "r3moved-but-real"', "r3moved-but-real"),
        ("x-api-key: abc123xyz", "abc123xyz"),
        ('"client_secret": "s3cr3t-value"', "s3cr3t-value"),
        ("db_passwd='correct horse'", "correct horse"),
        ('PRIVATE_KEY := "k3y-material"', "k3y-material"),
        ("apikey => 'zzz-123-yyy'", "zzz-123-yyy"),
        ("+DB_PASSWORD=hunter2", "hunter2"),
        ("export SECRET_KEY=plainword", "plainword"),
        ("  password: hunter2   # prod", "hunter2"),
        ("- api_key: Zm9vYmFy", "Zm9vYmFy"),
        ("url = 'postgres://app:pa55word@db/app'", "pa55word"),
        ("MY_TOKEN = a1b2c3d4e5f6g7h8i9j0k1", "a1b2c3d4e5f6g7h8i9j0k1"),
    ],
)
def test_redacts_secret_shapes(text: str, secret: str) -> None:
    out = redact_secrets(text)
    assert secret not in out
    assert "[REDACTED]" in out


def test_redacts_private_key_block() -> None:
    block = (
        "+-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "+b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
        "+AAAAC3NzaC1lZDI1NTE5AAAAIHVzZXJAZXhhbXBsZQ==\n"
        "+-----END OPENSSH PRIVATE KEY-----\n"
        "+after = 1\n"
    )
    out = redact_secrets(block)
    assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" not in out
    assert "AAAAC3NzaC1lZDI1NTE5" not in out
    assert "+after = 1" in out


def test_redacts_truncated_private_key_block() -> None:
    out = redact_secrets("+-----BEGIN RSA PRIVATE KEY-----\n+MIIEpAIBAAKCAQEAx9Yz\n+MIIEoo==\n")
    assert "MIIEpAIBAAKCAQEAx9Yz" not in out and "MIIEoo" not in out


def test_normal_diff_is_untouched() -> None:
    assert redact_secrets(NORMAL_DIFF) == NORMAL_DIFF


@pytest.mark.parametrize(
    "code",
    [
        "def check(password: str, token: str | None = None) -> bool:",
        "    token: Token",
        "    secret_key = os.environ['SECRET_KEY']",
        "    token = request.headers['x']",
        "    self.token = token",
        "    if token == other:",
        "    return {'api_key': api_key}",
        "    password = getpass()",
        "    risk-adjusted-returns-2024-quarterly = 1",
        "    task-0123456789abcdefghijklmn",
        '    password = ""',
    ],
)
def test_code_around_secret_names_is_untouched(code: str) -> None:
    assert redact_secrets(code) == code


# --------------------------------------------------------------------------------------------
# scrub


def test_scrub_replaces_identities_longest_first() -> None:
    text = "branch loop-contract/rolling/alpha at /tmp/wt/alpha by alpha (acme) ALPHA Acme"
    out = scrub(
        text,
        identities=["acme", "loop-contract/rolling/alpha", "/tmp/wt/alpha"],
        candidate_names=["alpha"],
    )
    assert (
        out == "branch [redacted] at [redacted] by [candidate] ([redacted]) [candidate] [redacted]"
    )


def test_scrub_respects_word_edges() -> None:
    out = scrub(
        "alphabet alpha_fix.py useAlpha AlphaFix myalpha alpha2 a + b = ab",
        identities=["a"],
        candidate_names=["alpha"],
    )
    assert out == (
        "alphabet [candidate]_fix.py use[candidate] [candidate]Fix myalpha [candidate]2 "
        "[redacted] + b = ab"
    )


def test_scrub_short_identity_only_as_whole_word() -> None:
    assert (
        scrub("a cat ate a banana_a", identities=["a"]) == "[redacted] cat ate [redacted] banana_a"
    )


def test_scrub_drops_commit_metadata_and_shas() -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    text = (
        f"From {sha} Mon Sep 17 00:00:00 2001\n"
        "From: Someone <someone@example.org>\n"
        f"commit {sha}\n"
        "Author: Someone <someone@example.org>\n"
        "Date:   Mon Nov 30 10:00:00 2026 +0000\n"
        "\n"
        "    make it fast\n"
        "\n"
        "    Signed-off-by: Someone <someone@example.org>\n"
        "    Co-authored-by: Other <other@example.org>\n"
        "diff --git a/x.py b/x.py\n"
        "index 3b18e51..a9c4d2f 100644\n"
        "--- a/x.py\n"
        "+++ b/x.py\n"
        f"+REF = '{sha}'\n"
    )
    out = scrub(text, identities=[])
    assert "example.org" not in out and "Someone" not in out and "Date:" not in out
    assert sha not in out and "3b18e51" not in out and "a9c4d2f" not in out
    assert "make it fast" in out
    assert "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n" in out
    assert "+REF = '[commit]'" in out


def test_scrub_leaves_normal_diff_alone() -> None:
    assert scrub(NORMAL_DIFF, identities=["zephyr", "/tmp/x"], candidate_names=["quokka"]) == (
        NORMAL_DIFF
    )
