"""The split rule's resolution follows the student's scale (solver.SCALE_NODES; issue 11 audit): its default
order 8 is accurate at σ = 0.5 but 1.3 % off in e_t at σ = 1.5, where the default solve now polishes on
order 16. Properties: the default agrees with a finer rule where order 8 does not; the paper's point is
untouched; a too coarse explicit order and a transition located with it say so."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.phase.transition import _scale_note
from attnphase.theory.solver import (BEYOND_SCALE_NODES, DEFAULT_NODES, SCALE_NODES, nodes_for_scale,
                                     resolution_note, solve_point)


def test_nodes_for_scale_is_monotone_and_starts_at_the_default():
    qs = np.linspace(0.0, 3.0, 61)
    orders = [nodes_for_scale(q) for q in qs]
    assert orders[0] == DEFAULT_NODES
    assert all(a <= b for a, b in zip(orders, orders[1:]))
    assert nodes_for_scale(SCALE_NODES[-1][0] + 0.1) == BEYOND_SCALE_NODES
    for q_max, n in SCALE_NODES:
        assert nodes_for_scale(q_max) == n and resolution_note(q_max, n) is None
        assert resolution_note(q_max + 1e-3, n) is not None                # just beyond its range
    assert "nodes ≥ 16" in resolution_note(1.0, 8)
    assert "beyond the range" in resolution_note(2.5, 40)
    assert resolution_note(5.0, 8, rule="product") is None                # measured for the split rule only


def test_default_resolution_is_unchanged_at_the_papers_point():
    s = solve_point(ModelParams(omega=0.3), 2.0, "semantic", stability=False)
    assert s.converged and s.nodes == DEFAULT_NODES and s.q < SCALE_NODES[0][0]


# Order 24 at σ = 1.5, ω = 0.3, α = 2, semantic: a regression pin of the package's own output (solve_point(...,
# nodes=24, stability=False), 2026-12-06; ~50 CPU-s a solve). test_order_24_reference_is_the_live_solve (slow)
# recomputes it; the default run compares against the pin.
ORDER_24 = {"q": 1.1738841, "theta": 1.6150546, "e_t": 0.024048659, "eps_g": 0.019977967}


def test_default_follows_the_scale_at_large_sigma():
    """σ = 1.5, α = 2 (q ≈ 1.17): the default solve ends on order 16 and agrees with order 24 (:data:`ORDER_24`)
    to 1e-3, while an explicit order 8 is off by more than 3e-3 in e_t (measured 1.3e-2) — the raise is needed."""
    p = ModelParams(omega=0.3, sigma=1.5)
    auto = solve_point(p, 2.0, "semantic", stability=False)
    coarse = solve_point(p, 2.0, "semantic", nodes=8, stability=False)
    assert auto.converged and coarse.converged
    assert auto.nodes == nodes_for_scale(auto.q) == 16
    for key in ("q", "theta", "e_t", "eps_g"):
        assert getattr(auto, key) == pytest.approx(ORDER_24[key], rel=1e-3), key
    assert abs(coarse.e_t / ORDER_24["e_t"] - 1) > 3e-3
    assert resolution_note(coarse.q, coarse.nodes) is not None


@pytest.mark.slow
def test_order_24_reference_is_the_live_solve():
    """:data:`ORDER_24` is what order 24 gives (the pin's source), and the default solve agrees with it live."""
    p = ModelParams(omega=0.3, sigma=1.5)
    fine = solve_point(p, 2.0, "semantic", nodes=24, stability=False)
    auto = solve_point(p, 2.0, "semantic", stability=False)
    assert fine.converged and fine.nodes == 24
    for key in ("q", "theta", "e_t", "eps_g"):
        assert getattr(fine, key) == pytest.approx(ORDER_24[key], rel=1e-6), key
        assert getattr(auto, key) == pytest.approx(getattr(fine, key), rel=1e-3), key


def test_transition_notes_a_resolution_below_the_scale():
    pt = lambda a, q: SimpleNamespace(alpha=a, q=q)                         # noqa: E731
    br = lambda *pts: SimpleNamespace(valid=lambda: list(pts))              # noqa: E731
    branches = {"semantic": br(pt(1.0, 0.9), pt(3.0, 2.5)), "positional": br(pt(1.0, 0.5))}
    note = _scale_note(branches, [1.05], 8)              # points up to α ≈ 1.1 count: q = 0.9 > 0.7
    assert note is not None and "nodes = 8" in note and "q = 0.9" in note
    assert _scale_note(branches, [1.05], 16) is None
    assert _scale_note(branches, [], 8) is None
