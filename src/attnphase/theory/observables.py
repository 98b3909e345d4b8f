"""Observables at a fixed point (MODEL.md §5, §6): ε_g, e_t = -Φ, and the linear baseline ε_lin."""

from __future__ import annotations

import numpy as np

from ..model import ModelParams
from . import prox as _prox
from .quadrature import gauss_hermite


def eps_g(params: ModelParams, q: float, m: float, theta: float, nodes: np.ndarray, weights: np.ndarray) -> float:
    """``ε_g = E ℓ(h, h*)`` with ``h_l = √q ξ_l + s_l m`` (MODEL.md §6); the integrand is smooth."""
    rho = params.sigma ** 2
    sq = np.sqrt(max(q, 1e-300))
    sres = np.sqrt(max(rho - theta * theta / max(q, 1e-300), 0.0))
    xi1, xi2, y1, y2 = nodes.T
    hs1 = theta / sq * xi1 + sres * y1
    hs2 = theta / sq * xi2 + sres * y2
    t1, t2 = _prox.teacher_diag(hs1, hs2, params.omega, params.A_array)
    l = _prox.loss(sq * xi1 + m, sq * xi2 - m, t1, t2, params.sigma ** 2)
    return float(weights @ l)


def free_energy(params: ModelParams, alpha: float, q, m, V, theta, q_hat, m_hat, V_hat, theta_hat, EM) -> float:
    """``Φ = ½(V̂q - q̂V) - m m̂ - θθ̂ + ½(σ²q̂ + m̂² + σ²ρθ̂²)/D - α E[M]`` (MODEL.md §6)."""
    s2 = params.sigma ** 2
    rho = s2
    D = params.lam + s2 * V_hat
    return (0.5 * (V_hat * q - q_hat * V) - m * m_hat - theta * theta_hat
            + 0.5 * (s2 * q_hat + m_hat ** 2 + s2 * rho * theta_hat ** 2) / D - alpha * EM)


def eps_lin(params: ModelParams, nodes: int = 60) -> float:
    """Population error of the linear positional baseline (MODEL.md §5), ``½ σ² (E‖T‖_F² - ‖E T‖_F²)``.

    Uses ``attnphase.baseline.eps_lin`` when available; otherwise a 2-D Gauss–Hermite expectation over h*.
    """
    try:  # pragma: no cover - depends on another module being present
        from ..baseline import eps_lin as _other  # type: ignore
        return float(_other(params))
    except Exception:
        pass
    x, w = gauss_hermite(nodes, 2)
    hs1, hs2 = params.sigma * x[:, 0], params.sigma * x[:, 1]
    t1, t2 = _prox.teacher_diag(hs1, hs2, params.omega, params.A_array)
    # T = [[t1, 1-t1], [1-t2, t2]]:  ‖T‖² = t1² + (1-t1)² + t2² + (1-t2)²
    T = np.stack([t1, 1 - t1, 1 - t2, t2], axis=1)
    ET = w @ T
    ET2 = w @ (T * T).sum(axis=1)
    return float(0.5 * params.sigma ** 2 * (ET2 - (ET * ET).sum()))
