"""Finite-size scaling (attnphase.scaling): the 1/d fit on synthetic data, the pipeline end to end."""

import json
import subprocess
import sys

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.scaling import OBSERVABLES, fit_inverse_d, plot_scaling, run_scaling

DS = np.array([250.0, 500.0, 1000.0, 2000.0])


def test_fit_recovers_known_parameters_exactly_without_noise():
    f = fit_inverse_d(DS, 0.4 - 12.0 / DS, np.full(4, 1e-3))
    assert f.intercept == pytest.approx(0.4, abs=1e-12) and f.slope == pytest.approx(-12.0, abs=1e-9)
    assert f.chi2 == pytest.approx(0.0, abs=1e-12) and f.dof == 2 and not f.inflated


def test_fit_recovers_known_parameters_with_honest_error_bars():
    """2000 synthetic data sets y = a + b/d + N(0, se²): the estimates are unbiased and ~68 % of the
    intervals intercept ± s.e. contain the true a (the s.e. is neither too small nor too large)."""
    rng = np.random.default_rng(0)
    a, b = 2.3e-3, 0.15
    se = np.array([4e-5, 3e-5, 2e-5, 1.5e-5])
    fits = [fit_inverse_d(DS, a + b / DS + se * rng.standard_normal(4), se) for _ in range(2000)]
    ai = np.array([f.intercept for f in fits])
    bi = np.array([f.slope for f in fits])
    s = np.array([f.intercept_se for f in fits])
    assert abs(ai.mean() - a) < 3 * ai.std() / np.sqrt(ai.size)
    assert abs(bi.mean() - b) < 3 * bi.std() / np.sqrt(bi.size)
    cover = np.mean(np.abs(ai - a) <= s)
    assert 0.6 < cover < 0.8, cover


def test_fit_rejects_bad_input():
    with pytest.raises(ParameterError, match="ds"):
        fit_inverse_d([1000.0], [0.1], [0.01])
    with pytest.raises(ParameterError, match="ds"):
        fit_inverse_d([500.0, 500.0], [0.1, 0.2], [0.01, 0.01])
    with pytest.raises(ParameterError, match="ds"):
        run_scaling(ModelParams(), alpha=1.0, init="semantic", ds=[100], instances=2)


def test_run_scaling_small_end_to_end(tmp_path):
    res = run_scaling(ModelParams(), alpha=1.5, init="semantic", ds=[16, 24], instances=2, theory=False)
    assert [p["d"] for p in res.per_d] == [16, 24]
    assert set(res.fits) == set(OBSERVABLES)
    rows = res.table()
    assert len(rows) == len(OBSERVABLES) and all(r["theory"] is None for r in rows)
    json.dumps(res.to_dict())
    plot_scaling(res, tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 1000


def test_scaling_cli_bad_input_exits_2():
    from attnphase.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["scaling", "--ds", "1000"])
    assert exc.value.code == 2
