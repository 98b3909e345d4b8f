"""The 1RSB saddle point at zero temperature and the Parisi parameter (uninformative sector, L = 2; MODEL.md §6;
docs/theory/one-step-rsb.md).

At fixed x the functional ``e(q0, Δq, V, x)`` of :mod:`.rsb1` is made stationary in (q0, Δq, V); the ground-state
energy is ``max_x e*(x)`` (e*(x) = e at the saddle; the Legendre argument in the docs). The channel is tabulated
on a lattice of V values (:class:`TableLattice`) and interpolated in V by cubic Hermite interpolation of M with its
exact V-derivative, so the V-derivative of the interpolated functional is exact and every table serves every x and
every α at the same (σ, ω, A).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np
from scipy.optimize import root

from ..errors import ParameterError
from ..model import ModelParams
from .rsb1 import ChannelTable, OmegaGrid, Rsb1Value, functional, functional_shifted, tabulate


class Sector(str, Enum):
    """Which overlaps the states share besides q0: none (the uninformative sector, unknowns (q0, Δq, V)), the
    teacher overlap θ (semantic: (p0, Δq, V, θ), p0 = q0 − θ²/σ²) or the positional m (positional:
    (q0, Δq, V, m))."""

    UNINFORMATIVE = "uninformative"
    SEMANTIC = "semantic"
    POSITIONAL = "positional"


class Rsb1Status(Enum):
    CONVERGED = "converged"
    COLLAPSED = "collapsed to RS (Δq -> 0)"
    NOT_CONVERGED = "not converged"


@dataclass
class TableLattice:
    """Channel tables at ``V = V_ref · ratio^k`` (tabulated on first use), interpolated in V (module docstring)."""

    params: ModelParams
    grid: OmegaGrid = OmegaGrid()
    y_order: int = 8
    V_ref: float = 40.0
    ratio: float = 1.12
    tables: dict = field(default_factory=dict)

    def node(self, k: int) -> ChannelTable:
        if k not in self.tables:
            self.tables[k] = tabulate(self.params, self.V_ref * self.ratio ** k, self.grid, self.y_order)
        return self.tables[k]

    def at(self, V: float) -> ChannelTable:
        """The table at V: cubic Hermite in V between the two lattice tables around it (M and ∂M/∂V)."""
        if not V > 0:
            raise ParameterError("V", "> 0", V)
        s = np.log(V / self.V_ref) / np.log(self.ratio)
        k = int(np.floor(s))
        a, b = self.node(k), self.node(k + 1)
        if abs(s - k) < 1e-13:
            return a
        dV = b.V - a.V
        t = (V - a.V) / dV
        h00, h10, h01, h11 = 2 * t ** 3 - 3 * t ** 2 + 1, t ** 3 - 2 * t ** 2 + t, -2 * t ** 3 + 3 * t ** 2, t ** 3 - t ** 2
        d00, d10, d01, d11 = 6 * t ** 2 - 6 * t, 3 * t ** 2 - 4 * t + 1, -6 * t ** 2 + 6 * t, 3 * t ** 2 - 2 * t
        M = h00 * a.M + h10 * dV * a.M_V + h01 * b.M + h11 * dV * b.M_V
        M_V = (d00 * a.M + d01 * b.M) / dV + d10 * a.M_V + d11 * b.M_V
        return ChannelTable(self.params, float(V), self.grid, self.y_order, a.y_weights, M, M_V,
                            max(a.max_grad, b.max_grad), a.y_nodes)


def value(lattice: TableLattice, alpha: float, q0: float, dq: float, V: float, x: float) -> Rsb1Value:
    """``e(q0, Δq, V, x)`` with its gradient (∂q0, ∂Δq, ∂V, ∂x), V interpolated on the lattice."""
    return functional(lattice.at(V), alpha, q0, dq, x)


def sector_value(lattice: TableLattice, alpha: float, sector: Sector, u, x: float) -> tuple[float, np.ndarray]:
    """e and its gradient in the sector's unknowns ``u`` (:class:`Sector`), then ∂x last."""
    sector = Sector(sector)
    if sector is Sector.UNINFORMATIVE:
        r = value(lattice, alpha, u[0], u[1], u[2], x)
        return r.e, np.asarray(r.grad)
    theta, m = (u[3], 0.0) if sector is Sector.SEMANTIC else (0.0, u[3])
    r = functional_shifted(lattice.at(u[2]), alpha, u[0], u[1], x, theta, m)
    return r.e, r.grad[[0, 1, 2, 4 if sector is Sector.SEMANTIC else 5, 3]]


@dataclass(frozen=True)
class Rsb1Point:
    """A stationary point of the 1RSB functional at fixed x (and its status)."""

    alpha: float
    x: float
    q0: float
    dq: float
    V: float
    e: float
    grad: tuple
    status: Rsb1Status
    note: str = ""
    sector: Sector = Sector.UNINFORMATIVE
    theta: float = 0.0
    m: float = 0.0
    sigma: float = 1.0

    @property
    def q1(self) -> float:
        return self.q0 + self.dq

    @property
    def unknowns(self) -> tuple:
        """The sector's unknowns at this point (a start for the next saddle)."""
        if self.sector is Sector.UNINFORMATIVE:
            return (self.q0, self.dq, self.V)
        if self.sector is Sector.SEMANTIC:
            return (self.q0 - self.theta ** 2 / self.sigma ** 2, self.dq, self.V, self.theta)
        return (self.q0, self.dq, self.V, self.m)

    def to_dict(self) -> dict:
        return dict(alpha=self.alpha, x=self.x, q0=self.q0, dq=self.dq, q1=self.q1, V=self.V, e_t=self.e,
                    grad=list(self.grad), status=self.status.value, note=self.note, sector=self.sector.value,
                    theta=self.theta, m=self.m)


MIN_DQ_GRID = 1.0
"""A solution with √Δq below this many ω-grid spacings is not resolved by the blur: reported as collapsed."""


def saddle(lattice: TableLattice, alpha: float, x: float, start: tuple, tol: float = 1e-10,
           sector: Sector | str = Sector.UNINFORMATIVE) -> Rsb1Point:
    """Stationary point of e in the sector's unknowns at fixed x from ``start`` ((q0, Δq, V), or with θ or m
    fourth, :class:`Sector`; hybrid Powell on the logs of the first three; the gradient is scaled by 10³). Δq is
    positive by construction; a run of Δq to the grid's resolution is reported as collapsed onto RS."""
    if not x > 0:
        raise ParameterError("x", "> 0 (x = 0 is RS)", x)
    sector = Sector(sector)
    n = 3 if sector is Sector.UNINFORMATIVE else 4
    if len(start) != n:
        raise ParameterError("start", f"{n} values for the {sector.value} sector", start)

    def unpack(w):
        return tuple(np.exp(w[:3])) + tuple(w[3:])

    def F(w):
        try:
            return 1e3 * sector_value(lattice, alpha, sector, unpack(w), x)[1][:n]
        except ParameterError:          # outside the sector's domain (q0 < σ²m², nodes off the grid)
            return np.full(n, 1e3)

    w0 = np.concatenate([np.log(np.asarray(start[:3], float)), np.asarray(start[3:], float)])
    sol = root(F, w0, method="hybr", tol=tol)
    u = unpack(sol.x)
    try:
        e, g = sector_value(lattice, alpha, sector, u, x)
    except ParameterError as err:          # the solver left the domain: no saddle from this start
        return Rsb1Point(alpha, x, float(u[0]), float(u[1]), float(u[2]), float("nan"), (float("nan"),) * 4,
                         Rsb1Status.NOT_CONVERGED, f"hybr left the domain: {err}", sector, sigma=lattice.params.sigma)
    gmax = float(np.max(np.abs(g[:n])))
    if np.sqrt(u[1]) < MIN_DQ_GRID * lattice.grid.h:
        status = Rsb1Status.COLLAPSED
    elif gmax < 1e-8:
        status = Rsb1Status.CONVERGED
    else:
        status = Rsb1Status.NOT_CONVERGED
    s2 = lattice.params.sigma ** 2
    theta = float(u[3]) if sector is Sector.SEMANTIC else 0.0
    m = float(u[3]) if sector is Sector.POSITIONAL else 0.0
    q0 = float(u[0]) + theta * theta / s2
    grad = g if sector is Sector.UNINFORMATIVE else g[[0, 1, 2, 4, 3]]     # ∂x fourth, as in the RS sector
    return Rsb1Point(alpha, x, q0, float(u[1]), float(u[2]), e, tuple(float(v) for v in grad), status,
                     f"hybr: {sol.message.strip()} ({sol.nfev} evaluations), max |grad| {gmax:.2e}", sector, theta,
                     m, lattice.params.sigma)


def _scan(lattice, alpha, xs, start, sector=Sector.UNINFORMATIVE):
    """Saddles along ``xs`` continued from ``start``; then the failed ones retried from the nearest converged
    neighbour, downwards (a branch is often easier to follow from larger x)."""
    scan, cur = [], tuple(start)
    for x in xs:
        p = saddle(lattice, alpha, float(x), cur, sector=sector)
        scan.append(p)
        if p.status is Rsb1Status.CONVERGED:
            cur = p.unknowns
    for i in range(len(scan) - 2, -1, -1):
        nxt = scan[i + 1]
        if scan[i].status is not Rsb1Status.CONVERGED and nxt.status is Rsb1Status.CONVERGED:
            retry = saddle(lattice, alpha, scan[i].x, nxt.unknowns, sector=sector)
            if retry.status is Rsb1Status.CONVERGED or scan[i].status is Rsb1Status.NOT_CONVERGED:
                scan[i] = retry
    return scan


def maximise_x(lattice: TableLattice, alpha: float, xs, start: tuple, sector: Sector | str = Sector.UNINFORMATIVE):
    """e*(x) along ``xs`` (:func:`_scan`), then the maximum refined by the secant on ∂e/∂x (the total derivative
    of e* equals the partial one at the saddle), bracketed by the converged scan neighbour on the side where
    ∂e/∂x points. Returns (best Rsb1Point or None, scan); the best is a scan end when the maximum is not
    bracketed (the caller says so). ``start`` and ``sector`` as in :func:`saddle`."""
    scan = _scan(lattice, alpha, xs, start, Sector(sector))
    ok = [p for p in scan if p.status is Rsb1Status.CONVERGED]
    if not ok:
        return None, scan
    best = max(ok, key=lambda p: p.e)
    i = scan.index(best)
    j = i + 1 if best.grad[3] > 0 else i - 1
    if not 0 <= j < len(scan) or scan[j].status is not Rsb1Status.CONVERGED:
        return best, scan
    a, b = (best, scan[j]) if j > i else (scan[j], best)
    for _ in range(30):
        ga, gb = a.grad[3], b.grad[3]
        if ga * gb > 0 or abs(np.log(b.x / a.x)) < 1e-6:
            break
        xm = float(np.exp(np.log(a.x) + np.log(b.x / a.x) * ga / (ga - gb)))
        xm = float(np.clip(xm, a.x * (b.x / a.x) ** 0.02, a.x * (b.x / a.x) ** 0.98))
        m = saddle(lattice, alpha, xm, a.unknowns, sector=a.sector)
        if m.status is not Rsb1Status.CONVERGED:
            break
        a, b = (m, b) if m.grad[3] > 0 else (a, m)
        if abs(m.grad[3]) * m.x < 1e-9 * abs(m.e):
            return m, scan
    return max((a, b), key=lambda p: p.e), scan
