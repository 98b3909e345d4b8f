"""1RSB at zero temperature for any L by nested QMC (r = r* = 1, uninformative sector m = θ = 0; MODEL.md §8;
derivation in docs/theory/one-step-rsb.md §2).

The functional is that of :mod:`.rsb1`,

    e(q0, Δq, V, x) = entropic(q0, Δq, V, x) − (α/x) E_{y, ξ0} log E_{ξ1} exp(−x M(√q0 ξ0 + √Δq ξ1, σy; V)),

with ξ0, ξ1, y ∈ R^L and M the Moreau envelope of the general channel (:func:`.prox_general.prox_pair`, the
engine's global multi-start: the landscape jumps between basins). The prior term is L-independent at r = 1
(the volume of the students' Gram matrix, one field per token: docs/theory/one-step-rsb.md §1), so
:func:`.rsb1.entropic` is reused. Integration: scrambled Sobol points over (ξ0, y) (``2L`` dimensions; one
estimate per scramble, their spread the error bar), a product Gauss–Hermite rule of ``order`` per axis over ξ1
(k^L nodes, log-sum-exp stabilised), the prox solved at every (outer point, inner node). The same points serve
every (q0, Δq, V, x) (common random numbers), so the estimate is a fixed, piecewise smooth function.

Derivatives are exact for that estimate: ``∂M/∂ω = (ω − ĥ)/V`` and ``∂M/∂V = −|ĥ − ω|²/(2V²)`` (envelope
theorem; M is continuous where ĥ jumps), chained through ω = a0 ξ0 + a1 ξ1 with a0 = √q0, a1 = √Δq.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import root

from .. import xla_cache
from ..errors import ParameterError, check_int
from ..model import ModelParams
from . import prox_general as PG
from .qmc import normal_points
from .quadrature import gauss_hermite
from .rsb1 import SMALL_X, entropic

CHUNK = 8192
"""Prox problems per compiled call (the last chunk is padded: one compiled shape)."""


def check_sector(params: ModelParams) -> None:
    """The nested rule integrates the r = r* = 1 channel of MODEL.md §8 at M = θ = 0."""
    if params.r != 1 or params.r_star != 1:
        raise ParameterError("params", "r = r* = 1 (the 1RSB prior term is written for one student direction)",
                             (params.L, params.r, params.r_star))


@dataclass(frozen=True)
class NestedRule:
    """Outer points ``xi0``, ``y`` (S, N, L) (scrambled Sobol, one set per seed) and the inner product
    Gauss–Hermite rule ``xi1`` (K, L), ``w1`` (K,) of ``order`` per axis."""

    L: int
    xi0: np.ndarray
    y: np.ndarray
    xi1: np.ndarray
    w1: np.ndarray
    order: int
    seeds: tuple


def nested_rule(L: int, n_points: int, scrambles: int, order: int, seed: int = 0) -> NestedRule:
    """``scrambles`` independent Sobol sets of ``n_points`` in R^{2L} (seeds seed, seed + 1, …) and GH of
    ``order`` per axis (even: no node at ξ1 = 0, where all the multi-start's starts coincide, MODEL.md §7)."""
    L = check_int("L", L, 2)
    scrambles = check_int("scrambles", scrambles, 1)
    order = check_int("order", order, 2)
    if order % 2:
        raise ParameterError("order", "an even integer >= 2 (no Gauss–Hermite node at 0)", order)
    seeds = tuple(seed + s for s in range(scrambles))
    pts = np.stack([normal_points(2 * L, n_points, s) for s in seeds])
    X1, W1 = gauss_hermite(order, L)
    return NestedRule(L, pts[..., :L], pts[..., L:], np.asarray(X1), np.asarray(W1), order, seeds)


@lru_cache(maxsize=4)
def _program(L: int, A: tuple):
    """Batched global prox: (ω (B, L), h* (B, L), V, σ², ω_A) -> (M (B,), ĥ (B, L)) (jit, float64)."""
    A_ = np.asarray(A)
    off = PG.start_offsets(L, 1)

    def one(w, hs, V, sigma2, omega):
        T = PG.teacher(hs[:, None], omega, A_)
        out = PG.prox_pair(w[:, None], hs[:, None], T, V * jnp.ones((1, 1)), sigma2, off)
        return out.F, out.h[:, 0], out.gn

    xla_cache.enable()
    return jax.jit(jax.vmap(one, in_axes=(0, 0, None, None, None)))


def envelope(params: ModelParams, w: np.ndarray, hs: np.ndarray, V: float):
    """M, ĥ and the worst |∇F| of the global prox at the student fields ``w`` (B, L), teacher fields ``hs``
    (B, L) (MODEL.md §8), in chunks of :data:`CHUNK`."""
    B, L = w.shape
    Ms, Hs, worst = np.empty(B), np.empty((B, L)), 0.0
    with jax.enable_x64(True):
        fn = _program(L, params.A)
        for i in range(0, B, CHUNK):
            n = min(CHUNK, B - i)
            pw, ph = (np.zeros((CHUNK, L)) + 0.3 for _ in range(2))   # padding: a harmless regular point
            pw[:n], ph[:n] = w[i:i + n], hs[i:i + n]
            M, h, gn = fn(jnp.asarray(pw), jnp.asarray(ph), float(V), params.sigma ** 2, params.omega)
            Ms[i:i + n], Hs[i:i + n] = np.asarray(M)[:n], np.asarray(h)[:n]
            worst = max(worst, float(np.max(np.asarray(gn)[:n])))
    return Ms, Hs, worst


@dataclass(frozen=True)
class Energetic:
    """Per scramble: φ̄ = E_{y, ξ0} φ, φ = −(1/x) log E_ξ1 e^{−xM}, and its derivatives (arrays (S,)); the worst
    prox gradient."""

    value: np.ndarray
    d_q0: np.ndarray
    d_dq: np.ndarray
    d_V: np.ndarray
    d_x: np.ndarray
    max_grad: float


def _check(q0, dq, V, x):
    if not (q0 >= 0 and dq >= 0 and x >= 0):
        raise ParameterError("q0, dq, x", ">= 0", (q0, dq, x))
    if not V > 0:
        raise ParameterError("V", "> 0", V)
    if q0 == 0 and dq == 0:
        raise ParameterError("q0, dq", "q1 = q0 + dq > 0 (ω = 0 is the prox's saddle, MODEL.md §7)", (q0, dq))


def energetic(params: ModelParams, rule: NestedRule, q0: float, dq: float, V: float, x: float) -> Energetic:
    """The 1RSB channel average at (q0, Δq, V, x) on ``rule`` (module docstring); x = 0 is the limit
    E_ξ1 M. Δq = 0 uses the outer points only (the inner average is trivial)."""
    check_sector(params)
    _check(q0, dq, V, x)
    if rule.L != params.L:
        raise ParameterError("rule", f"a nested rule for L = {params.L}", rule.L)
    S, N, L = rule.xi0.shape
    X1, W1 = (rule.xi1, rule.w1) if dq > 0 else (np.zeros((1, L)), np.ones(1))
    K = len(W1)
    a0, a1 = np.sqrt(q0), np.sqrt(dq)
    w = a0 * rule.xi0[:, :, None, :] + a1 * X1[None, None]                      # (S, N, K, L)
    hs = np.broadcast_to(params.sigma * rule.y[:, :, None, :], w.shape)
    M, h, worst = envelope(params, w.reshape(-1, L), hs.reshape(-1, L), V)
    M, h = M.reshape(S, N, K), h.reshape(S, N, K, L)
    dM_dw = (w - h) / V                                                         # (S, N, K, L)
    dM_dV = -np.sum((h - w) ** 2, axis=-1) / (2.0 * V * V)
    c = M.min(axis=2, keepdims=True)
    Mc = M - c
    if x == 0.0:
        p = np.broadcast_to(W1, M.shape)
        phi = (Mc * p).sum(2) + c[..., 0]
        d_x = -0.5 * ((Mc * Mc * p).sum(2) - (phi - c[..., 0]) ** 2)
    else:
        f = np.exp(-x * Mc)
        Z = f @ W1
        logZ = np.log1p(np.expm1(-x * Mc) @ W1) if x < SMALL_X else np.log(Z)
        p = f * W1 / Z[..., None]                                              # tilted inner weights
        phi = c[..., 0] - logZ / x
        d_x = logZ / (x * x) + (p * Mc).sum(2) / x
    g0 = np.einsum("snk,snkl,snl->sn", p, dM_dw, rule.xi0)                      # ∂φ/∂a0
    g1 = np.einsum("snk,snkl,kl->sn", p, dM_dw, X1)                             # ∂φ/∂a1
    mean = lambda a: a.mean(axis=1)  # noqa: E731
    d_q0 = mean(g0) / (2 * a0) if a0 > 0 else np.full(S, np.nan)
    d_dq = mean(g1) / (2 * a1) if a1 > 0 else np.full(S, np.nan)
    return Energetic(mean(phi), d_q0, d_dq, mean((p * dM_dV).sum(2)), mean(d_x), worst)


@dataclass(frozen=True)
class Value:
    """e per scramble (S,) and the gradient of its mean (∂q0, ∂Δq, ∂V, ∂x)."""

    e: np.ndarray
    grad: np.ndarray
    max_grad: float

    @property
    def mean(self) -> float:
        return float(np.mean(self.e))

    @property
    def se(self) -> float:
        return float(np.std(self.e, ddof=1) / np.sqrt(len(self.e))) if len(self.e) > 1 else float("nan")


def functional(params: ModelParams, rule: NestedRule, alpha: float, q0: float, dq: float, V: float,
               x: float) -> Value:
    """e(q0, Δq, V, x) per scramble, with the gradient of the scramble mean (module docstring)."""
    if not alpha > 0:
        raise ParameterError("alpha", "> 0", alpha)
    en = energetic(params, rule, q0, dq, V, x)
    s, gs = entropic(params, q0, dq, V, x)
    ge = np.array([np.mean(en.d_q0), np.mean(en.d_dq), np.mean(en.d_V), np.mean(en.d_x)])
    return Value(s + alpha * en.value, gs + alpha * ge, en.max_grad)


@dataclass(frozen=True)
class Saddle:
    """The (q0, Δq, V) saddle at fixed x on one rule: the value per scramble, the gradient, the status."""

    x: float
    q0: float
    dq: float
    V: float
    value: Value
    converged: bool
    evaluations: int

    def as_dict(self) -> dict:
        return {"x": self.x, "q0": self.q0, "dq": self.dq, "V": self.V, "e": self.value.mean, "e_se": self.value.se,
                "e_per_scramble": self.value.e.tolist(), "grad": self.value.grad.tolist(),
                "de_dx": float(self.value.grad[3]), "converged": self.converged, "evaluations": self.evaluations,
                "max_prox_grad": self.value.max_grad}


GRAD_TOL = 1e-7
"""Stationarity: |q0 ∂e/∂q0|, |Δq ∂e/∂Δq|, |V ∂e/∂V| below this (absolute, e ≈ 1e-2)."""


class _Stationary(Exception):
    """Raised inside the root finder once the residual is below :data:`GRAD_TOL` (stops it early)."""


def _root(F, u0, max_evals):
    """Hybrid Powell on F, stopped at the first evaluation whose |residual| < GRAD_TOL; returns the best
    evaluated point (u, |residual|)."""
    seen = {}

    def G(u):
        r = F(u)
        seen[tuple(u)] = float(np.max(np.abs(r)))
        if seen[tuple(u)] < GRAD_TOL:
            raise _Stationary
        return r / GRAD_TOL * 1e-4

    try:
        root(G, u0, method="hybr", options={"maxfev": max_evals, "xtol": 1e-9})
    except _Stationary:
        pass
    best = min(seen, key=seen.get)
    return np.asarray(best), seen[best], len(seen)


def saddle(params: ModelParams, rule: NestedRule, alpha: float, x: float, start: tuple[float, float, float],
           max_evals: int = 30) -> Saddle:
    """Stationary point of the scramble-mean functional in (q0, Δq, V) at fixed x (hybrid Powell on
    (log q0, log Δq, log V), so q0, Δq > 0 throughout; docs/theory/one-step-rsb.md §4): |q0 ∂e/∂q0|,
    |Δq ∂e/∂Δq|, |V ∂e/∂V| < GRAD_TOL (q0 → 0, where different states are orthogonal, is accepted as the limit
    of the log variable). The value per scramble is read at this common saddle: the per-scramble saddles differ
    from it at second order (stationarity). x = 0 is the RS limit at q1 (one Gaussian of variance q0 + Δq)."""
    if not x >= 0:
        raise ParameterError("x", ">= 0", x)
    if min(start) <= 0:
        raise ParameterError("start", "q0, dq, V > 0", start)
    cache = {}

    def F(u):
        q0, dq, V = np.exp(u)
        v = functional(params, rule, alpha, q0, dq, V, x)
        cache[tuple(u)] = v
        return np.array([q0, dq, V]) * v.grad[:3]

    u, res, n = _root(F, np.log(np.asarray(start, float)), max_evals)
    q0, dq, V = np.exp(u)
    return Saddle(float(x), float(q0), float(dq), float(V), cache[tuple(u)], res < GRAD_TOL, n)


INNER_Q0 = 1e-10
"""q0 of :func:`rs_saddle`'s ``inner`` form: the field is (almost) all inner, as at the 1RSB saddles (q0 → 0)."""


def rs_saddle(params: ModelParams, rule: NestedRule, alpha: float, start: tuple[float, float],
              max_evals: int = 30, inner: bool = False) -> Saddle:
    """The RS point e_RS(q, V) = λq/(2σ²) − q/(2V) + α E M(√q ξ) (docs/theory/one-step-rsb.md §3), stationary in
    (q, V); x is irrelevant (reported 0). ``inner=False``: ξ = the outer points (Δq = 0); ``inner=True``: the
    x → 0 limit of the nested rule at q0 = INNER_Q0, Δq = q (the same y points and inner nodes as the 1RSB
    saddles, so that the shift e^1RSB − e^RS is free of most of the y sampling error); q is reported as dq."""
    cache = {}
    q0 = INNER_Q0 if inner else None

    def F(u):
        q, V = np.exp(u)
        v = functional(params, rule, alpha, q0, q, V, 0.0) if inner else functional(params, rule, alpha, q, 0.0,
                                                                                       V, 0.0)
        cache[tuple(u)] = v
        return np.array([q * v.grad[1 if inner else 0], V * v.grad[2]])

    u, res, n = _root(F, np.log(np.asarray(start, float)), max_evals)
    q, V = np.exp(u)
    return Saddle(0.0, q0 if inner else float(q), float(q) if inner else 0.0, float(V), cache[tuple(u)],
                  res < GRAD_TOL, n)
