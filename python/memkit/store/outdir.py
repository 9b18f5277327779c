# SPDX-License-Identifier: Apache-2.0
"""Where memkit writes, one rule: a file goes to an absent path or onto a
regular file memkit itself wrote, never anywhere else (a device node such as
/dev/full, a FIFO, a symbolic link, a directory, a user's file), and always
by a temporary file beside it renamed into place.  write_file() and
check_target() hold that rule for single files (profiles, recordings, spill
files); each writer says how it recognises its own files (`ours`: a profile
begins with "# memkit profile", see starts_with()).

The rest of this module writes generated files into a directory the user
names (`memkit report --out DIR`) without ever deleting or overwriting a
file memkit did not write.  check_directory() holds the rule every such
directory follows (a report's, a recording's): it is absent or a directory
(a symbolic link to one is followed), never a file, a FIFO, a device node or
a symbolic link to nothing; a directory that is not empty holds what memkit
wrote there before, else foreign_directory() refuses it.

What memkit wrote into a directory is listed in DIR/.memkit-files (the
manifest).  A new report replaces exactly those files: the ones it writes
again are overwritten, the ones it no longer writes (an earlier run's plots)
are deleted, anything else in DIR is left alone.  A directory that is not
empty and has no manifest is refused before anything is written, unless it
is a report written before manifests existed (its index.html says so and it
holds nothing but what such a report held): then memkit overwrites the files
of the same names and deletes nothing.

The files are first written into a hidden staging directory inside DIR and
moved into place only when all of them exist and none would replace a file
that is not memkit's: a failed or refused report changes nothing."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Callable, Optional

from memkit.errors import MemkitError

MANIFEST = ".memkit-files"
STAGING_PREFIX = ".memkit-staging-"
# What an index.html written by memkit before manifests existed begins with.
LEGACY_TITLES = ("<title>memkit lab report", "<title>memkit fleet report")


# ---- single files ----

Ours = Callable[[Path], bool]


def starts_with(marker: bytes) -> Ours:
    """`ours` for a format whose files begin with marker."""
    def ours(path: Path) -> bool:
        try:
            with open(path, "rb") as f:
                return f.read(len(marker)) == marker
        except OSError:
            return False
    return ours


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def refusal(path: Path, what: str, ours: Optional[Ours]) -> Optional[str]:
    """Why path may not receive what (None: it may).  The last component
    is not followed: a symbolic link is refused, not written through."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot write {what} to {path}: {e.strerror or e}"
    if not stat.S_ISREG(st.st_mode):
        kind = _kind(st.st_mode)
    elif ours is None or not ours(Path(path)):
        kind = "a file memkit did not write"
    else:
        return None
    return (f"will not write {what} to {path}: it is {kind}, and memkit writes only to a new path or "
            f"over a file it wrote itself")


def check_target(path: Path, what: str, ours: Optional[Ours]) -> None:
    """Refuses (MemkitError) a path write_file() would refuse: called before
    minutes of measuring as well as at the write."""
    why = refusal(path, what, ours)
    if why:
        raise MemkitError(why)


def check_writable(path: Path, what: str, ours: Optional[Ours]) -> None:
    """check_target(), and that path's directory takes a new file (made if
    absent): refused now, not at the write after minutes of measuring (a
    read-only /sys, /proc, a directory of another user's)."""
    check_target(path, what, ours)
    check_directory(path.parent, what)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=True):
            pass
    except OSError as e:
        raise MemkitError(f"cannot write {what} to {path}: {e.strerror or e}")


def write_file(path: Path, data, what: str, ours: Optional[Ours], mode: int = 0o644) -> Path:
    """Writes data (str or bytes) to path under the rule above: a temporary
    file in the same directory, renamed over path only if path is still
    absent or memkit's.  ours=None: only an absent path will do."""
    path = Path(path)
    check_target(path, what, ours)
    raw = data.encode() if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise MemkitError(f"cannot write {what} to {path}: {e.strerror or e}")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, mode & ~umask)
        check_target(path, what, ours)   # again: it may have changed while we wrote
        os.replace(tmp, path)            # a reader never sees half a file
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise MemkitError(f"cannot write {what} to {path}: {e.strerror or e}") from None
        raise
    return path


def remove_file(path: Path, what: str, ours: Ours) -> None:
    """Deletes path if it is a regular file memkit wrote; anything else stays."""
    if os.path.lexists(path) and refusal(path, what, ours) is None:
        try:
            os.unlink(path)
        except OSError as e:
            raise MemkitError(f"cannot remove {path}: {e.strerror or e}")


# ---- directories ----

def check_directory(root: Path, what: str) -> None:
    """Refuses (MemkitError) a root that exists and is not a directory,
    before anything runs: mkdir would fail later with "File exists" (a
    symbolic link to nothing) or "Not a directory" (a file beneath it)."""
    if os.path.isdir(root):
        return
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return
    except OSError as e:
        raise MemkitError(f"cannot write {what} into {root}: {e.strerror or e}")
    if stat.S_ISLNK(st.st_mode):   # to nothing, or to what is not a directory: never followed
        target = os.readlink(root)
        there = os.path.lexists(os.path.join(os.path.dirname(root), target))
        kind = f"a symbolic link to {target}, {'which is not a directory' if there else 'which does not exist'}"
    else:
        kind = f"{'a file' if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)}, not a directory"
    raise MemkitError(f"will not write {what} into {root}: it is {kind}; {what} goes into a new directory or "
                      f"an existing one")


def foreign_directory(root: Path, entries: list, what: str, sign: str, option: str) -> MemkitError:
    """The refusal of a directory that is not empty and holds nothing that
    shows memkit wrote it (sign: what would have, e.g. "no .memkit-files")."""
    shown = ", ".join(sorted(e.name for e in entries)[:3]) + (", ..." if len(entries) > 3 else "")
    return MemkitError(f"{root} is not empty and memkit did not write it ({sign}; it holds {shown}): {what} goes "
                       f"into a new or empty directory, or one memkit wrote before; it never replaces other "
                       f"files. Choose another {option}")


def _files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink())


def _legacy_files(root: Path, entries: list[Path]) -> set[str] | None:
    """The files of a report written before manifests (index.html, *.png,
    plots/*.png), or None when root holds anything else."""
    index = root / "index.html"
    try:
        head = index.read_text(errors="replace")[:2000] if index.is_file() else ""
    except OSError:
        return None
    if not any(t in head for t in LEGACY_TITLES):
        return None
    files = {"index.html"}
    for e in entries:
        if e.name in ("index.html", ".index.html.tmp"):
            continue
        if e.is_file() and e.suffix == ".png":
            files.add(e.name)
        elif e.name == "plots" and e.is_dir() and not e.is_symlink():
            for p in e.iterdir():
                if not (p.is_file() and p.suffix == ".png"):
                    return None
                files.add(f"plots/{p.name}")
        else:
            return None
    return files


def _is_manifest(path: Path) -> bool:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and data.get("written_by") == "memkit"


class OutputDir:
    """with OutputDir(DIR, "the report") as staging: write files into
    staging; on leaving the block they replace what memkit wrote into DIR
    before (see the module's docstring).  Refusals are MemkitErrors."""

    def __init__(self, root: Path, what: str):
        self.root, self.what = Path(root), what
        self.owned: set[str] = set()       # listed in the manifest: memkit may delete them
        self.replaceable: set[str] = set()  # memkit may overwrite them
        self.staging: Path | None = None
        self._check()

    def _check(self):
        root = self.root
        check_directory(root, self.what)
        if not root.exists():
            return
        manifest = root / MANIFEST
        if manifest.exists():
            try:
                data = json.loads(manifest.read_text())
                # Only paths inside root: a hand-edited list must not reach elsewhere.
                self.owned = {str(f) for f in data["files"]
                              if not Path(f).is_absolute() and ".." not in Path(f).parts}
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise MemkitError(f"cannot read {manifest} (the list of the files memkit wrote there): {e}; "
                                  "remove it only if every file in that directory may be replaced")
            self.replaceable = set(self.owned)
            return
        entries = [e for e in root.iterdir() if not e.name.startswith(STAGING_PREFIX)]
        if not entries:
            return
        legacy = _legacy_files(root, entries)
        if legacy is None:
            raise foreign_directory(root, entries, self.what, f"no {MANIFEST}", "--out")
        self.replaceable = legacy

    def __enter__(self) -> Path:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self.staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self.root))
        except OSError as e:
            raise MemkitError(f"cannot write {self.what} into {self.root}: {e.strerror or e}")
        return self.staging

    def __exit__(self, kind, value, tb):
        try:
            if kind is None:
                self._install()
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)
        return False

    def _install(self):
        new = _files_under(self.staging)
        for rel in new:   # all refusals before the first move
            dest = self.root / rel
            if (dest.exists() or dest.is_symlink()) and (rel not in self.replaceable or dest.is_dir()):
                raise MemkitError(f"{dest} exists and memkit did not write it: {self.what} was not written "
                                  f"(memkit never replaces files it did not write). Choose another --out")
            # listed as memkit's, but since replaced by a link, a FIFO, a device
            why = refusal(dest, self.what, lambda _p: True)
            if why:
                raise MemkitError(f"{why}; nothing was written. Choose another --out")
        try:
            for rel in new:
                dest = self.root / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(self.staging / rel, dest)
            for rel in sorted(self.owned - set(new)):   # an earlier report's, not written again
                remove_file(self.root / rel, self.what, lambda _p: True)
            write_file(self.root / MANIFEST, json.dumps({"written_by": "memkit", "files": new}, indent=1) + "\n",
                       f"the list of {self.what}'s files", _is_manifest)
        except OSError as e:
            raise MemkitError(f"cannot write {self.what} into {self.root}: {e.strerror or e}")
