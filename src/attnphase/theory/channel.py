"""Channel (sample) side of the fixed point, MODEL.md §6: hat variables in Stein form and the envelope E[M].

All expectations are over ξ, y ∈ R² i.i.d. standard normal, evaluated with a 4-D rule (nodes (N, 4) with
columns ξ1, ξ2, y1, y2 and weights (N,)). L = 2, r = r* = 1, ρ = σ² (teacher norm), s = (+1, -1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import ModelParams
from . import prox as _prox

_TINY = 1e-300


@dataclass
class ChannelResult:
    q_hat: float
    m_hat: float
    V_hat: float
    theta_hat: float
    EM: float           # E[M] (Moreau envelope)
    h: tuple            # (ĥ1, ĥ2) at the nodes, for warm starts
    max_grad: float     # worst |∇F| at the returned minimisers


def _fields(params: ModelParams, q, m, theta, nodes):
    rho = params.sigma ** 2
    sq = np.sqrt(max(q, _TINY))
    res = max(rho - theta * theta / max(q, _TINY), 0.0)
    sres = np.sqrt(res)
    xi1, xi2, y1, y2 = nodes[:, 0], nodes[:, 1], nodes[:, 2], nodes[:, 3]
    w1 = sq * xi1 + m
    w2 = sq * xi2 - m
    hs1 = theta / sq * xi1 + sres * y1
    hs2 = theta / sq * xi2 + sres * y2
    return sq, sres, (xi1, xi2, y1, y2), (w1, w2), (hs1, hs2)


def channel(params: ModelParams, alpha: float, q: float, m: float, V: float, theta: float,
            nodes: np.ndarray, weights: np.ndarray, *, warm=None, grid: int = 9,
            temperature: float = 0.0) -> ChannelResult:
    """Hat variables (q̂, m̂, V̂, θ̂) and E[M] at order parameters (q, m, V, θ), MODEL.md §6 (Stein forms)."""
    sigma2 = params.sigma ** 2
    A = params.A_array
    sq, sres, (xi1, xi2, y1, y2), (w1, w2), (hs1, hs2) = _fields(params, q, m, theta, nodes)
    t1, t2 = _prox.teacher_diag(hs1, hs2, params.omega, A)
    if temperature > 0:
        # finite-temperature envelope: g averaged over distinct local minima with Boltzmann weights
        H1, H2, F, G = _prox.prox(w1, w2, t1, t2, V, sigma2, warm=warm, grid=grid, all_starts=True)
        wk, M = _prox.soft_select(H1, H2, F, G, temperature)
        g1 = ((H1 - w1) * wk).sum(0) / V
        g2 = ((H2 - w2) * wk).sum(0) / V
        k = np.argmax(wk, axis=0)[None]
        h1, h2 = np.take_along_axis(H1, k, 0)[0], np.take_along_axis(H2, k, 0)[0]
        gn = np.take_along_axis(G, k, 0)[0]
    else:
        h1, h2, M, gn = _prox.prox(w1, w2, t1, t2, V, sigma2, warm=warm, grid=grid)
        g1 = (h1 - w1) / V
        g2 = (h2 - w2) / V
    W = weights
    q_hat = alpha * float(W @ (g1 * g1 + g2 * g2))
    m_hat = alpha * float(W @ (g1 - g2))
    if sres > 0:
        theta_hat = alpha * float(W @ (g1 * y1 + g2 * y2)) / sres
    else:
        theta_hat = 0.0
    V_hat = -alpha * float(W @ (g1 * xi1 + g2 * xi2)) / sq + theta * theta_hat / max(q, _TINY)
    EM = float(W @ M)
    return ChannelResult(q_hat, m_hat, V_hat, theta_hat, EM, (h1, h2), float(np.max(gn)))


def channel_derivative_forms(params: ModelParams, alpha: float, q: float, m: float, V: float, theta: float,
                             nodes: np.ndarray, weights: np.ndarray, grid: int = 9) -> tuple[float, float]:
    """(V̂, θ̂) in derivative form, V̂ = -α E[Σ ∂g_l/∂ω_l], θ̂ = α E[Σ ∂g_l/∂h*_l] (implicit function theorem).

    Equal to the Stein forms of :func:`channel` up to quadrature error; used in tests.
    """
    sigma2 = params.sigma ** 2
    A = params.A_array
    om = params.omega
    _, _, _, (w1, w2), (hs1, hs2) = _fields(params, q, m, theta, nodes)
    t1, t2 = _prox.teacher_diag(hs1, hs2, om, A)
    h1, h2, _, _ = _prox.prox(w1, w2, t1, t2, V, sigma2, grid=grid)
    J11, J12, J21, J22 = _prox.dh_domega(h1, h2, t1, t2, V, sigma2)
    V_hat = -alpha * float(weights @ ((J11 - 1) + (J22 - 1))) / V
    # mixed second derivatives C_ij = ∂²ℓ/∂h_i ∂h*_j
    a = h1 * (h1 - h2)
    b = h2 * (h2 - h1)
    sa, sb = _prox._sig(a), _prox._sig(b)
    da, db = sa * (1 - sa), sb * (1 - sb)
    a1, a2 = 2 * h1 - h2, -h1
    b1, b2 = -h2, 2 * h2 - h1
    c = hs1 * (hs1 - hs2)
    e = hs2 * (hs2 - hs1)
    sc, se = _prox._sig(c), _prox._sig(e)
    dc, de = (1 - om) * sc * (1 - sc), (1 - om) * se * (1 - se)
    c1, c2 = 2 * hs1 - hs2, -hs1
    e1, e2 = -hs2, 2 * hs2 - hs1
    k = -2 * sigma2
    C11 = k * (dc * c1 * da * a1 + de * e1 * db * b1)
    C12 = k * (dc * c2 * da * a1 + de * e2 * db * b1)
    C21 = k * (dc * c1 * da * a2 + de * e1 * db * b2)
    C22 = k * (dc * c2 * da * a2 + de * e2 * db * b2)
    # ∂ĥ/∂h* = -(I/V + ∇²ℓ)^{-1} C = -V J C ; ∂g/∂h* = ∂ĥ/∂h* / V = -J C
    D11 = -(J11 * C11 + J12 * C21)
    D22 = -(J21 * C12 + J22 * C22)
    theta_hat = alpha * float(weights @ (D11 + D22))
    return V_hat, theta_hat
