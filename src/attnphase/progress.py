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


class QMCStatus:
    """A status line on stderr for the theory engine's ``progress`` callback (``engine.solve_batch``): on a
    terminal a rich spinner whose text follows the reports (QMC size, stage, worst relative s.e. against the
    target); otherwise one line per report, so a log still shows how far the error control got. Use as a
    context manager; the instance is the callback."""

    def __init__(self, label: str = ""):
        self.label = label
        self._status = None

    def __enter__(self) -> "QMCStatus":
        con = stderr_console()
        if con.is_terminal:
            self._status = con.status(self._text("starting"))
            self._status.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._status is not None:
            self._status.__exit__(*exc)
            self._status = None

    def _text(self, what: str) -> str:
        return f"{self.label}: {what}" if self.label else what

    def __call__(self, report) -> None:
        text = self._text(report.describe())
        if self._status is not None:
            self._status.update(text)
        else:
            stderr_console().print(text, markup=False, highlight=False, soft_wrap=True)
