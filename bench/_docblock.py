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
