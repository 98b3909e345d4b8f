"""Stability of the pinned branches and mixed fixed points (MODEL.md §6 "Branches", §7).

* :func:`spinodal`: where a branch's valid region ends on a *table* (the engine locates ends itself,
  :class:`~attnphase.phase.continuation.BranchEnd`; this reads tables from elsewhere, e.g. the paper's).
* :func:`mixed_search`: fixed points with m ≠ 0 and θ ≠ 0. A damped iteration only finds attracting fixed
  points, so they are searched with a Newton-type root finder (:func:`scipy.optimize.root`, ``hybr``) on
  ``F(x) − x`` of the unpinned map, started between the two pure branches; the leading eigenvalue of the
  map's Jacobian there says whether the point is a saddle.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import numpy as np

from ..model import ModelParams
from ..theory.state import OrderParams
from .continuation import overlap_key, point_state
from .kinds import MIXED_TOL, free_point_kind, kind_of


def _vec(sol) -> np.ndarray:
    return np.array([sol.q, sol.m, sol.V, sol.theta], float)


def valid_rows(df) -> np.ndarray:
    """Rows of a branch table that are a usable (existing, locally stable) branch point."""
    if "state" in df:
        return (df["state"] == "ok").to_numpy()
    ok = np.ones(len(df), bool)
    if "converged" in df:
        ok &= df["converged"].fillna(False).astype(bool).to_numpy()
    if "stability" in df:
        st = df["stability"].astype(float).to_numpy()
        ok &= ~(np.isfinite(st) & (st > 1.0))
    return ok


def spinodal(df, side: str) -> tuple[float | None, str]:
    """Edge of a branch's valid region and how it ends.

    ``side="low"`` (semantic: exists at large α) looks below the valid run that contains the largest valid α,
    ``side="high"`` (positional) above the run containing the smallest. Returns ``(alpha, kind)``:

    * ``"unstable"`` — the next point is a converged fixed point with stability > 1: the stability crossing
      of 1 is interpolated linearly;
    * ``"collapses"`` — the branch's overlap (θ or m) goes to 0: α where the overlap² extrapolates linearly to
      0 from the last two valid points (a continuous end), if that lies between the last good and the first
      bad α, else their midpoint;
    * ``"ends"`` — loss of convergence: the midpoint between the last good and the first bad α;
    * ``(None, "valid on the whole grid")`` / ``(None, "no valid point")``.
    """
    df = df.sort_values("alpha").reset_index(drop=True)
    a = df["alpha"].to_numpy(float)
    ok = valid_rows(df)
    if not ok.any():
        return None, "no valid point"
    st = df["stability"].astype(float).to_numpy() if "stability" in df else np.full(len(df), np.nan)
    state = df["state"].to_numpy() if "state" in df else np.where(
        df["converged"].astype(bool) if "converged" in df else True, "ok", "not converged")
    col = None
    if "branch" in df and len(df):
        col = overlap_key(str(df["branch"].iloc[0]))
    idx = list(range(len(a) - 1, -1, -1)) if side == "low" else list(range(len(a)))
    started, last = False, None
    for i in idx:
        if ok[i]:
            started, last = True, i
            continue
        if not started:
            continue
        j = last
        unstable = state[i] == "unstable" or (state[i] == "ok" and math.isfinite(st[i]) and st[i] > 1.0)
        if unstable:
            if math.isfinite(st[j]) and st[j] <= 1.0 < st[i]:
                return float(a[j] + (1.0 - st[j]) * (a[i] - a[j]) / (st[i] - st[j])), "unstable"
            return float(0.5 * (a[i] + a[j])), "unstable"
        # continuous end: the overlap² is linear in α near it; extrapolate from the last two valid points
        k = j + (1 if side == "low" else -1)
        if col is not None and col in df and 0 <= k < len(a) and ok[k]:
            y1, y2 = float(df[col].iloc[j]) ** 2, float(df[col].iloc[k]) ** 2
            if y2 > y1 > 0:
                a0 = a[j] - y1 * (a[k] - a[j]) / (y2 - y1)
                if min(a[i], a[j]) <= a0 <= max(a[i], a[j]):
                    return float(a0), "collapses"
        return float(0.5 * (a[i] + a[j])), "collapses" if state[i] == "collapsed" else "ends"
    return None, "valid on the whole grid"


def _free_map(params, alpha: float, nodes: int):
    """x = (q, m, V, θ) → F(x), the unpinned map: the split-rule integrator's evaluation (MODEL.md §6; NaN where
    the map fails there)."""
    from ..theory.solution import scalar_state
    from ..theory.split_integrator import SplitIntegrator
    rule = SplitIntegrator(params, nodes)

    def F(x):
        (y,) = rule.evaluate(scalar_state(q=x[0], m=x[1], V=x[2], theta=x[3]), alpha, "free").x
        return np.array([float(np.asarray(b).reshape(-1)[0]) for b in (y.q, y.M, y.V, y.theta)])
    return F


def mixed_search(params: ModelParams, alpha: float, sem, pos, *, nodes: int = 4, fractions=(0.5,),
                 maxfev: int = 80) -> list[dict[str, Any]]:
    """Look for a fixed point with m ≠ 0 and θ ≠ 0 at ``alpha``.

    From starts between the semantic solution ``sem`` and the positional ``pos`` (q, V interpolated,
    ``m = t·m_pos``, ``θ = (1 − t)·θ_sem`` for t in ``fractions``), solve ``F(x) = x`` of the unpinned map with
    :func:`scipy.optimize.root` (``hybr``; in log q, log V). A converged root with both overlaps non-zero is
    a mixed fixed point: its ``e_t`` (the free energy there) and the leading eigenvalue of the map's Jacobian
    (finite differences; > 1: unstable, a saddle between the two pure branches) are reported.
    """
    from scipy.optimize import root

    from ..theory import solve_point

    F = _free_map(params, float(alpha), nodes)
    sc = np.array([1.0, 0.1, 1.0, 0.1])

    def to_x(z):
        return np.array([math.exp(z[0]), z[1], math.exp(z[2]), z[3]])

    def G(z):
        x = to_x(z)
        if not np.isfinite(x).all():
            return np.full(4, 1e3)
        y = F(x)
        if not (np.isfinite(y).all() and y[0] > 0 and y[2] > 0):
            return np.full(4, 1e3)
        return np.array([math.log(y[0]) - z[0], (y[1] - x[1]) / sc[1], math.log(y[2]) - z[2],
                         (y[3] - x[3]) / sc[3]])

    out = []
    xs, xp = _vec(sem), _vec(pos)
    for t in fractions:
        x0 = np.array([(1 - t) * xs[0] + t * xp[0], t * abs(xp[1]), (1 - t) * xs[2] + t * xp[2],
                       (1 - t) * abs(xs[3])])
        z0 = np.array([math.log(x0[0]), x0[1], math.log(x0[2]), x0[3]])
        try:
            r = root(G, z0, method="hybr", options=dict(xtol=1e-9, maxfev=maxfev))
            x, success, res = to_x(r.x), bool(r.success), float(np.max(np.abs(r.fun)))
            msg = str(r.message)
        except (FloatingPointError, ValueError, OverflowError) as exc:
            x, success, res, msg = x0, False, float("nan"), f"failed: {exc}"
        scale = MIXED_TOL * params.sigma * math.sqrt(max(x[0], 1e-12))
        kind = kind_of(abs(x[1]) > scale, abs(x[3]) > scale)
        row: dict[str, Any] = dict(alpha=float(alpha), start_fraction=float(t), converged=success and res < 1e-6,
                                   q=float(x[0]), m=float(x[1]), V=float(x[2]), theta=float(x[3]),
                                   residual=res, kind=kind, message=msg, nodes=nodes, e_t=float("nan"),
                                   eps_g=float("nan"), leading_eigenvalue=float("nan"))
        row["mixed"] = bool(row["converged"] and kind == "mixed")
        if row["converged"]:
            x = np.array([x[0], abs(x[1]), x[2], abs(x[3])])  # the mirror images are equivalent
            row.update(m=float(x[1]), theta=float(x[3]))
            s = solve_point(params, float(alpha), "free", nodes=nodes, coarse=False, stability=False,
                            init=SimpleNamespace(q=x[0], m=x[1], V=x[2], theta=x[3]), max_steps=3)
            row["e_t"], row["eps_g"] = float(s.e_t), float(s.eps_g)
            if row["mixed"]:  # Jacobian of the map by central differences
                J = np.empty((4, 4))
                for k in range(4):
                    h = 1e-4 * max(abs(x[k]), 1e-3)
                    e = np.zeros(4)
                    e[k] = h
                    J[:, k] = (F(x + e) - F(x - e)) / (2 * h)
                ev = np.linalg.eigvals(J)
                row["leading_eigenvalue"] = float(np.max(ev.real))
        out.append(row)
    return out


def mixed_at(params: ModelParams, branches: dict, alphas: Sequence[float], *, nodes: int = 4,
             progress: Callable[[str, int, int], None] | None = None) -> list[dict[str, Any]]:
    """:func:`mixed_search` at each α of ``alphas``, started between the nearest points of the two pure
    branches (``branches``: ``{"semantic": points, "positional": points}``) that are converged fixed points
    (valid or saddles)."""
    mixed: list[dict[str, Any]] = []
    for k, a in enumerate(float(x) for x in alphas):
        if progress:
            progress("mixed", k, len(alphas))
        near = {}
        for b in ("semantic", "positional"):
            pts = [x for x in branches[b] if point_state(x).exists]
            near[b] = min(pts, key=lambda x: abs(x.alpha - a), default=None)
        if near["semantic"] is None or near["positional"] is None:
            mixed.append(dict(alpha=a, converged=False, mixed=False, kind="no start (a branch missing)"))
            continue
        mixed.extend(mixed_search(params, a, near["semantic"], near["positional"], nodes=nodes))
    if progress and len(alphas):
        progress("mixed", len(alphas), len(alphas))
    return mixed


SURVEY_MAX_STEPS = 200
"""Iteration cap of the unpinned (free) solves of :func:`survey` (a free solve from a saddle needs 50–250
damped steps: it first has to leave the saddle along its unstable direction)."""

SADDLE_KICK = 0.1
"""Size of the push along the unstable direction of a saddle, as a fraction of its scale (√q for m,
σ√q for θ), for the free solve started there."""


def _err(sol, name: str) -> float:
    """The standard error of ``name`` where the solver gives one (QMC), else NaN."""
    f = getattr(sol, "error", None)
    return float(f(name)) if callable(f) else math.nan


def _entry(alpha, kind, sol, stable, source, reclassified: str = "") -> dict[str, Any]:
    se = getattr(sol, "stability_err", None)
    return dict(alpha=float(alpha), kind=kind, e_t=float(sol.e_t), eps_g=float(sol.eps_g), q=float(sol.q),
                m=abs(float(sol.m)), theta=abs(float(sol.theta)), V=float(sol.V), stable=bool(stable),
                stability=float("nan") if sol.stability is None else float(sol.stability), source=source,
                e_t_err=_err(sol, "e_t"), eps_g_err=_err(sol, "eps_g"),
                stability_err=math.nan if se is None else float(se), reclassified=reclassified)


def _kicked(sol, sigma: float, direction: str):
    """The point ``sol`` pushed along m, θ or both by ``SADDLE_KICK`` of its scale (a start for a free solve);
    on its state where it has one (any L, r: M along its first student direction, spread over the k encodings;
    θ on the first teacher direction)."""
    q = max(float(sol.q), 1e-12)
    m = abs(float(sol.m)) + (SADDLE_KICK * math.sqrt(q) if direction in ("m", "both") else 0.0)
    th = abs(float(sol.theta)) + (SADDLE_KICK * sigma * math.sqrt(q) if direction in ("theta", "both") else 0.0)
    out = SimpleNamespace(q=q + (m - abs(float(sol.m))) ** 2, m=m, V=float(sol.V), theta=th)
    x = getattr(sol, "x", None)
    if isinstance(x, OrderParams) and np.isfinite(np.asarray(x.q, float)).all() and np.size(x.M) > 1:
        qm, M, T, V = (np.array(b, float) for b in x)
        dm, dt = m - abs(float(sol.m)), th - abs(float(sol.theta))
        M[0] += dm / math.sqrt(M.shape[1])
        T[0, 0] += dt
        qm[0, 0] += dm * dm
        out.x = OrderParams(qm, M, T, V)
    return out


def _add_free(here: list[dict[str, Any]], row: dict[str, Any]) -> None:
    """Add a free solve's point to the rows ``here`` of one α. A point reclassified as a pinned one seen through
    the QMC noise (:func:`~.kinds.free_point_kind`) is never a distinct competitor: where ``here`` has a point of
    that kind already it is that point (the record goes on its row, its verdict of stability stands)."""
    same = [r for r in here if r["kind"] == row["kind"]]
    if row["reclassified"] and same:
        same[0]["reclassified"] = "; ".join(x for x in (same[0]["reclassified"], row["reclassified"]) if x)
        return
    here.append(row)


def survey(params: ModelParams, branches: dict, alphas: Sequence[float], *, nodes: int = 4, solver=None,
           progress: Callable[[str, int, int], None] | None = None, stability_nodes: int | None = None):
    """All fixed points that decide the global minimum at each α of ``alphas`` (MODEL.md §6 "Transition").

    From the followed pinned branches (``branches``: ``{"semantic": Branch, "positional": Branch}``) it takes
    the valid points (stable) and the saddles (``unstable``: not stable). Where the positional branch is not
    valid it solves the uninformative point (m = θ = 0; stable when the growth factors of m and θ are both
    ≤ 1). Where no stable fixed point is known, or a saddle lies *below* the lowest stable one (so something
    lower must exist off the pinned subspaces), it runs the unpinned (free) iteration from each saddle pushed
    along its unstable direction and from the uninformative point pushed along m and θ: a damped iteration
    converges only to attracting fixed points, so what it finds is stable; it is classified by its overlaps
    (:func:`~.kinds.free_point_kind`; a "mixed" one whose m or θ is at the QMC noise floor is the pinned point
    seen through the noise, :func:`_add_free`) — a *mixed* point, or a pure one the pinned continuation missed.
    At r ≥ 2 the free iteration is also started from every valid pinned point pushed along the other overlap:
    the mixed (free) points of a rank-2 student can be the global minimum next to two stable pinned points.
    Returns a DataFrame: alpha, kind, e_t, eps_g, q, m, theta, V, stable, stability, source and the standard
    errors e_t_err, eps_g_err, stability_err (NaN without per-point errors); ``reclassified``: the free points
    of that kind at the QMC noise floor held by the row (their start, kind by size → kind, and why; "" else).
    ``stability_nodes``: the rule of the uninformative point's growth factor (None: the solver's default).
    """
    import pandas as pd

    from .continuation import CURVE_RTOL, default_solver

    solve = solver or default_solver(params)
    sigma = params.sigma
    at = {b: {round(p.alpha, 9): p for p in list(br) + list(br.extra)} for b, br in branches.items()}
    rows: list[dict[str, Any]] = []
    uni_prev = None
    alphas = sorted(float(a) for a in alphas)
    for k, a in enumerate(alphas):
        if progress:
            progress("fixed points", k, len(alphas))
        here: list[dict[str, Any]] = []
        saddles = []
        for b in ("semantic", "positional"):
            p = at[b].get(round(a, 9))
            if p is None or not math.isfinite(float(p.q)):
                continue
            st = point_state(p)
            if st.valid:
                here.append(_entry(a, b, p, True, f"{b} branch"))
            elif st.value == "unstable":
                here.append(_entry(a, b, p, False, f"{b} branch (saddle)"))
                saddles.append((p, "m" if b == "semantic" else "theta"))
        pos = at["positional"].get(round(a, 9))
        uni = None
        if pos is None or not point_state(pos).valid:
            uni = solve(params, a, "uninformative", nodes=nodes, init=uni_prev, max_steps=SURVEY_MAX_STEPS,
                        stability=True, rtol=CURVE_RTOL,
                        **({} if stability_nodes is None else dict(stability_nodes=stability_nodes)))
            if uni.converged and math.isfinite(float(uni.e_t)):
                uni_prev = uni
                stable = uni.stability is not None and uni.stability <= 1.0
                here.append(_entry(a, "uninformative", uni, stable, "uninformative point"))
        stable_e = [r["e_t"] for r in here if r["stable"]]
        low = min(stable_e, default=math.inf)
        if not stable_e or any(r["e_t"] < low - 1e-9 * abs(low) for r in here if not r["stable"]):
            starts = [(_kicked(p, sigma, d), f"free from the {p.branch} saddle + {d}") for p, d in saddles]
            if uni is not None and uni.converged and not (uni.stability is not None and uni.stability <= 1.0):
                starts.append((_kicked(uni, sigma, "both"), "free from the uninformative point + m, θ"))
        else:
            starts = []
        if params.r >= 2:     # a rank-2 student's mixed point can lie below two stable pinned points
            for b, d in (("semantic", "m"), ("positional", "theta")):
                p = at[b].get(round(a, 9))
                if p is not None and point_state(p).valid:
                    starts.append((_kicked(p, sigma, d), f"free from the {b} point + {d}"))
        if starts:
            for start, src in starts:
                f = solve(params, a, "free", nodes=nodes, init=start, max_steps=SURVEY_MAX_STEPS, stability=False,
                          rtol=CURVE_RTOL)
                if f.converged and math.isfinite(float(f.e_t)):
                    k = free_point_kind(f, sigma)
                    _add_free(here, _entry(a, k.kind, f, True, src, f"{src}: {k.note}" if k.note else ""))
        rows.extend(here)
    if progress and alphas:
        progress("fixed points", len(alphas), len(alphas))
    cols = ["alpha", "kind", "e_t", "eps_g", "q", "m", "theta", "V", "stable", "stability", "source", "e_t_err",
            "eps_g_err", "stability_err", "reclassified"]
    return pd.DataFrame(rows, columns=cols)


def global_minimum(fixed_points):
    """Per α, the lowest-e_t *stable* fixed point of a :func:`survey` table: columns alpha, global_kind,
    e_t_global, eps_g_global (``none`` / NaN where no stable fixed point is known) and ``reclassified``: the
    free points at that α read as a pinned point seen through the QMC noise (:func:`_add_free`; "" where none)."""
    import pandas as pd

    out = []
    for a, grp in fixed_points.groupby("alpha", sort=True):
        st = grp[grp["stable"]]
        rec = "; ".join(str(x) for x in grp.get("reclassified", []) if isinstance(x, str) and x)
        if st.empty:
            out.append(dict(alpha=a, global_kind="none", e_t_global=np.nan, eps_g_global=np.nan, reclassified=rec))
            continue
        r = st.loc[st["e_t"].idxmin()]
        out.append(dict(alpha=a, global_kind=r["kind"], e_t_global=r["e_t"], eps_g_global=r["eps_g"],
                        reclassified=rec))
    return pd.DataFrame(out, columns=["alpha", "global_kind", "e_t_global", "eps_g_global", "reclassified"])
