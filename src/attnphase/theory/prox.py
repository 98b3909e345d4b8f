"""Batched GLOBAL minimiser of the Moreau problem of MODEL.md §6 for L = 2, r = 1 (numpy, float64).

Objective per node:  F(h) = |h - ω|² / (2V) + ℓ(h, h*),  h ∈ R².
For L = 2, r = 1 the student attention has rows (σ(a), 1-σ(a)) and (1-σ(b), σ(b)) with
a = h1 (h1 - h2), b = h2 (h2 - h1), so with t1 = T11(h*), t2 = T22(h*)
    ℓ = (σ²/2) ‖T - S‖_F² = σ² [ (t1 - σ(a))² + (t2 - σ(b))² ].
The problem is non-convex (MODEL.md §7); we use a multi-start safeguarded Newton method: starts at ω, -ω,
the exchanged ω, the best point of a coarse grid around ω (radius 2σ√V bounds |ĥ - ω| because ℓ <= 2σ²),
and an optional warm start; each start runs modified Newton (Hessian shifted to be positive definite)
with a vectorised backtracking line search; the lowest final value wins.
Derivatives of ĥ follow from the implicit function theorem: ∂ĥ/∂ω = (I + V ∇²ℓ)^{-1}.
The Newton iteration runs in numpy (``_newton_flat``, the reference) or, for batches up to ``XLA_MAX_BATCH``,
as one compiled loop (:mod:`.newton_xla`, the same algorithm): :func:`newton_kernel` chooses.
"""

from __future__ import annotations

import numpy as np

from .kernel_choice import KernelChoice
from .prox_loss import STEPS, loss, loss_derivs, newton_step, objective, sigmoid, teacher_diag

__all__ = ["prox", "newton", "newton_kernel", "active_kernel", "dh_domega", "loss", "loss_derivs", "objective",
           "newton_step", "teacher_diag", "sigmoid", "STEPS"]


def _newton_flat(h1, h2, w1, w2, t1, t2, V, sigma2, iters, gtol):
    """Safeguarded Newton on flat arrays, iterating only on the still-active elements (the working arrays are
    compacted when elements finish, and finished elements are written back once)."""
    iv = 1.0 / V
    h1, h2 = h1.copy(), h2.copy()
    idx = np.arange(h1.size)
    a1, a2, W1, W2, T1, T2 = h1.copy(), h2.copy(), w1, w2, t1, t2
    for _ in range(iters):
        if idx.size == 0:
            break
        F0, gn, d1, d2, dn = newton_step(a1, a2, W1, W2, T1, T2, iv, sigma2)
        # backtracking: the full step for all, shorter ones only for the elements that still need one
        bt = np.zeros_like(a1)
        sub = np.arange(a1.size)
        for s in STEPS[:-1]:
            Fs = objective(a1[sub] + s * d1[sub], a2[sub] + s * d2[sub], W1[sub], W2[sub], T1[sub], T2[sub], V,
                           sigma2)
            ok = Fs < F0[sub]
            bt[sub[ok]] = s
            sub = sub[~ok]
            if sub.size == 0:
                break
        a1 = a1 + bt * d1
        a2 = a2 + bt * d2
        keep = (gn >= gtol) & (bt > 0) & (dn > 1e-15)
        if not keep.all():
            done = ~keep
            h1[idx[done]], h2[idx[done]] = a1[done], a2[done]
            idx, a1, a2, W1, W2, T1, T2 = (v[keep] for v in (idx, a1, a2, W1, W2, T1, T2))
    h1[idx], h2[idx] = a1, a2
    return h1, h2


NEWTON_KERNELS = ("xla", "numpy")
XLA_MAX_BATCH = 4096
"""Batches up to this size go to the compiled kernel (its gain is the numpy version's per-operation overhead,
which dominates small batches); larger ones stay with numpy, which compacts finished elements away."""
_NEWTON = KernelChoice("newton kernel", "ATTNPHASE_NEWTON", NEWTON_KERNELS)


def newton_kernel(name: str):
    """Context manager: run the Newton solves inside the block with kernel ``name``: ``"xla"`` (default, the
    compiled loop of :mod:`.newton_xla`) or ``"numpy"`` (the reference implementation below; the same
    algorithm). The default of a process comes from the environment variable ``ATTNPHASE_NEWTON``."""
    return _NEWTON.use(name)


def active_kernel() -> str:
    """The Newton kernel in use (``"xla"`` or ``"numpy"``); an unknown ``ATTNPHASE_NEWTON`` is an error."""
    return _NEWTON.active()


def newton(h1, h2, w1, w2, t1, t2, V, sigma2, iters, gtol):
    """Safeguarded Newton from (h1, h2) (arrays of a common shape). Returns h1, h2, F, |∇F|."""
    shape = np.shape(h1)
    bw = lambda a: np.broadcast_to(a, shape).ravel()  # noqa: E731
    if active_kernel() == "xla" and np.prod(shape) <= XLA_MAX_BATCH:
        from . import newton_xla
        out = newton_xla.newton(bw(h1), bw(h2), bw(w1), bw(w2), bw(t1), bw(t2), V, sigma2, iters, gtol)
        return tuple(o.reshape(shape) for o in out)
    f1, f2 = _newton_flat(bw(h1), bw(h2), bw(w1), bw(w2), bw(t1), bw(t2), V, sigma2, iters, gtol)
    h1, h2 = f1.reshape(shape), f2.reshape(shape)
    F = objective(h1, h2, w1, w2, t1, t2, V, sigma2)
    _, (g1, g2), _ = loss_derivs(h1, h2, t1, t2, sigma2)
    G1 = (h1 - w1) / V + g1
    G2 = (h2 - w2) / V + g2
    return h1, h2, F, np.sqrt(G1 * G1 + G2 * G2)


def prox(w1, w2, t1, t2, V, sigma2, *, warm=None, grid: int = 9, iters: int = 40, gtol: float = 1e-11,
         global_search: bool = True):
    """Global minimiser ĥ = argmin_h |h-ω|²/(2V) + ℓ(h, h*) for arrays ω = (w1, w2), t = (t1, t2).

    Returns ``(h1, h2, M, gradnorm)``; M is the minimal value (the Moreau envelope).
    ``warm``: optional ``(h1, h2)`` from a previous call used as an extra start.
    ``global_search=False`` (with ``warm``): Newton from the warm start only — a LOCAL minimiser in the
    previous call's basin, not certified global; the caller must confirm with a full search
    (see ``split_integrator.iterate_split``). Without ``warm`` the full multi-start runs regardless.
    """
    w1 = np.asarray(w1, dtype=np.float64)
    w2 = np.asarray(w2, dtype=np.float64)
    t1 = np.broadcast_to(np.asarray(t1, dtype=np.float64), w1.shape)
    t2 = np.broadcast_to(np.asarray(t2, dtype=np.float64), w1.shape)
    if not global_search and warm is not None:
        return newton(np.asarray(warm[0], dtype=np.float64), np.asarray(warm[1], dtype=np.float64), w1, w2, t1, t2,
                      V, sigma2, iters, gtol)
    starts1 = [w1, -w1, w2]
    starts2 = [w2, -w2, w1]
    if grid and grid > 1:
        R = 2.0 * np.sqrt(sigma2 * V)
        o = np.linspace(-R, R, grid)
        ox, oy = np.meshgrid(o, o, indexing="ij")
        ox, oy = ox.ravel(), oy.ravel()
        keep = ox ** 2 + oy ** 2 <= R * R * 1.0001
        ox, oy = ox[keep], oy[keep]
        # loss on grid points around ω (quadratic term is the same for all nodes)
        G1 = w1[..., None] + ox
        G2 = w2[..., None] + oy
        Fg = (ox ** 2 + oy ** 2) / (2 * V) + loss(G1, G2, t1[..., None], t2[..., None], sigma2)
        j = np.argmin(Fg, axis=-1)
        starts1.append(np.take_along_axis(G1, j[..., None], -1)[..., 0])
        starts2.append(np.take_along_axis(G2, j[..., None], -1)[..., 0])
    if warm is not None:
        starts1.append(np.asarray(warm[0], dtype=np.float64))
        starts2.append(np.asarray(warm[1], dtype=np.float64))
    H1 = np.stack(starts1)
    H2 = np.stack(starts2)
    h1, h2, F, gn = newton(H1, H2, w1, w2, t1, t2, V, sigma2, iters, gtol)
    k = np.argmin(F, axis=0)[None]
    pick = lambda a: np.take_along_axis(a, k, 0)[0]  # noqa: E731
    return pick(h1), pick(h2), pick(F), pick(gn)


def dh_domega(h1, h2, t1, t2, V, sigma2):
    """Jacobian ∂ĥ/∂ω = (I + V ∇²ℓ(ĥ))^{-1} (implicit function theorem); returns (J11, J12, J21, J22)."""
    _, _, (H11, H12, H22) = loss_derivs(h1, h2, t1, t2, sigma2)
    B11, B12, B22 = 1 + V * H11, V * H12, 1 + V * H22
    det = B11 * B22 - B12 * B12
    return B22 / det, -B12 / det, -B12 / det, B11 / det
