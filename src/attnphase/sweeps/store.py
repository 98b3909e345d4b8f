"""One SQLite database per sweep (WAL mode while runners write), one row per finished task keyed by its content hash.

Each task is written in a single transaction, so a killed process leaves either the whole row or nothing.
A row that is ``done`` is never overwritten; a ``failed`` row is replaced when the task is retried.

Concurrency: a runner *claims* a task (table ``claims``, one row per task being computed, with the runner's
id, host and pid) in one transaction before computing it and releases the claim in the transaction that
writes the result. Two runners on one sweep therefore share the tasks instead of computing each twice. A
claim whose process is gone (killed, interrupted) is taken over by the next runner on the same host.

Reading (``read_only=True``: ``sweep status/export``, ``compare``) opens the file with ``mode=ro`` and
changes nothing (no WAL switch, no table creation), so archived, read-only stores can be read; a WAL store in
a read-only folder is read through a private copy of the file and its WAL (never without its WAL). A file that
is not an attnphase store (garbage, truncated, empty) is a :class:`ParameterError` naming the file.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import socket
import sqlite3
import uuid
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import ParameterError
from ..interrupts import critical

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    key          TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    config       TEXT NOT NULL,
    result       TEXT,
    provenance   TEXT,
    error        TEXT,
    converged    INTEGER,
    git          TEXT,
    wall_s       REAL,
    attempts     INTEGER NOT NULL DEFAULT 1,
    finished_utc TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    key          TEXT PRIMARY KEY,
    owner        TEXT NOT NULL,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    claimed_utc  TEXT NOT NULL
);
"""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Store:
    """A sweep's SQLite store. ``read_only=True`` opens an existing store without changing it."""

    def __init__(self, path: str | Path, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        self.owner = uuid.uuid4().hex
        self.host = socket.gethostname()
        if read_only:
            self.conn = self._open_read_only()
        else:
            if self.path.is_dir():
                raise ParameterError("sweep store", "a file (a folder is in the way)", str(self.path))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                self._create()
            self.conn = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
            with self._checked():
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self.conn.executescript(_SCHEMA)
        self._check_schema()

    # ------------------------------------------------------------------------------------------- opening

    def _create(self) -> None:
        """Create the store with its schema beside its path, then link it into place: a reader never sees a
        file without tables (and a runner that loses the race simply opens the other's store)."""
        tmp = self.path.with_name(f".{self.path.name}.{self.owner}.new")
        conn = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            conn.executescript(_SCHEMA)
        finally:
            conn.close()
        try:
            os.link(tmp, self.path)
        except FileExistsError:
            pass
        except OSError:                     # no hard links on this file system: rename (tiny race window)
            if not self.path.exists():
                os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise ParameterError("sweep store", "an existing store (run `attnphase sweep run FILE` first)",
                                 str(self.path))
        if self.path.stat().st_size == 0:
            raise ParameterError("sweep store", "an attnphase SQLite store (this file is empty: 0 bytes)",
                                 str(self.path))
        uri = self.path.resolve().as_uri()
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60, isolation_level=None)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError:
            return self._open_snapshot()
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(exc) from None

    def _open_snapshot(self) -> sqlite3.Connection:
        """A store SQLite cannot open read-only in place: a WAL store (left by a killed runner) in a read-only
        folder without its ``-shm`` file. Its finished tasks may sit in the ``-wal`` file, which an immutable
        open would ignore (a wrong count): copy the store and its WAL into a private temporary folder and read
        the copy; without a WAL the file alone is read as an immutable snapshot. A copy that cannot be made is
        a one-line refusal, never a wrong count."""
        wal = self.path.with_name(self.path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            import shutil
            import tempfile
            try:
                self._snapshot_dir = tempfile.mkdtemp(prefix="attnphase-store-")
                copy = Path(self._snapshot_dir) / self.path.name
                shutil.copyfile(self.path, copy)
                shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
                conn = sqlite3.connect(f"{copy.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
                with self._checked():
                    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            except OSError as exc:
                self._drop_snapshot()
                raise ParameterError("sweep store", "a store whose write-ahead log can be read (it cannot be "
                                     f"opened in place and copying it failed: {exc.strerror or exc}); make the "
                                     "folder writable or copy it elsewhere", str(self.path)) from None
        conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro&immutable=1", uri=True,
                               isolation_level=None)
        with self._checked():
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn

    def _drop_snapshot(self) -> None:
        folder = getattr(self, "_snapshot_dir", None)
        if folder:
            import shutil
            shutil.rmtree(folder, ignore_errors=True)
            self._snapshot_dir = None

    def _corrupt(self, exc: Exception) -> ParameterError:
        return ParameterError("sweep store", f"a readable attnphase SQLite store (sqlite: {exc})", str(self.path))

    @contextlib.contextmanager
    def _checked(self) -> Iterator[None]:
        """Turn SQLite's corruption errors into one-line :class:`ParameterError` naming the file."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise self._corrupt(exc) from None

    def _check_schema(self) -> None:
        with self._checked():
            names = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "tasks" not in names:
                raise ParameterError("sweep store", "an attnphase SQLite store (no `tasks` table)", str(self.path))
            self.conn.execute("SELECT count(*) FROM tasks").fetchone()

    def close(self) -> None:
        if not self.read_only:
            with contextlib.suppress(sqlite3.Error):
                self.release_all()
            # the last writer leaves the file in rollback-journal mode: a finished (archived) store is then
            # one self-contained file that readers open without creating -wal/-shm files beside it
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("PRAGMA busy_timeout=200")
                self.conn.execute("PRAGMA journal_mode=DELETE")
        self.conn.close()
        self._drop_snapshot()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------- reading

    def statuses(self) -> dict[str, str]:
        with self._checked():
            return dict(self.conn.execute("SELECT key, status FROM tasks"))

    def claims(self) -> dict[str, dict[str, Any]]:
        """Tasks being computed now: ``{key: {owner, host, pid, claimed_utc, alive}}``."""
        with self._checked():
            has = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'claims'").fetchone()
            if not has:
                return {}
            rows = self.conn.execute("SELECT key, owner, host, pid, claimed_utc FROM claims").fetchall()
        return {k: {"owner": o, "host": h, "pid": p, "claimed_utc": t,
                    "alive": h != self.host or _pid_alive(p)} for k, o, h, p, t in rows}

    def rows(self, keys: Iterable[str] | None = None) -> list[dict[str, Any]]:
        want = None if keys is None else set(keys)
        out = []
        with self._checked():
            cur = self.conn.execute("SELECT key, kind, status, config, result, provenance, error, converged,"
                                    " git, wall_s, attempts, finished_utc FROM tasks ORDER BY key")
            names = [d[0] for d in cur.description]
            for r in cur:
                row = dict(zip(names, r))
                if want is not None and row["key"] not in want:
                    continue
                for k in ("config", "result", "provenance"):
                    row[k] = None if row[k] is None else json.loads(row[k])
                out.append(row)
        return out

    # ------------------------------------------------------------------------------------------- writing

    def claim(self, key: str, retry_failed: bool = False) -> bool:
        """Atomically take ``key`` for this runner. False if it is done (or failed and not retried), or
        claimed by a live runner."""
        c = self.conn
        with critical():
            c.execute("BEGIN IMMEDIATE")
            try:
                row = c.execute("SELECT status FROM tasks WHERE key = ?", (key,)).fetchone()
                if row is not None and (row[0] == "done" or not retry_failed):
                    c.execute("ROLLBACK")
                    return False
                cl = c.execute("SELECT owner, host, pid FROM claims WHERE key = ?", (key,)).fetchone()
                if cl is not None and cl[0] != self.owner and (cl[1] != self.host or _pid_alive(cl[2])):
                    c.execute("ROLLBACK")
                    return False
                c.execute("INSERT INTO claims (key, owner, host, pid, claimed_utc) VALUES (?,?,?,?,?)"
                          " ON CONFLICT(key) DO UPDATE SET owner=excluded.owner, host=excluded.host,"
                          " pid=excluded.pid, claimed_utc=excluded.claimed_utc",
                          (key, self.owner, self.host, os.getpid(), _now()))
                c.execute("COMMIT")
                return True
            except BaseException:
                c.execute("ROLLBACK")
                raise

    def release(self, key: str) -> None:
        with critical():
            self.conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))

    def release_all(self) -> None:
        with critical():
            self.conn.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))

    def write(self, cfg: dict[str, Any], outcome: dict[str, Any]) -> bool:
        """Record one finished task and release its claim in one transaction. Returns False if a done row
        already existed."""
        row = (cfg["key"], cfg["kind"], outcome["status"], json.dumps(cfg, sort_keys=True),
               None if outcome.get("result") is None else json.dumps(outcome["result"]),
               json.dumps(outcome.get("provenance")), outcome.get("error"),
               None if outcome.get("converged") is None else int(bool(outcome["converged"])),
               (outcome.get("provenance") or {}).get("git"), outcome.get("wall_s"), _now())
        c = self.conn
        with critical():
            c.execute("BEGIN IMMEDIATE")
            try:
                cur = c.execute(
                    "INSERT INTO tasks (key, kind, status, config, result, provenance, error, converged,"
                    " git, wall_s, finished_utc) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
                    " ON CONFLICT(key) DO UPDATE SET status=excluded.status, result=excluded.result,"
                    " provenance=excluded.provenance, error=excluded.error, converged=excluded.converged,"
                    " git=excluded.git, wall_s=excluded.wall_s, finished_utc=excluded.finished_utc,"
                    " attempts=tasks.attempts + 1 WHERE tasks.status != 'done'", row)
                c.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (cfg["key"], self.owner))
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise
        return cur.rowcount > 0
