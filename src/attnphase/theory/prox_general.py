"""Global minimiser of the Moreau problem of MODEL.md §8 over ``h ∈ R^{L×r}``, batched, in JAX.

``F(h) = ½ Σ_l (h_l − ω_l)ᵀ V⁻¹ (h_l − ω_l) + ℓ(h, h*)``, ``ℓ = (σ²/2) ‖T(h*) − softmax(h hᵀ)‖_F²``.
The problem is non-convex with several basins (MODEL.md §7). Multi-start Newton: starts at ω, −ω, every other
token permutation of ω (up to ``MAX_PERMUTATIONS``), the teacher-informed start (h* in the student's first r*
directions, scaled to ω's norm), and ``RANDOM_STARTS`` fixed random points around ω within the radius
``2σ√λ_max(V)`` that bounds ``|ĥ − ω|`` (ℓ ≤ 2σ²); each start runs ``SCOUT_STEPS`` modified Newton steps
(closed-form derivatives, :func:`moreau_terms`; LDLᵀ with pivots made positive, step capped, best of a few step
lengths), then the start of lowest value
runs up to ``POLISH_STEPS`` more, stopped at ``|∇F| <= GTOL`` (quadratic convergence).
:func:`prox_warm`: one Newton run from the previous minimiser of the same sample (the engine's warm map).
All functions act on ONE point; ``jax.vmap`` batches them. Inside, the Newton works UNROLLED over the L r
entries (each entry one array over the batch, every operation elementwise): on a CPU that is ~40× faster
per derivative evaluation than (L, r)-shaped tensors under vmap (docs/notes/2026-12-05-theory-general.md, "Speed: profile of
one point").
"""

from __future__ import annotations

from itertools import permutations
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

SCOUT_STEPS, POLISH_STEPS = 3, 14
"""Newton steps run from every start (enough to rank the basins: 2 steps already picked the same global
minimum as 8 on 5 × 4096 problems at L = 2, 3, docs/notes/2026-12-05-theory-general.md), then at most from the best one only."""
GTOL, XTOL = 1e-12, 1e-10
"""The polishing Newton stops once ``|∇F| <= GTOL`` or its last step was below ``XTOL`` (relative; see
:func:`_newton`)."""
RANDOM_STARTS = 4
BASIN_SEP = 0.1
"""A scout ending farther than ``BASIN_SEP (|ĥ| + σ)`` from the winner's is taken to lie in another basin."""
MAX_PERMUTATIONS = 6
_STEP_LENGTHS = (1.0, 0.4, 0.1)
_STEPS_ARRAY = np.asarray(_STEP_LENGTHS)
_CAP = 2.0
_F_ROUNDOFF = 1e-13


def attention(h):
    """Row-wise ``softmax(h hᵀ)`` for ``h`` (L, r) (broadcast products, not matmuls: tiny shapes fuse better)."""
    Z = jnp.sum(h[:, None, :] * h[None, :, :], axis=-1)
    Z = Z - jnp.max(Z, axis=-1, keepdims=True)
    E = jnp.exp(Z)
    return E / jnp.sum(E, axis=-1, keepdims=True)


def teacher(h_star, omega, A):
    """``T = (1 − ω) softmax(h* h*ᵀ) + ω A`` (MODEL.md §1)."""
    return (1.0 - omega) * attention(h_star) + omega * A


def loss(h, T, sigma2):
    """``ℓ = (σ²/2) ‖T − softmax(h hᵀ)‖_F²`` (MODEL.md §8, Σ_L = σ² I)."""
    return 0.5 * sigma2 * jnp.sum((T - attention(h)) ** 2)


def objective(h, w, T, Vinv, sigma2):
    """The Moreau objective ``F(h)`` at one point h (L, r) (:func:`moreau_terms`)."""
    return moreau_terms(split(h), split(w), split(T), split(Vinv), sigma2, order=0)[0]


def derivatives(h, w, T, Vinv, sigma2):
    """Value, gradient (L, r) and Hessian (L, r, L, r) of the Moreau objective at one point, in closed form
    (:func:`moreau_terms`, stacked into arrays)."""
    L, r = h.shape
    F, g, H = moreau_terms(split(h), split(w), split(T), split(Vinv), sigma2, order=2)
    return F, jnp.stack([jnp.stack(gl) for gl in g]), jnp.stack([jnp.stack(Hi) for Hi in H]).reshape(L, r, L, r)


def split(a) -> list:
    """A small matrix (a, b) as nested lists of its entries (``[[a[0, 0], …], …]``): the unrolled form of
    :func:`moreau_terms`, where every entry is one array over the whole batch."""
    return [[a[i, j] for j in range(a.shape[1])] for i in range(a.shape[0])]


def _total(terms):
    """Sum of the entries that are not None (None marks a structural zero); None if all are."""
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    return out


def _dZ(h, l, k, a, i):
    """``∂Z_lk/∂h_ai = δ_la h_ki + δ_ka h_li`` for ``Z = h hᵀ`` (None where it vanishes)."""
    return _total([h[k][i] if l == a else None, h[l][i] if k == a else None])


def moreau_terms(h, w, T, Vinv, sigma2, order=2):
    """Value (``order`` 0), gradient (1) and Hessian (2) of ``F(h) = ½ Σ_l (h_l − ω_l)ᵀ V⁻¹ (h_l − ω_l) + ℓ``,
    ``ℓ = (σ²/2) ‖T − softmax(h hᵀ)‖_F²`` (MODEL.md §8), in closed form and UNROLLED: ``h``, ``w`` (L × r),
    ``T`` (L × L), ``Vinv`` (r × r) are nested lists of arrays of one common batch shape (or scalars), and every
    operation is elementwise over the batch. On a CPU, XLA fuses this into a few loops over the batch; the same
    algebra on (…, L, r) tensors under ``vmap`` ran ~40× slower (tiny minor dimensions; docs/notes/2026-12-05-theory-general.md,
    hA profile). Returns ``(F, g, H)``: g as an L × r nested list, H as an n × n nested list (n = L r, row-major
    in (l, i)), None for what ``order`` does not ask.

    With ``Z = h hᵀ``, ``S`` its row-wise softmax, ``R = S − T``: ``∂ℓ/∂Z_lk = G_lk = σ² S_lk (R_lk − Σ_j S_lj
    R_lj)``, ``∇_a ℓ = Σ_k (G + Gᵀ)_ak h_k``; per row l the Hessian in ``Z_l`` is ``K_l = σ²[J² + diag(u) − u sᵀ
    − s uᵀ + c (s sᵀ − J)]`` (``s = S_l``, ``J = diag(s) − s sᵀ``, ``u = R_l ∘ s``, ``c = Σ u``), chained
    through ``∂Z_lk/∂h_ai = δ_la h_ki + δ_ka h_li``, plus ``δ_ij (G + Gᵀ)_ab`` from the second derivative of Z
    and ``δ_ab V⁻¹_ij`` from the quadratic term."""
    L, r = len(h), len(h[0])
    S, R = [], []
    for l in range(L):
        Z = [sum(h[l][i] * h[k][i] for i in range(r)) for k in range(L)]
        top = Z[0]
        for z in Z[1:]:
            top = jnp.maximum(top, z)
        E = [jnp.exp(z - top) for z in Z]
        tot = sum(E)
        S.append([e / tot for e in E])
        R.append([S[l][k] - T[l][k] for k in range(L)])
    d = [[h[l][i] - w[l][i] for i in range(r)] for l in range(L)]
    dV = [[sum(d[l][i] * Vinv[i][j] for i in range(r)) for j in range(r)] for l in range(L)]
    F = 0.5 * sum(dV[l][j] * d[l][j] for l in range(L) for j in range(r)) \
        + (0.5 * sigma2) * sum(R[l][k] * R[l][k] for l in range(L) for k in range(L))
    if order == 0:
        return F, None, None
    u = [[R[l][k] * S[l][k] for k in range(L)] for l in range(L)]
    c = [sum(u[l]) for l in range(L)]
    G = [[sigma2 * (u[l][k] - S[l][k] * c[l]) for k in range(L)] for l in range(L)]
    Gs = [[G[a][b] + G[b][a] for b in range(L)] for a in range(L)]
    g = [[dV[a][i] + sum(Gs[a][k] * h[k][i] for k in range(L)) for i in range(r)] for a in range(L)]
    if order == 1:
        return F, g, None
    n = L * r
    K = []
    for l in range(L):
        s, ul = S[l], u[l]
        J = [[(s[k] if k == m else 0.0) - s[k] * s[m] for m in range(L)] for k in range(L)]
        K.append([[sigma2 * (sum(J[k][j] * J[j][m] for j in range(L)) + (ul[k] if k == m else 0.0)
                             - ul[k] * s[m] - s[k] * ul[m] + c[l] * (s[k] * s[m] - J[k][m]))
                   for m in range(L)] for k in range(L)])
    # KD[l][k][b·r + j] = Σ_m K_l[k][m] ∂Z_lm/∂h_bj
    KD = [[[_total([None if _dZ(h, l, m, b, j) is None else K[l][k][m] * _dZ(h, l, m, b, j) for m in range(L)])
            for b in range(L) for j in range(r)] for k in range(L)] for l in range(L)]
    H = [[None] * n for _ in range(n)]
    for a in range(L):
        for i in range(r):
            for b in range(L):
                for j in range(r):
                    p, q = a * r + i, b * r + j
                    if q < p:
                        continue
                    chain = [None if _dZ(h, l, k, a, i) is None or KD[l][k][q] is None
                             else _dZ(h, l, k, a, i) * KD[l][k][q] for l in range(L) for k in range(L)]
                    H[p][q] = H[q][p] = _total(chain + [Gs[a][b] if i == j else None,
                                                        Vinv[i][j] if a == b else None])
    return F, g, H


def ldl_factor(H, floor=None):
    """LDLᵀ factorisation ``(Lm, D)`` of a symmetric ``H`` (n × n nested list or array; entries batch arrays),
    unrolled over the (small, static) n. ``floor``: the pivots are replaced by ``max(|pivot|, floor)`` (a
    positive-definite modification: a descent direction for Newton); None: exact pivots."""
    n = len(H)
    Lm = [[None] * n for _ in range(n)]
    D = [None] * n
    for j in range(n):
        dj = H[j][j] - sum(Lm[j][k] ** 2 * D[k] for k in range(j))
        D[j] = dj if floor is None else jnp.maximum(jnp.abs(dj), floor)
        for i in range(j + 1, n):
            Lm[i][j] = (H[i][j] - sum(Lm[i][k] * Lm[j][k] * D[k] for k in range(j))) / D[j]
    return Lm, D


def ldl_solve(factor, g) -> list:
    """Solve ``L D Lᵀ x = g`` for a :func:`ldl_factor`; ``g`` a list of n batch arrays; returns a list."""
    Lm, D = factor
    n = len(D)
    z = [None] * n
    for i in range(n):
        z[i] = g[i] - sum(Lm[i][k] * z[k] for k in range(i))
    z = [z[i] / D[i] for i in range(n)]
    x = [None] * n
    for i in reversed(range(n)):
        x[i] = z[i] - sum(Lm[k][i] * x[k] for k in range(i + 1, n))
    return x


def modified_ldl_solve(H, g, floor):
    """Solve ``B d = g`` with ``B = L D Lᵀ`` the LDLᵀ factorisation of the symmetric ``H`` whose pivots are
    replaced by ``max(|pivot|, floor)`` (:func:`ldl_factor`). Elementwise work only, fast under ``vmap`` on CPU
    and GPU, where batched LAPACK calls on tiny matrices are not."""
    return ldl_solve(ldl_factor(H, floor), g)


def _norm(v):
    return jnp.sqrt(sum(x * x for x in v))


class Minimum(NamedTuple):
    """A polished minimiser ĥ (L, r), F(ĥ), |∇F(ĥ)| and the Hessian of F at ĥ (n × n nested list of entries,
    n = L r, :func:`moreau_terms`)."""

    h: jnp.ndarray
    F: jnp.ndarray
    gn: jnp.ndarray
    hess: list


def _newton(h0, w, T, Vinv, sigma2, n_steps, gtol=0.0) -> Minimum:
    """At most ``n_steps`` modified Newton steps from ``h0`` (L, r); with ``gtol > 0`` stopping once
    ``|∇F| <= gtol`` or once the last accepted Newton step was shorter than ``XTOL (1 + |ĥ|)`` (quadratic
    convergence: the error is then ~XTOL²), or no step length decreased F (the iteration is deterministic: it
    would stay there). Round-off floors |∇F| near 1e-10 for ~1/4 of the samples, which would otherwise run
    all steps. Under ``vmap`` the loop runs until every member has stopped; a member that has stopped no
    longer moves. The state is carried unrolled (lists of the n = L r entries, :func:`moreau_terms`); each pass
    of the loop evaluates the derivatives at the current point, then decides whether to step (one copy of the
    derivatives in the compiled program: compile time grows with the unrolled size)."""
    L, r = h0.shape
    n = L * r
    ws, Ts, Vs = split(w), split(T), split(Vinv)
    fold = lambda v: [v[l * r:(l + 1) * r] for l in range(L)]  # noqa: E731
    floor = 0.1 / jnp.trace(jnp.linalg.inv(Vinv))       # <= 0.1 λ_min(V⁻¹)
    xtol = XTOL if gtol > 0 else 0.0

    def body(c):
        i, dv, v, *_ = c
        F0, g, H = moreau_terms(fold(v), ws, Ts, Vs, sigma2, order=2)
        g = [x for gl in g for x in gl]
        gn = _norm(g)
        go = (i < n_steps) & (dv > xtol * (1.0 + _norm(v))) & (gn > gtol)
        d = [-x for x in modified_ldl_solve(H, g, floor)]
        dn = _norm(d)
        scale = jnp.minimum(1.0, _CAP / jnp.maximum(dn, 1e-300))
        d = [x * scale for x in d]
        # all step lengths in one evaluation (a leading axis of 3); the first that lowers F most (as argmin)
        cand = [x + _STEPS_ARRAY * y for x, y in zip(v, d)]
        Fc = moreau_terms(fold(cand), ws, Ts, Vs, sigma2, order=0)[0]
        best_F, best_v = Fc[0], [x[0] for x in cand]
        for k in range(1, len(_STEP_LENGTHS)):
            better = Fc[k] < best_F
            best_F = jnp.where(better, Fc[k], best_F)
            best_v = [jnp.where(better, x[k], y) for x, y in zip(cand, best_v)]
        # below round-off of F (predicted decrease -g·d tiny) values cannot rank the step lengths: the full
        # step is taken (quadratic regime) instead of stalling at |∇F| ~ 1e-9
        tiny = -sum(x * y for x, y in zip(g, d)) <= _F_ROUNDOFF * (1.0 + jnp.abs(F0))
        ok = tiny | (best_F < F0)
        v_new = [jnp.where(go, jnp.where(tiny, x + y, jnp.where(ok, b, x)), x) for x, y, b in zip(v, d, best_v)]
        dv_new = jnp.where(go, jnp.where(ok, dn * scale, 0.0), dv)
        return i + go, dv_new, v_new, F0, gn, H, go

    v0 = [h0[l, i] for l in range(L) for i in range(r)]
    zero = jnp.zeros_like(v0[0])
    init = (0, jnp.array(jnp.inf), v0, zero, zero, [[zero] * n for _ in range(n)], jnp.array(True))
    _, _, v, F, gn, H, _ = jax.lax.while_loop(lambda c: c[-1], body, init)
    return Minimum(jnp.stack(v).reshape(L, r), F, gn, H)


def start_offsets(L: int, r: int, seed: int = 0) -> np.ndarray:
    """Fixed unit-scale random offsets (RANDOM_STARTS, L, r) for the random starts (same at every call)."""
    return np.random.default_rng(seed).standard_normal((RANDOM_STARTS, L, r)) / np.sqrt(L * r)


def token_permutations(L: int) -> list[tuple[int, ...]]:
    """The non-identity token permutations used as starts (all of them up to MAX_PERMUTATIONS)."""
    return [p for p in permutations(range(L)) if p != tuple(range(L))][:MAX_PERMUTATIONS]


def starts(w, h_star, V, sigma2, offsets):
    """Starting points (S, L, r): ω, −ω, permutations of ω, teacher-informed, random around ω."""
    L, r = w.shape
    out = [w, -w] + [w[jnp.asarray(p)] for p in token_permutations(L)]
    rs = min(r, h_star.shape[1])
    hs = jnp.zeros_like(w).at[:, :rs].set(h_star[:, :rs])
    scale = jnp.linalg.norm(w) / jnp.maximum(jnp.linalg.norm(hs), 1e-12)
    out.append(hs * jnp.where(scale > 0, scale, 1.0))
    R = 2.0 * jnp.sqrt(sigma2 * jnp.max(jnp.linalg.eigvalsh(V)))
    out += [w + R * o for o in offsets]
    return jnp.stack(out)


class ProxOut(NamedTuple):
    """The global minimiser ĥ (L, r), F(ĥ), |∇F(ĥ)|, the runner-up ĥ₂ (L, r) and the Hessian of F at ĥ
    (n × n nested list; :func:`Minimum`)."""

    h: jnp.ndarray
    F: jnp.ndarray
    gn: jnp.ndarray
    other: jnp.ndarray
    hess: list


def prox_pair(w, h_star, T, V, sigma2, offsets) -> ProxOut:
    """Global minimiser over all starts, and the runner-up basin (:class:`ProxOut`). ĥ₂ is the polished best
    start whose scout ended at least ``BASIN_SEP (|ĥ| + σ)`` away from the winner's, or if there is none the
    polished mirror image −ĥ (ℓ is even in h; seen: the positional minimum jumping to the mirrored basin at
    ω = 0.1); where the global minimum switches basin as the state moves, it switches (nearly always) to this
    one, so the warm map (:func:`prox_warm`) follows both."""
    Vinv = jnp.linalg.inv(V)
    H0 = starts(w, h_star, V, sigma2, offsets)
    scout = jax.vmap(_newton, in_axes=(0, None, None, None, None, None))(H0, w, T, Vinv, sigma2, SCOUT_STEPS)
    h, F = scout.h, jnp.where(jnp.isfinite(scout.F), scout.F, jnp.inf)
    j = jnp.argmin(F)
    far = jnp.linalg.norm((h - h[j]).reshape(h.shape[0], -1), axis=1) \
        > BASIN_SEP * (jnp.linalg.norm(h[j]) + jnp.sqrt(sigma2))
    k = jnp.argmin(jnp.where(far, F, jnp.inf))
    second = jnp.where(jnp.any(far), h[k], -h[j])
    both = jax.vmap(_newton, in_axes=(0, None, None, None, None, None, None))(
        jnp.stack([h[j], second]), w, T, Vinv, sigma2, POLISH_STEPS, GTOL)
    return _ordered(both)


def _ordered(both: Minimum) -> ProxOut:
    """The better of two polished candidates (leading axis 2), with the other one's ĥ."""
    i = jnp.where(both.F[1] < both.F[0], 1, 0)
    return ProxOut(both.h[i], both.F[i], both.gn[i], both.h[1 - i], [[x[i] for x in row] for row in both.hess])


def prox(w, h_star, T, V, sigma2, offsets):
    """Global minimiser over all starts: returns (ĥ (L, r), min value, |∇F| at ĥ)."""
    return tuple(prox_pair(w, h_star, T, V, sigma2, offsets)[:3])


def prox_warm(h_pair, w, T, V, sigma2) -> ProxOut:
    """Newton (at most ``POLISH_STEPS``, stopped at ``GTOL``/``XTOL``) from the two minimisers ``h_pair``
    (2, L, r) of the same sample at the previous evaluation (:func:`prox_pair`'s ĥ and ĥ₂; where both lie in
    one basin, ``SCOUT_STEPS`` steps from the mirror image −ĥ instead, polished only if it wins — a full
    descent from −ĥ at every call made the warm map half as costly as the full one): the lower of the two
    LOCAL minima, and the other. It equals :func:`prox` unless the global minimum has moved to a third
    basin since; the engine therefore certifies every fixed point with :func:`prox_pair`
    (``engine.solve_batch``, ``full_prox_every``)."""
    h1, h2 = h_pair[0], h_pair[1]
    Vinv = jnp.linalg.inv(V)
    same = jnp.linalg.norm(h2 - h1) <= BASIN_SEP * (jnp.linalg.norm(h1) + jnp.sqrt(sigma2))
    steps = jnp.stack([jnp.asarray(POLISH_STEPS), jnp.where(same, SCOUT_STEPS, POLISH_STEPS)])
    both = jax.vmap(_newton, in_axes=(0, None, None, None, None, 0, None))(
        jnp.stack([h1, jnp.where(same, -h1, h2)]), w, T, Vinv, sigma2, steps, GTOL)
    first = _ordered(both)
    # the mirror start ran scout steps only; where it won, polish it (a no-op loop where nothing is left)
    h, F, gn, hess = _newton(first.h, w, T, Vinv, sigma2, POLISH_STEPS, GTOL)
    return ProxOut(h, F, gn, first.other, hess)
