"""Order parameters of the general model (MODEL.md §8) as JAX pytrees, with the invariants that are reported.

``OrderParams``: q (r×r), M (r×k), θ (r×r*), V (r×r). ``Hats``: q̂ (r×r), M̂ (r×k), θ̂ (r×r*), V̂ (r×r).
Both are NamedTuples (pytrees): ``jax.vmap`` batches them, ``flatten``/``unflatten`` give the vector the
fixed-point loop iterates on, so no solver code indexes positions of (q, m, V, θ) by hand.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np


class OrderParams(NamedTuple):
    q: jnp.ndarray
    M: jnp.ndarray
    theta: jnp.ndarray
    V: jnp.ndarray


class Hats(NamedTuple):
    q_hat: jnp.ndarray
    M_hat: jnp.ndarray
    theta_hat: jnp.ndarray
    V_hat: jnp.ndarray


def shapes(r: int, k: int, r_star: int) -> OrderParams:
    """Shapes of the four blocks (the same for the hats)."""
    return OrderParams((r, r), (r, k), (r, r_star), (r, r))


def flatten(x) -> jnp.ndarray:
    """Concatenate the blocks (last two axes of each) into one vector per point (leading axes kept)."""
    lead = x[0].shape[:-2]
    return jnp.concatenate([jnp.reshape(b, lead + (-1,)) for b in x], axis=-1)


def unflatten(v, r: int, k: int, r_star: int, cls=OrderParams):
    """Inverse of :func:`flatten` for blocks of shapes :func:`shapes`."""
    out, i = [], 0
    lead = v.shape[:-1]
    for s in shapes(r, k, r_star):
        n = s[0] * s[1]
        out.append(jnp.reshape(v[..., i:i + n], lead + s))
        i += n
    return cls(*out)


FLIP_VISIBLE = 0.5
"""|Qm_jj| above which :func:`canonical_gauge` (with ``ref``) reads the rotation as near the identity up to signs
and keeps the signs that make O_jj > 0 (a rotation by more than 60° falls back to the non-negative diagonal)."""


def canonical_gauge(x: OrderParams, ref: OrderParams | None = None) -> OrderParams:
    """Rotate ``x`` into a canonical gauge (``q → OqOᵀ, M → OM, θ → Oθ, V → OVOᵀ``; MODEL.md §8: the model is
    invariant under ``Q → QO``): O = Qᵀ from the QR factorisation of the signal block ``[θ, M]`` (r × (r*+k)),
    so that ``O[θ, M]`` is upper triangular with a non-negative diagonal; a direction the signal does not fix
    (zero diagonal) gets the sign that makes ``(OqOᵀ)_{0j} >= 0`` (after direction 0's sign is fixed). Columns of ``[θ, M]`` that vanish (θ on the
    positional branch, M on the semantic one) are moved behind the others first: a zero leading column would
    leave the QR's first direction arbitrary and the gauge unfixed (seen: M rotating on the r = 2 positional
    branch). Used for r > 1, where the iteration otherwise drifts along the gauge orbit. (For
    r > rank[θ, M] + 1 the complement is not fully fixed.) With ``ref`` (the map's input), an undetermined sign
    is chosen to agree with ``ref`` instead: where the signal leaves a direction free, the fixed point is even in
    it (q₀ⱼ = V₀ⱼ = 0 up to QMC noise) and the q₀ⱼ rule flips it from iteration to iteration (seen: the r = 2
    semantic branch stuck at max_steps with a residual of ~2|q₀₁|/‖q‖). Also with ``ref``, the sign of a direction
    the signal does fix is the one that keeps O closest to the identity (O_jj > 0 where |Qm_jj| > FLIP_VISIBLE),
    not the one that makes the diagonal non-negative: a map that flips the signal (M → −M, i.e. F(x) = Ox with a
    reflection O) is then seen as such (a 2-cycle, as at r = 1) instead of being rotated back into a fake fixed
    point (seen: the r = 2 positional pinned map at α = 2 had such a "root" with m = 0.358, M̂ < 0 and
    e_t = −Φ < 0)."""
    Z = jnp.concatenate([x.theta, x.M], axis=1)
    norms = jnp.linalg.norm(Z, axis=0)
    Z = Z[:, jnp.argsort(norms <= 1e-12 * (jnp.max(norms) + 1e-300), stable=True)]
    Qm, R = jnp.linalg.qr(Z, mode="complete")
    r = x.q.shape[0]
    n = min(r, Z.shape[1])
    diag = jnp.zeros(r).at[:n].set(jnp.diagonal(R)[:n])
    qrot = Qm.T @ x.q @ Qm
    scale = jnp.max(jnp.abs(Z)) + 1e-300
    signal_sign = jnp.sign(diag)
    if ref is not None:     # keep a sign flip of the signal visible (module docstring of canonical_gauge)
        qd = jnp.diagonal(Qm)
        signal_sign = jnp.where(jnp.abs(qd) > FLIP_VISIBLE, jnp.sign(qd), signal_sign)
    s0 = jnp.where(jnp.abs(diag[0]) > 1e-9 * scale, signal_sign[0], 1.0)
    if ref is None:
        free_sign = jnp.where(s0 * qrot[0] < 0, -1.0, 1.0)
    else:                   # align with ref: (OqOᵀ)_{0j}, (OVOᵀ)_{0j} of the same signs as ref's
        Vrot = Qm.T @ x.V @ Qm
        score = s0 * (qrot[0] * ref.q[0] + Vrot[0] * ref.V[0])
        free_sign = jnp.where(score < 0, -1.0, 1.0)
    s = jnp.where(jnp.abs(diag) > 1e-9 * scale, signal_sign, free_sign)
    s = s.at[0].set(s0)
    O = s[:, None] * Qm.T
    return OrderParams(O @ x.q @ O.T, O @ x.M, O @ x.theta, O @ x.V @ O.T)


def invariants(x: OrderParams) -> dict[str, np.ndarray]:
    """Gauge-invariant summaries (Q → QO): ``q = tr q``, ``m = ‖M‖_F``, ``theta = ‖θ‖_F``, ``V = tr V``, the
    eigenvalues of q and the singular values of θ (MODEL.md §8; the definitions ``simulate`` reports)."""
    q, M, th, V = (np.asarray(b) for b in x)
    return {"q": np.trace(q, axis1=-2, axis2=-1), "m": np.linalg.norm(M, axis=(-2, -1)),
            "theta": np.linalg.norm(th, axis=(-2, -1)), "V": np.trace(V, axis1=-2, axis2=-1),
            "q_eig": np.linalg.eigvalsh(q), "theta_sv": np.linalg.svd(th, compute_uv=False)}


def close_enough(a: OrderParams, b: OrderParams, rtol: float, sigma: float = 1.0) -> bool:
    """True if every block of ``a`` and ``b`` agrees to ``rtol`` relative (Frobenius); M and θ relative to
    ``‖·‖ + 1e-3 σ √tr q`` (both are bounded by that scale and may vanish)."""
    fa, fb = (np.asarray(flatten(v)) for v in (a, b))
    return bool(np.all(block_residual(fa, fb, _shapes_of(a), sigma) <= rtol))


def _shapes_of(x: OrderParams) -> OrderParams:
    return OrderParams(*(tuple(np.shape(b)[-2:]) for b in x))


def block_residual(x: np.ndarray, y: np.ndarray, blocks: OrderParams, sigma) -> np.ndarray:
    """Relative change per point between flattened states ``x`` and ``y`` (shape (..., n)): the max over
    blocks of ``‖y_b − x_b‖ / (max(‖x_b‖, ‖y_b‖) + floor_b)``, floors 1e-12 for q, V and
    ``1e-3 σ √tr q`` for M, θ."""
    x, y = np.asarray(x), np.asarray(y)
    sizes = [s[0] * s[1] for s in blocks]
    edges = np.cumsum([0] + sizes)
    r = blocks.q[0]
    trq = np.abs(np.trace(x[..., :r * r].reshape(x.shape[:-1] + (r, r)), axis1=-2, axis2=-1))
    floor_mt = 1e-3 * np.asarray(sigma) * np.sqrt(trq) + 1e-12
    out = np.zeros(x.shape[:-1])
    for i, name in enumerate(OrderParams._fields):
        a, b = x[..., edges[i]:edges[i + 1]], y[..., edges[i]:edges[i + 1]]
        if a.shape[-1] == 0:
            continue
        na, nb, nd = (np.linalg.norm(v, axis=-1) for v in (a, b, b - a))
        fl = floor_mt if name in ("M", "theta") else 1e-12
        out = np.maximum(out, nd / (np.maximum(na, nb) + fl))
    return out


def rotate(x, O: np.ndarray):
    """The gauge action ``Q → QOᵀ`` on a state or its hats (numpy; MODEL.md §8): ``q → OqOᵀ, M → OM, θ → Oθ,
    V → OVOᵀ`` and the same for ``q̂, M̂, θ̂, V̂`` (the free energy pairs each block with its hat, so both move
    alike). ``x``: :class:`OrderParams` or :class:`Hats` with blocks of shapes (..., r, ·); ``O`` (r, r)."""
    O = np.asarray(O)
    a, b, c, d = (np.asarray(v) for v in x)
    return type(x)(O @ a @ O.T, O @ b, O @ c, O @ d @ O.T)


GAUGE_RTOL = 1e-9
"""Singular values of ``[θ, M]_ref [θ, M]ᵀ`` below this fraction of the largest leave a direction unfixed by the
signal (:func:`gauge_rotation`)."""


def gauge_rotation(x: OrderParams, ref: OrderParams) -> np.ndarray:
    """The orthogonal ``O`` (r×r) that brings ``x`` closest to ``ref`` on its gauge orbit (``rotate(x, O)``;
    MODEL.md §8: the model is invariant under ``Q → QO``, rotations and reflections alike).

    The signal block ``Z = [θ, M]`` (r × (r*+k)) moves as ``Z → OZ``: on the directions it spans, O is the
    orthogonal Procrustes solution ``argmin ‖OZ − Z_ref‖_F`` (``U Wᵀ`` from the SVD of ``Z_ref Zᵀ``). Directions
    the signal does not fix (a pinned branch's signal-free ones, or all of them where Z = 0) are matched by the
    eigenvectors of q restricted to them (by increasing eigenvalue), each with the sign that makes its cross
    terms with the other directions (q and V entries) agree with ``ref``'s; where those vanish (a state even
    in that direction) the sign does not change the state. numpy, for reporting (not traced)."""
    x = OrderParams(*(np.asarray(b, float) for b in x))
    ref = OrderParams(*(np.asarray(b, float) for b in ref))
    r = x.q.shape[0]
    Z, Zr = np.concatenate([x.theta, x.M], axis=1), np.concatenate([ref.theta, ref.M], axis=1)
    U, s, Wt = np.linalg.svd(Zr @ Z.T)
    fixed = s > GAUGE_RTOL * max(s[0], 1e-300) if s[0] > 0 else np.zeros(r, bool)
    O = U[:, fixed] @ Wt[fixed]
    if fixed.all():
        return O
    A, B = Wt[~fixed].T, U[:, ~fixed]                      # free directions of x, and of ref
    _, Ea = np.linalg.eigh(A.T @ x.q @ A)
    _, Eb = np.linalg.eigh(B.T @ ref.q @ B)
    A, B = A @ Ea, B @ Eb
    for j in range(A.shape[1]):
        O = O + np.outer(B[:, j], A[:, j])
    y = rotate(x, O)
    for j in range(B.shape[1]):
        b = B[:, j]
        rest = np.eye(r) - np.outer(b, b)
        score = sum(float(b @ m @ rest @ mr @ b) for m, mr in ((y.q, ref.q), (y.V, ref.V)))
        if score < 0:
            O = (np.eye(r) - 2.0 * np.outer(b, b)) @ O
    return O


def teacher_frame(x: OrderParams) -> OrderParams:
    """A student of lower rank than the teacher (r < r*): the copy of ``x`` under a teacher rotation
    ``θ → θO`` (O ∈ O(r*); MODEL.md §8, T depends on h* only through h* h*ᵀ) whose θ lies in the first r
    teacher directions, ``θO = [Rᵀ, 0]`` with ``θᵀ = O R`` (QR), diagonal of R non-negative. The engine's map
    keeps θ there (``engine.teacher_pin``). Unchanged for r >= r*. numpy."""
    x = OrderParams(*(np.asarray(b, float) for b in x))
    r, rs = x.theta.shape
    if rs <= r:
        return x
    O, R = np.linalg.qr(x.theta.T, mode="complete")
    signs = np.ones(rs)
    signs[:r] = np.where(np.diagonal(R)[:r] < 0, -1.0, 1.0)
    th = x.theta @ (O * signs)
    th[:, r:] = 0.0                 # round-off of the rotation
    return x._replace(theta=th)


ALIGN_PASSES = 50
"""Most passes of :func:`align_scrambles` (each aligns every scramble to the current mean; it stops when the
rotations change by < 1e-14; a few passes in practice)."""


def align_scrambles(xs: OrderParams, hats: Hats | None = None) -> tuple[OrderParams, Hats | None]:
    """Put independent fixed points of the same point (one per scramble; blocks (S, r, ·)) into ONE gauge before
    they are averaged (MODEL.md §8: ``Q → QO`` maps fixed points to fixed points): each is rotated onto the
    first (:func:`gauge_rotation`), then all onto their mean until it stays put, so that a scramble that converged on a gauge copy
    (e.g. ``−M``, or a rotation) counts as the same point instead of pulling the mean towards 0. The common
    frame does not depend on the scrambles' own gauges: at r > 1 the mean is then put into
    :func:`canonical_gauge`'s frame (the set rotated alike; the map's output is in that frame already, so
    scrambles that agree are left as they were, up to the small rotation that fits each to the mean); at r = 1
    (the gauge is one sign) the frame is the majority's (a tie: the canonical one), so agreeing scrambles at
    r = 1 are left exactly as they were.
    ``hats`` move with their states. Gauge-invariant numbers (traces, norms, eigenvalues) are unchanged.
    Returns the aligned states and hats (numpy)."""
    S, r = xs.q.shape[0], xs.q.shape[-1]
    one = lambda t, i: type(t)(*(np.asarray(b[i], float) for b in t))  # noqa: E731
    stack = lambda ts: type(ts[0])(*(np.stack(b) for b in zip(*ts)))  # noqa: E731
    ref, Os = one(xs, 0), None
    for _ in range(ALIGN_PASSES):        # generalised Procrustes: align to the mean until the mean stays put
        new = [gauge_rotation(one(xs, i), ref) for i in range(S)]
        ref = OrderParams(*(b.mean(axis=0) for b in stack([rotate(one(xs, i), new[i]) for i in range(S)])))
        done = Os is not None and max(float(np.max(np.abs(a - b))) for a, b in zip(new, Os)) < 1e-14
        Os = new
        if done:
            break
    vote = float(np.sum([np.sign(O[0, 0]) for O in Os])) if r == 1 else 0.0
    frame = np.sign(vote) * np.eye(1) if vote else gauge_rotation(ref, canonical_frame(ref))
    Os = [frame @ O for O in Os]
    out_x = stack([rotate(one(xs, i), Os[i]) for i in range(S)])
    out_h = None if hats is None else stack([rotate(one(hats, i), Os[i]) for i in range(S)])
    return out_x, out_h


def canonical_frame(x: OrderParams) -> OrderParams:
    """numpy form of :func:`canonical_gauge` without ``ref`` (float64 whatever JAX's precision): ``O[θ, M]``
    upper triangular with a non-negative diagonal (vanishing columns moved behind), a direction the signal
    does not fix with ``(OqOᵀ)_{0j} >= 0``."""
    x = OrderParams(*(np.asarray(b, float) for b in x))
    Z = np.concatenate([x.theta, x.M], axis=1)
    norms = np.linalg.norm(Z, axis=0)
    Z = Z[:, np.argsort(norms <= 1e-12 * (np.max(norms, initial=0.0) + 1e-300), kind="stable")]
    Qm, R = np.linalg.qr(Z, mode="complete")
    r = x.q.shape[0]
    n = min(r, Z.shape[1])
    diag = np.zeros(r)
    diag[:n] = np.diagonal(R)[:n]
    scale = np.max(np.abs(Z), initial=0.0) + 1e-300
    fixed = np.abs(diag) > 1e-9 * scale
    qrot = Qm.T @ x.q @ Qm
    s0 = np.sign(diag[0]) if fixed[0] else 1.0
    s = np.where(fixed, np.sign(diag), np.where(s0 * qrot[0] < 0, -1.0, 1.0))
    s[0] = s0
    return rotate(x, s[:, None] * Qm.T)


COLLAPSE_TOL = 1e-3
"""A pinned branch's defining overlap (|m| positional, |θ| semantic) at or below ``COLLAPSE_TOL·σ√q`` has vanished:
the branch has collapsed onto the uninformative point (:func:`overlap_vanished`; the split rule's snap and
verdict, the continuation's point states)."""


def overlap_vanished(value: float, q: float, sigma: float) -> bool:
    """The collapse rule on one point's scalar overlap (m or θ) at q: ``|value| ≤ COLLAPSE_TOL·σ√q`` (NaN counts
    as vanished; q ≤ 0: the scale is 0). The QMC engine's evidence-based forms in :mod:`.collapse` (a failed
    iterate's fall, the noise response, q = 0) decide the same question where the overlap carries integration
    noise."""
    return not abs(value) > COLLAPSE_TOL * sigma * math.sqrt(max(q, 0.0))


def positive_definite(v, r: int, k: int, r_star: int) -> bool:
    """Whether the flat state ``v`` has positive-definite q and V (an admissible iterate of a fixed-point loop)."""
    x = unflatten(np.asarray(v), r, k, r_star)
    return bool(np.linalg.eigvalsh(np.asarray(x.q))[0] > 0 and np.linalg.eigvalsh(np.asarray(x.V))[0] > 0)
