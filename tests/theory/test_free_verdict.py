"""The free branch's verdict (attnphase.theory.free_verdict, MODEL.md §7, §8): the rule on synthetic
per-scramble evidence (each branch of the decision), the candidate and distance helpers, and one real case."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory.engine import QMCConfig, solve
from attnphase.theory.free_verdict import (ARTEFACT_K, NEAR_RTOL, REACH, Evidence, candidate, decide, distance,
                                           within_reach)
from attnphase.theory.state import OrderParams, flatten
from attnphase.theory.status import Status

DELTA = np.full(4, 0.03)           # stability steps δ_s (σ = 0.7, α = 1: 0.1·√(tr q / 2) ≈ 0.031)


def _ev(z, **kw) -> Evidence:
    """A semantic-candidate evidence that passes every rule unless ``kw`` changes it (the overlap ``z`` decides
    rule 5)."""
    base = dict(branch="semantic", z=np.asarray(z, float), delta=DELTA, pinned_status=Status.CONVERGED,
                distance=np.full(4, 0.01), growth=0.27, growth_err=0.1, stability="stable",
                artefact=np.full(4, 0.001), z_coarse=None)
    base.update(kw)
    return Evidence(**base)


RESOLVED = [0.020, 0.021, 0.0200, 0.0205]        # consistent over scrambles: t ≫ 3, spread ≪ 25 %


def test_rule_on_pinned_by_each_test_of_an_unresolved_overlap():
    """Rule 5's three tests each make the point ON_PINNED (the other rules passing); the reason names it."""
    on, why = decide(_ev([0.016, 0.049, 0.006, 0.004]))            # the σ = 0.7, α = 1 artefact (4096 × 4)
    assert on and "do not resolve" in why and "semantic point" in why
    on, why = decide(_ev(RESOLVED, z_coarse=np.full(4, 0.05)))        # shrinks with the QMC size
    assert on and "shrinks" in why
    on, why = decide(_ev(RESOLVED, artefact=np.full(4, 1.01 * max(RESOLVED) / ARTEFACT_K)))   # its own
    assert on and "artefact" in why


def test_rule_keeps_the_status_on_each_failed_rule():
    """Each of rules 1–5 failing alone keeps the status, with a reason saying which."""
    cases = {
        "not near": _ev([0.01, 0.01, REACH * 0.03 * 1.01, 0.01]),                  # 1: one scramble out of reach
        "did not converge": _ev([0.016, 0.049, 0.006, 0.004], pinned_status=Status.MAX_STEPS),   # 2
        "unstable": _ev([0.016, 0.049, 0.006, 0.004], growth=1.5, growth_err=0.1, stability="unstable"),  # 3
        "undecided": _ev([0.016, 0.049, 0.006, 0.004], growth=0.9, growth_err=0.1, stability="undecided"),
        "differs": _ev([0.016, 0.049, 0.006, 0.004], distance=np.array([0.01, NEAR_RTOL * 1.2, 0.0, 0.0])),  # 4
        "resolved": _ev(RESOLVED, z_coarse=np.full(4, 0.03)),        # 5: no shrink, resolved, above the artefact
    }
    for key, ev in cases.items():
        on, why = decide(ev)
        assert not on and key in why, (key, why)
    # a NaN distance (the pinned point's states missing) is not "near"
    assert not decide(_ev([0.016, 0.049, 0.006, 0.004], distance=np.full(4, np.nan)))[0]


def test_reach_and_candidate_and_distance():
    """within_reach is per scramble; candidate picks the pinned branch whose overlap is smallest in stability
    steps (M small: semantic; θ small: positional); distance compares tr q, the other overlap and tr V."""
    assert within_reach([0.01, 0.02], [0.01, 0.01]) and not within_reach([0.01, 0.021], [0.01, 0.01])
    assert not within_reach([np.nan, 0.0], [1.0, 1.0])
    r, k, rs = 2, 1, 1

    def state(q, M, th, V):
        return np.asarray(flatten(OrderParams(np.diag(q), np.array([[M], [0.0]]), np.array([[th], [0.0]]),
                                              np.diag(V))))

    sem = np.stack([state([0.1, 0.1], 0.005 * (s + 1), 0.19, [40.0, 40.0]) for s in range(3)])
    b, z, delta = candidate(sem, r, k, rs)
    assert b == "semantic" and np.allclose(z, [0.005, 0.010, 0.015])
    assert np.allclose(delta, 0.1 * np.sqrt(0.2 / 2))
    pos = np.stack([state([0.1, 0.1], 0.2, 0.002, [40.0, 40.0]) for _ in range(3)])
    assert candidate(pos, r, k, rs)[0] == "positional"
    pin = np.stack([state([0.1, 0.1], 0.0, 0.19 * 1.02, [40.0, 40.0]) for _ in range(3)])
    d = distance(sem, pin, "semantic", r, k, rs)
    assert np.allclose(d, abs(0.19 - 0.19 * 1.02) / (0.19 * 1.02))      # θ differs by 2 %, q and V equal


@pytest.mark.slow
def test_free_branch_on_the_semantic_point_sigma_07():
    """L = 2, r = 2, r* = 1, ω = 0.3, σ = 0.7, λ = 0.01, α = 1 on 1024 × 4 points: the free iteration from the
    default start wanders around the semantic point (converged there, stable against M) without converging;
    the verdict says so, with the semantic point's values in the record and no values of its own."""
    p = ModelParams(L=2, r=2, r_star=1, omega=0.3, sigma=0.7, lam=0.01)
    g = solve(p, 1.0, "free", qmc_config=QMCConfig(points=1024, scrambles=4, coarse=0))
    assert g.status is Status.ON_PINNED and not g.converged and np.isnan(g.values["q"])
    v = g.to_dict()["provenance"]["free_verdict"]
    assert v["on_pinned"] and v["branch"] == "semantic" and v["overlap"] == "m"
    assert v["pinned"]["status"] == "converged" and v["pinned"]["stability"] == "stable"
    assert abs(v["pinned"]["values"]["theta"] - g.last.theta.ravel()[0]) < 0.05 * v["pinned"]["values"]["theta"]
    assert max(v["per_scramble"]["overlap"]) <= REACH * min(v["per_scramble"]["delta"])


def test_cli_point_reports_on_pinned(monkeypatch, capsys):
    """``theory point --branch free``: an ON_PINNED solution prints no values of its own, the status, the
    verdict record (with the pinned point's values) in the JSON provenance and one warning line naming the
    pinned point. The solution is built from a real small semantic solve (r = 1, 256 × 2) and the rule."""
    import json
    from dataclasses import replace

    import attnphase.theory.engine as E
    from attnphase.cli import main
    from attnphase.theory.free_verdict import _on_pinned, record
    sem = E.solve(ModelParams(omega=0.3), 2.0, "semantic", qmc_config=QMCConfig(points=256, scrambles=2, coarse=0))
    assert sem.converged
    ev = Evidence("semantic", np.array([0.004, 0.012]), np.full(2, 0.03), Status.CONVERGED,
                  distance=np.full(2, 0.01), growth=0.3, growth_err=0.05, stability="stable")
    on, why = decide(ev)
    assert on
    fake = _on_pinned(replace(sem, branch="free", stability=None), record(ev, on, why, sem))
    monkeypatch.setattr(E, "solve", lambda *a, **k: fake)
    with pytest.raises(SystemExit) as e:
        main(["theory", "point", "--alpha", "2", "--branch", "free", "--integrator", "qmc", "--qmc-points", "256",
              "--scrambles", "2", "--json"])
    assert e.value.code in (0, None)
    out = capsys.readouterr()
    d = json.loads(out.out)
    assert d["status"] == "on_pinned" and d["converged"] is False and d["q"] is None   # NaN → null
    v = d["provenance"]["free_verdict"]
    assert v["on_pinned"] and v["branch"] == "semantic" and v["pinned"]["values"]["q"] == pytest.approx(sem.q)
    assert "on_pinned" in out.err and "semantic point" in out.err and "not converged" not in out.err


def test_overlap_tests_keep_every_result():
    """The record keeps all three tests of rule 5, also those after the first that fired."""
    from attnphase.theory.free_verdict import overlap_tests
    o = overlap_tests(_ev([0.016, 0.049, 0.006, 0.004], artefact=np.full(4, 0.01), z_coarse=np.full(4, 0.0)))
    assert o["unresolved_by_scrambles"] and o["shrink"] is None          # a zero coarse mean: no trend
    assert o["artefact_ratio"] == pytest.approx(4.9) and o["within_artefact"] is False
    o = overlap_tests(_ev(RESOLVED, z_coarse=np.full(4, 0.02)))
    assert o["shrink"] == pytest.approx(np.mean(RESOLVED) / 0.02) and not o["shrinks"]
    assert not o["unresolved_by_scrambles"] and o["t"] > 30


def test_converged_free_point_on_the_semantic_point_r1():
    """A real small case of a CONVERGED free point judged: L = 2, r = 1, ω = 0.1, α = 1 (σ = 0.5, λ = 0.01) on
    256 × 4 points, the free iteration converges onto the semantic point with a per-scramble m of the size of
    the points' own artefact (measured 0.0005–0.008): ON_PINNED, no values, the semantic point (converged,
    stable against m) in the record, ``free_status`` converged; the pinned θ equals the free iterate's within
    rule 4's 5 %."""
    g = solve(ModelParams(omega=0.1), 1.0, "free", qmc_config=QMCConfig(points=256, scrambles=4, coarse=0))
    assert g.status is Status.ON_PINNED and np.isnan(g.values["m"])
    v = g.verdict
    assert v["free_status"] == "converged" and v["branch"] == "semantic" and v["on_pinned"]
    assert v["pinned"]["status"] == "converged" and v["pinned"]["stability"] == "stable"
    assert max(v["per_scramble"]["distance"]) <= NEAR_RTOL
    assert abs(abs(float(g.last.theta[0, 0])) / v["pinned"]["values"]["theta"] - 1) < NEAR_RTOL
    assert v["overlap_tests"]["unresolved_by_scrambles"] or v["overlap_tests"]["within_artefact"]
