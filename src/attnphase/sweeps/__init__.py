"""Parameter sweeps: TOML definitions, an SQLite store, local and Dask executors, export and compare.

See ``docs/sweeps.md``.
"""

from .executors import run_sweep, status
from .report import compare, export, frame
from .spec import Sweep, load
from .store import Store
from .tasks import REGISTRY, TaskKind, register_kind

__all__ = ["Sweep", "load", "Store", "run_sweep", "status", "export", "frame", "compare",
           "TaskKind", "register_kind", "REGISTRY"]
