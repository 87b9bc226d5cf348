"""The command line (`memvec`): one module per group of commands, their shared helpers in `common`."""

from memvec.cli.main import cli, main, run

__all__ = ["cli", "main", "run"]
