"""The scale-aware refinement of α_c, α_l (attnphase.phase.scale_refine) on an analytic stand-in for the split
rule whose answer depends on the outer order: at the coarse order the semantic branch folds at 0.85 and crosses
the uninformative point at 1.05; at order ≥ 16 it folds at 1.03, already below the uninformative point."""

import dataclasses
import math

import pytest

from attnphase.model import ModelParams
from attnphase.phase.continuation import follow_branch
from attnphase.phase.scale_refine import SCALE_COMPETITOR_RTOL, SCALE_RTOL, line_scale, scale_refine
from _stand_in_point import ScalarStandInPoint

P = ModelParams(omega=0.3, sigma=1.5)
EPS_LIN = 0.02


def order_dependent(fold_fine=1.03, cross_coarse=1.05, calls=None):
    """Semantic e_t = 0.01 α + 0.001 (c − α) with c = 1.05 (order < 16) or 1.0 (order ≥ 16); uninformative
    e_t = 0.01 α. The semantic branch exists (converges) for α ≥ 0.85 (order < 16) or ≥ ``fold_fine``; the
    uninformative point is stable. ε_g^sem = 0.03 − 0.01 α (below ε_lin = 0.02 from α = 1). q = 1.0."""
    calls = [] if calls is None else calls

    def solve(params, alpha, branch, *, nodes=None, init=None, max_steps=300, stability=True, **kw):
        calls.append(dict(alpha=alpha, branch=branch, nodes=nodes))
        fine = (nodes or 8) >= 16
        conv, th, m = True, 0.0, 0.0
        if branch == "semantic":
            c = 1.0 if fine else cross_coarse
            conv = alpha >= (fold_fine if fine else 0.85)
            th = 0.5
            e_t, eps_g = 0.01 * alpha + 0.001 * (c - alpha), 0.03 - 0.01 * alpha
        else:
            e_t, eps_g = 0.01 * alpha, 0.04
        return ScalarStandInPoint(float(alpha), branch, params, 1.0, m, 3.0, th, 0.1, 0.0, 0.05, 0.01, eps_g, e_t,
                                  conv, 10, 1e-7, "converged" if conv else "not converged", 0.5, True, nodes or 8)
    return solve


def _coarse(solver):
    up = [round(0.8 + 0.1 * k, 6) for k in range(8)]
    sem = follow_branch(P, up[::-1], "semantic", nodes=4, solver=solver, min_step=1e-3)
    pos = follow_branch(P, up, "positional", nodes=4, solver=solver, min_step=1e-3)
    return {"semantic": sem, "positional": pos}


def test_born_below_the_competitor_gives_the_branch_end_at_the_fine_order():
    calls = []
    solver = order_dependent(calls=calls)
    br = _coarse(solver)
    assert br["semantic"].end is not None and abs(br["semantic"].end.alpha - 0.85) < 2e-3   # the coarse fold
    assert line_scale(br, [1.05]) == pytest.approx(1.0)
    calls.clear()
    r = scale_refine(P, br, 1.05, "crossing", "uninformative", 1.05, EPS_LIN, nodes=16, q=1.0, solver=solver,
                     xtol=1e-4, end_xtol=1e-3, alpha_hi=1.5, alpha_min=0.05)
    assert r.ok, r.reason
    assert r.alpha_c_kind == "semantic branch appears"
    lo, hi = r.alpha_c_bracket
    assert lo <= 1.03 <= hi and hi - lo <= 4e-3
    assert abs(r.alpha_c - 1.03) <= 4e-3
    # every solve of the refinement at the fine order (the engine's retry of the last failed solve before an end
    # at twice the order is not made: _capped)
    assert {c["nodes"] for c in calls} == {16} and all(p["nodes"] == 16 for p in r.points)
    # ε_g^sem(1.03) = 0.0197 < ε_lin: α_l = α_c
    assert r.alpha_l == r.alpha_c and r.alpha_l_kind == "at alpha_c"
    assert "nodes = 16" in r.note(4) and "semantic branch's end" in r.note(4)


def test_crossing_when_the_branch_is_born_above_the_competitor():
    """At the fine order the semantic branch exists from 0.95 and crosses the uninformative point at 1.0."""
    solver = order_dependent(fold_fine=0.95)
    br = _coarse(solver)
    r = scale_refine(P, br, 1.05, "crossing", "uninformative", 1.05, EPS_LIN, nodes=16, q=1.0, solver=solver,
                     xtol=1e-5, end_xtol=1e-3, alpha_hi=1.5, alpha_min=0.05)
    assert r.ok and r.alpha_c_kind == "crossing"
    assert r.alpha_c == pytest.approx(1.0, abs=2e-5)
    assert r.alpha_c_bracket[0] <= 1.0 <= r.alpha_c_bracket[1]
    assert r.alpha_l == pytest.approx(1.0, abs=2e-5)     # ε_g^sem crosses ε_lin at 1.0 too


def test_a_competitor_that_fails_from_the_interpolated_start_is_solved_again_from_its_own():
    """σ = 1.5 at order 16: the uninformative point between two converged neighbours did not converge from the
    start interpolated between them (it does from its own start); Brent then found no crossing and the coarse
    α_c was kept. Stand-in: the uninformative point fails from any warm start within 0.02 of the crossing."""
    base = order_dependent(fold_fine=0.95)
    retried = []

    def solver(params, alpha, branch, *, init=None, max_steps=300, **kw):
        s = base(params, alpha, branch, init=init, max_steps=max_steps, **kw)
        if branch == "uninformative" and abs(alpha - 1.0) < 0.02:
            if init is not None:
                return dataclasses.replace(s, converged=False, iterations=max_steps, residual=1e-2,
                                           status="not converged")
            retried.append(alpha)
        return s

    br = _coarse(solver)
    r = scale_refine(P, br, 1.05, "crossing", "uninformative", 1.05, EPS_LIN, nodes=16, q=1.0, solver=solver,
                     xtol=1e-5, end_xtol=1e-3, alpha_hi=1.5, alpha_min=0.05)
    assert r.ok, r.reason
    assert r.alpha_c_kind == "crossing" and r.alpha_c == pytest.approx(1.0, abs=2e-5)
    assert retried


def test_a_crossing_above_the_fold_stops_the_follow_there():
    """σ = 1.5: the order-16 semantic branch folds near 0.936 but crosses the uninformative point at 1.0145;
    following it down to the fold cost 3–4 failed order-16 solves of 150–210 s each. The follow now stops at the
    first α where the semantic e_t is not below its competitor: no semantic solve below that α, no end located."""
    calls = []
    solver = order_dependent(fold_fine=0.9, calls=calls)
    br = _coarse(solver)
    calls.clear()
    r = scale_refine(P, br, 1.05, "crossing", "uninformative", 1.05, EPS_LIN, nodes=16, q=1.0, solver=solver,
                     xtol=1e-5, end_xtol=1e-3, alpha_hi=1.5, alpha_min=0.05)
    assert r.ok and r.alpha_c_kind == "crossing" and r.alpha_c == pytest.approx(1.0, abs=2e-5)
    sem = [c["alpha"] for c in calls if c["branch"] == "semantic"]
    assert min(sem) >= r.alpha_c - 0.05 - 1e-9       # one step below the crossing at most, never to the fold
    assert r.semantic_end is None
    # the competitor is solved only from the coarse α_c down (and in Brent's bracket)
    assert max(c["alpha"] for c in calls if c["branch"] == "uninformative") <= 1.05 + 1e-9
    # a coarse α_c that is not a round number is checked too (the follow's α's are rounded to 1e-6)
    calls.clear()
    r = scale_refine(P, br, 1.0499996, "crossing", "uninformative", 1.05, EPS_LIN, nodes=16, q=1.0, solver=solver,
                     xtol=1e-5, end_xtol=1e-3, alpha_hi=1.5, alpha_min=0.05)
    assert r.ok and r.alpha_c == pytest.approx(1.0, abs=2e-5)
    assert [c["alpha"] for c in calls if c["branch"] == "uninformative"][0] == pytest.approx(1.05, abs=1e-6)


def test_the_competitor_is_solved_at_its_own_scales_order():
    """σ = 1.5: the uninformative point has q ≈ 1.7–1.9 near α_c (order 24 needed) while the semantic branch has
    q ≈ 1 (order 16). The competitor is solved at its own order; the order-16 solve that showed its q is kept
    in the records, marked superseded; the result says the competitor's order, and no resolution note remains."""
    from attnphase.phase.scale_refine import resolution

    calls = []
    base = order_dependent(fold_fine=0.95, calls=calls)

    def solver(params, alpha, branch, **kw):
        s = base(params, alpha, branch, **kw)
        return dataclasses.replace(s, q=1.8) if branch == "uninformative" else s

    br = _coarse(solver)
    calls.clear()
    r = scale_refine(P, br, 1.05, "crossing", "uninformative", 1.05, EPS_LIN, nodes=16, q=1.0, solver=solver,
                     xtol=1e-5, end_xtol=1e-3, alpha_hi=1.5, alpha_min=0.05)
    assert r.ok and r.alpha_c == pytest.approx(1.0, abs=2e-5)
    comp = [c["nodes"] for c in calls if c["branch"] == "uninformative"]
    assert comp[0] == 16 and set(comp[1:]) == {24}
    assert {c["nodes"] for c in calls if c["branch"] == "semantic"} == {16}
    assert r.competitor == "uninformative" and r.competitor_nodes == 24
    assert r.to_dict()["competitor_nodes"] == 24 and "uninformative point at nodes = 24" in r.note(4)
    recs = [p for p in r.points if p["branch"] == "uninformative"]
    assert [p["nodes"] for p in recs if "superseded" in p] == [16]
    assert resolution(r.points) is None
    # the same records without the order raised would be flagged (q = 1.8 at order 16: use nodes ≥ 24)
    assert "nodes ≥ 24" in resolution([dict(p, nodes=16) for p in recs if "superseded" not in p])
    # where the curves already give the competitor's q (the survey's uninformative rows), no order-16 solve of it
    calls.clear()
    r2 = scale_refine(P, br, 1.05, "crossing", "uninformative", 1.05, EPS_LIN, nodes=16, q=1.0, solver=solver,
                      xtol=1e-5, end_xtol=1e-3, alpha_hi=1.5, alpha_min=0.05, competitor_q=1.75)
    assert r2.alpha_c == r.alpha_c and r2.competitor_nodes == 24
    assert {c["nodes"] for c in calls if c["branch"] == "uninformative"} == {24}


def test_competitor_scale_reads_the_survey_near_alpha_c():
    import pandas as pd

    from attnphase.phase.scale_refine import competitor_scale

    fps = pd.DataFrame(dict(alpha=[0.8, 1.0, 1.1, 1.5, 1.0], kind=["uninformative"] * 4 + ["semantic"],
                            q=[1.5, 1.7, 1.8, 2.5, 1.0]))
    assert competitor_scale(fps, {}, "uninformative", 1.05) == 1.8      # 0.8 and 1.5 are outside ± 0.2
    assert competitor_scale(fps, {}, "uninformative", 3.0) is None


def test_warm_started_solves_skip_the_coarse_stage():
    """At q ≳ 1 the order-4 coarse stage is further off than a warm start: every warm-started semantic solve of the
    refinement asks for ``coarse=False``; the competitor's solves and cold ones do not."""
    base = order_dependent(fold_fine=0.95)
    seen = []

    rtols = {}

    def solver(params, alpha, branch, *, init=None, **kw):
        seen.append((init is not None and branch == "semantic", kw.get("coarse", True)))
        rtols.setdefault(branch, set()).add(kw.get("rtol"))
        return base(params, alpha, branch, init=init, **kw)

    br = _coarse(base)
    r = scale_refine(P, br, 1.05, "crossing", "uninformative", 1.05, EPS_LIN, nodes=16, q=1.0, solver=solver,
                     xtol=1e-5, end_xtol=1e-3, alpha_hi=1.5, alpha_min=0.05)
    assert r.ok and seen
    assert all(coarse is (not warm) for warm, coarse in seen)
    assert any(warm for warm, _ in seen) and any(not warm for warm, _ in seen)
    # the slowly contracting competitor is solved to a tighter residual than the semantic branch
    assert rtols == {"semantic": {SCALE_RTOL}, "uninformative": {SCALE_COMPETITOR_RTOL}}
    assert SCALE_COMPETITOR_RTOL < SCALE_RTOL


def test_no_fine_semantic_point_is_a_failure_not_a_number():
    solver = order_dependent(fold_fine=9.0)
    br = _coarse(solver)
    r = scale_refine(P, br, 1.05, "crossing", "uninformative", 1.05, EPS_LIN, nodes=16, q=1.0, solver=solver,
                     xtol=1e-4, end_xtol=1e-3, alpha_hi=1.5, alpha_min=0.05)
    assert not r.ok and r.alpha_c is None and "no valid point at nodes = 16" in r.reason
    assert "failed" in r.note(4) and math.isclose(r.alpha_c_coarse, 1.05)


@pytest.mark.slow
@pytest.mark.timeout(3600)      # one σ = 1.5 transition with the order-16 refinement: > 10 min on 2 shared cores
def test_sigma_1p5_alpha_c_located_at_order_16_and_checked_by_independent_solves():
    """σ = 1.5 (q ≈ 1 on the semantic branch at the lines: order 16; q ≈ 1.7 at the uninformative point: order
    24). The old code kept the curves' (order 4, 1.053) or the order-8 crossing (1.018); the semantic branch at
    order 16 against the uninformative point at order 24 cross at 1.0116 (docs/notes/2026-12-05-theory-general.md). Independent
    solves (semantic at order 16 warm-started from an order-4 point at α = 1.2, no continuation; the uninformative
    point cold at the competitor's recorded order) 0.01 outside the bracket see the global minimum flip."""
    import numpy as np

    from attnphase.phase import transition
    from attnphase.theory import solve_point

    r = transition(P, alphas=np.round(np.arange(0.8, 1.31, 0.1), 6), mixed_alphas=[])
    assert not any("table value kept" in n for n in r.notes), r.notes
    assert not any("use nodes ≥" in n for n in r.notes), r.notes      # each point at its own scale's order
    sr = r.scale_refinement
    assert sr["ok"] and sr["nodes"] == 16 and r.alpha_c_nodes == 16
    assert sr["competitor"] == "uninformative" and sr["competitor_nodes"] == 24
    lo, hi = sr["alpha_c_bracket"]
    assert lo <= r.alpha_c <= hi and hi - lo < 0.01
    seed = solve_point(P, 1.2, "semantic", nodes=4, stability=False)

    def semantic_is_global(a):
        s = solve_point(P, a, "semantic", nodes=16, init=seed, stability=True, max_steps=150)
        u = solve_point(P, a, "uninformative", nodes=sr["competitor_nodes"], stability=True, max_steps=150)
        assert u.converged
        ok = s.converged and s.stability <= 1.0 and abs(s.theta) > 1e-3 * P.sigma * math.sqrt(s.q)
        return ok and s.e_t < u.e_t

    assert semantic_is_global(hi + 0.01)
    assert not semantic_is_global(lo - 0.01)
