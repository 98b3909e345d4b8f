"""Sweeps with the real task kinds (tiny sizes). Skipped where a kind's module does not exist yet."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from attnphase.sweeps import load, run_sweep
from attnphase.sweeps.report import compare, frame
from attnphase.sweeps.store import Store


def _sweep(tmp_path, body, sub="s"):
    (tmp_path / sub).mkdir(exist_ok=True)
    f = tmp_path / sub / "sw.toml"
    f.write_text(textwrap.dedent(body))
    return load(f)


def test_baseline_kind_matches_spec_value(tmp_path):
    sw = _sweep(tmp_path, '[[task]]\nkind = "baseline"\ngrid = { omega = [0.3] }\n')
    assert run_sweep(sw)["done"] == 1
    df = frame(sw)
    assert abs(df.eps_lin.iloc[0] - 0.0019714) < 2e-6      # regression pin of baseline.eps_lin (MODEL.md §5)


SIM = """
[sweep]
output = "out"
[[task]]
kind = "simulate"
seeds = 2
instances = 2
params = { d = 20, steps = 5, test_samples = 500 }
grid = { alpha = [0.5], init = ["semantic", "positional"] }
"""


def _rows(sw):
    with Store(sw.db_path) as st:
        return {r["key"]: (r["status"], r["result"], r["converged"]) for r in st.rows()}


def test_simulate_local_vs_dask_localcluster_same_rows(tmp_path):
    a, b = _sweep(tmp_path, SIM, "a"), _sweep(tmp_path, SIM, "b")
    ca = run_sweep(a)
    assert ca["ran"] == 4, ca
    run_sweep(b, executor="dask", dask_local=1, dask_processes=False)
    ra, rb = _rows(a), _rows(b)
    assert ra.keys() == rb.keys() and len(ra) == 4
    errors = {k: v for k, v in ra.items() if v[0] != "done"}
    assert not errors, frame(a).error.dropna().unique()
    for k in ra:
        pa, pb = ra[k][1]["per_instance"], rb[k][1]["per_instance"]
        assert pa.keys() == pb.keys()
        for q in pa:
            np.testing.assert_allclose(np.asarray(pa[q], float), np.asarray(pb[q], float), rtol=1e-6, atol=1e-9)
    df = frame(a)
    assert len(df) == 8 and {"m", "theta", "eps_g", "e_t", "instance"} <= set(df.columns)


@pytest.mark.slow
def test_smoke_example_with_compare(tmp_path):
    from pathlib import Path
    src = Path(__file__).resolve().parents[1] / "examples" / "sweeps" / "smoke.toml"
    sw = _sweep(tmp_path, src.read_text().replace('output = "results/smoke"', 'output = "out"'))
    c = run_sweep(sw)
    assert c["failed"] == 0, frame(sw).error.dropna().unique()
    table, out = compare(sw)
    assert len(table) == 4 and table.m_theory.notna().all()
    assert (out / "compare.csv").exists()
