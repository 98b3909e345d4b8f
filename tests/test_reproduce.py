import subprocess
import sys

import pytest

_MAIN = "import sys; from attnphase.cli import main; main(sys.argv[1:])"


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, "-c", _MAIN, *args], capture_output=True, text=True, timeout=timeout)


def test_reproduce_is_registered():
    p = _run("reproduce", "--help")
    assert p.returncode == 0
    assert "--full" in p.stdout and "--out" in p.stdout


def test_agreement_z_scores():
    import pandas as pd

    from attnphase.reproduce import _agreement
    sem = pd.DataFrame(dict(alpha=[1.0], sigma=0.5, theta=[0.1], m=[0.0], eps_g=[0.002], e_t=[0.003], converged=True))
    pos = pd.DataFrame(dict(alpha=[1.0], sigma=0.5, theta=[0.0], m=[0.25], eps_g=[0.003], e_t=[0.0028],
                            converged=True))
    sim = pd.DataFrame([dict(alpha=1.0, init="semantic", theta_over_sigma2_mean=0.42, theta_over_sigma2_sem=0.01,
                             eps_g_mean=0.002, eps_g_sem=1e-4),
                        dict(alpha=1.0, init="positional", m_mean=0.23, m_sem=0.01)])
    rows = {(r["init"], r["quantity"]): r for r in _agreement(sim, sem, pos)}
    assert abs(rows[("semantic", "theta_over_sigma2")]["z"] - 2.0) < 1e-9  # (0.42 - 0.4)/0.01
    assert abs(rows[("semantic", "eps_g")]["z"]) < 1e-9
    assert abs(rows[("positional", "m")]["z"] + 2.0) < 1e-9


@pytest.mark.slow
def test_reproduce_theory_only(tmp_path):
    p = _run("reproduce", "--out", str(tmp_path), "--no-sim", timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    for f in ("summary.txt", "provenance.json", "theory_omega0.3.csv", "phase_lines.csv", "fig_eps_g.png",
              "fig_overlaps.pdf", "fig_phase_diagram.png", "fig_delta_e_t.png", "fig_alpha_c_line.png",
              "mixed_search_omega0.3.csv", "phase_grid.csv"):
        assert (tmp_path / f).exists(), f
    assert "α_c" in (tmp_path / "summary.txt").read_text()


def test_the_library_never_imports_the_cli():
    """reproduce's science, the phase package, sweeps' executors and plots work without attnphase.cli."""
    code = ("import sys, attnphase.reproduce, attnphase.phase, attnphase.sweeps.executors, attnphase.plots, "
            "attnphase.progress; from attnphase.sweeps import executors; "
            "cm = executors._progress(True, 1, 'x'); cm.__enter__(); "
            "print(sorted(m for m in sys.modules if m.startswith('attnphase.cli')))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "[]"


def test_the_finite_d_check_runs_and_summarises_both_inits():
    """reproduce's finite-d check really trains (it was once skipped silently by a broken import)."""
    from attnphase import ModelParams
    from attnphase.reproduce import _simulate_points
    cfg = dict(sim_alphas=[1.0], d=40, instances=2, optimizer="lbfgs", test_samples=200)
    calls = []
    sim, note = _simulate_points(ModelParams(), cfg, 0, lambda *a: calls.append(a))
    assert note is None
    assert list(sim["init"]) == ["semantic", "positional"] and (sim["instances"] == 2).all()
    assert sim["e_t_mean"].gt(0).all() and len(calls) == 2


def test_the_committed_full_run_is_the_run_full_does():
    """docs/reproduce.md quotes a measured ``--full`` run (docs/data/reproduce_full/, 2026-12-06): its recorded
    configuration must be :data:`attnphase.reproduce.FULL`, so a change of ``FULL`` fails here until the run is
    measured again; its summary carries the refined α_c = 1.2515 of the quick run's ω = 0.3 transition
    (docs/reproduce.md), and its α_c(ω) line rises with ω (the paper's Fig. 1) wherever it is on the grid."""
    import json
    from pathlib import Path

    import pandas as pd

    from attnphase.reproduce import FULL
    data = Path(__file__).resolve().parents[1] / "docs" / "data" / "reproduce_full"
    cfg = json.loads((data / "provenance.json").read_text())["config"]
    assert cfg["full"] is True
    assert {k: cfg[k] for k in FULL} == json.loads(json.dumps(FULL))
    lines = pd.read_csv(data / "phase_lines.csv")
    a_c = lines["alpha_c"].dropna().to_numpy()
    assert len(lines) == len(FULL["omegas"]) and len(a_c) >= 30 and (a_c[1:] > a_c[:-1]).all()
    assert "α_c   = 1.2515" in (data / "summary.txt").read_text()
