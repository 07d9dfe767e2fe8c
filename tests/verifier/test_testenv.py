"""The test environment a baseline recorded, and what a later verify says when it changed."""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

from pytest_loopcontract.verifier.testenv import installed_by, startup_changes
from testing.verifier_project import cli, make_repo


def _project_env(folder: Path) -> Path:
    """The project's own virtual environment (no pip), seeing this one's packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    [packages] = folder.glob("lib/python*/site-packages")
    lines = [f"import site; site.addsitedir({p!r})" for p in site.getsitepackages()]
    (packages / "a-seen.pth").write_text("\n".join(lines) + "\n", "utf-8")
    return folder / "bin" / "python"


def test_installing_into_the_project_env_after_the_baseline_names_what_came(
    tmp_path: Path,
) -> None:
    """Where the user started: the plugin (and with it coverage, which brings a start-up
    file) installed into the project's environment after the baseline. verify refuses, as it
    must (that file runs in every test process), and says which file came from which package
    and what to do, instead of only "start-up files changed"."""
    repo = make_repo(tmp_path / "mini")
    python = _project_env(tmp_path / "projectenv")
    assert cli(repo, "baseline", "--python", str(python)).returncode == 0
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--ignore-installed",
            "--no-deps",
            "coverage",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    refused = cli(repo, "verify", "--python", str(python))
    assert refused.returncode == 27
    assert "a1_coverage.pth (from coverage " in refused.stderr, refused.stderr
    assert "appeared" in refused.stderr
    assert "install pytest-loopcontract in the project's environment before" in refused.stderr
    assert "loop-contract baseline" in refused.stderr


def test_changes_are_named_per_file_and_owner(tmp_path: Path) -> None:
    packages = tmp_path / "site-packages"
    (packages / "tool-1.2.dist-info").mkdir(parents=True)
    (packages / "tool-1.2.dist-info" / "RECORD").write_text("tool.pth,sha256=x,10\n")
    (packages / "tool.pth").write_text("import tool\n")
    assert installed_by(packages / "tool.pth") == "tool 1.2"
    assert installed_by(packages / "stray.pth") is None
    before = {str(packages / "old.pth"): "a", str(packages / "stray.pth"): "b"}
    after = {str(packages / "tool.pth"): "c", str(packages / "stray.pth"): "d"}
    assert startup_changes(before, after) == [
        "tool.pth (from tool 1.2) appeared",
        "old.pth went",
        "stray.pth changed",
    ]
