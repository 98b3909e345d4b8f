"""Submodules that are also the notebook API's functions of the same name.

``attnphase.simulate(...)`` runs :func:`attnphase.api.simulate`, while ``attnphase.simulate.TrainConfig`` and
``from attnphase import simulate`` keep working as the module. Each such submodule calls :func:`make_callable`
on itself when it is imported, by whatever path, so ``import attnphase`` need not import it (nor JAX).
"""

from __future__ import annotations

import sys
import types


class CallableModule(types.ModuleType):
    """A module whose call runs ``attnphase.api.<its name>``."""

    def __call__(self, *args, **kwargs):
        from . import api
        return getattr(api, self.__name__.rsplit(".", 1)[1])(*args, **kwargs)


def make_callable(module_name: str) -> None:
    """Make the imported module ``module_name`` callable as the API function of the same name."""
    mod = sys.modules[module_name]
    mod.__class__ = CallableModule
    short = module_name.rsplit(".", 1)[1]
    mod.__doc__ = (mod.__doc__ or "") + (f"\n\nCalled as a function, this module runs ``attnphase.api.{short}`` "
                                          "(keyword model parameters, results with ``.to_frame()``).")
