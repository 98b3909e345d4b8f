"""attnphase: the positional/semantic phase transition in a solvable model of dot-product attention.

Cui, Behrens, Krzakala, Zdeborová, NeurIPS 2024. Formulas and normalisations: ``docs/model.md`` of the
repository (cited as "MODEL.md §N"); the paper's published tables ship in :mod:`attnphase.reference`.

Notebook API (imported lazily on first use; every result has ``.to_frame()`` and ``.provenance``)::

    import attnphase
    sim = attnphase.simulate(alpha=1.0, d=200, init="positional", optimizer="lbfgs")   # finite d, MODEL.md §4
    sim.to_frame()                           # one row per instance: m, θ/σ², q, e_t, ε_g, ε_lin, converged
    pt = attnphase.solve(2.0, "semantic", omega=0.3)          # one fixed point, MODEL.md §6
    cv = attnphase.curve([1.0, 1.5, 2.0], "positional")       # a branch by continuation
    tr = attnphase.transition(omega=0.3)                      # α_c, α_l, spinodals
    pd = attnphase.phase_diagram([0.2, 0.3], [0.6, 1.0, 1.5, 2.0])
    bl = attnphase.baseline(omega=0.3)                        # ε_lin, MODEL.md §5
    p = attnphase.model(L=3, r=2)                             # validated ModelParams, MODEL.md §1–§2

A runnable tour: ``examples/tour.py``.
"""

__version__ = "0.2.0"

import sys as _sys
import types as _types

# the submodules that share a name with an API function: attnphase.simulate(...) runs attnphase.api.simulate
# while attnphase.simulate.TrainConfig and `from attnphase import simulate` keep working as the module. They load
# on first use (JAX with them), by whatever path: the import system binds a submodule to its package with
# setattr, where _Package makes it callable.
_SUBMODULES = ("simulate", "baseline", "model")


class _CallableModule(_types.ModuleType):
    """A submodule that is also the API function of the same name (``attnphase.api.<name>``)."""

    def __call__(self, *args, **kwargs):
        from . import api
        return getattr(api, self.__name__.rsplit(".", 1)[1])(*args, **kwargs)


class _Package(_types.ModuleType):
    """The package: binding one of :data:`_SUBMODULES` to it makes that submodule callable."""

    def __setattr__(self, name, value):
        if name in _SUBMODULES and isinstance(value, _types.ModuleType) and type(value) is _types.ModuleType:
            value.__class__ = _CallableModule
            value.__doc__ = (value.__doc__ or "") + (f"\n\nCalled as a function, this module runs "
                                                     f"``attnphase.api.{name}`` (keyword model parameters, "
                                                     "results with ``.to_frame()``).")
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package

from .errors import NotConvergedError, ParameterError  # noqa: E402
from .model import ModelParams  # noqa: E402  (no JAX: the model's parameters only)

_LAZY = {
    "solve": ("attnphase.api", "solve"),
    "curve": ("attnphase.api", "curve"),
    "transition": ("attnphase.api", "transition"),
    "phase_diagram": ("attnphase.api", "phase_diagram"),
    "Result": ("attnphase.api", "Result"),
    "TrainConfig": ("attnphase.simulate", "TrainConfig"),
    "SimulationResult": ("attnphase.simulate", "SimulationResult"),
    "scaling": ("attnphase.scaling", None),
}

__all__ = ["ModelParams", "ParameterError", "NotConvergedError", "__version__", *_LAZY]


def __getattr__(name: str):
    """Heavy parts (JAX, the theory) load on first use, so ``import attnphase`` stays fast."""
    import importlib
    if name in _SUBMODULES:
        return importlib.import_module(f"attnphase.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module 'attnphase' has no attribute {name!r}")
    mod_name, attr = _LAZY[name]
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        if exc.name != mod_name:
            raise
        raise AttributeError(f"attnphase.{name} is not part of this version of the package") from None
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
