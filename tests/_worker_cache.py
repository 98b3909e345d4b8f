"""Per-worker persistent compilation cache for parallel test runs (pytest-xdist), used by conftest.py.

Without a size limit JAX writes its persistent compilation cache without locking or atomic renames
(``jax._src.lru_cache.LRUCache.put`` writes the entry in place), so a worker could read an entry that another
worker is still writing. The package now sets a limit, which switches JAX to its locked mode
(:mod:`attnphase.xla_cache`), so one shared directory would be safe as well; each worker still gets its own
directory beside the configured one, so that workers never wait on each other's lock (every read and write of
a locked cache takes the one lock of its directory).

The tests never write under the home folder: unless the environment names a cache (``ATTNPHASE_XLA_CACHE``,
including ``off``), the base directory is a folder of the system's temporary directory
(:func:`suite_cache_base`), kept between runs so that a second run loads the programs the first compiled.
"""
from __future__ import annotations

import os
import tempfile


def worker_cache_dir(base: str | None, worker: str | None) -> str | None:
    """The persistent-cache directory a test process uses: ``base`` outside xdist (``worker`` None or empty)
    or when the cache is off (``base`` None), else ``base-worker`` (e.g. ``~/.cache/attnphase/xla-gw0``)."""
    if base is None or not worker:
        return base
    return f"{base.rstrip(os.sep)}-{worker}"


def suite_cache_base(environ: dict | None = None, cache_env: str = "ATTNPHASE_XLA_CACHE") -> str | None:
    """The base cache directory of a test run: the one the environment names (``off``: None), else
    ``<temporary directory>/attnphase-test-xla-<user id>`` — never the home folder's default."""
    env = os.environ if environ is None else environ
    if cache_env in env:
        path = env[cache_env]
        return None if path.lower() == "off" else path
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), f"attnphase-test-xla-{uid}")
