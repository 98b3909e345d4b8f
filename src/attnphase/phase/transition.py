"""α_c and α_l (MODEL.md §6 "Transition", §5): root finding on the continued branches, with an α range that
follows the physics.

* ``α_c(ω)``: root of ``e_t^sem(α) − e_t^pos(α)``; below it the positional fixed point is the global minimum,
  above it the semantic one. Where the positional branch has collapsed onto the uninformative point (m = 0;
  e.g. σ ≥ 0.7) the uninformative point is the competitor (``alpha_c_against``).
* ``α_l(ω)`` (≥ α_c): root of ``ε_g^global(α) − ε_lin``, global = branch with the lower ``e_t``.
* :func:`transition` extends the α range beyond the requested grid — up to :data:`ALPHA_MAX`, down to
  :data:`ALPHA_MIN` — until both are found; a root beyond those limits is reported as ``"> α_max"`` /
  ``"< α_min"`` (``alpha_c_bound``, ``alpha_l_bound``), with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ParameterError
from ..model import ModelParams
from .continuation import (CURVE_RTOL, END_XTOL, MAX_STEPS, Branch, BranchPoint, PointSolver, PointState,
                           _unsolved,
                           _admissible, _vec, branch_table, default_solver, follow_branch, point_state)
from ..theory.solver import nodes_for_scale, resolution_note
from .roots import Unrefinable, local_root, table_root
from .scale_refine import competitor_scale, line_scale, resolution, scale_refine
from .stability import global_minimum, mixed_at, spinodal, survey, valid_rows

DEFAULT_ALPHAS = tuple(np.round(np.arange(0.3, 2.0001, 0.1), 6))
"""Default α grid of :func:`transition` (extended as needed, see :data:`ALPHA_MAX`)."""

ALPHA_MAX = 6.0
"""Largest α :func:`transition` extends to in search of α_c or α_l (the paper's diagram stops at 2; α_c(0.5)
at the default σ, λ is about 2.3)."""

ALPHA_MIN = 0.05
"""Smallest α :func:`transition` extends to (α_c below the default grid: σ ≥ 0.7, GD sees ~0.3)."""

DIAGRAM_NODES = 4
"""Default resolution of the diagram and of the α-grid curves (the solver's coarse split rule: e_t within
~1e-5 of the default ``nodes = 8``, which moves α_c by ~2e-3; see docs/notes/benchmarks-log.md)."""


def global_table(sem, pos, eps_lin: float, uninformative: bool = True):
    """Merge two branch tables (columns alpha, e_t, eps_g, …) on α into the global-minimum table.

    Columns: alpha, e_t_sem, e_t_pos, delta_e_t (= sem − pos), eps_g_sem, eps_g_pos, global_branch,
    eps_g_global, eps_lin, eps_lin_minus_eps_g. A branch point that is not valid (not converged, collapsed,
    beyond an end or unstable; see :class:`PointState`) is NaN — except that, with ``uninformative``, a
    positional point that collapsed onto the uninformative point (m = 0) stands in for the positional branch
    there: it is where an iteration from the positional side ends (``kind_pos`` = "uninformative").
    """
    import pandas as pd

    def prep(df, tag, fallback=False):
        df = df.copy()
        ok = valid_rows(df)
        uninf = (df["state"] == "collapsed").to_numpy() if fallback and "state" in df else np.zeros(len(df), bool)
        df.loc[~(ok | uninf), ["e_t", "eps_g"]] = np.nan
        df[f"kind_{tag}"] = np.where(uninf, "uninformative", "semantic" if tag == "sem" else "positional")
        return df[["alpha", "e_t", "eps_g", f"kind_{tag}"]].rename(
            columns={"e_t": f"e_t_{tag}", "eps_g": f"eps_g_{tag}"})

    g = pd.merge(prep(sem, "sem"), prep(pos, "pos", uninformative), on="alpha", how="outer").sort_values("alpha")
    g["delta_e_t"] = g["e_t_sem"] - g["e_t_pos"]
    es, ep = g["e_t_sem"].to_numpy(float), g["e_t_pos"].to_numpy(float)
    use_sem = np.where(np.isnan(ep), True, np.where(np.isnan(es), False, es < ep))
    none = np.isnan(es) & np.isnan(ep)
    g["global_branch"] = np.where(none, "none", np.where(use_sem, "semantic", g["kind_pos"]))
    g["eps_g_global"] = np.where(none, np.nan, np.where(use_sem, g["eps_g_sem"], g["eps_g_pos"]))
    g["eps_lin"] = float(eps_lin)
    g["eps_lin_minus_eps_g"] = g["eps_lin"] - g["eps_g_global"]
    return g.reset_index(drop=True)


def alpha_l_from_table(g, alpha_c: float | None) -> float | None:
    """First α (≥ α_c) where the global minimum's ε_g falls below ε_lin, interpolated on the table.

    The global ε_g jumps at α_c, so the crossing is located on the ε_g column of the branch that is global
    just above α_c (all its valid points); if that branch already beats ε_lin at α_c, α_l = α_c."""
    g = g.sort_values("alpha").reset_index(drop=True)
    if alpha_c is None:
        return table_root(g["alpha"], g["eps_lin_minus_eps_g"], "up")
    above = g[g["alpha"] > alpha_c]
    if above.empty:
        return None
    br = above["global_branch"].iloc[0]
    if br not in ("semantic", "positional", "uninformative"):
        return table_root(above["alpha"], above["eps_lin_minus_eps_g"], "up")
    col = f"eps_g_{'sem' if br == 'semantic' else 'pos'}"
    r = table_root(g["alpha"], g["eps_lin"] - g[col], "up")
    if r is None:
        return float(alpha_c) if float(above[col].iloc[0]) < float(above["eps_lin"].iloc[0]) else None
    return float(max(r, alpha_c))


def transition_from_tables(sem, pos, eps_lin: float) -> dict[str, Any]:
    """α_c, α_l, spinodals from two branch tables (no refinement; linear interpolation between grid points)."""
    g = global_table(sem, pos, eps_lin)
    alpha_c = table_root(g["alpha"], g["delta_e_t"], "down")
    alpha_l = alpha_l_from_table(g, alpha_c)
    s_sem, k_sem = spinodal(sem, "low")
    s_pos, k_pos = spinodal(pos, "high")
    return dict(alpha_c=alpha_c, alpha_l=alpha_l, eps_lin=float(eps_lin), spinodal_semantic=s_sem,
                spinodal_semantic_kind=k_sem, spinodal_positional=s_pos, spinodal_positional_kind=k_pos,
                global_table=g)


def _extension(lo: float, hi: float, direction: str, alpha_max: float, alpha_min: float) -> list[float]:
    """The next block of α's beyond ``[lo, hi]``: steps of 0.1 up to α = 3 and 0.25 above, at most a doubling
    of the range (upwards); steps of 0.05 (downwards, to ``alpha_min``)."""
    if direction == "up":
        top = min(alpha_max, max(2.0 * hi, hi + 0.5))
        out, a = [], hi
        while a < top - 1e-9:
            a = round(a + (0.1 if a < 3.0 - 1e-9 else 0.25), 6)
            out.append(min(a, alpha_max))
        return sorted(set(out))
    out, a = [], lo
    while a > alpha_min + 1e-9:
        a = round(max(a - 0.05, alpha_min), 6)
        out.append(a)
    return out


@dataclass
class TransitionResult:
    """Outcome of :func:`transition` at one parameter point. ``alpha_c``/``alpha_l`` are None when not found;
    ``alpha_c_bound``/``alpha_l_bound`` then say ``"> α_max"`` or ``"< α_min"`` where that is known, and
    ``alpha_c_reason``/``alpha_l_reason`` why. ``semantic_end``/``positional_end``: where the branch stops
    being valid inside the range, with its kind (:class:`~attnphase.phase.continuation.BranchEnd`)."""

    params: ModelParams
    alpha_c: float | None
    alpha_l: float | None
    eps_lin: float
    semantic: Any  # pandas.DataFrame (branch_table)
    positional: Any
    global_table: Any
    branches: dict[str, Branch]
    alpha_c_against: str = "positional"
    alpha_c_bound: str | None = None
    alpha_l_bound: str | None = None
    alpha_c_reason: str = ""
    alpha_l_reason: str = ""
    alpha_range: tuple[float, float] = (float("nan"), float("nan"))
    alpha_c_grid: float | None = None
    alpha_l_grid: float | None = None
    alpha_c_pinned: float | None = None
    mixed: list[dict[str, Any]] = field(default_factory=list)
    refined: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    fixed_points: Any = None  # pandas.DataFrame (stability.survey): every fixed point found per α
    global_minimum: Any = None  # pandas.DataFrame (stability.global_minimum)
    alpha_c_kind: str = ""
    alpha_c_location: dict[str, Any] = field(default_factory=dict)
    """Where α_c is a growth factor's crossing of +1 (kind ``competitor loses stability``): the resolution it was
    located at (``nodes``, ``stability_nodes``), its bracket, and ``alpha_curve_nodes``/``difference``: the same
    crossing at the survey's resolution and how far the precise one lies from it (:func:`precise_crossing`)."""
    alpha_c_nodes: int | None = None
    """The split rule's outer order α_c was located at (None without α_c); ``alpha_l_nodes`` the same for α_l."""
    alpha_l_nodes: int | None = None
    scale_refinement: dict[str, Any] = field(default_factory=dict)
    """The scale-aware refinement (:func:`~.scale_refine.scale_refine`), where the student's scale near the lines
    needed a finer order than ``nodes``: its order, α_c's bracket at it, the points solved; empty where not run."""

    @property
    def mixed_found(self) -> bool:
        return any(m.get("mixed", False) for m in self.mixed)

    def branch_end(self, b) -> tuple[float | None, str]:
        """Where branch ``b`` stops being valid: (α, kind), or (None, why not: "valid on the whole range" or
        "never valid on the range (…states…)")."""
        e = self.branches[b].end
        if e is not None:
            return e.alpha, e.kind.value
        if not self.branches[b].valid():      # e.g. collapsed at every α (a strong ridge: q = 0 throughout)
            states = sorted({p.state.value for p in self.branches[b]})
            return None, "never valid on the range (" + ", ".join(states) + ")"
        return None, "valid on the whole range"

    @property
    def spinodal_semantic(self):
        return self.branch_end("semantic")[0]

    @property
    def spinodal_positional(self):
        return self.branch_end("positional")[0]

    def to_dict(self, tables: bool = False) -> dict[str, Any]:
        ends = {b: (self.branches[b].end.to_dict() if self.branches[b].end else None) for b in self.branches}
        ends |= {f"{b}_begin": self.branches[b].begin.to_dict() for b in self.branches if self.branches[b].begin}
        sem_end, pos_end = self.branch_end("semantic"), self.branch_end("positional")
        d = dict(omega=self.params.omega, sigma=self.params.sigma, lam=self.params.lam,
                 alpha_c=self.alpha_c, alpha_c_bound=self.alpha_c_bound, alpha_c_reason=self.alpha_c_reason,
                 alpha_c_against=self.alpha_c_against, alpha_c_kind=self.alpha_c_kind,
                 alpha_c_location=self.alpha_c_location, alpha_c_nodes=self.alpha_c_nodes,
                 alpha_l_nodes=self.alpha_l_nodes, scale_refinement=self.scale_refinement,
                 global_kinds=_kind_runs(self.global_minimum), alpha_c_pinned=self.alpha_c_pinned,
                 alpha_l=self.alpha_l, alpha_l_bound=self.alpha_l_bound, alpha_l_reason=self.alpha_l_reason,
                 eps_lin=self.eps_lin, alpha_range=list(self.alpha_range),
                 spinodal_semantic=sem_end[0], spinodal_semantic_kind=sem_end[1],
                 spinodal_positional=pos_end[0], spinodal_positional_kind=pos_end[1], ends=ends,
                 alpha_c_grid=self.alpha_c_grid, alpha_l_grid=self.alpha_l_grid, mixed_found=self.mixed_found,
                 mixed=self.mixed, refined=self.refined, notes=self.notes,
                 states={b: br.states() for b, br in self.branches.items()},
                 params=self.params.to_dict(), provenance=self.provenance)
        if tables:
            for k in ("semantic", "positional", "global_table", "fixed_points", "global_minimum"):
                if getattr(self, k) is not None:
                    d[k] = getattr(self, k).to_dict(orient="records")
        return d


class _Refiner:
    """Warm-started solves at arbitrary α (for Brent), predicted by linear interpolation of the state between
    the two nearest known points of the same branch. ``accept``: the states usable per branch; ``stability``: the
    branches whose growth factor is evaluated too (on the solver's default rule); ``retry``: per branch, a solve that
    ends not usable is solved once more from the model's own start with that many steps (none by default);
    ``rtols``: per branch, a residual other than ``rtol``."""

    def __init__(self, params, known: dict[str, list], nodes, log: list, solver: PointSolver,
                 accept: dict[str, tuple[PointState, ...]], stability: tuple[str, ...] = (),
                 rtol: float = CURVE_RTOL, retry: dict[str, int] | None = None,
                 rtols: dict[str, float] | None = None):
        self.params, self.nodes, self.log, self.solver, self.accept = params, nodes, log, solver, accept
        self.stability, self.rtol, self.retry, self.rtols = stability, rtol, retry or {}, rtols or {}
        self.known = {b: [s for s in v if point_state(s) in accept[b]] for b, v in known.items()}
        self.cache: dict[tuple[str, float], Any] = {}
        self.orders: dict[str, int] = {}

    def order(self, branch) -> int:
        """The outer order ``branch`` is solved at (``nodes`` unless raised)."""
        return self.orders.get(branch, self.nodes)

    def raise_order(self, branch, nodes: int) -> None:
        """Solve ``branch`` at ``nodes`` from now on: its cached solves are dropped (their log entries marked
        ``superseded``); its known points stay, as warm starts only."""
        self.orders[branch] = int(nodes)
        for k in [k for k in self.cache if k[0] == branch]:
            del self.cache[k]
        for r in self.log:
            if r["branch"] == branch and "superseded" not in r:
                r["superseded"] = f"solved again at nodes = {nodes}"

    def _start(self, branch, a):
        pts = sorted(self.known[branch], key=lambda s: s.alpha)
        if branch in self.orders:       # raised: interpolate between points at the new order once there are two
            own = [s for s in pts if getattr(s, "nodes", None) == self.orders[branch]]
            pts = own if len(own) >= 2 else pts
        if not pts:
            return None
        lo = [s for s in pts if s.alpha <= a]
        hi = [s for s in pts if s.alpha >= a]
        if lo and hi and hi[0].alpha > lo[-1].alpha:
            s0, s1 = lo[-1], hi[0]
            t = (a - s0.alpha) / (s1.alpha - s0.alpha)
            return _admissible((1 - t) * _vec(s0) + t * _vec(s1), branch, self.params.sigma, s0)
        return min(pts, key=lambda s: abs(s.alpha - a))

    def solve(self, branch, a):
        k = (branch, float(a))
        if k not in self.cache:
            start, n, rtol = self._start(branch, a), self.order(branch), self.rtols.get(branch, self.rtol)
            s = self.solver(self.params, float(a), branch, nodes=n, init=start,
                            max_steps=MAX_STEPS, stability=branch in self.stability, rtol=rtol)
            if self.retry.get(branch, 0) > MAX_STEPS and point_state(s) not in self.accept[branch]:
                s = self.solver(self.params, float(a), branch, nodes=n, init=None,
                                max_steps=self.retry[branch], stability=branch in self.stability, rtol=rtol)
            self.cache[k] = s
            st = point_state(s)
            if st in self.accept[branch]:
                self.known[branch].append(s)
            self.log.append(dict(branch=branch, alpha=float(a), e_t=s.e_t, eps_g=s.eps_g, q=s.q,
                                 stability=s.stability, converged=bool(s.converged), state=st.value,
                                 iterations=s.iterations,
                                 nodes=int(getattr(s, "nodes", 0) or n)))
        return self.cache[k]

    def valid(self, branch, a):
        s = self.solve(branch, a)
        st = point_state(s)
        if st not in self.accept[branch]:
            raise Unrefinable(f"{branch} at α={a:g}: {st.value}")
        return s


L_REFINE_FAILED = "α_l refinement failed; table value kept"
"""The note of :func:`_refine` where it tried α_l and kept the table value (its returned order is None then)."""


def _refine(params, branches, g, alpha_c, alpha_l, against, nodes, lo_a, hi_a, xtol, step, log, solver):
    """Brent refinement of the table estimates of α_c and α_l at order ``nodes``. Returns α_c, α_l, the order
    α_l was located at (``nodes`` where refined, None where the table value was kept) and the notes."""
    notes: list[str] = []
    l_nodes = None
    pos_ok = (PointState.OK, PointState.COLLAPSED) if against == "uninformative" else (PointState.OK,)
    R = _Refiner(params, {b: branches[b].valid() if b == "semantic" else
                          [p for p in list(branches[b]) + branches[b].extra if p.state in pos_ok]
                          for b in branches}, nodes, log, solver,
                 dict(semantic=(PointState.OK,), positional=pos_ok))
    if alpha_c is not None:
        r = local_root(lambda a: R.valid("semantic", a).e_t - R.valid("positional", a).e_t, alpha_c, lo_a, hi_a,
                       sign_below=+1.0, step=step, xtol=xtol)
        if r is None:
            notes.append("α_c refinement failed (a branch is not valid near α_c); table value kept")
        else:
            alpha_c = r
    if alpha_l is not None:
        above = g[g["alpha"] > (alpha_c if alpha_c is not None else -1.0)]
        br = above["global_branch"].iloc[0] if len(above) else "semantic"
        br = "semantic" if br == "semantic" else "positional"
        lo = alpha_c if alpha_c is not None else lo_a
        el = float(g["eps_lin"].iloc[0])
        r = local_root(lambda a: R.valid(br, a).eps_g - el, max(alpha_l, lo), lo, hi_a, sign_below=+1.0,
                       step=step, xtol=xtol)
        if r is None:
            notes.append(L_REFINE_FAILED)
        else:
            alpha_l, l_nodes = r, nodes
    return alpha_c, alpha_l, l_nodes, notes


def _refine_l(params, branches, guess, lo, hi, resolutions, xtol, log, solver, el, notes
              ) -> tuple[float, int | None]:
    """α_l refined by Brent on the semantic branch's ε_g − ε_lin near the table value ``guess`` (in
    ``[lo, hi]``): when α_l comes from the global minimum's table (α_c from its change of kind), or the first
    refinement failed. Tried at each outer order of ``resolutions`` in turn (the solver's, then the curves'
    own: near the branch's end the finer rule's branch can end elsewhere, σ = 1, ω = 0.05). Returns α_l and the
    order it was located at; None for the order where ``guess`` is returned unrefined."""
    valid = branches["semantic"].valid()
    lo = max([lo] + [p.alpha for p in valid[:1]])
    if not lo < hi:
        return float(guess), None
    step = max(0.005, 20 * xtol)
    for k, n in enumerate(dict.fromkeys(resolutions)):
        R = _Refiner(params, {"semantic": valid}, n, log, solver, dict(semantic=(PointState.OK,)))
        r = local_root(lambda a: R.valid("semantic", a).eps_g - el, guess, lo, hi, sign_below=+1.0, step=step,
                       xtol=xtol)
        if r is not None:
            if k:
                notes.append(f"α_l refined at nodes = {n} (the finer solves failed near it)")
            return float(r), int(n)
    notes.append("α_l refinement on the semantic branch failed; table value kept")
    return float(guess), None


def _semantic_above_lin(gm, el: float) -> bool:
    """The global minimum is semantic at the top of the table with ε_g above ε_lin."""
    top = gm[gm["global_kind"] != "none"].sort_values("alpha")
    return bool(len(top) and top["global_kind"].iloc[-1] == "semantic" and top["eps_g_global"].iloc[-1] > el)


def _concat(a, b):
    import pandas as pd
    return pd.concat([a, b], ignore_index=True).sort_values(["alpha", "kind"], kind="stable").reset_index(drop=True)


def _tables(branches, el):
    sem, pos = branch_table(branches["semantic"]), branch_table(branches["positional"])
    g = global_table(sem, pos, el)
    alpha_c = table_root(g["alpha"], g["delta_e_t"], "down")
    return sem, pos, g, alpha_c, alpha_l_from_table(g, alpha_c)


def _direction(g, branches, alpha_c, alpha_l) -> str | None:
    """Where to look for what is missing: "up", "down" or None (the reason is then in the tables)."""
    both = g.dropna(subset=["delta_e_t"])
    if alpha_c is None:
        if not branches["semantic"].valid():
            return "up"  # the semantic branch may appear at larger α
        if both.empty:
            sem_end = branches["semantic"].end
            return "up" if sem_end is None else None
        if both["delta_e_t"].iloc[-1] > 0:
            return "up"
        if both["delta_e_t"].iloc[0] < 0 and branches["semantic"].end is None:
            return "down"  # the semantic branch is global down to the bottom and still valid there
        return None
    if alpha_l is None:
        top = g.dropna(subset=["eps_lin_minus_eps_g"])
        if len(top) and top["eps_lin_minus_eps_g"].iloc[-1] < 0:
            return "up"
    return None


def _extend(params, branches, direction, block, kw):
    """Follow both branches onto the new α's of ``block`` (ordered away from the old range), each continued
    from its valid points; a branch that already ended on that side keeps its end's state there."""
    for b, br in branches.items():
        ended_this_side = br.end is not None and (direction == "down") == (b == "semantic")
        if ended_this_side:
            br.points.extend(_unsolved(params, a, b, kw.get("nodes"), br.end.kind,
                                       f"beyond the branch's end near α={br.end.alpha:.4g}: {br.end.reason}")
                             for a in block)
            continue
        hist = br.valid()
        new = follow_branch(params, block, b, history=hist if direction == "up" else hist[::-1], **kw)
        old = br.points
        br.points = old + new.points
        br.extra.extend(new.extra)
        br.solves += new.solves
        if not hist and any(p.state.valid for p in new.points):
            _locate_start(params, br, old, new, direction, kw)
        else:
            br.end = br.end or new.end


def _locate_start(params, br: Branch, old: list, new: Branch, direction: str, kw) -> None:
    """The branch ``br`` had no valid point on its old α's and has some in the new block ``new``: follow it
    back from its valid points nearest the old range over the old α's (same adaptive step, so its end there
    is located to ``min_step``) — the old points get the state of that end instead of the failures of cold
    starts. The end found is the branch's ``end`` where the branch is followed towards the old range
    (semantic: downwards), else its ``begin``; ``new.end`` is the other one."""
    first = sorted(new.valid(), key=lambda p: p.alpha, reverse=(direction == "down"))
    hist = first[:2][::-1]   # the last one nearest the old range
    order = sorted((p.alpha for p in old), reverse=(direction == "up"))
    if new.begin is not None:   # already followed back to its end inside the block: the old α's lie beyond it
        e = new.begin
        back = Branch(br.branch, params, [_unsolved(params, a, br.branch, kw.get("nodes"), e.kind,
                                                    f"beyond the branch's end near α={e.alpha:.4g}: {e.reason}")
                                          for a in order], end=e)
        new.begin = None
    else:
        back = follow_branch(params, order, br.branch, history=hist, **kw)
    at = {round(p.alpha, 9): p for p in back.points}
    br.points = [at.get(round(p.alpha, 9), p) for p in old] + new.points
    br.extra.extend(back.extra)
    br.solves += back.solves
    followed_down = br.branch == "semantic"   # its ``end`` is then the low side's, else the high side's
    if (direction == "up") == followed_down:
        br.end, br.begin = back.end, new.end or br.begin
    else:
        br.end, br.begin = new.end or br.end, back.end


def _scale_note(branches: dict, lines: list[float], nodes: int) -> str | None:
    """A note where the valid points up to the located lines have a student norm q beyond the range in which
    the split rule at order ``nodes`` was measured accurate (:func:`solver.resolution_note`)."""
    q = line_scale(branches, lines)
    note = resolution_note(q, nodes) if q is not None else None
    return None if note is None else f"α_c, α_l located with the split rule at nodes = {nodes}: {note}"


def transition(params: ModelParams, *, alphas: Sequence[float] | None = None, nodes: int | None = None,
               curve_nodes: int | None = DIAGRAM_NODES, progress: Callable[[str, int, int], None] | None = None,
               refine: bool = True, xtol: float = 1e-4, mixed_alphas: Sequence[float] | None = None,
               mixed_nodes: int = DIAGRAM_NODES, init: dict[str, Any] | None = None,
               max_steps: int = MAX_STEPS, extend: bool = True, alpha_max: float = ALPHA_MAX,
               alpha_min: float = ALPHA_MIN, end_xtol: float = END_XTOL,
               solver: PointSolver | None = None, fixed_points: bool = True) -> TransitionResult:
    """α_c, α_l, the branches' ends and the mixed-fixed-point search at one parameter point.

    1. Both branches by continuation (:func:`~attnphase.phase.continuation.follow_branch`; semantic from the
       largest α down, positional from the smallest up) at resolution ``curve_nodes``, ends located to
       ``end_xtol`` in α.
    2. α_c, α_l bracketed on the tables; while one is missing and the tables say on which side it lies, the
       range is extended (``extend``) block by block up to ``alpha_max`` or down to ``alpha_min``.
    3. ``refine``: Brent to ``xtol`` in α with warm-started solves at resolution ``nodes`` (default: the
       solver's, 8): α_c from ``e_t^sem − e_t^pos``, α_l from the ε_g of the branch global just above α_c.
    4. ``fixed_points``: every fixed point that decides the global minimum per α (:func:`~.stability.survey`:
       pinned branches, the uninformative point, unpinned solves from saddles); where the lowest stable one
       changes kind into semantic at another place than the e_t crossing (a continuous birth of the semantic
       branch from the uninformative point, a competitor that loses stability, a mixed competitor), α_c is
       that change (:func:`global_switch`; where the competitor turns unstable, located by solves:
       :func:`growth_crossing`), ``alpha_c_against`` the kind below it; α_l is then refined on the semantic
       branch, and if it lies above the range (the global minimum semantic at the top with ε_g > ε_lin) the
       range is extended for it too, up to ``alpha_max``.
    5. Mixed fixed points at ``mixed_alphas`` (default: α_c; ``[]`` skips).
    """
    from ..provenance import provenance as _prov
    from ..theory import DEFAULT_NODES, eps_lin as _eps_lin
    from ..theory.solver import STABILITY_NODES

    nodes = DEFAULT_NODES if nodes is None else nodes
    curve_nodes = nodes if curve_nodes is None else curve_nodes
    grid = np.array(sorted(DEFAULT_ALPHAS if alphas is None else alphas), float)
    if grid.size < 2 or (grid <= 0).any() or not np.isfinite(grid).all():
        raise ParameterError("alphas", "at least two finite values > 0", list(grid))
    if not xtol > 0:
        raise ParameterError("xtol", "> 0", xtol)
    if not alpha_min > 0 or not alpha_max > alpha_min:
        raise ParameterError("alpha_min, alpha_max", "0 < alpha_min < alpha_max", (alpha_min, alpha_max))
    split_rule = solver is None                  # the default solver: the split rule at ``nodes``
    solver = solver or default_solver()
    init = init or {}
    el = float(_eps_lin(params))
    # an unstable branch end and the survey's factors on the branch's own rule where it is finer than the default
    stab_nodes = curve_nodes if curve_nodes > STABILITY_NODES else None
    kw = dict(nodes=curve_nodes, max_steps=max_steps, min_step=end_xtol, solver=solver)
    if stab_nodes is not None:
        kw["stability_nodes"] = stab_nodes
    branches: dict[str, Branch] = {}
    for b in ("semantic", "positional"):
        order = list(grid[::-1]) if b == "semantic" else list(grid)
        cb = (lambda i, b=b: progress(b, i + 1, len(grid))) if progress else None
        branches[b] = follow_branch(params, order, b, init=init.get(b), progress=cb, **kw)
    sem, pos, g, alpha_c, alpha_l = _tables(branches, el)
    lo, hi = float(grid[0]), float(grid[-1])
    while extend:
        d = _direction(g, branches, alpha_c, alpha_l)
        if d is None or (d == "up" and hi >= alpha_max - 1e-9) or (d == "down" and lo <= alpha_min + 1e-9):
            break
        block = _extension(lo, hi, d, alpha_max, alpha_min)
        if progress:
            progress(f"extend {d} to α={block[-1]:g}", 0, 1)
        _extend(params, branches, d, block, kw)
        lo, hi = min(lo, min(block)), max(hi, max(block))
        sem, pos, g, alpha_c, alpha_l = _tables(branches, el)
    against = _against(g, alpha_c, branches)
    a_c_grid, a_l_grid = alpha_c, alpha_l
    a_c_ref = a_l_ref = None
    l_at = curve_nodes      # the order α_l was located at (the tables' until a refinement locates it)
    l_failed = False        # the first refinement tried α_l and kept the table value
    notes: list[str] = []
    refined: list[dict[str, Any]] = []
    # the order the student's scale near the lines needs (the split rule only): where it exceeds ``nodes``, α_c
    # and α_l are located at that order at the end (scale_refine), not by the refinement at ``nodes``
    q_lines = line_scale(branches, [a for a in (alpha_c, alpha_l) if a is not None]) if split_rule else None
    scale_nodes = nodes_for_scale(q_lines) if q_lines is not None and refine and alpha_c is not None else None
    # (only beyond the default order: an explicit coarser ``nodes`` asks for speed and keeps its note)
    scale_nodes = scale_nodes if scale_nodes is not None and scale_nodes > max(nodes, DEFAULT_NODES) else None
    if refine and scale_nodes is None and (alpha_c is not None or alpha_l is not None):
        if progress:
            progress("refine", 0, 1)
        step = min(0.25 * float(np.min(np.diff(grid))), max(0.005, 20 * xtol))
        alpha_c, alpha_l, refined_at, more = _refine(params, branches, g, alpha_c, alpha_l, against, nodes, lo, hi,
                                                     xtol, step, refined, solver)
        l_failed = alpha_l is not None and refined_at is None
        l_at = refined_at or l_at
        a_c_ref = alpha_c if alpha_c != a_c_grid else None
        a_l_ref = alpha_l if alpha_l != a_l_grid else None
        notes.extend(more)
        if progress:
            progress("refine", 1, 1)
    fps = gm = None
    c_kind = "crossing" if alpha_c is not None else ""
    c_location: dict[str, Any] = {}
    if fixed_points:
        fps = survey(params, branches, sorted({round(p.alpha, 9) for p in branches["semantic"]}), nodes=curve_nodes,
                     solver=solver, progress=progress, stability_nodes=stab_nodes)
        gm = global_minimum(fps)
        def loc(kind, a0, a1):
            return growth_crossing(params, kind, a0, a1, fps, nodes=curve_nodes, solver=solver, xtol=end_xtol,
                                   stability_nodes=stab_nodes)
        sw = global_switch(gm, fps, branches, alpha_c, locate=loc)
        if sw is not None and sw.kind == "competitor loses stability" and sw.alpha_c is not None:
            sw, c_location = precise_crossing(params, sw, fps, nodes=nodes, curve_nodes=curve_nodes, solver=solver,
                                              xtol=end_xtol, notes=notes)
        if sw is not None:
            if sw.alpha_c is not None and (alpha_c is None or sw.kind != "crossing"):
                notes.append(f"α_c from the global minimum's change of kind ({sw.kind}) "
                             f"{sw.against} → semantic" + ("" if alpha_c is None else
                                                           f"; the e_t crossing at {alpha_c:.4g} is not it"))
                alpha_c = sw.alpha_c
                a_l_table = _alpha_l_global(gm, alpha_c, alpha_l, el, branches["semantic"])
                if a_l_table != alpha_l:
                    l_at = curve_nodes      # the global minimum's table
                if a_l_table is not None and a_l_table != alpha_l and a_l_table > alpha_c and refine:
                    a_l_table, at = _refine_l(params, branches, a_l_table, alpha_c, hi, (nodes, curve_nodes), xtol,
                                              refined, solver, el, notes)
                    l_at = at or curve_nodes
                alpha_l = a_l_table
            against, c_kind = sw.against, sw.kind
        while (extend and alpha_c is not None and alpha_l is None and hi < alpha_max - 1e-9
               and _semantic_above_lin(gm, el)):
            # α_l lies above the range: the global minimum is semantic at the top with ε_g > ε_lin
            block = _extension(lo, hi, "up", alpha_max, alpha_min)
            if progress:
                progress(f"extend up to α={block[-1]:g} (α_l)", 0, 1)
            _extend(params, branches, "up", block, kw)
            hi = max(hi, max(block))
            fps = _concat(fps, survey(params, branches, block, nodes=curve_nodes, solver=solver,
                                      stability_nodes=stab_nodes))
            gm = global_minimum(fps)
            sem, pos, g, _, _ = _tables(branches, el)
            alpha_l, l_at = _alpha_l_global(gm, alpha_c, None, el, branches["semantic"]), curve_nodes
            if alpha_l is not None and refine:
                alpha_l, at = _refine_l(params, branches, alpha_l, alpha_c, hi, (nodes, curve_nodes), xtol, refined,
                                        solver, el, notes)
                l_at = at or curve_nodes
        above = gm[(gm["alpha"] > (alpha_c or 0.0)) & (gm["global_kind"] != "none")]
        if (refine and alpha_l is not None and alpha_c is not None and l_failed and alpha_l > alpha_c
                and len(above) and above["global_kind"].iloc[0] == "semantic"):
            notes.remove(L_REFINE_FAILED)
            alpha_l, at = _refine_l(params, branches, alpha_l, alpha_c, hi, (curve_nodes,), xtol, refined, solver,
                                    el, notes)
            if at is not None:
                notes.append(f"α_l refined at nodes = {curve_nodes} (the nodes = {nodes} solves failed near it)")
            l_at = curve_nodes
    scaled = None
    if scale_nodes is not None and alpha_c is not None:
        if progress:
            progress(f"refine at nodes = {scale_nodes}", 0, 1)
        scaled = scale_refine(params, branches, alpha_c, c_kind, against, alpha_l, el, nodes=scale_nodes,
                              q=q_lines, solver=solver, xtol=xtol, end_xtol=end_xtol, alpha_hi=hi,
                              alpha_min=alpha_min, competitor_q=competitor_scale(fps, branches, against, alpha_c))
        notes.append(scaled.note(curve_nodes))
        if scaled.ok:
            alpha_c, c_kind = scaled.alpha_c, scaled.alpha_c_kind
            if scaled.alpha_l is not None:
                alpha_l = scaled.alpha_l
            elif alpha_l is not None and alpha_l < alpha_c:
                notes.append(f"α_l not located at nodes = {scale_nodes}; the curves' α_l {alpha_l:.4g} lies below "
                             "the refined α_c and is dropped")
                alpha_l = None
            c_location = dict(nodes=scale_nodes, bracket=list(scaled.alpha_c_bracket), alpha_curve_nodes=a_c_grid,
                              curve_nodes=curve_nodes, kind=c_kind)
        if progress:
            progress(f"refine at nodes = {scale_nodes}", 1, 1)
    gap = unknown_gap(gm, alpha_c, alpha_l, el, branches["semantic"])
    if gap is not None:
        notes.append(gap.note)
        alpha_l = None
    c_bound, c_reason, l_bound, l_reason = _reasons(g, branches, alpha_c, alpha_l, lo, hi, alpha_min, alpha_max)
    if gap is not None:
        l_bound, l_reason = gap.bound, gap.reason
    if alpha_c is None and gm is not None:
        c_reason = _global_reason(gm, lo, hi) + "; " + c_reason
    zero = zero_point_note(params, branches)      # any solver (the split rule, the engine, a stand-in)
    if zero is not None:
        notes.append(zero)
        if alpha_c is None and not any(br.valid() for br in branches.values()):
            c_reason = zero + "; " + c_reason
    if mixed_alphas is None:
        mixed_alphas = [round(alpha_c, 4)] if alpha_c is not None else []
    if scaled is not None and scaled.ok:
        scale = resolution(scaled.points)       # each point against its own order (the competitor's may be finer)
        scale = None if scale is None else f"α_c located with the split rule at nodes = {scale_nodes}: {scale}"
    else:
        scale = _scale_note(branches, [a for a in (alpha_c, alpha_l) if a is not None], nodes) if split_rule else None
    if scale is not None:
        notes.append(scale)
    mixed = mixed_at(params, {b: list(br) + br.extra for b, br in branches.items()}, mixed_alphas,
                     nodes=mixed_nodes, progress=progress)
    prov = _prov(dict(params=params.to_dict(), alphas=list(map(float, grid)), nodes=nodes, curve_nodes=curve_nodes,
                      xtol=xtol, refine=refine, mixed_alphas=list(map(float, mixed_alphas)), mixed_nodes=mixed_nodes,
                      max_steps=max_steps, extend=extend, alpha_min=alpha_min, alpha_max=alpha_max,
                      end_xtol=end_xtol, alpha_range=[lo, hi], alpha_c_location=c_location,
                      scale_refinement=None if scaled is None else scaled.to_dict()),
                 kind="transition", states={b: br.states() for b, br in branches.items()},
                 solves={b: br.solves for b, br in branches.items()})
    if scaled is not None and scaled.ok:
        c_nodes = scale_nodes
        l_nodes = scale_nodes if scaled.alpha_l is not None else l_at
    else:
        c_nodes = _c_order(c_kind, c_location, alpha_c, a_c_ref, nodes, curve_nodes)
        l_nodes = c_nodes if alpha_l is not None and alpha_l == alpha_c else l_at
    return TransitionResult(params, alpha_c, alpha_l, el, sem, pos, g, branches, against, c_bound, l_bound,
                            c_reason, l_reason, (lo, hi), a_c_grid, a_l_grid, pinned_crossing(sem, g), mixed,
                            refined, notes, prov, fixed_points=fps, global_minimum=gm, alpha_c_kind=c_kind,
                            alpha_c_location=c_location, alpha_c_nodes=None if alpha_c is None else c_nodes,
                            alpha_l_nodes=None if alpha_l is None else l_nodes,
                            scale_refinement={} if scaled is None else scaled.to_dict())


def _c_order(kind: str, location: dict, alpha_c, refined, nodes: int, curve_nodes: int) -> int:
    """The order α_c was located at without a scale-aware refinement: the growth factor's crossing at its
    location's order; a crossing at ``nodes`` where the Brent refinement gave it; else the curves' order (a branch
    end, a table interpolation)."""
    if kind == "competitor loses stability":
        return int(location.get("nodes", curve_nodes))
    return nodes if refined is not None and alpha_c == refined else curve_nodes


def at_zero_q(sol, sigma: float) -> bool:
    """Whether a solved point is the q = 0 point: q = 0 exactly (the split rule reports it so) or below the
    floor ``ZERO_Q·σ²`` (the QMC engine's q there is round-off, ~1e-22: ``engine.zero_q_record``)."""
    from ..theory.zero_point import ZERO_Q
    q = getattr(sol, "q", None)
    return q is not None and math.isfinite(q) and abs(q) < ZERO_Q * sigma ** 2


def zero_point_note(params: ModelParams, branches) -> str | None:
    """Where the followed branches sit at the q = 0 point (:mod:`attnphase.theory.zero_point`, a strong ridge;
    :func:`at_zero_q`), one line saying so, with the point's stability and the λ below which a positional
    (semantic) branch leaves it at the largest such α (growth factor 1 against m, θ; it falls with α); None
    where no solved point is at q = 0. Any point solver (was: the split rule's only, so a transition through
    another solver never quoted the onsets) and any L, A, P; the stability and onsets where L·r* ≤ 6 (the
    closed form's range)."""
    from ..theory.zero_point import MAX_DIMS, branch_onsets, largest_growth
    at = {b: sorted(p.alpha for p in list(br) + br.extra if at_zero_q(p, params.sigma))
          for b, br in branches.items()}
    if not any(at.values()):
        return None
    both = all(at.values()) and not any(br.valid() for br in branches.values())
    alphas = sorted({a for v in at.values() for a in v})
    top = alphas[-1]
    where = "; ".join(f"{b} at {len(v)} α's in [{min(v):g}, {max(v):g}]" for b, v in at.items() if v)
    head = ("both branches collapse to q = 0 (the student Q = 0) wherever solved" if both
            else "q = 0 (the student Q = 0) reached") + f" ({where}); there e_t = α ε_g"
    small = params.L * params.r_star <= MAX_DIMS
    growth = largest_growth(params, top) if small else math.nan
    stab = (f"; the q = 0 point at α = {top:g} is " + ("stable" if growth <= 1 else "unstable")
            + f" (largest growth factor {growth:.3g})") if math.isfinite(growth) else ""
    onsets = [f"a {name} branch leaves q = 0 for λ < {lam:.4g}"
              for name, lam in (branch_onsets(params, top) if small else {}).items()]
    return head + stab + (f"; at α = {top:g} " + ", ".join(onsets) + f" (here λ = {params.lam:g})"
                          if onsets else "")


def _against(g, alpha_c, branches) -> str:
    """The semantic branch's competitor: the positional branch, or the uninformative point where the
    positional branch collapsed onto it (just below α_c; anywhere when there is no α_c)."""
    if not branches["positional"].valid():
        return "uninformative"
    rows = g[g["e_t_pos"].notna()]
    if alpha_c is not None:
        rows = rows[rows["alpha"] < alpha_c]
    return str(rows["kind_pos"].iloc[-1]) if len(rows) and alpha_c is not None else "positional"


def pinned_crossing(sem, g) -> float | None:
    """α where the *pinned* semantic branch, its unstable (saddle) part included, crosses the competitor's
    e_t: the transition a dynamics confined to m = 0 would see. Only reported next to α_c (never as it)."""
    s = sem[sem["state"].isin(["ok", "unstable"])][["alpha", "e_t"]]
    m = s.merge(g[["alpha", "e_t_pos"]].dropna(), on="alpha")
    return table_root(m["alpha"], m["e_t"] - m["e_t_pos"], "down") if len(m) >= 2 else None


def _reasons(g, branches, alpha_c, alpha_l, lo, hi, alpha_min, alpha_max):
    """Bounds and reasons for a missing α_c / α_l."""
    c_bound = l_bound = None
    c_reason = l_reason = ""
    sem_end, pos_end = branches["semantic"].end, branches["positional"].end
    both = g.dropna(subset=["delta_e_t"])
    if alpha_c is None:
        if not branches["semantic"].valid():
            c_bound = f"> {hi:g}"
            saddles = [p.alpha for p in branches["semantic"] if p.state is PointState.UNSTABLE]
            c_reason = f"no valid semantic fixed point for α ≤ {hi:g}" + (
                f" (it exists only as a saddle, unstable against m, at {len(saddles)} α's in "
                f"[{min(saddles):g}, {max(saddles):g}]; elsewhere collapsed or not found)" if saddles else "")
        elif both.empty:
            c_reason = ("the two branches are never valid at the same α (semantic ends at "
                        f"{_fmt_end(sem_end)}, positional at {_fmt_end(pos_end)})")
        elif both["delta_e_t"].iloc[-1] > 0:
            c_bound = f"> {hi:g}"
            c_reason = f"e_t^sem > e_t^pos up to α = {hi:g}" + (" (α_max)" if hi >= alpha_max - 1e-9 else "")
        elif both["delta_e_t"].iloc[0] < 0:
            c_bound = f"< {both['alpha'].iloc[0]:g}"
            c_reason = (f"e_t^sem < e_t^pos wherever both are valid (from α = {both['alpha'].iloc[0]:g}); the "
                        f"semantic branch ends at {_fmt_end(sem_end)}")
        else:
            c_reason = "no down-crossing of e_t^sem − e_t^pos"
    if alpha_l is None:
        top = g.dropna(subset=["eps_lin_minus_eps_g"])
        if len(top) and top["eps_lin_minus_eps_g"].iloc[-1] < 0:
            l_bound = f"> {hi:g}"
            l_reason = f"ε_g of the global minimum stays above ε_lin up to α = {hi:g}"
        else:
            l_reason = "no crossing of ε_g(global) and ε_lin" + ("" if alpha_c is not None else " (no α_c)")
    return c_bound, c_reason, l_bound, l_reason


def _fmt_end(end) -> str:
    return "no end in range" if end is None else f"α ≈ {end.alpha:.4g} ({end.kind.value})"


@dataclass(frozen=True)
class Switch:
    """Where the global minimum becomes semantic: ``alpha_c`` (None when not located), the kind below it
    (``against``) and how it happens (``kind``): ``crossing`` (two stable fixed points exchange the lowest e_t),
    ``continuous`` (the semantic branch splits off the competitor, θ → 0 at α_c, e_t equal there),
    ``semantic branch appears`` (a fold below which it does not exist), ``competitor loses stability``."""

    alpha_c: float | None
    against: str
    kind: str
    bracket: tuple[float, float]


def _row(fps, a, kind):
    r = fps[(fps["alpha"] == a) & (fps["kind"] == kind) & fps["stable"]]
    return None if r.empty else r.iloc[0]


CONTINUOUS_TOL = 0.01
"""Where the uninformative point's growth factor crosses +1 (solved at the stability rule's resolution) and
where the followed semantic branch ends (at ``curve_nodes``) are one point — a continuous birth — when they lie
within this distance in α (measured apart by up to 0.006 at σ = 0.5, λ = 0.001, ω = 0.5: 1.594 and 1.589)."""

Locator = Callable[[str, float, float], "float | None"]
"""``locate(kind, a0, a1)``: where the growth factor of the fixed point ``kind`` crosses +1 in ``[a0, a1]``."""


def global_switch(gm, fps, branches, alpha_c_crossing: float | None = None,
                  locate: Locator | None = None) -> Switch | None:
    """α_c as the α from which the global minimum (:func:`~.stability.global_minimum`) is semantic at every
    larger α of the table; None when it is not semantic at the top, or already at the bottom.

    Where the competitor stops being stable in the bracket, ``locate`` (:func:`growth_crossing` with solves)
    finds its growth factor's crossing of +1; without it the crossing is interpolated on the table. When the
    semantic branch begins inside the bracket: at its end if it merges with the uninformative point there
    (``continuous``: θ → 0, or the competitor turns unstable within :data:`CONTINUOUS_TOL` of it while θ is
    small there, :data:`BIRTH_OVERLAP`); where the competitor turns unstable if that comes first (the
    followed semantic branch begins later, at a fold: ``competitor loses stability``); else at the e_t
    crossing above the fold (``semantic branch appears``: α_c = the fold only if the semantic point is already
    the lower one there; the competitor's instability instead when the semantic e_t stays above up to it)."""
    known = gm[gm["global_kind"] != "none"].sort_values("alpha").reset_index(drop=True)
    if known.empty or known["global_kind"].iloc[-1] != "semantic":
        return None
    not_sem = np.flatnonzero(known["global_kind"].to_numpy() != "semantic")
    if not_sem.size == 0:
        return None
    i = int(not_sem[-1])
    a0, a1 = float(known["alpha"].iloc[i]), float(known["alpha"].iloc[i + 1])
    comp = str(known["global_kind"].iloc[i])
    s0, s1, c0, c1 = _row(fps, a0, "semantic"), _row(fps, a1, "semantic"), _row(fps, a0, comp), _row(fps, a1, comp)
    if s0 is not None and c1 is not None:
        if alpha_c_crossing is not None and a0 <= alpha_c_crossing <= a1 and comp in ("positional", "uninformative"):
            return Switch(alpha_c_crossing, comp, "crossing", (a0, a1))
        d0, d1 = s0["e_t"] - c0["e_t"], s1["e_t"] - c1["e_t"]
        return Switch(float(a0 - d0 * (a1 - a0) / (d1 - d0)), comp, "crossing", (a0, a1))
    if s0 is None:
        end = branches["semantic"].end
        if end is None or not a0 - 1e-9 <= end.alpha <= a1 + 1e-9:
            return Switch(None, comp, "semantic branch appears", (a0, a1))
        a_birth = _theta_zero(branches["semantic"], end)
        if comp == "uninformative" and (a_birth is not None or end.kind is PointState.COLLAPSED):
            return Switch(float(end.alpha if a_birth is None else a_birth), comp, "continuous", (a0, a1))
        a_u = _competitor_crossing(fps, comp, a0, a1, locate) if _loses_stability(fps, comp, a0, a1) else math.inf
        if comp == "uninformative" and abs(a_u - end.alpha) <= CONTINUOUS_TOL and _small_at_end(branches["semantic"]):
            # the uninformative point turns unstable (against θ) where the semantic branch appears with a small
            # θ: the semantic branch splits off it, e_t is continuous there
            return Switch(float(end.alpha), comp, "continuous", (a0, a1))
        if a_u < end.alpha:
            return Switch(a_u, comp, "competitor loses stability", (a0, a1))
        a_x = _crossing_above_fold(branches["semantic"], end, fps, comp, a0, a1)
        if a_u < a_x:
            return Switch(a_u, comp, "competitor loses stability", (a0, a1))
        return Switch(a_x, comp, "semantic branch appears", (a0, a1))
    # the competitor stops being stable between a0 and a1: where its growth factor crosses +1 — unless the
    # semantic e_t falls below the competitor's (the saddle's e_t at a1 still counts) before that (σ = 1,
    # ω = 0.45: e_t crossing 1.047, the uninformative point stable up to 1.098)
    a_u = _competitor_crossing(fps, comp, a0, a1, locate)
    a_x = _et_crossing(fps, comp, a0, a1, alpha_c_crossing)
    if a_x is not None and a_x < a_u:
        return Switch(a_x, comp, "crossing", (a0, a1))
    return Switch(a_u, comp, "competitor loses stability", (a0, a1))


def _et_crossing(fps, comp: str, a0: float, a1: float, alpha_c_crossing: float | None) -> float | None:
    """Where the semantic e_t falls below the competitor's in ``[a0, a1]`` (stable or not at ``a1``): the
    refined pinned crossing if it lies there, else the linear interpolation of the table; None if the semantic
    e_t is not above at ``a0`` and below at ``a1``."""
    rows = {(a, k): fps[(fps["alpha"] == a) & (fps["kind"] == k)] for a in (a0, a1) for k in ("semantic", comp)}
    if any(r.empty for r in rows.values()):
        return None
    d0, d1 = (float(rows[(a, "semantic")]["e_t"].iloc[0]) - float(rows[(a, comp)]["e_t"].iloc[0]) for a in (a0, a1))
    if not (d0 > 0.0 > d1):
        return None
    if alpha_c_crossing is not None and a0 <= alpha_c_crossing <= a1 and comp in ("positional", "uninformative"):
        return float(alpha_c_crossing)
    return float(a0 - d0 * (a1 - a0) / (d1 - d0))


BIRTH_OVERLAP = 0.25
"""θ/(σ√q) at the semantic branch's lowest valid point below which its end, where the uninformative point turns
unstable, is its birth from that point (measured 0.18 at σ = 0.5, λ = 0.001, ω = 0.5, a slowed-down collapse);
a fold keeps a large θ (1.2 at σ = 1, ω = 0.02, α = 0.524)."""


def _small_at_end(branch) -> bool:
    v = branch.valid()
    if not v:
        return False
    p = v[0]
    return bool(abs(float(p.theta)) < BIRTH_OVERLAP * branch.params.sigma * math.sqrt(max(float(p.q), 0.0)))


def _competitor_crossing(fps, kind: str, a0: float, a1: float, locate: Locator | None) -> float:
    """Where the growth factor of ``kind`` crosses +1 in ``[a0, a1]``: ``locate``'s answer, else the linear
    interpolation of the table's factors (the midpoint if they do not bracket +1)."""
    b = _factor_bracket(fps, kind, a0, a1)
    if b is None:
        return 0.5 * (a0 + a1)
    (b0, st0), (b1, st1) = b
    if locate is not None:
        r = locate(kind, b0, b1)
        if r is not None:
            return float(r)
    return float(b0 + (1.0 - st0) * (b1 - b0) / (st1 - st0))


def _factor_bracket(fps, kind: str, a0: float, a1: float):
    """The tightest pair of neighbouring table rows of ``kind`` in ``[a0, a1]`` whose growth factor goes from
    ≤ 1 to > 1 (the first such pair): ``((α, factor), (α, factor))``, or None."""
    r = fps[(fps["kind"] == kind) & (fps["alpha"] >= a0) & (fps["alpha"] <= a1)].sort_values("alpha")
    a, st = r["alpha"].to_numpy(float), r["stability"].to_numpy(float)
    for k in range(len(a) - 1):
        if math.isfinite(st[k]) and math.isfinite(st[k + 1]) and st[k] <= 1.0 < st[k + 1]:
            return (float(a[k]), float(st[k])), (float(a[k + 1]), float(st[k + 1]))
    return None


def _crossing_above_fold(branch, end, fps, comp: str, a0: float, a1: float) -> float:
    """The e_t crossing of the semantic branch (its valid points from the fold ``end`` up to ``a1``) and the
    competitor (e_t interpolated linearly between its table rows at ``a0``, ``a1``); the fold itself when the
    semantic point is already the lower one there; ``a1`` when the semantic point stays above up to ``a1`` (no
    crossing in the bracket: the caller's competitor instability then decides — σ = 1, ω = 0.2 gave the fold
    0.574 although e_t^sem > e_t^uninformative up to 0.6, where the uninformative point turns unstable)."""
    c = fps[(fps["kind"] == comp) & fps["alpha"].isin([a0, a1])].sort_values("alpha")
    pts = [p for p in branch.valid() if end.alpha - 1e-9 <= p.alpha <= a1 + 1e-9]
    if len(c) < 2 or not pts:
        return float(end.alpha)
    ca, ce = c["alpha"].to_numpy(float), c["e_t"].to_numpy(float)
    al = np.array([p.alpha for p in pts])
    d = np.array([p.e_t for p in pts]) - np.interp(al, ca, ce)
    r = table_root(al, d, "down") if len(al) >= 2 else None
    if d[0] < 0:
        return float(end.alpha)
    return float(a1) if r is None else float(r)


CROSSING_WIDEN = 2
"""How many neighbouring table rows :func:`growth_crossing` tries on each side when the table's bracket of
+1 (its factors were evaluated at the survey's resolution) does not bracket +1 at ``stability_nodes``."""


def growth_crossing(params: ModelParams, kind: str, a0: float, a1: float, fps, *, nodes: int | None,
                    solver: PointSolver, xtol: float = END_XTOL, max_solves: int = 8,
                    stability_nodes: int | None = None, info: dict[str, Any] | None = None) -> float | None:
    """Where the growth factor of the fixed point ``kind`` (``uninformative`` or a pinned branch) crosses +1
    between ``a0`` (factor ≤ 1 in the table ``fps``) and ``a1`` (> 1): Illinois regula falsi on warm-started
    solves at resolution ``nodes`` until the bracket is below ``xtol`` or ``max_solves`` solves are spent.

    ``stability_nodes`` (MODEL.md §7, :func:`attnphase.theory.solve_point`): the rule the factor is evaluated
    on; None keeps the solver's default and trusts the table's factors at ``a0``, ``a1``. Given, the two ends
    are solved again at that resolution (the table's factors, from the survey's cheaper rule, may not bracket
    +1 there: σ = 1, ω = 0.02 crosses at 0.499 on nodes 4, 0.513 on nodes 8) and, if they do not bracket +1,
    the bracket is widened to the neighbouring table rows of ``kind`` (:data:`CROSSING_WIDEN` per side).
    None when no bracket is found or a solve fails (the caller falls back); ``info`` (a dict) is filled with
    the resolution, the final bracket, the number of solves and, on None, the reason (``note``)."""
    from .stability import SURVEY_MAX_STEPS

    info = {} if info is None else info
    info.update(kind=kind, nodes=nodes, stability_nodes=stability_nodes, table_bracket=[float(a0), float(a1)],
                solves=0, note="")
    rows = fps[fps["kind"] == kind].sort_values("alpha")
    at = {float(a): r for a, (_, r) in zip(rows["alpha"], rows.iterrows())}
    if a0 not in at or a1 not in at:
        info["note"] = "no table row at an end of the bracket"
        return None
    extra = {} if stability_nodes is None else dict(stability_nodes=stability_nodes)

    def start_of(r):
        return SimpleNamespace(q=float(r["q"]), m=float(r["m"]), V=float(r["V"]), theta=float(r["theta"]),
                               branch=kind)

    def solve(a, start):
        info["solves"] += 1
        s = solver(params, float(a), kind, nodes=nodes, init=start, max_steps=SURVEY_MAX_STEPS, stability=True,
                   rtol=CURVE_RTOL, **extra)
        if not s.converged or s.stability is None or not math.isfinite(s.stability):
            return None
        return s

    if stability_nodes is None:
        f0, f1 = (float(at[a]["stability"]) - 1.0 for a in (a0, a1))
        starts = {a0: start_of(at[a0]), a1: start_of(at[a1])}
        if not (math.isfinite(f0) and math.isfinite(f1) and f0 <= 0.0 < f1):
            info["note"] = "the table's factors do not bracket +1"
            return None
    else:
        b = _rebracket(at, a0, a1, lambda a: solve(a, start_of(at[a])), info)
        if b is None:
            return None
        (a0, f0, s0), (a1, f1, s1) = b
        starts = {a0: s0, a1: s1}
    info["bracket"] = [float(a0), float(a1)]
    lo, hi, side = a0, a1, 0
    tol = xtol if stability_nodes is None else max(xtol, 2.0 * CROSSING_FIT[1])   # (the fit does the rest)
    for _ in range(max_solves):
        if hi - lo <= tol:
            break
        a = lo - f0 * (hi - lo) / (f1 - f0)
        a = min(max(a, lo + 0.05 * (hi - lo)), hi - 0.05 * (hi - lo))
        st = starts[lo] if a - lo < hi - a else starts[hi]
        s = solve(a, st)
        if s is None:
            info["note"] = f"solve failed at α = {a:.4g}"
            return None
        f = float(s.stability) - 1.0
        if f <= 0.0:
            lo, f0 = a, f
            f1 = f1 * 0.5 if side == -1 else f1
            side = -1
        else:
            hi, f1 = a, f
            f0 = f0 * 0.5 if side == 1 else f0
            side = 1
        starts[a] = s if stability_nodes is not None else st   # (the table's rows: same resolution as before)
    info["final_bracket"] = [float(lo), float(hi)]
    r = float(lo - f0 * (hi - lo) / (f1 - f0))
    if stability_nodes is None:
        return r
    return _fit_crossing(r, lambda a: solve(a, min(starts.items(), key=lambda kv: abs(kv[0] - a))[1]), info)


CROSSING_FIT = (9, 0.005)
"""Points and spacing in α of the local fit of :func:`_fit_crossing`."""


def _fit_crossing(guess: float, solve, info: dict, fit: tuple[int, float] = CROSSING_FIT) -> float | None:
    """The growth factor's crossing of +1 as the root of a least-squares line through ``fit[0]`` evaluations
    spaced ``fit[1]`` around ``guess`` (recentred once if the root falls outside), outliers beyond 3 MADs
    (at least 1e-3) dropped. The factor carries isolated glitches of up to ~0.015 at nodes 8 (σ = 1, ω = 0.02,
    λ = 0.01: 0.985 at α = 0.53 between 0.998 at 0.52 and 1.005 at 0.535), which led the regula falsi to
    0.534 instead of ≈ 0.523. ``info`` gets the fit's points, the dropped ones and the root's standard error
    (``fit_stderr``). None when fewer than four evaluations succeed."""
    k, h = fit
    centre = float(guess)
    for attempt in range(2):
        a = centre + h * (np.arange(k) - (k - 1) / 2)
        sols = [solve(x) for x in a]
        ok = np.array([s is not None for s in sols])
        a = a[ok]
        y = np.array([float(s.stability) - 1.0 for s in sols if s is not None])
        if a.size < 4:
            info["note"] = f"the local fit's solves failed ({int((~ok).sum())} of {k})"
            return None
        keep = np.ones(a.size, bool)
        for _ in range(2):
            c = np.polyfit(a[keep], y[keep], 1)
            res = y - np.polyval(c, a)
            mad = float(np.median(np.abs(res[keep] - np.median(res[keep]))))
            keep = np.abs(res) <= max(3.0 * 1.4826 * mad, 1e-3)
        c = np.polyfit(a[keep], y[keep], 1)
        if not c[0] > 0:
            info["note"] = "the local fit of the growth factor is not increasing"
            return None
        root = float(-c[1] / c[0])
        n = int(keep.sum())
        s_res = float(np.sqrt(np.sum((y[keep] - np.polyval(c, a[keep])) ** 2) / max(n - 2, 1)))
        info.update(fit_alphas=[float(x) for x in a], fit_factors=[float(v + 1.0) for v in y],
                    fit_dropped=[float(x) for x in a[~keep]], fit_slope=float(c[0]),
                    fit_stderr=float(s_res / c[0] / math.sqrt(n)), regula_falsi=float(guess))
        if a.min() - h <= root <= a.max() + h:
            return root
        centre = root
    info["note"] = f"the local fit's root {root:.4g} stays outside its window"
    return None


def _rebracket(at: dict, a0: float, a1: float, solve, info: dict):
    """``((α, factor − 1, solution), …)`` for a pair of table α's (``a0``, ``a1`` or up to
    :data:`CROSSING_WIDEN` neighbours beyond them) whose factors, solved again by ``solve``, go from ≤ 0 to > 0;
    None (with ``info["note"]``) when none is found or a solve fails."""
    alphas = sorted(at)
    i0, i1 = alphas.index(a0), alphas.index(a1)
    cache: dict[float, Any] = {}

    def f(a):
        if a not in cache:
            cache[a] = solve(a)
        s = cache[a]
        return None if s is None else float(s.stability) - 1.0

    widened = []
    for _ in range(CROSSING_WIDEN + 1):
        v0, v1 = f(alphas[i0]), f(alphas[i1])
        if v0 is None or v1 is None:
            info["note"] = f"solve failed at α = {alphas[i0] if v0 is None else alphas[i1]:g}"
            return None
        if v0 <= 0.0 < v1:
            info["widened"] = widened
            return ((alphas[i0], v0, cache[alphas[i0]]), (alphas[i1], v1, cache[alphas[i1]]))
        if v0 > 0.0 and i0 > 0:          # already above +1 at the lower end: one row further down
            i0 -= 1
            widened.append(alphas[i0])
        elif v1 <= 0.0 and i1 < len(alphas) - 1:   # still at or below +1 at the upper end: one row up
            i1 += 1
            widened.append(alphas[i1])
        else:
            break
    info["widened"] = widened
    info["note"] = (f"the factors at nodes {info['stability_nodes']} do not bracket +1 on the table rows "
                    f"{alphas[i0]:g}–{alphas[i1]:g}")
    return None


def precise_crossing(params: ModelParams, sw: Switch, fps, *, nodes: int, curve_nodes: int, solver: PointSolver,
                     xtol: float, notes: list[str]) -> tuple[Switch, dict[str, Any]]:
    """α_c of kind ``competitor loses stability`` located again at the transition's resolution: the competitor's
    growth factor solved and evaluated at ``nodes`` (:func:`growth_crossing` with ``stability_nodes = nodes``),
    started from the table's bracket of +1. :func:`global_switch` decides the kind on the survey's resolution
    (``curve_nodes``: the table, the semantic branch's fold and the crossing compared on one rule); the
    reported α must not carry that rule's bias (σ = 1, ω = 0.02: the factor runs ~0.01 high on nodes 4, which
    moved the crossing by ~0.014). Returns the switch (unchanged when the precise location fails: a note says
    so) and the location record (``alpha_curve_nodes``, ``difference`` = precise − survey's)."""
    loc: dict[str, Any] = dict(alpha_curve_nodes=float(sw.alpha_c), curve_nodes=curve_nodes)
    if curve_nodes == nodes:   # the survey's factors are on this rule already (transition: stability_nodes)
        loc.update(nodes=nodes, stability_nodes=nodes, difference=0.0)
        return sw, loc
    b = _factor_bracket(fps, sw.against, *sw.bracket)
    if b is None:
        loc.update(nodes=curve_nodes, note="the table's factors do not bracket +1")
    else:
        r = growth_crossing(params, sw.against, b[0][0], b[1][0], fps, nodes=nodes, solver=solver, xtol=xtol,
                            stability_nodes=nodes, info=loc)
        if r is not None:
            loc.update(alpha=r, difference=r - float(sw.alpha_c))
            return replace(sw, alpha_c=r), loc
    notes.append(f"α_c (the {sw.against} point's growth factor crossing +1) left at the survey's resolution "
                 f"nodes = {curve_nodes}: not located at nodes = {nodes} ({loc.get('note', '')})")
    loc.update(nodes=curve_nodes, stability_nodes=curve_nodes)
    return sw, loc


def _loses_stability(fps, kind: str, a0: float, a1: float) -> bool:
    """True when the fixed point ``kind`` is stable at ``a0`` and a saddle at ``a1``."""
    r0 = fps[(fps["alpha"] == a0) & (fps["kind"] == kind)]
    r1 = fps[(fps["alpha"] == a1) & (fps["kind"] == kind)]
    return bool(len(r0) and len(r1) and r0["stable"].iloc[0] and not r1["stable"].iloc[0])


def _theta_zero(branch, end) -> float | None:
    """Where θ² of the semantic branch extrapolates linearly to 0 from its two lowest valid points (a
    continuous birth: θ² ∝ α − α_c near it), if that lies between the end's bracketing α's (with a margin of
    one bracket)."""
    v = branch.valid()
    if len(v) < 2:
        return None
    (a1, t1), (a2, t2) = [(p.alpha, float(p.theta) ** 2) for p in v[:2]]
    if not t2 > t1 > 0 or a2 == a1:
        return None
    a0 = a1 - t1 * (a2 - a1) / (t2 - t1)
    lo = end.alpha_invalid - abs(end.alpha_valid - end.alpha_invalid)
    return float(a0) if lo <= a0 <= end.alpha_valid else None


def _alpha_l_global(gm, alpha_c: float, alpha_l: float | None, eps_lin: float, semantic=None) -> float | None:
    """α_l (≥ α_c) on the global minimum's ε_g: the given (refined) value if it is not below α_c and the global
    ε_g stays above ε_lin on the table between α_c and it, else the table crossing above α_c (α_c itself when
    the global ε_g is already below ε_lin there). The given value is stale when α_c moved below the α where it
    was found: σ = 1, ω = 0.15 kept α_l = 0.639 (= the pinned branches' e_t crossing, where the semantic ε_g was
    already below ε_lin) after α_c moved to the fold 0.544, although ε_g^sem(0.6) = 0.029 < ε_lin = 0.054.
    ``semantic`` (the followed semantic Branch): where the global ε_g is below ε_lin from the first table row
    above α_c, the crossing is read on its valid points between α_c and that row (α_c if the lowest of them is
    already below ε_lin); without it, α_c."""
    above = gm[(gm["alpha"] > alpha_c) & gm["eps_g_global"].notna()]
    if alpha_l is not None and alpha_l >= alpha_c:
        if not (above.loc[above["alpha"] < alpha_l, "eps_g_global"] < eps_lin).any():
            return alpha_l
    if above.empty:
        return None
    first = above.iloc[0]
    if float(first["eps_g_global"]) < eps_lin:
        if semantic is None or first["global_kind"] != "semantic":
            return float(alpha_c)
        # the crossing lies in [α_c, first row]: on the semantic branch's own (adaptive) points there — α_c
        # itself only if the semantic ε_g is already below ε_lin at α_c (a continuous birth starts at the
        # competitor's ε_g: λ = 0.001, ω = 0.02 had ε_g^sem(0.5) = 0.00369 < ε_lin = 0.00386 < ε_g(α_c))
        # (with the nearest valid point below α_c, if any: with α_c moved up by its nodes-8 location there may be
        # no semantic point between α_c and the row, and the lowest one above α_c alone would say "α_c" even where
        # ε_g^sem crosses ε_lin between α_c and that row)
        pts = sorted((float(p.alpha), float(p.eps_g)) for p in semantic.valid()
                     if p.alpha <= float(first["alpha"]) + 1e-9 and math.isfinite(float(p.eps_g)))
        pts = [q for q in pts if q[0] < alpha_c - 1e-9][-1:] + [q for q in pts if q[0] >= alpha_c - 1e-9]
        if not pts:
            return float(alpha_c)
        a, e = np.array(pts).T
        if float(np.interp(alpha_c, a, e)) < eps_lin:
            return float(alpha_c)
        r = table_root(a, eps_lin - e, "up")
        return float(max(r, alpha_c)) if r is not None else 0.5 * (float(alpha_c) + float(first["alpha"]))
    return table_root(above["alpha"], eps_lin - above["eps_g_global"], "up")


@dataclass(frozen=True)
class UnknownGap:
    """Table α's between α_c and α_l where no stable fixed point is known (global kind ``none``): the global
    minimum, hence its ε_g, is unknown there, so α_l is only bracketed, ``[alpha_c, alpha_l]``."""

    alpha_c: float
    alpha_l: float
    alphas: tuple[float, ...]
    semantic_from: float | None = None
    """The semantic branch's first valid α above α_c, when it lies above α_c (no stable fixed point known
    between them even without a table α there)."""

    @property
    def bound(self) -> str:
        return f"{self.alpha_c:.4f}–{self.alpha_l:.4f}"

    def _where(self) -> str:
        at = "at α = " + ", ".join(f"{a:g}" for a in self.alphas) if self.alphas else ""
        between = ("" if self.semantic_from is None else
                   f"between α_c and {self.semantic_from:.4f}, where the semantic branch is first valid")
        return " and ".join(x for x in (at, between) if x)

    @property
    def reason(self) -> str:
        return (f"α_l lies in [{self.alpha_c:.4f}, {self.alpha_l:.4f}]: no stable fixed point is known {self._where()} "
                f"(the global minimum and its ε_g are unknown there); {self.alpha_l:.4f} is where the global ε_g is "
                "first known below ε_lin")

    @property
    def note(self) -> str:
        return f"α_l = {self.alpha_l:.4f} not certified: global minimum unknown {self._where()}"


SEMANTIC_GAP_TOL = 2 * END_XTOL
"""How far above α_c the semantic branch's first valid point must lie for the stretch between them to count as
unknown (a branch end is located to ``END_XTOL``, so a continuous birth or a fold at α_c lies within this)."""


def unknown_gap(gm, alpha_c: float | None, alpha_l: float | None, eps_lin: float = math.nan,
                semantic=None) -> UnknownGap | None:
    """Table α's just above α_c where the global-minimum table (:func:`~.stability.global_minimum`) has kind
    ``none`` (no stable fixed point converged) before its first known row, when α_l lies below that row: α_l was
    then read where the global minimum is unknown (or at its edge), and is only bracketed by α_c and the first α
    where the global ε_g is *known* below ε_lin — α_l itself, or the first valid point of the ``semantic``
    Branch with ε_g below ``eps_lin`` if that is higher. Also when α_l lies below the ``semantic`` Branch's
    lowest valid point and that lies above α_c (by more than :data:`SEMANTIC_GAP_TOL`), with or without a table α
    in between (α_l at that point itself: read at the edge of the unknown stretch): the competitor turned
    unstable at α_c before the semantic point exists (σ = 1, ω = 0.02 with
    α_c located at nodes 8: 0.524, the semantic branch first valid at 0.5398). None when there is no such
    stretch.

    σ = 1, ω = 0.02 (α_c located at nodes 4, before :func:`precise_crossing`): the uninformative point is a saddle
    from α_c = 0.4988, the semantic branch first valid at 0.5398 (the table's α_l), α = 0.5 between them unknown
    (docs/notes/2026-12-03-phase-boundaries.md)."""
    if gm is None or alpha_c is None or alpha_l is None:
        return None
    above = gm[gm["alpha"] > alpha_c + 1e-9].sort_values("alpha")
    kinds = above["global_kind"].to_numpy()
    n = int(np.argmax(kinds != "none")) if (kinds != "none").any() else len(kinds)
    a_known = float(above["alpha"].iloc[n]) if n < len(kinds) else math.inf
    valid = [float(p.alpha) for p in semantic.valid()] if semantic is not None else []
    first = min(valid) if valid else None   # the semantic branch's lowest valid point
    hole = first if first is not None and first > alpha_c + SEMANTIC_GAP_TOL and alpha_l <= first + 1e-9 else None
    if hole is None and (n == 0 or alpha_l >= a_known - 1e-9):
        return None
    upper = float(alpha_l)
    if semantic is not None:
        ok = [float(p.alpha) for p in semantic.valid() if p.alpha >= alpha_c - 1e-9 and float(p.eps_g) < eps_lin]
        upper = max([upper] + ok[:1])
    rows = tuple(float(a) for a in above["alpha"].iloc[:n]) if alpha_l < a_known - 1e-9 else ()
    return UnknownGap(float(alpha_c), upper, rows, hole)


def _kind_runs(gm) -> list[dict[str, Any]]:
    """The global minimum's kind as runs over the α table: [{kind, alpha_from, alpha_to}, …]."""
    if gm is None or gm.empty:
        return []
    runs: list[dict[str, Any]] = []
    for a, k in zip(gm["alpha"], gm["global_kind"]):
        if runs and runs[-1]["kind"] == k:
            runs[-1]["alpha_to"] = float(a)
        else:
            runs.append(dict(kind=str(k), alpha_from=float(a), alpha_to=float(a)))
    return runs


def _global_reason(gm, lo: float, hi: float) -> str:
    runs = _kind_runs(gm)
    return "global minimum (lowest e_t among the stable fixed points found): " + ", ".join(
        f"{r['kind']} for α in [{r['alpha_from']:g}, {r['alpha_to']:g}]" for r in runs)
