"""Plain-Python conversion of results for JSON output (library side; the CLI re-exports it)."""

from __future__ import annotations

import math
from typing import Any


def to_jsonable(obj: Any, *, store: bool = False) -> Any:
    """Recursively turn numpy / JAX scalars and arrays into plain Python for ``json.dumps``.

    Non-finite floats: NaN becomes None and ±inf ±1e308 (printed output); with ``store=True`` (what a sweep
    store keeps) every non-finite float becomes None and any other non-JSON object its ``str``."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v, store=store) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, store=store) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return to_jsonable(obj.tolist(), store=store)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if (store or math.isnan(obj)) else (1e308 if obj > 0 else -1e308)
    if store and not (obj is None or isinstance(obj, (bool, int, float, str))):
        return str(obj)
    return obj
