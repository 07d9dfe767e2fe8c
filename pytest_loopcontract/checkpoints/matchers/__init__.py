"""Command and text matchers: one strategy per module, each a function behind the protocols of
:mod:`pytest_loopcontract.checkpoints.model` (``CommandMatcher``: a normalised command in its
context; ``TextMatcher``: an added diff line or a path), returning the hits that need a person.

``git`` (push, force push, protected branches), ``publish`` (npm, PyPI, crates, gems, images,
GitHub releases), ``deletion`` (recursive ``rm`` outside the workspace), ``sql`` (DROP,
TRUNCATE, DELETE without WHERE), ``files`` (``.env`` and credential files), ``network``
(payment APIs, ``curl | sh``) and ``privilege`` (sudo and friends). Secrets in a diff live in
:mod:`pytest_loopcontract.checkpoints.secrets`. The table that names them is
:mod:`pytest_loopcontract.checkpoints.table`. All pure.
"""
