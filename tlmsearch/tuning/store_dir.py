"""A folder of the trial storage on whatever filesystem it lies (a local or shared path, or an
object store: s3://, gs://), through the pyarrow filesystem Ray Tune uses: the few Path-like
operations `tuning.checkpoints` needs to find and drop checkpoints below `SearchConfig.storage`.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from pathlib import Path
from typing import Any

from tlmsearch.configs.storage import join
from tlmsearch.errors import ConfigError


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

    def _info(self) -> Any:
        return self.fs.get_file_info(self.path)

    def is_dir(self) -> bool:
        import pyarrow.fs

        return bool(self._info().type == pyarrow.fs.FileType.Directory)

    def exists(self) -> bool:
        import pyarrow.fs

        return bool(self._info().type != pyarrow.fs.FileType.NotFound)

    def glob(self, pattern: str) -> list[StoreDir]:
        """The direct children whose names match `pattern` (fnmatch), sorted by name."""
        import pyarrow.fs

        if not self.is_dir():
            return []
        infos = self.fs.get_file_info(pyarrow.fs.FileSelector(self.path, recursive=False, allow_not_found=True))
        names = sorted(i.base_name for i in infos if fnmatch.fnmatchcase(i.base_name, pattern))
        return [self / n for n in names]

    def read_text(self) -> str:
        with self.fs.open_input_stream(self.path) as fh:
            return bytes(fh.read()).decode("utf-8")

    def write_bytes(self, data: bytes) -> None:
        with self.fs.open_output_stream(self.path) as fh:
            fh.write(data)

    def rmtree(self) -> None:
        if self.is_dir():
            self.fs.delete_dir(self.path)
