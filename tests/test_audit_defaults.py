"""Away from the paper's defaults (issue 11, helper hC's audit): each test here failed before its fix."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory.routing import choose_integrator

NON_PAPER_P = [((2.0,), (-2.0,)), ((0.0,), (0.0,)), ((1.0,), (1.0,)), ((1.0,), (0.0,))]


@pytest.mark.parametrize("P", NON_PAPER_P)
def test_auto_routes_a_non_paper_P_to_the_engine(P):
    """The split and product rules hard-code the paper's encodings s = (1, -1) (MODEL.md §6): at L = 2 with any
    other P (one column) ``auto`` must pick the QMC engine of §8, and ``split``/``product`` must be refused."""
    p = ModelParams(P=P)
    assert choose_integrator(p) == "qmc"
    for rule in ("split", "product"):
        with pytest.raises(ParameterError, match="P"):
            choose_integrator(p, rule)


def test_paper_P_and_its_mirror_keep_the_split_rule():
    """P = ±(1, -1)ᵀ is the paper's case (the sign is the model's Q → −Q symmetry)."""
    assert choose_integrator(ModelParams()) == "split"
    assert choose_integrator(ModelParams(P=((-1.0,), (1.0,)))) == "split"


@pytest.mark.parametrize("P", NON_PAPER_P[:2])
def test_split_solver_refuses_a_non_paper_P(P):
    """The §6 solver (used by transition and phase-diagram) must not silently solve the paper's P instead."""
    from attnphase.theory.solver import solve_point
    with pytest.raises(ParameterError, match="P"):
        solve_point(ModelParams(P=P), 1.0, "positional", nodes=4)


def _cli(args, capsys):
    from attnphase.cli import main
    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err.strip().splitlines()


@pytest.mark.parametrize("cmd", ["point", "curve"])
@pytest.mark.parametrize("args,word", [
    (["--qmc-points", "512"], "--qmc-points"),               # L = 2 default: the split rule, no QMC size
    (["--scrambles", "4"], "--scrambles"),
    (["--qmc-target", "0.01"], "--qmc-target"),
    (["--L", "3", "--nodes", "8"], "--nodes"),               # L = 3: the QMC engine, no Gauss–Hermite order
    (["--L", "3", "--rule", "product"], "--rule"),
    (["--P", "2;-2", "--integrator", "split"], "P"),
])
def test_cli_refuses_the_other_integrators_resolution(cmd, args, word, capsys, tmp_path):
    """An option that the chosen integrator does not use was dropped silently (a user asking for
    ``--qmc-points 512`` at L = 2 got the split rule; ``--nodes 8`` at L = 3 a default QMC size): one line, exit 2."""
    extra = ["--alpha", "1"] if cmd == "point" else ["--alphas", "1:2:2", "--out", str(tmp_path / "c.csv")]
    code, _, err = _cli(["theory", cmd, *extra, *args], capsys)
    assert code == 2 and len(err) == 1 and word in err[0], err


def test_scaling_theory_is_unavailable_for_a_non_paper_P():
    """``scaling.theory_point`` put the split rule next to finite-d runs at any one-column P."""
    from attnphase.scaling import theory_point
    assert theory_point(ModelParams(P=((2.0,), (-2.0,))), 1.0, "positional")["available"] is False


def test_split_point_says_when_its_branch_collapsed(capsys):
    """``theory point`` (split rule) called a semantic point with θ ~ 1e-11 (α = 0.05) just ``converged``;
    ``theory curve`` calls it ``collapsed`` and so must the point (JSON ``state``, one note)."""
    import json
    code, out, err = _cli(["theory", "point", "--alpha", "0.05", "--branch", "semantic", "--nodes", "4",
                           "--json"], capsys)
    d = json.loads(out)
    assert code in (0, None) and d["converged"] and abs(d["theta"]) < 1e-6
    assert d["state"] == "collapsed" and any("collapsed" in line for line in err), err


def _eps_g_monte_carlo(sigma, omega, A, q, theta, n=2_000_000, seed=3):
    """ε_g at L = 2, r = r* = 1, m = 0 by plain Monte Carlo (MODEL.md §6), written independently of the package:
    h_l = √q ξ_l, h*_l = (θ/√q) ξ_l + √(σ² − θ²/q) y_l, loss (σ²/2)‖T(h*) − S(h)‖_F²."""
    rng = np.random.default_rng(seed)

    def softmax_outer(h):
        logits = h[:, :, None] * h[:, None, :]
        e = np.exp(logits - logits.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    xi, y = rng.standard_normal((2, n, 2))
    hs = theta / np.sqrt(q) * xi + np.sqrt(sigma ** 2 - theta ** 2 / q) * y
    T = (1 - omega) * softmax_outer(hs) + omega * np.asarray(A)
    vals = 0.5 * sigma ** 2 * np.sum((T - softmax_outer(np.sqrt(q) * xi)) ** 2, axis=(1, 2))
    return vals.mean(), vals.std() / np.sqrt(n)


@pytest.mark.parametrize("sigma,q,theta", [(1.5, 1.17389, 1.61502), (2.0, 1.86414, 2.71440), (0.5, 0.093955, 0.134549)])
def test_eps_g_at_large_sigma_matches_monte_carlo(sigma, q, theta):
    """The split path's ε_g used a fixed 12-point product rule, 3 % high at σ = 1.5 (the semantic α = 2 point:
    0.020644 against 0.020003 ± 0.000006 by Monte Carlo) with ``converged: true``."""
    from attnphase.theory.observables import eps_g
    p = ModelParams(sigma=sigma)
    mc, se = _eps_g_monte_carlo(sigma, p.omega, p.A, q, theta)
    assert abs(eps_g(p, q, 0.0, theta) - mc) <= 4 * se + 2e-4 * mc
