"""Basin classification (attnphase.basins): students started on each branch are classified as that branch."""

import numpy as np
import pytest

from attnphase.basins import Basin, BranchScales, branch_scales, classify
from attnphase.model import ModelParams
from attnphase.simulate import TrainConfig, simulate

P = ModelParams(omega=0.3)


def test_classify_rule_on_synthetic_points():
    sc = BranchScales(0.26, 0.63, "theory", "theory", {})
    got = classify([0.0, 0.25, 0.2, 0.01, -0.27], [0.6, 0.02, 0.5, 0.05, 0.0], sc)
    assert list(got) == ["semantic", "positional", "mixed", "uninformative", "positional"]


@pytest.fixture(scope="module")
def scales():
    return branch_scales(P, 2.0)


def test_scales_come_from_the_theory(scales):
    assert scales.m_source == "theory" and scales.theta_source == "theory"
    assert 0.2 < scales.m_pos < 0.3 and 0.5 < scales.theta_sem < 0.75  # MODEL.md §6 at α = 2


@pytest.mark.parametrize("init,kw,expected", [("semantic", {}, Basin.SEMANTIC),
                                              ("positional", {}, Basin.POSITIONAL),
                                              ("random", {"init_scale": 0.0}, Basin.UNINFORMATIVE)])
def test_instances_started_at_each_branch_classify_as_that_branch(scales, init, kw, expected):
    """At α = 2, ω = 0.3 both informative branches are minima and Q = 0 is a stationary point (the
    gradient of R vanishes there, MODEL.md §6 uninformative branch; it is a saddle: a start at scale 1e-4
    ends positional); L-BFGS from each stays in its basin."""
    r = simulate(P, alpha=2.0, d=200, config=TrainConfig(init=init, optimizer="lbfgs", **kw), instances=3, seed=3)
    assert r.converged.all()
    assert list(classify(r.m, r.theta_over_sigma2, scales)) == [expected.value] * 3


def test_basins_cli_bad_input_exits_2(capsys):
    from attnphase.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["basins", "--init-scale", "-1", "--alphas", "1", "--d", "10", "--instances", "1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "init_scale" in err[0]
