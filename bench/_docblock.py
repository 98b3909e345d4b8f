"""Generated blocks in the docs: the text between ``<!-- marker:begin ... -->`` and ``<!-- marker:end -->``
is replaced by a bench script's latest output (appended at the end of the page the first time)."""

from __future__ import annotations

import re
from pathlib import Path


def write_block(path: Path, marker: str, text: str) -> None:
    """Replace the ``marker`` block of ``path`` by ``text`` (which carries its own begin/end comments)."""
    doc = path.read_text() if path.exists() else ""
    pat = re.compile(rf"<!-- {marker}:begin.*?<!-- {marker}:end -->", re.S)
    doc = pat.sub(lambda m: text, doc) if pat.search(doc) else doc.rstrip() + "\n\n" + text + "\n"
    path.write_text(doc)


def append_to_section(path: Path, title: str, body: str) -> None:
    """Put ``body`` at the end of the section ``title`` of ``path`` (runs in order); a section not there
    yet is made just before the page's last one (docs/notes/benchmarks-log.md keeps bench_engine's section last)."""
    doc = path.read_text()
    if title not in doc:
        last = doc.rindex("\n## ") + 1
        doc = doc[:last] + title + "\n\n" + doc[last:]
    end = doc.index("\n## ", doc.index(title)) + 1      # the section's end: the next section
    path.write_text(doc[:end] + body + doc[end:])
