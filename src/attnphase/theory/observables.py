"""Observables at a fixed point (MODEL.md §5, §6): ε_g, e_t = -Φ, and the linear baseline ε_lin."""

from __future__ import annotations

from ..model import ModelParams
from . import prox as _prox
from .channel import prox_inputs
from .quadrature import ProductRule


EPS_G_NODES = 12
"""Product Gauss–Hermite order of the ε_g expectation (smooth integrand: converged to ~1e-7 relative)."""


def eps_g(params: ModelParams, q: float, m: float, theta: float, rule: ProductRule = ProductRule(EPS_G_NODES)
          ) -> float:
    """``ε_g = E ℓ(h, h*)`` with ``h_l = √q ξ_l + s_l m`` (MODEL.md §6); the integrand is smooth."""
    X, W = rule.rule()
    w1, w2, t1, t2 = prox_inputs(params, q, m, theta)(*X.T)
    return float(W @ _prox.loss(w1, w2, t1, t2, params.sigma ** 2))


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
