"""``python -m mcpkit``: the same as the ``mcpkit`` command."""

from mcpkit.cli import main

raise SystemExit(main())
