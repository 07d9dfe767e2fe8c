"""Stand-ins for real agent CLIs (``claude``, ``codex``, ``gemini``, ``aider``): small Python
programs put first on ``PATH`` that print exactly the documented output shapes recorded in
``tests/data/presets/`` (see its README for each file's source).

A stand-in's behaviour comes from ``LOOPCONTRACT_STANDIN_<CLI>`` (``success``, ``auth``,
``rate_limit``, ``refusal``; default ``success``). As an author (``success``) it writes a
correct ``calc.py`` into its working directory (the contest project of
:mod:`testing.contest_project`); as a judge (its argv names a judging packet) it scores the
packet's candidates from their gates and puts that reply where its CLI puts the answer (the
``result`` of Claude's object, Codex's last ``agent_message``, Gemini's ``response``, Aider's
plain text). For CLIs that document no refusal marker (Codex, Gemini) ``refusal`` also writes
``{"refused": true}`` to ``$LOOP_CONTRACT_REPORT``, as a seat following the seat protocol would.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

__all__ = ["CLIS", "DATA", "EXIT_CODES", "install_standins"]

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "presets"
CLIS = {"claude": "json", "codex": "jsonl", "gemini": "json", "aider": "txt"}
EXIT_CODES = {
    ("claude", "auth"): 1,
    ("claude", "rate_limit"): 1,
    ("codex", "auth"): 1,
    ("codex", "rate_limit"): 1,
    ("gemini", "auth"): 41,
    ("gemini", "rate_limit"): 1,
    ("aider", "auth"): 1,
}
"""Non-zero exits; everything else exits 0 (Aider finishes its --message run with 0 even when
every request was rate limited or refused, so the preset must read the text)."""

_SCRIPT = r"""
import json, os, pathlib, sys
DATA = pathlib.Path(@DATA@)
EXT = @EXT@
EXIT_CODES = @EXIT_CODES@
cli = pathlib.Path(sys.argv[0]).name
if sys.argv[1:] == ["--version"]:
    print(f"{cli} stand-in")
    sys.exit(0)
mode = os.environ.get("LOOPCONTRACT_STANDIN_" + cli.upper(), "success")
ext = EXT[cli]
GOOD = "CALLS = 0\n\ndef add(a, b):\n    global CALLS\n    CALLS += 1\n    return a + b\n"

def named_files():
    for arg in sys.argv[1:]:
        for word in arg.split():
            word = word.strip(".,()")
            if os.path.isfile(word):
                yield pathlib.Path(word)

def judge_reply(packet):
    scores = []
    for cand in packet["candidates"]:
        gates = cand["gates"]["hard"] + cand["gates"]["measured"]
        ok = all(g["status"] == "pass" for g in gates)
        for row in packet["rows"]:
            scores.append({"candidate": cand["label"], "row": row, "score": 8 if ok else 3,
                           "confidence": 0.8, "evidence": "tests/test_calc.py::test_add",
                           "rationale": "gates " + ("green" if ok else "red")})
    return json.dumps({"scores": scores})

def wrap(reply):
    text = (DATA / cli / ("success." + ext)).read_text()
    if cli in ("claude", "gemini"):
        doc = json.loads(text)
        doc["result" if cli == "claude" else "response"] = reply
        return json.dumps(doc, ensure_ascii=False)
    if cli == "codex":
        lines = [json.loads(line) for line in text.splitlines()]
        for line in lines:
            if line.get("item", {}).get("type") == "agent_message":
                line["item"]["text"] = reply
        return "\n".join(json.dumps(line, ensure_ascii=False) for line in lines)
    return reply + "\n\nTokens: 2.3k sent, 301 received. Cost: $0.01 message, $0.01 session."

packets = [p for p in named_files() if p.name.endswith((".packet.json", ".repair.json"))]
if mode == "success" and packets:
    print(wrap(judge_reply(json.loads(packets[0].read_text()))))
    sys.exit(0)
if mode == "success":
    pathlib.Path("calc.py").write_text(GOOD)
if mode == "refusal" and cli in ("codex", "gemini"):
    pathlib.Path(os.environ["LOOP_CONTRACT_REPORT"]).write_text(
        json.dumps({"refused": True, "reason": "the request conflicts with my guidelines"}))
source = DATA / cli / (mode + "." + ext)
if not source.exists():
    source = DATA / cli / ("success." + ext)
sys.stdout.write(source.read_text())
sys.exit(EXIT_CODES.get(cli + ":" + mode, 0))
"""


def install_standins(folder: Path, clis: tuple[str, ...] = tuple(CLIS)) -> Path:
    """Write the stand-ins for ``clis`` into ``folder`` as executables; return ``folder`` (put
    it first on ``PATH``). A CLI left out is a missing binary."""
    folder.mkdir(parents=True, exist_ok=True)
    # The recorded outputs travel with the stand-ins: a seat runs in a sandbox that shows the
    # program's own folder, not the repository's test data.
    data = folder / "presets-data"
    if not data.exists():
        shutil.copytree(DATA, data)
    codes = {f"{cli}:{mode}": code for (cli, mode), code in EXIT_CODES.items()}
    body = (
        _SCRIPT.replace("@DATA@", repr(str(data)))
        .replace("@EXT@", repr(CLIS))
        .replace("@EXIT_CODES@", repr(codes))
    )
    for cli in clis:
        path = folder / cli
        path.write_text(f"#!{sys.executable}\n{body}", "utf-8")
        path.chmod(0o755)
    return folder
