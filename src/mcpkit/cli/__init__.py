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
    "worker": "mcpkit.cli.worker",
    "proxy": "mcpkit.cli.proxy",
    "registry": "mcpkit.cli.registry",
    "tools": "mcpkit.cli.tools",
    "call": "mcpkit.cli.call",
    "resources": "mcpkit.cli.resources",
    "read": "mcpkit.cli.read",
    "prompts": "mcpkit.cli.prompts",
    "prompt": "mcpkit.cli.prompt",
    "inspect": "mcpkit.cli.inspection",
    "install": "mcpkit.cli.install",
    "dev": "mcpkit.cli.dev",
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
    args, extra = parser.parse_known_args(argv)
    if extra:
        # argparse reads a command's positionals in one go, so `call TOOL --args J k=v`
        # leaves `k=v` over: KEY=VALUE words belong to a command that takes them anywhere.
        if isinstance(getattr(args, "pairs", None), list) and all(
            "=" in word and not word.startswith("-") for word in extra
        ):
            args.pairs.extend(extra)
        else:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        status: int = args._module.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`mcpkit tools ... | head`): what is left unprinted has no
        # one to read it. No traceback, and none at exit when Python flushes stdout again.
        _drop_stdout()
        return 1
    return status


def _drop_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (a test's captured stdout)
        pass
