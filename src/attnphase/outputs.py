"""Output files: their paths are checked before any work starts, and they are written atomically.

:func:`check_output_path` creates missing parent folders or raises a one-line :class:`ParameterError`;
:func:`write_atomic` writes beside the target and renames into place inside an interrupt-safe section
(:func:`attnphase.interrupts.critical`), so an interrupted or failed write never leaves a partial file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from .errors import ParameterError
from .interrupts import critical


def check_output_path(path: str | Path, *, directory: bool = False, option: str = "--out") -> Path:
    """Make sure ``path`` can be written *before* the work starts: create its missing parent folders, or
    raise a one-line :class:`ParameterError` (a folder where a file should go or the reverse, a file in the
    way of a folder, a read-only location). ``directory=True`` checks (and creates) a folder instead."""
    p = Path(path).expanduser()
    folder = p if directory else p.parent
    if directory and p.exists() and not p.is_dir():
        raise ParameterError(option, "a folder (an existing file has this name)", str(p))
    if not directory and p.is_dir():
        raise ParameterError(option, "a file path (this is an existing folder)", str(p))
    anc = folder
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise ParameterError(option, f"a path whose folders can be created ({anc} is a file)", str(p))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".attnphase-probe-"):
            pass
    except OSError as exc:
        raise ParameterError(option, f"in a writable folder ({exc.strerror or exc})", str(p)) from None
    if not directory and p.exists() and not os.access(p, os.W_OK):
        raise ParameterError(option, "a writable file (the existing one is read-only)", str(p))
    return p


def write_atomic(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """``write(tmp)`` into a temporary file beside ``path``, then rename it into place (an interrupted or
    failed write never leaves a partial file at ``path``)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(fd)
    try:
        write(Path(tmp))
        with critical():
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
