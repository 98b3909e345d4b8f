"""`theory transition`, `theory phase-diagram`, `reproduce` and the API take the model options (--L --r --r-star
--A --P): parsing reaches the phase code with the model asked for; bad input exits 2 with one line."""

import pandas as pd
import pytest

from _safety import error_line, run_cli

from attnphase.model import ModelParams

A3 = "0.6,0.2,0.2;0.2,0.6,0.2;0.2,0.2,0.6"


@pytest.mark.parametrize("args,word", [
    (["theory", "transition", "--L", "3", "--A", "0.6,0.2,0.2;0.2,0.6,0.2;0.2,0.2,0.7"], "row-stochastic"),
    (["theory", "transition", "--qmc-points", "512"], "--qmc-points"),
    (["theory", "transition", "--L", "3", "--A", A3, "--qmc-points", "100"], "power of two"),
    (["theory", "transition", "--L", "3", "--A", A3, "--scrambles", "1"], "scrambles"),
    (["theory", "transition", "--r", "0"], "r"),
    (["theory", "phase-diagram", "--out", "x", "--L", "3", "--P", "1;2"], "P"),
    (["reproduce", "--L", "3", "--A", "0.5,0.5;0.5,0.5"], "A"),
])
def test_bad_model_input_exits_2_one_line(args, word, capsys):
    """In this process (a fresh interpreter per case cost ~2 CPU-s of imports; the entry point in a process of
    its own: tests/test_cli_simulate.py::test_bad_input_exits_2_with_one_line_subprocess)."""
    assert word in error_line(run_cli(capsys, *args))


def _capture(monkeypatch, module, name):
    seen = {}

    def fake(params, *a, **kw):
        seen.update(params=params, kw=kw)
        raise SystemExit(0)
    monkeypatch.setattr(module, name, fake)
    return seen


def test_transition_options_reach_the_phase_code(monkeypatch):
    import attnphase.phase as phase
    from typer.testing import CliRunner

    from attnphase.cli import _register, app
    _register()
    seen = _capture(monkeypatch, phase, "transition")
    res = CliRunner().invoke(app, ["theory", "transition", "--L", "3", "--A", A3, "--r", "2", "--r-star", "1",
                                   "--P", "1,0;0,1;-1,-1", "--omega", "0.2", "--qmc-points", "256",
                                   "--scrambles", "2", "--end-xtol", "0.05"])
    assert res.exit_code == 0, res.output
    p = seen["params"]
    assert (p.L, p.r, p.r_star, p.k, p.omega) == (3, 2, 1, 2, 0.2)
    assert seen["kw"]["qmc_config"].points == 256 and seen["kw"]["end_xtol"] == 0.05


def test_phase_diagram_options_reach_the_phase_code(monkeypatch, tmp_path):
    import attnphase.phase as phase
    from typer.testing import CliRunner

    from attnphase.cli import _register, app
    _register()
    seen = _capture(monkeypatch, phase, "phase_diagram")
    res = CliRunner().invoke(app, ["theory", "phase-diagram", "--out", str(tmp_path / "d"), "--L", "3", "--A", A3,
                                   "--omegas", "0.1:0.4:4", "--alphas", "0.5:2:6", "--qmc-points", "256"])
    assert res.exit_code == 0, res.output
    assert seen["params"].L == 3 and seen["kw"]["qmc_config"].points == 256


def test_api_transition_takes_model_keywords(monkeypatch):
    import attnphase.api as api
    import attnphase.phase as phase
    seen = {}

    class R:
        provenance, global_table = {}, pd.DataFrame()

    def fake(params, **kw):
        seen.update(params=params)
        return R()
    monkeypatch.setattr(phase, "transition", fake)
    api.transition(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]], r=2, omega=0.1)
    assert isinstance(seen["params"], ModelParams) and (seen["params"].L, seen["params"].r) == (3, 2)
