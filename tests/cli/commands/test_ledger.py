"""`loop-contract ledger verify` on a real ledger: ok, then the edited row named."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from testing.ledgers import make_ledger
from testing.repos import run_cli


def test_ledger_verify_ok_then_names_the_edited_row(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    make_ledger(path).close()
    ok = run_cli(tmp_path, "ledger", "verify", "--ledger", str(path))
    assert ok.returncode == 0, ok.stderr
    assert "5 rows seal" in ok.stdout
    with sqlite3.connect(path) as db:  # a hand edit, the way a person would make one
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
            db.execute(f"DROP TRIGGER {name}")
        db.execute("""UPDATE rows SET payload='{"event":"human_gate","n":99}' WHERE seq=3""")
    broken = run_cli(tmp_path, "ledger", "verify", "--ledger", str(path), "--json")
    assert broken.returncode == 25
    assert broken.json()["first_bad_seq"] == 3
    assert run_cli(tmp_path, "ledger", "verify", "--ledger", str(tmp_path / "none")).returncode == 2
