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
"""ω grid of the crossing at σ <= 0.7 (spacing 0.075); Y_ORDER the Gauss–Hermite order in y (θ ≠ 0 needs
>= 10: 0.01 % of the RS e_t at order 12, 0.4 % at 8, σ = 0.7, α = 0.8). Wider σ: :func:`grids_for`."""
Y_ORDER = 10
CHECK_GRID = rsb1.OmegaGrid(2.7, 55)
"""The coarser setting whose gap at the root gives the integration error."""
CHECK_Y_ORDER = 8


def grids_for(params: ModelParams) -> tuple[rsb1.OmegaGrid, rsb1.OmegaGrid]:
    """(grid, check grid): GRID and CHECK_GRID up to σ = 0.7; above, the range grows as 3.9σ (the outer mean
    (θ/σ) y reaches ±2σ) at spacings 0.1 and 0.15 (the cost kept at GRID's)."""
    if params.sigma <= 0.7:
        return GRID, CHECK_GRID
    R = round(3.9 * params.sigma, 2)
    return (rsb1.OmegaGrid(R, 2 * int(round(R / 0.1)) + 1), rsb1.OmegaGrid(R, 2 * int(round(R / 0.15)) + 1))
U_SCAN = (0.5, 0.7, 0.95, 1.3, 1.8)
"""The x scan, in units of α/e_RS (x* ≈ 0.8–1.3 α/e_RS at σ = 0.7)."""
NOT_REQUESTED = "not requested (transition(..., rsb1=True); `theory transition` asks for it)"
THETA_SEEDS = (0.2, 0.35, 0.5)
"""θ/σ² of the semantic sector's starts where no neighbouring α gives one (the lowest θ ≠ 0 saddle is kept).
Where all of them fall onto θ = 0, the RS semantic point at that α (where it exists) is one more start
(:func:`rs_semantic_start`): at σ = 1.0, α = 0.713 every one of these fell onto θ = 0, yet the semantic state
exists there (continued from α = 0.7: θ/σ² = 0.54, 6e-4 below the uninformative one)."""
DQ_SEED = 0.02
"""Δq of the start taken from the RS semantic point (RS: Δq = 0)."""
M_SEEDS = (0.15,)
"""m of the positional sector's start where no neighbouring α gives one."""
THETA_ZERO = 1e-6
"""|θ|/σ² below this: the semantic saddle is a θ = 0 one."""


@dataclass
class SectorPair:
    """Both sectors' 1RSB ground states at one α (None where no saddle converged)."""

    alpha: float
    unin: Rsb1Point | None
    sem: Rsb1Point | None
    pos: Rsb1Point | None = None

    @property
    def positional(self) -> bool:
        """The positional sector was solved and its saddle has m ≠ 0."""
        return self.pos is not None and abs(self.pos.m) > THETA_ZERO

    @property
    def competitor(self) -> Rsb1Point | None:
        """The lower of the uninformative and (where solved, m ≠ 0) the positional ground state."""
        if self.positional and (self.unin is None or self.pos.e < self.unin.e):
            return self.pos
        return self.unin

    @property
    def semantic(self) -> bool:
        """The semantic sector's saddle has θ ≠ 0 (else it fell back onto a θ = 0 saddle)."""
        return self.sem is not None and abs(self.sem.theta) > THETA_ZERO * self.sem.sigma ** 2

    @property
    def gap(self) -> float:
        """e_gs^sem − e_gs of the competitor; where the semantic saddle has θ = 0 no semantic state is below:
        max(·, 0)."""
        if self.competitor is None or self.sem is None:
            return math.nan
        d = self.sem.e - self.competitor.e
        return d if self.semantic else max(d, 0.0)

    def to_dict(self) -> dict[str, Any]:
        s2 = (self.sem.sigma ** 2) if self.sem else 1.0
        return dict(alpha=self.alpha, gap=self.gap,
                    e_unin=self.unin.e if self.unin else None, x_unin=self.unin.x if self.unin else None,
                    e_sem=self.sem.e if self.sem else None, x_sem=self.sem.x if self.sem else None,
                    theta_over_sigma2_sem=self.sem.theta / s2 if self.sem else None,
                    q0_sem=self.sem.q0 if self.sem else None, dq_sem=self.sem.dq if self.sem else None,
                    e_pos=self.pos.e if self.pos else None, m_pos=self.pos.m if self.pos else None,
                    competitor=None if self.competitor is None else self.competitor.sector.value)


class Sectors:
    """The two sectors' ground states along α on one table lattice, each warm-started from the nearest α done."""

    def __init__(self, params: ModelParams, grid: rsb1.OmegaGrid = GRID, y_order: int = Y_ORDER,
                 seed: SectorPair | None = None, positional: bool = True):
        self.params, self.done, self.seed, self.with_pos = params, {}, seed, positional
        self.lattice: TableLattice | None = None
        self.grid, self.y_order = grid, y_order

    def at(self, alpha: float) -> SectorPair:
        """Both ground states at ``alpha``, warm-started from the nearest α done (or ``seed``), else from the RS
        uninformative point and :data:`THETA_SEEDS`."""
        alpha = float(alpha)
        if alpha in self.done:
            return self.done[alpha]
        s2 = self.params.sigma ** 2
        near = min(self.done.values(), key=lambda p: abs(p.alpha - alpha), default=self.seed)
        if near is None or near.unin is None:
            sol = solve(self.params, alpha, "uninformative", stability=False)[0]
            q, V, e = sol.values["q"], sol.values["V"], sol.values["e_t"]
            u0, scale = (0.001, q, 0.7 * V), e / alpha
        else:
            u0, scale, V = near.unin.unknowns, near.unin.e / near.alpha, near.unin.V
        if self.lattice is None:
            self.lattice = TableLattice(self.params, self.grid, self.y_order, V_ref=V)
        xs = [u / scale for u in U_SCAN]
        unin = _best(self.lattice, alpha, xs, u0, Sector.UNINFORMATIVE)
        if near is not None and near.semantic:
            starts = [near.sem.unknowns]
        else:
            starts = [(u0[0], max(u0[1] - t * t * s2, 0.02), u0[2], t * s2) for t in THETA_SEEDS]
        sems = [b for b in (_best(self.lattice, alpha, xs, st, Sector.SEMANTIC) for st in starts) if b is not None]
        nonzero = [b for b in sems if abs(b.theta) > THETA_ZERO * s2]
        if not nonzero and (near is None or not near.semantic):
            rs = rs_semantic_start(self.params, alpha)
            b = None if rs is None else _best(self.lattice, alpha, xs, rs, Sector.SEMANTIC)
            sems += [b] if b is not None else []
            nonzero += [b] if b is not None and abs(b.theta) > THETA_ZERO * s2 else []
        sem = min(nonzero or sems, key=lambda b: b.e, default=None)
        pos = None
        if self.with_pos:
            if near is not None and near.positional:
                pstarts = [near.pos.unknowns]
            else:
                q1, V0 = u0[0] + u0[1], u0[2]
                pstarts = [(max(0.5 * q1, 2 * s2 * m * m), 0.4 * q1, 0.85 * V0, m) for m in M_SEEDS]
            found = [b for b in (_best(self.lattice, alpha, xs, st, Sector.POSITIONAL) for st in pstarts)
                     if b is not None and abs(b.m) > THETA_ZERO]
            pos = min(found, key=lambda b: b.e, default=None)
        pair = SectorPair(alpha, unin, sem, pos)
        self.done[alpha] = pair
        return pair


def rs_semantic_start(params: ModelParams, alpha: float) -> tuple | None:
    """The semantic sector's unknowns (p0, Δq, V, θ) next to the RS semantic point at ``alpha`` (Δq =
    :data:`DQ_SEED`, V at 0.7 of RS as the other starts); None where the RS solve finds no θ ≠ 0 point."""
    sol = solve(params, alpha, "semantic", stability=False)[0]
    s2 = params.sigma ** 2
    q, V, theta = (sol.values.get(k, math.nan) for k in ("q", "V", "theta"))
    if not sol.status.ok or not all(map(math.isfinite, (q, V, theta))) or abs(theta) <= THETA_ZERO * s2:
        return None
    return (max(q - theta * theta / s2 - DQ_SEED, 1e-3), DQ_SEED, 0.7 * V, theta)


def _best(lattice, alpha, xs, start, sector) -> Rsb1Point | None:
    best, _ = maximise_x(lattice, alpha, xs, start, sector)
    return best if best is not None and best.status is Rsb1Status.CONVERGED else None


def _interp_root(a0: float, g0: float, a1: float, g1: float) -> float:
    return a0 + (a1 - a0) * g0 / (g0 - g1)


def scan_crossing(sectors: Sectors, alphas: Sequence[float]) -> tuple[float | None, list[SectorPair]]:
    """The brute-force method: gap on ``alphas``, solved from the largest down (the semantic saddle continued
    towards its onset), the sign change from + (below) to − (above) nearest the top, linearly interpolated.
    (None, pairs) where there is none."""
    pairs = sorted((sectors.at(a) for a in sorted(alphas, reverse=True)), key=lambda p: p.alpha)
    ok = [p for p in pairs if math.isfinite(p.gap)]          # an α without a converged saddle is skipped
    for p, n in reversed(list(zip(ok, ok[1:]))):
        if p.gap >= 0 > n.gap:
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
                 xtol: float = 0.005, max_evals: int = 12, grid: rsb1.OmegaGrid | None = None,
                 y_order: int = Y_ORDER, check: tuple[rsb1.OmegaGrid, int] | None | str = "default",
                 positional: bool = True,
                 progress: Callable[[str, int, int], None] | None = None) -> Rsb1Crossing:
    """α_c^1RSB below ``alpha_hi`` (the RS α_c): gap stepped down from ``alpha_hi − step/2`` by ``step`` until
    it is >= 0 (bracket; also past α's where no start found the θ ≠ 0 semantic saddle), then regula falsi
    (Illinois) to ``xtol`` in α, at most ``max_evals`` α's in all. The
    error: |gap at the root on ``check``| / slope of the bracket, plus the bracket's half width. ``progress``:
    called ``(PROGRESS_STAGE, α's solved, max_evals)`` after each α (each takes tens of CPU seconds)."""
    t0 = time.process_time()
    if not is_small(params):
        return Rsb1Crossing(None, None, "1RSB is implemented for L = 2, r = r* = 1 with the paper's P only")
    grid = grids_for(params)[0] if grid is None else grid
    check = (grids_for(params)[1], CHECK_Y_ORDER) if check == "default" else check
    sec = _Reporting(Sectors(params, grid, y_order, positional=positional), progress, max_evals)
    settings = dict(grid_n=grid.n, grid_R=grid.R, y_order=y_order, xtol=xtol)
    hi = alpha_hi - 0.5 * step
    p_hi = sec.at(hi)
    while not p_hi.semantic and round(hi - step, 10) >= alpha_min and len(sec.done) < max_evals:
        hi = round(hi - step, 10)       # the seeds missed the θ ≠ 0 saddle (λ = 0.001: at 0.716, not at 0.616)
        p_hi = sec.at(hi)
    if not p_hi.semantic:
        return Rsb1Crossing(None, None, f"no theta != 0 semantic 1RSB saddle found at alpha = {hi:.3g} (every start "
                            "fell onto theta = 0)", list(sec.done.values()), time.process_time() - t0, settings)
    if not p_hi.gap < 0:
        return Rsb1Crossing(None, None, f"the semantic 1RSB state is not below its competitor at alpha = "
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
        near = min(sec.done.values(), key=lambda p: abs(p.alpha - root))
        g_check = Sectors(params, *check, seed=near, positional=positional).at(root).gap
        err += abs(g_check) / abs(slope) if math.isfinite(g_check) and slope != 0 else math.inf
        settings.update(check_grid_n=check[0].n, check_y_order=check[1], check_gap_at_root=g_check)
    if b - a > xtol:
        reason = f"bracket [{a:.4g}, {b:.4g}] not narrowed to {xtol:g} within {max_evals} alphas"
    return Rsb1Crossing(root, err, reason, list(sec.done.values()), time.process_time() - t0, settings)


PROGRESS_STAGE = "alpha_c at one step of RSB"
POSITIONAL_REASON = ("not computed: the RS competitor below alpha_c is the positional branch, RS-stable (replicon "
                     "0.25-0.41); where one step of RSB was solved there (sigma = 0.5, lambda = 0.01, omega = 0.1-0.3) "
                     "it moves alpha_c by -0.007 to -0.0002, while finite-d training crosses 0.04-0.06 lower at "
                     "omega <= 0.2 (docs/theory/beyond-rs.md, 'Small omega at the paper's sigma')")
"""The reason of a null α_c^1RSB against the positional branch (measured: docs/notes/2026-12-06-small-omega-rsb.md)."""


class _Reporting:
    """``sectors`` with a progress call after each newly solved α (``done`` and ``at`` as :class:`Sectors`)."""

    def __init__(self, sectors, progress, total: int):
        self.sectors, self.progress, self.total = sectors, progress, total

    @property
    def done(self):
        return self.sectors.done

    def at(self, alpha: float):
        pair = self.sectors.at(alpha)
        if self.progress is not None:
            self.progress(PROGRESS_STAGE, min(len(self.done), self.total), self.total)
        return pair


def report(params: ModelParams, alpha_c: float | None, against: str,
           compute: Callable[..., Rsb1Crossing] | None = None,
           progress: Callable[[str, int, int], None] | None = None) -> Rsb1Crossing:
    """α_c^1RSB (``compute``, default :func:`alpha_c_1rsb`) where RS is in doubt (the competitor below the RS α_c
    is the uninformative point); elsewhere nothing is solved and the reason says why."""
    if alpha_c is None:
        return Rsb1Crossing(None, None, "no RS alpha_c")
    if against == "positional":
        return Rsb1Crossing(None, None, POSITIONAL_REASON)
    if against != "uninformative":
        return Rsb1Crossing(None, None, f"not computed: the RS competitor below alpha_c is the {against} branch, "
                            "where RS is confirmed (docs/theory/beyond-rs.md)")
    if compute is not None:
        return compute(params, alpha_c)
    if progress is not None:
        progress(PROGRESS_STAGE, 0, 1)
    return alpha_c_1rsb(params, alpha_c, progress=progress)
