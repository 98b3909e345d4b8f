"""Starts of the general engine derived from the model (issue 11 item 4, helper hC; MODEL.md §6, §8;
docs/notes/2026-12-05-theory-general.md "Starts away from σ = 0.5, λ = 0.01"): the start reduces to the split-rule start at
L = 2, r = 1; from it the QMC engine finds both L = 2 branches away from σ = 0.5, λ = 0.01 where they exist
(equal to the split rule within the error bars) and says ``not_significant`` / ``collapsed`` where they do not."""

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory import starts
from attnphase.theory import collapse
from attnphase.theory.collapse import collapse_record
from attnphase.theory.engine import QMCConfig, default_init, solve_batch
from attnphase.theory.solver import solve_point, start_state
from attnphase.theory.state import OrderParams, flatten
from attnphase.theory.status import Status

L3_A = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
SMALL = QMCConfig(points=512, scrambles=4, coarse=0)
"""A small fixed QMC size (no error control)."""


@pytest.mark.parametrize("sigma,lam,alpha", [(0.3, 0.01, 1.0), (1.0, 0.01, 2.0), (0.5, 0.001, 0.35), (0.5, 0.1, 3.0)])
@pytest.mark.parametrize("branch", ["semantic", "positional", "free", "uninformative"])
def test_model_start_is_the_split_rule_start_at_L2_r1(sigma, lam, alpha, branch):
    p = ModelParams(omega=0.3, sigma=sigma, lam=lam)
    x = default_init(p, branch, alpha)
    s = start_state(p, alpha, branch)
    assert isinstance(s, OrderParams) and all(np.shape(b) == (1, 1) for b in s)   # the state object, 1 × 1 blocks
    np.testing.assert_allclose([x.q[0, 0], x.M[0, 0], x.V[0, 0], x.theta[0, 0]],
                               [s.q[0, 0], s.M[0, 0], s.V[0, 0], s.theta[0, 0]], rtol=1e-12)


def test_start_carries_lambda_and_alpha_through_V():
    """V from the prior side: below σ²/λ, growing as λ falls, falling as α grows (any L, r)."""
    for kw in ({}, {"L": 3, "A": L3_A}, {"r": 2}):
        V = {(lam, a): np.linalg.eigvalsh(default_init(ModelParams(lam=lam, **kw), "semantic", a).V)
             for lam in (0.001, 0.1) for a in (0.5, 2.0)}
        for (lam, a), v in V.items():
            assert np.all(v < 0.25 / lam) and np.allclose(v, v[0])
        assert np.all(V[(0.001, 0.5)] > V[(0.1, 0.5)]) and np.all(V[(0.001, 0.5)] > V[(0.001, 2.0)])


def test_teacher_self_weight_any_L():
    """Monte Carlo (any L, r*) = quadrature (L = 2, r* = 1) to the MC error; ω = 1 gives tr A / L exactly."""
    for s in (0.3, 0.5, 1.0):
        assert abs(starts.self_weight_monte_carlo(2, 1, s) - starts.self_weight_quadrature(s)) < 5e-3
    p = ModelParams(L=3, A=L3_A, omega=1.0)
    assert starts.teacher_self_weight(p) == pytest.approx(0.6, abs=1e-12)
    assert 1 / 3 < starts.self_weight_monte_carlo(3, 1, 0.5) < starts.self_weight_monte_carlo(3, 1, 1.0) < 1


def test_collapse_record_only_for_a_vanished_overlap():
    p = ModelParams(sigma=0.7)
    start = default_init(p, "positional", 1.0)
    flat = lambda m: np.asarray(flatten(OrderParams(start.q, np.array([[m]]), start.theta, start.V)))  # noqa: E731
    assert collapse_record(p, 1.0, "positional", np.stack([flat(0.002), flat(-0.003)]))["overlap"] == "m"
    assert collapse_record(p, 1.0, "positional", np.stack([flat(0.12), flat(-0.12)])) is None   # signs do not cancel
    assert collapse_record(p, 1.0, "free", np.stack([flat(0.0), flat(0.0)])) is None


def _fake_response(growth, actual, predicted, cosine):
    g, a, pr, c = (np.asarray(v, float) for v in (growth, actual, predicted, cosine))
    miss = np.sqrt(a ** 2 + pr ** 2 - 2 * c * a * pr) / np.sqrt(np.mean(pr ** 2))   # ‖Z − Z_pred‖ / rms
    return {"growth": g, "actual": a, "predicted": pr, "miss": miss, "ratio": a / pr, "cosine": c,
            "noise": 0.3 * pr, "valid": True, "entries": 1, "eps": 0.1}


def test_response_record_needs_a_stable_zero_and_every_scramble_its_noise_response(monkeypatch):
    """A converged point whose overlap is not significant is ``collapsed`` only where Z = 0 is stable (growth
    below +1 by 3 s.e.) and EVERY scramble's overlap is the linear response of Z = 0 to its own noise, to within
    the responses' rms size; else it stays ``not_significant`` with the reason (collapse.response_record).
    Decision only: the linearisation (collapse.noise_response) is replaced by given numbers."""
    p = ModelParams(sigma=0.7)
    start = default_init(p, "positional", 1.0)
    flat = lambda m: np.asarray(flatten(OrderParams(start.q, np.array([[m]]), start.theta, start.V)))  # noqa: E731
    xs = np.stack([flat(0.004), flat(-0.005), flat(0.006), flat(0.003)])
    act = [0.004, 0.005, 0.006, 0.003]
    stable = [0.7, 0.72, 0.75, 0.74]

    def judge(growth, predicted, cosine):
        monkeypatch.setattr(collapse, "noise_response",
                            lambda *a, **k: _fake_response(growth, act, predicted, cosine))
        return collapse.response_record(p, 1.0, "positional", xs, cfg=None)

    ok = judge(stable, [0.002, 0.006, 0.005, 0.004], [1, 1, 1, 1])     # scramble 0 twice its prediction: fine
    assert ok["collapsed"] and ok["reason"].startswith("collapsed") and ok["why_not"] is None
    # 0.7275: the mean of `stable` (independent arithmetic)
    assert ok["overlap"] == "m" and ok["growth"] == pytest.approx(0.7275) and ok["per_scramble"]["ratio"][0] == 2
    far = judge(stable, [0.003, 0.006, 0.005, 0.0002], [1, 1, 1, 1])   # 0.003 against 0.0002 (rms 0.0042): 0.67
    assert far["collapsed"]
    far = judge(stable, [0.003, 0.006, 0.005, 0.009], [1, 1, 1, 1])    # 0.003 against 0.009 (rms 0.0062): 0.97
    assert far["collapsed"]
    far = judge(stable, [0.003, 0.006, 0.005, 0.012], [1, 1, 1, 1])    # 0.003 against 0.012 (rms 0.0075): 1.2
    assert not far["collapsed"] and "[3]" in far["why_not"]
    flip = judge(stable, [0.003, 0.006, 0.005, 0.004], [1, -1, 1, 1])  # opposite sign: 0.011 / 0.0047
    assert not flip["collapsed"] and "[1]" in flip["why_not"]
    soft = judge([0.6, 1.3, 0.9, 1.1], [0.003, 0.006, 0.005, 0.004], [1, 1, 1, 1])  # 0.98 ± 0.15
    assert not soft["collapsed"] and "not shown stable" in soft["why_not"]
    assert collapse.response_record(p, 1.0, "free", xs, cfg=None) is None


def test_full_signal_start_only_for_a_semantic_rank_r_student():
    """θ on each of min(r, r*) directions, tried after the model and reference starts (r = 2, r* = 3: the
    rank-1 θ of those ends ``invalid_state``, docs/notes/2026-12-05-theory-general.md "r < r* follow-ups")."""
    p = ModelParams(r=2, r_star=3)
    names = [n for n, _ in starts.start_candidates(p, "semantic", 2.0)]
    assert names[-1] == "full_signal"
    x = starts.full_signal_start(p, "semantic", 2.0)
    ref = starts.model_start(p, "semantic", 2.0)
    np.testing.assert_allclose(x.theta, np.array([[1.0, 0, 0], [0, 1.0, 0]]) * ref.theta[0, 0])
    np.testing.assert_allclose(x.q, ref.q)
    np.testing.assert_allclose(x.V, ref.V)
    for q, branch in ((ModelParams(r=2, r_star=1), "semantic"), (ModelParams(r=1, r_star=2), "semantic"),
                      (p, "positional")):
        assert starts.full_signal_start(q, branch, 2.0) is None
        assert "full_signal" not in [n for n, _ in starts.start_candidates(q, branch, 2.0)]


def _split(sigma, lam, alpha, branch):
    return solve_point(ModelParams(omega=0.3, sigma=sigma, lam=lam), alpha, branch, stability=False)


@pytest.mark.parametrize("branch,points", [
    ("semantic", [(1.0, 0.01, 2.0), (0.5, 0.001, 2.0)]),
    ("positional", [(0.3, 0.01, 2.0), (0.5, 0.1, 3.0)]),
])
def test_engine_from_default_start_equals_split_rule_off_defaults(branch, points):
    """One batch per branch (σ, λ per point) where the split rule has the branch point: the engine converges
    from its default start and agrees within 4 standard errors (λ = 0.001 semantic: ``invalid_state`` from the
    start before, V = 48σ² against 19.4 at the fixed point)."""
    sg, lm, al = (list(v) for v in zip(*points))
    sols = solve_batch(ModelParams(omega=0.3), al, branch, sigmas=sg, lams=lm, qmc_config=SMALL)
    for s, sigma, lam, alpha in zip(sols, sg, lm, al):
        assert s.status is Status.CONVERGED, (sigma, lam, s.status, s.iteration)
        ref = _split(sigma, lam, alpha, branch)
        assert ref.converged
        for key in ("q", "m", "theta", "V", "e_t"):
            want = getattr(ref, key)
            assert abs(s.values[key] - want) <= 4 * s.errors[key] + 1e-9, (sigma, lam, key, s.values[key], want)


@pytest.mark.slow
@pytest.mark.parametrize("branch,points", [
    ("semantic", [(0.3, 0.01, 2.0), (0.5, 0.1, 2.0)]),
    ("positional", [(1.0, 0.01, 2.0), (0.7, 0.01, 2.0)]),
])
def test_engine_says_so_where_the_split_rule_branch_collapses(branch, points):
    """Where the split rule's pinned iteration collapses (θ, resp. m, → 0; semantic σ = 0.3 and λ = 0.1 fail
    with D ≤ 0, positional σ = 0.7 and 1 converge to m ~ 1e-10) the engine returns no value but the verdict
    ``not_significant`` or ``collapsed`` (before: ``invalid_state`` at semantic σ = 0.3, ``max_steps`` at
    positional σ = 0.7). ~1.5 min."""
    sg, lm, al = (list(v) for v in zip(*points))
    sols = solve_batch(ModelParams(omega=0.3), al, branch, sigmas=sg, lams=lm, qmc_config=SMALL)
    for s, sigma, lam, alpha in zip(sols, sg, lm, al):
        ref = _split(sigma, lam, alpha, branch)
        assert not ref.converged or abs(getattr(ref, "theta" if branch == "semantic" else "m")) < 1e-6
        assert s.status in (Status.NOT_SIGNIFICANT, Status.COLLAPSED), (sigma, lam, s.status)
        assert np.isnan(s.values["q"])


def test_L3_semantic_converges_from_the_start_at_sigma_07():
    s = solve_batch(ModelParams(L=3, A=L3_A, omega=0.3, sigma=0.7), [2.0], "semantic", qmc_config=SMALL)[0]
    assert s.status is Status.CONVERGED, s.iteration
    assert s.values["theta"] > 10 * s.errors["theta"]


def test_a_failed_default_start_is_retried_from_the_next_candidate(monkeypatch):
    """A first candidate outside the valid set (q < 0: ``invalid_state`` at once) is followed by the second:
    the point converges, to the same values as a solve given that start, and its provenance names it; a point
    with a given ``init`` is not retried."""
    p = ModelParams(omega=0.3)
    good = starts.model_start(p, "semantic", 2.0)
    bad = good._replace(q=-good.q)
    monkeypatch.setattr(starts, "start_candidates", lambda *a: [("model", bad), ("second", good)])
    monkeypatch.setattr(starts, "model_start", lambda *a: bad)
    cfg = QMCConfig(points=256, scrambles=2, coarse=0)
    s = solve_batch(p, [2.0], "semantic", qmc_config=cfg)[0]
    assert s.status is Status.CONVERGED and s.iteration["start"] == "second"
    ref = solve_batch(p, [2.0], "semantic", init=good, qmc_config=cfg)[0]
    assert ref.iteration["start"] == "given"
    for key in ("q", "theta", "V", "e_t"):
        assert s.values[key] == pytest.approx(ref.values[key], rel=1e-9)
    assert solve_batch(p, [2.0], "semantic", init=bad, qmc_config=cfg)[0].status is Status.INVALID_STATE
