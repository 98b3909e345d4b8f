"""The engine next to the q = 0 onsets at L = 3 (docs/theory_general.md, "The engine next to a q = 0 onset
(issue 11, helper hD)"): the positional branch leaves q = 0 along a degenerate direction (the plane M ⟂ (1, 1, 1)
of A = 0.4 I + 0.2 J, P = I), which the engine now keeps to the subspace fixed by its start's token exchange;
a transition through any solver quotes the onsets from q = 0."""

import math

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.phase import transition
from attnphase.theory import FixedPointSolution
from attnphase.theory.symmetry import positional_symmetries, stabiliser_projector

A3 = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))
P3 = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
L3 = ModelParams(L=3, A=A3, P=P3, omega=0.3, sigma=0.5)


def test_positional_symmetries_and_the_start_projector():
    """P = I with a permutation-invariant A: all 6 token permutations, O their permutation matrices; the start
    M ∝ e₁ is fixed by the exchange of tokens 2, 3 only, projector onto M₂ = M₃. The paper's L = 2 model has the
    exchange with O = −1, which fixes no M ≠ 0: no projection."""
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
    return FixedPointSolution(float(alpha), branch, params, 1e-22, 0.0, 0.53, 0.0, 0.0, 0.0, -0.07, 0.0, 0.0108,
                              0.0108 * alpha, True, 10, 1e-9, "converged", 0.1, True, nodes or 8)


def test_transition_through_another_solver_quotes_the_onsets():
    """The split-rule transition quoted the λ below which a branch leaves q = 0; through another solver (the
    engine's q = 0 is ~1e-22, not 0) and at L = 3 it said nothing. Fails on the old code (no such note)."""
    p = L3.replace(lam=0.5)
    r = transition(p, alphas=[1.5, 2.0], mixed_alphas=[], refine=False, extend=False, fixed_points=False,
                   solver=_zero_q_solver)
    note = next(n for n in r.notes if "q = 0" in n)
    assert note.startswith("both branches collapse to q = 0 (the student Q = 0) wherever solved")
    assert "a positional branch leaves q = 0 for λ < 0.1042" in note
    assert "a semantic branch leaves q = 0 for λ < 0.09237" in note
    assert "the q = 0 point at α = 2 is stable" in note
    assert r.to_dict()["alpha_c_reason"].startswith("both branches collapse to q = 0")


CFG = None


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
@pytest.mark.parametrize("branch, lam", [("positional", 0.106), ("semantic", 0.093)])
def test_just_above_an_onset_the_engine_reaches_the_q_zero_point(branch, lam):
    """1.7 % (positional) and 0.7 % (semantic) above the closed-form onsets the iteration crawls towards q = 0
    (growth factor → 1); with Newton steps in √q (the split rule's, generalised) it reaches the q = 0 point
    (``collapsed``, values kept) and V agrees with the closed form. Fails on the old code: ``max_steps`` after
    200 steps (residual 4e-3 positional, 2e-2 semantic; one scramble still at q ~ 1e-5)."""
    from attnphase.theory.engine import solve
    from attnphase.theory.status import Status
    from attnphase.theory.zero_point import zero_point
    p = L3.replace(lam=lam)
    s = solve(p, 2.0, branch, qmc_config=_cfg(), max_steps=200, stability=False)
    assert s.status is Status.COLLAPSED and s.significance["zero_q"], (s.status, s.iteration)
    assert s.iterations < 200
    zp = zero_point(p, 2.0)
    assert s.values["V"] == pytest.approx(zp.V, abs=4 * s.errors["V"] + 1e-4)
