"""The paper's empirical diagram report (attnphase.empirical_diagram) on synthetic per-instance tables."""

import math

import numpy as np
import pandas as pd
import pytest

from attnphase.empirical_diagram import cell_table, plot_empirical_diagram, plot_slices
from attnphase.errors import ParameterError


def _synthetic(rng):
    """e_t(semantic) − e_t(positional) changes sign at alpha = 1 + omega (a known 'transition')."""
    rows = []
    for omega in (0.1, 0.3):
        for alpha in (0.5, 1.0, 1.5, 2.0):
            for init, shift in (("semantic", +1.0), ("positional", -1.0)):
                for _ in range(6):
                    e = 2e-3 + shift * 1e-4 * (1 + omega - alpha) + 1e-6 * rng.standard_normal()
                    rows.append(dict(alpha=alpha, omega=omega, init=init, e_t=e, converged=True))
    return pd.DataFrame(rows)


def test_cell_table_signs_and_errors(tmp_path):
    t = cell_table(_synthetic(np.random.default_rng(0)))
    assert len(t) == 8 and (t.n_semantic == 6).all() and (t.converged_positional == 6).all()
    expected = -2e-4 * (1 + t.omega - t.alpha)
    assert np.all(np.abs(t.delta_e_t - expected) <= 4 * t.delta_se + 1e-12)
    assert np.all(t.delta_se > 0) and np.all(t.delta_se < 2e-6)
    lines = pd.DataFrame(dict(omega=[0.1, 0.3], alpha_c=[1.1, 1.3], alpha_l=[1.4, 1.6]))
    plot_empirical_diagram(t, tmp_path / "d.png", theory_lines=lines)
    assert (tmp_path / "d.png").stat().st_size > 1000
    plot_slices(t, tmp_path / "s.png", theory_lines=lines)
    assert (tmp_path / "s.png").stat().st_size > 1000


def test_paired_instances_give_the_paired_standard_error():
    """Same (seed, instance) for both starts: a large shared instance effect cancels in the difference."""
    rng = np.random.default_rng(1)
    rows = []
    for i in range(10):
        base = 2e-3 + 1e-4 * rng.standard_normal()  # instance-to-instance spread, shared by both starts
        for init, shift in (("semantic", 0.0), ("positional", 3e-5)):
            rows.append(dict(alpha=1.0, omega=0.3, init=init, seed=0, instance=i,
                             e_t=base + shift + 1e-7 * rng.standard_normal()))
    t = cell_table(pd.DataFrame(rows))
    assert bool(t.paired.iloc[0]) and t.delta_e_t.iloc[0] == pytest.approx(3e-5, abs=2e-7)
    assert t.delta_se.iloc[0] < 1e-7 < math.hypot(t.sem_semantic.iloc[0], t.sem_positional.iloc[0]) / 100
    t2 = cell_table(pd.DataFrame(rows).drop(columns=["instance"]))
    assert not bool(t2.paired.iloc[0]) and t2.delta_se.iloc[0] > 1e-5


def test_cell_with_one_start_missing_is_nan():
    df = pd.DataFrame(dict(alpha=[1.0, 1.0], omega=[0.3, 0.3], init=["semantic", "semantic"], e_t=[1.0, 2.0]))
    t = cell_table(df)
    assert math.isnan(t.delta_e_t.iloc[0]) and t.n_positional.iloc[0] == 0


def test_missing_columns_rejected():
    with pytest.raises(ParameterError, match="results"):
        cell_table(pd.DataFrame(dict(alpha=[1.0], init=["semantic"])))
