"""Issue 12: honest exits, clean interruption, safe stores, output paths, size guards, general L through the CLI."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from attnphase.cli import main
from attnphase.sweeps import load, run_sweep, status
from attnphase.sweeps.store import Store

SRC = str(Path(__file__).resolve().parents[1] / "src")
ENV = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}

# A sweep task kind whose runner logs every execution (to count them) and can sleep or fail.
KIND_SRC = '''
import os, time
from attnphase.sweeps.tasks import TaskKind, register_kind, _pos_float, _int_ge

def logged_runner(cfg):
    p = cfg["params"]
    with open(os.environ["ATTNPHASE_TEST_LOG"], "a") as f:
        f.write(cfg["key"] + "\\n")
    rendezvous = os.environ.get("ATTNPHASE_TEST_RENDEZVOUS")
    if rendezvous:      # an event, not a sleep: no task ends before every runner has started one
        open(os.path.join(rendezvous, str(os.getpid())), "w").close()
        t0 = time.monotonic()
        while len(os.listdir(rendezvous)) < 2:
            if time.monotonic() - t0 > 120:
                raise RuntimeError("the other runner never started a task")
            time.sleep(0.01)
    time.sleep(p.get("sleep_ms", 0) / 1000)
    if p.get("fail"):
        raise RuntimeError("boom at alpha=%g" % p["alpha"])
    n = cfg.get("instances", 1)
    return {"scalars": {}, "converged": True, "per_instance": {"m": [p["alpha"]] * n, "theta": [0.0] * n,
            "eps_g": [0.1] * n, "e_t": [0.05] * n}}

register_kind(TaskKind("logged", logged_runner, instanced=True,
    params={"alpha": _pos_float, "sleep_ms": _int_ge(0), "fail": lambda n, v: bool(v),
            "init": lambda n, v: v}, defaults={"init": "semantic"}))
'''
exec(KIND_SRC)
RUN_CLI = KIND_SRC + '''
import sys
from attnphase.cli import main
sys.argv = ["attnphase"] + sys.argv[1:]
main()
'''


def sweep_file(tmp_path: Path, alphas, sleep_ms=0, fail_alpha=None, seeds=1, name="s.toml") -> Path:
    pts = ", ".join(f"{{ alpha = {a}, fail = {'true' if a == fail_alpha else 'false'} }}" for a in alphas)
    f = tmp_path / name
    f.write_text(textwrap.dedent(f"""
    [sweep]
    name = "rb"
    output = "out"
    [[task]]
    kind = "logged"
    seeds = {seeds}
    params = {{ sleep_ms = {sleep_ms} }}
    points = [ {pts} ]
    """))
    return f


def cli(*args, env_extra=None, timeout=300):
    env = {**ENV, **(env_extra or {})}
    return subprocess.run([sys.executable, "-c", RUN_CLI, *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def in_process(capsys, *args):
    """``attnphase ARGS`` in this process (fast: no interpreter/JAX start); returns (code, stdout, stderr)."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


# A log line of the C++ runtime (absl/glog format, e.g. ``W1204 18:00:00.123456  4242 gpu_x.cc:12] ...``, or
# absl's notice before its log is initialised): XLA writes these to the process's stderr on some machines
# (GPU drivers, compilers); they are not the command's output.
_RUNTIME_LOG = re.compile(r"^([IWEF]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\] |WARNING: All log messages before absl)")


def one_line_error(p) -> str:
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip() and not _RUNTIME_LOG.match(ln)]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


# --------------------------------------------------------------------------- exit codes


def test_sweep_run_exits_1_and_names_failed_task(tmp_path, monkeypatch, capsys):
    log = tmp_path / "log"
    f = sweep_file(tmp_path, [0.5, 1.0, 1.5], fail_alpha=1.0)
    p = cli("sweep", "run", str(f), "--quiet", env_extra={"ATTNPHASE_TEST_LOG": str(log)})
    assert p.returncode == 1, p.stderr                       # the real process's exit status
    assert "failed: " in p.stderr and "boom at alpha=1" in p.stderr and "'alpha': 1.0" in p.stderr
    monkeypatch.setenv("ATTNPHASE_TEST_LOG", str(log))
    p = in_process(capsys, "sweep", "run", str(f), "--json")
    out = json.loads(p.stdout)
    assert p.returncode == 1 and out["status"]["failed"] == 1 and out["failed"][0]["params"]["alpha"] == 1.0
    assert out["provenance"]["attnphase_version"]
    ok = sweep_file(tmp_path, [0.5, 1.5], name="ok.toml")
    p = in_process(capsys, "sweep", "run", str(ok), "--quiet")
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("body, needle", [
    ('kind = "theory"\nparams = { alpha = 1.0, L = 3 }', "L = 2, r = 1"),
    ('kind = "theory"\nparams = { alpha = 1.0, r = 2 }', "L = 2, r = 1"),
    ('kind = "theory"\nparams = { alpha = 1.0, nodes = 3 }', "nodes"),
    ('kind = "theory"\nparams = { alpha = 1.0, nodes = 1000 }', "nodes"),
    ('kind = "simulate"\nparams = { alpha = 1.0, d = 1 }', "d must be an integer in [3, 1000000]"),
    ('kind = "simulate"\nparams = { alpha = 1.0, d = 10, lr = -1 }', "lr"),
    ('kind = "simulate"\nparams = { alpha = 2.0, d = 100000 }', "fit in memory"),
    ('kind = "simulate"\nparams = { d = 10 }\ngrid = { alpha = [1.0, 1.0] }', "listed once"),
    ('kind = "baseline"\nparams = { L = 400 }', "fit in memory"),   # ~1.9 TiB: over the limit on any machine
])
def test_sweep_validation_before_any_store(tmp_path, body, needle, capsys):
    f = tmp_path / "v.toml"
    f.write_text(f'[sweep]\nname = "v"\noutput = "out"\n[[task]]\n{body}\n')
    with pytest.raises(SystemExit) as e:
        main(["sweep", "run", str(f)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_theory_request_checked_before_work():
    from attnphase.cli._common import check_theory_request
    from attnphase.errors import ParameterError
    from attnphase.model import ModelParams
    check_theory_request(ModelParams(), 8)
    for params, nodes in ((ModelParams(), 3), (ModelParams(), 1000), (ModelParams(L=3, A=[[1 / 3] * 3] * 3), 8)):
        with pytest.raises(ParameterError):
            check_theory_request(params, nodes)


def test_big_sweep_needs_yes_and_bad_options(tmp_path, capsys):
    f = tmp_path / "big.toml"
    f.write_text('[sweep]\noutput = "out"\n[[task]]\nkind = "logged"\nparams = { }\n'
                 'grid = { alpha = { start = 0.1, stop = 2, num = 1500 } }\n')
    for args, needle in ((["sweep", "run", str(f)], "--yes"),
                         (["sweep", "run", str(f), "--yes", "--workers", "-1"], "--workers"),
                         (["sweep", "run", str(f), "--executor", "bogus"], "--executor")):
        with pytest.raises(SystemExit) as e:
            main(args)
        assert e.value.code == 2 and needle in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_size_guards_and_small_cli_errors(tmp_path, capsys):
    for args, needle in ((["baseline", "--nodes", "100000"], "nodes must be small enough"),
                         (["baseline", "--L", "400"], "L must be small enough"),   # ~1.9 TiB
                         (["simulate", "--d", "1"], "d must be an integer in [3, 1000000]"),
                         (["reproduce", "--seed", "-1"], "--seed"),
                         (["simulate", "--d", "abc"], "--d"),
                         (["simulate", "--omega", "1.4"], "got 1.4"),
                         (["theory", "curve", "--alphas", "1:2:1", "--out", str(tmp_path / "c.csv")],
                          "would drop STOP"),
                         (["theory", "curve", "--alphas", "1:2:100000000", "--out", str(tmp_path / "c.csv")],
                          "at most 100000 points")):
        p = in_process(capsys, *args)
        assert p.returncode == 2, (args, p.stderr)
        line = one_line_error(p)
        assert needle in line and "np.float64" not in line, line
    p = cli("baseline", "--nodes", "100000")                 # and as a real process: exit 2, one line
    assert p.returncode == 2 and "nodes must be small enough" in one_line_error(p)


# --------------------------------------------------------------------------- stores


def _finished_sweep(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNPHASE_TEST_LOG", str(tmp_path / "log"))
    f = sweep_file(tmp_path, [0.5, 1.0])
    run_sweep(load(f))
    return f, load(f)


def test_reading_commands_leave_a_read_only_store_untouched(tmp_path, monkeypatch, capsys):
    f, sw = _finished_sweep(tmp_path, monkeypatch)
    folder = sw.db_path.parent
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    os.chmod(sw.db_path, 0o444)
    os.chmod(folder, 0o555)
    try:
        main_ok = []
        for args in (["sweep", "status", str(f), "--json"],
                     ["sweep", "export", str(f), "--out", str(tmp_path / "r.csv")]):
            with pytest.raises(SystemExit) as e:
                main(args)
            main_ok.append(e.value.code)
        assert main_ok == [0, 0], capsys.readouterr().err
        assert json.loads(capsys.readouterr().out.split("\n}\n")[0] + "\n}")["done"] == 2
        after = {p.name: p.read_bytes() for p in folder.iterdir()}
        assert after == before                     # no -wal/-shm, no schema change, no new file
        assert (tmp_path / "r.csv").read_text().count("\n") == 3
    finally:
        os.chmod(folder, 0o755)
        os.chmod(sw.db_path, 0o644)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_damaged_store_is_a_one_line_error_naming_it(tmp_path, monkeypatch, capsys, damage):
    f, sw = _finished_sweep(tmp_path, monkeypatch)
    data = sw.db_path.read_bytes()
    for extra in ("-wal", "-shm"):
        Path(str(sw.db_path) + extra).unlink(missing_ok=True)
    new = {"truncated": data[: len(data) // 2 + 100], "garbage": b"not a database" * 100, "empty": b""}[damage]
    sw.db_path.write_bytes(new)
    for cmd in (["sweep", "status", str(f)], ["sweep", "export", str(f), "--out", str(tmp_path / "x.csv")],
                ["compare", str(f)]):
        p = in_process(capsys, *cmd)
        assert p.returncode == 2, (damage, cmd, p.stdout, p.stderr)
        line = one_line_error(p)
        assert str(sw.db_path) in line, line
    assert not (tmp_path / "x.csv").exists()


def test_two_concurrent_runners_compute_each_task_once(tmp_path):
    log = tmp_path / "log"
    f = sweep_file(tmp_path, [0.1 * i for i in range(1, 13)])
    meet = tmp_path / "rendezvous"          # each runner's first task waits there for the other runner's
    meet.mkdir()
    env = {"ATTNPHASE_TEST_LOG": str(log), "ATTNPHASE_TEST_RENDEZVOUS": str(meet)}
    procs = [subprocess.Popen([sys.executable, "-c", RUN_CLI, "sweep", "run", str(f), "--quiet"],
                              env={**ENV, **env}, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    executed = log.read_text().split()
    sw = load(f)
    assert sorted(executed) == sorted(sw.keys)             # every task computed exactly once
    with Store(sw.db_path, read_only=True) as st:
        rows = st.rows()
        assert st.claims() == {}                            # no claim left behind
    assert len(rows) == 12 and all(r["status"] == "done" and r["attempts"] == 1 for r in rows)
    assert len(os.listdir(meet)) == 2                       # both runners worked, at the same time


def test_second_runner_exits_only_when_all_is_done(tmp_path, monkeypatch, capsys):
    """Issue 30 item 9: a runner that finds the last task claimed by another live runner waits for it (old code:
    exit 0 at once with the task pending)."""
    log = tmp_path / "log"
    f = sweep_file(tmp_path, [0.5], sleep_ms=6000)
    env = {**ENV, "ATTNPHASE_TEST_LOG": str(log)}
    first = subprocess.Popen([sys.executable, "-c", RUN_CLI, "sweep", "run", str(f), "--quiet", "--json"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while not log.exists() and time.time() - t0 < 240 and first.poll() is None:
        time.sleep(0.05)
    monkeypatch.setenv("ATTNPHASE_TEST_LOG", str(log))
    second = in_process(capsys, "sweep", "run", str(f), "--quiet", "--json")     # while the first computes
    first.communicate(timeout=300)
    assert (first.returncode, second.returncode) == (0, 0), second.stderr
    st = json.loads(second.stdout)["status"]
    assert (st["done"], st["pending"], st["running"]) == (1, 0, 0), st
    assert json.loads(second.stdout)["run"]["claimed_elsewhere"] == 1
    assert log.read_text().split() == load(f).keys                   # computed once, by the first runner


# --------------------------------------------------------------------------- interruption


def _interrupt(cmd, env_extra, make_ready, trials, timeout=120):
    """Start ``cmd``, wait for ``make_ready()()``, send SIGINT; returns the finished processes."""
    out = []
    for _ in range(trials):
        p = subprocess.Popen([sys.executable, "-c", RUN_CLI, *cmd], env={**ENV, **env_extra},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready = make_ready(p)
        t0 = time.time()
        while not ready() and time.time() - t0 < timeout and p.poll() is None:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        so, se = p.communicate(timeout=60)
        out.append(subprocess.CompletedProcess(cmd, p.returncode, so, se))
    return out


def _more_lines(log: Path, k: int):
    """A readiness test: ``log`` has ``k`` more lines than now (tasks started by the new process)."""
    start = len(log.read_text().split()) if log.exists() else 0
    return lambda: log.exists() and len(log.read_text().split()) >= start + k


def test_ctrl_c_during_sweep_exits_130_and_resumes(tmp_path, monkeypatch):
    log = tmp_path / "log"
    f = sweep_file(tmp_path, [0.1 * i for i in range(1, 11)], sleep_ms=400)
    sw = load(f)
    for p in _interrupt(["sweep", "run", str(f), "--quiet"], {"ATTNPHASE_TEST_LOG": str(log)},
                        lambda p: _more_lines(log, 2), trials=2):
        assert p.returncode == 130, p.stderr
        line = one_line_error(p)
        assert line.startswith("interrupted (Ctrl-C)") and "again to resume" in line
    done = status(sw)["done"]
    assert 0 < done < 10
    monkeypatch.setenv("ATTNPHASE_TEST_LOG", str(log))
    c = run_sweep(sw)                                        # resumes: dead claims are taken over
    assert c["ran"] == 10 - done and status(sw)["done"] == 10
    with Store(sw.db_path, read_only=True) as st:
        assert all(r["attempts"] == 1 for r in st.rows())


def test_ctrl_c_with_two_workers_prints_one_line_only(tmp_path):
    """Issue 30, item 9: Ctrl-C of ``sweep run --workers 2`` ends with the one line; the pool's semaphores are
    released before the exit (old code: multiprocessing's resource tracker added "There appear to be N leaked
    semaphore objects" warnings after it). Real simulate tasks: the spawned workers must import the kind."""
    f = tmp_path / "w.toml"
    f.write_text(textwrap.dedent(f"""\
        [sweep]
        name = "w"
        output = "{tmp_path / 'res'}"
        [[task]]
        kind = "simulate"
        seeds = [0]
        instances = 2
        params = {{ d = 200, optimizer = "lbfgs" }}
        grid = {{ alpha = {{ start = 0.5, stop = 2.0, num = 12 }} }}
        """))
    sw = load(f)

    def claimed(p):
        def ready():
            if not sw.db_path.exists():
                return False
            try:
                with Store(sw.db_path, read_only=True) as st:
                    return bool(st.claims())        # a worker of the pool has started a task
            except Exception:                       # noqa: BLE001 -- the store is being created
                return False
        return ready

    (p,) = _interrupt(["sweep", "run", str(f), "--quiet", "--workers", "2"], {}, claimed, trials=1, timeout=240)
    assert p.returncode == 130, p.stderr
    assert "resource_tracker" not in p.stderr and "leaked" not in p.stderr, p.stderr
    line = one_line_error(p)
    assert line.startswith("interrupted (Ctrl-C)")


def test_ctrl_c_during_simulate_exits_130_with_one_line(tmp_path):
    out = tmp_path / "never.csv"

    def computing(p):
        """True once XLA's thread pool exists (the CPU client starts inside the command, after the handler
        is installed; before that Python is still importing and Ctrl-C is an ordinary KeyboardInterrupt)."""
        def ready():
            try:
                status = Path(f"/proc/{p.pid}/status").read_text()
            except OSError:
                return True
            threads = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("Threads:")))
            if threads >= 4:
                time.sleep(1.0)           # well inside compilation / training (the run takes minutes)
                return True
            return False
        return ready

    # one BLAS thread: numpy's OpenBLAS starts a thread per core at import (16 on a 16-core machine), which
    # would make the thread count reach 4 before the command runs and installs its handler
    blas1 = {v: "1" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    procs = _interrupt(["simulate", "--d", "100", "--steps", "2000000", "--instances", "2",
                        "--test-samples", "500", "--out", str(out)], blas1, computing, trials=2)
    for p in procs:
        assert p.returncode == 130, (p.returncode, p.stderr[-2000:])
        assert one_line_error(p).startswith("interrupted (Ctrl-C)")
    assert not out.exists()
    assert not [q for q in tmp_path.iterdir() if q.name.endswith(".part")]


# --------------------------------------------------------------------------- output paths


def test_output_path_checked_before_work(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    slow = ["--d", "100", "--steps", "50000000", "--instances", "1", "--test-samples", "100"]
    for out, needle in ((tmp_path / "afile" / "x.csv", "is a file"),
                        (tmp_path, "existing folder"),
                        (Path("/proc/attnphase-nope/x.csv"), "writable")):
        p = in_process(capsys, "simulate", *slow, "--out", str(out))   # would take hours if it trained
        assert p.returncode == 2, p.stderr
        assert needle in one_line_error(p)
    p = in_process(capsys, "sweep", "export", str(sweep_file(tmp_path, [1.0])), "--out",
                   str(tmp_path / "afile" / "r.csv"))
    assert p.returncode == 2 and "is a file" in one_line_error(p)


def test_missing_output_folder_is_created_and_csv_has_provenance(tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "sim.csv"
    p = in_process(capsys, "simulate", "--d", "20", "--steps", "5", "--instances", "1", "--test-samples", "100",
            "--out", str(out), "--json")
    assert p.returncode == 0, p.stderr
    import pandas as pd
    df = pd.read_csv(out)
    assert {"attnphase_version", "git", "git_dirty", "P", "seed", "lr"} <= set(df.columns)
    assert json.loads(p.stdout)["provenance"]["environment"]["attnphase"] == df.attnphase_version[0]


def test_read_only_output_folder(tmp_path, capsys):
    """A folder the process may not write into: a chmod 555 folder, or (root ignores modes) sysfs."""
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    target = Path("/sys") if os.geteuid() == 0 else ro
    try:
        p = in_process(capsys, "simulate", "--d", "20", "--steps", "5", "--out", str(target / "x.csv"))
        assert p.returncode == 2 and "writable folder" in one_line_error(p)
    finally:
        os.chmod(ro, 0o755)


# --------------------------------------------------------------------------- general L


A3 = "0.5,0.25,0.25;0.25,0.5,0.25;0.25,0.25,0.5"


def test_simulate_cli_at_L3_r2(capsys):
    args = ["simulate", "--L", "3", "--r", "2", "--r-star", "2", "--A", A3, "--d", "24", "--alpha", "1.5",
            "--optimizer", "lbfgs", "--instances", "2", "--test-samples", "300", "--json"]
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 0
    res = json.loads(capsys.readouterr().out)
    assert res["params"]["L"] == 3 and res["params"]["r"] == 2 and res["params"]["A"][0] == [0.5, 0.25, 0.25]
    assert all(np.isfinite(res["e_t"])) and all(res["converged"])
    # the teacher's A reaches the data: another A gives other training losses on the same seeds
    with pytest.raises(SystemExit):
        main(args[:8] + ["0.8,0.1,0.1;0.1,0.8,0.1;0.1,0.1,0.8"] + args[9:])
    other = json.loads(capsys.readouterr().out)
    assert not np.allclose(res["e_t"], other["e_t"])


def test_simulate_L3_trains_and_P_is_used():
    """Training at L = 3, r = 2 lowers the risk from the random start; a custom P changes the data seen."""
    from attnphase.model import ModelParams
    from attnphase.simulate import TrainConfig, simulate
    A = [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]]
    par = ModelParams(L=3, r=2, r_star=1, A=A)
    kw = dict(alpha=1.5, d=24, instances=1, seed=3, test_samples=200)
    e0 = simulate(par, config=TrainConfig(init="random", steps=0), **kw).e_t[0]
    e1 = simulate(par, config=TrainConfig(init="random", steps=80), **kw).e_t[0]
    assert e1 < e0
    P2 = [[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]
    e2 = simulate(par.replace(P=P2), config=TrainConfig(init="random", steps=80), **kw)
    assert e2.params.k == 2 and e2.e_t[0] != e1


def test_sweep_simulate_at_L3(tmp_path):
    f = tmp_path / "l3.toml"
    f.write_text(textwrap.dedent(f"""
    [sweep]
    output = "out"
    [[task]]
    kind = "simulate"
    instances = 2
    params = {{ d = 16, steps = 20, test_samples = 100, L = 3, r = 2, r_star = 2, A = [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]] }}
    grid = {{ alpha = [1.0, 2.0] }}
    """))
    sw = load(f)
    c = run_sweep(sw)
    assert c["done"] == 2 and c["failed"] == 0, c
    from attnphase.sweeps import frame
    df = frame(sw)
    assert len(df) == 4 and (df.L == 3).all() and df.e_t.notna().all()


def test_unreachable_scheduler_is_one_line_and_leaves_no_store(tmp_path, capsys):
    f = sweep_file(tmp_path, [1.0])
    p = in_process(capsys, "sweep", "run", str(f), "--scheduler", "tcp://127.0.0.1:9")   # nothing listens
    assert p.returncode == 2 and "--scheduler" in one_line_error(p)
    assert not load(f).db_path.exists()
