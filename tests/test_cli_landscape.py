"""`attnphase theory point --landscape` (cli/landscape_cmd.py, issue 32): the profiles' minimum is the semantic fixed
point the split rule finds (paper defaults, α = 2), and bad input is a one-line error with exit 2."""
from __future__ import annotations

import json

import pytest

from attnphase.cli import main

# the split rule at ω = 0.3, σ = 0.5, λ = 0.01, α = 2 (`attnphase theory point --alpha 2 --branch semantic`):
# θ = 0.15816 (θ/σ² = 0.6326)
SEMANTIC_THETA_OVER_S2 = 0.6326


def test_landscape_json_minima_are_the_fixed_points(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["theory", "point", "--alpha", "2", "--landscape", "--integrator", "qmc", "--qmc-points", "256",
              "--scrambles", "2", "--json"])
    assert exc.value.code in (0, None)
    d = json.loads(capsys.readouterr().out)
    assert d["provenance"]["kind"] == "theory point --landscape"
    theta, m = d["theta"], d["m"]
    assert theta["not_converged"] == 0 and len(theta["rows"]) == 8
    # e_t(θ): a minimum at the semantic branch, the lowest of the profile
    mins = [s for s in theta["stationary"] if s["kind"] == "min" and s["at"] > 0]
    assert len(mins) == 1 and mins[0]["at"] == pytest.approx(SEMANTIC_THETA_OVER_S2, rel=0.1)
    assert mins[0]["e_t"] <= min(r["e_t"] for r in theta["rows"]) + 1e-5
    # e_t(m), θ minimised over: the lowest student at m = 0 is that same semantic point (α = 2 > α_c = 1.24)
    assert m["stationary"][0] == {"kind": "min", "at": 0.0, "e_t": pytest.approx(mins[0]["e_t"], rel=0.02)}
    assert m["rows"][0]["theta"] == pytest.approx(SEMANTIC_THETA_OVER_S2, rel=0.1)


@pytest.mark.parametrize("extra, name", [(["--r", "2"], "--landscape"), (["--alpha", "-1"], "alpha")])
def test_landscape_bad_input_exits_2_with_one_line(extra, name, capsys):
    args = ["theory", "point", "--alpha", "2", "--landscape"] + extra
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if ln.strip()]
    assert len(err) == 1 and name in err[0], err
