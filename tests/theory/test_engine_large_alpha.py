"""The QMC engine at large α (issue 11 audit, "Cold starts fail at large α"; helper hA): its starts are fitted at
α ≤ 2 and a cold start at α = 10 ends ``invalid_state`` / ``max_steps``. ``solve_batch`` then solves the point
at α = 2 and follows it up in α (:class:`attnphase.theory.ladder.Ladder`, as the split rule's
``solve_point(continuation=True)``), saying so in ``iteration["start"]``; where it cannot get there the failure
stays, ``iteration["continuation"]`` saying where it stopped."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory import branch_end, engine
from attnphase.theory.job import Job
from attnphase.theory.engine import QMCConfig, solve, solve_batch
from attnphase.theory.solver import solve_point
from attnphase.theory.status import Status

CFG = QMCConfig(points=1024, scrambles=4)
L3_A = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))


def _within(g, s, key, k=3.0, floor=0.0):
    """The engine's value within k standard errors (plus ``floor``) of the split rule's."""
    return abs(g.values[key] - getattr(s, key)) <= k * g.errors[key] + floor


@pytest.mark.slow
@pytest.mark.parametrize("omega,branch", [(0.0, "semantic"), (0.3, "positional")])
def test_engine_at_alpha_10_continues_from_alpha_2_and_agrees_with_the_split_rule(omega, branch):
    """L = 2 with the engine (``integrator="qmc"``): the cold start fails at α = 10 (before: the returned
    status), the continuation converges, equal to the split rule's continuation within the error bars."""
    p = ModelParams(omega=omega)
    g = solve(p, 10.0, branch, qmc_config=CFG, stability=False)
    assert g.status is Status.CONVERGED, (g.status, g.iteration)
    assert g.iteration["start"].startswith("continuation from α = 2 (")
    assert g.to_dict()["start"] == g.iteration["start"] and g.alpha == 10.0
    s = solve_point(p, 10.0, branch, stability=False, continuation=True)
    assert s.converged and s.start.startswith("continuation")
    for key in ("q", "theta" if branch == "semantic" else "m", "e_t", "eps_g"):
        assert _within(g, s, key, floor=1e-4 * abs(getattr(s, key))), (key, g.values[key], g.errors[key],
                                                                         getattr(s, key))
    assert _within(g, s, "V", k=4.0), (g.values["V"], g.errors["V"], s.V)


def test_a_continuation_that_cannot_get_there_keeps_the_failure_and_says_where(monkeypatch):
    """Stand-in: every solve above α = 3 fails. The cold start's failure is returned, the continuation's
    stopping point in (2, 3] recorded (and in the CLI's status line)."""
    real = Job.run

    def fails_above_3(self, pts, *a, **kw):
        sols, xs, hist = real(self, pts, *a, **kw)
        bad = [s.alpha > 3.0 for s in sols]
        return [s.__class__(**{**s.__dict__, "status": Status.INVALID_STATE}) if b else s
                for s, b in zip(sols, bad)], xs, hist

    monkeypatch.setattr(Job, "run", fails_above_3)
    cfg = QMCConfig(points=256, scrambles=2, coarse=0)
    g, ok = solve_batch(ModelParams(omega=0.0), [10.0, 1.5], "semantic", qmc_config=cfg, stability=False)
    assert g.status is Status.INVALID_STATE and g.iteration["start"] in ("model", "reference")
    note = g.iteration["continuation"]
    assert note.startswith("continuation from α = 2 stopped at α = ")
    assert 2.0 < float(note.rsplit("α = ", 1)[1]) <= 3.0
    assert ok.status is Status.CONVERGED and "continuation" not in ok.iteration   # α ≤ 2: no continuation


@pytest.mark.slow
def test_L3_semantic_at_alpha_10_is_a_fixed_point_continuous_with_alpha_2_to_8():
    """L = 3 (A = 0.6 I + 0.2 off-diagonal, ω = 0.3): α = 10 failed (``invalid_state``) before. The
    continuation's point is a fixed point (a kicked copy iterates back to it) and lies on the curve through
    α = 2 … 8 (measured, 1024 × 4: q, θ, e_t rise smoothly from α = 2; the line through α = 7, 8 predicts
    α = 10 within 0.7 %, its curvature; here within 1.5 %)."""
    p = ModelParams(L=3, omega=0.3, A=L3_A)
    alphas = [7.0, 8.0, 10.0]
    sols = solve_batch(p, alphas, "semantic", qmc_config=CFG, stability=False)
    assert all(s.status is Status.CONVERGED for s in sols), [s.status for s in sols]
    top = sols[-1]
    assert top.iteration["start"].startswith("continuation from α = 2")
    for key in ("q", "theta", "e_t"):
        lo, hi = sols[0].values[key], sols[1].values[key]
        assert hi + 2.0 * (hi - lo) == pytest.approx(top.values[key], rel=1.5e-2), key
        assert np.all(np.diff([s.values[key] for s in sols]) > 0), key        # monotone in α
    kicked = top.x._replace(q=1.03 * top.x.q, theta=0.97 * top.x.theta, V=1.05 * top.x.V)
    again = solve(p, 10.0, "semantic", qmc_config=CFG, stability=False, init=kicked)
    assert again.status is Status.CONVERGED and again.iteration["start"] == "given"
    for key in ("q", "theta", "V", "e_t", "eps_g"):
        assert again.values[key] == pytest.approx(top.values[key], rel=1e-4), key


def test_a_failed_semantic_point_is_followed_down_from_above_and_its_branch_end_located(monkeypatch):
    """Stand-in for a semantic branch that ends between two α (measured: r = 2, r* = 3, L = 2 between α = 2
    and 2.75, docs/notes/2026-12-05-theory-general.md): every semantic solve below α = 2.6 fails. A point at α = 1.5 is then solved
    at α = 4 and followed DOWN (``branch_end.start_by_descent``; here from the point reached at α = 3: points
    of one model share the descent, largest α first); the failure stays, and
    ``iteration["branch_end"]`` brackets the end, (b, a) with b < 2.6 ≤ a within the ladder's resolution, the same
    words in ``iteration["continuation"]`` (the CLI prints it). Before: ``invalid_state`` with no word on where
    the branch ends. A point above the end (α = 3, failing only from its cold starts) is reached by the same
    continuation and converges."""
    real = Job.run

    def ends_at_2_6(self, pts, *a, **kw):
        sols, xs, hist = real(self, pts, *a, **kw)
        cold = self.backtrack == 0             # at r = 1 only the continuations' jobs have the safeguard on
        bad = [s.alpha < 2.6 or (cold and s.alpha == 3.0) for s in sols]
        return [s.__class__(**{**s.__dict__, "status": Status.INVALID_STATE}) if b else s
                for s, b in zip(sols, bad)], xs, hist

    monkeypatch.setattr(Job, "run", ends_at_2_6)
    cfg = QMCConfig(points=256, scrambles=2, coarse=0)
    low, high = solve_batch(ModelParams(), [1.5, 3.0], "semantic", qmc_config=cfg, stability=False)
    assert low.status is Status.INVALID_STATE
    end = low.iteration["branch_end"]
    b, a = end["between"]
    assert end["from"] == 3.0 and b < 2.6 <= a and a / b < 1.06 and end["points"] == 256   # from α = 3's point
    assert low.iteration["continuation"].startswith("the semantic branch, followed down from α = 3, ends between")
    assert end["partial"] is False                  # every scramble failed: a genuine end at this size
    assert high.status is Status.CONVERGED and high.iteration["start"].startswith("continuation from α = 4.5")


def test_a_descent_that_loses_the_branch_on_some_scrambles_does_not_call_it_the_branch_end(monkeypatch):
    """Stand-in for the measured r = 2, r* = 3, α = 2 descent (docs/notes/2026-12-05-theory-general.md, "The descent in α near a
    branch end"): below α = 2.6 one of the two scrambles fails, the other converges. The bracket is where the
    continuation broke, not where the branch ends (α = 3 converges there while the descent bracketed 3.39–3.41),
    so ``branch_end["partial"]`` is True and the note says "lost", never "ends between". Before: the same note as
    a genuine end."""
    real = Job.run

    def one_scramble_fails_below_2_6(self, pts, *a, **kw):
        sols, xs, hist = real(self, pts, *a, **kw)
        out = []
        for s in sols:
            if s.alpha < 2.6:
                s = s.__class__(**{**s.__dict__, "status": Status.MAX_STEPS,
                                   "iteration": {**(s.iteration or {}), "failed_scrambles": [1]}})
            out.append(s)
        return out, xs, hist

    monkeypatch.setattr(Job, "run", one_scramble_fails_below_2_6)
    cfg = QMCConfig(points=256, scrambles=2, coarse=0)
    (low,) = solve_batch(ModelParams(), [1.5], "semantic", qmc_config=cfg, stability=False)
    end = low.iteration["branch_end"]
    b, a = end["between"]
    assert low.status is not Status.CONVERGED and b < 2.6 <= a and end["partial"] is True
    assert "lost the semantic branch" in end["note"] and "ends between" not in end["note"]
    assert "1 of 2 scrambles" in end["note"] and low.iteration["continuation"] == end["note"]


def test_ladder_descends_below_its_origin_and_keeps_the_failed_value():
    """A target below the origin: steps divide by the ratio, ``reached`` at or below the target, ``failed`` the
    last value that failed (the bracket of a branch's end is (failed, a))."""
    from attnphase.theory.ladder import Ladder
    lad = Ladder(2.0, origin=4.0, started=True)
    assert lad.down and lad.next_value() == pytest.approx(4.0 / 1.5)
    lad.record(lad.next_value(), False)
    v = lad.next_value()
    assert v == pytest.approx(4.0 / 1.5 ** 0.5) and lad.failed == pytest.approx(4.0 / 1.5)
    lad.record(v, True)
    assert lad.a == pytest.approx(v) and not lad.reached
    while lad.climbing:
        lad.record(lad.next_value(), lad.next_value() >= 2.9)      # a branch that ends at 2.9
    assert not lad.reached and lad.gave_up and lad.failed < 2.9 <= lad.a and lad.a / lad.failed < 1.03
    up = Ladder(10.0, started=True)
    assert not up.down and up.next_value() == pytest.approx(3.0)


def _ends_at_2_6(monkeypatch, seen=None):
    """Stand-in: every semantic solve below α = 2.6 fails (``invalid_state``); ``seen`` collects (α, converged)
    of the continuations' solves (at r = 1 only their jobs have the safeguard on)."""
    real = Job.run

    def run(self, pts, *a, **kw):
        sols, xs, hist = real(self, pts, *a, **kw)
        bad = [s.alpha < 2.6 for s in sols]
        if self.backtrack and seen is not None:
            seen.extend((s.alpha, not b) for s, b in zip(sols, bad))
        return [s.__class__(**{**s.__dict__, "status": Status.INVALID_STATE}) if b else s
                for s, b in zip(sols, bad)], xs, hist

    monkeypatch.setattr(Job, "run", run)


def test_the_descent_step_cap_is_said_in_the_branch_end(monkeypatch):
    """``DOWN_MAX_STEPS`` = 2 (stand-in end at α = 2.6): the descent stops after 2 steps, ``branch_end`` says
    ``step_cap`` and its note that the bracket is wider than the tolerance."""
    _ends_at_2_6(monkeypatch)
    monkeypatch.setattr(branch_end, "DOWN_MAX_STEPS", 2)
    cfg = QMCConfig(points=256, scrambles=2, coarse=0)
    g = solve(ModelParams(), 1.5, "semantic", qmc_config=cfg, stability=False)
    end = g.iteration["branch_end"]
    assert g.status is Status.INVALID_STATE and end["status"] == "step_cap" and end["steps"] == 2
    assert "step cap 2: the bracket is wider than 0.01" in end["note"] and end["note"] == g.iteration["continuation"]


def test_points_of_one_model_share_one_descent_that_bisects_without_repeating_a_failure(monkeypatch):
    """Stand-in branch end at α = 2.6 (every semantic solve below it fails), two failed points of one model
    (α = 1.5, 0.5): ONE descent (from α = 4, for α = 1.5) brackets the end within ``DOWN_BRACKET_TOL``,
    with no α solved twice after it failed and never a step below a failure; α = 0.5 gets its bracket
    with no solve (status ``not_tried``); every step is reported to ``progress`` as a ``"continuation"``, each
    retry from another start as a ``"start"``.
    Before: each point descended on its own (the same failed α solved for both, and again after the ratio
    regrew), the bracket ≈ 2.6 % wide, no progress."""
    seen, reports = [], []
    _ends_at_2_6(monkeypatch, seen)
    cfg = QMCConfig(points=256, scrambles=2, coarse=0)
    sols = solve_batch(ModelParams(), [1.5, 0.5], "semantic", qmc_config=cfg, stability=False,
                       progress=reports.append)
    ends = [s.iteration["branch_end"] for s in sols]
    b, a = ends[0]["between"]
    assert ends[0]["status"] == "bracketed" and b < 2.6 <= a and a / b - 1 <= engine.DOWN_BRACKET_TOL
    assert [e["status"] for e in ends[1:]] == ["not_tried"]
    assert all(e["between"] == [b, a] for e in ends[1:]) and all(s.status is Status.INVALID_STATE for s in sols)
    assert sols[1].iteration["continuation"].startswith("no descent for α = 0.5: the descent for α = 1.5 stopped")
    steps = [(v, ok) for v, ok in seen if v != 4.0]                  # the descent's steps (4: its start)
    failed = [v for v, ok in steps if not ok]
    assert len(failed) == len(set(failed)) and len(steps) == ends[0]["steps"] <= 8, steps
    for n, (v, ok) in enumerate(steps):
        assert all(v > f for f, ok_ in steps[:n] if not ok_), steps
    notes = [r.note for r in reports if r.stage == "continuation"]
    assert len(notes) == ends[0]["steps"] + 1 and notes[-1].endswith("bracketed"), notes
    assert "end between" in notes[-1] and notes[0].startswith("continuation from α = 4 to 1.5: started")
    assert any(r.stage == "start" and "solving again from start 2" in r.describe() for r in reports)


def test_a_slow_descent_step_iterates_once_more_before_it_counts_as_failed(monkeypatch):
    """Measured at r = 2, r* = 3: the descent's step 4.5 → 3 ended ``max_steps`` with one scramble at residual
    3.6e-5 (slow, not absent: α = 3 converges from 3.674). Stand-in: α = 3 fails from its cold starts, and the
    upward continuation's start at α = 2 fails, and the descent's first solve at α = 3 ends ``max_steps`` at
    residual 1e-5; it iterates once more from where it
    stopped (with its secant pairs) and the step converges: reached in ONE step, ``iteration["extended"]``.
    Before: the step counted as failed (3 steps: 3 ✗, 3.674 ✓, 3 ✓)."""
    import dataclasses
    real = Job.run
    calls = []

    def slow_at_3(self, pts, x0, cfg, stages, hist=None, **kw):
        sols, xs, h = real(self, pts, x0, cfg, stages, hist=hist, **kw)
        if not self.backtrack or sols[0].alpha == 2.0:    # the cold starts (r = 1: no safeguard), the upward
            return [dataclasses.replace(s, status=Status.INVALID_STATE) for s in sols], xs, h  # continuation
        calls.append((float(sols[0].alpha), hist is not None))
        if sols[0].alpha == 3.0 and hist is None:
            sols = [dataclasses.replace(s, status=Status.MAX_STEPS, residual=1e-5) for s in sols]
        return sols, xs, h

    monkeypatch.setattr(Job, "run", slow_at_3)
    cfg = QMCConfig(points=256, scrambles=2, coarse=0)
    g = solve(ModelParams(), 3.0, "semantic", qmc_config=cfg, stability=False)
    assert g.status is Status.CONVERGED and g.iteration["start"] == "continuation from α = 4.5 (1 steps)"
    assert g.iteration["extended"] and calls == [(4.5, False), (3.0, False), (3.0, True)], calls
