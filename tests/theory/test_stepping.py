"""The step control every continuation shares (:class:`attnphase.theory.stepping.Bracket`): the next value after a
failure and when an end counts as located — arithmetic halving to an absolute resolution for
``phase.continuation.follow_branch``, geometric bisection to a relative one for the engine's descent
(:class:`attnphase.theory.ladder.Ladder` in bracket mode). ``follow_branch``'s ends on this rule:
tests/test_phase_continuation.py."""

from __future__ import annotations

import pytest

from attnphase.theory.ladder import Ladder
from attnphase.theory.stepping import Bracket


def test_midpoints_and_widths_in_either_order():
    up, down = Bracket(1.0, 4.0), Bracket(4.0, 1.0)
    assert up.mid() == down.mid() == 2.5
    assert up.mid(geometric=True) == down.mid(geometric=True) == 2.0          # the ratio halved: 4/2 = 2/1
    assert (up.lower, up.upper) == (down.lower, down.upper) == (1.0, 4.0)
    assert Bracket(2.0, 2.019).within(0.01, relative=True) and not Bracket(2.0, 2.03).within(0.01, relative=True)
    assert not up.within(2.9) and up.within(3.0)


@pytest.mark.parametrize("k", [1, 5, 10, 20])
def test_a_step_halved_k_times_is_located_at_that_resolution(k):
    """A bracket of width 0.1 halved k times is located at resolution 0.1 / 2^k despite rounding (the slack)."""
    good, bad, tol = 0.3, 0.4, 0.1 / 2 ** k
    for _ in range(k):
        bad = Bracket(good, bad).mid()
    assert Bracket(good, bad).within(tol) and not Bracket(good, 0.3 + 2.01 * tol).within(tol)


def test_the_descent_bisects_on_the_shared_rule():
    """The ladder's bracket mode steps to the geometric midpoint of (reached, failed) and stops where the shared
    rule says the bracket is within its tolerance."""
    lad = Ladder(1.0, origin=4.0, started=True, bracket_tol=1e-2)
    while lad.climbing:
        v = lad.next_value()
        if lad.failed is not None and v != lad.target:
            assert v == Bracket(lad.a, lad.failed).mid(geometric=True)
        lad.record(v, v > 2.5)
    lo, hi = lad.bracket
    assert lo <= 2.5 < hi and Bracket(hi, lo).within(1e-2, relative=True)

