"""Sweeps: TOML validation, SQLite store, local/Dask executors, crash-resume, export, compare, CLI."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from attnphase import ParameterError
from attnphase.sweeps import TaskKind, load, register_kind, run_sweep, status
from attnphase.sweeps.report import compare, export, frame
from attnphase.sweeps.store import Store
from attnphase.sweeps.tasks import _int_ge, _pos_float

FAKE_SRC = '''
import math, os, time
import numpy as np
from attnphase.sweeps.tasks import TaskKind, register_kind, _pos_float, _int_ge

def fake_runner(cfg):
    p = cfg["params"]
    if p.get("fail"):
        raise RuntimeError("boom")
    time.sleep(p.get("sleep_ms", 0) / 1000)
    gate = os.environ.get("ATTNPHASE_TEST_GATE")
    if gate:            # an event, not a sleep: after 3 tasks the runner blocks until the gate opens
        started = len(os.listdir(gate))
        open(os.path.join(gate, "task-%d" % started), "w").close()
        t0 = time.monotonic()
        while started >= 3 and not os.path.exists(os.path.join(gate, "open")) and time.monotonic() - t0 < 300:
            time.sleep(0.01)
    rng = np.random.default_rng([cfg.get("seed") or 0, int(p["alpha"] * 1000), int(cfg["model"]["omega"] * 1000)])
    n = cfg.get("instances", 1)
    m = (p["alpha"] * (1 - cfg["model"]["omega"]) + 0.01 * rng.standard_normal(n)).tolist()
    return {"scalars": {"alpha_echo": p["alpha"]}, "converged": True, "provenance": {"pid": os.getpid()},
            "per_instance": {"m": m, "theta": m, "eps_g": [0.1] * n, "e_t": [0.05] * n}}

def fake_theory(cfg):
    p = cfg["params"]
    v = p["alpha"] * (1 - cfg["model"]["omega"])
    return {"scalars": {"m": v, "theta": v, "eps_g": 0.1, "e_t": 0.05}, "converged": True, "per_instance": {}}

register_kind(TaskKind("fake", fake_runner, instanced=True,
    params={"alpha": _pos_float, "d": _int_ge(1), "init": lambda n, v: v,
            "sleep_ms": _int_ge(0), "fail": lambda n, v: bool(v)},
    defaults={"init": "semantic"}))
register_kind(TaskKind("fake_theory", fake_theory, seeded=False,
    params={"alpha": _pos_float, "branch": lambda n, v: v}))
'''
exec(FAKE_SRC)


def write(tmp_path: Path, body: str, name: str = "sw.toml") -> Path:
    f = tmp_path / name
    f.write_text(textwrap.dedent(body))
    return f


BASIC = """
[sweep]
name = "t"
output = "out"
[[task]]
kind = "fake"
seeds = 2
instances = 3
params = { d = 20 }
grid = { alpha = [0.5, 1.0], omega = { start = 0.1, stop = 0.3, num = 3 } }
"""


# --------------------------------------------------------------------------- spec

def test_expansion_keys_and_output_relative_to_file(tmp_path):
    sw = load(write(tmp_path, BASIC))
    assert len(sw.tasks) == 2 * 3 * 2
    assert len(set(sw.keys)) == 12
    assert sw.output == (tmp_path / "out").resolve()
    t = sw.tasks[0]
    assert t["model"]["omega"] == 0.1 and t["model"]["sigma"] == 0.5 and t["instances"] == 3
    assert t["version"] and t["params"]["d"] == 20
    # keys are content hashes: same file, same keys; a changed parameter changes them
    assert load(write(tmp_path, BASIC, "b.toml")).keys == sw.keys
    assert set(load(write(tmp_path, BASIC.replace("d = 20", "d = 21"), "c.toml")).keys).isdisjoint(sw.keys)


def test_zip_and_points(tmp_path):
    sw = load(write(tmp_path, """
    [[task]]
    kind = "fake"
    params = { d = 5, alpha = 1.0 }
    zip = { omega = [0.1, 0.2], sigma = [0.5, 0.6] }
    points = [ { lam = 0.0 }, { lam = 0.1 } ]
    """))
    got = sorted((t["model"]["omega"], t["model"]["sigma"], t["model"]["lam"]) for t in sw.tasks)
    assert got == [(0.1, 0.5, 0.0), (0.1, 0.5, 0.1), (0.2, 0.6, 0.0), (0.2, 0.6, 0.1)]


@pytest.mark.parametrize("body, needle", [
    ('grid = { alpha = [1.0], omgea = [0.1] }', "omgea"),                 # unknown parameter
    ('grid = { alpha = [1.0], omega = [0.1, 2.0] }', "omega must be in [0, 1]"),   # out of range
    ('grid = { alpha = [], omega = [0.1] }', "empty grid"),               # empty grid
    ('grid = { alpha = { start = 0.1, stop = 1, num = 0 } }', "empty grid"),
    ('grid = { alpha = [-1.0] }', "alpha must be > 0"),
    ('grid = { alpha = [1.0], sigma = [0] }', "sigma"),
    ('grid = { alpha = [1.0] }\nseeds = []', "seeds"),
])
def test_bad_sweep_files_fail_before_running(tmp_path, body, needle):
    f = write(tmp_path, f'[sweep]\noutput = "o"\n[[task]]\nkind = "fake"\nparams = {{ d = 5 }}\n{body}\n')
    with pytest.raises(ParameterError) as exc:
        load(f)
    msg = str(exc.value)
    assert needle in msg and "\n" not in msg
    assert not (tmp_path / "o").exists()          # nothing created, nothing ran


def test_bad_kind_and_table(tmp_path):
    with pytest.raises(ParameterError, match="kind"):
        load(write(tmp_path, '[[task]]\nkind = "nope"\n'))
    with pytest.raises(ParameterError, match="at least one"):
        load(write(tmp_path, '[sweep]\nname = "x"\n'))
    with pytest.raises(ParameterError, match="TOML"):
        load(write(tmp_path, '[[task]\n'))


def test_cli_bad_file_exits_2_with_one_line(tmp_path, capsys):
    from _safety import error_line, run_cli      # in this process: a fresh interpreter costs ~2 CPU-s of imports
    f = write(tmp_path, '[[task]]\nkind = "simulate"\nparams = { d = 5 }\ngrid = { alpha = [1.0], omega = [2.0] }\n')
    assert "omega" in error_line(run_cli(capsys, "sweep", "run", str(f)))
    assert not (tmp_path / "sw_out").exists()


# --------------------------------------------------------------------------- store + local executor

def test_local_run_idempotent_and_status(tmp_path):
    sw = load(write(tmp_path, BASIC))
    assert status(sw)["pending"] == 12
    c = run_sweep(sw)
    assert c == {"ran": 12, "done": 12, "failed": 0, "skipped": 0, "claimed_elsewhere": 0, "failed_keys": []}
    with Store(sw.db_path) as st:
        before = st.rows()
        mode = st.conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    assert run_sweep(sw)["ran"] == 0                        # done tasks are skipped
    with Store(sw.db_path) as st:
        assert st.rows() == before
    s = status(sw)
    assert (s["done"], s["pending"], s["failed"]) == (12, 0, 0)
    r = before[0]
    assert r["provenance"]["git"] == r["git"] and r["wall_s"] >= 0 and r["converged"] == 1
    assert r["provenance"]["runner"]["pid"] == os.getpid()


def test_failed_tasks_recorded_and_retried(tmp_path):
    body = BASIC.replace("params = { d = 20 }", "params = { d = 20, fail = true }")
    f = write(tmp_path, body)
    sw = load(f)
    c = run_sweep(sw)
    assert c["failed"] == 12 and status(sw)["failed"] == 12
    rows = frame(sw)
    assert (rows.status == "failed").all() and rows.error.str.contains("boom").all()
    assert run_sweep(sw)["ran"] == 0                        # not retried unless asked
    assert run_sweep(sw, retry_failed=True)["failed"] == 12
    with Store(sw.db_path) as st:
        assert {r["attempts"] for r in st.rows()} == {2}


def test_export_csv_parquet(tmp_path):
    sw = load(write(tmp_path, BASIC))
    run_sweep(sw)
    p = export(sw, "csv")
    import pandas as pd
    df = pd.read_csv(p)
    assert len(df) == 12 * 3 and {"alpha", "omega", "seed", "instance", "m", "key"} <= set(df.columns)
    q = export(sw, "parquet", tmp_path / "x.parquet")
    assert len(pd.read_parquet(q)) == 36
    with pytest.raises(ParameterError):
        export(sw, "xlsx")


def _register_fake():          # runs in spawned pool workers (importing this module registers the kinds)
    pass


def env_probe(cfg):
    """A task kind that reports the worker's JAX memory settings (docs/gpu.md)."""
    from attnphase.sweeps.executors import DEVICE_MEMORY_ENV
    return {"scalars": {k: os.environ.get(k, "unset") for k in DEVICE_MEMORY_ENV}, "converged": True,
            "per_instance": {}}


register_kind(TaskKind("env_probe", env_probe, seeded=False, params={"alpha": _pos_float}))
PROBE = """
[sweep]
name = "e"
output = "out"
[[task]]
kind = "env_probe"
grid = { alpha = [1.0, 2.0] }
"""


def _probe_rows(sw):
    with Store(sw.db_path) as st:
        return [r["result"]["scalars"] for r in st.rows()]


def test_worker_processes_do_not_preallocate_the_accelerator(tmp_path, monkeypatch):
    """Pool and Dask worker processes allocate device memory as needed (JAX preallocates 75 % of a GPU per
    process), unless the user chose a memory setting: then theirs reaches the workers unchanged."""
    from attnphase.sweeps.executors import DEVICE_MEMORY_ENV, worker_environment
    for k in DEVICE_MEMORY_ENV:
        monkeypatch.delenv(k, raising=False)
    sw = load(write(tmp_path, PROBE))
    assert run_sweep(sw, workers=2, initializer=_register_fake)["done"] == 2
    assert [r["XLA_PYTHON_CLIENT_PREALLOCATE"] for r in _probe_rows(sw)] == ["false", "false"]
    assert worker_environment({"XLA_PYTHON_CLIENT_MEM_FRACTION": ".2"}) == {}
    monkeypatch.setenv("XLA_PYTHON_CLIENT_MEM_FRACTION", ".2")
    (tmp_path / "b").mkdir()
    sw = load(write(tmp_path / "b", PROBE))
    assert run_sweep(sw, workers=2, initializer=_register_fake)["done"] == 2
    assert all(r["XLA_PYTHON_CLIENT_PREALLOCATE"] == "unset" and r["XLA_PYTHON_CLIENT_MEM_FRACTION"] == ".2"
               for r in _probe_rows(sw))


def test_dask_worker_processes_do_not_preallocate_the_accelerator(monkeypatch):
    from attnphase.sweeps.executors import DEVICE_MEMORY_ENV, dask_client
    for k in DEVICE_MEMORY_ENV:
        monkeypatch.delenv(k, raising=False)
    with dask_client(dask_local=1, processes=True) as client:
        seen = client.run(lambda: os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"))   # in the worker process
    assert list(seen.values()) == ["false"]
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" not in os.environ                        # the parent is untouched


def test_process_pool_matches_in_process(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    a, b = load(write(tmp_path / "a", BASIC)), load(write(tmp_path / "b", BASIC))
    run_sweep(a)
    assert run_sweep(b, workers=2, initializer=_register_fake)["done"] == 12
    ra, rb = _result_rows(a), _result_rows(b)
    assert ra.keys() == rb.keys() and all(ra[k] == rb[k] for k in ra)


def test_unregistered_kind_in_worker_is_recorded_not_dropped(tmp_path):
    sw = load(write(tmp_path, BASIC))
    c = run_sweep(sw, workers=2)           # spawn workers do not know "fake": every task fails, all recorded
    assert c["ran"] == 12 and c["failed"] == 12 and status(sw)["failed"] == 12


# --------------------------------------------------------------------------- Dask

def _result_rows(sw):
    with Store(sw.db_path) as st:
        return {r["key"]: (r["status"], r["result"]) for r in st.rows()}


def test_dask_localcluster_same_rows_as_local(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    a, b = load(write(tmp_path / "a", BASIC)), load(write(tmp_path / "b", BASIC))
    run_sweep(a)
    run_sweep(b, executor="dask", dask_local=1, dask_processes=False)
    ra, rb = _result_rows(a), _result_rows(b)
    assert ra.keys() == rb.keys() and len(ra) == 12
    for k in ra:
        assert ra[k][0] == rb[k][0] == "done"
        assert ra[k][1] == rb[k][1]


# --------------------------------------------------------------------------- crash / resume

CRASH_SCRIPT = FAKE_SRC + '''
import sys
from attnphase.sweeps import load, run_sweep
run_sweep(load(sys.argv[1]))
'''


def test_kill9_partway_then_resume(tmp_path):
    body = BASIC.replace("seeds = 2", "seeds = 4")
    f = write(tmp_path, body)
    sw = load(f)
    n = len(sw.tasks)
    gate = tmp_path / "gate"            # the 4th task blocks there: the kill lands on a partial sweep
    gate.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", CRASH_SCRIPT, str(f)], env={**os.environ,
                                                                           "ATTNPHASE_TEST_GATE": str(gate)})
    deadline = time.time() + 60
    done_before = 0
    while time.time() < deadline:
        if sw.db_path.exists():
            try:
                done_before = status(sw)["done"]
            except sqlite3.OperationalError:
                done_before = 0
            if done_before >= 3:
                break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with Store(sw.db_path) as st:
        snap = {r["key"]: r for r in st.rows()}
    assert 3 <= len(snap) < n, "kill landed too late to test a partial sweep"
    assert all(r["status"] == "done" and r["result"] for r in snap.values())
    c = run_sweep(sw)
    assert c["ran"] == n - len(snap) and c["skipped"] == len(snap)
    with Store(sw.db_path) as st:
        rows = st.rows()
        count = st.conn.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM tasks").fetchone()
    assert count == (n, n) and {r["key"] for r in rows} == set(sw.keys)
    for r in rows:
        if r["key"] in snap:
            assert r == snap[r["key"]]                     # finished rows unchanged


# --------------------------------------------------------------------------- compare

def test_compare_overlays_theory_by_branch(tmp_path):
    f = write(tmp_path, """
    [sweep]
    output = "cmp"
    [[task]]
    kind = "fake"
    seeds = 3
    instances = 4
    params = { d = 20 }
    grid = { alpha = [0.5, 1.0], omega = [0.1, 0.3], init = ["semantic", "positional"] }
    [[task]]
    kind = "fake_theory"
    grid = { alpha = [0.5, 1.0], omega = [0.1, 0.3], branch = ["semantic", "positional"] }
    """)
    sw = load(f)
    run_sweep(sw)
    table, out = compare(sw, sim_kinds=("fake",), theory_kinds=("fake_theory",))
    assert len(table) == 8 and set(table.branch) == {"semantic", "positional"}
    assert (table.n == 12).all()
    assert np.allclose(table.m_theory, table.alpha * (1 - table.omega))
    assert (table.m_dev_se.abs() < 6).all()
    assert (out / "compare.csv").exists() and (out / "compare_semantic.png").exists()
    assert out == sw.output / "compare"


def test_cli_run_status_export(tmp_path, capsys):
    from attnphase.cli import main as _main

    def main(argv):
        with pytest.raises(SystemExit) as e:
            _main(argv)
        assert e.value.code in (0, None)
    f = write(tmp_path, BASIC)
    main(["sweep", "run", str(f), "--quiet"])
    capsys.readouterr()
    main(["sweep", "status", str(f), "--json"])
    st = json.loads(capsys.readouterr().out)
    assert st["done"] == 12 and st["pending"] == 0
    main(["sweep", "export", str(f), "--format", "csv", "--out", str(tmp_path / "r.csv")])
    assert (tmp_path / "r.csv").exists()


# --------------------------------------------------------------------------- adapters against the documented APIs

def test_simulate_adapter_with_stub_module(tmp_path, monkeypatch):
    """run_simulate against a stub with the documented signature (the real module may not exist yet)."""
    import types
    from dataclasses import dataclass

    calls = []

    @dataclass(frozen=True)
    class TrainConfig:
        init: str = "semantic"
        optimizer: str = "gd"
        lr: float = 0.15
        steps: int = 5000
        gtol: float | None = None
        max_iter: int | None = None
        x64: bool = False

    def simulate(params, *, alpha, d, config=TrainConfig(), instances=1, seed=0, test_samples=50_000,
                 progress=None):
        calls.append((params.omega, alpha, d, config, instances, seed, test_samples))
        n = instances
        arr = np.linspace(0.1, 0.2, n)
        return types.SimpleNamespace(m=arr, theta=-arr, theta_over_sigma2=arr * 4, q=arr, e_t=arr,
                                     eps_g=arr, eps_lin=arr, grad_norm=arr * 0, iterations=np.full(n, 7),
                                     converged=np.array([True] * n), provenance={"stub": True})

    mod = types.ModuleType("attnphase.simulate")
    mod.TrainConfig, mod.simulate = TrainConfig, simulate
    monkeypatch.setitem(sys.modules, "attnphase.simulate", mod)
    f = write(tmp_path, """
    [[task]]
    kind = "simulate"
    seeds = [3]
    instances = 5
    params = { d = 20, steps = 7, optimizer = "lbfgs", test_samples = 100 }
    grid = { alpha = [0.5], omega = [0.2], init = ["positional"] }
    """)
    sw = load(f)
    assert run_sweep(sw)["done"] == 1
    (om, alpha, d, cfg, inst, seed, nt), = calls
    assert (om, alpha, d, inst, seed, nt) == (0.2, 0.5, 20, 5, 3, 100)
    assert (cfg.init, cfg.optimizer, cfg.steps, cfg.lr) == ("positional", "lbfgs", 7, 0.15)
    df = frame(sw)
    assert len(df) == 5 and df.iterations.tolist() == [7] * 5 and df.converged.all()
    with Store(sw.db_path) as st:
        assert st.rows()[0]["provenance"]["runner"] == {"stub": True}


def test_compare_without_store_exits_2(tmp_path):
    from attnphase.cli import main
    f = write(tmp_path, BASIC)
    with pytest.raises(SystemExit) as e:
        main(["compare", str(f)])
    assert e.value.code == 2
