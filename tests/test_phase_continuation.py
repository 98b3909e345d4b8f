"""The continuation engine (attnphase.phase.continuation) and what is built on it, on an analytic stand-in for
the theory solver (passed through the engine's PointSolver seam) whose branches end in a known way at a known
α and cross at a known α_c(ω); plus two checks with the real solver."""

import math

import numpy as np
import pandas as pd
import pytest

from attnphase.model import ModelParams
from attnphase.phase import (PointState, Unrefinable, follow_branch, local_root, phase_diagram, spinodal,
                             transition)
from _stand_in_point import ScalarStandInPoint


def make_fake(calls=None, end=0.75, kind="collapse", slope=1.0, stall=(), alpha_unstable=None):
    """e_t^sem − e_t^pos = 0.001 (1 + slope·ω − α): α_c(ω) = 1 + slope·ω. ε_g^sem = 0.004 − 0.002 α.
    Semantic branch below ``end``: ``collapse`` (converges, θ = 0) or ``fold`` (does not converge). Above
    ``alpha_unstable`` nothing; below it the semantic stability factor is 1 + 2 (alpha_unstable − α) > 1.
    At the α's in ``stall`` the solve fails unless its start is within 3e-4 of the true q (a point a smaller
    step reaches). q = 0.05 + 0.03 α² (curved, so a linear predictor improves with the step)."""
    calls = [] if calls is None else calls

    def fake(params, alpha, branch, *, nodes=None, init=None, max_steps=300, stability=True, **kw):
        calls.append(dict(alpha=alpha, branch=branch, init=init))
        w = params.omega
        q = 0.05 + 0.03 * alpha ** 2
        conv = True
        if round(alpha, 9) in stall and (init is None or abs(init.q - q) > 3e-4):
            conv = False
        stab = 0.5
        if branch == "semantic":
            m, V, th = 0.0, 12.0, 0.1 * math.sqrt(alpha)
            if alpha < end:
                th = 0.0 if kind == "collapse" else th
                conv = conv and kind == "collapse"
            if alpha_unstable is not None and alpha < alpha_unstable:
                stab = 1.0 + 2.0 * (alpha_unstable - alpha)
            e_t, eps_g = 0.002 * alpha + 0.001 * (1 + slope * w - alpha), 0.004 - 0.002 * alpha
        else:
            m, V, th = 0.2 + 0.02 * alpha, 11.0, 0.0
            e_t, eps_g = 0.002 * alpha, 0.0034
        return ScalarStandInPoint(float(alpha), branch, params, q, m, V, th, 0.1, 0.0, 0.05, 0.01, eps_g, e_t,
                                  conv, 10, 1e-7, "converged" if conv else "not converged", stab, stab <= 1,
                                  nodes or 8)
    return fake


P = ModelParams(omega=0.3)
DOWN = [1.2, 1.0, 0.8, 0.7, 0.6, 0.5]


@pytest.mark.parametrize("kind,state", [("collapse", PointState.COLLAPSED), ("fold", PointState.ENDED)])
def test_a_point_beyond_a_branch_end_gets_the_reason(kind, state):
    calls = []
    br = follow_branch(P, DOWN, "semantic", nodes=4, solver=make_fake(calls, end=0.75, kind=kind))
    assert [p.state for p in br] == [PointState.OK] * 3 + [state] * 3
    assert PointState.NOT_CONVERGED not in [p.state for p in br]
    # located to 1e-3 in α, between the last valid and the first invalid α met
    assert br.end.kind is state and abs(br.end.alpha - 0.75) <= 1e-3
    assert br.end.alpha_invalid < 0.75 <= br.end.alpha_valid and br.end.alpha_valid - br.end.alpha_invalid <= 1e-3
    assert min(c["alpha"] for c in calls) >= 0.7  # nothing solved past the first α beyond the end
    assert all("beyond the branch's end" in p.note for p in br.points[4:])


def test_unstable_end_is_where_the_growth_factor_crosses_one():
    br = follow_branch(P, DOWN, "semantic", nodes=4, solver=make_fake(end=0.0, alpha_unstable=0.9))
    assert br.end.kind is PointState.UNSTABLE and abs(br.end.alpha - 0.9) <= 1e-3
    # past an unstable end the pinned branch still exists (a saddle): followed, not used
    below = [p for p in br if p.alpha < 0.9]
    assert all(p.state is PointState.UNSTABLE and math.isfinite(p.e_t) for p in below)


def test_a_stall_is_cured_by_a_smaller_step():
    br = follow_branch(P, [1.6, 1.3, 1.0, 0.9], "semantic", nodes=4, solver=make_fake(end=0.0, stall=(1.0,)))
    assert [p.state for p in br] == [PointState.OK] * 4 and br.end is None
    assert br.extra  # the adaptive step solved intermediate α's


def test_predictor_is_the_linear_extrapolation():
    calls = []
    br = follow_branch(P, [1.2, 1.0, 0.8], "semantic", nodes=4, solver=make_fake(calls))
    init = calls[2]["init"]
    assert abs(init.q - (2 * br[1].q - br[0].q)) < 1e-12 and init.m == 0.0 and init.theta > 0


def test_solver_failure_everywhere_is_not_converged():
    def never(params, alpha, branch, **kw):
        s = make_fake()(params, alpha, branch, **kw)
        return ScalarStandInPoint(**{**s.__dict__, "converged": False, "status": "not converged"})
    br = follow_branch(P, [1.2, 1.0], "semantic", nodes=4, solver=never)
    assert [p.state for p in br] == [PointState.NOT_CONVERGED] * 2 and br.end is None


def test_transition_refines_to_the_known_crossing():
    calls = []
    r = transition(ModelParams(omega=0.3), alphas=np.linspace(0.5, 2.0, 7), nodes=8, curve_nodes=4,
                   mixed_alphas=[], solver=make_fake(calls))
    assert abs(r.alpha_c - 1.3) < 1e-4
    assert r.alpha_l >= r.alpha_c - 1e-12 and abs(r.alpha_l - r.alpha_c) < 1e-9
    assert r.branches["semantic"].end.kind is PointState.COLLAPSED
    assert abs(r.spinodal_semantic - 0.75) <= 1e-3


def test_transition_extends_the_alpha_range_until_alpha_c():
    p = ModelParams(omega=0.45)  # α_c = 1 + 4·0.45 = 2.8, beyond the starting grid
    r = transition(p, alphas=np.linspace(0.5, 2.0, 7), mixed_alphas=[], solver=make_fake(slope=4.0))
    assert abs(r.alpha_c - 2.8) < 1e-4 and r.alpha_range[1] >= 2.8
    capped = transition(p, alphas=np.linspace(0.5, 2.0, 7), mixed_alphas=[], alpha_max=2.5,
                        solver=make_fake(slope=4.0))
    d = capped.to_dict()
    assert d["alpha_c"] is None and d["alpha_c_bound"] == "> 2.5" and "2.5" in d["alpha_c_reason"]
    import json
    assert json.loads(json.dumps(d, default=str))["alpha_c_bound"] == "> 2.5"


def test_phase_diagram_alpha_c_increases_with_omega_and_uses_the_previous_omega():
    calls = []
    grid, lines = phase_diagram(ModelParams(), [0.1, 0.2, 0.3], np.linspace(0.8, 1.6, 9), nodes=4, refine=True,
                                solver=make_fake(calls))
    assert np.allclose(lines["alpha_c"], [1.1, 1.2, 1.3], atol=1e-3)
    assert set(grid["global_branch"]) <= {"semantic", "positional"}
    row = grid[(grid.omega == 0.2) & np.isclose(grid.alpha, 1.0)].iloc[0]
    assert row["global_branch"] == "positional" and row["delta_e_t"] > 0
    assert not (grid[["state_sem", "state_pos"]] == "not converged").any().any()
    # later ω are warm-started from the previous ω (guide): cold starts only at the first ω
    assert all(c["init"] is not None for c in calls if c["alpha"] > 0.8 and c is not calls[0])
    cold = [c for c in calls if c["init"] is None]
    assert len(cold) == 2  # first α of each branch at the first ω (the model's start)


def test_curve_command_and_transition_are_one_engine(monkeypatch, tmp_path):
    """`theory curve` and `transition` give the same points for the same branch (issue 9: they did not)."""
    import attnphase.theory as theory
    from typer.testing import CliRunner

    from attnphase.cli import _register, app
    _register()
    fake = make_fake(end=0.75, kind="fold")
    monkeypatch.setattr(theory, "solve_point", fake)
    out = tmp_path / "c.csv"
    res = CliRunner().invoke(app, ["theory", "curve", "--alphas", "0.6:1.2:7", "--branch", "semantic",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    curve = pd.read_csv(out)
    r = transition(P, alphas=np.linspace(0.6, 1.2, 7), mixed_alphas=[], refine=False, extend=False, solver=fake)
    both = curve.merge(r.semantic, on="alpha", suffixes=("_curve", "_tr"))
    assert len(both) == 7
    assert (both["state_curve"] == both["state_tr"]).all()
    assert np.allclose(both["e_t_curve"], both["e_t_tr"], equal_nan=True)
    assert set(both["state_curve"]) == {"ok", "ended"}


def test_local_root_synthetic():
    f = lambda x: x ** 3 - 2.0  # noqa: E731  negative below the root
    r = local_root(f, 1.2, 0.0, 3.0, sign_below=-1.0, step=0.01, xtol=1e-8)
    assert abs(r - 2 ** (1 / 3)) < 1e-6
    r = local_root(f, 2.9, 0.0, 3.0, sign_below=-1.0, step=0.01, xtol=1e-8)  # root below the estimate
    assert abs(r - 2 ** (1 / 3)) < 1e-6
    assert local_root(lambda x: x - 5.0, 1.0, 0.0, 3.0, sign_below=-1.0) is None  # no root in [lo, hi]
    assert local_root(lambda x: x + 5.0, 1.0, 0.0, 3.0, sign_below=-1.0) == 0.0  # already past at lo

    def boom(x):
        raise Unrefinable("no solve")
    assert local_root(boom, 1.0, 0.0, 3.0, sign_below=1.0) is None


def test_spinodal_collapse_extrapolates_overlap_squared():
    a = np.round(np.arange(0.5, 1.31, 0.1), 6)
    th = np.sqrt(np.clip(a - 0.63, 0, None)) * 0.2
    state = np.where(a < 0.65, "collapsed", "ok")
    df = pd.DataFrame(dict(alpha=a, branch="semantic", theta=th, m=0.0, q=0.1, e_t=0.001, eps_g=0.003,
                           converged=True, stability=0.3, state=state))
    s, kind = spinodal(df, "low")
    assert kind == "collapses" and abs(s - 0.63) < 1e-9
    df["branch"] = "positional"
    df["state"] = np.where(df.alpha > 1.15, "unstable", "ok")
    df.loc[df.alpha > 1.15, "stability"] = 1.4
    s, kind = spinodal(df, "high")
    assert kind == "unstable" and 1.1 < s < 1.2


# ------------------------------------------------------------------------------------------ real solver
def test_a_cell_is_not_converged_only_when_the_solver_fails():
    """Real theory: a solver that cannot converge (max_steps=1) gives "not converged" cells; the same grid
    with the default settings gives none (cells beyond a branch's end carry the end's kind)."""
    grid, _ = phase_diagram(ModelParams(), [0.3], [1.0, 1.4], max_steps=1)
    assert (grid[["state_sem", "state_pos"]] == "not converged").all().all()
    grid, lines = phase_diagram(ModelParams(), [0.1], [0.4, 0.5, 1.4])
    states = set(grid["state_sem"]) | set(grid["state_pos"])
    assert "not converged" not in states and "ok" in states


def test_alpha_l_at_omega_01_is_where_the_semantic_eps_g_crosses_eps_lin():
    """Real theory (issue 9: `transition --omega 0.1` gave α_l = None): α_l is found, and the semantic
    branch's ε_g is above ε_lin just below it and below just above it."""
    from attnphase.theory import solve_point
    p = ModelParams(omega=0.1)
    r = transition(p, alphas=np.round(np.arange(0.7, 1.01, 0.1), 6), mixed_alphas=[], nodes=4)
    assert r.alpha_c is not None and r.alpha_l is not None and r.alpha_l > r.alpha_c
    sem = r.branches["semantic"].valid()
    near = min(sem, key=lambda s: abs(s.alpha - r.alpha_l))
    for da, sign in ((-0.01, 1.0), (0.01, -1.0)):
        s = solve_point(p, r.alpha_l + da, "semantic", nodes=4, init=near, stability=False)
        assert s.converged and sign * (s.eps_g - r.eps_lin) > 0


def test_without_saddles_the_cells_past_an_unstable_end_are_not_solved():
    calls = []
    br = follow_branch(P, DOWN, "semantic", nodes=4, saddles=False,
                       solver=make_fake(calls, end=0.0, alpha_unstable=0.9))
    assert br.end.kind is PointState.UNSTABLE
    assert [p.state for p in br][3:] == [PointState.UNSTABLE] * 3
    assert min(c["alpha"] for c in calls) >= 0.8 and all(math.isnan(p.e_t) for p in br.points[3:])


def test_a_branch_that_begins_inside_the_range_is_followed_back_to_its_beginning():
    # followed upwards from α = 0.5 where the (semantic) branch does not exist yet: the cold starts below 0.75
    # fail, the first valid point is at 0.8, and following it back locates the beginning and names the cells
    br = follow_branch(P, DOWN[::-1], "semantic", nodes=4, solver=make_fake(end=0.75, kind="fold"))
    assert [p.state for p in br] == [PointState.ENDED] * 3 + [PointState.OK] * 3
    assert br.begin.kind is PointState.ENDED and abs(br.begin.alpha - 0.75) <= 1e-3 and br.end is None


def test_a_failure_from_an_extrapolated_start_is_retried_from_the_valid_point():
    """A solve that fails only from the predictor's extrapolated start (not from the last valid point itself)
    is no end of the branch: the 40 × 40 diagram had three such false "ended" ends."""
    import dataclasses
    from types import SimpleNamespace
    base = make_fake()

    def fake(params, alpha, branch, *, init=None, **kw):
        s = base(params, alpha, branch, init=init, **kw)
        if round(alpha, 9) == 0.7 and isinstance(init, SimpleNamespace):     # an extrapolated start
            return dataclasses.replace(s, converged=False, status="not converged")
        return s
    br = follow_branch(P, [0.5, 0.6, 0.7, 0.8], "positional", nodes=4, solver=fake)
    assert [p.state for p in br] == [PointState.OK] * 4 and br.end is None


def _smooth_factor(crossing: float, fail=(), glitch=(), residual=1e-3):
    """The stand-in semantic branch with a smooth growth factor 1 + 2 (crossing − α) (valid above
    ``crossing``), no convergence for α in the open interval ``fail`` (residual ``residual``) and a spurious
    factor 6.45 at the α's in ``glitch`` (as the finite-difference factor gave at ω = 0.377, α = 0.975)."""
    import dataclasses
    base = make_fake(end=0.0)
    calls = []

    def fake(params, alpha, branch, **kw):
        calls.append(dict(alpha=alpha, nodes=kw.get("nodes")))
        s = base(params, alpha, branch, **kw)
        st = 6.45 if round(alpha, 9) in glitch else 1.0 + 2.0 * (crossing - alpha)
        s = dataclasses.replace(s, stability=st, stable=st <= 1.0)
        if fail and fail[0] < alpha < fail[1]:
            s = dataclasses.replace(s, converged=False, residual=residual, status="not converged")
        return s
    fake.calls = calls
    return fake


def test_a_failure_between_a_valid_point_and_a_saddle_is_no_fold():
    """A solve that fails between the last valid point and a converged saddle (the growth factor is above +1
    past it) is no end of the branch: the end is `unstable`, located to 1e-3 at the factor's crossing (the
    40 × 40 diagram marked the semantic branch `ended` at ω = 0.377 and 0.4015 so)."""
    fake = _smooth_factor(0.87, fail=(0.872, 0.895))
    br = follow_branch(P, [1.2, 1.0, 0.8], "semantic", nodes=4, min_step=0.0125, solver=fake)
    assert br.end.kind is PointState.UNSTABLE and abs(br.end.alpha - 0.87) <= 1e-3
    assert [p.state for p in br] == [PointState.OK, PointState.OK, PointState.UNSTABLE]


def test_an_unstable_end_is_not_located_at_a_glitch_of_the_growth_factor():
    """A saddle next to the valid side whose factor exceeds that of a saddle farther away is a glitch of the
    finite-difference factor, not the bracket of the crossing: the end is still found within 1e-3."""
    fake = _smooth_factor(0.87, glitch=(0.875,))
    br = follow_branch(P, [1.2, 1.0, 0.8], "semantic", nodes=4, min_step=0.0125, solver=fake)
    assert br.end.kind is PointState.UNSTABLE and abs(br.end.alpha - 0.87) <= 1e-3


def test_a_stall_that_a_finer_rule_does_not_cure_stays_not_converged():
    """A failure in the noise-floor band (residual within 10·rtol) is retried at the finer orders (6, then 8);
    when those fail too the point is still "not converged" (the solver truly failed)."""
    fake = _smooth_factor(0.0, fail=(0.0, 10.0), residual=2e-5)
    br = follow_branch(P, [1.2, 1.0], "semantic", nodes=4, solver=fake)
    assert [p.state for p in br] == [PointState.NOT_CONVERGED] * 2 and br.end is None
    assert {c["nodes"] for c in fake.calls} == {4, 6, 8}


def _fails_below(orders: set, residual: float, lo: float = 0.9, hi: float = 1.1):
    """The stand-in semantic branch, not converging for α in (lo, hi) at the outer ``orders`` (residual
    ``residual``), converging at any other order; records the orders asked."""
    import dataclasses
    base = make_fake(end=0.0)
    calls = []

    def fake(params, alpha, branch, *, nodes=None, **kw):
        calls.append(nodes)
        s = base(params, alpha, branch, nodes=nodes, **kw)
        if lo < alpha < hi and nodes in orders:
            return dataclasses.replace(s, converged=False, residual=residual, status="not converged")
        return s
    fake.calls = calls
    return fake


def test_a_stall_is_cured_at_the_cheaper_finer_order_first():
    """A stall of the nodes = 4 rule (residual 2e-5, within 10·rtol) that nodes = 6 cures is solved there, not at
    nodes = 8: a split-rule evaluation costs ∝ nodes³ (8× at nodes = 8, 3.4× at nodes = 6), and nodes = 6
    converged at the four stalls of the diagram's trace ω = 0.069–0.192 (docs/notes/2026-12-06-diagram-levers.md)."""
    fake = _fails_below({4}, 2e-5)
    br = follow_branch(P, [1.2, 1.0], "semantic", nodes=4, solver=fake)
    assert [p.state for p in br] == [PointState.OK] * 2 and br.end is None
    assert br[1].nodes == 6 and "stall" in br[1].note and fake.calls == [4, 4, 6]
    # where nodes = 6 stalls too, nodes = 8 (twice the order, the cure before) still gets its chance
    fake = _fails_below({4, 6}, 2e-5)
    br = follow_branch(P, [1.2, 1.0], "semantic", nodes=4, solver=fake)
    assert [p.state for p in br] == [PointState.OK] * 2 and br[1].nodes == 8 and fake.calls == [4, 4, 6, 8]


def test_a_stall_at_the_noise_floor_is_no_branch_end():
    """Real theory, the 40 × 40 diagram's false end: at ω = 0.1185 the positional solve at α = 0.7 stalls with
    its residual at ~2e-5 (the nodes = 4 floor, rtol 1e-5) from any start; it is no fold — at nodes = 8 it
    converges, and the point is valid (its status says how it was obtained)."""
    br = follow_branch(ModelParams(omega=0.118462), [0.6875, 0.7], "positional", nodes=4, min_step=0.0125)
    assert br.end is None and [p.state for p in br] == [PointState.OK] * 2
    assert br[1].nodes == 6 and "stall" in br[1].note and br[1].converged   # (the cheaper finer order cures it)


def test_a_failed_solve_that_loses_its_overlap_is_a_collapse_not_a_fold():
    """A branch that merges continuously with the uninformative point (m² linear in α, zero at 0.13) where
    the pinned iteration slows down and fails, its iterate's m almost 0 (as the positional branch below
    α ≈ 0.06–0.1 in the diagram, marked `ended`): the end is `collapsed`, at the zero of m² to 1e-3."""
    import dataclasses
    base = make_fake()

    def fake(params, alpha, branch, **kw):
        s = base(params, alpha, branch, **kw)
        if alpha > 0.13:
            return dataclasses.replace(s, m=math.sqrt(0.4 * (alpha - 0.13)))
        return dataclasses.replace(s, m=1e-6, converged=False, residual=0.03, status="not converged")
    br = follow_branch(P, [0.3, 0.2, 0.1], "positional", nodes=4, min_step=0.0125, solver=fake)
    assert br.end.kind is PointState.COLLAPSED and abs(br.end.alpha - 0.13) <= 1e-3
    assert br[2].state is PointState.COLLAPSED and math.isnan(br[2].e_t)   # no unconverged numbers passed on
    # a fold keeps its overlap: still `ended`
    fold = follow_branch(P, [0.3, 0.2, 0.1], "positional", nodes=4, min_step=0.0125, solver=lambda *a, **k:
                         dataclasses.replace(fake(*a, **k), m=0.2) if a[1] <= 0.13 else fake(*a, **k))
    assert fold.end.kind is PointState.ENDED


def test_a_failure_that_a_finer_rule_cures_is_no_branch_end():
    """Near a branch's end the coarse (nodes = 4) map can fail with a large residual where the finer one
    converges (ω = 0.1185, α = 0.65 semantic: residual 1e-3 at nodes = 4, converged at nodes = 8): before an
    end is declared the last failed solve is repeated at a finer outer order: nodes = 6 first (cheaper, ∝ nodes³),
    nodes = 8 where that fails too."""
    import dataclasses
    base = make_fake(end=0.0)

    def fake(params, alpha, branch, *, nodes=None, **kw):
        s = base(params, alpha, branch, nodes=nodes, **kw)
        if 0.65 < alpha < 0.75 and nodes == 4:
            return dataclasses.replace(s, converged=False, residual=1e-3, status="not converged")
        return s
    br = follow_branch(P, [1.0, 0.8, 0.7, 0.6], "semantic", nodes=4, min_step=0.0125, solver=fake)
    assert br.end is None and [p.state for p in br] == [PointState.OK] * 4
    assert br[2].nodes == 6
    for orders, cured in (({4}, 6), ({4, 6}, 8)):   # (residual 1e-3: no stall, the end retry's finer orders)
        fake = _fails_below(orders, 1e-3, 0.65, 0.75)
        br = follow_branch(P, [1.0, 0.8, 0.7, 0.6], "semantic", nodes=4, min_step=0.0125, solver=fake)
        assert br.end is None and [p.state for p in br] == [PointState.OK] * 4
        assert br[2].nodes == cured and (8 in fake.calls) == (cured == 8)


@pytest.mark.slow
def test_semantic_end_at_omega_0377_is_unstable_real_theory():
    """Real theory, the diagram's chain ω = 0.3523 → 0.3769 (semantic, α = 2 → 0.6 on the default grid): the
    end was `ended` at 0.972 (a failed solve at α = 0.96875 between the valid 0.975 and the saddle 0.9625).
    It is `unstable`, near the crossing of +1 by the growth factor. Reference: 0.977 ± 0.0005, the crossing of
    the factor by a finite difference of size 1e-2·√q at nodes 4 and 8 (smooth: 0.990/0.997 at α = 0.9775,
    1.029/1.017 at 0.975); the solver's own factor (size 1e-4·√q, nodes 4) scatters by ~0.03 with spikes
    (6.45 at 0.975) there, so the end is held to 5e-3, not 1e-3."""
    from attnphase.phase.diagram import DEFAULT_ALPHAS
    order = [a for a in DEFAULT_ALPHAS if a >= 0.6][::-1]
    guide = None
    for w in (0.352308, 0.376923):
        br = follow_branch(ModelParams(omega=w), order, "semantic", nodes=4, min_step=0.0125, guide=guide,
                           saddles=False, stability_margin=0.4)
        guide = {round(x.alpha, 9): x.solution for x in br.valid()}
    assert br.end.kind is PointState.UNSTABLE and abs(br.end.alpha - 0.977) <= 5e-3
    assert all(p.state is PointState.UNSTABLE for p in br if p.alpha < br.end.alpha)


def test_a_target_past_an_unstable_end_that_cannot_be_solved_gets_the_ends_reason():
    """The grid α past an `unstable` end whose saddle solve fails is `unstable` like every other cell beyond
    the end, not `ended` (the 40 × 40 diagram had such a cell at ω = 0.0938, α = 0.55)."""
    fake = _smooth_factor(0.87, fail=(0.79, 0.81))
    br = follow_branch(P, [1.2, 1.0, 0.8, 0.7], "semantic", nodes=4, min_step=0.0125, solver=fake, saddles=False)
    assert br.end.kind is PointState.UNSTABLE and abs(br.end.alpha - 0.87) <= 1e-3
    assert [p.state for p in br] == [PointState.OK] * 2 + [PointState.UNSTABLE] * 2


def test_a_point_whose_growth_factor_is_unknown_is_not_valid():
    """A NaN growth factor (the map rejected every perturbed state) is unknown stability: the solver says
    stable=False, so the engine must not use the point as valid (it used to be ``ok``); a skipped factor (None,
    where it cannot exceed 1) stays ``ok``."""
    from dataclasses import replace

    from attnphase.phase import point_state
    good = make_fake()(P, 1.0, "semantic")
    assert point_state(good) is PointState.OK
    assert point_state(replace(good, stability=None, stable=None)) is PointState.OK
    unknown = replace(good, stability=float("nan"), stable=False)
    assert point_state(unknown) is PointState.UNKNOWN
    assert not point_state(unknown).valid and point_state(unknown).exists
    base = make_fake(end=0.0)

    def nan_below(params, alpha, branch, **kw):   # the factor fails below α = 0.9
        s = base(params, alpha, branch, **kw)
        return replace(s, stability=float("nan"), stable=False) if alpha < 0.9 else s
    br = follow_branch(P, DOWN, "semantic", nodes=4, solver=nan_below)
    assert [p.state for p in br][:2] == [PointState.OK] * 2
    assert all(p.state is PointState.UNKNOWN for p in br.points[2:])
    assert br.end is not None and br.end.kind is PointState.UNKNOWN and 0.8 <= br.end.alpha <= 0.9


def test_predictor_without_a_guide_is_the_line_through_the_last_two_points():
    """Without a guide the start at the fourth α is the line through the last two valid points (not the
    quadratic through three, which overshoots near a square-root collapse: the real-theory test below): on the
    stand-in's q = 0.05 + 0.03 α², 0.05 + 0.03·(2·0.64 − 1) at α = 0.6 (the quadratic would be exact)."""
    calls = []
    follow_branch(P, [1.2, 1.0, 0.8, 0.6], "semantic", nodes=4, solver=make_fake(calls, end=0.0))
    init = calls[3]["init"]
    assert calls[3]["alpha"] == 0.6 and abs(init.q - (0.05 + 0.03 * (2 * 0.64 - 1.0))) < 1e-12 and init.theta > 0


def test_semantic_branch_at_sigma_07_collapses_continuously_real_theory():
    """σ = 0.7, ω = 0.3 (docs/theory/beyond-rs.md: RS α_c = 0.641, a continuous onset): the semantic branch
    followed down ends where θ → 0, ``collapsed`` (at 0.6409 here, the same in every test order tried). With the
    quadratic predictor of 2026-12-06 it stopped at a false fold instead, ``ended`` at 0.6504.

    The location is not asserted: it depends on round-off, not on earlier tests. With the split map's sums
    changed by a relative 1e-14 (bench/investigations/sigma07_end_round_off.py) the end is 0.6504
    (seed 2: ``collapsed``; 1e-12, seed 1: ``ended``) — the 9.5e-3 one full-suite run saw. At nodes = 4 the solve at
    α = 0.65 from 0.7 converges (residual 9e-6 < rtol 1e-5) or not (2e-5–6e-4 after its 60 steps) by round-off,
    and the finer orders then tried from its iterate (6, 8) lose the branch there (θ 0.074 → 0; at 0.66 they
    hold it: θ = 0.081, 0.099)."""
    from attnphase.model import ModelParams
    br = follow_branch(ModelParams(sigma=0.7, omega=0.3), [0.7, 0.65, 0.6], "semantic", nodes=4, min_step=1e-3)
    assert br.end is not None and br.end.kind is PointState.COLLAPSED


def test_guided_predictor_extrapolates_the_difference_to_the_previous_omega():
    """With the previous ω's points (the guide) at the target and at the last two valid α's, the start is the
    guide plus this ω's difference to it, extrapolated in α: exact where the difference is linear (two points)
    or quadratic (three)."""
    import dataclasses

    from attnphase.phase.predict import predict

    def pt(alpha, shift):
        q = 0.05 + 0.03 * alpha ** 2 + shift * alpha
        return ScalarStandInPoint(alpha, "semantic", P, q, 0.0, 12.0, 0.1, 0.1, 0.0, 0.05, 0.01, 0.0, 0.0, True,
                                  5, 1e-7, "converged", 0.5, True, 4)
    guide = {round(a, 9): pt(a, 0.0) for a in (1.0, 0.95, 0.9)}
    start = predict("semantic", 0.9, [pt(1.0, 0.01), pt(0.95, 0.01)], guide)
    assert abs(start.q - (0.05 + 0.03 * 0.81 + 0.009)) < 1e-12   # the constant difference: off by 5e-4
    assert start.m == 0.0 and start.theta > 0

    def bent(alpha):   # a difference quadratic in α: exact from three points
        p = pt(alpha, 0.0)
        return dataclasses.replace(p, q=p.q + 0.01 * alpha ** 2)
    guide[round(0.85, 9)] = pt(0.85, 0.0)
    start = predict("semantic", 0.85, [bent(1.0), bent(0.95), bent(0.9)], guide)
    assert abs(start.q - (0.05 + 0.03 * 0.85 ** 2 + 0.01 * 0.85 ** 2)) < 1e-12


def test_an_unstable_end_needs_no_extra_solve_where_the_linear_crossing_is_accurate():
    """A growth factor linear in α: the crossing interpolated in the bracket is exact (its error estimate
    against the quadratic through three factors is 0), so no regula-falsi solve is made; a strongly curved
    factor (exp(200 (0.87 − α)): the linear estimate is off by 3e-3 > xtol) is still refined by solves."""
    import dataclasses
    fake = _smooth_factor(0.87)
    br = follow_branch(P, [1.2, 1.0, 0.8], "semantic", nodes=4, min_step=0.0125, solver=fake, saddles=False)
    assert br.end.kind is PointState.UNSTABLE and abs(br.end.alpha - 0.87) < 1e-9
    halving = {1.2, 1.0, 0.8, 0.9, 0.85, 0.875, 0.8625}
    assert {round(c["alpha"], 9) for c in fake.calls} == halving

    base = make_fake(end=0.0)
    curved = []

    def bent(params, alpha, branch, **kw):
        curved.append(round(alpha, 9))
        st = math.exp(200.0 * (0.87 - alpha))
        return dataclasses.replace(base(params, alpha, branch, **kw), stability=st, stable=st <= 1.0)
    br = follow_branch(P, [1.2, 1.0, 0.8], "semantic", nodes=4, min_step=0.0125, solver=bent, saddles=False)
    assert br.end.kind is PointState.UNSTABLE and set(curved) - halving
    assert abs(br.end.alpha - 0.87) < abs(0.875 + (1 - math.exp(-1)) * -0.0125 / (math.exp(1.5) - math.exp(-1)) - 0.87)


def test_without_saddles_a_target_past_an_unstable_end_has_the_ends_state_not_its_own_solve():
    """The semantic branch is valid above 0.87 (factor crossing +1); the grid α 0.8 fails from the first,
    extrapolated start and falls onto the uninformative point (θ = 0) from any later one. Without saddles the
    cell is `unstable` like every cell beyond the end and is not solved again (the 40 × 40 diagram's cell
    ω = 0.0938, α = 0.55 flipped to `collapsed` so); following saddles, the collapse is the cell's state."""
    import dataclasses
    for saddles, state in ((False, PointState.UNSTABLE), (True, PointState.COLLAPSED)):
        base = _smooth_factor(0.87)
        at = []

        def fake(params, alpha, branch, **kw):
            s = base(params, alpha, branch, **kw)
            if round(alpha, 9) == 0.8:
                at.append(alpha)
                s = dataclasses.replace(s, converged=False, residual=1e-2, status="not converged") \
                    if len(at) == 1 else dataclasses.replace(s, theta=0.0)
            return s
        br = follow_branch(P, [1.2, 1.0, 0.8], "semantic", nodes=4, min_step=0.0125, solver=fake, saddles=saddles)
        assert br.end.kind is PointState.UNSTABLE and abs(br.end.alpha - 0.87) < 1e-9
        assert br[-1].state is state and len(at) == (1 if not saddles else 2)
