"""Plain-Python conversion of results for JSON output (library side; the CLI re-exports it)."""

from __future__ import annotations

import math
from typing import Any


def to_jsonable(obj: Any) -> Any:
    """Recursively turn numpy / JAX scalars and arrays into plain Python for ``json.dumps``."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return to_jsonable(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else (1e308 if obj > 0 else -1e308)
    return obj
