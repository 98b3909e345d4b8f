"""Five science mutants that the default suite must kill (issue 33; the full mutation score, sampled over the
equation modules, is in docs/benchmarks.md, "Mutation score", from bench/mutation.py).

Each mutant is one plausible slip in an equation of MODEL.md, applied to a temporary copy of the package; the
named test, run against that copy in a fresh process, must FAIL (an assertion, not an import error). The
mutants change only numpy code, so the compiled programs of the persistent cache are reused and each run
costs one solve.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import attnphase

PKG = Path(attnphase.__file__).resolve().parent
TESTS = Path(__file__).resolve().parent
POINT = f"{TESTS / 'test_real_runs.py'}::test_theory_point_positional_alpha2_against_the_paper_table"
CURVE = f"{TESTS / 'test_real_runs.py'}::test_theory_curve_semantic_against_the_paper_table"
BASELINE = f"{TESTS / 'test_real_runs.py'}::test_baseline_against_an_independent_monte_carlo"

MUTANTS = {
    # MODEL.md §6 prior side: θ = σ² ρ θ̂ / D — the ρ dropped
    "prior: theta without rho": ("theory/prior.py", "theta = s2 * rho * theta_hat / D",
                                 "theta = s2 * theta_hat / D", CURVE),
    # MODEL.md §6 free energy: Φ = … − m m̂ − θ θ̂ …: the sign of m m̂ flipped (e_t of the positional branch)
    "free energy: +m m_hat": ("theory/observables.py", "- m * m_hat - theta * theta_hat",
                              "+ m * m_hat - theta * theta_hat", POINT),
    # ε_g = E ℓ: an extra ½ in the product rule's sum
    "eps_g: extra half": ("theory/observables.py", "total += w1_ * float(", "total += 0.5 * w1_ * float(", POINT),
    # MODEL.md §6 Stein form: V̂ = −α E[Σ g ξ]/√q + θ θ̂ / q — the sign of θ θ̂ / q flipped (semantic branch)
    "V_hat: Stein sign": ("theory/channel.py", "V_hat = -alpha * s_v / sq + theta * theta_hat",
                          "V_hat = -alpha * s_v / sq - theta * theta_hat", CURVE),
    # MODEL.md §5: ε_lin = ½ σ² (E‖T‖² − ‖E T‖²) — σ for σ²
    "eps_lin: sigma for sigma^2": ("baseline.py", "return float(0.5 * s2 * (ET2", "return float(0.5 * params.sigma * (ET2",
                                   BASELINE),
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """One copy of the package; each mutant edits one file of it and restores it."""
    root = tmp_path_factory.mktemp("mutant") / "src"
    shutil.copytree(PKG, root / "attnphase", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


def run_against(src: Path, test: str) -> subprocess.CompletedProcess:
    # not an xdist worker: the child keeps this process's compilation cache (conftest.py), not a "-gw0-gw0" one
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env.update(PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider",
                           "-o", "addopts=", test], cwd=TESTS.parent, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_science_mutant_is_killed(name, pristine):
    module, old, new, test = MUTANTS[name]
    path = pristine / "attnphase" / module
    original = path.read_text()
    assert original.count(old) == 1, f"{name}: the mutated text is no longer in {module} (update the mutant)"
    path.write_text(original.replace(old, new))
    try:
        p = run_against(pristine, test)
    finally:
        path.write_text(original)
    out = p.stdout + p.stderr
    assert p.returncode == 1 and "1 failed" in out, f"{name} survived or errored:\n{out[-3000:]}"
    assert "AssertionError" in out or "assert " in out, out[-3000:]
