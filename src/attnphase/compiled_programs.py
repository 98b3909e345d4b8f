"""Memory held by compiled XLA programs, and releasing it in long-running processes.

XLA:CPU keeps every compiled program mapped into the process (a few hundred memory mappings for a large
program) until JAX's compilation caches drop it. A process that compiles many distinct programs — a sweep
worker meeting many shapes, a test session — reaches Linux's per-process limit ``vm.max_map_count``
(65 530 by default) and the next compilation crashes the interpreter (measured on this project's test suite:
a segmentation fault inside XLA's ``backend_compile_and_load`` at 65 198 mappings). Programs released here
are recompiled, or read back from the persistent compilation cache, when next needed; no result changes.
"""

from __future__ import annotations

import gc

import jax

from .errors import check_range

MAX_MAP_COUNT = "/proc/sys/vm/max_map_count"


def mappings() -> tuple[int, int] | None:
    """(memory mappings held by this process, the kernel's per-process limit), or None where ``/proc`` does
    not say (not Linux)."""
    try:
        with open("/proc/self/maps", "rb") as f:
            held = sum(1 for _ in f)
        with open(MAX_MAP_COUNT) as f:
            limit = int(f.read())
    except (OSError, ValueError):
        return None
    return held, limit


def release_if_crowded(fraction: float = 0.5) -> bool:
    """Drop JAX's in-memory compiled programs when this process holds more than ``fraction`` of the mapping
    limit; True when it released them. A no-op (False) where the count is unknown."""
    check_range("fraction", fraction, 0.0, 1.0)
    counts = mappings()
    if counts is None or counts[0] <= fraction * counts[1]:
        return False
    jax.clear_caches()
    gc.collect()
    return True
