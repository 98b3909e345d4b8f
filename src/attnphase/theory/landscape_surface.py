"""The landscape surface e_t(m, θ): the replica-symmetric saddle point of Φ with both overlaps imposed
(``Fixed.BOTH`` of :mod:`.landscape`, MODEL.md §8) on a grid of (θ/σ², m), with its local minima and the lowest
mountain passes between them (issue 32).

On the grid, e_t(m, θ) is the lowest training loss per dimension among students with those overlaps (d → ∞, RS)
and the forces are its negative gradient from the Lagrange multipliers (envelope theorem, :mod:`.landscape`):
``force_theta = −∂e_t/∂(θ/σ²)``, ``force_m = −∂e_t/∂m``. θ = 0 and m = 0 are invariant subspaces, e_t is even in
each, so the grid's first row and column are mirror planes: a point there is a minimum when its neighbours on the
grid are higher. The other two borders are open: a minimum found there may lie beyond the grid (``edge``).

Minima and passes come from a flood of the grid in increasing e_t (8 neighbours, :func:`flood`): a point with no
flooded neighbour starts a basin (a local minimum); a point that joins two basins is their lowest pass, the saddle
of the minimax path between their minima, and the barrier seen from the higher minimum is its e_t minus that
minimum's. Unconverged points are NaN, never flooded (walls); a minimum or pass next to one says so (``near_gap``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..errors import ParameterError
from ..model import ModelParams
from .landscape import Fixed, solve_landscape
from .qmc_config import QMCConfig
from .status import Status

THETA_GRID = tuple(round(0.075 * i, 4) for i in range(9))
"""θ/σ² of the default surface (0 to 0.6, 9 values)."""
M_GRID = tuple(round(0.0375 * i, 4) for i in range(9))
"""m of the default surface (0 to 0.3, 9 values)."""
MAX_POINTS = 2500
"""The largest grid :func:`surface` accepts (n_θ × n_m; a 9 × 9 grid at 1024 × 4 QMC points takes minutes of CPU)."""
NEIGHBOURS = tuple((di, dj) for di in (-1, 0, 1) for dj in (-1, 0, 1) if (di, dj) != (0, 0))


@dataclass(frozen=True)
class Basin:
    """A local minimum of the grid: its indices (``i`` along θ, ``j`` along m), e_t there, ``edge`` when it lies
    on an open border (the true minimum may be beyond the grid), ``near_gap`` when a neighbour is unconverged."""

    i: int
    j: int
    e_t: float
    edge: bool
    near_gap: bool


@dataclass(frozen=True)
class Pass:
    """The lowest pass between two basins (indices into the minima list, ``lower`` the deeper one): the saddle's
    grid indices, e_t there and the barrier ``e_t − e_t(higher minimum)``; ``edge``/``near_gap`` as :class:`Basin`
    (a pass on an open border is the lowest within the grid: an upper bound)."""

    i: int
    j: int
    e_t: float
    lower: int
    higher: int
    barrier: float
    edge: bool
    near_gap: bool


def _check_grid(name: str, e: np.ndarray) -> np.ndarray:
    e = np.asarray(e, float)
    if e.ndim != 2 or e.size == 0:
        raise ParameterError(name, "a non-empty 2-D array (θ × m)", e.shape)
    return e


def _flags(e: np.ndarray, i: int, j: int, open_edges: tuple[bool, bool]) -> tuple[bool, bool]:
    """(edge, near_gap) of grid point (i, j)."""
    n0, n1 = e.shape
    edge = (open_edges[0] and i == n0 - 1) or (open_edges[1] and j == n1 - 1)
    gap = any(0 <= i + di < n0 and 0 <= j + dj < n1 and not np.isfinite(e[i + di, j + dj]) for di, dj in NEIGHBOURS)
    return bool(edge), bool(gap)


def flood(e_t: np.ndarray, open_edges: tuple[bool, bool] = (True, True)) -> tuple[list[Basin], list[Pass]]:
    """The local minima of a grid ``e_t[i, j]`` and the lowest passes between them (module docstring): the grid
    flooded in increasing e_t with 8 neighbours and a union-find of basins; NaN points are walls. ``open_edges``:
    whether the last row / column is an open border (the first ones are mirror planes or closed). Passes form the
    merge tree: n_basins − (number of disconnected regions) of them, each joining the deepest minima of the two
    basins it merges."""
    e = _check_grid("e_t", e_t)
    n0, n1 = e.shape
    parent = -np.ones(e.size, int)          # −1: not flooded yet
    deepest: dict[int, int] = {}           # root -> index of its basin's minimum in `minima`

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    minima: list[Basin] = []
    passes: list[Pass] = []
    flat = e.ravel()
    for idx in np.argsort(np.where(np.isfinite(flat), flat, np.inf), kind="stable"):
        if not np.isfinite(flat[idx]):
            break
        i, j = divmod(int(idx), n1)
        roots = {find(ii * n1 + jj) for di, dj in NEIGHBOURS
                 for ii, jj in [(i + di, j + dj)] if 0 <= ii < n0 and 0 <= jj < n1 and parent[ii * n1 + jj] >= 0}
        parent[idx] = idx
        if not roots:
            deepest[idx] = len(minima)
            minima.append(Basin(i, j, float(flat[idx]), *_flags(e, i, j, open_edges)))
            continue
        ordered = sorted(roots, key=lambda r: minima[deepest[r]].e_t)
        keep = ordered[0]
        for other in ordered[1:]:
            lo, hi = deepest[keep], deepest[other]
            passes.append(Pass(i, j, float(flat[idx]), lo, hi, float(flat[idx] - minima[hi].e_t),
                               *_flags(e, i, j, open_edges)))
            parent[other] = keep
        parent[idx] = keep
    return minima, passes


def _zero_crossing(x: np.ndarray, f: np.ndarray, k: int, mirror: bool) -> float:
    """Where the force ``f`` along a line through sample ``k`` crosses zero from + to − next to ``k``
    (linear interpolation); 0 at a mirror plane's sample 0; NaN where it does not cross next to ``k``."""
    if mirror and k == 0:
        return 0.0
    for a, b in ((k - 1, k), (k, k + 1)):
        if 0 <= a and b < len(x) and np.isfinite(f[a]) and np.isfinite(f[b]) and f[a] >= 0 > f[b]:
            return float(x[a] + f[a] / (f[a] - f[b]) * (x[b] - x[a]))
    return math.nan


@dataclass(frozen=True)
class Surface:
    """e_t(m, θ) on a grid (rows: ``theta_grid``, values of θ/σ²; columns: ``m_grid``): ``values[key]`` and
    ``errors[key]`` (means and standard errors over the QMC scrambles, NaN where not converged) for e_t, q, V,
    eps_g, ``force_theta`` = −∂e_t/∂(θ/σ²) and ``force_m`` = −∂e_t/∂m; ``status`` per point; the minima and passes
    of :func:`flood`. MODEL.md §8, issue 32."""

    params: ModelParams
    alpha: float
    theta_grid: np.ndarray
    m_grid: np.ndarray
    values: dict
    errors: dict
    status: np.ndarray
    iterations: np.ndarray
    qmc: QMCConfig
    minima: list[Basin] = field(default_factory=list)
    passes: list[Pass] = field(default_factory=list)

    @property
    def not_converged(self) -> int:
        return int(np.sum(self.status != Status.CONVERGED.value))

    def at(self, i: int, j: int) -> dict:
        """One grid point: θ/σ², m, the values and errors there."""
        d = {"theta_over_sigma2": float(self.theta_grid[i]), "m": float(self.m_grid[j]),
             "status": str(self.status[i, j])}
        d.update({k: float(v[i, j]) for k, v in self.values.items()})
        d.update({f"{k}_err": float(v[i, j]) for k, v in self.errors.items()})
        return d

    def minimum_record(self, b: Basin) -> dict:
        """A minimum: the grid point, its flags and the position refined along each axis where its force crosses
        zero (``theta_refined``, ``m_refined``: θ/σ² and m; NaN where the crossing is not next to it)."""
        d = self.at(b.i, b.j)
        d.update(edge=b.edge, near_gap=b.near_gap,
                 theta_refined=_zero_crossing(self.theta_grid, self.values["force_theta"][:, b.j], b.i,
                                              self.theta_grid[0] == 0.0),
                 m_refined=_zero_crossing(self.m_grid, self.values["force_m"][b.i, :], b.j, self.m_grid[0] == 0.0))
        return d

    def pass_record(self, p: Pass) -> dict:
        d = self.at(p.i, p.j)
        d.update(lower_minimum=p.lower, higher_minimum=p.higher, barrier=p.barrier, edge=p.edge,
                 near_gap=p.near_gap)
        return d

    def to_dict(self, grid: bool = True) -> dict:
        """JSON-ready: the grids, the minima and passes, convergence and (``grid``) every value on the grid."""
        out = {"alpha": self.alpha, "params": self.params.to_dict(), "fixed": Fixed.BOTH.value,
               "theta_over_sigma2": [float(v) for v in self.theta_grid], "m": [float(v) for v in self.m_grid],
               "qmc_points": self.qmc.points, "scrambles": self.qmc.scrambles,
               "not_converged": self.not_converged,
               "minima": [self.minimum_record(b) for b in self.minima],
               "passes": [self.pass_record(p) for p in self.passes]}
        if grid:
            out["grid"] = {"status": self.status.tolist(), "iterations": self.iterations.tolist(),
                           **{k: np.where(np.isfinite(v), v, None).tolist() for k, v in self.values.items()},
                           **{f"{k}_err": np.where(np.isfinite(v), v, None).tolist()
                              for k, v in self.errors.items()}}
        return out


def check_surface_grid(name: str, grid: Sequence[float], hi: float) -> np.ndarray:
    """A surface axis: at least two increasing values in [0, hi) (θ/σ² is a cosine: hi = 1)."""
    g = np.asarray(grid, float)
    if g.ndim != 1 or len(g) < 2 or not np.all(np.isfinite(g)) or np.any(np.diff(g) <= 0) or g[0] < 0 \
            or g[-1] >= hi:
        raise ParameterError(name, f"at least two increasing values in [0, {hi:g})", list(np.ravel(g)))
    return g


def check_surface_size(n_theta: int, n_m: int, name: str = "grid") -> None:
    """Refuse a grid of more than :data:`MAX_POINTS` points (before any work; no JAX needed)."""
    if n_theta * n_m > MAX_POINTS:
        raise ParameterError(name, f"at most {MAX_POINTS} points (n_θ × n_m)", f"{n_theta} × {n_m}")


def surface(params: ModelParams, alpha: float, theta_grid: Sequence[float] = THETA_GRID,
            m_grid: Sequence[float] = M_GRID, qmc_config: QMCConfig | None = None, max_steps: int = 100,
            progress: Callable[[int, int], None] | None = None) -> Surface:
    """e_t(m, θ) at one α on ``theta_grid`` (θ/σ²) × ``m_grid`` (module docstring): one ``Fixed.BOTH`` solve
    per row of θ, all on the same QMC points (default 1024 × 4; at 512 × 2 some points near the uninformative one
    did not converge in 400 steps at σ = 0.7); ``max_steps`` 100: a converged point takes 9–30, and the few that
    end in a limit cycle of the map (NaN, status MAX_STEPS) would otherwise hold their whole row for 400;
    ``progress(done_rows, rows)`` after each row.
    r = r* = 1, k = 1."""
    if not isinstance(params, ModelParams):
        raise ParameterError("params", "a ModelParams", type(params).__name__)
    if (params.r, params.r_star, params.k) != (1, 1, 1):
        raise ParameterError("params", "r = r* = 1 and one positional direction (k = 1) for the landscape",
                             (params.r, params.r_star, params.k))
    th = check_surface_grid("theta_grid", theta_grid, 1.0)
    mg = check_surface_grid("m_grid", m_grid, math.inf)
    check_surface_size(len(th), len(mg))
    cfg = QMCConfig(points=1024, scrambles=4, coarse=0) if qmc_config is None else qmc_config
    s2 = params.sigma ** 2
    keys = ("e_t", "q", "V", "eps_g", "force_theta", "force_m")
    vals = {k: np.full((len(th), len(mg)), math.nan) for k in keys}
    errs = {k: np.full((len(th), len(mg)), math.nan) for k in keys}
    status = np.empty((len(th), len(mg)), dtype=object)
    iters = np.zeros((len(th), len(mg)), int)
    scale = {"force_theta": s2}                     # −∂e_t/∂θ -> −∂e_t/∂(θ/σ²)
    for i, t in enumerate(th):
        pts = solve_landscape(params, alpha, Fixed.BOTH, ms=mg, thetas=t * s2, qmc_config=cfg,
                              max_steps=max_steps)
        for j, p in enumerate(pts):
            status[i, j] = p.status.value
            iters[i, j] = p.iterations
            for k in keys:
                vals[k][i, j] = p.values[k] * scale.get(k, 1.0)
                errs[k][i, j] = p.errors[k] * scale.get(k, 1.0)
        if progress is not None:
            progress(i + 1, len(th))
    minima, passes = flood(vals["e_t"])
    return Surface(params, float(alpha), th, mg, vals, errs, status.astype(str), iters, cfg, minima, passes)
