"""The diagram's resolution check (phase/diagram_resolution.py, docs/phase_diagram.md "Resolution"): on a stand-in
solver whose e_t and ε_g depend on the outer order by a known amount the check reports exactly the shift of α_c
and α_l that amount makes; it is skipped at the validated defaults, turned off on request, and the CLI warns."""

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.phase import phase_diagram
from attnphase.phase.diagram_resolution import FINER_NODES, VALIDATED, cells_around, probe_omegas
from test_diagram_full import ALPHAS, Fake

D_ET, D_EPS = 1e-5, 2e-5
"""The stand-in's e_t^sem and ε_g^sem at nodes = 4 exceed their nodes = 8 values by these (0 at 8)."""


class Coarse(Fake):
    """:class:`test_diagram_full.Fake` with the semantic e_t and ε_g shifted by ``(8 − nodes)/4 ×`` (D_ET, D_EPS):
    Δ(e_t^sem − e_t^pos) = 0.001 (1 + ω − α) moves α_c by D_ET / 0.001 = 0.01, and ε_g^sem = 0.004 − 0.002 α moves
    α_l by D_EPS / 0.002 = 0.01 (where α_l is the semantic ε_g's crossing of ε_lin)."""

    def __call__(self, params, alpha, branch, *, nodes=None, **kw):
        from dataclasses import replace
        s = super().__call__(params, alpha, branch, nodes=nodes, **kw)
        if branch != "semantic":
            return s
        f = (8 - (nodes or 8)) / 4
        return replace(s, e_t=s.e_t + f * D_ET, eps_g=s.eps_g + f * D_EPS)


P = ModelParams(sigma=0.6)
OMEGAS = [0.1, 0.15, 0.2, 0.25, 0.3]


def _check(params=P, **kw):
    grid, lines = phase_diagram(params, OMEGAS, ALPHAS, solver=Coarse(), workers=1, **kw)
    return grid, lines, lines.attrs["resolution_check"]


def test_the_check_reports_the_stand_ins_known_shift():
    grid, lines, chk = _check()
    assert chk["nodes"] == 4 and chk["finer_nodes"] == FINER_NODES == 8
    assert chk["omegas"] == probe_omegas(OMEGAS) == [0.1, 0.3]
    np.testing.assert_allclose(lines["alpha_c"], 1 + np.array(OMEGAS) + 0.01, atol=1e-9)   # the coarse diagram
    for r in chk["per_omega"]:
        assert r["failed"] == 0 and r["cells"] >= 8
        assert r["d_alpha_c"] == pytest.approx(D_ET / 0.001, abs=1e-9)
        np.testing.assert_allclose(r["alpha_c_fine"], 1 + r["omega"], atol=1e-9)
    assert chk["max_d_alpha_c"] == pytest.approx(0.01, abs=1e-9)
    assert chk["max_rel_d_e_t"] == pytest.approx(max(D_ET / e for e in _e_sem(grid, chk)), rel=1e-6)
    assert chk["ok"] is False       # 0.01 > the tolerance


def _e_sem(grid, chk):
    out = []
    for r in chk["per_omega"]:
        g = grid[grid["omega"] == r["omega"]]
        out += [e for a, e in zip(g["alpha"], g["e_t_sem"]) if a in cells_around(g["alpha"], g["delta_e_t"], "down")]
    return out


def test_alpha_l_shift_is_the_semantic_eps_g_shift():
    _, lines, chk = _check()
    for r in chk["per_omega"]:
        if r["alpha_l"] is not None and r["alpha_l"] > r["alpha_c"] + 0.05:   # ε_g^sem's own crossing
            assert r["d_alpha_l"] == pytest.approx(D_EPS / 0.002, abs=1e-6)


def test_skipped_at_the_validated_defaults_and_on_request():
    _, _, chk = _check(ModelParams())
    assert chk == {"skipped": VALIDATED}
    _, _, off = _check(resolution_check=False)
    assert "turned off" in off["skipped"]
    _, _, forced = _check(ModelParams(), resolution_check=True)       # True runs it at the defaults too
    assert forced["max_d_alpha_c"] == pytest.approx(0.01, abs=1e-9)
    _, _, fine = _check(nodes=8)
    assert "already" in fine["skipped"]


def test_cells_around_are_the_cubics_four():
    a = np.arange(10.0)
    assert cells_around(a, 4.5 - a, "down") == [3.0, 4.0, 5.0, 6.0]
    assert cells_around(a, 0.5 - a, "down") == [0.0, 1.0, 2.0, 3.0]
    assert cells_around(a, 4.5 - a, "up") == []


def _cli(monkeypatch, tmp_path, *extra):
    from typer.testing import CliRunner

    import attnphase.phase as phase
    from attnphase.cli import _register, app
    real = phase.phase_diagram
    monkeypatch.setattr(phase, "phase_diagram", lambda params, w, a, **kw: real(
        params, OMEGAS, ALPHAS, solver=Coarse(), workers=1, resolution_check=kw["resolution_check"]))
    _register()
    return CliRunner().invoke(app, ["theory", "phase-diagram", "--out", str(tmp_path / "d"), "--sigma", "0.6",
                                    "--omegas", "0.1:0.3:5", "--alphas", "0.2:1.6:15", *extra])


def test_cli_warns_in_one_line_and_records_it(monkeypatch, tmp_path):
    import json
    res = _cli(monkeypatch, tmp_path)
    assert res.exit_code == 0, res.output
    warn = [ln for ln in res.output.splitlines() if "warning: resolution" in ln]
    assert len(warn) == 1 and "0.01" in warn[0] and "--nodes 8" in warn[0]
    prov = json.loads((tmp_path / "d" / "provenance.json").read_text())
    assert prov["resolution_check"]["max_d_alpha_c"] == pytest.approx(0.01, abs=1e-9)


def test_cli_no_resolution_check(monkeypatch, tmp_path):
    import json
    res = _cli(monkeypatch, tmp_path, "--no-resolution-check")
    assert res.exit_code == 0, res.output
    assert "warning: resolution" not in res.output
    prov = json.loads((tmp_path / "d" / "provenance.json").read_text())
    assert "turned off" in prov["resolution_check"]["skipped"]
