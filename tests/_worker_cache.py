"""Per-worker persistent compilation cache for parallel test runs (pytest-xdist), used by conftest.py.

JAX writes its persistent compilation cache without locking or atomic renames when no size limit is set
(``jax._src.lru_cache.LRUCache.put`` writes the entry in place), so a worker could read an entry that another
worker is still writing. Each worker therefore gets its own directory beside the configured one.
"""
from __future__ import annotations

import os


def worker_cache_dir(base: str | None, worker: str | None) -> str | None:
    """The persistent-cache directory a test process uses: ``base`` outside xdist (``worker`` None or empty)
    or when the cache is off (``base`` None), else ``base-worker`` (e.g. ``~/.cache/attnphase/xla-gw0``)."""
    if base is None or not worker:
        return base
    return f"{base.rstrip(os.sep)}-{worker}"
