"""Expectations over (ξ, y) ∈ R⁴ split along the basin-switching set of the prox (MODEL.md §6, §7).

The global minimiser ĥ of the Moreau problem jumps between basins across a 3-D switching surface in
(ξ, y) space, so the channel integrands g = (ĥ − ω)/V are discontinuous there and a product Gauss–Hermite
rule does not converge in the number of nodes (MODEL.md §7). This module builds a rule that respects the
surface:

* rotate to ``ξ_u = (ξ1 − ξ2)/√2, ξ_v = (ξ1 + ξ2)/√2`` and the same for y (an orthogonal map, so the four
  coordinates stay i.i.d. N(0, 1)); the positional shift sits on ``ω_u = √q ξ_u + √2 m`` and the switches
  between a basin and its mirror basin lie across ξ_u;
* an outer rule over ``(ξ_v, y_u, y_v)`` — Gauss–Hermite in ξ_v and y_v, composite Gauss–Legendre in y_u
  (where the lines meet the ends (cusps) of the switching set the line integral has weak singularities in
  y_u that a Gauss–Hermite rule converges on only slowly, ~1e-3) — restricted to
  ``ξ_v ≥ 0`` by the exact reflection symmetry ``(ξ_v, y_v) → −(ξ_v, y_v)`` (it swaps the two tokens'
  diagonal attention entries and maps ĥ_v → −ĥ_v, leaving every channel integrand unchanged);
* along each line in ξ_u: the global prox at ``detect`` equispaced points on ``[−zmax, zmax]``; an interval
  is flagged when continuing either end's minimiser to the other end does not give that end's global
  minimiser, when the two ends' minimisers continue to different points at the midpoint, or when ĥ moves
  much more than in the neighbouring intervals; in a flagged interval the switching point is found by
  bisection, tracking both basins (MODEL.md §7: the argmin switches where the two basins' values cross);
* Gauss–Legendre (``gl`` nodes) on each side of the switching point (or of the midpoint), the minimiser at
  each node continued from its own side's basin.

The result is a flat list of integration nodes (ξ1, ξ2, y1, y2) with weights and the global prox already
solved there; :mod:`.channel` turns them into hat variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import ParameterError, check_int, check_range
from . import prox as _prox
from .quadrature import gauss_hermite

_R2 = np.sqrt(2.0)
NEWTON_GTOL = 1e-9
"""Gradient tolerance of the continued (warm-started) Newton solves: |∇F| ≤ 1e-9 puts ĥ within ~1e-8 of the
minimiser (the Hessian of F is ≥ 1/V ~ 0.1), far below the rule's ~1e-5 integration error."""
REPAIR_PASSES = 4
"""Passes of the neighbour check (step 2 of :func:`line_nodes`) in the fast map: after a point was repaired
(a neighbour's basin continued to it is lower), its intervals are checked again."""
JUMP_RATIO, JUMP_FLOOR = 3.0, 0.05
"""An interval whose move of ĥ exceeds JUMP_RATIO times the smaller neighbouring move (and JUMP_FLOOR) is
searched for a switch."""


@dataclass(frozen=True)
class SplitRule:
    """Resolution of the split-line rule (see the module docstring).

    nodes: Gauss–Hermite order over ξ_v and y_v (smooth directions; even, see ``__post_init__``).
    panels: composite Gauss–Legendre panels over y_u on [−zmax, zmax] (``panel_gl`` nodes each).
    detect: equispaced detection points per line on [−zmax, zmax].
    gl: Gauss–Legendre nodes on each side of a split.
    zmax: half-width of the line (the Gaussian mass beyond it is ~2e-9 for 6).
    bisect: bisection steps locating a switching point, followed by three regula-falsi steps.
    """

    nodes: int = 8
    panels: int = 32
    panel_gl: int = 2
    detect: int = 13
    gl: int = 3
    zmax: float = 6.0
    bisect: int = 8

    def __post_init__(self) -> None:
        check_int("nodes", self.nodes, 2)
        if self.nodes > 64 or self.nodes % 2:
            # an odd order puts a node row on ξ_v = 0 = y_v, where the two tokens' problems are mirror images and
            # the prox has exact ties between mirrored basins: the map becomes noisy and may not converge
            raise ParameterError("nodes", "an even integer in [2, 64] (outer Gauss-Hermite order)", self.nodes)
        check_int("panels", self.panels, 1)
        check_int("panel_gl", self.panel_gl, 1)
        check_int("detect", self.detect, 3)
        check_int("gl", self.gl, 1)
        check_range("zmax", self.zmax, lo=2.0)
        check_int("bisect", self.bisect, 1)

    @classmethod
    def of(cls, nodes: int) -> "SplitRule":
        """The rule of resolution ``nodes``: order ``nodes`` in ξ_v, y_v and ``4·nodes`` panels in y_u (the
        solver's ``nodes``; doubling it doubles every outer direction)."""
        return cls(nodes=nodes, panels=4 * nodes)


@dataclass
class LineNodes:
    """Integration nodes of the split-line rule with the global prox solved at each of them (flat arrays)."""

    xi1: np.ndarray
    xi2: np.ndarray
    y1: np.ndarray
    y2: np.ndarray
    weights: np.ndarray
    h1: np.ndarray
    h2: np.ndarray
    M: np.ndarray
    max_grad: float
    switches: int          # flagged intervals (line segments that contain a basin switch or a steep move)
    lines: int
    detect_h: tuple        # (h1, h2) at the detection points, shape (lines, detect): warm start of the next call


def composite_gauss_legendre(lo: float, hi: float, panels: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss–Legendre rule on ``[lo, hi]``: ``panels`` equal panels of ``n`` nodes each."""
    edges = np.linspace(lo, hi, panels + 1)
    gx, gw = np.polynomial.legendre.leggauss(n)
    c, hw = 0.5 * (edges[1:] + edges[:-1]), 0.5 * (edges[1:] - edges[:-1])
    return (c[:, None] + hw[:, None] * gx).ravel(), (hw[:, None] * gw).ravel()


@lru_cache(maxsize=32)
def outer_nodes(nodes: int, panels: int, panel_gl: int, zmax: float, half_yu: bool = False,
           half_xv: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Outer rule over (ξ_v, y_u, y_v): Gauss–Hermite of order ``nodes`` in ξ_v and y_v (smooth directions),
    composite Gauss–Legendre in y_u (the line integral has weak singularities in y_u where the line meets the
    end of the switching set, which spoil a Gauss–Hermite rule but only one panel of a composite rule);
    with ``half_xv`` the half space ξ_v >= 0 with doubled weights (valid only where the token-exchange
    reflection holds, :func:`.symmetry.exchange_reflection_holds`); y_u >= 0, doubled again, with ``half_yu``."""
    x, w = gauss_hermite(nodes, 1)
    x = x[:, 0]
    yu, wu = composite_gauss_legendre(-zmax, zmax, panels, panel_gl)
    wu = wu * np.exp(-0.5 * yu * yu) / np.sqrt(2.0 * np.pi)
    XV, YU, YV = np.meshgrid(x, yu, x, indexing="ij")
    W = w[:, None, None] * wu[None, :, None] * w[None, None, :]
    keep = XV >= -1e-14 if half_xv else np.ones(XV.shape, bool)
    fac = np.where(np.abs(XV) < 1e-14, 1.0, 2.0) if half_xv else np.ones(XV.shape)
    if half_yu:
        keep &= YU >= -1e-14
        fac = fac * np.where(np.abs(YU) < 1e-14, 1.0, 2.0)
    out = tuple(a[keep].copy() for a in (XV, YU, YV, W * fac))
    for a in out:
        a.setflags(write=False)
    return out  # type: ignore[return-value]


def to_tokens(xu, xv, yu, yv):
    """Rotated coordinates back to (ξ1, ξ2, y1, y2)."""
    return (xv + xu) / _R2, (xv - xu) / _R2, (yv + yu) / _R2, (yv - yu) / _R2


def line_nodes(fields, sigma2: float, V: float, rule: SplitRule, warm=None, half_yu: bool = False,
               half_xv: bool = True, global_search: bool = True) -> LineNodes:
    """Build the split-line rule for the current order parameters.

    ``fields(xi1, xi2, y1, y2) -> (w1, w2, t1, t2)`` gives the prox inputs (student means ω and teacher
    diagonal t) at given coordinates. ``warm``: ``LineNodes.detect_h`` of a previous call (same rule).
    ``half_yu``: integrate over y_u >= 0 only (doubled weights) — valid on the pinned branches, where the
    integrands that are not pinned to zero are even in y_u (see :func:`attnphase.theory.channel.channel`).
    ``half_xv``: integrate over ξ_v >= 0 only, by the token-exchange reflection; the caller must have
    checked that it holds (:func:`attnphase.theory.symmetry.exchange_reflection_holds`), else pass False.
    ``global_search=False``: the prox at the detection points is continued from ``warm`` only (no multi-start;
    the neighbour checks of step 2 still run) — a fast map that the caller confirms with a full one.
    """
    xv, yu, yv, wo = outer_nodes(rule.nodes, rule.panels, rule.panel_gl, rule.zmax, half_yu, half_xv)
    L, G = xv.size, rule.detect
    z = np.linspace(-rule.zmax, rule.zmax, G)
    zmid = np.broadcast_to(0.5 * (z[:-1] + z[1:]), (L, G - 1))

    def at(zz, idx=slice(None)):
        """Coordinates and prox inputs at line positions ``zz`` (first axis: the lines ``idx``)."""
        a, b, c = (v[idx].reshape((-1,) + (1,) * (zz.ndim - 1)) for v in (xv, yu, yv))
        coords = to_tokens(zz, a, b, c)
        return coords, fields(*coords)

    def newton(h1, h2, f, iters=30):
        w1, w2, t1, t2 = f
        return _prox.newton(h1, h2, w1, w2, t1, t2, V, sigma2, iters, NEWTON_GTOL)

    def both(h_a, h_b, f, iters=30):
        """Continue two sets of starts at the same positions in one vectorised call (stacked on axis 0)."""
        (a1, b1), (a2, b2), (Fa, Fb), _ = newton(np.stack([h_a[0], h_b[0]]), np.stack([h_a[1], h_b[1]]), f,
                                                 iters)
        return (a1, a2, Fa), (b1, b2, Fb)

    # 1. global prox at the detection points
    _, fd = at(np.broadcast_to(z, (L, G)))
    wm = None
    if warm is not None and warm[0].shape == (L, G):
        wm = (warm[0].ravel(), warm[1].ravel())
    h1, h2, F, _ = _prox.prox(*(a.ravel() for a in fd), V, sigma2, warm=wm, global_search=global_search)
    h1, h2, F = h1.reshape(L, G), h2.reshape(L, G), F.reshape(L, G)

    # 2. continuation checks between neighbours (and repair of a missed global minimum)
    left, right = np.s_[:, :-1], np.s_[:, 1:]
    f_swap = tuple(np.stack([a[right], a[left]]) for a in fd)      # left ends continued right, and back
    for _ in range(REPAIR_PASSES):
        (a1, a2, Fa), (b1, b2, Fb) = both((h1[left], h2[left]), (h1[right], h2[right]), f_swap)
        repaired = False
        for (c1, c2, Fc, sl) in ((a1, a2, Fa, right), (b1, b2, Fb, left)):
            better = Fc < F[sl] - 1e-15
            if better.any():
                repaired = True
                h1[sl], h2[sl], F[sl] = (np.where(better, u, v) for u, v in ((c1, h1[sl]), (c2, h2[sl]),
                                                                           (Fc, F[sl])))
        if not repaired or global_search:
            break
        # a repaired point's old continuations are stale: check its intervals again (fast map only; the
        # full search keeps its single pass, the reference behaviour)
    tol = 1e-6
    flag = (np.hypot(a1 - h1[right], a2 - h2[right]) > tol) | (np.hypot(b1 - h1[left], b2 - h2[left]) > tol)
    # both basins may fold inside the interval (then each end continues onto the other's minimiser): a switch
    # still shows as two distinct minimisers at the midpoint, continued from either end
    (c1, c2, _), (d1, d2, _) = both((h1[left], h2[left]), (h1[right], h2[right]), at(zmid)[1])
    flag |= np.hypot(c1 - d1, c2 - d2) > tol
    # a jump also stands out against the neighbouring intervals' moves (a smooth path moves evenly)
    step = np.hypot(h1[right] - h1[left], h2[right] - h2[left])
    pad = np.pad(step, ((0, 0), (1, 1)), constant_values=np.inf)
    flag |= step > np.maximum(JUMP_RATIO * np.minimum(pad[:, :-2], pad[:, 2:]), JUMP_FLOOR)

    # 3. switching points in flagged intervals; starts of the sub-intervals' nodes: (L, G-1, left/right)
    split = zmid.copy()
    s1 = np.stack([h1[left], h1[right]], axis=-1)
    s2 = np.stack([h2[left], h2[right]], axis=-1)
    li, ji = np.nonzero(flag)
    if li.size:
        z_s, hL, hR = _locate_switches(lambda zz, sub=slice(None): at(zz, li[sub])[1], both, z[ji], z[ji + 1],
                                       (h1[li, ji], h2[li, ji]), (h1[li, ji + 1], h2[li, ji + 1]), rule)
        split[li, ji] = z_s
        s1[li, ji], s2[li, ji] = np.stack([hL[0], hR[0]], -1), np.stack([hL[1], hR[1]], -1)

    # 4. Gauss–Legendre on both sides of each split, each node continued from its side's basin
    gx, gw = np.polynomial.legendre.leggauss(rule.gl)
    a = np.stack([np.broadcast_to(z[:-1], split.shape), split], axis=-1)    # (L, G-1, 2) sub-interval ends
    b = np.stack([split, np.broadcast_to(z[1:], split.shape)], axis=-1)
    c, hw = (0.5 * (a + b))[..., None], (0.5 * (b - a))[..., None]
    zz = c + hw * gx                                                         # (L, G-1, 2, gl)
    ww = hw * gw * np.exp(-0.5 * zz * zz) / np.sqrt(2.0 * np.pi) * wo[:, None, None, None]
    coords, f = at(zz)
    n1, n2, Fn, gn = newton(np.broadcast_to(s1[..., None], zz.shape), np.broadcast_to(s2[..., None], zz.shape), f)
    flat = lambda v: np.broadcast_to(v, zz.shape).ravel()  # noqa: E731  (line-major order)
    return LineNodes(*(flat(v) for v in coords), flat(ww), flat(n1), flat(n2), flat(Fn), float(np.max(gn)),
                     int(li.size), L, (h1, h2))


def illinois_update(a, b, Da, Db, kept_a, kept_b, c, Dc, xp=np):
    """One Illinois (modified regula falsi) update of the brackets ``[a, b]`` with ``D(a) < 0 < D(b)`` after
    evaluating ``Dc = D(c)``: ``c`` replaces the end of its sign, and the value of an end kept twice in a row is
    halved. ``xp``: the array module (numpy here, ``jax.numpy`` in :mod:`.split_xla`). Returns
    ``(a, b, Da, Db, kept_a, kept_b)``."""
    neg = Dc < 0
    Db = xp.where(neg & kept_b, 0.5 * Db, Db)
    Da = xp.where(~neg & kept_a, 0.5 * Da, Da)
    a, Da = xp.where(neg, c, a), xp.where(neg, Dc, Da)
    b, Db = xp.where(neg, b, c), xp.where(neg, Db, Dc)
    return a, b, Da, Db, ~neg, neg


def _locate_switches(fields_at, continue_both, lo, hi, hL, hR, rule: SplitRule):
    """Switching points in the intervals ``[lo, hi]`` whose ends lie in different basins (MODEL.md §7).

    ``rule.bisect`` bisection steps, tracking the left basin's minimiser ``hL`` and the right one's ``hR``: at
    the midpoint both are continued; where both basins exist the lower value wins, where only one is left
    the midpoint belongs to the side whose minimiser it continues (it moved least). Then three regula-falsi
    steps (Illinois) on ``D = F_L − F_R`` where both basins exist at both ends — D is smooth and crosses zero
    at the switch. Returns the switching points and the two basins' minimisers next to them.
    """
    hL1, hL2 = (a.copy() for a in hL)
    hR1, hR2 = (a.copy() for a in hR)

    def both(zz, a1, a2, b1, b2, sub=slice(None)):
        (n1, n2, F1), (m1, m2, F2) = continue_both((a1, a2), (b1, b2), fields_at(zz, sub), 12)
        return n1, n2, F1, m1, m2, F2, np.hypot(n1 - m1, n2 - m2) < 1e-7

    for _ in range(rule.bisect):
        mid = 0.5 * (lo + hi)
        nL1, nL2, FL, nR1, nR2, FR, same = both(mid, hL1, hL2, hR1, hR2)
        closer = np.hypot(nL1 - hL1, nL2 - hL2) < np.hypot(nR1 - hR1, nR2 - hR2)
        left = np.where(same, closer, FL < FR)
        lo, hi = np.where(left, mid, lo), np.where(left, hi, mid)
        hL1, hL2 = np.where(left, nL1, hL1), np.where(left, nL2, hL2)
        hR1, hR2 = np.where(left, hR1, nR1), np.where(left, hR2, nR2)
    # regula falsi on D = F_L - F_R (D(lo) < 0 < D(hi) where both basins exist at both ends)
    _, _, FLlo, _, _, FRlo, s_lo = both(lo, hL1, hL2, hR1, hR2)
    _, _, FLhi, _, _, FRhi, s_hi = both(hi, hL1, hL2, hR1, hR2)
    Dlo, Dhi = FLlo - FRlo, FLhi - FRhi
    ok = ~s_lo & ~s_hi & (Dlo < 0) & (Dhi > 0)
    z_s = 0.5 * (lo + hi)
    if ok.any():
        i = np.nonzero(ok)[0]
        a, b, Da, Db = lo[i], hi[i], Dlo[i], Dhi[i]
        gL1, gL2, gR1, gR2 = hL1[i], hL2[i], hR1[i], hR2[i]
        kept_b = kept_a = np.zeros(i.size, bool)   # which end the previous step kept
        for _ in range(3):
            c = (a * Db - b * Da) / (Db - Da)
            _, _, F1, _, _, F2, _ = both(c, gL1, gL2, gR1, gR2, i)
            a, b, Da, Db, kept_a, kept_b = illinois_update(a, b, Da, Db, kept_a, kept_b, c, F1 - F2)
        z_s[i] = (a * Db - b * Da) / (Db - Da)
    return z_s, (hL1, hL2), (hR1, hR2)
