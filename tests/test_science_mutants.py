"""Five science mutants that the default suite must kill (issue 33; the sampled mutation score over the
equation modules is in docs/notes/benchmarks-log.md, "Tests that catch a wrong answer", from bench/mutation.py).

Each mutant is one plausible slip in an equation of MODEL.md: the function's source with one text replaced,
compiled in its module's namespace and put in place of the original in every attnphase module that holds it
(``monkeypatch``, undone after the test). The named real-run test (tests/test_real_runs.py, checks against the
paper's table and an independent Monte Carlo) must then fail with an AssertionError. The mutated functions are
numpy code outside the compiled programs, so the mutants run in this process at the cost of one solve each.
"""
from __future__ import annotations

import inspect
import sys
import textwrap

import pytest
import test_real_runs as R

import attnphase
import attnphase.baseline
import attnphase.theory.channel
import attnphase.theory.observables
import attnphase.theory.prior


def point(tmp_path):
    R.test_theory_point_positional_alpha2_against_the_paper_table()


def curve(tmp_path):
    R.test_theory_curve_semantic_against_the_paper_table(tmp_path)


def baseline(tmp_path):
    R.test_baseline_against_an_independent_monte_carlo(R.eps_lin_monte_carlo())


MUTANTS = {
    # MODEL.md §6 prior side: θ = σ² ρ θ̂ / D — the ρ dropped (semantic branch)
    "prior: theta without rho": (attnphase.theory.prior, "prior", "theta = s2 * rho * theta_hat / D",
                                 "theta = s2 * theta_hat / D", curve),
    # MODEL.md §6 free energy Φ = … − m m̂ − θ θ̂ …: the sign of m m̂ flipped (e_t of the positional branch)
    "free energy: +m m_hat": (attnphase.theory.observables, "free_energy", "- m * m_hat - theta * theta_hat",
                              "+ m * m_hat - theta * theta_hat", point),
    # ε_g = E ℓ (MODEL.md §6): an extra ½ in the product rule's sum
    "eps_g: extra half": (attnphase.theory.observables, "_eps_g_order", "total += w1_ * float(",
                          "total += 0.5 * w1_ * float(", point),
    # MODEL.md §6 Stein form V̂ = −α E[Σ g ξ]/√q + θ θ̂ / q: the sign of θ θ̂ / q flipped (semantic branch)
    "V_hat: Stein sign": (attnphase.theory.channel, "_from_sums", "V_hat = -alpha * s_v / sq + theta * theta_hat",
                          "V_hat = -alpha * s_v / sq - theta * theta_hat", curve),
    # MODEL.md §5 ε_lin = ½ σ² (E‖T‖² − ‖E T‖²): σ for σ²
    "eps_lin: sigma for sigma^2": (attnphase.baseline, "eps_lin", "return float(0.5 * s2 * (ET2",
                                   "return float(0.5 * params.sigma * (ET2", baseline),
}


def apply(monkeypatch, module, name: str, old: str, new: str) -> None:
    """Replace ``module.name`` (and every attnphase module's reference to it) by its source with ``old`` → ``new``."""
    original = getattr(module, name)
    src = textwrap.dedent(inspect.getsource(original))
    assert src.count(old) == 1, f"{module.__name__}.{name}: the mutated text is gone (update the mutant)"
    local: dict = {}
    exec(compile(src.replace(old, new), inspect.getsourcefile(original), "exec"), module.__dict__, local)
    mutant = local[name]
    for mod in [m for k, m in sys.modules.items() if m is not None and k.startswith(("attnphase", "test_"))]:
        for attr, val in list(vars(mod).items()):
            if val is original:
                monkeypatch.setattr(mod, attr, mutant)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_science_mutant_is_killed(name, monkeypatch, tmp_path):
    module, func, old, new, check = MUTANTS[name]
    apply(monkeypatch, module, func, old, new)       # (on the real code the check passes: test_real_runs.py)
    with pytest.raises(AssertionError):
        check(tmp_path)


def test_mutant_is_applied_everywhere(monkeypatch):
    """The mechanism: a replaced function is seen through every module that imported it by name."""
    import attnphase.theory.split_integrator as S
    apply(monkeypatch, attnphase.theory.prior, "prior", "V = s2 / D", "V = 2 * s2 / D")
    assert S.prior is attnphase.theory.prior.prior
    q, m, V, theta = S.prior(attnphase.ModelParams(), 1.0, 0.1, 10.0, 0.2)
    D = 0.01 + 0.25 * 10.0
    assert V == pytest.approx(2 * 0.25 / D)
