"""The ``mcpkit`` command.

Each subcommand lives in its own module, listed in :data:`COMMANDS`. A command
module defines ``HELP`` (one line), ``configure(parser)`` (adds its
arguments) and ``run(args) -> int`` (the exit status). Command modules import
only :mod:`argparse` at module level and load everything else inside
``run``, so ``mcpkit --help`` and start-up stay fast.

Exit status: 0 success, 1 the user's code failed, 2 a usage error (bad
arguments, a file or object that cannot be found, an object of the wrong
type), reported as one ``mcpkit: error: ...`` line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import Final

__all__ = ["COMMANDS", "build_parser", "main"]

#: Subcommand name → module. Add a command by adding a row and a module.
COMMANDS: Final[dict[str, str]] = {
    "run": "mcpkit.cli.run",
    "proxy": "mcpkit.cli.proxy",
    "registry": "mcpkit.cli.registry",
    "tools": "mcpkit.cli.tools",
    "call": "mcpkit.cli.call",
    "resources": "mcpkit.cli.resources",
    "read": "mcpkit.cli.read",
    "prompts": "mcpkit.cli.prompts",
    "prompt": "mcpkit.cli.prompt",
}


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="mcpkit", description="Build, run and talk to Model Context Protocol servers."
    )
    parser.add_argument("--version", action="version", version=f"mcpkit {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = import_module(module_name)
        sub = commands.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(sub)
        sub.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mcpkit`` console script and ``python -m mcpkit``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    status: int = args._module.run(args)
    return status
