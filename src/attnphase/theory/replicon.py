"""Replica-symmetry stability of a solved fixed point: the zero-temperature replicon (de Almeida–Thouless)
eigenvalue Λ_AT (MODEL.md §6, §8; derivation in docs/notes/2026-12-05-theory-general.md, "Replicon stability", issue 11 helper hC).

For ERM with the ridge prior and the channel of MODEL.md §8, the linearised replica saddle point restricted to
replicon perturbations ``δQ^{ab}`` (a ≠ b, ``Σ_b δQ^{ab} = 0``; r×r each) is the composition of the prior's
response ``δQ = V δQ̂ V`` (ridge: ``σ² D⁻¹ = V`` per coordinate, deterministic) with the channel's
``δQ̂ = α E[Σ_{l,l'} J_{ll'} δQ J_{ll'}ᵀ]``, ``J = ∂g/∂ω`` the (L r)×(L r) Jacobian at the prox
(:func:`channel_general.dg_full`). In the gauge ``η = V^{-1/2} δQ V^{-1/2}`` the operator is

    ``𝒦(η) = α E[Σ_{l,l'} Ĵ_{ll'} η Ĵ_{ll'}ᵀ]``,  ``Ĵ_{ll'} = V^{1/2} J_{ll'} V^{1/2}``,

self-adjoint and completely positive, so its largest eigenvalue ``Λ_AT`` has a positive semi-definite (hence
symmetric) eigenvector; at r = 1 ``Λ_AT = α V² E[Σ_{l,l'} J_{ll'}²] = α E‖∂ĥ/∂ω − I‖_F²``. RS is locally stable
iff ``Λ_AT < 1``. The same Λ is the denominator of the RS prediction for the Hessian of the training risk at the
minimiser: ``(σ⁴/d) tr H⁻² = V²/(1 − Λ_AT)`` (r = 1), so ``Λ_AT → 1`` is the bulk edge of the Hessian reaching 0.

``J`` is the pointwise (implicit-function) derivative. Where the global minimiser of the prox jumps between
basins (the switching set, MODEL.md §7), the finite-temperature channel adds ``β p(1 − p) δg δgᵀ`` (δg = g₁ − g₂
of the two basins), whose square integrates to ``β κ``: at zero temperature Λ_AT is infinite as soon as the
switching set carries probability. :func:`jump_matrix` estimates κ from the gap between the two lowest basins.
The reported ``value`` is the smooth part (the one a minimum's Hessian sees); ``jump`` is κ.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import xla_cache
from . import channel_general as CG
from . import prox_general as PG
from .qmc_map import qmc_points
from .state import OrderParams, flatten, unflatten
from .status import Status

if TYPE_CHECKING:
    from .general_solution import GeneralSolution
    from .solution import Solution

STABLE_K = 3.0
"""Λ_AT counts as decided (``stable`` True/False) when it is more than this many standard errors from 1."""
GAP_WINDOWS = (1e-2, 3e-3, 1e-3)
"""Windows ε (in units of σ², the loss scale) of the two-basin gap for :func:`jump_matrix`."""


def scaled_blocks(dg, V):
    """``Ĵ_{ll'} = V^{1/2} (∂g/∂ω)_{ll'} V^{1/2}``: dg (N, n, n), n = L r -> (N, L, r, L, r)."""
    r = V.shape[0]
    N, n = dg.shape[0], dg.shape[1]
    Vh = CG.sym_power(V, 0.5)
    J = dg.reshape(N, n // r, r, n // r, r)
    return jnp.einsum("ab,nlbmc,cd->nlamd", Vh, J, Vh)


def replicon_operator(dg, V, alpha, weights=None):
    """The replicon operator ``𝒦 = α E[Σ_{l,l'} Ĵ_{ll'} ⊗ Ĵ_{ll'}]`` as an r²×r² matrix (row-major vec:
    ``vec(A η Bᵀ) = (A ⊗ B) vec η``), from the Jacobians ``dg`` (N, n, n) at N samples; ``weights`` (N,) a
    quadrature rule's weights (None: the mean)."""
    Jh = scaled_blocks(dg, V)
    r = V.shape[0]
    w = jnp.full(dg.shape[0], 1.0 / dg.shape[0]) if weights is None else jnp.asarray(weights)
    K = alpha * jnp.einsum("n,nlamb,nlcmd->acbd", w, Jh, Jh)
    return K.reshape(r * r, r * r)


def leading(K) -> tuple[float, np.ndarray]:
    """Largest eigenvalue of the (symmetric) replicon matrix and its eigenvector as an r×r matrix (sign
    chosen so that its trace is ≥ 0; it is positive semi-definite, module docstring)."""
    K = np.asarray(K)
    r = int(round(math.sqrt(K.shape[0])))
    w, U = np.linalg.eigh(0.5 * (K + K.T))
    v = U[:, -1].reshape(r, r)
    return float(w[-1]), v * (1.0 if np.trace(v) >= 0 else -1.0)


def jump_matrix(h, h2, gap, V, alpha, eps, sigma2):
    """``(α/12) E[1{gap < ε σ²} a aᵀ] / (ε σ²)``, ``a = vec Σ_l u_l u_lᵀ``, ``u_l = V^{-1/2}(ĥ_l − ĥ₂_l)``
    (= V^{1/2} δg_l): the coefficient κ(ε) of β in the replicon matrix from the switching set (module docstring;
    the signed gap has density ρ/2 at 0 where |gap| has ρ, and ∫ p²(1 − p)² d(βΔ) = 1/6)."""
    Vmh = CG.sym_power(V, -0.5)
    u = (h - h2) @ Vmh                                     # (N, L, r)
    a = jnp.einsum("nla,nlb->nab", u, u).reshape(u.shape[0], -1)
    win = eps * sigma2
    ind = (gap < win).astype(a.dtype)
    return (alpha / 12.0) * jnp.einsum("n,na,nb->ab", ind, a, a) / (win * a.shape[0])


def _terms(xf, knobs, xi, y, A, P, offsets, r, k, rs, windows):
    """At one state (flattened) and one point set: the replicon matrix, the jump matrices per gap window,
    the fraction of samples per window, and the worst |∇F| of the prox."""
    x = unflatten(xf, r, k, rs)
    sigma2 = knobs.sigma ** 2
    w, hs, R, T, out = CG.minimisers(x, knobs, xi, y, A, P, offsets)
    Vinv = jnp.linalg.inv(x.V)
    dg = jax.vmap(CG.dg_full, in_axes=(0, None))(out.hess, Vinv)
    K = replicon_operator(dg, x.V, knobs.alpha)
    F2 = jax.vmap(PG.objective, in_axes=(0, 0, 0, None, None))(out.other, w, T, Vinv, sigma2)
    sep = jnp.linalg.norm((out.h - out.other).reshape(out.h.shape[0], -1), axis=1) \
        > PG.BASIN_SEP * (jnp.linalg.norm(out.h.reshape(out.h.shape[0], -1), axis=1) + knobs.sigma)
    gap = jnp.where(sep, jnp.maximum(F2 - out.F, 0.0), jnp.inf)      # no second basin found: no switch
    Kj = jnp.stack([jump_matrix(out.h, out.other, gap, x.V, knobs.alpha, e, sigma2) for e in windows])
    frac = jnp.stack([jnp.mean(gap < e * sigma2) for e in windows])
    return K, Kj, frac, jnp.max(out.gn), jnp.mean(sep)


@lru_cache(maxsize=32)
def _compiled_terms(L, r, rs, k, A, P, windows):
    """:func:`_terms` jit-compiled once per structure (and gap windows), as the engine's maps."""
    xla_cache.enable()
    A_, P_, off = np.asarray(A), np.asarray(P), PG.start_offsets(L, r)
    return jax.jit(lambda xf, kn, xi, y: _terms(xf, kn, xi, y, A_, P_, off, r, k, rs, windows))


def replicon_at(params, alpha: float, x: OrderParams, xi, y, windows: Sequence[float] = GAP_WINDOWS) -> dict:
    """Λ_AT at the state ``x`` of the general model (MODEL.md §8) on ONE point set ``xi`` (N, L, r),
    ``y`` (N, L, r*) (the engine's QMC points): ``value`` (largest eigenvalue), ``matrix`` (r²×r²),
    ``eigenvector`` (r×r), ``jump`` (κ(ε) per window ε of :data:`GAP_WINDOWS`), ``gap_fraction`` (samples with
    a second basin within ε σ²), ``two_basin`` (samples with a second basin at all), ``max_grad``."""
    L, r, rs, k = params.L, params.r, params.r_star, params.k
    fn = _compiled_terms(L, r, rs, k, params.A, params.P, tuple(windows))
    with jax.enable_x64(True):
        kn = CG.Knobs(*(jnp.asarray(float(v)) for v in (alpha, params.omega, params.sigma, params.lam)))
        xf = flatten(OrderParams(*(jnp.asarray(np.asarray(b, float)) for b in x)))
        K, Kj, frac, gn, two = fn(xf, kn, jnp.asarray(xi), jnp.asarray(y))
    value, vec = leading(K)
    return {"value": value, "matrix": np.asarray(K), "eigenvector": vec,
            "jump": [leading(m)[0] for m in np.asarray(Kj)], "gap_fraction": np.asarray(frac).tolist(),
            "windows": list(windows), "max_grad": float(gn), "two_basin": float(two)}


def _mean_se(v) -> tuple[float, float]:
    v = np.asarray(v, float)
    if v.size < 2 or not np.all(np.isfinite(v)):
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


def decide(value: float, err: float, k_se: float = STABLE_K) -> bool | None:
    """True (RS stable: Λ_AT below 1 by more than ``k_se`` s.e.), False (above by as much), None otherwise."""
    if not (math.isfinite(value) and math.isfinite(err)):
        return None
    if value + k_se * err < 1.0:
        return True
    if value - k_se * err > 1.0:
        return False
    return None


USABLE = (Status.CONVERGED, Status.ACCEPTED_AT_JUMP, Status.COLLAPSED)


def replicon_states(params, alpha: float, states, qmc_config, windows: Sequence[float] = GAP_WINDOWS,
                    k_se: float = STABLE_K) -> dict:
    """Λ_AT from per-scramble states ``states`` (S, n) (flattened, :func:`state.flatten`), each on its own
    scramble of ``qmc_config`` (engine.QMCConfig): ``value`` = mean over scrambles, ``error`` = their
    standard error, ``stable`` (:func:`decide`), ``jump`` / ``jump_err`` (κ per gap window, 1/loss units),
    ``two_basin`` (fraction of samples whose prox found a second local minimum), ``per_scramble``."""
    p = params
    xi, y = qmc_points(p, qmc_config)
    recs = [replicon_at(p, alpha, unflatten(np.asarray(xs, float), p.r, p.k, p.r_star), xi[s], y[s], windows)
            for s, xs in enumerate(states)]
    value, err = _mean_se([rc["value"] for rc in recs])
    jump = np.array([rc["jump"] for rc in recs])
    return {"value": value, "error": err, "stable": decide(value, err, k_se), "k": k_se, "integrator": "qmc",
            "reason": None, "per_scramble": [rc["value"] for rc in recs],
            "eigenvector": np.mean([rc["eigenvector"] for rc in recs], axis=0).tolist(),
            "windows": list(windows), "jump": jump.mean(axis=0).tolist(),
            "jump_err": (jump.std(axis=0, ddof=1) / math.sqrt(len(recs))).tolist(),
            "two_basin": float(np.mean([rc["two_basin"] for rc in recs])),
            "max_grad": max(rc["max_grad"] for rc in recs),
            "points": qmc_config.points, "scrambles": qmc_config.scrambles}


def replicon(sol: "GeneralSolution", windows: Sequence[float] = GAP_WINDOWS, k_se: float = STABLE_K) -> dict:
    """Λ_AT of a solved engine point (QMC, :func:`replicon_states` at ``sol.scramble_x``). A point that is not
    converged (nor collapsed onto a fixed point) gets NaN and the ``reason``."""
    nan = float("nan")
    base = {"value": nan, "error": nan, "stable": None, "k": k_se, "integrator": "qmc", "reason": None}
    if sol.status not in USABLE:
        return {**base, "reason": f"no fixed point (status {sol.status.value})"}
    if sol.scramble_x is None:
        return {**base, "reason": "the per-scramble states were not kept"}
    return replicon_states(sol.params, sol.alpha, sol.scramble_x, sol.qmc, windows, k_se)


def replicon_split_at(params, alpha: float, q: float, m: float, V: float, theta: float, nodes: int,
                      rule: str = "split") -> float:
    """Λ_AT of the L = 2, r = r* = 1 model (MODEL.md §6) at the state (q, m, V, θ), integrated with the split
    rule of outer order ``nodes`` (no reflection: the whole plane), r = 1: ``α E‖∂ĥ/∂ω − I‖_F²``."""
    from . import prox as _prox
    from .channel import preactivations, solved_nodes
    from .solver import make_rule
    nd = solved_nodes(params, q, m, V, theta, make_rule(nodes, rule), use_symmetry=False)
    _, _, hs1, hs2 = preactivations(params, q, m, theta, *nd.coords)
    t1, t2 = _prox.teacher_diag(hs1, hs2, params.omega, params.A_array)
    Dh = np.stack(_prox.dh_domega(nd.h[0], nd.h[1], t1, t2, V, params.sigma ** 2), axis=-1).reshape(-1, 2, 2)
    with jax.enable_x64(True):
        K = replicon_operator(jnp.asarray((Dh - np.eye(2)) / V), jnp.eye(1) * V, alpha, jnp.asarray(nd.weights))
    return leading(K)[0]


def replicon_split(sol: "Solution", orders: Sequence[int] | None = None, k_se: float = STABLE_K) -> dict:
    """Λ_AT of a split-rule point (L = 2, r = r* = 1, MODEL.md §6) at its (q, m, V, θ) by
    :func:`replicon_split_at` at each outer order in ``orders`` (default: the solve's order and twice it);
    ``value`` at the highest order, ``error`` = the largest |difference| to the lower orders (the rule's own
    error; the fixed point's solve error is not included). The split rule integrates the pointwise derivative
    on each side of the switching set: the smooth part, as the QMC version."""
    nan = float("nan")
    base = {"value": nan, "error": nan, "stable": None, "k": k_se, "integrator": "split", "reason": None}
    if not sol.converged:
        return {**base, "reason": f"no fixed point (status {sol.status})"}
    orders = tuple(orders) if orders is not None else (sol.nodes, 2 * sol.nodes)
    vals = [replicon_split_at(sol.params, sol.alpha, sol.q, sol.m, sol.V, sol.theta, n, sol.rule) for n in orders]
    value = vals[-1]
    err = max(abs(v - value) for v in vals[:-1]) if len(vals) > 1 else nan
    return {**base, "value": value, "error": err, "stable": decide(value, err, k_se), "orders": list(orders),
            "per_order": vals}
