"""Write the site into a temporary sibling folder and swap it in whole (a failed build leaves the old site)."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from reportgen.errors import BuildError

_RENAME_EXCHANGE = 2


# The marker reportgen writes into every site: the files it owns. A folder is replaced only when it
# holds this marker and no file the marker does not list (a report.json alone is no site).
MARKER = ".reportgen-site.json"
MARKER_SCHEMA = "reportgen.site/1"


def _site_files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink()}


def _not_owned(folder: Path) -> str | None:
    """Why a non-empty folder is not a site reportgen may replace, or None when it is one."""
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        if (folder / "report.json").is_file() and (folder / "index.html").is_file():
            return (f"it holds no reportgen site (no {MARKER}; a site an earlier reportgen wrote has none: "
                    "delete it once, and later builds replace it)")
        return f"it holds no reportgen site (no {MARKER})"
    owned = marker.get("files") if isinstance(marker, dict) and marker.get("schema") == MARKER_SCHEMA else None
    if not isinstance(owned, list):
        return f"its {MARKER} is not reportgen's"
    extra = sorted(_site_files(folder) - set(map(str, owned)) - {MARKER})
    if extra:
        return f"it holds {len(extra)} file{'s' if len(extra) > 1 else ''} reportgen did not write ({extra[0]})"
    return None


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
    if target.is_dir() and any(target.iterdir()) and (why := _not_owned(target)) is not None:
        raise BuildError(
            f"{out}: exists, is not empty and {why}; reportgen replaces only its own sites, whole. "
            "Choose a new or empty folder"
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
        # A link named by -o is followed: the folder it points to is replaced, the link stays.
        self.out = out = out.resolve() if out.is_symlink() else out
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            remove_stale(out)
            self.tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-{os.getpid()}-", dir=out.parent))
        except OSError as exc:
            raise BuildError(f"{out}: the site cannot be written there ({exc.strerror}); choose another -o folder") from None
        self.written: set[str] = set()

    def write(self, rel: str, data: str | bytes) -> None:
        """Write one file of the new site. A file the site in place already holds with these very bytes is
        linked from it instead (a hard link: the same file under the new folder), which costs a fraction of
        writing it again: a rebuild under `watch` changes a few pages of hundreds."""
        if rel in self.written:
            raise BuildError(f"{rel}: the build tried to write this file twice")
        self.written.add(rel)
        path = self.tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        content = data.encode("utf-8") if isinstance(data, str) else data
        if not self._linked(rel, path, content):
            path.write_bytes(content)

    def _linked(self, rel: str, path: Path, content: bytes) -> bool:
        """Whether the site in place holds `rel` as a plain file of its own with exactly `content`, now linked at
        `path`. Anything else is written: no such file, other bytes, a link, a file that has other names too (a
        backup made with hard links: the new site would share it), one replaced while it was compared, a file
        system without hard links."""
        old = self.out / rel
        try:
            found = os.lstat(old)
            if (not stat.S_ISREG(found.st_mode) or found.st_nlink != 1 or found.st_size != len(content)
                    or old.read_bytes() != content):
                return False
            os.link(old, path, follow_symlinks=False)
            if os.lstat(path).st_ino != found.st_ino:  # replaced since it was compared: not the bytes compared
                path.unlink()
                return False
        except OSError:
            return False
        return True

    def commit(self) -> None:
        """Swap the new site in; the old one is removed only once the new one is in place."""
        marker = {"schema": MARKER_SCHEMA, "files": sorted(self.written)}
        self.write(MARKER, json.dumps(marker, indent=1) + "\n")
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
