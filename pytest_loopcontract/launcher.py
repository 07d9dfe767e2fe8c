"""The ``loop-contract`` console entry: the referee starts clean, then the command runs.

The process that composes a verdict must never import code from the tree it verifies. A
``PYTHONPATH=src``, a ``.pth`` file of an editable install, or the current folder on the path
would let the candidate's copy of a module the verifier imports (PyYAML, jsonschema's attrs,
requests, ...) or a ``sitecustomize.py`` run inside the referee. So this entry imports only the
standard library, then re-executes the interpreter in isolated mode (``-I -S``: no
``PYTHON*`` variables, no site processing, no ``.pth`` files) with a path that keeps the
verifier's own folders and drops every entry inside the repository. Code that already ran
before this point (a planted ``sitecustomize.py`` found through ``PYTHONPATH``) cannot be
undone: the clean process then refuses to work and removes a verdict that could be stale.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

__all__ = ["main"]

_BOOT = (
    "import json, sys; boot = json.loads(sys.argv[1]); sys.path.extend(boot['path']); "
    "sys.argv = ['loop-contract', *sys.argv[2:]]; "
    "from pytest_loopcontract.launcher import run_clean; sys.exit(run_clean(boot))"
)


def _repository(start: str) -> str:
    """The git work tree holding ``start`` (found without running git), else ``start``."""
    current = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return os.path.abspath(start)
        current = parent


def _inside(path: str, folder: str) -> bool:
    path = os.path.realpath(path)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _own_folder() -> str:
    """The folder that holds this package (an editable install's finder is not kept)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def clean_path(repo: str) -> list[str]:
    """This interpreter's path without the repository: its own folder, the standard library
    and the site folders (with what their ``.pth`` files added outside the repository)."""
    own = _own_folder()
    keep = [own]
    for entry in sys.path:
        if not entry or not os.path.isabs(entry) or not os.path.exists(entry):
            continue
        if entry not in keep and (not _inside(entry, repo) or entry == own):
            keep.append(entry)
    return keep


def contamination(repo: str) -> list[str]:
    """Modules already loaded from the repository (other than this package itself)."""
    own = os.path.join(_own_folder(), "pytest_loopcontract")
    found = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and _inside(file, repo) and not _inside(file, own):
            found.append(f"{name} ({file})")
    return sorted(found)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry: re-execute clean unless this process already is."""
    args = list(sys.argv[1:] if argv is None else argv)
    if sys.flags.isolated and sys.flags.no_site:
        return run_clean({"path": [], "contaminated": []}, args)
    repo = os.path.realpath(_repository(os.getcwd()))
    boot = {"path": clean_path(repo), "contaminated": contamination(repo), "repo": repo}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", _BOOT, json.dumps(boot), *args])
    return 0  # not reached


def run_clean(boot: dict[str, object], argv: Sequence[str] | None = None) -> int:
    """In the clean process: refuse when the old one was contaminated, else dispatch."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")  # node ids may hold undecodable bytes
    listed = boot.get("contaminated")
    contaminated = [str(m) for m in listed] if isinstance(listed, list) else []
    if contaminated:
        return _refuse(str(boot.get("repo", os.getcwd())), contaminated)
    from pytest_loopcontract.cli.main import main as dispatch

    return dispatch(list(sys.argv[1:] if argv is None else argv))


def _refuse(repo: str, contaminated: list[str]) -> int:
    from pytest_loopcontract.statedir import StateDir  # stdlib only, in the clean process

    stale = StateDir.of(repo).verdict
    removed = False
    if os.path.exists(stale):
        os.unlink(stale)
        removed = True
    print(
        "loop-contract: refused: code from the repository under test already ran in the "
        f"launcher before it could isolate itself: {', '.join(contaminated[:3])}. This comes "
        "from PYTHONPATH (or a .pth file) pointing into the repository. Unset it for "
        "loop-contract and give the tests their path in the contract instead "
        "(pytest: {pythonpath: [src]}); install pytest-loopcontract in its own environment "
        "(pipx install pytest-loopcontract)."
        + (f" The old verdict {stale} was removed." if removed else ""),
        file=sys.stderr,
    )
    return 2
