"""Rank-2 defaults and progress (issue 11): the fixed-point safeguard (``fixed_point.iterate(backtrack=…)``,
on by default at r > 1), the count of full prox evaluations, and the error control's progress reports (library
callback and the CLI's stderr status, with clean JSON on stdout)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory import fixed_point
from attnphase.theory import qmc_integrator as integrator_module
from attnphase.theory.engine import QMCConfig, solve
from attnphase.theory.resolution import Progress
from attnphase.theory.routing import SAFEGUARD_HALVINGS, default_backtrack
from attnphase.theory.status import Status

FIXED = 1.5
TINY = QMCConfig(points=64, scrambles=2, coarse=0)
"""A tiny size (cheap; its error is ~9 % on V at L = 2, α = 2): the error control grows it at a target of 2e-2
(to 256 × 8, measured), the same shapes in the library and the CLI test (compiled once)."""


def _overshooting(limit=None):
    """x = F(x) with F(x) = a − 4(x − a) in each coordinate (fixed point a = 1.5, Jacobian −4): the damped
    step at β = 0.6 multiplies the error by 1 − 5β = −2 (grows, alternating), at β = 0.3 by −0.5. ``limit``:
    states farther than this from a are invalid (``ok`` False)."""
    def F(X):
        ok = np.ones(len(X), bool) if limit is None else np.all(np.abs(X - FIXED) < limit, axis=1)
        return FIXED - 4.0 * (X - FIXED), ok, {}
    return F


def _res(X, FX):
    return np.linalg.norm(FX - X, axis=1) / np.linalg.norm(X, axis=1)


def test_safeguard_turns_an_amplified_oscillation_into_convergence():
    x0 = np.array([[1.0, 2.0], [1.6, 1.4]])
    plain = fixed_point.iterate(_overshooting(limit=1.5), x0, _res, anderson=0, max_steps=100)
    assert all(s is Status.INVALID_STATE for s in plain.status)
    for limit in (0.8, None):        # (i) step back from an invalid state, (ii) damp an oscillating mode
        run = fixed_point.iterate(_overshooting(limit), x0, _res, anderson=0, max_steps=100, backtrack=3)
        assert all(s is Status.CONVERGED for s in run.status), run.status
        np.testing.assert_allclose(run.x, FIXED, rtol=1e-4)
        # stable needs 1 − 5β > −1, i.e. β < 0.4: one halving (0.3) is enough, and no more are made
        assert np.all(run.damping == 0.3) and np.all(run.halvings == 1)
    # the budget spent: the row is reported, not rescued for ever
    run = fixed_point.iterate(_overshooting(limit=1.5), x0, _res, damping=1.0, anderson=0, max_steps=100,
                              backtrack=1)
    assert all(s is Status.INVALID_STATE for s in run.status) and np.all(run.damping == 0.5)


def test_safeguard_default_per_rank_and_bad_input():
    assert default_backtrack(ModelParams()) == 0                       # r = 1: unchanged behaviour
    assert default_backtrack(ModelParams(r=2)) == SAFEGUARD_HALVINGS
    with pytest.raises(ParameterError, match="backtrack"):
        fixed_point.iterate(_overshooting(), np.ones((1, 2)), _res, backtrack=-1)
    with pytest.raises(ParameterError, match="backtrack"):
        solve(ModelParams(), 1.0, backtrack=1.5)


def test_full_prox_calls_counts_rows_riding_in_a_full_call(monkeypatch):
    """One point, 2 scrambles: every full call's padding holds all active rows, so they all ride in it and get
    the global prox; ``full_prox_calls`` (the point's most-evaluated row) must equal the number of evaluations
    that called the full map — counted here by wrapping the compiled maps. Full calls asked for only at the
    start and to certify (``full_prox_every`` large): the row that certifies last rode in the other's
    certification, which the old count (full calls asked for by the row) missed."""
    calls = {"full": 0}
    real = integrator_module.compiled_map

    def counting(*a, **kw):
        fn = real(*a, **kw)
        warm = a[7] if len(a) > 7 else kw.get("warm", False)

        def wrapped(*args):
            calls["full"] += not warm
            return fn(*args)
        return wrapped

    monkeypatch.setattr(integrator_module, "compiled_map", counting)
    sol = solve(ModelParams(omega=0.3), 2.0, "semantic", full_prox_every=1000, qmc_config=TINY,
                stability=False)       # the growth factor's own map calls are not the solve's (stability_general)
    assert sol.converged and sol.iterations > 4
    assert sol.full_prox_calls == calls["full"], (sol.full_prox_calls, calls["full"], sol.iterations)
    assert sol.to_dict()["provenance"]["newton"]["full_prox_calls"] == calls["full"]


def test_progress_reports_growing_sizes():
    """A tiny start and target: the error control grows the size; the callback sees ``solve`` at the first
    size, ``grow`` at strictly larger work, ``done`` last, and the sizes in ``resolution``."""
    seen: list[Progress] = []
    cfg = QMCConfig(points=64, scrambles=2, coarse=0, target=2e-2)
    sol = solve(ModelParams(omega=0.3), 2.0, "semantic", qmc_config=cfg, progress=seen.append)
    stages = [p.stage for p in seen]
    assert stages[0] == "solve" and stages[-1] == "done" and "grow" in stages, stages
    work = [p.points * p.scrambles for p in seen if p.stage != "done"]
    assert all(b > a for a, b in zip(work, work[1:])), work
    sizes = [(e["points"], e["scrambles"]) for e in sol.resolution["sizes"]]
    assert [(p.points, p.scrambles) for p in seen if p.stage != "done"] == sizes
    for p in seen:
        if p.stage == "grow":
            assert p.rse > p.target and p.worst in ("q", "m", "theta", "V", "eps_g", "e_t")
    assert "QMC" in seen[1].describe() and "target" in seen[1].describe()


def test_cli_point_progress_on_stderr_json_on_stdout(capsys):
    from attnphase.cli import main
    with pytest.raises(SystemExit) as e:
        main(["theory", "point", "--alpha", "2", "--integrator", "qmc", "--qmc-points", "64", "--scrambles", "2",
              "--qmc-target", "0.02", "--json"])
    out = capsys.readouterr()
    assert e.value.code in (0, None)
    d = json.loads(out.out)                                   # stdout: the JSON and nothing else
    assert d["status"] == "converged" and len(d["provenance"]["resolution"]["sizes"]) >= 2
    assert d["provenance"]["iteration"]["backtrack"] == 0     # r = 1: no safeguard
    err = out.err
    assert "QMC 64 x 2: solving" in err and "growing" in err and "done" in err, err


def test_unconverged_point_names_its_failed_scrambles():
    """A point stopped before its fixed point: no values, and the provenance says which scrambles (by seed)
    failed, with status and residual."""
    sol = solve(ModelParams(omega=0.3), 2.0, "semantic", qmc_config=TINY, max_steps=3)
    assert sol.status is Status.MAX_STEPS and np.isnan(sol.values["q"])
    failed = sol.to_dict()["provenance"]["iteration"]["failed_scrambles"]
    assert [f["seed"] for f in failed] == [0, 1] and all(f["status"] == "max_steps" for f in failed)
    assert all(f["residual"] > 1e-5 for f in failed)


@pytest.mark.slow
def test_rank2_pinned_points_converge_on_the_default_settings():
    """r = 2, ω = 0.3, 512 × 4 (the bench's size), no iteration knob: positional α = 2 and semantic α = 1 ended
    ``invalid_state`` without the safeguard (measured: docs/notes/2026-12-05-theory-general.md, "Rank-2 defaults and
    progress"); with it they converge to the points the hand-set dampings found (the bench table, at the
    same points: q, m / θ, e_t within 1e-3 relative — they agree to the printed digits)."""
    p = ModelParams(r=2, omega=0.3)
    cfg = QMCConfig(points=512, scrambles=4)
    ref = {("positional", 2.0): (0.087434, 0.2264, 0.0034448), ("semantic", 1.0): (0.071835, 0.063283, 0.0020541)}
    for (branch, alpha), (q, z, e_t) in ref.items():
        off = solve(p, alpha, branch, qmc_config=cfg, backtrack=0)
        assert off.status is Status.INVALID_STATE, off.status
        sol = solve(p, alpha, branch, qmc_config=cfg)
        assert sol.converged, (branch, alpha, sol.status, sol.iteration)
        assert sol.iteration["backtrack"] == SAFEGUARD_HALVINGS and sol.iteration["halvings"] >= 1
        got = (sol.values["q"], sol.values["m" if branch == "positional" else "theta"], sol.values["e_t"])
        np.testing.assert_allclose(got, (q, z, e_t), rtol=1e-3)
