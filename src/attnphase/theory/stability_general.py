"""Stability of a converged pinned branch point of the general engine against its pinned direction (MODEL.md
§7, §8; issue 11 item 4, helper hA).

A pinned branch is computed on an invariant subspace of the full map (MODEL.md §8): the positional branch on
θ = 0 (invariant under ``y → −y``, which flips θ only), the semantic one on M = 0 (invariant under
``(ξ, y) → −(ξ, y)``, which flips M only at fixed q, θ, V). At a point of such a subspace the pinned block is
the whole odd sector of its reflection, so the Jacobian of the FREE (unpinned) map is block diagonal: the pinned
block ``J_pp`` (θ entries r×r* on the positional branch, M entries r×k on the semantic one) does not mix with
the rest at linear order, and its eigenvalues are the growth factors of a small pinned overlap under one
undamped application of the free map. The branch point is a saddle of the free problem when the leading
eigenvalue — the largest real part — exceeds +1 (MODEL.md §7: a new fixed point branches off where it crosses
+1; an eigenvalue below −1 only makes the plain iteration oscillate, damping cures it, so the spectral radius is
NOT the criterion: the split rule's semantic growth at ω = 0.3, α = 2 is −2.5 on a stable branch).

Estimate, per scramble s, on the scramble's own QMC points and at its own converged state x_s (one value per
scramble, mean ± standard error over them): ``J_pp[:, j] = (F_p(x_s + δE_j) − F_p(x_s − δE_j)) / 2δ`` with
the free map F (global multi-start prox, no pin, no reflection ansatz, no gauge fixing: the map is then
equivariant under ``Q → QO``, J_pp moves by a similarity and its eigenvalues are gauge invariants) and
``δ = eps·√(tr q / r)`` (:data:`STABILITY_EPS`; the split rule's step has the same form). The central difference
cancels the pinned output that a QMC point set without the reflection symmetry leaves at δ = 0, and (the free
map is odd in the pinned block on a symmetric set) is exact to O(δ²). The gauge's zero modes
(``q, θ, V → [G, ·]``) have no pinned component on either branch (Gθ = 0 on θ = 0, GM = 0 on M = 0), so they do
not enter J_pp. All perturbed states of all points and scrambles go through one vmapped map call (chunked
for memory).
"""

from __future__ import annotations

import math
from enum import Enum
from typing import TYPE_CHECKING, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError, check_range
from . import channel_general as CG
from .state import shapes

if TYPE_CHECKING:                # engine imports this module inside solve_batch (no import cycle at load time)
    from .engine import GeneralSolution

STABILITY_EPS = 0.1
"""Relative step of the central difference (``δ = eps·√(tr q / r)``). The discretised map is piecewise smooth:
a sample whose global minimiser switches basin between x − δE and x + δE adds a jump, and only such samples
carry the motion of the switching set, which the true map's derivative contains (the split rule integrates it
exactly). Too small a δ sees few of them on a QMC set: a noisy factor, or one that misses that part altogether
(a bias the scrambles' spread does not show); too large a δ adds the O(δ²) curvature. Measured at 4096 × 4
points (docs/notes/2026-12-05-theory-general.md, "Stability of pinned branches in the engine"), eps = 0.01, 0.03, 0.1, 0.2:
L = 2 positional, ω = 0.3, α = 2 (split rule 0.475): 0.442, 0.442, 0.460, — (± 0.009; at 16384 × 4: 0.477 ±
0.011, 0.483 ± 0.008, 0.493 ± 0.005 for 0.01, 0.03, 0.1); the M block at the uninformative point, ω = 0.3,
α = 1 (split 2.29): 3.07 ± 0.41, 2.40 ± 0.35, 2.23 ± 0.13, 2.13 ± 0.04; semantic α = 1 (split −0.13): −0.27 ±
0.02, −0.09 ± 0.04, −0.135 ± 0.044, −0.15 ± 0.03; the θ block at the uninformative point, α = 2 (split 1.705):
1.654 ± 0.060, 1.677 ± 0.056, 1.662 ± 0.024, 1.484 ± 0.008 (0.2: the curvature shows)."""
STABLE_K = 3.0
"""A growth factor counts as decided when it is more than this many standard errors (over the scrambles) from
+1 (:func:`verdict`)."""
SHRINK = (1.0, 0.1, 0.01)
"""Step factors tried in turn for a scramble whose perturbed states the map rejects (q, V or D = λ + σ²V̂ not
positive definite, or not finite), as the split rule's ``solver._growth``; after the last, NaN."""
PINNED_BLOCKS = {"semantic": ("M",), "positional": ("theta",), "uninformative": ("M", "theta")}
"""The pinned blocks of each branch (MODEL.md §8); ``free`` has none."""


class Stability(str, Enum):
    """Verdict on a pinned branch point (:func:`verdict`)."""

    STABLE = "stable"          # growth below +1 by more than STABLE_K s.e.: a minimum along the pinned block
    UNSTABLE = "unstable"      # above +1 by more than STABLE_K s.e.: a saddle of the free problem
    UNDECIDED = "undecided"    # within STABLE_K s.e. of +1 (near a spinodal, or too few scrambles)
    UNKNOWN = "unknown"        # no number: not converged, or the finite difference failed

    @property
    def stable(self) -> bool | None:
        """True, False, or None where undecided or unknown (the JSON key ``stable``)."""
        return {Stability.STABLE: True, Stability.UNSTABLE: False}.get(self)


def pinned_blocks(branch: str) -> tuple[str, ...]:
    """Names of the pinned blocks (``"M"``, ``"theta"``) of a pinned branch; ParameterError for ``free`` (no
    pinned direction: nothing to test) or an unknown name."""
    if branch not in PINNED_BLOCKS:
        raise ParameterError("branch", "a pinned branch (semantic, positional or uninformative): the free "
                             "branch has no pinned direction", branch)
    return PINNED_BLOCKS[branch]


def block_slice(name: str, r: int, k: int, rs: int) -> slice:
    """Position of block ``name`` in the flattened state (:func:`state.flatten` order q, M, θ, V)."""
    sizes = {f: a * b for f, (a, b) in zip(shapes(r, k, rs)._fields, shapes(r, k, rs))}
    start = 0
    for f in ("q", "M", "theta", "V"):
        if f == name:
            return slice(start, start + sizes[f])
        start += sizes[f]
    raise ParameterError("block", "q, M, theta or V", name)


def step(xs: np.ndarray, r: int, eps: float) -> np.ndarray:
    """The finite-difference step per scramble, ``eps·√(tr q / r)`` (xs: flattened states (S, n))."""
    trq = np.trace(xs[:, :r * r].reshape(-1, r, r), axis1=1, axis2=2)
    return eps * np.sqrt(np.maximum(trq / r, 1e-24))


def perturbed(xs: np.ndarray, sl: slice, delta: np.ndarray) -> np.ndarray:
    """States ``x_s ± δ_s E_j`` for every entry j of the block at ``sl``: shape (S, 2, nb, n), [:, 0] the plus
    side."""
    S, n = xs.shape
    nb = sl.stop - sl.start
    E = np.zeros((nb, n))
    E[np.arange(nb), np.arange(sl.start, sl.stop)] = 1.0
    d = delta[:, None, None, None] * np.array([1.0, -1.0])[None, :, None, None] * E[None, None]
    return xs[:, None, None, :] + d


def jacobian(f: np.ndarray, sl: slice, delta: np.ndarray) -> np.ndarray:
    """J_pp per scramble (S, nb, nb), column j = (F_p(x + δE_j) − F_p(x − δE_j)) / 2δ, from the map values
    ``f`` (S, 2, nb, n) at :func:`perturbed`'s states."""
    fp = f[..., sl]                                             # (S, 2, nb_in, nb_out)
    return np.swapaxes(fp[:, 0] - fp[:, 1], 1, 2) / (2.0 * delta[:, None, None])


def leading(J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per scramble: the leading eigenvalue's real part (the growth factor, MODEL.md §7) and the spectral
    radius; NaN where J is not finite."""
    ok = np.all(np.isfinite(J), axis=(1, 2))
    ev = np.linalg.eigvals(np.where(ok[:, None, None], J, 0.0))
    g = np.where(ok, ev.real.max(axis=1), np.nan)
    rad = np.where(ok, np.abs(ev).max(axis=1), np.nan)
    return g, rad


def verdict(growth: float, err: float, k_se: float = STABLE_K) -> tuple[Stability, str | None]:
    """The verdict on a growth factor ``growth`` ± ``err`` and its reason (None when decided)."""
    if not (math.isfinite(growth) and math.isfinite(err)):
        return Stability.UNKNOWN, "the growth factor is not finite (finite difference failed)"
    if growth + k_se * err < 1.0:
        return Stability.STABLE, None
    if growth - k_se * err > 1.0:
        return Stability.UNSTABLE, None
    return Stability.UNDECIDED, (f"growth {growth:.3g} is within {k_se:g} s.e. ({err:.2g}) of +1")


def unknown(reason: str, k_se: float = STABLE_K, eps: float = STABILITY_EPS) -> dict:
    """The record of a point without a growth factor (never a silent NaN: ``reason`` says why)."""
    nan = float("nan")
    return {"growth": nan, "growth_err": nan, "spectral_radius": nan, "spectral_radius_err": nan,
            "stable": None, "verdict": Stability.UNKNOWN.value, "reason": reason, "k": k_se, "eps": eps,
            "blocks": {}, "per_scramble": [], "delta": [], "evaluations": 0}


def _mean_se(v: np.ndarray) -> tuple[float, float]:
    v = np.asarray(v, float)
    if v.size < 2 or not np.all(np.isfinite(v)):
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


def _evaluate(sol_rows: list, X: np.ndarray, scr: np.ndarray, params, cfg,
              h_prev: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The free map (engine._compiled_map: no pin, no ansatz, no gauge fixing) at rows X (R, n), row i at point
    ``sol_rows[i]``'s knobs on scramble ``scr[i]`` of the QMC size ``cfg``; the global multi-start prox, or with
    ``h_prev`` (R, N, 2, L, r) the warm one from those minimisers (:func:`prox_general.prox_warm`). Chunked so
    that rows × points ≤ engine.MAX_SAMPLES. Returns (F (R, n), valid (R,), minimisers (R, N, 2, L, r))."""
    knobs = np.array([[s.alpha, s.params.omega, s.params.sigma, s.params.lam] for s in sol_rows])   # (R, 4)
    return free_map(knobs, X, scr, params, cfg, h_prev)


def free_map(knobs: np.ndarray, X: np.ndarray, scr: np.ndarray, params, cfg,
             h_prev: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_evaluate` with the rows' knobs given directly: ``knobs`` (R, 4) = (α, ω, σ, λ) per row."""
    from .engine import MAX_SAMPLES, _compiled_map, _points, bucket
    L, r, rs, k = params.L, params.r, params.r_star, params.k
    warm = h_prev is not None
    fmap = _compiled_map(L, r, rs, k, params.A, params.P, "free", warm, False, False)
    xi, y = (jnp.asarray(a) for a in _points(params, cfg))
    N = cfg.points
    chunk = max(1, MAX_SAMPLES // N)
    R = len(X)
    out_f, out_ok, out_h = np.empty_like(X), np.empty(R, bool), np.empty((R, N, 2, L, r))
    for lo in range(0, R, chunk):
        idx = np.arange(lo, min(R, lo + chunk))
        m = len(idx)
        P_ = bucket(m, chunk) if m < chunk else m     # few distinct shapes (each is one compilation)
        pad = np.concatenate([idx, np.full(P_ - m, idx[-1])])
        kn = CG.Knobs(*(jnp.asarray(knobs[pad, j]) for j in range(4)))
        fx, ok, _, h = fmap(jnp.asarray(X[pad]), kn, jnp.asarray(scr[pad]), xi, y,
                            jnp.asarray(h_prev[pad]) if warm else None)
        out_f[idx], out_ok[idx], out_h[idx] = np.asarray(fx)[:m], np.asarray(ok)[:m], np.asarray(h)[:m]
    return out_f, out_ok, out_h


def _group_growth(sols: list, eps: float, k_se: float, prox: str) -> list[dict]:
    """Growth records of converged pinned points sharing structure, branch and QMC size (one map call per step
    factor of :data:`SHRINK`, and with ``prox="warm"`` one global-prox call at the unperturbed states first)."""
    p0, cfg = sols[0].params, sols[0].qmc
    r, k, rs, S = p0.r, p0.k, p0.r_star, cfg.scrambles
    names = pinned_blocks(sols[0].branch)
    xs = [np.asarray(s.scramble_x, float) for s in sols]
    base = [step(x, r, eps) for x in xs]
    J = {nm: [np.full((S,) + (block_slice(nm, r, k, rs).stop - block_slice(nm, r, k, rs).start,) * 2, np.nan)
              for _ in sols] for nm in names}
    used = [np.full(S, np.nan) for _ in sols]
    todo = [np.ones(S, bool) for _ in sols]
    evals = 0
    h_base = None
    if prox == "warm":      # the minimisers (best, runner-up) at each scramble's fixed point, global prox
        pairs = [(i, sc) for i in range(len(sols)) for sc in range(S)]
        _, _, hb = _evaluate([sols[i] for i, _ in pairs], np.stack([xs[i][sc] for i, sc in pairs]),
                             np.array([sc for _, sc in pairs]), p0, cfg)
        h_base = {pair: hb[j] for j, pair in enumerate(pairs)}
        evals += len(pairs)
    for factor in SHRINK:
        rows, X, scr, where = [], [], [], []
        for i, s in enumerate(sols):
            for sc in np.nonzero(todo[i])[0]:
                for nm in names:
                    sl = block_slice(nm, r, k, rs)
                    Y = perturbed(xs[i][sc:sc + 1], sl, base[i][sc:sc + 1] * factor)[0]    # (2, nb, n)
                    X.append(Y.reshape(-1, Y.shape[-1]))
                    rows += [s] * len(X[-1])
                    scr.append(np.full(len(X[-1]), sc))
                    where.append((i, sc, nm, Y.shape))
        if not rows:
            break
        hp = None if h_base is None else np.stack([h_base[(i, sc)] for (i, sc, _, shp) in where
                                                   for _ in range(shp[0] * shp[1])])
        F, ok, _ = _evaluate(rows, np.concatenate(X), np.concatenate(scr), p0, cfg, hp)
        evals += len(F)
        pos = 0
        good = {}
        for (i, sc, nm, shp), chunk in zip(where, X):
            n_rows = len(chunk)
            f, v = F[pos:pos + n_rows], ok[pos:pos + n_rows]
            pos += n_rows
            d = np.array([base[i][sc] * factor])
            Jb = jacobian(f.reshape((1,) + shp), block_slice(nm, r, k, rs), d)[0]
            fine = bool(v.all() and np.all(np.isfinite(Jb)))
            good[(i, sc)] = good.get((i, sc), True) and fine
            if fine:
                J[nm][i][sc] = Jb
        for (i, sc), fine in good.items():
            if fine:
                todo[i][sc] = False
                used[i][sc] = base[i][sc] * factor
    out = []
    for i, s in enumerate(sols):
        per_block = {nm: leading(J[nm][i]) for nm in names}
        g = np.max(np.stack([per_block[nm][0] for nm in names]), axis=0)
        rad = np.max(np.stack([per_block[nm][1] for nm in names]), axis=0)
        growth, err = _mean_se(g)
        radius, radius_err = _mean_se(rad)
        v, reason = verdict(growth, err, k_se)
        if todo[i].any():
            reason = (f"the map rejected the perturbed states of scrambles {np.nonzero(todo[i])[0].tolist()} at "
                      f"every step ({', '.join(f'{f:g}' for f in SHRINK)} × δ)")
        out.append({"growth": growth, "growth_err": err, "spectral_radius": radius, "spectral_radius_err": radius_err,
                    "stable": v.stable, "verdict": v.value, "reason": reason, "k": k_se, "eps": eps, "prox": prox,
                    "blocks": {nm: dict(zip(("growth", "growth_err"), _mean_se(per_block[nm][0]))) for nm in names},
                    "per_scramble": [float(a) for a in g], "delta": [float(a) for a in used[i]],
                    "evaluations": int(evals // len(sols)),
                    "eigenvalues": [np.linalg.eigvals(np.nanmean(J[nm][i], axis=0)).tolist()
                                    if np.all(np.isfinite(J[nm][i])) else [] for nm in names]})
    return out


def pinned_growth(sols: Sequence["GeneralSolution"], eps: float = STABILITY_EPS,
                  k_se: float = STABLE_K, prox: str = "warm") -> list[dict]:
    """The growth factor record of each solution (module docstring). A solution on a pinned branch that is not
    CONVERGED gets :func:`unknown` with its status as the reason (no fixed point to linearise at); the free
    branch raises ParameterError (:func:`pinned_blocks`: it has no pinned direction; ``solve_batch`` records
    None there instead). Points are batched by (structure, branch, QMC size): one vmapped map call per group.

    Record keys: ``growth`` (mean over scrambles of the leading eigenvalue's real part of J_pp; the max over
    both blocks on the uninformative branch), ``growth_err`` (its standard error), ``spectral_radius`` (±
    ``_err``, for information), ``stable`` (True/False/None), ``verdict`` (:class:`Stability`), ``reason``
    (why undecided or unknown, else None), ``k``, ``eps``, ``delta`` (absolute step per scramble),
    ``per_scramble``, ``blocks`` (per pinned block), ``eigenvalues`` (of the mean J_pp per block),
    ``evaluations`` (map evaluations per point), ``prox``.

    ``prox``: "warm" (default) — one global multi-start prox at each scramble's fixed point, then the perturbed
    states with the warm prox from its minimiser and runner-up (:func:`prox_general.prox_warm`: the lower of the
    two basins, so a switch between them within ±δ is kept; a third basin taking over within ±δ is not);
    "full" — the global prox at every perturbed state (2·nb of them per scramble)."""
    check_range("eps", eps, lo=0.0, lo_open=True)
    if prox not in ("warm", "full"):
        raise ParameterError("prox", "warm or full", prox)
    check_range("k_se", k_se, lo=0.0)
    out: list = [None] * len(sols)
    groups: dict = {}
    for i, s in enumerate(sols):
        pinned_blocks(s.branch)
        if not s.converged:
            out[i] = unknown(f"no converged fixed point (status {s.status.value})", k_se, eps)
        elif s.scramble_x is None:
            out[i] = unknown("the per-scramble states were not kept", k_se, eps)
        else:
            p = s.params
            key = (p.L, p.r, p.r_star, p.k, p.A, p.P, s.branch, s.qmc.points, s.qmc.scrambles, s.qmc.seed)
            groups.setdefault(key, []).append(i)
    with jax.enable_x64(True):
        for idx in groups.values():
            for i, rec in zip(idx, _group_growth([sols[i] for i in idx], eps, k_se, prox)):
                out[i] = rec
    return out
