"""The global minimum over a survey of fixed points (phase/stability.survey, phase/global_min.py) where a free
solve meets the QMC noise floor: the L = 3, ω = 0.3 case of docs/guides/transitions-any-model.md on a stand-in
solver (the measured per-scramble states, tests/phase/_noise_points.py)."""

import math

import pytest

from attnphase.phase.continuation import Branch, BranchEnd, BranchPoint, PointState, unsolved_point
from attnphase.phase.global_min import global_switch, mark_ties
from attnphase.phase.stability import global_minimum, survey

from _noise_points import L3, NOISE_L3, qmc_solution

UNI = {0.2: (1.70e-3, 0.94), 0.25: (1.9637e-3, 1.056), 0.3: (2.25e-3, 1.13)}
"""The uninformative point per α: (e_t, growth factor against θ, ± 0.045) — ω = 0.3's at 256 × 4 (e_t at 0.25
measured, the factors of docs/guides/transitions-any-model.md; e_t elsewhere made up, monotone)."""


def _uninformative(a):
    e_t, g = UNI[round(a, 9)]
    x = NOISE_L3.copy()
    x[:, 1:5] = 0.0
    return qmc_solution(L3, a, "uninformative", x, e_t, 1.3e-5, g, 0.045)


def _solver(params, alpha, branch, *, init=None, **kw):
    if branch == "uninformative":
        return _uninformative(alpha)
    assert branch == "free" and round(alpha, 9) == 0.25      # the only α without a stable fixed point
    return qmc_solution(L3, alpha, "free", NOISE_L3, 1.9699e-3)


def _branches():
    """The semantic branch valid from 0.3 (θ = 0.043), its solve failing below (an end at 0.275); the positional
    branch collapsed onto the uninformative point at every α."""
    sem = qmc_solution(L3, 0.3, "semantic", [[0.05, 0.0, 0.0, 0.0, 0.043, 30.0]] * 4, 2.15e-3, 1.3e-5, 0.5, 0.05)
    s = [unsolved_point(L3, a, "semantic", None, PointState.ENDED, "beyond the end") for a in (0.2, 0.25)]
    pos = [unsolved_point(L3, a, "positional", None, PointState.COLLAPSED, "collapsed") for a in (0.2, 0.25, 0.3)]
    return {"semantic": Branch("semantic", L3, s + [BranchPoint(sem, PointState.OK)],
                               end=BranchEnd(0.275, PointState.ENDED, 0.3, 0.25)),
            "positional": Branch("positional", L3, pos)}


def _survey():
    br = _branches()
    fps = survey(L3, br, [0.2, 0.25, 0.3], solver=_solver)
    return br, fps, mark_ties(global_minimum(fps), fps)


def test_a_noise_floor_mixed_point_is_not_a_distinct_competitor():
    """At α = 0.25 no stable pinned point is known (the uninformative point's growth factor is 1.056 ± 0.045) and
    the free solve from the uninformative point ends at m, θ within their noise: it is the uninformative point,
    not a "mixed" global minimum, so the semantic point takes over from the uninformative one (a false fold
    against "mixed" before)."""
    br, fps, gm = _survey()
    assert list(gm["global_kind"]) == ["uninformative", "none", "semantic"]
    assert "mixed" not in set(fps["kind"])
    assert list(fps.loc[fps["alpha"] == 0.25, "kind"]) == ["uninformative"]       # one row: the pinned point's
    sw = global_switch(gm, fps, br)
    assert sw is not None and sw.against == "uninformative"


def test_the_reclassification_is_recorded():
    from attnphase.phase.global_min import reclassification_notes
    _, fps, gm = _survey()
    rec = list(gm["reclassified"])
    assert rec[0] == rec[2] == "" and rec[1].startswith("free from the uninformative point + m, θ: mixed → "
                                                        "uninformative (m = 0.0139, θ = 0.0273;")
    (note,) = reclassification_notes(fps)
    assert note.startswith("α = 0.25, free from the uninformative point + m, θ: mixed → uninformative")
    assert "m at the noise floor" in note and note.endswith("the uninformative point seen through the QMC noise, "
                                                         "not a distinct fixed point")


def test_a_reclassified_point_without_a_pinned_one_of_its_kind_stays_a_row():
    """Where no point of the reclassified kind is known at that α (the semantic branch's solve failed there), the
    free point is one of that kind that the continuation missed: a row of its own, stable (found by a damped
    iteration)."""
    from attnphase.phase.stability import survey as survey_
    xs = NOISE_L3.copy()
    xs[:, 4] = [0.100, 0.101, 0.099, 0.1005]                # θ resolved, m not: the semantic point

    def solver(params, alpha, branch, **kw):
        if branch == "free":
            return qmc_solution(L3, alpha, "free", xs, 1.95e-3)
        return _uninformative(alpha)

    fps = survey_(L3, _branches(), [0.25], solver=solver)
    row = fps[fps["kind"] == "semantic"]
    rec = row["reclassified"].iloc[0]
    assert len(row) == 1 and bool(row["stable"].iloc[0]) and "mixed → semantic" in rec
    assert "m at the noise floor" in rec and "θ" not in rec.split("m at the noise floor")[1]
    assert global_minimum(fps)["global_kind"].tolist() == ["semantic"]


@pytest.mark.slow
def test_the_r2_mixed_point_stays_the_global_minimum():
    """r = 2, ω = 0.3 on the engine (128 × 2 points, docs/guides/transitions-any-model.md "r = 2"): the free
    solves find the mixed point (m and θ both resolved), the global minimum at α = 2 and 3 — not reclassified."""
    from attnphase.model import ModelParams
    from attnphase.phase import transition
    from attnphase.phase.continuation import phase_qmc
    r = transition(ModelParams(r=2, omega=0.3), alphas=[2.0, 3.0], qmc_config=phase_qmc(128, 2), end_xtol=0.25,
                   refine=False, mixed_alphas=[], extend=False)
    gm, fps = r.global_minimum, r.fixed_points
    assert list(gm["global_kind"]) == ["mixed", "mixed"] and not (gm["reclassified"] != "").any()
    free = fps[fps["source"].str.startswith("free")]
    assert set(free["kind"]) == {"mixed"} and not (free["reclassified"] != "").any()
    # α = 2: one free solve has its two scrambles on different fixed points (‖M_s‖ = 0.22, 0.015): not noise
    assert (free["m"] > 0.1).all() and (free["theta"] > 0.08).all()
    assert not any("seen through the QMC noise" in n for n in r.notes)
