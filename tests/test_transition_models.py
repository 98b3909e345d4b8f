"""transition() for every model: the L = 2 answer unchanged by the refactor (a regression pin), and an L = 3
transition on the real QMC engine at a tiny size."""

import math

import numpy as np
import pytest

from attnphase.model import ModelParams

ALPHA_C_03 = 1.2515293861468606
ALPHA_L_03 = 1.492248488848002
"""Regression pin: ``attnphase theory transition --omega 0.3 --json`` on the pre-refactor code (main at commit
2c6a4e5, 2026-12-06, split rule, defaults); docs/notes/2026-12-03-phase-boundaries.md lists 1.2515 / 1.4922."""


@pytest.mark.slow
def test_l2_alpha_c_alpha_l_unchanged_by_the_refactor():
    from attnphase.phase import transition
    r = transition(ModelParams(omega=0.3))
    assert r.integrator == "split"
    assert abs(r.alpha_c - ALPHA_C_03) < 1e-4 and abs(r.alpha_l - ALPHA_L_03) < 1e-4
    assert r.alpha_c_err is None and "per-point error" in r.alpha_c_err_reason


def test_l3_transition_on_the_engine_at_a_tiny_size():
    """L = 3 (the issue's A) on scrambled Sobol points, 128 × 2, three α's: the branches are followed on the
    engine's states, the survey sees the uninformative point, and α_c comes with an error or a reason."""
    from attnphase.phase import transition
    from attnphase.phase.continuation import phase_qmc
    p = ModelParams(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]], omega=0.3)
    r = transition(p, alphas=[1.0, 1.5, 2.0], qmc_config=phase_qmc(128, 2), refine=False, extend=False,
                   end_xtol=0.25, mixed_alphas=None)
    d = r.to_dict()
    assert d["integrator"] == "qmc" and d["model"]["L"] == 3
    sem = r.semantic
    assert (sem["state"] == "ok").any() and np.isfinite(sem.loc[sem["state"] == "ok", "e_t_err"]).all()
    kinds = set(r.fixed_points["kind"])
    assert "semantic" in kinds and kinds <= {"semantic", "positional", "uninformative", "mixed"}
    if r.alpha_c is not None:
        assert (r.alpha_c_err is not None and math.isfinite(r.alpha_c_err)) or r.alpha_c_err_reason
    else:
        assert r.alpha_c_reason
    assert all(m["kind"].startswith("not searched") for m in r.mixed)
