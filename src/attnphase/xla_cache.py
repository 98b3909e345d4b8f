"""JAX's persistent compilation cache for the package's compiled programs, shared safely between processes.

Every jit-compiled program of the package (the engine's map :func:`.theory.engine._compiled_map`, the constrained
map, the split-rule program, the Newton kernel, the finite-size programs, ``simulate``'s training program) calls
:func:`enable` before its first compilation, so a fresh process (a CLI call, a sweep or diagram worker, a test
worker) loads the executables an earlier process compiled instead of compiling them again (measured on the
2-core VM: a fresh process solving one 4096 × 4 point, 25.8 → 9.9 s at L = 2 and 58.5 → 22.0 s at L = 3;
docs/notes/benchmarks-log.md, "Persistent compilation cache in every process").

What :func:`enable` changes (global JAX settings of this process, once; nothing else of the package does):

- ``jax_compilation_cache_dir`` := the directory :data:`CACHE_ENV` names (default ``~/.cache/attnphase/xla``;
  ``off``: no cache, nothing changed);
- ``jax_compilation_cache_max_size`` := :data:`MAX_BYTES` (a size limit), which switches JAX to its locked
  mode (below); a limit set by the user before is kept.

What it does not change: results (the cache key is the compiled program itself: its HLO, the compile options,
the backend and JAX's version; ``jax._src.cache_key.get``), the threshold
``jax_persistent_cache_min_compile_time_secs`` (JAX's default, 1 s: programs that compile faster are not
written; lowering it to 0 was measured and gave no gain: docs/notes/2026-12-05-theory-general.md, "Persistent compilation cache
in every process"),
and nothing at all when the user configured a cache directory (``jax_compilation_cache_dir`` or the
``JAX_COMPILATION_CACHE_DIR`` variable): then the user's cache and settings are used as they are.

Why the size limit — safety across processes, from JAX 0.10.2's source (``jax/_src/lru_cache.py``,
``LRUCache``, the only file cache ``jax/_src/compilation_cache.get_file_cache`` builds):

- without a limit (``max_size == -1``, JAX's default) ``LRUCache.put`` checks ``cache_path.exists()`` and then
  writes the entry in place (``cache_path.write_bytes``), neither atomically (no temporary file + rename) nor
  under a lock, and ``LRUCache.get`` reads any file that exists. Processes sharing the directory (Dask or
  process-pool workers of a sweep, parallel CLI calls) can therefore read an entry another process is still
  writing, or write the same entry at once (both see it missing; the two byte strings differ, the entry
  starts with the compile time). A truncated entry fails to decompress and ``compiler._cache_read`` turns the
  exception into a warning and a recompilation; an interleaved one could reach XLA's deserializer;
- with a limit (``max_size > 0``) ``LRUCache.__init__`` creates ``filelock.FileLock(<dir>/.lockfile)``
  (an OS lock, ``fcntl.flock``, on a local file system) and BOTH ``get`` and ``put`` (its exists-check, the
  eviction and the write) run under it (``lock.acquire(timeout=10 s)``; a timeout raises, which
  ``compiler._cache_read``/``_cache_write`` turn into a warning and a compilation without the cache). So no
  process reads an entry while another writes it, and each entry is written once. It needs the ``filelock``
  package (a dependency of attnphase); without it :func:`enable` leaves the cache off rather than unlocked.

Locked mode keeps an access-time file ``<key>-atime`` beside each ``<key>-cache`` entry, and its eviction
(``LRUCache._evict_if_needed``, on every write) fails on an entry without one. Entries written in the unlocked
mode (this package before, or another program) have none, so :func:`enable` gives them one, under the same
lock (:func:`adopt_entries`). A program that writes the same directory in the unlocked mode at the same time
is outside this protection (set :data:`CACHE_ENV` to a directory of its own for such a program).

The test suite keeps one directory per pytest-xdist worker anyway (``tests/_worker_cache.py``).
"""

from __future__ import annotations

import enum
import logging
import os
import warnings
from functools import lru_cache
from pathlib import Path

import jax

CACHE_ENV = "ATTNPHASE_XLA_CACHE"
"""Directory of JAX's persistent compilation cache used by the package (default ``~/.cache/attnphase/xla``;
``off`` disables it). A fresh process that solves one L = 2 point spends ~13 s compiling; with the cache filled
it reads the compiled programs in ~0.7 s instead (JAX still traces and lowers them to compute the cache key,
~5 s there; docs/notes/benchmarks-log.md, "Persistent compilation cache in every process"). The engine's traced programs
are kept in its subfolder ``exported`` (:mod:`attnphase.exported_programs`), so that tracing is skipped too."""

MAX_BYTES = 4 * 2 ** 30
"""Size limit of the cache directory (bytes): least recently used entries are deleted beyond it. Setting a
limit is what makes JAX lock the cache (module docstring); at ~1–15 MB per program it is far above what the
package writes (the development machine's cache after weeks of tests and benchmarks: ~70 MB)."""

LOCK_NAME = ".lockfile"
"""The lock file ``jax._src.lru_cache.LRUCache`` creates in the cache directory (``self.path / ".lockfile"``)."""
LOCK_TIMEOUT_S = 10.0
"""As JAX's ``LRUCache`` (``lock_timeout_secs=10``)."""
_CACHE_SUFFIX, _ATIME_SUFFIX = "-cache", "-atime"

log = logging.getLogger(__name__)


class CacheMode(enum.Enum):
    """How this process's persistent compilation cache is set up (:func:`enable`)."""
    LOCKED = "locked"            # the package's directory, size limit set: JAX's locked LRU mode
    USER = "user"                # the user configured a cache directory; left as it is
    OFF = "off"                  # CACHE_ENV says off
    UNAVAILABLE = "unavailable"  # no filelock package or the directory cannot be created: no cache


def cache_setting() -> str | None:
    """The directory :data:`CACHE_ENV` asks for (its default when unset), or None when it says ``off``."""
    path = os.environ.get(CACHE_ENV, os.path.join(os.path.expanduser("~"), ".cache", "attnphase", "xla"))
    return None if path.lower() == "off" else path


def adopt_entries(path: str | os.PathLike, timeout: float = LOCK_TIMEOUT_S) -> int:
    """Give every entry of the cache directory ``path`` that has no access-time file one (its modification
    time), under the cache's lock, so that the locked mode's eviction can account for entries written in the
    unlocked mode (module docstring). Returns the number adopted (0 also when the lock was not obtained)."""
    import filelock

    d = Path(path)
    try:
        with filelock.FileLock(d / LOCK_NAME, timeout=timeout):
            n = 0
            for entry in d.glob(f"*{_CACHE_SUFFIX}"):
                atime = d / (entry.name.removesuffix(_CACHE_SUFFIX) + _ATIME_SUFFIX)
                if not atime.exists():
                    atime.write_bytes(entry.stat().st_mtime_ns.to_bytes(8, "little"))
                    n += 1
            return n
    except filelock.Timeout:
        log.warning("compilation cache %s: lock not obtained; entries without access times not adopted", d)
        return 0


@lru_cache(maxsize=1)
def enable() -> CacheMode:
    """Point JAX's persistent compilation cache at :data:`CACHE_ENV`'s directory in the locked mode, once per
    process (module docstring: what it changes and why), unless the user configured a cache directory. Call
    it before a program of the package is first compiled; later calls return the first call's mode."""
    if jax.config.jax_compilation_cache_dir:
        return CacheMode.USER
    path = cache_setting()
    if path is None:
        return CacheMode.OFF
    try:
        import filelock  # noqa: F401  (JAX's locked mode needs it; never fall back to the unlocked mode)
    except ImportError:
        warnings.warn("attnphase: the 'filelock' package is missing, so the persistent compilation cache is "
                      "off (every process compiles its programs); install filelock to enable it",
                      RuntimeWarning, stacklevel=2)
        return CacheMode.UNAVAILABLE
    try:
        os.makedirs(path, exist_ok=True)
        adopt_entries(path)
    except OSError:
        return CacheMode.UNAVAILABLE     # e.g. a read-only home: compile in every process
    if jax.config.jax_compilation_cache_max_size == -1:      # JAX's default: no limit, no lock
        jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    jax.config.update("jax_compilation_cache_dir", path)
    return CacheMode.LOCKED
