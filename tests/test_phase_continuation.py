"""Fast tests of the continuation / refinement machinery of attnphase.phase, on an analytic stand-in for the
theory solver (monkeypatched ``attnphase.theory.solve_point``) whose branches cross at a known α_c(ω)."""

import math

import numpy as np
import pytest

import attnphase.theory as theory
from attnphase.model import ModelParams
from attnphase.phase import (Unrefinable, follow_branch, local_root, phase_diagram, point_state, spinodal,
                             transition)
from attnphase.theory import FixedPointSolution


def _fake_factory(calls, end_semantic=0.75, stall=()):
    """e_t^sem − e_t^pos = 0.001 (1 + ω − α): α_c(ω) = 1 + ω. ε_g^sem = 0.004 − 0.002 α; ε_lin(0.3) = 0.0019714
    → the semantic ε_g crosses it at α ≈ 1.014 < α_c(0.3) = 1.3, so α_l = α_c there. The semantic branch does
    not converge below ``end_semantic`` (θ collapsing there); at the α's in ``stall`` the iteration stalls (not
    converged, overlaps still finite)."""

    def fake(params, alpha, branch, *, nodes=None, init=None, max_steps=300, stability=True, **kw):
        calls.append(dict(alpha=alpha, branch=branch, init=init))
        w = params.omega
        conv = not (branch == "semantic" and alpha < end_semantic) and round(alpha, 9) not in stall
        if branch == "semantic":
            q, m, V, th = 0.05 + 0.03 * alpha, 0.0, 12.0, 0.1 * math.sqrt(alpha) if alpha >= end_semantic else 1e-3
            e_t, eps_g = 0.002 * alpha + 0.001 * (1 + w - alpha), 0.004 - 0.002 * alpha
        else:
            q, m, V, th = 0.04 + 0.005 * alpha, 0.2 + 0.02 * alpha, 11.0, 0.0
            e_t, eps_g = 0.002 * alpha, 0.0034
        return FixedPointSolution(float(alpha), branch, params, q, m, V, th, 0.1, 0.0, 0.05, 0.01, eps_g, e_t,
                                  conv, 10, 1e-7, "converged" if conv else "not converged", 0.5, True,
                                  nodes or 8)
    return fake


@pytest.fixture
def fake_solver(monkeypatch):
    calls = []
    monkeypatch.setattr(theory, "solve_point", _fake_factory(calls))
    return calls


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


def test_follow_branch_stops_at_the_end_and_predicts(fake_solver):
    p = ModelParams(omega=0.3)
    sols = follow_branch(p, [1.2, 1.0, 0.8, 0.7, 0.6, 0.5], "semantic", nodes=4)
    assert [point_state(s) for s in sols] == ["ok", "ok", "ok", "not converged", "skipped", "skipped"]
    assert [c["alpha"] for c in fake_solver] == [1.2, 1.0, 0.8, 0.7]  # nothing solved past the end
    # the third start is the linear extrapolation of the first two solutions
    init = fake_solver[2]["init"]
    q_pred = 2 * sols[1].q - sols[0].q
    assert abs(init.q - q_pred) < 1e-12 and init.m == 0.0 and init.theta > 0


def test_transition_refines_to_the_known_crossing(fake_solver):
    r = transition(ModelParams(omega=0.3), alphas=np.linspace(0.5, 2.0, 7), nodes=8, curve_nodes=4,
                   mixed_alphas=[])
    assert abs(r.alpha_c - 1.3) < 1e-4
    assert r.alpha_l >= r.alpha_c - 1e-12 and abs(r.alpha_l - r.alpha_c) < 1e-9
    assert 0.5 < r.spinodal_semantic < 0.75 and r.spinodal_semantic_kind in ("ends", "collapses")
    refine_nodes = {c["alpha"] for c in fake_solver[-4:]}
    assert all(1.0 < a < 1.6 for a in refine_nodes)


def test_phase_diagram_alpha_c_increases_with_omega(fake_solver):
    grid, lines = phase_diagram(ModelParams(), [0.1, 0.2, 0.3], np.linspace(0.8, 1.6, 9), nodes=4, refine=True)
    assert np.allclose(lines["alpha_c"], [1.1, 1.2, 1.3], atol=1e-3)
    assert (np.diff(lines["alpha_c"]) > 0).all()
    assert set(grid["global_branch"]) <= {"semantic", "positional"}
    row = grid[(grid.omega == 0.2) & np.isclose(grid.alpha, 1.0)].iloc[0]
    assert row["global_branch"] == "positional" and row["delta_e_t"] > 0
    # later ω are warm-started from the previous ω (guide): no cold start after the first ω
    later = [c for c in fake_solver if c["init"] is None]
    assert len(later) == 2  # first α of each branch at the first ω


def test_spinodal_collapse_extrapolates_overlap_squared():
    import pandas as pd
    a = np.round(np.arange(0.5, 1.31, 0.1), 6)
    th = np.sqrt(np.clip(a - 0.63, 0, None)) * 0.2
    state = np.where(a < 0.65, "collapsed", "ok")
    df = pd.DataFrame(dict(alpha=a, branch="semantic", theta=th, m=0.0, q=0.1, e_t=0.001, eps_g=0.003,
                           converged=True, stability=0.3, state=state))
    s, kind = spinodal(df, "low")
    assert kind == "collapses" and abs(s - 0.63) < 1e-9
    df.loc[df.alpha > 1.15, "state"] = "unstable"
    df.loc[df.alpha > 1.15, "stability"] = 1.4
    df["branch"] = "positional"
    df["state"] = np.where(df.alpha > 1.15, "unstable", "ok")
    s, kind = spinodal(df, "high")
    assert kind == "unstable" and 1.1 < s < 1.2


def test_a_stalled_point_does_not_end_the_branch(monkeypatch):
    calls = []
    monkeypatch.setattr(theory, "solve_point", _fake_factory(calls, stall=(1.0,)))
    sols = follow_branch(ModelParams(omega=0.3), [1.2, 1.1, 1.0, 0.9, 0.8], "semantic", nodes=4)
    assert [point_state(s) for s in sols] == ["ok", "ok", "not converged", "ok", "ok"]
    # the start after the stalled point comes from the valid points, not from the stalled one
    assert abs(calls[3]["init"].q - (sols[1].q + 2 * (sols[1].q - sols[0].q))) < 1e-12
