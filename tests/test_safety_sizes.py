"""Issue 30, items 2, 4, 5, 7 and 9: every size is refused up front (one line, exit 2) by the one set of
estimates in :mod:`attnphase.guards`, from the command line, the API and sweep validation alike; edge numbers
are one-line errors naming the parameter; ``attnphase.model(...)`` is callable."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attnphase
from attnphase import guards
from attnphase.errors import ParameterError

from _safety import error_line, run_cli


@pytest.mark.parametrize("args, needle", [
    # item 2: L, r beyond the maxima, before the L x L matrices are built (old: OOM / 'negative shift count')
    (["baseline", "--L", "1000000"], "L must be an integer in [2, 1024]"),
    (["theory", "point", "--alpha", "1", "--L", "3000"], "L must be an integer in [2, 1024]"),
    (["theory", "point", "--alpha", "1", "--L", "200"], "L must be at most 16"),
    (["theory", "point", "--alpha", "1", "--r", "1024"], "r must be an integer in [1, 256]"),
    (["theory", "point", "--alpha", "1", "--r", "200"], "r must be at most 8"),
    (["simulate", "--L", "5000"], "L must be"),
    # item 4: sizes (old: RESSOURCE_EXHAUSTED, OOM or an endless run)
    (["simulate", "--d", "20", "--instances", "1000000"], "instances must be an integer in [1, 100000]"),
    (["simulate", "--d", "20", "--instances", "100000"], "instances must be small enough to fit in memory"),
    (["theory", "point", "--alpha", "1", "--integrator", "qmc", "--qmc-points", "1073741824"], "--qmc-points"),
    (["theory", "point", "--alpha", "1", "--integrator", "qmc", "--qmc-points", "67108864", "--scrambles", "2"],
     "--qmc-points"),
    (["theory", "point", "--alpha", "1", "--integrator", "qmc", "--qmc-points", "1024", "--scrambles",
      "100000000"], "--scrambles must be an integer in [2, 64]"),
    (["theory", "point", "--alpha", "1", "--L", "3", "--qmc-points", "4194304", "--scrambles", "64"],
     "--qmc-points must be small enough to fit in memory"),
    (["basins", "--d", "10000000"], "--d must be an integer in [3, 1000000]"),
    (["scaling", "--ds", "20,10000000"], "--ds must be an integer in [3, 1000000]"),
    (["theory", "phase-diagram", "--out", "{tmp}/pd", "--omegas", "0.1:0.5:1000", "--alphas", "0.1:2:1000"],
     "a grid of at most 100000 points in all"),
    (["basins", "--alphas", "0.1:2:2000", "--omegas", "0.1:0.5:2000"], "a grid of at most 100000 points in all"),
    # item 5: edge numbers (old: ValueError / OverflowError tracebacks, or a 300-digit n in a 'd' error)
    (["simulate", "--alpha", "nan"], "alpha must be"),
    (["simulate", "--alpha", "inf"], "alpha must be"),
    (["simulate", "--alpha", "1e300"], "alpha must be in (0, 1e+06]"),
    (["simulate", "--seed", "99999999999999999999"], "seed must be an integer in [0, 4294967295]"),
    (["simulate", "--steps", "1000000000000"], "steps must be an integer in [0, 100000000]"),
    (["simulate", "--max-iter", "99999999999999999999"], "max_iter must be"),
    (["simulate", "--test-error", "sampled", "--test-samples", "1000000000000"], "test_samples must be"),
    (["baseline", "--sigma", "1e200"], "sigma must be in (0, 1000]"),
    # item 9: --init-scale > 0 as the help says (old: accepted, a 'converged' Q = 0)
    (["simulate", "--init", "random", "--init-scale", "0"], "--init-scale must be > 0"),
    # item 9: the refusal names the option given (old: 'target', 'nodes')
    (["theory", "point", "--alpha", "1", "--L", "3", "--qmc-target", "-1"], "--qmc-target must be >= 0"),
    (["theory", "transition", "--curve-nodes", "5"], "--curve-nodes must be even"),
])
def test_cli_refuses_sizes_and_edge_numbers_up_front(tmp_path, capsys, args, needle):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    line = error_line(run_cli(capsys, *args))
    assert needle in line and len(line) < 300, line
    assert not (tmp_path / "pd").exists()


@pytest.mark.parametrize("call, needle", [
    (lambda: attnphase.simulate(alpha=math.nan, d=20), "alpha"),
    (lambda: attnphase.simulate(alpha=1.0, d=20, seed=2 ** 70), "seed"),
    (lambda: attnphase.simulate(alpha=1.0, d="20"), "d must be"),
    (lambda: attnphase.simulate(alpha=1.0, d=20, instances=10 ** 7), "instances"),
    (lambda: attnphase.model(L=2.5), "L must be"),
    (lambda: attnphase.model(L=10 ** 6), "L must be an integer in [2, 1024]"),
    (lambda: attnphase.model(sigma="x"), "sigma must be a finite number"),
    (lambda: attnphase.baseline(sigma=1e200), "sigma must be"),
    (lambda: attnphase.solve(1.0, L=200), "L must be at most 16"),
    (lambda: attnphase.phase_diagram(np.linspace(0.1, 0.5, 1000), np.linspace(0.1, 2, 1000)), "100000"),
])
def test_api_refuses_with_the_parameter_name(call, needle):
    """Old code: bare ValueError / OverflowError / TypeError without the parameter's name, or an OOM."""
    with pytest.raises(ParameterError) as exc:
        call()
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_model_is_callable_and_stays_the_module():
    """Item 7. Old code: TypeError: 'module' object is not callable."""
    p = attnphase.model(L=3, r=2)
    assert isinstance(p, attnphase.ModelParams) and (p.L, p.r, p.k) == (3, 2, 3)
    assert np.allclose(p.A_array, 1.0 / 3)
    from attnphase.model import ModelParams
    assert ModelParams is attnphase.ModelParams and attnphase.model.PAPER_A == ((0.6, 0.4), (0.4, 0.6))


def test_one_estimate_set_for_cli_api_and_sweeps(tmp_path):
    """The same maxima from the three entry points (sweep validation reaches guards.check_simulation)."""
    from attnphase.sweeps import load
    f = tmp_path / "s.toml"
    f.write_text('[[task]]\nkind = "simulate"\ninstances = 1000000\nparams = { alpha = 1.0, d = 20 }\n')
    with pytest.raises(ParameterError, match=r"instances must be an integer in \[1, 100000\]"):
        load(f)
    assert guards.MAX_INSTANCES == 100_000 and guards.MAX_GRID_POINTS == 100_000
    with pytest.raises(ParameterError, match="instances"):
        guards.check_simulation(2, 1, 1, 1, alpha=1.0, d=20, instances=10 ** 6)


def test_simulate_json_warns_on_stderr_when_not_converged(capsys):
    """Item 9: --json printed no warning for unconverged instances (here GD for 2 steps)."""
    p = run_cli(capsys, "simulate", "--d", "20", "--steps", "2", "--instances", "2", "--json")
    assert p.returncode == 0, p.stderr
    assert "did not converge" in p.stderr and "max_steps" in p.stderr


_LOADS = """
import sys
from attnphase.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    print("exit", exc.code, "jax" in sys.modules, "matplotlib" in sys.modules)
"""


@pytest.mark.parametrize("args", [
    ["baseline", "--L", "1000000"],
    ["theory", "point", "--alpha", "1", "--L", "3000"],
    ["theory", "point", "--alpha", "1", "--integrator", "qmc", "--qmc-points", "1073741824"],
    ["theory", "point", "--alpha", "1", "--qmc-points", "1024", "--scrambles", "100000000"],
    ["theory", "phase-diagram", "--omegas", "0.1:0.5:1000", "--alphas", "0.1:2:1000", "--out", "unused_dir"],
    ["simulate", "--d", "20", "--instances", "1000000"],
    ["simulate", "--alpha", "nan"],
])
def test_refusal_loads_neither_jax_nor_matplotlib(args, tmp_path):
    """Issue 30, item 2/4 (refused "in under 2 s"): a refused size or number never imports JAX (≈ 2 s of the old
    1.8–2.4 s refusals) nor matplotlib; asserted on what the process imported, not on a timing."""
    import subprocess
    import sys
    import os
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", _LOADS, *args], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert out.stdout.split() == ["exit", "2", "False", "False"], (out.stdout, out.stderr[-500:])
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error:"), out.stderr


def test_import_attnphase_does_not_load_jax():
    """``import attnphase`` and ``attnphase.ModelParams`` stay free of JAX; ``attnphase.simulate`` (the module
    and the API function) loads it on first use and is callable whatever imported it first."""
    import subprocess
    import sys
    import os
    code = ("import sys, attnphase\nassert 'jax' not in sys.modules\np = attnphase.ModelParams(omega=0.2)\n"
            "assert 'jax' not in sys.modules\nimport attnphase.simulate as s\nassert callable(attnphase.simulate)\n"
            "assert s.TrainConfig and callable(attnphase.baseline) and callable(attnphase.model)\nprint('ok')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-800:]
