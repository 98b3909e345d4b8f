"""The kind of a free solve's fixed point (phase/kinds.py): by size alone, and by size and significance against
the integration error — a "mixed" point whose m (or θ) the scrambles do not resolve is the pinned point seen
through the QMC noise."""

from types import SimpleNamespace

import numpy as np

from attnphase.model import ModelParams
from attnphase.phase.kinds import fixed_point_kind, free_point_kind

from _noise_points import L3, NOISE_L3, qmc_solution

R2 = ModelParams(r=2, omega=0.3)
MIXED_R2 = np.array([[0.079075, -0.001171, -0.001171, 0.016674, 0.000052, 0.211256, 0.128052, 0.0, 15.331212,
                      -0.803355, -0.803355, 14.249707],
                     [0.084599, -0.000494, -0.000494, 0.016767, -0.00066, 0.212474, 0.135207, 0.0, 13.022025,
                      -0.573006, -0.573006, 14.136225]])
"""r = 2, L = 2, ω = 0.3, α = 2, 128 × 2 points: the free solve from the model's start (q, M, θ, V per scramble;
bench/investigations/noise_floor_mixed_point.py --r2): the mixed point, the global minimum there (m = 0.212,
θ = 0.132, docs/guides/transitions-any-model.md "r = 2")."""


def _sol(params, xs):
    return qmc_solution(params, 0.25, "free", xs, 2e-3)


def test_noise_floor_mixed_point_is_the_uninformative_point():
    """The measured L = 3 free point (m = 0.014, θ = 0.027 at 256 × 4): "mixed" by size, but neither m nor θ is
    resolved by the scrambles (θ changes sign between them, ‖M_s‖ spreads by 43 %) — the uninformative point."""
    s = _sol(L3, NOISE_L3)
    assert fixed_point_kind(s, L3.sigma) == "mixed"
    k = free_point_kind(s, L3.sigma)
    assert (k.by_size, k.kind, k.reclassified) == ("mixed", "uninformative", True)
    assert k.note.startswith("mixed → uninformative") and "m at the noise floor" in k.note
    assert "θ at the noise floor" in k.note or "θ not significant" in k.note


def test_a_resolved_theta_makes_it_semantic_and_a_resolved_m_positional():
    xs = NOISE_L3.copy()
    xs[:, 4] = [0.100, 0.101, 0.099, 0.1005]               # θ the same on every scramble: resolved
    k = free_point_kind(_sol(L3, xs), L3.sigma)
    assert (k.by_size, k.kind) == ("mixed", "semantic") and "m at the noise floor" in k.note
    assert "θ at the noise floor" not in k.note and "θ not significant" not in k.note
    xs = NOISE_L3.copy()
    xs[:, 1:4] = [0.10, -0.05, -0.05]                      # M the same on every scramble: resolved
    k = free_point_kind(_sol(L3, xs), L3.sigma)
    assert (k.by_size, k.kind) == ("mixed", "positional") and "θ at the noise floor" in k.note
    assert "m not significant" not in k.note


def test_with_m_at_the_noise_floor_theta_must_be_significant_to_count():
    """The same α in another run (the transition's survey): one scramble's θ (0.044) just beyond the reach of
    θ = 0 (2 × 0.1 √q = 0.041), the scrambles still not resolving it — θ is not significant, so the point is
    uninformative (semantic only with a significant θ)."""
    xs = NOISE_L3.copy()
    xs[2, 4] = -0.044
    k = free_point_kind(_sol(L3, xs), L3.sigma)
    assert (k.by_size, k.kind) == ("mixed", "uninformative")
    assert "m at the noise floor" in k.note and "θ not significant" in k.note


def test_a_genuine_mixed_point_stays_mixed():
    """The measured r = 2 mixed point: both overlaps resolved on two scrambles (‖θ_s‖ = 0.128, 0.135) — not
    reclassified."""
    k = free_point_kind(_sol(R2, MIXED_R2), R2.sigma)
    assert (k.kind, k.reclassified, k.note) == ("mixed", False, "")


def test_scrambles_on_different_fixed_points_are_not_noise():
    """r = 2, ω = 0.3, α = 2 at 128 × 2 (the survey's free solve from the semantic saddle): one scramble on the
    mixed point (‖M_s‖ = 0.21), the other next to the semantic one (0.015). The scrambles do not resolve m, but
    it is not at the noise floor (one scramble far beyond the reach of M = 0): the point stays mixed."""
    xs = MIXED_R2.copy()
    xs[1, 4:6] = [0.0106, 0.0106]                          # ‖M‖ = 0.015 on the second scramble
    k = free_point_kind(_sol(R2, xs), R2.sigma)
    assert (k.kind, k.reclassified) == ("mixed", False)


def test_without_per_scramble_states_the_kind_by_size_stands():
    """The split rule (L = 2, r = 1) and stand-in solvers give no per-scramble states: the answers there are
    those of the size rule (unchanged)."""
    p = ModelParams(omega=0.3)
    for raw in (None, SimpleNamespace(scramble_x=None), SimpleNamespace(scramble_x=NOISE_L3[:1])):
        s = SimpleNamespace(q=0.1, m=0.01, theta=0.02, params=p, raw=raw)
        k = free_point_kind(s, p.sigma)
        assert (k.kind, k.reclassified) == ("mixed", False)
