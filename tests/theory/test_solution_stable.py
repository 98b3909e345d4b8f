"""Issue 30, item 9: a point whose iteration reached no fixed point reports no stability verdict (old code:
``theory point --alpha 1 --sigma 3 --json`` — not converged after 300 steps — said ``stable: true``)."""

from __future__ import annotations

import pytest

from attnphase.model import ModelParams
from attnphase.theory.solution import NO_FIXED_POINT, scalar_solution
from attnphase.theory.status import Status


def _point(converged: bool, stability: float | None):
    return scalar_solution(1.0, "semantic", ModelParams(sigma=3.0), 0.5, 0.0, 2.0, 0.3, 0.1, 0.0, 0.2, 0.1,
                           0.02, 0.01, converged=converged, iterations=300, residual=1e-4, stability=stability)


@pytest.mark.parametrize("stability, verdict", [(0.04, True), (1.3, False), (None, None), (float("nan"), None)])
def test_converged_point_has_the_verdict_of_its_growth_factor(stability, verdict):
    assert _point(True, stability).stable is verdict


@pytest.mark.parametrize("stability", [0.04, 1.3])
def test_unconverged_point_has_no_stability_verdict(stability):
    p = _point(False, stability)
    assert p.status is Status.MAX_STEPS and p.stable is None
    assert p.to_dict()["stable"] is None


def test_every_status_without_a_fixed_point_is_listed():
    assert set(NO_FIXED_POINT) == {Status.MAX_STEPS, Status.DIVERGED, Status.INVALID_STATE}
    assert not any(s.ok for s in NO_FIXED_POINT)


def test_low_order_product_rule_carries_a_resolution_note():
    """Issue 30, item 9: ``--rule product`` at a low order (θ 4–17 % off) said nothing; the note names the order
    to use. Orders ≥ PRODUCT_MIN_ORDER and the split rule within its measured range carry none."""
    from attnphase.theory.solver import PRODUCT_MIN_ORDER, resolution_note
    for n in (2, 3, PRODUCT_MIN_ORDER - 1):
        note = resolution_note(0.11, n, "product")
        assert note and f"order ≥ {PRODUCT_MIN_ORDER}" in note
    assert resolution_note(0.11, PRODUCT_MIN_ORDER, "product") is None
    assert resolution_note(0.11, 8, "split") is None
