"""Experiment (issue 34 item 3, lever 5 of docs/notes/2026-12-06-diagram-profile.md): the first map evaluation of
each point solve as a fast one, continued from the prox state of the previous solve of the same branch and ω
(certified by the global evaluation at the end as before). Monkeypatches on top of profile_diagram_slice.py.

    H34_WARM_FIRST=0 python bench/investigations/diagram_warm_first.py 4    # today's path, profiled
    H34_WARM_FIRST=1 python bench/investigations/diagram_warm_first.py 4    # the experiment
"""
import os, sys
sys.argv = [sys.argv[0]] + sys.argv[1:]
sys.path.insert(0, "bench/investigations")
import numpy as np
from attnphase.theory import split_integrator as si
import profile_diagram_slice as prof   # installs the counters

LAST = {}
orig_init, orig_batch, orig_hats = si.SplitMap.__init__, si.SplitMap.batch, prof.hats


def init(self, params, alpha, branch, rule, fast=False):
    orig_init(self, params, alpha, branch, rule, fast)
    self._key = (params.omega, branch, getattr(rule, "nodes", None), id(type(rule)))
    if fast and os.environ.get("H34_WARM_FIRST") == "1":
        self.warm = LAST.get(self._key)
    self._seed = self.warm is not None


def batch(self, X, idx, full):
    if self._seed:
        self._seed = False
        full = np.zeros_like(full)
    return orig_batch(self, X, idx, full)


def hats(self, x, global_search=None):
    out = orig_hats(self, x, global_search)
    if self.fast and not (self.pins == 0).all():
        LAST[self._key] = self.warm
    return out


si.SplitMap.__init__, si.SplitMap.batch, si.SplitMap.hats = init, batch, hats
exec(open("bench/investigations/profile_diagram_slice.py").read().split('if __name__ == "__main__":')[1]
     .replace("\n    ", "\n"), {**prof.__dict__, "__name__": "x"})
