"""The q = 0 fixed point of MODEL.md §6 (L = 2, r = 1): the student Q = 0, and its stability, in closed form.

At q = m = θ = 0 every student mean is ω = 0. Where ĥ = 0 is the global minimiser of the prox there (the
split rule's global search decides; it is where V is small, i.e. a strong ridge), g = 0, so q̂ = m̂ = θ̂ = 0
and the prior gives back q = m = θ = 0: a fixed point for every α. Only V is left, from V̂ = −α E[Σ_l ∂g_l/∂ω_l]
with ∂g/∂ω = K(h*) = ((I + V H)⁻¹ − I)/V, H = ∇²ℓ(0, h*), h* ~ N(0, σ² I) (MODEL.md §6, ρ = σ²). By
S_ll = sigmoid(h_l(h_l − h_k)) and ℓ = σ² Σ_l (T_ll − S_ll)²:
``H = −σ² [[t₁, −(t₁+t₂)/2], [−(t₁+t₂)/2, t₂]]``, ``t_l = T_ll(h*) − ½``.
Errors there: ``ε_g = E ℓ(0, h*) = σ² E Σ_l t_l²`` and ``e_t = −Φ = α E[M] = α ε_g``.

Stability (growth of the student's norm under the map linearised at q = 0; docs/theory_general.md, "Strong
ridge"): with g = K ω to first order and h* even in K, the map on (q, m², θ²) is triangular, its factors
``γ_q = α σ⁴ E tr K² / D²`` (bulk), ``γ_m = (α E[sᵀK s] / D)²`` (positional direction, s = (1, −1)) and
``γ_θ = (α σ² E[h*ᵀK h*/σ² − tr K] / D)²`` (teacher direction), D = λ + σ²V̂. The point is stable when all
three are below 1; where γ_m (γ_θ) crosses 1 a positional (semantic) branch branches off q = 0.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..model import ModelParams
from .prox import teacher_diag

ZERO_Q = 1e-12
"""A converged split-rule iterate with q below ``ZERO_Q·σ²`` is the q = 0 point (:func:`attnphase.theory.solver
.solve_point` then reports it with q = m = θ = 0 exactly, re-checked as a fixed point there). Genuine
non-trivial points have q ≳ 1e-3 σ²; at 1e-12 σ² the iterate is round-off around 0 (the map's own noise
floor in q is ~1e-20, docs/theory_general.md "Strong ridge")."""
ORDER = 64
"""Gauss–Hermite order per teacher coordinate of the 2-D expectations (smooth integrands: orders 32 and 64
agree to ~1e-12 at σ = 0.5)."""


@dataclass(frozen=True)
class ZeroPoint:
    """The q = 0 fixed point at one (params, α): V, V̂, D = λ + σ²V̂, the errors, and the growth factors."""

    V: float
    V_hat: float
    D: float
    eps_g: float
    e_t: float
    growth_q: float
    growth_m: float
    growth_theta: float

    @property
    def growth(self) -> float:
        """The largest growth factor (the point is stable against every student direction when ≤ 1)."""
        return max(self.growth_q, self.growth_m, self.growth_theta)

    def to_dict(self) -> dict:
        return {**asdict(self), "growth": self.growth}


def _teacher_nodes(params: ModelParams, order: int = ORDER):
    """Gauss–Hermite nodes h* = (h*₁, h*₂) ~ N(0, σ² I) with weights (product rule)."""
    t, w = np.polynomial.hermite_e.hermegauss(order)
    w = w / w.sum()
    h1, h2 = np.meshgrid(params.sigma * t, params.sigma * t, indexing="ij")
    return h1.ravel(), h2.ravel(), np.outer(w, w).ravel()


def hessian_at_zero(params: ModelParams, hs1, hs2):
    """∇²ℓ(h = 0, h*) as (H11, H12, H22) (module docstring)."""
    T1, T2 = teacher_diag(hs1, hs2, params.omega, params.A_array)
    t1, t2 = T1 - 0.5, T2 - 0.5
    s2 = params.sigma ** 2
    return -s2 * t1, 0.5 * s2 * (t1 + t2), -s2 * t2


def _K(H, V):
    """K = ((I + V H)⁻¹ − I)/V = ∂g/∂ω at ĥ = 0, and det(I + V H)."""
    H11, H12, H22 = H
    B11, B12, B22 = 1.0 + V * H11, V * H12, 1.0 + V * H22
    det = B11 * B22 - B12 * B12
    with np.errstate(divide="ignore", invalid="ignore"):    # det = 0: not admissible (the mask says so)
        K = ((B22 / det - 1.0) / V, -B12 / det / V, (B11 / det - 1.0) / V)
    return K, det, (B11 > 0) & (det > 0)


def zero_point(params: ModelParams, alpha: float, order: int = ORDER, tol: float = 1e-13,
               max_steps: int = 500) -> ZeroPoint:
    """The q = 0 point (module docstring): V from ``V D(V) = σ²``, ``D(V) = λ − α σ² E tr K(V)``, by bisection
    on an interval bracketed upward from ``V = σ²/λ`` (D < λ where the teacher's self-weight exceeds ½), then
    the errors and the growth factors. Raises ``ValueError`` where no admissible V solves it (D or
    det(I + V H) reaching 0 first: ĥ = 0 is then no local prox minimum for some teachers). Admissibility is
    necessary, not sufficient, for ĥ = 0 to be the global minimiser; the split rule's global search checks
    that (:func:`attnphase.theory.solver._zero_solution`)."""
    s2, lam, alpha = params.sigma ** 2, params.lam, float(alpha)
    h1, h2, w = _teacher_nodes(params, order)
    H = hessian_at_zero(params, h1, h2)

    def resid(V):
        """V D(V) − σ² (increasing in V), or None where V is not admissible (D ≤ 0 or I + V H not ≻ 0)."""
        K, _, ok = _K(H, V)
        D = lam - alpha * s2 * float(w @ (K[0] + K[2]))
        return V * D - s2 if np.all(ok) and D > 0 else None

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
            if not resid(a) >= 0:
                raise ValueError(f"no q = 0 fixed point at lam = {lam:g}, alpha = {alpha:g}: D = λ + σ²V̂ or "
                                 f"det(I + V H) reaches 0 (at V = {b:.4g}) before V D(V) = σ²")
            hi = a
            break
        if r >= 0:
            break
        lo, hi = hi, 2.0 * hi
    for _ in range(max_steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if resid(mid) < 0 else (lo, mid)
        if hi - lo <= tol * hi:
            break
    V = 0.5 * (lo + hi)
    (K11, K12, K22), _, _ = _K(H, V)
    trK = K11 + K22
    V_hat = -alpha * float(w @ trK)
    D = lam + s2 * V_hat
    T1, T2 = teacher_diag(h1, h2, params.omega, params.A_array)
    eps_g = s2 * float(w @ ((T1 - 0.5) ** 2 + (T2 - 0.5) ** 2))
    trK2 = K11 ** 2 + 2 * K12 ** 2 + K22 ** 2
    sKs = K11 - 2 * K12 + K22
    hKh = (h1 * h1 * K11 + 2 * h1 * h2 * K12 + h2 * h2 * K22) / s2
    g_q = alpha * s2 * s2 * float(w @ trK2) / D ** 2
    g_m = (alpha * float(w @ sKs) / D) ** 2
    g_t = (alpha * s2 * float(w @ (hKh - trK)) / D) ** 2
    return ZeroPoint(V, V_hat, D, eps_g, alpha * eps_g, g_q, g_m, g_t)


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
