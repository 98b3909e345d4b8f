"""The package source of an earlier commit, for benchmarks that compare the code now with the code then in the
same run (bench_engine.py, bench_xla_cache.py)."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def src_tree(rev: str, where: Path) -> Path:
    """The ``src`` directory of commit ``rev``, extracted under ``where`` (``git archive``)."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True).stdout
    path = where / "archive.tar"
    path.write_bytes(data)
    with tarfile.open(path) as tar:
        tar.extractall(where, filter="data")
    return where / "src"
