"""Fixes found on the σ/λ variant rows of docs/notes/2026-12-03-phase-boundaries.md (issue #9): a branch first valid in an
extension block gets its beginning located; α_c where the competitor turns unstable is located by solves and
told apart from a continuous birth and from an e_t crossing above a fold; a failed solve next to a valid point
already near the uninformative point is a collapse. Stand-ins for the theory solver (fast) and two checks
with the real one (slow)."""

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from attnphase.model import ModelParams
from attnphase.phase import PointState, follow_branch, transition
from attnphase.phase.continuation import Branch, BranchEnd, BranchPoint
from attnphase.phase.stability import global_minimum
from attnphase.phase.crossing import growth_crossing
from attnphase.phase.global_min import CONTINUOUS_TOL, global_switch
from _stand_in_point import ScalarStandInPoint

COLS = ["alpha", "kind", "e_t", "eps_g", "q", "m", "theta", "V", "stable", "stability", "source"]


def _fps(rows):
    return pd.DataFrame([dict(zip(COLS, r)) for r in rows], columns=COLS)


def _sem(points, end):
    """A semantic Branch with valid points (alpha, theta, e_t) and the given end."""
    pts = [BranchPoint(SimpleNamespace(alpha=a, theta=t, e_t=e, q=0.2, m=0.0, branch="semantic"), PointState.OK)
           for a, t, e in points]
    return {"semantic": Branch("semantic", ModelParams(sigma=1.0), pts, end=end)}


def fold_fake(a_fold=1.55, a_c=1.8):
    """Semantic branch valid only above a fold at ``a_fold`` (no fixed point below: the solve fails there);
    positional valid everywhere; e_t^sem − e_t^pos = 0.001 (a_c − α)."""
    def fake(params, alpha, branch, *, nodes=None, init=None, **kw):
        q, conv = 0.05 + 0.03 * alpha ** 2, True
        if branch == "semantic":
            m, th = 0.0, 0.1 * math.sqrt(alpha)
            conv = alpha >= a_fold
            e_t, eps_g = 0.002 * alpha + 0.001 * (a_c - alpha), 0.004 - 0.002 * alpha
        else:
            m, th = 0.2 + 0.02 * alpha, 0.0
            e_t, eps_g = 0.002 * alpha, 0.0034
        return ScalarStandInPoint(float(alpha), branch, params, q, m, 12.0, th, 0.1, 0.0, 0.05, 0.01, eps_g, e_t,
                                  conv, 10, 1e-7 if conv else 0.05, "converged" if conv else "not converged", 0.5,
                                  True, nodes or 8)
    return fake


@pytest.mark.parametrize("a_fold", [1.55, 1.75])
def test_a_branch_first_valid_in_an_extension_block_gets_its_beginning_located(a_fold):
    """σ = 0.5, λ = 0.001, ω = 0.5 (previous table: α_c "—", "the two branches are never valid at the same α"):
    the semantic branch exists only above the starting grid; the extension finds it, and it is followed back
    over the old α's (or, beginning inside the block, to its end there), so its end is located to 1e-3 and
    the old α's carry the end's reason."""
    r = transition(ModelParams(omega=0.3), alphas=[1.3, 1.4, 1.5], mixed_alphas=[], fixed_points=False,
                   solver=fold_fake(a_fold))
    end = r.branches["semantic"].end
    assert end is not None and end.kind is PointState.ENDED and abs(end.alpha - a_fold) <= 1e-3
    assert r.branches["semantic"].begin is None
    old = [p for p in r.branches["semantic"] if p.alpha <= 1.5]
    assert [p.state for p in old] == [PointState.ENDED] * 3
    assert all("beyond the branch's end" in p.note for p in old)
    assert abs(r.alpha_c - 1.8) < 1e-3


def test_competitor_that_turns_unstable_before_a_fold_sets_alpha_c():
    """σ = 1, ω = 0.05-like: the uninformative point turns unstable (growth factor crosses +1 at 0.512) well
    below the fold where the followed semantic branch begins (0.602): α_c is the former ("competitor loses
    stability"), located by ``locate``; without it, interpolated on the table."""
    fps = _fps([(0.5, "uninformative", 2.7e-3, 0.11, 0.2, 0, 0, 40, True, 0.976, ""),
                (0.6, "uninformative", 3.5e-3, 0.12, 0.2, 0, 0, 40, False, 1.176, ""),
                (0.7, "uninformative", 4.2e-3, 0.13, 0.2, 0, 0, 40, False, 1.2, ""),
                (0.7, "semantic", 3.9e-3, 0.05, 0.2, 0, 0.5, 20, True, -1.0, "")])
    br = _sem([(0.6025, 0.52, 3.4e-3), (0.61, 0.53, 3.45e-3), (0.7, 0.55, 3.9e-3)],
              BranchEnd(0.602, PointState.ENDED, 0.6025, 0.6015))
    gm = global_minimum(fps)
    sw = global_switch(gm, fps, br, locate=lambda kind, a0, a1: 0.5123)
    assert sw.kind == "competitor loses stability" and sw.against == "uninformative" and sw.alpha_c == 0.5123
    assert global_switch(gm, fps, br).alpha_c == pytest.approx(0.5 + 0.1 * 0.024 / 0.2)


def test_competitor_turning_unstable_at_the_branch_end_is_a_continuous_birth():
    """σ = 0.5, λ = 0.001, ω = 0.5: the uninformative factor crosses +1 at 1.594 (stability rule), the semantic
    branch ends at 1.589 (a slow, failed collapse marked ``ended``): one point, within CONTINUOUS_TOL."""
    fps = _fps([(1.5, "uninformative", 1.16e-3, 4.6e-3, 0.2, 0, 0, 80, True, 0.97, ""),
                (1.6, "uninformative", 1.305e-3, 4.7e-3, 0.2, 0, 0, 73, False, 1.002, ""),
                (1.6, "semantic", 1.304e-3, 3.9e-3, 0.2, 0, 0.09, 65, True, -1.8, "")])
    br = _sem([(1.589, 0.041, 1.289e-3), (1.6, 0.093, 1.304e-3)], BranchEnd(1.5887, PointState.ENDED, 1.589, 1.5883))
    sw = global_switch(global_minimum(fps), fps, br, locate=lambda kind, a0, a1: 1.5943)
    assert abs(1.5943 - 1.5887) <= CONTINUOUS_TOL
    assert sw.kind == "continuous" and sw.alpha_c == pytest.approx(1.5887)
    # a fold with a large θ there is no birth from the uninformative point, however near
    big = _sem([(1.589, 0.4, 1.289e-3), (1.6, 0.45, 1.304e-3)], BranchEnd(1.5887, PointState.ENDED, 1.589, 1.5883))
    assert global_switch(global_minimum(fps), fps, big, locate=lambda kind, a0, a1: 1.5943).kind != "continuous"


def test_alpha_c_above_a_fold_is_the_e_t_crossing_not_the_fold():
    """A semantic branch that begins at a fold (0.55) with e_t above the (still stable) competitor: α_c is the
    e_t crossing above the fold (0.575), not the fold; a branch born already lower gives the fold."""
    fps = _fps([(0.5, "uninformative", 2.0e-3, 0.1, 0.2, 0, 0, 40, True, 0.5, ""),
                (0.6, "uninformative", 3.0e-3, 0.1, 0.2, 0, 0, 40, True, 0.6, ""),
                (0.6, "semantic", 2.95e-3, 0.05, 0.2, 0, 0.5, 20, True, -1.0, "")])
    # competitor e_t = 0.002 + 0.01 (α − 0.5); semantic = competitor + 0.002 (0.575 − α)
    pts = [(a, 0.5, 0.002 + 0.01 * (a - 0.5) + 0.002 * (0.575 - a)) for a in (0.551, 0.56, 0.58, 0.6)]
    gm = global_minimum(fps)
    sw = global_switch(gm, fps, _sem(pts, BranchEnd(0.5505, PointState.ENDED, 0.551, 0.55)))
    assert sw.kind == "semantic branch appears" and sw.alpha_c == pytest.approx(0.575, abs=1e-9)
    lower = [(a, 0.5, e - 1e-4) for a, _, e in pts]
    assert global_switch(gm, fps, _sem(lower, BranchEnd(0.5505, PointState.ENDED, 0.551, 0.55))).alpha_c == 0.5505


def test_growth_crossing_is_located_to_xtol_by_solves():
    a_u = 0.5123
    calls = []

    def fake(params, alpha, branch, **kw):
        calls.append(alpha)
        return SimpleNamespace(converged=True, stability=1.0 + 2.0 * (alpha - a_u) + 3.0 * (alpha - a_u) ** 2)
    fps = _fps([(0.5, "uninformative", 0, 0, 0.2, 0, 0, 40, True, 1.0 - 2 * 0.0123 + 3 * 0.0123 ** 2, ""),
                (0.6, "uninformative", 0, 0, 0.2, 0, 0, 40, False, 1.0 + 2 * 0.0877 + 3 * 0.0877 ** 2, "")])
    r = growth_crossing(ModelParams(), "uninformative", 0.5, 0.6, fps, nodes=4, solver=fake, xtol=1e-3)
    assert abs(r - a_u) <= 1e-3 and len(calls) <= 8
    assert growth_crossing(ModelParams(), "uninformative", 0.5, 0.6, fps.iloc[:1], nodes=4, solver=fake) is None


def test_a_failure_next_to_a_nearly_collapsed_point_is_a_collapse():
    """σ = 0.7, ω = 0.45 (θ = 0.0145 at the last valid α = 0.8875, the failed iterate 0.0022 after 60 steps;
    θ² vanishes at 0.8873): previously `ended` because the iterate had not fallen tenfold. A semantic branch
    with θ² = 0.004 (α − 0.6) whose failed iterates keep half the start's θ: `collapsed` at 0.6 to 1e-3; the same
    failure next to a large θ (a fold) stays `ended`."""
    def make(theta2):
        def fake(params, alpha, branch, *, nodes=None, init=None, **kw):
            q = 0.05
            ok = alpha > 0.6
            th = math.sqrt(theta2(alpha)) if ok else 0.5 * (init.theta if init is not None else 0.01)
            return ScalarStandInPoint(float(alpha), branch, params, q, 0.0, 12.0, th, 0.1, 0.0, 0.05, 0.01, 0.003,
                                      0.002 * alpha, ok, 10, 1e-7 if ok else 0.01, "", 0.5, True, nodes or 8)
        return fake
    br = follow_branch(ModelParams(sigma=0.5), [0.8, 0.7, 0.5], "semantic", nodes=4,
                       solver=make(lambda a: 0.004 * (a - 0.6)))
    assert br.end.kind is PointState.COLLAPSED and abs(br.end.alpha - 0.6) <= 1e-3
    fold = follow_branch(ModelParams(sigma=0.5), [0.8, 0.7, 0.5], "semantic", nodes=4,
                         solver=make(lambda a: 0.01 + 0.004 * (a - 0.6)))
    assert fold.end.kind is PointState.ENDED


@pytest.mark.slow
def test_sigma_0p7_omega_0p45_semantic_branch_collapses_real_theory():
    """The real solver: the semantic branch at σ = 0.7, ω = 0.45 merges with the uninformative point near
    α = 0.887 (θ → 0; previously labelled `ended`)."""
    br = follow_branch(ModelParams(omega=0.45, sigma=0.7), [0.9, 0.88], "semantic", nodes=4)
    assert br.end.kind is PointState.COLLAPSED and 0.884 < br.end.alpha < 0.890


@pytest.mark.slow
def test_lambda_0p001_omega_0p5_alpha_c_is_found_real_theory():
    """σ = 0.5, λ = 0.001, ω = 0.5 (previous table: α_c "—"): the semantic branch exists only above the grid
    [1.4, 1.5]; the extension finds it, its beginning is located (≈ 1.589), and α_c is its continuous birth
    from the uninformative point, which turns unstable there (growth factor 0.97 at 1.5, 1.002 at 1.6)."""
    r = transition(ModelParams(omega=0.5, lam=0.001), alphas=[1.4, 1.5], mixed_alphas=[], alpha_max=2.0)
    assert r.alpha_c is not None and 1.58 < r.alpha_c < 1.60
    assert r.alpha_c_against == "uninformative" and r.alpha_c_kind == "continuous"
    assert r.branches["semantic"].end is not None and abs(r.branches["semantic"].end.alpha - r.alpha_c) < 0.01
    assert r.alpha_l is None and r.alpha_l_bound == "> 2"   # ε_g^sem > ε_lin = 0.001006 up to α_max (also at 6)


def test_a_semantic_branch_above_its_competitor_up_to_the_instability_switches_there_not_at_its_fold():
    """σ = 1, ω = 0.2: the semantic branch begins at a fold (0.5505) with e_t above the uninformative point, which
    stays stable up to its growth factor's crossing (0.59) and is the global minimum until there; α_c is that
    crossing, not the fold (the fold was returned when no e_t crossing lay in the bracket)."""
    fps = _fps([(0.5, "uninformative", 2.0e-3, 0.1, 0.2, 0, 0, 40, True, 0.9, ""),
                (0.6, "uninformative", 3.0e-3, 0.1, 0.2, 0, 0, 40, False, 1.1, ""),
                (0.6, "semantic", 3.1e-3, 0.05, 0.2, 0, 0.5, 20, True, -1.0, "")])
    pts = [(a, 0.5, 0.002 + 0.01 * (a - 0.5) + 1e-4) for a in (0.551, 0.56, 0.58, 0.6)]
    sw = global_switch(global_minimum(fps), fps, _sem(pts, BranchEnd(0.5505, PointState.ENDED, 0.551, 0.55)),
                       locate=lambda kind, a0, a1: 0.59)
    assert sw.kind == "competitor loses stability" and sw.alpha_c == pytest.approx(0.59, abs=1e-12)


def test_alpha_l_found_for_an_earlier_alpha_c_is_dropped_when_alpha_c_moves_below_it():
    """σ = 1, ω = 0.15: α_l = 0.639 had been set at the pinned e_t crossing (the semantic ε_g already below ε_lin
    there); the survey moved α_c to 0.544 and the global ε_g is below ε_lin from the first α above it, so α_l is
    α_c. A genuine crossing (global ε_g above ε_lin between α_c and α_l) is kept."""
    from attnphase.phase.global_min import alpha_l_global
    gm = pd.DataFrame(dict(alpha=[0.5, 0.6, 0.7], global_kind=["uninformative", "semantic", "semantic"],
                           e_t_global=[2e-3, 2.9e-3, 3.3e-3], eps_g_global=[0.089, 0.029, 0.017]))
    assert alpha_l_global(gm, 0.5441, 0.6389, 0.0537) == 0.5441
    gm2 = gm.assign(eps_g_global=[0.089, 0.06, 0.04])
    assert alpha_l_global(gm2, 0.5441, 0.6389, 0.0537) == 0.6389


def test_alpha_l_between_a_continuous_birth_and_the_next_table_row_is_read_on_the_semantic_points():
    """λ = 0.001, ω = 0.02: the semantic branch is born at α_c = 0.443 with the uninformative point's ε_g
    (above ε_lin) and is already below ε_lin at the next table row (0.5): α_l lies between, on the branch's
    own points — neither α_c nor a value above 0.5."""
    from attnphase.phase.global_min import alpha_l_global
    el = 0.00386
    gm = pd.DataFrame(dict(alpha=[0.4, 0.5, 0.6], global_kind=["uninformative", "semantic", "semantic"],
                           e_t_global=[2.2e-4, 2.8e-4, 3.3e-4], eps_g_global=[0.0052, 0.00369, 0.00222]))
    eps = {0.4435: 0.0053, 0.45: 0.0049, 0.47: 0.0042, 0.49: 0.0037, 0.5: 0.00369}
    pts = [BranchPoint(SimpleNamespace(alpha=a, eps_g=e, theta=0.05, q=0.1, branch="semantic"), PointState.OK)
           for a, e in eps.items()]
    sem = Branch("semantic", ModelParams(lam=0.001, omega=0.02), pts)
    r = alpha_l_global(gm, 0.443, 0.5098, el, sem)
    assert 0.47 < r < 0.49      # the bracket of the sign change (the caller refines it by Brent)
    below = Branch("semantic", sem.params, [BranchPoint(SimpleNamespace(alpha=a, eps_g=0.003, theta=0.3, q=0.1,
                                                                        branch="semantic"), PointState.OK)
                                            for a in eps])
    assert alpha_l_global(gm, 0.443, None, el, below) == 0.443


def test_an_e_t_crossing_before_the_competitor_turns_unstable_is_alpha_c():
    """σ = 1, ω = 0.45 (stored fixed points): at α = 1.0 the uninformative point is stable and lower, at 1.1 the
    semantic one is lower and the uninformative point just unstable (factor 1.0002): α_c is the e_t crossing
    (1.047 refined, 1.0404 on the table), not the instability (1.098) — stable but higher from 1.047 on."""
    fps = _fps([(1.0, "semantic", 0.004632, 0.018, 0.2, 0, 0.57, 20, True, -1.04, ""),
                (1.0, "uninformative", 0.004454, 0.063, 0.2, 0, 0, 40, True, 0.9918, ""),
                (1.1, "semantic", 0.005285, 0.015, 0.2, 0, 0.59, 20, True, -1.15, ""),
                (1.1, "uninformative", 0.005548, 0.065, 0.2, 0, 0, 40, False, 1.0002, "")])
    gm = global_minimum(fps)
    sem = _sem([(1.0, 0.57, 0.004632), (1.1, 0.59, 0.005285)], None)
    sw = global_switch(gm, fps, sem, 1.047, locate=lambda kind, a0, a1: 1.0982)
    assert sw.kind == "crossing" and sw.alpha_c == 1.047
    sw = global_switch(gm, fps, sem, None, locate=lambda kind, a0, a1: 1.0982)
    assert sw.alpha_c == pytest.approx(1.0 + 0.1 * 0.000178 / (0.000178 + 0.000263), abs=1e-12)
    sw = global_switch(gm, fps, sem, None, locate=lambda kind, a0, a1: 1.02)   # unstable before the crossing
    assert sw.kind == "competitor loses stability" and sw.alpha_c == 1.02


def gap_fake(a_fold=0.54, a_u=0.4988):
    """σ = 1, ω = 0.02 in miniature: the uninformative point turns unstable against θ at ``a_u`` (factor
    1 + α − a_u), the semantic branch exists only above a fold at ``a_fold`` > a_u (the solve fails below),
    the positional iteration collapses onto the uninformative point, free solves do not converge. Between
    a_u and a_fold no stable fixed point is known."""
    def fake(params, alpha, branch, *, nodes=None, init=None, **kw):
        q, m, th, conv, stab = 0.5, 0.0, 0.0, True, 0.5
        e_t, eps_g = 0.003 * alpha, 0.11
        if branch == "semantic":
            th, conv = 0.35, alpha >= a_fold
            e_t, eps_g = 0.003 * alpha + 0.001 * (0.65 - alpha), 0.05
        elif branch == "uninformative":
            stab = 1.0 + alpha - a_u
        elif branch == "free":
            conv = False
        return ScalarStandInPoint(float(alpha), branch, params, q, m, 50.0, th, 1e-4, 0.0, 0.01, 0.01 if th else 0.0,
                                  eps_g, e_t, conv, 10, 1e-7 if conv else 0.05,
                                  "converged" if conv else "not converged", stab, stab <= 1.0, nodes or 8)
    return fake


def test_alpha_l_is_only_bracketed_where_the_global_minimum_is_unknown_below_it():
    """σ = 1, ω = 0.02 (table: α_c = 0.4988 "competitor loses stability", α_l = 0.5398 — where the semantic
    branch is first valid — with the global minimum "none" at α = 0.5 between them): α_l is not a number
    then but the bracket [α_c, first known crossing], with the unknown α's named."""
    r = transition(ModelParams(omega=0.02, sigma=1.0), alphas=[0.4, 0.5, 0.6, 0.7], mixed_alphas=[], refine=False,
                   extend=False, solver=gap_fake())
    assert r.alpha_c is not None and abs(r.alpha_c - 0.4988) <= 2e-3 and r.alpha_c_against == "uninformative"
    assert r.alpha_l is None
    lo, hi = (float(x) for x in r.alpha_l_bound.split("–"))
    assert lo == pytest.approx(r.alpha_c, abs=1e-4) and 0.5 < hi <= 0.6
    assert "α = 0.5 " in r.alpha_l_reason and "unknown" in r.alpha_l_reason
    # no gap: the global minimum known at every table α between α_c and α_l
    from attnphase.phase.global_min import unknown_gap
    gm = global_minimum(_fps([(0.4, "uninformative", 1e-3, 0.1, 0.5, 0, 0, 50, True, 0.9, "u"),
                              (0.5, "semantic", 1e-3, 0.05, 0.5, 0, 0.3, 50, True, 0.5, "s")]))
    assert unknown_gap(gm, 0.45, 0.48) is None and unknown_gap(gm, 0.45, None) is None
    gm.loc[gm["alpha"] == 0.5, "global_kind"] = "none"
    assert unknown_gap(gm, 0.45, 0.45).alphas == (0.5,)


@pytest.mark.slow
def test_sigma_1_omega_0p02_alpha_l_is_bracketed_real_theory():
    """σ = 1, ω = 0.02 on the grid [0.4, 0.5, 0.6]: the uninformative point turns unstable against θ at
    α_c ≈ 0.524 (nodes = 8 factor; 0.499 on the survey's nodes = 4 factor), the semantic branch followed down
    ends near 0.54 (no converged fixed point at α = 0.5: the θ direction is flat within the rule's error,
    docs/notes/2026-12-03-phase-boundaries.md). Between α_c and the semantic branch's first valid point no stable fixed point is
    known: α_l is never read inside that stretch — it is a number above it (measured 0.5624 on this grid, where
    ε_g^sem crosses ε_lin) or the bracket [α_c, first valid semantic point]."""
    r = transition(ModelParams(omega=0.02, sigma=1.0), alphas=[0.4, 0.5, 0.6], mixed_alphas=[], extend=False)
    assert r.alpha_c is not None and 0.515 < r.alpha_c < 0.535 and r.alpha_c_kind == "competitor loses stability"
    # 0.4988: the σ = 1, ω = 0.02 row at nodes 4 (package output, docs/notes/2026-12-03-phase-boundaries.md;
    # regression pin)
    assert r.alpha_c_location["nodes"] == 8 and abs(r.alpha_c_location["alpha_curve_nodes"] - 0.4988) < 2e-3
    first = min(p.alpha for p in r.branches["semantic"].valid())
    assert first > r.alpha_c + 2e-3
    if r.alpha_l is not None:
        assert r.alpha_l > first
    else:
        assert "between α_c and" in r.alpha_l_reason
        lo, hi = (float(x) for x in r.alpha_l_bound.split("–"))
        assert lo == pytest.approx(r.alpha_c, abs=1e-4) and 0.5 < hi < 0.6


def test_alpha_c_at_a_competitors_instability_is_located_at_the_transitions_resolution():
    """The growth factor used to be evaluated on the nodes = 4 rule whatever the resolution of the transition
    (σ = 1, ω = 0.02: crossing +1 at 0.4988 there, ≈ 0.524 at nodes = 8). A stand-in whose uninformative factor
    crosses +1 at 0.4988 on nodes 4 and at 0.515 on nodes 8 (with a glitch of −0.015 near 0.513, as measured at
    nodes 8): α_c of kind "competitor loses stability" is the nodes-8 crossing to 1e-3, the table's bracket
    [0.4, 0.5] is widened to 0.6 (at nodes 8 the factor at 0.5 is still below +1), and the location records its
    resolution and the difference to the nodes-4 crossing."""
    base = gap_fake()
    calls = []

    def fake(params, alpha, branch, *, nodes=None, stability_nodes=None, **kw):
        s = base(params, alpha, branch, nodes=nodes, **kw)
        sn = min(nodes or 8, 4) if stability_nodes is None else stability_nodes
        calls.append((branch, round(alpha, 6), nodes, sn if kw.get("stability", True) else None))
        if branch != "uninformative":
            return s
        stab = 1.0 + alpha - (0.4988 if sn <= 4 else 0.515) - (0.015 if sn > 4 and abs(alpha - 0.513) < 2e-3 else 0)
        return dataclasses.replace(s, stability=stab, stable=stab <= 1.0)

    r = transition(ModelParams(omega=0.02, sigma=1.0), alphas=[0.4, 0.5, 0.6, 0.7], mixed_alphas=[], refine=False,
                   extend=False, solver=fake)
    assert r.alpha_c_kind == "competitor loses stability" and r.alpha_c_against == "uninformative"
    assert abs(r.alpha_c - 0.515) <= 1e-3
    loc = r.alpha_c_location
    assert loc["nodes"] == 8 and loc["stability_nodes"] == 8 and loc["widened"] == [0.6]
    assert abs(loc["alpha_curve_nodes"] - 0.4988) <= 1e-3 and abs(loc["difference"] - 0.0162) <= 2e-3
    assert r.to_dict()["alpha_c_location"]["nodes"] == 8
    assert any(sn == 8 and b == "uninformative" for b, _, _, sn in calls)
    # curves at nodes 8 too: every factor (branches, survey, crossing) on the nodes-8 rule, nothing to redo
    calls.clear()
    r8 = transition(ModelParams(omega=0.02, sigma=1.0), alphas=[0.4, 0.5, 0.6, 0.7], mixed_alphas=[], refine=False,
                    extend=False, solver=fake, curve_nodes=None)
    assert abs(r8.alpha_c - 0.515) <= 1e-3 and r8.alpha_c_location["difference"] == 0.0
    assert {sn for _, _, n, sn in calls} - {None} == {8}
    # where the nodes-8 factors do not bracket +1 on the table (crossing beyond the last row): kept at the
    # survey's resolution, and a note says so
    from attnphase.phase.crossing import precise_crossing
    from attnphase.phase.global_min import Switch

    fps = r.fixed_points
    far = lambda params, alpha, branch, **kw: dataclasses.replace(fake(params, alpha, branch, **kw), stability=0.5)
    notes = []
    sw, loc = precise_crossing(ModelParams(omega=0.02, sigma=1.0), Switch(0.4988, "uninformative",
                               "competitor loses stability", (0.4, 0.5)), fps, nodes=8, curve_nodes=4, solver=far,
                               xtol=1e-3, notes=notes)
    assert sw.alpha_c == 0.4988 and loc["nodes"] == 4 and "not located at nodes = 8" in notes[0]


def test_alpha_l_is_bracketed_where_the_semantic_branch_begins_above_alpha_c_between_table_rows():
    """σ = 1, ω = 0.02 with α_c located at nodes 8 (0.524): the uninformative point is a saddle above α_c, the
    semantic branch is valid only from 0.5398, and no table α lies between them — the stretch is still unknown,
    so α_l (read as α_c) is only bracketed. Not so where the semantic branch is valid below α_c (a crossing)."""
    from attnphase.phase.global_min import unknown_gap

    def sem(alphas):
        pts = [BranchPoint(SimpleNamespace(alpha=a, theta=0.3, e_t=1e-3, eps_g=0.001, q=0.5, m=0.0, branch="semantic"),
                           PointState.OK) for a in alphas]
        return Branch("semantic", ModelParams(sigma=1.0), pts)
    gm = global_minimum(_fps([(0.5, "uninformative", 1e-3, 0.1, 0.5, 0, 0, 50, True, 0.98, "u"),
                              (0.6, "semantic", 1e-3, 0.001, 0.5, 0, 0.3, 50, True, 0.5, "s")]))
    gap = unknown_gap(gm, 0.524, 0.524, 0.0039, sem([0.5398, 0.6]))
    assert gap.alphas == () and gap.semantic_from == 0.5398 and gap.bound == "0.5240–0.5398"
    assert "between α_c and 0.5398" in gap.reason
    assert unknown_gap(gm, 0.524, 0.5398, 0.0039, sem([0.5398, 0.6])).bound == "0.5240–0.5398"   # read at its edge
    assert unknown_gap(gm, 0.524, 0.524, 0.0039, sem([0.5245, 0.6])) is None   # begins at α_c (within 2e-3)
    assert unknown_gap(gm, 0.524, 0.524, 0.0039, sem([0.5, 0.6])) is None      # valid below α_c: a crossing


def test_solve_point_evaluates_the_growth_factor_at_the_requested_resolution():
    """σ = 1, ω = 0.02, α = 0.5 (MODEL.md §7): the uninformative point's factor against θ is above +1 on the
    nodes-4 rule (measured 1.0009) and below on nodes 8 (0.9845) — the bias this parameter removes. The
    solution records the rule; a bad value is a one-line ParameterError."""
    from attnphase.errors import ParameterError
    from attnphase.theory import solve_point

    p = ModelParams(omega=0.02, sigma=1.0)
    coarse = solve_point(p, 0.5, "uninformative", nodes=4)
    fine = solve_point(p, 0.5, "uninformative", nodes=8, init=coarse, stability_nodes=8)
    assert coarse.stability_nodes == 4 and fine.stability_nodes == 8
    assert coarse.stability > 1.0 > fine.stability and 0.005 < coarse.stability - fine.stability < 0.03
    assert solve_point(p, 0.5, "uninformative", nodes=4, stability=False).stability_nodes is None
    with pytest.raises(ParameterError, match="stability_nodes"):
        solve_point(p, 0.5, "uninformative", nodes=4, stability_nodes=1)


def test_alpha_l_is_read_across_alpha_c_on_the_semantic_branch():
    """α_c moved up (nodes-8 location) past the semantic points near the fold: no semantic point between α_c and
    the next table row 0.6, where ε_g^sem is already below ε_lin; the crossing lies between the semantic point
    below α_c (0.51) and 0.6, not at α_c (the old answer). α_c itself only where the semantic ε_g is already
    below ε_lin there (as measured at σ = 1, ω = 0.05: ε_g^sem(0.53) = 0.047 < ε_lin = 0.067)."""
    from attnphase.phase.global_min import alpha_l_global

    def sem(pts):
        return Branch("semantic", ModelParams(sigma=1.0), [
            BranchPoint(SimpleNamespace(alpha=a, theta=0.3, e_t=1e-3, eps_g=e, q=0.5, m=0.0, branch="semantic"),
                        PointState.OK) for a, e in pts])
    gm = global_minimum(_fps([(0.5, "uninformative", 1e-3, 0.1, 0.5, 0, 0, 50, True, 0.98, "u"),
                              (0.6, "semantic", 1e-3, 0.002, 0.5, 0, 0.3, 50, True, 0.5, "s")]))
    assert alpha_l_global(gm, 0.5346, None, 0.004, sem([(0.51, 0.006), (0.6, 0.002)])) == pytest.approx(0.555)
    assert alpha_l_global(gm, 0.5346, None, 0.004, sem([(0.51, 0.0045), (0.6, 0.002)])) == 0.5346
