"""Checked symmetries (MODEL.md §8) and the split rule for an asymmetric A (issue 11, priority 1)."""

from __future__ import annotations

import pytest

from attnphase.model import ALTERNATIVE_A, ModelParams
from attnphase.theory import solve_point
from attnphase.theory import channel as C
from attnphase.theory.solver import make_rule
from attnphase.theory.symmetry import exchange_reflection_holds, token_symmetries

ALT = ModelParams(A=ALTERNATIVE_A, omega=0.14)
ALPHA_ALT = 1.3667


def test_exchange_reflection_check():
    assert exchange_reflection_holds(ModelParams())
    assert not exchange_reflection_holds(ALT)
    assert not exchange_reflection_holds(ModelParams(P=((1.0,), (0.5,))))
    assert not exchange_reflection_holds(ModelParams(L=3, A=[[1 / 3] * 3] * 3))
    # L = 3, uniform A, P = I: every permutation maps A to itself, P only under the identity
    syms = token_symmetries(ModelParams(L=3, A=[[1 / 3] * 3] * 3))
    assert syms == [((0, 1, 2), 1)]
    assert ((1, 0), -1) in token_symmetries(ModelParams())
    assert token_symmetries(ALT) == [((0, 1), 1)]


def _rel(a, b):
    return abs(a - b) / abs(b)


def _solve(params, rule, nodes):
    s = solve_point(params, ALPHA_ALT, "semantic", rule=rule, nodes=nodes, stability=False)
    assert s.converged, s.status
    return s


def test_alternative_A_split_rule_agrees_with_product_rule():
    """A_11 != A_22: the split rule integrates without the reflection and agrees with the product rule (which
    uses no symmetry); the reflected (wrong) rule is ~3 % off in e_t, so the comparison can fail."""
    split, prod = _solve(ALT, "split", 4), _solve(ALT, "product", 8)
    for k in ("q", "theta", "e_t", "eps_g"):
        assert _rel(getattr(split, k), getattr(prod, k)) < 3e-3, k   # the reflected rule: 3.6e-2 in e_t


def test_forcing_the_reflection_on_asymmetric_A_is_wrong(monkeypatch):
    """Guard that the check matters: with the reflection forced, one channel evaluation moves by percents."""
    x = (0.0626, 0.0, 11.0, 0.1113)
    good = C.channel(ALT, ALPHA_ALT, *x, make_rule(4))
    monkeypatch.setattr(C, "exchange_reflection_holds", lambda p: True)
    bad = C.channel(ALT, ALPHA_ALT, *x, make_rule(4))
    assert _rel(bad.q_hat, good.q_hat) > 1e-2 or _rel(bad.EM, good.EM) > 1e-2


@pytest.mark.slow
def test_alternative_A_split_rule_agrees_with_product_rule_fine():
    split, prod = _solve(ALT, "split", 8), _solve(ALT, "product", 14)
    for k in ("q", "theta", "e_t", "eps_g"):
        assert _rel(getattr(split, k), getattr(prod, k)) < 3e-4, k
