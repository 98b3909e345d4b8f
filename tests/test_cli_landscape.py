"""`attnphase theory point --landscape` (cli/landscape_cmd.py, issue 32): the profiles' minima are the fixed points
the split rule finds (paper defaults, α = 2), and bad input is a one-line error with exit 2."""
from __future__ import annotations

import json

import pytest

from attnphase.cli import main

# the split rule at ω = 0.3, σ = 0.5, λ = 0.01, α = 2 (`attnphase theory point --alpha 2 --branch semantic|positional`):
# semantic θ = 0.15816 (θ/σ² = 0.6326), positional m = 0.25824
SEMANTIC_THETA_OVER_S2, POSITIONAL_M = 0.6326, 0.25824


def test_landscape_json_minima_are_the_fixed_points(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["theory", "point", "--alpha", "2", "--landscape", "--integrator", "qmc", "--qmc-points", "512",
              "--scrambles", "2", "--json"])
    assert exc.value.code in (0, None)
    d = json.loads(capsys.readouterr().out)
    assert d["provenance"]["kind"] == "theory point --landscape"
    for key, where in (("theta", SEMANTIC_THETA_OVER_S2), ("m", POSITIONAL_M)):
        prof = d[key]
        assert prof["not_converged"] == 0 and len(prof["rows"]) == 8
        kinds = [s["kind"] for s in prof["stationary"]]
        assert kinds[0] == "max"                      # the uninformative point is unstable at α = 2 (MODEL.md §7)
        mins = [s for s in prof["stationary"] if s["kind"] == "min"]
        assert len(mins) == 1 and mins[0]["at"] == pytest.approx(where, rel=0.1)
    # the semantic minimum is the lower one (α = 2 > α_c = 1.24)
    assert d["theta"]["stationary"][1]["e_t"] < d["m"]["stationary"][1]["e_t"]


@pytest.mark.parametrize("extra, name", [(["--r", "2"], "--landscape"), (["--alpha", "-1"], "alpha")])
def test_landscape_bad_input_exits_2_with_one_line(extra, name, capsys):
    args = ["theory", "point", "--alpha", "2", "--landscape"] + extra
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if ln.strip()]
    assert len(err) == 1 and name in err[0], err
