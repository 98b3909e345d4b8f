"""Refinement of α_c and α_l by Brent's method on warm-started solves (MODEL.md §6 "Transition"):
:class:`Refiner` solves a branch at any α from the interpolated states of its known points;
:func:`refine_lines` refines the table's α_c and α_l, :func:`refine_alpha_l` α_l alone on the semantic
branch."""

from __future__ import annotations

from typing import Any

from .continuation import CURVE_RTOL, MAX_STEPS, PointSolver, PointState, point_state
from .predict import interpolate
from .roots import Unrefinable, local_root


class Refiner:
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
            return interpolate(s0, s1, t, branch, self.params.sigma, s0)
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
"""The note of :func:`refine_lines` where it tried α_l and kept the table value (its returned order is None then)."""


def refine_lines(params, branches, g, alpha_c, alpha_l, against, nodes, lo_a, hi_a, xtol, step, log, solver):
    """Brent refinement of the table estimates of α_c and α_l at order ``nodes``. Returns α_c, α_l, the order
    α_l was located at (``nodes`` where refined, None where the table value was kept) and the notes."""
    notes: list[str] = []
    l_nodes = None
    pos_ok = (PointState.OK, PointState.COLLAPSED) if against == "uninformative" else (PointState.OK,)
    R = Refiner(params, {b: branches[b].valid() if b == "semantic" else
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


def refine_alpha_l(params, branches, guess, lo, hi, resolutions, xtol, log, solver, el, notes
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
        R = Refiner(params, {"semantic": valid}, n, log, solver, dict(semantic=(PointState.OK,)))
        r = local_root(lambda a: R.valid("semantic", a).eps_g - el, guess, lo, hi, sign_below=+1.0, step=step,
                       xtol=xtol)
        if r is not None:
            if k:
                notes.append(f"α_l refined at nodes = {n} (the finer solves failed near it)")
            return float(r), int(n)
    notes.append("α_l refinement on the semantic branch failed; table value kept")
    return float(guess), None
