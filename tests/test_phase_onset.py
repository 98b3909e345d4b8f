"""α_c where the semantic branch is born continuously from the uninformative point, with QMC errors (issue 29,
L = 3, A = 0.4 I + 0.2 J, ω = 0.3): the onset is where the uninformative point's growth factor crosses +1, and
no crossing is read where the e_t difference is within its error (MODEL.md §6 "Transition", §7, §8).

The stand-in solver below is shaped like the engine's L = 3 answers (docs/guides/finite_d_theory.md): the
semantic branch leaves the uninformative point at ``A_ON`` with θ² ∝ α − A_ON and e_t^sem − e_t^uni ∝ −(α −
A_ON)², the positional branch collapsed everywhere, every value with a standard error; on top, "QMC noise"
at α = 0.3 puts e_t^sem above e_t^uni there (within 2 s.e.) and the uninformative factor at 0.99 (≤ 1)."""

import math

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.phase import transition
from attnphase.phase.global_min import (ONSET_END, ONSET_FACTOR, TIE_K, global_switch, mark_ties, onset,
                                        resolved_crossing)
from attnphase.phase.result import kind_runs
from attnphase.phase.stability import global_minimum
from attnphase.theory.solution import Solution, scalar_state
from attnphase.theory.status import Status

A_ON = 0.22
ET_ERR, FACTOR_ERR = 1.2e-5, 0.05
NOISE_ET = 2.0e-5      # e_t^sem − e_t^uni = −1.28e-5 + 2e-5 = +7.2e-6 at α = 0.3: within TIE_K s.e.
NOISE_FACTOR = -0.13   # the uninformative factor 1.12 − 0.13 = 0.99 at α = 0.3 (2.6 s.e. low)


def _noise(size, alpha):
    """A smooth bump of height ``size`` at α = 0.3 (width 0.03): what the solves see there, refined ones too."""
    return size * math.exp(-((alpha - 0.3) / 0.03) ** 2)


def _solution(params, alpha, branch, status, q=math.nan, m=math.nan, theta=math.nan, e_t=math.nan,
              eps_g=math.nan, stability=None, stability_err=None):
    vals = dict(q=q, m=m, V=30.0, theta=theta, e_t=e_t, eps_g=eps_g)
    errs = dict(e_t=ET_ERR, eps_g=5e-5, theta=0.002, q=1e-4) if status is Status.CONVERGED else {}
    return Solution(params, float(alpha), branch, scalar_state(q, m, 30.0, theta), None, vals, errs, status, 10,
                    1e-7, stability, stability_err, "qmc")


def onset_stand_in(params, alpha, branch, *, init=None, stability=True, **kw):
    """The L = 3-like answers of the engine (module docstring)."""
    q, e_u = 0.17 * alpha, 0.0076 * alpha
    born = alpha > A_ON
    if branch == "positional":
        return _solution(params, alpha, branch, Status.COLLAPSED)
    if branch == "uninformative" or (branch == "free" and not born):
        f = 1.0 + 1.5 * (alpha - A_ON) + _noise(NOISE_FACTOR, alpha)
        return _solution(params, alpha, branch, Status.CONVERGED, q, 0.0, 0.0, e_u, 0.0096,
                         f if branch == "uninformative" else None, FACTOR_ERR)
    if not born:         # semantic below the onset: the pinned iteration falls onto the uninformative point
        return _solution(params, alpha, branch, Status.COLLAPSED)
    d = alpha - A_ON
    return _solution(params, alpha, branch, Status.CONVERGED, q, 0.0, 0.15 * math.sqrt(d),
                     e_u - 0.002 * d * d + _noise(NOISE_ET, alpha), 0.0096 - 0.01 * d,
                     -0.5 if branch == "semantic" else None, 0.02)


GRID = [0.2, 0.3, 0.4, 0.5, 0.6]


def test_continuous_onset_is_not_read_where_e_t_are_tied():
    """Before the fix: α_c = 0.297 ± 0.25 ("competitor loses stability": the rows at 0.3, where e_t differ by
    +7e-6 ± 1.7e-5 and the uninformative factor reads 0.99, counted as the uninformative point's, and the
    factor's crossing was located by solves inside that stretch). Now: a continuous onset where the semantic
    branch begins (A_ON, to end_xtol), the tied row named; the factor's line (root 0.250, above the lowest α
    where the branch exists, 0.225) only an upper bound."""
    p = ModelParams(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]], omega=0.3)
    r = transition(p, alphas=GRID, solver=onset_stand_in, mixed_alphas=[], alpha_min=0.1, alpha_max=0.6,
                   end_xtol=0.01)
    d = r.to_dict()
    assert r.alpha_c_kind == "continuous" and d["transition_order"] == "continuous onset"
    assert r.alpha_c_against == "uninformative"
    loc = d["alpha_c_location"]
    assert loc["method"].startswith(ONSET_END) and "upper bound" in loc["method"] and loc["tied"] == [0.3]
    assert loc["upper"] > A_ON and loc["upper_err"] > 0
    assert abs(r.alpha_c - A_ON) <= 0.01 and r.alpha_c_err is not None and r.alpha_c_err <= 0.01
    assert {"kind": "tied: semantic ~ uninformative", "alpha_from": 0.3, "alpha_to": 0.3} in d["global_kinds"]


def test_onset_at_the_growth_factor_below_where_the_branch_is_first_resolved():
    """QMC: the branch's end is where θ is first significant (0.265 here), above the onset; the uninformative
    factor's line (1.0 + 1.5 (α − 0.22) at 0.2, 0.3, 0.4 ± 0.05) crosses +1 at 0.22 below it: α_c is that
    crossing, with the line's error; a tied row at 0.3 is skipped."""
    import pandas as pd
    from attnphase.phase.continuation import Branch, BranchEnd, BranchPoint, PointState
    from types import SimpleNamespace
    rows = []
    for a in (0.2, 0.3, 0.4):
        e_u = 0.0076 * a
        rows.append(dict(alpha=a, kind="uninformative", e_t=e_u, e_t_err=ET_ERR, eps_g=0.0096, stable=a < 0.35,
                         stability=1.0 + 1.5 * (a - A_ON) - (0.13 if a == 0.3 else 0.0), stability_err=FACTOR_ERR))
        if a > 0.25:
            rows.append(dict(alpha=a, kind="semantic", e_t=e_u + (7e-6 if a == 0.3 else -6.5e-5), e_t_err=ET_ERR,
                             eps_g=0.009, stable=True, stability=-0.5, stability_err=0.02))
    fps = pd.DataFrame(rows)
    pts = [BranchPoint(SimpleNamespace(alpha=a, theta=0.15 * math.sqrt(a - A_ON), q=0.17 * a, m=0.0,
                                       branch="semantic"), PointState.OK) for a in (0.27, 0.3, 0.4)]
    br = {"semantic": Branch("semantic", ModelParams(), pts, end=BranchEnd(0.265, PointState.COLLAPSED, 0.27, 0.26))}
    sw = global_switch(mark_ties(global_minimum(fps), fps), fps, br)
    assert sw.kind == "continuous" and sw.method == ONSET_FACTOR and sw.tied == (0.3,)
    assert sw.alpha_c < 0.265 and abs(sw.alpha_c - A_ON) < 2 * sw.err


def test_ties_are_marked_only_with_errors_and_within_tie_k():
    fps = _survey_rows([(0.3, +7.2e-6, ET_ERR), (0.4, -6.5e-5, ET_ERR), (0.5, -2e-5, math.nan)])
    gm = mark_ties(global_minimum(fps), fps)
    assert list(gm["tied"]) == [True, False, False]          # the split rule (NaN error) is never tied
    assert TIE_K * math.hypot(ET_ERR, ET_ERR) > 7.2e-6
    assert not resolved_crossing(fps, 0.35, "uninformative")   # the row below is tied
    assert resolved_crossing(fps, 0.45, "uninformative")


def _survey_rows(diffs):
    import pandas as pd
    rows = []
    for a, dlt, err in diffs:
        rows.append(dict(alpha=a, kind="uninformative", e_t=0.002, e_t_err=err, eps_g=0.01, stable=True,
                         stability=0.9, stability_err=FACTOR_ERR))
        rows.append(dict(alpha=a, kind="semantic", e_t=0.002 + dlt, e_t_err=err, eps_g=0.008, stable=True,
                         stability=-0.5, stability_err=0.02))
    return pd.DataFrame(rows)


def test_onset_fits_a_line_through_noisy_factors_with_its_error():
    """A row above the onset that reads ≤ 1 (0.92 at 0.3) does not move the onset to the next sign change:
    the weighted line through the rows of the bracket and its neighbours has its root within ~1 s.e. of the
    true crossing; the error shrinks with the factors' errors."""
    import pandas as pd

    def table(err):
        a = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
        f = 1.0 + 1.5 * (a - A_ON) + np.array([0.0, 0.03, -0.2, 0.0, 0.0]) * err / FACTOR_ERR
        return pd.DataFrame(dict(alpha=a, kind="uninformative", stability=f, stability_err=err))
    on = onset(table(FACTOR_ERR), "uninformative", 0.2, 0.4)
    assert on is not None and on.alphas == (0.1, 0.2, 0.3, 0.4, 0.5)
    assert abs(on.alpha - A_ON) < 1.5 * on.err and on.err < 0.05
    fine = onset(table(FACTOR_ERR / 10), "uninformative", 0.2, 0.4)
    assert fine.err == pytest.approx(on.err / 10, rel=0.1) and abs(fine.alpha - A_ON) < abs(on.alpha - A_ON) + 1e-12
    flat = table(FACTOR_ERR).assign(stability=0.9)
    assert onset(flat, "uninformative", 0.2, 0.4) is None          # no positive slope: no onset


def test_without_errors_a_continuous_birth_keeps_the_branch_end():
    """The split rule (no per-point error): the onset is the followed branch's end, as before."""
    def no_err(*args, **kw):
        s = onset_stand_in(*args, **kw)
        return Solution(s.params, s.alpha, s.branch, s.x, None, s.values, {}, s.status, 10, 1e-7, s.stability,
                        None, "stand-in")
    p = ModelParams(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]], omega=0.3)
    r = transition(p, alphas=[0.2, 0.4, 0.5, 0.6], solver=no_err, mixed_alphas=[], alpha_min=0.1, alpha_max=0.6,
                   end_xtol=0.01)
    assert r.alpha_c_kind == "continuous" and r.alpha_c_location["method"] == ONSET_END
    assert abs(r.alpha_c - A_ON) <= 0.01


def test_an_onset_below_the_grid_is_found_by_extending_down_past_tied_rows():
    """The starting grid begins at 0.3, a tied row: the global minimum is semantic at every decided row, so the
    range extends down (the survey with it) until the onset is bracketed (:func:`transition`'s extension for
    α_c); the e_t "crossing" near 0.3 is never reported."""
    p = ModelParams(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]], omega=0.3)
    r = transition(p, alphas=[0.3, 0.4, 0.5, 0.6], solver=onset_stand_in, mixed_alphas=[], alpha_min=0.1,
                   alpha_max=0.6, end_xtol=0.01)
    assert r.alpha_range[0] < A_ON and r.alpha_c_kind == "continuous"
    assert abs(r.alpha_c - A_ON) <= 0.01
    assert any("below the starting range" in n for n in r.notes)
