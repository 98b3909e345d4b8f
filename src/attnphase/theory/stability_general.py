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
from dataclasses import replace
from typing import Sequence

import jax
import numpy as np

from ..errors import ParameterError, check_range
from .general_solution import GeneralSolution
from .growth import (PINNED_BLOCKS, SHRINK, STABILITY_EPS, STABLE_K, Stability, block_slice, jacobian, leading,
                     perturbed, pinned_blocks, step, unknown, verdict)
from .qmc_map import free_map_at

__all__ = ["pinned_growth", "with_stability", "PINNED_BLOCKS", "SHRINK", "STABILITY_EPS", "STABLE_K", "Stability",
           "block_slice", "jacobian", "leading", "perturbed", "pinned_blocks", "step", "unknown", "verdict"]


def _mean_se(v: np.ndarray) -> tuple[float, float]:
    v = np.asarray(v, float)
    if v.size < 2 or not np.all(np.isfinite(v)):
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


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
        _, _, hb = free_map_at([sols[i] for i, _ in pairs], np.stack([xs[i][sc] for i, sc in pairs]),
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
        F, ok, _ = free_map_at(rows, np.concatenate(X), np.concatenate(scr), p0, cfg, hp)
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


def with_stability(sols: Sequence[GeneralSolution]) -> list[GeneralSolution]:
    """The solutions of a pinned branch with their ``stability`` record (:func:`pinned_growth`): the verdict that
    :func:`.engine.solve_batch` runs after the solve (``stability=True``)."""
    return [replace(s, stability=rec) for s, rec in zip(sols, pinned_growth(sols))]
