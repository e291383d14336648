"""Pure input checks shared by the configs and the command line (no torch, no Ray).

Every check either returns the (possibly normalised) value or raises a one-line `ConfigError`
that names the field, what was wrong and what is allowed, so that the CLI ends with exit
status 2 and no traceback. The checks run *before* anything expensive starts (Ray, data
loading, allocation): a bad value found after a cluster started or a tensor was allocated
costs minutes or the machine's memory instead of one line.

- numbers: `check_finite`, `check_int` (NaN/inf and out-of-range values named with their range),
  `check_seed_count` (the seeds that decide a paired test, within `MIN_SEEDS`..`MAX_SEEDS`)
- statistics: `check_method` (an interval method, `METHODS`; the bootstrap from
  `MIN_BOOTSTRAP_SEEDS` values, the figure `tlmsearch.analysis.stats` explains)
- names: `check_name` (safe for a directory name: no separators, no control characters)
- files: `writable_file`, `writable_dir`, `read_text` (outputs writable, inputs readable text),
  `file_present` (a regular file, nothing, or one line: never a FIFO read that waits forever)
- YAML: `load_yaml` (parse errors and very deep nesting as one line)
- paths from record contents: `confined` (never outside the run directory)
- memory: `estimate_training_bytes`, `estimate_timing_bytes`, `check_fits`, `check_training_fits`,
  `available_memory_bytes`, `available_for` (the host's memory, or the free memory of a trial's GPU)
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

from tlmsearch.errors import ConfigError

# Bounds shared by configs and flags. They are far above any model this tool trains on one
# machine and far below what makes plain arithmetic or a Python loop misbehave.
MAX_SEED = 2**32 - 1  # the NumPy/Optuna samplers take seeds below 2**32
MIN_SEEDS = 2  # a paired test needs two seeds: one gives no spread, so no interval and no verdict
MAX_SEEDS = 1000  # seeds per profile: a pilot plan at a paired sd of 0.04 nats asks for a few hundred
METHODS = ("t", "bootstrap")  # the intervals of a paired verdict (`tlmsearch.analysis.stats`)
MIN_BOOTSTRAP_SEEDS = 20  # the BCa bootstrap's coverage falls short below this (analysis.stats says why 20)
MAX_LAYERS = 10_000  # deeper than any published model; profile maths stays O(layers)
MAX_WIDTH = 2**30  # per-layer width; keeps budget totals (<= 2**44) exact in float64
MAX_NAME_LENGTH = 100
MAX_TOP = 10_000  # how many ranked trials (or profiles) a command shows or re-trains
MAX_TEXT_BYTES = 256 * 2**20  # state and config files are small; refuse to slurp a disk image
MAX_YAML_DEPTH_HINT = 200  # for the message: real configs nest a handful of levels

_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]*\Z")

# ----------------------------------------------------------------------------- numbers


def check_finite(
    name: str,
    value: object,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """`value` as a float that is finite and within the range; else a ConfigError naming both.

    `low_open`/`high_open` exclude the bound itself (e.g. a learning rate in (0, inf)).
    """
    left = "(" if low_open or low == -math.inf else "["
    right = ")" if high_open or high == math.inf else "]"
    interval = f"{left}{_num(low)}, {_num(high)}{right}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name}={value!r} must be a finite number in {interval}")
    if isinstance(value, int) and abs(value) >= 2**1023:  # float() would raise OverflowError
        raise ConfigError(f"{name}={_num(value)} must be a finite number in {interval}")
    x = float(value)
    if not math.isfinite(x):
        raise ConfigError(f"{name}={value!r} must be a finite number in {interval}")
    too_low = x <= low if low_open else x < low
    too_high = x >= high if high_open else x > high
    if too_low or too_high:
        raise ConfigError(f"{name}={value!r} must lie in {interval}")
    return x


def check_int(name: str, value: object, low: int, high: int) -> int:
    """`value`, which must be an int (not a bool, not a float) in [low, high]."""
    if low == 1:
        allowed = f"a positive integer, at most {_num(high)}"
    elif low == 0:
        allowed = f"an integer in [0, {_num(high)}]"
    else:
        allowed = f"an integer in [{_num(low)}, {_num(high)}]"
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        shown = _num(value) if isinstance(value, int) and not isinstance(value, bool) else repr(value)
        raise ConfigError(f"{name}={shown} must be {allowed}")
    return value


def check_seed_count(name: str, value: object, *, auto: bool = False) -> int:
    """`value` as a number of seeds that decide a paired test: an int in [MIN_SEEDS, MAX_SEEDS]
    (`name` is the option as the caller wrote it, "seeds" or "--seeds"; `auto`: the option also
    takes "auto", and the message says so)."""
    allowed = ("'auto' or " if auto else "") + f"an integer from {MIN_SEEDS} to {MAX_SEEDS}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name}={value!r} must be {allowed}")
    if value < MIN_SEEDS:
        raise ConfigError(
            f"{name}={value} must be {allowed}: a paired test needs at least {MIN_SEEDS} seeds "
            "(one seed gives no spread, so no interval and no verdict)"
        )
    if value > MAX_SEEDS:
        raise ConfigError(f"{name}={value} must be {allowed}: every seed re-trains every profile")
    return value


def check_method(method: str, n: int | None = None) -> None:
    """Refuse an unknown interval method, or the bootstrap on fewer than `MIN_BOOTSTRAP_SEEDS` values."""
    if method not in METHODS:
        raise ConfigError(f"interval method {method!r} is not allowed; choose one of: {', '.join(METHODS)}")
    if method == "bootstrap" and n is not None and n < MIN_BOOTSTRAP_SEEDS:
        raise ConfigError(
            f"--interval bootstrap needs at least {MIN_BOOTSTRAP_SEEDS} seeds (got {n}): below that its "
            "intervals cover far less often than they claim; use --interval t"
        )


def check_top(name: str, value: object) -> int:
    """`value` as a count of ranked trials or profiles (status --top, verify --top-k, Study.best):
    a positive integer, at most `MAX_TOP` (a negative count would slice off the worst instead)."""
    return check_int(name, value, 1, MAX_TOP)


def _num(x: float) -> str:
    if isinstance(x, int) and abs(x) >= 10**15:  # 1e+23, also for ints beyond float range
        if abs(x) < 2**1023:
            return f"{float(x):.3g}"
        exp = int(math.log10(abs(x)))
        return f"{'-' if x < 0 else ''}{abs(x) // 10 ** (exp - 2) / 100:g}e+{exp}"
    return {math.inf: "inf", -math.inf: "-inf"}.get(x, f"{x:g}" if isinstance(x, float) else str(x))


# ----------------------------------------------------------------------------- names


def check_name(field: str, value: object, max_length: int = MAX_NAME_LENGTH) -> str:
    """A name that is safe as one directory name on every platform and in every shell.

    Letters, digits, '.', '_' and '-', starting with a letter or digit (so never '.', '..' or
    an option-looking '-x'), no separators, no whitespace or control characters (`\\Z`, not
    `$`, so a trailing newline does not slip through), at most `max_length` characters.
    """
    if not isinstance(value, str) or not _NAME.match(value) or len(value) > max_length:
        shown = repr(value) if not isinstance(value, str) or len(value) <= 60 else repr(value[:60]) + "..."
        raise ConfigError(
            f"{field} {shown} is not a safe name: use letters, digits, '.', '_' and '-', starting with a "
            f"letter or digit, at most {max_length} characters"
        )
    return value


# ----------------------------------------------------------------------------- files


def _probe_dir(directory: Path, what: str) -> None:
    """Create and delete a file in `directory`: the one writability test that also holds for
    root (to whom `os.access` says yes) and for read-only mounts."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".tlmsearch-probe-", dir=directory)
    except OSError as exc:
        raise ConfigError(
            f"{what}: cannot write into {directory} ({exc.strerror or exc}); choose a writable place"
        ) from None
    os.close(fd)
    os.unlink(probe)


def _nearest_existing(path: Path, what: str) -> Path:
    """The nearest existing ancestor of `path` (itself included), which must be a directory."""
    for parent in (path, *path.parents):
        try:
            if parent.is_symlink() and not parent.exists():
                raise ConfigError(
                    f"{what}: {parent} is a symbolic link to nothing (or a loop), so {path} cannot be used; "
                    "fix or remove the link"
                )
            if parent.exists():
                if not parent.is_dir() and parent != path:
                    raise ConfigError(
                        f"{what}: {parent} is a file, so {path} cannot be created below it; choose another path"
                    )
                return parent
        except OSError as exc:  # e.g. a name too long, a component not searchable
            raise ConfigError(f"{what}: cannot use {path} ({exc.strerror or exc})") from None
    return Path.cwd()


def _as_path(path: object, what: str) -> Path:
    if not isinstance(path, str | os.PathLike) or not str(path) or "\x00" in str(path):
        raise ConfigError(f"{what}: {path!r} is not a usable path")
    return Path(path).expanduser()


def writable_file(path: object, what: str, *, create_parents: bool = False) -> Path:
    """An output file path that can be written: not a directory, its folder writable.

    With `create_parents` a missing folder is acceptable when it can be created (it is not
    created here); otherwise the folder must exist.
    """
    p = _as_path(path, what)
    if p.is_dir():
        raise ConfigError(f"{what}: {p} is a directory; give a file name inside it, e.g. {p / 'out.html'}")
    if p.is_symlink() and not p.exists():  # replacing a loop (or a link to nothing) loses the link
        raise ConfigError(f"{what}: {p} is a symbolic link to nothing (or a loop); fix or remove the link")
    if p.exists() and not p.is_file():  # a FIFO waits for a reader forever; a device is no file to replace
        raise ConfigError(f"{what}: {p} is {_kind(p.stat().st_mode)}, not a regular file; give a regular file's path")
    parent = p.parent
    if not parent.exists():
        if not create_parents:
            base = _nearest_existing(parent, what)
            raise ConfigError(f"{what}: folder {parent} does not exist (nearest existing: {base}); create it first")
        parent = _nearest_existing(parent, what)
    elif not parent.is_dir():
        raise ConfigError(f"{what}: {parent} is a file, not a folder; choose another path")
    _probe_dir(parent, what)
    if p.exists() and not os.access(p, os.W_OK):
        raise ConfigError(f"{what}: {p} exists and is not writable; choose another path or fix its permissions")
    return p


def writable_dir(path: object, what: str, *, create: bool = False) -> Path:
    """A directory that exists (or can be created) and can be written into.

    A path that is a file is refused with what to do; with `create` a missing directory is made
    (with its parents) after the check.
    """
    p = _as_path(path, what)
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{what}: {p} is a file, not a directory; give a directory path")
    base = _nearest_existing(p, what)
    _probe_dir(base, what)
    if create and not p.exists():
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"{what}: cannot create {p} ({exc.strerror or exc})") from None
    return p


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def file_present(path: str | os.PathLike[str], what: str = "file") -> bool:
    """True when `path` is a regular file (after following links), False when nothing is there;
    a one-line ConfigError naming the path when something else is: a folder, a FIFO (whose read
    would wait forever), a device or socket, a symbolic link loop, or a place that cannot be
    looked at. Use it instead of `Path.is_file()`, which answers False for all of those and so
    reads a loop or a folder as a missing file."""
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(
                f"{what} {p} is a symbolic link loop, not a regular file; fix or remove the link"
            ) from None
        if exc.errno == errno.ENOTDIR:
            return False  # a component is a file: nothing can be there
        raise ConfigError(f"{what}: cannot look at {p} ({exc.strerror or exc}); fix its permissions") from None
    if stat.S_ISREG(mode):
        return True
    raise ConfigError(f"{what} {p} is {_kind(mode)}, not a regular file; move it away or give a regular file")


def read_text(path: object, what: str, *, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of a state or config file, or one line naming the file and the damage.

    Only a regular file is opened: a FIFO or a device named as a config would make the read
    wait forever (or never end), so it is refused from its `stat` alone."""
    p = _as_path(path, what)
    if p.is_dir():
        raise ConfigError(f"{what}: {p} is a directory, expected a text file")
    try:
        st = p.stat()
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{what}: {p} is {_kind(st.st_mode)}, not a regular file; give a text file")
        size = st.st_size
        if size > max_bytes:
            raise ConfigError(f"{what}: {p} is {size} bytes, more than the {max_bytes} a text file here may have")
        data = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{what}: {p} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {p} ({exc.strerror or exc})") from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ConfigError(f"{what}: {p} is binary, not text (NUL byte at offset {nul})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{what}: {p} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}, line {line})"
        ) from None


def load_yaml(text: str, where: str) -> Any:
    """`yaml.safe_load(text)` with parse errors and runaway nesting as one-line ConfigErrors.

    The parser recurses once per nesting level, so thousands of nested brackets exhaust
    Python's stack (RecursionError); no config nests more than a handful of levels.
    """
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ConfigError(f"{where}: invalid YAML{at}: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: invalid YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise ConfigError(
            f"{where}: YAML nested too deeply to read (configs need a few levels, not hundreds)"
        ) from None


# ----------------------------------------------------------------------------- paths from records


def confined(root: str | os.PathLike[str], *parts: object) -> Path:
    """`root / parts...`, refused unless it stays inside `root` (after resolving `..` and links).

    Use for every path built from the contents of a record (a trial id, a profile label), which
    a damaged or crafted file could set to `../../..` or an absolute path.
    """
    base = Path(root).resolve()
    texts: list[str] = []
    for part in parts:
        text = os.fspath(part) if isinstance(part, str | os.PathLike) else None
        if not isinstance(text, str) or not text or "\x00" in text or Path(text).is_absolute() or Path(text).drive:
            raise ConfigError(f"path component {part!r} (from a record) is not a relative path; refusing it")
        texts.append(text)
    target = base.joinpath(*texts).resolve()
    if target != base and base not in target.parents:
        raise ConfigError(f"path {'/'.join(texts)!r} (from a record) leads outside {base}; refusing it")
    return target


# ----------------------------------------------------------------------------- memory

_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}


def estimate_training_bytes(model_cfg: Any, batch_size: int, seq_len: int, dtype: str = "float32") -> int:
    """Approximate peak bytes of one AdamW training step of `model_cfg` on (batch_size, seq_len).

    A deliberate *under*-estimate of the common part of every architecture, so that a refusal
    based on it is never wrong (the true peak is higher: architecture extras such as gates or
    test-time memories, allocator slack, the framework itself):

    - parameters: embedding (and an untied head), per layer 4 d^2 (attention; with per-layer
      heads H_l, G_l of size D: d (H_l + 2 G_l) D + H_l D d) + 3 d w_l (SwiGLU MLP of width w_l)
      + 2 d (norms), with block l's own width b_l for d where it has one (`block_widths`);
      16 bytes each in float32 master weights, gradients and the two AdamW moments
      (mixed precision keeps float32 masters, so `dtype` does not lower it);
    - activations kept for backward, in `dtype`: per layer and token about 8 d (norms and
      residual 4 d, q, k, v and the attention output 4 d, or (2 H_l + 2 G_l) D with per-layer
      heads) + 3 w_l (the SwiGLU up, gate and product), plus the attention probabilities
      heads x seq_len per token of the math kernel (H_l of layer l);
    - logits and their gradient in float32: 2 x vocab per token.
    """
    return 16 * _param_count(model_cfg) + _activation_bytes(model_cfg, batch_size, seq_len, dtype)


def _layer_heads(model_cfg: Any) -> list[tuple[int, int, int, int]]:
    """(query heads, key/value heads, head size, block width) of every layer: the config's
    per-layer heads (`ModelConfig.query_heads` / `key_value_heads`) and block widths
    (`ModelConfig.block_width`) where it has them, else n_heads and d_model (uniform)."""
    d, layers = int(model_cfg.d_model), len(model_cfg.mlp_widths)
    heads = int(getattr(model_cfg, "n_heads", 1))
    query = getattr(model_cfg, "query_heads", None)
    kv = getattr(model_cfg, "key_value_heads", None)
    block = getattr(model_cfg, "block_width", None)
    widths = [int(block(layer)) for layer in range(layers)] if callable(block) else [d] * layers
    if not callable(query) or not callable(kv):
        return [(heads, heads, d // heads, w) for w in widths]
    return [(int(query(layer)), int(kv(layer)), d // heads, widths[layer]) for layer in range(layers)]


def _param_count(model_cfg: Any) -> int:
    """Parameters common to every architecture (see `estimate_training_bytes`): an under-count."""
    d, vocab = int(model_cfg.d_model), int(model_cfg.vocab_size)
    tied = bool(getattr(model_cfg, "tie_embeddings", True))
    layers = zip(_layer_heads(model_cfg), model_cfg.mlp_widths, strict=True)
    blocks = sum(b * (h + 2 * g) * size + h * size * b + 3 * b * int(w) + 2 * b for (h, g, size, b), w in layers)
    return vocab * d * (1 if tied else 2) + blocks + d


def _activation_bytes(model_cfg: Any, batch_size: int, seq_len: int, dtype: str) -> int:
    """Activations one forward+backward keeps, and the float32 logits and their gradient."""
    vocab = int(model_cfg.vocab_size)
    act = _DTYPE_BYTES.get(dtype, 4)
    per_layer = [
        4 * b + (2 * h + 2 * g) * size + 3 * int(w) + h * int(seq_len)
        for (h, g, size, b), w in zip(_layer_heads(model_cfg), model_cfg.mlp_widths, strict=True)
    ]
    per_token = sum(per_layer) * act + 2 * vocab * 4
    return int(batch_size) * int(seq_len) * per_token


def estimate_timing_bytes(model_cfgs: Any, batch_size: int, dtype: str = "float32") -> int:
    """Approximate peak bytes of timing `model_cfgs` side by side (`tlmsearch.costs.throughput`): every
    model's float32 weights stay built at once, and the one being timed adds its gradients and
    the activations of one forward+backward of (batch_size, seq_len). An under-estimate, like
    `estimate_training_bytes`, so a refusal based on it is never wrong."""
    cfgs = list(model_cfgs)
    if not cfgs:
        return 0
    weights = sum(4 * _param_count(m) for m in cfgs)
    step = max(4 * _param_count(m) + _activation_bytes(m, batch_size, int(m.seq_len), dtype) for m in cfgs)
    return weights + step


def estimate_eval_bytes(eval_windows: int, seq_len: int) -> int:
    """Bytes of the fixed validation windows kept as int64 token ids (seq_len + 1 per window)."""
    return int(eval_windows) * (int(seq_len) + 1) * 8


def available_memory_bytes() -> int | None:
    """Memory this process could still allocate on the host (MemAvailable), None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def available_for(device: str) -> int | None:
    """Memory a trial on `device` could still allocate: the host's (`available_memory_bytes`) for
    "cpu" and for "auto" without CUDA; the free memory of the CUDA device for "cuda", "cuda:i" and
    "auto" with CUDA. None (unknown, so no refusal) for a CUDA device this process cannot see: a
    GPU trial checked on a driver without one (the trial's GPU is on another node, or Ray will
    assign it), or a device kind it cannot ask."""
    if device == "cpu":
        return available_memory_bytes()
    import torch

    cuda = torch.cuda.is_available()
    if device == "auto" and not cuda:
        return available_memory_bytes()
    if not cuda or not (device == "auto" or device.startswith("cuda")):
        return None
    try:
        return int(torch.cuda.mem_get_info(torch.device("cuda" if device == "auto" else device))[0])
    except (RuntimeError, ValueError, AssertionError):
        return None


def check_fits(
    estimate: int,
    available: int | None,
    what: str = "training",
    advice: str = "use a smaller model, batch size, sequence length or number of evaluation windows",
) -> None:
    """Refuse, with the estimate, a job whose estimated memory exceeds what is available.

    `available=None` (unknown) lets it pass: an unknown size is no reason to refuse.
    """
    if available is not None and estimate > available:
        raise ConfigError(
            f"{what} needs about {_bytes(estimate)} of memory but only {_bytes(available)} is available; {advice}"
        )


def check_training_fits(model_cfg: Any, train_cfg: Any, available: int | None = None) -> int:
    """Refuse a trial whose model, micro-batch and validation windows cannot fit in memory.

    `available` defaults to what the trial's device holds (`available_for(train_cfg.device)`: the
    host's memory on the CPU, the free memory of the GPU on CUDA, unknown for a GPU this process
    cannot see). Returns the estimate in bytes. Call it before building the model or loading data.
    """
    seq_len = int(model_cfg.seq_len)
    estimate = estimate_training_bytes(model_cfg, train_cfg.batch_size, seq_len, train_cfg.dtype)
    estimate += estimate_eval_bytes(train_cfg.eval_windows, seq_len)
    check_fits(estimate, available_for(str(train_cfg.device)) if available is None else available, "this trial")
    return estimate


def _bytes(n: int) -> str:
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if x < 1024 or unit == "PiB":
            return f"{x:.0f} {unit}" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024
    raise AssertionError("unreachable")
