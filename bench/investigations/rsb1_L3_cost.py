"""What one step of RSB in the L = 3 θ = 0 sector would cost (issue 32): not computed, estimated from the L = 2
implementation's measured cost (theory/rsb1.py tabulates the Moreau envelope on a 2-D ω grid × a folded
Gauss–Hermite rule in y, once per V; the saddle then costs only Gaussian blurs of the tables).

Measured here, in one run: (1) one L = 2 channel table (`rsb1.tabulate`, n = 73 per axis, y order 10, the
crossing's setting) and one functional evaluation on it (`rsb1_saddle.value`); (2) the general-L prox
(`theory.prox_general.prox`, the engine's multi-start global prox) per solve at L = 3 and at L = 2 on the same
number of samples (uninformative L = 3 point: q = 0.118, V = 25, m = θ = 0). The L = 3 table needs n³ ω points ×
the y nodes of a 3-D rule; its cost is extrapolated with the measured per-solve times. Writes
docs/data/beyond_rs/rsb1_L3_cost.json. Run: OMP_NUM_THREADS=1 PYTHONPATH=src python bench/investigations/rsb1_L3_cost.py
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_experimental_ynn_fusion_type=").strip()

import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.model import ModelParams  # noqa: E402
from attnphase.theory import channel_general as CG  # noqa: E402
from attnphase.theory import prox_general as PG  # noqa: E402
from attnphase.theory import qmc, rsb1  # noqa: E402
from attnphase.theory.rsb1_saddle import TableLattice, value  # noqa: E402
from attnphase.theory.state import OrderParams  # noqa: E402

OUT = Path(__file__).resolve().parents[2] / "docs" / "data" / "beyond_rs" / "rsb1_L3_cost.json"
L3_A = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))
N, Y_ORDER, N_SAMPLES = 73, 10, 4096


def cpu(f):
    t = time.process_time()
    out = f()
    return out, time.process_time() - t


def general_prox_us(p: ModelParams, q: float, V: float) -> float:
    """CPU μs per global prox solve at model ``p`` (after compilation), on N_SAMPLES channel samples."""
    L = p.L
    Z = qmc.normal_points(L * (p.r + p.r_star), N_SAMPLES, 0)
    xi, y = jnp.asarray(Z[:, :L].reshape(-1, L, 1)), jnp.asarray(Z[:, L:].reshape(-1, L, 1))
    x = OrderParams(np.array([[q]]), np.zeros((1, p.P_array.shape[1])), np.array([[0.0]]), np.array([[V]]))
    xs = OrderParams(*(jnp.asarray(b) for b in x))
    w, hs, _ = CG.fields(xs, p.sigma, xi, y, jnp.asarray(p.P_array))
    T = jax.vmap(PG.teacher, in_axes=(0, None, None))(hs, p.omega, jnp.asarray(p.A_array))
    f = jax.jit(jax.vmap(PG.prox, in_axes=(0, 0, 0, None, None, None)))
    off = jnp.asarray(PG.start_offsets(L, 1))
    jax.block_until_ready(f(w, hs, T, xs.V, p.sigma ** 2, off))
    _, t = cpu(lambda: jax.block_until_ready(f(w, hs, T, xs.V, p.sigma ** 2, off)))
    return 1e6 * t / N_SAMPLES


def folded_nodes(L: int, order: int, perms: bool) -> int:
    """Nodes of the order-``order`` product Gauss–Hermite rule in L dimensions, folded by y → −y (and by the
    permutations of the tokens where ``perms``: A = 0.4 I + 0.2 J and the uninformative sector are invariant)."""
    from itertools import permutations, product
    x = np.round(np.polynomial.hermite_e.hermegauss(order)[0], 12)
    orbits = set()
    for t in product(x, repeat=L):
        imgs = [t, tuple(-v for v in t)]
        if perms:
            imgs = [tuple(im[i] for i in pr) for im in imgs for pr in permutations(range(L))]
        orbits.add(max(imgs))
    return len(orbits)


def main() -> None:
    p2 = ModelParams(omega=0.3)
    grid = rsb1.OmegaGrid(2.7, N)
    table, t_tab = cpu(lambda: rsb1.tabulate(p2, 20.0, grid, Y_ORDER))
    lat = TableLattice(p2, grid, Y_ORDER, V_ref=20.0)
    lat.tables[0] = table
    lat.tables[1] = rsb1.tabulate(p2, 20.0 * lat.ratio, grid, Y_ORDER)
    value(lat, 0.5, 0.01, 0.1, 21.0, 200.0)
    _, t_val = cpu(lambda: [value(lat, 0.5, 0.01, 0.1, 21.0, 200.0) for _ in range(5)])
    ny2 = len(table.y_weights)
    us2_table = 1e6 * t_tab / (ny2 * N * N)
    us2_gen = general_prox_us(p2, 0.118, 25.0)
    us3_gen = general_prox_us(ModelParams(L=3, A=L3_A, omega=0.3), 0.118, 25.0)
    ny3 = {"sign": folded_nodes(3, Y_ORDER, False), "sign_and_permutations": folded_nodes(3, Y_ORDER, True)}
    pts3 = N ** 3
    est = {}
    for k, ny in ny3.items():
        solves = ny * pts3
        est[k] = dict(y_nodes=ny, prox_solves_per_V=solves,
                      cpu_h_per_V_general_prox=solves * us3_gen * 1e-6 / 3600,
                      cpu_h_per_V_scaled_from_L2_table=solves * us2_table * (us3_gen / us2_gen) * 1e-6 / 3600,
                      table_GiB_per_V=2 * 8 * solves / 2 ** 30,
                      functional_eval_cpu_s=t_val / 5 * (ny / ny2) * 1.5 * N)
    out = dict(machine=platform.node(), load=os.getloadavg(), grid_n=N, y_order=Y_ORDER,
               L2=dict(y_nodes=ny2, grid_points=N * N, table_cpu_s=t_tab, table_us_per_solve=us2_table,
                       table_MiB=2 * 8 * ny2 * N * N / 2 ** 20, functional_eval_cpu_s=t_val / 5,
                       general_prox_us_per_solve=us2_gen, tables_in_lattice_note="one per V node visited"),
               L3=dict(grid_points=pts3, general_prox_us_per_solve=us3_gen, estimate=est,
                       functional_eval_note="blur along 3 axes: n^4 per axis and y node against n^3 at L = 2 "
                                            "(factor 1.5 n ny3/ny2)"))
    OUT.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
