"""Contract loading: every block parses into the dataclasses, every mistake is named precisely.

Error messages are asserted in full (``file:line:col: field: message``) because they are the
interface a human fixes a contract through; a vaguer message is a regression.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopcontract.contract.model import (
    DEFAULT_VERIFY_WORKFLOW,
    Boundaries,
    BracketSettings,
    Budget,
    ContestSettings,
    DodItem,
    GithubSettings,
    HardGate,
    JudgedSettings,
    MeasuredGate,
    Protect,
    PushSettings,
    PytestSettings,
    StopWhen,
    load_contract,
)
from pytest_loopcontract.contract.schema import load_schema, validate_document
from pytest_loopcontract.errors import ContractError

FULL = """\
# every block of contract v1
version: 1
id: parser-fix.v1
goal: "The parser accepts empty files"
mode: improve
dod:
  - id: empty-file
    text: "An empty file parses to an empty document"
    tests: ["tests/test_parser.py::test_empty", "tests/test_parser.py::test_blank*"]
  - id: marked
    text: Tests tied to this item with the dod marker
gates:
  hard:
    - id: acceptance
      kind: acceptance
    - id: no-regressions
      kind: pass_to_pass
    - id: lint
      kind: command
      run: [ruff, check, "."]
      expect_exit: 0
      timeout: 60
    - id: smoke
      kind: tests
      tests: ["tests/smoke/*"]
  measured:
    - id: coverage
      metric: coverage.percent
      op: ">="
      threshold: 80
      unit: "%"
    - id: rss
      metric: sensor.rss
      op: "<"
      threshold: 512
      unit: MiB
      aggregate: max
      source: {command: [python, tools/rss.py], key: rss_mib, timeout: 30, precision: 1}
    - id: speed
      metric: benchmark.mean
      op: "<="
      threshold: 0.002
      source: {file: .benchmarks/latest.json, name: test_parse, anything: [kept, as, is]}
protect:
  paths: ["fixtures/**"]
  allow: ["tests/test_new_*.py"]
  defaults: false
boundaries:
  allow: ["src/**", "tests/**"]
  deny: ["src/vendor/**"]
constraints:
  - Do not add dependencies.
budget: {iterations: 8, minutes: 45.5, tokens: 2000000, usd: 12.5}
stop_when: {no_progress: 3, paths_touched: ["setup.py"], oscillation: true}
checkpoints:
  disable: [git-push]
  add:
    - id: no-publish
      pattern: "twine upload*"
      kind: command
      message: Publishing needs a maintainer.
pytest:
  args: ["-x", "-p", "no:randomly"]
  plugins: [pytest_benchmark]
  timeout: 900
judged:
  min_score: 6.5
  spread_threshold: 3
  dissent_threshold: 4
  rows: [question_fidelity, completeness, evidence, test_agreement]
bracket: {cut: halve, final: 2}
seats:
  - name: claude
    family: anthropic
    generate: [claude, -p, "{prompt}"]
    judge: [claude, -p, "{packet}"]
    timeout: 1800
  - name: codex
    family: openai
"""

HEAD = "version: 1\nid: demo\n"
MEASURED = HEAD + "gates:\n  measured:\n    - id: cov\n      metric: coverage.percent\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "loopcontract.yml"
    path.write_text(text, "utf-8")
    return path


def error_text(source: str | bytes) -> str:
    data = source.encode("utf-8") if isinstance(source, str) else source
    with pytest.raises(ContractError) as info:
        validate_document(data, "loopcontract.yml")
    return str(info.value)


def test_full_contract_fills_every_field(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    contract = load_contract(path)
    assert contract.path == path
    assert contract.sha256 == hashlib.sha256(FULL.encode()).hexdigest()
    assert (contract.version, contract.id, contract.mode) == (1, "parser-fix.v1", "improve")
    assert contract.goal == "The parser accepts empty files"
    assert contract.dod == (
        DodItem(
            "empty-file",
            "An empty file parses to an empty document",
            ("tests/test_parser.py::test_empty", "tests/test_parser.py::test_blank*"),
        ),
        DodItem("marked", "Tests tied to this item with the dod marker"),
    )
    assert contract.hard_gates == (
        HardGate("acceptance", "acceptance"),
        HardGate("no-regressions", "pass_to_pass"),
        HardGate("lint", "command", run=("ruff", "check", "."), timeout=60.0),
        HardGate("smoke", "tests", tests=("tests/smoke/*",)),
    )
    coverage, rss, speed = contract.measured_gates
    assert coverage == MeasuredGate("coverage", "coverage.percent", ">=", 80.0, unit="%")
    assert (rss.aggregate, rss.unit, rss.threshold) == ("max", "MiB", 512.0)
    assert rss.source == {
        "command": ["python", "tools/rss.py"],
        "key": "rss_mib",
        "timeout": 30,
        "precision": 1,
    }
    assert speed.source["anything"] == ["kept", "as", "is"]
    assert contract.protect == Protect(("fixtures/**",), ("tests/test_new_*.py",), defaults=False)
    assert contract.boundaries == Boundaries(("src/**", "tests/**"), ("src/vendor/**",))
    assert contract.constraints == ("Do not add dependencies.",)
    assert contract.budget == Budget(iterations=8, minutes=45.5, tokens=2_000_000, usd=12.5)
    assert contract.stop_when == StopWhen(
        no_progress=3, oscillation=True, paths_touched=("setup.py",)
    )
    assert contract.checkpoints["add"][0]["pattern"] == "twine upload*"
    assert contract.pytest == PytestSettings(
        ("-x", "-p", "no:randomly"), ("pytest_benchmark",), 900.0
    )
    assert contract.judged.rows == (
        "question_fidelity",
        "completeness",
        "evidence",
        "test_agreement",
    )
    assert contract.bracket == BracketSettings(cut="halve", final=2)
    assert [seat["name"] for seat in contract.seats] == ["claude", "codex"]
    assert contract.acceptance_selectors() == contract.dod[0].tests


def test_minimal_contract_gets_the_defaults(tmp_path: Path) -> None:
    contract = load_contract(write(tmp_path, HEAD))
    assert (contract.goal, contract.mode, contract.dod) == ("", "fix", ())
    assert contract.hard_gates == (
        HardGate("acceptance", "acceptance"),
        HardGate("no-regressions", "pass_to_pass"),
    )
    assert contract.hard_gates[0].timeout == 300.0
    assert contract.measured_gates == ()
    assert contract.protect == Protect(defaults=True)
    assert contract.budget == Budget()
    assert contract.pytest.timeout == 1800.0
    assert contract.seats == ()
    # every section is a typed value with its defaults set once, in the model
    assert contract.stop_when == StopWhen(no_progress=3, oscillation=True, paths_touched=())
    assert contract.judged == JudgedSettings(6.0, 3.0, 3.0, rows=None)
    assert contract.contest == ContestSettings(None, (), attempts=3, parallel=4, lesson_chars=2000)
    assert contract.github == GithubSettings(
        base=None, verify_workflow=DEFAULT_VERIFY_WORKFLOW, protect=(), require_sandbox=True
    )
    assert contract.bracket == BracketSettings(cut=2, final=2)


def test_push_settings_default_and_configured(tmp_path: Path) -> None:
    assert load_contract(write(tmp_path, HEAD)).push == PushSettings(
        ("main", "master", "release/*", "production"), "protected"
    )
    text = HEAD + 'push:\n  protected: [main, "release/*"]\n  gates: always\n'
    assert load_contract(write(tmp_path, text)).push == PushSettings(
        ("main", "release/*"), "always"
    )
    assert load_contract(write(tmp_path, HEAD + "push:\n  protected: []\n")).push.protected == ()


def test_explicit_hard_gates_replace_the_defaults(tmp_path: Path) -> None:
    text = HEAD + "gates:\n  hard:\n    - id: build\n      kind: command\n      run: [make]\n"
    contract = load_contract(write(tmp_path, text))
    assert contract.hard_gates == (HardGate("build", "command", run=("make",)),)


def test_protect_may_be_a_plain_list(tmp_path: Path) -> None:
    contract = load_contract(write(tmp_path, HEAD + 'protect: ["data/**", "*.lock"]\n'))
    assert contract.protect == Protect(paths=("data/**", "*.lock"), defaults=True)


def test_anchors_and_merge_keys_are_honoured() -> None:
    text = HEAD + (
        "seats:\n"
        "  - &base {name: one, family: x, generate: [agent, --fast], timeout: 60}\n"
        "  - <<: *base\n"
        "    name: two\n"
    )
    seats = validate_document(text.encode(), "loopcontract.yml")["seats"]
    assert seats[1] == {
        "name": "two",
        "family": "x",
        "generate": ["agent", "--fast"],
        "timeout": 60,
    }


def test_a_utf8_byte_order_mark_is_accepted() -> None:
    assert validate_document(b"\xef\xbb\xbf" + HEAD.encode(), "c.yml")["id"] == "demo"


def test_a_plugin_metric_prefix_is_accepted() -> None:
    text = (
        MEASURED.replace("coverage.percent", "memray.peak_mib")
        + "      op: '<'\n      threshold: 1\n"
    )
    assert (
        validate_document(text.encode(), "c.yml")["gates"]["measured"][0]["metric"]
        == "memray.peak_mib"
    )


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nope.yml"
    with pytest.raises(ContractError) as info:
        load_contract(path)
    assert (
        str(info.value) == f"{path}: contract file not found (create one with 'loop-contract init')"
    )


def test_error_carries_its_parts_separately(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD + "mode: fixx\n")
    with pytest.raises(ContractError) as info:
        load_contract(path)
    error = info.value
    assert (error.file, error.line, error.column, error.field_path) == (str(path), 3, 7, "mode")
    assert error.message == "expected one of 'fix', 'improve', got 'fixx'; did you mean 'fix'?"


@pytest.mark.parametrize(
    "source", [HEAD + "goal: [\n", HEAD.encode() + b"\xff", HEAD + "mode: x\n"]
)
def test_no_yaml_or_jsonschema_traceback_is_chained(source: str | bytes) -> None:
    data = source.encode() if isinstance(source, str) else source
    with pytest.raises(ContractError) as info:
        validate_document(data, "c.yml")
    error = info.value
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__


ERRORS = {
    "yaml syntax": (
        HEAD + "mode: fix\n  goal: oops\n",
        "4:7: mode: invalid YAML: mapping values are not allowed here",
    ),
    "unterminated quote": (
        HEAD + 'goal: "never closed\nmode: fix\n',
        "5:1: goal: invalid YAML: found unexpected end of stream"
        " (while scanning a quoted scalar started at line 3)",
    ),
    "tab indentation": (
        HEAD + "goal:\tx\n",
        "3:6: goal: invalid YAML: while scanning for the next token, found character '\\t'"
        " that cannot start any token; indent with spaces, not tabs",
    ),
    "unquoted >=": (
        MEASURED + "      op: >=\n      threshold: 80\n",
        "7:12: gates.measured[0].op: invalid YAML: expected chomping or indentation indicators,"
        " but found '=' (while scanning a block scalar started at line 7); a value starting with"
        " '>' means something special in YAML, so put it in quotes",
    ),
    "unquoted !=": (
        MEASURED + "      op: !=\n      threshold: 80\n",
        "7:11: gates.measured[0].op: invalid YAML: could not determine a constructor for the tag"
        " '!='; a value starting with '!' means something special in YAML, so put it in quotes",
    ),
    "unquoted glob": (
        HEAD + "protect:\n  - *.py\n",
        "4:6: protect[0]: invalid YAML: expected alphabetic or numeric character, but found '.'"
        " (while scanning an alias started at line 4); a value starting with '*' means something"
        " special in YAML, so put it in quotes",
    ),
    "two documents": (
        HEAD + "---\nversion: 1\n",
        "3:1: (document): invalid YAML: expected a single document in the stream,"
        " but found another document",
    ),
    "wrong type": (
        HEAD + "budget:\n  iterations: ten\n",
        "4:15: budget.iterations: expected a whole number, got the text 'ten'",
    ),
    "number for text": (
        "version: 1\nid: 12\n",
        "2:5: id: expected an id made of letters, digits, '.', '_' and '-', starting with a letter"
        " or digit, got the number 12; put it in quotes to make it text",
    ),
    "empty value": (HEAD + "goal:\n", "3:6: goal: expected text, got an empty value"),
    "argv as a string": (
        HEAD + "gates:\n  hard:\n    - id: lint\n      kind: command\n      run: ruff check\n",
        "7:12: gates.hard[0].run: expected an argument list such as [python, -m, mytool]"
        " (it runs without a shell), got the text 'ruff check'",
    ),
    "unknown key": (
        MEASURED + "      op: '>='\n      treshold: 80\n",
        "8:7: gates.measured[0].treshold: unknown key 'treshold'; did you mean 'threshold'?",
    ),
    "unknown top-level key": (
        HEAD + "zzz: 1\n",
        "3:1: zzz: unknown key 'zzz'; allowed keys: version, id, goal, mode, dod, gates, protect,"
        " boundaries, constraints, budget, stop_when, tamper, review, egress, on_item_done,"
        " turn_timeout, checkpoints, push, pytest, isolation, judged, bracket, contest, seats,"
        " github",
    ),
    "push gates": (
        HEAD + "push:\n  gates: sometimes\n",
        "4:10: push.gates: expected protected (gates only for pushes to protected branches) or"
        " always, got 'sometimes'",
    ),
    "push protected as text": (
        HEAD + "push:\n  protected: main\n",
        "4:14: push.protected: expected a list of branch names or globs such as main or"
        " 'release/*', got the text 'main'",
    ),
    "missing id": ("version: 1\ngoal: x\n", "1:1: id: missing required key 'id'"),
    "unsupported version": (
        "version: 2\nid: x\n",
        "1:10: version: expected 1 (the only contract version this release reads),"
        " got the number 2",
    ),
    "bad mode": (
        HEAD + "mode: fixx\n",
        "3:7: mode: expected one of 'fix', 'improve', got 'fixx'; did you mean 'fix'?",
    ),
    "yes is a boolean": (
        HEAD + "mode: yes\n",
        "3:7: mode: expected one of 'fix', 'improve', got the boolean true",
    ),
    "bad op": (
        MEASURED + "      op: '=>'\n      threshold: 80\n",
        '7:11: gates.measured[0].op: expected a comparison in quotes: ">=", ">", "<=",'
        ' "<", "==" or "!=", got \'=>\'; did you mean \'>=\'?',
    ),
    "misspelt metric": (
        MEASURED.replace("percent", "percnt") + "      op: '>='\n      threshold: 80\n",
        "6:15: gates.measured[0].metric: expected a metric: coverage.percent,"
        " coverage.diff_percent, coverage.uncovered_changed_lines, duration.total,"
        " duration.max_test, tests.count, metric.<name> (a value a test recorded), sensor.<name>"
        " (a sensor command), benchmark.<stat> (pytest-benchmark JSON) or <prefix>.<name> from a"
        " plugin's metric source, got 'coverage.percnt'; did you mean 'coverage.percent'?",
    ),
    "command gate without run": (
        HEAD + "gates:\n  hard:\n    - id: lint\n      kind: command\n",
        "5:7: gates.hard[0].run: missing required key 'run' (needed when kind is 'command')",
    ),
    "run on an acceptance gate": (
        HEAD + "gates:\n  hard:\n    - id: a\n      kind: acceptance\n      run: [make]\n",
        "7:7: gates.hard[0].run: key 'run' is only allowed when kind is 'command'",
    ),
    "missing kind beats the kind-dependent rule": (
        HEAD + "gates:\n  hard:\n    - id: lint\n      run: [ruff]\n",
        "5:7: gates.hard[0].kind: missing required key 'kind'",
    ),
    "tests gate with no tests": (
        HEAD + "gates:\n  hard:\n    - id: t\n      kind: tests\n      tests: []\n",
        "7:14: gates.hard[0].tests: must not be an empty list",
    ),
    "sensor without a command": (
        HEAD + "gates:\n  measured:\n    - id: s\n      metric: sensor.rss\n      op: '<'\n"
        "      threshold: 1\n      source: {key: rss}\n",
        "9:7: gates.measured[0].source.command: missing required key 'command'"
        " (needed when the metric is sensor.<name>)",
    ),
    "protect as a string": (
        HEAD + "protect: 'a/**'\n",
        "3:10: protect: expected a list of globs, or a mapping with 'paths', 'allow' and"
        " 'defaults', got the text 'a/**'",
    ),
    "protect key typo": (
        HEAD + "protect:\n  path: [a]\n",
        "4:3: protect.path: unknown key 'path'; did you mean 'paths'?",
    ),
    "bracket cut typo": (
        HEAD + "bracket:\n  cut: half\n",
        "4:8: bracket.cut: expected one of 'halve', got 'half'; did you mean 'halve'?",
    ),
    "bracket cut zero": (
        HEAD + "bracket:\n  cut: 0\n",
        "4:8: bracket.cut: must be at least 1, got 0",
    ),
    "score above ten": (
        HEAD + "judged:\n  min_score: 11\n",
        "4:14: judged.min_score: must be at most 10, got 11",
    ),
    "repeated row": (
        HEAD + "judged:\n  rows: [evidence, evidence]\n",
        "4:20: judged.rows[1]: 'evidence' is listed twice",
    ),
    "duplicate dod ids": (
        HEAD + "dod:\n  - id: a\n    text: A\n  - id: a\n    text: B\n",
        "6:9: dod[1].id: duplicate DoD id 'a' (already used by dod[0] at line 4)",
    ),
    "gate ids shared by hard and measured": (
        HEAD + "gates:\n  hard:\n    - id: a\n      kind: acceptance\n  measured:\n    - id: a\n"
        "      metric: tests.count\n      op: '>='\n      threshold: 1\n",
        "8:11: gates.measured[0].id: duplicate gate id 'a'"
        " (already used by gates.hard[0] at line 5)",
    ),
    "two acceptance gates": (
        HEAD + "gates:\n  hard:\n    - id: a\n      kind: acceptance\n    - id: b\n"
        "      kind: acceptance\n",
        "8:13: gates.hard[1].kind: duplicate gate kind 'acceptance'"
        " (already used by gates.hard[0] at line 6)",
    ),
    "no gates at all": (
        HEAD + "gates:\n  hard: []\n",
        "4:9: gates.hard: an empty list leaves no gate, so any change would pass; list a gate, or"
        " remove 'hard' to get the default acceptance and no-regressions gates",
    ),
    "duplicate yaml keys": (
        HEAD + "goal: x\ngoal: y\n",
        "4:1: goal: duplicate key 'goal' (first given at line 3)",
    ),
    "non-text key": (
        HEAD + "on: x\n",
        "3:1: (document): keys must be text, got the boolean true; put the key in quotes",
    ),
    "unsupported tag": (
        HEAD + "constraints: !!set {a, b}\n",
        "3:14: constraints: unsupported YAML tag '!!set'; remove it",
    ),
    "self-referencing alias": (
        HEAD + "constraints: &a [*a]\n",
        "3:14: constraints[0]: an alias refers to a value that contains it",
    ),
    "not a number": (
        MEASURED + "      op: '>='\n      threshold: .nan\n",
        "8:18: gates.measured[0].threshold: NaN (.nan) cannot be compared; use a number",
    ),
    "empty file": (
        "",
        "1:1: (document): the contract is empty; create one with 'loop-contract init'",
    ),
    "only comments": (
        "# nothing yet\n",
        "1:1: (document): the contract is empty; create one with 'loop-contract init'",
    ),
    "a list as the document": (
        "- version: 1\n",
        "1:1: (document): the contract must be a mapping (version, id, goal, ...), got a list",
    ),
    "control character": (
        HEAD + "goal: a\x01b\n",
        "3:8: goal: invalid character U+0001; YAML does not allow control characters",
    ),
}


@pytest.mark.parametrize(("source", "expected"), ERRORS.values(), ids=ERRORS.keys())
def test_error_names_file_line_column_and_field(source: str, expected: str) -> None:
    assert error_text(source) == f"loopcontract.yml:{expected}"


def test_non_utf8_bytes_point_at_the_bad_byte() -> None:
    assert error_text(HEAD.encode() + b"goal: caf\xe9\n") == (
        "loopcontract.yml:3:10: goal: the file is not UTF-8 text (byte 0xe9 cannot be read);"
        " save it as UTF-8"
    )


def test_the_first_problem_in_the_file_is_reported() -> None:
    text = HEAD + "mode: fixx\nbudget:\n  iterations: 0\n"
    assert error_text(text).startswith("loopcontract.yml:3:7: mode:")
    reordered = HEAD + "budget:\n  iterations: 0\nmode: fixx\n"
    assert error_text(reordered) == (
        "loopcontract.yml:4:15: budget.iterations: must be at least 1, got 0"
    )


def test_alias_expansion_is_bounded() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 9)
    ]
    message = error_text(HEAD + "\n".join(lines) + "\n")
    assert "the contract has too many values (are aliases expanding?)" in message


def test_schema_is_valid_draft_2020_12_and_closed() -> None:
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)

    def closed(node: object) -> None:
        if isinstance(node, dict):
            # maps (propertyNames + a value schema, like pytest.env) are closed by their names
            if (
                node.get("type") == "object"
                and node is not free_form
                and "propertyNames" not in node
            ):
                assert node.get("additionalProperties") is False, json.dumps(node)[:80]
            for value in node.values():
                closed(value)
        elif isinstance(node, list):
            for value in node:
                closed(value)

    free_form = schema["$defs"]["measuredGate"]["properties"]["source"]
    closed(schema)


def test_load_schema_returns_a_fresh_copy() -> None:
    load_schema()["required"].append("mutated")
    assert load_schema()["required"] == ["version", "id"]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_escape_as_another_exception(data: bytes) -> None:
    try:
        validate_document(data, "c.yml")
    except ContractError as exc:
        assert exc.line is not None and exc.line >= 1
        assert exc.column is not None and exc.column >= 1
        assert exc.field_path


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_edited_contracts_fail_only_with_contract_errors(data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(FULL)))
    end = data.draw(st.integers(start, min(len(FULL), start + 12)))
    insert = data.draw(st.text(alphabet=" \n\t:-[]{}\"'#&*!>|%,?0aZ.", max_size=6))
    text = FULL[:start] + insert + FULL[end:]
    try:
        validate_document(text.encode(), "c.yml")
    except ContractError as exc:
        assert exc.line is not None and 1 <= exc.line <= text.count("\n") + 2
        assert exc.field_path


def test_checkpoint_regex_is_compiled_at_load(tmp_path: Path) -> None:
    path = tmp_path / "loopcontract.yml"
    path.write_text(
        "version: 1\nid: x\ncheckpoints:\n  add:\n"
        "    - id: bad\n      pattern: '(unclosed'\n      kind: command\n"
    )
    with pytest.raises(ContractError) as info:
        load_contract(path)
    assert "6:16" in str(info.value)
    assert "checkpoints.add[0].pattern" in str(info.value)
    assert "regular expression" in str(info.value)
