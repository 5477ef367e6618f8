"""Domain errors: library code raises these, the CLI shows their message and exits 1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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


@contextmanager
def during(what: str) -> Iterator[None]:
    """Mark what reportgen is doing ("reading logs/train.log", "writing runs/r1.html"): a failure that is
    not the user's (a bug, exit 70) then says where it happened. The innermost mark wins."""
    try:
        yield
    except ReportgenError:
        raise
    except Exception as exc:
        if not hasattr(exc, "reportgen_during"):
            exc.reportgen_during = what  # type: ignore[attr-defined]
        raise


def where(exc: BaseException) -> str:
    """" while <what reportgen was doing>" for a failure marked by `during`, else ""."""
    what = getattr(exc, "reportgen_during", None)
    return f" while {what}" if what else ""
