"""Git LFS pointers: what a clone without `git lfs pull` holds in place of a large file.

Every reader checks for one before reading a file as its format (a pointer named
`optimizer.pt` holds no optimizer state; one named `events.out.tfevents.*` is not a damaged
event file). The pointer format: https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md
"""

from __future__ import annotations

import re

_LFS_POINTER = re.compile(rb"\Aversion https://git-lfs\.github\.com/spec/v1\n(?:[a-z0-9.-]+ [^\n]*\n)*?"
                          rb"oid (sha256:[0-9a-f]{64})\n(?:[a-z0-9.-]+ [^\n]*\n)*?size (\d+)\n")
LFS_FORMAT = "git-lfs-pointer"


def lfs_pointer(head: bytes) -> str | None:
    """What a Git LFS pointer stands for ("a Git LFS pointer, not the file: ..."), or None for any other file."""
    if len(head) > 1024 or not head.startswith(b"version https://git-lfs"):
        return None
    match = _LFS_POINTER.match(head)
    if match is None:
        return None
    oid, size = match.group(1).decode(), int(match.group(2))
    return f"a Git LFS pointer, not the file ({size:,} bytes, {oid[:19]}…): fetch it with `git lfs pull`"
