"""α_c at one step of replica symmetry breaking (phase/rsb1_crossing.py; docs/theory/beyond-rs.md): the regula
falsi root against a brute-force scan on a coarse lattice, nothing solved where RS is confirmed (the paper's
defaults), and the JSON fields of `theory transition`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.phase import rsb1_crossing as RC
from attnphase.phase import transition

from test_phase_continuation import make_fake

@pytest.mark.slow
def test_root_agrees_with_a_brute_force_scan():
    """σ = 0.7, ω = 0.3 on the default lattice (73 points per axis, y order 10; minutes): regula falsi from the
    RS α_c (0.6408, `theory transition`) and the sign change of the gap on a fixed α grid solved from the top
    down (linear interpolation) agree within the scan's interpolation error (0.01); both lie well below the RS
    α_c (docs/theory/beyond-rs.md: 0.398 and 0.396). The positional sector has no m ≠ 0 1RSB state there (it
    falls back to m = 0 at α = 0.3–0.5) and is left out for time. (On a 37-point lattice the gap, 1e-7 of e_t near
    the crossing, is not resolved: the two methods part by 0.05.)"""
    p = ModelParams(sigma=0.7, lam=0.01, omega=0.3)
    res = RC.alpha_c_1rsb(p, 0.6408, check=None, xtol=0.005, positional=False)
    scan, pairs = RC.scan_crossing(RC.Sectors(p, positional=False), [0.3, 0.35, 0.4, 0.45, 0.5])
    assert res.alpha_c is not None and scan is not None, (res.reason, [q.to_dict() for q in pairs])
    assert abs(res.alpha_c - scan) < 0.01
    assert res.alpha_c < 0.6408 - 0.1
    ok = [q for q in pairs if np.isfinite(q.gap)]
    assert all(q.gap >= 0 for q in ok if q.alpha < scan) and all(q.gap < 0 for q in ok if q.alpha > scan)


def test_nothing_solved_where_rs_is_confirmed():
    """The paper's defaults (competitor the positional branch): no 1RSB solve, a null α_c^1RSB with the reason,
    and every other field of the transition unchanged."""
    def boom(*a, **k):
        raise AssertionError("a 1RSB solve ran where RS is confirmed")
    r = RC.report(ModelParams(omega=0.3), 1.24, "positional", compute=boom)
    assert r.alpha_c is None and "positional" in r.reason
    assert "Small omega" in r.reason and "-0.007" in r.reason      # the measured 1RSB shift (beyond-rs.md)
    assert RC.report(ModelParams(omega=0.3, sigma=0.7), None, "uninformative", compute=boom).alpha_c is None


def test_transition_at_the_defaults_unchanged_with_rsb1(monkeypatch):
    """transition(rsb1=True) on the stand-in branches of the defaults: RC.alpha_c_1rsb is never called and the
    JSON differs from rsb1=False only in the reason of the null α_c^1RSB."""
    monkeypatch.setattr(RC, "alpha_c_1rsb", lambda *a, **k: (_ for _ in ()).throw(AssertionError("solved")))
    kw = dict(alphas=np.linspace(0.5, 2.0, 7), nodes=8, curve_nodes=4, mixed_alphas=[])
    on = transition(ModelParams(omega=0.3), rsb1=True, solver=make_fake(), **kw).to_dict()
    off = transition(ModelParams(omega=0.3), rsb1=False, solver=make_fake(), **kw).to_dict()
    assert on["alpha_c_1rsb"] is None and on["caveat"] is None and on["alpha_c_rs"] == on["alpha_c"]
    assert "positional" in on["alpha_c_1rsb_reason"] and "not requested" in off["alpha_c_1rsb_reason"]
    drop = ("alpha_c_1rsb_reason", "provenance")
    assert {k: v for k, v in on.items() if k not in drop} == {k: v for k, v in off.items() if k not in drop}


def test_computed_where_the_competitor_is_uninformative():
    """Against the uninformative point the crossing is computed and carried, with its kind, into the caveat."""
    seen = []

    def fake(params, alpha_c):
        seen.append(alpha_c)
        return RC.Rsb1Crossing(0.39, 0.02, "", cpu_s=1.0)
    r = RC.report(ModelParams(omega=0.3, sigma=0.7), 0.641, "uninformative", compute=fake)
    assert seen == [0.641] and r.to_dict()["alpha_c_1rsb"] == 0.39 and r.to_dict()["alpha_c_1rsb_err"] == 0.02
    from attnphase.theory.landscape_caveat import rs_caveat
    c = rs_caveat(ModelParams(omega=0.3, sigma=0.7), 0.641, "uninformative", r.alpha_c, r.err)
    assert "replica symmetry broken" in c and "0.390 +- 0.020" in c


def _sectors_of(pair):
    """A stand-in for ``RC.Sectors`` whose ``at(α)`` makes (once per α) and keeps ``pair(α)``."""
    class Stand:
        def __init__(self, *a, **k):
            self.done = {}

        def at(self, alpha):
            self.done.setdefault(alpha, pair(alpha))
            return self.done[alpha]
    return Stand


def test_progress_after_each_alpha_and_the_root_of_a_stand_in_gap(monkeypatch):
    """A stand-in for the sectors (gap = 0.4 − α): the step down and the regula falsi find the root 0.4, and
    the progress callback is called once per newly solved α, counting up to the α's solved (the CLI's bar)."""
    class Pair:
        def __init__(self, alpha):
            self.alpha, self.gap, self.semantic = alpha, 0.4 - alpha, True

    monkeypatch.setattr(RC, "Sectors", _sectors_of(Pair))
    seen = []
    res = RC.alpha_c_1rsb(ModelParams(omega=0.3, sigma=0.7), 0.641, check=None, xtol=1e-3,
                          progress=lambda *a: seen.append(a))
    assert res.alpha_c == pytest.approx(0.4, abs=1e-9) and res.err <= 5e-4
    assert seen and all(stage == RC.PROGRESS_STAGE and n == 12 for stage, _, n in seen)
    assert [i for _, i, _ in seen] == list(range(1, len(res.pairs) + 1))


def test_first_alpha_without_a_semantic_saddle_steps_down(monkeypatch):
    """λ = 0.001, ω = 0.3 (RS α_c 0.7661, 2026-12-06): at the first α, 0.716, every start fell onto θ = 0, at 0.616
    the θ ≠ 0 saddle is found (docs/notes/2026-12-06-rsb1-cost.md). Stand-in: no θ ≠ 0 saddle above α = 0.65, gap
    = 0.517 − α: the step down goes on past 0.716 and the root is found (before: None, 'no theta != 0 ...')."""
    class Pair:
        def __init__(self, alpha):
            self.alpha, self.semantic = alpha, alpha < 0.65
            self.gap = 0.517 - alpha if self.semantic else max(0.517 - alpha, 0.0)

    monkeypatch.setattr(RC, "Sectors", _sectors_of(Pair))
    res = RC.alpha_c_1rsb(ModelParams(omega=0.3, sigma=0.5, lam=0.001), 0.7661, check=None, xtol=1e-3)
    assert res.alpha_c == pytest.approx(0.517, abs=1e-9) and not res.reason
    assert sorted(res.pairs[i].alpha for i in range(2)) == [0.6161, 0.7161]
    # nowhere a θ ≠ 0 saddle: the reason says so at the lowest α tried, within max_evals
    monkeypatch.setattr(Pair, "__init__", lambda self, a: (setattr(self, "alpha", a), setattr(self, "semantic", False),
                                                          setattr(self, "gap", 0.0))[0])
    res = RC.alpha_c_1rsb(ModelParams(omega=0.3, sigma=0.5, lam=0.001), 0.7661, check=None, max_evals=3)
    assert res.alpha_c is None and "no theta != 0" in res.reason and len(res.pairs) == 3


def _stand_in_sectors(monkeypatch, rs_theta):
    """RC.Sectors with the RS solve and the 1RSB saddles replaced: every start with θ/σ² <= 0.5 falls onto θ = 0
    (e above the uninformative 1.0), a start at θ/σ² 0.55 (the RS semantic point, θ = ``rs_theta``) converges to
    a θ ≠ 0 saddle at e = 0.9 — what σ = 1.0, α = 0.713 did on the real lattice (docs/theory/beyond-rs.md)."""
    from types import SimpleNamespace as NS
    from attnphase.theory.status import Status

    def solve(params, alpha, branch, **k):
        th = 0.0 if branch == "uninformative" else rs_theta
        return [NS(values=dict(q=0.5, V=20.0, theta=th, e_t=0.003), status=Status.CONVERGED)]

    def best(lattice, alpha, xs, start, sector):
        if sector is RC.Sector.UNINFORMATIVE:
            return NS(e=1.0, theta=0.0, m=0.0, sigma=1.0, V=20.0, unknowns=start)
        if sector is RC.Sector.POSITIONAL:
            return None
        th = start[3] if start[3] > 0.52 else 0.0
        return NS(e=0.9 if th else 1.0 + 1e-6, theta=th, m=0.0, sigma=1.0, unknowns=start)
    monkeypatch.setattr(RC, "solve", solve)
    monkeypatch.setattr(RC, "_best", best)
    monkeypatch.setattr(RC, "TableLattice", lambda *a, **k: None)
    return RC.Sectors(ModelParams(omega=0.3, sigma=1.0))


def test_semantic_seeds_fallen_onto_theta_zero_retry_from_the_rs_semantic_point(monkeypatch):
    """Where every θ/σ² seed falls onto θ = 0 but the RS semantic point exists, the semantic sector is started
    there as well and its θ ≠ 0 saddle kept (before: a θ = 0 'semantic' state, and alpha_c_1rsb reported that
    the semantic state was not below its competitor at the first α); where no RS semantic point exists the
    θ = 0 saddle stays and the reason says so."""
    pair = _stand_in_sectors(monkeypatch, rs_theta=0.55).at(0.7133)
    assert pair.semantic and pair.sem.theta == 0.55 and pair.gap == pytest.approx(-0.1)
    pair = _stand_in_sectors(monkeypatch, rs_theta=0.0).at(0.7133)
    assert not pair.semantic and pair.gap == pytest.approx(1e-6)
    res = RC.alpha_c_1rsb(ModelParams(omega=0.3, sigma=1.0), 0.7633, check=None)
    assert res.alpha_c is None and "fell onto theta = 0" in res.reason


def test_not_small_model_is_refused_with_a_reason():
    r = RC.alpha_c_1rsb(ModelParams(L=3, A=((0.4, 0.3, 0.3),) * 3, omega=0.3, sigma=0.7), 0.6)
    assert r.alpha_c is None and "L = 2" in r.reason and not math.isnan(r.cpu_s)
