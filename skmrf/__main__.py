"""``python -m skmrf``: the command line (see :mod:`skmrf.cli`)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
