"""The :class:`attnphase.theory.ladder.Ladder` in bracket mode (the engine's descent in α towards a failed
semantic point, docs/notes/2026-12-05-theory-general.md, "The descent in α near a branch end"), driven by stand-in solves: no
engine, each test well under a second. Before (the ladder without ``bracket_tol``): after a success the ratio
grew back to 1.5 and the ladder stepped past values that had already failed (measured at r = 2, r* = 3, α = 2:
2.667 and 2.951 each failed twice, 13 steps without closing the bracket)."""

from __future__ import annotations

import math

import pytest

from attnphase.theory.ladder import Ladder, run_ladders
from attnphase.theory.status import Status

TOL = 1e-2


def _drive(lad: Ladder, converges) -> list[tuple[float, bool]]:
    """Run the ladder with the stand-in solve ``converges(value, a)`` (a: the rung it starts from)."""
    while lad.climbing:
        v = lad.next_value()
        lad.record(v, converges(v, lad.a))
    return lad.tried


@pytest.mark.parametrize("end", [2.95, 3.5, 2.0001, 3.99])
def test_bracket_contains_the_end_in_few_solves_and_no_failure_is_retried(end):
    """A branch that ends at ``end`` (every solve below it fails), followed down from 4 to 1.5: the ladder stops
    BRACKETED with lower < end ≤ upper within 1 %, the steps are log-like (the descent at ratio 1.5 to the
    first failure, then ⌈log2(ln 1.5 / ln 1.01)⌉ = 6 bisections), no failed value is tried twice, and after a
    failure no step goes at or below it. Every step is reported."""
    said = []
    lad = Ladder(1.5, origin=4.0, started=True, bracket_tol=TOL, progress=said.append)
    tried = _drive(lad, lambda v, a: v >= end)
    lo, hi = lad.bracket
    assert lad.end is Status.BRACKETED and not lad.reached and lad.failed == lo
    assert lo < end <= hi and hi / lo - 1.0 <= TOL
    descent = math.ceil(math.log(4.0 / 1.5) / math.log(1.5))
    assert lad.steps <= descent + math.ceil(math.log2(math.log(1.5) / math.log(1 + TOL))), tried
    failed = [v for v, ok in tried if not ok]
    assert len(failed) == len(set(failed)), tried
    for n, (v, ok) in enumerate(tried):
        assert all(v > f for f, ok_ in tried[:n] if not ok_), (v, tried)       # never at or past a failure
    assert len(said) == lad.steps and all(s.startswith("continuation from α = 4 to 1.5: ") for s in said)
    assert "end between" in said[-1] and said[-1].endswith("bracketed")


def test_a_failed_target_is_tried_once_more_from_the_rung_between():
    """Measured at r = 2, r* = 3: 4.5 → 3 failed (a step too long), 4.5 → 3.674 and 3.674 → 3 converged. A
    stand-in that fails steps of ratio > 1.3: the target is reached in 3 steps, tried twice. A target below the
    end is tried twice at most, then bisection (the bracket stays above the end, the target out of it)."""
    lad = Ladder(3.0, origin=4.5, started=True, bracket_tol=TOL)
    tried = _drive(lad, lambda v, a: a / v <= 1.3)
    assert lad.reached and lad.end is Status.REACHED and lad.a == 3.0
    assert tried == [(3.0, False), (pytest.approx(math.sqrt(4.5 * 3.0)), True), (3.0, True)]
    low = Ladder(3.0, origin=4.5, started=True, bracket_tol=TOL)
    tried = _drive(low, lambda v, a: v >= 3.2)
    assert [v for v, ok in tried].count(3.0) == 2 and low.end is Status.BRACKETED
    lo, hi = low.bracket
    assert lo < 3.2 <= hi and hi / lo - 1 <= TOL


def test_the_caps_stop_the_ladder_and_say_so():
    """``max_steps`` and ``max_wall`` (a stand-in clock: every step 100 s) stop the ladder, ``end`` and the stop
    note name the cap."""
    lad = Ladder(1.0, origin=4.0, started=True, bracket_tol=1e-6, max_steps=5)
    _drive(lad, lambda v, a: v >= 2.9)
    assert lad.steps == 5 and lad.end is Status.STEP_CAP and lad.stop_note().endswith("(step cap 5)")
    now = [0.0]

    def clock():
        return now[0]

    def slow(v, a):
        now[0] += 100.0
        return v >= 2.9

    timed = Ladder(1.0, origin=4.0, started=True, bracket_tol=1e-6, max_wall=250.0, clock=clock)
    _drive(timed, slow)
    assert timed.steps == 3 and timed.end is Status.WALL_CAP and "wall cap 250 s" in timed.stop_note()


def test_without_bracket_mode_the_ladder_keeps_its_schedule():
    """The upward continuations (split rule, engine, encoding scale) keep the old schedule: a failed step is
    retried with a square-rooted ratio, the ratio grows back after a success, and a value past a failure is
    tried (a failure there means a step too long, not an end)."""
    lad = Ladder(10.0, started=True)
    tried = _drive(lad, lambda v, a: v / a <= 1.3)
    assert lad.reached and lad.end is Status.REACHED and lad.failed is not None
    first = next(v for v, ok in tried if not ok)
    assert any(v > first and ok for v, ok in tried), tried


def test_one_driver_steps_ladders_at_the_same_value_together():
    """:func:`run_ladders` (the driver of the split rule's ladder start, the engine's ladder starts and its
    descent): ladders at the same next value (and finality) take that step in ONE call (one batch of the engine),
    the target step flagged ``final``; each ladder's outcome is recorded, and the schedule is the one a ladder driven alone
    follows (:func:`_drive`)."""
    lads = [Ladder(10.0, started=True), Ladder(10.0, started=True), Ladder(3.0, started=True)]
    calls = []

    def step(value, final, idx):
        calls.append((value, final, list(idx)))
        return [(value / lads[j].a <= 1.3, None if value / lads[j].a <= 1.3 else "too long", False) for j in idx]

    run_ladders(lads, step)
    assert all(lad.reached for lad in lads)
    # 2 × 1.5 = 3: the first step of all three, one call per finality (the target step runs on the full size)
    assert calls[:2] == [(3.0, False, [0, 1]), (3.0, True, [2])]
    assert all(final == (v == lads[idx[0]].target) for v, final, idx in calls)
    alone = Ladder(10.0, started=True)
    assert _drive(alone, lambda v, a: v / a <= 1.3) == lads[0].tried == lads[1].tried
    assert any(len(idx) == 2 for v, final, idx in calls[1:])                  # the two α = 10 ladders together
    assert lads[0].details == {v: "too long" for v, ok in lads[0].tried if not ok}
