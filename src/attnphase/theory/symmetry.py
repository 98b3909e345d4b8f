"""Symmetries of the model that an integration rule may exploit, each with a check that it holds for the
parameters at hand (MODEL.md §8, "Facts to respect").

* ``θ = 0`` (``y → −y``) and ``M = 0`` (``(ξ, y) → −(ξ, y)``) are invariant subspaces for every ``A, P``.
* The split-line rule's reflection ``(ξ_v, y_v) → −(ξ_v, y_v)`` exchanges the two tokens and flips the sign of
  every pre-activation. It maps the channel to itself only if the exchange maps ``A`` to itself
  (``A_11 = A_22``, ``A_12 = A_21``) and ``P`` to ``−P`` (``P_2 = −P_1``). It is false for the paper's
  alternative ``A = [[0.3, 0.7], [0.8, 0.2]]``.
"""

from __future__ import annotations

from itertools import permutations

import numpy as np

from ..model import ModelParams

TOL = 1e-12


def exchange_reflection_holds(params: ModelParams) -> bool:
    """True iff L = 2 and the token exchange with a sign flip, ``(h_1, h_2) → (−h_2, −h_1)``, maps this
    (A, P) to itself: ``A_11 = A_22``, ``A_12 = A_21`` and ``P_2 = −P_1`` (MODEL.md §8)."""
    if params.L != 2:
        return False
    A, P = params.A_array, params.P_array
    return bool(abs(A[0, 0] - A[1, 1]) <= TOL and abs(A[0, 1] - A[1, 0]) <= TOL
                and np.all(np.abs(P[1] + P[0]) <= TOL))


def token_symmetries(params: ModelParams) -> list[tuple[tuple[int, ...], int]]:
    """All token permutations π with a sign s ∈ {+1, −1} such that ``A[π][:, π] = A`` and ``P[π] = s P``:
    the exchanges of tokens that map this model to itself (the identity is always in the list)."""
    A, P = params.A_array, params.P_array
    out = []
    for pi in permutations(range(params.L)):
        idx = list(pi)
        if np.max(np.abs(A[np.ix_(idx, idx)] - A)) > TOL:
            continue
        for s in (1, -1):
            if np.max(np.abs(P[idx] - s * P)) <= TOL:
                out.append((tuple(pi), s))
    return out


def positional_symmetries(params: ModelParams) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """All token permutations π with ``A[π][:, π] = A`` whose action on the encodings is an orthogonal change of
    the positional directions, ``P[π] = P Oᵀ`` (O k×k orthogonal), with that O. Each maps the channel to itself
    with ``M → M O`` (ω = ξq^½ + PMᵀ: the means of the tokens are permuted) and q, θ, V unchanged, so the map
    is equivariant: ``M̂(M O) = M̂(M) O`` (MODEL.md §8). P = I: O is π's permutation matrix; the paper's L = 2
    encodings: the exchange with O = −1."""
    A, P = params.A_array, params.P_array
    Pp = np.linalg.pinv(P)
    k = P.shape[1]
    out = []
    for pi in permutations(range(params.L)):
        idx = list(pi)
        if np.max(np.abs(A[np.ix_(idx, idx)] - A)) > TOL:
            continue
        O = (Pp @ P[idx]).T
        if np.max(np.abs(P @ O.T - P[idx])) <= 1e-10 and np.max(np.abs(O @ O.T - np.eye(k))) <= 1e-10:
            out.append((tuple(pi), O))
    return out


def stabiliser_projector(params: ModelParams, Ms) -> tuple[np.ndarray, list[tuple[int, ...]]] | None:
    """The symmetries of :func:`positional_symmetries` that fix every positional overlap in ``Ms`` (each r×k,
    ``M O = M``), and the projector ``Π = mean_O O`` (k×k) onto their fixed subspace ``{M : M O = M}``, an
    invariant subspace of the exact map (equivariance). None where only the identity fixes them all (nothing
    to project). L = 3, A = 0.4 I + 0.2 J, P = I, start M ∝ e₁: the exchange of tokens 2 and 3, subspace
    ``M₂ = M₃``."""
    keep = [(pi, O) for pi, O in positional_symmetries(params)
            if all(np.max(np.abs(np.asarray(M, float) @ O - np.asarray(M, float)), initial=0.0) <= 1e-12 for M in Ms)]
    if len(keep) <= 1:
        return None
    return np.mean([O for _, O in keep], axis=0), [pi for pi, _ in keep]
