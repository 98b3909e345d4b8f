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


def version_line() -> str:
    """``attnphase 0.2.0 (git <commit>[, dirty])``; the commit from :mod:`attnphase.provenance` (``no git
    checkout`` for an installed wheel)."""
    from .. import __version__
    from ..provenance import git_dirty, git_hash
    commit = git_hash()
    where = f"git {commit}{', dirty' if git_dirty() else ''}" if commit else "no git checkout"
    return f"attnphase {__version__} ({where})"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


@app.callback()
def _root(
    show_version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                      help="Print the package version and git commit, then exit."),
) -> None:
    """attnphase: simulations, asymptotic theory and phase diagrams of the attention model."""


@app.command()
def version() -> None:
    """Print the package version and git commit."""
    typer.echo(version_line())


def _register() -> None:
    from . import simulate_cmd, theory_cmd, theory_point_cmd, phase_cmd, sweep_cmd, reproduce_cmd, scaling_cmd, \
        basins_cmd  # noqa: F401


def main(argv: list[str] | None = None) -> None:
    """Entry point: bad input exits 2 with one line on stderr, never a traceback.

    Typer's usage errors (missing or malformed options) and our :class:`ParameterError` exit 2 with one line,
    :class:`NotConvergedError` exits 3. Run as the process's entry point (``argv is None``), Ctrl-C or
    SIGTERM prints one line and exits 130 / 143 at once (:mod:`attnphase.interrupts`).
    """
    _register()
    if argv is None:            # the process's entry point: Ctrl-C ends it cleanly (attnphase.interrupts)
        from ..interrupts import install
        install()
    try:
        rv = app(args=argv, standalone_mode=False)
        sys.exit(rv if isinstance(rv, int) else 0)
    except ParameterError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except NotConvergedError as exc:
        typer.echo(f"error: not converged: {exc}", err=True)
        sys.exit(3)
    except KeyboardInterrupt:
        typer.echo("interrupted (Ctrl-C)", err=True)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 -- Typer/Click usage errors: one line, their exit code
        code = getattr(exc, "exit_code", None)
        if code is None or not hasattr(exc, "format_message"):
            raise
        typer.echo(_usage_line(exc, argv), err=True)
        sys.exit(code)


def _usage_line(exc: Exception, argv: list[str] | None) -> str:
    """A Typer/Click usage error as one line (``error: Invalid value for '--seed': ...``); help text as is."""
    msg = exc.format_message()
    if "\n" in msg.strip() or msg.lstrip().startswith("Usage:"):   # e.g. a group called without a command
        return msg.rstrip()
    ctx = getattr(exc, "ctx", None)
    where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
    return f"error: {msg.strip()}{where}"
