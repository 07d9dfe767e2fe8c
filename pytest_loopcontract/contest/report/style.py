"""The HTML report's style sheet and Content-Security-Policy.

The page is one self-contained file, so its CSS is inline,
and the policy that forbids loading anything (no script, no external URL, no form target) is
the last guard if an escape were ever missed; both are constants a reviewer should find and
read on their own, not between the functions that build the page.
"""

from __future__ import annotations

__all__ = ["CSP", "CSS"]

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'"
)

CSS = """
:root{color-scheme:light;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;
--green:#1a7f37;--red:#cf222e}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1280px;padding:24px 32px;color:var(--fg);background:#fff;
font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
h1{font-size:22px;margin:0 0 6px}
h2{font-size:17px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:16px 0 4px}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--soft);
padding:1px 4px;border-radius:4px;overflow-wrap:break-word}
.pill{display:inline-block;padding:2px 10px;border-radius:999px;font-weight:600;font-size:13px}
.status-awaiting_human{background:#fff8c5}.status-decided{background:#dafbe1}
.status-no_winner,.status-stopped{background:#ffebe9}.status-escalated{background:#fbefff}
.meta{color:var(--muted);margin:4px 0}
.goal{font-size:15px;margin:10px 0 4px}
.kind{display:inline-block;font-size:11px;padding:0 6px;border-radius:4px;
border:1px solid var(--line);color:var(--muted);white-space:nowrap}
.kind.scripted{border-color:#bf8700;color:#7d4e00;background:#fff8c5}
table{border-collapse:collapse;margin:6px 0 10px}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:var(--green);font-weight:600}.fail,.error,.missing{color:var(--red);font-weight:600}
tr.winner td{background:#dafbe1}
#decision{border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:var(--soft)}
#winner{font-size:18px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(400px,1fr));gap:12px}
.candidate{border:1px solid var(--line);border-radius:8px;padding:8px 12px;overflow-x:auto}
.candidate table{width:100%}
.candidate h3{margin-top:0}
.why{white-space:pre-wrap;overflow-wrap:anywhere;color:var(--muted)}
table.heat td.cell{text-align:center;min-width:52px;font-variant-numeric:tabular-nums;cursor:help}
table.heat td.self{background:var(--soft);color:#9198a1;text-align:center}
table.heat td.none{text-align:center;color:#9198a1}
table.heat tr.overall td{border-top:2px solid #9198a1;font-weight:600}
.legend{display:flex;gap:2px;align-items:center;font-size:12px;color:var(--muted)}
.legend span{display:inline-block;width:22px;text-align:center}
.bracket{display:flex;gap:44px;align-items:flex-start;overflow-x:auto;padding:6px 2px 12px}
.round{display:flex;flex-direction:column;gap:8px;min-width:170px;max-width:240px}
.round h3{margin:0;font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.round .why{font-size:12px;margin:0 0 4px}
.node{position:relative;display:flex;justify-content:space-between;gap:10px;padding:5px 9px;
border:1px solid var(--line);border-radius:6px;background:#fff;overflow-wrap:anywhere}
.node .score{font-variant-numeric:tabular-nums;color:var(--muted);white-space:nowrap}
.round:not(:last-child) .node:not(.out)::after{content:"\\2192";position:absolute;right:-30px;
top:50%;transform:translateY(-50%);color:#9198a1;font-size:16px}
.node.out{background:var(--soft);color:#9198a1;border-style:dashed}
.node.out .name{text-decoration:line-through}
.node.win{border:2px solid var(--green);background:#dafbe1;font-weight:700}
ul.plain{padding-left:18px;margin:4px 0}
footer{margin-top:28px;padding-top:8px;border-top:1px solid var(--line);color:var(--muted)}
"""
