"""The positional/semantic transition and the (α, ω) phase diagram (MODEL.md §5, §6 "Branches", "Transition").

* ``α_c(ω)``: root of ``e_t^sem(α) − e_t^pos(α)``; below it the positional fixed point is the global minimum,
  above it the semantic one.
* ``α_l(ω)`` (≥ α_c): root of ``ε_g^global(α) − ε_lin``, global = branch with the lower ``e_t``.
* Spinodals: where a branch stops existing (its iteration no longer converges, or its defining overlap — θ on
  the semantic, m on the positional branch — collapses to 0, i.e. the pinned iteration falls onto the
  uninformative point) or where the growth factor of its pinned direction (the solver's ``stability``)
  crosses 1 (a fixed point with m ≠ 0 and θ ≠ 0 bifurcates there).
* Mixed fixed points (m ≠ 0 and θ ≠ 0): a damped iteration only finds attracting fixed points, so they are
  searched with a Newton-type root finder (:func:`scipy.optimize.root`, ``hybr``) on ``F(x) − x`` of the
  unpinned map, started between the two pure branches; the leading eigenvalue of the map's Jacobian there
  says whether the point is a saddle.

Every branch is followed by *continuation*: along α from where it exists (semantic from the largest α down,
positional from the smallest α up), each solve warm-started from a linear prediction of the previous two
points; across ω (:func:`phase_diagram`) each point is predicted from the previous ω's solution at the same α
plus the α-step change of the current ω. A branch is not followed past its end (``patience``).

The theory solver (:mod:`attnphase.theory`) is imported lazily, so the table-level helpers
(:func:`find_root`, :func:`table_root`, :func:`transition_from_tables`, :func:`global_table`) work without it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import numpy as np

from .errors import ParameterError
from .model import ModelParams

DEFAULT_ALPHAS = tuple(np.round(np.linspace(0.5, 2.0, 16), 6))
"""Default α grid of :func:`transition` (around α_c(0.3) ≈ 1.24, α_l ≈ 1.45, down to the semantic end)."""

DIAGRAM_NODES = 4
"""Default resolution of :func:`phase_diagram` (the solver's coarse split rule: e_t within ~1e-5 of the
default ``nodes = 8``, which moves α_c by ~2e-3; see docs/benchmarks.md)."""

MAX_STEPS = 60
"""Iteration cap of the continuation solves: a warm-started point converges in 6–15 iterations (≤ 40 near the
end of a branch); a point at or past a branch's end does not converge at all, and it is the expensive one."""

COLLAPSE_TOL = 1e-3
"""A semantic (positional) point with |θ| (|m|) below ``COLLAPSE_TOL·σ√q`` has collapsed onto the
uninformative point: the branch does not exist there."""

CURVE_RTOL = 1e-5
"""Solver tolerance of the continuation curves (relative change of the order parameters; the split rule's
map has a noise floor that occasionally keeps the residual between 1e-6 and 1e-4 for hundreds of steps at
coarse resolution). The Brent refinement uses the solver's default 1e-6, falling back to this."""

MIXED_TOL = 1e-3
"""A fixed point is *mixed* when both |m| and |θ| exceed ``MIXED_TOL·σ√q``."""

_ORDER = ("q", "m", "V", "theta")


# --------------------------------------------------------------------------------------------- roots
def find_root(f: Callable[[float], float], a: float, b: float, *, xtol: float = 1e-4, num: int = 21,
              grid: Sequence[float] | None = None) -> float | None:
    """Bracket-and-refine root of ``f`` on ``[a, b]``.

    Scans ``grid`` (default ``num`` equispaced points) for the first sign change of ``f`` and refines it with
    :func:`scipy.optimize.brentq` to ``xtol``. Returns ``None`` when no sign change is found (NaN values are
    skipped). An exact zero on the grid is returned as is.
    """
    from scipy.optimize import brentq

    if not (math.isfinite(a) and math.isfinite(b)) or not a < b:
        raise ParameterError("find_root interval", "finite a < b", (a, b))
    xs = np.asarray(grid if grid is not None else np.linspace(a, b, num), dtype=float)
    prev_x = prev_v = None
    for x in xs:
        v = float(f(float(x)))
        if not math.isfinite(v):
            continue
        if v == 0.0:
            return float(x)
        if prev_v is not None and (prev_v < 0) != (v < 0):
            return float(brentq(lambda t: float(f(t)), prev_x, float(x), xtol=xtol))
        prev_x, prev_v = float(x), v
    return None


def local_root(f: Callable[[float], float], estimate: float, lo: float, hi: float, *, sign_below: float,
               step: float = 0.02, xtol: float = 1e-4, max_expand: int = 8) -> float | None:
    """Root of ``f`` near ``estimate`` on ``[lo, hi]``, knowing the sign of ``f`` below the root.

    Brackets with ``estimate ± step`` (widening by doubling towards the root while both ends have the same
    sign) and refines with :func:`scipy.optimize.brentq` to ``xtol``. ``f`` may raise :class:`Unrefinable`
    (e.g. a solve that did not converge): the result is then ``None``. Values are cached, so the bracket ends
    are evaluated once. Returns ``lo`` when ``f(lo)`` already has the sign above the root.
    """
    from scipy.optimize import brentq

    if not lo < hi:
        raise ParameterError("local_root interval", "lo < hi", (lo, hi))
    cache: dict[float, float] = {}

    def g(x):
        x = float(x)
        if x not in cache:
            cache[x] = float(f(x))
        return cache[x]

    below = math.copysign(1.0, sign_below)
    est = min(max(float(estimate), lo), hi)
    a, b = max(lo, est - step), min(hi, est + step)
    try:
        for _ in range(max_expand):
            fa, fb = g(a), g(b)
            if (fa * below > 0) and (fb * below <= 0):
                return float(brentq(g, a, b, xtol=xtol)) if fb != 0.0 else b
            if fa * below <= 0:  # root below a
                if a <= lo:
                    return float(lo)
                step *= 2
                a, b = max(lo, a - step), a
            else:  # both ends below the root: move up
                if b >= hi:
                    return None
                step *= 2
                a, b = b, min(hi, b + step)
    except Unrefinable:
        return None
    return None


class Unrefinable(Exception):
    """Raised by a root function when a solve it needs is not a valid branch point."""


def table_root(x: Sequence[float], y: Sequence[float], direction: str = "any", *, smooth: bool = True
               ) -> float | None:
    """First sign change of tabulated ``y(x)`` (sorted by x, NaN skipped).

    ``direction``: ``"down"`` only accepts a change from ``y > 0`` to ``y < 0`` as x increases, ``"up"`` the
    reverse, ``"any"`` either. (α_c is a *down* crossing of ``e_t^sem − e_t^pos``.) The root inside the
    bracketing interval is that of the cubic through the four surrounding points (``smooth``; a quadratic or
    the straight line when fewer exist), which passes through the data, so it stays inside the bracket."""
    from scipy.optimize import brentq

    if direction not in ("any", "up", "down"):
        raise ParameterError("direction", "'any', 'up' or 'down'", direction)
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    order = np.argsort(x)
    x, y = x[order], y[order]
    for i in range(len(x)):
        if y[i] == 0.0 and direction == "any":
            return float(x[i])
        if i and (y[i - 1] < 0) != (y[i] < 0):
            if (direction == "down" and y[i - 1] < 0) or (direction == "up" and y[i - 1] > 0):
                continue
            lin = float(x[i - 1] - y[i - 1] * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))
            if not smooth or len(x) < 3 or y[i] == 0.0:
                return lin
            lo, hi = max(0, i - 2), min(len(x), i + 2)
            xs, ys = x[lo:hi], y[lo:hi]
            c = 0.5 * (x[i - 1] + x[i])
            try:
                poly = np.polyfit(xs - c, ys, len(xs) - 1)
                return float(brentq(lambda t: float(np.polyval(poly, t - c)), x[i - 1], x[i]))
            except (ValueError, np.linalg.LinAlgError):
                return lin
    return None


# --------------------------------------------------------------------------------- point classification
def _key(branch: str) -> str:
    return "theta" if branch == "semantic" else "m"


def point_state(sol) -> str:
    """``ok`` | ``unstable`` (stability > 1) | ``collapsed`` (the branch's overlap vanished) |
    ``not converged`` | ``skipped`` (not attempted: beyond the branch's end)."""
    status = str(getattr(sol, "status", ""))
    if status.startswith("skipped"):
        return "skipped"
    if not sol.converged:
        return "not converged"
    b = sol.branch
    if b in ("semantic", "positional"):
        scale = COLLAPSE_TOL * sol.params.sigma * math.sqrt(max(sol.q, 0.0))
        if abs(getattr(sol, _key(b))) <= scale:
            return "collapsed"
    st = sol.stability
    if st is not None and math.isfinite(st) and st > 1.0:
        return "unstable"
    return "ok"


def branch_table(sols):
    """:func:`attnphase.theory.curve_table` plus a ``state`` column (:func:`point_state`), sorted by α."""
    from .theory import curve_table
    df = curve_table(sols)
    df["state"] = [point_state(s) for s in sols]
    return df.sort_values("alpha").reset_index(drop=True)


def _valid(df) -> np.ndarray:
    """Rows that are a usable (existing, locally stable) branch point."""
    if "state" in df:
        return (df["state"] == "ok").to_numpy()
    ok = np.ones(len(df), bool)
    if "converged" in df:
        ok &= df["converged"].fillna(False).astype(bool).to_numpy()
    if "stability" in df:
        st = df["stability"].astype(float).to_numpy()
        ok &= ~(np.isfinite(st) & (st > 1.0))
    return ok


# ------------------------------------------------------------------------------------------ continuation
def _vec(sol) -> np.ndarray:
    return np.array([sol.q, sol.m, sol.V, sol.theta], float)


def _init_from(x: np.ndarray, branch: str, fallback, sigma: float) -> Any:
    """A warm start from a predicted state ``x = (q, m, V, θ)``, or ``fallback`` when it is not admissible
    (q, V > 0; on the semantic branch 0 < θ² < q σ²)."""
    q, m, V, th = (float(v) for v in x)
    if not (np.isfinite(x).all() and q > 0 and V > 0):
        return fallback
    if branch == "semantic":
        if th <= 0 or th * th >= 0.999 * q * sigma ** 2:
            return fallback
        m = 0.0
    elif branch == "positional":
        th = 0.0
    return SimpleNamespace(q=q, m=m, V=V, theta=th, branch=branch)


def _ok(sol) -> bool:
    return sol is not None and point_state(sol) in ("ok", "unstable")


def _predict(branch: str, alpha: float, done: list, guide: dict | None):
    """Warm start for ``alpha`` from the solved points ``done`` (α order of continuation) and ``guide``
    (α → solution at the previous ω)."""
    good = [s for s in done if _ok(s)]
    last = good[-1] if good else None
    g = guide.get(round(alpha, 9)) if guide else None
    if g is not None and _ok(g):
        if last is not None:
            gl = guide.get(round(last.alpha, 9))
            if gl is not None and _ok(gl):
                return _init_from(_vec(g) + _vec(last) - _vec(gl), branch, g, last.params.sigma)
        return g
    if last is None:
        return None
    if len(good) >= 2 and good[-2].alpha != last.alpha:
        r = (alpha - last.alpha) / (last.alpha - good[-2].alpha)
        if abs(r) <= 3.0:
            return _init_from(_vec(last) + r * (_vec(last) - _vec(good[-2])), branch, last, last.params.sigma)
    return last


def _skipped(params, alpha: float, branch: str, nodes: int, why: str):
    from .theory import FixedPointSolution
    nan = float("nan")
    return FixedPointSolution(float(alpha), branch, params, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan,
                              False, 0, nan, f"skipped: {why}", None, None, nodes)


def follow_branch(params: ModelParams, alphas: Sequence[float], branch: str, *, nodes: int | None = None,
                  init=None, guide: dict | None = None, max_steps: int = MAX_STEPS, stability: bool = True,
                  patience: int = 1, rtol: float = CURVE_RTOL, progress: Callable[[int], None] | None = None
                  ) -> list:
    """Continuation of one pinned branch along ``alphas`` (in the given order).

    Each point is warm-started from a linear prediction of the previous two (or from ``guide``, the previous
    ω's solutions keyed by ``round(α, 9)``, corrected by the current ω's α-step); ``init`` warm-starts the
    first point. After ``patience`` consecutive points that are not a branch point (not converged, or
    collapsed onto the uninformative point) the remaining α's are ``skipped`` (returned with
    ``converged=False`` and a ``status`` saying why) — the branch has ended; when no branch point has been
    found yet, after ``max(3, patience)``. A point that did not converge but whose overlap is still at least
    half the last valid one (a stalled iteration, not a branch end) does not count; three in a row do.
    ``rtol``: the solver's tolerance (:data:`CURVE_RTOL`). ``progress(i)`` after each α.
    """
    from .theory import DEFAULT_NODES, solve_point

    nodes = DEFAULT_NODES if nodes is None else nodes
    done: list = []
    bad = stalls = 0
    ended_at = None
    for i, a in enumerate(alphas):
        a = float(a)
        if ended_at is not None:
            done.append(_skipped(params, a, branch, nodes, f"branch ended near α={ended_at:g}"))
        else:
            start = _predict(branch, a, done, guide) if (done or guide) else init
            if start is None:
                start = init
            s = solve_point(params, a, branch, nodes=nodes, init=start, max_steps=max_steps, stability=stability,
                            rtol=rtol)
            good = [t for t in done if _ok(t)]
            done.append(s)
            if point_state(s) in ("ok", "unstable"):
                bad = stalls = 0
            elif (point_state(s) == "not converged" and good and stalls < 2
                  and abs(getattr(s, _key(branch))) >= 0.5 * abs(getattr(good[-1], _key(branch)))):
                stalls += 1  # stalled iteration, the branch is still there
            else:
                bad += 1
                if (good and bad >= patience) or (not good and bad >= max(3, patience)):
                    ended_at = a
        if progress is not None:
            progress(i)
    return done


# ------------------------------------------------------------------------------------ table helpers
def global_table(sem, pos, eps_lin: float):
    """Merge two branch tables (columns alpha, e_t, eps_g, …) on α into the global-minimum table.

    Columns: alpha, e_t_sem, e_t_pos, delta_e_t (= sem − pos), eps_g_sem, eps_g_pos, global_branch,
    eps_g_global, eps_lin, eps_lin_minus_eps_g. A branch point that is not valid (not converged, collapsed,
    skipped or unstable; see :func:`point_state`) is NaN.
    """
    import pandas as pd

    def prep(df, tag):
        df = df.copy()
        bad = ~_valid(df)
        df.loc[bad, ["e_t", "eps_g"]] = np.nan
        return df[["alpha", "e_t", "eps_g"]].rename(columns={"e_t": f"e_t_{tag}", "eps_g": f"eps_g_{tag}"})

    g = pd.merge(prep(sem, "sem"), prep(pos, "pos"), on="alpha", how="outer").sort_values("alpha")
    g["delta_e_t"] = g["e_t_sem"] - g["e_t_pos"]
    es, ep = g["e_t_sem"].to_numpy(float), g["e_t_pos"].to_numpy(float)
    use_sem = np.where(np.isnan(ep), True, np.where(np.isnan(es), False, es < ep))
    none = np.isnan(es) & np.isnan(ep)
    g["global_branch"] = np.where(none, "none", np.where(use_sem, "semantic", "positional"))
    g["eps_g_global"] = np.where(none, np.nan, np.where(use_sem, g["eps_g_sem"], g["eps_g_pos"]))
    g["eps_lin"] = float(eps_lin)
    g["eps_lin_minus_eps_g"] = g["eps_lin"] - g["eps_g_global"]
    return g.reset_index(drop=True)


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
    ok = _valid(df)
    if not ok.any():
        return None, "no valid point"
    st = df["stability"].astype(float).to_numpy() if "stability" in df else np.full(len(df), np.nan)
    state = df["state"].to_numpy() if "state" in df else np.where(
        df["converged"].astype(bool) if "converged" in df else True, "ok", "not converged")
    col = None
    if "branch" in df and len(df):
        col = _key(str(df["branch"].iloc[0]))
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


def _spinodal(df, side: str) -> float | None:
    return spinodal(df, side)[0]


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
    if br not in ("semantic", "positional"):
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


# ------------------------------------------------------------------------------------------ mixed search
def _free_map(params, alpha: float, nodes: int):
    """x = (q, m, V, θ) → F(x), the unpinned map, as one undamped step of the public solver."""
    from .theory import solve_point

    def F(x):
        # the map is odd in m (token exchange) and in θ (y → −y); the solver's start replaces m = 0 or θ <= 0,
        # so evaluate at |m|, |θ| and restore the signs
        sm, st = (-1.0 if x[1] < 0 else 1.0), (-1.0 if x[3] < 0 else 1.0)
        s = solve_point(params, alpha, "free", nodes=nodes, init=SimpleNamespace(
            q=x[0], m=max(abs(x[1]), 1e-300), V=x[2], theta=max(abs(x[3]), 1e-300)), max_steps=1, damping=1.0,
            anderson=0, coarse=False, stability=False, rtol=1e-300)
        y = _vec(s)
        y[1] *= sm
        y[3] *= st
        return y
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

    from .theory import solve_point

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
        kind = ("mixed" if abs(x[1]) > scale and abs(x[3]) > scale else "semantic" if abs(x[3]) > scale
                else "positional" if abs(x[1]) > scale else "uninformative")
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


def _mixed_at(params, sols, alphas, nodes, progress=None) -> list[dict[str, Any]]:
    mixed: list[dict[str, Any]] = []
    for k, a in enumerate(alphas):
        if progress:
            progress("mixed", k, len(alphas))
        s = min((x for x in sols["semantic"] if _ok(x)), key=lambda x: abs(x.alpha - a), default=None)
        p = min((x for x in sols["positional"] if _ok(x)), key=lambda x: abs(x.alpha - a), default=None)
        if s is None or p is None:
            mixed.append(dict(alpha=float(a), converged=False, mixed=False, kind="no start (a branch missing)"))
            continue
        mixed.extend(mixed_search(params, float(a), s, p, nodes=nodes))
    if progress and len(alphas):
        progress("mixed", len(alphas), len(alphas))
    return mixed


def mixed_at(result: "TransitionResult", alphas: Sequence[float], *, nodes: int = DIAGRAM_NODES,
             progress: Callable[[str, int, int], None] | None = None) -> list[dict[str, Any]]:
    """:func:`mixed_search` at each α of ``alphas``, started between the nearest valid points of the two
    branches of a :func:`transition` result."""
    return _mixed_at(result.params, result._solutions, [float(a) for a in alphas], nodes,  # type: ignore[attr-defined]
                     progress)


# ------------------------------------------------------------------------------------- with theory
@dataclass
class TransitionResult:
    """Outcome of :func:`transition` at one parameter point."""

    params: ModelParams
    alpha_c: float | None
    alpha_l: float | None
    eps_lin: float
    spinodal_semantic: float | None
    spinodal_positional: float | None
    mixed_found: bool
    mixed: list[dict[str, Any]]
    semantic: Any  # pandas.DataFrame (branch_table)
    positional: Any
    global_table: Any
    refined: list[dict[str, Any]] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    spinodal_semantic_kind: str = ""
    spinodal_positional_kind: str = ""
    alpha_c_grid: float | None = None
    alpha_l_grid: float | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self, tables: bool = False) -> dict[str, Any]:
        d = dict(omega=self.params.omega, sigma=self.params.sigma, lam=self.params.lam,
                 alpha_c=self.alpha_c, alpha_l=self.alpha_l, eps_lin=self.eps_lin,
                 spinodal_semantic=self.spinodal_semantic, spinodal_semantic_kind=self.spinodal_semantic_kind,
                 spinodal_positional=self.spinodal_positional,
                 spinodal_positional_kind=self.spinodal_positional_kind,
                 alpha_c_grid=self.alpha_c_grid, alpha_l_grid=self.alpha_l_grid,
                 mixed_found=self.mixed_found, mixed=self.mixed, refined=self.refined, notes=self.notes,
                 params=self.params.to_dict(), provenance=self.provenance)
        if tables:
            for k in ("semantic", "positional", "global_table"):
                d[k] = getattr(self, k).to_dict(orient="records")
        return d


class _Refiner:
    """Warm-started solves at arbitrary α (for Brent), predicted by linear interpolation of the state
    between the two nearest valid known points of the same branch."""

    def __init__(self, params, known: dict[str, list], nodes, log: list):
        self.params, self.nodes, self.log = params, nodes, log
        self.known = {b: [s for s in v if _ok(s)] for b, v in known.items()}
        self.cache: dict[tuple[str, float], Any] = {}

    def _start(self, branch, a):
        pts = sorted(self.known[branch], key=lambda s: s.alpha)
        if not pts:
            return None
        lo = [s for s in pts if s.alpha <= a]
        hi = [s for s in pts if s.alpha >= a]
        if lo and hi and hi[0].alpha > lo[-1].alpha:
            s0, s1 = lo[-1], hi[0]
            t = (a - s0.alpha) / (s1.alpha - s0.alpha)
            return _init_from((1 - t) * _vec(s0) + t * _vec(s1), branch, s0, self.params.sigma)
        return min(pts, key=lambda s: abs(s.alpha - a))

    def solve(self, branch, a):
        from .theory import solve_point
        k = (branch, float(a))
        if k not in self.cache:
            start = self._start(branch, a)
            s = solve_point(self.params, float(a), branch, nodes=self.nodes, init=start, max_steps=MAX_STEPS,
                            stability=False)
            if point_state(s) == "not converged":
                s2 = solve_point(self.params, float(a), branch, nodes=self.nodes, init=s if np.isfinite(
                    _vec(s)).all() and s.q > 0 and s.V > 0 else start, max_steps=MAX_STEPS, stability=False,
                    rtol=CURVE_RTOL)
                s = s2 if s2.converged else s
            self.cache[k] = s
            if _ok(s):
                self.known[branch].append(s)
            self.log.append(dict(branch=branch, alpha=float(a), e_t=s.e_t, eps_g=s.eps_g,
                                 converged=bool(s.converged), state=point_state(s), iterations=s.iterations))
        return self.cache[k]

    def valid(self, branch, a):
        s = self.solve(branch, a)
        if not _ok(s):
            raise Unrefinable(f"{branch} at α={a:g}: {point_state(s)}")
        return s


def _refine_roots(params, sols, base, nodes, grid, xtol, step, log) -> tuple[float | None, float | None, list]:
    """Brent refinement of the table estimates of α_c and α_l (see :func:`transition`)."""
    notes: list[str] = []
    alpha_c, alpha_l = base["alpha_c"], base["alpha_l"]
    R = _Refiner(params, sols, nodes, log)
    lo_a, hi_a = float(grid[0]), float(grid[-1])
    if alpha_c is not None:
        r = local_root(lambda a: R.valid("semantic", a).e_t - R.valid("positional", a).e_t, alpha_c, lo_a, hi_a,
                       sign_below=+1.0, step=step, xtol=xtol)
        if r is None:
            notes.append("α_c refinement failed (a branch is not valid near α_c); table value kept")
        else:
            alpha_c = r
    if alpha_l is not None:
        gl = base["global_table"]
        above = gl[gl["alpha"] > (alpha_c if alpha_c is not None else -1.0)]
        br = above["global_branch"].iloc[0] if len(above) else "semantic"
        br = br if br in ("semantic", "positional") else "semantic"
        lo = alpha_c if alpha_c is not None else lo_a
        el = float(gl["eps_lin"].iloc[0])
        r = local_root(lambda a: R.valid(br, a).eps_g - el, max(alpha_l, lo), lo, hi_a, sign_below=+1.0,
                       step=step, xtol=xtol)
        if r is None:
            notes.append("α_l refinement failed; table value kept")
        else:
            alpha_l = r
    return alpha_c, alpha_l, notes


def transition(params: ModelParams, *, alphas: Sequence[float] | None = None, nodes: int | None = None,
               curve_nodes: int | None = None, progress: Callable[[str, int, int], None] | None = None,
               refine: bool = True, xtol: float = 1e-4, mixed_alphas: Sequence[float] | None = None,
               mixed_nodes: int = DIAGRAM_NODES, init: dict[str, Any] | None = None,
               max_steps: int = MAX_STEPS) -> TransitionResult:
    """α_c, α_l, spinodals and the mixed-fixed-point search at one parameter point.

    1. Both branches by continuation along ``alphas`` (semantic from the largest α down, positional from the
       smallest up; :func:`follow_branch`) at resolution ``curve_nodes`` (default: ``nodes``).
    2. α_c and α_l bracketed on the tables, then (``refine``) Brent to ``xtol`` in α with warm-started solves
       at resolution ``nodes`` (default: the solver's, 8): α_c from ``e_t^sem − e_t^pos``; α_l from the
       ε_g of the branch that is global just above α_c (α_l = α_c when it is already below ε_lin there).
    3. Spinodals from the tables (:func:`spinodal`).
    4. Mixed fixed points at ``mixed_alphas`` (default: α_c; ``[]`` skips) with :func:`mixed_search`.

    ``progress(stage, i, total)`` after each solved point. ``init`` maps branch → solution that warm-starts
    the first α of that branch.
    """
    from .provenance import provenance as _prov
    from .theory import DEFAULT_NODES, eps_lin as _eps_lin

    nodes = DEFAULT_NODES if nodes is None else nodes
    curve_nodes = nodes if curve_nodes is None else curve_nodes
    grid = np.array(sorted(DEFAULT_ALPHAS if alphas is None else alphas), float)
    if grid.size < 2 or (grid <= 0).any() or not np.isfinite(grid).all():
        raise ParameterError("alphas", "at least two finite values > 0", list(grid))
    if not xtol > 0:
        raise ParameterError("xtol", "> 0", xtol)
    init = init or {}
    el = float(_eps_lin(params))
    sols = {}
    for b in ("semantic", "positional"):
        order = list(grid[::-1]) if b == "semantic" else list(grid)
        cb = (lambda i, b=b: progress(b, i + 1, len(grid))) if progress else None
        sols[b] = follow_branch(params, order, b, nodes=curve_nodes, init=init.get(b), progress=cb,
                                max_steps=max_steps)
    sem, pos = branch_table(sols["semantic"]), branch_table(sols["positional"])
    base = transition_from_tables(sem, pos, el)
    alpha_c = a_c_grid = base["alpha_c"]
    alpha_l = a_l_grid = base["alpha_l"]
    notes: list[str] = []
    if alpha_c is None:
        notes.append("no crossing of e_t^sem and e_t^pos on the α grid (α_c outside it, or a branch missing)")
    refined: list[dict[str, Any]] = []
    if refine and (alpha_c is not None or alpha_l is not None):
        if progress:
            progress("refine", 0, 1)
        step = min(0.25 * float(np.min(np.diff(grid))), max(0.005, 20 * xtol))
        alpha_c, alpha_l, more = _refine_roots(params, sols, base, nodes, grid, xtol, step, refined)
        notes.extend(more)
        if progress:
            progress("refine", 1, 1)
    if mixed_alphas is None:
        mixed_alphas = [round(alpha_c, 4)] if alpha_c is not None else []
    mixed = _mixed_at(params, sols, mixed_alphas, mixed_nodes, progress)
    prov = _prov(dict(params=params.to_dict(), alphas=list(map(float, grid)), nodes=nodes, curve_nodes=curve_nodes,
                      xtol=xtol, refine=refine, mixed_alphas=list(map(float, mixed_alphas)),
                      mixed_nodes=mixed_nodes, max_steps=max_steps),
                 kind="transition",
                 states=dict(semantic=sem["state"].value_counts().to_dict(),
                             positional=pos["state"].value_counts().to_dict()))
    res = TransitionResult(params, alpha_c, alpha_l, el, base["spinodal_semantic"], base["spinodal_positional"],
                           any(m.get("mixed", False) for m in mixed), mixed, sem, pos, base["global_table"],
                           refined, prov, base["spinodal_semantic_kind"], base["spinodal_positional_kind"],
                           a_c_grid, a_l_grid, notes)
    res._solutions = sols  # type: ignore[attr-defined]
    return res


def phase_diagram(params: ModelParams, omegas: Sequence[float], alphas: Sequence[float], *,
                  nodes: int | None = DIAGRAM_NODES,
                  progress: Callable[[float, str, int, int], None] | None = None,
                  refine: bool = False, xtol: float = 1e-3, max_steps: int = MAX_STEPS,
                  reuse: dict[float, dict[str, list]] | None = None):
    """Tidy (α, ω) phase diagram by continuation in α within each ω and from the previous ω.

    Returns ``(grid, lines)``: ``grid`` has one row per (ω, α) with columns omega, alpha, e_t_sem, e_t_pos,
    delta_e_t, eps_g_global, eps_lin, eps_lin_minus_eps_g, global_branch, eps_g_sem, eps_g_pos, state_sem,
    state_pos; ``lines`` one row per ω with alpha_c, alpha_l (linear interpolation on the grid, or Brent to
    ``xtol`` at the same resolution with ``refine``), eps_lin and the spinodals with their kinds.
    Resolution: ``nodes`` (default :data:`DIAGRAM_NODES`). ω values are processed in increasing order.
    ``reuse``: ω → {branch: solutions} already computed (e.g. ``transition(...)._solutions``); used for that ω
    when they cover the α grid (they should be at the same resolution).
    """
    import pandas as pd

    from .theory import eps_lin as _eps_lin

    omegas = sorted(float(w) for w in omegas)
    for w in omegas:
        if not 0.0 <= w <= 1.0:
            raise ParameterError("omegas", "values in [0, 1]", w)
    grid_a = np.array(sorted(float(a) for a in alphas))
    if grid_a.size < 2 or (grid_a <= 0).any() or not np.isfinite(grid_a).all():
        raise ParameterError("alphas", "at least two finite values > 0", list(grid_a))
    frames, rows = [], []
    guides: dict[str, dict] = {"semantic": {}, "positional": {}}
    for w in omegas:
        p = params.replace(omega=w)
        sols = {}
        for b in ("semantic", "positional"):
            order = list(grid_a[::-1]) if b == "semantic" else list(grid_a)
            have = {round(s.alpha, 9): s for s in (reuse or {}).get(w, {}).get(b, [])}
            if all(round(a, 9) in have for a in order):
                sols[b] = [have[round(a, 9)] for a in order]
                if progress:
                    progress(w, b, len(order), len(order))
            else:
                cb = (lambda i, b=b, w=w: progress(w, b, i + 1, len(grid_a))) if progress else None
                sols[b] = follow_branch(p, order, b, nodes=nodes, guide=guides[b] or None, progress=cb,
                                        max_steps=max_steps)
            guides[b] = {round(s.alpha, 9): s for s in sols[b] if _ok(s)}
        sem, pos = branch_table(sols["semantic"]), branch_table(sols["positional"])
        el = float(_eps_lin(p))
        base = transition_from_tables(sem, pos, el)
        a_c, a_l = base["alpha_c"], base["alpha_l"]
        if refine and (a_c is not None or a_l is not None):
            step = min(0.25 * float(np.min(np.diff(grid_a))), max(0.005, 20 * xtol))
            a_c, a_l, _ = _refine_roots(p, sols, base, nodes, grid_a, xtol, step, [])
        g = base["global_table"].copy()
        g = g.merge(sem[["alpha", "state"]].rename(columns={"state": "state_sem"}), on="alpha", how="left")
        g = g.merge(pos[["alpha", "state"]].rename(columns={"state": "state_pos"}), on="alpha", how="left")
        g.insert(0, "omega", w)
        frames.append(g)
        rows.append(dict(omega=w, alpha_c=a_c, alpha_l=a_l, eps_lin=el,
                         spinodal_semantic=base["spinodal_semantic"],
                         spinodal_semantic_kind=base["spinodal_semantic_kind"],
                         spinodal_positional=base["spinodal_positional"],
                         spinodal_positional_kind=base["spinodal_positional_kind"],
                         refined=bool(refine), nodes=nodes))
    cols = ["omega", "alpha", "e_t_sem", "e_t_pos", "delta_e_t", "eps_g_global", "eps_lin",
            "eps_lin_minus_eps_g", "global_branch", "eps_g_sem", "eps_g_pos", "state_sem", "state_pos"]
    grid = pd.concat(frames, ignore_index=True)[cols]
    return grid, pd.DataFrame(rows)
