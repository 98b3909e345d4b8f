"""Per-worker persistent compilation cache for parallel test runs (pytest-xdist), used by conftest.py.

Without a size limit JAX writes its persistent compilation cache without locking or atomic renames
(``jax._src.lru_cache.LRUCache.put`` writes the entry in place), so a worker could read an entry that another
worker is still writing. The package now sets a limit, which switches JAX to its locked mode
(:mod:`attnphase.xla_cache`), so one shared directory would be safe as well; each worker still gets its own
directory beside the configured one, so that workers never wait on each other's lock (every read and write of
a locked cache takes the one lock of its directory).
"""
from __future__ import annotations

import os


def worker_cache_dir(base: str | None, worker: str | None) -> str | None:
    """The persistent-cache directory a test process uses: ``base`` outside xdist (``worker`` None or empty)
    or when the cache is off (``base`` None), else ``base-worker`` (e.g. ``~/.cache/attnphase/xla-gw0``)."""
    if base is None or not worker:
        return base
    return f"{base.rstrip(os.sep)}-{worker}"
