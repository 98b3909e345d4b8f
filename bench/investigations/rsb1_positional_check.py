"""1RSB positional sector (m ≠ 0) along α, continued from a start (issue 32; docs/theory/beyond-rs.md): whether a
positional 1RSB state exists. Output: docs/data/beyond_rs/rsb1_positional_*.txt (α, (status, x*, m, q0, Δq, V, e), the x scan, CPU s).
Run: OMP_NUM_THREADS=1 PYTHONPATH=src python bench/investigations/rsb1_positional_check.py SIGMA LAM ALPHAS q0,dq,V,m E_PER_ALPHA
(σ = 0.7: 0.7 0.01 0.3,0.4,0.5 0.03,0.05,38,0.17 0.0035; λ = 0.001: 0.5 0.001 0.5,0.6,0.7 0.0487,0.029,131,0.169 0.00049)"""
import time, sys
from attnphase.model import ModelParams
from attnphase.theory import rsb1
from attnphase.theory.rsb1_saddle import TableLattice, maximise_x
sig, lam = float(sys.argv[1]), float(sys.argv[2]); alphas = [float(a) for a in sys.argv[3].split(",")]
st = tuple(float(v) for v in sys.argv[4].split(",")); e_per_a = float(sys.argv[5])
p = ModelParams(sigma=sig, lam=lam, omega=0.3)
lat = TableLattice(p, rsb1.OmegaGrid(2.7, 73), 10, V_ref=st[2])
for a in alphas:
    t = time.process_time()
    xs = [u / e_per_a for u in (0.5, 0.7, 0.95, 1.3, 1.8)]
    best, scan = maximise_x(lat, a, xs, st, "positional")
    if best is not None:
        st = best.unknowns; e_per_a = best.e / a
    print(a, None if best is None else (best.status.value, round(best.x), round(best.m, 4), round(best.q0, 5), round(best.dq, 4), round(best.V, 2), best.e), [(round(s.x), s.status.value, round(s.m, 4)) for s in scan], round(time.process_time()-t), flush=True)
