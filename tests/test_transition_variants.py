"""α_c where the global minimum changes kind (σ, λ away from the defaults; MODEL.md §6 "Transition"):
the global-minimum logic on hand-made fixed-point tables, and the real theory at σ = 0.7 and at a mixed point."""

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from attnphase.model import ModelParams
from attnphase.phase.continuation import Branch, BranchEnd, BranchPoint, PointState
from attnphase.phase.kinds import fixed_point_kind
from attnphase.phase.stability import global_minimum
from attnphase.phase.global_min import global_switch

COLS = ["alpha", "kind", "e_t", "eps_g", "q", "m", "theta", "V", "stable", "stability", "source"]


def _fps(rows):
    return pd.DataFrame([dict(zip(COLS, r)) for r in rows], columns=COLS)


def _sem_branch(points, end):
    """A semantic Branch whose valid points are (alpha, theta) pairs, with the given end."""
    pts = [BranchPoint(SimpleNamespace(alpha=a, theta=t, q=0.2, m=0.0, branch="semantic"), PointState.OK)
           for a, t in points]
    return {"semantic": Branch("semantic", ModelParams(sigma=0.7), pts, end=end)}


def test_global_minimum_ignores_unstable_points():
    fps = _fps([(0.5, "uninformative", 2e-3, 0.016, 0.1, 0, 0, 40, True, 0.9, ""),
                (0.5, "semantic", 1e-3, 0.010, 0.1, 0, 0.1, 40, False, 1.3, ""),   # a saddle: lower, not used
                (0.8, "uninformative", 3e-3, 0.017, 0.2, 0, 0, 40, False, 1.1, ""),
                (0.8, "semantic", 2.9e-3, 0.008, 0.2, 0, 0.2, 20, True, -1.0, "")])
    gm = global_minimum(fps)
    assert list(gm["global_kind"]) == ["uninformative", "semantic"]
    assert gm["e_t_global"].iloc[0] == 2e-3


def test_continuous_birth_gives_alpha_c_where_theta_squared_vanishes():
    """σ = 0.7-like: uninformative global up to a continuous birth of the semantic branch, θ² ∝ α − α_c."""
    a_c = 0.641
    fps = _fps([(0.6, "uninformative", 2.0e-3, 0.016, 0.15, 0, 0, 44, True, 0.97, ""),
                (0.7, "uninformative", 2.43e-3, 0.0165, 0.17, 0, 0, 40, False, 1.03, ""),
                (0.7, "semantic", 2.42e-3, 0.0117, 0.17, 0, 0.19, 31, True, -0.5, "")])
    gm = global_minimum(fps)
    pts = [(a, 0.49 * math.sqrt(2.44 * (a - a_c))) for a in (0.65, 0.675, 0.7)]
    end = BranchEnd(0.644, PointState.ENDED, 0.65, 0.6375)
    sw = global_switch(gm, fps, _sem_branch(pts, end))
    assert sw.kind == "continuous" and sw.against == "uninformative"
    assert sw.alpha_c == pytest.approx(a_c, abs=1e-9)


def test_crossing_between_stable_points_and_none_when_never_semantic():
    fps = _fps([(1.0, "positional", 1.0e-3, 0.003, 0.1, 0.2, 0, 12, True, 0.2, ""),
                (1.0, "semantic", 1.2e-3, 0.002, 0.1, 0, 0.1, 12, True, 0.5, ""),
                (1.1, "positional", 1.1e-3, 0.003, 0.1, 0.2, 0, 12, True, 0.2, ""),
                (1.1, "semantic", 1.0e-3, 0.002, 0.1, 0, 0.1, 12, True, 0.5, "")])
    sw = global_switch(global_minimum(fps), fps, _sem_branch([], None))
    assert sw.kind == "crossing" and sw.against == "positional"
    assert sw.alpha_c == pytest.approx(1.0 + 0.1 * 2 / 3)  # Δe_t = +0.2e-3 → −0.1e-3, linear
    only_pos = fps[fps["kind"] == "positional"]
    assert global_switch(global_minimum(only_pos), only_pos, _sem_branch([], None)) is None


def test_fixed_point_kind_by_overlaps():
    s = 0.5
    assert fixed_point_kind(SimpleNamespace(q=0.1, m=0.2, theta=0.05), s) == "mixed"
    assert fixed_point_kind(SimpleNamespace(q=0.1, m=1e-9, theta=0.05), s) == "semantic"
    assert fixed_point_kind(SimpleNamespace(q=0.1, m=0.2, theta=0.0), s) == "positional"
    assert fixed_point_kind(SimpleNamespace(q=0.1, m=0.0, theta=-1e-8), s) == "uninformative"


def test_uninformative_point_turns_unstable_between_0p6_and_0p7_at_sigma_0p7():
    """σ = 0.7 (ω = 0.3, λ = 0.01): the uninformative point (m = θ = 0) is the stable fixed point at α = 0.6 and a
    saddle at α = 0.7 — the semantic branch splits off it in between (α_c ≈ 0.642, docs/notes/2026-12-03-phase-boundaries.md)."""
    from attnphase.theory import solve_point
    p = ModelParams(omega=0.3, sigma=0.7, lam=0.01)
    below, above = (solve_point(p, a, "uninformative", nodes=4, max_steps=100) for a in (0.6, 0.7))
    assert below.converged and above.converged
    assert below.stability < 1.0 < above.stability


@pytest.mark.slow
def test_sigma_0p7_alpha_c_is_the_continuous_birth_of_the_semantic_branch():
    """The global minimum is the uninformative point below α_c and the semantic fixed point above; α_c is where
    the semantic branch splits off the uninformative point (θ → 0), not an e_t crossing."""
    from attnphase.phase import transition
    r = transition(ModelParams(omega=0.3, sigma=0.7, lam=0.01), alphas=[0.6, 0.7], refine=False, mixed_alphas=[])
    # the followed branch stops at 0.6504 with θ = 0.27·σ√q (just above BIRTH_OVERLAP): since the competitor's
    # crossing is located by solves (0.6432, below that end) the kind reads "competitor loses stability"
    assert r.alpha_c_against == "uninformative"
    assert r.alpha_c_kind in ("continuous", "competitor loses stability")
    assert 0.63 < r.alpha_c < 0.66
    kinds = {row["alpha"]: row["global_kind"] for _, row in r.global_minimum.iterrows()}
    assert kinds[0.6] == "uninformative" and kinds[0.7] == "semantic"
    fp = r.fixed_points
    sem = fp[(fp["alpha"] == 0.7) & (fp["kind"] == "semantic")].iloc[0]
    uni = fp[(fp["alpha"] == 0.7) & (fp["kind"] == "uninformative")].iloc[0]
    assert sem["stable"] and not uni["stable"] and sem["e_t"] < uni["e_t"]


@pytest.mark.slow
def test_mixed_point_is_a_fixed_point_of_the_unpinned_map():
    """Default σ, λ at ω = 0.3, α = 1.25 (≈ α_c): between the two valid pure branches the root finder finds a mixed
    point (a saddle between them); it has m ≠ 0 and θ ≠ 0 and is a fixed point of the full, unpinned map."""
    from attnphase.phase.stability import MIXED_TOL, _free_map, mixed_search
    from attnphase.theory import solve_point
    p = ModelParams(omega=0.3)
    sem, pos = (solve_point(p, 1.25, b, nodes=4) for b in ("semantic", "positional"))
    rows = [r for r in mixed_search(p, 1.25, sem, pos, nodes=4, fractions=(0.5,)) if r["mixed"]]
    assert rows, "no mixed fixed point found"
    r = rows[0]
    x = np.array([r["q"], r["m"], r["V"], r["theta"]])
    scale = MIXED_TOL * p.sigma * math.sqrt(x[0])
    assert x[1] > scale and x[3] > scale
    fx = _free_map(p, 1.25, 4)(x)
    assert np.max(np.abs(fx - x) / np.abs(x)) < 1e-5
