"""Growth factor of the pinned direction in the general engine (theory.stability_general; MODEL.md §7, §8; issue 11
item 4, helper hA): the finite-difference plumbing recovers a known linear map, the verdict follows the leading
eigenvalue's real part (not the spectral radius), the engine's factor equals the split rule's at L = 2, r = 1,
it is gauge invariant at r = 2, and what is not a converged pinned point gets no number but a reason."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory import stability_general as SG
from attnphase.theory.engine import QMCConfig, solve, solve_batch
from attnphase.theory.solver import solve_point
from attnphase.theory.starts import model_start
from attnphase.theory.state import OrderParams, flatten, rotate
from attnphase.theory.status import Status

CFG = QMCConfig(points=1024, scrambles=4, coarse=0)
FD_BIAS = 0.05
"""Allowance for the finite difference's systematic part (SG.STABILITY_EPS): the O(δ²) curvature and the motion
of the switching set, which a QMC set resolves only through the samples that switch basin within ±δ — neither
shows in the scrambles' spread. Measured at 4096 × 4 against the split rule (docs/notes/2026-12-05-theory-general.md, "Stability
of pinned branches in the engine"): |engine − split| ≤ 3 s.e. + 0.024 on all 11 converged L = 2 points; the
largest gap 0.081 = 4.2 s.e. (uninformative, ω = 0.1, α = 2: 1.817 ± 0.019 against 1.897)."""


@pytest.fixture(scope="module")
def positional():
    """The L = 2, r = 1 positional fixed point at ω = 0.3, α = 2 on CFG's points, with its growth factor."""
    s = solve(ModelParams(omega=0.3), 2.0, "positional", qmc_config=CFG)
    assert s.converged
    return s


# ------------------------------------------------------------------------------------------ pieces
def test_central_difference_recovers_the_pinned_block_of_a_linear_map():
    rng = np.random.default_rng(1)
    r, k, rs = 2, 3, 1
    n = len(flatten(OrderParams(np.eye(r), np.zeros((r, k)), np.zeros((r, rs)), np.eye(r))))
    Amat = rng.normal(size=(n, n))
    xs = rng.normal(size=(3, n))
    for name in ("M", "theta"):
        sl = SG.block_slice(name, r, k, rs)
        delta = np.array([1e-3, 2e-3, 5e-3])
        Y = SG.perturbed(xs, sl, delta)                               # (S, 2, nb, n)
        J = SG.jacobian(Y @ Amat.T, sl, delta)
        np.testing.assert_allclose(J, np.broadcast_to(Amat[sl, sl], J.shape), rtol=1e-8, atol=1e-8)
    assert SG.block_slice("V", r, k, rs).stop == n


def test_growth_is_the_leading_real_part_not_the_spectral_radius():
    g, rad = SG.leading(np.array([[[-2.5]], [[0.4]], [[1.2]]]))
    np.testing.assert_allclose(g, [-2.5, 0.4, 1.2])
    np.testing.assert_allclose(rad, [2.5, 0.4, 1.2])
    g, rad = SG.leading(np.array([[[1.2, 0.0], [0.0, -3.0]]]))
    assert g[0] == pytest.approx(1.2) and rad[0] == pytest.approx(3.0)
    rot = np.array([[[0.5, -2.0], [2.0, 0.5]]])                        # eigenvalues 0.5 ± 2i
    g, rad = SG.leading(rot)
    assert g[0] == pytest.approx(0.5) and rad[0] == pytest.approx(np.hypot(0.5, 2.0))


def test_verdict_needs_k_standard_errors_from_one():
    assert SG.verdict(0.5, 0.1)[0] is SG.Stability.STABLE
    assert SG.verdict(1.5, 0.1)[0] is SG.Stability.UNSTABLE
    v, reason = SG.verdict(1.1, 0.1)
    assert v is SG.Stability.UNDECIDED and "3 s.e." in reason and v.stable is None
    v, reason = SG.verdict(float("nan"), 0.1)
    assert v is SG.Stability.UNKNOWN and reason


# ------------------------------------------------------------------------------------------ the engine
def test_engine_records_the_growth_and_the_json_carries_it(positional):
    st = positional.stability
    assert st is not None and np.isfinite(st["growth"]) and st["growth_err"] > 0
    assert len(st["per_scramble"]) == CFG.scrambles and all(d > 0 for d in st["delta"])
    assert st["stable"] is (st["growth"] + 3 * st["growth_err"] < 1.0)
    d = positional.to_dict()
    assert d["stability"] == st["growth"] and d["stability_err"] == st["growth_err"] and d["stable"] is st["stable"]
    assert d["provenance"]["stability"]["verdict"] == st["verdict"]
    assert d["q"] == positional.values["q"]                           # the scalar keys stay


def test_warm_prox_equals_the_global_prox_within_errors(positional):
    warm = positional.stability
    full = SG.pinned_growth([positional], prox="full")[0]
    assert warm["prox"] == "warm" and full["prox"] == "full"
    assert abs(warm["growth"] - full["growth"]) <= 3 * np.hypot(warm["growth_err"], full["growth_err"])
    with pytest.raises(ParameterError, match="prox"):
        SG.pinned_growth([positional], prox="exact")


def test_free_branch_raises_and_unconverged_point_gets_a_reason_not_a_number(positional):
    with pytest.raises(ParameterError, match="free branch has no pinned direction"):
        SG.pinned_growth([replace(positional, branch="free")])
    rec = SG.pinned_growth([replace(positional, status=Status.MAX_STEPS)])[0]
    assert np.isnan(rec["growth"]) and rec["stable"] is None and rec["verdict"] == "unknown"
    assert "max_steps" in rec["reason"]


def test_rotated_state_has_the_same_growth_rank2():
    """Gauge invariance (MODEL.md §8, Q → QO): the growth factor of a rank-2 state and of its rotation agree
    within the QMC errors (the point set is not rotation invariant, so only statistically), at a state on the
    positional subspace (θ = 0; a model start, which is enough for a property of J_pp at any state)."""
    p = ModelParams(L=2, r=2, omega=0.3)
    cfg = QMCConfig(points=512, scrambles=4, coarse=0)
    x = model_start(p, "positional", 2.0)
    x = OrderParams(*(np.asarray(b, float) for b in x))
    O = np.array([[np.cos(1.0), -np.sin(1.0)], [np.sin(1.0), np.cos(1.0)]])
    fake = solve(p, 2.0, "positional", qmc_config=cfg, max_steps=1, stability=False)
    recs = []
    for state in (x, rotate(x, O)):
        xs = np.repeat(np.asarray(flatten(state))[None], cfg.scrambles, axis=0)
        recs.append(SG.pinned_growth([replace(fake, status=Status.CONVERGED, scramble_x=xs)])[0])
    a, b = recs
    assert np.isfinite(a["growth"]) and np.isfinite(b["growth"])
    for key in ("growth", "spectral_radius"):
        assert abs(a[key] - b[key]) <= 3 * np.hypot(a[f"{key}_err"], b[f"{key}_err"]) + 1e-6, key


def _agrees(sol, split_growth):
    st = sol.stability
    return abs(st["growth"] - split_growth) <= 3 * st["growth_err"] + FD_BIAS


def test_engine_growth_equals_split_rule_on_a_stable_positional_point(positional):
    ref = solve_point(ModelParams(omega=0.3), 2.0, "positional", stability_nodes=8)
    assert ref.stable and positional.stability["stable"] is True
    assert _agrees(positional, ref.stability)


@pytest.mark.slow
@pytest.mark.parametrize("omega, branch, alpha", [(0.3, "semantic", 2.0), (0.1, "positional", 1.0),
                                                  (0.1, "semantic", 2.0)])
def test_engine_growth_equals_split_rule_stable(omega, branch, alpha):
    p = ModelParams(omega=omega)
    ref = solve_point(p, alpha, branch, stability_nodes=8)
    sol = solve(p, alpha, branch, qmc_config=QMCConfig(points=4096, scrambles=4))
    assert sol.converged and ref.converged
    assert _agrees(sol, ref.stability), (sol.stability["growth"], sol.stability["growth_err"], ref.stability)
    assert sol.stability["stable"] is True and ref.stable


@pytest.mark.slow
@pytest.mark.parametrize("omega, alpha", [(0.1, 2.0), (0.3, 1.0)])
def test_engine_flags_an_unstable_branch_point(omega, alpha):
    """The uninformative point (both overlaps pinned): the split rule's growth is 1.90 (θ) at ω = 0.1, α = 2 and
    2.29 (m) at ω = 0.3, α = 1 — a saddle; the engine says unstable and agrees on the number."""
    p = ModelParams(omega=omega)
    ref = solve_point(p, alpha, "uninformative", stability_nodes=8)
    sol = solve(p, alpha, "uninformative", qmc_config=QMCConfig(points=4096, scrambles=4))
    assert ref.converged and ref.stability > 1.0 and sol.converged
    assert _agrees(sol, ref.stability), (sol.stability, ref.stability)
    assert sol.stability["stable"] is False


def test_stability_false_skips_it_and_free_branch_records_none():
    p = ModelParams(omega=0.3)
    cfg = QMCConfig(points=256, scrambles=2, coarse=0)
    s = solve_batch(p, [2.0], "positional", qmc_config=cfg, stability=False)[0]
    assert s.stability is None and s.to_dict()["stability"] is None
    f = solve_batch(p, [2.0], "free", qmc_config=cfg, max_steps=3)[0]
    assert f.stability is None


def test_cli_point_json_carries_the_growth_factor(capsys):
    import json

    from attnphase.cli import main
    with pytest.raises(SystemExit) as e:
        main(["theory", "point", "--alpha", "2", "--branch", "positional", "--integrator", "qmc", "--qmc-points",
              "256", "--scrambles", "2", "--json"])
    assert e.value.code in (0, None)
    d = json.loads(capsys.readouterr().out)
    st = d["provenance"]["stability"]
    assert d["stability"] == st["growth"] and d["stability_err"] == st["growth_err"] and d["stable"] == st["stable"]
    assert st["verdict"] in ("stable", "unstable", "undecided") and len(st["per_scramble"]) == 2
