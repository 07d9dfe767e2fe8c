"""Metric sources for measured gates, one module per source behind one protocol.

A measured gate compares one number with a threshold; this package finds that number.
:mod:`.protocol` says what a source is given (:class:`~.protocol.SensorContext`) and what it
answers (:class:`~.protocol.Observation`); :mod:`.registry` maps metric prefixes to the
built-in sources (``coverage``, ``duration``, ``tests``, ``metric``, ``sensor``,
``benchmark``), each in its own module, and :func:`~.registry.observe` measures a gate. A
missing report, a broken sensor command or a diff without executable lines never turns into
a number.
"""
