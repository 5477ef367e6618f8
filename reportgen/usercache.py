"""reportgen's folder in the user's cache folder: what a build keeps for the next one (compiled templates,
what it read from each log).

$XDG_CACHE_HOME/reportgen (else ~/.cache/reportgen), each kind of cache in a folder of its own. What is
kept there is loaded as code or as pickled objects, so a folder is used only when it, and every folder
from reportgen/ down to it, is this user's and no one else can write to it. A cache that cannot be
made, read or written is a cache that misses, never an error.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

TOP = "reportgen"


def private(path: Path, missing_ok: bool = False) -> bool:
    """The path is this user's and no one else can write to it (nor replace it: not a link)."""
    try:
        held = path.lstat()
    except FileNotFoundError:
        return missing_ok
    except OSError:
        return False
    return (not stat.S_ISLNK(held.st_mode) and held.st_uid == os.getuid()
            and not held.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def cache_folder(*names: str) -> Path | None:
    """The folder reportgen/<names...> in the user's cache folder, made private to this user when it is
    missing; None when it cannot be made or someone else could write to it (or to a folder above it)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / TOP
    chain = [path]
    for name in names:
        path = path / name
        chain.append(path)
    try:
        Path(base).mkdir(parents=True, exist_ok=True)
        for folder in chain:
            folder.mkdir(exist_ok=True, mode=0o700)
    except OSError:
        return None
    return path if all(private(folder) for folder in chain) else None
