"""The reading boundary: what reportgen may read under LOGS is decided here, and every file is opened here.

Three rules, in one place so no reader can forget one:

- a path is read only when its real path (every link resolved) lies inside LOGS; a link loop is
  never inside (`refusal`);
- only regular files are opened, and a pipe or a device is refused without blocking on it: the
  file is opened non-blocking and checked on its descriptor, so a file swapped for a pipe between
  the listing and the read is refused too (`open_file`);
- a file is read up to a budget: what lies past it is not read, and the caller says so (`read_file`).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MB = 1 << 20


class NotRegular(OSError):
    """The path is a pipe, a socket, a device or a folder: there is no file content to read."""

    def __init__(self, path: Path):
        super().__init__(f"{path}: not a regular file")
        self.strerror = "not a regular file"


def resolved(path: Path) -> Path | None:
    """The path with every link resolved (a dangling link: where it points); None for a link loop.
    OSError when a folder on the way cannot be searched (permission denied)."""
    try:
        return path.resolve(strict=path.is_symlink())
    except (RuntimeError, ValueError):  # a link loop; a name with a NUL byte
        return None
    except FileNotFoundError:
        return path.resolve(strict=False)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise


def inside(root: Path, path: Path) -> bool:
    """Whether path, every link resolved, lies in root (root resolved too); not when it cannot be resolved."""
    try:
        real = resolved(path)
        return real is not None and real.is_relative_to(root.resolve())
    except OSError:
        return False


def refusal(root: Path, path: Path) -> str | None:
    """Why a file listed under root may not be read (None: it may be). Never opens the file."""
    try:
        real = resolved(path)
        if real is None:
            return "a link loop; not read"
        if not real.is_relative_to(root.resolve()):
            return "a link to a file outside LOGS; not read"
        mode = real.stat().st_mode
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if not stat.S_ISREG(mode):  # a pipe, socket or device would block or never end
        return "not a regular file; not read"
    return None


def open_file(path: Path) -> BinaryIO:
    """The file at path, opened for reading; NotRegular (an OSError) for anything but a regular file.

    Opened non-blocking, so that a pipe answers at once instead of waiting for a writer."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(path)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@dataclass(frozen=True)
class Read:
    """The bytes read from a file: all of it, or its first `len(data)` bytes of `size`."""

    data: bytes
    size: int
    budget: int

    @property
    def whole(self) -> bool:
        return len(self.data) >= self.size

    def budget_note(self, what: str = "bytes") -> str | None:
        """What the reader must say when the file was larger than its budget (None when read whole)."""
        if self.whole:
            return None
        if not self.data:
            return (f"its first line is longer than reportgen reads for one file of this kind ({size(self.size)} "
                    f"and no line end in the first {size(self.budget)}); not read")
        return (f"only the first {size(len(self.data))} of {size(self.size)} were read "
                f"(reportgen's budget for one file of this kind); the {what} after that are not read")


def size(n: int) -> str:
    """1,234 bytes; 12 MB: a file size as a sentence says it."""
    return f"{n:,} bytes" if n < MB else f"{n / MB:,.0f} MB"


def read_file(path: Path, budget: int, whole_lines: bool = False) -> Read:
    """Up to `budget` bytes of the file at path. With whole_lines, a file cut by the budget ends at its
    last full line within it, so no line is read half (nor taken for one a writer left cut off)."""
    with open_file(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(budget)
        # Short of the budget, the read reached the file's end as it was then: a writer that appends after it
        # (a live log) leaves the rest to the next read, never a file past the budget.
        if len(data) < budget or not handle.read(1):
            return Read(data, max(size, len(data)), budget)
        cut = data.rfind(b"\n") + 1 if whole_lines else len(data)
        if cut < len(data):  # read again up to the cut rather than copy a slice: one buffer of the budget at a time
            del data
            handle.seek(0)
            data = handle.read(cut)
    return Read(data, max(size, budget + 1), budget)
