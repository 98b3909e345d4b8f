"""Issue 30: a property-based fuzz test of the command line's argument validation (Hypothesis).

For every command, random numbers (huge, negative, NaN, ±inf, non-numbers), strings and matrices for its options
give exit 0 or exit 2 with one line — never a traceback. The heavy work is replaced by a stand-in that raises
:class:`Reached` (validation passed; nothing is computed), so each command takes a few seconds at most.
"""

from __future__ import annotations

import math
import os
import sys

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings, strategies as st  # noqa: E402

from attnphase.cli import main  # noqa: E402


class Reached(Exception):
    """The command got past its validation to the heavy work (replaced by this)."""


def _stop(*a, **kw):
    raise Reached


HEAVY = [("attnphase.simulate", "simulate"), ("attnphase.baseline", "eps_lin"), ("attnphase.theory", "solve_point"),
         ("attnphase.theory.engine", "solve"), ("attnphase.theory.engine", "solve_batch"),
         ("attnphase.phase", "follow_branch"), ("attnphase.phase", "transition"), ("attnphase.phase", "phase_diagram"),
         ("attnphase.basins", "run_basins"), ("attnphase.scaling", "run_scaling"), ("attnphase.sweeps", "run_sweep"),
         ("attnphase.reproduce", "reproduce")]


@pytest.fixture(scope="module")
def heavy_work_stubbed(tmp_path_factory):
    import importlib
    saved = []
    for mod_name, attr in HEAVY:
        mod = importlib.import_module(mod_name)
        if hasattr(mod, attr):
            saved.append((mod, attr, getattr(mod, attr)))
            setattr(mod, attr, _stop)
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "afile.csv").write_text("x\n")
    (folder / "s.toml").write_text('[[task]]\nkind = "baseline"\n')
    os.mkfifo(folder / "fifo")
    yield folder
    for mod, attr, value in saved:
        setattr(mod, attr, value)


NUMBER_TEXT = st.sampled_from(["nan", "inf", "-inf", "1e300", "-1e300", "1e-320", "0", "-0", "-1", "1", "2", "3",
                               "0.5", "abc", "", " ", "1,2", "0x10", "1_000", "99999999999999999999", "2.5", "1e5"])
NUMBERS = st.one_of(NUMBER_TEXT, NUMBER_TEXT, NUMBER_TEXT, st.integers(-10 ** 25, 10 ** 25).map(str),
                    st.floats(allow_nan=True, allow_infinity=True).map(repr))
MATRICES = st.one_of(
    st.lists(st.lists(st.one_of(st.floats(-2, 2), st.sampled_from([math.nan, math.inf])), min_size=1, max_size=4),
             min_size=1, max_size=4).map(lambda m: ";".join(",".join(repr(v) for v in row) for row in m)),
    st.sampled_from(["0.6,0.4;0.4,0.6", "1;-1", "1,0;0,1", "0.5,0.5", ";", ",,", "a,b;c,d", "1e400,0;0,1"]),
    st.text(max_size=12))
GRIDS = st.one_of(st.tuples(NUMBERS, NUMBERS, NUMBERS).map(":".join), NUMBERS,
                  st.sampled_from(["0.1:2:5", "0.5:1:2", "1:1:1", "0:1:0", "1:2:1000000", "a:b:c", "1:2"]))
INT_LISTS = st.one_of(st.lists(NUMBERS, min_size=0, max_size=4).map(",".join), st.just("20,40"))
WORDS = st.one_of(st.sampled_from(["semantic", "positional", "random", "uninformative", "free", "gd", "lbfgs",
                                   "exact", "sampled", "split", "product", "qmc", "auto", "csv", "parquet",
                                   "local", "dask", "semantic,positional"]), st.text(max_size=10))
PATHS = st.sampled_from(["{tmp}/afile.csv", "{tmp}", "{tmp}/new/deeper/x.csv", "{tmp}/fifo", "{tmp}/afile.csv/x",
                         "/proc/nope/x.csv", "{tmp}/fig.png", "{tmp}/fig.xyz", "{tmp}/s.toml", ""])

MODEL = {"--omega": NUMBERS, "--sigma": NUMBERS, "--lam": NUMBERS, "--A": MATRICES, "--L": NUMBERS}
RANKS = {"--r": NUMBERS, "--r-star": NUMBERS, "--P": MATRICES}
QMC = {"--integrator": WORDS, "--nodes": NUMBERS, "--rule": WORDS, "--qmc-points": NUMBERS, "--scrambles": NUMBERS,
       "--qmc-target": NUMBERS}
COMMANDS = {
    "simulate": ([], {**MODEL, **RANKS, "--alpha": NUMBERS, "--d": NUMBERS, "--init": WORDS, "--optimizer": WORDS,
                      "--instances": NUMBERS, "--seed": NUMBERS, "--test-error": WORDS, "--test-samples": NUMBERS,
                      "--steps": NUMBERS, "--lr": NUMBERS, "--gtol": NUMBERS, "--max-iter": NUMBERS,
                      "--warmup-steps": NUMBERS, "--init-scale": NUMBERS, "--out": PATHS}),
    "baseline": ([], {**MODEL, "--nodes": NUMBERS}),
    "theory point": (["--alpha"], {**MODEL, **RANKS, **QMC, "--alpha": NUMBERS, "--branch": WORDS}),
    "theory curve": (["--alphas", "--out"], {**MODEL, **RANKS, **QMC, "--alphas": GRIDS, "--branch": WORDS,
                                             "--out": PATHS}),
    "theory transition": ([], {"--omega": NUMBERS, "--sigma": NUMBERS, "--lam": NUMBERS, "--A": MATRICES,
                               "--nodes": NUMBERS, "--curve-nodes": NUMBERS, "--alphas": GRIDS,
                               "--alpha-max": NUMBERS, "--alpha-min": NUMBERS, "--xtol": NUMBERS}),
    "theory phase-diagram": (["--out"], {"--out": PATHS, "--omegas": GRIDS, "--alphas": GRIDS, "--sigma": NUMBERS,
                                         "--lam": NUMBERS, "--A": MATRICES, "--nodes": NUMBERS, "--workers": NUMBERS}),
    "basins": ([], {"--sigma": NUMBERS, "--lam": NUMBERS, "--A": MATRICES, "--L": NUMBERS, "--r": NUMBERS,
                    "--alphas": GRIDS, "--omegas": GRIDS, "--d": NUMBERS, "--instances": NUMBERS, "--init": WORDS,
                    "--init-scale": NUMBERS, "--optimizer": WORDS, "--warmup-steps": NUMBERS, "--steps": NUMBERS,
                    "--seed": NUMBERS, "--figure": PATHS, "--out": PATHS}),
    "scaling": ([], {**MODEL, "--r": NUMBERS, "--alpha": NUMBERS, "--init": WORDS, "--ds": INT_LISTS,
                     "--instances": NUMBERS, "--optimizer": WORDS, "--steps": NUMBERS, "--seed": NUMBERS,
                     "--figure": PATHS}),
    "sweep run": (["FILE"], {"FILE": PATHS, "--executor": WORDS, "--workers": NUMBERS, "--dask-local": NUMBERS}),
    "sweep status": (["FILE"], {"FILE": PATHS}),
    "sweep export": (["FILE"], {"FILE": PATHS, "--format": WORDS, "--out": PATHS}),
}


def _argv(draw, command: str, tmp: str) -> list[str]:
    required, options = COMMANDS[command]
    chosen = draw(st.lists(st.sampled_from(sorted(options)), max_size=3, unique=True))   # few: one bad value
    # is not hidden behind another option's refusal
    argv = command.split()
    for name in list(dict.fromkeys(required + chosen)):
        value = draw(options[name]).replace("{tmp}", tmp)
        argv += [value] if name == "FILE" else [f"{name}={value}"]      # '=': a value may start with '-'
    return argv


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_random_options_exit_0_or_2_never_a_traceback(command, heavy_work_stubbed, capsys):
    tmp = str(heavy_work_stubbed)

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate],       # no shrinking: bounded time; argv in the message
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(st.data())
    def check(data):
        argv = _argv(data.draw, command, tmp)
        capsys.readouterr()
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code
        except Reached:
            return                                        # validation passed; the work is not run here
        err = capsys.readouterr().err
        assert code in (0, 2), (argv, code, err)
        if code == 2:
            lines = [ln for ln in err.strip().splitlines() if ln.strip()]
            assert len(lines) == 1 and "Traceback" not in err, (argv, err)

    check()
    assert os.path.exists(os.path.join(tmp, "fifo")) and not os.path.isfile(os.path.join(tmp, "fifo"))
    sys.stdout.flush()


EDGES = ["nan", "inf", "-inf", "-1", "0", "1e300", "99999999999999999999", "abc", "2.5"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_number_option_at_each_edge_value(command, heavy_work_stubbed, capsys):
    """The systematic complement of the random search: every number option of the command, alone, at each edge
    value (the other options at their defaults)."""
    tmp = str(heavy_work_stubbed)
    required, options = COMMANDS[command]
    base = command.split()
    for name in required:
        value = {"--alpha": "1", "--alphas": "0.5:1:2", "--out": f"{tmp}/o/x.csv", "FILE": f"{tmp}/s.toml"}[name]
        base += [value] if name == "FILE" else [f"{name}={value}"]
    for name in (n for n, strategy in options.items() if strategy is NUMBERS):
        for value in EDGES:
            argv = base + [f"{name}={value}"]
            capsys.readouterr()
            try:
                main(argv)
                code = 0
            except SystemExit as exc:
                code = exc.code
            except Reached:
                continue
            err = capsys.readouterr().err
            assert code in (0, 2) and len([ln for ln in err.splitlines() if ln.strip()]) <= 1, (argv, code, err)
