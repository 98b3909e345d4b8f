"""Size guards: estimate what a request needs before doing it, and refuse (or ask) when it is out of reach.

One module for every size: the command line, the notebook API (:mod:`attnphase.api`) and sweep validation
(:mod:`attnphase.sweeps.tasks`) call the same checks, before any array is built. Two kinds of limits:

* documented maxima (the constants ``MAX_*`` below, listed in ``docs/guides/reliability.md``): sizes beyond
  them are refused whatever the machine, because the model or the code is not meant for them (an ``L × L``
  teacher matrix for L = 10⁶, a QMC rule with 10⁹ points, a seed JAX cannot hold);
* memory estimates: within the maxima, a request whose dominant arrays would not fit is refused.

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

MAX_L = 1024
"""Largest sequence length L of a model (its ``L × L`` matrix A is built from the parameters)."""
MAX_RANK = 256
"""Largest student rank r and teacher rank r*."""
MAX_K = 1024
"""Largest number k of positional directions (columns of P)."""
THEORY_MAX_L = 16
"""Largest L of the asymptotic theory's QMC engine (MODEL.md §8; documented up to L = 6)."""
THEORY_MAX_RANK = 8
"""Largest r and r* of the asymptotic theory's QMC engine."""
MAX_QMC_POINTS = 2 ** 22
"""Largest number of Sobol points per scramble."""
MAX_SCRAMBLES = 64
"""Largest number of QMC scrambles."""
MAX_ALPHA = 1e6
"""Largest sample complexity α = n/d of a finite-d simulation."""
MAX_D = 10 ** 6
"""Largest dimension d of a finite-d simulation (memory is checked as well)."""
MAX_INSTANCES = 100_000
"""Largest number of independent instances of one simulation."""
MAX_STEPS = 10 ** 8
"""Largest number of GD steps, L-BFGS iterations or warm-up steps (the loop counters are int32)."""
MAX_SEED = 2 ** 32 - 1
"""Largest base seed."""
MAX_TEST_SAMPLES = 10 ** 8
"""Largest number of fresh test samples (``--test-error sampled``; they are streamed in chunks)."""
MAX_SIGMA = 1e3
"""Largest token standard deviation σ (beyond it the Gaussian integrals overflow)."""
MAX_LAM = 1e6
"""Largest ridge strength λ."""


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


def check_model_size(L: object, r: object = 1, r_star: object = 1) -> tuple[int, int, int]:
    """L, r, r* as integers within :data:`MAX_L`, :data:`MAX_RANK` — checked *before* the ``L × L`` default
    matrices are built (``ModelParams``, ``api.model``, the CLI and sweep files call this first)."""
    from .errors import check_int
    return (check_int("L", L, 2, MAX_L), check_int("r", r, 1, MAX_RANK),
            check_int("r_star", r_star, 1, MAX_RANK))


def check_theory_size(L: int, r: int, r_star: int, param_names: tuple[str, str, str] = ("L", "r", "r_star")
                      ) -> None:
    """The asymptotic theory's structures: L <= :data:`THEORY_MAX_L`, r, r* <= :data:`THEORY_MAX_RANK`."""
    for name, value, hi in zip(param_names, (L, r, r_star), (THEORY_MAX_L, THEORY_MAX_RANK, THEORY_MAX_RANK)):
        if value > hi:
            raise ParameterError(name, f"at most {hi} for the asymptotic theory (QMC engine, MODEL.md §8)", value)


def qmc_bytes(L: int, r: int, r_star: int, points: int, scrambles: int, alphas: int = 1) -> float:
    """The QMC engine (MODEL.md §8): per sample and α, the normals (``L (r + r*)`` numbers), the prox's
    ``L r`` unknowns with their ``(L r)²`` Newton system and the ``L × L`` attention maps, in float64, with a
    factor 8 of slack for the iteration's temporaries."""
    per_sample = L * (r + r_star) + L * r + (L * r) ** 2 + 4 * L * L
    return 8.0 * 8 * float(points) * scrambles * alphas * per_sample


def check_qmc(L: int, r: int, r_star: int, points: int | None, scrambles: int | None, alphas: int = 1,
              names: tuple[str, str] = ("qmc_points", "scrambles")) -> None:
    """QMC sizes within :data:`MAX_QMC_POINTS`, :data:`MAX_SCRAMBLES` and the memory (``None``: the default)."""
    from .errors import check_int
    p = 4096 if points is None else check_int(names[0], points, 2, MAX_QMC_POINTS)
    s = 4 if scrambles is None else check_int(names[1], scrambles, 2, MAX_SCRAMBLES)
    check_memory(names[0], p, qmc_bytes(L, r, r_star, p, s, alphas),
                 f"{p} QMC points × {s} scrambles × {alphas} α at L={L}, r={r}, r*={r_star}")


def check_simulation(L: int, r: int, r_star: int, k: int, *, alpha: object, d: object, instances: object = 1,
                     seed: object = 0, steps: object = 0, max_iter: object = 1, warmup_steps: object = 0,
                     test_samples: object = 1, x64: bool = False, test_error: str = "exact",
                     names: dict[str, str] | None = None) -> int:
    """Every size of a finite-d simulation (MODEL.md §4) — α, d, instances, seed, steps, max_iter, warm-up,
    test samples within their ``MAX_*`` and the arrays within the memory — before anything is drawn.
    ``names`` maps a parameter to the name the caller knows it by (``{"d": "--d"}``). Returns ``n = round(α d)``."""
    from .errors import check_int, check_range
    nm = {k_: k_ for k_ in ("alpha", "d", "instances", "seed", "steps", "max_iter", "warmup_steps",
                             "test_samples")} | (names or {})
    alpha = check_range(nm["alpha"], alpha, lo=0.0, hi=MAX_ALPHA, lo_open=True)
    w = r + r_star + k
    d = check_int(nm["d"], d, max(2, k, w if test_error == "exact" else 0), MAX_D)
    instances = check_int(nm["instances"], instances, 1, MAX_INSTANCES)
    check_int(nm["seed"], seed, 0, MAX_SEED)
    check_int(nm["steps"], steps, 0, MAX_STEPS)
    check_int(nm["max_iter"], max_iter, 1, MAX_STEPS)
    check_int(nm["warmup_steps"], warmup_steps, 0, MAX_STEPS)
    check_int(nm["test_samples"], test_samples, 1, MAX_TEST_SAMPLES)
    n = max(1, int(round(alpha * d)))
    check_memory(nm["d"], d, simulate_bytes(L, d, n, x64=x64), f"training at d={d}, n={n}, L={L}")
    if test_error == "exact":
        check_memory(nm["instances"], instances, exact_error_bytes(L, w, instances, x64),
                     f"the exact test error of {instances} instance(s) at L={L}")
    return n


def exact_error_bytes(L: int, w: int, instances: int, x64: bool = False, points: int = 2 ** 14) -> float:
    """:mod:`attnphase.finite_d_error` after training: per instance, one scramble of ``points × L × w``
    normals at a time and as much again for the integrand."""
    return 2.0 * (8 if x64 else 4) * float(instances) * points * L * w


def check_grid_product(param: str, value: object, *sizes: int, limit: int = MAX_GRID_POINTS) -> None:
    """Refuse a Cartesian grid whose number of points (the product of ``sizes``) exceeds ``limit``."""
    total = 1
    for n in sizes:
        total *= int(n)
    if total > limit:
        raise ParameterError(param, f"a grid of at most {limit} points in all (this one has {total})", value)


def check_theory(params, points: int | None = None, scrambles: int | None = None, alphas: int = 1,
                 names: tuple[str, str] = ("qmc_points", "scrambles")) -> None:
    """The asymptotic theory's sizes for a model (anything with ``L``, ``r``, ``r_star``): the structure
    (:func:`check_theory_size`) and the QMC rule (:func:`check_qmc`; ``None``: the engine's default)."""
    check_theory_size(params.L, params.r, params.r_star)
    check_qmc(params.L, params.r, params.r_star, points, scrambles, alphas, names)
