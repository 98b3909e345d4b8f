"""``attnphase.solve`` / ``attnphase.curve`` go through the one solve, ``theory.solve.solve`` (issue 29): the API
neither routes nor calls an integrator itself, and returns the one ``Solution`` type for every integrator."""

from __future__ import annotations

import importlib

import pytest

import attnphase
from attnphase.theory.solution import Solution


one = importlib.import_module("attnphase.theory.solve")     # the module (the package exports its function)


def _recording(monkeypatch):
    calls = []
    real = one.solve

    def spy(params, alphas, branch="semantic", **kw):
        calls.append((params.L, list(alphas), branch, kw.get("integrator")))
        return real(params, alphas, branch, **kw)
    monkeypatch.setattr(one, "solve", spy)
    return calls


def test_api_solve_is_the_one_solve(monkeypatch):
    calls = _recording(monkeypatch)
    s = attnphase.solve(2.0, "semantic", omega=0.3, nodes=4)
    assert calls == [(2, [2.0], "semantic", "split")]
    assert isinstance(s.value, Solution) and s.converged and s.provenance["convergence"]["status"] == "converged"


def test_api_qmc_solve_and_curve_return_solutions(monkeypatch):
    from attnphase.theory.qmc_config import QMCConfig
    calls = _recording(monkeypatch)
    cfg = QMCConfig(points=128, scrambles=2)
    s = attnphase.solve(2.0, "semantic", omega=0.3, integrator="qmc", qmc_config=cfg)
    c = attnphase.curve([1.8, 2.0], "semantic", omega=0.3, integrator="qmc", qmc_config=cfg)
    assert calls == [(2, [2.0], "semantic", "qmc"), (2, [1.8, 2.0], "semantic", "qmc")]
    assert isinstance(s.value, Solution) and s.value.integrator == "qmc"
    assert all(isinstance(v, Solution) for v in c.value) and "e_t_err" in c.to_frame().columns


def test_api_curve_follows_the_branch_on_the_one_solve(monkeypatch):
    calls = _recording(monkeypatch)
    c = attnphase.curve([1.8, 2.0], "semantic", omega=0.3, nodes=4)
    assert calls and all(call[3] == "split" for call in calls)
    assert c.provenance["convergence"]["all_converged"]


def test_api_refuses_the_other_integrators_knob():
    with pytest.raises(attnphase.ParameterError, match="nodes"):
        attnphase.solve(2.0, "semantic", L=3, nodes=4)
