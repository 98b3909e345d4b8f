"""The paper's published tables, shipped with the package (CC BY 4.0; attribution in ``README.md`` here).

>>> from attnphase import reference
>>> sorted(reference.NAMES)[0]
'gd_d1000_omega0.3.csv'
>>> reference.load("theory_omega0.3_semantic.csv").columns[1]
'q'
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ParameterError

FOLDER = Path(__file__).resolve().parent
NAMES = ("gd_d1000_omega0.3.csv", "theory_omega0.3_semantic.csv", "theory_omega0.3_positional.csv",
         "theory_omega0.3_uninformative.csv")


def path(name: str) -> Path:
    """Path of one shipped table (``name`` one of :data:`NAMES`)."""
    if name not in NAMES:
        raise ParameterError("reference table", f"one of {{{', '.join(NAMES)}}}", name)
    return FOLDER / name


def load(name: str):
    """One shipped table as a pandas DataFrame."""
    import pandas as pd
    return pd.read_csv(path(name))


def theory_table(branch: str):
    """The paper's fixed-point table at ω = 0.3 for ``branch`` (semantic | positional | uninformative)."""
    return load(f"theory_omega0.3_{branch}.csv")
