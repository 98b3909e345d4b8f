"""A per-process choice between a compiled kernel and its numpy reference (same algorithm), with the default
from an environment variable (inherited by worker processes) and a context manager for comparisons."""

from __future__ import annotations

import os
from contextlib import contextmanager

from ..errors import ParameterError


class KernelChoice:
    """``options``: allowed names, the first is the default; ``env``: the variable that overrides it."""

    def __init__(self, what: str, env: str, options: tuple[str, ...]):
        self.what, self.env, self.options = what, env, options
        self._name = os.environ.get(env, options[0])

    @contextmanager
    def use(self, name: str):
        """Run the block with kernel ``name``."""
        if name not in self.options:
            raise ParameterError(self.what, f"one of {', '.join(self.options)}", name)
        saved, self._name = self._name, name
        try:
            yield
        finally:
            self._name = saved

    def active(self) -> str:
        """The kernel in use; an unknown value from the environment is an error naming the variable."""
        if self._name not in self.options:
            raise ParameterError(self.env, f"one of {', '.join(self.options)}", self._name)
        return self._name
