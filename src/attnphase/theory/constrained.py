"""The replica theory at a FIXED positional overlap M: a constrained saddle point of Φ (MODEL.md §8; issue 11,
helper hA; derivation in docs/notes/2026-12-05-theory-general.md, "Fixed positional overlap").

Φ(q, M, θ, V; q̂, M̂, θ̂, V̂) of MODEL.md §8 is ``½ tr(V̂q) − ½ tr(q̂V) − tr(MᵀM̂) − tr(θᵀθ̂) + Ψ_w(q̂, M̂, θ̂, V̂)
− α Ψ_c(q, M, θ, V)`` with the prior (ridge) term ``Ψ_w = ½ tr[D⁻¹(σ²q̂ + M̂M̂ᵀ + σ⁴θ̂θ̂ᵀ)]``, ``D = λ I + σ²V̂``,
and the channel term ``Ψ_c = E[min_h F]`` (Moreau envelope). Holding M fixed and extremising over everything
else (M̂ included: it is the conjugate of the constraint ``Qᵀu/√d = M``) gives

- stationarity in q, θ, V: the channel's q̂, θ̂, V̂, unchanged;
- stationarity in M̂: ``M = D⁻¹ M̂``, i.e. the multiplier ``M̂ = D M`` on the prior side (the prior then returns
  the imposed M, and ``q = σ² D⁻¹(σ²q̂ + σ⁴θ̂θ̂ᵀ)D⁻¹ + σ² M Mᵀ``);
- no equation for M. The channel still produces its own ``M̂_c = α E[gᵀP] = −α ∂Ψ_c/∂M``.

``e_t(M) = −Φ(M)`` is the minimal training loss per dimension among students with ``Qᵀu/√d = M`` (the
zero-temperature free energy of the constrained problem). By the envelope theorem (Φ stationary in all other
variables) ``dΦ/dM = ∂Φ/∂M = −M̂ − α ∂Ψ_c/∂M = M̂_c − D M``, so the generalised force on M is

    f(M) = −de_t/dM = M̂_c − D M,

zero exactly at the fixed points of the unconstrained map. The force is the gradient of the potential e_t, not of
ε_g (ε_g is not what training minimises). On a QMC point set the channel hats are Stein forms whose stationarity
in (q, θ, V) holds up to the integration error, so ``−de_t/dM`` by finite differences equals f up to that error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import exported_programs, xla_cache
from ..errors import ParameterError, check_int, check_range
from ..model import ModelParams
from . import channel_general as CG
from . import fixed_point, prox_general as PG
from .qmc_config import QMCConfig
from .qmc_map import bucket, qmc_points
from .starts import default_init
from .state import Hats, OrderParams, block_residual, flatten, invariants, positive_definite, shapes, unflatten
from .status import Status, worst_of


class ThetaMode(str, Enum):
    """What the constrained map does with the teacher overlap."""

    FREE = "free"        # θ̂ from the channel: the constrained minimum over θ too
    PINNED = "pinned"    # θ̂ = 0: the positional subspace θ = 0 (invariant for every A, P, MODEL.md §8)


THETA_SEED = 0.02
"""θ/σ² of the default start in ``ThetaMode.FREE`` (a small seed off the invariant subspace θ = 0)."""


def lagrange_hats(hats: Hats, M, knobs: CG.Knobs, theta: ThetaMode) -> Hats:
    """The hats of the constrained saddle point (module docstring): the channel's q̂, θ̂, V̂ (θ̂ = 0 when
    pinned) and the multiplier ``M̂ = D M``, ``D = λ I + σ² V̂``, which makes the ridge prior return M."""
    r = hats.q_hat.shape[0]
    D = knobs.lam * jnp.eye(r) + knobs.sigma ** 2 * hats.V_hat
    th = jnp.zeros_like(hats.theta_hat) if theta is ThetaMode.PINNED else hats.theta_hat
    return hats._replace(M_hat=D @ M, theta_hat=th)


@lru_cache(maxsize=16)
def _compiled(L: int, r: int, rs: int, k: int, A: tuple, P: tuple, theta: ThetaMode, warm: bool):
    """The constrained map over rows (M value, scramble), jit-compiled and vmapped: X (R, n), the imposed M
    (R, r, k), knobs (R,), scramble index (R,), point sets, previous minimisers (R, N, 2, L, r) (``warm`` only:
    one Newton per sample from them, :func:`prox_general.prox_warm`; otherwise the global multi-start prox).
    A :class:`attnphase.exported_programs.StoredProgram` (traced once, kept on disk; the same numbers)."""
    xla_cache.enable()
    A_, P_ = np.asarray(A), np.asarray(P)
    offsets = PG.start_offsets(L, r)

    def one(xf, M, knobs, s, xi_all, y_all, h_prev):
        x = unflatten(xf, r, k, rs)._replace(M=M)
        out = CG.channel(x, knobs, xi_all[s], y_all[s], A_, P_, offsets, h_prev if warm else None)
        hats = lagrange_hats(out.hats, M, knobs, theta)
        fx = CG.prior(hats, knobs)._replace(M=M)
        aux = {"e_t": -CG.free_energy(x, hats, out.EM, knobs), "eps_g": out.eps_g, "max_grad": out.max_grad,
               "force": out.hats.M_hat - hats.M_hat, "M_hat_channel": out.hats.M_hat, "hats": flatten(hats)}
        return flatten(fx), CG.valid(x, hats, knobs), aux, out.h

    fn = jax.jit(jax.vmap(one, in_axes=(0, 0, 0, 0, None, None, 0 if warm else None)))
    return exported_programs.StoredProgram("constrained._compiled", fn, (L, r, rs, k, A, P, theta.value, warm),
                                           MAP_AXES)


MAP_AXES = (("R", None), ("R", None, None), ("R",), ("R",), ("S", "N", None, None), ("S", "N", None, None),
            ("R", "N", None, None, None))
"""Axes of the constrained map's arguments (X, M, knobs, scramble index, xi, y, previous minimisers) that change
size between calls (rows R, scrambles S, QMC points N): one stored program serves them all
(:mod:`attnphase.exported_programs`, as ``engine.MAP_AXES``)."""


@dataclass(frozen=True)
class ConstrainedSolution:
    """The constrained saddle point at one imposed M: means over the scrambles and standard errors
    (``*_err``). ``values``: q, m = ‖M‖_F, theta = ‖θ‖_F, V (traces/norms as ``state.invariants``), eps_g, e_t
    (d → ∞), ``force`` (r×k, f = −de_t/dM), ``force_along`` (f·M/‖M‖, the radial component; NaN at M = 0) and
    ``force_norm``. NaN unless ``status`` is CONVERGED (every scramble's own constrained fixed point)."""

    params: ModelParams
    alpha: float
    M: np.ndarray
    theta_mode: ThetaMode
    status: Status
    iterations: int
    residual: float
    x: OrderParams
    hats: Hats
    values: dict
    errors: dict
    qmc: QMCConfig
    per_scramble: dict = field(default_factory=dict)

    @property
    def converged(self) -> bool:
        return self.status is Status.CONVERGED

    def to_dict(self) -> dict:
        """JSON-ready: scalar values and errors, the imposed M, the force, the matrices, the QMC size."""
        d = {"alpha": self.alpha, "theta_mode": self.theta_mode.value, "status": self.status.value,
             "iterations": self.iterations, "residual": self.residual, "M": np.asarray(self.M).tolist(),
             "qmc_points": self.qmc.points, "scrambles": self.qmc.scrambles, "seeds": list(self.qmc.seeds)}
        for key, v in self.values.items():
            d[key] = float(v) if np.ndim(v) == 0 else np.asarray(v).tolist()
        for key, v in self.errors.items():
            d[f"{key}_err"] = float(v) if np.ndim(v) == 0 else np.asarray(v).tolist()
        d["matrices"] = {**{kk: np.asarray(v).tolist() for kk, v in self.x._asdict().items()},
                         **{kk: np.asarray(v).tolist() for kk, v in self.hats._asdict().items()}}
        return d


def default_start(params: ModelParams, M: np.ndarray, theta: ThetaMode,
                  theta_seed: float = THETA_SEED) -> OrderParams:
    """The engine's positional start (``engine.default_init``) with the imposed M, q raised by ``σ² MMᵀ``
    (q ≥ σ²MMᵀ at a solution) and by ``θθᵀ/σ²`` and, in ``ThetaMode.FREE``, θ = ``theta_seed`` σ² (0.6: the
    semantic start)."""
    x = default_init(params, "positional")
    s2 = params.sigma ** 2
    th = np.zeros_like(np.asarray(x.theta))
    if theta is ThetaMode.FREE:
        th[0, 0] = theta_seed * s2
    q = np.asarray(x.q) + s2 * M @ M.T + th @ th.T / s2      # keeps ρ − θᵀq⁻¹θ positive definite
    return OrderParams(q, np.asarray(M, float), th, np.asarray(x.V))


def solve_constrained(params: ModelParams, alpha: float, Ms: Sequence | np.ndarray, *,
                      theta: ThetaMode | str = ThetaMode.PINNED, theta_seed: float = THETA_SEED,
                      init: OrderParams | Sequence | None = None,
                      qmc_config: QMCConfig | None = None, points: tuple | None = None, rtol: float = 1e-6,
                      max_steps: int = 300, damping: float = 0.6, anderson: int = 5,
                      full_prox_every: int = 16, backtrack: int = 4) -> list[ConstrainedSolution]:
    """Constrained saddle points (module docstring) at a batch of imposed overlaps ``Ms`` ((B, r, k), or one
    (r, k)), one :class:`ConstrainedSolution` each, iterated together (rows = M value × scramble) by
    ``fixed_point.iterate`` with the engine's two-tier prox (warm Newton, the global multi-start prox at least
    every ``full_prox_every`` evaluations and on the certifying one); ``backtrack``: the safeguard of
    ``fixed_point.iterate`` (halve a row's damping after an invalid evaluation or an oscillation; on by
    default: from the semantic seed at L = 2, α = 2 two of four scrambles overshot to ρ − θ²/q < 0 at the third
    evaluation without it).

    ``qmc_config``: a fixed size (default 1024 × 4, no coarse stage; error control is not applied here).
    ``points``: explicit point sets ``(xi (S, N, L, r), y (S, N, L, r*))`` instead of Sobol ones (tests:
    antithetic or token-permuted copies). ``init``: one state or one per M (default :func:`default_start` with
    ``theta_seed``).
    No gauge fixing: at r > 1 the imposed M fixes the rotations that move it, not the others."""
    if not isinstance(params, ModelParams):
        raise ParameterError("params", "a ModelParams", type(params).__name__)
    check_range("alpha", alpha, lo=0.0, lo_open=True)
    theta = ThetaMode(theta)
    L, r, rs, k = params.L, params.r, params.r_star, params.k
    Ms = np.asarray(Ms, dtype=np.float64)
    Ms = Ms[None] if Ms.ndim == 2 else Ms
    if Ms.ndim != 3 or Ms.shape[1:] != (r, k):
        raise ParameterError("Ms", f"an array of shape (r, k) = ({r}, {k}) or (B, {r}, {k})", Ms.shape)
    cfg = QMCConfig(points=1024, scrambles=4, coarse=0) if qmc_config is None else qmc_config
    full_prox_every = check_int("full_prox_every", full_prox_every, 1)
    if points is None:
        xi_all, y_all = qmc_points(params, cfg)
    else:
        xi_all, y_all = (np.asarray(a, dtype=np.float64) for a in points)
        if xi_all.shape[0] != cfg.scrambles or y_all.shape[0] != cfg.scrambles:
            raise ParameterError("points", f"{cfg.scrambles} point sets (one per scramble)", xi_all.shape[0])
    B, S, N = len(Ms), cfg.scrambles, xi_all.shape[1]
    inits = list(init) if isinstance(init, (list, tuple)) and init and isinstance(init[0], OrderParams) \
        else [init] * B
    if len(inits) != B:
        raise ParameterError("init", f"one OrderParams or {B} of them", len(inits))
    x0 = np.stack([np.asarray(flatten(OrderParams(*(np.asarray(b, float) for b in (
        default_start(params, Ms[i], theta, theta_seed) if inits[i] is None else inits[i]._replace(M=Ms[i]))))))
        for i in range(B)])
    X0 = np.repeat(x0, S, axis=0)                                       # rows: (M value, scramble)
    row_M = np.repeat(Ms, S, axis=0)
    knob_row = np.array([alpha, params.omega, params.sigma, params.lam], dtype=np.float64)
    blocks = shapes(r, k, rs)
    with jax.enable_x64(True):
        maps = {w: _compiled(L, r, rs, k, params.A, params.P, theta, w) for w in (False, True)}
        xi_j, y_j = jnp.asarray(xi_all), jnp.asarray(y_all)
        h_cache = np.zeros((B * S, N, 2, L, r))

        def call(Xa, idx, warm):
            m = len(idx)
            R = bucket(m, B * S)
            pad = np.concatenate([idx, np.full(R - m, idx[-1])])
            Xp = np.concatenate([Xa, np.repeat(Xa[-1:], R - m, axis=0)])
            knobs = CG.Knobs(*(jnp.full(R, v) for v in knob_row))
            fx, ok, aux, h = maps[warm](jnp.asarray(Xp), jnp.asarray(row_M[pad]), knobs, jnp.asarray(pad % S),
                                        xi_j, y_j, jnp.asarray(h_cache[pad]) if warm else None)
            h_cache[idx] = np.asarray(h)[:m]
            return np.asarray(fx)[:m], np.asarray(ok)[:m], {kk: np.asarray(v)[:m] for kk, v in aux.items()}

        def F(Xa, idx, full):
            parts = [(np.nonzero(sel)[0], call(Xa[sel], idx[sel], warm))
                     for sel, warm in ((full, False), (~full, True)) if sel.any()]
            if len(parts) == 1:
                return parts[0][1]
            fx, ok, aux = np.empty_like(Xa), np.empty(len(idx), bool), {}
            for pos, (f_, o_, a_) in parts:
                fx[pos], ok[pos] = f_, o_
                for kk, v in a_.items():
                    aux.setdefault(kk, np.empty((len(idx),) + v.shape[1:], v.dtype))[pos] = v
            return fx, ok, aux

        run = fixed_point.iterate(F, X0, lambda X, Y: block_residual(X, Y, blocks, params.sigma), rtol=rtol,
                                  max_steps=max_steps, damping=damping, anderson=anderson,
                                  admissible=lambda v, _row: positive_definite(v, r, k, rs), compact=True,
                                  full_every=full_prox_every, certify=True,
                                  backtrack=check_int("backtrack", backtrack, 0))
    return [_collect(params, alpha, Ms[i], theta, run, slice(i * S, (i + 1) * S), cfg) for i in range(B)]


def evaluate(params: ModelParams, alpha: float, M: np.ndarray, x: OrderParams, xi: np.ndarray, y: np.ndarray,
             theta: ThetaMode | str = ThetaMode.FREE) -> tuple[OrderParams, dict]:
    """One evaluation of the constrained map (global prox) at the state ``x`` with M imposed, on ONE point set
    ``xi (N, L, r)``, ``y (N, L, r*)``: the new state and the auxiliary values (e_t, eps_g, force, …)."""
    r, k, rs = params.r, params.k, params.r_star
    with jax.enable_x64(True):
        fmap = _compiled(params.L, r, rs, k, params.A, params.P, ThetaMode(theta), False)
        knobs = CG.Knobs(*(jnp.asarray([v], dtype=jnp.float64) for v in (alpha, params.omega, params.sigma,
                                                                          params.lam)))
        xf = flatten(OrderParams(*(np.asarray(b, float) for b in x._replace(M=np.asarray(M, float)))))
        fx, _, aux, _ = fmap(jnp.asarray(xf)[None], jnp.asarray(M, dtype=jnp.float64)[None], knobs,
                             jnp.zeros(1, int), jnp.asarray(xi)[None], jnp.asarray(y)[None], None)
        return unflatten(np.asarray(fx)[0], r, k, rs), {kk: np.asarray(v)[0] for kk, v in aux.items()}


def theta_growth(sol: ConstrainedSolution, delta: float = 1e-5, agree: float = 1e-3,
                 tries: int = 4) -> np.ndarray:
    """Growth factor of θ at a θ-pinned constrained point (r = r* = 1), per scramble: ``∂θ_out/∂θ`` of the
    θ-FREE constrained map at the scramble's pinned state, by a central difference ±δσ², on the scramble's points
    made antithetic in y (``(ξ, y)`` and ``(ξ, −y)``), on which θ = 0 is exactly invariant and the θ block
    decouples from (q, V) (θ is odd under y → −y, MODEL.md §8). Above +1 the free iteration leaves θ = 0 at this
    M (MODEL.md §7). A sample whose global minimiser switches basin between ±δ adds a jump ∝ 1/δ (seen: 459
    instead of 1.41 at δ = 1e-5): δ is divided by 10 until two successive differences agree to ``agree``
    (relative), at most ``tries`` times; NaN where they never do."""
    params = sol.params
    if (params.r, params.r_star) != (1, 1):
        raise ParameterError("params", "r = r* = 1 for theta_growth", (params.r, params.r_star))
    xi_all, y_all = qmc_points(params, sol.qmc)
    xs = sol.per_scramble["state"]
    out = []
    for s in range(sol.qmc.scrambles):
        xi = np.concatenate([xi_all[s], xi_all[s]])
        y = np.concatenate([y_all[s], -y_all[s]])
        x = unflatten(xs[s], 1, params.k, 1)

        def diff(dl, x=x, xi=xi, y=y):
            th = [float(np.asarray(evaluate(params, sol.alpha, sol.M, x._replace(
                theta=np.full((1, 1), sgn * dl * params.sigma ** 2)), xi, y, ThetaMode.FREE)[0].theta)[0, 0])
                for sgn in (1.0, -1.0)]
            return (th[0] - th[1]) / (2 * dl * params.sigma ** 2)

        prev, value, dl = diff(delta), math.nan, delta
        for _ in range(tries):
            dl /= 10.0
            cur = diff(dl)
            if abs(cur - prev) <= agree * abs(cur):
                value = cur
                break
            prev = cur
        out.append(value)
    return np.asarray(out)


def _collect(params: ModelParams, alpha: float, M: np.ndarray, theta: ThetaMode, run: fixed_point.Run,
             sl: slice, cfg: QMCConfig) -> ConstrainedSolution:
    """Mean and standard error over the scrambles of one imposed M (rows ``sl``)."""
    r, k, rs, S = params.r, params.k, params.r_star, cfg.scrambles
    status = worst_of(run.status[sl])
    xs = np.asarray(run.x[sl])
    inv = invariants(unflatten(xs, r, k, rs))
    force = np.asarray(run.aux["force"][sl])                                       # (S, r, k)
    mnorm = float(np.linalg.norm(M))
    along = np.einsum("srk,rk->s", force, M) / mnorm if mnorm > 0 else np.full(S, np.nan)
    per = {"q": inv["q"], "m": inv["m"], "theta": inv["theta"], "V": inv["V"],
           "eps_g": np.asarray(run.aux["eps_g"][sl]), "e_t": np.asarray(run.aux["e_t"][sl]),
           "force_along": along, "force_norm": np.linalg.norm(force, axis=(1, 2))}
    values = {kk: np.mean(v) for kk, v in per.items()}
    errors = {kk: np.std(v, ddof=1) / math.sqrt(S) for kk, v in per.items()}
    values["force"], errors["force"] = force.mean(0), force.std(0, ddof=1) / math.sqrt(S)
    x_mean = unflatten(xs.mean(0), r, k, rs)
    h_mean = unflatten(np.asarray(run.aux["hats"][sl]).mean(0), r, k, rs, Hats)
    if status is not Status.CONVERGED:
        values = {kk: np.full(np.shape(v), np.nan) for kk, v in values.items()}
        errors = {kk: np.full(np.shape(v), np.nan) for kk, v in errors.items()}
    return ConstrainedSolution(params, float(alpha), np.asarray(M), theta, status, int(np.max(run.iterations[sl])),
                               float(np.max(run.residual[sl])), OrderParams(*(np.asarray(b) for b in x_mean)),
                               Hats(*(np.asarray(b) for b in h_mean)), values, errors, cfg,
                               per_scramble={**{kk: np.asarray(v) for kk, v in per.items()}, "force": force,
                                             "state": xs})
