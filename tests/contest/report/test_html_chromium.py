"""The HTML report in a real browser: headless Chromium loads the file, and the DOM it builds
(not the string we wrote) has the hooks, the text and none of the hostile markup.

Chromium missing: skipped, unless ``LOOP_CONTRACT_REQUIRE_CHROMIUM=1`` (CI sets it and
installs the Debian ``chromium`` package), then the test fails. ``LOOP_CONTRACT_CHROMIUM``
names another binary.
"""

from __future__ import annotations

import struct
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contest.report.html import write_html
from pytest_loopcontract.contest.report.view import SCRIPTED_LABEL
from testing.chromium import count_colours, png_chunks, require_chromium, run_chromium
from testing.contest_fixtures import HOSTILE_SEAT, hostile_result, no_winner_result, sample_result


@pytest.fixture(scope="module")
def chromium() -> str:
    return require_chromium()


class Dom(HTMLParser):
    """Tags with attributes, the text of ``#winner``, and all text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.winner: str | None = None
        self._in_winner = False
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        if attributes.get("id") == "winner":
            self._in_winner, self.winner = True, ""

    def handle_endtag(self, tag: str) -> None:
        self._in_winner = False

    def handle_data(self, data: str) -> None:
        if self._in_winner and self.winner is not None:
            self.winner += data
        self.text += data


def dump_dom(chromium: str, tmp_path: Path, result: dict[str, Any]) -> Dom:
    page = tmp_path / "report.html"
    write_html(page, result)
    proc = run_chromium(chromium, tmp_path, "--dump-dom", page.as_uri())
    assert "</html>" in proc.stdout, proc.stderr[-4000:]
    dom = Dom()
    dom.feed(proc.stdout)
    dom.close()
    return dom


def test_browser_dom_has_winner_and_every_seat(chromium: str, tmp_path: Path) -> None:
    doc = sample_result()
    dom = dump_dom(chromium, tmp_path, doc)
    assert dom.winner == doc["winner"] == "alpha"
    seats = {a["data-seat"] for _, a in dom.tags if "data-seat" in a}
    assert seats == {s["name"] for s in doc["seats"]}
    assert SCRIPTED_LABEL in dom.text
    cells = [a for t, a in dom.tags if t == "td" and a.get("class") == "cell"]
    assert len(cells) == len(doc["matrix"]["cells"])


def test_browser_dom_without_a_winner(chromium: str, tmp_path: Path) -> None:
    dom = dump_dom(chromium, tmp_path, no_winner_result())
    assert dom.winner == "none"


def test_browser_builds_no_hostile_element(chromium: str, tmp_path: Path) -> None:
    dom = dump_dom(chromium, tmp_path, hostile_result())
    tags = {t for t, _ in dom.tags}
    assert not tags & {"script", "img", "iframe", "object", "embed", "link", "a", "b", "form"}
    assert not any(name.startswith("on") for _, a in dom.tags for name in a)
    assert "<script>alert(1)</script>" in dom.text  # there as text
    assert HOSTILE_SEAT in {a.get("data-seat") for _, a in dom.tags}


def test_browser_screenshot_is_a_png(chromium: str, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    write_html(page, sample_result())
    shot = tmp_path / "report.png"
    run_chromium(
        chromium, tmp_path, f"--screenshot={shot}", "--window-size=1280,2400", page.as_uri()
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 2400)
    # A rendered page, not a blank canvas: the pixels take many values (text, heat map).
    pixels = zlib.decompress(b"".join(png_chunks(data, b"IDAT")))
    assert len(set(pixels)) > 64


# The diff's line backgrounds (contest/report/diffs.py): colours nothing else on the page uses.
ADDED, REMOVED = (0xAC, 0xEE, 0xBB), (0xFF, 0xCE, 0xCB)
DIFF = (
    "diff --git a/src/core.py b/src/core.py\n--- a/src/core.py\n+++ b/src/core.py\n"
    "@@ -1,2 +1,2 @@\n def triple(x):\n-    return x * 2\n+    return x * 3\n"
)


def test_browser_shows_each_diff_folded_and_coloured_once_opened(
    chromium: str, tmp_path: Path
) -> None:
    """Folded, no diff line is drawn; opened (the ``open`` attribute a click sets), every
    candidate's added line is green and its removed line red."""
    doc = no_winner_result()
    page = tmp_path / "report.html"
    write_html(page, doc, {c["tree"]: DIFF for c in doc["candidates"]})
    folded = page.read_text("utf-8")
    assert '<details class="diff">' in folded
    opened = tmp_path / "opened.html"
    opened.write_text(folded.replace('<details class="diff">', '<details class="diff" open>'))
    counts = {}
    for name, source in (("folded", page), ("opened", opened)):
        shot = tmp_path / f"{name}.png"
        run_chromium(
            chromium, tmp_path, f"--screenshot={shot}", "--window-size=1000,2200", source.as_uri()
        )
        counts[name] = count_colours(shot, {"added": ADDED, "removed": REMOVED})
    assert counts["folded"] == {"added": 0, "removed": 0}, counts
    cards = len(doc["candidates"])
    assert counts["opened"]["added"] > 2000 * cards, counts  # a full-width row per candidate
    assert counts["opened"]["removed"] > 2000 * cards, counts
