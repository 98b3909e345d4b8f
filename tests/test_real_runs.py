"""Every command once for real (issue 33): the real solver and trainer at a tiny size, through the CLI's own
entry point, each asserting a number against a value the package did not compute.

Independent values used here (each assertion names its source):

* the paper's theory tables (``src/attnphase/reference/theory_omega0.3_*.csv``, the authors' fixed-point
  solution, coarse quadrature: 1–3 % from ours, docs/theory.md "Against the paper's table");
* the paper's finite-d runs (``gd_d1000_omega0.3.csv``, GD at d = 1000, means and spreads over instances);
* the paper's α_c(0.3) ≈ 1.24, α_l(0.3) ≈ 1.45 (MODEL.md §6), which ours exceed by +0.012 / +0.042 for a
  documented reason (the table's quadrature bias, docs/notes/2026-12-03-phase-boundaries.md "Why ours sit above the paper's");
* ε_lin by a Monte Carlo of MODEL.md §5's formula written in this file (:func:`eps_lin_monte_carlo`);
* the refined lines of docs/notes/2026-12-03-phase-boundaries.md (our own refined run at nodes = 8, xtol = 1e-4: a regression
  pin of the package's output, labelled so where used; the tolerance 2e-3 is justified by the resolution
  study in :func:`test_theory_transition_default_lambda_pins_the_lines`).

A broken wiring between a command and the library (an option dropped, swapped or defaulted) moves these
numbers far outside their tolerances; docs/notes/benchmarks-log.md ("Tests that catch a wrong answer") records one
deliberate break.
"""
from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import textwrap

import numpy as np
import pandas as pd
import pytest

from attnphase import reference
from attnphase.cli import main

SEM = reference.load("theory_omega0.3_semantic.csv")        # the paper's tables (published data)
POS = reference.load("theory_omega0.3_positional.csv")
GD = reference.load("gd_d1000_omega0.3.csv")

# docs/notes/2026-12-03-phase-boundaries.md, "Measured lines": OUR refined run (nodes 8, xtol 1e-4) -- regression pins of the
# package's own output, not independent values; the paper's own values are PAPER_LINES.
REFINED = {0.1: (0.7508, 0.8930), 0.3: (1.2515, 1.4922)}
PAPER_LINES = {0.3: (1.24, 1.45)}                           # MODEL.md §6
LINE_TOL = 2e-3          # at the default resolution (test_theory_transition_default_lambda_pins_the_lines)
DIAGRAM_TOL = (2e-3, 4e-3)   # α_c, α_l of phase-diagram --nodes 4 --refine (xtol 1e-3): measured 1.4e-3, 2.9e-3


def cli(*args: str) -> tuple[int, str, str]:
    """Run ``attnphase ARGS`` in this process (JAX programs compiled once per test module): exit code, stdout,
    stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = 0 if exc.code is None else int(exc.code)
    return code, out.getvalue(), err.getvalue()


def cli_json(*args: str) -> dict:
    code, out, err = cli(*args, "--json")
    assert code == 0, err[-3000:]
    return json.loads(out)


def table_row(df: pd.DataFrame, alpha: float) -> dict[str, float]:
    """A row of the paper's table (interpolated in α); ``eps_g = mse/2``, ``e_t = −Phi`` (reference/README.md)."""
    df = df.sort_values("alpha")
    r = {c: float(np.interp(alpha, df["alpha"], df[c])) for c in ("q", "m", "V", "theta", "mse", "Phi")}
    return r | {"eps_g": r["mse"] / 2, "e_t": -r["Phi"]}


def gd_row(alpha: float, informed: bool) -> pd.Series:
    """The paper's finite-d (d = 1000, GD) row nearest ``alpha`` for the semantic (informed) or positional init."""
    g = GD[GD.informed == informed]
    return g.iloc[int(np.argmin(np.abs(g.alpha.to_numpy() - alpha)))]


@functools.cache                    # deterministic (fixed seed); the transition tests and the mutants reuse it
def eps_lin_monte_carlo(omega=0.3, sigma=0.5, n=1_000_000, batches=4, seed=0) -> tuple[float, float]:
    """MODEL.md §5 by Monte Carlo, independent of ``attnphase.baseline``: ε_lin = ½ σ² Σ_lk Var(T_lk) at L = 2
    (B* = E[T]; the positional part ωA is constant and drops out), with the teacher's pre-activations
    h*_l = Q*ᵀx_l/√d i.i.d. N(0, σ²) (‖Q*‖²/d → 1). Returns (value, standard error over batches)."""
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(batches):
        h = rng.standard_normal((n, 2)) * sigma
        s11 = 1.0 / (1.0 + np.exp(h[:, 0] * h[:, 1] - h[:, 0] ** 2))     # row 1 of softmax(h hᵀ): (s11, 1 − s11)
        s22 = 1.0 / (1.0 + np.exp(h[:, 0] * h[:, 1] - h[:, 1] ** 2))     # row 2: (1 − s22, s22)
        vals.append(0.5 * sigma ** 2 * (1 - omega) ** 2 * (2 * np.var(s11) + 2 * np.var(s22)))
    return float(np.mean(vals)), float(np.std(vals, ddof=1) / math.sqrt(batches))


# Every finite-d run below trains at d = 40, α = 2 (n = 80), 3 instances, the default test-sample count: one
# compiled training program (simulate._build's key) shared by simulate, scaling (its d = 40 half), basins, the
# sweep and reproduce; a second shape costs ~30 CPU-s of compilation on an empty cache (2026-12-06).
FINITE_D = ("--d", "40", "--instances", "3")


@pytest.fixture(scope="module")
def eps_lin_mc():
    return eps_lin_monte_carlo()


# ---------------------------------------------------------------------------------------------- theory


def test_theory_point_positional_alpha2_against_the_paper_table():
    """`theory point` at α = 2 (a row of the paper's table): q, m, ε_g, e_t within 3 %, V within 5 %
    (docs/theory.md, "Against the paper's table")."""
    d = cli_json("theory", "point", "--alpha", "2", "--omega", "0.3", "--branch", "positional")
    ref = table_row(POS, 2.0)
    assert d["converged"] is True and d["status"] == "converged"
    for k, tol in (("q", 0.03), ("eps_g", 0.03), ("e_t", 0.03), ("V", 0.05)):
        assert abs(d[k] - ref[k]) < tol * abs(ref[k]), (k, d[k], ref[k])
    assert abs(abs(d["m"]) - ref["m"]) < 0.03 * ref["m"] and d["theta"] == 0.0      # the pinned branch
    assert d["provenance"]["config"]["params"]["omega"] == 0.3


def test_theory_curve_semantic_against_the_paper_table(tmp_path):
    """`theory curve` writes the semantic branch at α ∈ {1.5, 2}: θ, q, e_t, ε_g within 3 % of the paper's table
    (measured: ε_g +0.5 %, +1.7 %; a sign slip in the teacher's softmax used by ε_g alone gave +62 %)."""
    out = tmp_path / "c.csv"
    code, _, err = cli("theory", "curve", "--alphas", "1.5:2:2", "--omega", "0.3", "--branch", "semantic",
                       "--out", str(out))
    assert code == 0, err[-3000:]
    df = pd.read_csv(out)
    assert len(df) == 2 and df.converged.all()
    for _, row in df.iterrows():
        ref = table_row(SEM, row.alpha)
        for k in ("theta", "q", "e_t", "eps_g"):      # ε_g: the split map's fixed point does not check the
            assert abs(row[k] - ref[k]) < 0.03 * abs(ref[k]), (row.alpha, k, row[k], ref[k])   # ε_g integrand
        assert abs(row["m"]) < 1e-12                                                  # the pinned branch


@pytest.mark.parametrize("omega, alphas", [(0.1, "0.6:1.0:5"), (0.3, "1.1:1.6:6")])
def test_theory_transition_default_lambda_pins_the_lines(omega, alphas):
    """`theory transition` at the default λ = 0.01 and resolution (curves nodes 4, Brent nodes 8), narrow grids:
    α_c and α_l within LINE_TOL = 2e-3 of the refined lines (regression pins of our own refined run,
    docs/notes/2026-12-03-phase-boundaries.md). Resolution study (2026-12-06, this file's grids): Brent at nodes 8 gives
    α_c(0.1), α_l(0.1), α_c(0.3), α_l(0.3) = 0.75079, 0.89297, 1.25153, 1.49225 (≤ 5e-5 from the pins); at
    nodes 4, α_c(0.3) = 1.2526, α_l(0.3) = 1.4898 (2.4e-3 off: too coarse for 2e-3, hence nodes 8 here).
    At ω = 0.3 the paper's 1.24 / 1.45 (independent) lie the documented +0.012 / +0.042 below."""
    d = cli_json("theory", "transition", "--omega", str(omega), "--alphas", alphas, "--no-mixed", "--no-survey")
    ac, al = REFINED[omega]
    assert abs(d["alpha_c"] - ac) < LINE_TOL and abs(d["alpha_l"] - al) < LINE_TOL, (d["alpha_c"], d["alpha_l"])
    assert d["alpha_c_against"] == "positional" and d["alpha_c_nodes"] == 8
    if omega in PAPER_LINES:
        pc, pl = PAPER_LINES[omega]
        assert 0.005 < d["alpha_c"] - pc < 0.02 and 0.03 < d["alpha_l"] - pl < 0.055
    assert abs(d["eps_lin"] - eps_lin_monte_carlo(omega=omega)[0]) < 3e-3 * d["eps_lin"]


@pytest.fixture(scope="module")
def diagram(tmp_path_factory):
    out = tmp_path_factory.mktemp("pd")
    d = cli_json("theory", "phase-diagram", "--omegas", "0.1:0.3:2", "--alphas", "0.6:1.6:11", "--nodes", "4",
                 "--refine", "--workers", "1", "--out", str(out))
    return d, out


def test_phase_diagram_lines_at_omega_01_and_03(diagram):
    """A small `phase-diagram` (ω ∈ {0.1, 0.3}, nodes 4, refined to 1e-3): α_c, α_l within DIAGRAM_TOL of the
    refined lines (measured 2026-12-06: 0.7522, 0.8901, 1.2528, 1.4900 against 0.7508, 0.8930, 1.2515, 1.4922),
    and at ω = 0.3 within the documented offset of the paper's 1.24 / 1.45 (+0.012 / +0.042, quadrature bias)."""
    d, out = diagram
    lines = {round(r["omega"], 6): r for r in d["lines"]}
    for w in (0.1, 0.3):
        ac, al = REFINED[w]
        assert abs(lines[w]["alpha_c"] - ac) < DIAGRAM_TOL[0], (w, lines[w]["alpha_c"])
        assert abs(lines[w]["alpha_l"] - al) < DIAGRAM_TOL[1], (w, lines[w]["alpha_l"])
    pc, pl = PAPER_LINES[0.3]
    assert 0.0 < lines[0.3]["alpha_c"] - pc < 0.02 and 0.0 < lines[0.3]["alpha_l"] - pl < 0.06
    grid = pd.read_csv(out / "phase_grid.csv")
    assert set(np.round(grid.omega, 6)) == {0.1, 0.3} and len(grid) == 22
    # the grid's own winner agrees with the line: semantic above α_c, positional below
    g3 = grid[np.isclose(grid.omega, 0.3)]
    assert (g3[g3.alpha > 1.3].global_branch == "semantic").all()
    assert (g3[g3.alpha < 1.2].global_branch == "positional").all()


def test_reproduce_at_a_reduced_size(tmp_path, monkeypatch):
    """`reproduce` with its QUICK settings cut down (one ω, a narrow α grid, d = 40): the command's whole path
    (transition, diagram, finite-d check, tables, figures, summary) at the real solver; α_c within the
    documented offset of the paper's 1.24 and within DIAGRAM_TOL (nodes 4, xtol 1e-3) of the refined value; the
    finite-d semantic θ/σ² at α = 2 near the paper's GD value (d = 40: within 0.25, as in the simulate test)."""
    import attnphase.reproduce as R
    small = dict(R.QUICK, alphas=[1.1, 1.2, 1.3, 1.4, 1.5, 1.6], curve_nodes=4, nodes=4, xtol=1e-3,
                 mixed_alphas=[], omegas=[0.3], pd_alphas=[1.2, 1.3], pd_nodes=4, sim_alphas=[2.0], d=40,
                 instances=3, test_samples=50_000)         # the shared finite-d shape (FINITE_D)
    monkeypatch.setattr(R, "QUICK", small)
    d = cli_json("reproduce", "--out", str(tmp_path))
    assert "α_c" in d["summary"]
    lines = pd.read_csv(tmp_path / "phase_lines.csv")
    ac = float(lines.loc[np.isclose(lines.omega, 0.3), "alpha_c"].iloc[0])
    assert abs(ac - REFINED[0.3][0]) < DIAGRAM_TOL[0] and 0.0 < ac - PAPER_LINES[0.3][0] < 0.02
    sim = pd.read_csv(tmp_path / "simulation.csv")
    sem = sim[(sim.init == "semantic") & np.isclose(sim.alpha, 2.0)].iloc[0]
    assert abs(sem.theta_over_sigma2_mean - gd_row(2.0, True).attention_theta_mean) < 0.25
    assert (tmp_path / "fig_eps_g.png").exists() and (tmp_path / "provenance.json").exists()


# ------------------------------------------------------------------------------------------ finite d


def test_simulate_semantic_start_against_the_papers_gd_runs(eps_lin_mc):
    """`simulate` (L-BFGS, d = 40, α = 2, semantic start): θ/σ² near the paper's GD mean at d = 1000 (0.634 ± 0.026
    over instances). At d = 40 the minimiser sits lower (measured 0.519, 0.508, 0.497 for instances 0–2:
    finite-size shift and spread ~0.1), so the window is ± 0.25 — a positional or random start (θ/σ² ≈ 0.03) is
    far outside it; m ≈ 0; ε_g between the paper's d = 1000 semantic and positional values; its ε_lin is near
    the Monte Carlo of MODEL.md §5."""
    d = cli_json("simulate", "--alpha", "2", *FINITE_D, "--init", "semantic", "--optimizer", "lbfgs")
    ref = gd_row(2.0, True)
    th = float(np.mean(d["theta_over_sigma2"]))
    assert abs(th - ref.attention_theta_mean) < 0.25, th
    assert float(np.mean(np.abs(d["m"]))) < 0.1
    # ε_g: above the d = 1000 semantic value 0.00144 (measured at d = 40: 0.00153 mean; 0.00188 at d = 60), below
    # halfway to the positional one (0.00349), where a positional or random start would land
    pos = gd_row(2.0, False).attention_gen_error_mean
    assert ref.attention_gen_error_mean < float(np.mean(d["eps_g"])) < 0.5 * (ref.attention_gen_error_mean + pos)
    # ε_lin per instance at the finite teacher's ρ = σ²‖Q*‖²/d (±18 % at d = 60; −19 % mean at d = 40): near the
    # Monte Carlo value
    assert abs(float(np.mean(d["eps_lin"])) - eps_lin_mc[0]) < 0.3 * eps_lin_mc[0], d["eps_lin"]


def test_baseline_against_an_independent_monte_carlo(eps_lin_mc):
    """`baseline`: ε_lin at ω = 0.3 equals the Monte Carlo of MODEL.md §5 within 3 s.e. (or 0.3 %), and the
    paper's finite-d linear baseline (38 runs at α ≥ 0.5, d = 1000) within 3 s.e. of their mean."""
    d = cli_json("baseline", "--omega", "0.3")
    v, se = eps_lin_mc
    assert abs(d["eps_lin"] - v) < max(3 * se, 3e-3 * v), (d["eps_lin"], v, se)
    lin = GD[GD.alpha >= 0.5].linear_gen_error_mean
    assert abs(d["eps_lin"] - lin.mean()) < 3 * lin.std(ddof=1) / math.sqrt(len(lin))
    # ω enters as (1 − ω)²: ω = 0 is (1/0.7)² times larger (MODEL.md §5)
    d0 = cli_json("baseline", "--omega", "0")
    assert abs(d0["eps_lin"] * 0.49 - d["eps_lin"]) < 1e-9


def test_scaling_positional_against_the_paper_table():
    """`scaling` (positional start, α = 2, d ∈ {40, 80}): the theory's m within 3 % of the paper's table, its e_t
    and m within 3 % of the paper's GD runs at d = 1000, and the 1/d extrapolation of m within 4 s.e. (at least
    0.05) of the table."""
    d = cli_json("scaling", "--alpha", "2", "--omega", "0.3", "--init", "positional", "--ds", "40,80",
                 "--instances", "3")
    ref = table_row(POS, 2.0)
    assert d["theory"]["available"] and abs(d["theory"]["m"] - ref["m"]) < 0.03 * ref["m"]
    # the paper's finite-d GD columns at d = 1000 (e_t = attention_train_error / d, m = attention_mag; 24
    # instances): the theory's e_t and m within 3 % (measured −1.6 %, −1.4 %: the O(1/d) shift at d = 1000)
    gd = gd_row(2.0, False)
    assert abs(d["theory"]["e_t"] - gd.attention_train_error_mean / 1000) < 0.03 * gd.attention_train_error_mean / 1000
    assert abs(d["theory"]["m"] - gd.attention_mag_mean) < 0.03 * gd.attention_mag_mean
    fit = d["fits"]["m"]
    assert abs(fit["intercept"] - ref["m"]) < max(4 * fit["intercept_se"], 0.05), fit
    assert [p["d"] for p in d["per_d"]] == [40, 80]


def test_basins_positional_start_lands_positional():
    """`basins` (positional start, α = 2, d = 40): every student is classified positional, on scales from the
    theory whose m is the paper table's within 3 %."""
    d = cli_json("basins", "--alphas", "2", "--omegas", "0.3", *FINITE_D, "--init", "positional")
    (row,) = d["rows"]
    assert row["frac_positional"] == 1.0 and "m:theory" in row["scale_source"], row
    assert abs(row["m_pos"] - table_row(POS, 2.0)["m"]) < 0.03 * table_row(POS, 2.0)["m"], row


SWEEP = """
[sweep]
name = "real"
output = "out"
[[task]]
kind = "simulate"
seeds = [0]
instances = 3
params = { d = 40, optimizer = "lbfgs" }
grid = { alpha = [2.0], omega = [0.3], init = ["semantic", "positional"] }
[[task]]
kind = "theory"
grid = { alpha = [2.0], omega = [0.3], branch = ["semantic", "positional"] }
[[task]]
kind = "baseline"
grid = { omega = [0.3] }
"""


def test_sweep_run_export_and_compare(tmp_path, eps_lin_mc):
    """`sweep run`, `sweep export`, `compare` on a 5-task sweep: the exported theory rows agree with the paper's
    table, the baseline row with the Monte Carlo ε_lin, and compare's deviations are finite."""
    f = tmp_path / "sw.toml"
    f.write_text(textwrap.dedent(SWEEP))
    run = cli_json("sweep", "run", str(f), "--workers", "1", "--quiet")
    assert run["run"]["done"] == 5 and run["run"]["failed"] == 0, run
    exp = cli_json("sweep", "export", str(f))
    df = pd.read_csv(exp["file"])
    th = df[df.kind == "theory"].set_index("branch")
    assert abs(th.loc["semantic", "theta"] - table_row(SEM, 2.0)["theta"]) < 0.03 * table_row(SEM, 2.0)["theta"]
    assert abs(abs(th.loc["positional", "m"]) - table_row(POS, 2.0)["m"]) < 0.03 * table_row(POS, 2.0)["m"]
    v, se = eps_lin_mc
    assert abs(float(df[df.kind == "baseline"].eps_lin.iloc[0]) - v) < max(3 * se, 3e-3 * v)
    sim = df[(df.kind == "simulate") & (df.init == "semantic")]
    assert len(sim) == 3 and abs(sim.theta_over_sigma2.mean() - gd_row(2.0, True).attention_theta_mean) < 0.25
    cmp_ = cli_json("compare", str(f), "--no-figures")
    rows = {r["init"]: r for r in cmp_["rows"]}
    assert set(rows) == {"semantic", "positional"}
    assert abs(rows["positional"]["m_theory"] - table_row(POS, 2.0)["m"]) < 0.03 * table_row(POS, 2.0)["m"]
