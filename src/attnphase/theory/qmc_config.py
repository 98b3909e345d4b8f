"""The QMC integrator's configuration (MODEL.md §8): its size (:class:`QMCConfig`: points, scrambles, coarse
stage, error-control target and caps) and the iteration's defaults (coarse tolerance, full-prox period,
damping)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import ParameterError, check_int, check_range
from ..model import ModelParams
from . import qmc, resolution, starts


FULL_PROX_EVERY = 16
"""Default of ``solve_batch(full_prox_every=…)``: a full multi-start prox at least every 16 map evaluations
(besides the first of each stage and the certification). Was 4; the periodic full calls only cut short a
warm iteration that follows a wrong basin, which the certification catches anyway: measured at 4096 × 4
(L = 2 both branches at ω = 0.3, 0.5, L = 3 semantic) the same iterations and values with 16 as
with 4 (±1), with 3 full evaluations instead of 4–6 (docs/notes/benchmarks-log.md, hB section)."""


COARSE_RTOL = 1e-3
"""Tolerance of the coarse stage (its fixed point differs from the full one by the coarse integration error,
~1e-2 relative, so a tighter tolerance buys nothing)."""


@dataclass(frozen=True)
class QMCConfig:
    """Resolution of the QMC integrator: ``points`` Sobol points per scramble, ``scrambles`` independent
    scrambles with seeds ``seed, seed+1, …``. ``coarse``: the fixed point is first converged (to
    ``COARSE_RTOL``) on the first ``coarse`` points of each scramble (a subset of the full set: Sobol points
    are nested), then on all ``points``; 0, or a value >= ``points``, skips that stage.

    ``target > 0``: error control (:mod:`.resolution`) — a converged point whose relative standard error of
    q, m, θ, V, ε_g or e_t exceeds ``target`` is continued on more scrambles and points (nested: the first
    ``points`` of scramble s stay among the larger set) up to ``max_scrambles`` and ``max_points`` (None: the
    structure's cap :func:`resolution.default_max_points`, set by ``solve_batch``); the sizes
    and errors reached are in ``GeneralSolution.resolution``. 0 (the default of a hand-made config): the size
    is fixed. :meth:`default` is the engine's default rule."""

    points: int = qmc.DEFAULT_POINTS
    scrambles: int = qmc.DEFAULT_SCRAMBLES
    seed: int = 0
    coarse: int = qmc.DEFAULT_COARSE
    target: float = 0.0
    max_points: int | None = None
    max_scrambles: int = resolution.MAX_SCRAMBLES

    @classmethod
    def default(cls) -> "QMCConfig":
        """The engine's default: 4096 points × 4 scrambles (coarse stage 1024), grown until every relative
        standard error is below ``resolution.DEFAULT_TARGET`` (5e-3/3), at most 8 scrambles and the structure's
        ``resolution.default_max_points`` (65536 at L = 2, r = 1)."""
        return cls(target=resolution.DEFAULT_TARGET)

    def __post_init__(self) -> None:
        n = check_int("qmc_points", self.points, 2)
        if n & (n - 1):
            raise ParameterError("qmc_points", "a power of two >= 2 (Sobol balance)", n)
        if check_int("scrambles", self.scrambles, 1) < 2:
            raise ParameterError("scrambles", "an integer >= 2 (the error bar needs two)", self.scrambles)
        check_int("seed", self.seed, 0)
        c = check_int("coarse", self.coarse, 0)
        if c and c & (c - 1):
            raise ParameterError("coarse", "0 or a power of two (Sobol balance)", c)
        check_range("target", self.target, lo=0.0)
        if self.max_points is not None:
            mp = check_int("max_points", self.max_points, 2)
            if mp & (mp - 1):
                raise ParameterError("max_points", "a power of two >= 2 (Sobol balance)", mp)
        check_int("max_scrambles", self.max_scrambles, 2)

    def grown(self, ratio: float) -> "QMCConfig | None":
        """The next size for a relative error ``ratio`` × the target (:func:`resolution.grown_size`), no coarse
        stage (the start is a converged fixed point); None at the caps."""
        cap = resolution.MAX_POINTS if self.max_points is None else self.max_points
        size = resolution.grown_size(self.points, self.scrambles, ratio, cap, self.max_scrambles)
        return None if size is None else replace(self, points=size[0], scrambles=size[1], coarse=0)

    @property
    def stages(self) -> tuple[int, ...]:
        """Point counts of the stages: (coarse, points), or (points,) without a coarse stage."""
        return (self.coarse, self.points) if 0 < self.coarse < self.points else (self.points,)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.seed, self.seed + self.scrambles))


DAMPING = 0.6
"""Damping (weight of the new map value) of the engine's iteration at the paper's encodings."""


def default_damping(params: ModelParams, branch: str) -> float:
    """``DAMPING``, divided by c² on the branches with a positional overlap (positional, free) where the
    encodings' scale c = :func:`starts.encoding_scale` exceeds 1: the map's leading eigenvalue, along M, grows
    like c² (measured at L = 2, ω = 0.3, α = 1.5, P = c·(1, −1)ᵀ: −4.6, −9.6, −16.6 at c = 1, 1.5, 2), and the
    damped factor 1 − β(1 − λ) of that mode stays as at the paper's P (docs/notes/2026-12-05-theory-general.md, "Large α and
    larger encodings in the engine")."""
    c = starts.encoding_scale(params)
    return DAMPING / max(1.0, c * c) if branch in ("positional", "free") else DAMPING
