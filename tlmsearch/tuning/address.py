"""Check that a Ray cluster address answers before `ray.init` is asked to join it.

`ray.init(address="HOST:PORT")` on an address where nothing listens retries its connection to
the cluster's GCS for many minutes without a word. A plain TCP connection with a timeout tells
in at most a few seconds whether anything listens there, so a wrong `--address` ends in one
line (a `ConfigError`, exit 2) instead of a silent wait.
"""

from __future__ import annotations

import socket

from tlmsearch.errors import ConfigError

PROBE_TIMEOUT_S = 5.0
_HINT = "start it with `ray start --head` or check the address"


def split_address(address: str) -> tuple[str, int]:
    """(host, port) of `HOST:PORT`, `[IPv6]:PORT` or `ray://HOST:PORT` (ConfigError otherwise)."""
    text = address.strip()
    if text.startswith("ray://"):
        text = text[len("ray://") :]
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--address {address!r} is not 'auto', HOST:PORT or ray://HOST:PORT (port 1-65535)")
    return host, int(port)


def resolve_auto(address: str) -> str:
    """The HOST:PORT that `auto` stands for (RAY_ADDRESS or the cluster started on this machine)."""
    from ray._private.services import canonicalize_bootstrap_address

    try:
        found = canonicalize_bootstrap_address(address)
    except (ConnectionError, ValueError) as exc:
        raise ConfigError(f"--address {address}: no running Ray cluster found ({exc}); {_HINT}") from None
    if not found:
        raise ConfigError(f"--address {address}: no running Ray cluster found; {_HINT}")
    return found


def probe_address(address: str, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Raise a one-line `ConfigError` unless something accepts TCP connections at `address`."""
    target = resolve_auto(address) if address.strip() == "auto" else address
    host, port = split_address(target)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except socket.gaierror as exc:
        raise ConfigError(
            f"cannot reach the Ray cluster at {address}: unknown host {host!r} ({exc.strerror})"
        ) from None
    except TimeoutError:
        why = f"no answer within {timeout:g} s"
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
    raise ConfigError(f"cannot reach the Ray cluster at {address} ({why}); {_HINT}")
