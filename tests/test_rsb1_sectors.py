"""1RSB in the semantic (θ ≠ 0) and positional (m ≠ 0) sectors (theory/rsb1.py functional_shifted,
rsb1_saddle Sector; docs/theory/one-step-rsb.md §8): RS recovered at Δq = 0 at the RS fixed points of
`theory.solve`, θ = m = 0 is the uninformative functional, gradients against finite differences.

Pinned RS points (theory.solve, split rule, ω = 0.3, standard A; this branch, 2026-12-06):
semantic σ = 0.7, λ = 0.01, α = 0.8: q = 0.192187135, θ = 0.245659718, V = 23.6758664, e_t = 0.00271205030;
positional σ = 0.5, λ = 0.001, α = 0.35: q = 0.0690102542, m = 0.107822118, V = 225.835616, e_t = 0.000159690644.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory import rsb1
from attnphase.theory.rsb1_saddle import Rsb1Status, Sector, TableLattice, saddle, sector_value

SEM = ModelParams(sigma=0.7, lam=0.01, omega=0.3)
SEM_RS = dict(alpha=0.8, q=0.19218713521005973, theta=0.24565971757862848, V=23.675866373505876,
              e_t=0.002712050297759296)
POS = ModelParams(sigma=0.5, lam=0.001, omega=0.3)
POS_RS = dict(alpha=0.35, q=0.06901025423233483, m=0.10782211819380254, V=225.83561615313135,
              e_t=0.00015969064365953107)


@pytest.fixture(scope="module")
def sem_table():
    return rsb1.tabulate(SEM, SEM_RS["V"], rsb1.OmegaGrid(2.7, 55), y_order=12)


@pytest.fixture(scope="module")
def pos_table():
    return rsb1.tabulate(POS, POS_RS["V"], rsb1.OmegaGrid(2.7, 55), y_order=10)


def test_semantic_sector_is_rs_at_zero_dq(sem_table):
    """Δq = 0 at the RS semantic fixed point: the split rule's e_t (0.1 %; 0.4 % at y order 8, the mean of the
    outer field moves with y) for every x, and stationary in θ, p0 and V against their terms' scales."""
    r = SEM_RS
    s2 = SEM.sigma ** 2
    vals = [rsb1.functional_shifted(sem_table, r["alpha"], r["q"] - r["theta"] ** 2 / s2, 0.0, x, r["theta"])
            for x in (0.0, 50.0, 500.0)]
    for v in vals[1:]:
        assert v.e == pytest.approx(vals[0].e, rel=1e-12)
    assert vals[0].e == pytest.approx(r["e_t"], rel=1e-3)
    g = vals[0].grad
    assert abs(g[4]) < 0.02 * SEM.lam * r["theta"] / s2 ** 2 + 0.02 * r["theta"] / (s2 * r["V"])
    assert abs(g[0]) < 0.02 / (2 * r["V"])
    assert abs(g[2]) < 0.02 * r["q"] / (2 * r["V"] ** 2)


def test_positional_sector_is_rs_at_zero_dq(pos_table):
    """The same at the RS positional fixed point (0.4 %: the grid's error, as in the uninformative sector),
    stationary in m against σ²m/V."""
    r = POS_RS
    v = rsb1.functional_shifted(pos_table, r["alpha"], r["q"], 0.0, 0.0, 0.0, r["m"])
    assert v.e == pytest.approx(r["e_t"], rel=4e-3)
    assert abs(v.grad[5]) < 0.03 * POS.sigma ** 2 * r["m"] / r["V"]
    assert np.isnan(v.grad[4])                      # the mixed direction is not integrated by the folded rule


def test_zero_overlaps_are_the_uninformative_functional(sem_table):
    for q0, dq, x in ((0.05, 0.04, 300.0), (0.002, 0.1, 200.0), (0.05, 0.04, 0.5)):
        a = rsb1.functional(sem_table, 0.5, q0, dq, x)
        b = rsb1.functional_shifted(sem_table, 0.5, q0, dq, x, 0.0, 0.0)
        assert b.e == pytest.approx(a.e, rel=1e-12)
        assert b.grad[:4] == pytest.approx(a.grad, rel=1e-9, abs=1e-14)


@pytest.mark.parametrize("p0,theta,m", [(0.03, 0.12, 0.0), (0.004, 0.12, 0.0), (0.03, 0.0, 0.1),
                                        (0.008, 0.0, 0.06)])
def test_sector_gradients_against_finite_differences(sem_table, p0, theta, m):
    """∂p0 (grid and interpolated outer rules), ∂Δq, ∂x, ∂θ or ∂m against central differences."""
    arg = np.array([p0, 0.05, 0.0, 250.0, theta, m])
    f = lambda a: rsb1.functional_shifted(sem_table, 0.6, a[0], a[1], a[3], a[4], a[5]).e  # noqa: E731
    g = rsb1.functional_shifted(sem_table, 0.6, *arg[[0, 1, 3, 4, 5]]).grad
    for k in (0, 1, 3, 4 if theta else 5):
        h = 1e-7 * max(1.0, arg[k])
        up, dn = arg.copy(), arg.copy()
        up[k] += h
        dn[k] -= h
        assert g[k] == pytest.approx((f(up) - f(dn)) / (2 * h), rel=1e-5, abs=1e-11)


def test_sector_bad_input_is_refused(sem_table):
    with pytest.raises(ParameterError, match="theta, m"):
        rsb1.functional_shifted(sem_table, 0.5, 0.05, 0.04, 100.0, 0.1, 0.1)
    with pytest.raises(ParameterError, match="q0"):
        rsb1.functional_shifted(sem_table, 0.5, 0.001, 0.04, 100.0, 0.0, 0.1)    # p0 < σ² m²
    with pytest.raises(ParameterError, match="start"):
        saddle(TableLattice(SEM, rsb1.OmegaGrid(2.7, 37), 6), 0.5, 100.0, (0.01, 0.1, 30.0), sector="semantic")


def test_semantic_saddle_below_the_rs_alpha_c_on_a_coarse_lattice():
    """σ = 0.7, α = 0.5 (below the RS α_c = 0.641, where RS has no semantic state): the semantic sector has a
    stationary 1RSB saddle with θ > 0, and at the same x its value lies below the uninformative saddle's
    (docs/theory/beyond-rs.md, α_c^1RSB)."""
    lat = TableLattice(SEM, rsb1.OmegaGrid(2.7, 45), 10, V_ref=30.0)
    s2 = SEM.sigma ** 2
    u = saddle(lat, 0.5, 300.0, (0.001, 0.13, 30.0))
    s = saddle(lat, 0.5, 300.0, (0.001, 0.13 - 0.09 * s2, 30.0, 0.3 * s2), sector=Sector.SEMANTIC)
    assert u.status is Rsb1Status.CONVERGED and s.status is Rsb1Status.CONVERGED
    assert s.theta / s2 > 0.1 and s.dq > 0.01
    assert max(abs(v) for v in sector_value(lat, 0.5, "semantic", s.unknowns, 300.0)[1][:4]) < 1e-8
    assert s.e < u.e
