"""Checkpoints: actions an unattended agent may not take until a named person clears them.

The parts, each in its own module:

* ``model``: :class:`Command`, :class:`Pattern`, :class:`Hit`, :class:`Match` and the two matcher
  protocols every strategy follows.
* ``shell/``: the POSIX lexer, grouping into pipelines, and the normaliser that sees through
  ``bash -c``, ``env``, ``sudo``, substitutions and the rest (``parse_command``,
  ``split_command``), with the shell's vocabulary as data.
* ``matchers/``: one strategy per module (git, publish, deletion, sql, files, network,
  privilege); ``secrets`` finds and redacts secrets.
* ``table``: the built-in patterns as data; ``patterns``: that table under a contract's
  ``checkpoints`` block.
* ``scan``: a command, a diff (read by ``diff``, with ``scripts`` for files that run as shell)
  or paths against the patterns, into matches.
* ``clearance``: a person's decision on a match, recorded in the history; ``gate``: the
  candidate's diff through the checkpoints, as verdict reasons.

Everything above ``clearance`` is pure (``scan`` only reads the home directory and the current
directory, for defaults); ``clearance`` and ``gate`` write the history.
"""
