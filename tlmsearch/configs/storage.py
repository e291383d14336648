"""Where trial checkpoints go (`SearchConfig.storage`): the text checks and names, pure.

A search keeps its own files (search.yaml, trials.jsonl, the Optuna journal, the study files)
in its run directory on the driver's machine. Ray Tune's experiment folder (its saved state
and every trial's checkpoints) goes to the *trial storage*: by default the run directory
itself (one machine), or `storage`, a place every node of a cluster reaches:

- a shared filesystem path (`/mnt/nfs/tlm`, NFS, Lustre, a mounted bucket), made absolute
  here because the workers do not share the driver's working directory;
- an object-store URI that Ray Tune's `RunConfig(storage_path=...)` resolves through
  `pyarrow.fs.FileSystem.from_uri`: `s3://bucket/prefix`, `gs://bucket/prefix`,
  `hdfs://host/path`, `abfs://...`, or `file:///abs/path` for a local or shared path.

Each run gets its own folder below `storage`, named after the run (`trial_root`), holding
`tune/` and `fixed/` exactly as a run directory would. Nothing here touches a filesystem
(`tlmsearch.tuning.trial_storage` checks that the place is writable and shared).
"""

from __future__ import annotations

import os
from pathlib import Path

from tlmsearch.errors import ConfigError

# the URI schemes pyarrow's FileSystem.from_uri resolves (what Ray Tune's storage accepts)
SCHEMES: tuple[str, ...] = ("file", "s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss")
_REMOTE_NEEDS_HOST = ("s3", "gs", "gcs", "abfs", "abfss")


def scheme(storage: str) -> str:
    """The URI scheme of `storage` ("" for a plain filesystem path)."""
    head, sep, _ = storage.partition("://")
    return head.lower() if sep and head and "/" not in head else ""


def check_storage(storage: str, what: str = "storage") -> str:
    """`storage` when it names a place Ray Tune can store trials in ("" = the run directory);
    else a one-line `ConfigError` naming what is allowed."""
    if not storage:
        return storage
    if any(ord(c) < 32 for c in storage):
        raise ConfigError(f"{what}={storage!r} contains a control character")
    kind = scheme(storage)
    if not kind:
        if "://" in storage:
            raise ConfigError(f"{what}={storage!r} is not a path or a URI (scheme://...)")
        return storage
    if kind not in SCHEMES:
        raise ConfigError(
            f"{what}={storage!r}: unsupported URI scheme {kind!r}; use a shared filesystem path or a URI "
            f"with one of: {', '.join(s + '://' for s in SCHEMES)}"
        )
    rest = storage.split("://", 1)[1]
    if kind == "file" and not rest.startswith("/"):
        raise ConfigError(f"{what}={storage!r}: a file:// URI needs an absolute path (file:///abs/path)")
    if kind in _REMOTE_NEEDS_HOST and not rest.split("/", 1)[0].split("?", 1)[0]:
        raise ConfigError(f"{what}={storage!r} names no bucket ({kind}://BUCKET/PREFIX)")
    return storage


def normalise(storage: str) -> str:
    """`storage` checked, with a plain path made absolute (`~` expanded): the workers run in
    other directories than the driver, so a relative path would mean something else there."""
    check_storage(storage)
    if storage and not scheme(storage):
        return os.path.abspath(os.path.expanduser(storage))
    return storage


def is_uri(storage: str) -> bool:
    return bool(scheme(storage))


def local_path(location: str) -> Path | None:
    """The local path a location stands for (a plain path or a file:// URI), else None."""
    kind = scheme(location)
    if not kind:
        return Path(location)
    if kind == "file":
        return Path(location.split("://", 1)[1].split("?", 1)[0])
    return None


def join(location: str, *names: str) -> str:
    """`location` / names, keeping a URI's query string (`s3://b/p?region=x`) at the end."""
    base, sep, query = location.partition("?") if is_uri(location) else (location, "", "")
    path = base.rstrip("/")  # "/" + "run" = "/run"
    for name in names:
        path = f"{path}/{name}"
    return f"{path}{sep}{query}"


def trial_root(storage: str, name: str) -> str:
    """The folder of run `name` below `storage` (which must be set)."""
    if not storage:
        raise ValueError("trial_root needs a storage location")
    return join(storage, name)


def parent(location: str) -> str:
    """The folder holding `location` (a path or URI; a URI keeps its query string)."""
    base, sep, query = location.partition("?") if is_uri(location) else (location, "", "")
    head = base.rstrip("/").rsplit("/", 1)[0]
    return f"{head}{sep}{query}"
