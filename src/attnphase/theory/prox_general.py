"""Global minimiser of the Moreau problem of MODEL.md §8 over ``h ∈ R^{L×r}``, batched, in JAX.

``F(h) = ½ Σ_l (h_l − ω_l)ᵀ V⁻¹ (h_l − ω_l) + ℓ(h, h*)``, ``ℓ = (σ²/2) ‖T(h*) − softmax(h hᵀ)‖_F²``.
The problem is non-convex with several basins (MODEL.md §7). Multi-start Newton: starts at ω, −ω, every other
token permutation of ω (up to ``MAX_PERMUTATIONS``), the teacher-informed start (h* in the student's first r*
directions, scaled to ω's norm), and ``RANDOM_STARTS`` fixed random points around ω within the radius
``2σ√λ_max(V)`` that bounds ``|ĥ − ω|`` (ℓ ≤ 2σ²); each start runs ``SCOUT_STEPS`` modified Newton steps
(closed-form derivatives, :func:`derivatives`; LDLᵀ with pivots made positive, step capped, best of a few step
lengths), then the start of lowest value
runs up to ``POLISH_STEPS`` more, stopped at ``|∇F| <= GTOL`` (quadratic convergence).
:func:`prox_warm`: one Newton run from the previous minimiser of the same sample (the engine's warm map).
All functions act on ONE point; ``jax.vmap`` batches them.
"""

from __future__ import annotations

from itertools import permutations

import jax
import jax.numpy as jnp
import numpy as np

SCOUT_STEPS, POLISH_STEPS = 3, 14
"""Newton steps run from every start (enough to rank the basins: 2 steps already picked the same global
minimum as 8 on 5 × 4096 problems at L = 2, 3, docs/theory_general.md), then at most from the best one only."""
GTOL, XTOL = 1e-12, 1e-10
"""The polishing Newton stops once ``|∇F| <= GTOL`` or its last step was below ``XTOL`` (relative; see
:func:`_newton`)."""
RANDOM_STARTS = 4
BASIN_SEP = 0.1
"""A scout ending farther than ``BASIN_SEP (|ĥ| + σ)`` from the winner's is taken to lie in another basin."""
MAX_PERMUTATIONS = 6
_STEP_LENGTHS = (1.0, 0.4, 0.1)
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
    d = h - w
    return 0.5 * jnp.sum(d[:, :, None] * Vinv[None, :, :] * d[:, None, :]) + loss(h, T, sigma2)


def derivatives(h, w, T, Vinv, sigma2):
    """Value, gradient (L, r) and Hessian (L, r, L, r) of the Moreau objective, in closed form (MODEL.md §8).

    With ``Z = h hᵀ``, ``S`` its row-wise softmax, ``R = S − T``: ``∂ℓ/∂Z = G``, ``G_lk = σ² S_lk (R_lk −
    Σ_j S_lj R_lj)``, ``∇ℓ = (G + Gᵀ) h``; per row l the Hessian in ``Z_l`` is ``σ²[J² + diag(u) − u sᵀ − s uᵀ
    + c (s sᵀ − J)]`` (``s = S_l``, ``J = diag(s) − s sᵀ``, ``u = R_l ∘ s``, ``c = Σ u``), chained through
    ``∂Z_lk/∂h_a = δ_la h_k + δ_ka h_l``; the quadratic term adds ``δ_ab V⁻¹``. One pass instead of
    ``jax.hessian``'s forward-over-reverse (tested against it)."""
    L, r = h.shape
    S = attention(h)
    R = S - T
    u = R * S
    c = jnp.sum(u, axis=1, keepdims=True)                               # (L, 1)
    G = sigma2 * (u - S * c)
    Gs = G + G.T
    d = h - w
    dV = jnp.sum(d[:, :, None] * Vinv[None, :, :], axis=1)              # (h − ω) V⁻¹
    value = 0.5 * jnp.sum(dV * d) + 0.5 * sigma2 * jnp.sum(R ** 2)
    grad = dV + jnp.sum(Gs[:, :, None] * h[None, :, :], axis=1)
    eye = jnp.eye(L)
    J = eye[None] * S[:, :, None] - S[:, :, None] * S[:, None, :]      # (L, L, L): J_l
    JJ = jnp.sum(J[:, :, :, None] * J[:, None, :, :], axis=2)
    ss = S[:, :, None] * S[:, None, :]
    K = sigma2 * (JJ + eye[None] * u[:, :, None] - u[:, :, None] * S[:, None, :] - S[:, :, None] * u[:, None, :]
                  + c[:, :, None] * (ss - J))                            # (l, k, k')
    # D[l, k, a, i] = δ_la h_ki + δ_ka h_li
    D = eye[:, None, :, None] * h[None, :, None, :] + eye[None, :, :, None] * h[:, None, None, :]
    KD = jnp.sum(K[:, :, :, None, None] * D[:, None, :, :, :], axis=2)  # (l, k, b, j)
    H = jnp.sum(D[:, :, :, :, None, None] * KD[:, :, None, None, :, :], axis=(0, 1))   # (a, i, b, j)
    H = H + Gs[:, None, :, None] * jnp.eye(r)[None, :, None, :] + eye[:, None, :, None] * Vinv[None, :, None, :]
    return value, grad, H


def modified_ldl_solve(H, g, floor):
    """Solve ``B d = g`` with ``B = L D Lᵀ`` the LDLᵀ factorisation of the symmetric ``H`` whose pivots are
    replaced by ``max(|pivot|, floor)`` (a positive-definite modification: a descent direction for Newton).
    Unrolled over the (small, static) size: elementwise work only, fast under ``vmap`` on CPU and GPU, where
    batched LAPACK calls on tiny matrices are not."""
    n = H.shape[0]
    Lm = [[None] * n for _ in range(n)]
    D = [None] * n
    for j in range(n):
        dj = H[j, j] - sum(Lm[j][k] ** 2 * D[k] for k in range(j))
        D[j] = jnp.maximum(jnp.abs(dj), floor)
        for i in range(j + 1, n):
            Lm[i][j] = (H[i, j] - sum(Lm[i][k] * Lm[j][k] * D[k] for k in range(j))) / D[j]
    z = [None] * n
    for i in range(n):
        z[i] = g[i] - sum(Lm[i][k] * z[k] for k in range(i))
    z = [z[i] / D[i] for i in range(n)]
    x = [None] * n
    for i in reversed(range(n)):
        x[i] = z[i] - sum(Lm[k][i] * x[k] for k in range(i + 1, n))
    return jnp.stack(x)


def _newton(h0, w, T, Vinv, sigma2, n_steps, gtol=0.0):
    """At most ``n_steps`` modified Newton steps from ``h0`` (L, r); with ``gtol > 0`` stopping once
    ``|∇F| <= gtol`` or once the last accepted Newton step was shorter than ``XTOL (1 + |ĥ|)`` (quadratic
    convergence: the error is then ~XTOL²), or no step length decreased F (the iteration is deterministic: it
    would stay there). Round-off floors |∇F| near 1e-10 for ~1/4 of the samples, which would otherwise run
    all steps. Under ``vmap`` the loop runs until every
    member has stopped; a member that has stopped no longer moves. Returns (ĥ, F(ĥ), |∇F(ĥ)|)."""
    shape = h0.shape
    n = h0.size
    f = lambda v: objective(v.reshape(shape), w, T, Vinv, sigma2)  # noqa: E731
    floor = 0.1 / jnp.trace(jnp.linalg.inv(Vinv))       # <= 0.1 λ_min(V⁻¹)
    steps = jnp.asarray(_STEP_LENGTHS)

    def info(v):
        F, g, H = derivatives(v.reshape(shape), w, T, Vinv, sigma2)
        return F, g.ravel(), H.reshape(n, n)

    xtol = XTOL if gtol > 0 else 0.0

    def cond(c):
        i, dv, v, _, g, _ = c
        return (i < n_steps) & (dv > xtol * (1.0 + jnp.linalg.norm(v))) & (jnp.linalg.norm(g) > gtol)

    def body(c):
        i, _, v, F0, g, H = c
        d = -modified_ldl_solve(H, g, floor)
        d = d * jnp.minimum(1.0, _CAP / jnp.maximum(jnp.linalg.norm(d), 1e-300))
        cand = v[None, :] + steps[:, None] * d[None, :]
        Fc = jax.vmap(f)(cand)
        j = jnp.argmin(Fc)
        # below round-off of F (predicted decrease -g·d tiny) values cannot rank the step lengths: the full
        # step is taken (quadratic regime) instead of stalling at |∇F| ~ 1e-9
        tiny = -jnp.dot(g, d) <= _F_ROUNDOFF * (1.0 + jnp.abs(F0))
        ok = tiny | (Fc[j] < F0)
        v_new = jnp.where(tiny, v + d, jnp.where(ok, cand[j], v))
        return (i + 1, jnp.where(ok, jnp.linalg.norm(d), 0.0), v_new, *info(v_new))

    v0 = h0.ravel()
    _, _, v, F, g, _ = jax.lax.while_loop(cond, body, (0, jnp.array(jnp.inf), v0, *info(v0)))
    return v.reshape(shape), F, jnp.linalg.norm(g)


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


def prox_pair(w, h_star, T, V, sigma2, offsets):
    """Global minimiser over all starts, and the runner-up basin: returns (ĥ (L, r), min value, |∇F| at ĥ,
    ĥ₂ (L, r)). ĥ₂ is the polished best start whose scout ended at least ``BASIN_SEP (|ĥ| + σ)`` away from
    the winner's, or if there is none the polished mirror image −ĥ (ℓ is even in h; seen: the positional
    minimum jumping to the mirrored basin at ω = 0.1); where the global minimum switches basin as the state moves, it
    switches (nearly always) to this one, so the warm map (:func:`prox_warm`) follows both."""
    Vinv = jnp.linalg.inv(V)
    H0 = starts(w, h_star, V, sigma2, offsets)
    h, F, _ = jax.vmap(_newton, in_axes=(0, None, None, None, None, None))(H0, w, T, Vinv, sigma2,
                                                                           SCOUT_STEPS)
    F = jnp.where(jnp.isfinite(F), F, jnp.inf)
    j = jnp.argmin(F)
    far = jnp.linalg.norm((h - h[j]).reshape(h.shape[0], -1), axis=1) \
        > BASIN_SEP * (jnp.linalg.norm(h[j]) + jnp.sqrt(sigma2))
    k = jnp.argmin(jnp.where(far, F, jnp.inf))
    second = jnp.where(jnp.any(far), h[k], -h[j])
    both = jax.vmap(_newton, in_axes=(0, None, None, None, None, None, None))(
        jnp.stack([h[j], second]), w, T, Vinv, sigma2, POLISH_STEPS, GTOL)
    return _ordered(*both)


def _ordered(h, F, gn):
    """(best ĥ, its F, its |∇F|, the other ĥ) from two polished candidates (2, L, r)."""
    i = jnp.where(F[1] < F[0], 1, 0)
    return h[i], F[i], gn[i], h[1 - i]


def prox(w, h_star, T, V, sigma2, offsets):
    """Global minimiser over all starts: returns (ĥ (L, r), min value, |∇F| at ĥ)."""
    return prox_pair(w, h_star, T, V, sigma2, offsets)[:3]


def prox_warm(h_pair, w, T, V, sigma2):
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
    h, _, _, other = _ordered(*both)
    # the mirror start ran scout steps only; where it won, polish it (a no-op loop where nothing is left)
    h, F, gn = _newton(h, w, T, Vinv, sigma2, POLISH_STEPS, GTOL)
    return h, F, gn, other
