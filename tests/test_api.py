"""The notebook API (issue 12 §9): top-level entry points, .to_frame(), provenance, and the executed tour."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

import attnphase

TOUR = Path(__file__).resolve().parents[1] / "examples" / "tour.py"


def test_top_level_names_and_modules_coexist():
    from attnphase.simulate import TrainConfig          # the module still works as a module
    assert attnphase.simulate.TrainConfig is TrainConfig and callable(attnphase.simulate)
    for name in ("solve", "curve", "transition", "phase_diagram", "baseline", "Result"):
        assert callable(getattr(attnphase, name)), name
    with pytest.raises(AttributeError):
        attnphase.no_such_thing  # noqa: B018


def test_simulate_api_frame_and_provenance_match_library():
    from attnphase.simulate import TrainConfig, simulate as lib
    r = attnphase.simulate(alpha=1.0, d=16, steps=15, instances=2, test_samples=200, omega=0.2, seed=5)
    ref = lib(attnphase.ModelParams(omega=0.2), alpha=1.0, d=16, config=TrainConfig(steps=15), instances=2,
              seed=5, test_samples=200)
    np.testing.assert_array_equal(r.e_t, ref.e_t)       # same seeds, same numbers
    df = r.to_frame()
    assert len(df) == 2 and (df.omega == 0.2).all() and {"m", "theta_over_sigma2", "eps_g"} <= set(df.columns)
    env = r.provenance["environment"]
    assert env["attnphase"] == attnphase.__version__ and "git_dirty" in env
    assert r.provenance["seeds"]["base_seed"] == 5


def test_baseline_and_solve_results():
    b = attnphase.baseline(omega=0.3)
    assert abs(b.eps_lin - 0.0019714) < 1e-6              # regression pin of baseline.eps_lin (MODEL.md §5)
    assert b.to_frame().eps_lin.iloc[0] == b.eps_lin and b.provenance["integrator"]["nodes"] == 80
    s = attnphase.solve(2.0, "semantic", omega=0.3, nodes=4)
    assert s.converged and s.to_frame().q.iloc[0] == s.q
    assert s.provenance["convergence"]["status"] == s.status and s.provenance["git"] == s.provenance["environment"]["git"]
    with pytest.raises(attnphase.ParameterError, match="integrator"):
        attnphase.solve(2.0, "semantic", L=3, integrator="split")    # the split rule is for L = 2, r = 1 only
    with pytest.raises(attnphase.ParameterError, match="nodes"):
        attnphase.solve(2.0, "semantic", L=3, nodes=4)               # auto -> QMC: nodes is not its knob


def test_solve_and_curve_route_to_the_general_engine():
    """``integrator="qmc"`` (``auto`` beyond L = 2, r = 1) gives the engine's numbers, with error bars and the
    QMC resolution in the provenance; a curve is one batch with one row per α."""
    from attnphase.theory.engine import QMCConfig, solve as engine_solve
    cfg = QMCConfig(points=128, scrambles=2)
    s = attnphase.solve(2.0, "semantic", omega=0.3, integrator="qmc", qmc_config=cfg)
    ref = engine_solve(attnphase.ModelParams(omega=0.3), 2.0, "semantic", qmc_config=cfg)
    assert s.status is ref.status and s.values["e_t"] == ref.values["e_t"]
    df = s.to_frame()
    assert df.e_t.iloc[0] == ref.values["e_t"] and "e_t_err" in df.columns
    assert s.provenance["integrator"] == {"rule": "qmc", "qmc_points": 128, "scrambles": 2, "seeds": [0, 1],
                                         "qmc_target": 0.0}
    c = attnphase.curve([1.8, 2.0], "semantic", omega=0.3, integrator="qmc", qmc_config=cfg)
    assert list(c.to_frame()["alpha"]) == [1.8, 2.0] and len(c.value) == 2


def test_tour_runs(capsys):
    runpy.run_path(str(TOUR), run_name="__main__")
    out = capsys.readouterr().out
    assert "L=3, r=2" in out and "ε_lin(ω=0.3) = 0.00197" in out and out.count("status = converged") == 2


def test_curve_runs_on_the_continuation_engine():
    """``attnphase.curve`` follows the branch with the one engine: every row has a point state and the
    provenance counts the states and lists the unconverged α (none here)."""
    c = attnphase.curve([1.8, 2.0], "semantic", omega=0.3, nodes=4)
    df = c.to_frame()
    assert list(df["alpha"]) == [1.8, 2.0] and set(df["state"]) == {"ok"}
    assert (df["theta"] > 0).all() and (df["m"] == 0).all()
    assert c.provenance["convergence"] == {"all_converged": True, "unconverged_alphas": [], "states": {"ok": 2}}
