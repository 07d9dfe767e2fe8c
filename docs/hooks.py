"""MkDocs hooks (``hooks:`` in mkdocs.yml): the reference pages' generated sections.

Each ``<!-- generated: NAME -->`` line of a page becomes ``reference.GENERATORS[NAME]()`` when
the page is read (``on_page_markdown``); after the build every generator must have been used
exactly once (``on_post_build``), so a page that loses its marker fails the build as surely as
a source the generator cannot describe. Before that, each ``\\|`` that GitHub needs inside a
code span of a table row becomes a plain ``|`` (``reference.table_code_pipes``). MkDocs puts
this file's folder on ``sys.path`` while it loads the file, which is how ``reference`` is found.
"""

from __future__ import annotations

from collections import Counter

import reference
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

_used: Counter[str] = Counter()


def on_pre_build(config: MkDocsConfig) -> None:
    _used.clear()  # `mkdocs serve` builds again in the same process


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    try:
        expanded, names = reference.expand(reference.table_code_pipes(markdown))
    except reference.DriftError as error:
        raise PluginError(f"{page.file.src_uri}: {error}") from error
    _used.update(names)
    return expanded


def on_post_build(config: MkDocsConfig) -> None:
    problems = [
        f"<!-- generated: {name} --> appears {_used[name]} times (once expected)"
        for name in reference.GENERATORS
        if _used[name] != 1
    ]
    if problems:
        raise PluginError("; ".join(problems))
