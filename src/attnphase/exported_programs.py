"""Traced programs kept on disk (``jax.export``), so that a fresh process does not trace them again.

Why: JAX's persistent compilation cache (:mod:`.xla_cache`) keeps the compiled executables, but its key is the
lowered program, so every process still traces and lowers each program before it can look the executable up.
For the engine's map (one vmapped, unrolled multi-start Newton per QMC sample) tracing dominates a fresh
process: ~1–2 s per program and row/point-count shape, six programs for one point (docs/notes/2026-12-05-theory-general.md,
"Fresh-process latency (issue 11, helper hA)").

Used by the engine's map (``theory.engine._compiled_map``), the constrained map (``theory.constrained``) and
the split rule's program (``theory.split_xla``, concrete sizes).

What :class:`StoredProgram` does: on its first call it looks for the program's StableHLO, exported with
SYMBOLIC sizes for the axes the caller names (rows R, scrambles S, QMC points N: one export serves every row
count and every QMC size), in ``<compilation cache directory>/exported/<key>.bin``; if there is none it traces
the program once with those symbolic sizes, writes it (atomically: a temporary file renamed into place) and
uses it. Calls then go through ``jax.jit(exported.call)``: no tracing of the program; lowering inlines the
stored module and refines its symbolic sizes to the call's (~0.1–0.2 s per program and shape, the price of one
entry for all sizes); the executable itself comes from JAX's persistent cache as before.

Robustness:

- the key (:func:`entry_key`) is a SHA-256 of the program's name and static arguments, the argument tree,
  shapes (symbolic and concrete) and dtypes, a digest of every ``.py`` file of the package
  (:func:`source_digest`: any change of the source invalidates every entry), the versions of JAX, jaxlib and
  numpy, the backend, and the JAX settings that change tracing (x64, default matmul precision, dtype
  promotion);
- an entry carries the SHA-256 of its payload; a missing, truncated, altered or undeserializable entry, an
  export that fails, or an exported call that fails (e.g. arguments of another dtype) falls back to tracing
  the program as before (:attr:`Source.TRACED`; a bad entry is replaced by a new export). The stored program
  is the traced program's StableHLO: the numbers are the traced ones, bit for bit (tests/test_exported_programs.py:
  the engine's map across fresh processes, the rank-2 free map, the constrained map, a split-rule solve);
- ``ATTNPHASE_EXPORTED=off`` (:data:`ENV`), or the compilation cache set ``off``, or no ``flatbuffers``
  package (JAX's serialization needs it): every program is traced as before.

The store keeps at most :data:`MAX_ENTRIES` entries (0.1–0.25 MB each); the oldest are deleted beyond it.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import os
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import jax
import numpy as np
from jax import export as jax_export

from . import xla_cache

ENV = "ATTNPHASE_EXPORTED"
"""``off``: no stored programs (every program traced in every process, as before)."""
SUBDIR = "exported"
"""Folder of the store inside the compilation cache directory (:func:`xla_cache.cache_setting`)."""
MAGIC = b"attnphase-exported-1\n"
"""First bytes of an entry (then the payload's SHA-256, 32 bytes, then the payload)."""
MAX_ENTRIES = 512
"""Entries kept; the oldest (by modification time) are deleted beyond it when a new one is written."""

log = logging.getLogger(__name__)


class Source(enum.Enum):
    """Where a :class:`StoredProgram`'s program came from in this process."""
    PENDING = "pending"      # not called yet
    LOADED = "loaded"        # read from the store: not traced
    EXPORTED = "exported"    # traced once with symbolic sizes and written to the store
    TRACED = "traced"        # the plain jit function (store off or unavailable, or a fallback)


class CorruptEntry(ValueError):
    """A store entry that is not what :func:`write_entry` writes (wrong header or checksum)."""


@lru_cache(maxsize=1)
def source_digest() -> str:
    """SHA-256 over the relative paths and contents of every ``.py`` file of the package (read once)."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()


def store_dir() -> Path | None:
    """The store's folder, or None where stored programs are off (:data:`ENV`, the cache set ``off``, or no
    ``flatbuffers``)."""
    if os.environ.get(ENV, "").strip().lower() == "off":
        return None
    base = xla_cache.cache_setting()
    if base is None:
        return None
    try:
        import flatbuffers  # noqa: F401  (jax.export's serialization needs it)
    except ImportError:
        return None
    return Path(base) / SUBDIR


def symbolic_specs(args: Sequence[Any], axes: Sequence[Any]) -> tuple:
    """``jax.ShapeDtypeStruct`` specs for ``args`` (a tuple of pytrees) where axis j of every leaf of
    ``args[i]`` is the symbolic size ``axes[i][j]`` (a name) or, for None, the argument's own size
    (``axes[i]`` None: every axis its own size). Names shared between arguments are one symbolic size."""
    names = sorted({a for ax in axes if ax is not None for a in ax if a is not None})
    dims = dict(zip(names, jax_export.symbolic_shape(", ".join(names)))) if names else {}

    def spec(leaf, ax):
        ax = (None,) * np.ndim(leaf) if ax is None else ax
        shape = tuple(dims[a] if a is not None else n for a, n in zip(ax, np.shape(leaf), strict=True))
        return jax.ShapeDtypeStruct(shape, leaf.dtype)

    return tuple(jax.tree_util.tree_map(lambda leaf, ax=ax: spec(leaf, ax), arg) for arg, ax in zip(args, axes))


def entry_key(name: str, static: Any, specs: tuple) -> str:
    """The entry's key: everything the traced program depends on (module docstring)."""
    import jaxlib

    leaves, tree = jax.tree_util.tree_flatten(specs)
    parts = (name, repr(static), str(tree), [(str(s.shape), str(s.dtype)) for s in leaves], source_digest(),
             jax.__version__, jaxlib.__version__, np.__version__, jax.default_backend(),
             bool(jax.config.jax_enable_x64), str(jax.config.jax_default_matmul_precision),
             str(jax.config.jax_numpy_dtype_promotion))
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def read_entry(path: Path) -> "jax_export.Exported | None":
    """The exported program stored at ``path``; None if there is none; :class:`CorruptEntry` (or the
    deserializer's own error) if the file is not an intact entry."""
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        return None
    head = len(MAGIC) + 32
    if len(blob) < head or not blob.startswith(MAGIC):
        raise CorruptEntry(f"{path}: not an entry")
    payload = blob[head:]
    if hashlib.sha256(payload).digest() != blob[len(MAGIC):head]:
        raise CorruptEntry(f"{path}: checksum mismatch")
    return jax_export.deserialize(bytearray(payload))


def write_entry(path: Path, exported: "jax_export.Exported") -> None:
    """Write ``exported`` at ``path`` atomically (temporary file in the same folder, renamed into place), then
    delete the oldest entries beyond :data:`MAX_ENTRIES`."""
    payload = bytes(exported.serialize())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".bin")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + hashlib.sha256(payload).digest() + payload)
        os.chmod(tmp, 0o644)              # as JAX's cache entries (mkstemp makes it private)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _prune(path.parent)


def _prune(folder: Path) -> None:
    entries = []
    for f in folder.glob("*.bin"):
        try:
            entries.append((f.stat().st_mtime_ns, f))
        except FileNotFoundError:         # deleted by another process meanwhile
            pass
    for _, f in sorted(entries)[:max(0, len(entries) - MAX_ENTRIES)]:
        f.unlink(missing_ok=True)


class StoredProgram:
    """A jit-compiled function ``fn`` whose traced program is kept in the store (module docstring).

    ``name`` and ``static`` (hashable, e.g. the model structure) identify the program besides its arguments;
    ``axes``: per positional argument, a tuple naming each axis that may change size between calls (None for
    a fixed one), e.g. ``("R", None)`` for rows × state; an argument that is None stays None. Called like
    ``fn``, returns what ``fn`` returns. One entry per argument structure, fixed sizes and dtypes (a call with
    another fixed size, e.g. the split rule's number of lines, loads or exports its own entry; only the named
    axes share one). ``source`` says where the program of the latest call came from (:class:`Source`)."""

    def __init__(self, name: str, fn: Callable, static: Any, axes: Sequence[Any]):
        self.name, self.fn, self.static, self.axes = name, fn, static, tuple(axes)
        self.source = Source.PENDING
        self._calls: dict[Any, tuple[Callable | None, Source]] = {}   # concrete signature -> (call, source)
        self._by_key: dict[str, tuple[Callable | None, Source]] = {}  # entry key -> (call, source)
        self._lock = threading.Lock()

    def __call__(self, *args):
        leaves, tree = jax.tree_util.tree_flatten(args)
        sig = (tree, tuple((np.shape(v), str(getattr(v, "dtype", type(v)))) for v in leaves))
        entry = self._calls.get(sig)
        if entry is None:
            with self._lock:
                entry = self._calls.get(sig)
                if entry is None:
                    entry = self._calls[sig] = self._prepare(args)
        call, self.source = entry
        if call is not None:
            try:
                return call(*leaves)
            except Exception as exc:           # noqa: BLE001 -- any failure: trace as before
                log.warning("stored program %s failed (%s: %s); tracing it instead", self.name,
                            type(exc).__name__, exc)
                self._calls[sig] = (None, Source.TRACED)
                self.source = Source.TRACED
        return self.fn(*args)

    def _prepare(self, args: tuple) -> tuple[Callable | None, Source]:
        """The call for ``args``'s structure, fixed sizes and dtypes: the entry's (shared by every call with
        the same key), loaded from the store or exported and stored; (None, TRACED) on any failure."""
        xla_cache.enable()                         # the executables still come from JAX's persistent cache
        folder = store_dir()
        if folder is None or len(args) != len(self.axes):
            return None, Source.TRACED
        try:
            specs = symbolic_specs(args, self.axes)
            key = entry_key(self.name, self.static, specs)
        except Exception as exc:                   # noqa: BLE001
            log.warning("stored program %s: no key (%s: %s)", self.name, type(exc).__name__, exc)
            return None, Source.TRACED
        if key not in self._by_key:
            self._by_key[key] = self._load_or_export(folder / f"{key}.bin", specs)
        return self._by_key[key]

    def _load_or_export(self, path: Path, specs: tuple) -> tuple[Callable | None, Source]:
        exported, source = None, Source.LOADED
        try:
            exported = read_entry(path)
        except Exception as exc:                   # noqa: BLE001 -- a bad entry is replaced below
            log.warning("stored program %s: entry %s unreadable (%s: %s); exporting it again", self.name,
                        path.name, type(exc).__name__, exc)
        if exported is None:
            source = Source.EXPORTED
            try:
                exported = self._export(specs)
            except Exception as exc:               # noqa: BLE001
                log.warning("stored program %s: export failed (%s: %s); tracing it", self.name,
                            type(exc).__name__, exc)
                return None, Source.TRACED
            try:
                write_entry(path, exported)
            except Exception as exc:               # noqa: BLE001 -- e.g. a read-only cache: the export still
                log.warning("stored program %s: not written (%s: %s)", self.name,   # serves this process
                            type(exc).__name__, exc)
        return jax.jit(exported.call), source

    def _export(self, specs: tuple) -> "jax_export.Exported":
        """Trace ``fn`` once with the symbolic sizes of ``specs`` (arguments flattened: the exported program
        takes and the store keeps no custom pytree types)."""
        leaves, tree = jax.tree_util.tree_flatten(specs)
        fn = self.fn

        def flat(*lv):
            return fn(*jax.tree_util.tree_unflatten(tree, lv))

        return jax_export.export(jax.jit(flat))(*leaves)
