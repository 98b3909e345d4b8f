"""The positional/semantic transition and the (α, ω) phase diagram (MODEL.md §5, §6 "Branches", "Transition").

* ``α_c(ω)``: root of ``e_t^sem(α) − e_t^pos(α)``; below it the positional fixed point is the global minimum,
  above it the semantic one.
* ``α_l(ω)`` (≥ α_c): root of ``ε_g^global(α) − ε_lin``, global = branch with the lower ``e_t``.
* Spinodals: where a branch stops converging (ceases to exist) or its stability (growth factor of the pinned
  direction) crosses 1.

The theory solver (:mod:`attnphase.theory`) is imported lazily, so that this module and its table-level helpers
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

DEFAULT_ALPHAS = tuple(np.round(np.linspace(0.6, 2.0, 15), 6))
"""Default α grid of :func:`transition` (the paper's window around α_c(0.3) ≈ 1.24 and α_l ≈ 1.45)."""

MIXED_TOL = 1e-4
"""A ``free``-branch fixed point is *mixed* when both |m| and |θ| exceed this."""


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


def table_root(x: Sequence[float], y: Sequence[float], direction: str = "any") -> float | None:
    """First sign change of tabulated ``y(x)`` (sorted by x, NaN skipped), by linear interpolation.

    ``direction``: ``"down"`` only accepts a change from ``y > 0`` to ``y < 0`` as x increases, ``"up"`` the
    reverse, ``"any"`` either. (α_c is a *down* crossing of ``e_t^sem − e_t^pos``: near α → 0 both branches
    tend to the same uninformative point and their difference is round-off with either sign.)"""
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
            return float(x[i - 1] - y[i - 1] * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))
    return None


# ------------------------------------------------------------------------------------ table helpers
def _valid(df) -> np.ndarray:
    """Rows that are a usable fixed point: converged (if reported) and not unstable (stability <= 1)."""
    ok = np.ones(len(df), bool)
    if "converged" in df:
        ok &= df["converged"].fillna(False).astype(bool).to_numpy()
    if "stability" in df:
        st = df["stability"].astype(float).to_numpy()
        ok &= ~(np.isfinite(st) & (st > 1.0))
    return ok


def global_table(sem, pos, eps_lin: float):
    """Merge two branch tables (columns alpha, e_t, eps_g, …) on α into the global-minimum table.

    Columns: alpha, e_t_sem, e_t_pos, delta_e_t (= sem − pos), eps_g_sem, eps_g_pos, global_branch,
    eps_g_global, eps_lin, eps_lin_minus_eps_g. A branch point that did not converge or is unstable is NaN.
    """
    import pandas as pd

    def prep(df, tag):
        df = df.copy()
        bad = ~_valid(df)
        df.loc[bad, ["e_t", "eps_g"]] = np.nan
        return df[["alpha", "e_t", "eps_g"]].rename(columns={"e_t": f"e_t_{tag}", "eps_g": f"eps_g_{tag}"})

    g = pd.merge(prep(sem, "sem"), prep(pos, "pos"), on="alpha", how="outer").sort_values("alpha")
    g["delta_e_t"] = g["e_t_sem"] - g["e_t_pos"]
    es, ep = g["e_t_sem"].to_numpy(), g["e_t_pos"].to_numpy()
    use_sem = np.where(np.isnan(ep), True, np.where(np.isnan(es), False, es < ep))
    none = np.isnan(es) & np.isnan(ep)
    g["global_branch"] = np.where(none, "none", np.where(use_sem, "semantic", "positional"))
    g["eps_g_global"] = np.where(none, np.nan, np.where(use_sem, g["eps_g_sem"], g["eps_g_pos"]))
    g["eps_lin"] = float(eps_lin)
    g["eps_lin_minus_eps_g"] = g["eps_lin"] - g["eps_g_global"]
    return g.reset_index(drop=True)


def _spinodal(df, side: str) -> float | None:
    """Edge of a branch's valid region: ``side="low"`` (semantic: exists at large α) returns the lowest α of
    the valid run that contains the largest valid α; ``side="high"`` (positional) the highest α of the run
    containing the smallest. A stability crossing of 1 is interpolated; a loss of convergence is placed at the
    midpoint between the last good and the first bad α. ``None`` when the branch is valid on the whole grid."""
    df = df.sort_values("alpha")
    a = df["alpha"].to_numpy(float)
    ok = _valid(df)
    if not ok.any():
        return None
    st = df["stability"].astype(float).to_numpy() if "stability" in df else np.full(len(df), np.nan)
    idx = range(len(a) - 1, -1, -1) if side == "low" else range(len(a))
    idx = list(idx)
    started, last = False, None
    for i in idx:
        if ok[i]:
            started, last = True, i
        elif started:
            j = last
            if math.isfinite(st[i]) and math.isfinite(st[j]) and st[i] != st[j] and bool(
                    df["converged"].iloc[i] if "converged" in df else True):
                return float(a[j] + (1.0 - st[j]) * (a[i] - a[j]) / (st[i] - st[j]))
            return float(0.5 * (a[i] + a[j]))
    return None


def transition_from_tables(sem, pos, eps_lin: float) -> dict[str, Any]:
    """α_c, α_l, spinodals from two branch tables (no refinement; linear interpolation between grid points)."""
    g = global_table(sem, pos, eps_lin)
    alpha_c = table_root(g["alpha"], g["delta_e_t"], "down")
    sub = g if alpha_c is None else g[g["alpha"] >= alpha_c - 1e-12]
    # α_l: first α (≥ α_c) where the global minimum beats the baseline, from above ε_lin to below
    alpha_l = table_root(sub["alpha"], sub["eps_lin_minus_eps_g"], "up")
    return dict(alpha_c=alpha_c, alpha_l=alpha_l, eps_lin=float(eps_lin),
                spinodal_semantic=_spinodal(sem, "low"), spinodal_positional=_spinodal(pos, "high"),
                global_table=g)


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
    semantic: Any  # pandas.DataFrame (curve_table)
    positional: Any
    global_table: Any
    refined: list[dict[str, Any]] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, tables: bool = False) -> dict[str, Any]:
        d = dict(omega=self.params.omega, sigma=self.params.sigma, lam=self.params.lam,
                 alpha_c=self.alpha_c, alpha_l=self.alpha_l, eps_lin=self.eps_lin,
                 spinodal_semantic=self.spinodal_semantic, spinodal_positional=self.spinodal_positional,
                 mixed_found=self.mixed_found, mixed=self.mixed, refined=self.refined,
                 params=self.params.to_dict(), provenance=self.provenance)
        if tables:
            for k in ("semantic", "positional", "global_table"):
                d[k] = getattr(self, k).to_dict(orient="records")
        return d


def _nearest(sols, alpha):
    good = [s for s in sols if s.converged]
    return min(good, key=lambda s: abs(s.alpha - alpha)) if good else None


def _refine(params, sem_sols, pos_sols, what: str, lo: float, hi: float, eps_lin: float, nodes, xtol,
            log: list) -> float | None:
    """Brent refinement between two grid α's with warm-started solves on both branches."""
    from scipy.optimize import brentq

    from .theory import solve_point

    cache: dict[float, tuple] = {}

    def solve(a):
        if a not in cache:
            s = solve_point(params, a, "semantic", nodes=nodes, init=_nearest(sem_sols, a), stability=False)
            p = solve_point(params, a, "positional", nodes=nodes, init=_nearest(pos_sols, a), stability=False)
            cache[a] = (s, p)
            log.append(dict(kind=what, alpha=a, e_t_sem=s.e_t, e_t_pos=p.e_t, eps_g_sem=s.eps_g,
                            eps_g_pos=p.eps_g, converged=bool(s.converged and p.converged)))
        return cache[a]

    def f(a):
        s, p = solve(a)
        if not (s.converged and p.converged):
            raise _Unrefinable
        if what == "alpha_c":
            return s.e_t - p.e_t
        g = s if s.e_t < p.e_t else p
        return g.eps_g - eps_lin

    try:
        flo, fhi = f(lo), f(hi)
        if (flo < 0) == (fhi < 0):
            return None
        return float(brentq(f, lo, hi, xtol=xtol))
    except _Unrefinable:
        return None


class _Unrefinable(Exception):
    pass


def _bracket(alphas: np.ndarray, root: float | None) -> tuple[float, float] | None:
    if root is None:
        return None
    a = np.sort(alphas)
    i = int(np.searchsorted(a, root))
    if i == 0 or i >= len(a):
        return None
    return float(a[i - 1]), float(a[i])


def _mixed_search(params, alphas: Sequence[float], sem_sols, pos_sols, nodes, max_steps: int = 60
                  ) -> list[dict[str, Any]]:
    """Try the unpinned (``free``) branch from a mixed start (m and θ both non-zero) at a few α."""
    from .theory import solve_point

    out = []
    for a in alphas:
        s, p = _nearest(sem_sols, a), _nearest(pos_sols, a)
        q = 0.5 * ((s.q if s else 0.1) + (p.q if p else 0.05))
        V = 0.5 * ((s.V if s else 12.0) + (p.V if p else 11.0))
        init = SimpleNamespace(q=q, m=0.5 * (p.m if p else 0.25), V=V, theta=0.5 * (s.theta if s else 0.15),
                               branch="free")
        r = solve_point(params, float(a), "free", nodes=nodes, init=init, stability=False, max_steps=max_steps)
        mixed = bool(r.converged and abs(r.m) > MIXED_TOL and abs(r.theta) > MIXED_TOL)
        kind = ("mixed" if abs(r.m) > MIXED_TOL and abs(r.theta) > MIXED_TOL else "semantic"
                if abs(r.theta) > MIXED_TOL else "positional" if abs(r.m) > MIXED_TOL else "uninformative")
        if not r.converged:
            kind = f"not converged after {max_steps} steps (last iterate: {kind})"
        out.append(dict(alpha=float(a), converged=bool(r.converged), m=r.m, theta=r.theta, q=r.q, e_t=r.e_t,
                        ends_in=kind, mixed=mixed))
    return out


def transition(params: ModelParams, *, alphas: Sequence[float] | None = None, nodes: int | None = None,
               progress: Callable[[str, int, int], None] | None = None, refine: bool = True,
               xtol: float = 2e-3, mixed_alphas: Sequence[float] | None = None,
               init: dict[str, Any] | None = None) -> TransitionResult:
    """Follow both branches along ``alphas`` (continuation from the largest α down), locate α_c and α_l
    (bracketed on the grid, then refined by Brent with warm-started :func:`attnphase.theory.solve_point`),
    the spinodals, and whether a mixed fixed point exists.

    ``progress(stage, i, total)`` is called after each solved point. ``init`` maps branch → solution to
    warm-start the first α (used by :func:`phase_diagram` to continue in ω).
    """
    from .provenance import provenance as _prov
    from .theory import curve_table, eps_lin as _eps_lin, solve_curve

    grid = np.array(sorted(DEFAULT_ALPHAS if alphas is None else alphas, reverse=True), float)
    if grid.size < 2 or (grid <= 0).any():
        raise ParameterError("alphas", "at least two values > 0", list(grid))
    init = init or {}
    el = float(_eps_lin(params))
    sols = {}
    for b in ("semantic", "positional"):
        # continuation from where the branch exists: semantic from the largest α down, positional from the
        # smallest α up
        order = list(grid) if b == "semantic" else list(grid[::-1])
        cb = (lambda i, b=b: progress(b, i + 1, len(grid))) if progress else None
        sols[b] = solve_curve(params, order, b, nodes=nodes, progress=cb, init=init.get(b))
    sem, pos = curve_table(sols["semantic"]), curve_table(sols["positional"])
    base = transition_from_tables(sem, pos, el)
    alpha_c, alpha_l = base["alpha_c"], base["alpha_l"]
    refined: list[dict[str, Any]] = []
    if refine:
        if progress:
            progress("refine", 0, 1)
        br = _bracket(grid, alpha_c)
        if br:
            r = _refine(params, sols["semantic"], sols["positional"], "alpha_c", *br, el, nodes, xtol, refined)
            alpha_c = r if r is not None else alpha_c
        br = _bracket(grid, alpha_l)
        if br and alpha_c is not None:
            br = (max(br[0], alpha_c), br[1])
        if br and br[0] < br[1]:
            r = _refine(params, sols["semantic"], sols["positional"], "alpha_l", *br, el, nodes, xtol, refined)
            alpha_l = r if r is not None else alpha_l
        if progress:
            progress("refine", 1, 1)
    if mixed_alphas is None:
        mid = alpha_c if alpha_c is not None else float(np.median(grid))
        mixed_alphas = sorted({round(mid, 4), float(grid.max())})
    if progress and len(mixed_alphas):
        progress("mixed", 0, 1)
    mixed = _mixed_search(params, mixed_alphas, sols["semantic"], sols["positional"], nodes) \
        if len(mixed_alphas) else []
    if progress:
        progress("mixed", 1, 1)
    prov = _prov(dict(params=params.to_dict(), alphas=list(map(float, grid)), nodes=nodes, xtol=xtol,
                      refine=refine, mixed_alphas=list(map(float, mixed_alphas))),
                 kind="transition",
                 unconverged=dict(semantic=int((~sem["converged"].astype(bool)).sum()),
                                  positional=int((~pos["converged"].astype(bool)).sum())))
    res = TransitionResult(params, alpha_c, alpha_l, el, base["spinodal_semantic"], base["spinodal_positional"],
                           any(m["mixed"] for m in mixed), mixed, sem, pos, base["global_table"], refined, prov)
    res._solutions = sols  # type: ignore[attr-defined]  # for continuation in ω
    return res


def phase_diagram(params: ModelParams, omegas: Sequence[float], alphas: Sequence[float], *,
                  nodes: int | None = None, progress: Callable[[float, str, int, int], None] | None = None,
                  refine: bool = False, mixed: bool = False):
    """Tidy (α, ω) phase diagram.

    Returns ``(grid, lines)``: ``grid`` has one row per (ω, α) with columns omega, alpha, e_t_sem, e_t_pos,
    delta_e_t, eps_g_global, eps_lin, eps_lin_minus_eps_g, global_branch (plus eps_g_sem, eps_g_pos);
    ``lines`` one row per ω with alpha_c, alpha_l, eps_lin, spinodal_semantic, spinodal_positional (and
    mixed_found when ``mixed``). Continuation along α per ω; each ω is warm-started from the previous ω's
    solution at the first α. By default no Brent refinement (grid interpolation only; pass ``refine=True``).
    """
    import pandas as pd

    omegas = [float(w) for w in omegas]
    for w in omegas:
        if not 0.0 <= w <= 1.0:
            raise ParameterError("omegas", "values in [0, 1]", w)
    frames, rows = [], []
    init: dict[str, Any] = {}
    for w in omegas:
        p = params.replace(omega=w)
        cb = (lambda st, i, n, w=w: progress(w, st, i, n)) if progress else None
        r = transition(p, alphas=alphas, nodes=nodes, progress=cb, refine=refine,
                       mixed_alphas=None if mixed else [], init=init)
        g = r.global_table.copy()
        g.insert(0, "omega", w)
        frames.append(g)
        rows.append(dict(omega=w, alpha_c=r.alpha_c, alpha_l=r.alpha_l, eps_lin=r.eps_lin,
                         spinodal_semantic=r.spinodal_semantic, spinodal_positional=r.spinodal_positional,
                         **({"mixed_found": r.mixed_found} if mixed else {})))
        sols = r._solutions  # type: ignore[attr-defined]
        init = {b: next((s for s in sols[b] if s.converged), None) for b in sols}  # first α of each curve
    cols = ["omega", "alpha", "e_t_sem", "e_t_pos", "delta_e_t", "eps_g_global", "eps_lin",
            "eps_lin_minus_eps_g", "global_branch", "eps_g_sem", "eps_g_pos"]
    grid = pd.concat(frames, ignore_index=True)[cols]
    return grid, pd.DataFrame(rows)
