"""Headless Chromium for tests of HTML pages: find the binary, run it with a throw-away
profile, read the PNG screenshots it writes (chunks and decoded pixels)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "FLAGS",
    "TIMEOUT",
    "count_colours",
    "find_chromium",
    "png_chunks",
    "png_pixels",
    "run_chromium",
]

TIMEOUT = 120
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def find_chromium() -> str | None:
    """``LOOP_CONTRACT_CHROMIUM`` if set, else ``chromium`` on PATH, else /usr/bin/chromium."""
    explicit = os.environ.get("LOOP_CONTRACT_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    if found := shutil.which("chromium"):
        return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


def require_chromium() -> str:
    """The browser, or a skip saying how to get it; a failure instead under
    ``LOOP_CONTRACT_REQUIRE_CHROMIUM=1`` (CI installs it, so a missing one is a fault there)."""
    import pytest

    found = find_chromium()
    if found is None:
        message = "chromium is not installed (Debian package: chromium)"
        if os.environ.get("LOOP_CONTRACT_REQUIRE_CHROMIUM") == "1":
            pytest.fail(message + "; LOOP_CONTRACT_REQUIRE_CHROMIUM=1 requires it")
        pytest.skip(message)
    return found


def run_chromium(chromium: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    proc = subprocess.run(
        [chromium, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def png_chunks(data: bytes, kind: bytes) -> list[bytes]:
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        if data[pos + 4 : pos + 8] == kind:
            chunks.append(data[pos + 8 : pos + 8 + length])
        pos += 12 + length
    return chunks


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows) of an 8-bit RGB or RGBA PNG, each row its unfiltered bytes
    (3 or 4 per pixel): enough to count the pixels of a colour in a screenshot."""
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert depth == 8 and colour in (2, 6), f"PNG depth {depth} colour type {colour}"
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(png_chunks(data, b"IDAT")))
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    pos = 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1 : pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = prev[i]
            corner = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                line[i] = (line[i] + _paeth(left, up, corner)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def count_colours(png: Path, colours: Mapping[str, tuple[int, int, int]]) -> dict[str, int]:
    """How many pixels of a screenshot have exactly each named RGB colour."""
    width, _, rows = png_pixels(png.read_bytes())
    bpp = len(rows[0]) // width
    wanted = {bytes(rgb): name for name, rgb in colours.items()}
    counts = dict.fromkeys(colours, 0)
    for row in rows:
        for x in range(0, len(row), bpp):
            name = wanted.get(row[x : x + 3])
            if name is not None:
                counts[name] += 1
    return counts
