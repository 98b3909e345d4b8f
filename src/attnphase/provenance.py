"""Provenance records attached to every result (parameters, seeds, versions, convergence)."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import platform
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import __version__


@lru_cache(maxsize=1)
def git_hash() -> str | None:
    """Commit of the source tree the package was imported from, or None outside a git checkout."""
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


@lru_cache(maxsize=1)
def git_dirty() -> bool | None:
    """True if the source tree has uncommitted changes (tracked files), None outside a git checkout."""
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                             capture_output=True, text=True, timeout=5)
        return bool(out.stdout.strip()) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def stamp() -> dict[str, Any]:
    """The short provenance carried by every table row / output file: package version, git commit, dirty flag."""
    return {"attnphase_version": __version__, "git": git_hash(), "git_dirty": git_dirty()}


def environment() -> dict[str, Any]:
    import jax
    import numpy
    return {
        "attnphase": __version__,
        "git": git_hash(),
        "git_dirty": git_dirty(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "numpy": numpy.__version__,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "backend": jax.default_backend(),
    }


def provenance(config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A provenance dict: the full ``config``, the environment, a UTC timestamp and ``extra``."""
    return {
        "config": config,
        "config_hash": config_hash(config),
        "environment": environment(),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **extra,
    }


def config_hash(config: dict[str, Any], length: int = 16) -> str:
    """Content hash of a JSON-serialisable configuration (key order does not matter)."""
    blob = json.dumps(config, sort_keys=True, default=_jsonable).encode()
    return hashlib.sha256(blob).hexdigest()[:length]


def _jsonable(obj: Any) -> Any:
    import numpy as np
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (np.floating, np.integer, np.bool_)):
        return obj.item()
    if isinstance(obj, tuple):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
