"""The safeguarded Newton iteration of :mod:`.prox` (MODEL.md §6, §7) as one compiled XLA loop (float64).

Same algorithm, element by element, as the numpy reference ``prox._newton_flat``: modified Newton (the
Hessian of F = |h − ω|²/(2V) + ℓ shifted so that its smallest eigenvalue is at least 0.1/V), the step capped
at length 2, backtracking over the fixed step list ``prox_loss.STEPS`` (the first that lowers F is taken), and an
element stops after the iteration in which |∇F| < gtol, no step lowered F, or the step vanished. The numpy
version pays ~100 array operations of Python overhead per iteration, which dominates on the small batches of
the switching-point search (profile in docs/notes/benchmarks-log.md, "Faster split-rule map"); here an iteration is
one fused kernel and finished elements are masked instead of compacted.

:func:`solve` is the traceable form used inside the one-program map evaluation (:mod:`.split_xla`); it gathers
the few slow elements into smaller buffers as soon as they fit (:data:`COMPACT`), so that they do not keep the
whole masked batch iterating. Float64 is switched on only inside :func:`newton` and :mod:`.split_xla`'s
call (``jax.enable_x64`` context), not globally. Batches are
padded to a power of two (at least 256) so that a process compiles a handful of shapes only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import xla_cache
from .prox_loss import STEPS as STEP_LIST, loss_derivs, newton_step, objective

_MIN_BUCKET = 256
_STEPS = tuple(float(s) for s in STEP_LIST if s > 0)   # the backtracking list of prox_loss.STEPS, without its 0


def _loop(a1, a2, act, k, kstop, w1, w2, t1, t2, V, s2, gtol, limit=0):
    """Newton iterations k, k+1, … < kstop on the active elements (masked) while more than ``limit`` are active;
    returns ``(k, a1, a2, act)``."""
    iv = 1.0 / V

    def step(state):
        k, a1, a2, act = state
        F0, gn, d1, d2, dn = newton_step(a1, a2, w1, w2, t1, t2, iv, s2, jnp)
        F1 = objective(a1 + d1, a2 + d2, w1, w2, t1, t2, V, s2, jnp)
        bt = jnp.where(F1 < F0, 1.0, 0.0)

        def shorter(bt):
            need = bt == 0.0
            for s in reversed(_STEPS[1:]):   # the first step of the list that lowers F wins: assign in reverse
                Fs = objective(a1 + s * d1, a2 + s * d2, w1, w2, t1, t2, V, s2, jnp)
                bt = jnp.where(need & (Fs < F0), s, bt)
            return bt

        # the shorter steps only when an active element needs one (usually none does)
        bt = lax.cond(jnp.any(act & (bt == 0.0)), shorter, lambda b: b, bt)
        a1 = jnp.where(act, a1 + bt * d1, a1)
        a2 = jnp.where(act, a2 + bt * d2, a2)
        act = act & (gn >= gtol) & (bt > 0) & (dn > 1e-15)
        return k + 1, a1, a2, act

    def more(state):
        k, _, _, act = state
        return (k < kstop) & (jnp.sum(act, dtype=jnp.int32) > limit)

    return lax.while_loop(more, step, (k, a1, a2, act))


COMPACT = (8,)
"""Schedule of :func:`_compacting`: the whole batch iterates until at most 1/8 of it is still active, then those
elements are gathered into a buffer of 1/8 of the batch (one level per entry; ``(8, 8)`` would gather again into
1/64). Checked at every iteration: after 4 iterations 13–70 % of a map evaluation's Newton batches are typically
still active, and the 1/8 is reached after 5–8 (docs/notes/2026-12-06-diagram-evaluation.md). One level: a second
made global evaluations only 1.07× cheaper (fast ones 0.99×) but the split program's compilation ≈ 1.3× dearer
(18.5 s against 13.8 s, every process with a cold cache pays it)."""


def _compacting(a1, a2, act, k, iters, f, V, s2, gtol, levels):
    """Masked Newton that gathers the few slow elements into smaller buffers (``levels``: shrink factors), so
    that they do not keep the whole batch iterating. Every element runs the same iterations as without
    compaction (the counter k is common to all); flat arrays."""
    w1, w2, t1, t2 = f
    if not levels:
        return _loop(a1, a2, act, k, iters, w1, w2, t1, t2, V, s2, gtol)[1:3]
    n = a1.shape[0]
    B = max(n // levels[0], 16)
    if B >= n:
        return _compacting(a1, a2, act, k, iters, f, V, s2, gtol, levels[1:])
    k, a1, a2, act = _loop(a1, a2, act, k, iters, w1, w2, t1, t2, V, s2, gtol, limit=B)

    def small(st):
        a1, a2, act = st
        cnt = jnp.sum(act)
        (idx,) = jnp.nonzero(act, size=B, fill_value=0)
        valid = jnp.arange(B) < cnt
        Vs = V[idx] if jnp.ndim(V) else V          # per-element V (a batch of cells, :mod:`.split_xla`)
        b1, b2 = _compacting(a1[idx], a2[idx], valid, k, iters, tuple(v[idx] for v in f), Vs, s2, gtol, levels[1:])
        to = jnp.where(valid, idx, n)              # padding entries: dropped
        return a1.at[to].set(b1, mode="drop"), a2.at[to].set(b2, mode="drop")

    # the loop stopped at the iteration cap (nothing left to do) or with at most B elements active
    return lax.cond((k < iters) & jnp.any(act), small, lambda st: st[:2], (a1, a2, act))


def solve(h1, h2, w1, w2, t1, t2, active, V, s2, iters, gtol, levels=COMPACT):
    """The Newton solve on arrays of any common shape (traceable; used inside other compiled programs); ``V``
    a scalar or an array broadcastable to that shape (one V per element: a batch of cells). Returns
    ``(h1, h2, F, |∇F|)`` at the final points."""
    shape = jnp.shape(h1)
    fl = lambda a: jnp.broadcast_to(a, shape).ravel()  # noqa: E731
    f = tuple(fl(v) for v in (w1, w2, t1, t2))
    Vf = fl(V) if jnp.ndim(V) else V    # V may vary per element (broadcastable to the shape of h1)
    a1, a2 = _compacting(fl(h1), fl(h2), fl(active), jnp.int32(0), iters, f, Vf, s2, gtol, levels)
    h1, h2 = a1.reshape(shape), a2.reshape(shape)
    return _final(h1, h2, w1, w2, t1, t2, V, s2)


def _final(h1, h2, w1, w2, t1, t2, V, s2):
    iv = 1.0 / V
    l, (g1, g2), _ = loss_derivs(h1, h2, t1, t2, s2, jnp)
    F = ((h1 - w1) ** 2 + (h2 - w2) ** 2) * (0.5 * iv) + l
    G1 = (h1 - w1) * iv + g1
    G2 = (h2 - w2) * iv + g2
    return h1, h2, F, jnp.sqrt(G1 * G1 + G2 * G2)


def _kernel(h1, h2, w1, w2, t1, t2, active, V, s2, iters, gtol):
    _, h1, h2, _ = _loop(h1, h2, active, jnp.int32(0), iters, w1, w2, t1, t2, V, s2, gtol)
    return _final(h1, h2, w1, w2, t1, t2, V, s2)


_compiled = jax.jit(_kernel)


def _bucket(n: int) -> int:
    return max(_MIN_BUCKET, 1 << max(n - 1, 0).bit_length())


def newton(h1, h2, w1, w2, t1, t2, V: float, sigma2: float, iters: int, gtol: float):
    """Safeguarded Newton from (h1, h2) on flat float64 arrays of a common size; returns ``(h1, h2, F, |∇F|)``
    at the final points (numpy arrays). The algorithm of ``prox._newton_flat``, compiled."""
    xla_cache.enable()
    n = np.size(h1)
    m = _bucket(n)
    pad = lambda a, fill: np.concatenate([np.asarray(a, np.float64), np.full(m - n, fill)])  # noqa: E731
    args = [pad(a, f) for a, f in ((h1, 0.0), (h2, 0.0), (w1, 0.0), (w2, 0.0), (t1, 0.5), (t2, 0.5))]
    with jax.enable_x64(True):
        out = _compiled(*args, np.arange(m) < n, np.float64(V), np.float64(sigma2), np.int32(iters),
                        np.float64(gtol))
        return tuple(np.asarray(o)[:n].copy() for o in out[:4])   # writable numpy copies (no jax slicing)
