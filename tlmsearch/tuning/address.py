"""Check that a Ray cluster address answers before `ray.init` is asked to join it (which retries
for many minutes without a word): a TCP connection with a timeout, then one line and exit 2.

`auto` joins whatever Ray runs on this machine: at a terminal the driver says which; a run
nobody watches (no terminal on stdin: a batch script, CI) joins only a cluster it was told about
(RAY_ADDRESS, set by `ray job submit`, or the address in full), never another project's.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping

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
    # private (Ray): the only function that says which cluster `auto` means, as `ray.init` reads it
    from ray._private.services import canonicalize_bootstrap_address

    try:
        found = canonicalize_bootstrap_address(address)
    except (ConnectionError, ValueError) as exc:
        raise ConfigError(f"--address {address}: no running Ray cluster found ({exc}); {_HINT}") from None
    if not found:
        raise ConfigError(f"--address {address}: no running Ray cluster found; {_HINT}")
    return found


def check_auto_expected(
    address: str, *, interactive: bool | None = None, environ: Mapping[str, str] | None = None
) -> None:
    """Refuse `auto` in a run nobody watches unless RAY_ADDRESS names the cluster (see the module
    docstring). `interactive`: whether standard input is a terminal (asked when None)."""
    env = os.environ if environ is None else environ
    if address.strip() != "auto" or env.get("RAY_ADDRESS"):
        return
    if interactive is None:
        interactive = bool(sys.stdin is not None and sys.stdin.isatty())
    if interactive:
        return
    found = resolve_auto(address)
    raise ConfigError(
        f"--address auto found the Ray cluster at {found}, and this run was not told about it: a run "
        f"without a terminal joins only a cluster it is given; pass --address {found} (or set RAY_ADDRESS={found})"
    )


def probe_address(address: str, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Raise a one-line `ConfigError` unless something accepts TCP connections at `address`
    (and, for `auto` in a run without a terminal, unless it was expected: `check_auto_expected`)."""
    check_auto_expected(address)
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
