"""Lessons: one rule per failed candidate, written from the deciding gate's own evidence.

Why lessons exist: a seat that failed a gate in one run should not walk into the same wall in
the next. So when a candidate fails, the verdict's *deciding* gate is turned into a short rule
("keep metric.ops_per_tick <= 4 — ..."), stored under the task's dotted domain, and the next
session's prompt carries the rules that apply to its domain.

Why they are built the way they are:

* **Verifier evidence only.** A lesson ends up in another agent's prompt, so anything a
  candidate could have written into it is a prompt-injection channel: failure messages,
  ``longrepr``, captured output, a command's ``output_tail``, a tamper finding's ``message``
  (which quotes the candidate's added line), judge rationales, a seat's report. None of those
  are read. A lesson is built only from fields the verifier itself produced: gate ids, kinds
  and statuses, metric names, observed numbers, operators, thresholds and units, node ids and
  outcomes, exit codes, finding codes and paths, reason codes. Node ids and paths can still
  carry text a candidate chose (a new test file, a parametrize id), so each is squeezed through
  :func:`_token`: a short run of path-and-identifier characters, everything else replaced by
  ``?``. Every text field is then one line of bounded length.
* **One deciding gate, in rank order.** Tampering outranks everything (a run that was
  interfered with proves nothing else), then the first failing hard gate, then the first
  failing measured gate; a verdict that failed or errored with no failing gate gets an
  ``error`` lesson from its reason codes. One lesson per failed candidate keeps the prompt
  short and the cause unambiguous.
* **Stable ids.** ``id`` is the SHA-256 of domain, gate, kind and rule. Rules are worded from
  the stable parts of a gate (its id, metric, operator, threshold, the finding's path), and the
  run-specific numbers go into ``evidence``; so the same wall hit again in a later run has the
  same id, and the store counts it (``seen``) instead of repeating it.
* **Domain, not similarity.** Lessons are ranked by the dotted domain path: the exact domain,
  then its ancestors and descendants (nearer first), never siblings; then by tag overlap, then
  newest first. ``python.numeric`` lessons apply to ``python.numeric.rolling`` and vice versa;
  ``python.text`` lessons do not.
* **A hard character cap.** :func:`prompt_block` never exceeds its budget and says how many
  lessons the cap dropped, so a prompt never silently loses rules.

The seat whose candidate failed is kept (the route table needs it) but never printed into a
prompt: a lesson is about the task, not about who failed it.

The package, one job a module: :mod:`.model` (the draft and the record, its id and time stamp),
:mod:`.evidence` (verifier fields made inert), :mod:`.drafts` (one rule per kind of failed gate),
:mod:`.learn` (the deciding gate of a verdict, the lesson), :mod:`.ranking` (by domain),
:mod:`.prompt` (the capped prompt block). Pure: stdlib only, no I/O, nothing else from the
package.
"""
