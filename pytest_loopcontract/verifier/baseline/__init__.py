"""The baseline: taking it (:mod:`.take`), what ``baseline.json`` holds (:mod:`.record`), how
it stores the test sets (:mod:`.format`) and what a refused one says (:mod:`.messages`).

This file imports nothing: the in-process plugin, the hooks and ``verify`` read a baseline on
every run and load :mod:`.record` alone, never the taking side and its scratch checkouts.
"""
