"""A folder of the trial storage, on whatever filesystem it lies: a local or shared path, or an
object store (s3://, gs://, ...), through the pyarrow filesystem Ray Tune itself uses.

The driver reads and repairs Tune's saved state before a resume (`tuning.reconcile`) and prunes
old checkpoints after a search; with `SearchConfig.storage` that state is no longer below the
run directory, so those steps go through `StoreDir`, the few Path-like operations they need.
Writes are atomic on a local filesystem (temporary file, then rename); an object store writes a
whole object at once anyway.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from pathlib import Path
from typing import Any

from tlmsearch.errors import ConfigError
from tlmsearch.storage import join


def open_filesystem(location: str) -> tuple[Any, str]:
    """(pyarrow filesystem, path on it) of a path or URI; a one-line ConfigError when pyarrow
    cannot resolve it (unknown scheme, missing credentials, a malformed URI)."""
    import pyarrow.fs

    try:
        return pyarrow.fs.FileSystem.from_uri(location)
    except Exception as exc:  # noqa: BLE001 - ArrowInvalid, OSError, ...: all mean "cannot use this"
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise ConfigError(f"storage {location!r} cannot be opened ({first})") from None


@dataclasses.dataclass(frozen=True)
class StoreDir:
    """`location` (a path or URI, as given to Tune) and its (filesystem, path) pair."""

    location: str
    fs: Any = dataclasses.field(compare=False, repr=False)
    path: str

    @classmethod
    def of(cls, location: str | Path | StoreDir) -> StoreDir:
        if isinstance(location, StoreDir):
            return location
        text = str(location)
        fs, path = open_filesystem(text)
        return cls(text, fs, path.rstrip("/") or path)

    def __str__(self) -> str:
        return self.location

    def __truediv__(self, name: str) -> StoreDir:
        return StoreDir(join(self.location, name), self.fs, f"{self.path}/{name}")

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def local(self) -> bool:
        return type(self.fs).__name__ == "LocalFileSystem"

    def _info(self) -> Any:
        return self.fs.get_file_info(self.path)

    def is_dir(self) -> bool:
        import pyarrow.fs

        return bool(self._info().type == pyarrow.fs.FileType.Directory)

    def is_file(self) -> bool:
        import pyarrow.fs

        return bool(self._info().type == pyarrow.fs.FileType.File)

    def exists(self) -> bool:
        import pyarrow.fs

        return bool(self._info().type != pyarrow.fs.FileType.NotFound)

    def size(self) -> int:
        """Bytes of this file; -1 when it is not a file."""
        import pyarrow.fs

        info = self._info()
        return int(info.size) if info.type == pyarrow.fs.FileType.File else -1

    def glob(self, pattern: str) -> list[StoreDir]:
        """The direct children whose names match `pattern` (fnmatch), sorted by name."""
        import pyarrow.fs

        if not self.is_dir():
            return []
        infos = self.fs.get_file_info(pyarrow.fs.FileSelector(self.path, recursive=False, allow_not_found=True))
        names = sorted(i.base_name for i in infos if fnmatch.fnmatchcase(i.base_name, pattern))
        return [self / n for n in names]

    def read_bytes(self) -> bytes:
        with self.fs.open_input_stream(self.path) as fh:
            return bytes(fh.read())

    def read_text(self) -> str:
        return self.read_bytes().decode("utf-8")

    def write_bytes(self, data: bytes) -> None:
        if self.local:
            tmp = Path(self.path).with_name(f".{self.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(self.path)
            return
        with self.fs.open_output_stream(self.path) as fh:
            fh.write(data)

    def rmtree(self) -> None:
        if self.is_dir():
            self.fs.delete_dir(self.path)

    def move_to(self, dest: StoreDir) -> None:
        """Rename this folder to `dest` (copy, then delete, where the store cannot rename)."""
        try:
            self.fs.move(self.path, dest.path)
            return
        except (OSError, NotImplementedError):
            if self.local:
                raise
        import pyarrow.fs

        pyarrow.fs.copy_files(self.path, dest.path, source_filesystem=self.fs, destination_filesystem=dest.fs)
        self.fs.delete_dir(self.path)
