"""Observables at a fixed point (MODEL.md §5, §6): ε_g, e_t = -Φ, and the linear baseline ε_lin."""

from __future__ import annotations

import numpy as np

from ..model import ModelParams
from . import prox as _prox
from .channel import prox_inputs
from .quadrature import ProductRule, gauss_hermite


EPS_G_NODES = 12
"""First product Gauss–Hermite order of the ε_g expectation (:data:`EPS_G_ORDERS`)."""
EPS_G_ORDERS = (12, 16, 24, 32, 48)
"""Orders tried in turn until two successive ones agree to ``EPS_G_RTOL``. The integrand is smooth but its
softmaxes sharpen as σ grows: at σ = 0.5 orders 12 and 16 agree to 1e-7; at σ = 1.5 (α = 2 semantic point,
q = 1.1739, θ = 1.6150) order 12 gave 0.020644, 16: 0.020384, 24: 0.020129, 32: 0.020044, 48: 0.020001,
against 0.020003 ± 0.000006 by plain Monte Carlo (1e7 samples): the fixed order 12 was 3 % high, silently
(docs/notes/2026-12-05-theory-general.md, "Away from the defaults")."""
EPS_G_RTOL = 1e-4


def _eps_g_order(params: ModelParams, q: float, m: float, theta: float, order: int) -> float:
    """The product rule of ``order`` per dimension, summed in slices of the first dimension (``order³`` nodes
    at a time: order 48 would need ~5·10⁶ nodes at once)."""
    x, w = gauss_hermite(order, 1)
    X3, W3 = gauss_hermite(order, 3)
    fields = prox_inputs(params, q, m, theta)
    total = 0.0
    for xi1, w1_ in zip(x[:, 0], w):
        w1, w2, t1, t2 = fields(np.full(len(W3), xi1), *X3.T)
        total += w1_ * float(W3 @ _prox.loss(w1, w2, t1, t2, params.sigma ** 2))
    return total


def eps_g(params: ModelParams, q: float, m: float, theta: float, rule: ProductRule | None = None) -> float:
    """``ε_g = E ℓ(h, h*)`` with ``h_l = √q ξ_l + s_l m`` (MODEL.md §6). ``rule``: one fixed product rule;
    default: the orders of :data:`EPS_G_ORDERS` in turn until two successive values agree to ``EPS_G_RTOL``
    (the last one otherwise)."""
    if rule is not None:
        X, W = rule.rule()
        w1, w2, t1, t2 = prox_inputs(params, q, m, theta)(*X.T)
        return float(W @ _prox.loss(w1, w2, t1, t2, params.sigma ** 2))
    prev = None
    for order in EPS_G_ORDERS:
        val = _eps_g_order(params, q, m, theta, order)
        if prev is not None and abs(val - prev) <= EPS_G_RTOL * abs(val):
            break
        prev = val
    return val


def free_energy(params: ModelParams, alpha: float, q, m, V, theta, q_hat, m_hat, V_hat, theta_hat, EM) -> float:
    """``Φ = ½(V̂q - q̂V) - m m̂ - θθ̂ + ½(σ²q̂ + m̂² + σ²ρθ̂²)/D - α E[M]`` (MODEL.md §6)."""
    s2 = params.sigma ** 2
    rho = s2
    D = params.lam + s2 * V_hat
    return (0.5 * (V_hat * q - q_hat * V) - m * m_hat - theta * theta_hat
            + 0.5 * (s2 * q_hat + m_hat ** 2 + s2 * rho * theta_hat ** 2) / D - alpha * EM)


def eps_lin(params: ModelParams) -> float:
    """Population error of the linear positional baseline (MODEL.md §5); see :func:`attnphase.baseline.eps_lin`."""
    from ..baseline import eps_lin as _eps_lin
    return float(_eps_lin(params))
