"""One status vocabulary (issue 29): every outcome — point, ladder, branch — is a member of ``Status`` with a
message; and the one collapse rule (``state.overlap_vanished``) with its single threshold."""

from __future__ import annotations

import math

import pytest

from attnphase.theory import collapse, state
from attnphase.theory.ladder import Ladder
from attnphase.theory.status import MESSAGES, Status


def test_every_status_has_a_message_and_only_results_are_ok():
    assert set(MESSAGES) == set(Status) and all(m.strip() for m in MESSAGES.values())
    assert {s for s in Status if s.ok} == {Status.CONVERGED, Status.ACCEPTED_AT_JUMP}
    assert len({s.value for s in Status}) == len(Status)          # no two outcomes share a word


def test_a_ladder_ends_in_the_same_vocabulary():
    lad = Ladder(3.0, started=False)
    assert lad.end is Status.NOT_STARTED and lad.end.value == "not_started" and not lad.end.ok


@pytest.mark.parametrize("q,sigma", [(4.0, 0.5), (0.01, 1.0)])
def test_overlap_vanished_at_its_threshold(q, sigma):
    scale = state.COLLAPSE_TOL * sigma * math.sqrt(q)
    assert state.overlap_vanished(scale, q, sigma) and state.overlap_vanished(-scale, q, sigma)
    assert not state.overlap_vanished(1.01 * scale, q, sigma)
    assert state.overlap_vanished(float("nan"), q, sigma)           # no number: not a branch point


def test_overlap_vanished_at_q_zero_and_one_home():
    assert state.overlap_vanished(0.0, 0.0, 0.5) and state.overlap_vanished(0.0, -1e-18, 0.5)
    assert not state.overlap_vanished(1e-30, 0.0, 0.5)
    assert collapse.overlap_vanished is state.overlap_vanished and collapse.COLLAPSE_TOL == state.COLLAPSE_TOL
