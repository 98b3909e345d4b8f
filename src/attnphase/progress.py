"""Progress bars on stderr for long library calls (sweeps, reproduce). The library reports through these or
through plain callbacks; it never imports the CLI."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def stderr_console():
    """The rich console on stderr (stdout stays clean for ``--json`` output)."""
    from rich.console import Console
    return Console(stderr=True)


def progress_bar(*extra_columns, bold: bool = False, transient: bool = False):
    """A :class:`rich.progress.Progress` with description, bar, done/total, ``extra_columns`` and elapsed
    time, on :func:`stderr_console`."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    return Progress(TextColumn("[bold]{task.description}" if bold else "{task.description}"), BarColumn(),
                    MofNCompleteColumn(), *extra_columns, TimeElapsedColumn(), console=stderr_console(),
                    transient=transient)
