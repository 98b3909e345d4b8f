"""``attnphase theory ...``: the asymptotic theory (MODEL.md §6). Sub-commands are added by theory
and phase modules onto :data:`theory_app` (``theory_point_cmd``, ``phase_cmd``: imported by ``cli._register``)."""

import typer

from . import app

theory_app = typer.Typer(help="Asymptotic theory (d -> infinity): fixed points, curves, transitions.",
                         no_args_is_help=True)
app.add_typer(theory_app, name="theory")
