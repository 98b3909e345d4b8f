"""attnphase.xla_cache: every compiled program of the package goes to JAX's persistent compilation cache in its
locked mode, so a fresh process reuses what another compiled, and processes sharing the directory never see
a half-written entry (the reasons are in the module docstring, from JAX's lru_cache.py).

Each test runs the package in fresh subprocesses with the cache directory in a temporary folder and
JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 (so that even a fast machine writes the small programs used)."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import attnphase
from attnphase import xla_cache

SRC = Path(attnphase.__file__).parents[1]

DRIVER = r"""
import json, sys
import jax, numpy as np
ev = {}
jax.monitoring.register_event_listener(lambda e, **k: ev.__setitem__(e, ev.get(e, 0) + 1))
from attnphase import xla_cache
if sys.argv[1] == "engine":            # one small engine point: the compiled map of theory.engine
    from attnphase.model import ModelParams
    from attnphase.theory.engine import QMCConfig, solve
    s = solve(ModelParams(omega=0.3), 2.0, "semantic", qmc_config=QMCConfig(points=64, scrambles=2, coarse=0),
              max_steps=2)
    value = float(s.residual)          # the point is unconverged (2 steps): its values are NaN
else:                                  # the Newton kernel of theory.newton_xla (a small program)
    from attnphase.theory.newton_xla import newton
    h = np.linspace(-1.0, 1.0, 8)
    out = newton(h, -h, h, 0.5 * h, 0.5 + 0 * h, 0.5 + 0 * h, 1.0, 0.25, 20, 1e-10)
    value = float(np.sum(out[2]))
print(json.dumps({"mode": xla_cache.enable().value, "dir": jax.config.jax_compilation_cache_dir,
                  "max_size": jax.config.jax_compilation_cache_max_size, "value": value,
                  "hits": ev.get("/jax/compilation_cache/cache_hits", 0)}))
"""

CACHE_WARNING = "persistent compilation cache"
"""What JAX's warnings on a failed cache read or write say (jax/_src/compiler.py, _cache_read/_cache_write)."""


def _env(cache: str, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    return {**env, "PYTHONPATH": str(SRC), xla_cache.CACHE_ENV: cache,
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", **extra}


def _start(what: str, cache: str, **extra) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", DRIVER, what], env=_env(cache, **extra), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(p: subprocess.Popen) -> tuple[dict, str]:
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1]), err


def _run(what: str, cache: str, **extra) -> tuple[dict, str]:
    return _finish(_start(what, cache, **extra))


def _entries(d: Path) -> set[str]:
    return {p.name.removesuffix("-cache") for p in d.glob("*-cache")}


def _check_complete(d: Path) -> None:
    """Every entry has its access-time file (what the locked mode writes under its lock)."""
    for key in _entries(d):
        assert (d / f"{key}-atime").exists(), key


def test_a_fresh_process_fills_the_cache_and_the_next_one_loads_it(tmp_path):
    cache = tmp_path / "xla"
    first, err = _run("engine", str(cache))
    assert first["mode"] == "locked" and first["dir"] == str(cache)
    assert first["max_size"] == xla_cache.MAX_BYTES
    assert CACHE_WARNING not in err
    keys = _entries(cache)
    # the engine's map (engine._compiled_map), compiled from its stored program (attnphase.exported_programs)
    assert any(k.startswith("jit_call") for k in keys)
    assert list((cache / "exported").glob("*.bin"))
    assert (cache / xla_cache.LOCK_NAME).exists()
    _check_complete(cache)
    second, err = _run("engine", str(cache))
    assert second["hits"] > 0 and _entries(cache) == keys     # loaded, nothing new compiled and written
    assert second["value"] == first["value"]
    assert CACHE_WARNING not in err


def test_off_writes_nothing_anywhere(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    res, _ = _run("newton", "off", HOME=str(home))
    assert res["mode"] == "off" and res["dir"] is None and res["max_size"] == -1
    assert list(home.rglob("*")) == []                        # not even the default ~/.cache/attnphase/xla


def test_a_cache_configured_in_jax_is_left_as_it_is(tmp_path):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    res, _ = _run("newton", str(mine), JAX_COMPILATION_CACHE_DIR=str(theirs))
    assert res["mode"] == "user" and res["dir"] == str(theirs) and res["max_size"] == -1
    assert not mine.exists() and _entries(theirs)


def test_processes_writing_one_cache_at_once_all_succeed_and_a_third_reads_it(tmp_path):
    cache = tmp_path / "xla"
    procs = [_start("newton", str(cache)) for _ in range(3)]        # the same programs, compiled at once
    results = [_finish(p) for p in procs]
    for res, err in results:
        assert res["mode"] == "locked"
        assert CACHE_WARNING not in err, err[-2000:]
    assert len({res["value"] for res, _ in results}) == 1
    keys = _entries(cache)
    assert keys
    _check_complete(cache)
    reader, err = _run("newton", str(cache))
    assert reader["hits"] >= len(keys) and _entries(cache) == keys
    assert reader["value"] == results[0][0]["value"] and CACHE_WARNING not in err


def test_entries_of_the_unlocked_mode_are_adopted(tmp_path):
    """A directory written without the lock (JAX's default, or this package before) has entries without
    access-time files; the locked mode's eviction fails on them unless :func:`adopt_entries` gives them one."""
    cache = tmp_path / "xla"
    legacy = ("import jax, jax.numpy as jnp\n"
              f"jax.config.update('jax_compilation_cache_dir', {str(cache)!r})\n"
              "jax.jit(lambda x: jnp.sin(x) * 3.0)(jnp.arange(5.0)).block_until_ready()\n")
    p = subprocess.run([sys.executable, "-c", legacy], env=_env(str(cache)), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    old = _entries(cache)
    assert old and not list(cache.glob("*-atime"))
    res, err = _run("newton", str(cache))
    assert res["mode"] == "locked"
    assert CACHE_WARNING not in err, err[-2000:]     # without adoption: "Error writing ... FileNotFoundError"
    assert _entries(cache) > old                     # the package's program was written beside them
    _check_complete(cache)


def test_adopt_entries_stamps_only_entries_without_an_access_time(tmp_path):
    (tmp_path / "a-cache").write_bytes(b"x")
    (tmp_path / "b-cache").write_bytes(b"y")
    (tmp_path / "b-atime").write_bytes((7).to_bytes(8, "little"))
    assert xla_cache.adopt_entries(tmp_path) == 1
    stamp = int.from_bytes((tmp_path / "a-atime").read_bytes(), "little")
    assert stamp == (tmp_path / "a-cache").stat().st_mtime_ns
    assert int.from_bytes((tmp_path / "b-atime").read_bytes(), "little") == 7
    assert xla_cache.adopt_entries(tmp_path) == 0


def test_without_filelock_the_cache_stays_off_rather_than_unlocked(tmp_path):
    code = ("import sys, warnings; sys.modules['filelock'] = None\n"
            "import jax\nfrom attnphase import xla_cache\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always'); mode = xla_cache.enable()\n"
            "print(mode.value, jax.config.jax_compilation_cache_dir, jax.config.jax_compilation_cache_max_size,"
            " any('filelock' in str(x.message) for x in w))\n")
    p = subprocess.run([sys.executable, "-c", code], env=_env(str(tmp_path / "xla")), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["unavailable", "None", "-1", "True"]
    assert not (tmp_path / "xla").exists()


def _builds_jit(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "jit" and isinstance(n.value, ast.Name)
               and n.value.id == "jax" for n in ast.walk(tree))


def _calls_enable(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "enable"
               and isinstance(n.func.value, ast.Name) and n.func.value.id == "xla_cache" for n in ast.walk(tree))


def test_every_module_that_compiles_a_program_enables_the_cache():
    pkg = Path(attnphase.__file__).parent
    compiling = {p.relative_to(pkg).as_posix(): ast.parse(p.read_text()) for p in pkg.rglob("*.py")}
    compiling = {name: tree for name, tree in compiling.items() if _builds_jit(tree)}
    assert "theory/qmc_map.py" in compiling and "simulate.py" in compiling     # qmc_map: the engine's compiled map
    missing = sorted(name for name, tree in compiling.items() if not _calls_enable(tree))
    assert missing == []


@pytest.mark.slow
def test_reads_wait_for_the_lock(tmp_path):
    """While another process holds the cache's lock, a process neither reads nor writes an entry: after JAX's
    10 s lock timeout it warns and compiles without the cache (jax/_src/lru_cache.py, LRUCache.get/put)."""
    import filelock

    cache = tmp_path / "xla"
    _run("newton", str(cache))
    keys = _entries(cache)
    with filelock.FileLock(cache / xla_cache.LOCK_NAME):
        res, err = _run("newton", str(cache))
    assert res["hits"] == 0
    assert "Error reading persistent compilation cache entry" in err and "Timeout" in err
    assert _entries(cache) == keys
