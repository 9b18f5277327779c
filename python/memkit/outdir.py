# SPDX-License-Identifier: Apache-2.0
"""Writing generated files into a directory the user names (`memkit report
--out DIR`) without ever deleting or overwriting a file memkit did not write.

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
import tempfile
from pathlib import Path

from memkit.errors import MemkitError

MANIFEST = ".memkit-files"
STAGING_PREFIX = ".memkit-staging-"
# What an index.html written by memkit before manifests existed begins with.
LEGACY_TITLES = ("<title>memkit lab report", "<title>memkit fleet report")


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
        if root.exists() and not root.is_dir():
            raise MemkitError(f"cannot write {self.what} into {root}: it is not a directory")
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
            shown = ", ".join(sorted(e.name for e in entries)[:3]) + (", ..." if len(entries) > 3 else "")
            raise MemkitError(f"{root} is not empty and memkit did not write it (no {MANIFEST}; it holds "
                              f"{shown}): {self.what} goes into a new or empty directory, or one memkit wrote "
                              f"before; it never replaces other files. Choose another --out")
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
        try:
            for rel in new:
                dest = self.root / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(self.staging / rel, dest)
            for rel in sorted(self.owned - set(new)):   # an earlier report's, not written again
                (self.root / rel).unlink(missing_ok=True)
            tmp = self.root / f"{MANIFEST}.tmp"
            tmp.write_text(json.dumps({"written_by": "memkit", "files": new}, indent=1) + "\n")
            os.replace(tmp, self.root / MANIFEST)
        except OSError as e:
            raise MemkitError(f"cannot write {self.what} into {self.root}: {e.strerror or e}")
