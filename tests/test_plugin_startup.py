"""The plugin costs nothing until it is asked: loaded but not enabled, it imports nothing heavy.

The ``pytest11`` entry point loads :mod:`pytest_loopcontract.plugin` in every pytest run of
every environment the package is installed in. These runs are real pytest subprocesses
(pytester); a test inside them reports which modules its own process has loaded. The timing
is measured by ``benchmarks/bench_plugin.py``, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_loopcontract import plugin
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier import inner
from testing.repos import run_cli

pytest_plugins = ["pytester"]

HEAVY = (
    "yaml",
    "jsonschema",
    "coverage",
    "github",
    "pytest_loopcontract.contract.model",
    "pytest_loopcontract.verifier.inprocess",
    "pytest_loopcontract.verifier.inner.collector",
)

PROBE = """\
import json, sys

HEAVY = {heavy!r}


def test_probe():
    own = sorted(m for m in sys.modules if m.startswith("pytest_loopcontract"))
    loaded = [m for m in HEAVY if m in sys.modules]
    with open({out!r}, "w") as fh:
        json.dump({{"own": own, "heavy": loaded}}, fh)
"""

CONTRACT = """\
version: 1
id: probe
goal: the probe runs
dod:
  - id: probe
    text: the probe runs
    tests: ["test_probe.py::test_probe"]
"""


def probe(pytester: pytest.Pytester, *args: str) -> dict[str, list[str]]:
    out = pytester.path / "modules.json"
    pytester.makepyfile(test_probe=PROBE.format(heavy=HEAVY, out=str(out)))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret in (0, 20), result.stdout.str() + result.stderr.str()
    loaded: dict[str, list[str]] = json.loads(out.read_text("utf-8"))
    return loaded


@pytest.fixture
def only_this_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Other installed plugins (pytest-cov imports coverage) must not blur what this one loads."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("LOOP_CONTRACT_INNER", raising=False)


@pytest.mark.usefixtures("only_this_plugin")
def test_loaded_but_not_enabled_it_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    loaded = probe(pytester, "-p", "pytest_loopcontract.plugin", "--strict-markers")
    assert "pytest_loopcontract.plugin" in loaded["own"]  # it did load
    assert loaded["heavy"] == []
    assert loaded["own"] == ["pytest_loopcontract", "pytest_loopcontract.plugin"]


@pytest.mark.usefixtures("only_this_plugin")
def test_enabled_it_loads_what_it_needs(pytester: pytest.Pytester) -> None:
    """The look-alike that must differ: with ``--loop-contract`` the loader and YAML load."""
    pytester.makefile(".yml", loopcontract=CONTRACT)
    loaded = probe(pytester, "-p", "pytest_loopcontract.plugin", "--loop-contract")
    assert {"yaml", "pytest_loopcontract.contract.model"} <= set(loaded["heavy"])


def test_through_its_entry_point_it_loads_only_itself(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Autoloaded as users get it (other plugins load too, so only our modules are judged)."""
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("LOOP_CONTRACT_INNER", raising=False)
    loaded = probe(pytester)
    assert loaded["own"] == ["pytest_loopcontract", "pytest_loopcontract.plugin"]


def test_the_dod_marker_registered_at_load_is_the_injected_plugins() -> None:
    """The plugin spells the marker and the verdict path itself, so that loading it imports
    neither the injected collector nor the state folder module; they must not drift."""
    assert plugin.DOD_MARKER == inner.DOD_MARKER
    assert Path(plugin.DEFAULT_VERDICT) == StateDir.of(".").verdict


@pytest.mark.usefixtures("only_this_plugin")
def test_the_dod_marker_is_registered_without_the_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_marked="import pytest\n\n@pytest.mark.dod('x')\ndef test_x():\n    pass\n"
    )
    result = pytester.runpytest_subprocess("-p", "pytest_loopcontract.plugin", "--strict-markers")
    assert result.ret == 0, result.stdout.str()


@pytest.mark.usefixtures("only_this_plugin")
def test_its_loop_metric_fixture_records_and_checks_without_the_option(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_metric="""
        def test_number(loop_metric):
            loop_metric("calls", 3)

        def test_not_a_number(loop_metric):
            loop_metric("calls", "three")
        """
    )
    result = pytester.runpytest_subprocess("-p", "pytest_loopcontract.plugin", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*TypeError: loop_metric('calls', ...) needs a number*"])


SYS_MODULES = (
    "import json, sys, pytest\n"
    "code = pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'pytest_loopcontract.plugin',"
    " '--loop-contract'])\n"
    "print(json.dumps({'code': int(code), 'jsonschema': 'jsonschema' in sys.modules,"
    " 'yaml': 'yaml' in sys.modules,"
    " 'presets': 'pytest_loopcontract.contest.presets' in sys.modules}))\n"
)


def enabled_run(repo: Path) -> dict[str, object]:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("LOOP_CONTRACT_INNER", None)
    proc = subprocess.run(
        [sys.executable, "-c", SYS_MODULES], cwd=repo, env=env, capture_output=True, text=True
    )
    loaded: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return loaded


def test_enabled_after_baseline_it_skips_the_schema(baselined_repo: Path) -> None:
    """The contract pinned at baseline is read without jsonschema (its bytes were validated
    then); before any baseline the same run validates it, and jsonschema loads."""
    pinned = enabled_run(baselined_repo)
    assert pinned["code"] == 20
    assert pinned["jsonschema"] is False


def test_enabled_before_baseline_it_validates_the_contract(example_repo: Path) -> None:
    loaded = enabled_run(example_repo)
    assert (loaded["code"], loaded["jsonschema"], loaded["yaml"]) == (20, True, True)


def test_enabled_it_never_loads_the_agent_presets(baselined_repo: Path) -> None:
    """The verdict hook's plugin manager also knows the seat adapters; calling it must not
    import the five agent presets into the test process."""
    assert enabled_run(baselined_repo)["presets"] is False


def test_after_its_first_run_the_pinned_contract_is_read_without_yaml(
    baselined_repo: Path,
) -> None:
    """The first enabled run parses the pinned YAML and keeps the document in the state
    folder; the next ones read that JSON. The verdict is the same either way."""
    state = StateDir.of(baselined_repo)
    first = enabled_run(baselined_repo)
    first_verdict = json.loads(state.verdict.read_text("utf-8"))
    kept = json.loads(state.parsed_contract.read_text("utf-8"))
    second = enabled_run(baselined_repo)
    second_verdict = json.loads(state.verdict.read_text("utf-8"))
    assert (first["yaml"], second["yaml"]) == (True, False)
    assert kept["sha256"] == json.loads(state.baseline.read_text("utf-8"))["contract_sha256"]
    assert second_verdict["contract"] == first_verdict["contract"]
    assert [d["id"] for d in second_verdict["dod"]] == [d["id"] for d in first_verdict["dod"]]
    assert second_verdict["verdict"] == first_verdict["verdict"] == "fail"


def test_a_kept_document_for_other_bytes_is_not_used(baselined_repo: Path) -> None:
    """The cheat: a kept document that says something else, filed under another digest. It
    is ignored, the YAML is parsed again and the contract's own item is judged."""
    state = StateDir.of(baselined_repo)
    forged = {"version": 1, "id": "forged", "goal": "x", "dod": []}
    state.parsed_contract.write_text(json.dumps({"sha256": "0" * 64, "document": forged}), "utf-8")
    loaded = enabled_run(baselined_repo)
    verdict = json.loads(state.verdict.read_text("utf-8"))
    assert loaded["yaml"] is True
    assert verdict["contract"]["id"] == "slugify-unicode"
    assert [d["id"] for d in verdict["dod"]] == ["unicode"]


def test_the_launcher_never_reads_the_kept_document(baselined_repo: Path) -> None:
    """Filed under the pinned digest, a forged document fools only the in-process plugin,
    whose verdict says ``trust: in-process``; ``verify`` judges by the pinned YAML."""
    state = StateDir.of(baselined_repo)
    sha = json.loads(state.baseline.read_text("utf-8"))["contract_sha256"]
    forged = {"version": 1, "id": "forged", "goal": "x", "mode": "fix", "dod": []}
    state.parsed_contract.write_text(json.dumps({"sha256": sha, "document": forged}), "utf-8")
    result = run_cli(baselined_repo, "verify")
    verdict = json.loads(state.verdict.read_text("utf-8"))
    assert result.returncode == 20, result.stdout + result.stderr
    assert verdict["contract"]["id"] == "slugify-unicode"
    assert verdict["trust"] != "in-process"
