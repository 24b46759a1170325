"""``python -m mcpkit``: the same as the ``mcpkit`` command."""

from mcpkit.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
