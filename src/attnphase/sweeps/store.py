"""One SQLite database per sweep (WAL mode), one row per finished task keyed by its content hash.

Each task is written in a single transaction, so a killed process leaves either the whole row or nothing.
A row that is ``done`` is never overwritten; a ``failed`` row is replaced when the task is retried.
"""

from __future__ import annotations

import datetime as _dt
import json
import sqlite3
from pathlib import Path
from typing import Any, Iterable

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
"""


class Store:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute(_SCHEMA)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def statuses(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, status FROM tasks"))

    def write(self, cfg: dict[str, Any], outcome: dict[str, Any]) -> bool:
        """Record one finished task in one transaction. Returns False if a done row already existed."""
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        row = (cfg["key"], cfg["kind"], outcome["status"], json.dumps(cfg, sort_keys=True),
               None if outcome.get("result") is None else json.dumps(outcome["result"]),
               json.dumps(outcome.get("provenance")), outcome.get("error"),
               None if outcome.get("converged") is None else int(bool(outcome["converged"])),
               (outcome.get("provenance") or {}).get("git"), outcome.get("wall_s"), now)
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            cur = c.execute(
                "INSERT INTO tasks (key, kind, status, config, result, provenance, error, converged,"
                " git, wall_s, finished_utc) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT(key) DO UPDATE SET status=excluded.status, result=excluded.result,"
                " provenance=excluded.provenance, error=excluded.error, converged=excluded.converged,"
                " git=excluded.git, wall_s=excluded.wall_s, finished_utc=excluded.finished_utc,"
                " attempts=tasks.attempts + 1 WHERE tasks.status != 'done'", row)
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return cur.rowcount > 0

    def rows(self, keys: Iterable[str] | None = None) -> list[dict[str, Any]]:
        cur = self.conn.execute("SELECT key, kind, status, config, result, provenance, error, converged,"
                                " git, wall_s, attempts, finished_utc FROM tasks ORDER BY key")
        names = [d[0] for d in cur.description]
        want = None if keys is None else set(keys)
        out = []
        for r in cur:
            row = dict(zip(names, r))
            if want is not None and row["key"] not in want:
                continue
            for k in ("config", "result", "provenance"):
                row[k] = None if row[k] is None else json.loads(row[k])
            out.append(row)
        return out
