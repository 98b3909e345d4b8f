"""Error control of the QMC engine (MODEL.md §8, :mod:`.resolution`): a converged point whose relative
standard errors exceed the target is continued on a larger, nested QMC size (:func:`refine`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from . import resolution
from .general_solution import GeneralSolution
from .job import Job
from .qmc_config import QMCConfig
from .scrambles import aligned_mean


def resolution_entry(sol: GeneralSolution) -> dict:
    rse = resolution.relative_errors(sol.values, sol.errors)
    name, worst = resolution.worst(rse)
    return {"points": sol.qmc.points, "scrambles": sol.qmc.scrambles, "status": sol.status.value,
            "iterations": sol.iterations, "max_steps": (sol.iteration or {}).get("max_steps"),
            "failed_scrambles": (sol.iteration or {}).get("failed_scrambles", []),
            "jump_scrambles": (sol.iteration or {}).get("jump_scrambles", []), "worst": name, "rse": worst}


def resume_damping(sol: GeneralSolution) -> float:
    """The damping every scramble of a converged point starts from at a larger QMC size: the largest its
    scrambles converged with (that damping is known to work on this map; a scramble that halved more did so on
    its way from a far start, and the continuation starts at the fixed point; the safeguard halves again where
    needed). Was the smallest: measured, free r = 2 at α = 1, 4096 × 4 → 16384 × 8 ran > 12 min at load ~5
    without finishing, every row crawling at the one scramble's 0.019 (docs/notes/2026-12-05-theory-general.md, "Rank 2 on the
    defaults")."""
    return float(max(sol.iteration.get("damping_scrambles") or [sol.iteration["damping_final"]]))


def refine(job: Job, sols: list, xs: np.ndarray, hist: tuple, cfg: QMCConfig, progress=None) -> list:
    """Error control (:mod:`.resolution`): continue every converged point whose worst relative standard error
    exceeds ``cfg.target`` on a larger, nested QMC size, from its converged per-scramble states (a new
    scramble starts from their mean), until the target is met or the caps stop it. Points needing the same
    size go through one batch. Each solution gets ``resolution``: the target, the sizes tried with their worst
    relative errors, ``met`` and ``capped``. Where a larger size does not converge (a scramble without a fixed
    point there), the point keeps its last converged size and values, ``met = False``, ``growth_failed`` the
    failed size's record (``sizes`` ends at the kept size); before, it was reported unconverged and its
    converged smaller size was lost (measured: free r = 2 at α = 1, 16384 × 8, docs/notes/2026-12-05-theory-general.md "Rank 2
    on the defaults"). Each ``sizes`` entry and ``growth_failed`` record the iteration budget (``max_steps``) and
    which scrambles failed or converged at a jump of their map. A larger iteration budget for the growth
    (2 × the previous size's iterations) was tried and removed: near the end of the positional branch at
    ω = 0.1 the failing scrambles wander on their rough maps for all 302 iterations too (16384 × 8 and
    65536 × 8, docs/notes/2026-12-05-theory-general.md "Near the positional fold (ω = 0.1)")."""
    B = len(sols)
    states = [xs[i] for i in range(B)]
    pairs = [([hist[0][i * xs.shape[1] + s] for s in range(xs.shape[1])],
              [hist[1][i * xs.shape[1] + s] for s in range(xs.shape[1])]) for i in range(B)]
    log = [[resolution_entry(s)] for s in sols]
    capped = [False] * B
    failed: list = [None] * B  # a larger size that did not converge (its record): the point keeps its last size

    def needs(i):
        return sols[i].status.ok and log[i][-1]["rse"] > cfg.target

    pending = [i for i in range(B) if needs(i)]
    while pending:
        groups: dict = {}
        for i in pending:
            new = sols[i].qmc.grown(log[i][-1]["rse"] / cfg.target)
            if new is None:
                capped[i] = True
            else:
                groups.setdefault(new, []).append(i)
        for new, pts in groups.items():
            S = new.scrambles
            if progress is not None:
                w = max((log[i][-1] for i in pts), key=lambda e: e["rse"])
                progress(resolution.Progress("grow", new.points, S, w["rse"], cfg.target, w["worst"], len(pts)))
            x0 = np.stack([np.concatenate([states[i],   # new scrambles start from the mean (in one gauge)
                                           np.repeat(aligned_mean(states[i], job.params), S - len(states[i]), 0)])
                           for i in pts])                                                  # (b, S, n)
            h = tuple([row for i in pts for row in (pairs[i][w] + [[]] * (S - len(states[i])))] for w in (0, 1))
            new_sols, new_xs, new_hist = job.run(
                np.asarray(pts), x0, new, (new.points,), h, coarse_x=x0.reshape(-1, x0.shape[-1]),
                damp=np.repeat([resume_damping(sols[i]) for i in pts], S))
            for j, i in enumerate(pts):
                if not new_sols[j].status.ok:   # keep the converged smaller size
                    failed[i] = resolution_entry(new_sols[j])
                    continue
                log[i].append(resolution_entry(new_sols[j]))
                sols[i], states[i] = new_sols[j], new_xs[j]
                pairs[i] = (new_hist[0][j * S:(j + 1) * S], new_hist[1][j * S:(j + 1) * S])
        pending = [i for i in pending if not capped[i] and failed[i] is None and needs(i)]
    return [replace(s, resolution={"target": cfg.target, "max_points": cfg.max_points,
                                   "max_scrambles": cfg.max_scrambles, "sizes": log[i],
                                   "met": resolution_entry(s)["rse"] <= cfg.target and s.status.ok,
                                   "capped": capped[i], "growth_failed": failed[i]})   # sizes[-1]: the kept size
            for i, s in enumerate(sols)]
