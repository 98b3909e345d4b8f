"""α_c at one step of replica symmetry breaking (issue 32; docs/theory/one-step-rsb.md §8, docs/theory/beyond-rs.md).

Where the RS competitor below α_c is the uninformative point (:mod:`..theory.landscape_caveat`), RS is not the
ground state there: the 1RSB ground state of the uninformative sector lies 4–11 % above the RS e_t. The semantic
sector (states sharing a teacher overlap θ) is broken too, and its 1RSB ground state exists below the RS α_c. The
1RSB transition is where the two cross:

    gap(α) = e_gs^sem(α) − e_gs^unin(α),    α_c^1RSB: gap(α_c^1RSB) = 0,

each e_gs the maximum over the Parisi parameter x of the saddle-point value (:func:`~..theory.rsb1_saddle.maximise_x`).
Where the semantic-sector saddle has θ → 0 it is a θ = 0 saddle of its own (q0 ≈ 0.03, above the uninformative
one): gap stays defined and positive there. Located by regula falsi on gap with warm starts
(:func:`alpha_c_1rsb`) or, as a check, by a scan on a fixed α grid (:func:`scan_crossing`); its error from the
integration error: gap recomputed on a coarser grid at the root, divided by the slope.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..model import ModelParams
from ..theory import rsb1
from ..theory.rsb1_saddle import Rsb1Point, Rsb1Status, Sector, TableLattice, maximise_x
from ..theory.routing import is_small
from ..theory.solve import solve

GRID = rsb1.OmegaGrid(2.7, 73)
"""ω grid of the crossing (spacing 0.075); Y_ORDER the Gauss–Hermite order in y (θ ≠ 0 needs >= 10: 0.01 %
of the RS e_t at order 12, 0.4 % at 8, σ = 0.7, α = 0.8)."""
Y_ORDER = 10
CHECK_GRID = rsb1.OmegaGrid(2.7, 55)
"""The coarser setting whose gap at the root gives the integration error."""
CHECK_Y_ORDER = 8
U_SCAN = (0.5, 0.7, 0.95, 1.3, 1.8)
"""The x scan, in units of α/e_RS (x* ≈ 0.8–1.3 α/e_RS at σ = 0.7)."""
NOT_REQUESTED = "not requested (transition(..., rsb1=True); `theory transition` asks for it)"
THETA_SEED = 0.3
"""θ/σ² of the semantic sector's first start."""


@dataclass
class SectorPair:
    """Both sectors' 1RSB ground states at one α (None where no saddle converged)."""

    alpha: float
    unin: Rsb1Point | None
    sem: Rsb1Point | None

    @property
    def gap(self) -> float:
        if self.unin is None or self.sem is None:
            return math.nan
        return self.sem.e - self.unin.e

    def to_dict(self) -> dict[str, Any]:
        s2 = (self.sem.sigma ** 2) if self.sem else 1.0
        return dict(alpha=self.alpha, gap=self.gap,
                    e_unin=self.unin.e if self.unin else None, x_unin=self.unin.x if self.unin else None,
                    e_sem=self.sem.e if self.sem else None, x_sem=self.sem.x if self.sem else None,
                    theta_over_sigma2_sem=self.sem.theta / s2 if self.sem else None,
                    q0_sem=self.sem.q0 if self.sem else None, dq_sem=self.sem.dq if self.sem else None)


class Sectors:
    """The two sectors' ground states along α on one table lattice, each warm-started from the nearest α done."""

    def __init__(self, params: ModelParams, grid: rsb1.OmegaGrid = GRID, y_order: int = Y_ORDER):
        self.params, self.done = params, {}
        self.lattice: TableLattice | None = None
        self.grid, self.y_order = grid, y_order

    def _rs(self, alpha: float):
        sol = solve(self.params, alpha, "uninformative", stability=False)[0]
        return sol.values["q"], sol.values["V"], sol.values["e_t"]

    def at(self, alpha: float) -> SectorPair:
        alpha = float(alpha)
        if alpha in self.done:
            return self.done[alpha]
        s2 = self.params.sigma ** 2
        near = min(self.done.values(), key=lambda p: abs(p.alpha - alpha), default=None)
        if near is None or near.unin is None:
            q, V, e = self._rs(alpha)
            u0 = (0.001, q, 0.7 * V)
            scale = e / alpha
            if self.lattice is None:
                self.lattice = TableLattice(self.params, self.grid, self.y_order, V_ref=V)
        else:
            u0, scale = near.unin.unknowns, near.unin.e / near.alpha
        s0 = near.sem.unknowns if near is not None and near.sem is not None else (
            u0[0], max(u0[1] - THETA_SEED ** 2 * s2, 0.02), u0[2], THETA_SEED * s2)
        xs = [u / scale for u in U_SCAN]
        pair = SectorPair(alpha, _best(self.lattice, alpha, xs, u0, Sector.UNINFORMATIVE),
                          _best(self.lattice, alpha, xs, s0, Sector.SEMANTIC))
        self.done[alpha] = pair
        return pair


def _best(lattice, alpha, xs, start, sector) -> Rsb1Point | None:
    best, _ = maximise_x(lattice, alpha, xs, start, sector)
    return best if best is not None and best.status is Rsb1Status.CONVERGED else None


def _interp_root(a0: float, g0: float, a1: float, g1: float) -> float:
    return a0 + (a1 - a0) * g0 / (g0 - g1)


def scan_crossing(sectors: Sectors, alphas: Sequence[float]) -> tuple[float | None, list[SectorPair]]:
    """The brute-force method: gap on ``alphas`` (increasing), the first sign change from + to − linearly
    interpolated. (None, pairs) where there is none."""
    pairs = [sectors.at(a) for a in sorted(alphas)]
    for p, n in zip(pairs, pairs[1:]):
        if math.isfinite(p.gap) and math.isfinite(n.gap) and p.gap >= 0 > n.gap:
            return _interp_root(p.alpha, p.gap, n.alpha, n.gap), pairs
    return None, pairs


@dataclass
class Rsb1Crossing:
    """α_c^1RSB with its error and how it was found; ``alpha_c`` None with ``reason`` where not located."""

    alpha_c: float | None
    err: float | None
    reason: str
    pairs: list[SectorPair] = field(default_factory=list)
    cpu_s: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(alpha_c_1rsb=self.alpha_c, alpha_c_1rsb_err=self.err, alpha_c_1rsb_reason=self.reason,
                    alpha_c_1rsb_cpu_s=self.cpu_s, alpha_c_1rsb_settings=self.settings,
                    alpha_c_1rsb_rows=[p.to_dict() for p in sorted(self.pairs, key=lambda p: p.alpha)])


def alpha_c_1rsb(params: ModelParams, alpha_hi: float, *, step: float = 0.1, alpha_min: float = 0.1,
                 xtol: float = 0.005, max_evals: int = 12, grid: rsb1.OmegaGrid = GRID, y_order: int = Y_ORDER,
                 check: tuple[rsb1.OmegaGrid, int] | None = (CHECK_GRID, CHECK_Y_ORDER)) -> Rsb1Crossing:
    """α_c^1RSB below ``alpha_hi`` (the RS α_c): gap stepped down from ``alpha_hi − step/2`` by ``step`` until
    it is >= 0 (bracket), then regula falsi (Illinois) to ``xtol`` in α, at most ``max_evals`` α's in all. The
    error: |gap at the root on ``check``| / slope of the bracket, plus the bracket's half width."""
    t0 = time.process_time()
    if not is_small(params):
        return Rsb1Crossing(None, None, "1RSB is implemented for L = 2, r = r* = 1 with the paper's P only")
    sec = Sectors(params, grid, y_order)
    settings = dict(grid_n=grid.n, grid_R=grid.R, y_order=y_order, xtol=xtol)
    hi = alpha_hi - 0.5 * step
    p_hi = sec.at(hi)
    if not p_hi.gap < 0:
        return Rsb1Crossing(None, None, f"the semantic 1RSB state is not below the uninformative one at alpha = "
                            f"{hi:.3g} (gap {p_hi.gap:.3g})", [p_hi], time.process_time() - t0, settings)
    lo, p_lo = hi, p_hi
    while True:
        lo = round(lo - step, 10)
        if lo < alpha_min or len(sec.done) >= max_evals:
            return Rsb1Crossing(None, None, f"gap < 0 down to alpha = {lo + step:.3g}: alpha_c^1RSB below it",
                                list(sec.done.values()), time.process_time() - t0, settings)
        p_lo = sec.at(lo)
        if not math.isfinite(p_lo.gap):
            return Rsb1Crossing(None, None, f"no converged 1RSB saddle at alpha = {lo:.3g}", list(sec.done.values()),
                                time.process_time() - t0, settings)
        if p_lo.gap >= 0:
            break
        hi, p_hi = lo, p_lo
    a, ga, b, gb = lo, p_lo.gap, hi, p_hi.gap
    side = 0
    while b - a > xtol and len(sec.done) < max_evals:
        c = _interp_root(a, ga, b, gb)
        c = min(max(c, a + 0.1 * (b - a)), b - 0.1 * (b - a))
        gc = sec.at(c).gap
        if not math.isfinite(gc):
            break
        if gc >= 0:
            a, ga = c, gc
            gb, side = (gb / 2, 1) if side == 1 else (gb, 1)
        else:
            b, gb = c, gc
            ga, side = (ga / 2, -1) if side == -1 else (ga, -1)
    root = _interp_root(a, ga, b, gb)
    slope = (sec.done[b].gap - sec.done[a].gap) / (b - a)
    err = 0.5 * (b - a)
    reason = ""
    if check is not None:
        g_check = Sectors(params, *check).at(root).gap
        err += abs(g_check) / abs(slope) if math.isfinite(g_check) and slope != 0 else math.inf
        settings.update(check_grid_n=check[0].n, check_y_order=check[1], check_gap_at_root=g_check)
    if b - a > xtol:
        reason = f"bracket [{a:.4g}, {b:.4g}] not narrowed to {xtol:g} within {max_evals} alphas"
    return Rsb1Crossing(root, err, reason, list(sec.done.values()), time.process_time() - t0, settings)


def report(params: ModelParams, alpha_c: float | None, against: str,
           compute: Callable[..., Rsb1Crossing] | None = None) -> Rsb1Crossing:
    """α_c^1RSB (``compute``, default :func:`alpha_c_1rsb`) where RS is in doubt (the competitor below the RS α_c
    is the uninformative point); elsewhere nothing is solved and the reason says why."""
    if alpha_c is None:
        return Rsb1Crossing(None, None, "no RS alpha_c")
    if against != "uninformative":
        return Rsb1Crossing(None, None, f"not computed: the RS competitor below alpha_c is the {against} branch, "
                            "where RS is confirmed (docs/theory/beyond-rs.md)")
    return (compute or alpha_c_1rsb)(params, alpha_c)
