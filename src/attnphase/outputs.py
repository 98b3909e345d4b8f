"""Output files: their paths are checked before any work starts, and they are written atomically.

The guarantees (``docs/guides/reliability.md``):

* only regular files are written: a device, a FIFO, a socket (or a folder) at the path is refused up front with
  a one-line :class:`ParameterError`, never replaced;
* a symbolic link is **followed**: the file it points to is written (atomically, beside the target) and the
  link stays a link;
* a new file gets the mode the umask gives (``0666 & ~umask``, like ``open``); a replaced file keeps its mode;
* :func:`write_atomic` writes beside the target and renames into place inside an interrupt-safe section
  (:func:`attnphase.interrupts.critical`), so an interrupted or failed write never leaves a partial file;
* :func:`check_output_path` creates nothing: a refused run (exit 2) leaves no empty folder behind; the missing
  folders are created when the file is written.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

from .errors import ParameterError
from .interrupts import critical


def _kind(mode: int) -> str:
    """A file type in words, for the one-line refusal."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "an existing folder")):
        if test(mode):
            return name
    return "not a regular file"


def resolve_target(path: str | Path, option: str = "--out") -> Path:
    """The path that will be written: ``path`` with ``~`` expanded and symbolic links followed (a dangling link
    names the file it would create)."""
    p = Path(path).expanduser()
    try:
        return Path(os.path.realpath(p)) if p.is_symlink() else p
    except OSError as exc:
        raise ParameterError(option, f"a path in folders that can be entered ({exc.strerror or exc})", str(p)) from None


def _stat(p: Path, option: str) -> os.stat_result | None:
    try:
        return p.stat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise ParameterError(option, "a path whose folders are folders (one of them is a file)", str(p)) from None
    except OSError as exc:      # e.g. a folder on the way that cannot be entered
        raise ParameterError(option, f"a path in folders that can be entered ({exc.strerror or exc})",
                             str(p)) from None


def check_output_path(path: str | Path, *, directory: bool = False, option: str = "--out") -> Path:
    """Make sure ``path`` can be written *before* the work starts, or raise a one-line
    :class:`ParameterError`: a folder where a file should go or the reverse, a device, FIFO or socket, a file in
    the way of a folder, a folder that cannot be entered, a read-only location. ``directory=True`` checks a
    folder instead. Nothing is created (the writers create missing folders); returns the path to write."""
    p = resolve_target(path, option)
    st = _stat(p, option)
    if st is not None:
        if directory and not stat.S_ISDIR(st.st_mode):
            raise ParameterError(option, f"a folder (this is {_kind(st.st_mode)})", str(p))
        if not directory and not stat.S_ISREG(st.st_mode):
            raise ParameterError(option, f"a regular file path (this is {_kind(st.st_mode)}; it is never "
                                 "replaced)", str(p))
    folder = p if directory else p.parent
    anc = folder
    while _stat(anc, option) is None and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise ParameterError(option, f"a path whose folders can be created ({anc} is a file)", str(p))
    try:
        with tempfile.NamedTemporaryFile(dir=folder if folder.is_dir() else anc, prefix=".attnphase-probe-"):
            pass
    except OSError as exc:
        raise ParameterError(option, f"in a writable folder ({exc.strerror or exc})", str(p)) from None
    if st is not None and not directory and not os.access(p, os.W_OK):
        raise ParameterError(option, "a writable file (the existing one is read-only)", str(p))
    return p


def _umask() -> int:
    """The process's umask (read without changing it where ``/proc`` tells it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """``write(tmp)`` into a temporary file beside ``path``, then rename it into place (an interrupted or
    failed write never leaves a partial file at ``path``). A symbolic link at ``path`` is followed (its target
    is replaced, the link stays); anything but a regular file there is refused, never replaced. Missing folders
    are created; the file gets the umask's mode (a replaced file keeps its own). Returns ``path``."""
    given = Path(path)
    target = resolve_target(given)
    st = _stat(target, "--out")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise ParameterError("--out", f"a regular file path (this is {_kind(st.st_mode)}; it is never replaced)",
                             str(target))
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, mode)
        with critical():
            os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return given


FIGURE_FORMATS = ("png", "pdf", "svg", "eps", "ps", "jpg", "jpeg", "tif", "tiff")
"""File extensions a figure may have (the format is taken from it)."""


def check_figure_path(path: str | Path, option: str = "--figure") -> Path:
    """:func:`check_output_path` for a figure, whose extension names a format of :data:`FIGURE_FORMATS`
    (without one, matplotlib would write ``PATH.png`` and the command would name the wrong file)."""
    p = check_output_path(path, option=option)
    if p.suffix.lower().lstrip(".") not in FIGURE_FORMATS:
        raise ParameterError(option, f"a file name ending in one of .{', .'.join(FIGURE_FORMATS)}", str(path))
    return p


def save_figure_atomic(fig: Any, path: str | Path, **kw: Any) -> Path:
    """``fig.savefig`` through :func:`write_atomic`, in the format of the path's extension."""
    fmt = Path(path).suffix.lower().lstrip(".") or "png"
    return write_atomic(path, lambda tmp: fig.savefig(tmp, format=fmt, **kw))
