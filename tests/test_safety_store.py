"""Issue 30, items 3, 8 and 9 (sweep files): a read-only WAL store is read with its WAL (never a wrong count), a
folder given as a sweep file is one line, and sweep files that say one thing twice are refused."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attnphase.errors import ParameterError
from attnphase.sweeps import load, status
from attnphase.sweeps import store as store_mod
from attnphase.sweeps.store import Store

from _safety import error_line, run_cli

SRC = str(Path(__file__).resolve().parents[1] / "src")

SWEEP = """
[sweep]
name = "wal"
output = "out"
[[task]]
kind = "baseline"
points = [ {omega = 0.1}, {omega = 0.2}, {omega = 0.3}, {omega = 0.4}, {omega = 0.5} ]
"""


def killed_wal_store(tmp_path: Path, done: int = 3) -> Path:
    """A sweep folder as a runner killed with ``kill -9`` leaves it: the store in WAL mode, ``done`` finished tasks
    only in its ``-wal`` file (no checkpoint), no ``-shm`` file. Returns the copy's sweep file."""
    a = tmp_path / "live"
    a.mkdir()
    (a / "s.toml").write_text(SWEEP)
    sw = load(a / "s.toml")
    st = Store(sw.db_path)
    st.conn.execute("PRAGMA wal_autocheckpoint=0")
    for cfg in sw.tasks[:done]:
        st.write(cfg, {"status": "done", "converged": True,
                       "result": {"scalars": {"eps_lin": 0.1}, "per_instance": {}, "converged": True}})
    b = tmp_path / "archived"
    (b / "out").mkdir(parents=True)
    shutil.copy(a / "s.toml", b / "s.toml")
    for name in ("sweep.sqlite", "sweep.sqlite-wal"):       # what the kill left: the file and its WAL
        shutil.copy(sw.db_path.with_name(name), b / "out" / name)
    st.conn.close()                                          # (the live copy is not used again)
    assert (b / "out" / "sweep.sqlite-wal").stat().st_size > 0
    assert not (b / "out" / "sweep.sqlite-shm").exists()
    return b / "s.toml"


def test_read_only_wal_store_counts_its_wal(tmp_path, monkeypatch, capsys):
    """The read-only folder is simulated: as root, chmod does not stop writes, so SQLite's in-place read-only open
    is made to fail for this folder exactly as it does there (``unable to open database file``: the ``-shm``
    file cannot be created). ``test_read_only_wal_store_on_a_read_only_mount`` does the same on a real
    read-only bind mount where the machine allows one. Old code: 'done 0, pending 5' (the WAL ignored)."""
    toml = killed_wal_store(tmp_path)
    folder = str(toml.parent / "out")
    real = sqlite3.connect

    def connect(db, *a, **kw):
        if str(db).startswith("file:") and folder in str(db) and "immutable=1" not in str(db):
            raise sqlite3.OperationalError("unable to open database file")
        return real(db, *a, **kw)

    monkeypatch.setattr(store_mod.sqlite3, "connect", connect)
    st = status(load(toml))
    assert (st["done"], st["pending"]) == (3, 2), st
    p = run_cli(capsys, "sweep", "export", toml, "--out", tmp_path / "r.csv")
    assert p.returncode == 0, p.stderr
    assert len((tmp_path / "r.csv").read_text().strip().splitlines()) == 1 + 3
    assert sorted(os.listdir(folder)) == ["sweep.sqlite", "sweep.sqlite-wal"]      # nothing written there


def _can_mount_read_only(tmp_path: Path) -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    d = tmp_path / "probe"
    d.mkdir()
    r = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {d} {d} && mount -o remount,bind,ro {d} && "
                        f"! touch {d}/x 2>/dev/null"], capture_output=True)
    return r.returncode == 0


def test_read_only_wal_store_on_a_read_only_mount(tmp_path):
    """The issue's reproduction on a real read-only folder (a read-only bind mount in a private mount
    namespace; skipped where the machine does not allow one)."""
    if not _can_mount_read_only(tmp_path):
        pytest.skip("no read-only bind mount here (needs root and unshare)")
    toml = killed_wal_store(tmp_path)
    folder = toml.parent
    cmd = (f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && "
           f"{sys.executable} -m attnphase sweep status --json {toml}")
    r = subprocess.run(["unshare", "-m", "sh", "-c", cmd], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": SRC})
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert (st["done"], st["pending"]) == (3, 2), st


def test_unreadable_wal_copy_is_refused_not_miscounted(tmp_path, monkeypatch):
    """Where even the private copy cannot be made, the reading command refuses with one line."""
    toml = killed_wal_store(tmp_path)
    real = sqlite3.connect
    monkeypatch.setattr(store_mod.sqlite3, "connect", lambda db, *a, **kw: (_ for _ in ()).throw(
        sqlite3.OperationalError("unable to open database file")) if "immutable" not in str(db) else real(db, *a, **kw))
    monkeypatch.setattr(shutil, "copyfile", lambda *a, **kw: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(ParameterError, match="write-ahead log"):
        status(load(toml))


def test_sweep_run_on_a_folder_is_one_line(tmp_path, capsys):
    for cmd in ("run", "status", "export"):
        line = error_line(run_cli(capsys, "sweep", cmd, tmp_path))
        assert "sweep file" in line and "folder" in line


@pytest.mark.parametrize("body, needle", [
    ('name = 5\n[[task]]\nkind = "baseline"', "sweep.name"),
    ('[[task]]\nkind = "baseline"\nname = "a"\n[[task]]\nkind = "baseline"\nname = "a"\nparams = {omega = 0.2}',
     "task[1].name"),
    ('[[task]]\nkind = "theory"\nparams = {alpha = 1.0}\ngrid = {alpha = [0.5, 2.0]}', "task[0].grid.alpha"),
    ('[[task]]\nkind = "theory"\nparams = {alpha = 1.0}\npoints = [{alpha = 2.0}]', "task[0].points[0].alpha"),
    ('[[task]]\nkind = "simulate"\ninstances = 100000000\nparams = {alpha = 1.0, d = 20}', "instances"),
    ('[[task]]\nkind = "simulate"\nparams = {alpha = 1.0, d = 20}\nseeds = [99999999999999]', "seed"),
    ('[[task]]\nkind = "baseline"\nparams = {L = 1000000}', "L must be an integer in [2, 1024]"),
    ('[[task]]\nkind = "theory"\nparams = {alpha = 1.0, L = 200}', "L must be at most 16"),
])
def test_sweep_file_conflicts_and_sizes_refused(tmp_path, body, needle):
    """Old code: the name 5 and the duplicate names were accepted, ``grid.alpha`` silently replaced
    ``params.alpha``, 10⁸ instances passed validation (and failed as a task)."""
    f = tmp_path / "s.toml"
    head = "[sweep]\n" if not body.startswith("name") else "[sweep]\n"
    f.write_text(head + textwrap.dedent(body) + "\n")
    with pytest.raises(ParameterError, match=None) as exc:
        load(f)
    assert needle in str(exc.value) and "\n" not in str(exc.value), str(exc.value)
