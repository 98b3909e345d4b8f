"""The ``attnphase`` command line (Typer). Each sub-command lives in its own module."""

from __future__ import annotations

import sys

import typer

from ..errors import NotConvergedError, ParameterError

app = typer.Typer(
    name="attnphase",
    help="Positional vs semantic learning in a solvable model of dot-product attention "
         "(Cui, Behrens, Krzakala, Zdeborová, NeurIPS 2024).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """attnphase: simulations, asymptotic theory and phase diagrams of the attention model."""



@app.command()
def version() -> None:
    """Print the package version."""
    from .. import __version__
    typer.echo(__version__)


def _register() -> None:
    from . import simulate_cmd, theory_cmd, phase_cmd, sweep_cmd, reproduce_cmd, scaling_cmd, basins_cmd  # noqa: F401


def main(argv: list[str] | None = None) -> None:
    """Entry point: bad input exits 2 with one line on stderr, never a traceback.

    Usage errors are Typer's own (exit 2); our :class:`ParameterError` exits 2 with one line,
    :class:`NotConvergedError` exits 3.
    """
    _register()
    try:
        app(args=argv)
    except ParameterError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except NotConvergedError as exc:
        typer.echo(f"error: not converged: {exc}", err=True)
        sys.exit(3)
    except KeyboardInterrupt:
        typer.echo("aborted", err=True)
        sys.exit(130)
