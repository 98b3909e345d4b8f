"""Size guards: estimate what a request needs before doing it, and refuse (or ask) when it is out of reach.

The estimates are deliberately simple upper bounds of the dominant arrays (documented per function); the
limit is a fraction of the memory the machine has available now (``/proc/meminfo``'s ``MemAvailable``,
else total physical memory). A refusal is a :class:`ParameterError` naming the parameter that drives the
size, so the CLI prints one line and exits 2.
"""

from __future__ import annotations

import os

from .errors import ParameterError

MEMORY_FRACTION = 0.5
"""A request may use at most this fraction of the available memory."""
MAX_GRID_POINTS = 100_000
"""A ``START:STOP:NUM`` grid (or a sweep) with more points than this is refused outright."""
CONFIRM_TASKS = 1_000
"""A sweep with more tasks than this runs only with ``--yes`` (the CLI asks for it)."""

GiB = 2.0 ** 30


def available_memory() -> int:
    """Bytes of memory available to a new allocation now (best effort)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 2 ** 30


def check_memory(param: str, value: object, nbytes: float, what: str, limit: float | None = None) -> None:
    """Raise if ``nbytes`` exceeds ``limit`` (default: :data:`MEMORY_FRACTION` of the available memory)."""
    limit = MEMORY_FRACTION * available_memory() if limit is None else limit
    if nbytes > limit:
        raise ParameterError(param, f"small enough to fit in memory ({what} needs ~{nbytes / GiB:.3g} GiB, "
                             f"the limit is {limit / GiB:.3g} GiB)", value)


def baseline_bytes(L: int, r_star: int, nodes: int, mc_samples: int) -> float:
    """:func:`attnphase.baseline.eps_lin`: ~4 float64 arrays of ``points × L × L`` (``points = nodes²`` by
    quadrature for L = 2, r* = 1, else ``mc_samples``)."""
    points = nodes ** 2 if (L == 2 and r_star == 1) else mc_samples
    return 4.0 * 8 * points * L * L


def simulate_bytes(L: int, d: int, n: int, batch: int = 1, x64: bool = False, test_chunk: int = 2500) -> float:
    """:func:`attnphase.simulate.simulate`: per vmapped instance the data X, Y and Z = X + p (``n × L × d``
    each), a test chunk of the same kind, plus slack for gradients; ``batch`` instances at a time."""
    item = 8 if x64 else 4
    return float(batch) * item * L * d * (4.0 * n + 3.0 * test_chunk)


def check_grid(param: str, value: object, points: int, limit: int = MAX_GRID_POINTS) -> None:
    """Refuse a grid with more than ``limit`` points."""
    if points > limit:
        raise ParameterError(param, f"a grid of at most {limit} points", value)
