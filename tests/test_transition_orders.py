"""The order α_l is located at comes from the refinements' own results (``_refine``, ``_refine_l`` return it),
not from the notes' text (MODEL.md §6 "Transition"; docs/notes/2026-12-05-theory-general.md, issue 11, helper hA)."""

import pandas as pd
import pytest

from attnphase.model import ModelParams
from attnphase.phase.continuation import follow_branch
from attnphase.phase.refine import refine_alpha_l, refine_lines
from _stand_in_point import ScalarStandInPoint

P = ModelParams(omega=0.3)
EPS_LIN = 0.02


def stand_in(fail_nodes=()):
    """Semantic ε_g = 0.03 − 0.01 α (meets ε_lin = 0.02 at α = 1), positional ε_g = 0.04; e_t^sem − e_t^pos =
    0.001 (1.1 − α). Solves at an order in ``fail_nodes`` do not converge."""
    def solve(params, alpha, branch, *, nodes=None, init=None, max_steps=300, stability=True, **kw):
        conv = (nodes or 8) not in fail_nodes
        sem = branch == "semantic"
        e_t = 0.01 * alpha + (0.001 * (1.1 - alpha) if sem else 0.0)
        eps_g = 0.03 - 0.01 * alpha if sem else 0.04
        return ScalarStandInPoint(float(alpha), branch, params, 0.1, 0.0 if sem else 0.3, 3.0, 0.2 if sem else 0.0,
                                  0.1, 0.0, 0.05, 0.01, eps_g, e_t, conv, 10, 1e-7,
                                  "converged" if conv else "not converged", 0.5, True, nodes or 8)
    return solve


def _branches():
    grid = [0.8, 0.9, 1.0, 1.1, 1.2, 1.3]
    solver = stand_in()
    return {"semantic": follow_branch(P, grid[::-1], "semantic", nodes=4, solver=solver),
            "positional": follow_branch(P, grid, "positional", nodes=4, solver=solver)}


def test_refine_returns_the_order_alpha_l_was_located_at():
    br = _branches()
    g = pd.DataFrame(dict(alpha=[0.9, 1.0, 1.1, 1.2], global_branch="semantic", eps_lin=EPS_LIN))
    a_c, a_l, l_nodes, notes = refine_lines(P, br, g, None, 0.98, "positional", 8, 0.8, 1.3, 1e-6, 0.05, [], stand_in())
    assert a_l == pytest.approx(1.0, abs=1e-5) and l_nodes == 8 and not notes
    # the solves at order 8 fail: the table value is kept, and its order is not the refinement's
    a_c, a_l, l_nodes, notes = refine_lines(P, br, g, None, 0.98, "positional", 8, 0.8, 1.3, 1e-6, 0.05, [],
                                       stand_in(fail_nodes=(8,)))
    assert a_l == 0.98 and l_nodes is None


def test_refine_l_says_its_order_with_or_without_a_note():
    br = _branches()
    notes: list[str] = []
    a_l, n = refine_alpha_l(P, br, 0.98, 0.8, 1.3, (8, 4), 1e-6, [], stand_in(fail_nodes=(8,)), EPS_LIN, notes)
    assert a_l == pytest.approx(1.0, abs=1e-5) and n == 4
    # nothing to refine on (lo ≥ hi): the guess comes back unrefined, without a note — and without an order
    notes.clear()
    a_l, n = refine_alpha_l(P, br, 1.35, 1.3, 1.3, (8, 4), 1e-6, [], stand_in(), EPS_LIN, notes)
    assert a_l == 1.35 and n is None and not notes


def test_transition_falls_back_to_the_curves_order_for_alpha_l_when_the_finer_solves_fail():
    """End to end through ``transition``: every order-8 solve fails, so the first refinement keeps the table's
    α_l (flagged by its returned order, not by reading the notes); α_l is then located on the semantic branch at
    the curves' order 4, where the stand-in's ε_g = 0.03 − 0.01 α meets ε_lin, and the result says order 4.
    The failed refinement's note is replaced by the fallback's."""
    import numpy as np

    from attnphase.phase.refine import L_REFINE_FAILED
    from attnphase.phase.transition import transition
    r = transition(P, alphas=np.round(np.arange(0.6, 1.6001, 0.1), 4), nodes=8, curve_nodes=4,
                   solver=stand_in(fail_nodes=(8,)))
    assert r.alpha_l is not None and 0.03 - 0.01 * r.alpha_l == pytest.approx(r.eps_lin, abs=1e-6)
    assert r.alpha_l_nodes == 4
    assert L_REFINE_FAILED not in r.notes
    assert "α_l refined at nodes = 4 (the nodes = 8 solves failed near it)" in r.notes


def test_a_continuous_birth_on_coarse_curves_is_located_again_at_the_refinement_order():
    """``birth_order``: only a ``continuous`` α_c of the split rule, located on curves coarser than ``nodes``, with
    refinement on and no scale-aware order asked for, is located again — at ``nodes``."""
    from attnphase.phase.transition import birth_order
    assert birth_order(True, True, None, "continuous", 0.64, 8, 4) == 8
    assert birth_order(True, True, None, "crossing", 1.25, 8, 4) is None          # Brent at ``nodes`` already
    assert birth_order(True, True, None, "competitor loses stability", 0.7, 8, 4) is None
    assert birth_order(False, True, None, "continuous", 0.64, 8, 4) is None       # QMC: one resolution
    assert birth_order(True, False, None, "continuous", 0.64, 8, 4) is None       # --no-refine
    assert birth_order(True, True, 16, "continuous", 0.64, 8, 4) is None          # the scale's order instead
    assert birth_order(True, True, None, "continuous", 0.64, 8, 8) is None        # curves at ``nodes`` already
    assert birth_order(True, True, None, "continuous", None, 8, 4) is None


@pytest.mark.slow
def test_sigma_0p7_birth_is_located_at_nodes_8_not_on_the_coarse_curves():
    """σ = 0.7, ω = 0.3: the semantic branch's birth lies at 0.6409 on the nodes = 4 curves, at 0.6502 with curves
    at nodes = 6 and 0.6500 at nodes = 8 (`theory transition --curve-nodes 6 / 8`, 2026-12-06,
    docs/notes/2026-12-06-birth-resolution.md). `transition` on its defaults (curves at 4, nodes 8) must report
    the nodes = 8 birth, with the order it was located at and an error that covers the nodes = 8 value (without
    ``birth.relocate_birth`` it reports 0.6409: the test fails)."""
    from attnphase.phase import transition
    r = transition(ModelParams(omega=0.3, sigma=0.7, lam=0.01), alphas=[0.6, 0.7], mixed_alphas=[])
    assert r.alpha_c_kind == "continuous" and r.alpha_c_against == "uninformative"
    assert abs(r.alpha_c - 0.6500) < 2e-3
    assert r.alpha_c_nodes == 8
    d = r.to_dict()
    assert d["alpha_c_err"] is not None and d["alpha_c_err"] < 3e-3
    assert abs(r.alpha_c - 0.64997) <= d["alpha_c_err"] + 1e-4
