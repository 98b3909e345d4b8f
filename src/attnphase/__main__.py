"""``python -m attnphase``: the same as the ``attnphase`` command."""

from .cli import main

if __name__ == "__main__":
    main()
