"""The live status page's three static files: the HTML shell, its style sheet and its script.

Why a script that builds the page from ``/status.json`` rather than HTML rendered here: one
renderer, the one that refreshes. It creates every node with ``createElement`` and puts every
string from the history in with ``textContent``, never ``innerHTML``, so a goal, a checkpoint
message or a gate id that holds markup stays text. The server's Content-Security-Policy allows
only these files (no inline script, no other origin), which stops injected markup twice.
"""

from __future__ import annotations

__all__ = ["PAGE_CSS", "PAGE_HTML", "PAGE_JS", "REFRESH_MS"]

REFRESH_MS = 2000

PAGE_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>loop-contract status</title>
<link rel="stylesheet" href="/status.css">
<script src="/status.js" defer></script>
</head>
<body>
<main id="app">
<p id="loading">Loading the status from /status.json…</p>
</main>
<footer><span id="updated">not loaded yet</span> · read-only · refreshes every
<span id="every"></span> s</footer>
</body>
</html>
"""

PAGE_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1b1b1b; background: #fafafa; }
main { max-width: 960px; margin: 0 auto; padding: 16px 24px 48px; }
footer { max-width: 960px; margin: 0 auto; padding: 0 24px 24px; color: #666; font-size: 13px; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 16px; margin: 22px 0 8px; text-transform: uppercase; letter-spacing: .04em;
     color: #555; }
.goal { font-size: 17px; margin: 0 0 8px; }
.state { display: inline-block; padding: 2px 10px; border-radius: 10px; background: #e0e0e0; }
.banner { background: #c62828; color: #fff; padding: 14px 18px; margin: 12px 0;
          border-radius: 6px; font-weight: 600; }
.banner code { background: #8e1b1b; padding: 2px 6px; border-radius: 4px; font-weight: 400; }
.parked { background: #1565c0; color: #fff; padding: 12px 18px; margin: 12px 0;
          border-radius: 6px; }
.stale { background: #6d4c41; color: #fff; padding: 8px 14px; border-radius: 6px; }
.bar { margin: 6px 0; display: grid; grid-template-columns: 110px 1fr 190px; gap: 12px;
       align-items: center; }
.track { height: 18px; background: #e0e0e0; border-radius: 4px; overflow: hidden; }
.fill { height: 100%; }
.level-ok { background: #2e7d32; }
.level-warn { background: #f9a825; }
.level-over { background: #6a1b9a; }
.level-none { background: #90a4ae; }
ul.dod { list-style: none; padding: 0; margin: 0; }
ul.dod li { padding: 3px 0; }
.done { color: #2e7d32; font-weight: 700; }
.open { color: #9e9e9e; font-weight: 700; }
table { border-collapse: collapse; }
td, th { text-align: left; padding: 3px 12px 3px 0; vertical-align: top; }
.problems { color: #6d4c41; }
"""

PAGE_JS = (
    """
"use strict";
const REFRESH_MS = @REFRESH_MS@;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function withId(node, id) {
  node.id = id;
  return node;
}

function section(title) {
  const box = el("section");
  box.appendChild(el("h2", "", title));
  return box;
}

function bars(doc) {
  const box = withId(section("Budget"), "bars");
  for (const bar of doc.page.bars) {
    const row = el("div", "bar");
    row.dataset.name = bar.name;
    row.dataset.level = bar.level;
    row.appendChild(el("span", "", bar.label));
    const track = el("div", "track");
    const fill = el("div", "fill level-" + bar.level);
    fill.style.width = Math.round(100 * bar.fraction) + "%";
    track.appendChild(fill);
    row.appendChild(track);
    row.appendChild(el("span", "", bar.text));
    box.appendChild(row);
  }
  return box;
}

function banner(doc) {
  const box = withId(el("div", "banner"), "checkpoint-banner");
  for (const cp of doc.checkpoints_pending) {
    const line = el("div");
    line.appendChild(el("span", "", "Waiting for a person: " + cp.id + ": " + (cp.message || "")));
    line.appendChild(el("span", "", " — approve: "));
    line.appendChild(el("code", "", cp.resolve));
    line.appendChild(el("span", "", " or refuse: "));
    line.appendChild(el("code", "", cp.deny));
    box.appendChild(line);
  }
  return box;
}

function parked(doc) {
  const box = withId(el("div", "parked"), "parked");
  const p = doc.parked;
  if (p.paused) {
    box.appendChild(el("div", "", "Paused by " + (p.paused.by || "someone") +
      (p.paused.reason ? ": " + p.paused.reason : "") + " — 'loop-contract resume' goes on"));
  }
  for (const b of p.barriers) {
    box.appendChild(el("div", "", "Parked " + b.text +
      (b.seconds_left !== null ? " (" + b.seconds_left + " s left)" : "")));
  }
  return box;
}

function dod(doc) {
  const box = section("Definition of done");
  const list = withId(el("ul", "dod"), "dod");
  for (const item of doc.items) {
    const li = el("li");
    const done = item.verified === "done";
    li.appendChild(el("span", done ? "done" : "open", done ? "✓ " : "○ "));
    li.appendChild(el("span", "", item.id + ": " + item.text));
    if (item.marked) li.appendChild(el("span", "", " (marked " + item.marked + ")"));
    list.appendChild(li);
  }
  box.appendChild(list);
  return box;
}

function verdict(doc) {
  const box = withId(section("Last verdict"), "verdict");
  const last = doc.last_verdict;
  if (!last) {
    box.appendChild(el("p", "", "none yet"));
    return box;
  }
  box.appendChild(el("p", "", last.verdict + " (exit " + last.exit_code + ", " +
    (last.trust || "") + ", " + (last.finished || "") + ")"));
  if (last.failing_gates.length) {
    const table = withId(el("table"), "failing-gates");
    for (const g of last.failing_gates) {
      const tr = el("tr");
      tr.appendChild(el("td", "", g.id));
      tr.appendChild(el("td", "", g.kind));
      tr.appendChild(el("td", "", g.status));
      tr.appendChild(el("td", "", g.detail || ""));
      table.appendChild(tr);
    }
    box.appendChild(table);
  }
  for (const r of last.reasons.slice(0, 8)) {
    box.appendChild(el("div", "", r.code + ": " + r.message));
  }
  return box;
}

function render(doc) {
  const app = withId(el("main"), "app");
  app.appendChild(el("h1", "", "Contract " + doc.contract.id + " (" + doc.contract.mode + ")"));
  const goal = withId(el("p", "goal", doc.contract.goal), "goal");
  app.appendChild(goal);
  const state = withId(el("span", "state", doc.page.loop), "loop-state");
  app.appendChild(state);
  if (doc.checkpoints_pending.length) app.appendChild(banner(doc));
  if (doc.parked.paused || doc.parked.barriers.length) app.appendChild(parked(doc));
  app.appendChild(bars(doc));
  app.appendChild(dod(doc));
  app.appendChild(verdict(doc));
  if (doc.history.problems.length) {
    const box = section("History");
    for (const p of doc.history.problems) box.appendChild(el("div", "problems", p));
    app.appendChild(box);
  }
  document.getElementById("app").replaceWith(app);
  document.getElementById("updated").textContent =
    "updated " + new Date().toLocaleTimeString() + " · " + doc.history.records + " records";
}

async function refresh() {
  try {
    const answer = await fetch("/status.json", {cache: "no-store"});
    if (!answer.ok) throw new Error("HTTP " + answer.status);
    render(await answer.json());
  } catch (err) {
    const why = "Cannot read the status (" + err.message + "); retrying";
    const note = withId(el("div", "stale", why), "stale");
    const old = document.getElementById("stale");
    if (old) old.replaceWith(note); else document.getElementById("app").prepend(note);
  }
}

document.getElementById("every").textContent = String(REFRESH_MS / 1000);
refresh();
setInterval(refresh, REFRESH_MS);
"""
).replace("@REFRESH_MS@", str(REFRESH_MS))
