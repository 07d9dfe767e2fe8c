"""The documentation site (mkdocs.yml, docs/) and the README that points to it.

* The site builds offline in strict mode (a warning, a broken link or anchor, a page left out
  of the navigation fails it), and a page that loses its generated section fails the build.
* Each reference page holds what its source of truth says, and the generator follows a changed
  source: a schema key, a sub-command, an exit code.
* The built getting-started page renders in headless Chromium (skipped without Chromium,
  unless ``LOOP_CONTRACT_REQUIRE_CHROMIUM=1``, as in tests/contest/report/test_html_chromium.py).
* The README stays a short front page, and its two command blocks, which CI runs, are
  unchanged.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from docs import reference
from pytest_loopcontract import verdict
from pytest_loopcontract.cli.parser import build_parser
from testing.chromium import require_chromium, run_chromium

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def mkdocs_build(config_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=config_dir,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # no end-of-life banner in the log
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for the module from this checkout."""
    out = tmp_path_factory.mktemp("docs") / "site"
    proc = mkdocs_build(ROOT, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


class Page(HTMLParser):
    """The ids, the title, the headings and the text of an HTML page."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.title = ""
        self.headings: list[str] = []
        self.text = ""
        self._in: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs).get("id")
        if found:
            self.ids.add(found)
        if tag in ("title", "h1", "h2", "h3"):
            self._in.append(tag)
            if tag != "title":
                self.headings.append("")

    def handle_endtag(self, tag: str) -> None:
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._in and self._in[-1] == "title":
            self.title += data
        elif self._in:
            self.headings[-1] += data


def built(site: Path, page: str) -> Page:
    return Page((site / page / "index.html").read_text("utf-8"))


# ---------------------------------------------------------------------------- (1) the build


def test_site_builds_in_strict_mode_with_every_page(site: Path) -> None:
    for page in (
        "index.html",
        "getting-started/index.html",
        "tutorials/agent-fix/index.html",
        "tutorials/claude-code-loop/index.html",
        "tutorials/github-contest/index.html",
        "how-to/hidden-tests/index.html",
        "how-to/coverage-gates/index.html",
        "how-to/hooks/index.html",
        "how-to/pre-push/index.html",
        "reference/contract/index.html",
        "reference/cli/index.html",
        "reference/exit-codes/index.html",
        "reference/verdict/index.html",
        "development/index.html",
    ):
        assert (site / page).is_file(), page
    # the generator and its hook are not pages, and no marker is left unexpanded
    assert not list(site.rglob("*.py"))
    for html in site.rglob("*.html"):
        assert "<!-- generated:" not in html.read_text("utf-8"), html


def test_site_needs_no_network(site: Path) -> None:
    """No web font (theme.font: false) and no script or style from elsewhere."""
    for html in site.rglob("*.html"):
        text = html.read_text("utf-8")
        assert "fonts.googleapis.com" not in text, html
        assert not re.search(r'<(script|link)[^>]+(src|href)="https?://', text), html


def copy_project(tmp_path: Path) -> Path:
    """mkdocs.yml and docs/ in a folder of their own, to build a changed copy."""
    dest = tmp_path / "project"
    dest.mkdir()
    shutil.copy2(ROOT / "mkdocs.yml", dest / "mkdocs.yml")
    shutil.copytree(DOCS, dest / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_a_page_that_loses_its_generated_section_fails_the_build(tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    page = project / "docs" / "reference" / "exit-codes.md"
    page.write_text(page.read_text("utf-8").replace("<!-- generated: exit-codes -->", ""))
    proc = mkdocs_build(project, tmp_path / "site")
    assert proc.returncode != 0
    assert "<!-- generated: exit-codes --> appears 0 times" in proc.stdout + proc.stderr


def test_a_broken_anchor_fails_the_strict_build(tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    page = project / "docs" / "index.md"
    page.write_text(page.read_text("utf-8") + "\n[gone](reference/cli.md#cmd-no-such)\n")
    proc = mkdocs_build(project, tmp_path / "site")
    assert proc.returncode != 0
    assert "cmd-no-such" in proc.stdout + proc.stderr


# ---------------------------------------------------------------------------- (2) reference


def subcommands(parser: argparse.ArgumentParser, prefix: str = "") -> Iterator[str]:
    """Every sub-command and every action under one, as ``"checkpoint resolve"``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                yield full
                yield from subcommands(sub, full)


def test_cli_page_has_every_sub_command_of_the_real_parser(site: Path) -> None:
    page = built(site, "reference/cli")
    names = list(subcommands(build_parser()))
    assert {"verify", "checkpoint resolve", "hook install", "contest run"} <= set(names)
    for name in names:
        assert "cmd-" + name.replace(" ", "-") in page.ids, name
        assert f"loop-contract {name} [-h]" in page.text, name
    for option in ("--junit-xml", "--sarif", "--keep-scratch", "--turn-timeout", "--serve"):
        assert option in page.text


def test_exit_code_page_has_every_exit_constant(site: Path) -> None:
    codes = reference.exit_codes(verdict)
    assert codes["EXIT_TAMPER"] == 25 and len(codes) >= 9
    page = built(site, "reference/exit-codes")
    for name, value in codes.items():
        meaning = reference.EXIT_MEANINGS[name].replace("`", "")
        assert re.search(rf"\b{value}\s*{name}\s*{re.escape(meaning)}", page.text), name
    for member in pytest.ExitCode:
        assert member.name in page.text


def test_contract_page_has_every_key_of_the_contract_schema(site: Path) -> None:
    schema = reference.load_schema("contract")
    page = built(site, "reference/contract")
    for name in schema["properties"]:
        assert f"contract-{name.lower()}" in page.ids, name
    for name in ("dodItem", "hardGate", "measuredGate", "seat"):
        assert f"contract-def-{name.lower()}" in page.ids, name
    for field in reference.schema_fields(schema):
        assert field.path in page.text, field.path
    assert "pytest.stability_runs" in page.text and "tamper.allow[].rule" in page.text


def test_verdict_page_has_every_key_of_the_verdict_schema(site: Path) -> None:
    schema = reference.load_schema("verdict")
    page = built(site, "reference/verdict")
    for name in schema["properties"]:
        assert f"verdict-{name.lower()}" in page.ids, name
    for field in reference.schema_fields(schema):
        assert field.path in page.text, field.path


def test_schema_generator_follows_a_changed_schema() -> None:
    schema = copy.deepcopy(reference.load_schema("contract"))
    before = reference.schema_reference(schema, "contract")
    assert "contract-goal" in before and "contract-frobnicate" not in before
    schema["properties"]["frobnicate"] = {
        "type": "object",
        "description": "Turns the frobs.",
        "required": ["level"],
        "properties": {"level": {"type": "integer", "minimum": 1, "maximum": 3, "default": 2}},
    }
    del schema["properties"]["goal"]
    schema["properties"]["pytest"]["properties"]["timeout"]["default"] = 99
    after = reference.schema_reference(schema, "contract")
    assert "contract-frobnicate" in after and "Turns the frobs." in after
    assert "| `frobnicate.level` | integer (1 to 3) | yes | `2` |" in after
    assert "contract-goal" not in after
    assert "| `pytest.timeout` |" in after and "`99`" in after


def test_schema_generator_refuses_a_reference_it_cannot_follow() -> None:
    schema = {"properties": {"a": {"$ref": "other.json#/x"}}}
    with pytest.raises(reference.DriftError, match=r"other\.json"):
        reference.schema_reference(schema, "x")


def test_cli_generator_follows_a_changed_parser() -> None:
    parser = build_parser()
    assert "cmd-frob" not in reference.cli_reference(build_parser())
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    frob = sub.add_parser("frob", help="frobnicate the tree", description="frobnicate the tree")
    frob.add_argument("--level", type=int, default=3, metavar="N", help="how hard")
    sub.choices["verify"].add_argument("--dry-run", action="store_true", help="plan only")
    text = reference.cli_reference(parser)
    assert "{ #cmd-frob }" in text and "[`frob`](#cmd-frob)" in text
    assert "loop-contract frob [-h] [--level N]" in text
    assert "| `--level` | `N` | `3` | how hard |" in text
    assert "| `--dry-run` |  |  | plan only |" in text


def test_exit_code_generator_requires_a_meaning_for_every_constant() -> None:
    codes = reference.exit_codes(verdict)
    with pytest.raises(reference.DriftError, match="EXIT_FROZEN = 28"):
        reference.exit_code_reference({**codes, "EXIT_FROZEN": 28})
    gone = {k: v for k, v in codes.items() if k != "EXIT_BUDGET"}
    with pytest.raises(reference.DriftError, match="EXIT_BUDGET"):
        reference.exit_code_reference(gone)
    moved = reference.exit_code_reference({**codes, "EXIT_BUDGET": 31})
    assert "| **31** | `EXIT_BUDGET` | stopped by budget |" in moved
    with pytest.raises(reference.DriftError, match="share"):
        reference.exit_code_reference({**codes, "EXIT_BUDGET": 25})


def test_expand_replaces_known_markers_and_refuses_unknown_ones() -> None:
    text, used = reference.expand(
        "a\n<!-- generated: one -->\nb\n", {"one": lambda: "ONE\n", "two": lambda: "TWO"}
    )
    assert (text, used) == ("a\nONE\nb\n", ["one"])
    with pytest.raises(reference.DriftError, match="three"):
        reference.expand("<!-- generated: three -->", {"one": lambda: ""})


def test_table_code_pipes_unescapes_only_inside_code_in_table_rows() -> None:
    markdown = "| `a\\|b` | c\\|d |\n`x\\|y`\n```\n| `p\\|q` |\n```\n"
    assert reference.table_code_pipes(markdown) == (
        "| `a|b` | c\\|d |\n`x\\|y`\n```\n| `p\\|q` |\n```\n"
    )


def test_every_command_the_pages_name_exists() -> None:
    """``loop-contract WORD`` in any page names a real sub-command (output prefixes such as
    ``loop-contract pre-push:`` aside)."""
    names = {n for n in subcommands(build_parser()) if " " not in n}
    pages = [*DOCS.rglob("*.md"), ROOT / "README.md"]
    for page in pages:
        text = page.read_text("utf-8")
        for word in re.findall(r"\bloop-contract ([a-z][a-z-]*)(?![\w:-])", text):
            assert word in names, f"{page.relative_to(ROOT)}: loop-contract {word}"


# ---------------------------------------------------------------------------- (3) a browser


def test_getting_started_renders_in_chromium(site: Path, tmp_path: Path) -> None:
    chromium = require_chromium()
    page = site / "getting-started" / "index.html"
    proc = run_chromium(chromium, tmp_path, "--dump-dom", page.as_uri())
    assert "</html>" in proc.stdout, proc.stderr[-4000:]
    dom = Page(proc.stdout)
    assert "Getting started" in dom.title and "pytest-loopcontract" in dom.title
    assert any(h.startswith("Getting started") for h in dom.headings), dom.headings
    assert any("loop-contract init" in h for h in dom.headings), dom.headings
    assert "verdict: PASS (exit 0)" in dom.text


# ---------------------------------------------------------------------------- (4) the README

COMMANDS = """```bash
# 1. set up and run the examples end to end: an honest fix passes, ten cheats are caught,
#    the governed loop stops for each reason, and a contest of three scripted seats runs twice
#    (run 1 writes a lesson, run 2 carries it and ends waiting at the human gate)
python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python examples/demo.py

# 2. run the tests (the few slow ones, the workflows under act and the built wheel, with
#    `-m slow`; CI runs both)
.venv/bin/python -m pytest -n 2
```"""

ON_A_PROJECT = """```bash
pip install pytest-loopcontract        # or: pip install -e . from this checkout
                                       # `loop-contract github ...` (the action) needs the
                                       # extra: pip install 'pytest-loopcontract[github]'
loop-contract init                     # scaffold loopcontract.yml (or: init --from TODO.md)
loop-contract check                    # validate it; errors name file:line:column and field
git add loopcontract.yml tests/ && git commit -m "contract + failing acceptance tests"
loop-contract baseline                 # run the suite on HEAD, record the sets and the pins
# ... the agent works on the tree ...
loop-contract verify                   # isolated verification; writes .loop-contract/verdict.json
pytest --loop-contract                 # quick in-process check (trust: in-process)
```"""


def command_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```bash\n.*?^```$", markdown, re.MULTILINE | re.DOTALL)


def test_readme_is_short_and_keeps_its_two_command_blocks() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) < 250
    assert command_blocks(readme)[:2] == [COMMANDS, ON_A_PROJECT]


def test_ci_runs_the_readme_commands() -> None:
    ci = (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
    setup, tests = [line for line in COMMANDS.splitlines()[1:-1] if line and line[0] != "#"]
    assert setup in ci
    assert any(line.startswith(tests + " ") or line == tests for line in ci)
    assert '.venv/bin/mkdocs build --strict -d "$(mktemp -d)"' in ci


def test_readme_links_to_pages_that_exist() -> None:
    """The README is also the package's page on PyPI, where a relative link leads nowhere: its
    links to the pages are absolute, into the repository that ``pyproject.toml`` names."""
    readme = (ROOT / "README.md").read_text("utf-8")
    home = re.search(r'^Homepage = "([^"]+)"$', (ROOT / "pyproject.toml").read_text("utf-8"), re.M)
    assert home is not None
    blob = re.escape(home[1] + "/blob/main/")
    links = re.findall(rf"\]\({blob}(docs/[^)#]+)", readme)
    assert "docs/getting-started.md" in links and "docs/development.md" in links
    for link in links:
        assert (ROOT / link).is_file(), link
    assert not re.findall(r"\]\((?!https?://|#)[^)]+\)", readme), "a relative link in the README"
