"""contest/report/diffs.py and the HTML report around it: each candidate's diff, folded and
coloured; gate columns only when measured; reports readable by everyone (0644)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.report.diffs import (
    MAX_LINES,
    classified,
    diff_details,
    diff_stats,
)
from pytest_loopcontract.contest.report.html import render_html, write_html
from pytest_loopcontract.contest.result_file import save_result
from pytest_loopcontract.statedir import StateDir
from testing.contest_fixtures import sample_result
from testing.repos import git, run_cli

DIFF = """\
diff --git a/src/mini/core.py b/src/mini/core.py
index 1111111..2222222 100644
--- a/src/mini/core.py
+++ b/src/mini/core.py
@@ -4,2 +4,2 @@ def double(x):
 def triple(x):
-    return x * 2
+    return x * 3  # <script>alert(1)</script>
"""


def one_tree(doc: dict[str, Any]) -> str:
    return str(doc["candidates"][0]["tree"])


def test_a_diff_is_folded_with_added_and_removed_lines_classed_and_escaped() -> None:
    doc = sample_result()
    page = render_html(doc, {one_tree(doc): DIFF})
    block = re.search(r'<details class="diff">.*?</details>', page, re.S)
    assert block is not None, "folded: a details element without the open attribute"
    html = block.group(0)
    assert "<summary>diff: 1 file, +1 -1</summary>" in html
    assert '<span class="del">-    return x * 2</span>' in html
    assert '<span class="add">+    return x * 3  # &lt;script&gt;alert(1)&lt;/script&gt;' in html
    assert '<span class="hunk">@@ -4,2 +4,2 @@ def double(x):</span>' in html
    assert "<script>" not in page  # text, never markup
    assert page.count('<details class="diff">') == 1  # only the candidate given a diff
    assert "Content-Security-Policy" in page and "<script" not in page.replace("&lt;script", "")


def test_no_diffs_given_means_no_diff_section_and_a_gone_one_says_so() -> None:
    doc = sample_result()
    assert "<details" not in render_html(doc)
    assert "diff: not available" in diff_details("abc", {"abc": None})
    assert "diff: no change" in diff_details("abc", {"abc": ""})
    assert diff_details("", {"": DIFF}) == ""


def test_inside_a_hunk_the_first_character_decides_not_what_follows() -> None:
    diff = "diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n"
    diff += "--- a comment removed\n+++ one added\n same\n"
    kinds = [kind for kind, _ in classified(diff)]
    assert kinds == ["file", "file", "file", "hunk", "del", "add", "ctx"]
    assert diff_stats(diff) == (1, 1, 1)


def test_a_huge_diff_is_cut_with_a_count_of_what_was_left_out() -> None:
    diff = "@@ -0,0 +1 @@\n" + "".join(f"+line {i}\n" for i in range(MAX_LINES + 24))
    html = diff_details("t", {"t": diff})
    assert html.count('<span class="add">') == MAX_LINES - 1  # and the hunk line
    assert "… and 25 more lines" in html
    assert diff_stats(diff) == (0, MAX_LINES + 24, 0)


def test_observed_and_threshold_columns_only_when_a_measured_gate_exists() -> None:
    doc = sample_result()
    assert "<th>observed</th><th>threshold</th>" in render_html(doc)
    for cand in doc["candidates"]:
        cand["gates"]["measured"] = []
    page = render_html(doc)
    assert "<th>observed</th>" not in page and "<th>threshold</th>" not in page
    row = re.search(r"<tr><td><code>acceptance</code></td>.*?</tr>", page)
    assert row is not None and row.group(0).count("<td") == 3


def test_write_html_leaves_a_file_everyone_can_read(tmp_path: Path) -> None:
    old = os.umask(0o077)  # even a private umask: a report is for sharing
    try:
        write_html(tmp_path / "report.html", sample_result())
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "report.html").stat().st_mode) == 0o644
    assert not list(tmp_path.glob(".*.tmp"))


def test_loop_contract_report_shows_the_real_diff_from_git(tmp_path: Path) -> None:
    """A real repository: the base commit and a candidate commit; the command reads the
    candidate's diff from git and writes both reports 0644."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "src/core.py").write_text("def triple(x):\n    return x * 2\n", "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "src/core.py").write_text("def triple(x):\n    return x * 3\n", "utf-8")
    git(repo, "commit", "-qam", "candidate")
    commit = git(repo, "rev-parse", "HEAD").strip()
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    doc = sample_result()
    doc["base"] = {"commit": base, "branch": "main"}
    doc["candidates"][0].update(commit=commit, tree=tree)
    run = StateDir.of(repo).run_dir(str(doc["run_id"]))
    run.mkdir(parents=True)
    save_result(run, doc)
    done = run_cli(repo, "report", "--html", "out/report.html", "--markdown", "out/report.md")
    assert done.returncode == 0, done.stderr
    page = (repo / "out/report.html").read_text("utf-8")
    assert '<span class="del">-    return x * 2</span>' in page
    assert '<span class="add">+    return x * 3</span>' in page
    assert "diff: not available" in page  # the fixture's other trees are not in this repo
    for name in ("report.html", "report.md"):
        assert stat.S_IMODE((repo / "out" / name).stat().st_mode) == 0o644, name
