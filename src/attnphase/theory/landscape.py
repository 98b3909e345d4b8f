"""The training-loss landscape at fixed overlaps: the replica-symmetric saddle point of Φ (MODEL.md §8) with the
teacher overlap θ, the positional overlap M, or both held fixed (issue 32; the fixed-M case alone is
:mod:`.constrained`).

Holding a block fixed and extremising Φ over everything else, its conjugate becomes a Lagrange multiplier fixed by
the prior side: stationarity of Φ in θ̂ gives ``θ = σ² D⁻¹ θ̂ ρ`` (ρ = σ² I), so ``θ̂ = D θ / σ⁴``; in M̂,
``M̂ = D M``; ``D = λ I + σ² V̂``. The other hats are the channel's (V̂'s Stein form keeps the channel's own θ̂),
and q, V come from the prior with these hats. The constrained free energy gives

    e_t(θ, M) = −Φ = the lowest training loss per dimension among students with these overlaps (d → ∞, RS),

and by the envelope theorem its gradient is the mismatch between the channel's hat and the multiplier:

    f_θ = −∂e_t/∂θ = θ̂_channel − D θ / σ⁴,     f_M = −∂e_t/∂M = M̂_channel − D M,

zero exactly at the fixed points of the full map. A curve ``e_t(θ)`` (M free) or ``e_t(m)`` (θ free) is the
profile of the landscape along one overlap; its local minima (``f`` crosses zero from + to −) are the minima of
the full map and its maxima the barriers between them. θ = 0 and M = 0 are invariant (MODEL.md §8), so at a
fixed θ the free M has two sectors (M = 0, and M ≠ 0 where that is unstable or a second branch exists), and
likewise θ at fixed M: :func:`profiles` solves both and keeps the lower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import xla_cache
from ..errors import ParameterError, check_range
from ..model import ModelParams
from . import channel_general as CG
from . import fixed_point, prox_general as PG
from .constrained import default_start, ThetaMode
from .qmc_config import QMCConfig
from .qmc_map import qmc_points
from .state import Hats, OrderParams, block_residual, flatten, invariants, positive_definite, shapes, unflatten
from .status import Status, worst_of

SEED = 0.02
"""|m| and θ/σ² of the free overlap's start (a small seed off its invariant subspace)."""


class Fixed(str, Enum):
    """Which overlaps the landscape holds fixed."""

    THETA = "theta"        # θ imposed, M free: e_t(θ)
    M = "m"                # M imposed, θ free: e_t(m)
    BOTH = "both"          # (M, θ) imposed: e_t(m, θ)

    @property
    def holds_theta(self) -> bool:
        return self is not Fixed.M

    @property
    def holds_m(self) -> bool:
        return self is not Fixed.THETA


def multiplier_hats(hats: Hats, x: OrderParams, knobs: CG.Knobs, fixed: Fixed) -> Hats:
    """The hats of the constrained saddle point (module docstring): the channel's ``hats`` with the conjugate of
    each fixed block replaced by its multiplier, ``θ̂ = D θ / σ⁴`` and/or ``M̂ = D M`` (``D = λ I + σ² V̂``), so
    that the prior returns the imposed overlaps."""
    r = hats.q_hat.shape[0]
    D = knobs.lam * jnp.eye(r) + knobs.sigma ** 2 * hats.V_hat
    out = hats
    if fixed.holds_theta:
        out = out._replace(theta_hat=D @ x.theta / knobs.sigma ** 4)
    if fixed.holds_m:
        out = out._replace(M_hat=D @ x.M)
    return out


@lru_cache(maxsize=8)
def landscape_map(L: int, r: int, rs: int, k: int, A: tuple, P: tuple, fixed: Fixed):
    """The constrained map, jit-compiled and vmapped over rows: (flat state (R, n), imposed M (R, r, k),
    imposed θ (R, r, r*), knobs (R,), scramble index (R,), ξ (S, N, L, r), y (S, N, L, r*)) -> (new state,
    valid, aux) with aux e_t, eps_g, the forces ``force_theta`` (r×r*) and ``force_m`` (r×k) and the hats.
    Global multi-start prox at every evaluation."""
    A_, P_ = np.asarray(A), np.asarray(P)
    offsets = PG.start_offsets(L, r)

    def one(xf, M, th, knobs, s, xi_all, y_all):
        x = unflatten(xf, r, k, rs)
        x = x._replace(M=M if fixed.holds_m else x.M, theta=th if fixed.holds_theta else x.theta)
        out = CG.channel(x, knobs, xi_all[s], y_all[s], A_, P_, offsets)
        hats = multiplier_hats(out.hats, x, knobs, fixed)
        fx = CG.prior(hats, knobs)
        fx = fx._replace(M=M if fixed.holds_m else fx.M, theta=th if fixed.holds_theta else fx.theta)
        aux = {"e_t": -CG.free_energy(x, hats, out.EM, knobs), "eps_g": out.eps_g,
               "force_theta": out.hats.theta_hat - hats.theta_hat, "force_m": out.hats.M_hat - hats.M_hat,
               "hats": flatten(hats)}
        return flatten(fx), CG.valid(x, hats, knobs), aux

    xla_cache.enable()        # the persistent compilation cache, as every module that compiles a program
    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, 0, 0, None, None)))


@dataclass(frozen=True)
class LandscapePoint:
    """The constrained saddle point at one imposed overlap: means over the QMC scrambles (``values``) and their
    standard errors (``errors``) of q, m = ‖M‖_F, theta = ‖θ‖_F, V, eps_g, e_t and the forces along the fixed
    overlap (``force_theta`` = f_θ, ``force_m`` = f_M·M/‖M‖; −de_t/dθ and −de_t/dm). NaN unless CONVERGED."""

    params: ModelParams
    alpha: float
    fixed: Fixed
    m: float
    theta: float
    status: Status
    iterations: int
    residual: float
    x: OrderParams
    values: dict
    errors: dict
    qmc: QMCConfig

    @property
    def converged(self) -> bool:
        return self.status is Status.CONVERGED

    def to_dict(self) -> dict:
        """JSON-ready scalars: the imposed overlaps, the status, the values and their errors."""
        d = {"alpha": self.alpha, "fixed": self.fixed.value, "m_imposed": self.m, "theta_imposed": self.theta,
             "status": self.status.value, "iterations": self.iterations, "residual": self.residual,
             "qmc_points": self.qmc.points, "scrambles": self.qmc.scrambles}
        d.update({key: float(v) for key, v in self.values.items()})
        d.update({f"{key}_err": float(v) for key, v in self.errors.items()})
        return d


def start_state(params: ModelParams, fixed: Fixed, m: float, theta: float, seed: float = SEED) -> OrderParams:
    """The constrained module's start (:func:`constrained.default_start`) with M = m on its first entry and
    θ = theta on the first direction; a free overlap gets ``seed`` (m = seed, θ = seed σ²)."""
    r, k = params.r, params.k
    M = np.zeros((r, k))
    M[0, 0] = m if fixed.holds_m else seed
    x = default_start(params, M, ThetaMode.FREE, theta / params.sigma ** 2 if fixed.holds_theta else seed)
    return x


def solve_landscape(params: ModelParams, alpha: float | Sequence[float], fixed: Fixed | str, ms: Sequence[float] | float = 0.0,
                    thetas: Sequence[float] | float = 0.0, *, seed: float = SEED,
                    init: Sequence[OrderParams] | None = None, qmc_config: QMCConfig | None = None,
                    rtol: float = 1e-6, max_steps: int = 400, damping: float = 0.5,
                    anderson: int = 5) -> list[LandscapePoint]:
    """Constrained saddle points (module docstring) at a batch of imposed overlaps: ``thetas`` (θ, the teacher
    overlap σ²Q*·Q/d, not θ/σ²) and/or ``ms`` (m, on the first positional direction), broadcast against each
    other; the free one is ignored; ``alpha`` one value or one per entry. One :class:`LandscapePoint` per entry, iterated together (rows = entry ×
    scramble) by ``fixed_point.iterate`` on one fixed QMC point set (default 1024 × 4)."""
    if not isinstance(params, ModelParams):
        raise ParameterError("params", "a ModelParams", type(params).__name__)
    for a in np.atleast_1d(np.asarray(alpha, float)):
        check_range("alpha", float(a), lo=0.0, lo_open=True)
    if fixed not in [f.value for f in Fixed] and not isinstance(fixed, Fixed):
        raise ParameterError("fixed", "one of " + ", ".join(f.value for f in Fixed), fixed)
    fixed = Fixed(fixed)
    ms_, ths = np.broadcast_arrays(np.atleast_1d(np.asarray(ms, float)), np.atleast_1d(np.asarray(thetas, float)))
    for name, v in (("ms", ms_), ("thetas", ths)):
        if not np.all(np.isfinite(v)):
            raise ParameterError(name, "finite numbers", v)
    if fixed.holds_theta and np.any(np.abs(ths) >= params.sigma ** 2):
        raise ParameterError("thetas", f"|θ| < σ² = {params.sigma ** 2:g} (θ/σ² is a cosine)", ths)
    L, r, rs, k = params.L, params.r, params.r_star, params.k
    cfg = QMCConfig(points=1024, scrambles=4, coarse=0) if qmc_config is None else qmc_config
    xi_all, y_all = qmc_points(params, cfg)
    B, S = len(ms_), cfg.scrambles
    alphas = np.atleast_1d(np.asarray(alpha, float))
    if len(alphas) not in (1, B):
        raise ParameterError("alpha", f"one value or {B} (one per imposed overlap)", len(alphas))
    alphas = np.broadcast_to(alphas, (B,))
    starts = [start_state(params, fixed, ms_[i], ths[i], seed) for i in range(B)] if init is None else list(init)
    if len(starts) != B:
        raise ParameterError("init", f"{B} states (one per imposed overlap)", len(starts))
    Ms = np.zeros((B, r, k))
    Ms[:, 0, 0] = ms_
    Ts = np.zeros((B, r, rs))
    Ts[:, 0, 0] = ths
    x0 = []
    for i, s in enumerate(starts):
        s = OrderParams(*(np.asarray(b, float) for b in s))
        s = s._replace(M=Ms[i] if fixed.holds_m else s.M, theta=Ts[i] if fixed.holds_theta else s.theta)
        x0.append(np.asarray(flatten(s)))
    X0 = np.repeat(np.stack(x0), S, axis=0)
    rows = np.arange(B * S)
    row_M, row_T = np.repeat(Ms, S, axis=0), np.repeat(Ts, S, axis=0)
    blocks = shapes(r, k, rs)
    with jax.enable_x64(True):
        fmap = landscape_map(L, r, rs, k, params.A, params.P, fixed)
        xi_j, y_j = jnp.asarray(xi_all), jnp.asarray(y_all)
        knobs = CG.Knobs(jnp.asarray(np.repeat(alphas, S)),
                         *(jnp.full(B * S, v) for v in (params.omega, params.sigma, params.lam)))

        def F(X):
            fx, ok, aux = fmap(jnp.asarray(X), jnp.asarray(row_M), jnp.asarray(row_T), knobs,
                               jnp.asarray(rows % S), xi_j, y_j)
            return np.asarray(fx), np.asarray(ok), {kk: np.asarray(v) for kk, v in aux.items()}

        run = fixed_point.iterate(F, X0, lambda X, Y: block_residual(X, Y, blocks, params.sigma), rtol=rtol,
                                  max_steps=max_steps, damping=damping, anderson=anderson, admissible=lambda v, _row: positive_definite(v, r, k, rs),
                                  backtrack=4)
    return [_point(params, alphas[i], fixed, ms_[i], ths[i], run, slice(i * S, (i + 1) * S), cfg) for i in range(B)]


def _point(params, alpha, fixed, m, theta, run, sl, cfg) -> LandscapePoint:
    """Means and standard errors over the scrambles of one imposed overlap (rows ``sl``)."""
    r, k, rs, S = params.r, params.k, params.r_star, cfg.scrambles
    status = worst_of(run.status[sl])
    xs = np.asarray(run.x[sl])
    inv = invariants(unflatten(xs, r, k, rs))
    fth = np.asarray(run.aux["force_theta"][sl])[:, 0, 0]
    fm = np.asarray(run.aux["force_m"][sl])[:, 0, 0]
    per = {"q": inv["q"], "m": inv["m"], "theta": inv["theta"], "V": inv["V"],
           "eps_g": np.asarray(run.aux["eps_g"][sl]), "e_t": np.asarray(run.aux["e_t"][sl]),
           "force_theta": fth * np.sign(theta or 1.0), "force_m": fm * np.sign(m or 1.0)}
    values = {kk: float(np.mean(v)) for kk, v in per.items()}
    errors = {kk: float(np.std(v, ddof=1) / math.sqrt(S)) if S > 1 else math.nan for kk, v in per.items()}
    if status is not Status.CONVERGED:
        values = {kk: math.nan for kk in values}
        errors = {kk: math.nan for kk in errors}
    x = unflatten(xs.mean(0), r, k, rs)
    return LandscapePoint(params, float(alpha), fixed, float(m), float(theta), status,
                          int(np.max(run.iterations[sl])), float(np.max(run.residual[sl])),
                          OrderParams(*(np.asarray(b) for b in x)), values, errors, cfg)


@dataclass(frozen=True)
class Stationary:
    """A stationary point of a profile e_t(x): ``kind`` "min" or "max", its position ``at`` (where the force
    changes sign, linearly interpolated) and ``e_t`` there (cubic Hermite interpolation with e_t' = −f). Kind
    "gap" marks an unconverged sample (``at`` its x, ``e_t`` NaN): a stationary point may hide there."""

    kind: str
    at: float
    e_t: float


def stationary_points(x: Sequence[float], e_t: Sequence[float], force: Sequence[float],
                      symmetric_origin: bool = True) -> list[Stationary]:
    """The local minima and maxima of a profile sampled at increasing ``x`` with values ``e_t`` and forces
    ``force`` = −de_t/dx: a minimum where f goes from + to −, a maximum from − to +. With ``symmetric_origin``
    (x = 0 an invariant subspace: e_t even in x, f(0) = 0) the origin is a minimum when f < 0 just after it and a
    maximum when f > 0. NaN samples (unconverged) are skipped and listed as "gap" points in their place; a
    profile needs two finite samples."""
    x_all, e, f = (np.asarray(v, float) for v in (x, e_t, force))
    ok = np.isfinite(x_all) & np.isfinite(e) & np.isfinite(f)
    x, e, f = x_all[ok], e[ok], f[ok]
    if len(x) < 2 or np.any(np.diff(x) <= 0):
        raise ParameterError("x", "at least two finite samples in increasing order", x)
    out = [Stationary("gap", float(g), math.nan) for g in x_all[~ok] if np.isfinite(g)]
    start = 0
    if symmetric_origin and x[0] == 0.0:
        out.append(Stationary("min" if f[1] < 0 else "max", 0.0, float(e[0])))
        start = 1
    for i in range(start, len(x) - 1):
        a, b = f[i], f[i + 1]
        if a == 0.0 or np.sign(a) == np.sign(b):
            continue
        t = a / (a - b)
        h = x[i + 1] - x[i]
        h00, h10, h01, h11 = (2 * t ** 3 - 3 * t ** 2 + 1, t ** 3 - 2 * t ** 2 + t, -2 * t ** 3 + 3 * t ** 2,
                              t ** 3 - t ** 2)
        val = h00 * e[i] + h10 * h * (-a) + h01 * e[i + 1] + h11 * h * (-b)
        out.append(Stationary("min" if a > 0 else "max", float(x[i] + t * h), float(val)))
    return sorted(out, key=lambda p: p.at)


def barriers(points: list[Stationary]) -> list[float]:
    """Between successive minima of a profile, the height of the highest maximum above the higher of the two
    minima (the barrier seen from the metastable side); empty with fewer than two minima. Refused (ParameterError)
    where the profile has unconverged samples ("gap" points): a maximum or a minimum may hide in the gap."""
    gaps = [p.at for p in points if p.kind == "gap"]
    if gaps:
        raise ParameterError("points", "a profile with every sample converged (the barriers are not resolved "
                             "across unconverged samples)", [f"gap at {g:.4g}" for g in gaps])
    out, last = [], None
    top = -math.inf
    for p in points:
        if p.kind == "max":
            top = max(top, p.e_t)
        else:
            if last is not None and math.isfinite(top):
                out.append(top - max(last.e_t, p.e_t))
            last, top = p, -math.inf
    return out


THETA_GRID = tuple(round(0.1 * i, 3) for i in range(8))
"""θ/σ² of the default e_t(θ) profile (0 to 0.7)."""
M_GRID = tuple(round(0.05 * i, 3) for i in range(8))
"""m of the default e_t(m) profile (0 to 0.35)."""
FREE_SEEDS = {"theta": 0.2, "m": 0.5}
"""Start of the free overlap off its invariant subspace: m = 0.2 on the e_t(θ) profile, θ/σ² = 0.5 on e_t(m)."""


def profiles(params: ModelParams, alpha: float, theta_grid: Sequence[float] = THETA_GRID,
             m_grid: Sequence[float] = M_GRID, qmc_config: QMCConfig | None = None, max_steps: int = 400) -> dict:
    """Both profiles of the landscape at one point (module docstring): e_t(θ) on ``theta_grid`` (values of θ/σ²)
    and e_t(m) on ``m_grid``, the other overlap minimised over. It has two sectors, found separately: its
    invariant subspace (pinned to 0: ``Fixed.BOTH``) and off it (free, started from ``FREE_SEEDS``); each grid
    point keeps the lower converged e_t (``sector`` says which). Per profile: the rows
    (:meth:`LandscapePoint.to_dict`, θ as θ/σ²), the stationary points of the lower envelope
    (:func:`stationary_points`, the origin invariant), the barriers between its minima. r = r* = 1, k = 1."""
    if (params.r, params.r_star, params.k) != (1, 1, 1):
        raise ParameterError("params", "r = r* = 1 and one positional direction (k = 1) for the landscape",
                             (params.r, params.r_star, params.k))
    for name, grid, hi in (("theta_grid", theta_grid, 1.0), ("m_grid", m_grid, math.inf)):
        g = np.asarray(grid, float)
        if g.ndim != 1 or len(g) < 2 or np.any(np.diff(g) <= 0) or g[0] < 0 or g[-1] >= hi:
            raise ParameterError(name, f"at least two increasing values in [0, {hi:g})", grid)
    s2 = params.sigma ** 2
    out = {"alpha": float(alpha), "params": params.to_dict()}
    th = np.asarray(theta_grid, float) * s2
    mg = np.asarray(m_grid, float)
    for key, free, grid, scale in (("theta", Fixed.THETA, th, s2), ("m", Fixed.M, mg, 1.0)):
        kw = {"thetas": grid} if key == "theta" else {"ms": grid}
        pinned = solve_landscape(params, alpha, Fixed.BOTH, qmc_config=qmc_config, max_steps=max_steps, **kw)
        loose = solve_landscape(params, alpha, free, seed=FREE_SEEDS[key], qmc_config=qmc_config,
                                max_steps=max_steps, **kw)
        rows, pts = [], []
        for a, b in zip(pinned, loose):
            best, sector = (b, "free") if b.converged and not (a.converged and a.values["e_t"] <= b.values["e_t"]) \
                else (a, "pinned")
            d = best.to_dict()
            for name in ("theta", "theta_err", "theta_imposed"):
                d[name] = d[name] / s2
            d["sector"] = sector
            d["e_t_other_sector"] = (b if sector == "pinned" else a).values["e_t"]
            rows.append(d)
            pts.append(best)
        x = np.array([r[f"{key}_imposed"] for r in rows])
        f = np.array([r[f"force_{key}"] for r in rows]) * scale          # −de_t/d(θ/σ²) or −de_t/dm
        e = np.array([r["e_t"] for r in rows])
        st = stationary_points(x, e, f) if np.isfinite(e).sum() >= 2 else []
        gaps = any(p.kind == "gap" for p in st) or not st
        out[key] = {"rows": rows, "stationary": [vars(p) for p in st if p.kind != "gap"],
                    "barriers": None if gaps else barriers(st),
                    "barriers_reason": ("not resolved: unconverged samples in the profile" if gaps else ""),
                    "not_converged": int(sum(not p.converged for p in pts))}
    return out
