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


def test_surface_json_has_the_grid_minima_and_provenance(capsys):
    """`--landscape --surface` at σ = 0.7, α = 0.5 (below the RS α_c: only the uninformative point) on a 2 × 3
    grid: one minimum, the mirror corner (m = 0, θ = 0), no pass; the grid's e_t in the JSON."""
    with pytest.raises(SystemExit) as exc:
        main(["theory", "point", "--alpha", "0.5", "--sigma", "0.7", "--landscape", "--surface",
              "--surface-thetas", "0:0.3:2", "--surface-ms", "0:0.2:3", "--qmc-points", "256", "--scrambles", "2",
              "--json"])
    assert exc.value.code in (0, None)
    d = json.loads(capsys.readouterr().out)
    assert d["provenance"]["kind"] == "theory point --landscape --surface"
    assert d["theta_over_sigma2"] == [0.0, 0.3] and d["m"] == [0.0, 0.1, 0.2]
    assert d["not_converged"] == 0 and len(d["grid"]["e_t"]) == 2 and len(d["grid"]["e_t"][0]) == 3
    assert [(b["theta_over_sigma2"], b["m"]) for b in d["minima"]] == [(0.0, 0.0)] and d["passes"] == []
    # the uninformative point's e_t (split rule 0.001682; QMC 256 × 2 within 1 %)
    assert d["minima"][0]["e_t"] == pytest.approx(0.001682, rel=0.01)


_LOADS = """
import sys
from attnphase.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    print("exit", exc.code, "jax" in sys.modules)
"""


@pytest.mark.parametrize("extra, needle", [
    (["--surface-thetas", "0:0.6:100", "--surface-ms", "0:0.3:100"], "--surface-thetas × --surface-ms"),
    (["--surface-thetas", "-0.1:0.5:3"], "--surface-thetas"),
    (["--surface-thetas", "0:1.2:3"], "--surface-thetas"),
    (["--surface-ms", "0.2:0.1:3"], "--surface-ms"),
    (["--surface-ms", "abc"], "--surface-ms"),
    (["--r", "2"], "--surface"),
])
def test_surface_refused_before_jax_with_one_line(extra, needle, tmp_path):
    import os
    import subprocess
    import sys
    args = ["theory", "point", "--alpha", "0.5", "--landscape", "--surface"] + extra
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", _LOADS, *args], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert out.stdout.split() == ["exit", "2", "False"], (out.stdout, out.stderr[-500:])
    assert out.stderr.count("\n") == 1 and needle in out.stderr, out.stderr
