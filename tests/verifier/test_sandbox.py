"""The referee apart from the player: real ``verify`` runs against candidates that cheat from
outside the tests (a process that outlives the run, code planted where the launcher would import
it, a look at the user's secrets), in the bubblewrap sandbox and in the process fallback.

Each candidate runs through the real CLI in a subprocess on a real git repository. The probes
write what the confined code could see into a folder the sandbox leaves writable
(``LOOP_CONTRACT_SANDBOX_WRITABLE``), the only way out of the sandbox these tests open.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import site
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.idsets import unpack_ids
from pytest_loopcontract.verifier.sandbox import bwrap_problem
from testing.repos import assert_valid_verdict
from testing.verifier_project import (
    FIXED,
    baseline_ok,
    cli,
    contract,
    finding_codes,
    make_repo,
    processes_with,
    reason_codes,
    verify_json,
    with_pytest_settings,
)

HAS_BWRAP = bwrap_problem() == ""
MODES = [
    pytest.param(
        "sandbox", marks=pytest.mark.skipif(not HAS_BWRAP, reason=bwrap_problem() or "ok")
    ),
    "process",
]


@pytest.fixture(autouse=True)
def outside_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    monkeypatch.setenv("LOOP_CONTRACT_SANDBOX_WRITABLE", str(folder))
    return folder


@pytest.fixture(params=MODES)
def isolation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    mode = str(request.param)
    monkeypatch.setenv("LOOP_CONTRACT_ISOLATION", mode)
    return mode


def test_ci_has_the_sandbox() -> None:
    """Where CI asks for every tool, the sandbox must really start (no silent fallback)."""
    if os.environ.get("LOOP_CONTRACT_REQUIRE_TOOLS") == "1":
        assert HAS_BWRAP, bwrap_problem()


def test_verdict_names_its_isolation(tmp_path: Path, isolation: str) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo)
    assert (code, verdict["verdict"]) == (0, "pass")
    assert verdict["isolation"] == isolation
    assert verdict["confinement"]["leftovers"] == []
    if isolation == "process":
        assert "process isolation" in verdict["confinement"]["note"]
    test_env = verdict["environment"]["test_env"]
    assert test_env["python"] and test_env["version"] == verdict["environment"]["python"]


REWRITER = """
import sys, time
target = sys.argv[1]
deadline = time.time() + 20
while time.time() < deadline:
    time.sleep(0.2)
    try:
        text = open(target).read()
    except OSError:
        continue
    if '"verdict":"fail"' in text:
        open(target, "w").write(text.replace('"verdict":"fail"', '"verdict":"pass"'))
        break
"""

DAEMON = """\
import os
import sys


def _rewrite_verdict_later(target, token):
    if os.fork() != 0:
        return
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    os.execv(sys.executable, [sys.executable, "-c", {rewriter!r}, target, token])


_rewrite_verdict_later({target!r}, {token!r})


def double(x):
    return x + x


def triple(x):
    return x * 2
"""


def test_a_process_that_outlives_the_run_cannot_rewrite_the_verdict(
    tmp_path: Path, isolation: str
) -> None:
    """The candidate forks twice with setsid and waits to rewrite verdict.json: the reaper
    (and the sandbox's PID namespace) ends it with the run, and the verdict names it."""
    token = f"daemon-{secrets.token_hex(6)}"
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    target = repo / ".loop-contract" / "verdict.json"
    (repo / "src/mini/core.py").write_text(
        DAEMON.format(rewriter=REWRITER, target=str(target), token=token)
    )
    try:
        code, verdict = verify_json(repo)
        assert verdict["verdict"] == "fail"
        assert processes_with(token) == []
        time.sleep(2)  # long enough for a survivor to act
        on_disk = json.loads(target.read_text("utf-8"))
        assert on_disk["verdict"] == "fail"
        if isolation == "process":
            assert "process_outlived_run" in finding_codes(verdict)
            assert code == 25
            assert verdict["confinement"]["leftovers"]
        else:
            # In the sandbox the daemon cannot even see the verdict's folder; the namespace
            # ends with the run.
            assert code in (20, 25)
    finally:
        for pid in processes_with(token):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_an_honest_fix_that_waits_for_its_worker_passes(tmp_path: Path, isolation: str) -> None:
    """A library that starts a worker process and waits for it leaves nothing behind."""
    worker = (
        "import subprocess\nimport sys\n\n\n"
        "def double(x):\n    return x + x\n\n\n"
        "def triple(x):\n"
        "    done = subprocess.run([sys.executable, '-c', f'print({x} * 3)'], "
        "capture_output=True, text=True, check=True)\n"
        "    return int(done.stdout)\n"
    )
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(worker)
    code, verdict = verify_json(repo)
    assert (code, verdict["verdict"]) == (0, "pass"), verdict["reasons"]
    assert "process_outlived_run" not in finding_codes(verdict)


SNOOP = """\
import json
import os
import socket


def _look(out):
    seen = {{}}
    home = os.environ.get("HOME", "")
    seen["home_secret"] = os.path.exists(os.path.join(home, "secret-token"))
    seen["state"] = os.path.exists({state!r})
    seen["repo_git"] = os.path.exists({git!r})
    for key, path in (("repo_writable", {repo_new!r}), ("contract_writable", {repo_file!r})):
        try:
            with open(path, "a") as fh:
                fh.write("x")
            seen[key] = True
        except OSError:
            seen[key] = False
    sock = socket.socket()
    sock.settimeout(2)
    try:
        sock.connect(("192.0.2.1", 80))
        seen["network"] = "connected"
    except OSError as exc:
        seen["network"] = exc.__class__.__name__ + ":" + str(exc.errno)
    finally:
        sock.close()
    with open(out, "w") as fh:
        json.dump(seen, fh)


_look({out!r})


def double(x):
    return x + x


def triple(x):
    return x * 3
"""


@pytest.mark.skipif(not HAS_BWRAP, reason=bwrap_problem() or "ok")
def test_the_sandbox_hides_home_state_and_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret-token").write_text("ghp_not_for_candidates")
    monkeypatch.setenv("HOME", str(home))
    text = contract() + "egress: {allow: []}\n"
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text})
    baseline_ok(repo)
    out = tmp_path / "out" / "seen.json"
    (repo / "src/mini/core.py").write_text(
        SNOOP.format(
            state=str(repo / ".loop-contract" / "baseline.json"),
            git=str(repo / ".git"),
            repo_file=str(repo / "loopcontract.yml"),
            repo_new=str(repo / "scribble.txt"),
            out=str(out),
        )
    )
    code, verdict = verify_json(repo)
    seen = json.loads(out.read_text("utf-8"))
    assert seen["home_secret"] is False
    assert seen["state"] is False
    assert seen["repo_git"] is False  # the repository's path shows the scratch copy only
    assert seen["repo_writable"] is True  # ... which is the candidate's own, thrown away
    assert seen["contract_writable"] is False  # ... except the referee's files (pinned)
    assert not (repo / "scribble.txt").exists()
    assert "connected" not in seen["network"]
    assert (repo / "loopcontract.yml").read_text("utf-8") == text  # the real one is intact
    assert verdict["isolation"] == "sandbox"
    assert code == 0, verdict["reasons"]


def test_required_sandbox_that_cannot_start_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOP_CONTRACT_BWRAP", str(tmp_path / "no-such-bwrap"))
    text = contract() + "isolation: sandbox\n"
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text})
    refused = cli(repo, "baseline")
    assert refused.returncode == 27
    assert "isolation: sandbox" in refused.stderr and "bubblewrap" in refused.stderr
    monkeypatch.delenv("LOOP_CONTRACT_BWRAP")
    if not HAS_BWRAP:
        return
    baseline_ok(repo)
    monkeypatch.setenv("LOOP_CONTRACT_BWRAP", str(tmp_path / "no-such-bwrap"))
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo)
    assert verdict["verdict"] == "error"
    assert "sandbox_unavailable" in reason_codes(verdict)
    assert code != 0


def test_fallback_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOP_CONTRACT_BWRAP", str(tmp_path / "no-such-bwrap"))
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo)
    assert (code, verdict["isolation"]) == (0, "process")
    assert "not installed" in verdict["confinement"]["note"]


# --- the launcher never imports the candidate's tree -------------------------------------------

PLANTED_YAML = "open({marker!r}, 'w').write('planted yaml ran')\n"
PLANTED_SITE = "open({marker!r}, 'w').write('planted sitecustomize ran')\n"


def test_pythonpath_into_the_tree_never_reaches_the_launcher(tmp_path: Path) -> None:
    """``PYTHONPATH=src loop-contract verify`` with a candidate that plants a ``yaml`` package
    (a module the verifier imports) in src: the launcher re-executes clean and never runs it."""
    marker = tmp_path / "out" / "yaml-ran"
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/yaml").mkdir()
    (repo / "src/yaml/__init__.py").write_text(PLANTED_YAML.format(marker=str(marker)))
    result = cli(repo, "verify", "--json", env={"PYTHONPATH": "src"})
    verdict = result.json()
    assert_valid_verdict(verdict)
    assert verdict["verdict"] == "fail"
    assert not marker.exists()


def test_planted_sitecustomize_makes_the_launcher_refuse(tmp_path: Path) -> None:
    """A sitecustomize.py found through PYTHONPATH runs before any code of ours: the launcher
    refuses, says why, and removes the verdict a survivor could pass off as current."""
    marker = tmp_path / "out" / "site-ran"
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    assert cli(repo, "verify").returncode == 0
    (repo / "src/sitecustomize.py").write_text(PLANTED_SITE.format(marker=str(marker)))
    result = cli(repo, "verify", env={"PYTHONPATH": "src"})
    assert result.returncode == 2
    assert "PYTHONPATH" in result.stderr and "sitecustomize" in result.stderr
    assert not (repo / ".loop-contract/verdict.json").exists()
    assert "Traceback" not in result.stderr


def _venv(tmp_path: Path, *lines: str) -> Path:
    """A virtual environment without pip; its ``.pth`` lines decide what it sees."""
    venv = tmp_path
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [packages] = venv.glob("lib/python*/site-packages")
    if lines:
        (packages / "a-seen.pth").write_text("\n".join(lines) + "\n", "utf-8")
    return venv / "bin" / "python"


def _sees_this_environment() -> list[str]:
    return [f"import site; site.addsitedir({p!r})" for p in site.getsitepackages()]


def test_editable_install_of_the_project_in_the_launchers_environment(tmp_path: Path) -> None:
    """The launcher's own environment has the project under test installed editable (a .pth
    naming the repository's src): the candidate's planted ``yaml`` there is not imported by
    the launcher, and an honest fix still passes."""
    marker = tmp_path / "out" / "yaml-ran"
    repo = make_repo(tmp_path / "mini")
    launcher = _venv(tmp_path / "launcher", str(repo / "src"), *_sees_this_environment())
    run = [str(launcher), "-m", "pytest_loopcontract"]

    def launch(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*run, *args], cwd=repo, capture_output=True, text=True, timeout=300, check=False
        )

    assert launch("baseline").returncode == 0
    (repo / "src/yaml").mkdir()
    (repo / "src/yaml/__init__.py").write_text(PLANTED_YAML.format(marker=str(marker)))
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    done = launch("verify", "--json")
    verdict: dict[str, Any] = json.loads(done.stdout)
    assert verdict["verdict"] == "pass", verdict["reasons"]
    assert not marker.exists()


@pytest.mark.skipif(not HAS_BWRAP, reason=bwrap_problem() or "ok")
def test_editable_install_in_the_test_environment_measures_the_scratch_copy(
    tmp_path: Path,
) -> None:
    """The project's test environment has the project installed editable (no pythonpath in
    the contract): in the sandbox the repository's path shows the scratch copy, so the
    restored tests measure the candidate's code and a broken candidate fails."""
    settings = "[project]\nname = 'mini'\nversion = '0'\n"
    repo = make_repo(tmp_path / "mini", **{"pyproject.toml": settings})
    python = _venv(tmp_path / "testenv", str(repo / "src"), *_sees_this_environment())
    assert cli(repo, "baseline", "--python", str(python)).returncode == 0
    code, verdict = verify_json(repo, "--python", str(python))
    assert (code, verdict["verdict"]) == (20, "fail")
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo, "--python", str(python))
    assert (code, verdict["verdict"]) == (0, "pass"), verdict["reasons"]
    assert verdict["environment"]["test_env"]["python"] == str(python)


def test_a_test_interpreter_without_pytest_is_named(tmp_path: Path) -> None:
    python = _venv(tmp_path / "bare")
    repo = make_repo(tmp_path / "mini")
    refused = cli(repo, "baseline", "--python", str(python))
    assert refused.returncode == 27
    assert "pytest is not installed" in refused.stderr and str(python) in refused.stderr


def test_a_missing_interpreter_is_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    refused = cli(repo, "baseline", "--python", str(tmp_path / "nope" / "python"))
    assert refused.returncode == 2
    assert "cannot run" in refused.stderr and "--python" in refused.stderr


def test_contract_env_and_pythonpath_reach_only_the_tests(tmp_path: Path) -> None:
    probe = (
        "import os\n\n\ndef test_env():\n"
        "    assert os.environ['MINI_MODE'] == 'strict'\n"
        "    assert os.environ['PYTHONPATH'].split(os.pathsep)[-1].endswith('lib')\n"
    )
    text = with_pytest_settings(contract(), "env: {MINI_MODE: strict}\npythonpath: [lib]")
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text, "tests/test_env.py": probe})
    (repo / "lib").mkdir()
    baseline = cli(repo, "baseline", "--json", env={"PYTHONPATH": str(tmp_path)})
    assert baseline.returncode == 0, baseline.stderr
    assert "tests/test_env.py::test_env" in unpack_ids(
        json.loads((repo / ".loop-contract/baseline.json").read_text("utf-8"))["pass_to_pass"]
    )


def test_collection_errors_behind_no_tests_are_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/mini/__init__.py").write_text("import not_a_module_anywhere\n")
    verdict = cli(repo, "verify", "--json").json()  # the test's own traceback is in the JSON
    messages = " ".join(r["message"] for r in verdict["reasons"])
    assert "not_a_module_anywhere" in messages
    assert verdict["verdict"] != "pass"


def test_baseline_names_the_import_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini", **{"src/mini/__init__.py": "import attr_not_here\n"})
    refused = cli(repo, "baseline")
    assert refused.returncode == 27
    assert "attr_not_here" in refused.stderr
    assert "commit the tests first" not in refused.stderr


def test_fork_bomb_ends_in_an_error_not_a_pass(tmp_path: Path) -> None:
    """A candidate that forks without end: the run's timeout ends it, the verdict is an
    error, and nothing of it is left."""
    token = f"bomb-{secrets.token_hex(6)}"
    bomb = (
        "import os\nimport sys\nimport time\n\n\n"
        "def double(x):\n    return x + x\n\n\n"
        "def triple(x):\n"
        "    for _ in range(40):\n"
        "        if os.fork() == 0:\n"
        "            os.execv(sys.executable,\n"
        f"                     [sys.executable, '-c', 'import time; time.sleep(600)', {token!r}])\n"
        "    time.sleep(600)\n"
    )
    text = with_pytest_settings(contract(), "timeout: 15")
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text})
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(bomb)
    try:
        _code, verdict = verify_json(repo)
        # never a pass; the reward rules also hold the unwaited fork for a person
        assert verdict["verdict"] != "pass" and "timeout" in reason_codes(verdict)
        deadline = time.monotonic() + 10
        while processes_with(token) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_with(token) == []
    finally:
        for pid in processes_with(token):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# --- the referee read-only inside the sandbox -------------------------------------------------


def _confined_shell(tree: Path, alias: Path, frozen: list[str], script: str) -> str:
    """Run ``script`` in bwrap with ``frozen`` bound read-only, the way run_pytest does."""
    from pytest_loopcontract.verifier.sandbox import SANDBOX, Confinement

    confinement = Confinement(SANDBOX, aliases=(alias,))
    binds = confinement.frozen_binds(tree, frozen)
    args = tree.parent / "frozen.args"
    args.write_bytes(b"".join(a.encode() + b"\0" for a in binds))
    fd = os.open(args, os.O_RDONLY)
    try:
        argv = confinement.command(["sh", "-c", script], tree=tree, writable=[], args_fd=fd)
        done = subprocess.run(argv, pass_fds=(fd,), capture_output=True, text=True, check=False)
    finally:
        os.close(fd)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(not HAS_BWRAP, reason=bwrap_problem() or "ok")
@pytest.mark.parametrize("count", [10, 3000])
def test_frozen_files_are_read_only_at_every_place_the_tree_is_seen(
    tmp_path: Path, count: int
) -> None:
    """A few referee files are bound one by one; past bwrap's 9,000-argument limit the
    folders holding only referee files are bound whole. Either way a write through the tree or
    through the repository's path fails, and the rest of the tree stays writable."""
    tree, alias = tmp_path / "tree", tmp_path / "repo"
    (tree / "tests/data").mkdir(parents=True)
    (tree / "src").mkdir()
    alias.mkdir()
    frozen = [f"tests/data/f{i}.txt" for i in range(count)] + ["tests/test_a.py"]
    for rel in frozen:
        (tree / rel).write_text("referee\n")
    (tree / "src/mod.py").write_text("x = 1\n")
    out = _confined_shell(
        tree,
        alias,
        frozen,
        "for p in tests/data/f1.txt tests/test_a.py $ALIAS/tests/data/f1.txt; do "
        "(echo cheat > $p) 2>/dev/null && echo wrote $p; done; "
        "echo y > src/mod.py && echo wrote src; echo n > src/new.py && echo wrote new".replace(
            "$ALIAS", str(alias)
        ),
    )
    assert out.split("\n")[:2] == ["wrote src", "wrote new"], out
    assert {(tree / rel).read_text() for rel in frozen} == {"referee\n"}


def test_collapse_binds_whole_folders_only_when_everything_in_them_is_frozen(
    tmp_path: Path,
) -> None:
    from pytest_loopcontract.verifier.sandbox import collapse_to_folders

    for rel in ["t/a/1.py", "t/a/2.py", "t/b/1.py", "t/b/loose.txt", "t/conftest.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    frozen = ["t/a/1.py", "t/a/2.py", "t/b/1.py", "t/conftest.py"]
    # t/b holds a file that is not the referee's, so t/b and t cannot be bound whole
    assert collapse_to_folders(tmp_path, frozen) == ["t/a", "t/b/1.py", "t/conftest.py"]
    assert collapse_to_folders(tmp_path, [*frozen, "t/b/loose.txt"]) == ["t"]
