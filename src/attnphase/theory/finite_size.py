"""The leading O(1/d) term that separates a theory point (d → ∞, MODEL.md §8) from finite-d minimisers.

The student outputs ``S (x + p)``, the teacher ``T x`` (MODEL.md §1–§2). The positional encodings have norm
O(1) while a token has norm σ√d, so the pass-through ``S p`` adds ``‖S P‖_F² / (2d)`` to every per-sample loss
(u_1..u_k orthonormal; docs/finite_d.md derives ε_g exactly at finite d); the theory drops it. By the envelope
theorem the training minimum moves by the same term at the minimiser, to first order in 1/d. The training
loss ``e_t = R/d`` sums ``n = αd`` per-sample losses over d, i.e. it is α times their mean, so its term carries
a factor α (the test error is one sample's mean loss):

    ε_g(d) ≈ ε_g + E‖S(ω) P‖_F² / (2d),    e_t(d) ≈ e_t + α E‖S(ĥ) P‖_F² / (2d),

with ω the student means and ĥ the Moreau minimisers (the training samples' own pre-activations) of the fixed
point. At L = 2, P = (1, −1)ᵀ the term is ``Σ_l (S_l1 − S_l2)²/(2d)`` (tiny); at L = 3, P = I it is ~0.5/d.
Measured (docs/notes/2026-12-05-theory-general.md, "Finite-size extrapolation"): L = 3, α = 2, semantic, L-BFGS at d = 500–4000,
fit a + b/d: e_t slope b = 1.03 ± 0.04 against α E‖S(ĥ)P‖²/2 = 1.05, ε_g slope 0.54–0.57 against 0.52, and
both intercepts equal the d → ∞ theory within 1.5 s.e. (Before the factor α was added the e_t term was half
of the measured slope at α = 2.)

The pass-through is the whole O(1/d) term of ε_g at fixed overlaps only when M = 0. In general a student with
the overlaps (q, M, θ) and ρ = σ² I at dimension d has EXACTLY (docs/finite_d.md, :mod:`attnphase.finite_d_error`)

    ε_g(d) = ε_g + E[‖Δ a − S c‖_F² − w σ² ‖Δ‖_F²] / (2d),     Δ = T − S,

over the coordinates ``a`` of the tokens in the span W of Q, Q*, u_1..u_k (dimension w = r + r* + k, Gram
matrix Γ below) and the coordinates ``c`` of the encodings: it adds to ``‖SP‖²`` the cross term
``−2 (SP)_l · Σ_k Δ_lk (U_pᵀx_k)``, non-zero where M ≠ 0 (u·x correlates with the student's field), and the
token components in W. :func:`eps_g_coefficient` integrates it with :func:`finite_d_error.integrate` on a
basis built from the overlaps alone (:func:`projection`). It does not contain the O(1/d) shifts of the
overlaps themselves, nor the fluctuations of ρ between instances.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import finite_d_error as FDE, xla_cache
from ..errors import ParameterError
from ..model import ModelParams
from . import channel_general as CG
from . import prox_general as PG
from . import qmc
from .state import OrderParams


def passthrough(params: ModelParams, alpha: float, x: OrderParams, points: int = 1024, seed: int = 0) -> dict:
    """``E‖S(ω)P‖_F²`` and ``E‖S(ĥ)P‖_F²`` at the state ``x`` (one scramble of ``points`` Sobol points)."""
    xla_cache.enable()
    L, r, rs = params.L, params.r, params.r_star
    Z = qmc.scrambles(L * (r + rs), points, (seed,))[0]
    with jax.enable_x64(True):
        xi = jnp.asarray(Z[:, :L * r].reshape(points, L, r))
        y = jnp.asarray(Z[:, L * r:].reshape(points, L, rs))
        xs = OrderParams(*(jnp.asarray(np.asarray(b), dtype=jnp.float64) for b in x))
        A, P = jnp.asarray(params.A_array), jnp.asarray(params.P_array)
        out = _terms(xs, CG.Knobs(*(jnp.asarray(v, jnp.float64) for v in (alpha, params.omega, params.sigma,
                                                                            params.lam))),
                     xi, y, A, P, jnp.asarray(PG.start_offsets(L, r)))
        return {"S_omega_P": float(out[0]), "S_hhat_P": float(out[1])}


@jax.jit
def _terms(x, knobs, xi, y, A, P, offsets):
    w, hs, _ = CG.fields(x, knobs.sigma, xi, y, P)
    T = jax.vmap(PG.teacher, in_axes=(0, None, None))(hs, knobs.omega, A)
    h, _, _ = jax.vmap(PG.prox, in_axes=(0, 0, 0, None, None, None))(w, hs, T, x.V, knobs.sigma ** 2, offsets)
    sq = lambda v: jnp.mean(jnp.sum((jax.vmap(PG.attention)(v) @ P) ** 2, axis=(-2, -1)))  # noqa: E731
    return sq(w), sq(h)


def coefficients(params: ModelParams, alpha: float, x: OrderParams, points: int = 1024, seed: int = 0) -> dict:
    """The O(1/d) coefficients of a theory point: ``eps_g`` (exact at fixed overlaps, :func:`eps_g_coefficient`,
    with ``eps_g_err``) and ``e_t = α E‖S(ĥ)P‖²/2`` (module docstring), plus the raw pass-through means."""
    pt = passthrough(params, alpha, x, points=points, seed=seed)
    b, b_err = eps_g_coefficient(params, x)
    return {"eps_g": b, "eps_g_err": b_err, "e_t": alpha * pt["S_hhat_P"] / 2, **pt}


def at_dimension(values: dict, coefs: dict, d: int) -> dict:
    """``ε_g`` and ``e_t`` of a theory point at dimension ``d``: ``value + coefficient/d`` with the
    :func:`coefficients` of the point (module docstring)."""
    return {key: values[key] + coefs[key] / d for key in ("eps_g", "e_t")}


def gram(params: ModelParams, x: OrderParams) -> np.ndarray:
    """Gram matrix Γ of the columns of ``[Q/√d, Q*/√d, u_1..u_k]`` in the limit (MODEL.md §8):
    ``[[q/σ², θ/σ², M], [θᵀ/σ², I, 0], [Mᵀ, 0, I]]`` (ρ = σ² I, ``Q*ᵀu/√d → 0``)."""
    s2 = params.sigma ** 2
    q, M, th = (np.asarray(b, dtype=float) for b in (x.q, x.M, x.theta))
    rs, k = th.shape[1], M.shape[1]
    return np.block([[q / s2, th / s2, M], [th.T / s2, np.eye(rs), np.zeros((rs, k))],
                     [M.T, np.zeros((k, rs)), np.eye(k)]])


def projection(params: ModelParams, x: OrderParams, d: float) -> FDE.Projection:
    """A student at dimension ``d`` with the overlaps of ``x``, in the coordinates ``finite_d_error`` uses:
    with ``Γ = U diag(λ) Uᵀ`` the columns of ``Cᵀ = diag(√λ) Uᵀ`` have Gram matrix Γ, so ``Q_W = √d Cᵀ[:, :r]``,
    ``Q*_W = √d Cᵀ[:, r:r+r*]``, the directions u_j are ``Cᵀ[:, r+r*+j]`` and ``c_l = Σ_j P_lj u_j``. A
    singular Γ (q of rank < r) gives zero rows: those coordinates are then part of the orthogonal space."""
    G = gram(params, x)
    lam, U = np.linalg.eigh(0.5 * (G + G.T))
    Ct = np.sqrt(np.clip(lam, 0.0, None))[:, None] * U.T
    r, rs = np.shape(x.q)[0], np.shape(x.theta)[1]
    sd = np.sqrt(d)
    return FDE.Projection(jnp.asarray(sd * Ct[:, :r]), jnp.asarray(sd * Ct[:, r:r + rs]),
                          jnp.asarray(params.P_array @ Ct[:, r + rs:].T), jnp.asarray(float(d)))


def eps_g_coefficient(params: ModelParams, x: OrderParams, points: int = 2 ** 14, scrambles: int = 8,
                      seed: int = 0) -> tuple[float, float]:
    """``b`` with ``ε_g(d) = ε_g + b/d`` exactly at the overlaps of ``x`` (module docstring), and its QMC
    error: the exact finite-d ε_g is affine in 1/d at fixed overlaps, so ``b`` follows from two dimensions on
    the same points (``finite_d_error.integrate``, ``points × scrambles`` scrambled Sobol points in
    ``L·(r + r* + k)`` dimensions)."""
    xla_cache.enable()
    r, rs, k = np.shape(x.q)[0], np.shape(x.theta)[1], np.shape(x.M)[1]
    xi = FDE.qmc_normals(params.L, FDE.subspace_dim(r, rs, k), points, scrambles, seed)
    d1, d2 = 1e3, 1e9
    with jax.enable_x64(True):
        A = jnp.asarray(params.A_array)
        prs = [projection(params, x, d) for d in (d1, d2)]
        per = np.array([[float(_eps_g_one(pr, params.sigma, params.omega, A, jnp.asarray(xi[s:s + 1])))
                         for pr in prs] for s in range(scrambles)])
    b = (per[:, 0] - per[:, 1]) / (1.0 / d1 - 1.0 / d2)
    return float(b.mean()), float(b.std(ddof=1) / np.sqrt(scrambles))


@jax.jit
def _eps_g_one(pr, sigma, omega, A, xi):
    """The exact finite-d ε_g on one scramble ``xi`` (1, N, L, w) (:func:`finite_d_error.integrate`)."""
    return FDE.integrate(pr, jnp.zeros(A.shape, A.dtype), sigma, omega, A, xi).eps_g


MAX_D = 10 ** 9
"""Largest dimension a correction is asked for (``check_dimension``): beyond it the term is below float64's
resolution of the d → ∞ values (coefficients O(1), values O(1e-3))."""
COLUMNS = ("d", "eps_g_at_d", "eps_g_at_d_err", "e_t_at_d", "e_t_at_d_err", "eps_g_coef", "eps_g_coef_err",
           "e_t_coef", "e_t_coef_err")
"""The keys of a :func:`record` (and the columns ``theory curve --d`` adds), next to the d → ∞ ``eps_g``, ``e_t``."""
APPLIED = ("eps_g(d) = eps_g + b_eps/d, b_eps exact at the fixed point's overlaps (positional pass-through "
           "E||S(omega)P||^2/2 plus, where M != 0, its cross term and the token components in span(Q, Q*, u)); "
           "e_t(d) = e_t + b_t/d, b_t = alpha E||S(h_hat)P||^2/2 (the pass-through of the training samples); "
           "not included: the O(1/d) shifts of the overlaps themselves and the instance-to-instance "
           "fluctuations (attnphase.theory.finite_size)")
"""What a :func:`record` applied, for provenance."""


def check_dimension(d, name: str = "d") -> int:
    """``d`` as an int in [2, :data:`MAX_D`] (a finite-d student needs d ≥ 2), else a one-line
    :class:`ParameterError` naming ``name``."""
    allowed = f"an integer in [2, {MAX_D:.0e}] (the dimension of the finite-d run)"
    if isinstance(d, bool) or not isinstance(d, (int, float, np.integer, np.floating)):
        raise ParameterError(name, allowed, d)
    if not math.isfinite(float(d)) or float(d) != int(d) or not 2 <= int(d) <= MAX_D:
        raise ParameterError(name, allowed, d)
    return int(d)


def e_t_coefficient(params: ModelParams, alpha: float, x: OrderParams, points: int = 1024, scrambles: int = 4,
                    seed: int = 0) -> tuple[float, float]:
    """``b_t = α E‖S(ĥ)P‖²/2`` of ``e_t(d) = e_t + b_t/d`` (module docstring) as the mean over ``scrambles``
    independent scrambles of ``points`` Sobol points, and its standard error."""
    v = np.array([passthrough(params, alpha, x, points=points, seed=seed + s)["S_hhat_P"]
                  for s in range(scrambles)]) * alpha / 2
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(scrambles))


def state_of(sol) -> OrderParams | None:
    """The order parameters of a solution of either integrator as :class:`OrderParams`: the engine's
    ``GeneralSolution.x``; the split rule's scalars (L = 2, r = r* = k = 1: ``q, M = [[m]], θ, V``). None where
    the solution carries no finite state (not converged)."""
    x = getattr(sol, "x", None)
    if x is None:
        x = from_scalars(sol.q, sol.m, sol.theta, sol.V)
    ok = all(np.all(np.isfinite(np.asarray(b, float))) for b in x)
    return OrderParams(*(np.asarray(b, float) for b in x)) if ok else None


def from_scalars(q: float, m: float, theta: float, V: float) -> OrderParams:
    """The r = r* = k = 1 state (the split rule's, MODEL.md §6) as 1×1 blocks."""
    return OrderParams(*(np.array([[float(v)]]) for v in (q, m, theta, V)))


def record(params: ModelParams, alpha: float, x: OrderParams | None, d: int, values: dict,
           errors: dict | None = None, points: int = 2 ** 14, scrambles: int = 8) -> dict:
    """ε_g and e_t a run at dimension ``d`` should show: the keys of :data:`COLUMNS` — ``*_at_d`` = d → ∞
    value + coefficient/d, ``*_at_d_err`` combining the value's integration error (``errors``, 0 where the
    integrator gives none) with the coefficient's over d, the coefficients with their QMC errors
    (:func:`eps_g_coefficient` at ``points × scrambles``, :func:`e_t_coefficient` at ``points/16 × 4``).
    ``x`` None (no fixed point) or non-finite values: NaN."""
    d = check_dimension(d)
    nan = float("nan")
    out = dict.fromkeys(COLUMNS, nan)
    out["d"] = d
    vals = {k: float(values.get(k, nan)) for k in ("eps_g", "e_t")}
    if x is None or not all(math.isfinite(v) for v in vals.values()):
        return out
    b, b_err = eps_g_coefficient(params, x, points=points, scrambles=scrambles)
    c, c_err = e_t_coefficient(params, alpha, x, points=max(points // 16, 256))
    errors = errors or {}
    for key, coef, err in (("eps_g", b, b_err), ("e_t", c, c_err)):
        out[f"{key}_coef"], out[f"{key}_coef_err"] = coef, err
        out[f"{key}_at_d"] = vals[key] + coef / d
        out[f"{key}_at_d_err"] = math.hypot(float(errors.get(key, 0.0) or 0.0), err / d)
    return out


def solution_record(sol, d: int, **kw) -> dict:
    """:func:`record` of a solution of either integrator (:func:`state_of`; the engine's ``values``/``errors``,
    the split rule's ``eps_g``/``e_t`` without an integration error)."""
    x = state_of(sol) if sol.converged or _collapsed(sol) else None
    if hasattr(sol, "values") and isinstance(getattr(sol, "values"), dict):
        values, errors = sol.values, sol.errors
    else:
        values, errors = {"eps_g": sol.eps_g, "e_t": sol.e_t}, None
    return record(sol.params, sol.alpha, x, d, values, errors, **kw)


def _collapsed(sol) -> bool:
    """A fixed point with its values kept although not ``converged`` (the engine's COLLAPSED onto q = 0)."""
    return getattr(getattr(sol, "status", None), "value", None) == "collapsed"
