"""The paper's empirical diagram report (attnphase.empirical_diagram) on synthetic per-instance tables."""

import math

import numpy as np
import pandas as pd
import pytest

from pathlib import Path

from attnphase.empirical_diagram import (alpha_c_line, cell_table, compare_alpha_c, plot_empirical_diagram,
                                         plot_slices, report)
from attnphase.errors import ParameterError

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "data" / "empirical_diagram_d100_tiny.csv"
"""96 students: 3 ω × 4 α × 2 starts × 4 instances at d = 100, L-BFGS, from the tiny sweep of
``test_sweep_to_report_end_to_end``'s spec at this size (written by ``attnphase sweep run``, 2026-12-06)."""
THEORY = ROOT / "docs" / "data" / "phase_diagram_40x40"


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


def _cells(omega, alphas, deltas, ses):
    return pd.DataFrame(dict(omega=omega, alpha=alphas, delta_e_t=deltas, delta_se=ses))


def test_alpha_c_line_interpolates_the_sign_change_with_its_error():
    t = cell_table(_synthetic(np.random.default_rng(0)))        # Δ = −2e-4 (1 + ω − α): α_c = 1 + ω
    line = alpha_c_line(t)
    assert list(line.status) == ["crossing", "crossing"] and list(line.crossings) == [1, 1]
    np.testing.assert_allclose(line.alpha_c, 1 + line.omega, atol=4 * line.alpha_c_se.max() + 1e-9)
    assert np.all(line.alpha_lo < line.alpha_c) and np.all(line.alpha_c < line.alpha_hi)
    # the propagated s.e. equals the spread of α* under resampled Δ (linear error propagation, small noise)
    c = _cells(0.3, [1.0, 1.5], [-1e-4, 3e-4], [1e-6, 2e-6])
    one = alpha_c_line(c).iloc[0]
    assert one.alpha_c == pytest.approx(1.125)
    rng = np.random.default_rng(2)
    d0 = -1e-4 + 1e-6 * rng.standard_normal(20000)
    d1 = 3e-4 + 2e-6 * rng.standard_normal(20000)
    assert one.alpha_c_se == pytest.approx(np.std(1.0 - 0.5 * d0 / (d1 - d0)), rel=0.05)


def test_alpha_c_line_statuses_outside_the_range_and_noise():
    t = pd.concat([_cells(0.1, [1, 2, 3], [-3, -2, -1], [0.1] * 3),          # all negative
                   _cells(0.2, [1, 2, 3], [1, 2, 3], [0.1] * 3),             # all positive
                   _cells(0.3, [1, 2, 3], [1, -1, -2], [0.1] * 3),           # only + to −
                   _cells(0.4, [1, 2, 3, 4], [-1, 1, -1, 3], [0.1] * 4)])    # noise: the last − to + counts
    line = alpha_c_line(t).set_index("omega")
    assert line.loc[0.1, "status"] == "above range" and line.loc[0.1, "alpha_lo"] == 3
    assert line.loc[0.2, "status"] == "below range" and line.loc[0.2, "alpha_hi"] == 1
    assert line.loc[0.3, "status"] == "no - to + change" and math.isnan(line.loc[0.3, "alpha_c"])
    assert line.loc[0.4, "crossings"] == 3 and line.loc[0.4, "alpha_c"] == pytest.approx(3.25)


def test_compare_alpha_c_interpolates_the_theory_in_omega():
    line = alpha_c_line(pd.concat([_cells(0.15, [1, 2], [-1, 1], [0.1, 0.1]),
                                   _cells(0.9, [1, 2], [-1, 1], [0.1, 0.1])]))
    theory = pd.DataFrame(dict(omega=[0.1, 0.2, 0.3], alpha_c=[1.2, 1.4, np.nan], alpha_l=[1.5, 1.7, 1.9]))
    c = compare_alpha_c(line, theory).set_index("omega")
    assert c.loc[0.15, "alpha_c_theory"] == pytest.approx(1.3) and c.loc[0.15, "alpha_l_theory"] == pytest.approx(1.6)
    assert c.loc[0.15, "difference"] == pytest.approx(1.5 - 1.3)
    assert c.loc[0.15, "difference_over_se"] == pytest.approx(0.2 / c.loc[0.15, "alpha_c_se"])
    assert math.isnan(c.loc[0.9, "alpha_c_theory"])                 # outside the theory's ω: not extrapolated


def test_report_on_the_tiny_sweep(tmp_path):
    """The committed tiny run (d = 100) through the whole post-processing, with the committed 40 × 40 theory."""
    out = report(pd.read_csv(TINY), tmp_path / "r", THEORY)
    assert out["students"] == 96 and out["cells"] == 12 and out["unconverged"] == 2
    cells = pd.read_csv(out["cells_csv"])
    assert cells.paired.all() and (cells.n_semantic == 4).all() and np.all(cells.delta_se > 0)
    line = pd.read_csv(out["alpha_c_csv"]).set_index("omega")
    # at ω = 0.1 the positional start is lower at α = 0.5 and higher from α = 1 on (as at d = 1000)
    assert line.loc[0.1, "status"] == "crossing" and 0.5 < line.loc[0.1, "alpha_c"] < 1.0
    assert line.loc[0.1, "alpha_c_theory"] == pytest.approx(0.7523, abs=2e-3)   # docs/data/phase_diagram_40x40
    assert Path(out["figure"]).stat().st_size > 20_000


@pytest.mark.slow
def test_sweep_to_report_end_to_end(tmp_path):
    """``attnphase sweep run`` of a students-only spec (2 workers) then the report script, at a toy size."""
    import json
    import os
    import subprocess
    import sys
    spec = tmp_path / "toy.toml"
    spec.write_text('''[sweep]
name = "toy_empirical_diagram"
output = "out"

[[task]]
kind = "simulate"
seeds = [0]
instances = 3
params = { d = 40, optimizer = "lbfgs", lr = 0.15, gtol = 1e-6, warmup_steps = 60, sigma = 0.5, lam = 0.01 }
grid = { omega = [0.1, 0.3], alpha = [0.5, 2.0], init = ["semantic", "positional"] }
''')
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"),
               XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    run = subprocess.run([sys.executable, "-m", "attnphase", "sweep", "run", str(spec), "--workers", "2", "--yes",
                          "--quiet"], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    rep = subprocess.run([sys.executable, str(ROOT / "examples" / "sweeps" / "empirical_diagram_report.py"), str(spec),
                          "--theory", str(THEORY), "--out", str(tmp_path / "r")], env=env, capture_output=True,
                         text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr[-2000:]
    summary = json.loads(rep.stdout)
    assert summary["students"] == 24 and summary["cells"] == 4 and summary["tasks"]["done"] == 8
    cells = pd.read_csv(tmp_path / "r" / "cells.csv")
    assert cells.paired.all() and len(pd.read_csv(tmp_path / "r" / "alpha_c.csv")) == 2
