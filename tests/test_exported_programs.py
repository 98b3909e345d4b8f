"""attnphase.exported_programs: traced programs kept on disk (jax.export with symbolic sizes) give the same
numbers as tracing, bit for bit; an entry is invalidated by whatever the traced program depends on; a missing,
corrupt or failing entry falls back to tracing. The engine's map across fresh processes: the first exports,
the next loads, both equal to the traced map (ATTNPHASE_EXPORTED=off)."""
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnphase
from attnphase import exported_programs as EP
from attnphase import xla_cache

SRC = Path(attnphase.__file__).parents[1]


class Pair(NamedTuple):
    a: jnp.ndarray
    b: jnp.ndarray


def _fn(x, pair, y, h):
    """A small program with the map's ingredients: rows, a NamedTuple argument, a mean over N points of a
    scramble chosen per row, an optional argument (None)."""
    pts = y[pair.b]                                               # (R, N, 2)
    v = jnp.mean(jnp.sin(pts[..., 0] * x[:, :1]), axis=1) + pair.a * jnp.sum(x ** 2, axis=1)
    out = {"v": v, "ok": v > 0}
    return x * v[:, None] + (0.0 if h is None else jnp.mean(h)), out


AXES = (("R", None), ("R",), ("S", "N", None), None)


def _args(R=4, N=16, S=2, seed=0):
    rng = np.random.default_rng(seed)
    return (jnp.asarray(rng.normal(size=(R, 3))), Pair(jnp.asarray(rng.normal(size=R)), jnp.arange(R) % S),
            jnp.asarray(rng.normal(size=(S, N, 2))), None)


def _program(static=("test",)):
    return EP.StoredProgram("test._fn", jax.jit(_fn), static, AXES)


def _same(u, v):
    lu, lv = jax.tree_util.tree_leaves(u), jax.tree_util.tree_leaves(v)
    return len(lu) == len(lv) and all(np.array_equal(np.asarray(p), np.asarray(q)) for p, q in zip(lu, lv))


def _entries(store: Path) -> list[Path]:
    return sorted(store.glob("*.bin"))


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(xla_cache.CACHE_ENV, str(tmp_path / "xla"))
    monkeypatch.delenv(EP.ENV, raising=False)
    return tmp_path / "xla" / EP.SUBDIR


def test_exported_then_loaded_equal_to_tracing_for_every_size(store):
    with jax.enable_x64(True):
        first = _program()
        out = first(*_args())
        assert first.source is EP.Source.EXPORTED and len(_entries(store)) == 1
        assert _same(out, first.fn(*_args()))
        again = _program()                                     # as in a new process: read from the store
        for R, N, S in ((4, 16, 2), (7, 32, 3), (1, 8, 2)):   # other row counts and point counts: one entry
            assert _same(again(*_args(R, N, S, seed=R)), first.fn(*_args(R, N, S, seed=R)))
        assert again.source is EP.Source.LOADED and len(_entries(store)) == 1


@pytest.mark.parametrize("change", ["source", "jax", "static", "dtype", "fixed axis", "x64"])
def test_the_key_changes_with_what_the_program_depends_on(change, monkeypatch):
    with jax.enable_x64(True):
        args = _args()
        key = EP.entry_key("test._fn", ("test",), EP.symbolic_specs(args, AXES))
        static = ("test",)
        if change == "source":
            monkeypatch.setattr(EP, "source_digest", lambda: "another source")
        elif change == "jax":
            monkeypatch.setattr(jax, "__version__", jax.__version__ + ".dev")
        elif change == "static":
            static = ("test", 2)
        elif change == "dtype":
            args = (args[0].astype(jnp.float32),) + args[1:]
        elif change == "fixed axis":
            args = (jnp.concatenate([args[0], args[0]], axis=1),) + args[1:]
        if change == "x64":
            with jax.enable_x64(False):
                other = EP.entry_key("test._fn", static, EP.symbolic_specs(args, AXES))
        else:
            other = EP.entry_key("test._fn", static, EP.symbolic_specs(args, AXES))
    assert other != key


def test_a_source_change_exports_again(store, monkeypatch):
    with jax.enable_x64(True):
        _program()(*_args())
        monkeypatch.setattr(EP, "source_digest", lambda: "edited")
        p = _program()
        assert _same(p(*_args()), p.fn(*_args()))
        assert p.source is EP.Source.EXPORTED and len(_entries(store)) == 2


def _truncate(b: bytes) -> bytes:
    return b[:len(b) // 2]


def _flip(b: bytes) -> bytes:
    return b[:-10] + bytes([b[-10] ^ 0xFF]) + b[-9:]


def _garbage_with_a_valid_checksum(b: bytes) -> bytes:
    import hashlib
    payload = b"not an exported program" * 10
    return EP.MAGIC + hashlib.sha256(payload).digest() + payload


@pytest.mark.parametrize("corrupt", [_truncate, _flip, _garbage_with_a_valid_checksum, lambda b: b""])
def test_a_corrupt_entry_falls_back_and_is_replaced(store, corrupt):
    with jax.enable_x64(True):
        _program()(*_args())
        (path,) = _entries(store)
        path.write_bytes(corrupt(path.read_bytes()))
        p = _program()
        assert _same(p(*_args()), p.fn(*_args()))
        assert p.source is EP.Source.EXPORTED
        assert EP.read_entry(path) is not None                 # written again, intact
        assert _program()(*_args()) is not None


def test_a_failing_export_or_call_traces_instead(store, monkeypatch):
    with jax.enable_x64(True):
        def boom(*a, **k):
            raise RuntimeError("export broken")
        with monkeypatch.context() as m:
            m.setattr(EP.jax_export, "export", boom)
            p = _program()
            assert _same(p(*_args()), p.fn(*_args())) and p.source is EP.Source.TRACED
        assert _entries(store) == []
        q = _program()
        q(*_args())
        assert q.source is EP.Source.EXPORTED and len(_entries(store)) == 1
        sig, (call, _) = next(iter(q._calls.items()))

        def broken(*leaves):
            raise ValueError("the stored call fails")
        q._calls[sig] = (broken, EP.Source.LOADED)
        assert _same(q(*_args()), q.fn(*_args())) and q.source is EP.Source.TRACED


def test_another_fixed_size_or_dtype_gets_its_own_entry(store, caplog):
    """A call whose FIXED axis (or dtype) differs from the first call's is not sent to the first entry (it
    would fail on the shape and fall back to tracing for good, with a warning: the split rule's lines 256 then
    128 in a transition did); it loads or exports its own entry. Calls differing in a NAMED axis share one."""
    with jax.enable_x64(True):
        p = _program()
        a = _args()
        wide = (jnp.concatenate([a[0], a[0]], axis=1),) + a[1:]       # x's fixed axis 3 -> 6
        odd = (a[0].astype(jnp.float32),) + a[1:]
        with caplog.at_level("WARNING", logger=EP.__name__):
            for args in (a, wide, odd, _args(R=7, N=32)):
                assert _same(p(*args), p.fn(*args)) and p.source is EP.Source.EXPORTED
        assert not caplog.records
        assert len(_entries(store)) == 3                              # a, wide, odd; R = 7 shares a's
        q = _program()
        for args in (wide, odd):
            assert _same(q(*args), q.fn(*args)) and q.source is EP.Source.LOADED


@pytest.mark.parametrize("how", ["exported off", "cache off", "no flatbuffers"])
def test_off_traces_and_writes_nothing(store, monkeypatch, how):
    if how == "exported off":
        monkeypatch.setenv(EP.ENV, "off")
    elif how == "cache off":
        monkeypatch.setenv(xla_cache.CACHE_ENV, "off")
    else:
        monkeypatch.setitem(sys.modules, "flatbuffers", None)   # import fails
    with jax.enable_x64(True):
        p = _program()
        assert _same(p(*_args()), p.fn(*_args()))
    assert p.source is EP.Source.TRACED and not store.exists()


def test_the_store_keeps_at_most_max_entries(store, monkeypatch):
    monkeypatch.setattr(EP, "MAX_ENTRIES", 2)
    with jax.enable_x64(True):
        for i in range(3):
            _program(("test", i))(*_args())
            os.utime(_entries(store)[-1], None)
    assert len(_entries(store)) == 2


DRIVER = r"""
import json, sys
import jax
from attnphase.model import ModelParams
from attnphase.theory import engine
from attnphase.theory.engine import QMCConfig, solve
p = ModelParams(omega=0.3)
s = solve(p, 2.0, "semantic", qmc_config=QMCConfig(points=64, scrambles=2, coarse=0), stability=False)
d = s.to_dict()
maps = [engine._compiled_map(p.L, p.r, p.r_star, p.k, p.A, p.P, "semantic", w, False) for w in (False, True)]
print(json.dumps({"numbers": {k: d[k] for k in d if k not in ("provenance",)}, "x": s.scramble_x.tolist(),
                  "sources": [m.source.value for m in maps]}))
"""


def _solve_in_a_fresh_process(cache: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE") and k != EP.ENV}
    env.update({"PYTHONPATH": str(SRC), xla_cache.CACHE_ENV: str(cache), **extra})
    p = subprocess.run([sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_the_engine_in_fresh_processes_exports_loads_and_gives_the_traced_numbers(tmp_path):
    cache = tmp_path / "xla"
    first = _solve_in_a_fresh_process(cache)
    assert first["sources"] == ["exported", "exported"] and first["numbers"]["converged"]
    entries = _entries(cache / EP.SUBDIR)
    assert len(entries) == 2
    second = _solve_in_a_fresh_process(cache)
    assert second["sources"] == ["loaded", "loaded"] and _entries(cache / EP.SUBDIR) == entries
    traced = _solve_in_a_fresh_process(cache, **{EP.ENV: "off"})
    assert traced["sources"] == ["traced", "traced"]
    assert first["numbers"] == second["numbers"] == traced["numbers"]     # every number, exactly
    assert first["x"] == second["x"] == traced["x"]


def _fresh(prog: EP.StoredProgram) -> EP.StoredProgram:
    """A new StoredProgram for the same traced function (nothing prepared in this process yet)."""
    return EP.StoredProgram(prog.name, prog.fn, prog.static, prog.axes)


def _map_rows(params, branch_or_theta, R, N, S=2):
    from attnphase.theory import channel_general as CG
    from attnphase.theory.engine import QMCConfig, _points, default_init
    from attnphase.theory.state import flatten
    xi, y = (jnp.asarray(a) for a in _points(params, QMCConfig(points=N, scrambles=S, coarse=0)))
    x0 = np.asarray(flatten(default_init(params, "semantic", 2.0)))
    X = jnp.asarray(x0[None] * (1 + 0.02 * np.arange(R))[:, None])
    knobs = CG.Knobs(*(jnp.full(R, v) for v in (2.0, params.omega, params.sigma, params.lam)))
    return X, knobs, jnp.arange(R) % S, xi, y


@pytest.mark.slow
def test_the_rank2_stability_map_stored_equals_traced(store):
    """The free map without gauge fixing at r = 2 (stability_general's), global prox, two row counts (~80 s on
    the loaded 2-core VM: four compilations)."""
    from attnphase.model import ModelParams
    from attnphase.theory import engine
    p = ModelParams(omega=0.3, r=2)
    with jax.enable_x64(True):
        prog = _fresh(engine._compiled_map(p.L, p.r, p.r_star, p.k, p.A, p.P, "free", False, False, False))
        for R in (4, 3):
            args = (*_map_rows(p, "free", R, 64), None)
            assert _same(prog(*args), prog.fn(*args))
        assert prog.source is EP.Source.EXPORTED


def test_the_constrained_map_stored_equals_traced(store):
    from attnphase.model import ModelParams
    from attnphase.theory import constrained
    p = ModelParams(omega=0.3)
    with jax.enable_x64(True):
        prog = _fresh(constrained._compiled(p.L, p.r, p.r_star, p.k, p.A, p.P, constrained.ThetaMode.FREE, False))
        X, knobs, s, xi, y = _map_rows(p, "free", 4, 64)
        M = jnp.full((4, p.r, p.k), 0.1)
        args = (X, M, knobs, s, xi, y, None)
        assert _same(prog(*args), prog.fn(*args))
        assert prog.source is EP.Source.EXPORTED


def test_the_split_rule_solve_stored_equals_traced(store, monkeypatch):
    """The split rule's compiled program (theory.split_xla, concrete shapes): a whole solve through fresh
    stored programs (exported here) and through the traced ones gives the same numbers, exactly."""
    from attnphase.model import ModelParams
    from attnphase.theory import solve_point, split_xla
    real, made = split_xla._compiled, {}

    def stored(*a):
        if a not in made:
            made[a] = _fresh(real(*a))
        return made[a]

    kw = dict(nodes=4, stability=False)
    monkeypatch.setattr(split_xla, "_compiled", stored)
    new = solve_point(ModelParams(omega=0.25), 1.6, "positional", **kw)
    assert made and all(p.source is EP.Source.EXPORTED for p in made.values())
    monkeypatch.setattr(split_xla, "_compiled", lambda *a: real(*a).fn)
    old = solve_point(ModelParams(omega=0.25), 1.6, "positional", **kw)
    assert new.converged and old.converged
    for f in ("q", "m", "V", "theta", "q_hat", "m_hat", "V_hat", "theta_hat", "e_t", "eps_g", "iterations",
              "residual"):
        assert getattr(new, f) == getattr(old, f), f


def test_a_store_that_cannot_be_written_still_serves_the_process(store):
    store.parent.mkdir(parents=True)
    store.write_text("a file where the store's folder should be")
    with jax.enable_x64(True):
        p = _program()
        assert _same(p(*_args()), p.fn(*_args()))
    assert p.source is EP.Source.EXPORTED and store.is_file()
