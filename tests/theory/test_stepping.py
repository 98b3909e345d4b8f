"""The step control every continuation shares (:class:`attnphase.theory.stepping.Bracket`): the next value after a
failure and when an end counts as located — arithmetic halving to an absolute resolution for
``phase.continuation.follow_branch``, geometric bisection to a relative one for the engine's descent
(:class:`attnphase.theory.ladder.Ladder` in bracket mode). ``follow_branch``'s ends on this rule:
tests/test_phase_continuation.py."""

from __future__ import annotations

import math

import pytest

from attnphase.theory.ladder import Ladder
from attnphase.theory.stepping import FOLLOW_RULE, LADDER_RULE, Bracket, WalkPast


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



def test_each_walker_is_a_parameterisation_of_the_one_rule():
    """The ladder's ratios (grown ×1.5 up to 1.5, square-rooted after a failure, giving up below 1.02) and
    follow_branch's differences (bisected, located to an absolute resolution) are one :class:`StepRule`."""
    r = LADDER_RULE
    assert r.grown(1.2) == min(1.5, 1.2 * 1.5) == 1.5 and r.grown(1.1) == pytest.approx(1.5)
    sizes = [1.5]
    while (h := r.halved(sizes[-1])) is not None:
        sizes.append(h)
    assert sizes[1] == 1.5 ** 0.5 and sizes[-1] >= 1.02 > sizes[-1] ** 0.5       # gives up below 1.02
    assert r.inside(4.0, 1.0) == 2.0 and r.located(2.0, 2.019, 0.01) and not r.located(2.0, 2.03, 0.01)
    f = FOLLOW_RULE
    assert f.inside(0.3, 0.4) == pytest.approx(0.35) and f.located(0.3, 0.301, 1e-3) and not f.located(0.3, 0.302, 1e-3)
    assert f.halved(0.1) == 0.05 and f.grown(0.1) == math.inf                     # back to the full step
    assert Ladder(1.0, origin=4.0).rule.largest == 1.5 and Ladder(3.0, max_ratio=1.25).rule.largest == 1.25


def test_the_walk_past_an_end_steps_to_every_requested_alpha():
    """WalkPast.targets: a ladder of its step from the last valid α, with the requested α's, in the walk's order
    (downwards and upwards), up to the farthest requested one."""
    w = WalkPast()
    assert w.targets(0.75, 0.7, [0.7, 0.5, 0.42]) == [0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.42]
    assert w.targets(1.0, 1.01, [1.2]) == [1.05, 1.1, 1.15, 1.2]
