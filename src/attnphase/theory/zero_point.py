"""The q = 0 fixed point of MODEL.md §6/§8 (any L, r, r*, A, P): the student Q = 0, and its stability, in closed
form (docs/notes/2026-12-05-theory-general.md, "Strong ridge" for L = 2; "The q = 0 point for any L" for the general case).

At q = 0, M = 0, θ = 0 every student mean is ω_l = 0. Where ĥ = 0 is the global minimiser of the prox there (the
split rule's / engine's global search decides; it is where V is small, i.e. a strong ridge), g = 0, so
q̂ = M̂ = θ̂ = 0 and the prior gives back q = M = θ = 0: a fixed point for every α. Only V is left. To second
order in h, with S(0) = 11ᵀ/L, S − S(0) = (1/L)(Z − Z11ᵀ/L), Z = hhᵀ, and (T − 11ᵀ/L)(I − 11ᵀ/L) = T − 11ᵀ/L
(T is row-stochastic), so ``ℓ(h, h*) ≈ ℓ(0, h*) − (σ²/L) Σ_lk B_lk h_l·h_k`` with ``B = sym(T(h*)) − 11ᵀ/L``:
``H = ∇²ℓ(0, h*) = −(2σ²/L) B ⊗ I_r``. By the student's rotation invariance V = v I_r, and
``∂g/∂ω = K(h*) ⊗ I_r``, ``K = ((I + vH)⁻¹ − I)/v`` (L×L), so ``V̂ = −α E tr K · I_r`` for every r; v solves
``v D(v) = σ²``, ``D = λ + σ² V̂``. For L = 2 (t_l = T_ll − ½): ``H = −σ² [[t₁, −(t₁+t₂)/2], [·, t₂]]``.
Errors there: ``ε_g = E ℓ(0, h*) = (σ²/2) E ‖T(h*) − 11ᵀ/L‖_F²`` and ``e_t = −Φ = α E[M] = α ε_g``.
Expectations over h* ∈ R^{L×r*} ~ N(0, σ² I): product Gauss–Hermite (:func:`order_for`).

Stability (growth of the student's norm under the map linearised at q = 0): g = K ω to first order, and the map
on (q, M, θ) is triangular. Factors: ``γ_q = α σ⁴ E tr K² / D²`` (bulk); ``γ_m = ρ(G_M)²`` with
``G_M = α Pᵀ E[K] P / D`` (k×k; positional direction, M → M G_M); ``γ_θ = ρ(G_θ)²`` with
``G_θ = α σ² (E[Σ_lk K_lk h*_l h*_kᵀ]/σ² − E[tr K] I_{r*}) / D`` (r*×r*; teacher direction, θ → θ G_θ); ρ the
spectral radius. At L = 2, P = s = (1, −1)ᵀ, r* = 1: ``γ_m = (α E sᵀKs / D)²``,
``γ_θ = (α σ² E[h*ᵀKh*/σ² − tr K]/D)²``. The point is stable when all three are below 1; where γ_m (γ_θ)
crosses 1 a positional (semantic) branch branches off q = 0.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq

from ..model import ModelParams

ZERO_Q = 1e-12
"""A converged split-rule iterate with q below ``ZERO_Q·σ²`` is the q = 0 point (:func:`attnphase.theory.solver
.solve_point` then reports it with q = m = θ = 0 exactly, re-checked as a fixed point there). Genuine
non-trivial points have q ≳ 1e-3 σ²; at 1e-12 σ² the iterate is round-off around 0 (the map's own noise
floor in q is ~1e-20, docs/notes/2026-12-05-theory-general.md "Strong ridge")."""
ORDER = 64
"""Gauss–Hermite order per teacher coordinate where the teacher has L·r* = 2 coordinates (smooth integrands:
orders 32 and 64 agree to ~1e-12 at σ = 0.5)."""
NODE_CAP = 2 ** 16
"""Largest product rule over the L·r* teacher coordinates (:func:`order_for`)."""
MAX_DIMS = 6
"""The closed form is evaluated for L·r* ≤ MAX_DIMS (order 6 per coordinate at 6); beyond, ``ValueError``."""


_ERROR_KEYS = ("V", "V_hat", "D", "eps_g", "e_t", "growth_q", "growth_m", "growth_theta")


def order_for(dims: int) -> int:
    """Gauss–Hermite order per coordinate for ``dims`` = L·r* teacher coordinates: :data:`ORDER` at 2, else the
    largest with order^dims ≤ :data:`NODE_CAP` (40 at 3, 16 at 4, 9 at 5, 6 at 6)."""
    if dims <= 2:
        return ORDER
    return min(ORDER, int(math.floor(NODE_CAP ** (1.0 / dims) + 1e-9)))


@dataclass(frozen=True)
class ZeroPoint:
    """The q = 0 fixed point at one (params, α): V (= v I_r), V̂, D = λ + σ²V̂, the errors, and the growth factors."""

    V: float
    V_hat: float
    D: float
    eps_g: float
    e_t: float
    growth_q: float
    growth_m: float
    growth_theta: float
    order: int = 0
    """Gauss–Hermite order per teacher coordinate the values were integrated with."""
    integration_error: dict | None = None
    """With ``zero_point(error=True)``: per quantity (V, V_hat, D, eps_g, e_t, growth factors) the estimate
    ``|value(order) − value(order − 1)|`` of the product rule's error (an upper estimate where the orders
    converge geometrically; measured at L·r* = 6 against scrambled Sobol points: docs/notes/2026-12-05-theory-general.md, "The
    engine next to a q = 0 onset"); None otherwise."""

    @property
    def growth(self) -> float:
        """The largest growth factor (the point is stable against every student direction when ≤ 1)."""
        return max(self.growth_q, self.growth_m, self.growth_theta)

    def to_dict(self) -> dict:
        return {**asdict(self), "growth": self.growth}


def _teacher_nodes(L: int, r_star: int, sigma: float, order: int):
    """Product Gauss–Hermite nodes h* (N, L, r*) ~ N(0, σ² I) and weights (N,)."""
    t, w = np.polynomial.hermite_e.hermegauss(order)
    w = w / w.sum()
    dims = L * r_star
    grids = np.meshgrid(*([sigma * t] * dims), indexing="ij")
    hs = np.stack([g.ravel() for g in grids], axis=-1).reshape(-1, L, r_star)
    W = np.ones(1)
    for _ in range(dims):
        W = np.outer(W, w).ravel()
    return hs, W


def teacher_attention(params: ModelParams, hs: np.ndarray) -> np.ndarray:
    """T(h*) = (1 − ω) softmax(h* h*ᵀ) + ω A (MODEL.md §1) for h* (N, L, r*): (N, L, L)."""
    Z = np.einsum("nla,nka->nlk", hs, hs)
    E = np.exp(Z - Z.max(axis=-1, keepdims=True))
    return (1.0 - params.omega) * E / E.sum(axis=-1, keepdims=True) + params.omega * params.A_array


def hessian_general(params: ModelParams, hs: np.ndarray) -> np.ndarray:
    """∇²ℓ(h = 0, h*) per student coordinate (the L×L block of H = block ⊗ I_r) for h* (N, L, r*): (N, L, L)
    (module docstring)."""
    T = teacher_attention(params, hs)
    L = T.shape[-1]
    B = 0.5 * (T + np.swapaxes(T, -1, -2)) - 1.0 / L
    return -(2.0 * params.sigma ** 2 / L) * B


def hessian_at_zero(params: ModelParams, hs1, hs2):
    """∇²ℓ(h = 0, h*) for L = 2, r = r* = 1 as (H11, H12, H22) (module docstring)."""
    H = hessian_general(params, np.stack([np.asarray(hs1, float), np.asarray(hs2, float)], -1)[..., None])
    return H[..., 0, 0], H[..., 0, 1], H[..., 1, 1]


@lru_cache(maxsize=16)
def _setup(L, r_star, sigma, omega, A, order):
    """Nodes, weights, eigen-decomposition of H, ε_g per (L, r*, σ, ω, A, order) (independent of λ, α, P)."""
    params = ModelParams(L=L, r_star=r_star, sigma=sigma, omega=omega, A=A)
    hs, w = _teacher_nodes(L, r_star, sigma, order)
    T = teacher_attention(params, hs)
    eta, U = np.linalg.eigh(hessian_general(params, hs))
    loss0 = 0.5 * sigma ** 2 * np.sum((T - 1.0 / L) ** 2, axis=(-2, -1))
    return hs, w, eta, U, float(w @ loss0)


def _check_dims(params: ModelParams) -> None:
    dims = params.L * params.r_star
    if dims > MAX_DIMS:
        raise ValueError(f"the q = 0 closed form is evaluated for L·r* ≤ {MAX_DIMS} (here {dims})")


def zero_point(params: ModelParams, alpha: float, order: int | None = None, tol: float = 1e-13,
               max_steps: int = 500, error: bool = False) -> ZeroPoint:
    """The q = 0 point (module docstring), any L, r, r*, A, P with L·r* ≤ :data:`MAX_DIMS`: v from
    ``v D(v) = σ²``, ``D(v) = λ − α σ² E tr K(v)``, by bisection on an interval bracketed upward from
    ``v = σ²/λ`` (D < λ where the teacher's self-weight exceeds 1/L), then the errors and the growth factors.
    ``order``: Gauss–Hermite order per teacher coordinate (default :func:`order_for`). Raises ``ValueError``
    where no admissible v solves it (D or an eigenvalue of I + vH reaching 0 first: ĥ = 0 is then no local
    prox minimum for some teachers) or L·r* is too large. Admissibility is necessary, not sufficient, for
    ĥ = 0 to be the global minimiser; the split rule's global search checks that
    (:func:`attnphase.theory.solver._zero_solution`), the engine's its own. ``error``: the point is evaluated
    at ``order − 1`` too and carries :attr:`ZeroPoint.integration_error` (twice the cost)."""
    _check_dims(params)
    L, rs = params.L, params.r_star
    order = order_for(L * rs) if order is None else int(order)
    if error:
        best, lower = (zero_point(params, alpha, o, tol, max_steps) for o in (order, order - 1))
        return replace(best, integration_error={k: abs(getattr(best, k) - getattr(lower, k)) for k in _ERROR_KEYS})
    s2, lam, alpha = params.sigma ** 2, params.lam, float(alpha)
    hs, w, eta, U, eps_g = _setup(L, rs, float(params.sigma), float(params.omega), params.A, order)
    eta_min = float(eta.min())
    eta_flat, w_flat = np.ascontiguousarray(eta.ravel()), np.repeat(w, L)

    def resid(v):
        """v D(v) − σ² (increasing in v), or None where v is not admissible (D ≤ 0 or I + vH not ≻ 0)."""
        if not 1.0 + v * eta_min > 0:
            return None
        D = lam + alpha * s2 * float(w_flat @ (eta_flat / (1.0 + v * eta_flat)))     # λ − ασ² E tr K
        return v * D - s2 if D > 0 else None

    lo, hi = 0.0, s2 / lam
    for _ in range(200):
        r = resid(hi)
        if r is None:           # past the admissible range: bisect its edge, the root must lie below it
            a, b = lo, hi
            for _ in range(200):
                mid = 0.5 * (a + b)
                a, b = (mid, b) if resid(mid) is not None else (a, mid)
                if b - a <= tol * b:
                    break
            r_a = resid(a)
            if r_a is None or not r_a >= 0:
                raise ValueError(f"no q = 0 fixed point at lam = {lam:g}, alpha = {alpha:g}: D = λ + σ²V̂ or "
                                 f"det(I + V H) reaches 0 (at V = {b:.4g}) before V D(V) = σ²")
            hi = a
            break
        if r >= 0:
            break
        lo, hi = hi, 2.0 * hi
    V = brentq(resid, lo, hi, xtol=tol * hi, rtol=4 * np.finfo(float).eps, maxiter=max_steps) \
        if resid(lo) is not None and resid(lo) < 0 < resid(hi) else hi     # (resid(hi) = 0: hi is the root)
    kappa = -eta / (1.0 + V * eta)                              # eigenvalues of K
    K = np.einsum("nij,nj,nkj->nik", U, kappa, U, optimize=True)
    V_hat = -alpha * float(w @ kappa.sum(axis=-1))
    D = lam + s2 * V_hat
    g_q = alpha * s2 * s2 * float(w @ (kappa ** 2).sum(axis=-1)) / D ** 2
    P = params.P_array
    G_M = alpha * P.T @ np.einsum("n,nij->ij", w, K) @ P / D
    hKh = np.einsum("n,nlk,nla,nkb->ab", w, K, hs, hs, optimize=True) / s2
    G_t = alpha * s2 * (hKh - float(w @ kappa.sum(axis=-1)) * np.eye(rs)) / D
    g_m = float(np.max(np.abs(np.linalg.eigvalsh(0.5 * (G_M + G_M.T))))) ** 2
    g_t = float(np.max(np.abs(np.linalg.eigvalsh(0.5 * (G_t + G_t.T))))) ** 2
    return ZeroPoint(V, V_hat, D, eps_g, alpha * eps_g, g_q, g_m, g_t, order)


def _exists(params: ModelParams, alpha: float, lam: float) -> bool:
    try:
        zero_point(params.replace(lam=lam), alpha)
        return True
    except ValueError:
        return False


def _log_bisect(pred, lo: float, hi: float, rtol: float) -> float:
    """The point in (lo, hi) where ``pred`` turns from True (at lo) to False (at hi), bisected in log λ."""
    a, b = math.log(lo), math.log(hi)
    while b - a > rtol:
        mid = 0.5 * (a + b)
        a, b = (mid, b) if pred(math.exp(mid)) else (a, mid)
    return math.exp(0.5 * (a + b))


def smallest_lam(params: ModelParams, alpha: float, lo: float = 1e-4, hi: float = 10.0,
                 rtol: float = 1e-6) -> float:
    """The smallest λ (in (``lo``, ``hi``)) at which :func:`zero_point` has an admissible V: below it ĥ = 0 stops
    being a local prox minimum for some teachers, so q = 0 is no fixed point. NaN where it has none at ``hi``."""
    if not _exists(params, alpha, hi):
        return float("nan")
    if _exists(params, alpha, lo):
        return lo
    return _log_bisect(lambda lam: not _exists(params, alpha, lam), lo, hi, rtol)


def onset_lam(params: ModelParams, alpha: float, direction: str = "any", hi: float = 10.0,
              rtol: float = 1e-6) -> float:
    """The λ where the q = 0 point's growth factor against ``direction`` ("q", "m", "theta", or "any": the
    largest) crosses 1: stable above it (the factors fall as λ grows). NaN where it is stable wherever it
    exists (from :func:`smallest_lam` up) or unstable at ``hi``."""
    key = {"q": "growth_q", "m": "growth_m", "theta": "growth_theta", "any": "growth"}[direction]
    lo = smallest_lam(params, alpha, hi=hi, rtol=rtol)
    if not math.isfinite(lo):
        return float("nan")
    lo = lo * (1.0 + 2 * rtol)

    def grows(lam):
        return getattr(zero_point(params.replace(lam=lam), alpha), key) > 1.0

    if not grows(lo) or grows(hi):
        return float("nan")
    return _log_bisect(grows, lo, hi, rtol)


def largest_growth(params: ModelParams, alpha: float) -> float:
    """:attr:`ZeroPoint.growth` at (params, α); NaN where the closed form has no admissible V."""
    try:
        return zero_point(params, alpha).growth
    except ValueError:
        return float("nan")


def branch_onsets(params: ModelParams, alpha: float) -> dict[str, float]:
    """Per branch ("positional", "semantic"), the λ below which it leaves the q = 0 point at α (growth factor 1
    against m, θ: :func:`onset_lam`); only the finite ones."""
    out = {name: onset_lam(params, alpha, key) for key, name in (("m", "positional"), ("theta", "semantic"))}
    return {name: lam for name, lam in out.items() if math.isfinite(lam)}
