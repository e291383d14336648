"""Readers and writers of run-directory files.

Whole files are written atomically (a temporary file, then a rename), so a reader never sees
half a file; JSON-lines files only ever grow by complete lines (one `write` of a line ending
in a newline), and readers skip a last line torn by a crash.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tlmsearch.core.validate import file_present, load_yaml, read_text
from tlmsearch.errors import ConfigError, UserError
from tlmsearch.rundir.layout import COMPARE, RUN_CONFIG, RUN_FILES, VERIFY


def write_text(path: str | Path, text: str) -> Path:
    """Write `text` to `path` atomically: the old file stays whole until the new one replaces it,
    and a failed write leaves no temporary file behind. A folder where the file belongs is a
    `UserError` naming it (one line), never a half-written file."""
    path = Path(path)
    refuse_folder(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            refuse_folder(path)  # made meanwhile: still one clear line
            if exc.filename == str(tmp):  # name the file meant, not its temporary twin
                raise type(exc)(exc.errno, exc.strerror, str(path)) from None
        raise
    return path


def refuse_folder(path: str | Path) -> None:
    """A `UserError` when `path`, where a file is to be written, is a folder (it is never replaced)."""
    path = Path(path)
    if path.is_dir():
        raise UserError(
            f"{path} is a folder, not a file: cannot write the file there; move the folder away or write elsewhere"
        )


def require_dir(path: str | Path, what: str = "run directory") -> Path:
    """`path` as a Path when it is a folder, else a `UserError` saying what it is instead."""
    path = Path(path)
    if path.is_dir():
        return path
    if path.is_symlink() and not path.exists():
        try:
            path.stat()
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UserError(f"{what} {str(path)!r} is a symbolic link loop; fix or remove the link") from None
        raise UserError(f"{what} {str(path)!r} is a link to {os.readlink(path)!r}, which does not exist")
    if path.is_file():
        raise UserError(f"{what} {str(path)!r} is a file, not a directory")
    if path.exists():
        raise UserError(f"{what} {str(path)!r} is not a directory")
    raise UserError(f"{what} {str(path)!r} does not exist")


def run_file_problems(run_dir: str | Path, names: tuple[str, ...] = RUN_FILES) -> list[str]:
    """One sentence for each file of the run's layout (`names`) that is there but is no regular
    file (a folder, a FIFO, a device, a symbolic link loop): none of them can be read or replaced."""
    out = []
    for name in names:
        path = Path(run_dir) / name
        if path.exists() or path.is_symlink():
            try:
                file_present(path, "run file")
            except ConfigError as exc:
                out.append(str(exc))
    return out


def check_run_files(run_dir: str | Path) -> None:
    """Refuse, in one line naming it, a run whose files a command would read or rewrite but
    cannot (see `run_file_problems`): before anything starts, not after hours of training."""
    problems = run_file_problems(run_dir)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(f"{problems[0]}{more}")


def write_json(path: str | Path, data: Any) -> Path:
    return write_text(path, json_text(data))


def json_text(data: Any) -> str:
    """What `write_json` writes: indented JSON (configs and paths as plain data), one final newline."""
    return json.dumps(data, indent=2, default=_plain) + "\n"


def append_jsonl(path: str | Path, record: Mapping[str, Any]) -> None:
    """Append one complete line (a single write, so a crash tears at most the last line)."""
    with open(path, "a") as fh:
        fh.write(json.dumps(dict(record), default=_plain) + "\n")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Every complete line of a JSON-lines file ([] when there is none; a torn line is skipped)."""
    return read_jsonl_checked(path)[0]


def read_jsonl_checked(path: str | Path) -> tuple[list[dict[str, Any]], list[int]]:
    """The JSON objects of a JSON-lines file and the (1-based) numbers of lines that are not one
    (a line cut short by a crash mid-write, or damaged later); a non-UTF-8 byte spoils its line only."""
    path = Path(path)
    if not path.is_file():
        return [], []
    out, bad = [], []
    for number, line in enumerate(path.read_bytes().decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            bad.append(number)
            continue
        if isinstance(data, dict) and "\ufffd" not in line:
            out.append(data)
        else:
            bad.append(number)
    return out, bad


def cut_torn_tail(path: str | Path) -> int:
    """Remove a last line left without its newline by a crash mid-append; return its length.

    The cut bytes are kept in `<path>.torn` (appended), so nothing is destroyed. 0 when the
    file ends cleanly (or does not exist).
    """
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return 0
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return 0
    keep = data.rfind(b"\n") + 1
    with open(path.with_name(path.name + ".torn"), "ab") as fh:
        fh.write(data[keep:] + b"\n")
    with open(path, "r+b") as fh:
        fh.truncate(keep)
        os.fsync(fh.fileno())
    return len(data) - keep


def write_config(run_dir: str | Path, sections: Mapping[str, Any], filename: str = RUN_CONFIG) -> Path:
    """Write the resolved config (sections of plain data or `Config` objects) as YAML or JSON."""
    plain = {k: (v.to_dict() if hasattr(v, "to_dict") else v) for k, v in sections.items()}
    path = Path(run_dir) / filename
    text = yaml.safe_dump(plain, sort_keys=False) if path.suffix in (".yaml", ".yml") else json.dumps(plain, indent=2)
    return write_text(path, text)


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML mapping ({} for an empty file); damage is one line naming the file."""
    doc = load_yaml(read_text(path, "run file"), str(path)) or {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a YAML mapping, found {type(doc).__name__}")
    return doc


def read_json_object(path: str | Path) -> dict[str, Any] | None:
    """The JSON object a run file holds (None when the file is missing); a `ConfigError` naming
    the file when it is not one (damaged by hand or by the disk: ours are written atomically)."""
    path = Path(path)
    if not file_present(path, "run file"):  # a folder, a loop or a FIFO: one line, never None
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: not readable as JSON ({e})") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a JSON object, found {type(doc).__name__}")
    return doc


def read_phases(path: str | Path, resume: str, each: str) -> dict[str, Any]:
    """{"phases": {key: {"status": ..., ...}}} of a study's or a ladder's state file at `path`
    ({} phases before the first write). A damaged one is refused in one line that says how to
    rebuild it (`resume`: the command; `each`: what then checks its own records, "phase" or
    "point"): the records, not the state, say what is done."""
    path = Path(path)
    try:
        doc = read_json_object(path)
        if doc is None:
            return {"phases": {}}
        phases = doc.get("phases")
        if not isinstance(phases, dict):
            raise ConfigError(f"{path}: 'phases' is not an object")
        for key, phase in phases.items():
            if not isinstance(phase, dict) or not isinstance(phase.get("status"), str):
                raise ConfigError(f"{path}: phase {key!r} is not an object with a status")
    except ConfigError as e:
        why = str(e).removeprefix(f"{path}: ")
        raise ConfigError(
            f"{path} is damaged ({why}): delete it and run `{resume}`; every {each} then checks its own "
            "records again and nothing finished is trained twice"
        ) from None
    return {**doc, "phases": phases}


def read_verify(run_dir: str | Path) -> dict[str, Any]:
    """The seeds the last verify of a run decided on, its pilot and seed plan ({} when none). A
    comparison's run has none: its compare.json's `reference` and `aliases` (what its verdict
    compares with, the other names of a candidate trained once) come back instead."""
    path = Path(run_dir) / VERIFY
    if not path.exists() and (Path(run_dir) / COMPARE).is_file():
        compared = read_json_object(Path(run_dir) / COMPARE) or {}
        return {k: compared[k] for k in ("reference", "aliases") if k in compared}
    try:
        doc = read_json_object(path) or {}
        if not isinstance(doc.get("decision_seeds", []), list):
            raise ConfigError(f"{path}: expected verify's JSON object with a decision_seeds list")
    except ConfigError as e:
        raise ConfigError(f"{e}; `tlmsearch verify` rewrites it") from None
    return doc


def _plain(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | set):
        return list(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
