"""Full float32 precision for the package's matrix products, on every backend (docs/gpu.md).

JAX computes float32 ``dot``/``matmul``/``einsum`` at the backend's default precision, which on NVIDIA GPUs
is TensorFloat32 (inputs rounded to a 10-bit mantissa, ~1e-3 relative) and bfloat16 passes on TPUs. The
finite-d model (MODEL.md §1–§4: the risk, its gradient, the Gram statistics, the order parameters, the
linear baseline and the exact test error) runs in float32 by default, where that would change the results
silently. :func:`full_precision` runs a function under ``jax.default_matmul_precision("highest")``: JAX
reads that setting when a contraction is *traced* (``lax.dot_general`` with ``precision=None``), so every
contraction traced inside it — the package's own, those of JAX's ``jnp`` functions and those of optax's
L-BFGS — carries ``Precision.HIGHEST`` (true float32) in the jaxpr and in the compiled program, whatever the
caller's own setting. The setting is scoped (a context manager, per thread) and restored on return: code of
the caller outside the package is unaffected.

float64 contractions (the theory, MODEL.md §6–§8, and ``x64`` training) are exact float64 on every backend
and do not depend on this setting.
"""

from __future__ import annotations

import functools
from typing import Callable, TypeVar

import jax

MATMUL_PRECISION = "highest"
"""The value of ``jax.default_matmul_precision`` under which the package traces its float32 contractions."""

F = TypeVar("F", bound=Callable)


def full_precision(fn: F) -> F:
    """``fn`` run (and, under ``jax.jit``, traced) inside ``jax.default_matmul_precision("highest")``."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with jax.default_matmul_precision(MATMUL_PRECISION):
            return fn(*args, **kwargs)

    return wrapped  # type: ignore[return-value]
