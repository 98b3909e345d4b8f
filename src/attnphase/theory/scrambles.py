"""Per-scramble states of one point (MODEL.md §8): put into one gauge (:func:`aligned_scrambles`) so that
their mean and spread mean something."""

from __future__ import annotations

import numpy as np

from ..model import ModelParams
from .state import Hats, align_scrambles, unflatten


def aligned_scrambles(xs: np.ndarray, hs: np.ndarray | None, r: int, k: int, rs: int):
    """Flattened per-scramble states ``xs`` (S, n) and hats ``hs`` (S, n) of one point, put into one gauge
    (:func:`state.align_scrambles`) so that their mean and spread mean something (a scramble on a gauge copy,
    e.g. ``−M``, is the same fixed point). Rows that are not finite (an unconverged scramble) are left out of
    the alignment and returned as they were."""
    xs = np.array(xs, float)
    hs = None if hs is None else np.array(hs, float)
    good = np.all(np.isfinite(xs), axis=1) & (True if hs is None else np.all(np.isfinite(hs), axis=1))
    if good.sum() < 1:
        return xs, hs
    xa, ha = align_scrambles(unflatten(xs[good], r, k, rs),
                             None if hs is None else unflatten(hs[good], r, k, rs, Hats))
    xs[good] = flat_blocks(xa)
    if hs is not None:
        hs[good] = flat_blocks(ha)
    return xs, hs


def aligned_mean(xs: np.ndarray, params: ModelParams) -> np.ndarray:
    """The mean of a point's per-scramble states (S, n) in one gauge (:func:`aligned_scrambles`), shape (1, n):
    where the error control adds scrambles, they start there."""
    return aligned_scrambles(xs, None, params.r, params.k, params.r_star)[0].mean(axis=0)[None]


def flat_blocks(t) -> np.ndarray:
    """numpy :func:`state.flatten` of stacked blocks (S, ·, ·) → (S, n)."""
    return np.concatenate([np.asarray(b).reshape(np.shape(b)[0], -1) for b in t], axis=1)
