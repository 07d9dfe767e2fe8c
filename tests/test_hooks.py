"""Extension points: third-party metric sources and the verdict hook, found by entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_loopcontract import hooks
from pytest_loopcontract.verifier.sensors.registry import BUILTIN_SOURCES, metric_sources

PLUGIN = """
from pytest_loopcontract.hookspecs import hookimpl
from pytest_loopcontract.verifier.sensors.protocol import Observation


def _answer(gate, ctx):
    return Observation(42.0, "ok", "the answer plugin")


@hookimpl
def loopcontract_metric_sources():
    return {"answer": _answer}


@hookimpl
def loopcontract_verdict(verdict):
    with open("seen-by-plugin.txt", "w") as fh:
        fh.write(verdict["verdict"])
"""


def install_fake_distribution(site: Path) -> None:
    """A real (if tiny) installed distribution: a module plus dist-info with entry points."""
    (site / "answer_plugin.py").write_text(PLUGIN, "utf-8")
    info = site / "answer_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: answer-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[loopcontract]\nanswer = answer_plugin\n")


def test_the_group_is_found_by_its_section_not_by_a_name_that_says_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quick look that spares pluggy's full reading must never miss a plugin."""
    site = tmp_path / "site"
    site.mkdir()
    info = site / "mentions-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mentions\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nloopcontract = loopcontract.plugin\n")
    monkeypatch.syspath_prepend(str(site))
    assert not hooks._group_declared("loopcontract")  # this package's own pytest11 entry too
    install_fake_distribution(site)
    assert hooks._group_declared("loopcontract")


def test_builtins_are_registered_through_the_hook() -> None:
    sources = metric_sources()
    assert set(BUILTIN_SOURCES) <= set(sources)


def test_entry_point_plugin_adds_a_metric_and_sees_the_verdict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_fake_distribution(site)
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_x.py").write_text("def test_x():\n    pass\n")
    (project / "loopcontract.yml").write_text(
        "version: 1\nid: hooks\ndod:\n  - id: x\n    text: x\n    tests: [test_x.py::test_x]\n"
        "gates:\n  measured:\n"
        '    - {id: answer, metric: answer.value, op: "==", threshold: 42}\n'
    )
    # The caller's path stays behind site, so the child imports the package under test.
    paths = [str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--loop-contract", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdict = json.loads((project / ".loop-contract/verdict.json").read_text())
    [gate] = verdict["gates"]["measured"]
    assert (gate["status"], gate["observed"], gate["source"]) == ("pass", 42.0, "the answer plugin")
    assert (project / "seen-by-plugin.txt").read_text() == "pass"


def test_a_crashing_source_is_an_error_not_a_crash(pytester: pytest.Pytester) -> None:
    class Broken:
        @staticmethod
        def _boom(gate: object, ctx: object) -> object:
            raise RuntimeError("sensor exploded")

        @hooks.hookspecs.hookimpl
        def loopcontract_metric_sources(self) -> dict[str, object]:
            return {"boom": self._boom}

    pm = hooks.plugin_manager()
    plugin = Broken()
    pm.register(plugin)
    try:
        pytester.makepyfile(test_x="def test_x():\n    pass\n")
        pytester.makefile(
            ".yml",
            loopcontract=(
                "version: 1\nid: b\ndod:\n  - id: x\n    text: x\n    tests: [test_x.py::test_x]\n"
                'gates:\n  measured:\n    - {id: b, metric: boom.x, op: ">=", threshold: 0}\n'
            ),
        )
        result = pytester.runpytest("--loop-contract")
    finally:
        pm.unregister(plugin)
    assert result.ret == 20
    verdict = json.loads((pytester.path / ".loop-contract/verdict.json").read_text())
    gate = verdict["gates"]["measured"][0]
    assert gate["status"] == "error"
    assert "sensor exploded" in gate["message"]
