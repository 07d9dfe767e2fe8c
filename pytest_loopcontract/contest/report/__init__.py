"""The contest reports: one run result document in, a terminal page, a markdown comment and an
HTML page out.

Why it is built this way:

* **One input.** Every renderer reads only the run result document (``result.json``, shape in
  ``schemas/contest_result.schema.json``, checked by :mod:`.schema`), through one pure data
  model (:mod:`.view`). What a person reads in a terminal (:mod:`.terminal`), a pull-request
  comment (:mod:`.markdown`) and the HTML page (:mod:`.html`) can therefore not disagree, and
  any past run can be rendered again from its document.
* **Seat text is data.** Test names, failure messages, rationales, branch and seat names come
  from programs the contest does not trust. Each renderer passes every such string through
  :mod:`.markup` for its medium, and cuts it to a length, so a seat can neither inject markup
  nor flood a report.
* **Say what a seat is.** A scripted seat is a deterministic local program; it is labelled
  "scripted, not a model" in every format, so nobody reads a demo as a model's result.
* **Fit the medium.** A pull-request comment has a hard size limit, so the markdown drops
  detail sections (least useful first) until it fits and then says where the full report is.
  The HTML page is one self-contained file: inline CSS, no script, no external URL, and a
  Content-Security-Policy that forbids loading anything, so it opens offline from an artifact
  and stays inert even if an escape were missed.
* **Pure.** Rendering is string building with no I/O (the page's CSS and policy are in
  :mod:`.style`); :func:`.html.write_html` is the one writer.
"""
