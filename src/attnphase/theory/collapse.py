"""A failed solve on a pinned branch whose defining overlap vanished: the branch collapsed (MODEL.md §8; the
split rule's continuation calls the same thing ``collapsed``, MODEL.md §6 "Branches").

Where a pinned branch has no fixed point (semantic at σ = 0.3 or λ = 0.1, ω = 0.3, α = 2; positional at
σ = 0.7), the pinned iteration falls onto the uninformative point — θ (resp. M), and on the semantic branch q
too, shrink to ~0 — and there it either converges to an integration artefact (``not_significant``) or steps out
of the valid set (D = λ + σ²V̂ loses positive definiteness once q → 0) or oscillates around 0 (the point is
unstable against the overlap). The last two were reported ``invalid_state`` / ``max_steps``, which reads like a
numerical failure at a point that exists. (The first is ``collapsed`` too where every scramble's overlap is
~0: ``converged=True`` below; else ``not_significant``.) :func:`collapse_record` tells them apart: the overlap,
averaged over the scrambles' last iterates (norms, so that scrambles with opposite signs do not cancel), below
``COLLAPSE_FRACTION`` of the model start's (:func:`starts.model_start`, the branch's expected scale).
Measured (docs/theory_general.md, "Starts away from σ = 0.5, λ = 0.01"): collapsed failures end at 0–3.9 %
of the start's overlap, failures on existing branches at ≥ 45 %.
"""

from __future__ import annotations

import numpy as np

from ..model import ModelParams
from .starts import model_start
from .state import unflatten

COLLAPSE_FRACTION = 0.05
"""A failed pinned iterate whose defining overlap is below this fraction of the model start's collapsed."""
_DEFINING = {"positional": "M", "semantic": "theta"}


def collapse_record(params: ModelParams, alpha: float, branch: str, xs: np.ndarray,
                    converged: bool = False) -> dict | None:
    """``xs``: the scrambles' last iterates (S, n) of a point whose solve failed. Returns a record (overlap,
    value, the start's value, fraction, reason) when the branch's defining overlap collapsed, else None (also
    for branches without one: free, uninformative).

    ``converged=True``: ``xs`` are the fixed points of a point that converged but whose overlap is not
    significant (``engine.overlap_significance``). Collapsed only where the scrambles AGREE that the overlap
    vanished: EVERY scramble's overlap below ``COLLAPSE_FRACTION`` of the start's (not just their mean), so that
    a scramble-dependent artefact of a few per cent to tens of per cent (positional ω = 0.1, α = 2: m = 0.014–
    0.062, up to 25 % of the start's) stays ``not_significant`` (measured at r = 1, r* = 2, α = 1 semantic,
    4096 × 4: every scramble's θ ≤ 4.7 % of the start's; docs/theory_general.md, "r < r* follow-ups")."""
    name = _DEFINING.get(branch)
    if name is None:
        return None
    xs = np.asarray(xs, float)
    xs = xs[np.all(np.isfinite(xs), axis=1)]
    if xs.shape[0] == 0:
        return None
    Z = np.asarray(getattr(unflatten(xs, params.r, params.k, params.r_star), name))
    norms = np.linalg.norm(Z.reshape(Z.shape[0], -1), axis=1)
    value = float(np.mean(norms))
    ref = float(np.linalg.norm(np.asarray(getattr(model_start(params, branch, alpha), name))))
    if not ref > 0 or (np.max(norms) if converged else value) >= COLLAPSE_FRACTION * ref:
        return None
    overlap = "m" if name == "M" else "theta"
    where = ("at every scramble's fixed point (an integration artefact); the pinned branch has fallen onto "
             "the uninformative point" if converged else
             "before the iteration failed; the pinned branch has no fixed point here")
    return {"overlap": overlap, "value": value, "max": float(np.max(norms)), "start_value": ref,
            "fraction": value / ref, "limit": COLLAPSE_FRACTION, "significant": False,
            "reason": (f"collapsed: |{overlap}| fell to {value:.2g} ({value / ref:.1%} of the start's {ref:.3g}) "
                       + where)}
