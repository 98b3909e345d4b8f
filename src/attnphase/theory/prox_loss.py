"""The Moreau problem of MODEL.md §6 for L = 2, r = 1 and its modified-Newton step, shared by the numpy solver
(:mod:`.prox`) and the compiled one (:mod:`.newton_xla`): ℓ(h, h*), its derivatives, the objective, the step.
"""

from __future__ import annotations

import numpy as np


def sigmoid(z, xp=np):
    """σ(z) = 1/(1 + e^{−z}), written with tanh (no overflow)."""
    return 0.5 * (1.0 + xp.tanh(0.5 * z))


def teacher_diag(hs1, hs2, omega, A):
    """(t1, t2) = diagonal of T(h*) = (1-ω) softmax(h* h*ᵀ) + ω A for L = 2, r* = 1."""
    c = hs1 * (hs1 - hs2)
    e = hs2 * (hs2 - hs1)
    t1 = (1.0 - omega) * sigmoid(c) + omega * A[0, 0]
    t2 = (1.0 - omega) * sigmoid(e) + omega * A[1, 1]
    return t1, t2


def loss(h1, h2, t1, t2, sigma2, xp=np):
    """ℓ(h, h*) for L = 2, r = 1; ``xp``: the array module (numpy, or jax.numpy inside the compiled kernel)."""
    a = h1 * (h1 - h2)
    b = h2 * (h2 - h1)
    return sigma2 * ((t1 - sigmoid(a, xp)) ** 2 + (t2 - sigmoid(b, xp)) ** 2)


def objective(h1, h2, w1, w2, t1, t2, V, sigma2, xp=np):
    return ((h1 - w1) ** 2 + (h2 - w2) ** 2) / (2.0 * V) + loss(h1, h2, t1, t2, sigma2, xp)


def loss_derivs(h1, h2, t1, t2, sigma2, xp=np):
    """ℓ, ∇ℓ (2 arrays) and ∇²ℓ (3 arrays: H11, H12, H22); ``xp`` as in :func:`loss`."""
    a = h1 * (h1 - h2)
    b = h2 * (h2 - h1)
    sa, sb = sigmoid(a, xp), sigmoid(b, xp)
    da, db = sa * (1 - sa), sb * (1 - sb)
    dda, ddb = da * (1 - 2 * sa), db * (1 - 2 * sb)
    ra, rb = t1 - sa, t2 - sb
    a1, a2 = 2 * h1 - h2, -h1
    b1, b2 = -h2, 2 * h2 - h1
    l = sigma2 * (ra ** 2 + rb ** 2)
    ca, cb = -2 * sigma2 * ra * da, -2 * sigma2 * rb * db
    g1 = ca * a1 + cb * b1
    g2 = ca * a2 + cb * b2
    qa = 2 * sigma2 * (da ** 2 - ra * dda)
    qb = 2 * sigma2 * (db ** 2 - rb * ddb)
    # ∇²a = [[2,-1],[-1,0]], ∇²b = [[0,-1],[-1,2]]
    H11 = qa * a1 * a1 + qb * b1 * b1 + ca * 2.0
    H12 = qa * a1 * a2 + qb * b1 * b2 - ca - cb
    H22 = qa * a2 * a2 + qb * b2 * b2 + cb * 2.0
    return l, (g1, g2), (H11, H12, H22)


STEPS = np.array([1.0, 0.5, 0.25, 0.1, 0.03, 0.0])
"""The backtracking line search's step lengths (the first that lowers F wins; 0: stay)."""


def newton_step(a1, a2, w1, w2, t1, t2, iv, sigma2, xp=np):
    """One modified-Newton direction for F = |h − ω|²/(2V) + ℓ (``iv`` = 1/V): the Hessian shifted so that its
    smallest eigenvalue is at least 0.1/V, the step capped at length 2. Returns (F, |∇F|, d1, d2, |d| before
    the cap); ``xp`` as in :func:`loss` (shared by :func:`_newton_flat` and the compiled kernel)."""
    l, (g1, g2), (H11, H12, H22) = loss_derivs(a1, a2, t1, t2, sigma2, xp)
    G1 = (a1 - w1) * iv + g1
    G2 = (a2 - w2) * iv + g2
    gn = xp.sqrt(G1 * G1 + G2 * G2)
    A11, A22 = H11 + iv, H22 + iv
    tr = 0.5 * (A11 + A22)
    disc = xp.sqrt(0.25 * (A11 - A22) ** 2 + H12 ** 2)
    shift = xp.maximum(0.0, 0.1 * iv - (tr - disc))
    B11, B22 = A11 + shift, A22 + shift
    det = B11 * B22 - H12 * H12
    d1 = -(B22 * G1 - H12 * G2) / det
    d2 = -(-H12 * G1 + B11 * G2) / det
    dn = xp.sqrt(d1 * d1 + d2 * d2)
    cap = xp.minimum(1.0, 2.0 / xp.maximum(dn, 1e-300))
    F0 = ((a1 - w1) ** 2 + (a2 - w2) ** 2) * (0.5 * iv) + l
    return F0, gn, d1 * cap, d2 * cap, dn
