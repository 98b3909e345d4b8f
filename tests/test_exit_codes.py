"""Exit status 3 where convergence is required (issue 33): `theory point` prints its result with the status,
then exits 3 when the point did not converge (README, "Every command takes --help …")."""
from __future__ import annotations

import json

import pytest

import attnphase.theory as theory
from attnphase.cli import main


def test_unconverged_theory_point_prints_its_result_then_exits_3(monkeypatch, capsys):
    """A real solve cut to two iterations (the solver truly stops short of its tolerance)."""
    real = theory.solve_point

    def two_steps(*a, **k):
        return real(*a, **{**k, "max_steps": 2, "continuation": False, "stability": False})

    monkeypatch.setattr(theory, "solve_point", two_steps)
    with pytest.raises(SystemExit) as exc:
        main(["theory", "point", "--alpha", "1.5", "--branch", "positional", "--nodes", "4", "--json"])
    assert exc.value.code == 3
    out = capsys.readouterr()
    d = json.loads(out.out)                        # the result comes first, with its status
    assert d["converged"] is False and "not converged" in d["status"] and d["residual"] > 1e-6
    last = [ln for ln in out.err.strip().splitlines() if ln.strip()][-1]
    assert last.startswith("error: not converged: theory point (positional, α=1.5)"), out.err


def test_converged_theory_point_exits_0(monkeypatch, capsys):
    """The same point solved to its tolerance exits 0 (and the exit-3 path above is not taken by default)."""
    with pytest.raises(SystemExit) as exc:
        main(["theory", "point", "--alpha", "1.5", "--branch", "positional", "--nodes", "4", "--json"])
    assert exc.value.code in (0, None)
    d = json.loads(capsys.readouterr().out)
    assert d["converged"] is True and d["status"] == "converged"
