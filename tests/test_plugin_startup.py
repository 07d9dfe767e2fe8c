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
    "print(json.dumps({'code': int(code), 'jsonschema': 'jsonschema' in sys.modules}))\n"
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
    assert pinned == {"code": 20, "jsonschema": False}


def test_enabled_before_baseline_it_validates_the_contract(example_repo: Path) -> None:
    assert enabled_run(example_repo) == {"code": 20, "jsonschema": True}
