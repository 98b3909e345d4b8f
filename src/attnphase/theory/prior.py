"""Weight (prior) side of the fixed point, closed form for the ridge penalty (MODEL.md §6)."""

from __future__ import annotations

from ..model import ModelParams


def prior(params: ModelParams, q_hat: float, m_hat: float, V_hat: float, theta_hat: float):
    """``D = λ + σ² V̂``; returns ``(q, m, V, θ)`` with ``V = σ²/D, m = m̂/D, θ = σ² ρ θ̂ / D``,
    ``q = σ² (σ² q̂ + m̂² + σ² ρ θ̂²) / D²`` (ρ = σ²)."""
    s2 = params.sigma ** 2
    rho = s2
    D = params.lam + s2 * V_hat
    if not D > 0:
        raise FloatingPointError(f"prior: D = lam + sigma^2 V_hat = {D:g} <= 0")
    V = s2 / D
    m = m_hat / D
    theta = s2 * rho * theta_hat / D
    q = s2 * (s2 * q_hat + m_hat ** 2 + s2 * rho * theta_hat ** 2) / D ** 2
    return q, m, V, theta
