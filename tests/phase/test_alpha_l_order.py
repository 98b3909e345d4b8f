"""The order α_l is located at and what its error says (phase/alpha_l_order.py, MODEL.md §6 "Transition";
docs/notes/2026-12-06-alpha-l-resolution.md)."""

import pytest

from attnphase.model import ModelParams
from attnphase.phase.alpha_l_order import alpha_l_error, fallback_notes

SPLIT = "the integrator gives no per-point error (split rule: quadrature ~1e-5, not estimated per point)"


def test_alpha_l_error_says_where_alpha_l_is_coarser_than_the_refinement_order():
    """Truth table of ``alpha_l_error(alpha_l, l_nodes, nodes, split_rule, err, reason)``: only a split-rule α_l
    located at an order coarser than ``nodes`` changes — no error, and a reason naming both orders."""
    same = (0.01, "QMC standard error")
    assert alpha_l_error(0.78, 8, 8, True, None, SPLIT) == (None, SPLIT)            # at ``nodes``
    assert alpha_l_error(0.78, 16, 8, True, None, SPLIT) == (None, SPLIT)           # finer (scale-aware order)
    assert alpha_l_error(0.78, 4, 8, False, *same) == same                          # QMC: one resolution
    assert alpha_l_error(None, 4, 8, True, None, "no α_l") == (None, "no α_l")      # no α_l
    assert alpha_l_error(0.78, None, 8, True, None, SPLIT) == (None, SPLIT)         # no order recorded
    err, why = alpha_l_error(0.7567, 4, 8, True, None, SPLIT)
    assert err is None and "nodes = 4" in why and "nodes = 8" in why and "not estimated" in why
    err, why = alpha_l_error(0.7567, 4, 8, True, 1e-5, "a too small error")
    assert err is None and "coarser" in why                                          # a number would hide the shift


def test_fallback_notes_name_the_order_the_second_refinement_reached():
    assert fallback_notes(None, 8, ["α_l refinement on the semantic branch failed; table value kept"]) == [
        "α_l refinement on the semantic branch failed; table value kept"]
    assert fallback_notes(4, 8, ["α_l refined at nodes = 4 (the finer solves failed near it)"]) == [
        "α_l refined at nodes = 4 (the nodes = 8 solves failed near it)"]
    (note,) = fallback_notes(8, 8, [])
    assert note.startswith("α_l refined on the semantic branch at nodes = 8")


def test_fallback_note_at_alpha_c_does_not_claim_a_coarse_alpha_l():
    """The refinement returns α_c itself (σ = 1.0, ω = 0.3: ε_g below ε_lin at α_c on the nodes = 4 solves): the
    note must not say α_l was refined at nodes = 4 while ``alpha_l_nodes`` reports α_c's order 8."""
    (note,) = fallback_notes(4, 8, [], at_alpha_c=True)
    assert note.startswith("α_l = α_c") and "nodes = 4 solves" in note and "nodes = 8 solves failed" in note
    assert "refined at nodes = 4" not in note
    (note,) = fallback_notes(8, 8, [], at_alpha_c=True)
    assert note.startswith("α_l = α_c") and "failed" not in note


@pytest.mark.slow
def test_sigma_0p7_alpha_l_is_located_at_nodes_8():
    """σ = 0.7, ω = 0.3 (λ = 0.01): the semantic ε_g meets ε_lin at 0.7765 at nodes = 8 (the semantic branch
    followed at nodes = 8, ε_g − ε_lin = +4.1e-5 at 0.775 and −6.3e-4 at 0.8, and the nodes = 8 solves warm-started
    from the nodes = 4 points agree: bench/investigations/sigma07_alpha_l_nodes8.py, 2026-12-06), at 0.7567 at
    nodes = 4. The grid holds α_l, so the first refinement starts from the table's α_l, on the branch the table
    calls global above its α_c: the collapsed positional one (no e_t crossing before the birth). Before the fix it
    failed there and the fallback tried the curves' order only: α_l = 0.7567, ``alpha_l_nodes`` 4 (this test fails
    there; a grid that stops below α_l, [0.6, 0.7], finds α_l by the extension's refinement and never takes
    that path)."""
    from attnphase.phase import transition
    r = transition(ModelParams(omega=0.3, sigma=0.7, lam=0.01), alphas=[0.6, 0.7, 0.8, 0.9], mixed_alphas=[])
    assert r.alpha_c_kind == "continuous"
    assert r.alpha_l_nodes == 8
    assert r.alpha_l == pytest.approx(0.7765, abs=1.5e-3)
    assert not any("nodes = 8 solves failed" in n for n in r.notes)
