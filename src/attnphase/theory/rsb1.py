"""One step of replica symmetry breaking (1RSB) at zero temperature, uninformative sector (m = θ = 0), L = 2,
r = r* = 1 (MODEL.md §6; derivation in docs/theory/one-step-rsb.md).

With overlaps q1 (within a state), q0 (between states), Δq = q1 − q0, the within-state susceptibility V and the
Parisi parameter x = β m_P, the ground-state functional is

    e(q0, Δq, V, x) = λ q1/(2σ²) − log(1 + xΔq/V)/(2x) − q0/(2(V + xΔq))
                      − (α/x) E_{y, ξ0} log E_{ξ1} exp(−x M(√q0 ξ0 + √Δq ξ1, h*(y); V)),

``M`` the Moreau envelope of MODEL.md §6 (global minimiser, :func:`.prox.prox`). At x → 0 or Δq → 0 it is the RS
functional ``λq/(2σ²) − q/(2V) + α E M`` (q = q1), whose stationary point is the RS fixed point.

Integration. At m = θ = 0 the envelope depends on the student field ω ∈ R² and on the teacher only through
t = diag T(h*), h* = σ y. ``M`` and ``∂M/∂V`` are tabulated once per V on a uniform ω grid (:class:`OmegaGrid`)
at the nodes of a Gauss–Hermite rule in y (halved by the exact y → −y symmetry, t(−y) = t(y)); the inner
average over ξ1 is a discrete Gaussian blur of ``exp(−xM)`` on the grid (separable, rows normalised), the outer
one over ξ0 the discrete Gaussian weights of the grid. So (q0, Δq, x) cost only matrix products, and the prox is
solved once per V (:class:`ChannelTable`). Discretisation error: compare two grids / two y orders
(:func:`discretisation_error`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from ..model import ModelParams
from . import prox as _prox
from .quadrature import gauss_hermite
from .routing import is_small

SMALL_X = 1.0
"""Below this x the inner log uses log1p(K expm1(−x(M − c)) Kᵀ) (accurate as x → 0); above it log(K e^{−x(M−c)} Kᵀ)."""
TINY_F = 1e-280


@dataclass(frozen=True)
class OmegaGrid:
    """Uniform grid of ``n`` points (odd, symmetric about 0) per axis on [−R, R] for the student field ω ∈ R²."""

    R: float = 2.7
    n: int = 217

    def __post_init__(self) -> None:
        if self.n < 3 or self.n % 2 == 0:
            raise ParameterError("n", "an odd integer >= 3", self.n)
        if not self.R > 0:
            raise ParameterError("R", "> 0", self.R)

    @property
    def z(self) -> np.ndarray:
        return np.linspace(-self.R, self.R, self.n)

    @property
    def h(self) -> float:
        return 2.0 * self.R / (self.n - 1)


def check_sector(params: ModelParams) -> None:
    """The tabulated channel is the L = 2, r = r* = 1, P = ±(1, −1)ᵀ model of MODEL.md §6."""
    if not is_small(params):
        raise ParameterError("params", "L = 2, r = r* = 1 and the paper's P (the 1RSB table is MODEL.md §6's channel)",
                             (params.L, params.r, params.r_star))


def y_rule(order: int, exchange: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Hermite nodes (y1, y2) of ``order`` per axis, folded by y → −y (t is even in y) and, with
    ``exchange``, by y1 ↔ y2 (which swaps t1 ↔ t2: a symmetry of the channel only where A_11 = A_22, MODEL.md §8):
    one node per orbit, carrying the orbit's weight. Returns (nodes, weights)."""
    Y, W = gauss_hermite(order, 2)
    key = np.round(Y, 12)
    orbits = {}
    for (a, b), w, y in zip(key, W, Y):
        images = [(a, b), (-a, -b)] + ([(b, a), (-b, -a)] if exchange else [])
        k = max(images)
        rep, tot = orbits.get(k, (y, 0.0))
        orbits[k] = (rep, tot + w)
    nodes = np.array([v[0] for v in orbits.values()])
    weights = np.array([v[1] for v in orbits.values()])
    return nodes, weights


@dataclass
class ChannelTable:
    """``M`` and ``∂M/∂V`` on the ω grid at each y node, for one (params, V): arrays (n_y, n, n), float64."""

    params: ModelParams
    V: float
    grid: OmegaGrid
    y_order: int
    y_weights: np.ndarray
    M: np.ndarray
    M_V: np.ndarray
    max_grad: float
    y_nodes: np.ndarray | None = None


NEIGHBOUR_SWEEPS = 1
"""Sweeps of the neighbour check in :func:`_neighbour_checked`."""


def _neighbour_checked(w1, w2, t1, t2, V, s2):
    """The global prox on a 2-D ω grid, then Newton from each grid neighbour's minimiser, keeping the lowest.
    The multi-start alone can end on the saddle ĥ = 0 where ω = 0 exactly (all its starts coincide there,
    MODEL.md §7): on the grid that node carries the largest weight, so it is repaired from its neighbours."""
    tt1, tt2 = np.full(w1.shape, t1), np.full(w1.shape, t2)
    h1, h2, M, gn = _prox.prox(w1, w2, tt1, tt2, V, s2)
    for _ in range(NEIGHBOUR_SWEEPS):
        for ax, sh in ((0, 1), (0, -1), (1, 1), (1, -1)):
            c1, c2, cM, cg = _prox.prox(w1, w2, tt1, tt2, V, s2, warm=(np.roll(h1, sh, ax), np.roll(h2, sh, ax)),
                                        global_search=False)
            better = cM < M - 1e-15
            h1, h2, M, gn = (np.where(better, a, b) for a, b in ((c1, h1), (c2, h2), (cM, M), (cg, gn)))
    return h1, h2, M, gn


def tabulate(params: ModelParams, V: float, grid: OmegaGrid = OmegaGrid(), y_order: int = 8) -> ChannelTable:
    """Solve the global prox at every (y node, ω grid point) at susceptibility ``V`` (MODEL.md §6).
    ``∂M/∂V = −|ĥ − ω|²/(2V²)`` (envelope theorem)."""
    check_sector(params)
    if not V > 0:
        raise ParameterError("V", "> 0", V)
    s2 = params.sigma ** 2
    A = params.A_array
    Y, wy = y_rule(y_order, exchange=abs(A[0, 0] - A[1, 1]) <= 1e-12)
    z = grid.z
    w1, w2 = np.meshgrid(z, z, indexing="ij")
    M = np.empty((len(wy), grid.n, grid.n))
    MV = np.empty_like(M)
    worst = 0.0
    for k, (y1, y2) in enumerate(Y):
        sig = params.sigma
        t1, t2 = _prox.teacher_diag(sig * y1, sig * y2, params.omega, params.A_array)
        h1, h2, Mk, gn = _neighbour_checked(w1, w2, t1, t2, V, s2)
        M[k] = Mk
        MV[k] = -((h1 - w1) ** 2 + (h2 - w2) ** 2) / (2.0 * V * V)
        worst = max(worst, float(np.max(gn)))
    return ChannelTable(params, float(V), grid, y_order, wy, M, MV, worst, Y)


def _gauss_weights(z, var):
    """Normalised discrete N(0, var) weights on the grid and their derivative in var."""
    if var <= 0:
        w = (np.abs(z) < 1e-12).astype(float)
        return w / w.sum(), np.zeros_like(z)
    u = np.exp(-z * z / (2.0 * var))
    w = u / u.sum()
    s = z * z / (2.0 * var * var)
    return w, w * (s - w @ s)


OUTER_GH_ORDER = 16
"""Gauss–Hermite order per axis of the outer (ξ0) average when √q0 is below ``OUTER_GRID_MIN`` grid spacings."""
OUTER_GRID_MIN = 2.0


def _cubic_lagrange(s):
    """Four-point cubic Lagrange weights on nodes −1, 0, 1, 2 at offsets s ∈ [0, 1) and their s-derivatives."""
    L = np.stack([-s * (s - 1) * (s - 2) / 6, (s + 1) * (s - 1) * (s - 2) / 2, -(s + 1) * s * (s - 2) / 2,
                  (s + 1) * s * (s - 1) / 6], axis=-1)
    dL = np.stack([-(3 * s * s - 6 * s + 2) / 6, (3 * s * s - 4 * s - 1) / 2, -(3 * s * s - 2 * s - 2) / 2,
                   (3 * s * s - 1) / 6], axis=-1)
    return L, dL


def _interpolated_weights(z, q0, order=OUTER_GH_ORDER):
    """Outer weights for a small q0: Gauss–Hermite nodes √q0 x_k with the grid values interpolated (cubic
    Lagrange), folded into one weight vector u (E_ξ0 A(ω0) = u A uᵀ for the tensor rule) and du/dq0."""
    x, w = gauss_hermite(order, 1)
    x = x[:, 0]
    sq = np.sqrt(max(q0, 1e-300))
    h = z[1] - z[0]
    pos = (sq * x - z[0]) / h
    i = np.floor(pos).astype(int)
    if i.min() < 1 or i.max() > len(z) - 3:
        raise ParameterError("q0", f"small enough that the outer nodes stay on the ω grid (q0 = {q0})", q0)
    L, dL = _cubic_lagrange(pos - i)
    u = np.zeros_like(z)
    du = np.zeros_like(z)
    for j in range(4):
        np.add.at(u, i - 1 + j, w * L[:, j])
        np.add.at(du, i - 1 + j, w * dL[:, j] * x / (2.0 * sq * h))
    return u, du


def _outer_weights(z, q0):
    """The outer (ξ0 ~ N(0, q0)) weights on the grid and their q0-derivative: the normalised discrete Gaussian
    when √q0 >= OUTER_GRID_MIN grid spacings, Gauss–Hermite with cubic interpolation below (a narrow Gaussian
    is not resolved by the grid; the blurred integrand is smooth at that scale)."""
    if q0 > 0 and np.sqrt(q0) < OUTER_GRID_MIN * (z[1] - z[0]):
        return _interpolated_weights(z, q0)
    return _gauss_weights(z, q0)


def _blur_kernel(z, var):
    """Row-normalised Gaussian blur K_ij ∝ exp(−(z_j − z_i)²/(2 var)) and ∂K/∂var (identity at var = 0)."""
    if var <= 0:
        return np.eye(len(z)), np.zeros((len(z), len(z)))
    D2 = (z[None, :] - z[:, None]) ** 2
    u = np.exp(-D2 / (2.0 * var))
    K = u / u.sum(axis=1, keepdims=True)
    s = D2 / (2.0 * var * var)
    return K, K * (s - np.sum(K * s, axis=1, keepdims=True))


def _sandwich(K, F, K2=None):
    """K F K2ᵀ for every y slice of F (n_y, n, n)."""
    K2 = K if K2 is None else K2
    ny, n, _ = F.shape
    G = K @ np.ascontiguousarray(F.transpose(1, 0, 2)).reshape(n, ny * n)      # (i, (y, k))
    G = G.reshape(n * ny, n) @ K2.T                                            # ((i, y), l)
    return G.reshape(n, ny, n).transpose(1, 0, 2)


@dataclass(frozen=True)
class Energetic:
    """E_y E_ξ0 φ with φ = −(1/x) log E_ξ1 exp(−xM), and its derivatives in q0 (the outer variance), Δq, x, V
    and, for the shifted outer average of :func:`energetic_shifted`, in θ and m (zero otherwise)."""

    value: float
    d_q0: float
    d_dq: float
    d_x: float
    d_V: float
    d_theta: float = 0.0
    d_m: float = 0.0


def _blurred(table: ChannelTable, dq: float, x: float):
    """Per (y node, ω grid point): φ, ∂φ/∂Δq, ∂φ/∂x and the tilted ∂M/∂V of the inner (ξ1) average."""
    z = table.grid.z
    K, dK = _blur_kernel(z, dq)
    M = table.M
    c = M.min(axis=(1, 2), keepdims=True)
    Mc = M - c
    if x == 0.0:
        phi = _sandwich(K, Mc) + c
        dphi_dq = _sandwich(dK, Mc, K) + _sandwich(K, Mc, dK)
        tilt_V = _sandwich(K, table.M_V)
        var = _sandwich(K, Mc * Mc) - (phi - c) ** 2
        return phi, dphi_dq, -0.5 * var, tilt_V, None
    if x < SMALL_X:
        G = _sandwich(K, np.expm1(-x * Mc))
        logF = np.log1p(G)
        F = 1.0 + G
    else:
        F = _sandwich(K, np.exp(-x * Mc))
        logF = np.log(np.maximum(F, TINY_F))
    f = np.exp(-x * Mc)
    phi = c - logF / x
    dF_dq = _sandwich(dK, f, K) + _sandwich(K, f, dK)
    tiltM = _sandwich(K, Mc * f) / F
    under = F < TINY_F if x >= SMALL_X else None
    return phi, -dF_dq / (x * F), logF / (x * x) + tiltM / x, _sandwich(K, table.M_V * f) / F, under


def _check_underflow(under, weight, x) -> None:
    """exp(−x ΔM) must not underflow where the outer average has weight (``weight``: (n_y | 1, n, n))."""
    if under is not None and np.any(under & (np.abs(weight) > 1e-30)):
        raise ParameterError("x", f"small enough that exp(−x ΔM) does not underflow (x = {x})", x)


def energetic(table: ChannelTable, q0: float, dq: float, x: float) -> Energetic:
    """The 1RSB channel average at the table's V, outer average centred (uninformative sector; x = 0: the
    limit E_ξ1 M)."""
    if q0 < 0 or dq < 0 or x < 0:
        raise ParameterError("q0, dq, x", ">= 0", (q0, dq, x))
    w0, dw0 = _outer_weights(table.grid.z, q0)
    phi, dphi_dq, dphi_dx, tilt_V, under = _blurred(table, dq, x)
    W = np.multiply.outer(w0, w0)
    _check_underflow(under, W[None], x)
    dW = np.multiply.outer(dw0, w0) + np.multiply.outer(w0, dw0)
    wy = table.y_weights
    avg = lambda a, wt: float(wy @ np.einsum("yij,ij->y", a, wt))  # noqa: E731
    return Energetic(avg(phi, W), avg(phi, dW), avg(dphi_dq, W), avg(dphi_dx, W), avg(tilt_V, W))


def _shifted_weights(z, p0, mu):
    """Outer weights of N(mu_k, p0) on the grid, one row per mean ``mu`` (n_mu,), with their derivatives in p0
    and in the mean: the normalised discrete Gaussian when √p0 >= OUTER_GRID_MIN grid spacings, else
    Gauss–Hermite nodes mu + √p0 x_j with cubic interpolation (as :func:`_outer_weights`)."""
    mu = np.asarray(mu, float)
    h = z[1] - z[0]
    if p0 > 0 and np.sqrt(p0) >= OUTER_GRID_MIN * h:
        d = z[None, :] - mu[:, None]
        u = np.exp(-d * d / (2.0 * p0))
        w = u / u.sum(axis=1, keepdims=True)
        s, r = d * d / (2.0 * p0 * p0), d / p0
        return (w, w * (s - np.sum(w * s, axis=1, keepdims=True)), w * (r - np.sum(w * r, axis=1, keepdims=True)))
    xg, wg = gauss_hermite(OUTER_GH_ORDER, 1)
    xg = xg[:, 0]
    sq = np.sqrt(max(p0, 1e-300))
    w, dw_p, dw_mu = (np.zeros((len(mu), len(z))) for _ in range(3))
    for k, m_k in enumerate(mu):
        pos = (m_k + sq * xg - z[0]) / h
        i = np.floor(pos).astype(int)
        if i.min() < 1 or i.max() > len(z) - 3:
            raise ParameterError("q0, theta, m", f"small enough that the outer nodes stay on the ω grid (±{z[-1]:g})",
                                 (p0, m_k))
        L, dL = _cubic_lagrange(pos - i)
        for j in range(4):
            np.add.at(w[k], i - 1 + j, wg * L[:, j])
            np.add.at(dw_p[k], i - 1 + j, wg * dL[:, j] * xg / (2.0 * sq * h))
            np.add.at(dw_mu[k], i - 1 + j, wg * dL[:, j] / h)
    return w, dw_p, dw_mu


def energetic_shifted(table: ChannelTable, p0: float, dq: float, x: float, theta: float = 0.0,
                      m: float = 0.0) -> Energetic:
    """The 1RSB channel average with the outer field ``ω0_l = (θ/σ) y_l + s_l m + √p0 ξ0_l`` (s = (+1, −1)):
    the student's common part correlated with the teacher h* = σy (overlap θ, ρ = σ²) and shifted by the
    positional overlap m (MODEL.md §6's channel with ρ = σ²; docs/theory/one-step-rsb.md §8). ``p0`` = q0 − θ²/σ²,
    the variance left to ξ0. One of θ, m only: the y → −y fold of the table needs the other zero."""
    if p0 < 0 or dq < 0 or x < 0:
        raise ParameterError("q0, dq, x", ">= 0", (p0, dq, x))
    if theta != 0.0 and m != 0.0:
        raise ParameterError("theta, m", "one of them zero (the tables are folded by y -> -y)", (theta, m))
    if table.y_nodes is None:
        raise ParameterError("table", "a table with its y nodes (rsb1.tabulate)", None)
    z, s = table.grid.z, table.params.sigma
    Y = table.y_nodes
    mu1, mu2 = theta / s * Y[:, 0] + m, theta / s * Y[:, 1] - m
    w1, p1, u1 = _shifted_weights(z, p0, mu1)
    w2, p2, u2 = _shifted_weights(z, p0, mu2)
    phi, dphi_dq, dphi_dx, tilt_V, under = _blurred(table, dq, x)
    _check_underflow(under, np.einsum("yi,yj->yij", w1, w2), x)
    wy = table.y_weights
    avg = lambda a, a1, a2: float(wy @ np.einsum("yij,yi,yj->y", a, a1, a2))  # noqa: E731
    # the derivative along the overlap that is zero is the mixed direction, which the folded y rule does not
    # integrate (NaN)
    d_theta = (wy * Y[:, 0] / s) @ np.einsum("yij,yi,yj->y", phi, u1, w2) \
        + (wy * Y[:, 1] / s) @ np.einsum("yij,yi,yj->y", phi, w1, u2) if m == 0.0 else np.nan
    d_m = avg(phi, u1, w2) - avg(phi, w1, u2) if theta == 0.0 else np.nan
    return Energetic(avg(phi, w1, w2), avg(phi, p1, w2) + avg(phi, w1, p2), avg(dphi_dq, w1, w2),
                     avg(dphi_dx, w1, w2), avg(tilt_V, w1, w2), float(d_theta), float(d_m))


@dataclass(frozen=True)
class Rsb1Value:
    """e^1RSB at (q0, Δq, V, x) and its gradient."""

    e: float
    grad: np.ndarray    # (∂q0, ∂Δq, ∂V, ∂x)


def entropic(params: ModelParams, q0: float, dq: float, V: float, x: float) -> tuple[float, np.ndarray]:
    """Prior (ridge) term ``λq1/(2σ²) − log(1 + xΔq/V)/(2x) − q0/(2(V + xΔq))`` and its gradient
    (∂q0, ∂Δq, ∂V, ∂x); at x = 0 its limit ``λq1/(2σ²) − q1/(2V)``."""
    a = params.lam / (2.0 * params.sigma ** 2)
    Vt = V + x * dq
    u = x * dq / V
    if x == 0.0:
        L1, dLx = dq / V, -0.5 * (dq / V) ** 2
    else:
        L1 = np.log1p(u) / x
        dLx = (u / (1.0 + u) - np.log1p(u)) / (x * x) if u > 1e-6 else (-0.5 * (dq / V) ** 2 + x * (dq / V) ** 3 / 1.5)
    val = a * (q0 + dq) - 0.5 * L1 - q0 / (2.0 * Vt)
    g_q0 = a - 1.0 / (2.0 * Vt)
    g_dq = a - 1.0 / (2.0 * Vt) + x * q0 / (2.0 * Vt * Vt)
    g_V = dq / (2.0 * V * Vt) + q0 / (2.0 * Vt * Vt)
    g_x = -0.5 * dLx + q0 * dq / (2.0 * Vt * Vt)
    return float(val), np.array([g_q0, g_dq, g_V, g_x])


def functional(table: ChannelTable, alpha: float, q0: float, dq: float, x: float) -> Rsb1Value:
    """``e(q0, Δq, V, x)`` at the table's V (module docstring) with its gradient."""
    s, gs = entropic(table.params, q0, dq, table.V, x)
    en = energetic(table, q0, dq, x)
    ge = np.array([en.d_q0, en.d_dq, en.d_V, en.d_x])
    return Rsb1Value(s + alpha * en.value, gs + alpha * ge)


def functional_shifted(table: ChannelTable, alpha: float, p0: float, dq: float, x: float, theta: float = 0.0,
                       m: float = 0.0) -> Rsb1Value:
    """The 1RSB functional in the semantic (θ ≠ 0) or positional (m ≠ 0) sector (docs/theory/one-step-rsb.md §8):

        e = λq1/(2σ²) − log(1 + xΔq/V)/(2x) − (q0 − c)/(2(V + xΔq)) − (α/x) E log E_ξ1 e^{−xM},

    q0 = p0 + θ²/σ², q1 = q0 + Δq, c = θ²/σ² + σ²m² (the prior's volume at fixed teacher and positional
    overlaps), the channel of :func:`energetic_shifted`. Gradient in (p0, Δq, V, x, θ, m). θ = m = 0 is
    :func:`functional`."""
    prm = table.params
    s2 = prm.sigma ** 2
    if p0 < s2 * m * m:
        raise ParameterError("q0", f">= σ² m² = {s2 * m * m:g} (the states' residual overlap is a Gram entry)", p0)
    s, gs = entropic(prm, p0 - s2 * m * m, dq, table.V, x)
    s += prm.lam * (theta * theta / s2 + s2 * m * m) / (2.0 * s2)
    en = energetic_shifted(table, p0, dq, x, theta, m)
    grad = np.array([gs[0] + alpha * en.d_q0, gs[1] + alpha * en.d_dq, gs[2] + alpha * en.d_V,
                     gs[3] + alpha * en.d_x, prm.lam * theta / (s2 * s2) + alpha * en.d_theta,
                     -2.0 * s2 * m * gs[0] + prm.lam * m + alpha * en.d_m])
    return Rsb1Value(s + alpha * en.value, grad)
