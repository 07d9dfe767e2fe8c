"""The package's public face: a short ``__all__``, every name real, the version from the
installed metadata, and an import that loads nothing beyond the standard library."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest

import pytest_loopcontract as plc


def test_the_version_comes_from_the_installed_metadata() -> None:
    assert plc.__version__ == metadata.version("pytest-loopcontract")


@pytest.mark.parametrize("name", [n for n in plc.__all__ if n != "__version__"])
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(plc, name) is not None
    assert name in dir(plc)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        plc.no_such_thing  # noqa: B018


def test_the_error_root_carries_exit_codes() -> None:
    assert issubclass(plc.ContractError, plc.LoopContractError)
    assert plc.ContractError("x", file="loopcontract.yml").exit_code == 26


def test_importing_the_package_loads_only_the_standard_library() -> None:
    """The launcher imports the package before its clean re-exec: a third-party import here
    could run the candidate's copy of that package."""
    code = (
        "import sys, json; before = set(sys.modules); import pytest_loopcontract; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    foreign = sorted(loaded - set(sys.stdlib_module_names) - {"pytest_loopcontract"})
    assert foreign == [], foreign
