"""The engine next to the q = 0 onsets at L = 3 (docs/notes/2026-12-05-theory-general.md, "The engine next to a q = 0 onset
(issue 11, helper hD)"): the positional branch leaves q = 0 along a degenerate direction (the plane M ⟂ (1, 1, 1)
of A = 0.4 I + 0.2 J, P = I), which the engine now keeps to the subspace fixed by its start's token exchange;
a transition through any solver quotes the onsets from q = 0."""

import math

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.phase import transition
from attnphase.theory.solution import scalar_solution

A3 = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))
P3 = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
L3 = ModelParams(L=3, A=A3, P=P3, omega=0.3, sigma=0.5)


def test_positional_symmetries_and_the_start_projector():
    """P = I with a permutation-invariant A: all 6 token permutations, O their permutation matrices; the start
    M ∝ e₁ is fixed by the exchange of tokens 2, 3 only, projector onto M₂ = M₃. The paper's L = 2 model has the
    exchange with O = −1, which fixes no M ≠ 0: no projection."""
    from attnphase.theory.symmetry import positional_symmetries, stabiliser_projector
    syms = positional_symmetries(L3)
    assert len(syms) == 6
    for pi, O in syms:
        assert np.allclose(O, np.eye(3)[list(pi)].T) and np.allclose(L3.P_array @ O.T, L3.P_array[list(pi)])
    Pi, fixed = stabiliser_projector(L3, [np.array([[0.3, 0.0, 0.0]])])
    assert fixed == [(0, 1, 2), (0, 2, 1)]
    assert np.allclose(Pi, [[1, 0, 0], [0, 0.5, 0.5], [0, 0.5, 0.5]])
    assert stabiliser_projector(L3, [np.array([[0.3, 0.1, -0.2]])]) is None          # a generic M: none
    assert stabiliser_projector(ModelParams(), [np.array([[0.3]])]) is None
    skew = L3.replace(A=((0.6, 0.3, 0.1), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6)))      # breaks the exchange 2 ↔ 3
    assert stabiliser_projector(skew, [np.array([[0.3, 0.0, 0.0]])]) is None


def _zero_q_solver(params, alpha, branch, *, nodes=None, init=None, max_steps=300, stability=True, **kw):
    """A stand-in for a point solver whose every point is the q = 0 point as the QMC engine reports it (q is
    round-off, 1e-22, not 0 exactly): e_t = α ε_g."""
    return scalar_solution(float(alpha), branch, params, 1e-22, 0.0, 0.53, 0.0, 0.0, 0.0, -0.07, 0.0, 0.0108,
                            0.0108 * alpha, True, 10, 1e-9, "converged", 0.1, True, nodes or 8)


def _transition_note(p):
    r = transition(p, alphas=[1.5, 2.0], mixed_alphas=[], refine=False, extend=False, fixed_points=False,
                   solver=_zero_q_solver)
    note = next(n for n in r.notes if "q = 0" in n)
    assert note.startswith("both branches collapse to q = 0 (the student Q = 0) wherever solved")
    assert "the q = 0 point at α = 2 is stable" in note
    assert r.to_dict()["alpha_c_reason"].startswith("both branches collapse to q = 0")
    return note


def test_transition_through_another_solver_quotes_the_onsets():
    """The split-rule transition quoted the λ below which a branch leaves q = 0 (section "Strong ridge": 0.1737
    positional, 0.08068 semantic at α = 2); through another solver, whose q at the q = 0 point is round-off
    (the engine's ~1e-22, not 0), it said nothing. Fails on the old code (no such note)."""
    note = _transition_note(ModelParams(omega=0.3, lam=0.5))
    # 0.1737 / 0.08068: package output, the closed-form onsets at q = 0 (growth factor = 1: 0.173689, 0.080679),
    # confirmed by the q → 0 extrapolation of the continued branches (0.17368, 0.08066): docs/notes/
    # 2026-12-05-theory-general.md, "Strong ridge" table (2026-12-05) -- regression pins of the note's wording
    assert "a positional branch leaves q = 0 for λ < 0.1737" in note
    assert "a semantic branch leaves q = 0 for λ < 0.08068" in note


@pytest.mark.slow
def test_transition_at_L3_quotes_the_onsets():
    """The same at L = 3 (closed form on 40³ nodes, ~35 s): the onsets of docs/notes/2026-12-05-theory-general.md, "The q = 0 point
    for any L". Fails on the old code."""
    note = _transition_note(L3.replace(lam=0.5))
    # 0.1042 / 0.09237: package output, zero_point.branch_onsets (closed form on 40³ nodes; docs/notes/
    # 2026-12-05-theory-general.md, "The q = 0 point for any L", 2026-12-05) -- regression pins
    assert "a positional branch leaves q = 0 for λ < 0.1042" in note
    assert "a semantic branch leaves q = 0 for λ < 0.09237" in note



def _cfg():
    from attnphase.theory.engine import QMCConfig
    return QMCConfig(points=1024, scrambles=4, target=0)


@pytest.mark.slow
def test_positional_branch_below_its_onset_converges_in_the_exchange_symmetric_subspace():
    """λ = 0.085, 0.09, 0.095 (α = 2; closed-form positional onset 0.1042, where the doubly degenerate growth
    factor of q = 0 against M crosses 1): every point converges, M ∝ (2, −1, −1) (M₂ = M₃, M ⟂ (1, 1, 1)), and
    q/(λ_c − λ) is the same to 3 % (a branch leaving q = 0 linearly; measured 0.549, 0.551, 0.559). Fails on the
    old code: λ = 0.09 ended ``max_steps`` (M drifting in the plane ⟂ (1, 1, 1), residual 0.04–0.3)."""
    from attnphase.theory.engine import solve_batch
    from attnphase.theory.status import Status
    from attnphase.theory.zero_point import onset_lam
    lams = [0.085, 0.09, 0.095]
    sols = solve_batch(L3, [2.0] * 3, "positional", lams=lams, qmc_config=_cfg(), max_steps=200, stability=False)
    # package output of zero_point.branch_onsets (closed form, docs/notes/2026-12-05-theory-general.md,
    # 2026-12-05): a regression pin; the slopes below are the independent check (q ∝ λ_c − λ)
    lam_c = 0.10420
    assert onset_lam(L3, 2.0, "m") == pytest.approx(lam_c, abs=5e-5)
    slopes = []
    for lam, s in zip(lams, sols):
        assert s.status is Status.CONVERGED, (lam, s.status, s.iteration)
        assert s.iteration["m_symmetry"]["exchanges"] == [[0, 1, 2], [0, 2, 1]]
        M = s.scramble_x[:, 1:4]
        assert np.allclose(M[:, 1], M[:, 2], atol=1e-12)
        assert np.all(np.abs(M.sum(axis=1)) < 0.03 * np.linalg.norm(M, axis=1))
        slopes.append(s.values["q"] / (lam_c - lam))
    assert max(slopes) / min(slopes) < 1.03, slopes


@pytest.mark.slow
@pytest.mark.parametrize("branch, lam, steps", [("positional", 0.106, 200), ("semantic", 0.095, 100)])
def test_just_above_an_onset_the_engine_reaches_the_q_zero_point(branch, lam, steps):
    """1.7 % (positional) and 2.8 % (semantic) above the closed-form onsets the iteration crawls towards q = 0
    (growth factor → 1); with Newton steps in √q (the split rule's, generalised) it reaches the q = 0 point
    (``collapsed``, values kept) in 58 and 47 steps, and V agrees with the closed form. Fails on the old code:
    ``max_steps`` (positional: 200 steps, residual 4e-3, one scramble still at q = 7e-6; semantic: it needed
    162 steps)."""
    from attnphase.theory.engine import solve
    from attnphase.theory.status import Status
    from attnphase.theory.zero_point import zero_point
    p = L3.replace(lam=lam)
    s = solve(p, 2.0, branch, qmc_config=_cfg(), max_steps=steps, stability=False)
    assert s.status is Status.COLLAPSED and s.significance["zero_q"], (s.status, s.iteration)
    zp = zero_point(p, 2.0)
    assert s.values["V"] == pytest.approx(zp.V, abs=4 * s.errors["V"] + 1e-4)


@pytest.mark.parametrize("params", [ModelParams(L=2, r_star=3, omega=0.3, lam=0.5),
                                    L3.replace(r_star=2, lam=0.5)], ids=["L2-rstar3", "L3-rstar2"])
def test_closed_form_at_six_teacher_coordinates_carries_an_error_that_bounds_the_true_one(params):
    """L·r* = 6: the default product rule has order 6 per coordinate. Against order 9 (measured: within 1e-4
    relative of 2^20 × 8 scrambled Sobol points of the same expectations) the order-6 values are off by up to
    1.5e-3 relative (e_t 1.1e-3, γ_θ 1.5e-3 at L = 3, r* = 2; V ≤ 2e-5), and |value(6) − value(5)|, the error
    the record carries, bounds that for V, e_t and the growth factors. The engine's q = 0 record quotes it.
    Fails on the old code (no error estimate)."""
    from attnphase.theory.engine import zero_q_record
    from attnphase.theory.zero_point import zero_point
    zp = zero_point(params, 2.0, error=True)
    ref = zero_point(params, 2.0, order=9)
    assert zp.order == 6
    for key in ("V", "e_t", "eps_g", "growth_m", "growth_theta", "growth_q"):
        true = abs(getattr(zp, key) - getattr(ref, key))
        assert true <= zp.integration_error[key], (key, true, zp.integration_error[key])
        assert zp.integration_error[key] < 2e-2 * abs(getattr(ref, key)), key     # (measured ≤ 1.2e-2)
    n = 1 + params.k + params.r_star + 1
    xs = np.zeros((4, n))
    xs[:, -1] = zp.V
    rec = zero_q_record(params, "uninformative", xs, 2.0)
    assert rec["closed_form"]["integration_error"] == pytest.approx(zp.integration_error)
    assert rec["closed_form"]["order"] == 6
