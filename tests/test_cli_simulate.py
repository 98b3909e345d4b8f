import json
import subprocess
import sys

import pandas as pd
import pytest

CMD = [sys.executable, "-c", "from attnphase.cli import main; main()"]
KEYS = {"m", "theta", "theta_over_sigma2", "q", "e_t", "eps_g", "eps_lin", "converged", "grad_norm",
        "iterations", "mean", "std", "params", "provenance"}


def run(*args):
    return subprocess.run(CMD + list(args), capture_output=True, text=True, timeout=300)


def test_simulate_json_and_csv(tmp_path):
    out = tmp_path / "r.csv"
    p = run("simulate", "--d", "16", "--alpha", "1", "--instances", "2", "--steps", "30",
            "--test-samples", "200", "--init", "positional", "--json", "--out", str(out))
    assert p.returncode == 0, p.stderr
    obj = json.loads(p.stdout)
    assert KEYS <= set(obj)
    assert len(obj["e_t"]) == 2 and obj["params"]["omega"] == 0.3
    assert obj["provenance"]["config"]["config"]["init"] == "positional"
    df = pd.read_csv(out)
    assert len(df) == 2 and {"alpha", "d", "eps_g", "m"} <= set(df.columns)


def test_simulate_table_and_baseline():
    p = run("simulate", "--d", "12", "--instances", "1", "--steps", "5", "--test-samples", "50",
            "--optimizer", "lbfgs")
    assert p.returncode == 0, p.stderr
    assert "eps_g" in p.stdout or "e_t" in p.stdout
    b = run("baseline", "--json")      # 0.0019714: regression pin of baseline.eps_lin (MODEL.md §5)
    assert b.returncode == 0 and abs(json.loads(b.stdout)["eps_lin"] - 0.0019714) < 1e-6


def test_bad_input_exits_2_with_one_line_subprocess():
    p = run("simulate", "--init", "bogus")
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "init" in lines[0], p.stderr


@pytest.mark.parametrize("args", [["simulate", "--omega", "1.5"], ["simulate", "--d", "0"],
                                  ["simulate", "--A", "0.6,0.4;0.5,0.6"], ["simulate", "--optimizer", "adam"],
                                  ["simulate", "--instances", "0"], ["baseline", "--sigma", "-1"]])
def test_bad_input_exits_2_in_process(args, capsys):
    from attnphase.cli import main
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), err
