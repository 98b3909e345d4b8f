"""Which fixed point is the global minimum at each α, and where it becomes semantic (MODEL.md §6
"Transition"): the global-minimum table of two branches (:func:`global_table`), α_l on it, and the change of
kind of the lowest stable fixed point of a survey (:func:`global_switch`: a crossing, a continuous birth, a
fold, a competitor that loses stability); the stretch where no stable fixed point is known
(:func:`unknown_gap`). The fixed points compared are every one the survey found (semantic, positional,
uninformative, and the free/mixed points: :func:`~.stability.survey`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .continuation import END_XTOL, PointState
from .roots import table_root
from .stability import spinodal, valid_rows


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
    tied: tuple[float, ...] = ()
    """Table α's inside ``bracket`` where the semantic point's e_t and the competitor's are not told apart
    (:func:`mark_ties`): α_c is located between the rows where the difference is significant, not on them."""
    method: str = ""
    """How a ``continuous`` α_c was located: :data:`ONSET_FACTOR` (the competitor's growth factor through +1,
    :func:`onset`) or :data:`ONSET_END` (where the followed semantic branch ends, θ → 0)."""
    err: float | None = None
    """The standard error of an α_c located by :func:`onset`, and the table α's its fit used (``rows``)."""
    rows: tuple[float, ...] = ()
    upper: tuple[float, float] | None = None
    """An upper bound on a ``continuous`` α_c located at the branch's beginning, ± its error: where the
    competitor's growth factor crosses +1 (:func:`_continuous`)."""


TIE_K = 2.0
"""The lowest stable semantic point and the lowest stable other one are *tied* at an α when their e_t differ
by at most this many standard errors (the QMC errors over scrambles, added in quadrature; MODEL.md §8): e_t
does not say which is lower there. At L = 3, A = 0.4 I + 0.2 J, ω = 0.3 (1024 × 4 points) the semantic point
and the uninformative one differ by +3e-6 ± 4e-6, +2e-6 ± 5e-6, −5e-6 ± 5e-6 at α = 0.25, 0.3, 0.35
(docs/guides/finite_d_theory.md), and an e_t crossing read there (0.302) was noise. The split rule gives no
per-point error: its rows are never tied."""


def mark_ties(gm, fps, k: float = TIE_K):
    """The global-minimum table ``gm`` (:func:`~.stability.global_minimum`) with two columns more: ``tied``
    (the stable semantic point and the lowest stable other fixed point have e_t within ``k`` standard errors)
    and ``tied_with`` (that other kind; "" where not tied)."""
    gm = gm.copy()
    tied, other = [], []
    for a in gm["alpha"]:
        st = fps[(fps["alpha"] == a) & fps["stable"]]
        sem, rest = st[st["kind"] == "semantic"], st[st["kind"] != "semantic"]
        if sem.empty or rest.empty:
            tied.append(False)
            other.append("")
            continue
        s, o = sem.loc[sem["e_t"].idxmin()], rest.loc[rest["e_t"].idxmin()]
        err = math.hypot(_f(s, "e_t_err"), _f(o, "e_t_err"))
        t = bool(abs(float(s["e_t"]) - float(o["e_t"])) <= k * err)   # NaN error (the split rule): never
        tied.append(t)
        other.append(str(o["kind"]) if t else "")
    gm["tied"] = np.array(tied, bool)
    gm["tied_with"] = other
    return gm


def reclassification_notes(fps) -> list[str]:
    """One note per row of the survey ``fps`` that holds "mixed" free points whose m or θ is at the QMC noise
    floor (column ``reclassified``, :func:`~.kinds.free_point_kind`): each is that row's point seen through the
    noise, never a distinct competitor."""
    if fps is None or "reclassified" not in fps:
        return []
    rows = fps[fps["reclassified"].fillna("").astype(str) != ""].sort_values("alpha")
    return [f"α = {float(r['alpha']):g}, {r['reclassified']}: the {r['kind']} point seen through the QMC noise, "
            "not a distinct fixed point" for _, r in rows.iterrows()]


def _f(row, col: str) -> float:
    return float(row[col]) if col in row and row[col] is not None else math.nan


def decided(gm):
    """The rows of a :func:`mark_ties` table where the global minimum is known and not tied, sorted by α."""
    ok = gm["global_kind"] != "none"
    if "tied" in gm:
        ok &= ~gm["tied"].astype(bool)
    return gm[ok].sort_values("alpha")


def resolved_crossing(fps, alpha: float, comp: str, k: float = TIE_K) -> bool:
    """Whether an e_t crossing of the semantic point and ``comp`` read at ``alpha`` is resolved: at the nearest
    table α's below and above it where both were solved, |Δe_t| exceeds ``k`` standard errors (no error: yes)."""
    if "e_t_err" not in fps:
        return True
    sem = fps[fps["kind"] == "semantic"].groupby("alpha")[["e_t", "e_t_err"]].first()
    oth = fps[fps["kind"] == comp].groupby("alpha")[["e_t", "e_t_err"]].first()
    both = sem.merge(oth, left_index=True, right_index=True, suffixes=("_s", "_c")).dropna(subset=["e_t_s", "e_t_c"])
    a = both.index.to_numpy(float)
    near = [x for x in (a[a <= alpha].max(initial=-math.inf), a[a >= alpha].min(initial=math.inf))
            if math.isfinite(x)]
    for x in near:
        r = both.loc[x]
        if abs(float(r["e_t_s"]) - float(r["e_t_c"])) <= k * math.hypot(float(r["e_t_err_s"]), float(r["e_t_err_c"])):
            return False
    return True


ONSET_FACTOR = "the competitor's growth factor through +1"
ONSET_END = "the end of the followed semantic branch (θ → 0)"


def _has_errors(fps) -> bool:
    """The survey's values carry integration errors (QMC): the growth factors have standard errors."""
    return "stability_err" in fps and bool(np.isfinite(fps["stability_err"].to_numpy(float)).any())


@dataclass(frozen=True)
class Onset:
    """Where the competitor's growth factor crosses +1 (:func:`onset`): ``alpha`` ± ``err`` from a weighted line
    through its table rows ``alphas``."""

    alpha: float
    err: float
    alphas: tuple[float, ...]


def onset(fps, kind: str, a0: float, a1: float) -> Onset | None:
    """Where the growth factor of the fixed point ``kind`` crosses +1 near the table bracket ``[a0, a1]``: the
    root of a straight line fitted by weighted least squares (weights 1/s.e.², MODEL.md §7, §8) to its rows in
    the bracket and one more on each side, with the root's standard error from the fit's covariance. A line
    through several rows, not the first sign change: QMC factors carry errors of 0.05–0.1 at small sizes (a row
    above the onset can read ≤ 1). None with fewer than two rows with errors, a slope that is not positive, or
    a root outside the rows' span widened by one bracket."""
    r = fps[(fps["kind"] == kind) & np.isfinite(fps["stability"].to_numpy(float))
            & np.isfinite(fps["stability_err"].to_numpy(float))].sort_values("alpha")
    a, f, e = (r[c].to_numpy(float) for c in ("alpha", "stability", "stability_err"))
    inside = np.flatnonzero((a >= a0 - 1e-9) & (a <= a1 + 1e-9))
    if inside.size == 0:
        return None
    idx = np.arange(max(inside[0] - 1, 0), min(inside[-1] + 2, len(a)))
    a, f, e = a[idx], f[idx], np.maximum(e[idx], 1e-12)
    if len(a) < 2 or np.ptp(a) == 0:
        return None
    X = np.stack([np.ones_like(a), a], axis=1)
    W = 1.0 / e ** 2
    cov = np.linalg.inv(X.T @ (W[:, None] * X))
    c0, c1 = cov @ (X.T @ (W * f))
    if not c1 > 0:
        return None
    root = (1.0 - c0) / c1
    grad = np.array([-1.0 / c1, -root / c1])
    err = float(math.sqrt(max(grad @ cov @ grad, 0.0)))
    span = a1 - a0
    if not a[0] - span <= root <= a[-1]:
        return None
    return Onset(float(root), err, tuple(float(x) for x in a))


def _continuous(fps, branch, end, a_birth: float | None, comp: str, bracket: tuple[float, float],
                tied: tuple[float, ...]) -> Switch:
    """α_c of a semantic branch born continuously from ``comp`` (the uninformative point): where ``comp``'s
    growth factor crosses +1 (:func:`onset`, with QMC errors) when that lies at or below the lowest α where
    the branch exists (a branch born from a point's instability exists only above it); else where the branch
    begins (θ² extrapolated to 0, or its end), with the factor's crossing as an upper bound (``upper``: the
    competitor is stable, and e_t equal within errors, up to there). Measured at L = 3, A = 0.4 I + 0.2 J,
    ω = 0.3: the branch exists from α ≈ 0.2 with θ → 0, while the uninformative θ-factor reads 0.69, 0.80,
    0.89, 0.98 at α = 0.15–0.3 (1024 × 4 points; smaller finite-difference steps read lower still,
    bench/investigations/onset_factor_step_L3.py) and crosses +1 near 0.31."""
    birth = float(end.alpha if a_birth is None else a_birth)
    on = onset(fps, comp, *bracket) if _has_errors(fps) else None
    first = min((float(p.alpha) for p in branch.valid()), default=math.inf)
    if on is not None and on.alpha <= first:
        return Switch(on.alpha, comp, "continuous", bracket, tied, ONSET_FACTOR, on.err, on.alphas)
    if on is None:
        return Switch(birth, comp, "continuous", bracket, tied, ONSET_END)
    why = (f"{ONSET_END}; {ONSET_FACTOR} at {on.alpha:.4g} ± {on.err:.2g} lies above the lowest α where the "
           f"semantic branch exists ({first:.4g}): an upper bound")
    return Switch(birth, comp, "continuous", bracket, tied, why, upper=(on.alpha, on.err))


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
    the lower one there; the competitor's instability instead when the semantic e_t stays above up to it).

    Rows where e_t does not tell the semantic point from the lowest other one (:func:`mark_ties`: QMC errors)
    decide nothing: the bracket is between decided rows, a refined crossing inside tied rows is dropped, and
    the Switch lists them (``tied``). A continuous birth with QMC errors is located at the competitor's growth
    factor through +1 where that is consistent with the branch's existence, else at the branch's beginning
    (:func:`_continuous`; ``method`` says which)."""
    gm = mark_ties(gm, fps) if "tied" not in gm else gm
    known = decided(gm).reset_index(drop=True)
    if known.empty or known["global_kind"].iloc[-1] != "semantic":
        return None
    not_sem = np.flatnonzero(known["global_kind"].to_numpy() != "semantic")
    if not_sem.size == 0:
        return None
    i = int(not_sem[-1])
    a0, a1 = float(known["alpha"].iloc[i]), float(known["alpha"].iloc[i + 1])
    comp = str(known["global_kind"].iloc[i])
    tied = tuple(float(a) for a in gm.loc[gm["tied"] & (gm["alpha"] > a0) & (gm["alpha"] < a1), "alpha"])
    if tied:    # a refined crossing inside the undecided stretch is noise, not the transition
        alpha_c_crossing = None
    s0, s1, c0, c1 = _row(fps, a0, "semantic"), _row(fps, a1, "semantic"), _row(fps, a0, comp), _row(fps, a1, comp)
    if s0 is not None and c1 is not None:
        if alpha_c_crossing is not None and a0 <= alpha_c_crossing <= a1 and comp in ("positional", "uninformative"):
            return Switch(alpha_c_crossing, comp, "crossing", (a0, a1))
        d0, d1 = s0["e_t"] - c0["e_t"], s1["e_t"] - c1["e_t"]
        return Switch(float(a0 - d0 * (a1 - a0) / (d1 - d0)), comp, "crossing", (a0, a1), tied)
    if s0 is None:
        end = branches["semantic"].end
        if end is None or not a0 - 1e-9 <= end.alpha <= a1 + 1e-9:
            return Switch(None, comp, "semantic branch appears", (a0, a1), tied)
        a_birth = _theta_zero(branches["semantic"], end)
        if comp == "uninformative" and (a_birth is not None or end.kind is PointState.COLLAPSED):
            return _continuous(fps, branches["semantic"], end, a_birth, comp, (a0, a1), tied)
        a_u = _competitor_crossing(fps, comp, a0, a1, locate) if _loses_stability(fps, comp, a0, a1) else math.inf
        if comp == "uninformative" and abs(a_u - end.alpha) <= CONTINUOUS_TOL and _small_at_end(branches["semantic"]):
            # the uninformative point turns unstable (against θ) where the semantic branch appears with a small
            # θ: the semantic branch splits off it, e_t is continuous there
            return Switch(float(end.alpha), comp, "continuous", (a0, a1), tied, ONSET_END)
        if a_u < end.alpha:
            return Switch(a_u, comp, "competitor loses stability", (a0, a1), tied)
        a_x = _crossing_above_fold(branches["semantic"], end, fps, comp, a0, a1)
        if a_u < a_x:
            return Switch(a_u, comp, "competitor loses stability", (a0, a1), tied)
        return Switch(a_x, comp, "semantic branch appears", (a0, a1), tied)
    # the competitor stops being stable between a0 and a1: where its growth factor crosses +1 — unless the
    # semantic e_t falls below the competitor's (the saddle's e_t at a1 still counts) before that (σ = 1,
    # ω = 0.45: e_t crossing 1.047, the uninformative point stable up to 1.098)
    a_u = _competitor_crossing(fps, comp, a0, a1, locate)
    a_x = _et_crossing(fps, comp, a0, a1, alpha_c_crossing)
    if a_x is not None and a_x < a_u:
        return Switch(a_x, comp, "crossing", (a0, a1), tied)
    return Switch(a_u, comp, "competitor loses stability", (a0, a1), tied)


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
    b = factor_bracket(fps, kind, a0, a1)
    if b is None:
        return 0.5 * (a0 + a1)
    (b0, st0), (b1, st1) = b
    if locate is not None:
        r = locate(kind, b0, b1)
        if r is not None:
            return float(r)
    return float(b0 + (1.0 - st0) * (b1 - b0) / (st1 - st0))


def factor_bracket(fps, kind: str, a0: float, a1: float):
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


def alpha_l_global(gm, alpha_c: float, alpha_l: float | None, eps_lin: float, semantic=None) -> float | None:
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
