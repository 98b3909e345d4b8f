"""One split-rule map evaluation as ONE compiled XLA program (float64): the algorithm of
:func:`.switching.line_nodes` followed by the channel sums of :func:`.channel.channel` (MODEL.md §6, §7).

The numpy version of the same algorithm makes ~20 sequential calls per evaluation (global prox at the
detection points, neighbour checks, ``rule.bisect`` + 5 switch-location steps, the Gauss–Legendre nodes),
each on a few hundred to a few thousand points, so Python and dispatch overhead dominate (profile in
docs/notes/benchmarks-log.md, "One compiled map evaluation"). Here every step is the same element-wise computation:

1. global prox at the detection points: the multi-start of :func:`.prox.prox` (ω, −ω, swapped ω, the best
   point of the 9 × 9 disc grid, the warm start) — or, in the fast map (``full=False``), Newton from the warm
   start only; selected inside the program (``lax.cond``), so both modes share one compilation;
2. up to ``REPAIR_PASSES`` neighbour-check passes (a ``while_loop``; one pass in the full search), then the
   interval flags (continuation mismatch, midpoint disagreement, jump against the neighbours);
3. the flagged intervals compacted into a fixed-size buffer (``jnp.nonzero(size=K)``; the caller reruns with a
   larger K when the count exceeds it, so nothing is dropped) and the switching points located with the
   fixed ``rule.bisect`` bisection steps and three Illinois steps, padded entries masked out of the Newton
   iterations;
4. Gauss–Legendre nodes on both sides of each split, each continued from its side's basin, and the four
   weighted sums of the Stein forms plus E[M] and the derivative form of V̂ (``Σ_l ∂g_l/∂ω_l``).

Element by element this is the numpy algorithm (same starts, step lists, iteration caps, tolerances and
tie-breaking); only the floating-point evaluation order differs (fused kernels, sums instead of BLAS dots),
so results agree with the numpy map to the map's own round-off, i.e. the spread between Newton kernels
(tests/theory/test_split_map.py). Float64 is switched on only around the call (``jax.enable_x64``).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import exported_programs, xla_cache
from .newton_xla import COMPACT, solve as _newton_solve
from .prox import loss, loss_derivs
from .switching import JUMP_FLOOR, JUMP_RATIO, NEWTON_GTOL, REPAIR_PASSES, SplitRule, illinois_update

_R2 = np.sqrt(2.0)
PROX_ITERS, PROX_GTOL, PROX_GRID = 40, 1e-11, 9
"""The defaults of :func:`.prox.prox` (Newton cap, gradient tolerance, disc grid of the extra start)."""
LINE_ITERS, SWITCH_ITERS = 30, 12
"""Newton caps of :func:`.switching.line_nodes` (continuations along a line) and of the switch location."""
_MIN_K = 64


@lru_cache(maxsize=8)
def _disc(grid: int) -> tuple[np.ndarray, np.ndarray]:
    """The unit-radius version of :func:`.prox.prox`'s grid of extra starts (scaled by R inside)."""
    o = np.linspace(-1.0, 1.0, grid)
    ox, oy = np.meshgrid(o, o, indexing="ij")
    ox, oy = ox.ravel(), oy.ravel()
    keep = ox ** 2 + oy ** 2 <= 1.0001
    return ox[keep], oy[keep]


def _sig(z):
    return 0.5 * (1.0 + jnp.tanh(0.5 * z))


def _view(p: dict, f) -> dict:
    """The parameters ``p`` shaped for an array of lines: ``f`` applied to the per-line ones (shape (L,)),
    scalars as they are."""
    return {k: (f(v) if jnp.ndim(v) else v) for k, v in p.items()}


def _program(xv, yu, yv, wo, warm1, warm2, p, full, has_warm, seg=None, *, G, gl, bisect, K, zmax, cells=None):
    """The map evaluation; ``p``: a dict of traced float64 scalars (sq, sres, m, theta, om, A11, A22, V, s2).
    Without a warm start (``has_warm`` False) its slot repeats the first start (ω), whose ties go to the first.
    A batch of ``cells`` (:func:`map_sums_batch`): the lines of all cells concatenated, ``p`` (but s2) and
    ``has_warm`` given per line (shape (L,)), ``seg`` the cell of each line; the sums are then per cell, each
    line computed exactly as alone (the repair passes run while any cell repairs: a pass that repairs nothing
    changes nothing)."""
    s2 = p["s2"]
    L = xv.shape[0]

    def fields(zz, a, b, c, q):
        """Coordinates and prox inputs at line positions zz on the lines with outer coordinates (a, b, c) and
        parameters ``q`` (:func:`_view` of ``p`` in their shape)."""
        sq, sres, m, th, om = (q[k] for k in ("sq", "sres", "m", "theta", "om"))
        xi1, xi2, y1, y2 = (a + zz) / _R2, (a - zz) / _R2, (c + b) / _R2, (c - b) / _R2   # switching.to_tokens
        hs1 = th / sq * xi1 + sres * y1
        hs2 = th / sq * xi2 + sres * y2
        t1 = (1.0 - om) * _sig(hs1 * (hs1 - hs2)) + om * q["A11"]
        t2 = (1.0 - om) * _sig(hs2 * (hs2 - hs1)) + om * q["A22"]
        return (xi1, xi2, y1, y2), (sq * xi1 + m, sq * xi2 - m, t1, t2)

    def newton(h1, h2, f, iters, gtol, V, active=None):
        """Big batches (all lines) compact their slow elements; the small switch buffers do not."""
        w1, w2, t1, t2 = f
        act = jnp.ones(h1.shape, bool) if active is None else jnp.broadcast_to(active, h1.shape)
        return _newton_solve(h1, h2, w1, w2, t1, t2, act, V, s2, iters, gtol, COMPACT if active is None else ())

    def both(ha, hb, f, iters, V, active=None):
        """Continue two sets of starts at the same positions (stacked on a new first axis)."""
        f2 = tuple(jnp.stack([v, v]) for v in f)
        act = None if active is None else jnp.stack([active, active])
        n1, n2, F, _ = newton(jnp.stack([ha[0], hb[0]]), jnp.stack([ha[1], hb[1]]), f2, iters, NEWTON_GTOL, V, act)
        return (n1[0], n2[0], F[0]), (n1[1], n2[1], F[1])

    col = lambda v: v[:, None]  # noqa: E731
    pc = _view(p, col)
    Vc = pc["V"]
    z = jnp.linspace(-zmax, zmax, G)
    zmid = 0.5 * (z[:-1] + z[1:])

    # 1. global prox at the detection points (or the fast map's warm continuation)
    _, fd = fields(jnp.broadcast_to(z, (L, G)), col(xv), col(yu), col(yv), pc)
    w1, w2, t1, t2 = fd
    hw = col(has_warm) if jnp.ndim(has_warm) else has_warm
    warm1, warm2 = jnp.where(hw, warm1, w1), jnp.where(hw, warm2, w2)

    def global_prox(_):
        Vd = Vc[..., None] if jnp.ndim(Vc) else Vc
        R = 2.0 * jnp.sqrt(s2 * Vd)
        ux, uy = _disc(PROX_GRID)
        ox, oy = R * ux, R * uy
        G1, G2 = w1[..., None] + ox, w2[..., None] + oy
        Fg = (ox ** 2 + oy ** 2) / (2 * Vd) + loss(G1, G2, t1[..., None], t2[..., None], s2, jnp)
        j = jnp.argmin(Fg, axis=-1)[..., None]
        g1 = jnp.take_along_axis(G1, j, -1)[..., 0]
        g2 = jnp.take_along_axis(G2, j, -1)[..., 0]
        H1 = jnp.stack([w1, -w1, w2, g1, warm1])
        H2 = jnp.stack([w2, -w2, w1, g2, warm2])
        f5 = tuple(jnp.broadcast_to(v, H1.shape) for v in fd)
        h1, h2, F, _ = newton(H1, H2, f5, PROX_ITERS, PROX_GTOL, Vc)
        k = jnp.argmin(F, axis=0)[None]
        pick = lambda a: jnp.take_along_axis(a, k, 0)[0]  # noqa: E731
        return pick(h1), pick(h2), pick(F)

    def warm_prox(_):
        h1, h2, F, _ = newton(warm1, warm2, fd, PROX_ITERS, PROX_GTOL, Vc)
        return h1, h2, F

    h1, h2, F = lax.cond(full, global_prox, warm_prox, None)

    # 2. neighbour checks and repairs
    fl = lambda v: v[:, :-1]  # noqa: E731
    fr = lambda v: v[:, 1:]  # noqa: E731
    f_swap = tuple(jnp.stack([fr(v), fl(v)]) for v in fd)

    def check(st):
        k, h1, h2, F, *_ = st
        n1, n2, Fn, _ = newton(jnp.stack([fl(h1), fr(h1)]), jnp.stack([fl(h2), fr(h2)]), f_swap, LINE_ITERS,
                               NEWTON_GTOL, Vc)
        a1, a2, Fa, b1, b2, Fb = n1[0], n2[0], Fn[0], n1[1], n2[1], Fn[1]
        better = Fa < fr(F) - 1e-15
        rep = jnp.any(better)
        h1 = h1.at[:, 1:].set(jnp.where(better, a1, fr(h1)))
        h2 = h2.at[:, 1:].set(jnp.where(better, a2, fr(h2)))
        F = F.at[:, 1:].set(jnp.where(better, Fa, fr(F)))
        better = Fb < fl(F) - 1e-15
        rep = rep | jnp.any(better)
        h1 = h1.at[:, :-1].set(jnp.where(better, b1, fl(h1)))
        h2 = h2.at[:, :-1].set(jnp.where(better, b2, fl(h2)))
        F = F.at[:, :-1].set(jnp.where(better, Fb, fl(F)))
        return k + 1, h1, h2, F, a1, a2, b1, b2, rep & ~full

    zero = jnp.zeros((L, G - 1))
    st = (jnp.int32(0), h1, h2, F, zero, zero, zero, zero, jnp.bool_(True))
    _, h1, h2, F, a1, a2, b1, b2, _ = lax.while_loop(lambda s: s[-1] & (s[0] < REPAIR_PASSES), check, st)
    tol = 1e-6
    flag = (jnp.hypot(a1 - fr(h1), a2 - fr(h2)) > tol) | (jnp.hypot(b1 - fl(h1), b2 - fl(h2)) > tol)
    _, fm = fields(jnp.broadcast_to(zmid, (L, G - 1)), col(xv), col(yu), col(yv), pc)
    (c1, c2, _), (d1, d2, _) = both((fl(h1), fl(h2)), (fr(h1), fr(h2)), fm, LINE_ITERS, Vc)
    flag = flag | (jnp.hypot(c1 - d1, c2 - d2) > tol)
    step = jnp.hypot(fr(h1) - fl(h1), fr(h2) - fl(h2))
    pad = jnp.pad(step, ((0, 0), (1, 1)), constant_values=jnp.inf)
    flag = flag | (step > jnp.maximum(JUMP_RATIO * jnp.minimum(pad[:, :-2], pad[:, 2:]), JUMP_FLOOR))

    # 3. switching points in the flagged intervals (compacted to K entries, padding masked)
    count = jnp.sum(flag)
    (idx,) = jnp.nonzero(flag.ravel(), size=K, fill_value=0)
    valid = jnp.arange(K) < count
    li, ji = idx // (G - 1), idx % (G - 1)
    lxv, lyu, lyv = xv[li], yu[li], yv[li]
    pk = _view(p, lambda v: v[li])
    at = lambda zz: fields(zz, lxv, lyu, lyv, pk)[1]  # noqa: E731
    both_k = lambda ha, hb, f, iters, active=None: both(ha, hb, f, iters, pk["V"], active)  # noqa: E731
    z_s, hL, hR = _locate(at, both_k, z[ji], z[ji + 1], (h1[li, ji], h2[li, ji]),
                          (h1[li, ji + 1], h2[li, ji + 1]), valid, bisect)
    rows = jnp.where(valid, li, L)     # out of range: dropped by the scatters below
    split = jnp.broadcast_to(zmid, (L, G - 1)).at[rows, ji].set(z_s, mode="drop")
    s1 = jnp.stack([fl(h1), fr(h1)], axis=-1).at[rows, ji].set(jnp.stack([hL[0], hR[0]], -1), mode="drop")
    s2_ = jnp.stack([fl(h2), fr(h2)], axis=-1).at[rows, ji].set(jnp.stack([hL[1], hR[1]], -1), mode="drop")

    # 4. Gauss–Legendre on both sides of each split, and the channel sums
    gx, gw = np.polynomial.legendre.leggauss(gl)
    a = jnp.stack([jnp.broadcast_to(z[:-1], split.shape), split], axis=-1)
    b = jnp.stack([split, jnp.broadcast_to(z[1:], split.shape)], axis=-1)
    c, hw = (0.5 * (a + b))[..., None], (0.5 * (b - a))[..., None]
    zz = c + hw * gx
    ww = hw * gw * jnp.exp(-0.5 * zz * zz) / np.sqrt(2.0 * np.pi) * wo[:, None, None, None]
    e = lambda v: v[:, None, None, None]  # noqa: E731
    pe = _view(p, e)
    V = pe["V"]
    (xi1, xi2, y1, y2), f = fields(zz, e(xv), e(yu), e(yv), pe)
    n1, n2, Fn, gn = newton(jnp.broadcast_to(s1[..., None], zz.shape), jnp.broadcast_to(s2_[..., None], zz.shape),
                            f, LINE_ITERS, NEWTON_GTOL, V)
    g1, g2 = (n1 - f[0]) / V, (n2 - f[1]) / V
    _, _, (H11, H12, H22) = loss_derivs(n1, n2, f[2], f[3], s2, jnp)
    B11, B12, B22 = 1.0 + V * H11, V * H12, 1.0 + V * H22      # ∂ĥ/∂ω = B⁻¹ (prox.dh_domega)
    trace_dg = ((B11 + B22) / (B11 * B22 - B12 * B12) - 2.0) / V  # Σ_l ∂g_l/∂ω_l
    terms = (ww * (g1 * g1 + g2 * g2), ww * (g1 - g2), ww * (g1 * y1 + g2 * y2), ww * (g1 * xi1 + g2 * xi2),
             ww * Fn, gn, ww * trace_dg)
    if cells is None:
        sums = jnp.stack([jnp.max(t) if i == 5 else jnp.sum(t) for i, t in enumerate(terms)])
        return sums, count, h1, h2
    per_line = [jnp.max(t, axis=(1, 2, 3)) if i == 5 else jnp.sum(t, axis=(1, 2, 3)) for i, t in enumerate(terms)]
    sums = jnp.stack([jax.ops.segment_max(v, seg, cells) if i == 5 else jax.ops.segment_sum(v, seg, cells)
                      for i, v in enumerate(per_line)], axis=1)
    return sums, jax.ops.segment_sum(jnp.sum(flag, axis=1), seg, cells), h1, h2


def _locate(at, both, lo, hi, hL, hR, valid, bisect):
    """:func:`.switching._locate_switches` on a padded buffer: ``bisect`` bisection steps, then three Illinois
    steps where both basins exist at both ends; entries outside ``valid`` do not iterate."""
    def cont(zz, a1, a2, b1, b2, active):
        (n1, n2, F1), (m1, m2, F2) = both((a1, a2), (b1, b2), at(zz), SWITCH_ITERS, active)
        return n1, n2, F1, m1, m2, F2, jnp.hypot(n1 - m1, n2 - m2) < 1e-7

    def bis(_, st):
        lo, hi, hL1, hL2, hR1, hR2 = st
        mid = 0.5 * (lo + hi)
        nL1, nL2, FL, nR1, nR2, FR, same = cont(mid, hL1, hL2, hR1, hR2, valid)
        closer = jnp.hypot(nL1 - hL1, nL2 - hL2) < jnp.hypot(nR1 - hR1, nR2 - hR2)
        left = jnp.where(same, closer, FL < FR)
        return (jnp.where(left, mid, lo), jnp.where(left, hi, mid), jnp.where(left, nL1, hL1),
                jnp.where(left, nL2, hL2), jnp.where(left, hR1, nR1), jnp.where(left, hR2, nR2))

    lo, hi, hL1, hL2, hR1, hR2 = lax.fori_loop(0, bisect, bis, (lo, hi, *hL, *hR))
    # both ends in one call (stacked), as two separate continuations element by element
    dup = lambda v: jnp.stack([v, v])  # noqa: E731
    _, _, FLe, _, _, FRe, se = cont(jnp.stack([lo, hi]), dup(hL1), dup(hL2), dup(hR1), dup(hR2), dup(valid))
    n = lo.shape[0]
    Dlo, Dhi = FLe[0] - FRe[0], FLe[1] - FRe[1]
    ok = valid & ~se[0] & ~se[1] & (Dlo < 0) & (Dhi > 0)

    def illinois(_, st):
        a, b, Da, Db, kept_a, kept_b = st
        c = jnp.where(ok, (a * Db - b * Da) / (Db - Da), a)
        _, _, F1, _, _, F2, _ = cont(c, hL1, hL2, hR1, hR2, ok)
        return illinois_update(a, b, Da, Db, kept_a, kept_b, c, F1 - F2, jnp)

    no = jnp.zeros(n, bool)
    a, b, Da, Db, _, _ = lax.fori_loop(0, 3, illinois, (lo, hi, Dlo, Dhi, no, no))
    z_s = jnp.where(ok, (a * Db - b * Da) / jnp.where(ok, Db - Da, 1.0), 0.5 * (lo + hi))
    return z_s, (hL1, hL2), (hR1, hR2)


@lru_cache(maxsize=32)
def _compiled(G: int, gl: int, bisect: int, K: int, zmax: float):
    xla_cache.enable()
    fn = jax.jit(partial(_program, G=G, gl=gl, bisect=bisect, K=K, zmax=zmax))
    return exported_programs.StoredProgram("split_xla._compiled", fn, (G, gl, bisect, K, zmax), (None,) * 9)


_K: dict = {}
"""Buffer size of the flagged intervals per (rule, lines): starts at a tenth of the intervals (measured: at most
123 of 1536 flagged on 128 lines, 228 of 3072 on 256, nodes = 4) and grows to 1.25 × the count when a call
overflows (each size is one more compilation, so the steps are coarse: multiples of 64)."""


def _bucket(n: int) -> int:
    return max(_MIN_K, -(-n // _MIN_K) * _MIN_K)


def map_sums(outer, rule: SplitRule, scalars: dict, warm, full: bool):
    """Run the compiled evaluation on the outer lines ``outer = (xv, yu, yv, wo)`` of ``rule``.

    ``scalars``: sq, sres, m, theta, om, A11, A22, V, s2 (floats). ``warm``: ``(h1, h2)`` at the detection
    points, shape (lines, detect), or None (then the full search runs). Returns ``(sums, switches, (h1, h2))``
    with ``sums`` = (Σw(g1²+g2²), Σw(g1−g2), Σw(g1y1+g2y2), Σw(g1ξ1+g2ξ2), Σw M, max |∇F|, Σw Σ_l ∂g_l/∂ω_l)
    as floats (the last one: the derivative form of V̂, :func:`.channel._from_sums`)."""
    router = _ROUTER
    if router is not None and router.claims():
        return router.submit(outer, rule, scalars, warm, full)
    xv, yu, yv, wo = outer
    L, G = xv.size, rule.detect
    has_warm = warm is not None and np.shape(warm[0]) == (L, G)
    if not has_warm:
        warm, full = (np.zeros((L, G)), np.zeros((L, G))), True
    key = (rule, L)
    K = _K.get(key, _bucket(L * (G - 1) // 10))
    with jax.enable_x64(True):
        args = [np.asarray(v, np.float64) for v in (xv, yu, yv, wo, warm[0], warm[1])]
        p = {k: np.float64(v) for k, v in scalars.items()}
        while True:
            fn = _compiled(G, rule.gl, rule.bisect, min(K, L * (G - 1)), float(rule.zmax))
            sums, count, h1, h2 = fn(*args, p, np.bool_(full), np.bool_(has_warm))
            count = int(count)
            if count <= K or K >= L * (G - 1):
                break
            K = _K[key] = _bucket(count + count // 4)
        _K[key] = K
        return [float(s) for s in np.asarray(sums)], count, (np.asarray(h1).copy(), np.asarray(h2).copy())


_ROUTER = None
_ROUTER_LOCK = threading.Lock()


@contextmanager
def routed(router):
    """Inside the block, :func:`map_sums` calls from the threads that ``router.claims()`` go to
    ``router.submit(outer, rule, scalars, warm, full)`` instead (a lockstep of several solves evaluating their
    maps together through :func:`map_sums_batch`: :mod:`attnphase.phase.diagram_batch`). One router at a time."""
    global _ROUTER
    with _ROUTER_LOCK:
        if _ROUTER is not None:
            raise RuntimeError("split_xla.routed: a router is already active")
        _ROUTER = router
    try:
        yield router
    finally:
        _ROUTER = None


_LINE_BUCKET = 128
"""Concatenated lines of a batch are padded to a power of two of at least this many: few compiled shapes (a new
shape costs 10–30 s of CPU to compile; a pinned cell has 128 lines at nodes = 4, the growth factor's unpinned
one 256)."""


def _line_bucket(n: int) -> int:
    return max(_LINE_BUCKET, 1 << max(n - 1, 0).bit_length())


@lru_cache(maxsize=64)
def _batch_compiled(G: int, gl: int, bisect: int, K: int, zmax: float, cells: int):
    xla_cache.enable()
    return jax.jit(partial(_program, G=G, gl=gl, bisect=bisect, K=K, zmax=zmax, cells=cells))


def map_sums_batch(rule: SplitRule, requests: list) -> list:
    """:func:`map_sums` for several cells at once: ``requests`` a list of ``(outer, scalars, warm, full)`` (the
    arguments of :func:`map_sums`, one rule, the same σ); returns the list of its results. The cells' lines are
    concatenated into one compiled call per kind of evaluation (global search or warm continuation), each
    line computed as in a call of its own (:func:`_program`); results equal those of :func:`map_sums` to the
    order of the final sums' additions."""
    out: list = [None] * len(requests)
    groups: dict = {}
    for i, (outer, scalars, warm, full) in enumerate(requests):
        has_warm = warm is not None and np.shape(warm[0]) == (outer[0].size, rule.detect)
        groups.setdefault((bool(full) or not has_warm, float(scalars["s2"])), []).append(i)
    for (full, _), idx in groups.items():
        for i, r in zip(idx, _run_batch(rule, [requests[i] for i in idx], full)):
            out[i] = r
    return out


def _run_batch(rule: SplitRule, reqs: list, full: bool) -> list:
    """One kind of evaluation (``full``) for the cells ``reqs``, padded to :data:`_LINE_BUCKET` lines."""
    G = rule.detect
    sizes = [r[0][0].size for r in reqs]
    n = sum(sizes)
    Lb = _line_bucket(n)
    cells = Lb // 16 + 1                       # static segment count (the last one: padding lines)
    if len(reqs) >= cells:
        raise ValueError(f"map_sums_batch: {len(reqs)} cells on {Lb} lines (at least 16 lines per cell)")
    pad = Lb - n

    def cat(parts, fill):
        return np.concatenate(list(parts) + [np.full((pad,) + np.shape(parts[0])[1:], fill)])
    xv, yu, yv = (cat([r[0][k] for r in reqs], 0.0) for k in range(3))
    wo = cat([r[0][3] for r in reqs], 0.0)
    hw = [r[2] is not None and np.shape(r[2][0]) == (s, G) for r, s in zip(reqs, sizes)]
    warm = [r[2] if h else (np.zeros((s, G)), np.zeros((s, G))) for r, s, h in zip(reqs, sizes, hw)]
    w1 = cat([w[0] for w in warm], 0.0)
    w2 = cat([w[1] for w in warm], 0.0)
    has_warm = cat([np.full(s, h) for s, h in zip(sizes, hw)], False).astype(bool)
    seg = cat([np.full(s, c) for c, s in enumerate(sizes)], cells - 1).astype(np.int32)
    keys = ("sq", "sres", "m", "theta", "om", "A11", "A22", "V")
    first = reqs[0][1]
    p = {k: cat([np.full(s, float(r[1][k])) for r, s in zip(reqs, sizes)], float(first[k])) for k in keys}
    key = ("batch", rule, Lb)
    K = _K.get(key, _bucket(Lb * (G - 1) // 10))
    with jax.enable_x64(True):
        pj = {k: np.asarray(v, np.float64) for k, v in p.items()}
        pj["s2"] = np.float64(first["s2"])
        while True:
            fn = _batch_compiled(G, rule.gl, rule.bisect, min(K, Lb * (G - 1)), float(rule.zmax), cells)
            sums, counts, h1, h2 = fn(xv, yu, yv, wo, w1, w2, pj, np.bool_(full), has_warm, seg)
            counts = np.asarray(counts)
            total = int(counts.sum())
            if total <= K or K >= Lb * (G - 1):
                break
            K = _K[key] = _bucket(total + total // 4)
        _K[key] = K
        sums, h1, h2 = np.asarray(sums), np.asarray(h1), np.asarray(h2)
    out, at = [], 0
    for c, s in enumerate(sizes):
        out.append(([float(v) for v in sums[c]], int(counts[c]), (h1[at:at + s].copy(), h2[at:at + s].copy())))
        at += s
    return out
