"""attnphase: the positional/semantic phase transition in a solvable model of dot-product attention.

Cui, Behrens, Krzakala, Zdeborová, NeurIPS 2024. Formulas and normalisations: ``docs/model.md`` of the repository (cited as "MODEL.md §N").
"""

__version__ = "0.1.0"

from .errors import NotConvergedError, ParameterError  # noqa: E402
from .model import ModelParams  # noqa: E402

__all__ = ["ModelParams", "ParameterError", "NotConvergedError", "__version__"]
