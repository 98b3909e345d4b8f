"""A branch's "fold" that is a failure of the iteration (``follow_branch``'s ``walk_past`` policy, phase/walk.py):
the L = 3, ω = 0.4 case of
docs/guides/transitions-any-model.md on a stand-in solver — a semantic branch that exists down to its birth from
the uninformative point (θ² ∝ α − 0.3), whose solves fail at isolated α's (a band (0.62, 0.72), as 0.7 and 0.65
at 256 × 4 points), below which no stable fixed point was known."""

import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from attnphase.model import ModelParams
from attnphase.phase.continuation import PointState, follow_branch, unsolved_point
from attnphase.phase.transition import transition
from attnphase.theory.stepping import WalkPast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _stand_in_point import ScalarStandInPoint  # noqa: E402

P = ModelParams(omega=0.3)
BIRTH, HOLE = 0.3, (0.62, 0.72)


def _theta(a):
    return 0.2 * math.sqrt(max(a - BIRTH, 0.0))


def solver(params, alpha, branch, *, nodes=None, init=None, max_steps=300, stability=True, **kw):
    """semantic: θ(α) above the birth, collapsed below it, not converged inside HOLE; the uninformative point
    (also the collapsed positional branch): its θ-factor crosses +1 at the birth; free: never converges."""
    a = float(alpha)
    uni_factor = 0.8 + (a - 0.2) * 2.0                         # +1 at α = 0.3
    if branch == "semantic":
        conv = not HOLE[0] < a < HOLE[1]
        th = _theta(a)
        return ScalarStandInPoint(a, branch, params, 0.1, 0.0, 3.0, th, 0.1, 0.0, 0.05, 0.01, 0.02,
                                  0.01 * a - 0.001 * th ** 2, conv, 10 if conv else max_steps, 1e-7 if conv else 1e-2,
                                  "converged" if conv else "not converged", 0.5 if conv else None, conv, 4)
    conv = branch != "free"
    return ScalarStandInPoint(a, branch, params, 0.1, 0.0, 3.0, 0.0, 0.1, 0.0, 0.05, 0.0, 0.03, 0.01 * a, conv, 10,
                              1e-7, "converged" if conv else "not converged", uni_factor, uni_factor <= 1.0, 4)


ALPHAS = [1.1, 0.9, 0.7, 0.5, 0.4, 0.2]


def test_without_the_walk_the_failures_end_the_branch():
    """The mutant of the policy (``walk_past=None``): the band of failures reads as a fold (``ended``), nothing
    is solved past it and no walk is recorded."""
    br = follow_branch(P, ALPHAS, "semantic", nodes=4, solver=solver, min_step=0.05)
    assert br.end.kind is PointState.ENDED and br.end.alpha_valid > 0.7      # the false fold
    assert [p.state for p in br.points][3:] == [PointState.ENDED] * 3 and br.walks == []


def test_the_walk_follows_the_branch_past_a_false_fold():
    br = follow_branch(P, ALPHAS, "semantic", nodes=4, solver=solver, min_step=0.05, walk_past=WalkPast())
    fc, = br.walks
    assert fc is not None and not fc.real and fc.fold > 0.7
    assert {0.5, 0.4} <= set(fc.solved) and 0.7 in fc.failed
    assert [p.state for p in br.points][3:5] == [PointState.OK, PointState.OK]
    assert br.points[3].theta == pytest.approx(_theta(0.5))
    assert br.end.kind is PointState.COLLAPSED and br.end.alpha_valid > BIRTH >= br.end.alpha_invalid
    assert br.points[5].state is PointState.COLLAPSED
    assert "is no fold" in fc.note


def test_the_walk_keeps_a_real_fold():
    def no_lower(params, alpha, branch, **kw):
        s = solver(params, alpha, branch, **kw)
        return s if alpha > HOLE[0] else solver(params, 0.7, branch, **kw).__class__(
            *[getattr(s, f) if f != "converged" else False for f in s.__dataclass_fields__])
    plain = follow_branch(P, [1.1, 0.9, 0.7, 0.5], "semantic", nodes=4, solver=no_lower, min_step=0.05)
    br = follow_branch(P, [1.1, 0.9, 0.7, 0.5], "semantic", nodes=4, solver=no_lower, min_step=0.05,
                       walk_past=WalkPast())
    fc, = br.walks
    assert fc.real and not fc.solved and br.end == plain.end and br.end.kind is PointState.ENDED
    assert [p.state for p in br.points] == [p.state for p in plain.points] and br.solves > plain.solves
    assert fc.note.startswith("the semantic branch's end at") and "kept" in fc.note and "0.6" in fc.note


@pytest.mark.parametrize("check", [True, False])
def test_transition_finds_the_global_minimum_past_a_false_fold(check):
    """Without the walk no stable fixed point is known on [0.3, 0.7] (the uninformative point a saddle, the
    semantic branch lost at its false fold) and α_c is the competitor's loss of stability; with it the semantic
    point is the global minimum there and α_c its continuous birth from the uninformative point."""
    r = transition(P, alphas=[0.2, 0.5, 0.7, 0.9, 1.1], solver=solver, refine=False, mixed_alphas=[], extend=False,
                   fold_check=check, end_xtol=0.05)
    gm = r.global_minimum.set_index("alpha")["global_kind"]
    if check:
        assert gm[0.5] == "semantic" and gm[0.7] == "none"     # 0.7 lies in the band where every solve fails
        assert set(gm[(gm.index > 0.3) & (gm.index < 0.7)]) == {"semantic"}    # the walk's α's: surveyed
        assert r.alpha_c_kind == "continuous" and r.alpha_c == pytest.approx(BIRTH, abs=0.06)
        assert any("is no fold" in n for n in r.notes)
    else:
        assert gm[0.5] == "none" and r.alpha_c_kind == "competitor loses stability"


def test_a_walked_end_is_not_walked_again_with_the_same_alphas():
    """transition walks the ``ended`` ends again after every extension (``follow_branch`` from the valid points
    before the end, ``end`` given): an end already walked with the same α's past it is not walked again (its
    solves and note would repeat); more α's past it are walked anew."""
    from attnphase.phase.transition import _walk_ends, _walk_key

    calls = []

    def no_lower(params, alpha, branch, **kw):
        calls.append(alpha)
        s = solver(params, alpha, branch, **kw)
        return s if alpha > HOLE[0] else s.__class__(
            *[getattr(s, f) if f != "converged" else False for f in s.__dataclass_fields__])
    br = follow_branch(P, [1.1, 0.9, 0.7, 0.5], "semantic", nodes=4, solver=no_lower, min_step=0.05,
                       walk_past=WalkPast())
    assert len(br.walks) == 1 and br.walks[0].real
    walked = {_walk_key(br)}
    kw = dict(nodes=4, solver=no_lower, min_step=0.05)
    n = len(calls)
    assert _walk_ends(P, {"semantic": br}, WalkPast(), kw, None, walked) == [] and len(calls) == n
    br.points.append(unsolved_point(P, 0.45, "semantic", 4, PointState.ENDED, "beyond the end"))   # one more α
    again = _walk_ends(P, {"semantic": br}, WalkPast(), kw, None, walked)
    assert len(again) == 1 and again[0].real and len(calls) > n


def test_the_walk_cures_a_stall_as_every_solve_of_the_branch():
    """A walk's solve that stalls at the coarse rule's noise floor (residual within ``STALL_FACTOR·rtol``) is
    repeated at a finer order (``follow_branch``'s stall cure): here α = 0.5 stalls at nodes = 4 and converges at
    6; without the cure it would be a failure of the walk."""
    def stalls(params, alpha, branch, *, nodes=None, **kw):
        s = solver(params, alpha, branch, nodes=nodes, **kw)
        if branch == "semantic" and abs(alpha - 0.5) < 1e-9 and (nodes or 4) <= 4:
            return replace(s, converged=False, residual=5e-5, status="not converged", stability=None)
        return replace(s, nodes=nodes or 4)
    br = follow_branch(P, ALPHAS, "semantic", nodes=4, solver=stalls, min_step=0.05, walk_past=WalkPast())
    fc, = br.walks
    assert 0.5 in fc.solved and br.points[3].state is PointState.OK and br.points[3].nodes == 6
    assert "after a stall" in br.points[3].status
