"""Channel (sample) side of the fixed point, MODEL.md §6: hat variables in Stein form and the envelope E[M].

All expectations are over ξ, y ∈ R² i.i.d. standard normal, evaluated either with the split-line rule of
:mod:`.switching` (default) or with a product Gauss–Hermite rule. L = 2, r = r* = 1, ρ = σ² (teacher norm),
s = (+1, -1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import ModelParams
from . import prox as _prox
from .kernel_choice import KernelChoice
from .quadrature import ProductRule
from .switching import SplitRule, line_nodes, outer_nodes
from .symmetry import exchange_reflection_holds

_TINY = 1e-300
SPLIT_MAPS = ("xla", "numpy")
_SPLIT_MAP = KernelChoice("split map", "ATTNPHASE_SPLIT_MAP", SPLIT_MAPS)


def split_map(name: str):
    """Context manager: evaluate the split rule's channel inside the block with ``"xla"`` (default: one compiled
    program per evaluation, :mod:`.split_xla`) or ``"numpy"`` (the reference: :func:`.switching.line_nodes`
    with the prox of :mod:`.prox`; same algorithm). Process default: ``ATTNPHASE_SPLIT_MAP``."""
    return _SPLIT_MAP.use(name)


def active_split_map() -> str:
    return _SPLIT_MAP.active()


@dataclass
class ChannelResult:
    q_hat: float
    m_hat: float
    V_hat: float
    theta_hat: float
    EM: float           # E[M] (Moreau envelope)
    h: tuple            # prox state for a warm start of the next call with the same rule
    max_grad: float     # worst |∇F| at the returned minimisers
    V_hat_deriv: float = float("nan")  # −α E[Σ_l ∂g_l/∂ω_l] (derivative form; V_hat is it below V_HAT_Q_FLOOR)


def preactivations(params: ModelParams, q: float, m: float, theta: float, xi1, xi2, y1, y2):
    """Student means ``ω_l = √q ξ_l + s_l m`` and teacher pre-activations
    ``h*_l = (θ/√q) ξ_l + √(ρ − θ²/q) y_l`` (MODEL.md §6, ρ = σ²): returns ``(ω1, ω2, h*1, h*2)``."""
    sq = np.sqrt(max(q, _TINY))
    sres = np.sqrt(max(params.sigma ** 2 - theta * theta / max(q, _TINY), 0.0))
    return sq * xi1 + m, sq * xi2 - m, theta / sq * xi1 + sres * y1, theta / sq * xi2 + sres * y2


def prox_inputs(params: ModelParams, q: float, m: float, theta: float):
    """``(ξ1, ξ2, y1, y2) -> (ω1, ω2, t1, t2)``: the prox inputs, with ``t`` the teacher's diagonal attention."""
    A, om = params.A_array, params.omega

    def fields(xi1, xi2, y1, y2):
        w1, w2, hs1, hs2 = preactivations(params, q, m, theta, xi1, xi2, y1, y2)
        t1, t2 = _prox.teacher_diag(hs1, hs2, om, A)
        return w1, w2, t1, t2
    return fields


@dataclass
class _Nodes:
    """Integration nodes with weights and the global prox solved there."""

    coords: tuple       # (ξ1, ξ2, y1, y2)
    weights: np.ndarray
    h: tuple            # (ĥ1, ĥ2)
    M: np.ndarray       # Moreau envelope
    max_grad: float
    state: tuple        # warm-start state for the next call with the same rule
    half: bool          # only half of the y_u lines (pinned-branch symmetry, see channel)


def solved_nodes(params: ModelParams, q: float, m: float, V: float, theta: float, rule, *, warm=None,
                 use_symmetry: bool = True, global_search: bool = True) -> _Nodes:
    """The rule's nodes at order parameters (q, m, θ) with the global prox ĥ solved at each (MODEL.md §6).
    ``global_search=False`` with ``warm``: the prox continued from the warm state only (see :func:`channel`)."""
    sigma2 = params.sigma ** 2
    fields = prox_inputs(params, q, m, theta)
    if isinstance(rule, SplitRule):
        # On a pinned branch (m = 0 or θ = 0) the exact symmetry (ξ, y) → −(ξ, y), resp. y → −y (MODEL.md §8,
        # any A, P), pairs the line at (ξ_v, y_u, y_v) with the one at (±ξ_v, −y_u, −y_v) (both in the outer
        # rule, whose nodes are symmetric); every integrand except the pinned hat (m̂, resp. θ̂, which is odd
        # and zero) is even, so half the lines do. The ξ_v >= 0 reflection is used only where it holds.
        half = use_symmetry and (m == 0.0 or theta == 0.0)
        ln = line_nodes(fields, sigma2, V, rule, warm=warm, half_yu=half,
                        half_xv=exchange_reflection_holds(params), global_search=global_search)
        return _Nodes((ln.xi1, ln.xi2, ln.y1, ln.y2), ln.weights, (ln.h1, ln.h2), ln.M, ln.max_grad,
                      ln.detect_h, half)
    X, W = rule.rule()
    coords = tuple(X.T)
    h1, h2, M, gn = _prox.prox(*fields(*coords), V, sigma2, warm=warm, global_search=global_search)
    return _Nodes(coords, W, (h1, h2), M, float(np.max(gn)), (h1, h2), False)


def channel(params: ModelParams, alpha: float, q: float, m: float, V: float, theta: float,
            rule: "SplitRule | ProductRule", *, warm=None, use_symmetry: bool = True,
            global_search: bool = True) -> ChannelResult:
    """Hat variables (q̂, m̂, V̂, θ̂) and E[M] at order parameters (q, m, V, θ), MODEL.md §6 (Stein forms).

    ``rule``: a :class:`~.switching.SplitRule` (default of the solver: integration split along the
    basin-switching set) or a :class:`~.quadrature.ProductRule` (plain Gauss–Hermite). ``warm``: the
    ``ChannelResult.h`` of a previous call with the same rule (warm start of the prox). ``use_symmetry``:
    on a pinned branch integrate half the lines (the pinned hat is then returned as exactly 0).
    ``global_search=False`` (fast map, needs ``warm``): the prox at the split rule's detection points (the
    product rule's nodes) is continued from ``warm`` only, without the multi-start — each node stays in its
    previous basin unless the rule's neighbour checks repair it. Not certified global: a solve confirms its
    fixed point with ``global_search=True`` (``split_integrator.iterate_split``).
    """
    if isinstance(rule, SplitRule) and active_split_map() == "xla":
        res, half = _channel_xla(params, alpha, q, m, V, theta, rule, warm, use_symmetry, global_search)
    else:
        nd = solved_nodes(params, q, m, V, theta, rule, warm=warm, use_symmetry=use_symmetry,
                          global_search=global_search)
        w1, w2, t1, t2 = prox_inputs(params, q, m, theta)(*nd.coords)
        J11, _, _, J22 = _prox.dh_domega(nd.h[0], nd.h[1], t1, t2, V, params.sigma ** 2)
        res, half = _hats(params, alpha, q, V, theta, nd.coords, nd.weights, (nd.h[0] - w1) / V,
                          (nd.h[1] - w2) / V, nd.M, nd.max_grad, nd.state, (J11 + J22 - 2.0) / V), nd.half
    if half:
        res.m_hat = 0.0 if m == 0.0 else res.m_hat
        res.theta_hat = 0.0 if theta == 0.0 else res.theta_hat
    return res


def _hats(params, alpha, q, V, theta, coords, W, g1, g2, M, max_grad, state, trace_dg) -> ChannelResult:
    """The expectations of MODEL.md §6 from g = (ĥ − ω)/V at weighted nodes (``trace_dg``: Σ_l ∂g_l/∂ω_l
    there, for the derivative form of V̂)."""
    xi1, xi2, y1, y2 = coords
    sums = (W @ (g1 * g1 + g2 * g2), W @ (g1 - g2), W @ (g1 * y1 + g2 * y2), W @ (g1 * xi1 + g2 * xi2), W @ M,
            W @ trace_dg)
    return _from_sums(params, alpha, q, theta, [float(v) for v in sums], max_grad, state)


V_HAT_Q_FLOOR = 1e-8
"""Below ``q = V_HAT_Q_FLOOR·σ²`` V̂ is the derivative form ``−α E[Σ_l ∂g_l/∂ω_l]``, not the Stein form
``−α E[Σ_l g_l ξ_l]/√q + θθ̂/q`` (MODEL.md §6): Stein divides the prox's absolute error in g (~1e-12, its
Newton tolerance) by √q, and q → 0 made it D = λ + σ²V̂ ≤ 0 at λ = 0.5 (docs/notes/2026-12-05-theory-general.md, "Strong
ridge"). The derivative form misses the jump terms of g on the basin-switching set, whose weight vanishes with
the spread √q of ω; above the floor Stein keeps them (the two forms measured in that section)."""


def _from_sums(params, alpha, q, theta, sums, max_grad, state) -> ChannelResult:
    """Hats from the weighted sums E[g1²+g2²], E[g1−g2], E[g1y1+g2y2], E[g1ξ1+g2ξ2], E[M], E[Σ_l ∂g_l/∂ω_l]
    (MODEL.md §6); V̂ in Stein form, or in derivative form below :data:`V_HAT_Q_FLOOR`."""
    s_qq, s_m, s_th, s_v, s_M, s_d = sums
    sq = np.sqrt(max(q, _TINY))
    sres = np.sqrt(max(params.sigma ** 2 - theta * theta / max(q, _TINY), 0.0))
    q_hat = alpha * s_qq
    m_hat = alpha * s_m
    theta_hat = alpha * s_th / sres if sres > 0 else 0.0
    V_hat_deriv = -alpha * s_d
    if q < V_HAT_Q_FLOOR * params.sigma ** 2:
        V_hat = V_hat_deriv
    else:
        V_hat = -alpha * s_v / sq + theta * theta_hat / max(q, _TINY)
    return ChannelResult(q_hat, m_hat, V_hat, theta_hat, s_M, state, max_grad, V_hat_deriv)


def _channel_xla(params, alpha, q, m, V, theta, rule: SplitRule, warm, use_symmetry, global_search):
    """:func:`channel` on the split rule as one compiled program (:mod:`.split_xla`); the same nodes,
    symmetry reductions and checks as :func:`solved_nodes`. Returns the result and whether half the lines ran."""
    from . import split_xla
    half = use_symmetry and (m == 0.0 or theta == 0.0)       # pinned branch: see solved_nodes
    outer = outer_nodes(rule.nodes, rule.panels, rule.panel_gl, rule.zmax, half, exchange_reflection_holds(params))
    A = params.A_array
    scalars = dict(sq=np.sqrt(max(q, _TINY)), sres=np.sqrt(max(params.sigma ** 2 - theta * theta / max(q, _TINY), 0.0)),
                   m=m, theta=theta, om=params.omega, A11=A[0, 0], A22=A[1, 1], V=V, s2=params.sigma ** 2)
    sums, _, state = split_xla.map_sums(outer, rule, scalars, warm, global_search or warm is None)
    return _from_sums(params, alpha, q, theta, sums[:5] + sums[6:7], sums[5], state), half


def channel_derivative_forms(params: ModelParams, alpha: float, q: float, m: float, V: float, theta: float,
                             rule: "SplitRule | ProductRule") -> tuple[float, float]:
    """(V̂, θ̂) in derivative form, V̂ = -α E[Σ ∂g_l/∂ω_l], θ̂ = α E[Σ ∂g_l/∂h*_l] (implicit function theorem).

    The pointwise derivatives miss the jump (delta) terms of g on the basin-switching set that the Stein
    forms of :func:`channel` contain; where the switches carry little weight the two agree (tested).
    """
    sigma2 = params.sigma ** 2
    om = params.omega
    nd = solved_nodes(params, q, m, V, theta, rule, use_symmetry=False)
    weights, (h1, h2) = nd.weights, nd.h
    w1, w2, hs1, hs2 = preactivations(params, q, m, theta, *nd.coords)
    t1, t2 = _prox.teacher_diag(hs1, hs2, om, params.A_array)
    J11, J12, J21, J22 = _prox.dh_domega(h1, h2, t1, t2, V, sigma2)
    V_hat = -alpha * float(weights @ ((J11 - 1) + (J22 - 1))) / V
    # mixed second derivatives C_ij = ∂²ℓ/∂h_i ∂h*_j
    a = h1 * (h1 - h2)
    b = h2 * (h2 - h1)
    sa, sb = _prox.sigmoid(a), _prox.sigmoid(b)
    da, db = sa * (1 - sa), sb * (1 - sb)
    a1, a2 = 2 * h1 - h2, -h1
    b1, b2 = -h2, 2 * h2 - h1
    c = hs1 * (hs1 - hs2)
    e = hs2 * (hs2 - hs1)
    sc, se = _prox.sigmoid(c), _prox.sigmoid(e)
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
