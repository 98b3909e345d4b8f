"""The (α, ω) phase diagram (MODEL.md §6 "Transition"): both pinned branches on a grid, by continuation in α
within each ω and across ω from the previous ω's solutions (one engine: :mod:`.continuation`)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..errors import ParameterError
from ..model import ModelParams
from .continuation import MAX_STEPS, PointSolver, default_solver, follow_branch
from .transition import DIAGRAM_NODES, _reasons, _refine, _tables

DEFAULT_OMEGAS = tuple(np.round(np.linspace(0.02, 0.5, 40), 6))
"""The paper's ω range at ≥ 40 values."""
DEFAULT_ALPHAS = tuple(np.round(np.linspace(0.05, 2.0, 40), 6))
"""The paper's α range at 40 values."""

GRID_COLUMNS = ["omega", "alpha", "e_t_sem", "e_t_pos", "delta_e_t", "eps_g_global", "eps_lin",
                "eps_lin_minus_eps_g", "global_branch", "eps_g_sem", "eps_g_pos", "kind_pos", "state_sem",
                "state_pos"]


def phase_diagram(params: ModelParams, omegas: Sequence[float] = DEFAULT_OMEGAS,
                  alphas: Sequence[float] = DEFAULT_ALPHAS, *, nodes: int | None = DIAGRAM_NODES,
                  progress: Callable[[float, str, int, int], None] | None = None, refine: bool = False,
                  xtol: float = 1e-3, max_steps: int = MAX_STEPS, min_step: float | None = None,
                  reuse: dict[float, dict[str, object]] | None = None, solver: PointSolver | None = None):
    """Tidy (α, ω) phase diagram.

    Returns ``(grid, lines)``: ``grid`` one row per (ω, α) (:data:`GRID_COLUMNS`; ``state_sem``/``state_pos``
    are :class:`~attnphase.phase.continuation.PointState` values — a cell beyond a branch's end carries the
    end's kind, ``not converged`` only where the solver failed; saddles past an ``unstable`` end are not
    solved, they are not used); ``lines`` one row per ω with alpha_c, alpha_l
    (grid interpolation, or Brent to ``xtol`` with ``refine``), their bounds (``"> 2"``) and reasons, and both
    branches' ends. ``min_step``: resolution of the ends (default: a quarter of the α spacing). ω values are
    processed in increasing order. ``reuse``: ω → {branch: :class:`~.continuation.Branch`} already computed
    on the same α grid (e.g. ``transition(...).branches``).
    """
    import pandas as pd

    from ..theory import eps_lin as _eps_lin

    omegas = sorted(float(w) for w in omegas)
    for w in omegas:
        if not 0.0 <= w <= 1.0:
            raise ParameterError("omegas", "values in [0, 1]", w)
    grid_a = np.array(sorted(float(a) for a in alphas))
    if grid_a.size < 2 or (grid_a <= 0).any() or not np.isfinite(grid_a).all():
        raise ParameterError("alphas", "at least two finite values > 0", list(grid_a))
    solver = solver or default_solver()
    min_step = 0.25 * float(np.min(np.diff(grid_a))) if min_step is None else min_step
    frames, rows = [], []
    guides: dict[str, dict] = {"semantic": {}, "positional": {}}
    for w in omegas:
        p = params.replace(omega=w)
        branches = {}
        for b in ("semantic", "positional"):
            order = list(grid_a[::-1]) if b == "semantic" else list(grid_a)
            have = (reuse or {}).get(w, {}).get(b)
            if have is not None and {round(x.alpha, 9) for x in have} >= {round(a, 9) for a in order}:
                branches[b] = have
                if progress:
                    progress(w, b, len(order), len(order))
            else:
                cb = (lambda i, b=b, w=w: progress(w, b, i + 1, len(grid_a))) if progress else None
                branches[b] = follow_branch(p, order, b, nodes=nodes, guide=guides[b] or None, progress=cb,
                                            max_steps=max_steps, min_step=min_step, solver=solver,
                                            saddles=False)
            guides[b] = {round(x.alpha, 9): x for x in branches[b].valid()}
        el = float(_eps_lin(p))
        sem, pos, g, a_c, a_l = _tables(branches, el)
        g = g[g["alpha"].round(9).isin(np.round(grid_a, 9))]
        lo, hi = float(grid_a[0]), float(grid_a[-1])
        if refine and (a_c is not None or a_l is not None):
            step = min(0.25 * float(np.min(np.diff(grid_a))), max(0.005, 20 * xtol))
            against = "positional"
            a_c, a_l, _ = _refine(p, branches, g, a_c, a_l, against, nodes, lo, hi, xtol, step, [], solver)
        c_bound, c_reason, l_bound, l_reason = _reasons(g, branches, a_c, a_l, lo, hi, lo, hi)
        g = g.merge(sem[["alpha", "state"]].rename(columns={"state": "state_sem"}), on="alpha", how="left")
        g = g.merge(pos[["alpha", "state"]].rename(columns={"state": "state_pos"}), on="alpha", how="left")
        g.insert(0, "omega", w)
        frames.append(g)
        ends = {b: branches[b].end for b in branches}
        rows.append(dict(omega=w, alpha_c=a_c, alpha_c_bound=c_bound, alpha_c_reason=c_reason, alpha_l=a_l,
                         alpha_l_bound=l_bound, alpha_l_reason=l_reason, eps_lin=el,
                         end_semantic=ends["semantic"].alpha if ends["semantic"] else None,
                         end_semantic_kind=ends["semantic"].kind.value if ends["semantic"] else "",
                         end_positional=ends["positional"].alpha if ends["positional"] else None,
                         end_positional_kind=ends["positional"].kind.value if ends["positional"] else "",
                         begin_semantic=_alpha(branches["semantic"].begin),
                         begin_positional=_alpha(branches["positional"].begin),
                         solves=sum(br.solves for br in branches.values()), refined=bool(refine), nodes=nodes))
    grid = pd.concat(frames, ignore_index=True)[GRID_COLUMNS]
    return grid, pd.DataFrame(rows)


def _alpha(end) -> str:
    return "" if end is None else f"{end.alpha:.4g} ({end.kind.value})"
