"""Sweep definitions in TOML: parsing, validation and expansion into task configurations.

Format (see ``docs/sweeps.md``)::

    [sweep]
    name = "smoke"
    output = "results/smoke"        # folder, relative to the TOML file (default: "<file stem>_out")

    [[task]]
    kind = "simulate"               # simulate | theory | baseline
    seeds = [0, 1]                  # list, or an integer n meaning 0..n-1 (default [0])
    instances = 4                   # simulate only: instances batched in one compiled call
    params = { d = 20, steps = 50 } # fixed values
    grid = { alpha = [0.5, 1.0], omega = { start = 0.1, stop = 0.5, num = 3 } }   # Cartesian product
    zip = { sigma = [0.5, 0.6], lam = [0.01, 0.02] }   # equal-length lists taken together (a list of points)
    points = [ { alpha = 0.3, omega = 0.2 } ]          # explicit points

Every value is validated (ModelParams, the kind's own ranges and the kind's ``validate`` hook, which applies
the same rules and size guards as the library and the commands) while expanding, before any task runs and
before a store is created; a problem raises one :class:`ParameterError` naming where it is
(``task[0].grid.omega``). A configuration that appears twice is an error, never silently merged.
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..errors import ParameterError
from ..guards import check_grid, check_model_size
from ..provenance import config_hash
from .tasks import MODEL_KEYS, get_kind

_TASK_KEYS = {"kind", "seeds", "instances", "params", "grid", "zip", "points", "name"}
_SWEEP_KEYS = {"name", "output", "description"}


@dataclass
class Sweep:
    name: str
    path: Path             # the TOML file
    output: Path           # output folder (absolute)
    tasks: list[dict[str, Any]]   # expanded, validated task configurations (each with "key")

    @property
    def db_path(self) -> Path:
        return self.output / "sweep.sqlite"

    @property
    def keys(self) -> list[str]:
        return [t["key"] for t in self.tasks]


def load(path: str | Path) -> Sweep:
    """Read, validate and expand a sweep file. Raises :class:`ParameterError` on any problem."""
    path = Path(path)
    if path.exists() and not path.is_dir() and not path.is_file():      # a FIFO would block the read forever
        raise ParameterError("sweep file", "a regular TOML file (this is a FIFO, socket or device)", str(path))
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ParameterError("sweep file", "an existing TOML file", str(path)) from None
    except IsADirectoryError:
        raise ParameterError("sweep file", "a TOML file (this is a folder)", str(path)) from None
    except UnicodeDecodeError:
        raise ParameterError("sweep file", "a UTF-8 TOML file", str(path)) from None
    except OSError as exc:
        raise ParameterError("sweep file", f"a readable TOML file ({exc.strerror or exc})", str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ParameterError("sweep file", "valid TOML", f"{path}: {exc}") from None
    return parse(raw, path)


def parse(raw: dict[str, Any], path: Path) -> Sweep:
    unknown = set(raw) - {"sweep", "task"}
    if unknown:
        raise ParameterError(f"top-level table {sorted(unknown)[0]!r}", "one of [sweep], [[task]]",
                             sorted(unknown)[0])
    head = raw.get("sweep", {})
    if not isinstance(head, dict):
        raise ParameterError("sweep", "a table", head)
    for k in head:
        if k not in _SWEEP_KEYS:
            raise ParameterError(f"sweep.{k}", f"one of {{{', '.join(sorted(_SWEEP_KEYS))}}}", k)
    name = head.get("name", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise ParameterError("sweep.name", "a non-empty string", name)
    output = head.get("output", f"{path.stem}_out")
    if not isinstance(output, str) or not output:
        raise ParameterError("sweep.output", "a non-empty path string", output)
    out = Path(output)
    out = (path.resolve().parent / out) if not out.is_absolute() else out
    blocks = raw.get("task")
    if not blocks or not isinstance(blocks, list):
        raise ParameterError("task", "at least one [[task]] table", blocks)
    tasks: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    names: dict[str, int] = {}
    for i, block in enumerate(blocks):
        if isinstance(block, dict) and "name" in block:
            tname = block["name"]
            if not isinstance(tname, str) or not tname.strip():
                raise ParameterError(f"task[{i}].name", "a non-empty string", tname)
            if tname in names:
                raise ParameterError(f"task[{i}].name", f"a name no other task has (task[{names[tname]}] has it)",
                                     tname)
            names[tname] = i
        for j, cfg in enumerate(expand_block(block, f"task[{i}]")):
            where = f"task[{i}] point {j}"
            if cfg["key"] in seen:              # never collapse silently: the file says one thing twice
                raise ParameterError(f"{where}", f"a configuration listed once (it repeats {seen[cfg['key']]})",
                                     _describe(cfg))
            seen[cfg["key"]] = where
            tasks.append(cfg)
            check_grid("sweep size", len(tasks), len(tasks))
    return Sweep(name=name, path=path.resolve(), output=out, tasks=tasks)


def _describe(cfg: dict[str, Any]) -> str:
    vals = {**{k: v for k, v in (cfg.get("model") or {}).items() if k not in ("A", "P")}, **cfg["params"]}
    if "seed" in cfg:
        vals["seed"] = cfg["seed"]
    return ", ".join(f"{k}={v}" for k, v in vals.items())


def _values(where: str, v: Any) -> list[Any]:
    """A grid axis: a list, or ``{start, stop, num}`` (linspace) / ``{start, stop, num, log = true}``."""
    if isinstance(v, dict):
        if set(v) - {"start", "stop", "num", "log"} or not {"start", "stop", "num"} <= set(v):
            raise ParameterError(where, "a list or a table {start, stop, num[, log]}", v)
        try:
            start, stop, num = float(v["start"]), float(v["stop"]), int(v["num"])
        except (TypeError, ValueError):
            raise ParameterError(where, "numeric start, stop and an integer num", v) from None
        if num < 1:
            raise ParameterError(where, "a range with num >= 1 (an empty grid runs nothing)", v)
        if v.get("log"):
            if start <= 0 or stop <= 0:
                raise ParameterError(where, "positive start and stop for a log range", v)
            vals = np.geomspace(start, stop, num)
        else:
            vals = np.linspace(start, stop, num)
        return [round(float(x), 12) for x in vals]
    if isinstance(v, list):
        if not v:
            raise ParameterError(where, "a non-empty list (an empty grid runs nothing)", v)
        return v
    raise ParameterError(where, "a list of values or a table {start, stop, num}", v)


def expand_block(block: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(block, dict):
        raise ParameterError(where, "a table", block)
    for k in block:
        if k not in _TASK_KEYS:
            raise ParameterError(f"{where}.{k}", f"one of {{{', '.join(sorted(_TASK_KEYS))}}}", k)
    kind = get_kind(block.get("kind"))
    allowed = set(kind.params) | (set(MODEL_KEYS) if kind.model else set())

    def check_names(section: str, names: Any) -> None:
        for n in names:
            if n not in allowed:
                raise ParameterError(f"{where}.{section}.{n}",
                                     f"a parameter of kind {kind.name!r}: one of "
                                     f"{{{', '.join(sorted(allowed))}}}", n)

    fixed = block.get("params", {})
    grid = block.get("grid", {})
    zipped = block.get("zip", {})
    points = block.get("points", [{}])
    for sec, val in (("params", fixed), ("grid", grid), ("zip", zipped)):
        if not isinstance(val, dict):
            raise ParameterError(f"{where}.{sec}", "a table", val)
        check_names(sec, val)
    if not isinstance(points, list) or not points or not all(isinstance(p, dict) for p in points):
        raise ParameterError(f"{where}.points", "a non-empty list of tables", points)
    for j, p in enumerate(points):
        check_names(f"points[{j}]", p)
    sections = [("params", fixed), ("grid", grid), ("zip", zipped)] + [
        (f"points[{j}]", p) for j, p in enumerate(points)]
    owner: dict[str, str] = {}
    for sec, val in sections:               # one value per parameter: never let one section override another
        for n in val:
            first = owner.setdefault(n, sec)
            if first != sec and not (first.startswith("points[") and sec.startswith("points[")):
                raise ParameterError(f"{where}.{sec}.{n}", f"given in one section only (it is also in "
                                     f"{where}.{first})", n)
    axes = {n: _values(f"{where}.grid.{n}", v) for n, v in grid.items()}
    zl = {n: _values(f"{where}.zip.{n}", v) for n, v in zipped.items()}
    if len({len(v) for v in zl.values()}) > 1:
        raise ParameterError(f"{where}.zip", "lists of equal length",
                             {n: len(v) for n, v in zl.items()})
    zrows = [dict(zip(zl, vals)) for vals in zip(*zl.values())] if zl else [{}]

    seeds = block.get("seeds", [0])
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ParameterError(f"{where}.seeds", "an integer >= 1 or a non-empty list", seeds)
        seeds = list(range(seeds))
    if (not isinstance(seeds, list) or not seeds
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)):
        raise ParameterError(f"{where}.seeds", "a non-empty list of integers >= 0 (or a count)", seeds)
    if not kind.seeded:
        if "seeds" in block:
            raise ParameterError(f"{where}.seeds", f"absent for kind {kind.name!r} (deterministic)", seeds)
        seeds = [None]
    instances = block.get("instances", 1)
    if "instances" in block and not kind.instanced:
        raise ParameterError(f"{where}.instances", f"absent for kind {kind.name!r} (no instances)",
                             instances)
    if isinstance(instances, bool) or not isinstance(instances, int) or instances < 1:
        raise ParameterError(f"{where}.instances", "an integer >= 1", instances)

    total = len(zrows) * len(points) * len(seeds)
    for v in axes.values():
        total *= len(v)
    check_grid(f"{where} size", total, total)
    out = []
    for combo in itertools.product(*axes.values()):
        for zrow in zrows:
            for pt in points:
                values = {**fixed, **dict(zip(axes, combo)), **zrow, **pt}
                for seed in seeds:
                    out.append(make_task(kind, values, seed, instances, where))
    return out


def make_task(kind, values: dict[str, Any], seed: int | None, instances: int, where: str) -> dict[str, Any]:
    """One validated task configuration with its content key (parameters, seed, package version)."""
    cfg: dict[str, Any] = {"kind": kind.name, "version": __version__}
    if kind.model:
        from ..model import ModelParams
        mvals = {k: values[k] for k in MODEL_KEYS if k in values}
        try:                                # the sizes first: the default A below is L x L
            check_model_size(mvals.get("L", 2), mvals.get("r", 1), mvals.get("r_star", 1))
        except ParameterError as exc:
            raise ParameterError(f"{where}: {exc.name}", exc.allowed, exc.got) from None
        if "L" in mvals and "A" not in mvals and mvals["L"] != 2:
            mvals["A"] = [[1.0 / mvals["L"]] * mvals["L"]] * mvals["L"]
        try:
            cfg["model"] = ModelParams(**mvals).to_dict()
        except ParameterError as exc:
            raise ParameterError(f"{where}: {exc.name}", exc.allowed, exc.got) from None
        except TypeError as exc:
            raise ParameterError(where, "valid model parameters", str(exc)) from None
    params = dict(kind.defaults)
    for n, check in kind.params.items():
        if n in values:
            params[n] = check(f"{where}: {n}", values[n])
        elif n in params:
            params[n] = check(f"{where}: {n}", params[n])
    missing = [n for n in ("alpha", "d") if n in kind.params and n not in params]
    if missing:
        raise ParameterError(f"{where}: {missing[0]}", f"set for kind {kind.name!r} (params or grid)",
                             None)
    cfg["params"] = params
    if kind.validate is not None:               # the same rules as the library / the command
        try:
            kind.validate({**cfg, "seed": seed, "instances": instances})   # the whole task, sizes included
        except ParameterError as exc:
            raise ParameterError(f"{where}: {exc.name}", exc.allowed, exc.got) from None
    if kind.seeded or seed is not None:
        cfg["seed"] = seed
    if kind.instanced:
        cfg["instances"] = instances
    cfg["key"] = config_hash(cfg, length=32)
    return cfg
