"""The capability policy: an audit hook in the run denies or reports what cheating needs, when
the candidate's own code uses it and the baseline's did not.

Attribution and the profile are checked on the policy object directly (synthetic stacks); the
hook itself through real sandboxed ``verify`` runs, with cheats that no rule was written for and
honest code that uses the same machinery through the standard library.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_loopcontract.verifier.inner.policy import Policy, classify
from testing.reward_project import (
    FIRST_IMPORT,
    HONEST,
    TESTS,
    finding_codes,
    make_project,
    pending,
    reset,
    write,
)
from testing.reward_project import verify as run_verify

# --- attribution, on the policy object ------------------------------------------------------

STDLIB = os.path.dirname(os.__file__)


@pytest.fixture
def policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Policy:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_core.py").write_text("def test_add():\n    assert 1\n")
    made = Policy()
    made.configure({"candidate": ["src/pkg/new.py"], "referee": ["tests/test_core.py"]})
    return made


def _at(root: Path, rel: str, line: int = 3) -> tuple[str, int]:
    return str(root / rel), line


def test_events_are_classified_without_frames() -> None:
    def f() -> None:
        pass

    assert classify("object.__setattr__", (f, "__code__", f.__code__))[0] == "code_swap"
    assert classify("object.__setattr__", (f, "__defaults__", ())) is None
    assert classify("object.__getattr__", (None, "tb_frame"))[0] == "frames"
    assert classify("sys.settrace", ())[0] == "tracing"
    assert classify("import", ("os",)) is None


def test_a_use_is_the_candidates_when_its_file_is_the_first_outside_the_stdlib(
    policy: Policy, tmp_path: Path
) -> None:
    via_stdlib = [(f"{STDLIB}/threading.py", 1), _at(tmp_path, "src/pkg/new.py")]
    policy._judge("gc", "gc.get_objects", via_stdlib, deny=True)
    (use,) = policy.take()
    assert (use["kind"], use["path"], use["line"]) == ("gc", "src/pkg/new.py", 3)
    # a library between the event and the candidate's file takes it over: its business
    library = [(f"{tmp_path}/.venv/lib/site-packages/attr/_make.py", 9)]
    policy._judge("gc", "gc.get_objects", [*library, _at(tmp_path, "src/pkg/new.py")], deny=True)
    policy._judge("gc", "gc.get_objects", [_at(tmp_path, "src/pkg/old.py")], deny=True)
    assert policy.take() == []


def test_frames_count_only_when_the_candidate_reads_them_itself(
    policy: Policy, tmp_path: Path
) -> None:
    namedtuple = [(f"{STDLIB}/collections/__init__.py", 500), _at(tmp_path, "src/pkg/new.py")]
    policy._judge("frames", "sys._getframe", namedtuple, deny=True)
    assert policy.take() == []
    inspect = [(f"{STDLIB}/inspect.py", 1), _at(tmp_path, "src/pkg/new.py")]
    policy._judge("frames", "sys._getframe", inspect, deny=True)
    assert [u["kind"] for u in policy.take()] == ["frames"]


def test_tamper_level_uses_are_denied_and_the_profile_excuses(
    policy: Policy, tmp_path: Path
) -> None:
    stack = [_at(tmp_path, "src/pkg/new.py")]
    with pytest.raises(PermissionError):
        policy._judge("tracing", "sys.settrace", stack, deny=True)
    assert [u["severity"] for u in policy.take()] == ["tamper"]
    policy.profile = frozenset({("src/pkg/new.py", "tracing")})
    policy._judge("tracing", "sys.settrace", stack, deny=True)
    assert policy.take() == []


def test_the_baseline_profiles_every_file_of_the_tree(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    recording = Policy()
    recording.configure({"record": True})
    recording._judge("frames", "sys._getframe", [_at(tmp_path, "src/pkg/old.py")], deny=True)
    recording._judge("tracing", "sys.settrace", [_at(tmp_path, "src/pkg/old.py")], deny=True)
    assert recording.take() == [
        {"profile": ["src/pkg/old.py", "frames"]},
        {"profile": ["src/pkg/old.py", "tracing"]},
    ]


def test_only_the_referees_sources_and_process_memory_count_as_opened(
    policy: Policy, tmp_path: Path
) -> None:
    assert policy._opened(str(tmp_path / "tests/test_core.py"))[0] == "referee_read"
    # the same file by another name: a symlink, a hard link, a path spelled with ".."
    (tmp_path / "alias.py").symlink_to(tmp_path / "tests/test_core.py")
    os.link(tmp_path / "tests/test_core.py", tmp_path / "copy.txt")
    for other in ("alias.py", "copy.txt", "tests/../tests/test_core.py"):
        assert policy._opened(other) == ("referee_read", "opens tests/test_core.py"), other
    assert policy._opened("/proc/self/environ")[0] == "process_memory"
    assert policy._opened(str(tmp_path / "tests/data/golden.txt")) == ("", "")
    assert policy._opened("/proc/self/status") == ("", "")
    assert policy._opened(3) == ("", "")


# --- through real verify runs -----------------------------------------------------------------

FRAMES_HELPER = "import sys\n\n\ndef caller_name():\n    return sys._getframe(1).f_code.co_name\n"
PROFILE_TESTS = TESTS + (
    "\n\nfrom calc.frames import caller_name\n\n\n"
    "def test_caller_name():\n    assert caller_name() == 'test_caller_name'\n"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {**FIRST_IMPORT, "src/calc/frames.py": FRAMES_HELPER}
    return make_project(tmp_path_factory.mktemp("caps"), tests=PROFILE_TESTS, files=files)


@pytest.fixture
def repo(project: Path) -> Iterator[Path]:
    yield project
    reset(project)


BROKEN = "\n\ndef add(a, b):\n    return a - b\n"

DENIED = {
    # a one-shot patch of the report machinery, armed through a profile function
    "profile-armed-patch": (
        "import sys\n\n\ndef _arm(frame, event, arg):\n"
        "    if event == 'call' and frame.f_code.co_name == 'pytest_runtest_makereport':\n"
        "        sys.setprofile(None)\n\n\nsys.setprofile(_arm)\n" + BROKEN
    ),
    # the runner's secrets out of the process's own environment file
    "proc-environ": (
        "try:\n    _ENV = open('/proc/self/environ', 'rb').read()\nexcept OSError:\n"
        "    _ENV = b''\n" + BROKEN
    ),
    # a trace function from a thread the candidate started
    "trace-from-a-thread": (
        "import sys\nimport threading\n\n\ndef _install():\n"
        "    try:\n        sys.settrace(lambda *a: None)\n    except PermissionError:\n"
        "        pass\n\n\n_t = threading.Thread(target=_install)\n_t.start()\n_t.join()\n" + BROKEN
    ),
}


@pytest.mark.parametrize("name", sorted(DENIED))
def test_a_denied_capability_is_tampering(repo: Path, name: str) -> None:
    write(repo, "src/calc/core.py", DENIED[name])
    code, verdict = run_verify(repo)
    assert code == 25, (verdict["reasons"], verdict["tamper"]["findings"])
    (finding,) = [f for f in verdict["tamper"]["findings"] if f["code"] == "capability_denied"]
    assert finding["path"] == "src/calc/core.py" and finding["line"] >= 1
    assert "it was denied" in finding["message"]


# the expected values read out of the test file's source at run time
SOURCE_READER = """\
import pathlib
import re

_TESTS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "test_core.py"


def add(a, b):
    for x, y, want in re.findall(r"add\\((\\d+), (\\d+)\\) == (\\d+)", _TESTS.read_text()):
        if (int(x), int(y)) == (a, b):
            return int(want)
    return a - b
"""


def test_reading_the_tests_source_waits_for_a_person(repo: Path) -> None:
    write(repo, "src/calc/core.py", SOURCE_READER)
    code, verdict = run_verify(repo)
    assert code == 24, (verdict["reasons"], verdict["tamper"]["findings"])
    assert any("opens tests/test_core.py" in m for m in pending(verdict)), pending(verdict)


HONEST_MACHINERY = (
    HONEST
    + """

import collections
import dataclasses
import logging
import warnings

Pair = collections.namedtuple("Pair", "a b")  # reads a frame, on the candidate's behalf


@dataclasses.dataclass
class Total:  # execs generated code
    value: int


def added(a, b):
    logging.getLogger(__name__).info("adding %s", Pair(a, b))  # finds its caller's frame
    warnings.warn("use add", DeprecationWarning, stacklevel=2)
    return Total(add(a, b)).value
"""
)


def test_honest_code_using_the_machinery_through_the_stdlib_passes(repo: Path) -> None:
    write(repo, "src/calc/core.py", HONEST_MACHINERY)
    code, verdict = run_verify(repo)
    assert code == 0, (verdict["reasons"], verdict["tamper"]["findings"])


def test_a_use_the_baseline_made_is_no_finding(repo: Path) -> None:
    record = json.loads((repo / ".loop-contract/baseline.json").read_text())
    assert ["src/calc/frames.py", "frames"] in record["extra"]["capability_profile"]
    write(repo, "src/calc/frames.py", FRAMES_HELPER + "\n\nVERSION = 2\n")
    write(repo, "src/calc/core.py", HONEST)
    code, verdict = run_verify(repo)
    assert code == 0, (verdict["reasons"], verdict["tamper"]["findings"])
    assert "capability_denied" not in finding_codes(verdict)


# The cheat that beats the policy: a thread whose target is a builtin runs with no frame of the
# candidate's on its stack, so the __code__ write is attributed to nobody. What it forges, the
# twins and canaries see.
BUILTIN_THREAD = (
    "import threading\nimport _pytest.python as _p\n\n\ndef _skip_call(pyfuncitem):\n"
    "    return True\n\n\n_t = threading.Thread(target=setattr, args=(_p.pytest_pyfunc_call, "
    "'__code__', _skip_call.__code__))\n_t.start()\n_t.join()\n" + BROKEN
)


def test_a_swap_the_policy_cannot_attribute_is_caught_by_its_outcome(repo: Path) -> None:
    write(repo, "src/calc/core.py", BUILTIN_THREAD)
    code, verdict = run_verify(repo)
    assert code == 25, (verdict["reasons"], verdict["tamper"]["findings"])
    assert "capability_denied" not in finding_codes(verdict)
    assert {"twin_passed", "canary_wrong"} <= finding_codes(verdict)


def test_uses_on_xdist_workers_reach_the_verdict(tmp_path: Path) -> None:
    """Each worker has its own hook; what it records travels on its tests' reports."""
    pytest.importorskip("xdist")
    root = make_project(tmp_path, extra="pytest: {args: [-n, '2', -p, xdist]}\n")
    write(root, "src/calc/core.py", DENIED["proc-environ"])
    code, verdict = run_verify(root)
    assert code == 25, (verdict["reasons"], verdict["tamper"]["findings"])
    assert "capability_denied" in finding_codes(verdict)


EVIDENCE_CHEATS = {
    # a special case compiled from text at run time: no rule reads it, the hook sees it
    "exec-of-text": (
        "_RULE = 'def add(a, b):\\n    return 42 if (a, b) == (20, 22) else a - b\\n'\n"
        "exec(_RULE)\n",
        "exec_text",
    ),
}


@pytest.mark.parametrize("name", sorted(EVIDENCE_CHEATS))
def test_evidence_from_the_run_waits_for_a_person(repo: Path, name: str) -> None:
    source, kind = EVIDENCE_CHEATS[name]
    write(repo, "src/calc/core.py", source)
    code, verdict = run_verify(repo)
    assert code == 24, (verdict["reasons"], verdict["tamper"]["findings"])
    assert any(f"({kind})" in m for m in pending(verdict)), pending(verdict)
