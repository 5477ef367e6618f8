"""Domain errors: library code raises these, the CLI shows their message and exits 1."""

from __future__ import annotations

import click


class ReportgenError(click.ClickException):
    """Root of every error caused by inputs the user must fix (exit code 1)."""

    exit_code = 1

    def format_message(self) -> str:
        return self.message

    def show(self, file=None) -> None:
        """The message alone: it already names the file, line and key."""
        click.echo(self.format_message(), file=file, err=True)


class PlanError(ReportgenError):
    """The plan file cannot be read or does not validate; holds every error found."""

    def __init__(self, path: str, errors: list[str]):
        self.path = path
        self.errors = errors
        count = len(errors)
        summary = f"{path}: {count} error{'s' if count != 1 else ''} in the plan"
        super().__init__("\n".join(errors + [summary]))


class InputError(ReportgenError):
    """The logs folder cannot be used at all (missing, not a folder)."""


class BuildError(ReportgenError):
    """The site cannot be written where asked (overlaps the inputs, not a site folder)."""
