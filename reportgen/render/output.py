"""Write the site into a temporary sibling folder and swap it in whole (a failed build leaves the old site)."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from reportgen.errors import BuildError

_RENAME_EXCHANGE = 2


def _is_site(folder: Path) -> bool:
    try:
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(report, dict) and str(report.get("schema", "")).startswith("reportgen.report/")


def check_output(out: Path, logs: Path, plan: Path) -> None:
    """Refuse, before anything is written, an output folder that would touch the inputs."""
    target, logs_dir, plan_file = out.resolve(), logs.resolve(), plan.resolve()
    if target == logs_dir or logs_dir.is_relative_to(target):
        raise BuildError(f"{out}: the output folder contains LOGS ({logs}); replacing it would delete the inputs. Choose another -o folder")
    if target.is_relative_to(logs_dir):
        raise BuildError(f"{out}: the output folder is inside LOGS ({logs}); reportgen never writes into its inputs. Choose another -o folder")
    if plan_file.is_relative_to(target):
        raise BuildError(f"{out}: the output folder contains the plan ({plan}); choose another -o folder")
    if target.exists() and not target.is_dir():
        raise BuildError(f"{out}: exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not _is_site(target):
        raise BuildError(
            f"{out}: exists, is not empty and holds no reportgen site (no report.json); "
            "reportgen replaces only its own sites. Choose a new or empty folder"
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(out: Path) -> None:
    """Remove the temporary folders that killed builds left beside `out` (their process is gone)."""
    pattern = re.compile(rf"^\.{re.escape(out.name)}\.(?:tmp|old)-(\d+)-")
    for sibling in out.parent.iterdir() if out.parent.is_dir() else []:
        match = pattern.match(sibling.name)
        if match and sibling.is_dir() and not sibling.is_symlink() and not _alive(int(match.group(1))):
            shutil.rmtree(sibling, ignore_errors=True)


class SiteWriter:
    """Collects the site's files in a temporary sibling of the output folder; each file is written once."""

    def __init__(self, out: Path):
        self.out = out
        out.parent.mkdir(parents=True, exist_ok=True)
        remove_stale(out)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-{os.getpid()}-", dir=out.parent))
        self.written: set[str] = set()

    def write(self, rel: str, data: str | bytes) -> None:
        if rel in self.written:
            raise BuildError(f"{rel}: the build tried to write this file twice")
        self.written.add(rel)
        path = self.tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)

    def commit(self) -> None:
        """Swap the new site in; the old one is removed only once the new one is in place."""
        os.chmod(self.tmp, 0o755)
        if not self.out.exists():
            os.rename(self.tmp, self.out)
            return
        if not _exchange(self.tmp, self.out):
            old = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.old-{os.getpid()}-", dir=self.out.parent))
            os.rename(self.out, old / "site")
            os.rename(self.tmp, self.out)
            self.tmp = old
        shutil.rmtree(self.tmp)

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two folders (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return result == 0
