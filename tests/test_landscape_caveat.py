"""`theory transition --json` says what its α_c is (issue 32): ``alpha_c_rs`` is the RS α_c and a ``caveat`` (with its
reason) is given only where the RS competitor below α_c is the uninformative point (σ ≥ 0.7, λ = 0.001 at L = 2,
where finite-d minimisers part from RS; docs/theory/beyond-rs.md); none at the paper's defaults."""
from __future__ import annotations

import pandas as pd

from attnphase.model import ModelParams
from attnphase.phase.continuation import Branch
from attnphase.phase.result import TransitionResult
from attnphase.theory.landscape_caveat import rs_caveat


def _result(params, alpha_c, against):
    empty = pd.DataFrame()
    branches = {b: Branch(b, params, []) for b in ("semantic", "positional")}
    return TransitionResult(params=params, alpha_c=alpha_c, alpha_l=None, eps_lin=0.002, semantic=empty,
                            positional=empty, global_table=empty, branches=branches, alpha_c_against=against)


def test_no_caveat_where_the_competitor_is_positional():
    d = _result(ModelParams(omega=0.3), 1.24, "positional").to_dict()
    assert d["alpha_c_rs"] == d["alpha_c"] == 1.24 and d["caveat"] is None


def test_caveat_with_its_reason_against_the_uninformative_point():
    d = _result(ModelParams(omega=0.3, sigma=0.7), 0.641, "uninformative").to_dict()
    assert d["alpha_c_rs"] == 0.641
    assert "uninformative" in d["caveat"] and "finite-d" in d["caveat"] and "beyond-rs" in d["caveat"]


def test_no_alpha_c_no_caveat():
    assert rs_caveat(ModelParams(omega=0.3, sigma=0.7), None, "uninformative") is None
