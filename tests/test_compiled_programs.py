"""attnphase.compiled_programs: the mapping count it reads is the process's, and releasing JAX's compiled
programs gives mappings back (the guard that keeps long processes under vm.max_map_count)."""
import jax
import jax.numpy as jnp
import pytest

from attnphase.compiled_programs import mappings, release_if_crowded
from attnphase.errors import ParameterError

linux = pytest.mark.skipif(mappings() is None, reason="needs /proc (Linux) to count memory mappings")


def _compile_distinct_programs(n: int) -> None:
    for k in range(n):      # a new shape each time: a new compiled program each time
        jax.jit(lambda x: jnp.tanh(x) @ x.T + jnp.cumsum(x, axis=0)[:, :1])(jnp.ones((k + 3, 5))).block_until_ready()


@linux
@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA:CPU maps each compiled program into the process; "
                    "a GPU backend keeps its programs on the device (docs/gpu.md)")
def test_release_gives_mappings_back():
    release_if_crowded(0.0)
    before = mappings()[0]
    _compile_distinct_programs(12)
    grown = mappings()[0]
    assert grown > before                       # compiled programs hold mappings ...
    assert release_if_crowded(0.0) is True
    assert mappings()[0] < grown                # ... and releasing them returns some


@linux
def test_no_release_below_the_threshold():
    held, limit = mappings()
    assert 0 < held < limit
    assert release_if_crowded(1.0) is False


@pytest.mark.parametrize("fraction, allowed", [(-0.1, "in \\[0, 1\\]"), (1.5, "in \\[0, 1\\]"),
                                               (float("nan"), "a finite number")])
def test_fraction_out_of_range_is_refused(fraction, allowed):
    with pytest.raises(ParameterError, match=f"fraction must be {allowed}"):
        release_if_crowded(fraction)
